// The suite every reverse mode runs (`delta_ad.rs`, `chad_ad.rs` include it after
// naming their mode `MODE_UNDER_TEST`): the mode against the reference (`--ad fwd`),
// central finite differences, the transpose identity and values derived by hand in
// the comments.
//
// Every check runs the reference first and then the mode under test, so that a wrong
// program or a wrong expected value fails on the reference: a failure whose message
// starts with `[rev]` is the reverse mode's, one that starts with `[fwd]` the test's.
// `REVERSE_AD_MODE=fwd cargo test -p fluxion-driver --test delta_ad` runs the suite
// with the reference in the mode's place, which checks every program, hand-derived
// value and finite difference here (it must pass, and does: that is how the suite
// was validated before delta existed).
//
// Agreement between the modes is to rounding: both compute the same partial
// derivatives, summed in different orders, so a relative difference of 1e-9 leaves
// several orders of magnitude of margin over the rounding of these programs (a few
// hundred operations of moderately scaled values) and still catches any wrong rule.

use fluxion_driver::gradcheck::{
    check_gradient, check_jacobian, check_transpose, eval_literal, eval_reals, fd_jacobian,
    parse_reals, skeleton,
};
use fluxion_driver::{AdMode, compile, with_big_stack};

/// The mode under test: the including file's `MODE_UNDER_TEST`, or the mode named by
/// the environment variable `REVERSE_AD_MODE` (`REVERSE_AD_MODE=fwd` runs the whole
/// suite with the reference in its place: every program and hand-derived value is
/// then checked, which is how the suite was validated before delta was built).
fn under_test() -> AdMode {
    match std::env::var("REVERSE_AD_MODE") {
        Ok(name) => AdMode::parse(&name).unwrap_or_else(|| panic!("REVERSE_AD_MODE={name}?")),
        Err(_) => MODE_UNDER_TEST,
    }
}

/// A stress test's size: `full` for a reverse mode; with `REVERSE_AD_MODE=fwd`, whose
/// `grad` costs one pass per input, `reference_size`.
fn stress_size(full: usize, reference_size: usize) -> usize {
    if under_test() == AdMode::Fwd {
        reference_size
    } else {
        full
    }
}

/// The reference first, then the mode under test.
fn modes() -> [AdMode; 2] {
    [AdMode::Fwd, under_test()]
}

/// Relative difference allowed between delta and the reference.
const MODE_TOLERANCE: f64 = 1e-9;

/// `expr` under the reference mode, printed; a failure is a bug in the test.
fn reference(src: &str, expr: &str) -> String {
    eval_literal(src, expr, AdMode::Fwd).unwrap_or_else(|e| panic!("[fwd] {expr}:\n{e}"))
}

/// `expr` under the mode under test, printed.
fn delta(src: &str, expr: &str) -> String {
    eval_literal(src, expr, under_test()).unwrap_or_else(|e| panic!("[rev] {expr}:\n{e}"))
}


fn close(a: f64, b: f64, tol: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

fn assert_reals_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert!(
        got.len() == want.len() && got.iter().zip(want).all(|(g, w)| close(*g, *w, tol)),
        "{what}:\n  got  {got:?}\n  want {want:?}"
    );
}

/// Evaluates `expr` under the reference and under delta, asserts that both print the
/// same shape and reals equal to `MODE_TOLERANCE`, and returns the reference's reals.
fn agree(src: &str, expr: &str) -> Vec<f64> {
    let fwd = reference(src, expr);
    let del = delta(src, expr);
    assert_eq!(
        skeleton(&del),
        skeleton(&fwd),
        "[rev] {expr}: the shape differs from fwd's\n  delta {del}\n  fwd   {fwd}"
    );
    let (f, d) = (parse_reals(&fwd), parse_reals(&del));
    assert_reals_close(
        &d,
        &f,
        MODE_TOLERANCE,
        &format!("[rev] {expr} against fwd"),
    );
    f
}

/// Like [`agree`], and the reference must also equal `want` (derived by hand) to
/// `tol`; the reference is checked before delta runs.
fn agree_with(src: &str, expr: &str, want: &[f64], tol: f64) {
    let fwd = parse_reals(&reference(src, expr));
    assert_reals_close(
        &fwd,
        want,
        tol,
        &format!("[fwd] {expr} against the hand value"),
    );
    agree(src, expr);
}

/// Like [`agree_with`] for a printed value: the reference must print `want` exactly
/// (values chosen so that every mode computes them exactly), and so must delta.
fn agree_exactly(src: &str, expr: &str, want: &str) {
    assert_eq!(reference(src, expr), want, "[fwd] {expr}");
    assert_eq!(delta(src, expr), want, "[rev] {expr}");
}

fn literal(xs: &[f64]) -> String {
    format!("{xs:?}")
}

// ---------------------------------------------------------------------------------
// 1. The paper's examples.
// ---------------------------------------------------------------------------------

/// [Delta] §7 on a small example: e = λ(x, y). x·y + x at (3, 4).
/// ∂/∂x = y + 1 = 5, ∂/∂y = x = 3, value 15; all exact.
#[test]
fn paper_worked_example() {
    let src = "fn e(x: Real, y: Real) -> Real { x * y + x }";
    agree_exactly(src, "grad(e, (3.0, 4.0))", "(5.0, 3.0)");
    agree_exactly(src, "value_and_grad(e, (3.0, 4.0))", "(15.0, (5.0, 3.0))");
    agree_exactly(src, "vjp(e, (3.0, 4.0)).1(2.0)", "(10.0, 6.0)");
    // The same function of an array: the input ids are the array's elements.
    agree_exactly(
        "",
        "grad(|v: [Real]| v[0] * v[1] + v[0], [3.0, 4.0])",
        "[5.0, 3.0]",
    );
}

/// [Delta] Fig. 12: rotating a vector by a quaternion, the OCaml program written in
/// Fluxion with its records as enums; e = λq v. (rotate_vec_by_quat v q).x at
/// q = (1.1, 2.2, 3.3, 4.4) (x, y, z, w) and v = (5.5, 6.6, 7.7).
///
/// By hand, with u = (qx, qy, qz), s = qw:
/// r = 2(u·v)u + (s² − u·u)v + 2s(u × v), so
/// r.x = 2(u·v)qx + (s² − u·u)vx + 2s(qy·vz − qz·vy).
/// u·v = 6.05 + 14.52 + 25.41 = 45.98, u·u = 1.21 + 4.84 + 10.89 = 16.94, s² = 19.36,
/// (u × v).x = 16.94 − 21.78 = −4.84:
/// r.x = 101.156 + 2.42·5.5 + 8.8·(−4.84) = 101.156 + 13.31 − 42.592 = 71.874.
/// ∂/∂qx = 2vx·qx + 2(u·v) − 2qx·vx                = 91.96
/// ∂/∂qy = 2vy·qx − 2qy·vx + 2s·vz = 14.52 − 24.2 + 67.76  = 58.08
/// ∂/∂qz = 2vz·qx − 2qz·vx − 2s·vy = 16.94 − 36.3 − 58.08  = −77.44
/// ∂/∂qw = 2s·vx + 2(qy·vz − qz·vy) = 48.4 − 9.68           = 38.72
/// ∂/∂vx = 2qx² + s² − u·u = 2.42 + 2.42                     = 4.84
/// ∂/∂vy = 2qy·qx − 2s·qz = 4.84 − 29.04                     = −24.2
/// ∂/∂vz = 2qz·qx + 2s·qy = 7.26 + 19.36                     = 26.62
/// (91.96 = 2·(u·v) is also a `Scale` factor on the paper's tape, x_32..x_34.)
const QUATERNION: &str = "
enum Vec3 { V3(Real, Real, Real) }
enum Quat { Q(Real, Real, Real, Real) }
fn vec_x(v: Vec3) -> Real { match v { V3(x, _, _) => x } }
fn q_to_vec(q: Quat) -> Vec3 { match q { Q(x, y, z, _) => V3(x, y, z) } }
fn q_w(q: Quat) -> Real { match q { Q(_, _, _, w) => w } }
fn dot3(p: Vec3, q: Vec3) -> Real {
    match (p, q) { (V3(px, py, pz), V3(qx, qy, qz)) => px * qx + py * qy + pz * qz }
}
fn add3(p: Vec3, q: Vec3) -> Vec3 {
    match (p, q) { (V3(px, py, pz), V3(qx, qy, qz)) => V3(px + qx, py + qy, pz + qz) }
}
fn scale3(k: Real, v: Vec3) -> Vec3 { match v { V3(x, y, z) => V3(k * x, k * y, k * z) } }
fn cross(a: Vec3, b: Vec3) -> Vec3 {
    match (a, b) {
        (V3(ax, ay, az), V3(bx, by, bz)) => V3(ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx),
    }
}
fn norm3(v: Vec3) -> Real { sqrt(dot3(v, v)) }
fn rotate_vec_by_quat(v: Vec3, q: Quat) -> Vec3 {
    let u = q_to_vec(q);
    let s = q_w(q);
    add3(add3(scale3(2.0 * dot3(u, v), u), scale3(s * s - dot3(u, u), v)), scale3(2.0 * s, cross(u, v)))
}
fn e(q: Quat, v: Vec3) -> Real { vec_x(rotate_vec_by_quat(v, q)) }
// The same rotation as a function of the 7 reals, all three components out.
fn rot(x: [Real]) -> [Real] {
    match rotate_vec_by_quat(V3(x[4], x[5], x[6]), Q(x[0], x[1], x[2], x[3])) { V3(a, b, c) => [a, b, c] }
}
fn ex(x: [Real]) -> Real { rot(x)[0] }
";

