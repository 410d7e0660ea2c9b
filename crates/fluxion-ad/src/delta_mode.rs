//! `--ad delta`: the reverse-mode operators by dual numbers with deltas ([Delta] §7),
//! all through one run-time primitive, `%delta_vjp(f, x, w) = (f(x), wᵀ·J)`: the
//! interpreter translates `f` by the delta layer (`delta.rs`), runs it on a fresh tape
//! with an input id per real of `x`, and sweeps the tape backwards once from `w`.
//! The operators built on it are `vjp_primitive.rs`'s.

use fluxion_core::Prim;

use crate::vjp_primitive::ByVjpPrimitive;

/// The delta algorithm.
pub(crate) static DELTA_MODE: ByVjpPrimitive = ByVjpPrimitive {
    prim: Prim::DeltaVjp,
    jacobian: Some(Prim::DeltaJacobian),
};
