//! The run-time algebra of tangent values (fluxion-ad's `tangent.rs` emits it):
//! `%tzero()` is [`Value::Zero`], the symbolic zero of every tangent type — no length,
//! no constructor, no allocation; `%tplus` adds tangents with that zero as its unit;
//! `%tdense(x, t)` makes every symbolic zero in `t` dense in the shape of the point
//! `x`, which is how a tangent reaches the user.

use std::borrow::Cow;
use std::rc::Rc;

use crate::value::{DualArray, Value};

/// The elements of an array of reals, a boxed one's symbolic zeros as `-0.0` — as
/// compiled code holds every array of reals (a real's zero is `-0.0` there), whose
/// sum of two dense arrays is made at once: so that both backends associate sums of
/// array cotangents alike (the `TanPlus` helper of fluxion-native's `types.rs`).
///
/// A boxed array must hold a real: one of symbolic zeros alone may be of any type's
/// tangents (closures' among them); [`plus`] returns the other summand for it.
fn reals_of(v: &Value) -> Option<Cow<'_, [f64]>> {
    match v {
        Value::RealArray(xs) => Some(Cow::Borrowed(xs)),
        Value::Array(vs) if vs.iter().any(|e| matches!(e, Value::Real(_))) => vs
            .iter()
            .map(|e| match e {
                Value::Real(x) => Some(*x),
                Value::Zero => Some(-0.0),
                _ => None,
            })
            .collect::<Option<Vec<f64>>>()
            .map(Cow::Owned),
        _ => None,
    }
}

/// Whether `v` is a boxed array of symbolic zeros.
fn all_zeros(v: &Value) -> bool {
    matches!(v, Value::Array(vs) if vs.iter().all(|e| matches!(e, Value::Zero)))
}

/// `u + v` for two tangents of one type. Arrays of different lengths and enums of
/// different constructors are errors (the message says which).
///
/// A sum involving a lazy array cotangent (`linear.rs`) is itself left lazy: O(1),
/// forced once when read. Two dense arrays are added at once, element by element, as
/// compiled code adds them (so both associate the additions alike).
pub fn plus(u: &Value, v: &Value) -> Result<Value, String> {
    crate::deep(|| {
        Ok(match (u, v) {
            (Value::Zero, t) | (t, Value::Zero) => t.clone(),
            (Value::Lazy(_), _) | (_, Value::Lazy(_)) => crate::linear::lazy_sum(u, v),
            (Value::Array(_), _) | (_, Value::Array(_))
                if u.array_len().is_some() && v.array_len().is_some() =>
            {
                let same_length = u.array_len() == v.array_len();
                // An array of symbolic zeros adds nothing (compiled code adds its
                // -0.0s, which changes no bit of the other).
                if same_length && all_zeros(u) {
                    v.clone()
                } else if same_length && all_zeros(v) {
                    u.clone()
                } else {
                    match (reals_of(u), reals_of(v)) {
                        (Some(xs), Some(ys)) if same_length => {
                            Value::RealArray(xs.iter().zip(ys.iter()).map(|(x, y)| x + y).collect())
                        }
                        // Two dense arrays are added at once, element by element, as
                        // compiled code adds them (a lazy sum is forced right to left,
                        // which would associate the sums differently).
                        _ if same_length => elementwise(u, v)?,
                        _ => crate::linear::lazy_sum(u, v),
                    }
                }
            }
            (Value::Real(x), Value::Real(y)) => Value::Real(x + y),
            (Value::Unit, Value::Unit) => Value::Unit,
            (Value::Dual(p, t), Value::Dual(q, u)) => Value::Dual(p + q, t + u),
            (Value::DualArray(a), Value::DualArray(b)) if a.len() == b.len() => {
                let add = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(x, y)| x + y).collect();
                Value::DualArray(Rc::new(
                    DualArray::new(add(a.primal(), b.primal()), add(a.tangent(), b.tangent()))
                        .expect("equal lengths"),
                ))
            }
            // A tuple of either representation (a pair of reals may be `Dual`).
            (x, y) if x.tuple_fields().is_some() && y.tuple_fields().is_some() => {
                let (xs, ys) = (
                    x.tuple_fields().expect("tuple"),
                    y.tuple_fields().expect("tuple"),
                );
                if xs.len() != ys.len() {
                    return Err("internal error: adding tuples of different sizes".into());
                }
                Value::tuple(pairwise(&xs, &ys)?.to_vec())
            }
            (Value::Enum(a, xs), Value::Enum(b, ys)) => {
                if a != b {
                    return Err("tangents of an enum with different constructors".into());
                }
                Value::Enum(*a, pairwise(xs, ys)?)
            }
            (Value::RealArray(xs), Value::RealArray(ys)) if xs.len() == ys.len() => {
                Value::RealArray(xs.iter().zip(ys.iter()).map(|(x, y)| x + y).collect())
            }
            (x, y) => match (x.array_len(), y.array_len()) {
                (Some(n), Some(m)) if n == m => elementwise(x, y)?,
                (Some(n), Some(m)) => {
                    return Err(format!(
                        "tangents of arrays of different lengths ({n} and {m})"
                    ));
                }
                _ => {
                    return Err(
                        "internal error: adding values that are not tangents of one type".into(),
                    );
                }
            },
        })
    })
}