const Q0: &str = "Q(1.1, 2.2, 3.3, 4.4)";
const V0: &str = "V3(5.5, 6.6, 7.7)";
const QV0: [f64; 7] = [1.1, 2.2, 3.3, 4.4, 5.5, 6.6, 7.7];

#[test]
fn paper_figure_12_quaternion_rotation() {
    let want = [71.874, 91.96, 58.08, -77.44, 38.72, 4.84, -24.2, 26.62];
    let expr = format!("value_and_grad(e, ({Q0}, {V0}))");
    // The gradient is a value of the input's type, constructors included.
    assert_eq!(
        skeleton(&reference(QUATERNION, &expr)),
        "(#, (Q(#, #, #, #), V3(#, #, #)))"
    );
    agree_with(QUATERNION, &expr, &want, 1e-12);
    agree_with(
        QUATERNION,
        &format!("grad(ex, {})", literal(&QV0)),
        &want[1..],
        1e-12,
    );
    // The program is a rotation scaled by |q|²: |r| = |q|²·|v| (a check on the program).
    let norms = parse_reals(&reference(
        QUATERNION,
        &format!(
            "(norm3(rotate_vec_by_quat({V0}, {Q0})), (1.21 + 4.84 + 10.89 + 19.36) * norm3({V0}))"
        ),
    ));
    assert!(close(norms[0], norms[1], 1e-13), "{norms:?}");
    for mode in modes() {
        check_gradient(QUATERNION, "ex", &QV0, mode)
            .unwrap_or_else(|m| panic!("[{}] {m}", mode.name()));
        check_jacobian(QUATERNION, "rot", &QV0, mode)
            .unwrap_or_else(|m| panic!("[{}] {m}", mode.name()));
    }
    agree(QUATERNION, &format!("jacobian(rot, {})", literal(&QV0)));
    let u = [0.3, -0.2, 0.5, 1.0, -0.7, 0.1, 0.4];
    let w = [1.0, -2.0, 0.5];
    for mode in modes() {
        check_transpose(QUATERNION, "rot", &QV0, &u, &w, mode)
            .unwrap_or_else(|m| panic!("[{}] {m}", mode.name()));
    }
    // The pullback of the whole rotation at a cotangent of the output's type.
    agree(
        QUATERNION,
        &format!(
            "vjp(|p: (Quat, Vec3)| rotate_vec_by_quat(p.1, p.0), ({Q0}, {V0})).1(V3(1.0, -2.0, 0.5))"
        ),
    );
}

/// [Delta] §7's introduction: the chain x₁ = x + x, …, xₙ = xₙ₋₁ + xₙ₋₁ ending in xₙ + xₙ has
/// derivative 2ⁿ⁺¹, exact in floating point; a delta evaluator that loses sharing walks
/// a tree of 2ⁿ⁺¹ nodes (n = 60 would not finish). Also through a function called
/// twice per step (sharing across calls) and through a closure.
#[test]
fn paper_doubling_chain_keeps_sharing() {
    let n = 60;
    let mut src = String::from("fn f(x: Real) -> Real {\n    let x0 = x;\n");
    for i in 1..=n {
        src.push_str(&format!("    let x{i} = x{p} + x{p};\n", p = i - 1));
    }
    src.push_str(&format!("    x{n} + x{n}\n}}\n"));
    src.push_str(
        "fn dbl(y: Real) -> Real { y + y }\n\
         fn g(x: Real, n: Int) -> Real { if n == 0 { x } else { let y = g(x, n - 1); dbl(y) } }\n",
    );
    let want = 2f64.powi(n + 1);
    agree_with(&src, "grad(f, 1.5)", &[want], 0.0);
    agree_with(&src, "grad(|x: Real| g(x, 61), 1.5)", &[want], 0.0);
    agree_with(
        &src,
        "grad(|x: Real| iterate(61, |y: Real| y + y, x), 0.25)",
        &[want],
        0.0,
    );
}

/// The linearity test programs of docs/references.md ([Delta]), each at a small size with its value by hand.
#[test]
fn paper_linearity_programs_give_the_right_gradients() {
    // Fan-out reuse: y = x·1.5³ shared by k = 5 terms y·y: f = 5y², f' = 10y·1.5³.
    let src = "fn f(x: Real) -> Real {
        let y = 1.5 * (1.5 * (1.5 * x));
        y * y + y * y + y * y + y * y + y * y
    }";
    let y = 1.5f64.powi(3) * 0.8;
    agree_with(src, "grad(f, 0.8)", &[10.0 * y * 1.5f64.powi(3)], 1e-14);
    // Higher-order reuse: twice(twice(twice(g))) applies g(z) = z·y 8 times: x·y⁸;
    // ∂x = y⁸ = 256, ∂y = 8·x·y⁷ = 8·3·128 = 3072 at (3, 2).
    let src = "fn twice(f: fn(Real) -> Real) -> fn(Real) -> Real { |w| f(f(w)) }
               fn h(x: Real, y: Real) -> Real { let g = |z: Real| z * y; twice(twice(twice(g)))(x) }";
    agree_with(src, "grad(h, (3.0, 2.0))", &[256.0, 3072.0], 0.0);
    // A closure capturing a shared heavy value, applied many times: y = exp(x)
    // captured by k(z) = z + y, applied 10 times to 0: 10·y; d/dx = 10·e^x.
    let src =
        "fn h(x: Real) -> Real { let y = exp(x); let k = |z: Real| z + y; iterate(10, k, 0.0) }";
    agree_with(src, "grad(h, 0.5)", &[10.0 * 0.5f64.exp()], 1e-14);
    // Deep iteration: fold(acc·0.999 + x) over xs: ∂/∂xᵢ = 0.999^(n−1−i).
    let n = 50;
    let xs: Vec<f64> = (0..n).map(|i| 0.1 * i as f64).collect();
    let want: Vec<f64> = (0..n).map(|i| 0.999f64.powi(n - 1 - i)).collect();
    agree_with(
        "",
        &format!(
            "grad(|xs: [Real]| fold(|acc, x| acc * 0.999 + x, 0.0, xs), {})",
            literal(&xs)
        ),
        &want,
        1e-13,
    );
    // Sums and branches: a loop that takes one input or the other by comparing primals;
    // an input that no path uses has gradient exactly 0.
    let src = "fn pick(x: [Real], i: Int, acc: Real) -> Real {
        if i == 4 { acc } else if x[i] > 0.0 { pick(x, i + 1, acc * x[i]) } else { pick(x, i + 1, acc + x[i]) }
    }";
    // [2, −1, 3, −4], x₄ unused: acc = ((1·2) − 1)·3 − 4 = −1;
    // ∂x0 = 3, ∂x1 = 3, ∂x2 = 1, ∂x3 = 1, ∂x4 = 0.
    agree_exactly(
        src,
        "grad(|x: [Real]| pick(x, 0, 1.0), [2.0, -1.0, 3.0, -4.0, 7.0])",
        "[3.0, 3.0, 1.0, 1.0, 0.0]",
    );
    // Constant sub-computations and dead code: only x·2 reaches the result.
    let src = "fn f(x: Real) -> Real {
        let c = iterate(20, |z: Real| sin(z) + 1.0, 0.3);
        let dead = iterate(20, |z: Real| z * x + exp(z), x);
        x * 2.0 + c - c
    }";
    agree_exactly(src, "grad(f, 1.25)", "2.0");
}

