//! Derivative code made ahead of time: before evaluation, the differential operators
//! that remain after `expand` (`jvp`, `taylor`, `%delta_vjp`, `%chad_vjp`) become
//! calls of translated codes, made here once (`resolve`), so a backend runs ordinary
//! Core plus the run-time support the translations call (the delta tape, `%chad_of`,
//! `%capture`).
//!
//! - `resolve` — the rounds over the codes the entry reaches, the candidates of a
//!   closure the compiler cannot see, and what `%chad_of` chooses among
//!   (`Module::chad_of`);
//! - `flow` — which closures can reach each variable (the candidates of `%chad_of`);
//! - `lift` — a closure as its translation in a layer, its captures lifted;
//! - `push` — an operator by pushing forward through a forward or Taylor translation;
//! - `delta` — `%delta_vjp` as a run of the delta translation on the tape.

mod delta;
mod flow;
mod lift;
mod push;
mod resolve;

pub use resolve::resolve_operators;

/// Whether `code`, or a code it reaches, applies a differential operator (as written).
pub(crate) fn applies_an_operator(m: &fluxion_core::Module, code: fluxion_core::CodeId) -> bool {
    resolve::holds_operator(m, code, &std::collections::HashSet::new())
}
