//! Forward CHAD (`--fwd chad`, [CHAD] §7.4): the forward-mode suite
//! (`common/forward_suite.rs`) with `jvp` by forward CHAD, and what is forward CHAD's
//! own: agreement with dual numbers on every construct, `show --stage chad-fwd`, linear
//! cost, and the fallback for functions that apply operators themselves.

const FWD_UNDER_TEST: fluxion_driver::FwdMode = fluxion_driver::FwdMode::Chad;

#[path = "common/programs.rs"]
mod programs;

include!("common/forward_suite.rs");

#[path = "common/code_size.rs"]
mod code_size;

const DUAL: RunOptions = RunOptions {
    mode: AdMode::Fwd,
    fwd: fluxion_driver::FwdMode::Dual,
    opt: fluxion_driver::OptLevel::On,
    memory_limit: None,
    backend: fluxion_driver::Backend::Interp,
};

/// `jvp` by forward CHAD against `jvp` by dual numbers on every program of the suite,
/// along two directions each. Same partials, summed in another order: agreement to
/// 1e-12 relative (rounding of a few dozen operations is ~1e-14).
#[test]
fn every_construct_agrees_with_dual_numbers() {
    for (name, src, x) in scalar_programs().iter().chain(&vector_programs()) {
        let n = x.len();
        let directions = [
            (0..n).map(|i| 1.0 + i as f64 * 0.5).collect::<Vec<f64>>(),
            (0..n)
                .map(|i| if i % 2 == 0 { -0.75 } else { 0.3 })
                .collect(),
        ];
        for u in directions {
            let expr = format!("jvp(f, {x:?}, {u:?})");
            let chad = eval_reals(src, &expr, MODE).unwrap_or_else(|e| panic!("{name}: {e}"));
            let dual = eval_reals(src, &expr, DUAL).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(chad.len(), dual.len(), "{name}: {chad:?} vs {dual:?}");
            for (c, d) in chad.iter().zip(&dual) {
                assert!(
                    (c - d).abs() <= 1e-12 * (1.0 + d.abs()),
                    "{name} along {u:?}: forward CHAD {chad:?}, dual {dual:?}"
                );
            }
        }
    }
}

/// The paper's Fig. 2 program, `w(x1, x2) = sum(map(|x2i| x1 * x2i, x2))`, forward:
/// ∂w = dx1·Σ x2ᵢ + x1·Σ dx2ᵢ (derived by hand), here 0.5·6 + 2·(−0.5) = 2.
#[test]
fn paper_figure_2_forward() {
    let src =
        "fn w(x1: Real, x2: [Real]) -> Real { let f = |x2i: Real| x1 * x2i; sum(map(f, x2)) }";
    let got = eval_reals(
        src,
        "jvp(w, (2.0, [1.0, 2.0, 3.0]), (0.5, [0.25, -1.0, 0.25]))",
        MODE,
    )
    .unwrap();
    assert_eq!(got, vec![12.0, 2.0]);
}

/// A function value's tangent is its captures' tangents: `jvp` of a function that
/// returns a closure, then the closure's pushforward applied through a second `jvp`
/// that differentiates the captured value: d/dk (k·y + k²) at k = 3, y = 2 is y + 2k = 8.
#[test]
fn closures_returned_and_applied() {
    let src = "fn adder(k: Real) -> fn(Real) -> Real { |y| k * y + k * k }
               fn h(k: Real) -> Real { let g = adder(k); g(2.0) }";
    let got = eval_reals(src, "jvp(h, 3.0, 1.0)", MODE).unwrap();
    assert_eq!(got, vec![15.0, 8.0]);
}

/// A function that applies an operator itself is not translated by forward CHAD; its
/// `jvp` is computed by dual numbers, with the same result.
#[test]
fn nested_operators_fall_back_to_dual_numbers() {
    let src = "fn f(x: Real) -> Real { x * grad(|y: Real| y * y * x, x) }";
    // f(x) = x · 2x·x = 2x³, f'(x) = 6x² (derived by hand): at 1.5, 6.75 and 13.5.
    let got = eval_reals(src, "jvp(f, 1.5, 1.0)", MODE).unwrap();
    assert_eq!(got, vec![6.75, 13.5]);
    let program =
        fluxion_driver::compile("nested.flx", src).unwrap_or_else(|f| panic!("{}", f.render()));
    let err = program
        .show_with("chad-fwd", Some("f"), AdMode::Delta)
        .unwrap_err();
    assert!(err.contains("dual numbers"), "{err}");
}