// ---------------------------------------------------------------------------------
// 2. Every construct under grad, value_and_grad, vjp, jacobian and hessian.
// ---------------------------------------------------------------------------------

/// Programs defining `f: [Real] -> Real`, each at a point inside its smooth region: the
/// corpus `tests/corpus/programs/` (a new program is a new file there).
fn scalar_programs() -> Vec<(String, String, Vec<f64>)> {
    programs::corpus("programs")
}

#[test]
fn gradients_match_finite_differences_and_fwd() {
    for mode in modes() {
        for (name, src, x) in &scalar_programs() {
            check_gradient(src, "f", x, mode)
                .unwrap_or_else(|e| panic!("[{}] {name}: {e}", mode.name()));
        }
    }
    for (_, src, x) in &scalar_programs() {
        agree(src, &format!("grad(f, {})", literal(x)));
    }
}

/// value_and_grad is (f(x), grad); vjp's pullback at 1 is the gradient, it is linear
/// (at 2.5 it is 2.5·grad), it can be called twice and stored in a tuple, an array and
/// an enum; the value is f(x) exactly (primal preservation).
#[test]
fn value_and_grad_and_pullbacks_in_every_position() {
    let mut cases = Vec::new();
    for (name, src, x) in &scalar_programs() {
        let xs = literal(x);
        let src = format!("{src}\nenum Held {{ Pb(fn(Real) -> [Real]), NoPb }}");
        let value = parse_reals(&reference(&src, &format!("f({xs})")));
        let g = parse_reals(&reference(&src, &format!("grad(f, {xs})")));
        let twice: Vec<f64> = g.iter().map(|v| 2.5 * v).collect();
        let mut vg = value.clone();
        vg.extend(&g);
        let mut called_twice = g.clone();
        called_twice.extend(&twice);
        let exprs = [
            (format!("value_and_grad(f, {xs})"), vg),
            (format!("vjp(f, {xs}).1(1.0)"), g.clone()),
            (
                format!("{{ let (y, pb) = vjp(f, {xs}); (pb(1.0), pb(2.5)) }}"),
                called_twice,
            ),
            (
                format!("{{ let r = vjp(f, {xs}); let t = (2.5, r.1, r.0); t.1(t.0) }}"),
                twice.clone(),
            ),
            (
                format!("{{ let pbs = [vjp(f, {xs}).1, vjp(f, {xs}).1]; pbs[1](2.5) }}"),
                twice.clone(),
            ),
            (
                format!(
                    "{{ let h = Pb(vjp(f, {xs}).1); match h {{ Pb(p) => p(2.5), NoPb => [] }} }}"
                ),
                twice,
            ),
            (format!("vjp(f, {xs}).0"), value),
        ];
        for (expr, want) in exprs {
            let got = parse_reals(&reference(&src, &expr));
            assert_reals_close(&got, &want, 1e-13, &format!("[fwd] {name}: {expr}"));
            cases.push((src.clone(), expr, want));
        }
    }
    for (src, expr, want) in &cases {
        agree(src, expr);
        // Primal preservation: delta's value is the reference's bit for bit.
        if expr.ends_with(".0") {
            assert_eq!(parse_reals(&delta(src, expr)), *want, "[rev] {expr}");
        }
    }
}

/// Programs defining `f: [Real] -> [Real]`, each at a point inside its smooth region: the
/// corpus `tests/corpus/vector/` (a new program is a new file there).
fn vector_programs() -> Vec<(String, String, Vec<f64>)> {
    programs::corpus("vector")
}

#[test]
fn jacobians_match_finite_differences_and_fwd() {
    for mode in modes() {
        for (name, src, x) in &vector_programs() {
            check_jacobian(src, "f", x, mode)
                .unwrap_or_else(|e| panic!("[{}] {name}: {e}", mode.name()));
        }
    }
    for (_, src, x) in &vector_programs() {
        let m = parse_reals(&reference(src, &format!("f({})", literal(x)))).len();
        let w: Vec<f64> = (0..m).map(|i| 0.5 - 0.3 * i as f64).collect();
        agree(src, &format!("jacobian(f, {})", literal(x)));
        agree(src, &format!("vjp(f, {}).1({})", literal(x), literal(&w)));
    }
}

/// ⟨J·u, w⟩ = ⟨u, Jᵀ·w⟩: J·u by jvp (forward mode in every mode), Jᵀ·w by vjp (delta):
/// the two are independent computations of the same matrix.
#[test]
fn transpose_identity_holds() {
    for mode in modes() {
        for (name, src, x) in &vector_programs() {
            let m = eval_reals(src, &format!("f({})", literal(x)), AdMode::Fwd)
                .unwrap()
                .len();
            let u: Vec<f64> = (0..x.len()).map(|i| 1.0 - 0.7 * i as f64).collect();
            let w: Vec<f64> = (0..m).map(|i| 0.3 + 0.4 * i as f64).collect();
            check_transpose(src, "f", x, &u, &w, mode)
                .unwrap_or_else(|e| panic!("[{}] {name}: {e}", mode.name()));
        }
    }
    // Scalar programs: ⟨∇f, u⟩ = jvp(f, x, u).1 for a vjp at cotangent 1.
    for mode in modes() {
        for (name, src, x) in &scalar_programs() {
            let src = format!("{src}\nfn fv(x: [Real]) -> [Real] {{ [f(x)] }}");
            let u: Vec<f64> = (0..x.len()).map(|i| 0.5 - 0.3 * i as f64).collect();
            check_transpose(&src, "fv", x, &u, &[1.5], mode)
                .unwrap_or_else(|e| panic!("[{}] {name}: {e}", mode.name()));
        }
    }
}

