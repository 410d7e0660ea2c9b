//! The run-time side of the differential operators. After
//! `fluxion_ad::expand_module`, only `jvp` and `taylor` remain. Each translates the
//! function's code by its layer (forward mode, or Taylor mode of order k; memoised),
//! lifts the closure's captured values into that layer with zero perturbation (the
//! operator differentiates with respect to its argument only), combines the point with
//! the direction, calls, and takes the result apart.
//!
//! Lifting, combining and taking apart are directed by the Core types: a value of type
//! `A` becomes a value of type `L(A)` where every real leaf is the pair
//! `(primal, tangent)` (forward) or the coefficient array `[c0, ..., ck]` (Taylor).

use std::rc::Rc;

use fluxion_core::verify::differentiated_argument;
use fluxion_core::{Jet, Module, Prim, Span, Type, TypeMap};

use crate::array::ArrayBuilder;
use crate::eval::{EvalResult, Interp, RuntimeError, fail};
use crate::value::{Closure, DualArray, Value};

impl Interp {
    pub(crate) fn differential(&self, p: Prim, args: &[Value], span: Span) -> EvalResult<Value> {
        match p {
            Prim::Jvp if self.fwd_mode() == fluxion_ad::FwdMode::Chad => self.chad_jvp(args, span),
            Prim::Jvp => self.dual_jvp(args, span),
            Prim::Taylor => {
                let k = match args[3] {
                    Value::Int(k) if (1..=64).contains(&k) => k as u32,
                    Value::Int(k) => {
                        return fail(span, format!("taylor: order {k} is outside 1..=64"));
                    }
                    _ => return fail(span, "internal error: taylor order is not an Int"),
                };
                let (y, coefs) = self.push_forward(
                    &args[0],
                    &args[1],
                    &args[2],
                    TypeMap::Taylor(Jet::series(k)),
                    span,
                )?;
                Ok(Value::tuple(vec![y, Value::array(coefs)]))
            }
            Prim::Jet => self.jet(args, span),
            Prim::Sparsity => self.sparsity(args, span),
            Prim::DeltaVjp => self.delta_vjp(args, span),
            Prim::DeltaJacobian => self.delta_jacobian(args, span),
            Prim::ChadVjp => self.chad_vjp(args, span),
            Prim::DeltaJvp => self.delta_push_forward(args, TypeMap::Fwd, span),
            Prim::DeltaTaylor => {
                let k = match args[3] {
                    Value::Int(k) if (1..=64).contains(&k) => k as u32,
                    Value::Int(k) => {
                        return fail(span, format!("taylor: order {k} is outside 1..=64"));
                    }
                    _ => return fail(span, "internal error: taylor order is not an Int"),
                };
                self.delta_push_forward(args, TypeMap::Taylor(Jet::series(k)), span)
            }
            // The other operators are expanded before evaluation.
            _ => fail(
                span,
                format!(
                    "internal error: `{}` was not expanded before evaluation (--ad {})",
                    p.name(),
                    self.ad_mode().name()
                ),
            ),
        }
    }

    /// `jet(f, x, vs, r)` where its number of directions was not known ahead of time:
    /// the closure translated by the jet layer of that shape and the push made as Core
    /// (fluxion-ad's `push_jet.rs`), here.
    fn jet(&self, args: &[Value], span: Span) -> EvalResult<Value> {
        let order = match args[3] {
            Value::Int(r) if (1..=64).contains(&r) => r as u32,
            Value::Int(r) => return fail(span, format!("jet: order {r} is outside 1..=64")),
            _ => return fail(span, "internal error: jet order is not an Int"),
        };
        let dirs = args[2].array_len().unwrap_or(0);
        if dirs == 0 {
            return fail(span, "jet: needs at least one direction (vs is empty)");
        }
        let jet = Jet {
            dirs: u32::try_from(dirs).unwrap_or(u32::MAX),
            order,
        };
        if dirs > MAX_JET_DIRS || jet.coefficients() > MAX_JET_LEN {
            return fail(
                span,
                format!(
                    "jet: {dirs} directions of order {order} make jets of more than \
                     {MAX_JET_LEN} coefficients"
                ),
            );
        }
        let clo = Self::closure_of(&args[0], span)?;
        let fty = self.module().code_ty(clo.code);
        let translated = self.translate(clo, TypeMap::Taylor(jet), span)?;
        let code = {
            let mut m = self.module_mut();
            let first_new = m.codes.len();
            let code = fluxion_ad::push_jet_code(&mut m, jet, &fty);
            self.finish_derived(&mut m, first_new, span)?;
            code
        };
        let helper = Value::Closure(Rc::new(Closure {
            code,
            env: Vec::new(),
        }));
        let call = [translated, args[1].clone(), args[2].clone()];
        self.apply(&helper, call, span)
    }

