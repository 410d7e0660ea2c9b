//! Expands the differential operators other than `jvp` into Core that uses `jvp`
//! (forward mode, `--ad fwd`): one JVP per input coordinate, assembled with the
//! generated helpers of `helpers.rs`.
//!
//! - `diff(f, x)            = jvp(f, x, 1.0).1`
//! - `grad(f, x)            = tfrom(x, build(tdim(x), |i| jvp(f, x, tbasis(x, i)).1), 0)`
//! - `value_and_grad(f, x)  = (f(x), grad(f, x))`
//! - `vjp(f, x)             = (f(x), |w| tfrom(x, build(tdim(x), |i|
//!                               tdot(tcoords(jvp(f, x, tbasis(x, i)).1), tcoords(w))), 0))`
//! - `jacobian(f, x)`: columns `jvp(f, x, e_j).1`, transposed into rows
//! - `hessian(f, x)         = jacobian(|y| grad(f, y), x)` (forward over forward)
//!
//! The result is ordinary Core, so the forward pass (and any later one) transforms it
//! like user code: nested operators need no special case.

use fluxion_core::verify::differentiated_argument;
use fluxion_core::{Atom, Body, CodeId, Module, Prim, Rhs, Type, VarId};

use crate::builder::{Builder, int, real};
use crate::helpers::{basis_of, coords_of, dim_of, dot, from_coords, var_of};

/// Whether a primitive is expanded here.
fn is_expanded(p: Prim) -> bool {
    use Prim::*;
    matches!(p, Grad | ValueAndGrad | Vjp | Diff | Jacobian | Hessian)
}

/// Whether any code uses an operator whose algorithm `--ad` chooses (`grad`,
/// `value_and_grad`, `vjp`, `jacobian`, `hessian`).
pub fn uses_reverse_operators(m: &Module) -> bool {
    m.codes
        .iter()
        .any(|c| body_has_prim(&c.body, &|p| is_expanded(p) && p != Prim::Diff))
}

/// Expands every operator in every code of the module (including codes the expansion
/// itself creates).
pub fn expand_module(m: &mut Module) {
    let mut next = 0;
    while next < m.codes.len() {
        let id = CodeId(next as u32);
        if body_has_prim(&m.code(id).body, &is_expanded) {
            let body = m.code(id).body.clone();
            let span = m.code(id).span;
            let mut b = Builder::new(m, span);
            let new_body = expand_body(&mut b, &body);
            m.codes[next].body = new_body;
        }
        next += 1;
    }
}

/// Whether `body` (or a body nested in it) applies a primitive satisfying `pred`.
fn body_has_prim(body: &Body, pred: &dyn Fn(Prim) -> bool) -> bool {
    body.bindings.iter().any(|b| match &b.rhs {
        Rhs::Prim(p, _) => pred(*p),
        Rhs::If(_, t, e) => body_has_prim(t, pred) || body_has_prim(e, pred),
        Rhs::Match(_, arms, d) => {
            arms.iter().any(|a| body_has_prim(&a.body, pred))
                || d.as_ref().is_some_and(|d| body_has_prim(d, pred))
        }
        _ => false,
    })
}

fn expand_body(b: &mut Builder, body: &Body) -> Body {
    b.block(|b| {
        for binding in &body.bindings {
            b.span = binding.span;
            let rhs = match &binding.rhs {
                Rhs::Prim(p, args) if is_expanded(*p) => Rhs::Atom(expand_op(b, *p, args)),
                Rhs::If(c, t, e) => {
                    Rhs::If(*c, Box::new(expand_body(b, t)), Box::new(expand_body(b, e)))
                }
                Rhs::Match(s, arms, d) => {
                    let arms = arms
                        .iter()
                        .map(|a| fluxion_core::Arm {
                            tag: a.tag,
                            fields: a.fields.clone(),
                            body: expand_body(b, &a.body),
                        })
                        .collect();
                    let d = d.as_ref().map(|d| Box::new(expand_body(b, d)));
                    Rhs::Match(*s, arms, d)
                }
                other => other.clone(),
            };
            b.bind(binding.var, rhs);
        }
        body.result
    })
}

/// `(A, B, number of parameters)` of a function value.
fn signature(b: &Builder, f: &Atom) -> (Type, Type, usize) {
    let Type::Fn(params, ret) = b.ty(f) else {
        unreachable!("differential operator on a non-function (the type checker rejects it)")
    };
    (differentiated_argument(&params), *ret, params.len())
}

/// `f(x)`, where `x` is the tuple of the arguments if `f` has several.
fn call_at(b: &mut Builder, f: Atom, x: Atom, n_params: usize, ret: Type) -> Atom {
    let args = if n_params == 1 {
        vec![x]
    } else {
        (0..n_params).map(|i| b.proj(&x, i)).collect()
    };
    b.emit("value", Rhs::Call(f, args), ret)
}

