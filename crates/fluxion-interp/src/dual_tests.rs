//! The dual-number representations (`Value::Dual`, `Value::DualArray`): that they are
//! used, and that they behave exactly as the tuples and arrays they stand for.

use std::rc::Rc;

use fluxion_core::{Module, Span};

use crate::tests::{call, compile, eval, eval_value, fault_in};
use crate::{DualArray, Interp, Value};

fn dual_array(primal: &[f64], tangent: &[f64]) -> Value {
    Value::DualArray(Rc::new(
        DualArray::new(primal.into(), tangent.into()).expect("equal lengths"),
    ))
}

/// Calls the forward-mode translation of `f` (translated `layers` times) on `args`.
fn call_translated(src: &str, f: &str, layers: usize, args: Vec<Value>) -> Value {
    let mut module: Module = compile(src);
    let mut code = module.functions[f];
    for _ in 0..layers {
        code = fluxion_ad::forward_code(&mut module, code).expect("translates");
    }
    Interp::new(module)
        .call_code(code, &[], args, Span::default())
        .unwrap_or_else(|e| panic!("{e:?}"))
}

#[test]
fn a_pair_of_reals_is_an_inline_value_and_values_did_not_grow() {
    // As before the dual variants: a tag and an `Rc` slice.
    assert_eq!(std::mem::size_of::<Value>(), 24);
    assert!(matches!(
        eval_value("(Real, Real)", "(1.5, 2.5)"),
        Value::Dual(1.5, 2.5)
    ));
    assert!(matches!(
        eval_value("(Real, Real)", "{ let p = (1.0, 2.0); (p.1, p.0) }"),
        Value::Dual(2.0, 1.0)
    ));
    assert!(matches!(
        eval_value("(Real, Real)", "sum([(1.0, 2.0), (3.0, 4.0)])"),
        Value::Dual(4.0, 6.0)
    ));
}

#[test]
fn arrays_of_pairs_of_reals_are_two_unboxed_buffers() {
    for body in [
        "[(1.0, 2.0), (3.0, 4.0)]",
        "build(2, |i| (to_real(i), 1.0))",
        "map(|x| (x, 2.0 * x), [1.0, 2.0])",
        "map2(|x, y| (x, y), [1.0], [2.0])",
        "zip([1.0, 2.0], [3.0, 4.0])",
        "scan(|a, x| (a.0 + x, a.1), (0.0, 1.0), [1.0, 2.0])",
        "replicate(3, (1.0, 0.0))",
        "concat([(1.0, 2.0)], [(3.0, 4.0)])",
        "slice([(1.0, 2.0), (3.0, 4.0)], 1, 1)",
        "reverse([(1.0, 2.0), (3.0, 4.0)])",
    ] {
        let v = eval_value("[(Real, Real)]", body);
        assert!(matches!(v, Value::DualArray(_)), "{body}: {v:?}");
    }
    match &eval_value(
        "[(Real, Real)]",
        "reverse(build(3, |i| (to_real(i), 10.0 + to_real(i))))",
    ) {
        Value::DualArray(d) => {
            assert_eq!(&d.primal()[..], &[2.0, 1.0, 0.0]);
            assert_eq!(&d.tangent()[..], &[12.0, 11.0, 10.0]);
        }
        v => panic!("{v:?}"),
    }
}

#[test]
fn pairs_of_other_types_and_pairs_of_pairs_stay_tuples() {
    assert!(matches!(
        eval_value("(Int, Real)", "(1, 2.0)"),
        Value::Tuple(_)
    ));
    assert!(matches!(
        eval_value("(Real, Real, Real)", "(1.0, 2.0, 3.0)"),
        Value::Tuple(_)
    ));
    // Forward over forward: Tf(Tf(Real)) = ((Real, Real), (Real, Real)).
    match &eval_value("((Real, Real), (Real, Real))", "((1.0, 2.0), (3.0, 4.0))") {
        Value::Tuple(fs) => {
            assert!(matches!(
                fs[..],
                [Value::Dual(1.0, 2.0), Value::Dual(3.0, 4.0)]
            ));
        }
        v => panic!("{v:?}"),
    }
    assert!(matches!(
        eval_value(
            "[((Real, Real), (Real, Real))]",
            "[((1.0, 2.0), (3.0, 4.0))]"
        ),
        Value::Array(_)
    ));
}

