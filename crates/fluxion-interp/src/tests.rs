//! Unit tests of the interpreter's semantics (docs/language.md §3–§4), on small programs
//! parsed and elaborated by the front end.

use fluxion_core::{Module, Span};

use crate::{Interp, RuntimeError, Value};

// ---------------------------------------------------------------- helpers

pub(crate) fn compile(src: &str) -> Module {
    let parse = fluxion_syntax::parse_module(src, 0);
    assert!(parse.errors.is_empty(), "syntax errors: {:?}", parse.errors);
    let module = fluxion_typeck::elaborate_program(&[&parse.module])
        .unwrap_or_else(|e| panic!("type errors: {e:?}"));
    if let Err(e) = fluxion_core::verify::verify_module(&module) {
        panic!("verifier: {e:?}");
    }
    module
}

/// Calls `main` of `src` with `args`: the value (with its rendering) or the fault.
pub(crate) fn call(src: &str, args: Vec<Value>) -> Result<(Value, String), RuntimeError> {
    let module = compile(src);
    let main = module.functions["main"];
    let ret = module.code(main).ret.clone();
    let interp = Interp::new(module);
    let v = interp.call_code(main, &[], args, Span::default())?;
    let mut shown = String::new();
    crate::write_value(&mut shown, &v, &interp.module(), Some(&ret)).unwrap();
    Ok((v, shown))
}

/// The value of `main`'s body `body` (a block's contents), rendered as Fluxion source.
pub(crate) fn eval(ret: &str, body: &str) -> String {
    let src = format!("fn main() -> {ret} {{ {body} }}");
    match call(&src, vec![]) {
        Ok((_, shown)) => shown,
        Err(e) => panic!("runtime error in {body}: {e:?}"),
    }
}

pub(crate) fn eval_value(ret: &str, body: &str) -> Value {
    let src = format!("fn main() -> {ret} {{ {body} }}");
    call(&src, vec![]).unwrap_or_else(|e| panic!("{e:?}")).0
}

/// The runtime error of `src`'s `main(args)`; also checks that its span points into
/// the source and covers `at`.
pub(crate) fn fault(src: &str, args: Vec<Value>, at: &str) -> String {
    match call(src, args) {
        Ok((_, v)) => panic!("expected a runtime error, got {v}"),
        Err(e) => {
            let text = &src[e.span.start as usize..e.span.end as usize];
            assert_eq!(text, at, "span of {:?}", e.message);
            e.message
        }
    }
}

/// The runtime error of `main` with body `body`, whose span must cover `at`.
pub(crate) fn fault_in(ret: &str, body: &str, at: &str) -> String {
    fault(&format!("fn main() -> {ret} {{ {body} }}"), vec![], at)
}

// ---------------------------------------------------------------- Int arithmetic

#[test]
fn int_division_truncates_toward_zero() {
    // -3.5 truncates to -3, 3.5 to 3.
    assert_eq!(
        eval("[Int]", "[-7 / 2, 7 / -2, -7 / -2, 7 / 2, 0 / -5]"),
        "[-3, -3, 3, 3, 0]"
    );
}

#[test]
fn int_remainder_takes_the_dividends_sign() {
    // a % b = a - (a / b) * b: -7 - (-3 * 2) = -1; 7 - (-3 * -2) = 1;
    // -7 - (3 * -2) = -1; 7 - 3 * 2 = 1.
    assert_eq!(
        eval("[Int]", "[-7 % 2, 7 % -2, -7 % -2, 7 % 2]"),
        "[-1, 1, -1, 1]"
    );
}

#[test]
fn real_remainder_takes_the_dividends_sign() {
    // -7.5 = -3 * 2.0 - 1.5
    assert_eq!(eval("Real", "-7.5 % 2.0"), "-1.5");
}

