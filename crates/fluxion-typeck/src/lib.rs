//! Name resolution, type inference and lowering of the surface AST to Core.
//!
//! Entry point: [`elaborate_program`]. Input: the prelude's and the user's parsed
//! modules. Output: a verified-shape Core [`Module`] or every type error found.
//! See `elaborate.rs` for what is desugared here.

mod builtins;
mod elaborate;
mod infer;
mod patterns;
mod scope;

use fluxion_core::{Module, Span};
use fluxion_syntax::ast;

/// The name of the function [`elaborate_with_expr`] makes of its expression.
pub const EXPR_ENTRY: &str = "repl_expr";

/// A type error (or a name-resolution error): where, and what.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TypeError {
    pub span: Span,
    pub message: String,
}

/// Elaborates the given modules (pass the prelude first) into one Core module. A later
/// module's function shadows an earlier one's of the same name in the later module's
/// code only: the prelude always calls its own functions.
pub fn elaborate_program(modules: &[&ast::Module]) -> Result<Module, Vec<TypeError>> {
    elaborate_with_expr(modules, None)
}

/// Like [`elaborate_program`], and also elaborates `expr` as a top-level function
/// named [`EXPR_ENTRY`] with no parameters and an inferred result type (the REPL).
pub fn elaborate_with_expr(
    modules: &[&ast::Module],
    expr: Option<&ast::Expr>,
) -> Result<Module, Vec<TypeError>> {
    let inputs: Vec<elaborate::Input> = modules
        .iter()
        .map(|m| elaborate::Input { module: m })
        .collect();
    let mut el = elaborate::Elab::new();
    el.declare_enums(&inputs);
    let defs = el.declare_functions(&inputs);
    for (code, def, input) in defs {
        el.define_function(code, def, input);
    }
    if let Some(e) = expr {
        el.define_expr_entry(EXPR_ENTRY, e);
    }
    el.solve_deferred(true);
    if !el.errors.is_empty() {
        let mut errors = el.errors;
        errors.sort_by_key(|e| (e.span.source, e.span.start));
        return Err(errors);
    }
    // Every type is final now.
    let mut module = el.module;
    for (info, ty) in module.vars.iter_mut().zip(&el.var_tys) {
        info.ty = el.u.zonk(ty);
    }
    for (code, ret) in &el.lambda_rets {
        module.codes[code.0 as usize].ret = el.u.zonk(ret);
    }
    Ok(module)
}

#[cfg(test)]
mod tests;