    /// `sparsity(f, x)` where it was not resolved ahead of time: the closure translated
    /// by the dependency layer and the pattern taken apart by Core (fluxion-ad's
    /// `deps.rs`), here.
    fn sparsity(&self, args: &[Value], span: Span) -> EvalResult<Value> {
        let clo = Self::closure_of(&args[0], span)?;
        let translated = self.translate(clo, TypeMap::Deps, span)?;
        let code = {
            let mut m = self.module_mut();
            let first_new = m.codes.len();
            let code = fluxion_ad::sparsity_code(&mut m);
            self.finish_derived(&mut m, first_new, span)?;
            code
        };
        let helper = Value::Closure(Rc::new(Closure {
            code,
            env: Vec::new(),
        }));
        self.apply(&helper, [translated, args[1].clone()], span)
    }

    /// `jvp(f, x, dx)` by dual numbers.
    pub(crate) fn dual_jvp(&self, args: &[Value], span: Span) -> EvalResult<Value> {
        let (y, dy) = self.push_forward(&args[0], &args[1], &args[2], TypeMap::Fwd, span)?;
        Ok(Value::tuple(vec![
            y,
            dy.into_iter().next().unwrap_or(Value::Unit),
        ]))
    }

    /// Evaluates `f` along `x + t·v` in `layer`: the value, and the tangent (forward) or
    /// the k Taylor coefficients after the value.
    fn push_forward(
        &self,
        f: &Value,
        x: &Value,
        v: &Value,
        layer: TypeMap,
        span: Span,
    ) -> EvalResult<(Value, Vec<Value>)> {
        let clo = Self::closure_of(f, span)?;
        let (params, ret) = self.signature(clo.code, span)?;
        let translated = self.translate(clo, layer, span)?;
        let a = differentiated_argument(&params);
        // As natively (`push_forward.rs`): the direction checked, then dense (-0.0s 0.0).
        crate::prims::check_direction(x, v, span)?;
        let v = crate::tangent::dense(x, v).map_err(|message| RuntimeError { span, message })?;
        let point = combine(&self.module(), x, &v, &a, layer)
            .map_err(|message| RuntimeError { span, message })?;
        let result = self.apply(&translated, split_args(point, params.len(), span)?, span)?;
        let m = self.module();
        let orders = match layer {
            TypeMap::Taylor(j) => j.coefficients() - 1,
            _ => 1,
        };
        let y = coefficient(&m, &result, &ret, 0);
        let rest = (1..=orders)
            .map(|j| coefficient(&m, &result, &ret, j))
            .collect();
        Ok((y, rest))
    }

    /// The closure an operator differentiates.
    pub(crate) fn closure_of(f: &Value, span: Span) -> EvalResult<&Rc<Closure>> {
        match f {
            Value::Closure(clo) => Ok(clo),
            _ => fail(span, "internal error: differentiating a non-function"),
        }
    }

    /// The parameter types and result type of `code`.
    pub(crate) fn signature(
        &self,
        code: fluxion_core::CodeId,
        span: Span,
    ) -> EvalResult<(Vec<Type>, Type)> {
        match self.module().code_ty(code) {
            Type::Fn(ps, r) => Ok((ps, *r)),
            _ => fail(span, "internal error: code without a function type"),
        }
    }

    /// The translation of a closure by `layer`: translated code, lifted environment.
    pub(crate) fn translate(&self, clo: &Closure, layer: TypeMap, span: Span) -> EvalResult<Value> {
        let code = self.translate_code(clo.code, layer, span)?;
        let mut env = Vec::with_capacity(clo.env.len());
        for (v, t) in clo.env.iter().zip(&self.capture_types(clo.code)) {
            env.push(self.lift(v, t, layer, span)?);
        }
        Ok(Value::Closure(Rc::new(Closure { code, env })))
    }