#[test]
fn hessians_match_fwd_and_finite_differences_of_the_gradient() {
    let chosen = [
        "real_primitives",
        "closures_capturing_reals",
        "fold_scan_iterate",
        "cons_list",
        "tree",
        "closures_in_data_structures",
        "prelude_numerics",
    ];
    let all = scalar_programs();
    let programs: Vec<_> = all
        .iter()
        .filter(|(n, ..)| chosen.contains(&n.as_str()))
        .collect();
    assert_eq!(programs.len(), chosen.len());
    for (name, src, x) in &programs {
        let with_grad = format!("{src}\nfn g(x: [Real]) -> [Real] {{ grad(f, x) }}");
        let h = parse_reals(&reference(
            &with_grad,
            &format!("hessian(f, {})", literal(x)),
        ));
        let cols = fd_jacobian(&with_grad, "g", x).unwrap();
        let n = x.len();
        for i in 0..n {
            for j in 0..n {
                let (ad, fd) = (h[i * n + j], cols[j][i]);
                assert!(
                    (ad - fd).abs() <= 1e-5 * (1.0 + fd.abs()),
                    "[fwd] {name} H[{i}][{j}]: {ad} vs {fd}"
                );
            }
        }
    }
    for (_, src, x) in &programs {
        // The Jacobian of the gradient is the Hessian.
        let with_grad = format!("{src}\nfn g(x: [Real]) -> [Real] {{ grad(f, x) }}");
        agree(&with_grad, &format!("jacobian(g, {})", literal(x)));
    }
    for (_, src, x) in &scalar_programs() {
        agree(src, &format!("hessian(f, {})", literal(x)));
    }
}

/// Every scalar program as a function to `[Real]`: its Jacobian is the gradient as one
/// row.
#[test]
fn jacobians_of_every_construct() {
    for (_, src, x) in &scalar_programs() {
        let src = format!("{src}\nfn fv(x: [Real]) -> [Real] {{ [f(x), x[0] * f(x)] }}");
        agree(&src, &format!("jacobian(fv, {})", literal(x)));
    }
}

/// Gradients with respect to structured values: a tuple (Real, [Real]), an enum, a
/// recursive enum, several parameters with `Int` leaves; the gradient has the input's
/// type with `()` at `Int`, `Bool` and `()` leaves.
#[test]
fn structured_inputs() {
    // g(a, v) = a·(v·v) + Σ sin(a·vᵢ):
    // ∂a = v·v + Σ vᵢ·cos(a·vᵢ), ∂vᵢ = 2a·vᵢ + a·cos(a·vᵢ).
    let src = "fn g(p: (Real, [Real])) -> Real { let (a, v) = p; a * dot(v, v) + sum(map(|y| sin(y * a), v)) }";
    let (a, v) = (0.5f64, [1.0f64, 2.0, -0.5]);
    let mut want = vec![
        v.iter().map(|y| y * y).sum::<f64>() + v.iter().map(|y| y * (a * y).cos()).sum::<f64>(),
    ];
    want.extend(v.iter().map(|y| 2.0 * a * y + a * (a * y).cos()));
    let expr = format!("grad(g, ({a:?}, {}))", literal(&v));
    assert_eq!(skeleton(&reference(src, &expr)), "(#, [#, #, #])");
    agree_with(src, &expr, &want, 1e-14);

    // An enum with an Int field: its tangent type is ShapeTan, printed with the same
    // constructor names and () at the Int.
    let shapes = "enum Shape { Circle(Real), Tagged(Int, Real), Pair(Shape, Shape) }
        fn area(s: Shape) -> Real {
            match s { Circle(r) => r * r, Tagged(n, x) => to_real(n) * x * x, Pair(a, b) => area(a) * area(b) }
        }";
    agree_exactly(shapes, "grad(area, Circle(2.0))", "Circle(4.0)");
    agree_exactly(shapes, "grad(area, Tagged(3, 2.0))", "Tagged((), 12.0)");
    // area = r²·n·x² with r = 1.5, n = 2, x = 0.5: ∂r = 2r·n·x² = 1.5, ∂x = r²·n·2x = 4.5.
    agree_exactly(
        shapes,
        "grad(area, Pair(Circle(1.5), Tagged(2, 0.5)))",
        "Pair(Circle(1.5), Tagged((), 4.5))",
    );
    // A match on the gradient, typed as ShapeTan.
    agree_exactly(
        shapes,
        "{ let d: ShapeTan = grad(area, Tagged(3, 2.0)); match d { Tagged(_, g) => g, _ => 0.0 } }",
        "12.0",
    );

    // A recursive enum: tree_grad's example (total = a² + 2(b² + 2c²): 2a, 4b, 8c).
    let tree = "enum Tree { Leaf(Real), Node(Tree, Tree) }
        fn total(t: Tree) -> Real { match t { Leaf(v) => v * v, Node(l, r) => total(l) + 2.0 * total(r) } }";
    agree_exactly(
        tree,
        "grad(total, Node(Leaf(1.0), Node(Leaf(2.0), Leaf(3.0))))",
        "Node(Leaf(2.0), Node(Leaf(8.0), Leaf(24.0)))",
    );
    // A cons list as the input: sum of cubes, 3xᵢ².
    let list = "enum List { Nil, Cons(Real, List) }
        fn cubes(l: List) -> Real { match l { Nil => 0.0, Cons(h, t) => h * h * h + cubes(t) } }";
    agree_exactly(
        list,
        "grad(cubes, Cons(1.0, Cons(-2.0, Cons(0.5, Nil))))",
        "Cons(3.0, Cons(12.0, Cons(0.75, Nil)))",
    );

    // Several parameters with Int and Bool leaves: x is the tuple of the arguments.
    // h(a, v, n, b) = a·n·v₀ + v₁² (b true): ∂a = n·v₀ = 6, ∂v = (a·n, 2v₁) = (1.5, -2).
    let multi = "fn h(a: Real, v: [Real], n: Int, b: Bool) -> Real {
        if b { a * to_real(n) * v[0] + v[1] * v[1] } else { 0.0 }
    }";
    agree_exactly(
        multi,
        "grad(h, (0.5, [2.0, -1.0], 3, true))",
        "(6.0, [1.5, -2.0], (), ())",
    );
    agree_exactly(
        multi,
        "value_and_grad(h, (0.5, [2.0, -1.0], 3, true))",
        "(4.0, (6.0, [1.5, -2.0], (), ()))",
    );
    // A nested tuple with an Int and a unit leaf.
    agree_exactly(
        "",
        "grad(|p: ((Real, Int), ((), [Real]))| p.0.0 * to_real(p.0.1) * p.1.1[0], ((2.0, 4), ((), [3.0])))",
        "((12.0, ()), ((), [8.0]))",
    );

    // The structured function and its flattened twin agree coordinate by coordinate.
    let src = "enum T { L(Real), N(T, T), S(Int, T) }
               fn tot(t: T) -> Real {
                 match t { L(v) => v * v * v, N(l, r) => tot(l) * tot(r) + tot(r), S(n, s) => to_real(n) * tot(s) }
               }
               fn structured(p: ((Real, Int), [Real], T)) -> Real {
                 let ((a, n), xs, t) = p;
                 a * to_real(n) + sum(map(|x| x * a, xs)) + tot(t)
               }
               fn f(x: [Real]) -> Real {
                 structured(((x[0], 2), [x[1], x[2]], N(L(x[3]), S(3, N(L(x[4]), L(x[5]))))))
               }";
    let x = [0.5, -1.0, 2.0, 0.7, 1.1, -0.4];
    let flat = parse_reals(&reference(src, &format!("grad(f, {})", literal(&x))));
    let point = format!(
        "(({:?}, 2), [{:?}, {:?}], N(L({:?}), S(3, N(L({:?}), L({:?})))))",
        x[0], x[1], x[2], x[3], x[4], x[5]
    );
    let expr = format!("grad(structured, {point})");
    assert_eq!(
        skeleton(&reference(src, &expr)),
        "((#, ()), [#, #], N(L(#), S((), N(L(#), L(#)))))"
    );
    assert_reals_close(&agree(src, &expr), &flat, 0.0, "structured vs flat");
    for mode in modes() {
        check_gradient(src, "f", &x, mode).unwrap_or_else(|e| panic!("[{}] {e}", mode.name()));
    }
}

