//! Evaluation of primitives (docs/language.md §4): arithmetic with checked `Int`s, the
//! real functions, and the array built-ins (which call closures back).

use std::rc::Rc;

use fluxion_core::{Prim, Span, Type};

use crate::array::ArrayBuilder;
use crate::eval::{EvalResult, Interp, RuntimeError, fail};
use crate::value::{DualArray, Value};

/// Largest array a program may allocate (elements); larger requests are a clean
/// runtime error rather than an allocation failure.
pub use fluxion_core::MAX_ARRAY_LEN;

fn int_overflow<T>(span: Span, op: &str) -> EvalResult<T> {
    fail(span, format!("Int overflow in `{op}`"))
}

/// `n` as an array length, checked against [`MAX_ARRAY_LEN`].
pub(crate) fn length_arg(n: &Value, what: &str, span: Span) -> EvalResult<usize> {
    match n {
        Value::Int(n) if *n < 0 => fail(span, format!("{what}: negative length {n}")),
        Value::Int(n) if *n > MAX_ARRAY_LEN => fail(
            span,
            format!("{what}: length {n} is too large (the limit is {MAX_ARRAY_LEN} elements)"),
        ),
        Value::Int(n) => Ok(*n as usize),
        _ => fail(span, "internal error: length is not an Int"),
    }
}

/// Adds two values of the same type, elementwise for tuples and arrays (arrays of
/// different lengths are an error, always — docs/language.md §4).
pub(crate) fn add_values(a: &Value, b: &Value, span: Span) -> EvalResult<Value> {
    crate::deep(|| {
        Ok(match (a, b) {
            (Value::Real(x), Value::Real(y)) => Value::Real(x + y),
            (Value::Int(x), Value::Int(y)) => match x.checked_add(*y) {
                Some(z) => Value::Int(z),
                None => return int_overflow(span, "+"),
            },
            (Value::Unit, Value::Unit) => Value::Unit,
            (Value::Dual(p, t), Value::Dual(q, u)) => Value::Dual(p + q, t + u),
            (
                Value::Tuple(_) | Value::Dual(..) | Value::RealInt(..),
                Value::Tuple(_) | Value::Dual(..) | Value::RealInt(..),
            ) => Value::tuple(
                a.tuple_fields()
                    .unwrap_or_default()
                    .iter()
                    .zip(b.tuple_fields().unwrap_or_default().iter())
                    .map(|(x, y)| add_values(x, y, span))
                    .collect::<EvalResult<Vec<_>>>()?,
            ),
            (Value::RealArray(xs), Value::RealArray(ys)) if xs.len() == ys.len() => {
                Value::RealArray(xs.iter().zip(ys.iter()).map(|(x, y)| x + y).collect())
            }
            (Value::IntArray(xs), Value::IntArray(ys)) if xs.len() == ys.len() => Value::IntArray(
                xs.iter()
                    .zip(ys.iter())
                    .map(|(x, y)| x.checked_add(*y))
                    .collect::<Option<_>>()
                    .map_or_else(|| int_overflow(span, "+"), Ok)?,
            ),
            (Value::DualArray(xs), Value::DualArray(ys)) if xs.len() == ys.len() => {
                let add = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x + y).collect();
                let sum = DualArray::new(
                    add(xs.primal(), ys.primal()),
                    add(xs.tangent(), ys.tangent()),
                );
                Value::DualArray(Rc::new(sum.expect("equal lengths")))
            }
            (x, y) => match (x.array_len(), y.array_len()) {
                (Some(n), Some(m)) if n == m => Value::array(
                    (0..n)
                        .map(|i| {
                            add_values(
                                &x.array_get(i).expect("in range"),
                                &y.array_get(i).expect("in range"),
                                span,
                            )
                        })
                        .collect::<EvalResult<Vec<_>>>()?,
                ),
                (Some(n), Some(m)) => {
                    return fail(
                        span,
                        format!("sum: arrays of different lengths ({n} and {m})"),
                    );
                }
                _ => return fail(span, "internal error: sum of non-summable values"),
            },
        })
    })
}