#[test]
fn dual_values_project_compare_and_print_as_tuples() {
    assert_eq!(
        eval("(Real, Real)", "{ let p = (1.0, 2.0); (p.0 + p.1, p.1) }"),
        "(3.0, 2.0)"
    );
    assert_eq!(
        eval(
            "[Bool]",
            "[(1.0, 2.0) == (1.0, 2.0), (1.0, 2.0) == (1.0, 3.0), (1.0, 2.0) != (2.0, 2.0), \
             (0.0 / 0.0, 1.0) == (0.0 / 0.0, 1.0), \
             [(1.0, 2.0)] == [(1.0, 2.0)], [(1.0, 2.0)] == [(1.0, 3.0)], \
             [(1.0, 2.0)] == [(1.0, 2.0), (1.0, 2.0)], [(0.0 / 0.0, 1.0)] == [(0.0 / 0.0, 1.0)], \
             build(0, |i| (to_real(i), 0.0)) == []]"
        ),
        "[true, false, true, false, true, false, false, false, true]"
    );
    assert_eq!(
        eval("[(Real, Real)]", "[(1.0, -0.5), (1e300, 0.0 / 0.0)]"),
        "[(1.0, -0.5), (1e300, NaN)]"
    );
    assert_eq!(
        eval(
            "([(Real, Real)], Int, (Real, Real))",
            "{ let xs = zip([1.0, 2.0], [3.0, 4.0]); (xs, length(xs), xs[1]) }"
        ),
        "([(1.0, 3.0), (2.0, 4.0)], 2, (2.0, 4.0))"
    );
    // Read without boxing by fold, map and sum.
    assert_eq!(
        eval(
            "(Real, [Real], (Real, Real))",
            "{ let xs = [(1.0, 2.0), (3.0, 4.0)]; \
             (fold(|a, p| a + p.0 * p.1, 0.0, xs), map(|p| p.1, xs), sum(xs)) }"
        ),
        "(14.0, [2.0, 4.0], (4.0, 6.0))"
    );
}

#[test]
fn sums_of_arrays_of_pairs_add_componentwise() {
    assert_eq!(
        eval(
            "[(Real, Real)]",
            "sum([[(1.0, 2.0), (3.0, 4.0)], [(10.0, 20.0), (30.0, 40.0)]])"
        ),
        "[(11.0, 22.0), (33.0, 44.0)]"
    );
    assert_eq!(
        eval("(Real, Real)", "sum(build(0, |i| (to_real(i), 1.0)))"),
        "(0.0, 0.0)"
    );
    assert_eq!(
        eval("(Real, Real)", "sumbuild(3, |i| (to_real(i), 1.0))"),
        "(3.0, 3.0)"
    );
}

#[test]
fn index_out_of_range_in_an_array_of_pairs_is_an_error() {
    let msg = fault_in("(Real, Real)", "let xs = [(1.0, 2.0)]; xs[1]", "xs[1]");
    assert_eq!(msg, "index 1 out of range for an array of length 1");
    let msg = fault_in("(Real, Real)", "let xs = [(1.0, 2.0)]; xs[-1]", "xs[-1]");
    assert!(msg.contains("out of range"), "{msg}");
    let msg = fault_in(
        "[(Real, Real)]",
        "slice([(1.0, 2.0)], 1, 1)",
        "slice([(1.0, 2.0)], 1, 1)",
    );
    assert!(msg.contains("out of range"), "{msg}");
}

#[test]
fn arrays_of_pairs_of_different_lengths_are_errors() {
    for body in [
        "sum([[(1.0, 2.0)], [(1.0, 2.0), (3.0, 4.0)]])",
        "map2(|a, b| a, [(1.0, 2.0)], [(1.0, 2.0), (3.0, 4.0)])",
        "zip([1.0], [2.0, 3.0])",
    ] {
        let msg = fault_in("[(Real, Real)]", body, body);
        assert!(msg.contains("different lengths"), "{body}: {msg}");
    }
}

#[test]
fn forward_translation_runs_on_struct_of_arrays_duals() {
    let src = "fn f(xs: [Real]) -> [Real] { map(|x| x * x, xs) }\n\
               fn g(xs: [Real]) -> Real { sum(map(|x| 3.0 * x, xs)) }";
    let xs = dual_array(&[1.0, 2.0, 3.0], &[1.0, 0.0, 2.0]);
    // d(x²) = 2x dx
    match &call_translated(src, "f", 1, vec![xs.clone()]) {
        Value::DualArray(d) => {
            assert_eq!(&d.primal()[..], &[1.0, 4.0, 9.0]);
            assert_eq!(&d.tangent()[..], &[2.0, 0.0, 12.0]);
        }
        v => panic!("expected a dual array, got {v:?}"),
    }
    assert!(matches!(
        call_translated(src, "g", 1, vec![xs]),
        Value::Dual(18.0, 9.0)
    ));
}