/// Two arrays of one length added element by element.
fn elementwise(x: &Value, y: &Value) -> Result<Value, String> {
    let n = x.array_len().unwrap_or(0);
    Ok(Value::array(
        (0..n)
            .map(|i| {
                plus(
                    &x.array_get(i).expect("in range"),
                    &y.array_get(i).expect("in range"),
                )
            })
            .collect::<Result<Vec<_>, _>>()?,
    ))
}

fn pairwise(xs: &[Value], ys: &[Value]) -> Result<Rc<[Value]>, String> {
    Ok(xs
        .iter()
        .zip(ys)
        .map(|(x, y)| plus(x, y))
        .collect::<Result<Vec<_>, _>>()?
        .into())
}

/// The dense zero tangent at the point `x`: reals 0.0, `Int`/`Bool`/`()` leaves `()`,
/// x's lengths and constructors.
pub fn zero_at(x: &Value) -> Value {
    match x {
        Value::Real(_) => Value::Real(0.0),
        Value::Dual(..) => Value::Dual(0.0, 0.0),
        Value::RealArray(xs) => Value::RealArray(vec![0.0; xs.len()].into()),
        Value::DualArray(a) => {
            let zeros: Rc<[f64]> = vec![0.0; a.len()].into();
            Value::DualArray(Rc::new(
                DualArray::new(zeros.clone(), zeros).expect("equal lengths"),
            ))
        }
        Value::Array(xs) => Value::array(xs.iter().map(zero_at).collect()),
        // The tangent of an `Int` or `Bool` is `()`: an array of as many units.
        Value::IntArray(xs) => Value::Array(vec![Value::Unit; xs.len()].into()),
        Value::BoolArray(xs) => Value::Array(vec![Value::Unit; xs.len()].into()),
        Value::Tuple(xs) => Value::tuple(xs.iter().map(zero_at).collect()),
        Value::RealInt(..) => Value::tuple(vec![Value::Real(0.0), Value::Unit]),
        Value::Enum(tag, fields) => Value::Enum(*tag, fields.iter().map(zero_at).collect()),
        // A closure's cotangent is that of its captures (CHAD's `FnCt`): zero is the
        // symbolic zero, whichever closure it is.
        Value::Closure(_) => Value::Zero,
        _ => Value::Unit,
    }
}

/// `buf` with each -0.0 made 0.0, if it holds one.
fn positive_zeros(buf: &Rc<[f64]>) -> Option<Rc<[f64]>> {
    buf.iter()
        .any(|x| *x == 0.0 && x.is_sign_negative())
        .then(|| buf.iter().map(|x| x + 0.0).collect())
}

/// `t` with every symbolic zero in it replaced by the dense zero at the matching part
/// of `x`, and every real `r` as `r + 0.0` (a -0.0 becomes 0.0), as natively, where
/// -0.0 is the symbolic zero of a real. `t` must have `x`'s lengths and constructors
/// where it is not zero.
pub fn dense(x: &Value, t: &Value) -> Result<Value, String> {
    crate::deep(|| {
        if let Value::Lazy(_) = t {
            return dense(x, &crate::linear::force(t)?);
        }
        Ok(match (x, t) {
            (x, Value::Zero) => zero_at(x),
            (_, Value::Dual(p, d)) => Value::Dual(p + 0.0, d + 0.0),
            (x, Value::Tuple(ts)) if x.tuple_fields().is_some() => {
                let xs = x.tuple_fields().expect("tuple");
                Value::tuple(
                    xs.iter()
                        .zip(ts.iter())
                        .map(|(x, t)| dense(x, t))
                        .collect::<Result<Vec<_>, _>>()?,
                )
            }
            (Value::Enum(a, xs), Value::Enum(b, ts)) => {
                if a != b {
                    return Err("a tangent with another constructor than its point".into());
                }
                Value::Enum(
                    *a,
                    xs.iter()
                        .zip(ts.iter())
                        .map(|(x, t)| dense(x, t))
                        .collect::<Result<Vec<_>, _>>()?
                        .into(),
                )
            }
            (_, Value::Real(r)) => {
                same_length(x, t)?;
                Value::Real(r + 0.0)
            }
            (_, Value::RealArray(a)) => {
                same_length(x, t)?;
                positive_zeros(a).map_or_else(|| t.clone(), Value::RealArray)
            }
            (_, Value::DualArray(d)) => {
                same_length(x, t)?;
                match (positive_zeros(d.primal()), positive_zeros(d.tangent())) {
                    (None, None) => t.clone(),
                    (p, q) => {
                        let p = p.unwrap_or_else(|| d.primal().clone());
                        let q = q.unwrap_or_else(|| d.tangent().clone());
                        Value::DualArray(Rc::new(DualArray::new(p, q).expect("same lengths")))
                    }
                }
            }
            (_, Value::Unit) => t.clone(),
            (x, t) => {
                same_length(x, t)?;
                match (x.array_len(), t.array_len()) {
                    (Some(n), Some(_)) => Value::array(
                        (0..n)
                            .map(|i| {
                                dense(
                                    &x.array_get(i).expect("in range"),
                                    &t.array_get(i).expect("in range"),
                                )
                            })
                            .collect::<Result<Vec<_>, _>>()?,
                    ),
                    _ => t.clone(),
                }
            }
        })
    })
}

fn same_length(x: &Value, t: &Value) -> Result<(), String> {
    match (x.array_len(), t.array_len()) {
        (Some(n), Some(m)) if n != m => {
            Err(format!("a tangent of length {m} at a point of length {n}"))
        }
        _ => Ok(()),
    }
}
