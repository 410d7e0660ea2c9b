//! The ground under the reverse modes (issue 8): derived codes are verified, memo keys
//! name everything a translation depends on, sums never treat the empty array as a
//! zero, the `--ad` mode reaches the interpreter, and the calculus table's conventions
//! hold. Expected values are derived by hand in the comments.

use fluxion_driver::gradcheck::{check_gradient, eval_literal, eval_reals};
use fluxion_driver::{AdMode, compile, with_big_stack};

/// Runs `main` and returns the printed value and whether the whole module, with every
/// code derived during the run, passes the verifier.
fn run_and_verify(src: &str, mode: AdMode) -> (String, Result<(), String>) {
    let src = src.to_string();
    with_big_stack(move || {
        let program = compile("t.flx", &src).unwrap_or_else(|f| panic!("{}", f.render()));
        let out = program
            .run_with("main", None, mode)
            .unwrap_or_else(|f| panic!("{}", f.render()));
        let verified = fluxion_driver::core::verify::verify_module(&out.interp.module())
            .map_err(|errors| format!("{errors:?}"));
        (out.to_literal(), verified)
    })
}

/// outer(x) = diff(g, 1) + g(x) with g(y) = x·y²: diff(g, 1) = 2x, g(x) = x³, so
/// outer(3) = 6 + 27 = 33 and outer'(x) = 2 + 3x², outer'(3) = 29. The lambda `g` is
/// translated on its own (the inner `diff`, at run time) and inline in `outer`'s
/// translation (the outer `diff`): before the fix both shared one memo entry, and the
/// second use captured variables of the first ("captured variable ... is not in scope").
#[test]
fn a_lambda_translated_on_its_own_and_inline_is_two_verified_codes() {
    const OUTER: &str =
        "fn outer(x: Real) -> Real { let g = |y: Real| x * y * y; diff(g, 1.0) + g(x) }\n";
    for main in [
        "fn main() -> (Real, Real) { (outer(3.0), diff(outer, 3.0)) }",
        "fn main() -> (Real, Real) { (diff(outer, 3.0), outer(3.0)) }",
    ] {
        let (value, verified) = run_and_verify(&format!("{OUTER}{main}"), AdMode::Fwd);
        assert!(
            value == "(33.0, 29.0)" || value == "(29.0, 33.0)",
            "{main}: {value}"
        );
        verified.unwrap_or_else(|e| panic!("{main}: the module fails verification: {e}"));
    }
}

/// Nested operators over closures that capture closures: every derived code is
/// verified during the run (debug builds) and the whole module after it.
/// h(x) = diff(|y| k(y)·x, x) with k(y) = y³ (a captured closure): h(x) = 3x²·x = 3x³;
/// diff(h, 2) = 9·4 = 36; diff(diff(h)) at 2 = 18·2 = 36.
#[test]
fn nested_operators_over_captured_closures_derive_verified_codes() {
    let src = "fn h(x: Real) -> Real { let k = |z: Real| z * z * z; diff(|y: Real| k(y) * x, x) }\n\
               fn main() -> (Real, Real, Real) { (h(2.0), diff(h, 2.0), diff(|t: Real| diff(h, t), 2.0)) }";
    let (value, verified) = run_and_verify(src, AdMode::Fwd);
    assert_eq!(value, "(24.0, 36.0, 36.0)");
    verified.unwrap_or_else(|e| panic!("the module fails verification: {e}"));
}

/// docs/language.md §4: arrays of different lengths are an error in `sum`, always — the
/// empty array is not a zero that adapts to its neighbour.
#[test]
fn sums_of_arrays_of_different_lengths_are_errors() {
    for expr in [
        "sum([[1.0, 2.0], []])",
        "sum([[], [1.0, 2.0]])",
        "sumbuild(2, |i| if i == 0 { [1.0, 2.0] } else { [] })",
        "sum([([1.0], 1.0), ([], 2.0)])",
    ] {
        let err = eval_literal("", expr, AdMode::Fwd).expect_err(expr);
        assert!(
            err.contains("different lengths (2 and 0)")
                || err.contains("different lengths (1 and 0)")
                || err.contains("different lengths (0 and 2)"),
            "{expr}: {err}"
        );
    }
    // Sums that are fine: elementwise, and the sum of nothing (whose length is unknown).
    let ok = |e: &str| eval_literal("", e, AdMode::Fwd).unwrap_or_else(|m| panic!("{e}: {m}"));
    assert_eq!(ok("sum([[1.0, 2.0], [3.0, 4.0]])"), "[4.0, 6.0]");
    assert_eq!(ok("sum(build(0, |i| [to_real(i)]))"), "[]");
    assert_eq!(ok("sumbuild(3, |i| (to_real(i), [1.0]))"), "(3.0, [3.0])");
    assert_eq!(ok("sumbuild(0, |i| to_real(i))"), "0.0");
}

