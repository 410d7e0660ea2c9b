//! Ahead-of-time translations for the native backend (filled in below).

use fluxion_core::Module;

/// Replaces the run-time differential operators whose translations can be made
/// ahead of time by calls of the translated codes.
pub fn resolve_operators(_m: &mut Module) {}