/// Int leaves in outputs: the cotangent of an Int is (), and a pullback returns () for
/// an Int input.
#[test]
fn int_leaves_in_outputs_and_pullbacks() {
    let src = "fn f(p: (Real, Int)) -> (Int, Real, [Real], Bool) {
        let (x, n) = p;
        (n * 2, x * to_real(n), [x * x, sin(x)], x > 0.0)
    }";
    // Cotangent ((), 2, [1, 3], ()) at (0.5, 4): 2·n + 1·2x + 3·cos(x) = 8 + 1 + 3cos(0.5).
    let expr = "vjp(f, (0.5, 4)).1(((), 2.0, [1.0, 3.0], ()))";
    assert_eq!(skeleton(&reference(src, expr)), "(#, ())");
    agree_with(src, expr, &[9.0 + 3.0 * 0.5f64.cos()], 1e-15);
    agree_exactly(
        src,
        "vjp(f, (0.5, 4)).0",
        "(8, 2.0, [0.25, 0.479425538604203], true)",
    );
    // jacobian and grad through Int-valued intermediate results (zero derivative).
    agree_exactly(
        "",
        "grad(|x: [Real]| to_real(to_int(x[0] * 10.0)) * x[1] + to_real(argmax(x)) * x[0], [0.37, 2.0])",
        "[1.0, 3.0]",
    );
}

// ---------------------------------------------------------------------------------
// 3. Nesting under delta.
// ---------------------------------------------------------------------------------

#[test]
fn nesting_has_no_perturbation_confusion() {
    // docs/language.md §5's two instances.
    agree_exactly("", "grad(|x| diff(|y| x * y * y, x), 2.0)", "8.0");
    agree_exactly("", "diff(|x| x * diff(|y| x + y, 1.0), 1.0)", "1.0");
    // grad of diff: d/dx [∂/∂y (x·y³) at y = x] = d/dx 3x³ = 9x² = 36 at 2.
    agree_exactly(
        "",
        "grad(|x: Real| diff(|y: Real| x * y * y * y, x), 2.0)",
        "36.0",
    );
    // diff of grad: d/dx [∂/∂y (x·y²) at y = x] = d/dx 2x² = 4x = 8 at 2.
    agree_exactly(
        "",
        "diff(|x: Real| grad(|y: Real| x * y * y, x), 2.0)",
        "8.0",
    );
    // grad inside grad (reverse over reverse): grad of the first component of a
    // gradient: ∂/∂y0 (y0²·y1) = 2·y0·y1; its gradient (2y1, 2y0) = (6, 2) at (1, 3).
    agree_exactly(
        "",
        "grad(|x: [Real]| grad(|y: [Real]| y[0] * y[0] * y[1], x)[0], [1.0, 3.0])",
        "[6.0, 2.0]",
    );
    // Reverse over reverse with the outer variable captured by the inner function:
    // d/dx [∂/∂y (x·y³) at y = x] = 36 at 2, as above.
    agree_exactly(
        "",
        "grad(|x: Real| grad(|y: Real| x * y * y * y, x), 2.0)",
        "36.0",
    );
    // Three levels: d³/dx³ x⁴ = 24x = 24 at 1, by grad, grad, grad.
    agree_exactly(
        "",
        "grad(|a: Real| grad(|b: Real| grad(|c: Real| c * c * c * c, b), a), 1.0)",
        "24.0",
    );
    // value_and_grad inside grad: d/dx [x·v(x) + g(x)] with v = x², g = 2x (of x²):
    // x³ + 2x → 3x² + 2 = 14 at 2.
    agree_exactly(
        "",
        "grad(|x: Real| { let vg = value_and_grad(|y: Real| y * y, x); x * vg.0 + vg.1 }, 2.0)",
        "14.0",
    );
    // A gradient inside a map inside a gradient: f(x) = Σᵢ xᵢ·∂/∂y (y²·xᵢ)|y=xᵢ = Σ 2xᵢ³,
    // ∇ = 6xᵢ² = (6, 24) at (1, 2).
    agree_exactly(
        "",
        "grad(|x: [Real]| sum(map(|xi| xi * grad(|y: Real| y * y * xi, xi), x)), [1.0, 2.0])",
        "[6.0, 24.0]",
    );
}

#[test]
fn hessians_of_several_functions() {
    // Closed forms.
    // x0²·x1 at (1, 2): [[2x1, 2x0], [2x0, 0]].
    agree_exactly(
        "",
        "hessian(|x: [Real]| x[0] * x[0] * x[1], [1.0, 2.0])",
        "[[4.0, 2.0], [2.0, 0.0]]",
    );
    // Σ xᵢ³ at (1, −2, 0.5): diag(6xᵢ).
    agree_exactly(
        "",
        "hessian(|x: [Real]| sum(map(|y| y * y * y, x)), [1.0, -2.0, 0.5])",
        "[[6.0, 0.0, 0.0], [0.0, -12.0, 0.0], [0.0, 0.0, 3.0]]",
    );
    // x0·x1·x2 at (1, 2, 3): off-diagonal entries are the third coordinate.
    agree_exactly(
        "",
        "hessian(|x: [Real]| x[0] * x[1] * x[2], [1.0, 2.0, 3.0])",
        "[[0.0, 3.0, 2.0], [3.0, 0.0, 1.0], [2.0, 1.0, 0.0]]",
    );
    // exp(a·b) at (1, 2): [[b²e, (1 + ab)e], [(1 + ab)e, a²e]] with e = exp(2).
    let e2 = 2f64.exp();
    agree_with(
        "",
        "hessian(|x: [Real]| exp(x[0] * x[1]), [1.0, 2.0])",
        &[4.0 * e2, 3.0 * e2, 3.0 * e2, e2],
        1e-14,
    );
    // Through closures and a fold, against fwd.
    agree(
        "",
        "hessian(|x: [Real]| { let k = x[0]; fold(|a, y| a * k + sin(y * a), 0.3, x) }, [0.4, 1.1, -0.7])",
    );
    agree(
        "",
        "hessian(|x: [Real]| logsumexp(map2(|a, b| a * b, x, reverse(x))), [0.4, 1.1, -0.7, 0.2])",
    );
    // A Hessian inside a gradient: d/dx of the trace of hessian(|y| x0·Σy³, x) = 6·x0·Σxᵢ:
    // ∂/∂x0 = 6(Σx + x0), ∂/∂xᵢ = 6x0 → at (1, 2): (6·4, 6) = (24, 6).
    agree_exactly(
        "",
        "grad(|x: [Real]| { let h = hessian(|y: [Real]| x[0] * sum(map(|z| z * z * z, y)), x); h[0][0] + h[1][1] }, [1.0, 2.0])",
        "[24.0, 6.0]",
    );
}

