//! Fluxion's front end: source text to surface AST (docs/language.md §1–§3).
//!
//! Invariant: this crate knows nothing about types or Core. Parsing never fails; it
//! returns the tree it could build plus every [`SyntaxError`] found.

pub mod ast;
pub mod lexer;
pub mod parser;
pub mod span;

pub use parser::{Parse, ReplInput, SyntaxError, parse_expr, parse_module, parse_repl_input};
pub use span::{LineIndex, SourceId, Span, line_col};

#[cfg(test)]
mod tests;
