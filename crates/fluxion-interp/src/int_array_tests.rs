//! `Int` and `Bool` arrays unboxed (`Value::IntArray`, `Value::BoolArray`): every
//! producer makes them, and every reader gives exactly what it gives on the boxed
//! form (`Value::Array` of `Int`s or `Bool`s, the representation before), which
//! readers still accept.

use std::rc::Rc;

use crate::Value;
use crate::tests::{call, eval_value};

fn unboxed_ints(xs: &[i64]) -> Value {
    Value::IntArray(xs.into())
}

fn boxed_ints(xs: &[i64]) -> Value {
    Value::Array(xs.iter().map(|x| Value::Int(*x)).collect::<Vec<_>>().into())
}

fn boxed_bools(xs: &[bool]) -> Value {
    Value::Array(
        xs.iter()
            .map(|x| Value::Bool(*x))
            .collect::<Vec<_>>()
            .into(),
    )
}

/// `main(args)`'s printed result or error message (without its span).
fn outcome(src: &str, args: Vec<Value>) -> Result<String, String> {
    call(src, args)
        .map(|(_, shown)| shown)
        .map_err(|e| e.message)
}

#[test]
fn every_producer_of_ints_or_bools_makes_an_unboxed_array() {
    for body in [
        "build(3, |i| i * 2)",
        "[1, 2]",
        "map(|x| x + 1, [1])",
        "map2(|x, y| x + y, [1], [2])",
        "replicate(2, 7)",
        "range(4)",
        "concat([1], [2])",
        "concat(range(0), [2])",
        "reverse([1, 2])",
        "slice([1, 2, 3], 1, 2)",
        "scan(|a, x| a + x, 0, [1, 2])",
        "sum([[1, 2], [3, 4]])",
    ] {
        let v = eval_value("[Int]", body);
        assert!(matches!(v, Value::IntArray(_)), "{body}: {v:?}");
    }
    for body in [
        "build(3, |i| i > 0)",
        "[true, false]",
        "map(|x| x > 1, [1, 2])",
        "replicate(2, false)",
        "reverse([true, false])",
        "slice([true, false], 1, 1)",
        "concat([true], [false])",
    ] {
        let v = eval_value("[Bool]", body);
        assert!(matches!(v, Value::BoolArray(_)), "{body}: {v:?}");
    }
    match &eval_value("[Int]", "range(3)") {
        Value::IntArray(xs) => assert_eq!(&**xs, &[0, 1, 2]),
        v => panic!("{v:?}"),
    }
}

/// Programs over one `[Int]` argument, each run on both representations.
const INT_PROGRAMS: &[(&str, &str)] = &[
    ("Int", "xs[0] + xs[2]"),
    ("Int", "xs[3]"),
    ("Int", "xs[-1]"),
    ("Int", "length(xs)"),
    ("Int", "sum(xs)"),
    ("Int", "maximum(xs)"),
    ("Int", "minimum(xs)"),
    ("Int", "argmax(xs)"),
    ("Int", "argmax(map(|x| -x, xs))"),
    ("Bool", "xs == [3, -1, 3]"),
    ("Bool", "xs == [3, -1]"),
    ("Bool", "xs != [3, -1, 4]"),
    ("Bool", "slice(xs, 0, 0) == []"),
    ("[Int]", "xs"),
    ("[Int]", "map(|x| x * x, xs)"),
    ("Int", "fold(|a, x| a * 10 + x, 0, xs)"),
    ("[Int]", "scan(|a, x| a + x, 0, xs)"),
    ("[Int]", "reverse(xs)"),
    ("[Int]", "slice(xs, 1, 2)"),
    ("[Int]", "slice(xs, 2, 2)"),
    ("[Int]", "concat(xs, xs)"),
    ("[(Int, Int)]", "zip(xs, range(3))"),
    ("[Int]", "map2(|x, y| x - y, xs, range(3))"),
    ("[Int]", "map2(|x, y| x - y, xs, range(2))"),
    ("[[Int]]", "replicate(2, xs)"),
    ("[Int]", "sum([xs, xs, xs])"),
    ("[Int]", "sum([xs, [1]])"),
    ("[Real]", "map(to_real, xs)"),
    ("(Real, Real)", "jvp(|r| r * to_real(sum(xs)), 1.0, 1.0)"),
];

