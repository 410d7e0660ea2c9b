//! `jet(f, x, vs, r)` ([Taylor] §2.2 and §3.2, the macro `D_(k,R)`; docs/language.md §5): every mixed
//! partial ∂^α f(x + Σⱼ tⱼ·vⱼ) at t = 0 with 1 ≤ |α| ≤ r, in graded order.
//!
//! The oracles are independent routes through the language: nested forward mode (one
//! `jvp` per order of α, a different translation: dual numbers), the reverse-over-
//! forward `hessian` for r = 2 (Vᵀ·H·V), `taylor` for k = 1 (coefficient j times j!),
//! and central finite differences of the gradient. Both backends run the same Core and
//! must agree bit for bit.

use fluxion_driver::gradcheck::{eval_literal, eval_reals};
use fluxion_driver::{AdMode, Backend, RunOptions};

fn run(src: &str, expr: &str) -> Vec<f64> {
    eval_reals(src, expr, AdMode::Delta).unwrap_or_else(|e| panic!("{expr}: {e}"))
}

fn native(src: &str, expr: &str) -> Vec<f64> {
    let options = RunOptions {
        backend: Backend::Native,
        ..RunOptions::default()
    };
    eval_reals(src, expr, options).unwrap_or_else(|e| panic!("native {expr}: {e}"))
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (j, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: entry {j} = {g}, expected {w}\n{got:?}\n{want:?}"
        );
    }
}

/// The multi-indices α ∈ ℕ^k with 1 ≤ |α| ≤ r in docs/language.md's graded order: by |α|,
/// then the first direction's exponent largest first. Written here from the contract,
/// not taken from the compiler.
fn graded(k: usize, r: usize) -> Vec<Vec<usize>> {
    fn of_degree(k: usize, d: usize) -> Vec<Vec<usize>> {
        if k == 1 {
            return vec![vec![d]];
        }
        (0..=d)
            .rev()
            .flat_map(|first| {
                of_degree(k - 1, d - first)
                    .into_iter()
                    .map(move |mut rest| {
                        rest.insert(0, first);
                        rest
                    })
            })
            .collect()
    }
    (1..=r).flat_map(|d| of_degree(k, d)).collect()
}

/// ∂^α f(x + Σ tⱼ vⱼ) at t = 0 by nested `jvp`: one differentiation along vⱼ for each
/// unit of αⱼ, innermost first.
fn nested_jvp(f: &str, ty: &str, x: &str, vs: &[&str], alpha: &[usize]) -> String {
    let mut g = f.to_string();
    for (j, &a) in alpha.iter().enumerate() {
        for _ in 0..a {
            g = format!("|y: {ty}| jvp({g}, y, {}).1", vs[j]);
        }
    }
    format!("({g})({x})")
}

/// Programs with closures, enums, recursion, arrays and the primitives with their own
/// mixed rules (`/`, `pow`, `atan2`) and composed ones; a point of type `[Real]`.
const PROGRAMS: &[(&str, &str)] = &[
    (
        "polynomial",
        "fn f(v: [Real]) -> Real { v[0] * v[0] * v[1] + v[1] * v[1] * v[1] - 2.0 * v[0] }",
    ),
    (
        "transcendental",
        "fn f(v: [Real]) -> Real {
             sin(v[0] * v[1]) + exp(v[0] - v[1]) / (1.0 + v[1] * v[1]) + sqrt(v[0] + 2.0)
             + log1p(v[1] * v[1]) + tanh(v[0]) * atan(v[1]) + erf(v[0] * 0.5)
         }",
    ),
    (
        "pow and atan2",
        "fn f(v: [Real]) -> Real {
             pow(v[0], v[1]) + pow(v[1], 3.0) + atan2(v[0], v[1]) + atan2(v[1], v[0] - 2.0)
         }",
    ),
    (
        "closures and enums",
        "enum Shape { Circle(Real), Rect(Real, Real) }
         fn area(s: Shape) -> Real { match s { Circle(r) => 3.0 * r * r, Rect(w, h) => w * h } }
         fn f(v: [Real]) -> Real {
             let k = v[1];
             let g = |t: Real| exp(k * t) / (1.0 + t * t);
             area(Rect(g(v[0]), v[1])) + area(Circle(v[0] * k))
         }",
    ),
    (
        "recursion and loops",
        "fn power(x: Real, n: Int) -> Real { if n == 0 { 1.0 } else { x * power(x, n - 1) } }
         fn f(v: [Real]) -> Real {
             let w = build(3, |i| v[0] * to_real(i) + v[1]);
             power(v[0], 4) * v[1] + fold(|a, y| a * 0.5 + sin(y), 0.0, w) + sum(map(|y| y * y, w))
         }",
    ),
];