#[test]
fn int_overflow_is_a_runtime_error() {
    for (body, at) in [
        ("9223372036854775807 + 1", "9223372036854775807 + 1"),
        ("-9223372036854775808 - 1", "-9223372036854775808 - 1"),
        ("4611686018427387904 * 2", "4611686018427387904 * 2"),
        ("-9223372036854775808 / -1", "-9223372036854775808 / -1"),
        ("-9223372036854775808 % -1", "-9223372036854775808 % -1"),
        ("abs(-9223372036854775808)", "abs(-9223372036854775808)"),
        (
            "sum([9223372036854775807, 1])",
            "sum([9223372036854775807, 1])",
        ),
    ] {
        let msg = fault_in("Int", body, at);
        assert!(msg.contains("overflow"), "{body}: {msg}");
    }
}

#[test]
fn negating_the_most_negative_int_overflows() {
    let src = "fn main(x: Int) -> Int { -x }";
    let msg = fault(src, vec![Value::Int(i64::MIN)], "-x");
    assert!(msg.contains("overflow"), "{msg}");
    // Written as a literal, -(-2^63) = 2^63 is out of range too.
    let msg = fault_in("Int", "-(-9223372036854775808)", "-(-9223372036854775808)");
    assert!(msg.contains("overflow"), "{msg}");
}

#[test]
fn int_division_by_zero_is_a_runtime_error() {
    let src = "fn main(a: Int, b: Int) -> (Int, Int) { let q = a / b; (q, a % b) }";
    let msg = fault(src, vec![Value::Int(1), Value::Int(0)], "a / b");
    assert_eq!(msg, "integer division by zero");
    let src = "fn main(a: Int, b: Int) -> Int { a % b }";
    let msg = fault(src, vec![Value::Int(1), Value::Int(0)], "a % b");
    assert_eq!(msg, "integer division by zero");
}

#[test]
fn real_division_by_zero_is_infinite_not_an_error() {
    assert_eq!(
        eval("(Real, Real)", "(1.0 / 0.0, -1.0 / 0.0)"),
        "(inf, -inf)"
    );
}

#[test]
fn to_int_truncates_and_rejects_out_of_range() {
    assert_eq!(
        eval("[Int]", "[to_int(2.7), to_int(-2.7), to_int(-0.5)]"),
        "[2, -2, 0]"
    );
    let msg = fault_in("Int", "to_int(1e300)", "to_int(1e300)");
    assert!(msg.contains("out of Int range"), "{msg}");
    let msg = fault_in("Int", "to_int(0.0 / 0.0)", "to_int(0.0 / 0.0)");
    assert!(msg.contains("out of Int range"), "{msg}");
    // The ends of the range: the largest double below 2^63 (2^63 - 1024) and -2^63
    // are Ints; 2^63 is not (the first bound rejected 2^63 - 1024).
    assert_eq!(
        eval(
            "[Int]",
            "[to_int(9223372036854774784.0), to_int(-9223372036854775808.0)]"
        ),
        "[9223372036854774784, -9223372036854775808]"
    );
    let msg = fault_in(
        "Int",
        "to_int(9223372036854775808.0)",
        "to_int(9223372036854775808.0)",
    );
    assert!(msg.contains("out of Int range"), "{msg}");
}

// ---------------------------------------------------------------- arrays

#[test]
fn index_out_of_range_is_a_runtime_error() {
    let msg = fault_in("Real", "let xs = [1.0, 2.0]; xs[2]", "xs[2]");
    assert_eq!(msg, "index 2 out of range for an array of length 2");
    let msg = fault_in("Int", "let xs = [1, 2]; xs[-1]", "xs[-1]");
    assert_eq!(msg, "index -1 out of range for an array of length 2");
}

#[test]
fn sum_of_reals_ints_and_empty() {
    assert_eq!(eval("Real", "sum([1.0, 2.0, 3.5])"), "6.5");
    assert_eq!(eval("Int", "sum([1, 2, 3])"), "6");
    assert_eq!(eval("Real", "sum(build(0, |i| to_real(i)))"), "0.0");
}

#[test]
fn sum_over_tuples_is_componentwise() {
    // (1.0 + 3.0, 2 + 4)
    assert_eq!(eval("(Real, Int)", "sum([(1.0, 2), (3.0, 4)])"), "(4.0, 6)");
}

