//! Fluxion Core: the typed, A-normal-form intermediate representation every pass
//! reads and writes (see ARCHITECTURE.md).
//!
//! Invariant: this crate contains no transformations. It defines the IR
//! ([`term`], [`module`]), types ([`ty`]), primitives ([`prim`]), the printer
//! ([`print`], whose output is Fluxion source) and the verifier ([`verify`]).
//! Closures survive lowering: a lambda is a [`Code`] plus captured values.

pub mod inline_site;
pub mod module;
pub mod prim;
pub mod print;
pub mod term;
pub mod ty;
pub mod verify;
pub mod visit;

pub use inline_site::{INLINE_SITE_SOURCE, InlineSite};
pub use module::Module;
pub use prim::{MAX_ARRAY_LEN, Prim};
pub use term::*;
pub use ty::{
    EnumDef, EnumId, EnumOrigin, FN_COTANGENT, Jet, Type, TypeMap, VariantDef, chad_backprop_result,
};

#[cfg(test)]
mod tests;
