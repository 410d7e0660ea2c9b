//! Core → Core differentiation passes (see ARCHITECTURE.md, "AD").
//!
//! - [`expand::expand_module`] rewrites `grad`, `value_and_grad`, `vjp`, `diff`,
//!   `jacobian`, `hessian` into Core that uses `jvp` (forward mode, `--ad fwd`);
//! - [`forward::forward_code`] is the forward-mode (dual number) translation of one
//!   code, memoised; the interpreter calls it when it evaluates `jvp`.
//!
//! Invariants: passes read and write Core only; every real primitive's derivative comes
//! from `derivatives.rs`; generated code is ordinary Core (it passes the verifier and
//! can itself be transformed).

mod builder;
mod cleanup;
mod derivatives;
pub mod expand;
mod helpers;
mod jets;
pub mod translate;

pub use expand::expand_module;
pub use translate::{forward_code, taylor_code};

/// A program the transformation cannot handle (reported as a runtime error where the
/// operator was applied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdError(pub String);