#[test]
fn sum_over_arrays_is_elementwise() {
    // [1+3+5, 2+4+6]
    assert_eq!(
        eval("[Real]", "sum([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])"),
        "[9.0, 12.0]"
    );
    assert_eq!(eval("[Int]", "sum([[1, 2], [3, 4]])"), "[4, 6]");
    // Tuples holding arrays: (1.0 + 2.0, [1+3, 2+4]).
    assert_eq!(
        eval(
            "(Real, [Real])",
            "sum([(1.0, [1.0, 2.0]), (2.0, [3.0, 4.0])])"
        ),
        "(3.0, [4.0, 6.0])"
    );
}

#[test]
fn sum_of_empty_array_of_tuples_is_the_zero_tuple() {
    assert_eq!(
        eval("(Real, Int)", "sum(build(0, |i| (to_real(i), i)))"),
        "(0.0, 0)"
    );
    let src = "fn main(xs: [(Real, (Int, Real))]) -> (Real, (Int, Real)) { sum(xs) }";
    let (_, shown) = call(src, vec![Value::Array(std::rc::Rc::new([]))]).unwrap();
    assert_eq!(shown, "(0.0, (0, 0.0))");
}

#[test]
fn sum_of_arrays_of_different_lengths_is_an_error() {
    let msg = fault_in(
        "[Real]",
        "sum([[1.0, 2.0], [3.0]])",
        "sum([[1.0, 2.0], [3.0]])",
    );
    assert!(msg.contains("different lengths"), "{msg}");
}

#[test]
fn sumbuild_equals_sum_of_build() {
    // sum of i^2 for i in 0..4 = 0 + 1 + 4 + 9 = 14
    assert_eq!(
        eval(
            "(Int, Int)",
            "(sumbuild(4, |i| i * i), sum(build(4, |i| i * i)))"
        ),
        "(14, 14)"
    );
}

#[test]
fn scan_is_inclusive_and_left_to_right() {
    assert_eq!(
        eval("[Int]", "scan(|a, x| a + x, 0, [1, 2, 3])"),
        "[1, 3, 6]"
    );
    // A non-commutative step shows the order: a * 10 + x builds the digits.
    assert_eq!(
        eval("[Int]", "scan(|a, x| a * 10 + x, 0, [1, 2, 3])"),
        "[1, 12, 123]"
    );
    assert_eq!(eval("[Int]", "scan(|a, x| a + x, 0, range(0))"), "[]");
}

#[test]
fn fold_is_a_left_fold() {
    assert_eq!(eval("Int", "fold(|a, x| a * 10 + x, 0, [1, 2, 3])"), "123");
    // ((100 - 1) - 2) - 3
    assert_eq!(eval("Int", "fold(|a, x| a - x, 100, [1, 2, 3])"), "94");
}

#[test]
fn iterate_applies_the_function_n_times() {
    // 1 doubled 10 times is 2^10.
    assert_eq!(eval("Int", "iterate(10, |x| x * 2, 1)"), "1024");
    assert_eq!(eval("Int", "iterate(0, |x| x * 2, 5)"), "5");
    let msg = fault_in("Int", "iterate(-1, |x| x, 5)", "iterate(-1, |x| x, 5)");
    assert!(msg.contains("negative"), "{msg}");
}

#[test]
fn slice_takes_start_and_length() {
    assert_eq!(eval("[Int]", "slice([0, 1, 2, 3, 4], 1, 3)"), "[1, 2, 3]");
    assert_eq!(eval("[Real]", "slice([0.0, 1.0], 0, 2)"), "[0.0, 1.0]");
    // An empty slice at the very end is in range.
    assert_eq!(eval("[Int]", "slice([0, 1, 2], 3, 0)"), "[]");
}

#[test]
fn slice_out_of_bounds_is_an_error() {
    // start + len > 5, negative parts, start past the end, start + len overflowing.
    for (start, len) in [(3, 3), (-1, 1), (0, -1), (6, 0), (1, i64::MAX)] {
        let call = format!("slice([0, 1, 2, 3, 4], {start}, {len})");
        let msg = fault_in("[Int]", &call, &call);
        assert!(msg.contains("out of range"), "{call}: {msg}");
    }
}