/// An array tangent that is zero at run time but not statically: the fold's tangent
/// (its chain starts from the constant's zero), mapped into an array of zero tangents,
/// added to itself by `sum([q, q])` (lazily) and read by `%lindex` and `%lslice`, and
/// the same through `iterate`'s second step (the minimised
/// `regressions/fwd_chad_iterate_over_fold_of_closures.flx`). The lazy sum forces to
/// the symbolic zero, which has no length; reading it failed with "%lindex 0 out of
/// range". q = [4, 4], s = [8, 8], the iterate doubles twice: f = 8·x0 + 8·x1 + 16·x2
/// (derived by hand), so its JVP along u is 8·u0 + 8·u1 + 16·u2.
#[test]
fn reads_of_an_array_tangent_that_is_zero_at_run_time() {
    let src = "fn f(x: [Real]) -> Real {
        let q = map(|n: Real| n * n, fold(|a: [Real], b: Real| a, [2.0, 2.0], x));
        let s = sum([q, q]);
        let t = iterate(2, |p: [Real]| map(|n: Real| n, sum([p, p])), q);
        s[0] * x[0] + sum(slice(s, 1, 1)) * x[1] + t[1] * x[2]
    }";
    let x = [0.5, 1.0, 2.0];
    for u in [[1.0, 0.0, 0.0], [0.25, -1.5, 0.75]] {
        let expr = format!("jvp(f, {x:?}, {u:?})");
        let chad = eval_reals(src, &expr, MODE).unwrap_or_else(|e| panic!("{e}"));
        let dual = eval_reals(src, &expr, DUAL).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(chad, dual, "along {u:?}");
        assert_eq!(
            chad[1],
            8.0 * u[0] + 8.0 * u[1] + 16.0 * u[2],
            "along {u:?}"
        );
    }
    check_gradient(src, "f", &x, MODE).unwrap_or_else(|e| panic!("{e}"));
}

/// A direction of the wrong shape is a clean error, as with dual numbers.
#[test]
fn a_direction_of_the_wrong_shape_is_an_error() {
    let src = "fn f(x: [Real]) -> Real { sum(x) }";
    let err = eval_reals(src, "jvp(f, [1.0, 2.0], [1.0])", MODE).unwrap_err();
    assert!(err.contains("shape") || err.contains("length"), "{err}");
}

/// Linear cost: a 10⁴-let chain (the halving chain: every step exact, so the
/// tangent is exactly the direction), 10⁶ inputs, and a cons list of 10⁵ reals built
/// and consumed by recursion. Quadratic work or a recursion per binding would not
/// finish or would overflow the stack.
#[test]
fn stress_linear_programs() {
    let n = 10_000;
    let mut src = String::from("fn f(x0: Real) -> Real {\n");
    for i in 0..n {
        src.push_str(&format!("    let x{} = 0.5 * (x{i} + x{i});\n", i + 1));
    }
    src.push_str(&format!("    x{n}\n}}\n"));
    assert_eq!(
        eval_reals(&src, "jvp(f, 1.3, 0.25)", MODE).unwrap(),
        vec![1.3, 0.25]
    );
    // Σ yᵢ² along the direction 1: Σ 2yᵢ with yᵢ = i·10⁻³, i.e. 10⁻³·n(n−1).
    let wide = "fn f(x: [Real]) -> Real { sum(map(|y| y * y, x)) }
                fn point(n: Int) -> [Real] { build(n, |i| to_real(i) * 0.001) }";
    let m = 1_000_000;
    let got = eval_reals(
        wide,
        &format!("jvp(f, point({m}), replicate({m}, 1.0)).1"),
        MODE,
    )
    .unwrap();
    let want = 0.001 * (m as f64) * (m as f64 - 1.0);
    assert!((got[0] - want).abs() <= 1e-9 * want, "{got:?} vs {want}");
    let list = "enum List { Nil, Cons(Real, List) }
        fn from(x: [Real], i: Int) -> List { if i == length(x) { Nil } else { Cons(x[i], from(x, i + 1)) } }
        fn ssq(l: List) -> Real { match l { Nil => 0.0, Cons(h, t) => h * h + ssq(t) } }
        fn f(x: [Real]) -> Real { ssq(from(x, 0)) }
        fn point(n: Int) -> [Real] { build(n, |i| to_real(i) * 0.001 - 1.0) }";
    let k = 100_000;
    let got = eval_reals(
        list,
        &format!("jvp(f, point({k}), replicate({k}, 1.0)).1"),
        MODE,
    )
    .unwrap();
    let dual = eval_reals(
        list,
        &format!("jvp(f, point({k}), replicate({k}, 1.0)).1"),
        DUAL,
    )
    .unwrap();
    assert!(
        (got[0] - dual[0]).abs() <= 1e-9 * dual[0].abs(),
        "{got:?} vs {dual:?}"
    );
}

/// Derivative code grows linearly with the program (as reverse CHAD's, Cor. 7.2): n
/// units of lets, closures, branches and maps, then 2n.
#[test]
fn derivative_code_grows_linearly() {
    let size = |n: usize| code_size::derivative_bindings("chad-fwd", AdMode::Delta, n);
    let (small, large) = (size(50), size(100));
    assert!(
        (large as f64) <= 2.1 * small as f64,
        "derivative code of 2n units is {large} bindings, of n units {small}"
    );
    check_gradient(&code_size::units_program(5), "f", &[0.3, -0.2, 0.9], MODE).unwrap();
}
