//! Activity analysis (fluxion-ad's `activity.rs`): in k-means' cost Σᵢ minⱼ |cⱼ − pᵢ|²
//! the distances to every centroid are read by `argmax` alone, so the translations
//! compute them on primals and differentiate the nearest centroid's distance alone
//! (the snapshots `delta_nearest`/`fwd_nearest` show the code). The oracle is derived
//! by hand: away from ties the cost is a sum of quadratics, ∂/∂c_jk = Σ_{i near j}
//! 2(c_jk − p_ik) and ∂²/∂c_jk² = 2·#{i near j}, with no mixed second partials, so the
//! Hessian times the all-ones direction is that diagonal. Checked for `grad`, forward
//! over reverse (`jvp` of a `grad`, GradBench's `dir`), `hessian`, in every mode, on
//! both backends (natively the second order is reverse over forward, whose inner
//! layer reads a lifted closure: `structural.rs`'s `primal_function`).

use fluxion_driver::gradcheck::eval_literal;
use fluxion_driver::{AdMode, Backend, RunOptions};

const COST: &str = "
fn sqdist(u: [Real], v: [Real]) -> Real {
    sumbuild(length(u), |a| { let e = u[a] - v[a]; e * e })
}
fn cost(points: [[Real]], centroids: [[Real]]) -> Real {
    sum(map(|p| minimum(map(|c| sqdist(c, p), centroids)), points))
}
fn far(points: [[Real]], centroids: [[Real]]) -> Real {
    sum(map(|p| maximum(build(length(centroids), |j| sqdist(centroids[j], p))), points))
}";

const N: usize = 9;
const K: usize = 3;
const D: usize = 2;

fn points() -> Vec<Vec<f64>> {
    (0..N)
        .map(|i| {
            (0..D)
                .map(|k| (1.7 * i as f64 + 0.9 * k as f64).sin() * 2.0)
                .collect()
        })
        .collect()
}

fn centroids() -> Vec<Vec<f64>> {
    (0..K)
        .map(|j| {
            (0..D)
                .map(|k| (0.8 * j as f64 - 1.3 * k as f64 + 0.4).cos() * 1.5)
                .collect()
        })
        .collect()
}

fn literal(rows: &[Vec<f64>]) -> String {
    let rows: Vec<String> = rows
        .iter()
        .map(|r| {
            let xs: Vec<String> = r.iter().map(|x| format!("{x:?}")).collect();
            format!("[{}]", xs.join(", "))
        })
        .collect();
    format!("[{}]", rows.join(", "))
}

fn numbers(text: &str) -> Vec<f64> {
    text.split(['[', ']', ',', '(', ')'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<f64>()
                .unwrap_or_else(|_| panic!("a number: {s} in {text}"))
        })
        .collect()
}

fn sq(u: &[f64], v: &[f64]) -> f64 {
    u.iter().zip(v).map(|(a, b)| (a - b) * (a - b)).sum()
}

/// The chosen centroid of each point (`nearest`: the minimum, else the maximum), first
/// index on ties — and the test's points have none closer than 1e-3.
fn chosen(points: &[Vec<f64>], cs: &[Vec<f64>], nearest: bool) -> Vec<usize> {
    points
        .iter()
        .map(|p| {
            let d: Vec<f64> = cs.iter().map(|c| sq(c, p)).collect();
            let mut order: Vec<usize> = (0..cs.len()).collect();
            order.sort_by(|&a, &b| d[a].total_cmp(&d[b]));
            if !nearest {
                order.reverse();
            }
            assert!((d[order[0]] - d[order[1]]).abs() > 1e-3, "a tie at {p:?}");
            order[0]
        })
        .collect()
}

/// The gradient and Hessian diagonal in the centroids, by hand (see the module doc).
fn by_hand(nearest: bool) -> (Vec<f64>, Vec<f64>) {
    let (ps, cs) = (points(), centroids());
    let (mut g, mut h) = (vec![0.0; K * D], vec![0.0; K * D]);
    for (p, j) in ps.iter().zip(chosen(&ps, &cs, nearest)) {
        for k in 0..D {
            g[j * D + k] += 2.0 * (cs[j][k] - p[k]);
            h[j * D + k] += 2.0;
        }
    }
    (g, h)
}

fn close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} against {want:?}");
    for (a, b) in got.iter().zip(want) {
        assert!(
            (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
            "{what}: {got:?} against {want:?}"
        );
    }
}