#[test]
fn forward_and_taylor_over_reverse() {
    let src =
        "fn f(x: [Real]) -> Real { x[0] * x[0] * x[1] + sin(x[1]) * x[2] + x[2] * x[2] * x[2] }
               fn g(x: [Real]) -> [Real] { grad(f, x) }";
    let x = [0.5, 1.2, -0.8];
    let u = [1.0, -0.5, 0.25];
    // jvp of a function whose body calls grad: H·u.
    let hu = agree(src, &format!("jvp(g, {}, {}).1", literal(&x), literal(&u)));
    let h = agree(src, &format!("hessian(f, {})", literal(&x)));
    let want: Vec<f64> = (0..3)
        .map(|i| (0..3).map(|j| h[i * 3 + j] * u[j]).sum())
        .collect();
    assert_reals_close(&hu, &want, 1e-13, "H·u");
    // By hand: H = [[2x1, 2x0, 0], [2x0, −sin(x1)·x2, cos(x1)], [0, cos(x1), 6x2]].
    let (c, s) = (1.2f64.cos(), 1.2f64.sin());
    let hand = [2.4, 1.0, 0.0, 1.0, -s * -0.8, c, 0.0, c, -4.8];
    assert_reals_close(&h, &hand, 1e-14, "H by hand");
    // diff of a function calling grad: d/dx (4x³) = 12x² = 12 at 1.
    agree_exactly(
        "",
        "diff(|x: Real| grad(|y: Real| y * y * y * y, x), 1.0)",
        "12.0",
    );
    // taylor of a function calling grad: g(x) = d/dx x⁴ = 4x³ at 1 along 1:
    // 4(1 + t)³ = 4 + 12t + 12t² + 4t³ (exact).
    agree_exactly(
        "",
        "taylor(|x: Real| grad(|y: Real| y * y * y * y, x), 1.0, 1.0, 3)",
        "(4.0, [12.0, 12.0, 4.0])",
    );
    // taylor of a function calling grad over arrays: ∇f(x + t·u) for f above.
    agree(
        src,
        &format!("taylor(g, {}, {}, 3)", literal(&x), literal(&u)),
    );
}

#[test]
fn pullbacks_are_differentiable() {
    // The pullback of x³ at 2 is s ↦ 12s: its derivative in s is 12.
    agree_exactly(
        "",
        "diff(|s: Real| vjp(|x: Real| x * x * x, 2.0).1(s), 1.0)",
        "12.0",
    );
    // As a function of the point: x ↦ 3x² at cotangent 1, derivative 6x = 12 at 2.
    agree_exactly(
        "",
        "diff(|x: Real| vjp(|y: Real| y * y * y, x).1(1.0), 2.0)",
        "12.0",
    );
    // grad of a pullback's output in the cotangent: the pullback of
    // f(x) = (x0·x1, x1²) at (3, 2) is w ↦ (w0·x1, w0·x0 + 2w1·x1) = (2w0, 3w0 + 4w1);
    // the gradient of its sum in w is (2 + 3, 4) = (5, 4).
    let f = "|x: [Real]| [x[0] * x[1], x[1] * x[1]]";
    agree_exactly(
        "",
        &format!("grad(|w: [Real]| sum(vjp({f}, [3.0, 2.0]).1(w)), [1.0, 1.0])"),
        "[5.0, 4.0]",
    );
    // ... and in the point: Σ of (w0·x1, w0·x0 + 2w1·x1) at w = (1, 1) is x1 + x0 + 2x1:
    // gradient (1, 3).
    agree_exactly(
        "",
        &format!("grad(|x: [Real]| sum(vjp({f}, x).1([1.0, 1.0])), [3.0, 2.0])"),
        "[1.0, 3.0]",
    );
    // A vjp of a pullback (reverse over reverse): the pullback is linear in w with
    // matrix Jᵀ = [[2, 0], [3, 4]], so its own pullback at c is J·c = (2c0 + 3c1, 4c1).
    agree_exactly(
        "",
        &format!("vjp(vjp({f}, [3.0, 2.0]).1, [1.0, 1.0]).1([1.0, 1.0])"),
        "[5.0, 4.0]",
    );
    // jacobian of a pullback: Jᵀ.
    agree_exactly(
        "",
        &format!("jacobian(vjp({f}, [3.0, 2.0]).1, [1.0, 1.0])"),
        "[[2.0, 0.0], [3.0, 4.0]]",
    );
}

/// A pullback is an ordinary value: several may be alive at once, called in any order
/// and any number of times, after other gradients were taken, from inside another
/// gradient; each one answers for its own point (a tape shared between them would
/// mix them up).
#[test]
fn interleaved_and_escaping_pullbacks() {
    let src = "fn f(x: [Real]) -> Real { x[0] * x[0] * x[1] }
               fn g(x: [Real]) -> Real { sin(x[0]) + x[1] * x[1] * x[1] }
               fn pullback_of_f(x: [Real]) -> fn(Real) -> [Real] { vjp(f, x).1 }";
    // ∇f = (2x0·x1, x0²) = (12, 4) at (2, 3) and (−4, 1) at (1, −2);
    // ∇g = (cos x0, 3x1²) = (1, 12) at (0, 2).
    agree_exactly(
        src,
        "{ let (_, p1) = vjp(f, [2.0, 3.0]); let (_, p2) = vjp(g, [0.0, 2.0]); let p3 = pullback_of_f([1.0, -2.0]);
           (p2(1.0), p1(1.0), p3(2.0), grad(g, [0.0, 2.0]), p1(0.5), p2(2.0)) }",
        "([1.0, 12.0], [12.0, 4.0], [-8.0, 2.0], [1.0, 12.0], [6.0, 2.0], [2.0, 24.0])",
    );
    // Gradients at many points in a row, and pullbacks made in a map and called later.
    agree_exactly(
        src,
        "{ let pbs = map(pullback_of_f, [[2.0, 3.0], [1.0, -2.0], [0.5, 4.0]]);
           (map(|x| grad(f, x), [[2.0, 3.0], [1.0, -2.0]]), map(|p| p(1.0), reverse(pbs))) }",
        "([[12.0, 4.0], [-4.0, 1.0]], [[4.0, 0.25], [-4.0, 1.0], [12.0, 4.0]])",
    );
    // A pullback made outside a gradient and used inside it: pb(s) = s·(12, 4), so
    // pb(z0)[0]·z1 = 12·z0·z1 and its gradient at (1, 2) is (24, 12).
    agree_exactly(
        src,
        "{ let pb = pullback_of_f([2.0, 3.0]); grad(|z: [Real]| pb(z[0])[0] * z[1], [1.0, 2.0]) }",
        "[24.0, 12.0]",
    );
    // A pullback made inside a gradient, of a function that captures the outer
    // variable: d/dx [pb(1)] where pb is the pullback of y ↦ x·y² at y = x: 2x² → 4x.
    agree_exactly(
        "",
        "grad(|x: Real| vjp(|y: Real| x * y * y, x).1(1.0), 3.0)",
        "12.0",
    );
}

/// Operators apply to any expression of function type.
#[test]
fn operators_apply_to_any_function_value() {
    let src = "fn square(x: Real) -> Real { x * x }
               fn adder(k: Real) -> fn(Real) -> Real { |x| x * x + k * x }
               fn apply_grad(g: fn(Real) -> Real, x: Real) -> Real { grad(g, x) }";
    agree_exactly(src, "grad(square, 3.0)", "6.0"); // top-level function
    agree_exactly(src, "apply_grad(|x| 3.0 * x, 1.0)", "3.0"); // parameter
    agree_exactly(src, "grad(adder(2.0), 1.0)", "4.0"); // returned closure: 2x + k
    agree_exactly(src, "{ let k = 5.0; grad(|x| k * x * x, 1.0) }", "10.0"); // captured
    agree_exactly(src, "grad(sin, 0.0)", "1.0"); // a built-in
    agree_exactly(src, "grad(|x: Real| 7.0, 1.0)", "0.0"); // a constant
    agree_exactly(src, "grad(|x: [Real]| 7.0, [1.0, 2.0])", "[0.0, 0.0]"); // dense zeros
    agree_exactly(
        src,
        "grad(|x: [Real]| x[1], [1.0, 2.0, 3.0])",
        "[0.0, 1.0, 0.0]",
    );
    agree_exactly(src, "grad(|p: (Real, Real)| p.0, (1.0, 2.0))", "(1.0, 0.0)");
}