/// The sum of no values of a summable type: an array's length is unknown, so the zero
/// of an array type is the empty array (a sum of one or more arrays starts from the
/// first, and never adds this zero to an array of another length).
pub(crate) fn zero_of(ty: &Type) -> Value {
    match ty {
        Type::Int => Value::Int(0),
        Type::Tuple(ts) => Value::tuple(ts.iter().map(zero_of).collect()),
        Type::Array(_) => Value::Array(Rc::new([])),
        Type::Unit => Value::Unit,
        _ => Value::Real(0.0),
    }
}

/// The sum of `terms` of type `ty`. A sum of arrays starts from its first term, so
/// that arrays of different lengths are always an error (the zero of an array type,
/// whose length is unknown, is only the result of a sum of nothing); other sums start
/// from zero, as `sum` over `[Real]` does.
fn sum_of(
    terms: impl Iterator<Item = EvalResult<Value>>,
    ty: &Type,
    span: Span,
) -> EvalResult<Value> {
    let mut acc: Option<Value> = (!has_array(ty)).then(|| zero_of(ty));
    for t in terms {
        let t = t?;
        acc = Some(match acc {
            None => t,
            Some(acc) => add_values(&acc, &t, span)?,
        });
    }
    Ok(acc.unwrap_or_else(|| zero_of(ty)))
}

fn has_array(ty: &Type) -> bool {
    match ty {
        Type::Array(_) => true,
        Type::Tuple(ts) => ts.iter().any(has_array),
        _ => false,
    }
}

fn real(v: &Value) -> f64 {
    match v {
        Value::Real(x) => *x,
        _ => f64::NAN,
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        _ => 0,
    }
}

/// The sum of an `Int` array, checked.
fn sum_ints(xs: &[i64], span: Span) -> EvalResult<Value> {
    match xs.iter().try_fold(0i64, |acc, x| acc.checked_add(*x)) {
        Some(total) => Ok(Value::Int(total)),
        None => int_overflow(span, "+"),
    }
}

/// The index of the first element of `xs` that attains its minimum (`Minimum`) or
/// maximum (otherwise); `None` for an empty array. Elements that do not compare
/// (NaN) never win. Reads the array in place.
fn extreme_index(p: Prim, xs: &Value) -> Option<usize> {
    let pick_lt = p == Prim::Minimum;
    let better = |o: std::cmp::Ordering| if pick_lt { o.is_lt() } else { o.is_gt() };
    match xs {
        Value::IntArray(xs) => {
            let mut best = 0;
            for (i, x) in xs.iter().enumerate().skip(1) {
                if better(x.cmp(&xs[best])) {
                    best = i;
                }
            }
            (!xs.is_empty()).then_some(best)
        }
        Value::RealArray(xs) => {
            let mut best = 0;
            for (i, x) in xs.iter().enumerate().skip(1) {
                if x.partial_cmp(&xs[best]).is_some_and(better) {
                    best = i;
                }
            }
            (!xs.is_empty()).then_some(best)
        }
        xs => {
            let n = xs.array_len().filter(|n| *n > 0)?;
            let mut best = 0;
            let mut best_value = xs.array_get(0)?;
            for i in 1..n {
                let x = xs.array_get(i)?;
                if compare(&x, &best_value).is_some_and(better) {
                    best = i;
                    best_value = x;
                }
            }
            Some(best)
        }
    }
}

/// Compares two numbers (both Int or both Real).
fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Real(x), Value::Real(y)) => x.partial_cmp(y),
        _ => None,
    }
}