#[test]
fn int_arrays_behave_as_the_boxed_form_did() {
    let xs = [3, -1, 3];
    for (ret, body) in INT_PROGRAMS {
        let src = format!("fn main(xs: [Int]) -> {ret} {{ {body} }}");
        let unboxed = outcome(&src, vec![unboxed_ints(&xs)]);
        let boxed = outcome(&src, vec![boxed_ints(&xs)]);
        assert_eq!(unboxed, boxed, "{body}");
    }
    // A few of them spelled out: printing, ties, errors.
    let run = |ret: &str, body: &str| {
        let src = format!("fn main(xs: [Int]) -> {ret} {{ {body} }}");
        outcome(&src, vec![unboxed_ints(&xs)])
    };
    assert_eq!(run("[Int]", "xs"), Ok("[3, -1, 3]".into()));
    assert_eq!(run("Int", "argmax(xs)"), Ok("0".into()), "first of a tie");
    assert_eq!(run("Int", "argmax([1, 5, 5])"), Ok("1".into()));
    assert_eq!(run("Int", "sum(xs)"), Ok("5".into()));
    assert_eq!(
        run("Int", "xs[3]"),
        Err("index 3 out of range for an array of length 3".into())
    );
    assert_eq!(
        run("Int", "sum(concat(xs, [9223372036854775807]))"),
        Err("Int overflow in `+`".into())
    );
    assert_eq!(
        run("[Int]", "sum([xs, [9223372036854775807, 0, 0]])"),
        Err("Int overflow in `+`".into())
    );
}

#[test]
fn the_zero_tangent_of_an_int_array_is_as_many_units() {
    let units = Value::Array(vec![Value::Unit; 3].into());
    for xs in [unboxed_ints(&[1, 2, 3]), boxed_ints(&[1, 2, 3])] {
        assert!(crate::tangent::zero_at(&xs).equals(&units), "{xs:?}");
    }
    let bools = Value::BoolArray([true, false, true].as_slice().into());
    assert!(crate::tangent::zero_at(&bools).equals(&units));
}

#[test]
fn bool_arrays_behave_as_the_boxed_form_did() {
    let bs = [true, false, true];
    for (ret, body) in [
        ("Bool", "bs[1]"),
        ("Bool", "bs[5]"),
        ("Int", "length(bs)"),
        ("Bool", "bs == [true, false, true]"),
        ("Bool", "bs == [true, true, true]"),
        ("[Bool]", "bs"),
        ("[Bool]", "map(|b| !b, bs)"),
        ("Int", "fold(|n, b| if b { n + 1 } else { n }, 0, bs)"),
        ("[Bool]", "reverse(concat(bs, [false]))"),
        ("[(Bool, Int)]", "zip(bs, range(3))"),
    ] {
        let src = format!("fn main(bs: [Bool]) -> {ret} {{ {body} }}");
        let unboxed = outcome(&src, vec![Value::BoolArray(bs.as_slice().into())]);
        let boxed = outcome(&src, vec![boxed_bools(&bs)]);
        assert_eq!(unboxed, boxed, "{body}");
    }
    assert_eq!(
        outcome(
            "fn main(bs: [Bool]) -> [Bool] { bs }",
            vec![Value::BoolArray(bs.as_slice().into())]
        ),
        Ok("[true, false, true]".into())
    );
}

#[test]
fn representations_compare_equal_to_each_other() {
    let (a, b) = (unboxed_ints(&[1, 2]), boxed_ints(&[1, 2]));
    assert!(a.equals(&b) && b.equals(&a));
    assert!(!a.equals(&boxed_ints(&[1, 3])));
    let empty = Value::Array(Rc::new([]));
    assert!(unboxed_ints(&[]).equals(&empty) && empty.equals(&unboxed_ints(&[])));
    assert!(!unboxed_ints(&[1]).equals(&empty));
}

#[test]
fn maximum_and_argmax_of_reals_keep_first_index_and_skip_nan() {
    let run = |body: &str| {
        outcome(&format!("fn main() -> Int {{ {body} }}"), vec![])
            .unwrap_or_else(|e| panic!("{body}: {e}"))
    };
    assert_eq!(run("argmax([1.0, 3.0, 3.0])"), "1");
    // NaN compares with nothing, so it never becomes the best (nor is displaced).
    assert_eq!(run("argmax([0.0 / 0.0, 1.0, 2.0])"), "0");
    assert_eq!(run("argmax([1.0, 0.0 / 0.0, 2.0])"), "2");
    assert_eq!(
        outcome("fn main() -> Int { maximum(slice([1], 0, 0)) }", vec![]),
        Err("maximum of an empty array".into())
    );
}
