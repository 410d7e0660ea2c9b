//! Reverse over reverse under `--ad delta`: a tape of tapes ([Delta] §7 applied to
//! its own output). A `%delta_vjp(f, x, w)` inside code the delta layer translates
//! (the gradient of a function that takes a gradient) is the delta translation of
//! the steps that compute it (`ahead/delta.rs`), with `f`'s code translated twice:
//!
//! ```text
//! let fdd  = Closure(Δₒ(Δᵢ(c)), %delta2_lift(c'))  -- f's captures: outer pairs, inner 0
//! let mark = %delta2_open()                        -- the inner tape, a second one
//! let xd   = %delta2_inputs(x')                    -- each outer pair a fresh inner input
//! let r    = fdd(xd)           -- records the inner tape, its coefficients outer pairs,
//!                              -- and on the outer tape whatever computes them
//! let y'   = %delta2_primal(r) -- the outer pairs of f(x)
//! check(y', w')                -- w has y's shape
//! let g'   = %delta2_grad(mark, r, w', xd)
//! (y', g')
//! ```
//!
//! `Δᵢ(c)` is ordinary delta code: its `%delta(c₁, id₁, …)` takes real coefficients,
//! which `Δₒ` turns into outer pairs, so it becomes `%delta2` on the inner tape
//! (`delta.rs`). `%delta2_grad`'s sweep is the inner tape's transpose, `adj[p] += c·a`
//! per term, on outer pairs: a step where `c` or `a` has an outer delta is one outer
//! node `(1, adj[p]) + (a, c) + (c, a)`; the value's step follows the first tape's
//! rule (a zero partial or a zero adjoint passes nothing on).
//! So the second derivative costs a constant times the inner gradient (its tape once
//! forward, once swept with outer nodes) where forward mode over the inner reverse pass
//! (`pullback_by_jvps.rs`, the fallback) costs one inner gradient per input.
//!
//! Made where `f` is a closure the translated code builds (a lambda or a top-level
//! function), whose code applies no operator itself (so `Δᵢ(c)` holds no operator `Δₒ`
//! cannot translate: a third `grad` inside falls back to forward mode), and whose
//! argument, result and captures hold no functions. Where `f` is a closure chosen at
//! run time (a parameter, a capture, an element of an array), the same steps with
//! `fdd = %chad_of(f', 4)`: `f'`, the outer translation of `f`, is a closure of some
//! `Δ(c)`, and `%chad_of` picks `Δ(Δ(c))` by its code, the captures lifted as
//! `%delta2_lift` lifts them — where the resolution made `Δ(Δ(c))` for every code `c`
//! that can flow to `f`, each one of the kind above (`Module::twice`,
//! `ahead/resolve.rs::make_twice`; elsewhere the fallback).

use fluxion_core::{Atom, Module, Prim, Rhs, Type, TypeMap, VarId, verify};

use crate::AdError;
use crate::builder::{Builder, int};
use crate::chad_sweep::reaches_operator;
use crate::delta::Delta;
use crate::structural::{KnownVjp, translate_code};

impl Delta {
    /// `(f(x), wᵀ·J)` with outer deltas, for `f = Closure(code, caps)`, or `None`
    /// where the tape of tapes is not made (see the module's doc).
    pub(crate) fn vjp_of_closure(
        &self,
        b: &mut Builder,
        known: KnownVjp<'_>,
    ) -> Result<Option<Atom>, AdError> {
        let KnownVjp {
            code,
            caps,
            x,
            w,
            result,
        } = known;
        let c = b.m.code(code);
        let params: Vec<Type> = c.params.iter().map(|p| b.m.var_ty(*p).clone()).collect();
        let cap_tys: Vec<Type> = c.captures.iter().map(|v| b.m.var_ty(*v).clone()).collect();
        let ret = c.ret.clone();
        if params
            .iter()
            .chain(&cap_tys)
            .chain([&ret])
            .any(|t| b.m.can_hold_fn(t))
            || reaches_operator(b.m, code, |_| false).is_some()
        {
            return Ok(None);
        }
        let inner = translate_code(b.m, code, &Delta, None)?;
        let twice = translate_code(b.m, inner, &Delta, None)?;
        // `Δₒ` and `Δₒ∘Δᵢ` of a type.
        let o = |m: &mut Module, t: &Type| m.map_type(t, TypeMap::Delta);
        let oi = |m: &mut Module, t: &Type| {
            let i = o(m, t);
            o(m, &i)
        };
        let lifted: Vec<Atom> = caps
            .iter()
            .zip(&cap_tys)
            .map(|(a, t)| {
                let ty = oi(b.m, t);
                b.prim(Prim::Delta2Lift, &[*a], ty)
            })
            .collect();
        let fty = Type::func(params.iter().map(|t| oi(b.m, t)).collect(), oi(b.m, &ret));
        let fdd = b.emit("delta2_f", Rhs::Closure(twice, lifted), fty);
        Ok(Some(tape_of_tapes(b, fdd, &params, &ret, x, w, result)))
    }