impl Interp {
    #[inline(never)]
    pub(crate) fn prim(&self, p: Prim, args: &[Value], ty: &Type, span: Span) -> EvalResult<Value> {
        use Prim::*;
        let a = |i: usize| &args[i];
        Ok(match p {
            Add | Sub | Mul | Div | Rem => return arith(p, a(0), a(1), span),
            Neg => match a(0) {
                Value::Int(i) => match i.checked_neg() {
                    Some(n) => Value::Int(n),
                    None => return int_overflow(span, "-"),
                },
                v => Value::Real(-real(v)),
            },
            Not => Value::Bool(!matches!(a(0), Value::Bool(true))),
            Eq => Value::Bool(a(0).equals(a(1))),
            Ne => Value::Bool(!a(0).equals(a(1))),
            Lt | Le | Gt | Ge => order(p, a(0), a(1)),
            Sin | Cos | Tan | Asin | Acos | Atan | Tanh | Sinh | Cosh | Exp | Log | Log1p
            | Expm1 | Sqrt | Sigmoid | Lgamma | Erf | Floor | Ceil | Digamma | Trigamma => {
                Value::Real(real_fn(p, real(a(0))))
            }
            Abs => match a(0) {
                Value::Int(i) => match i.checked_abs() {
                    Some(n) => Value::Int(n),
                    None => return int_overflow(span, "abs"),
                },
                v => Value::Real(real(v).abs()),
            },
            Pow => Value::Real(real(a(0)).powf(real(a(1)))),
            Polygamma => Value::Real(polygamma(int(a(0)), real(a(1)))),
            Atan2 => Value::Real(real(a(0)).atan2(real(a(1)))),
            // Ties follow the first argument (docs/language.md §5).
            Min => {
                if compare(a(0), a(1)).is_some_and(|o| o.is_le()) {
                    a(0).clone()
                } else {
                    a(1).clone()
                }
            }
            Max => {
                if compare(a(0), a(1)).is_some_and(|o| o.is_ge()) {
                    a(0).clone()
                } else {
                    a(1).clone()
                }
            }
            ToReal => Value::Real(int(a(0)) as f64),
            ToInt => {
                let x = real(a(0));
                // [-2^63, 2^63): every double in it truncates to an Int.
                const TWO_63: f64 = 9_223_372_036_854_775_808.0;
                if !(-TWO_63..TWO_63).contains(&x) {
                    return fail(
                        span,
                        format!(
                            "to_int: {} is out of Int range",
                            fluxion_core::print::format_real(x)
                        ),
                    );
                }
                Value::Int(x.trunc() as i64)
            }
            Length => Value::Int(a(0).array_len().unwrap_or(0) as i64),
            Index => {
                let i = int(a(1));
                let n = a(0).array_len().unwrap_or(0);
                match usize::try_from(i).ok().and_then(|i| a(0).array_get(i)) {
                    Some(v) => v,
                    None => {
                        return fail(
                            span,
                            format!("index {i} out of range for an array of length {n}"),
                        );
                    }
                }
            }
            Build => {
                let n = length_arg(a(0), "build", span)?;
                // The smallest an element can be (an unboxed Int or Real); the builder
                // preallocates for larger elements only if they fit too.
                self.reserve(n * 8, span)?;
                let mut out = ArrayBuilder::within(n, self.memory());
                for i in 0..n {
                    out.push(self.apply(a(1), [Value::Int(i as i64)], span)?);
                }
                out.finish()
            }
            Sumbuild => {
                let n = length_arg(a(0), "sumbuild", span)?;
                let terms = (0..n).map(|i| self.apply(a(1), vec![Value::Int(i as i64)], span));
                sum_of(terms, ty, span)?
            }
            Sum => match a(0) {
                Value::RealArray(xs) => Value::Real(xs.iter().fold(0.0, |acc, x| acc + x)),
                Value::IntArray(xs) => return sum_ints(xs, span),
                Value::DualArray(d) => Value::Dual(
                    d.primal().iter().fold(0.0, |acc, x| acc + x),
                    d.tangent().iter().fold(0.0, |acc, x| acc + x),
                ),
                arr => sum_of(arr.array_iter().map(Ok), ty, span)?,
            },
            Map => {
                let xs = a(1).array_iter();
                let mut out = ArrayBuilder::within(xs.len(), self.memory());
                for x in xs {
                    out.push(self.apply(a(0), [x], span)?);
                }
                out.finish()
            }
            Map2 => {
                let (xs, ys) = (a(1).array_iter(), a(2).array_iter());
                same_length("map2", xs.len(), ys.len(), span)?;
                let mut out = ArrayBuilder::within(xs.len(), self.memory());
                for (x, y) in xs.zip(ys) {
                    out.push(self.apply(a(0), [x, y], span)?);
                }
                out.finish()
            }
            Zip => {
                let (xs, ys) = (a(0), a(1));
                let (n, m) = (xs.array_len().unwrap_or(0), ys.array_len().unwrap_or(0));
                same_length("zip", n, m, span)?;
                match (xs, ys) {
                    // Two arrays of reals are the two halves of an array of pairs.
                    (Value::RealArray(p), Value::RealArray(t)) => Value::DualArray(Rc::new(
                        DualArray::new(p.clone(), t.clone()).expect("equal lengths"),
                    )),
                    // Otherwise one boxed element and one 2-tuple per pair.
                    _ => {
                        self.reserve(n * ZIPPED_PAIR_BYTES, span)?;
                        Value::array_from(
                            xs.array_iter()
                                .zip(ys.array_iter())
                                .map(|(x, y)| Value::tuple(vec![x, y])),
                        )
                    }
                }
            }
            Fold => {
                let mut acc = a(1).clone();
                for x in a(2).array_iter() {
                    acc = self.apply(a(0), [acc, x], span)?;
                }
                acc
            }
            Scan => {
                let mut acc = a(1).clone();
                let xs = a(2).array_iter();
                let mut out = ArrayBuilder::within(xs.len(), self.memory());
                for x in xs {
                    acc = self.apply(a(0), [acc, x], span)?;
                    out.push(acc.clone());
                }
                out.finish()
            }
            Iterate => {
                let n = int(a(0));
                if n < 0 {
                    return fail(span, format!("iterate: negative count {n}"));
                }
                let mut x = a(2).clone();
                for _ in 0..n {
                    x = self.apply(a(1), [x], span)?;
                }
                x
            }
            Replicate => {
                let n = length_arg(a(0), "replicate", span)?;
                self.reserve(n * element_bytes(a(1)), span)?;
                match a(1) {
                    Value::Real(x) => Value::RealArray(vec![*x; n].into()),
                    Value::Int(x) => Value::IntArray(vec![*x; n].into()),
                    Value::Bool(x) => Value::BoolArray(vec![*x; n].into()),
                    Value::Dual(p, t) => Value::DualArray(Rc::new(
                        DualArray::new(vec![*p; n].into(), vec![*t; n].into())
                            .expect("equal lengths"),
                    )),
                    v => Value::Array(vec![v.clone(); n].into()),
                }
            }
            Colour | RowsOf => {
                let offsets = int_list(a(0));
                let out = if p == RowsOf {
                    crate::colouring::rows_of(&offsets)
                } else {
                    let n = match a(2) {
                        Value::Int(n) => *n,
                        _ => 0,
                    };
                    let by_rows = matches!(a(3), Value::Int(1));
                    let limit = match a(4) {
                        Value::Int(k) => *k,
                        _ => 0,
                    };
                    crate::colouring::colour(&offsets, &int_list(a(1)), n, by_rows, limit)
                        .map_err(|message| RuntimeError { span, message })?
                };
                self.reserve(out.len() * 8, span)?;
                Value::IntArray(out.into())
            }
            IntUnion => {
                let (x, y) = (int_list(a(0)), int_list(a(1)));
                self.reserve((x.len() + y.len()) * 8, span)?;
                Value::IntArray(union_sorted(&x, &y).into())
            }
            Range => {
                let n = length_arg(a(0), "range", span)?;
                self.reserve(n * 8, span)?;
                Value::IntArray((0..n as i64).collect())
            }
            Reverse => match a(0) {
                Value::RealArray(xs) => Value::RealArray(xs.iter().rev().copied().collect()),
                Value::IntArray(xs) => Value::IntArray(xs.iter().rev().copied().collect()),
                Value::BoolArray(xs) => Value::BoolArray(xs.iter().rev().copied().collect()),
                Value::DualArray(d) => Value::DualArray(Rc::new(
                    d.map_buffers(|xs| xs.iter().rev().copied().collect()),
                )),
                v => Value::array_from(v.array_iter().rev()),
            },
            Concat => {
                let (n, m) = (a(0).array_len().unwrap_or(0), a(1).array_len().unwrap_or(0));
                if (n + m) as i64 > MAX_ARRAY_LEN {
                    return fail(span, "concat: result too large");
                }
                let first = a(0).array_get(0).or_else(|| a(1).array_get(0));
                self.reserve((n + m) * first.as_ref().map_or(0, element_bytes), span)?;
                Value::array_from(a(0).array_iter().chain(a(1).array_iter()))
            }
            Slice => {
                let n = a(0).array_len().unwrap_or(0) as i64;
                let (start, len) = (int(a(1)), int(a(2)));
                if start < 0 || len < 0 || start.checked_add(len).is_none_or(|end| end > n) {
                    return fail(
                        span,
                        format!("slice({start}, {len}) out of range for an array of length {n}"),
                    );
                }
                let (start, len) = (start as usize, len as usize);
                match a(0) {
                    Value::RealArray(xs) => Value::RealArray(xs[start..start + len].into()),
                    Value::IntArray(xs) => Value::IntArray(xs[start..start + len].into()),
                    Value::BoolArray(xs) => Value::BoolArray(xs[start..start + len].into()),
                    Value::DualArray(d) => {
                        Value::DualArray(Rc::new(d.map_buffers(|xs| xs[start..start + len].into())))
                    }
                    v => Value::array_from(v.array_iter().skip(start).take(len)),
                }
            }
            Maximum | Minimum | Argmax => {
                // The first index that attains the extreme value.
                let Some(best) = extreme_index(p, a(0)) else {
                    return fail(span, format!("{} of an empty array", p.name()));
                };
                if p == Argmax {
                    Value::Int(best as i64)
                } else {
                    a(0).array_get(best).unwrap_or(Value::Unit)
                }
            }
            Grad | ValueAndGrad | Jvp | Vjp | Diff | Jacobian | Hessian | Taylor | Jet
            | Sparsity | SparseJacobian | DeltaVjp | DeltaJacobian | DeltaJvp | DeltaTaylor
            | ChadVjp => {
                return self.differential(p, args, span);
            }
            // Derivative code made ahead of time calls these (`resolved.rs`).
            ChadOf | ClosureCapture | DeltaLift | DeltaOpen | DeltaInputs | DeltaPrimal
            | DeltaGrad | DeltaRows => return self.resolved_prim(p, args, ty, span),
            Delta2Push | Delta2Sum | Delta2Lift | Delta2Open | Delta2Inputs | Delta2Primal
            | Delta2Grad => return self.delta2_prim(p, args, ty, span),
            LinScale => crate::linear::scale(a(0), a(1)),
            LinProj | LinField | LinOneHot | LinEmbed | LinSlice | LinSum | LinIndex => {
                let int = |i: usize| match a(i) {
                    Value::Int(k) => *k,
                    _ => -1,
                };
                use crate::linear as l;
                let r = match p {
                    LinProj => l::proj(a(0), int(1) as usize),
                    LinField => l::field(a(0), int(1) as u32, int(2) as usize),
                    LinOneHot => l::one_hot(int(0), int(1), a(2)),
                    LinEmbed => l::embed(int(0), int(1), a(2)),
                    LinSlice => l::slice(a(0), int(1), int(2)),
                    LinIndex => l::index(a(0), int(1)),
                    _ => l::sum(a(0)),
                };
                r.map_err(|m| RuntimeError { span, message: m })?
            }
            // `%delta` is compiled to `CRhs::Delta`; this serves any other caller.
            DeltaPush => {
                let terms = args.chunks(2).map(|t| (&t[0], &t[1]));
                Value::Int(self.push_delta(terms, span)?)
            }
            DeltaSum => return self.delta_sum(a(0), span),
            DeltaSumbuild => return self.delta_sumbuild(a(0), a(1), span),
            MatchFail => return fail(span, "non-exhaustive match: no arm matches this value"),
            TanZero => Value::Zero,
            TanPlus => {
                crate::tangent::plus(a(0), a(1)).map_err(|m| RuntimeError { span, message: m })?
            }
            TanDense => {
                crate::tangent::dense(a(0), a(1)).map_err(|m| RuntimeError { span, message: m })?
            }
            CheckTangent => {
                check_cotangent(a(0), a(1), span)?;
                Value::Unit
            }
            CheckDirection => {
                check_direction(a(0), a(1), span)?;
                Value::Unit
            }
        })
    }
}