    /// The types of `code`'s captured variables, in the order of a closure's values.
    pub(crate) fn capture_types(&self, code: fluxion_core::CodeId) -> Vec<Type> {
        let m = self.module();
        m.code(code)
            .captures
            .iter()
            .map(|c| m.var_ty(*c).clone())
            .collect()
    }

    /// The translation of `code` by `layer` (memoised), verified in debug builds and
    /// counted against the memory budget.
    pub(crate) fn translate_code(
        &self,
        code: fluxion_core::CodeId,
        layer: TypeMap,
        span: Span,
    ) -> EvalResult<fluxion_core::CodeId> {
        let estimate = translation_estimate(&self.module(), code, layer);
        self.reserve(estimate, span)?;
        let mut m = self.module_mut();
        let first_new = m.codes.len();
        // The program as written: the bodies whose operators were resolved ahead of
        // time are put back while translating (their operators translate by the
        // layer's own rules; resolved code does not translate again).
        m.swap_unresolved();
        let code = fluxion_ad::translate_code(&mut m, code, layer)
            .map_err(|e| RuntimeError { span, message: e.0 })
            .and_then(|code| self.finish_derived(&mut m, first_new, span).map(|()| code));
        m.swap_unresolved();
        let code = code?;
        // A translation grows the module (nested forward mode: about 3x the code
        // it translates), so it counts against the memory budget like values do.
        drop(m);
        self.check_limits(span)?;
        Ok(code)
    }

    /// A value of type `A` as a value of type `L(A)` with zero perturbation.
    pub(crate) fn lift(
        &self,
        v: &Value,
        ty: &Type,
        layer: TypeMap,
        span: Span,
    ) -> EvalResult<Value> {
        crate::deep(|| {
            if layer.is_chad() && self.module().is_fixed(ty, layer) {
                // CHAD's primal types differ from the original only at function types.
                return Ok(v.clone());
            }
            Ok(match (v, ty) {
                (Value::Real(x), _) => leaf(*x, 0.0, layer),
                (Value::RealArray(xs), _) => match layer {
                    TypeMap::Taylor(_) | TypeMap::Delta | TypeMap::Deps => {
                        Value::Array(xs.iter().map(|x| leaf(*x, 0.0, layer)).collect())
                    }
                    _ => Value::DualArray(Rc::new(DualArray::constant(xs.clone()))),
                },
                (Value::Tuple(_) | Value::Dual(..) | Value::RealInt(..), Type::Tuple(ts)) => {
                    let vs = v.tuple_fields().unwrap_or_default();
                    Value::tuple(
                        vs.iter()
                            .zip(ts)
                            .map(|(v, t)| self.lift(v, t, layer, span))
                            .collect::<EvalResult<Vec<_>>>()?,
                    )
                }
                (Value::Array(_) | Value::DualArray(_), Type::Array(t)) => {
                    let mut out = ArrayBuilder::with_capacity(v.array_len().unwrap_or(0));
                    for v in v.array_iter() {
                        out.push(self.lift(&v, t, layer, span)?);
                    }
                    out.finish()
                }
                (Value::Enum(tag, fields), Type::Enum(e)) => {
                    let field_tys = self.module().enum_def(*e).variants[*tag as usize]
                        .fields
                        .clone();
                    Value::Enum(
                        *tag,
                        fields
                            .iter()
                            .zip(&field_tys)
                            .map(|(v, t)| self.lift(v, t, layer, span))
                            .collect::<EvalResult<Vec<_>>>()?
                            .into(),
                    )
                }
                (Value::Closure(c), _) => self.translate(c, layer, span)?,
                (v, _) => v.clone(),
            })
        })
    }
}

/// The most directions and coefficients of a jet (docs/language.md is silent; the jets of
/// a program's reals must fit in memory: C = binom(R + k, k) reals each).
const MAX_JET_DIRS: usize = 1 << 16;
const MAX_JET_LEN: usize = 1 << 16;

