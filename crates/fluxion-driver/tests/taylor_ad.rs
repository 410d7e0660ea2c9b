//! Taylor mode (`taylor(f, x, v, k)`, [Taylor]): coefficients against closed forms up
//! to order 8, against nested forward mode up to order 3, the paper's §2.4 instances,
//! and nesting with the other operators.
//!
//! Recall c_j = (1/j!)·dʲ/dtʲ f(x + t·v) at t = 0 (docs/language.md §5): the paper's (1,2)
//! jets hold the derivatives themselves, so its second components are 2·c_2 here.

use fluxion_driver::AdMode;
use fluxion_driver::gradcheck::{eval_literal, eval_reals};

fn run(src: &str, expr: &str) -> Vec<f64> {
    eval_reals(src, expr, AdMode::Fwd).unwrap_or_else(|e| panic!("{expr}: {e}"))
}

/// `taylor(f, x, v, k)` flattened: c_0, c_1, ..., c_k.
fn coefficients(src: &str, f: &str, x: &str, v: &str, k: u32) -> Vec<f64> {
    run(src, &format!("taylor({f}, {x}, {v}, {k})"))
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (j, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: c_{j} = {g}, expected {w}\n{got:?}"
        );
    }
}

fn factorial(j: u32) -> f64 {
    (1..=j).map(f64::from).product()
}