/// The runtime error of a cotangent `w` without the shape of the result `y` it is for
/// (a pullback called with the wrong shape).
pub(crate) fn check_cotangent(y: &Value, w: &Value, span: Span) -> EvalResult<()> {
    same_shape(y, w).or_else(|why| {
        fail(
            span,
            format!("the cotangent does not have the shape of the function's result: {why}"),
        )
    })
}

/// The runtime error of a direction `dx` without the shape of its point `x` (`jvp`,
/// `taylor`), in the forward layer's words whichever way the operator runs.
pub(crate) fn check_direction(x: &Value, dx: &Value, span: Span) -> EvalResult<()> {
    shape_against(x, dx, &DIRECTION_WORDS).or_else(|why| fail(span, why))
}

/// Whether a tangent `t` has the shape of the value `v`: the same constructors and
/// array lengths all the way down (leaves are not compared).
pub(crate) fn same_shape(v: &Value, t: &Value) -> Result<(), String> {
    shape_against(v, t, &SHAPE_WORDS)
}

/// How a shape mismatch is worded: another constructor; an array of length `m` (the
/// tangent's) where the value's has `n`.
pub(crate) struct ShapeWords {
    constructor: &'static str,
    length: fn(usize, usize) -> String,
}

const SHAPE_WORDS: ShapeWords = ShapeWords {
    constructor: "another constructor",
    length: |n, m| format!("an array of length {m} where the result has {n}"),
};

