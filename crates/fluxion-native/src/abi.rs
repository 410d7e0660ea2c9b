//! The entry ABI's argument and result streams: values as 64-bit words, by type. A
//! `Real` is its bits, an `Int` its value, a `Bool` 0 or 1, `()` nothing; a tuple is
//! its fields, an array its length then its elements, an enum value its constructor's
//! tag then its fields (the C side's `decode_*`/`encode_*` helpers read and write the
//! same layout).

use std::rc::Rc;

use fluxion_core::{Module, Type};
use fluxion_interp::Value;

/// Appends `v` (of type `ty`) to `out`; `None` if the value does not have the type.
pub fn encode(v: &Value, ty: &Type, m: &Module, out: &mut Vec<u64>) -> Option<()> {
    match (ty, v) {
        (Type::Real, Value::Real(x)) => out.push(x.to_bits()),
        (Type::Int, Value::Int(i)) => out.push(*i as u64),
        (Type::Bool, Value::Bool(b)) => out.push(u64::from(*b)),
        (Type::Unit, _) => {}
        (Type::Tuple(ts), v) => {
            let fields = v.tuple_fields()?;
            for (t, f) in ts.iter().zip(fields.iter()) {
                encode(f, t, m, out)?;
            }
        }
        (Type::Array(e), v) => {
            let n = v.array_len()?;
            out.push(n as u64);
            for i in 0..n {
                encode(&v.array_get(i)?, e, m, out)?;
            }
        }
        (Type::Enum(e), Value::Enum(tag, fields)) => {
            out.push(u64::from(*tag));
            let def = m.enum_def(*e);
            let variant = def.variants.get(*tag as usize)?;
            for (t, f) in variant.fields.iter().zip(fields.iter()) {
                encode(f, t, m, out)?;
            }
        }
        _ => return None,
    }
    Some(())
}

/// Reads a value of type `ty` from `words` at `*pos`.
pub fn decode(words: &[u64], pos: &mut usize, ty: &Type, m: &Module) -> Option<Value> {
    let mut next = || {
        let w = words.get(*pos).copied();
        *pos += 1;
        w
    };
    Some(match ty {
        Type::Real => Value::Real(f64::from_bits(next()?)),
        Type::Int => Value::Int(next()? as i64),
        Type::Bool => Value::Bool(next()? != 0),
        Type::Unit => Value::Unit,
        Type::Tuple(ts) => Value::tuple(
            ts.iter()
                .map(|t| decode(words, pos, t, m))
                .collect::<Option<Vec<_>>>()?,
        ),
        Type::Array(e) => {
            let n = usize::try_from(next()?).ok()?;
            if n > words.len() + 1 && !matches!(**e, Type::Unit) {
                return None;
            }
            Value::array(
                (0..n)
                    .map(|_| decode(words, pos, e, m))
                    .collect::<Option<Vec<_>>>()?,
            )
        }
        Type::Enum(e) => {
            let tag = u32::try_from(next()?).ok()?;
            let def = m.enum_def(*e);
            let fields = def.variants.get(tag as usize)?.fields.clone();
            let vals: Vec<Value> = fields
                .iter()
                .map(|t| decode(words, pos, t, m))
                .collect::<Option<Vec<_>>>()?;
            Value::Enum(tag, Rc::from(vals))
        }
        Type::Fn(..) => return None,
    })
}
