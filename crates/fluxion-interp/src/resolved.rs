//! The run-time support of derivative code made ahead of time (fluxion-ad's `ahead`):
//! the primitives the resolved operators call, as the native backend's C runtime
//! provides them (`fluxion-native/src/delta_c.rs`, `emit.rs`'s `%chad_of` helpers).
//! With them the interpreter runs the same Core as native code.
//!
//! - `%chad_of(f, d)`: `f` as its translation in direction `d` (0 CHAD, 1 forward
//!   CHAD, 2 delta, 3 forward, 4 a delta translation's closure translated again,
//!   `CHAD_OF_TAYLOR` + k Taylor of order k), its
//!   captures lifted. The translation was made ahead of time (the memo finds it); one
//!   that was not is made here, at run time, except where CHAD does not translate the
//!   closure, or in direction 4: then, as native code (`fx_miss`), the interpreter
//!   runs the program again on the module as written (`Interp::run_code`);
//! - `%capture(f, i, code)`: the `i`th captured value of the closure `f`;
//! - `%delta_lift(c)`: `c` with the zero delta on every real;
//! - `%delta_open()`, `%delta_inputs(x)`, `%delta_primal(r)`,
//!   `%delta_grad(mark, r, w, xd)`: one reverse pass on a tape of its own ([Delta] §7),
//!   the steps of `Interp::delta_vjp` taken one at a time;
//! - `%delta_rows(mark, r, xd)`: a resolved `%delta_jacobian`'s sweeps, one per real
//!   of `r`, and the tape closed (`Interp::delta_jacobian`'s last step).
//!
//! The walks need types the values do not carry; `compile.rs` gives each of these
//! primitives the types it needs in place of its result type ([`walk_types`]).

use std::rc::Rc;

use fluxion_core::prim::{CHAD_OF_TWICE as TWICE, chad_of_layer};
use fluxion_core::{Prim, Span, Type, TypeMap};

use crate::eval::{EvalResult, Interp, fail};
use crate::tape::Tape;
use crate::value::{Closure, Value};

/// The type `compile.rs` passes for a resolved primitive (the walks need types that
/// its values do not carry): its argument's type for `%delta_inputs` and
/// `%delta_lift`, `(T(B), T(A))` — the cotangent's and the result's types — for
/// `%delta_grad`, the result type otherwise.
pub(crate) fn walk_types(p: Prim, arg_tys: &[Type], result: &Type) -> Type {
    match p {
        Prim::DeltaInputs | Prim::DeltaLift | Prim::Delta2Inputs | Prim::Delta2Lift => {
            arg_tys[0].clone()
        }
        Prim::DeltaGrad | Prim::Delta2Grad => Type::Tuple(vec![arg_tys[2].clone(), result.clone()]),
        _ => result.clone(),
    }
}

impl Interp {
    /// `%chad_of(f, 4)`: the closure of `Δ(Δ(c))` for `f`, a closure of a delta
    /// translation `Δ(c)`, its captures lifted by `%delta2_lift` (fluxion-ad's
    /// `delta_twice.rs`), made ahead of time. A closure without one (the flow analysis
    /// missed it) hands the run over to the module as written, which differentiates
    /// such operators by forward mode (`Interp::run_code`), as native code's `fx_miss`
    /// does.
    fn twice(&self, clo: &Closure, span: Span) -> EvalResult<Value> {
        let made = self.module().chad_of.get(&(clo.code, TWICE)).copied();
        let Some(code) = made else {
            self.handed_over.set(true);
            return fail(span, "the run is handed over to the module as written");
        };
        let mut env = Vec::with_capacity(clo.env.len());
        for (v, t) in clo.env.iter().zip(&self.capture_types(clo.code)) {
            env.push(self.delta2_prim(Prim::Delta2Lift, std::slice::from_ref(v), t, span)?);
        }
        Ok(Value::Closure(Rc::new(Closure { code, env })))
    }