#[test]
fn closed_forms_to_order_eight() {
    let k = 8;
    // exp(x) at 0.3 along 2: c_j = e^0.3 · 2^j / j!
    let want: Vec<f64> = (0..=k)
        .map(|j| 0.3f64.exp() * 2f64.powi(j as i32) / factorial(j))
        .collect();
    assert_close(
        &coefficients("", "exp", "0.3", "2.0", k),
        &want,
        1e-13,
        "exp",
    );
    // sin(x) at 0: 0, 1, 0, -1/3!, 0, 1/5!, 0, -1/7!, 0
    let want: Vec<f64> = (0..=k)
        .map(|j| {
            if j % 2 == 0 {
                0.0
            } else {
                [1.0, -1.0][((j - 1) / 2 % 2) as usize] / factorial(j)
            }
        })
        .collect();
    assert_close(
        &coefficients("", "sin", "0.0", "1.0", k),
        &want,
        1e-14,
        "sin",
    );
    // cos(x) at 0: 1, 0, -1/2!, 0, 1/4!, ...
    let want: Vec<f64> = (0..=k)
        .map(|j| {
            if j % 2 == 1 {
                0.0
            } else {
                [1.0, -1.0][(j / 2 % 2) as usize] / factorial(j)
            }
        })
        .collect();
    assert_close(
        &coefficients("", "cos", "0.0", "1.0", k),
        &want,
        1e-14,
        "cos",
    );
    // 1/(1 - x) at 0: every coefficient is 1 (exactly).
    let got = coefficients("", "|x: Real| 1.0 / (1.0 - x)", "0.0", "1.0", k);
    assert_eq!(got, vec![1.0; k as usize + 1]);
    // A polynomial is its own Taylor series: (x + t)^3 at x = 2 gives 8, 12, 6, 1, 0, ... (exact).
    let got = coefficients("", "|x: Real| x * x * x", "2.0", "1.0", k);
    assert_eq!(got, vec![8.0, 12.0, 6.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    // log(1 + x) at 0: 0, 1, -1/2, 1/3, -1/4, ...
    let want: Vec<f64> = (0..=k)
        .map(|j| {
            if j == 0 {
                0.0
            } else {
                (-1f64).powi(j as i32 + 1) / f64::from(j)
            }
        })
        .collect();
    assert_close(
        &coefficients("", "|x: Real| log(1.0 + x)", "0.0", "1.0", k),
        &want,
        1e-14,
        "log",
    );
    assert_close(
        &coefficients("", "log1p", "0.0", "1.0", k),
        &want,
        1e-14,
        "log1p",
    );
    // sqrt(1 + x) at 0: binomial(1/2, j)
    let binom = |r: f64, j: u32| {
        (0..j)
            .map(|i| (r - f64::from(i)) / f64::from(i + 1))
            .product::<f64>()
    };
    let want: Vec<f64> = (0..=k).map(|j| binom(0.5, j)).collect();
    assert_close(
        &coefficients("", "|x: Real| sqrt(1.0 + x)", "0.0", "1.0", k),
        &want,
        1e-14,
        "sqrt",
    );
    // pow(1 + x, 2.5) at 0: binomial(2.5, j); the same through a non-constant exponent.
    let want: Vec<f64> = (0..=k).map(|j| binom(2.5, j)).collect();
    assert_close(
        &coefficients("", "|x: Real| pow(1.0 + x, 2.5)", "0.0", "1.0", k),
        &want,
        1e-14,
        "pow",
    );
    // tanh at 0: x - x³/3 + 2x⁵/15 - 17x⁷/315
    let want = [
        0.0,
        1.0,
        0.0,
        -1.0 / 3.0,
        0.0,
        2.0 / 15.0,
        0.0,
        -17.0 / 315.0,
        0.0,
    ];
    assert_close(
        &coefficients("", "tanh", "0.0", "1.0", k),
        &want,
        1e-14,
        "tanh",
    );
    // sigmoid(x) = 1/2 + tanh(x/2)/2 at 0
    let want: Vec<f64> = want
        .iter()
        .enumerate()
        .map(|(j, c)| c / 2f64.powi(j as i32) / 2.0 + if j == 0 { 0.5 } else { 0.0 })
        .collect();
    assert_close(
        &coefficients("", "sigmoid", "0.0", "1.0", k),
        &want,
        1e-14,
        "sigmoid",
    );
    // atan at 0: x - x³/3 + x⁵/5 - x⁷/7; atan2(x, 1) is the same function.
    let want = [
        0.0,
        1.0,
        0.0,
        -1.0 / 3.0,
        0.0,
        1.0 / 5.0,
        0.0,
        -1.0 / 7.0,
        0.0,
    ];
    assert_close(
        &coefficients("", "atan", "0.0", "1.0", k),
        &want,
        1e-14,
        "atan",
    );
    assert_close(
        &coefficients("", "|x: Real| atan2(x, 1.0)", "0.0", "1.0", k),
        &want,
        1e-14,
        "atan2",
    );
    // asin at 0: x + x³/6 + 3x⁵/40 + 5x⁷/112
    let want = [
        0.0,
        1.0,
        0.0,
        1.0 / 6.0,
        0.0,
        3.0 / 40.0,
        0.0,
        5.0 / 112.0,
        0.0,
    ];
    assert_close(
        &coefficients("", "asin", "0.0", "1.0", k),
        &want,
        1e-14,
        "asin",
    );
    // erf at 0: (2/sqrt(pi))·(x - x³/3 + x⁵/10 - x⁷/42)
    let s = std::f64::consts::FRAC_2_SQRT_PI;
    let want = [0.0, s, 0.0, -s / 3.0, 0.0, s / 10.0, 0.0, -s / 42.0, 0.0];
    assert_close(
        &coefficients("", "erf", "0.0", "1.0", k),
        &want,
        1e-14,
        "erf",
    );
    // lgamma at 1: -γ x + Σ_{j≥2} (-1)^j ζ(j)/j x^j
    let zeta = |s: u32| {
        (1..200000)
            .map(|n| (n as f64).powi(-(s as i32)))
            .sum::<f64>()
    };
    let gamma = 0.5772156649015329;
    let want: Vec<f64> = (0..=k)
        .map(|j| match j {
            0 => 0.0,
            1 => -gamma,
            j => (-1f64).powi(j as i32) * zeta(j) / f64::from(j),
        })
        .collect();
    // ζ(2) by the truncated sum is low by about 5e-6; the rest far less.
    assert_close(
        &coefficients("", "lgamma", "1.0", "1.0", k),
        &want,
        1e-5,
        "lgamma",
    );
    let exact_zeta2 = std::f64::consts::PI.powi(2) / 6.0;
    let c2 = coefficients("", "lgamma", "1.0", "1.0", 2)[2];
    assert!((c2 - exact_zeta2 / 2.0).abs() < 1e-13, "lgamma c2 = {c2}");
}

/// Functions of one real, built from every kind of construct.
const PROGRAMS: &[(&str, &str, &str)] = &[
    ("math", "fn f(x: Real) -> Real { sin(x) * exp(x) / (1.0 + x * x) + sqrt(x + 2.0) * log(x + 3.0) - tanh(x) + atan(x) }", "0.4"),
    (
        "closures_and_folds",
        "fn f(x: Real) -> Real { let g = |y: Real| y * x + sin(y); fold(|a, y| a * x + g(y), 0.0, [1.0, x, 2.0]) }",
        "0.7",
    ),
    (
        "enums_and_recursion",
        "enum L { Nil, Cons(Real, L) }
         fn build_list(x: Real, n: Int) -> L { if n == 0 { Nil } else { Cons(x * to_real(n), build_list(cos(x), n - 1)) } }
         fn total(l: L) -> Real { match l { Nil => 1.0, Cons(h, t) => exp(h / 4.0) * total(t) } }
         fn f(x: Real) -> Real { total(build_list(x, 4)) }",
        "0.3",
    ),
    (
        "arrays",
        "fn f(x: Real) -> Real { let v = build(4, |i| x * to_real(i) + 1.0); sum(map(|y| y * y * y, v)) / maximum(v) + scan(|a, y| a * y, 1.0, v)[3] }",
        "1.2",
    ),
];

#[test]
fn coefficients_agree_with_nested_forward_mode_to_order_three() {
    for (name, src, x) in PROGRAMS {
        let got = coefficients(src, "f", x, "1.0", 3);
        let d1 = run(src, &format!("diff(f, {x})"));
        let d2 = run(src, &format!("diff(|a| diff(f, a), {x})"));
        let d3 = run(src, &format!("diff(|a| diff(|b| diff(f, b), a), {x})"));
        let value = run(src, &format!("f({x})"));
        let want = [value[0], d1[0], d2[0] / 2.0, d3[0] / 6.0];
        assert_close(&got, &want, 1e-11, name);
    }
}

#[test]
fn paper_section_2_4_instances() {
    // g(x1, x2) = x1²·x2 + x2³ at (1, 2): g = 10, g1 = 4, g2 = 13, g11 = 4, g22 = 12, g12 = 2
    // ([Taylor] §2.4). The paper's third components are 2·c_2 here.
    let src = "fn g(a: Real, b: Real) -> Real { a * a * b + b * b * b }";
    let h = |v: &str| coefficients(src, "g", "(1.0, 2.0)", v, 2);
    assert_eq!(h("(1.0, 0.0)"), [10.0, 4.0, 4.0 / 2.0]);
    assert_eq!(h("(0.0, 1.0)"), [10.0, 13.0, 12.0 / 2.0]);
    assert_eq!(h("(1.0, 1.0)"), [10.0, 17.0, 20.0 / 2.0]);
    assert_eq!(h("(1.0, 2.0)"), [10.0, 30.0, 60.0 / 2.0]);
    // Polarisation recovers the mixed partial: ½(20 − 4 − 12) = 2.
    let mixed =
        (2.0 * h("(1.0, 1.0)")[2] - 2.0 * h("(1.0, 0.0)")[2] - 2.0 * h("(0.0, 1.0)")[2]) / 2.0;
    assert_eq!(mixed, 2.0);
}

#[test]
fn taylor_nests_with_the_other_operators() {
    // d/dx of c_2 of (y ↦ y²·x) at y = x: c_2 = x, so 1.
    assert_eq!(
        run(
            "",
            "grad(|x: Real| taylor(|y| y * y * x, x, 1.0, 2).1[1], 3.0)"
        ),
        [1.0]
    );
    // Taylor series of x ↦ d/dy (y³·x) at y = x, i.e. 3x³, at 1: 3, 9, 9, 3.
    assert_eq!(
        run(
            "",
            "taylor(|x: Real| grad(|y: Real| y * y * y * x, x), 1.0, 1.0, 3)"
        ),
        [3.0, 9.0, 9.0, 3.0]
    );
    // Taylor of Taylor: c_2 of exp(x·(1 + t)) is e^x·x²/2 = x²/2 + x³/2 + ...
    assert_eq!(
        run(
            "",
            "taylor(|x: Real| taylor(|y| exp(x * y), 1.0, 1.0, 2).1[1], 0.0, 1.0, 3)"
        ),
        [0.0, 0.0, 0.5, 0.5]
    );
    // Taylor coefficients of a function of an array along a direction.
    assert_eq!(
        run(
            "",
            "taylor(|v: [Real]| v[0] * v[1] * v[1], [1.0, 2.0], [1.0, 1.0], 3)"
        ),
        [4.0, 8.0, 5.0, 1.0]
    );
}

#[test]
fn taylor_results_have_the_contract_types() {
    let show = |expr: &str| eval_literal("", expr, AdMode::Fwd).unwrap_or_else(|e| panic!("{e}"));
    // (B, [T(B)]): an Int leaf has () coefficients.
    assert_eq!(
        show("taylor(|x: Real| (x * x, 3), 1.0, 1.0, 2)"),
        "((1.0, 3), [(2.0, ()), (1.0, ())])"
    );
    assert_eq!(
        show("taylor(|x: Real| [x, 2.0 * x], 1.0, 1.0, 1)"),
        "([1.0, 2.0], [[1.0, 2.0]])"
    );
}

#[test]
fn review_findings_stay_fixed() {
    // The exponent's series is not dropped under nesting: d/ds of c₁ of 2^(3 + s·t)
    // = d/ds (8·ln 2·s) = 8·ln 2.
    let got = run(
        "",
        "diff(|s| taylor(|p: (Real, Real)| pow(p.0, p.1), (2.0, 3.0), (1.0, s), 1).1[0], 0.0)",
    );
    assert!((got[0] - 8.0 * 2f64.ln()).abs() < 1e-12, "{got:?}");
    // pow's value is pow's even where its series is not real.
    assert_eq!(
        run(
            "",
            "taylor(|p: (Real, Real)| pow(p.0, p.1), (-2.0, 2.0), (0.0, 1.0), 1).0"
        ),
        [4.0]
    );
    // t^2.5 vanishes to order 2.5: c₁ = c₂ = 0.
    assert_eq!(
        run("", "taylor(|x| pow(x, 2.5), 0.0, 1.0, 2)"),
        [0.0, 0.0, 0.0]
    );
    // An empty sum whose elements hold arrays: its zero is translated too.
    assert_eq!(
        run(
            "",
            "taylor(|x| sum(build(0, |i| (x, [x]))).0 + x, 1.0, 1.0, 2)"
        ),
        [1.0, 1.0, 0.0]
    );
}

/// A constant subterm singular at its value (`sqrt(0.0)`, `log(z)` at z = 0, `1/z`,
/// `exp(z + 1000)`, …) does not move with t: its coefficients past the
/// primal are zero, so `w + g` has the series of `w` — c₁ = 1 and nothing after, by
/// hand — and order 1 agrees with `diff`, as a zero tangent scaled by an infinite
/// partial is zero in every mode. Before, every recurrence divided 0 by 0 (or scaled
/// 0 by ∞) and the coefficients were NaN. The rule holds through a layer over Taylor:
/// d/ds of c₁ of sqrt at 4 along s is sqrt'(4) = 1/4 at s = 0, where the direction,
/// and so the inner series past its primal, is zero.
#[test]
fn a_constant_singular_subterm_keeps_a_zero_series() {
    let constants = [
        "sqrt(z)",
        "log(z)",
        "sqrt(z - 1.0)",
        "1.0 / z",
        "pow(z, 0.5)",
        "atan2(z, z)",
        "acos(z + 1.0)",
        "asin(z + 2.0)",
        "lgamma(z)",
        "digamma(z)",
        "tan(z + 1.5707963267948966)",
        "1.0 % z",
    ];
    for g in constants {
        // z = w − w: zero, and a series that does not move, which no optimiser folds.
        let f = format!("|w: Real| {{ let z = w - w; w + {g} }}");
        for k in 1..=3 {
            let got = coefficients("", &f, "1.0", "1.0", k);
            let mut want = vec![0.0; k as usize];
            want[0] = 1.0;
            assert_eq!(&got[1..], want.as_slice(), "{g}, order {k}: {got:?}");
        }
        // Forward mode scales z's zero tangent by g'(0) too. (Reverse mode sends g'(0)
        // back through both w's of w − w: ∞ − ∞.)
        let d = run("", &format!("diff({f}, 1.0)"));
        assert_eq!(d, vec![1.0], "{g}");
    }
    // w·e^1000: c₁ = e^1000 = ∞ (as `diff`), c₂ = 0 (w is linear in t).
    let got = coefficients("", "|w: Real| w * exp(1000.0)", "1.0", "1.0", 2);
    assert_eq!(&got[1..], &[f64::INFINITY, 0.0]);
    let nested = run(
        "",
        "diff(|s: Real| taylor(|x: Real| sqrt(x), 4.0, s, 2).1[0], 0.0)",
    );
    assert_eq!(nested, vec![0.25]);
    // x^0.7 at 0 moving with a direction so small its square underflows still has no
    // finite c₁; x % y with y ≡ 0 (an infinite quotient) has x % y's own primal, 2.
    let tiny = coefficients("", "|x: Real| pow(x, 0.7)", "0.0", "1e-170", 1);
    assert!(tiny[1].is_nan(), "{tiny:?}");
    let f = "|w: Real| { let z = w - w; w + 1.0 % (1.0 / z) }";
    assert_eq!(coefficients("", f, "1.0", "1.0", 2), vec![2.0, 1.0, 0.0]);
}