/// Bytes a translation of `code` by `layer` may allocate, reserved against the memory
/// budget before it runs (a translation cannot stop half-way, and nested forward mode
/// makes each level about 3x the code of the one before it): the codes it reaches and
/// has not translated yet, at a generous 4 new bindings of about 400 bytes each per
/// binding, plus the doubling of the module's tables should they have to grow.
fn translation_estimate(m: &Module, code: fluxion_core::CodeId, layer: TypeMap) -> usize {
    const NEW_BINDINGS_PER_BINDING: usize = 4;
    const BYTES_PER_BINDING: usize = 400;
    let mut seen = std::collections::HashSet::new();
    let mut work = vec![code];
    let mut bindings = 0usize;
    while let Some(c) = work.pop() {
        if !seen.insert(c) || fluxion_ad::is_translated(m, c, layer) {
            continue;
        }
        fluxion_core::visit::for_each_code_ref(&m.code(c).body, &mut |r| work.push(r));
        bindings += fluxion_core::visit::count_bindings(&m.code(c).body);
    }
    let new_vars = bindings * NEW_BINDINGS_PER_BINDING;
    let growth = |len: usize, cap: usize, size: usize| {
        if len + new_vars > cap {
            (cap.max(len + new_vars)) * 2 * size
        } else {
            0
        }
    };
    new_vars * BYTES_PER_BINDING
        + growth(
            m.vars.len(),
            m.vars.capacity(),
            std::mem::size_of::<fluxion_core::VarInfo>(),
        )
}

impl Interp {
    /// The codes a run-time translation just added (from `first_new` on): optimised
    /// (unless `--opt 0`), like the module before evaluation, then verified.
    pub(crate) fn finish_derived(
        &self,
        m: &mut Module,
        first_new: usize,
        span: Span,
    ) -> EvalResult<()> {
        if self.opt_level() == fluxion_opt::OptLevel::On && first_new < m.codes.len() {
            let mut report = fluxion_opt::Report::default();
            fluxion_opt::optimize_codes_from(m, first_new, fluxion_opt::Stage::Final, &mut report)
                .map_err(|message| RuntimeError { span, message })?;
        }
        verify_derived(m, first_new, span)
    }
}

/// In debug builds (every test), the codes a run-time translation just added must pass
/// the verifier, like every code derived ahead of time.
pub(crate) fn verify_derived(m: &Module, first_new: usize, span: Span) -> EvalResult<()> {
    if !cfg!(debug_assertions) || first_new == m.codes.len() {
        return Ok(());
    }
    fluxion_core::verify::verify_codes_from(m, first_new).map_err(|errors| RuntimeError {
        span,
        message: format!(
            "internal error: a derived code fails verification:\n{}",
            fluxion_core::verify::describe(&errors)
        ),
    })
}

/// The translation of the real `x` moving with velocity `dx`: `(x, dx)` or
/// `[x, dx, 0, ..., 0]`.
fn leaf(x: f64, dx: f64, layer: TypeMap) -> Value {
    match layer {
        TypeMap::Taylor(k) => {
            let mut c = vec![0.0; k.coefficients()];
            c[0] = x;
            c[1] = dx;
            Value::RealArray(c.into())
        }
        TypeMap::Delta => Value::RealInt(x, 0),
        TypeMap::Deps => Value::tuple(vec![Value::Real(x), Value::IntArray(Rc::from(vec![]))]),
        TypeMap::Chad | TypeMap::ChadFwd => Value::Real(x),
        _ => Value::Dual(x, dx),
    }
}

pub(crate) fn real_of(v: &Value) -> f64 {
    match v {
        Value::Real(x) => *x,
        _ => 0.0,
    }
}

/// The arguments of a call from the differentiated argument (the tuple of them for
/// several parameters).
pub(crate) fn split_args(point: Value, n_params: usize, span: Span) -> EvalResult<Vec<Value>> {
    Ok(match n_params {
        0 => vec![],
        1 => vec![point],
        _ => match point.tuple_fields() {
            Some(vs) => vs.into_owned(),
            None => return fail(span, "internal error: multi-argument point is not a tuple"),
        },
    })
}

