//! The run-time side of reverse over reverse under `--ad delta` (fluxion-ad's
//! `delta_twice.rs` is the translation; native code's `runtime.c` has the same steps as
//! `fx_tape2_*`): the second tape, whose coefficients are outer pairs, and the walks
//! between `Δₒ(A)` and `Δₒ(Δᵢ(A))`. A real of twice-translated code is the value
//! `((x, outer id), inner id)`; the walks find it where a delta-translated type has
//! `(Real, Int)`, which in such a type is always a translated real.

use fluxion_core::{Prim, Span, Type};

use crate::delta::{fields_of, id_of_int, map_leaves, pair, zip_leaves};
use crate::eval::{EvalResult, Interp, fail};
use crate::tape::{DeltaId, Outer, Tape2};
use crate::value::Value;

/// An outer pair `(x, id)` as its parts.
fn outer_of(v: &Value) -> Outer {
    match v {
        Value::RealInt(x, i) => (*x, DeltaId(*i as u32)),
        _ => (0.0, DeltaId::ZERO),
    }
}

/// A twice-translated real `((x, outer id), inner id)` as its two parts.
fn parts_of(v: &Value) -> (Value, DeltaId) {
    let outer = v.tuple_get(0).unwrap_or(Value::Unit);
    let inner = match v.tuple_get(1) {
        Some(Value::Int(i)) => DeltaId(i as u32),
        _ => DeltaId::ZERO,
    };
    (outer, inner)
}

fn twice(outer: Value, inner: DeltaId) -> Value {
    Value::Tuple(vec![outer, Value::Int(inner.0 as i64)].into())
}

impl Interp {
    /// A `%delta2…` primitive; `ty` is `resolved::walk_types`'s.
    pub(crate) fn delta2_prim(
        &self,
        p: Prim,
        args: &[Value],
        ty: &Type,
        span: Span,
    ) -> EvalResult<Value> {
        let m = self.module();
        let fields = |e, tag| fields_of(&m, e, tag);
        let mut tapes2 = self.tapes2.borrow_mut();
        match p {
            Prim::Delta2Open => {
                tapes2.push(Tape2::new());
                Ok(Value::Int(tapes2.len() as i64 - 1))
            }
            Prim::Delta2Lift => {
                let r: Result<Value, std::convert::Infallible> =
                    map_leaves(&args[0], ty, true, &fields, &mut |v, t| {
                        Ok(match t {
                            Type::Tuple(_) => twice(v.clone(), DeltaId::ZERO),
                            _ => v.clone(),
                        })
                    });
                Ok(r.unwrap_or_else(|never| match never {}))
            }
            Prim::Delta2Primal => map_leaves(&args[0], ty, true, &fields, &mut |v, t| {
                Ok(match t {
                    Type::Tuple(_) => parts_of(v).0,
                    _ => v.clone(),
                })
            }),
            Prim::Delta2Inputs => {
                let Some(tape) = tapes2.last_mut() else {
                    return fail(span, "internal error: `%delta2_inputs` without a tape");
                };
                map_leaves(&args[0], ty, true, &fields, &mut |v, t| {
                    Ok(match t {
                        Type::Tuple(_) if tape.len() >= u32::MAX as usize => {
                            return fail(span, TOO_MANY);
                        }
                        Type::Tuple(_) => twice(v.clone(), tape.input()),
                        _ => v.clone(),
                    })
                })
            }
            Prim::Delta2Push => {
                let Some(tape) = tapes2.last_mut() else {
                    return fail(span, "internal error: a delta outside a reverse pass");
                };
                if tape.len() >= u32::MAX as usize {
                    return fail(span, TOO_MANY);
                }
                let terms = args.chunks(2).map(|t| (outer_of(&t[0]), id_of_int(&t[1])));
                Ok(Value::Int(tape.push(terms).0 as i64))
            }
            Prim::Delta2Sum => {
                let Some(tape) = tapes2.last_mut() else {
                    return fail(span, "internal error: a delta outside a reverse pass");
                };
                let mut total = 0.0;
                let (mut outer_ids, mut inner_ids) = (Vec::new(), Vec::new());
                for v in args[0].array_iter() {
                    let (o, i) = parts_of(&v);
                    let (x, oid) = outer_of(&o);
                    total += x;
                    outer_ids.push((1.0, oid));
                    inner_ids.push(((1.0, DeltaId::ZERO), i));
                }
                if outer_ids.is_empty() {
                    return Ok(twice(pair(total, DeltaId::ZERO), DeltaId::ZERO));
                }
                let mut tapes = self.tapes.borrow_mut();
                let Some(outer) = tapes.last_mut() else {
                    return fail(span, "internal error: a delta outside a reverse pass");
                };
                if tape.len() >= u32::MAX as usize || outer.len() >= u32::MAX as usize {
                    return fail(span, TOO_MANY);
                }
                let oid = outer.push(outer_ids);
                Ok(twice(pair(total, oid), tape.push(inner_ids)))
            }
            Prim::Delta2Grad => {
                let Type::Tuple(tys) = ty else {
                    return fail(span, "internal error: `%delta2_grad` without its types");
                };
                let (tb, ta) = (&tys[0], &tys[1]);
                let mark = match &args[0] {
                    Value::Int(i) => *i as usize,
                    _ => return fail(span, "internal error: `%delta2_grad` without its tape"),
                };
                if tapes2.len() != mark + 1 {
                    return fail(span, "internal error: `%delta2_grad` of another tape");
                }
                let mut seeds = Vec::new();
                zip_leaves(&m, &args[1], &args[2], tb, true, &mut |r, w| {
                    seeds.push((parts_of(r).1, outer_of(w)))
                });
                let mut tapes = self.tapes.borrow_mut();
                let Some(outer) = tapes.last_mut() else {
                    return fail(span, "internal error: a delta outside a reverse pass");
                };
                // At most one outer node per seed and per term swept.
                let nodes = seeds.len() + tapes2[mark].terms();
                if outer.len() + nodes >= u32::MAX as usize {
                    return fail(span, TOO_MANY);
                }
                let adjoint = tapes2[mark].backward(seeds, outer);
                tapes2.truncate(mark);
                map_leaves(&args[3], ta, true, &fields, &mut |v, t| {
                    Ok(match t {
                        Type::Tuple(_) => {
                            let (x, id) = adjoint[parts_of(v).1.0 as usize];
                            pair(x, id)
                        }
                        _ => Value::Unit,
                    })
                })
            }
            _ => fail(
                span,
                format!(
                    "internal error: `{}` is not a second-tape primitive",
                    p.name()
                ),
            ),
        }
    }
}

const TOO_MANY: &str = "the reverse pass needs more than 2^32 deltas";
