//! The run-time side of `--ad delta` ([Delta] §7; `fluxion-ad`'s `delta.rs` is the
//! translation): the tapes, the primitives translated code calls (`%delta`,
//! `%delta_sum`), and the operators `%delta_vjp` (one reverse pass),
//! `%delta_jacobian` (one run, a sweep per output) and
//! `%delta_jvp`/`%delta_taylor` (a forward layer inside delta-translated code).
//!
//! A `%delta_vjp` opens its own tape, so operators nest: an inner one's tape lives
//! on top of the outer one's while it runs, and its deltas never mix with the outer
//! tape's ids (the translation never lets a translated value cross into another run).

use std::rc::Rc;

use fluxion_core::verify::differentiated_argument;
use fluxion_core::{CodeId, Module, Span, Type, TypeMap};

use crate::ad::{coefficient, real_of, split_args};
use crate::array::ArrayBuilder;
use crate::eval::{EvalResult, Interp, RuntimeError, fail};
use crate::tape::{COLUMNS, DeltaId, Tape};
use crate::value::{Closure, Value};

/// A translated real: `(primal, delta id)`.
pub(crate) fn pair(x: f64, id: DeltaId) -> Value {
    Value::RealInt(x, id.0 as i64)
}

pub(crate) fn id_of(v: &Value) -> DeltaId {
    match v {
        Value::RealInt(_, i) => DeltaId(*i as u32),
        _ => match v.tuple_get(1) {
            Some(Value::Int(i)) => DeltaId(i as u32),
            _ => DeltaId::ZERO,
        },
    }
}

/// A delta id given as an `Int` (a `%delta` operand).
pub(crate) fn id_of_int(v: &Value) -> DeltaId {
    match v {
        Value::Int(i) => DeltaId(*i as u32),
        _ => DeltaId::ZERO,
    }
}

/// The real of a pair `(Real, Int)`.
fn real_part(v: &Value) -> f64 {
    match v {
        Value::RealInt(x, _) => *x,
        v => v.tuple_get(0).as_ref().map_or(0.0, real_of),
    }
}

/// The innermost tape, or the fault of a delta outside a reverse pass.
fn open_tape(tapes: &mut [Tape], span: Span) -> EvalResult<&mut Tape> {
    match tapes.last_mut() {
        Some(tape) if tape.len() >= u32::MAX as usize => {
            fail(span, "the reverse pass needs more than 2^32 deltas")
        }
        Some(tape) => Ok(tape),
        None => fail(span, "internal error: a delta outside a reverse pass"),
    }
}

/// The field types of constructor `tag` of enum `e`.
pub(crate) fn fields_of(m: &Module, e: fluxion_core::EnumId, tag: u32) -> Vec<Type> {
    m.enum_def(e).variants[tag as usize].fields.clone()
}

