// Forward mode (`--ad fwd`: every operator by JVPs) against finite differences, the
// transpose identity and closed forms derived by hand in comments; nesting without
// perturbation confusion; non-differentiable points as docs/language.md §5 fixes them.
//
// Included by `forward_ad.rs` (dual numbers) and `chad_fwd_ad.rs` (forward CHAD), each
// naming the algorithm of `jvp` it tests as `FWD_UNDER_TEST`.

use fluxion_driver::gradcheck::{
    check_gradient, check_jacobian, check_transpose, eval_literal, eval_reals, fd_jacobian,
};
use fluxion_driver::{AdMode, RunOptions};

const MODE: RunOptions = RunOptions {
    mode: AdMode::Fwd,
    fwd: FWD_UNDER_TEST,
    opt: fluxion_driver::OptLevel::On,
    memory_limit: None,
    backend: fluxion_driver::Backend::Interp,
};

/// Programs defining `f: [Real] -> Real`, each at a point inside its smooth region: the
/// corpus `tests/corpus/programs/` (a new program is a new file there).
fn scalar_programs() -> Vec<(String, String, Vec<f64>)> {
    programs::corpus("programs")
}

#[test]
fn gradients_match_finite_differences() {
    for (name, src, x) in &scalar_programs() {
        check_gradient(src, "f", x, MODE).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn value_and_grad_and_vjp_agree_with_grad_and_the_value() {
    for (name, src, x) in &scalar_programs() {
        let xs = format!("{x:?}");
        let g = eval_reals(src, &format!("grad(f, {xs})"), MODE).unwrap();
        let y = eval_reals(src, &format!("f({xs})"), MODE).unwrap();
        let vg = eval_reals(src, &format!("value_and_grad(f, {xs})"), MODE).unwrap();
        assert_eq!(vg[0], y[0], "{name}");
        assert_eq!(&vg[1..], &g[..], "{name}");
        let pb = eval_reals(src, &format!("vjp(f, {xs}).1(1.0)"), MODE).unwrap();
        assert_eq!(pb, g, "{name}");
    }
}

#[test]
fn jvp_is_the_gradient_along_a_direction() {
    for (name, src, x) in &scalar_programs() {
        let xs = format!("{x:?}");
        let u: Vec<f64> = (0..x.len()).map(|i| 0.5 - i as f64 * 0.3).collect();
        let g = eval_reals(src, &format!("grad(f, {xs})"), MODE).unwrap();
        let jv = eval_reals(src, &format!("jvp(f, {xs}, {u:?})"), MODE).unwrap();
        let expected: f64 = g.iter().zip(&u).map(|(a, b)| a * b).sum();
        assert!(
            (jv[1] - expected).abs() <= 1e-12 * (1.0 + expected.abs()),
            "{name}: {jv:?} vs {expected}"
        );
        let y = eval_reals(src, &format!("f({xs})"), MODE).unwrap();
        assert_eq!(jv[0], y[0], "{name}");
    }
}

/// Programs defining `f: [Real] -> [Real]`, each at a point inside its smooth region: the
/// corpus `tests/corpus/vector/` (a new program is a new file there).
fn vector_programs() -> Vec<(String, String, Vec<f64>)> {
    programs::corpus("vector")
}

#[test]
fn jacobians_match_finite_differences() {
    for (name, src, x) in &vector_programs() {
        check_jacobian(src, "f", x, MODE).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn transpose_identity_holds() {
    for (name, src, x) in &vector_programs() {
        let m = eval_reals(src, &format!("f({x:?})"), MODE).unwrap().len();
        let u: Vec<f64> = (0..x.len()).map(|i| 1.0 - 0.7 * i as f64).collect();
        let w: Vec<f64> = (0..m).map(|i| 0.3 + 0.4 * i as f64).collect();
        check_transpose(src, "f", x, &u, &w, MODE).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn hessians_match_finite_differences_of_the_gradient() {
    let chosen = ["real_functions", "prelude_numerics", "recursive_enum"];
    let programs = scalar_programs();
    for (name, src, x) in programs.iter().filter(|(n, ..)| chosen.contains(&n.as_str())) {
        let with_grad = format!("{src}\nfn g(x: [Real]) -> [Real] {{ grad(f, x) }}");
        let h = eval_reals(&with_grad, &format!("hessian(f, {x:?})"), MODE).unwrap();
        let cols = fd_jacobian(&with_grad, "g", x).unwrap();
        let n = x.len();
        for i in 0..n {
            for j in 0..n {
                let (ad, fd) = (h[i * n + j], cols[j][i]);
                assert!(
                    (ad - fd).abs() <= 1e-5 * (1.0 + fd.abs()),
                    "{name} H[{i}][{j}]: {ad} vs {fd}"
                );
            }
        }
        // A Hessian of a smooth function is symmetric (to rounding).
        for i in 0..n {
            for j in 0..i {
                assert!(
                    (h[i * n + j] - h[j * n + i]).abs() <= 1e-9 * (1.0 + h[i * n + j].abs()),
                    "{name}"
                );
            }
        }
    }
}

#[test]
fn closed_forms() {
    let run = |expr: &str| eval_reals("", expr, MODE).unwrap();
    // d/dx x^3 = 3x^2 = 12 at 2.
    assert_eq!(run("diff(|x| x * x * x, 2.0)"), [12.0]);
    // jvp of x^2 at 3 along 1: (9, 6).
    assert_eq!(run("jvp(|x| x * x, 3.0, 1.0)"), [9.0, 6.0]);
    // grad of a·b + b at (2, 5) = (b, a + 1) = (5, 3); value 15.
    assert_eq!(
        run("value_and_grad(|a, b| a * b + b, (2.0, 5.0))"),
        [15.0, 5.0, 3.0]
    );
    // Hessian of x0^2·x1 at (1, 2): [[2·x1, 2·x0], [2·x0, 0]].
    assert_eq!(
        run("hessian(|x: [Real]| x[0] * x[0] * x[1], [1.0, 2.0])"),
        [4.0, 2.0, 2.0, 0.0]
    );
    // Jacobian of (x0·x1, x1^2) at (3, 2): [[x1, x0], [0, 2·x1]].
    assert_eq!(
        run("jacobian(|x: [Real]| [x[0] * x[1], x[1] * x[1]], [3.0, 2.0])"),
        [2.0, 3.0, 0.0, 4.0]
    );
    // The pullback of x·y at (3, 4) applied to 2: (2·4, 2·3).
    assert_eq!(
        run("vjp(|p: (Real, Real)| p.0 * p.1, (3.0, 4.0)).1(2.0)"),
        [8.0, 6.0]
    );
    // A pullback is an ordinary function: stored and called twice.
    assert_eq!(
        run("{ let pb = vjp(|x: Real| x * x, 5.0).1; (pb(1.0), pb(3.0)) }"),
        [10.0, 30.0]
    );
}

#[test]
fn operators_apply_to_any_function_value() {
    let src = "fn square(x: Real) -> Real { x * x }
               fn adder(k: Real) -> fn(Real) -> Real { |x| x * x + k * x }
               fn apply_grad(g: fn(Real) -> Real, x: Real) -> Real { grad(g, x) }";
    let run = |expr: &str| eval_reals(src, expr, MODE).unwrap();
    assert_eq!(run("grad(square, 3.0)"), [6.0]); // top-level function
    assert_eq!(run("apply_grad(|x| 3.0 * x, 1.0)"), [3.0]); // parameter
    assert_eq!(run("grad(adder(2.0), 1.0)"), [4.0]); // returned closure: 2x + k
    assert_eq!(run("{ let k = 5.0; grad(|x| k * x * x, 1.0) }"), [10.0]); // captured variable
    assert_eq!(run("grad(sin, 0.0)"), [1.0]); // a built-in
}

#[test]
fn nesting_has_no_perturbation_confusion() {
    let run = |expr: &str| eval_reals("", expr, MODE).unwrap();
    assert_eq!(run("diff(|x| x * diff(|y| x + y, 1.0), 1.0)"), [1.0]);
    assert_eq!(run("grad(|x| diff(|y| x * y * y, x), 2.0)"), [8.0]);
    // d/dx [x · d/dy (x·y)] = d/dx x² = 2x = 6 at 3.
    assert_eq!(run("diff(|x| x * diff(|y| x * y, 2.0), 3.0)"), [6.0]);
    // Third derivative of x^4 at 1: 24x = 24.
    assert_eq!(
        run("diff(|a| diff(|b| diff(|c| c * c * c * c, b), a), 1.0)"),
        [24.0]
    );
    // grad of a gradient's component: d/dx0 of (2·x0·x1) = 2·x1 = 6.
    assert_eq!(
        run("grad(|x: [Real]| grad(|y: [Real]| y[0] * y[0] * y[1], x)[0], [1.0, 3.0])"),
        [6.0, 2.0]
    );
}

#[test]
fn non_differentiable_points_follow_the_contract() {
    let run = |expr: &str| eval_reals("", expr, MODE).unwrap();
    assert_eq!(run("diff(|x| abs(x), 0.0)"), [0.0]);
    // `max` follows its constant argument here; the other one's infinite derivative
    // (sqrt at 0) must not leak in as 0·inf = NaN.
    assert_eq!(run("diff(|x| max(1.0, sqrt(x)), 0.0)"), [0.0]);
    assert_eq!(run("grad(|x: Real| max(sqrt(x), 1.0), 0.0)"), [0.0]);
    assert_eq!(run("diff(|x| min(1.0, 0.0 - log(x)), 0.0)"), [0.0]);
    assert_eq!(
        run("grad(|p: (Real, Real)| max(p.0, p.1), (1.0, 1.0))"),
        [1.0, 0.0]
    );
    assert_eq!(
        run("grad(|p: (Real, Real)| min(p.0, p.1), (1.0, 1.0))"),
        [1.0, 0.0]
    );
    assert_eq!(
        run("grad(|x: [Real]| maximum(x), [2.0, 5.0, 5.0])"),
        [0.0, 1.0, 0.0]
    );
    assert_eq!(
        run("grad(|x: [Real]| minimum(x), [2.0, 1.0, 1.0])"),
        [0.0, 1.0, 0.0]
    );
    assert_eq!(
        run("grad(|p: (Real, Real)| pow(p.0, p.1), (0.0, 2.0))"),
        [0.0, 0.0]
    );
    assert_eq!(
        run("diff(|x| floor(x) + ceil(x) + to_real(to_int(x)), 1.5)"),
        [0.0]
    );
    assert_eq!(
        run("diff(|x| if x > 0.0 { x * x } else { -x }, 0.0)"),
        [-1.0]
    );
}

#[test]
fn tangent_types_follow_the_contract() {
    let src = "enum Shape { Circle(Real), Tagged(Int, Real) }
               fn area(s: Shape) -> Real { match s { Circle(r) => r * r, Tagged(n, x) => to_real(n) * x } }";
    let show = |expr: &str| eval_literal(src, expr, MODE).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        show("grad(|p: (Int, Real)| p.1 * to_real(p.0), (3, 2.0))"),
        "((), 3.0)"
    );
    assert_eq!(show("grad(area, Tagged(3, 2.0))"), "Tagged((), 3.0)");
    assert_eq!(show("grad(area, Circle(2.0))"), "Circle(4.0)");
    assert_eq!(show("jvp(|n: Int| n * 2, 3, ())"), "(6, ())");
    assert_eq!(show("grad(|x: [Real]| sum(x), [1.0, 2.0])"), "[1.0, 1.0]");
    // A tangent enum's values are built and taken apart with the enum's constructor
    // names, where the expected type says which enum: area(Tagged(n, x)) = n·x, so
    // the value is 6 and the derivative along x is n = 3.
    assert_eq!(
        show("jvp(area, Tagged(3, 2.0), Tagged((), 1.0))"),
        "(6.0, 3.0)"
    );
    assert_eq!(
        show(
            "{ let d: ShapeTan = Tagged((), 0.5); match grad(area, Tagged(3, 2.0)) { Tagged(_, g) => g * match d { Tagged(_, e) => e, _ => 0.0 }, _ => 0.0 } }"
        ),
        "1.5"
    );
}

#[test]
fn gradients_with_respect_to_structured_values_match_the_flattened_function() {
    // The same function, once of a structured value and once of the flat array of its
    // reals: the gradient's coordinates must agree, and the flat one matches finite
    // differences.
    let src = "enum Tree { Leaf(Real), Node(Tree, Tree), Scaled(Int, Tree) }
               fn total(t: Tree) -> Real {
                 match t { Leaf(v) => v * v * v, Node(l, r) => total(l) * total(r) + total(r), Scaled(n, s) => to_real(n) * total(s) }
               }
               fn structured(p: ((Real, Int), [Real], Tree)) -> Real {
                 let ((a, n), xs, t) = p;
                 a * to_real(n) + sum(map(|x| x * a, xs)) + total(t)
               }
               fn f(x: [Real]) -> Real {
                 structured(((x[0], 2), [x[1], x[2]], Node(Leaf(x[3]), Scaled(3, Node(Leaf(x[4]), Leaf(x[5]))))))
               }";
    let x = [0.5, -1.0, 2.0, 0.7, 1.1, -0.4];
    check_gradient(src, "f", &x, MODE).unwrap();
    let flat = eval_reals(src, &format!("grad(f, {x:?})"), MODE).unwrap();
    let point = format!(
        "(({:?}, 2), [{:?}, {:?}], Node(Leaf({:?}), Scaled(3, Node(Leaf({:?}), Leaf({:?})))))",
        x[0], x[1], x[2], x[3], x[4], x[5]
    );
    let structured = eval_reals(src, &format!("grad(structured, {point})"), MODE).unwrap();
    assert_eq!(structured, flat);
}

#[test]
fn review_findings_stay_fixed() {
    let run = |expr: &str| eval_reals("", expr, MODE).unwrap_or_else(|e| panic!("{expr}: {e}"));
    // A variable order of polygamma: d/dy ψ''(y) = ψ'''(y); ψ'''(0.3) by its series
    // 6·Σ 1/(0.3+k)^4 — compared with the value for order 3 computed directly.
    assert_eq!(
        run("{ let n = 1 + 1; diff(|y: Real| polygamma(n, y), 0.3) }"),
        run("polygamma(3, 0.3)")
    );
    // The exponent's perturbation survives nesting: d/dt [2^y·ln 2·t] = 2^3·ln 2.
    let got = run("diff(|t| jvp(|y| pow(2.0, y), 3.0, t).1, 0.5)");
    assert!((got[0] - 8.0 * 2f64.ln()).abs() < 1e-12, "{got:?}");
    // pow(x, 0) is constant (no 0·inf at x = 0); a negative base with a constant
    // exponent has finite derivatives: d/dy (y² + y³) = 2y + 3y² at −1.1.
    assert_eq!(run("jvp(|x| pow(x, 0.0), 0.0, 1.0)"), [1.0, 0.0]);
    let got = run("diff(|y| pow(y, 2.0) + pow(y, 3.0), -1.1)");
    assert!(
        (got[0] - (2.0 * -1.1 + 3.0 * 1.21)).abs() < 1e-12,
        "{got:?}"
    );
    // 1.0 % 0.1 = 0.09999999999999995: the quotient is 9, so the slope in y is −9.
    assert_eq!(run("diff(|y| 1.0 % y, 0.1)"), [-9.0]);
    // A function of no parameters: its point and direction are ().
    assert_eq!(run("jvp(|| 1.0, (), ())"), [1.0, 0.0]);
}