#[test]
fn the_nearest_centroid_alone_is_differentiated_in_every_mode() {
    let (ps, cs) = (literal(&points()), literal(&centroids()));
    let ones = literal(&vec![vec![1.0; D]; K]);
    for (f, nearest) in [("cost", true), ("far", false)] {
        let (g, h) = by_hand(nearest);
        let grad = format!("grad(|c: [[Real]]| {f}({ps}, c), {cs})");
        let hv =
            format!("jvp(|c: [[Real]]| grad(|c2: [[Real]]| {f}({ps}, c2), c), {cs}, {ones}).1");
        let flat = format!("{cs}[0]");
        // The Hessian in the first centroid alone: diagonal, 2·#{{i near it}}.
        let hessian = format!("hessian(|c0: [Real]| {f}({ps}, [c0, {cs}[1], {cs}[2]]), {flat})");
        // One run (one native compilation) for the three.
        let expr = format!("({grad}, {hv}, {hessian})");
        for (at, got) in in_every_mode(COST, &expr) {
            let at = format!("{f}, {at}");
            let (got_g, rest) = got.split_at(K * D);
            let (got_h, got_hessian) = rest.split_at(K * D);
            close(&format!("grad ({at})"), got_g, &g);
            close(&format!("jvp of grad ({at})"), got_h, &h);
            let mut first = vec![0.0; D * D];
            for k in 0..D {
                first[k * D + k] = h[k];
            }
            close(&format!("hessian ({at})"), got_hessian, &first);
        }
    }
}

/// The numbers `expr` prints over `src` in every reverse mode on both backends, each
/// with where it ran ("Delta, Native").
fn in_every_mode(src: &str, expr: &str) -> Vec<(String, Vec<f64>)> {
    let mut out = Vec::new();
    for mode in [AdMode::Delta, AdMode::Chad, AdMode::Fwd] {
        for backend in [Backend::Interp, Backend::Native] {
            let options = RunOptions {
                mode,
                backend,
                ..RunOptions::default()
            };
            let at = format!("{mode:?}, {backend:?}");
            let printed =
                eval_literal(src, expr, options).unwrap_or_else(|e| panic!("{at}: {expr}: {e}"));
            out.push((at, numbers(&printed)));
        }
    }
    out
}

/// `src`'s stage `stage` of `entry`, optimised, reverse operators by deltas.
fn shown(src: &str, stage: &str, entry: &str) -> String {
    let program =
        fluxion_driver::compile("test.flx", src).unwrap_or_else(|f| panic!("{}", f.render()));
    program
        .show_optimized(
            stage,
            Some(entry),
            AdMode::Delta,
            fluxion_driver::OptLevel::On,
        )
        .expect("shows")
}

/// The varied half: values computed from no input — a point `t_i` made of `Int`s, its
/// powers by a `scan`, the sign of `t_i` — stay primals under every translation (the
/// scan's array is `[Real]` in the delta translation, captured as a primal by the loop
/// that indexes it), and a translated product reads them as constants. The oracle, by
/// hand: f(x) = ½ Σ_i (s_i − Σ_j x_j t_i^j)², so ∂f/∂x_j = −Σ_i r_i t_i^j and the
/// Hessian is Σ_i t_i^j t_i^k; `g` reads an unvaried array through a tuple and a
/// `map2` (no cheap lift: translated as before), ∂g/∂x_j = j + 1.
const POLY: &str = "
fn f(x: [Real], n: Int) -> Real {
    let m = length(x);
    0.5 * sumbuild(n, |i| {
        let t = -1.0 + to_real(i) * 2.0 / to_real(n - 1);
        let powers = scan(|p, _j| p * t, 1.0, range(m - 1));
        let poly = x[0] + sumbuild(m - 1, |j| x[j + 1] * powers[j]);
        let s = if t > 0.0 { 1.0 } else if t < 0.0 { -1.0 } else { 0.0 };
        let r = s - poly;
        r * r
    })
}
fn g(x: [Real]) -> Real {
    let w = map(|j| to_real(j) + 1.0, range(length(x)));
    let p = (w, x);
    sum(map2(|a, b| a * b, p.0, p.1))
}";

