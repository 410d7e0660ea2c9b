//! Core → Core differentiation (see ARCHITECTURE.md, "fluxion-ad").
//!
//! Shared layers, which know no transformation:
//! - `builder` (emitting Core), `helpers` (generated per-type helper codes);
//! - `calculus` — the one table of primitive calculus: partials and series rules;
//! - `jets` — truncated power-series arithmetic (the series rules);
//! - `tangent` — zero and plus of every tangent type, with a symbolic zero;
//! - `coordinates` — coordinates of tangent spaces (`tdim`, `tbasis`, ...);
//! - `layer` — memo keys and `primal(v)` of translated values;
//! - `structural` — the structure-preserving translation skeleton.
//!
//! Transformations, each one module over those layers:
//! - [`forward_code`] (`forward`) — dual numbers; [`taylor_code`] (`taylor`) — jets;
//! - [`expand_module`] (`expand`) — the operators other than `jvp`/`taylor`, by the
//!   chosen [`AdMode`]'s algorithm (`mode`; `fwd_mode` is `--ad fwd`).
//!
//! Invariants: passes read and write Core only; every real primitive's calculus comes
//! from `calculus.rs`; generated code is ordinary Core (it passes the verifier and can
//! itself be transformed).

mod builder;
mod calculus;
mod cleanup;
mod coordinates;
pub mod expand;
mod forward;
mod fwd_mode;
mod helpers;
mod jets;
mod layer;
mod mode;
mod structural;
mod tangent;
mod taylor;

pub use expand::expand_module;
pub use forward::forward_code;
pub use mode::AdMode;
pub use taylor::taylor_code;

/// A program the transformation cannot handle (reported as a runtime error where the
/// operator was applied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdError(pub String);