/// Empty, ragged and real-free shapes: a gradient is dense (zeros are printed, never
/// left symbolic) and has the input's shape, whatever it is.
#[test]
fn empty_ragged_and_real_free_shapes() {
    let cases = [
        ("grad(|x: [Real]| sum(x), [])", "[]"),
        ("jacobian(|x: [Real]| map(|y| y * 2.0, x), [])", "[]"),
        ("jacobian(|x: [Real]| [], [1.0, 2.0])", "[]"),
        ("hessian(|x: [Real]| sum(x), [])", "[]"),
        ("vjp(|x: [Real]| map(|y| y * y, x), []).1([])", "[]"),
        ("grad(|b: Bool| 1.0, true)", "()"),
        ("grad(|u: ()| 2.0, ())", "()"),
        ("vjp(|x: Real| (), 1.0).1(())", "0.0"),
        ("grad(|x: ([Real], Int)| 1.0, ([1.0], 2))", "([0.0], ())"),
        ("grad(|x: Real| sum(build(0, |i| x)), 1.0)", "0.0"),
        (
            "grad(|x: [[Real]]| sum(map(sum, x)), [[1.0], [], [2.0, 3.0]])",
            "[[1.0], [], [1.0, 1.0]]",
        ),
        (
            "jacobian(|x: [Real]| x, [1.0, 2.0])",
            "[[1.0, 0.0], [0.0, 1.0]]",
        ),
    ];
    for (expr, want) in cases {
        agree_exactly("", expr, want);
    }
}

/// docs/language.md §5's choices at non-differentiable points, which the reverse rules of
/// the calculus table must follow as the forward ones do.
#[test]
fn non_differentiable_points_follow_the_contract() {
    agree_exactly("", "grad(|x: Real| abs(x), 0.0)", "0.0");
    agree_exactly(
        "",
        "grad(|p: (Real, Real)| max(p.0, p.1), (1.0, 1.0))",
        "(1.0, 0.0)",
    );
    agree_exactly(
        "",
        "grad(|p: (Real, Real)| min(p.0, p.1), (1.0, 1.0))",
        "(1.0, 0.0)",
    );
    agree_exactly(
        "",
        "grad(|x: [Real]| maximum(x), [2.0, 5.0, 5.0])",
        "[0.0, 1.0, 0.0]",
    );
    agree_exactly(
        "",
        "grad(|x: [Real]| minimum(x), [2.0, 1.0, 1.0])",
        "[0.0, 1.0, 0.0]",
    );
    agree_exactly(
        "",
        "grad(|p: (Real, Real)| pow(p.0, p.1), (0.0, 2.0))",
        "(0.0, 0.0)",
    );
    agree_exactly(
        "",
        "grad(|p: (Real, Real)| pow(p.0, p.1), (-2.0, 3.0))",
        "(12.0, 0.0)",
    );
    agree_exactly(
        "",
        "grad(|x: Real| floor(x) + ceil(x) + to_real(to_int(x)), 1.5)",
        "0.0",
    );
    agree_exactly(
        "",
        "grad(|x: Real| if x > 0.0 { x * x } else { -x }, 0.0)",
        "-1.0",
    );
}

// ---------------------------------------------------------------------------------
// 4. Errors.
// ---------------------------------------------------------------------------------

/// A cotangent of the wrong shape is a runtime error that says so, under delta as under
/// fwd; never a panic or an internal error.
#[test]
fn pullback_cotangents_of_the_wrong_shape_are_runtime_errors() {
    let cases = [
        (
            "",
            "vjp(|x: [Real]| map(|y| y * y, x), [1.0, 2.0]).1([1.0])",
            "an array of length 1 where the result has 2",
        ),
        (
            "",
            "vjp(|x: ([Real], Real)| (map(|y| y * x.1, x.0), x.1), ([1.0, 2.0], 3.0)).1(([1.0, 2.0, 3.0], 1.0))",
            "an array of length 3 where the result has 2",
        ),
        (
            "enum S { A(Real), B(Real, Real) }",
            "vjp(|s: S| match s { A(r) => A(r * r), B(p, q) => B(p * q, q) }, A(2.0)).1(B(1.0, 1.0))",
            "another constructor",
        ),
        (
            "",
            "{ let pb = vjp(|x: [Real]| reverse(x), [1.0, 2.0, 3.0]).1; (pb([1.0, 1.0, 1.0]), pb([]))}",
            "an array of length 0 where the result has 3",
        ),
    ];
    const SHAPE: &str =
        "runtime error: the cotangent does not have the shape of the function's result";
    let mut fwd_messages = Vec::new();
    for (src, expr, detail) in cases {
        let err = eval_literal(src, expr, AdMode::Fwd).expect_err(expr);
        assert!(
            err.contains(SHAPE) && err.contains(detail),
            "[fwd] {expr}: {err}"
        );
        fwd_messages.push(err.lines().next().unwrap_or_default().to_string());
    }
    for ((src, expr, detail), fwd_first_line) in cases.iter().zip(&fwd_messages) {
        let err = match eval_literal(src, expr, under_test()) {
            Ok(v) => panic!("[rev] {expr}: expected an error, got {v}"),
            Err(e) => e,
        };
        assert!(
            err.contains(SHAPE) && err.contains(detail) && !err.contains("internal"),
            "[rev] {expr}: {err}\n(fwd says: {fwd_first_line})"
        );
    }
}

/// `maximum`/`minimum` of an empty array fail with their own message under every
/// mode (the translation finds the extreme by `argmax`; found by review: delta said
/// "argmax of an empty array" for the prelude's `logsumexp([])`).
#[test]
fn extremes_of_empty_arrays_keep_their_message() {
    for (expr, message) in [
        ("grad(|x: [Real]| maximum(x), [])", "maximum of an empty array"),
        ("grad(|x: [Real]| minimum(x) * 2.0, [])", "minimum of an empty array"),
        ("grad(logsumexp, [])", "maximum of an empty array"),
    ] {
        for mode in [AdMode::Fwd, under_test()] {
            let err = eval_literal("", expr, mode).expect_err(expr);
            assert!(err.contains(message), "[{mode:?}] {expr}: {err}");
        }
    }
}

// ---------------------------------------------------------------------------------
// 5. Every example, and stress programs.
// ---------------------------------------------------------------------------------

/// Every `examples/*.flx` prints the same under delta as under fwd.
#[test]
fn examples_agree_with_fwd() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "flx"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{}", dir.display());
    let run = |text: &str, mode: AdMode| {
        let text = text.to_string();
        with_big_stack(move || {
            compile("example.flx", &text)
                .map_err(|f| f.render())?
                .run_with("main", None, mode)
                .map(|out| out.to_literal())
                .map_err(|f| f.render())
        })
    };
    let outputs: Vec<(String, String, String)> = files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let out =
                run(&text, AdMode::Fwd).unwrap_or_else(|e| panic!("[fwd] {}: {e}", file.display()));
            (file.display().to_string(), text, out)
        })
        .collect();
    for (name, text, fwd) in outputs {
        let del = run(&text, under_test()).unwrap_or_else(|e| panic!("[rev] {name}: {e}"));
        assert_eq!(skeleton(&del), skeleton(&fwd), "[rev] {name}");
        assert_reals_close(
            &parse_reals(&del),
            &parse_reals(&fwd),
            MODE_TOLERANCE,
            &format!("[rev] {name}"),
        );
    }
}

/// The halving chain of docs/references.md ([Delta]), x_{i+1} = 0.5·(x_i + x_i), 10⁴ lets: every step is
/// exact in floating point, so the value is x and the gradient exactly 1. A delta
/// evaluator that loses sharing would take 2^10000 steps.
#[test]
fn stress_halving_chain_of_ten_thousand_lets() {
    let n = 10_000;
    let mut src = String::from("fn f(x0: Real) -> Real {\n");
    for i in 0..n {
        src.push_str(&format!("    let x{} = 0.5 * (x{i} + x{i});\n", i + 1));
    }
    src.push_str(&format!("    x{n}\n}}\n"));
    agree_exactly(&src, "value_and_grad(f, 1.3)", "(1.3, 1.0)");
}