impl Interp {
    /// `%delta(c₁, id₁, …)` on operands `(cᵢ, idᵢ)`: the new entry's id.
    pub(crate) fn push_delta<'v>(
        &self,
        terms: impl Iterator<Item = (&'v Value, &'v Value)>,
        span: Span,
    ) -> EvalResult<i64> {
        let mut tapes = self.tapes.borrow_mut();
        let tape = open_tape(&mut tapes, span)?;
        let terms = terms.map(|(c, id)| (real_of(c), id_of_int(id)));
        Ok(tape.push(terms).0 as i64)
    }

    /// `%delta_sum(a)`: one entry on the current tape for the whole sum.
    pub(crate) fn delta_sum(&self, a: &Value, span: Span) -> EvalResult<Value> {
        let mut tapes = self.tapes.borrow_mut();
        let tape = open_tape(&mut tapes, span)?;
        let mut total = 0.0;
        let mut ids = Vec::with_capacity(a.array_len().unwrap_or(0));
        for v in a.array_iter() {
            total += real_part(&v);
            ids.push((1.0, id_of(&v)));
        }
        let id = if ids.is_empty() {
            DeltaId::ZERO
        } else {
            tape.push(ids)
        };
        Ok(pair(total, id))
    }

    /// `%delta_sumbuild(n, f)`: `%delta_sum(build(n, f))`, each element's entries swept
    /// as soon as it is made (seeded with 1) and dropped, the sum one entry on the ids
    /// below them, each with its summed adjoint (preaccumulation). Inside another
    /// element (the accumulator is in use), the elements stay on the tape as
    /// `%delta_sum(build(n, f))` leaves them.
    pub(crate) fn delta_sumbuild(&self, n: &Value, f: &Value, span: Span) -> EvalResult<Value> {
        let n = crate::prims::length_arg(n, "sumbuild", span)?;
        let nested = self.preaccumulating.replace(true);
        let result = if nested {
            self.sum_elements(n, f, span)
        } else {
            self.preaccumulate(n, f, span)
        };
        self.preaccumulating.set(nested);
        result
    }

    /// The elements of `build(n, f)` left on the tape, and `%delta_sum`'s entry.
    fn sum_elements(&self, n: usize, f: &Value, span: Span) -> EvalResult<Value> {
        // What the `build` it stands for reserved (natively, its ids' array).
        self.reserve(n * 8, span)?;
        let mut total = 0.0;
        let mut ids = Vec::with_capacity(n);
        for i in 0..n {
            let v = self.apply(f, [Value::Int(i as i64)], span)?;
            total += real_part(&v);
            ids.push((1.0, id_of(&v)));
        }
        let mut tapes = self.tapes.borrow_mut();
        let tape = open_tape(&mut tapes, span)?;
        let id = if ids.is_empty() {
            DeltaId::ZERO
        } else {
            tape.push(ids)
        };
        Ok(pair(total, id))
    }

    /// Each element of `build(n, f)` swept into the sum's coefficients, then dropped.
    fn preaccumulate(&self, n: usize, f: &Value, span: Span) -> EvalResult<Value> {
        let mark = open_tape(&mut self.tapes.borrow_mut(), span)?.len();
        let mut acc = crate::tape::Preaccumulated::default();
        let mut total = 0.0;
        for i in 0..n {
            let v = self.apply(f, [Value::Int(i as i64)], span)?;
            total += real_part(&v);
            let id = id_of(&v);
            let mut tapes = self.tapes.borrow_mut();
            let tape = open_tape(&mut tapes, span)?;
            if id.0 as usize >= mark {
                tape.sweep_into(mark, id, &mut acc);
            } else {
                acc.add(id, 1.0);
            }
            tape.truncate(mark);
        }
        let mut tapes = self.tapes.borrow_mut();
        let tape = open_tape(&mut tapes, span)?;
        Ok(pair(total, tape.push(acc.terms())))
    }

    /// `%delta_vjp(f, x, w) = (f(x), wᵀ·J)`: `f` translated by the delta layer and run
    /// on a fresh tape whose inputs are the reals of `x`; one backward sweep from `w`.
    pub(crate) fn delta_vjp(&self, args: &[Value], span: Span) -> EvalResult<Value> {
        self.on_fresh_tape(&args[0], &args[1], span, |m, tape, run| {
            let y = coefficient(m, &run.result, &run.ret, 0);
            crate::prims::check_cotangent(&y, &args[2], span)?;
            let mut seeds = Vec::new();
            seed(m, &run.result, &args[2], &run.ret, &mut seeds);
            let adjoint = tape.backward(seeds);
            let g = gradient(m, &run.point, &run.a, &adjoint);
            Ok(Value::tuple(vec![y, g]))
        })
    }

    /// `%delta_jacobian(f, x)`: `f` translated by the delta layer and run once on a
    /// fresh tape whose inputs are the reals of `x: [Real]`; one sweep per real of the
    /// result, seeded with 1 there, gives its row (the bits of `%delta_vjp(f, x, eᵢ)`:
    /// the same tape, and a zero seed adds nothing) — or, with fewer inputs than
    /// outputs, forward sweeps by columns ([`rows`]), whose sums run in another order.
    pub(crate) fn delta_jacobian(&self, args: &[Value], span: Span) -> EvalResult<Value> {
        self.on_fresh_tape(&args[0], &args[1], span, |m, tape, run| {
            Ok(rows(m, tape, &run.result, &run.point, &run.a))
        })
    }

    /// The reverse operators' shared steps: the closure `f` translated by the delta
    /// layer, a fresh tape opened, `x`'s reals its inputs, the call, then `sweep` on the
    /// tape; the tape is dropped after, whatever `sweep` returns.
    fn on_fresh_tape(
        &self,
        f: &Value,
        x: &Value,
        span: Span,
        sweep: impl FnOnce(&Module, &Tape, &Recorded) -> EvalResult<Value>,
    ) -> EvalResult<Value> {
        let clo = Self::closure_of(f, span)?;
        let (params, ret) = self.signature(clo.code, span)?;
        let a = differentiated_argument(&params);
        let translated = self.translate(clo, TypeMap::Delta, span)?;
        self.tapes.borrow_mut().push(Tape::new());
        let run = (|| {
            let point = {
                let m = self.module();
                let mut tapes = self.tapes.borrow_mut();
                let tape = tapes.last_mut().expect("the tape was just opened");
                inputs(&m, x, &a, tape)
            };
            let args = split_args(point.clone(), params.len(), span)?;
            let result = self.apply(&translated, args, span)?;
            let recorded = Recorded {
                point,
                result,
                a,
                ret,
            };
            let tapes = self.tapes.borrow();
            let tape = tapes.last().expect("the tape is open");
            sweep(&self.module(), tape, &recorded)
        })();
        self.tapes.borrow_mut().pop();
        run
    }

    /// `%delta_jvp(f, x, dx)` (`layer` Fwd) or `%delta_taylor(f, x, v, k)` inside
    /// delta-translated code: `f` is a translated closure, so the forward layer goes
    /// under the delta layer, on `f`'s original code: `Δ(L(code))`.
    pub(crate) fn delta_push_forward(
        &self,
        args: &[Value],
        layer: TypeMap,
        span: Span,
    ) -> EvalResult<Value> {
        let clo = Self::closure_of(&args[0], span)?;
        let original = self.original_of(clo.code, span)?;
        let (params, ret) = self.signature(original, span)?;
        let a = differentiated_argument(&params);
        let f = self.delta_of_layer(clo, layer, span)?;
        let point = {
            let m = self.module();
            combine(&m, &args[1], &args[2], &a, layer)
                .map_err(|message| RuntimeError { span, message })?
        };
        let result = self.apply(&f, split_args(point, params.len(), span)?, span)?;
        let m = self.module();
        let y = coefficient(&m, &result, &ret, 0);
        Ok(match layer {
            TypeMap::Taylor(k) => Value::tuple(vec![
                y,
                Value::array(
                    (1..k.coefficients())
                        .map(|j| coefficient(&m, &result, &ret, j))
                        .collect(),
                ),
            ]),
            _ => Value::tuple(vec![y, coefficient(&m, &result, &ret, 1)]),
        })
    }

    /// The code a derived code translates.
    fn original_of(&self, code: CodeId, span: Span) -> EvalResult<CodeId> {
        match self.module().translated_from.get(&code) {
            Some(c) => Ok(*c),
            None => fail(
                span,
                "internal error: a delta-translated closure without its original",
            ),
        }
    }

    /// A delta-translated closure `(Δ(c), env)` as `(Δ(L(c)), env lifted)`: every real
    /// of the environment gets a zero `L`-perturbation (the operator differentiates
    /// with respect to its argument only).
    ///
    /// A translation specialised to primal captures (`Module::primal_captures`) holds
    /// those as the original's values: they are lifted by the delta layer first, as
    /// the plain translation's closure would hold them.
    fn delta_of_layer(&self, clo: &Closure, layer: TypeMap, span: Span) -> EvalResult<Value> {
        let original = self.original_of(clo.code, span)?;
        let code = self.translate_code(original, layer, span)?;
        let code = self.translate_code(code, TypeMap::Delta, span)?;
        let primal = self
            .module()
            .primal_captures
            .get(&clo.code)
            .cloned()
            .unwrap_or_default();
        let mut env = Vec::with_capacity(clo.env.len());
        for (i, (v, t)) in clo
            .env
            .iter()
            .zip(&self.capture_types(original))
            .enumerate()
        {
            let v = if primal.contains(&i) {
                let dt = self.module_mut().map_type(t, TypeMap::Delta);
                self.lift(v, &dt, TypeMap::Delta, span)?
            } else {
                v.clone()
            };
            env.push(self.lift_under_delta(&v, t, layer, span)?);
        }
        Ok(Value::Closure(Rc::new(Closure { code, env })))
    }

    /// `v: Δ(t)` as `Δ(L(t))` with zero `L`-perturbation.
    fn lift_under_delta(
        &self,
        v: &Value,
        t: &Type,
        layer: TypeMap,
        span: Span,
    ) -> EvalResult<Value> {
        let fields = |e, tag| fields_of(&self.module(), e, tag);
        map_leaves(v, t, false, &fields, &mut |v, t| {
            Ok(match (t, v) {
                (Type::Real, _) => leaf(v.clone(), pair(0.0, DeltaId::ZERO), layer),
                (Type::Fn(..), Value::Closure(c)) => self.delta_of_layer(c, layer, span)?,
                _ => v.clone(),
            })
        })
    }
}

