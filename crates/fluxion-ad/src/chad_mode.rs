//! `--ad chad`: the reverse-mode operators by reverse CHAD ([CHAD]), all through one
//! run-time primitive, `%chad_vjp(f, x, w) = (f(x), wᵀ·J)`: the interpreter translates
//! `f` by CHAD (`chad.rs`), calls the translation for the value and its
//! backpropagator, and applies the backpropagator to `w`. The operators built on it
//! are `vjp_primitive.rs`'s (`hessian` forward-over-CHAD).

use fluxion_core::Prim;

use crate::vjp_primitive::ByVjpPrimitive;

/// The CHAD algorithm.
pub(crate) static CHAD_MODE: ByVjpPrimitive = ByVjpPrimitive {
    prim: Prim::ChadVjp,
    jacobian: None,
};