/// The mode reaches the interpreter through one type, and only built modes run the
/// reverse-mode operators.
#[test]
fn the_mode_reaches_the_interpreter_and_unbuilt_modes_say_so() {
    for &mode in AdMode::ALL {
        assert_eq!(AdMode::parse(mode.name()), Some(mode));
    }
    assert_eq!(AdMode::implemented().first(), Some(&AdMode::Fwd));
    for &mode in AdMode::ALL {
        let program = "fn main() -> Real { diff(|x: Real| x * x, 3.0) }".to_string();
        let seen = with_big_stack(move || {
            let out = compile("t.flx", &program)
                .ok()
                .expect("compiles")
                .run_with("main", None, mode)
                .unwrap_or_else(|f| panic!("{}", f.render()));
            (out.interp.ad_mode(), out.to_literal())
        });
        assert_eq!(
            seen,
            (mode, "6.0".to_string()),
            "no reverse operator: every mode runs"
        );
        let with_grad = eval_literal("", "grad(|x: [Real]| x[0] * x[0], [3.0])", mode);
        if mode.is_implemented() {
            assert_eq!(with_grad.as_deref(), Ok("[6.0]"));
        } else {
            let err = with_grad.expect_err("an unbuilt mode refuses grad");
            assert!(
                err.contains(&format!("--ad {} is not implemented yet", mode.name())),
                "{err}"
            );
        }
    }
}

/// The table's convention where docs/language.md §5 leaves a gap: ∂pow(x, y)/∂y is 0 where
/// x ≤ 0 (x^y is real there only at integer y). The x-partial is unaffected:
/// d/dx x³ at −2 is 3·4 = 12; and with a constant exponent nothing is NaN.
#[test]
fn pow_at_a_negative_base_differentiates_in_the_base_only() {
    let r = |e: &str| eval_reals("", e, AdMode::Fwd).unwrap_or_else(|m| panic!("{e}: {m}"));
    assert_eq!(r("diff(|x: Real| pow(x, 3.0), -2.0)"), vec![12.0]);
    assert_eq!(r("diff(|y: Real| pow(-2.0, y), 3.0)"), vec![0.0]);
    assert_eq!(r("diff(|y: Real| pow(0.0, y), 3.0)"), vec![0.0]);
    // Both arguments moving at a negative base: only the base's term, 3·(−2)²·1 = 12.
    assert_eq!(r("diff(|t: Real| pow(t - 4.0, t + 1.0), 2.0)"), vec![12.0]);
}

/// The mixed second derivative of `z^y` at `y = 0` is `z^(y−1)·(1 + y·ln z) = 1/z`
/// (by hand: ∂z z^y = y·z^(y−1), then ∂y), in both nesting orders and every mode: the
/// x-partial's guard at `y = 0` once made it 0 in one order (a helper's find).
#[test]
fn the_mixed_second_derivative_of_pow_at_a_zero_exponent_is_one_over_the_base() {
    let src = "fn zy(y: Real) -> Real { grad(|q: Real| grad(|z: Real| pow(z, q), 2.0), y) }
               fn yz(y: Real) -> Real { grad(|z: Real| grad(|q: Real| pow(z, q), y), 2.0) }
               fn ff(y: Real) -> Real { diff(|z: Real| diff(|q: Real| pow(z, q), y), 2.0) }
               fn h(y: Real) -> [Real] {
                   let m = hessian(|v: [Real]| pow(v[0], v[1]), [2.0, y]);
                   [m[0][1], m[1][0]]
               }";
    for mode in [AdMode::Fwd, AdMode::Chad, AdMode::Delta] {
        for e in ["zy(0.0)", "yz(0.0)", "ff(0.0)", "h(0.0)"] {
            let r = eval_reals(src, e, mode).unwrap_or_else(|m| panic!("{e}: {m}"));
            for v in r {
                assert!((v - 0.5).abs() <= 1e-15, "{e} {mode:?}: {v}");
            }
        }
    }
}

/// Every real primitive through the table, against central differences.
#[test]
fn every_real_primitive_matches_finite_differences() {
    let src = "fn f(x: [Real]) -> Real {\n\
        let (a, b) = (x[0], x[1]);\n\
        sin(a) + cos(b) + tan(0.3 * a) + asin(0.5 * a) + acos(0.4 * b) + atan(a * b)\n\
        + tanh(a) + sinh(b) + cosh(a) + exp(0.5 * b) + log(a + 2.0) + log1p(b * b)\n\
        + expm1(0.3 * a) + sqrt(b + 3.0) + abs(a - b) + sigmoid(a) + lgamma(b + 2.0)\n\
        + erf(a) + floor(a) + ceil(b) + pow(a + 2.0, b) + atan2(a, b + 3.0)\n\
        + min(a, b) + max(a * 2.0, b) + a % 0.7 + digamma(b + 2.0) + trigamma(a + 2.0)\n\
        + polygamma(2, b + 2.0) + a / (b + 3.0) - (-a) * b\n\
    }";
    check_gradient(src, "f", &[0.37, 0.61], AdMode::Fwd).unwrap_or_else(|m| panic!("{m}"));
}

/// Taylor mode follows the same convention for pow at a base ≤ 0: the exponent is held
/// at its value, so order 1 agrees with `diff` (both 0 in the exponent, 12 in the base).
#[test]
fn taylor_pow_at_a_negative_base_agrees_with_forward_mode() {
    let r = |e: &str| eval_reals("", e, AdMode::Fwd).unwrap_or_else(|m| panic!("{e}: {m}"));
    assert_eq!(
        r("taylor(|y: Real| pow(-2.0, y), 3.0, 1.0, 1).1"),
        vec![0.0]
    );
    assert_eq!(
        r("taylor(|x: Real| pow(x, 3.0), -2.0, 1.0, 1).1"),
        vec![12.0]
    );
    assert_eq!(
        r("taylor(|t: Real| pow(t - 4.0, t + 1.0), 2.0, 1.0, 1).1"),
        vec![12.0]
    );
}