/// `v: t` with `leaf` applied to each of its leaves (`Real`, `Int`, `Bool`, `()`,
/// functions, and with `pairs` the delta layer's reals `(Real, Int)`) and its tuples,
/// arrays and enum values rebuilt around the results; `fields` gives an enum
/// constructor's field types.
pub(crate) fn map_leaves<E>(
    v: &Value,
    t: &Type,
    pairs: bool,
    fields: &dyn Fn(fluxion_core::EnumId, u32) -> Vec<Type>,
    leaf: &mut dyn FnMut(&Value, &Type) -> Result<Value, E>,
) -> Result<Value, E> {
    crate::deep(|| {
        Ok(match t {
            Type::Tuple(ts) if pairs && ts.as_slice() == [Type::Real, Type::Int] => leaf(v, t)?,
            Type::Tuple(ts) => {
                let vs = v.tuple_fields().unwrap_or_default();
                let mut out = Vec::with_capacity(ts.len());
                for (v, t) in vs.iter().zip(ts) {
                    out.push(map_leaves(v, t, pairs, fields, leaf)?);
                }
                Value::tuple(out)
            }
            Type::Array(t) => {
                let mut out = ArrayBuilder::with_capacity(v.array_len().unwrap_or(0));
                for v in v.array_iter() {
                    out.push(map_leaves(&v, t, pairs, fields, leaf)?);
                }
                out.finish()
            }
            Type::Enum(e) => match v {
                Value::Enum(tag, vs) => {
                    let tys = fields(*e, *tag);
                    let mut out = Vec::with_capacity(tys.len());
                    for (v, t) in vs.iter().zip(&tys) {
                        out.push(map_leaves(v, t, pairs, fields, leaf)?);
                    }
                    Value::Enum(*tag, out.into())
                }
                other => other.clone(),
            },
            _ => leaf(v, t)?,
        })
    })
}