const POINT: &str = "[0.3, 0.7]";
const DIRECTIONS: [&str; 3] = ["[1.0, 0.0]", "[0.0, 1.0]", "[0.5, -1.5]"];

#[test]
fn mixed_partials_equal_nested_forward_mode() {
    for (name, src) in PROGRAMS {
        for (k, r) in [(2, 2), (2, 3), (3, 2)] {
            let vs = &DIRECTIONS[..k];
            let got = run(src, &format!("jet(f, {POINT}, [{}], {r})", vs.join(", ")));
            let mut want = run(src, &format!("f({POINT})"));
            for alpha in graded(k, r) {
                want.extend(run(src, &nested_jvp("f", "[Real]", POINT, vs, &alpha)));
            }
            assert_close(&got, &want, 1e-11, &format!("{name} k={k} r={r}"));
        }
    }
}

#[test]
fn mixed_partials_equal_mpmath() {
    // g below at (0.3, 0.7) along (1,0), (0,1), (1,1), order 3, by mpmath (40 digits,
    // rounded to the nearest double):
    //   from mpmath import mp, mpf, exp, atan2, sqrt, diff; mp.dps = 40
    //   g = lambda a, b: (lambda h: h(a) + h(b))(lambda t: exp(2*t)/(1+t*t)) + a**3
    //                    + a*b + b**a + atan2(a, b) + sqrt(a + 2)
    //   F = lambda t1, t2, t3: g(0.3 + t1 + t3, 0.7 + t2 + t3)   (as mpf)
    //   [F(0,0,0)] + [diff(F, (0,0,0), alpha) for alpha in graded order, |alpha| <= 3]
    let src = "enum Shape { Circle(Real), Rect(Real, Real) }
               fn area(s: Shape) -> Real { match s { Circle(r) => 3.0 * r * r, Rect(w, h) => w * h } }
               fn power(x: Real, n: Int) -> Real { if n == 0 { 1.0 } else { x * power(x, n - 1) } }
               fn g(xs: [Real]) -> Real {
                   let k = 2.0;
                   let h = |t: Real| exp(k * t) / (1.0 + t * t);
                   sum(map(h, xs)) + power(xs[0], 3) + area(Rect(xs[0], xs[1])) + pow(xs[1], xs[0])
                   + atan2(xs[0], xs[1]) + sqrt(xs[0] + 2.0)
               }";
    let want = [
        7.450269657100646,
        4.609258674830537,
        3.053843405330006,
        7.6631020801605425,
        1.5458235945584682,
        0.9571953612246044,
        2.5030189557830727,
        2.6733443927873464,
        3.6305397540119504,
        6.1335587097950235,
        2.890667900422617,
        3.3770459220605216,
        6.267713822483139,
        0.9824408972215816,
        4.359486819282103,
        10.627200641765242,
        1.741111414242288,
        2.7235523114638696,
        7.083039130745973,
        17.710239772511216,
    ];
    let expr = "jet(g, [0.3, 0.7], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], 3)";
    // Rounding in a chain of about fifty operations per partial: 1e-13 relative.
    assert_close(&run(src, expr), &want, 1e-13, "mpmath");
    assert_close(&native(src, expr), &want, 1e-13, "mpmath, native");
}

