//! The run-time algebra of tangent values (fluxion-ad's `tangent.rs` emits it):
//! `%tzero()` is [`Value::Zero`], the symbolic zero of every tangent type — no length,
//! no constructor, no allocation; `%tplus` adds tangents with that zero as its unit;
//! `%tdense(x, t)` makes every symbolic zero in `t` dense in the shape of the point
//! `x`, which is how a tangent reaches the user.

use std::rc::Rc;

use crate::value::Value;

/// `u + v` for two tangents of one type. Arrays of different lengths and enums of
/// different constructors are errors (the message says which).
pub fn plus(u: &Value, v: &Value) -> Result<Value, String> {
    Ok(match (u, v) {
        (Value::Zero, t) | (t, Value::Zero) => t.clone(),
        (Value::Real(x), Value::Real(y)) => Value::Real(x + y),
        (Value::Unit, Value::Unit) => Value::Unit,
        (Value::Tuple(xs), Value::Tuple(ys)) if xs.len() == ys.len() => {
            Value::Tuple(pairwise(xs, ys)?)
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
            (Some(n), Some(m)) if n == m => Value::array(
                (0..n)
                    .map(|i| {
                        plus(
                            &x.array_get(i).expect("in range"),
                            &y.array_get(i).expect("in range"),
                        )
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
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
        Value::RealArray(xs) => Value::RealArray(vec![0.0; xs.len()].into()),
        Value::Array(xs) => Value::array(xs.iter().map(zero_at).collect()),
        Value::Tuple(xs) => Value::Tuple(xs.iter().map(zero_at).collect()),
        Value::Enum(tag, fields) => Value::Enum(*tag, fields.iter().map(zero_at).collect()),
        _ => Value::Unit,
    }
}

/// `t` with every symbolic zero in it replaced by the dense zero at the matching part
/// of `x`. `t` must have `x`'s lengths and constructors where it is not zero.
pub fn dense(x: &Value, t: &Value) -> Result<Value, String> {
    Ok(match (x, t) {
        (x, Value::Zero) => zero_at(x),
        (Value::Tuple(xs), Value::Tuple(ts)) => Value::Tuple(
            xs.iter()
                .zip(ts.iter())
                .map(|(x, t)| dense(x, t))
                .collect::<Result<Vec<_>, _>>()?
                .into(),
        ),
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
        (_, Value::RealArray(_)) | (_, Value::Real(_)) | (_, Value::Unit) => {
            same_length(x, t)?;
            t.clone()
        }
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
}

fn same_length(x: &Value, t: &Value) -> Result<(), String> {
    match (x.array_len(), t.array_len()) {
        (Some(n), Some(m)) if n != m => {
            Err(format!("a tangent of length {m} at a point of length {n}"))
        }
        _ => Ok(()),
    }
}