/// `x: A` as `Δ(A)` with a fresh input id for each real.
pub(crate) fn inputs(m: &Module, x: &Value, ty: &Type, tape: &mut Tape) -> Value {
    let fields = |e, tag| fields_of(m, e, tag);
    let lifted: Result<Value, std::convert::Infallible> =
        map_leaves(x, ty, false, &fields, &mut |v, t| {
            Ok(match t {
                Type::Real => pair(real_of(v), tape.input()),
                _ => v.clone(),
            })
        });
    lifted.unwrap_or_else(|never| match never {})
}

/// The seeds `(id, w)` of the output `y: Δ(B)` from its cotangent `w: T(B)`, which
/// has `y`'s shape (checked by `same_shape` first; the types check the rest).
pub(crate) fn seed(m: &Module, y: &Value, w: &Value, ty: &Type, out: &mut Vec<(DeltaId, f64)>) {
    zip_leaves(m, y, w, ty, false, &mut |y, w| {
        out.push((id_of(y), real_of(w)))
    });
}

/// A run of a delta-translated function on its tape: the inputs, the result, and the
/// original argument and result types.
struct Recorded {
    point: Value,
    result: Value,
    a: Type,
    ret: Type,
}

/// The Jacobian's rows from a tape holding the run of `f`: for each real of
/// `y: Δ([Real])`, in order, one sweep seeded with 1 at its delta, read at the inputs
/// `point: Δ(A)` (`ta = T(A)`).
pub(crate) fn rows(m: &Module, tape: &Tape, y: &Value, point: &Value, ta: &Type) -> Value {
    if let Some(rows) = columns(tape, y, point, ta) {
        return rows;
    }
    let mut out = ArrayBuilder::with_capacity(y.array_len().unwrap_or(0));
    for yi in y.array_iter() {
        let adjoint = tape.backward([(id_of(&yi), 1.0)]);
        out.push(gradient(m, point, ta, &adjoint));
    }
    out.finish()
}