#[test]
fn second_order_coefficients_are_the_hessian_between_the_directions() {
    // r = 2: the coefficient at eᵢ + eⱼ is vᵢᵀ·H·vⱼ; `hessian` is reverse over forward.
    let vs: [[f64; 2]; 3] = [[1.0, 0.0], [0.0, 1.0], [0.5, -1.5]];
    for (name, src) in PROGRAMS {
        let got = run(
            src,
            &format!("jet(f, {POINT}, [{}], 2)", DIRECTIONS.join(", ")),
        );
        let h = run(src, &format!("hessian(f, {POINT})"));
        let vhv = |a: &[f64; 2], b: &[f64; 2]| -> f64 {
            (0..2)
                .flat_map(|i| (0..2).map(move |j| (i, j)))
                .map(|(i, j)| a[i] * h[2 * i + j] * b[j])
                .sum()
        };
        // Past the value and the three first-order partials, in graded order.
        let second: Vec<f64> = graded(3, 2)
            .into_iter()
            .filter(|a| a.iter().sum::<usize>() == 2)
            .map(|alpha| {
                let dirs: Vec<usize> = (0..3).flat_map(|j| vec![j; alpha[j]]).collect();
                vhv(&vs[dirs[0]], &vs[dirs[1]])
            })
            .collect();
        assert_close(&got[4..], &second, 1e-10, name);
    }
}

#[test]
fn first_order_partials_match_finite_differences() {
    // ∂f along vⱼ = ⟨∇f, vⱼ⟩; the gradient by central differences (gradcheck's step).
    let h = fluxion_driver::gradcheck::FD_STEP;
    for (name, src) in PROGRAMS {
        let got = run(
            src,
            &format!("jet(f, {POINT}, [{}], 1)", DIRECTIONS.join(", ")),
        );
        let x = [0.3, 0.7];
        let vs: [[f64; 2]; 3] = [[1.0, 0.0], [0.0, 1.0], [0.5, -1.5]];
        for (j, v) in vs.iter().enumerate() {
            let at = |s: f64| {
                let p = format!("[{}, {}]", x[0] + s * v[0], x[1] + s * v[1]);
                run(src, &format!("f({p})"))[0]
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            let ad = got[1 + j];
            assert!(
                (ad - fd).abs() <= fluxion_driver::gradcheck::FD_TOLERANCE * (1.0 + fd.abs()),
                "{name}: direction {j}: {ad} vs {fd}"
            );
        }
    }
}

#[test]
fn one_direction_is_taylor_times_factorials() {
    for (name, src) in PROGRAMS {
        let got = run(src, &format!("jet(f, {POINT}, [[0.5, -1.5]], 4)"));
        let series = run(src, &format!("taylor(f, {POINT}, [0.5, -1.5], 4)"));
        let factorials = [1.0, 1.0, 2.0, 6.0, 24.0];
        let want: Vec<f64> = series.iter().zip(factorials).map(|(c, f)| c * f).collect();
        assert_close(&got, &want, 1e-13, name);
    }
}

#[test]
fn both_backends_give_the_same_bits() {
    for (name, src) in PROGRAMS {
        let expr = format!("jet(f, {POINT}, [{}], 3)", DIRECTIONS.join(", "));
        assert_eq!(run(src, &expr), native(src, &expr), "{name}");
    }
}

#[test]
fn the_paper_instance_and_structured_points() {
    // g(x1, x2) = x1²·x2 + x2³ at (1, 2) ([Taylor] §2.4): g = 10,
    // g1 = 4, g2 = 13, g11 = 4, g12 = 2, g22 = 12 — by hand.
    let src = "fn g(a: Real, b: Real) -> Real { a * a * b + b * b * b }";
    let got = run(src, "jet(g, (1.0, 2.0), [(1.0, 0.0), (0.0, 1.0)], 2)");
    assert_eq!(got, [10.0, 4.0, 13.0, 4.0, 2.0, 12.0]);
    // Results keep their type: (B, [T(B)]), an Int leaf's partials are ().
    let show = |expr: &str| eval_literal("", expr, AdMode::Delta).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        show("jet(|p: (Real, Real)| (p.0 * p.1, 3), (2.0, 5.0), [(1.0, 0.0), (0.0, 1.0)], 2)"),
        "((10.0, 3), [(5.0, ()), (2.0, ()), (0.0, ()), (1.0, ()), (0.0, ())])"
    );
}