#[test]
fn maximum_and_argmax_take_the_first_index_on_ties() {
    assert_eq!(eval("Int", "argmax([1.0, 3.0, 2.0, 3.0])"), "1");
    assert_eq!(eval("Int", "argmax([5, 5, 5])"), "0");
    assert_eq!(eval("Real", "maximum([1.0, 3.0, 2.0, 3.0])"), "3.0");
    assert_eq!(eval("Int", "minimum([4, 2, 9, 2])"), "2");
    // Ties between -0.0 and 0.0 (equal as reals) show which one is returned.
    let Value::Real(m) = eval_value("Real", "maximum([-0.0, 0.0])") else {
        panic!()
    };
    assert!(m == 0.0 && m.is_sign_negative(), "maximum took {m:?}");
    let Value::Real(m) = eval_value("Real", "minimum([0.0, -0.0])") else {
        panic!()
    };
    assert!(m == 0.0 && m.is_sign_positive(), "minimum took {m:?}");
}

#[test]
fn maximum_of_empty_array_is_an_error() {
    let msg = fault_in("Int", "argmax(build(0, |i| i))", "argmax(build(0, |i| i))");
    assert!(msg.contains("empty"), "{msg}");
}

#[test]
fn min_and_max_ties_follow_the_first_argument() {
    // -0.0 == 0.0, so each returns its first argument; the sign tells which.
    for (body, negative) in [
        ("max(-0.0, 0.0)", true),
        ("max(0.0, -0.0)", false),
        ("min(-0.0, 0.0)", true),
        ("min(0.0, -0.0)", false),
    ] {
        let Value::Real(x) = eval_value("Real", body) else {
            panic!()
        };
        assert_eq!(x, 0.0);
        assert_eq!(x.is_sign_negative(), negative, "{body}");
    }
    assert_eq!(eval("(Int, Int)", "(min(3, 2), max(3, 2))"), "(2, 3)");
}

#[test]
fn arrays_of_reals_are_unboxed() {
    for body in [
        "build(3, |i| to_real(i))",
        "[1.0, 2.0]",
        "map(|x| x * 2.0, [1.0])",
        "replicate(2, 1.5)",
        "concat([1.0], [2.0])",
        "reverse([1.0, 2.0])",
        "slice([1.0, 2.0], 1, 1)",
        "scan(|a, x| a + x, 0.0, [1.0, 2.0])",
    ] {
        let v = eval_value("[Real]", body);
        assert!(matches!(v, Value::RealArray(_)), "{body}: {v:?}");
    }
    match &eval_value("[Real]", "build(3, |i| to_real(i))") {
        Value::RealArray(xs) => assert_eq!(&**xs, &[0.0, 1.0, 2.0]),
        v => panic!("{v:?}"),
    }
    // `Int`s are unboxed too (int_array_tests.rs); other element types stay boxed.
    assert!(matches!(
        eval_value("[Int]", "build(2, |i| i)"),
        Value::IntArray(_)
    ));
    assert!(matches!(
        eval_value("[(Int, Int)]", "build(2, |i| (i, i))"),
        Value::Array(_)
    ));
}

#[test]
fn negative_or_huge_lengths_are_errors() {
    let msg = fault_in("[Int]", "build(-1, |i| i)", "build(-1, |i| i)");
    assert!(msg.contains("negative length"), "{msg}");
    let msg = fault_in(
        "[Int]",
        "replicate(1000000000000, 0)",
        "replicate(1000000000000, 0)",
    );
    assert!(msg.contains("too large"), "{msg}");
}

#[test]
fn zip_and_map2_need_equal_lengths() {
    assert_eq!(
        eval("[(Int, Real)]", "zip([1, 2], [0.5, 1.5])"),
        "[(1, 0.5), (2, 1.5)]"
    );
    let msg = fault_in("[(Int, Int)]", "zip([1, 2], [1])", "zip([1, 2], [1])");
    assert!(msg.contains("different lengths"), "{msg}");
    let msg = fault_in(
        "[Int]",
        "map2(|a, b| a + b, [1], [1, 2])",
        "map2(|a, b| a + b, [1], [1, 2])",
    );
    assert!(msg.contains("different lengths"), "{msg}");
}