/// [`rows`] by columns, where the point is an array of reals shorter than `y`: the
/// tape swept forward ([`Tape::forward`]) once per [`COLUMNS`] inputs, row i read off
/// `y[i]`'s tangents — fewer sweeps than one per output (native code's
/// `fx_tape_columns`, the same terms in the same order: the same bits). `None` where
/// one sweep per output is as few.
fn columns(tape: &Tape, y: &Value, point: &Value, ta: &Type) -> Option<Value> {
    if *ta != Type::array(Type::Real) {
        return None;
    }
    let inputs: Vec<DeltaId> = point.array_iter().map(|v| id_of(&v)).collect();
    let outputs: Vec<DeltaId> = y.array_iter().map(|v| id_of(&v)).collect();
    if inputs.len() >= outputs.len() {
        return None;
    }
    let mut rows = vec![vec![0.0; inputs.len()]; outputs.len()];
    for (chunk, lanes) in inputs.chunks(COLUMNS).enumerate() {
        let w = lanes.len();
        let t = tape.forward(lanes);
        for (row, id) in rows.iter_mut().zip(&outputs) {
            if *id != DeltaId::ZERO {
                let at = id.0 as usize * w;
                row[chunk * COLUMNS..][..w].copy_from_slice(&t[at..at + w]);
            }
        }
    }
    Some(Value::array(
        rows.into_iter()
            .map(|r| Value::array(r.into_iter().map(Value::Real).collect()))
            .collect(),
    ))
}

/// `f(y, w)` on each real leaf of `w: ty` (with `pairs`, each `(Real, Int)` of a
/// delta-translated `ty`) and `y`'s value there, in the order of the values' fields
/// and elements; a symbolic zero `w` has none.
pub(crate) fn zip_leaves(
    m: &Module,
    y: &Value,
    w: &Value,
    ty: &Type,
    pairs: bool,
    f: &mut dyn FnMut(&Value, &Value),
) {
    crate::deep(|| {
        if matches!(w, Value::Zero) {
            return;
        }
        match ty {
            Type::Real => f(y, w),
            Type::Tuple(ts) if pairs && ts.as_slice() == [Type::Real, Type::Int] => f(y, w),
            Type::Tuple(ts) => {
                let (ys, ws) = (
                    y.tuple_fields().unwrap_or_default(),
                    w.tuple_fields().unwrap_or_default(),
                );
                for ((y, w), t) in ys.iter().zip(ws.iter()).zip(ts) {
                    zip_leaves(m, y, w, t, pairs, f);
                }
            }
            Type::Array(t) => {
                for (y, w) in y.array_iter().zip(w.array_iter()) {
                    zip_leaves(m, &y, &w, t, pairs, f);
                }
            }
            Type::Enum(e) => {
                if let (Value::Enum(tag, ys), Value::Enum(_, ws)) = (y, w) {
                    let tys = fields_of(m, *e, *tag);
                    for ((y, w), t) in ys.iter().zip(ws.iter()).zip(&tys) {
                        zip_leaves(m, y, w, t, pairs, f);
                    }
                }
            }
            _ => {}
        }
    })
}