    /// A primitive of resolved code (see the module's doc); `ty` is [`walk_types`]'s.
    pub(crate) fn resolved_prim(
        &self,
        p: Prim,
        args: &[Value],
        ty: &Type,
        span: Span,
    ) -> EvalResult<Value> {
        let int = |v: &Value| match v {
            Value::Int(i) => Some(*i),
            _ => None,
        };
        match p {
            Prim::ChadOf if int(&args[1]) == Some(TWICE) => {
                let clo = Self::closure_of(&args[0], span)?;
                self.twice(clo, span)
            }
            Prim::ChadOf => {
                let clo = Self::closure_of(&args[0], span)?;
                let Some(layer) = int(&args[1]).and_then(chad_of_layer) else {
                    return fail(span, "internal error: `%chad_of` of an unknown direction");
                };
                // Where CHAD does not translate the closure, the operator around this
                // is computed by forward mode instead: the code made ahead of time
                // cannot, so the run is handed over (`Interp::run_code`), as native
                // code's `fx_miss` does.
                if layer.is_chad() && !self.chad_translates(&args[0], layer) {
                    self.handed_over.set(true);
                    return fail(span, "the run is handed over to the module as written");
                }
                self.translate(clo, layer, span)
            }
            Prim::ClosureCapture => {
                let clo = Self::closure_of(&args[0], span)?;
                match int(&args[1]).and_then(|i| clo.env.get(i as usize)) {
                    Some(v) => Ok(v.clone()),
                    None => fail(span, "internal error: `%capture` out of range"),
                }
            }
            Prim::DeltaLift => self.lift(&args[0], ty, TypeMap::Delta, span),
            Prim::DeltaOpen => {
                let mut tapes = self.tapes.borrow_mut();
                tapes.push(Tape::new());
                Ok(Value::Int(tapes.len() as i64 - 1))
            }
            Prim::DeltaInputs => {
                let m = self.module();
                let mut tapes = self.tapes.borrow_mut();
                let Some(tape) = tapes.last_mut() else {
                    return fail(span, "internal error: `%delta_inputs` without a tape");
                };
                Ok(crate::delta::inputs(&m, &args[0], ty, tape))
            }
            Prim::DeltaPrimal => Ok(crate::ad::coefficient(&self.module(), &args[0], ty, 0)),
            Prim::DeltaRows => {
                let Type::Array(ta) = ty else {
                    return fail(span, "internal error: `%delta_rows` without its type");
                };
                let Some(mark) = int(&args[0]).map(|i| i as usize) else {
                    return fail(span, "internal error: `%delta_rows` without its tape");
                };
                let m = self.module();
                let mut tapes = self.tapes.borrow_mut();
                if tapes.len() != mark + 1 {
                    return fail(span, "internal error: `%delta_rows` of another tape");
                }
                let rows = crate::delta::rows(&m, &tapes[mark], &args[1], &args[2], ta);
                tapes.truncate(mark);
                Ok(rows)
            }
            Prim::DeltaGrad => {
                let Type::Tuple(tys) = ty else {
                    return fail(span, "internal error: `%delta_grad` without its types");
                };
                let (tb, ta) = (&tys[0], &tys[1]);
                let Some(mark) = int(&args[0]).map(|i| i as usize) else {
                    return fail(span, "internal error: `%delta_grad` without its tape");
                };
                let m = self.module();
                // The walks by tangent types: `T(Real) = Real` where the original has a
                // real, `()` where it has an `Int` or a `Bool`, enums by constructor.
                let mut seeds = Vec::new();
                crate::delta::seed(&m, &args[1], &args[2], tb, &mut seeds);
                let mut tapes = self.tapes.borrow_mut();
                if tapes.len() != mark + 1 {
                    return fail(span, "internal error: `%delta_grad` of another tape");
                }
                let adjoint = tapes[mark].backward(seeds);
                tapes.truncate(mark);
                Ok(crate::delta::gradient(&m, &args[3], ta, &adjoint))
            }
            _ => fail(
                span,
                format!("internal error: `{}` is not a resolved primitive", p.name()),
            ),
        }
    }
}