#[test]
fn range_reverse_concat_length() {
    assert_eq!(
        eval(
            "([Int], [Int], [Int], Int)",
            "(range(4), reverse(range(3)), concat([1], [2, 3]), length(range(7)))"
        ),
        "([0, 1, 2, 3], [2, 1, 0], [1, 2, 3], 7)"
    );
}

// ---------------------------------------------------------------- equality, enums, closures

const LIST: &str = "enum L { Nil, Cons(Int, L) }\n";

#[test]
fn equality_on_tuples_is_structural() {
    assert_eq!(
        eval(
            "[Bool]",
            "[(1, (2.0, true)) == (1, (2.0, true)), (1, (2.0, true)) == (1, (2.0, false)), (1, 2) != (1, 3)]"
        ),
        "[true, false, true]"
    );
}

#[test]
fn equality_on_enums_is_structural() {
    let src = format!(
        "{LIST}fn main() -> [Bool] {{ [Cons(1, Cons(2, Nil)) == Cons(1, Cons(2, Nil)), \
         Cons(1, Nil) == Cons(2, Nil), Nil == Cons(1, Nil), Nil == Nil] }}"
    );
    assert_eq!(call(&src, vec![]).unwrap().1, "[true, false, false, true]");
}

#[test]
fn equality_on_arrays_compares_lengths_and_elements() {
    assert_eq!(
        eval(
            "[Bool]",
            "[[1.0, 2.0] == [1.0, 2.0], [1.0] == [1.0, 2.0], [[1], [2]] == [[1], [2]], \
             build(0, |i| to_real(i)) == [], [[1.0]] == [[2.0]]]"
        ),
        "[true, false, true, true, false]"
    );
}

#[test]
fn nan_is_not_equal_to_itself() {
    assert_eq!(eval("Bool", "let n = 0.0 / 0.0; n == n"), "false");
}

#[test]
fn nested_patterns_and_literal_patterns_select_the_first_matching_arm() {
    let src = format!(
        "{LIST}fn f(l: L) -> Int {{ match l {{ Cons(0, _) => 100, Cons(x, Cons(y, _)) => x * 10 + y, Cons(x, Nil) => x, Nil => -1 }} }}\n\
         fn main() -> [Int] {{ [f(Cons(0, Cons(5, Nil))), f(Cons(3, Cons(4, Nil))), f(Cons(7, Nil)), f(Nil)] }}"
    );
    assert_eq!(call(&src, vec![]).unwrap().1, "[100, 34, 7, -1]");
}

#[test]
fn non_exhaustive_match_is_a_runtime_error() {
    let src = format!("{LIST}fn main(l: L) -> Int {{ match l {{ Cons(x, _) => x }} }}");
    let err = call(&src, vec![Value::Enum(0, std::rc::Rc::new([]))]).unwrap_err();
    assert!(err.message.contains("non-exhaustive"), "{}", err.message);
    assert!(err.message.contains("Nil"), "{}", err.message);
}

#[test]
fn closures_capture_values_at_creation() {
    assert_eq!(
        eval(
            "[Int]",
            "let k = 10; let add = |x| x + k; let k = 20; map(add, [1, 2])"
        ),
        "[11, 12]"
    );
}

#[test]
fn short_circuit_operators_skip_the_right_operand() {
    // The right operands would fail (division by zero) if they were evaluated.
    assert_eq!(
        eval(
            "(Bool, Bool)",
            "let z = 0; (false && 1 / z == 1, true || 1 / z == 1)"
        ),
        "(false, true)"
    );
}

#[test]
fn recursion_through_top_level_functions() {
    let src = "fn fact(n: Int) -> Int { if n == 0 { 1 } else { n * fact(n - 1) } }\n\
               fn main() -> Int { fact(20) }";
    // 20! = 2432902008176640000 < 2^63; 21! would overflow.
    assert_eq!(call(src, vec![]).unwrap().1, "2432902008176640000");
    let src = "fn fact(n: Int) -> Int { if n == 0 { 1 } else { n * fact(n - 1) } }\n\
               fn main() -> Int { fact(21) }";
    assert!(call(src, vec![]).unwrap_err().message.contains("overflow"));
}