/// A direction against its point (`%check_direction`): the words of the forward
/// layer's `combine` (`ad.rs`), which `jvp` and `taylor` meet in the interpreter.
const DIRECTION_WORDS: ShapeWords = ShapeWords {
    constructor: "the direction of an enum value must have the same constructor",
    length: |n, m| format!("the direction has length {m} but the point has length {n}"),
};

fn shape_against(v: &Value, t: &Value, words: &ShapeWords) -> Result<(), String> {
    crate::deep(|| {
        let same_shape = |x: &Value, y: &Value| shape_against(x, y, words);
        match (v, t) {
            (Value::Enum(a, xs), Value::Enum(b, ys)) => {
                if a != b {
                    return Err(words.constructor.into());
                }
                xs.iter()
                    .zip(ys.iter())
                    .try_for_each(|(x, y)| same_shape(x, y))
            }
            (
                Value::Tuple(_) | Value::Dual(..) | Value::RealInt(..),
                Value::Tuple(_) | Value::Dual(..) | Value::RealInt(..),
            ) => match (v.tuple_fields(), t.tuple_fields()) {
                (Some(xs), Some(ys)) => xs
                    .iter()
                    .zip(ys.iter())
                    .try_for_each(|(x, y)| same_shape(x, y)),
                _ => Ok(()),
            },
            (x, y) => match (x.array_len(), y.array_len()) {
                (Some(n), Some(m)) if n != m => Err((words.length)(n, m)),
                (Some(n), Some(_)) => (0..n).try_for_each(|i| {
                    same_shape(
                        &x.array_get(i).expect("in range"),
                        &y.array_get(i).expect("in range"),
                    )
                }),
                _ => Ok(()),
            },
        }
    })
}