/// The gradient `T(A)` of the inputs `x: Δ(A)`: each real's adjoint.
pub(crate) fn gradient(m: &Module, x: &Value, ty: &Type, adjoint: &[f64]) -> Value {
    let fields = |e, tag| fields_of(m, e, tag);
    let g: Result<Value, std::convert::Infallible> =
        map_leaves(x, ty, false, &fields, &mut |v, t| {
            Ok(match t {
                Type::Real => Value::Real(adjoint[id_of(v).0 as usize]),
                _ => Value::Unit,
            })
        });
    g.unwrap_or_else(|never| match never {})
}

/// A translated real `x: Δ(Real)` moving with `dx: Δ(Real)` in layer `L`, as
/// `Δ(L(Real))`: `(x, dx)` or `[x, dx, 0, …]`.
fn leaf(x: Value, dx: Value, layer: TypeMap) -> Value {
    match layer {
        TypeMap::Taylor(k) => {
            let mut c = vec![x, dx];
            c.resize(k.coefficients(), pair(0.0, DeltaId::ZERO));
            Value::array(c)
        }
        _ => Value::tuple(vec![x, dx]),
    }
}

/// Combines `x: Δ(A)` and `dx: Δ(T(A))` into `Δ(L(A))`.
fn combine(m: &Module, x: &Value, dx: &Value, ty: &Type, layer: TypeMap) -> Result<Value, String> {
    crate::deep(|| {
        let zero = || pair(0.0, DeltaId::ZERO);
        Ok(match ty {
            Type::Real => leaf(
                x.clone(),
                if matches!(dx, Value::Zero) {
                    zero()
                } else {
                    dx.clone()
                },
                layer,
            ),
            Type::Int | Type::Bool | Type::Unit | Type::Fn(..) => x.clone(),
            Type::Tuple(ts) => {
                let xs = x.tuple_fields().unwrap_or_default();
                let ds = dx.tuple_fields();
                Value::tuple(
                    xs.iter()
                        .zip(ts)
                        .enumerate()
                        .map(|(i, (x, t))| {
                            let d = ds
                                .as_ref()
                                .and_then(|d| d.get(i).cloned())
                                .unwrap_or(Value::Zero);
                            combine(m, x, &d, t, layer)
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                )
            }
            Type::Array(t) => {
                let n = x.array_len().unwrap_or(0);
                if !matches!(dx, Value::Zero) && dx.array_len() != Some(n) {
                    return Err(format!(
                        "the direction has length {} but the point has length {n}",
                        dx.array_len().unwrap_or(0)
                    ));
                }
                let mut out = ArrayBuilder::with_capacity(n);
                for (i, x) in x.array_iter().enumerate() {
                    let d = dx.array_get(i).unwrap_or(Value::Zero);
                    out.push(combine(m, &x, &d, t, layer)?);
                }
                out.finish()
            }
            Type::Enum(e) => match (x, dx) {
                (Value::Enum(tag, xs), _) => {
                    let ds: Vec<Value> = match dx {
                        Value::Enum(dtag, ds) if dtag == tag => ds.to_vec(),
                        Value::Zero => vec![Value::Zero; xs.len()],
                        _ => {
                            return Err(
                                "the direction of an enum value must have the same constructor"
                                    .into(),
                            );
                        }
                    };
                    let tys = fields_of(m, *e, *tag);
                    Value::Enum(
                        *tag,
                        xs.iter()
                            .zip(&ds)
                            .zip(&tys)
                            .map(|((x, d), t)| combine(m, x, d, t, layer))
                            .collect::<Result<Vec<_>, _>>()?
                            .into(),
                    )
                }
                _ => x.clone(),
            },
        })
    })
}