#[test]
fn values_computed_from_no_input_stay_primals() {
    let x = [0.3, -1.2, 0.8, 0.5];
    let n = 7;
    let ts: Vec<f64> = (0..n)
        .map(|i| -1.0 + i as f64 * 2.0 / (n - 1) as f64)
        .collect();
    let m = x.len();
    let (mut grad, mut hess_ones) = (vec![0.0; m], vec![0.0; m]);
    for t in &ts {
        let pw: Vec<f64> = (0..m).map(|j| t.powi(j as i32)).collect();
        let s = if *t > 0.0 {
            1.0
        } else if *t < 0.0 {
            -1.0
        } else {
            0.0
        };
        let r = s - (0..m).map(|j| x[j] * pw[j]).sum::<f64>();
        for j in 0..m {
            grad[j] -= r * pw[j];
            hess_ones[j] += pw[j] * pw.iter().sum::<f64>();
        }
    }
    let xs = format!("{x:?}");
    let expr = format!(
        "(grad(|x: [Real]| f(x, {n}), {xs}), \
          jvp(|x: [Real]| grad(|y: [Real]| f(y, {n}), x), {xs}, [1.0, 1.0, 1.0, 1.0]).1, \
          grad(g, {xs}))"
    );
    let g_by_hand: Vec<f64> = (0..m).map(|j| (j + 1) as f64).collect();
    for (at, got) in in_every_mode(POLY, &expr) {
        close(&format!("grad f ({at})"), &got[..m], &grad);
        close(&format!("H·1 of f ({at})"), &got[m..2 * m], &hess_ones);
        close(&format!("grad g ({at})"), &got[2 * m..], &g_by_hand);
    }
    // The translation keeps the powers primal: a scan of reals, no scan of pairs.
    let delta = shown(POLY, "delta", "f");
    assert!(
        delta.contains(": [Real] = scan(") && !delta.contains(": [(Real, Int)] = scan("),
        "{delta}"
    );
}

/// The data a differentiated closure captures is not differentiated: the forward
/// layers take it unlifted (`ahead/lift.rs`), and a function it is passed to, a loop
/// lambda capturing it and a `map2` walking it are translated specialised to it
/// (`activity::stays_primal`) — GradBench ht's model data. `glue` returns its first
/// argument inside its result, so that argument cannot stay primal there: lifted, as
/// before. The oracle, by hand: y_v = Σ_b w_vb·sin(θ_{b mod n})·(base_b·p_v), so
/// ∂y_v/∂θ_j = Σ_{b ≡ j} w_vb·cos(θ_j)·(base_b·p_v), and the Hessian of Σ_v y_v is
/// diagonal, −Σ_v Σ_{b ≡ j} w_vb·sin(θ_j)·(base_b·p_v).
const SKIN: &str = "
fn bones(theta: [Real], base: [[Real]]) -> [[Real]] {
    let n = length(theta);
    build(length(base), |b| map(|x| x * sin(theta[b % n]), base[b]))
}
fn skin(ts: [[Real]], w: [[Real]], p: [[Real]]) -> [Real] {
    map2(|pv, wv| sumbuild(length(ts), |b| {
        if wv[b] == 0.0 { 0.0 } else { wv[b] * dot(ts[b], pv) }
    }), p, w)
}
fn model(theta: [Real], base: [[Real]], w: [[Real]], p: [[Real]]) -> [Real] {
    skin(bones(theta, base), w, p)
}
fn total(theta: [Real], base: [[Real]], w: [[Real]], p: [[Real]]) -> Real {
    sum(model(theta, base, w, p))
}
fn glue(a: [Real], b: [Real]) -> [Real] { concat(a, b) }
fn cols(theta: [Real], base: [[Real]], w: [[Real]], p: [[Real]]) -> [[Real]] {
    let f = |th: [Real]| model(th, base, w, p);
    let n = length(theta);
    build(n, |c| jvp(f, theta, build(n, |j| if j == c { 1.0 } else { 0.0 })).1)
}";