/// `jvp(f, x, d).1`
fn jvp_tangent(b: &mut Builder, f: Atom, x: Atom, d: Atom, ret: &Type) -> Atom {
    let tret = b.m.tangent_type(ret);
    let pair = b.prim(Prim::Jvp, &[f, x, d], Type::Tuple(vec![ret.clone(), tret]));
    b.proj(&pair, 1)
}

fn expand_op(b: &mut Builder, p: Prim, args: &[Atom]) -> Atom {
    let (a_ty, ret, n_params) = signature(b, &args[0]);
    let f = var_of(b, args[0]);
    let x = var_of(b, args[1]);
    match p {
        Prim::Diff => jvp_tangent(b, Atom::Var(f), Atom::Var(x), real(1.0), &ret),
        Prim::Grad => grad(b, f, x, &a_ty),
        Prim::ValueAndGrad => {
            let y = call_at(b, Atom::Var(f), Atom::Var(x), n_params, ret);
            let g = grad(b, f, x, &a_ty);
            b.tuple("value_and_grad", vec![y, g])
        }
        Prim::Vjp => {
            let y = call_at(b, Atom::Var(f), Atom::Var(x), n_params, ret.clone());
            let yv = var_of(b, y);
            let tb = b.m.tangent_type(&ret);
            let pullback = b.lambda("pullback", &[f, x, yv], vec![tb], |b, ps| {
                // A cotangent must have the result's shape (constructors, lengths).
                b.prim(Prim::CheckTangent, &[Atom::Var(yv), ps[0]], Type::Unit);
                let w = coords_of(b, &ret, ps[0]);
                let wv = var_of(b, w);
                let n = dim_of(b, &a_ty, Atom::Var(x));
                let column = b.lambda("pullback_coord", &[f, x, wv], vec![Type::Int], |b, ps| {
                    let e = basis_of(b, &a_ty, Atom::Var(x), ps[0]);
                    let jv = jvp_tangent(b, Atom::Var(f), Atom::Var(x), e, &ret);
                    let jc = coords_of(b, &ret, jv);
                    dot(b, jc, Atom::Var(wv))
                });
                let coords = b.prim(Prim::Build, &[n, column], Type::array(Type::Real));
                from_coords(b, &a_ty, Atom::Var(x), coords, int(0))
            });
            b.tuple("vjp", vec![Atom::Var(yv), pullback])
        }
        Prim::Jacobian => jacobian(b, f, x, n_params),
        Prim::Hessian => {
            let g = b.lambda("gradient", &[f], vec![Type::array(Type::Real)], |b, ps| {
                let y = var_of(b, ps[0]);
                grad(b, f, y, &Type::array(Type::Real))
            });
            let g = var_of(b, g);
            jacobian(b, g, x, 1)
        }
        _ => unreachable!("not an expanded operator"),
    }
}

fn grad(b: &mut Builder, f: VarId, x: VarId, a_ty: &Type) -> Atom {
    let n = dim_of(b, a_ty, Atom::Var(x));
    let a = a_ty.clone();
    let column = b.lambda("grad_coord", &[f, x], vec![Type::Int], |b, ps| {
        let e = basis_of(b, &a, Atom::Var(x), ps[0]);
        jvp_tangent(b, Atom::Var(f), Atom::Var(x), e, &Type::Real)
    });
    let coords = b.prim(Prim::Build, &[n, column], Type::array(Type::Real));
    from_coords(b, a_ty, Atom::Var(x), coords, int(0))
}

/// Rows are gradients of the outputs: columns `jvp(f, x, e_j).1`, transposed.
fn jacobian(b: &mut Builder, f: VarId, x: VarId, n_params: usize) -> Atom {
    let reals = Type::array(Type::Real);
    let matrix = Type::array(reals.clone());
    let n = b.prim(Prim::Length, &[Atom::Var(x)], Type::Int);
    let column = b.lambda("jacobian_column", &[f, x], vec![Type::Int], |b, ps| {
        let e = basis_of(b, &Type::array(Type::Real), Atom::Var(x), ps[0]);
        jvp_tangent(b, Atom::Var(f), Atom::Var(x), e, &Type::array(Type::Real))
    });
    let cols = b.prim(Prim::Build, &[n, column], matrix.clone());
    let y = call_at(b, Atom::Var(f), Atom::Var(x), n_params, reals.clone());
    let m = b.prim(Prim::Length, &[y], Type::Int);
    let (cols, n) = (var_of(b, cols), var_of(b, n));
    let row = b.lambda("jacobian_row", &[cols, n], vec![Type::Int], |b, ps| {
        let i = var_of(b, ps[0]);
        let entry = b.lambda("jacobian_entry", &[cols, i], vec![Type::Int], |b, ps| {
            let col = b.prim(
                Prim::Index,
                &[Atom::Var(cols), ps[0]],
                Type::array(Type::Real),
            );
            b.prim(Prim::Index, &[col, Atom::Var(i)], Type::Real)
        });
        b.prim(Prim::Build, &[Atom::Var(n), entry], Type::array(Type::Real))
    });
    b.prim(Prim::Build, &[m, row], matrix)
}