/// Combines a point `x: A` and a direction `dx: T(A)` into `L(A)`.
fn combine(m: &Module, x: &Value, dx: &Value, ty: &Type, layer: TypeMap) -> Result<Value, String> {
    crate::deep(|| {
        Ok(match ty {
            Type::Real => leaf(real_of(x), real_of(dx), layer),
            Type::Int | Type::Bool | Type::Unit => x.clone(),
            Type::Tuple(ts) => match (x.tuple_fields(), dx.tuple_fields()) {
                (Some(xs), Some(ds)) => Value::tuple(
                    xs.iter()
                        .zip(ds.iter())
                        .zip(ts)
                        .map(|((x, d), t)| combine(m, x, d, t, layer))
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                _ => return Err("internal error: tuple point without a tuple direction".into()),
            },
            Type::Array(t) => {
                let (n, k) = (x.array_len().unwrap_or(0), dx.array_len().unwrap_or(0));
                if n != k {
                    return Err(format!(
                        "the direction has length {k} but the point has length {n}"
                    ));
                }
                match (x, dx, layer) {
                    // The point and the direction become the two halves, shared.
                    (Value::RealArray(xs), Value::RealArray(ds), TypeMap::Fwd) => {
                        match DualArray::new(xs.clone(), ds.clone()) {
                            Some(d) => Value::DualArray(Rc::new(d)),
                            None => {
                                return Err("internal error: halves of different lengths".into());
                            }
                        }
                    }
                    _ => {
                        let mut out = ArrayBuilder::with_capacity(n);
                        for (x, d) in x.array_iter().zip(dx.array_iter()) {
                            out.push(combine(m, &x, &d, t, layer)?);
                        }
                        out.finish()
                    }
                }
            }
            Type::Enum(e) => match (x, dx) {
                (Value::Enum(tag, xs), Value::Enum(dtag, ds)) => {
                    if tag != dtag {
                        return Err(
                            "the direction of an enum value must have the same constructor".into(),
                        );
                    }
                    let field_tys = &m.enum_def(*e).variants[*tag as usize].fields;
                    Value::Enum(
                        *tag,
                        xs.iter()
                            .zip(ds.iter())
                            .zip(field_tys)
                            .map(|((x, d), t)| combine(m, x, d, t, layer))
                            .collect::<Result<Vec<_>, _>>()?
                            .into(),
                    )
                }
                _ => return Err("internal error: enum point without an enum direction".into()),
            },
            Type::Fn(..) => return Err("cannot differentiate with respect to a function".into()),
        })
    })
}

/// Coefficient `j` of every real leaf of `v: L(B)`: a value of `B` for j = 0, of
/// `T(B)` otherwise (non-real leaves become `()`).
pub(crate) fn coefficient(m: &Module, v: &Value, ty: &Type, j: usize) -> Value {
    crate::deep(|| {
        match ty {
            Type::Real => match v {
                Value::Tuple(_) | Value::Dual(..) | Value::RealInt(..) => {
                    v.tuple_get(j).unwrap_or(Value::Real(f64::NAN))
                }
                other => other.array_get(j).unwrap_or(Value::Real(f64::NAN)),
            },
            Type::Int | Type::Bool | Type::Unit => {
                if j == 0 {
                    v.clone()
                } else {
                    Value::Unit
                }
            }
            Type::Tuple(ts) => match v.tuple_fields() {
                Some(vs) => Value::tuple(
                    vs.iter()
                        .zip(ts)
                        .map(|(v, t)| coefficient(m, v, t, j))
                        .collect(),
                ),
                None => v.clone(),
            },
            Type::Array(t) => match (v, j) {
                // The primal or tangent half, shared.
                (Value::DualArray(d), 0) if **t == Type::Real => {
                    Value::RealArray(d.primal().clone())
                }
                (Value::DualArray(d), 1) if **t == Type::Real => {
                    Value::RealArray(d.tangent().clone())
                }
                _ => Value::array_from(v.array_iter().map(|v| coefficient(m, &v, t, j))),
            },
            Type::Enum(e) => match v {
                Value::Enum(tag, fields) => {
                    let field_tys = &m.enum_def(*e).variants[*tag as usize].fields;
                    Value::Enum(
                        *tag,
                        fields
                            .iter()
                            .zip(field_tys)
                            .map(|(v, t)| coefficient(m, v, t, j))
                            .collect::<Vec<_>>()
                            .into(),
                    )
                }
                other => other.clone(),
            },
            Type::Fn(..) => v.clone(),
        }
    })
}