    /// `(f(x), wᵀ·J)` with outer deltas for an `f` the code does not build (a
    /// parameter, a capture, a closure taken from an array): `Δₒ(Δᵢ(c))` of its code
    /// `c` chosen at run time, `%chad_of(f', 4)` on `f`'s outer translation `f'` (a
    /// closure of `Δ(c)`), its captures lifted as `%delta2_lift` does. Made where the
    /// resolution made `Δ(Δ(c))` for every code `c` that can flow to `f`
    /// (`Module::twice`, `ahead/resolve.rs::make_twice`); `None` elsewhere (the
    /// caller falls back to forward mode over the inner reverse pass).
    pub(crate) fn vjp_of_unknown(
        &self,
        b: &mut Builder,
        f: VarId,
        targs: &[Atom],
        result: &Type,
    ) -> Option<Atom> {
        let Type::Fn(params, ret) = b.m.var_ty(f).clone() else {
            return None;
        };
        if !b.m.twice.contains(&f) || params.iter().chain([&*ret]).any(|t| b.m.can_hold_fn(t)) {
            return None;
        }
        let ft = b.m.atom_ty(&targs[0]);
        let fdd_ty = b.m.map_type(&ft, TypeMap::Delta);
        let fdd = b.prim(Prim::ChadOf, &[targs[0], int(TWICE)], fdd_ty);
        Some(tape_of_tapes(
            b, fdd, &params, &ret, targs[1], targs[2], result,
        ))
    }
}

pub(crate) use fluxion_core::prim::CHAD_OF_TWICE as TWICE;

/// The steps of the module's doc after `fdd`, the closure of `Δₒ(Δᵢ(c))` for `f` of
/// parameter types `params` and result `ret`.
fn tape_of_tapes(
    b: &mut Builder,
    fdd: Atom,
    params: &[Type],
    ret: &Type,
    x: Atom,
    w: Atom,
    result: &Type,
) -> Atom {
    let o = |m: &mut Module, t: &Type| m.map_type(t, TypeMap::Delta);
    let oi = |m: &mut Module, t: &Type| {
        let i = o(m, t);
        o(m, &i)
    };
    let mark = b.prim(Prim::Delta2Open, &[], Type::Int);
    let a = verify::differentiated_argument(params);
    let xd_ty = oi(b.m, &a);
    let xd = b.prim(Prim::Delta2Inputs, &[x], xd_ty);
    let xs = match params.len() {
        1 => vec![xd],
        n => (0..n).map(|i| b.proj(&xd, i)).collect(),
    };
    let r_ty = oi(b.m, ret);
    let r = b.emit("r", Rhs::Call(fdd, xs), r_ty);
    let y_ty = o(b.m, ret);
    let y = b.prim(Prim::Delta2Primal, &[r], y_ty);
    b.prim(Prim::CheckTangent, &[y, w], Type::Unit);
    let ta = b.m.tangent_type(&a);
    let g_ty = o(b.m, &ta);
    let g = b.prim(Prim::Delta2Grad, &[mark, r, w, xd], g_ty);
    b.emit("vjp", Rhs::Tuple(vec![y, g]), result.clone())
}
