//! Expands the differential operators other than `jvp` and `taylor` before evaluation,
//! by the chosen mode's algorithm (`mode.rs`):
//!
//! - `diff(f, x)            = jvp(f, x, 1.0).1` (every mode)
//! - `grad`, `vjp`, `jacobian`: the mode's [`ReverseAlgorithm`]
//! - `value_and_grad(f, x)  = (f(x), grad(f, x))` unless the mode gets both at once
//! - `hessian(f, x)         = jacobian(|y| grad(f, y), x)`, the jacobian by the
//!   mode's algorithm unless it nests otherwise (delta: by columns of JVPs)
//! - `sparse_jacobian(f, x)`: `sparsity`, a colouring, and a `jvp` or the mode's
//!   `vjp` per colour (`sparse_jacobian.rs`)
//!
//! The result is ordinary Core, so the forward pass (and any later one) transforms it
//! like user code: nested operators need no special case.

use fluxion_core::verify::differentiated_argument;
use fluxion_core::{Atom, Body, CodeId, Module, Prim, Rhs, Span, Type};

use crate::AdError;
use crate::builder::{Builder, real};
use crate::helpers::var_of;
use crate::mode::{AdMode, ReverseAlgorithm, Site, jvp_tangent};

/// Whether a primitive is expanded here.
fn is_expanded(p: Prim) -> bool {
    use Prim::*;
    matches!(
        p,
        Grad | ValueAndGrad | Vjp | Diff | Jacobian | Hessian | SparseJacobian
    )
}

/// Whether a primitive's algorithm is the one `--ad` chooses.
fn depends_on_mode(p: Prim) -> bool {
    is_expanded(p) && p != Prim::Diff
}

/// Whether any code uses an operator whose algorithm `--ad` chooses (`grad`,
/// `value_and_grad`, `vjp`, `jacobian`, `hessian`).
pub fn uses_reverse_operators(m: &Module) -> bool {
    first_reverse_operator(m).is_some()
}

/// Where the program first applies an operator whose algorithm `--ad` chooses (in
/// code order: the prelude's codes come first, then the user's).
pub fn first_reverse_operator(m: &Module) -> Option<Span> {
    m.codes
        .iter()
        .find_map(|c| first_prim(&c.body, &depends_on_mode))
}

/// Expands every operator in every code of the module (including codes the expansion
/// itself creates) with `mode`'s algorithm. A mode that is not built yet is an error
/// only for a program that uses one of the operators it would compute.
pub fn expand_module(m: &mut Module, mode: AdMode) -> Result<(), AdError> {
    // The module is scanned for reverse operators only when the mode is not built.
    let algorithm = match mode.algorithm() {
        Some(a) => a,
        None => match first_reverse_operator(m) {
            None => AdMode::Fwd.algorithm().expect("fwd is built"),
            Some(span) => {
                return Err(AdError::at(
                    span,
                    format!("--ad {} is not implemented yet; use --ad fwd", mode.name()),
                ));
            }
        },
    };
    let mut next = 0;
    while next < m.codes.len() {
        let id = CodeId(next as u32);
        if body_has_prim(&m.code(id).body, &is_expanded) {
            let body = m.code(id).body.clone();
            let span = m.code(id).span;
            let mut b = Builder::new(m, span);
            let new_body = expand_body(&mut b, &body, algorithm);
            m.codes[next].body = new_body;
        }
        next += 1;
    }
    Ok(())
}

/// Whether `body` (or a body nested in it) applies a primitive satisfying `pred`.
fn body_has_prim(body: &Body, pred: &dyn Fn(Prim) -> bool) -> bool {
    first_prim(body, pred).is_some()
}

/// Where `body` (or a body nested in it) first applies a primitive satisfying `pred`.
fn first_prim(body: &Body, pred: &dyn Fn(Prim) -> bool) -> Option<Span> {
    body.bindings.iter().find_map(|b| match &b.rhs {
        Rhs::Prim(p, _) if pred(*p) => Some(b.span),
        Rhs::If(_, t, e) => first_prim(t, pred).or_else(|| first_prim(e, pred)),
        Rhs::Match(_, arms, d) => arms
            .iter()
            .find_map(|a| first_prim(&a.body, pred))
            .or_else(|| d.as_deref().and_then(|d| first_prim(d, pred))),
        _ => None,
    })
}

fn expand_body(b: &mut Builder, body: &Body, alg: &dyn ReverseAlgorithm) -> Body {
    b.block(|b| {
        for binding in &body.bindings {
            b.span = binding.span;
            let rhs = match &binding.rhs {
                Rhs::Prim(p, args) if is_expanded(*p) => Rhs::Atom(expand_op(b, *p, args, alg)),
                Rhs::If(c, t, e) => Rhs::If(
                    *c,
                    Box::new(expand_body(b, t, alg)),
                    Box::new(expand_body(b, e, alg)),
                ),
                Rhs::Match(s, arms, d) => {
                    let arms = arms
                        .iter()
                        .map(|a| fluxion_core::Arm {
                            tag: a.tag,
                            fields: a.fields.clone(),
                            body: expand_body(b, &a.body, alg),
                        })
                        .collect();
                    let d = d.as_ref().map(|d| Box::new(expand_body(b, d, alg)));
                    Rhs::Match(*s, arms, d)
                }
                other => other.clone(),
            };
            b.span = binding.span; // the branches' bindings moved it
            b.bind(binding.var, rhs);
        }
        body.result
    })
}

/// The operator's site: `f` and `x` as variables, `(A, B, number of parameters)`.
fn site(b: &mut Builder, f: Atom, x: Atom) -> Site {
    let Type::Fn(params, ret) = b.ty(&f) else {
        unreachable!("differential operator on a non-function (the type checker rejects it)")
    };
    Site {
        f: var_of(b, f),
        x: var_of(b, x),
        a: differentiated_argument(&params),
        b: *ret,
        n_params: params.len(),
    }
}

fn expand_op(b: &mut Builder, p: Prim, args: &[Atom], alg: &dyn ReverseAlgorithm) -> Atom {
    let s = site(b, args[0], args[1]);
    match p {
        Prim::Diff => jvp_tangent(b, Atom::Var(s.f), Atom::Var(s.x), real(1.0), &s.b),
        Prim::Grad => alg.grad(b, &s),
        Prim::Vjp => alg.vjp(b, &s),
        Prim::Jacobian => alg.jacobian(b, &s),
        Prim::ValueAndGrad => alg.value_and_grad(b, &s),
        Prim::Hessian => alg.hessian(b, &s),
        Prim::SparseJacobian => crate::sparse_jacobian::sparse_jacobian(b, &s, alg),
        _ => unreachable!("not an expanded operator"),
    }
}