/// The bytes a boxed pair takes in a zipped array: its slot, and the shared tuple
/// (reference counts and two values) it points to.
const ZIPPED_PAIR_BYTES: usize =
    size_of::<Value>() + 2 * size_of::<usize>() + 2 * size_of::<Value>();

/// The bytes an array element like `v` takes in its array's buffer (what a
/// request for n such elements is checked against before it is made).
fn element_bytes(v: &Value) -> usize {
    match v {
        Value::Bool(_) => 1,
        Value::Real(_) | Value::Int(_) => 8,
        Value::Dual(..) | Value::RealInt(..) => 16,
        _ => size_of::<Value>(),
    }
}

fn same_length(what: &str, n: usize, m: usize, span: Span) -> EvalResult<()> {
    if n != m {
        return fail(
            span,
            format!("{what}: arrays of different lengths ({n} and {m})"),
        );
    }
    Ok(())
}

/// `x < y` (or `<=`, `>`, `>=`, as `p` says) on two numbers.
pub(crate) fn order(p: Prim, x: &Value, y: &Value) -> Value {
    use std::cmp::Ordering::*;
    let ord = compare(x, y);
    Value::Bool(match p {
        Prim::Lt => ord == Some(Less),
        Prim::Le => matches!(ord, Some(Less | Equal)),
        Prim::Gt => ord == Some(Greater),
        _ => matches!(ord, Some(Greater | Equal)),
    })
}