#[test]
fn data_a_differentiated_closure_captures_stays_primal() {
    let theta: [f64; 3] = [0.4, -1.1, 0.7];
    let base: Vec<Vec<f64>> = (0..5)
        .map(|b| {
            (0..4)
                .map(|k| (0.9 * b as f64 + 0.4 * k as f64).cos())
                .collect()
        })
        .collect();
    let p: Vec<Vec<f64>> = (0..6)
        .map(|v| {
            (0..4)
                .map(|k| (1.3 * v as f64 - 0.7 * k as f64).sin())
                .collect()
        })
        .collect();
    // A vertex follows two or three bones; the rest weigh 0 (skipped).
    let w: Vec<Vec<f64>> = (0..6)
        .map(|v| {
            (0..5)
                .map(|b| {
                    if (v + b) % 5 < 3 {
                        0.2 + 0.1 * ((v * 5 + b) % 7) as f64
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect();
    let n = theta.len();
    let bp = |b: usize, v: usize| -> f64 { (0..4).map(|k| base[b][k] * p[v][k]).sum() };
    let mut cols = vec![vec![0.0; p.len()]; n];
    let mut hess_diag = vec![0.0; n];
    for (j, col) in cols.iter_mut().enumerate() {
        for (v, y) in col.iter_mut().enumerate() {
            for b in (0..base.len()).filter(|b| b % n == j) {
                *y += w[v][b] * theta[j].cos() * bp(b, v);
                hess_diag[j] -= w[v][b] * theta[j].sin() * bp(b, v);
            }
        }
    }
    let (th, bs, ws, ps) = (
        format!("{theta:?}"),
        literal(&base),
        literal(&w),
        literal(&p),
    );
    let glue_dir = "[0.5, 1.0, -2.0]";
    let expr = format!(
        "(cols({th}, {bs}, {ws}, {ps}), \
          hessian(|t: [Real]| total(t, {bs}, {ws}, {ps}), {th}), \
          jvp(|t: [Real]| glue({ps}[0], map(|x| x * x, t)), {th}, {glue_dir}).1)"
    );
    let want_cols: Vec<f64> = cols.concat();
    let mut want_hessian = vec![0.0; n * n];
    for j in 0..n {
        want_hessian[j * n + j] = hess_diag[j];
    }
    let dir = [0.5, 1.0, -2.0];
    let mut want_glue = vec![0.0; 4];
    want_glue.extend((0..n).map(|j| 2.0 * theta[j] * dir[j]));
    for (at, got) in in_every_mode(SKIN, &expr) {
        let (got_cols, rest) = got.split_at(n * p.len());
        let (got_hessian, got_glue) = rest.split_at(n * n);
        close(&format!("jvp columns ({at})"), got_cols, &want_cols);
        close(&format!("hessian ({at})"), got_hessian, &want_hessian);
        close(&format!("jvp through glue ({at})"), got_glue, &want_glue);
    }
    // The code both backends run: the captures passed unlifted, `model` (called at two
    // sites: not inlined) translated specialised to its data — the reals of theta
    // alone are pairs; `bones` and `skin`, inlined into it, map over the data's rows
    // with lambdas taking them as primals.
    let resolved = shown(SKIN, "resolved", "cols");
    assert!(!resolved.contains("lift_capture"), "{resolved}");
    let signature = |name: &str| -> Vec<String> {
        let line = (resolved.lines())
            .find(|l| l.starts_with(&format!("fn {name}(")))
            .unwrap_or_else(|| panic!("no {name} in {resolved}"));
        let params = &line[line.find('(').unwrap() + 1..line.rfind(") ->").unwrap()];
        // Split at the commas outside brackets: `x_1: [(Real, Real)], y_2: [[Real]]`.
        let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
        for (i, ch) in params.char_indices() {
            match ch {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(params[start..i].trim().to_string());
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.push(params[start..].trim().to_string());
        out.iter()
            .map(|p| {
                p.split_once(": ")
                    .map(|(_, t)| t.to_string())
                    .unwrap_or_default()
            })
            .collect()
    };
    assert!(
        resolved.contains("%closure(cols_lambda1_fwd_on_c0_c1_c2, ["),
        "{resolved}"
    );
    assert_eq!(
        signature("model_fwd_on_p1_p2_p3"),
        ["[(Real, Real)]", "[[Real]]", "[[Real]]", "[[Real]]"],
        "{resolved}"
    );
    // `bones`' lambda over a row of `base`: a real in, a pair out.
    assert!(
        resolved.contains(": fn(Real) -> (Real, Real) = |x_"),
        "{resolved}"
    );
}

/// A function used as a value inside its own translation (`map(h, ...)` in `h`): the
/// closure has the translated type before the translation is finished (a review
/// found `fn() -> ...` there, which the verifier rejects in debug builds). By hand:
/// h is affine near each point, the derivative the sum of the leaves' slopes.
#[test]
fn a_function_mapped_inside_itself_translates() {
    const SRC: &str = "
fn h(x: Real) -> Real {
    if x > 8.0 { x } else { sum(map(h, [2.0 * x, x + 3.0])) }
}";
    fn by_hand(x: f64, slope: f64) -> (f64, f64) {
        if x > 8.0 {
            (x, slope)
        } else {
            let (a, da) = by_hand(2.0 * x, 2.0 * slope);
            let (b, db) = by_hand(x + 3.0, slope);
            (a + b, da + db)
        }
    }
    let (_, d) = by_hand(1.0, 1.0);
    let expr = "(diff(h, 1.0), grad(|v: [Real]| h(v[0]), [1.0]), jvp(h, 1.0, 1.0).1)";
    for (at, got) in in_every_mode(SRC, expr) {
        close(&format!("h' ({at})"), &got, &[d, d, d]);
    }
}

/// The data a reverse operator's closure captures stays off the tape: `grad` of
/// `|c| cost(points, c)` passes the points as they are to a delta translation
/// specialised to them (`g_lambda1_delta_on_c0`, `cost_delta_on_p0`), where they were
/// lifted into `(Real, Int)` pairs at every call. The same closure's pullback inside a
/// `grad` (reverse over reverse: a delta closure with a primal capture translated
/// again, the interpreter's `delta_of_layer`) gives the same values. By hand: each
/// centroid's gradient is Σ 2(c − p) over its nearest points, [1.6, −2.3] and
/// [−1, 0.5]; h(s) = Σ ∇cost(s·c) + cost(s·c) has h'(1) = 2 Σₖ nₖ Σ cₖ + ∇cost(c)·c
/// = 1.8 + 0.49 (no point changes its centroid near s = 1).
#[test]
fn data_a_gradients_closure_captures_stays_off_the_tape() {
    let src = "
fn sqdist(u: [Real], v: [Real]) -> Real {
    sumbuild(length(u), |a| { let e = u[a] - v[a]; e * e })
}
fn cost(points: [[Real]], centroids: [[Real]]) -> Real {
    sum(map(|p| minimum(map(|c| sqdist(c, p), centroids)), points))
}
fn g(points: [[Real]], centroids: [[Real]]) -> [[Real]] {
    grad(|c: [[Real]]| cost(points, c), centroids)
}
fn pulled(points: [[Real]], centroids: [[Real]]) -> Real {
    grad(|s: Real| {
        let (y, pb) = vjp(|c: [[Real]]| cost(points, c), map(|r| map(|x| x * s, r), centroids));
        sum(map(sum, pb(1.0))) + y
    }, 1.0)
}
fn hoisted(points: [[Real]], centroids: [[Real]]) -> Real {
    let f = |c: [[Real]]| cost(points, c);
    grad(|s: Real| {
        let (y, pb) = vjp(f, map(|r| map(|x| x * s, r), centroids));
        sum(map(sum, pb(1.0))) + y
    }, 1.0)
}
fn twice(a: Real, x: Real) -> Real {
    let f = |t: Real| a * t * t;
    grad(|s: Real| grad(f, s), x)
}
";
    let expr = "(g([[0.5, -1.0], [1.5, 0.25], [-1.0, 0.75], [0.3, 0.2]], [[0.2, -0.4], [1.0, 0.5]]), \
                 pulled([[0.5, -1.0], [1.5, 0.25], [-1.0, 0.75], [0.3, 0.2]], [[0.2, -0.4], [1.0, 0.5]]), \
                 hoisted([[0.5, -1.0], [1.5, 0.25], [-1.0, 0.75], [0.3, 0.2]], [[0.2, -0.4], [1.0, 0.5]]), \
                 twice(3.0, 1.0))";
    // The last two capture the differentiated closure, which then reaches a tape of
    // tapes; only an operator's own closure is specialised (found by review: a
    // captured one, specialised, had its data read as pairs by the second
    // translation). twice: d/dx of 2·a·x is 2a.
    let want = [1.6, -2.3, -1.0, 0.5, 1.8 + 0.49, 1.8 + 0.49, 6.0];
    for (at, got) in in_every_mode(src, expr) {
        close(
            &format!("gradient and reverse over reverse ({at})"),
            &got,
            &want,
        );
    }
    let resolved = shown(src, "resolved", "g");
    assert!(
        resolved.contains("%closure(g_lambda1_delta_on_c0, [points"),
        "{resolved}"
    );
    assert!(resolved.contains("fn cost_delta_on_p0("), "{resolved}");
    assert!(!resolved.contains("%delta_lift(points"), "{resolved}");
}