#[test]
fn jet_nests_with_the_other_operators() {
    let src = "fn f(x: Real, y: Real) -> Real { x * x * y + sin(x * y) }
               fn mixed(p: (Real, Real)) -> Real {
                   jet(|q: (Real, Real)| f(q.0, q.1), p, [(1.0, 0.0), (0.0, 1.0)], 2).1[3]
               }";
    // ∂/∂x and ∂/∂y of f_xy = 2x + cos(xy) − xy·sin(xy), against nested jvp.
    let fxy = "|p: (Real, Real)| jvp(|a: (Real, Real)| jvp(|b: (Real, Real)| f(b.0, b.1), a, (0.0, 1.0)).1, p, (1.0, 0.0)).1";
    for mode in [AdMode::Delta, AdMode::Chad, AdMode::Fwd] {
        let got = eval_reals(src, "grad(mixed, (1.0, 2.0))", mode).expect("runs");
        let want = eval_reals(src, &format!("grad({fxy}, (1.0, 2.0))"), AdMode::Fwd).expect("runs");
        assert_close(&got, &want, 1e-12, &format!("{mode:?}"));
    }
    // A jet of a gradient: 6x has derivatives 6, 0 along 1.
    assert_eq!(
        run(
            "",
            "jet(|x: Real| grad(|z: [Real]| z[0] * z[0] * z[1], [x, 3.0])[0], 1.0, [1.0], 2)"
        ),
        [6.0, 6.0, 0.0]
    );
    // A jet of a jet: the outer direction differentiates the inner value's partials.
    let inner = "|s: Real| jet(|v: [Real]| v[0] * v[0] * v[1] * s, [1.0, 2.0], [[1.0, 0.0], [0.0, 1.0]], 2).1[3]";
    // f_xy = 2x·s = 2s: its derivatives in s at 3: 6, then 2, then 0.
    assert_eq!(
        run("", &format!("jet({inner}, 3.0, [1.0], 2)")),
        [6.0, 2.0, 0.0]
    );
}

#[test]
fn directions_known_only_at_run_time() {
    // The number of directions is the length of an array computed at run time: the
    // same partials as with an array literal (resolved ahead of time).
    let src = "fn f(v: [Real]) -> Real { exp(v[0]) * v[1] * v[1] }
               fn dirs(n: Int) -> [[Real]] { build(n, |i| if i == 0 { [1.0, 0.0] } else { [0.0, 1.0] }) }";
    let literal = run(src, "jet(f, [0.5, 2.0], [[1.0, 0.0], [0.0, 1.0]], 3)");
    assert_eq!(run(src, "jet(f, [0.5, 2.0], dirs(2), 3)"), literal);
    assert_eq!(native(src, "jet(f, [0.5, 2.0], dirs(2), 3)"), literal);
}

#[test]
fn bad_uses_are_diagnosed() {
    let err = |expr: &str| match eval_reals("", expr, AdMode::Delta) {
        Ok(v) => panic!("{expr}: expected an error, got {v:?}"),
        Err(e) => e,
    };
    let e = err("jet(|x: Real| x * x, 1.0, [], 2)");
    assert!(e.contains("at least one direction"), "{e}");
    let e = err("jet(|x: [Real]| x[0] * x[1], [1.0, 2.0], [[1.0, 0.0], [1.0]], 2)");
    assert!(e.contains("direction has length 1"), "{e}");
    let e = err("jet(|x: Real| x * x, 1.0, [1.0], 0)");
    assert!(e.contains("order of `jet` must be an Int literal"), "{e}");
    let e = err("jet(|x: Real| x * x, 1.0, [1.0], 65)");
    assert!(e.contains("jet orders above 64"), "{e}");
    let e = err("jet(|x: Real| x * x, 1.0, 1.0, 2)");
    assert!(e.contains("type error"), "{e}");
}