/// `+ - * / %` on two reals.
#[inline]
pub(crate) fn real_arith(p: Prim, a: f64, b: f64) -> f64 {
    match p {
        Prim::Add => a + b,
        Prim::Sub => a - b,
        Prim::Mul => a * b,
        Prim::Div => a / b,
        Prim::LinScale => fluxion_core::prim::lscale(a, b),
        _ => a % b,
    }
}

/// `+ - * / %` on two Ints (checked) or two Reals.
pub(crate) fn arith(p: Prim, x: &Value, y: &Value, span: Span) -> EvalResult<Value> {
    use Prim::*;
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => {
            let (a, b) = (*a, *b);
            if matches!(p, Div | Rem) && b == 0 {
                return fail(span, "integer division by zero");
            }
            let r = match p {
                Add => a.checked_add(b),
                Sub => a.checked_sub(b),
                Mul => a.checked_mul(b),
                Div => a.checked_div(b),
                _ => a.checked_rem(b),
            };
            match r {
                Some(r) => Ok(Value::Int(r)),
                None => int_overflow(span, p.operator_symbol().unwrap_or("?")),
            }
        }
        (Value::Real(a), Value::Real(b)) => Ok(Value::Real(real_arith(p, *a, *b))),
        _ if p == LinScale => Ok(crate::linear::scale(x, y)),
        _ => fail(span, "internal error: arithmetic on mismatched values"),
    }
}

/// The real functions of docs/language.md §4.
pub fn real_fn(p: Prim, x: f64) -> f64 {
    use Prim::*;
    match p {
        Sin => x.sin(),
        Cos => x.cos(),
        Tan => x.tan(),
        Asin => x.asin(),
        Acos => x.acos(),
        Atan => x.atan(),
        Tanh => x.tanh(),
        Sinh => x.sinh(),
        Cosh => x.cosh(),
        Exp => x.exp(),
        Log => x.ln(),
        Log1p => x.ln_1p(),
        Expm1 => x.exp_m1(),
        Sqrt => x.sqrt(),
        Sigmoid => 1.0 / (1.0 + (-x).exp()),
        Lgamma => crate::cmath::lgamma(x),
        Erf => crate::cmath::erf(x),
        Floor => x.floor(),
        Ceil => x.ceil(),
        Digamma => digamma(x),
        Trigamma => trigamma(x),
        _ => f64::NAN,
    }
}

/// ψ(x) = d/dx lgamma(x): recurrence ψ(x) = ψ(x+1) - 1/x up to x ≥ 10, then the
/// asymptotic series through the x⁻¹⁶ term (its next term is below 10⁻¹⁸ there);
/// reflection for negative x. Within 4 ulps of max(|ψ(x)|, 1) (mpmath, `x` in
/// [0.25, 1000]); `runtime.c`'s `fx_digamma` takes the same steps in the same order.
fn digamma(mut x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::NAN;
    }
    if x < 0.0 {
        // ψ(1 - x) - ψ(x) = π cot(πx)
        return digamma(1.0 - x) - std::f64::consts::PI / (std::f64::consts::PI * x).tan();
    }
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    // Σ B₂ₖ/(2k x²ᵏ), k = 1..8, by Horner in x⁻².
    let series = inv2
        * (1.0 / 12.0
            - inv2
                * (1.0 / 120.0
                    - inv2
                        * (1.0 / 252.0
                            - inv2
                                * (1.0 / 240.0
                                    - inv2
                                        * (1.0 / 132.0
                                            - inv2
                                                * (691.0 / 32760.0
                                                    - inv2
                                                        * (1.0 / 12.0
                                                            - inv2 * (3617.0 / 8160.0))))))));
    acc + x.ln() - 0.5 * inv - series
}

