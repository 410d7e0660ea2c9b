//! The run-time side of `--ad chad` and `--fwd chad` (fluxion-ad's `chad.rs` and
//! `chad_fwd.rs` are the translations).
//!
//! `--ad chad`:
//! `%chad_vjp(f, x, w) = (f(x), wᵀ·J)`. `f`'s code is translated by CHAD (memoised,
//! verified in debug builds), its captured closures lifted to their translations (the
//! operator differentiates in its argument only, so their cotangents are dropped);
//! the translation returns the value and its backpropagator, which is applied to `w`
//! once. The linear building blocks the backpropagators use are `linear.rs`'s.
//!
//! Where CHAD does not translate `f` (its code applies a differential operator
//! itself), the same `(f(x), wᵀ·J)` is computed by forward mode, one JVP per input
//! coordinate (`fluxion_ad::vjp_by_forward`): correct, but not linear-time.

use std::rc::Rc;

use fluxion_core::{Span, Type, TypeMap};

use crate::ad::split_args;
use crate::eval::{EvalResult, Interp, RuntimeError, fail};
use crate::value::{Closure, Value};

impl Interp {
    pub(crate) fn chad_vjp(&self, args: &[Value], span: Span) -> EvalResult<Value> {
        let clo = Self::closure_of(&args[0], span)?;
        let (params, _) = self.signature(clo.code, span)?;
        let n = params.len();
        if !self.chad_translates(&args[0], TypeMap::Chad) {
            let fty = self.module().code_ty(clo.code);
            return self.vjp_by_forward(&fty, args, span);
        }
        let (x, w) = (&args[1], &args[2]);
        let (y, backprop) = self.chad_call(clo, TypeMap::Chad, x, n, span)?;
        crate::prims::check_cotangent(&y, w, span)?;
        let cts = self.apply(&backprop, [w.clone()], span)?;
        let x_ct = match n {
            0 => Value::Unit,
            1 => cts.tuple_get(0).unwrap_or(Value::Zero),
            _ => Value::tuple(
                (0..n)
                    .map(|i| cts.tuple_get(i).unwrap_or(Value::Zero))
                    .collect(),
            ),
        };
        let x_ct =
            crate::tangent::dense(x, &x_ct).map_err(|message| RuntimeError { span, message })?;
        Ok(Value::tuple(vec![y, x_ct]))
    }

    /// `jvp(f, x, dx) = let (y, f') = Df(f)(x) in (y, f'(dx, 0))` by forward CHAD:
    /// `f`'s code translated (memoised, verified in debug builds), its captured
    /// closures lifted (the operator differentiates in its argument only: the
    /// captures' tangent is zero). Where forward CHAD does not translate `f`, dual
    /// numbers compute the same.
    pub(crate) fn chad_jvp(&self, args: &[Value], span: Span) -> EvalResult<Value> {
        if !self.chad_translates(&args[0], TypeMap::ChadFwd) {
            return self.dual_jvp(args, span);
        }
        let clo = Self::closure_of(&args[0], span)?;
        let (params, _) = self.signature(clo.code, span)?;
        let n = params.len();
        let (x, dx) = (&args[1], &args[2]);
        crate::prims::check_direction(x, dx, span)?;
        let (y, pushforward) = self.chad_call(clo, TypeMap::ChadFwd, x, n, span)?;
        let mut inputs = split_args(dx.clone(), n, span)?;
        inputs.push(Value::Zero);
        let dy = self.apply(&pushforward, inputs, span)?;
        let dy =
            crate::tangent::dense(&y, &dy).map_err(|message| RuntimeError { span, message })?;
        Ok(Value::tuple(vec![y, dy]))
    }

    /// `f`'s CHAD translation in `layer` (either direction) called at `x` (the tuple
    /// of `n` arguments when `n > 1`): the value and its linear part.
    fn chad_call(
        &self,
        f: &Closure,
        layer: TypeMap,
        x: &Value,
        n: usize,
        span: Span,
    ) -> EvalResult<(Value, Value)> {
        let translated = self.translate(f, layer, span)?;
        let result = self.apply(&translated, split_args(x.clone(), n, span)?, span)?;
        match (result.tuple_get(0), result.tuple_get(1)) {
            (Some(y), Some(linear)) => Ok((y, linear)),
            _ => fail(
                span,
                "internal error: a CHAD translation without its linear part",
            ),
        }
    }

    /// Whether CHAD (`layer`: either direction) translates the closure `f` and every
    /// closure it holds.
    pub(crate) fn chad_translates(&self, f: &Value, layer: TypeMap) -> bool {
        let Value::Closure(clo) = f else {
            return true;
        };
        // Judged on the program as written (the bodies whose operators were resolved
        // ahead of time put back), as `translate_code` translates it.
        let unsupported = {
            let mut m = self.module_mut();
            m.swap_unresolved();
            let unsupported = fluxion_ad::chad_unsupported(&m, clo.code, layer).is_some();
            m.swap_unresolved();
            unsupported
        };
        if unsupported {
            return false;
        }
        let types = self.capture_types(clo.code);
        clo.env.iter().zip(&types).all(|(v, t)| {
            self.module().is_fixed(t, layer)
                || self.closures_in(v, &mut |c| self.chad_translates(c, layer))
        })
    }

    /// Whether `ok` holds of every closure in `v`.
    fn closures_in(&self, v: &Value, ok: &mut dyn FnMut(&Value) -> bool) -> bool {
        crate::deep(|| match v {
            Value::Closure(_) => ok(v),
            Value::Tuple(vs) | Value::Array(vs) | Value::Enum(_, vs) => {
                vs.iter().all(|v| self.closures_in(v, ok))
            }
            _ => true,
        })
    }

    /// `(f(x), wᵀ·J)` by forward mode.
    fn vjp_by_forward(&self, fty: &Type, args: &[Value], span: Span) -> EvalResult<Value> {
        let code = {
            let mut m = self.module_mut();
            let first_new = m.codes.len();
            let code = fluxion_ad::vjp_by_forward(&mut m, fty);
            self.finish_derived(&mut m, first_new, span)?;
            code
        };
        let helper = Value::Closure(Rc::new(Closure {
            code,
            env: Vec::new(),
        }));
        self.apply(&helper, args.iter().cloned(), span)
    }
}