#[test]
fn jvp_over_an_array_shares_the_point_and_direction_buffers() {
    let src = "fn main(xs: [Real], dxs: [Real]) -> ([Real], [Real]) { \
               jvp(|v: [Real]| v, xs, dxs) }";
    let xs: Rc<[f64]> = Rc::from([1.0, 2.0]);
    let dxs: Rc<[f64]> = Rc::from([3.0, 4.0]);
    let (v, shown) = call(
        src,
        vec![Value::RealArray(xs.clone()), Value::RealArray(dxs.clone())],
    )
    .unwrap();
    assert_eq!(shown, "([1.0, 2.0], [3.0, 4.0])");
    // The point and direction became the halves of one dual array, and the result's
    // halves are those buffers again: no element was boxed or copied.
    match v.tuple_fields().as_deref() {
        Some([Value::RealArray(y), Value::RealArray(dy)]) => {
            assert!(Rc::ptr_eq(y, &xs) && Rc::ptr_eq(dy, &dxs));
        }
        other => panic!("{other:?}"),
    }
    let src = "fn main() -> ([Real], [Real]) { \
               jvp(|v: [Real]| map(|x| x * x, v), [1.0, 2.0, 3.0], [1.0, 0.0, 2.0]) }";
    assert_eq!(
        call(src, vec![]).unwrap().1,
        "([1.0, 4.0, 9.0], [2.0, 0.0, 12.0])"
    );
}

#[test]
fn nested_forward_mode_runs_on_pairs_of_dual_pairs() {
    // Forward over forward of x ↦ x³ at x = 2 with both perturbations 1:
    // (x³, 3x², 3x², 6x) = (8, 12, 12, 12).
    let src = "fn f(x: Real) -> Real { x * x * x }";
    let arg = Value::tuple(vec![Value::Dual(2.0, 1.0), Value::Dual(1.0, 0.0)]);
    match &call_translated(src, "f", 2, vec![arg]) {
        Value::Tuple(fs) => assert!(
            matches!(fs[..], [Value::Dual(8.0, 12.0), Value::Dual(12.0, 12.0)]),
            "{fs:?}"
        ),
        v => panic!("{v:?}"),
    }
    // Through the operator (`diff` is `jvp` after expansion): d/dx 2x² = 8 at 2, and
    // over an array d²/ds dt Σ s·t·x = Σ x = 3.
    assert_eq!(
        eval(
            "(Real, Real)",
            "(jvp(|x| jvp(|y| x * y * y, x, 1.0).1, 2.0, 1.0).1, \
             jvp(|s| jvp(|t| sum(map(|x| s * t * x, [1.0, 2.0])), 1.0, 1.0).1, 1.0, 1.0).1)"
        ),
        "(8.0, 3.0)"
    );
}

#[test]
fn hand_made_tuples_and_boxed_arrays_of_reals_behave_as_duals() {
    let pair = |a, b| Value::Tuple(Rc::new([Value::Real(a), Value::Real(b)]));
    assert!(pair(1.0, 2.0).equals(&Value::Dual(1.0, 2.0)));
    assert!(!pair(1.0, 2.0).equals(&Value::Dual(1.0, 3.0)));
    let src = "fn main(p: (Real, Real), xs: [(Real, Real)]) -> ((Real, Real), Real) { \
               (sum([p, xs[0]]), p.0 * p.1) }";
    let boxed = Value::Array(Rc::new([pair(10.0, 20.0)]));
    let (_, shown) = call(src, vec![pair(2.0, 3.0), boxed]).unwrap();
    assert_eq!(shown, "((12.0, 23.0), 6.0)");
    // Canonical constructors choose the unboxed forms.
    assert!(matches!(
        Value::tuple(vec![Value::Real(1.0), Value::Real(2.0)]),
        Value::Dual(1.0, 2.0)
    ));
    assert!(matches!(
        Value::array(vec![Value::Dual(1.0, 2.0)]),
        Value::DualArray(_)
    ));
}