/// Sum of squares: ∂/∂xᵢ = 2xᵢ. Fwd mode's grad is quadratic in the inputs, so the
/// reference runs at 300 reals (every entry checked); delta at 10⁶ (entries sampled,
/// the length and sum of the gradient checked: Σ 2·i·10⁻³ = 10⁻³·n(n−1)).
#[test]
fn stress_wide_input_of_a_million_reals() {
    let src = "fn f(x: [Real]) -> Real { sum(map(|y| y * y, x)) }
               fn point(n: Int) -> [Real] { build(n, |i| to_real(i) * 0.001) }";
    let small = parse_reals(&reference(src, "grad(f, point(300))"));
    let want: Vec<f64> = (0..300).map(|i| 2.0 * (i as f64 * 0.001)).collect();
    assert_reals_close(&small, &want, 0.0, "[fwd] grad at 300");
    let n = stress_size(1_000_000, 2_000);
    let probes = [0usize, 1, n * 7 / 9, n - 1];
    let expr = format!(
        "{{ let g = grad(f, point({n})); (length(g), sum(g), {}) }}",
        probes
            .iter()
            .map(|i| format!("g[{i}]"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let got = delta(src, &expr);
    assert!(got.starts_with(&format!("({n}, ")), "[rev] {got}");
    let reals = parse_reals(&got);
    let nf = n as f64;
    assert!(
        close(reals[0], 0.001 * nf * (nf - 1.0), 1e-9),
        "[rev] {got}"
    );
    for (k, i) in probes.iter().enumerate() {
        assert_eq!(
            reals[k + 1],
            2.0 * (*i as f64 * 0.001),
            "[rev] g[{i}]: {got}"
        );
    }
}

const LIST_SRC: &str = "enum List { Nil, Cons(Real, List) }
fn from(x: [Real], i: Int) -> List { if i == length(x) { Nil } else { Cons(x[i], from(x, i + 1)) } }
fn ssq(l: List) -> Real { match l { Nil => 0.0, Cons(h, t) => h * h + ssq(t) } }
fn nth(l: List, i: Int) -> Real { match l { Nil => 0.0 - 1.0, Cons(h, t) => if i == 0 { h } else { nth(t, i - 1) } } }
fn len(l: List) -> Int { match l { Nil => 0, Cons(_, t) => 1 + len(t) } }
fn f(x: [Real]) -> Real { ssq(from(x, 0)) }
fn point(n: Int) -> [Real] { build(n, |i| to_real(i) * 0.001 - 1.0) }";

/// A cons list of 10⁵ reals built by recursion from an array; the gradient of its sum
/// of squares is 2xᵢ, with respect to the array (the list built inside f) and with
/// respect to the list itself (a list of the same length). The reference at 200.
#[test]
fn stress_cons_list_of_a_hundred_thousand_reals() {
    let small = parse_reals(&reference(LIST_SRC, "grad(f, point(200))"));
    let want: Vec<f64> = (0..200).map(|i| 2.0 * (i as f64 * 0.001 - 1.0)).collect();
    assert_reals_close(&small, &want, 0.0, "[fwd] grad at 200");
    let small = parse_reals(&reference(LIST_SRC, "grad(ssq, from(point(200), 0))"));
    assert_reals_close(&small, &want, 0.0, "[fwd] grad of the list at 200");
    let n = stress_size(100_000, 1_000);
    let probes = [0usize, n * 5 / 9, n - 1];
    let x = |i: usize| i as f64 * 0.001 - 1.0;
    let got = parse_reals(&delta(
        LIST_SRC,
        &format!(
            "{{ let g = grad(f, point({n})); ({}) }}",
            probes.map(|i| format!("g[{i}]")).join(", ")
        ),
    ));
    assert_eq!(got, probes.map(|i| 2.0 * x(i)), "[rev] grad of f");
    let got = delta(
        LIST_SRC,
        &format!(
            "{{ let g = grad(ssq, from(point({n}), 0)); (len(g), {}) }}",
            probes.map(|i| format!("nth(g, {i})")).join(", ")
        ),
    );
    assert!(got.starts_with(&format!("({n}, ")), "[rev] {got}");
    assert_eq!(
        parse_reals(&got),
        probes.map(|i| 2.0 * x(i)),
        "[rev] grad of ssq"
    );
}

/// The skeleton comparison sees shapes, `Int`s and constructors, and the mode
/// tolerance tells rounding from a wrong rule.
#[test]
fn the_helpers_compare_what_they_claim() {
    assert_eq!(
        skeleton("(1.0, [2.5e-3, -inf], 3, Leaf(NaN), ())"),
        "(#, [#, #], 3, Leaf(#), ())"
    );
    assert_ne!(skeleton("Tagged((), 1.0)"), skeleton("Circle(1.0)"));
    assert_ne!(skeleton("(3, 1.0)"), skeleton("(4, 1.0)"));
    assert!(close(1.0, 1.0 + 1e-12, MODE_TOLERANCE));
    assert!(!close(1.0, 1.0 + 1e-6, MODE_TOLERANCE));
}

/// `name_123` tokens renumbered by first appearance, so that two prints of one code
/// made in different modules compare equal when only variable ids differ.
fn canonical_names(text: &str) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('_') {
        let digits: String = rest[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        out.push_str(&rest[..=i]);
        if digits.is_empty() {
            rest = &rest[i + 1..];
            continue;
        }
        let n = match seen.iter().position(|d| *d == digits) {
            Some(n) => n,
            None => {
                seen.push(digits.clone());
                seen.len() - 1
            }
        };
        out.push_str(&format!("v{n}"));
        rest = &rest[i + 1 + digits.len()..];
    }
    out.push_str(rest);
    out
}

/// Separate compilation ([Delta] §7.5): a function's delta translation is made from
/// its own code only. Translated on its own or first as a callee of another function,
/// it is the same code (printed alike), every caller calls that one translation, and
/// translating a caller later adds only the caller's own translation.
#[test]
fn separate_compilation_each_function_is_translated_once_from_its_own_code() {
    use fluxion_driver::ad::delta_code;
    use fluxion_driver::core::print::print_reachable;
    let src = "fn f(x: Real) -> Real { sin(x) * x }
               fn g(x: Real) -> Real { f(x) + f(2.0 * x) }
               fn h(x: Real) -> Real { g(x) * f(x) }";
    let mut prints = Vec::new();
    for order in [["f", "g", "h"], ["h", "g", "f"]] {
        let mut p = compile("sep.flx", src).unwrap_or_else(|f| panic!("{}", f.render()));
        p.expand(AdMode::Delta).expect("expands");
        let mut translated = std::collections::HashMap::new();
        for name in order {
            let code = p.module.functions[name];
            let before = p.module.codes.len();
            let t = delta_code(&mut p.module, code).expect("translates");
            translated.insert(name, t);
            // The callee's translations already exist when the caller is translated
            // last: only the caller's own code is added.
            if name == "h" && order[0] == "f" {
                assert_eq!(p.module.codes.len(), before + 1, "h re-translated a callee");
            }
        }
        // Asking again returns the memoised translation.
        let f = p.module.functions["f"];
        assert_eq!(delta_code(&mut p.module, f).unwrap(), translated["f"]);
        fluxion_driver::core::verify::verify_module(&p.module).expect("verifies");
        prints.push(canonical_names(&print_reachable(
            &p.module,
            &[translated["f"]],
        )));
    }
    assert_eq!(prints[0], prints[1], "f's translation depends on the order");
    assert!(prints[0].contains("%delta("), "{}", prints[0]);
}