/// ψ⁽ⁿ⁾(x) for n ≥ 0: digamma for n = 0; otherwise
/// (-1)ⁿ⁺¹ n! Σₖ 1/(x+k)ⁿ⁺¹, summed directly up to x + k ≥ 20 and then by the
/// Euler–Maclaurin tail ∫ + half term + Bernoulli corrections.
fn polygamma(n: i64, x: f64) -> f64 {
    if !(0..=170).contains(&n) {
        return f64::NAN;
    }
    if n == 0 {
        return digamma(x);
    }
    if x <= 0.0 && x == x.floor() {
        return f64::NAN;
    }
    let m = (n + 1) as f64;
    let fact: f64 = (1..=n).map(|i| i as f64).product();
    let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
    let mut sum = 0.0;
    let mut y = x;
    while y < 20.0 {
        sum += y.powf(-m);
        y += 1.0;
    }
    // Tail Σ_{k≥0} (y+k)^-m ≈ y^(1-m)/(m-1) + y^-m/2 + Σ_j B_2j/(2j)! · m(m+1)…(m+2j-2) · y^-(m+2j-1)
    const B: [f64; 6] = [
        1.0 / 6.0,
        -1.0 / 30.0,
        1.0 / 42.0,
        -1.0 / 30.0,
        5.0 / 66.0,
        -691.0 / 2730.0,
    ];
    let mut tail = y.powf(1.0 - m) / (m - 1.0) + 0.5 * y.powf(-m);
    let mut rising = m; // m(m+1)…(m+2j-2)
    let mut fact2j = 2.0; // (2j)!
    for (j, bj) in B.iter().enumerate() {
        let j = j as f64 + 1.0;
        if j > 1.0 {
            rising *= (m + 2.0 * j - 3.0) * (m + 2.0 * j - 2.0);
            fact2j *= (2.0 * j - 1.0) * (2.0 * j);
        }
        tail += bj / fact2j * rising * y.powf(-(m + 2.0 * j - 1.0));
    }
    sign * fact * (sum + tail)
}

/// ψ'(x): recurrence ψ'(x) = ψ'(x+1) + 1/x² up to x ≥ 10, then the asymptotic series
/// through the x⁻¹⁷ term; reflection for negative x. Within 3 ulps (mpmath, `x` in
/// [0.25, 1000]); `runtime.c`'s `fx_trigamma` takes the same steps in the same order.
fn trigamma(mut x: f64) -> f64 {
    if x <= 0.0 && x == x.floor() {
        return f64::NAN;
    }
    if x < 0.0 {
        // ψ'(1 - x) + ψ'(x) = π² / sin²(πx)
        let s = (std::f64::consts::PI * x).sin();
        return -trigamma(1.0 - x) + std::f64::consts::PI * std::f64::consts::PI / (s * s);
    }
    let mut acc = 0.0;
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    // Σ B₂ₖ/x²ᵏ⁺¹, k = 1..8, by Horner in x⁻².
    let series = 1.0 / 6.0
        - inv2
            * (1.0 / 30.0
                - inv2
                    * (1.0 / 42.0
                        - inv2
                            * (1.0 / 30.0
                                - inv2
                                    * (5.0 / 66.0
                                        - inv2
                                            * (691.0 / 2730.0
                                                - inv2 * (7.0 / 6.0 - inv2 * (3617.0 / 510.0)))))));
    acc + inv + 0.5 * inv2 + inv * inv2 * series
}

/// The Ints of an array of Ints (`%union`'s and `%colour`'s arguments).
fn int_list(v: &Value) -> Vec<i64> {
    (0..v.array_len().unwrap_or(0))
        .filter_map(|i| match v.array_get(i) {
            Some(Value::Int(x)) => Some(x),
            _ => None,
        })
        .collect()
}

/// The union of two ascending lists of distinct Ints, ascending (`%union`).
fn union_sorted(x: &[i64], y: &[i64]) -> Vec<i64> {
    let mut out = Vec::with_capacity(x.len() + y.len());
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => {
                out.push(x[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(y[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(x[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&x[i..]);
    out.extend_from_slice(&y[j..]);
    out
}
