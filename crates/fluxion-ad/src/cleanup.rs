//! Removes the bindings a translation leaves unused (a dual number's pair whose parts
//! were taken apart where they were made, say). Only bindings that cannot fail or loop
//! are removed — building tuples, arrays, constructors and closures, projections, and
//! real arithmetic — so the program's meaning, errors included, is unchanged.

use std::collections::HashSet;

use fluxion_core::{Atom, Body, Module, Rhs, Type, VarId};

use crate::calculus::is_real_function;

/// Removes dead pure bindings from `body` and the bodies nested in it.
pub(crate) fn eliminate_dead_bindings(m: &Module, body: &mut Body) {
    let mut live = HashSet::new();
    sweep(m, body, &mut live);
}

fn use_atom(a: &Atom, live: &mut HashSet<VarId>) {
    if let Atom::Var(v) = a {
        live.insert(*v);
    }
}

/// Walks `body` backwards: a binding is kept if its variable is live or its
/// right-hand side may fail; a kept binding's operands become live.
fn sweep(m: &Module, body: &mut Body, live: &mut HashSet<VarId>) {
    use_atom(&body.result, live);
    let mut kept = Vec::with_capacity(body.bindings.len());
    for mut binding in std::mem::take(&mut body.bindings).into_iter().rev() {
        if !live.contains(&binding.var) && is_pure(m, &binding.rhs) {
            continue;
        }
        match &mut binding.rhs {
            Rhs::Atom(a) | Rhs::Proj(a, _) => use_atom(a, live),
            Rhs::Prim(_, args) | Rhs::Tuple(args) | Rhs::Array(args) | Rhs::Ctor(_, _, args) => {
                args.iter().for_each(|a| use_atom(a, live));
            }
            Rhs::Closure(_, args) | Rhs::CallDirect(_, args) => {
                args.iter().for_each(|a| use_atom(a, live))
            }
            Rhs::Call(f, args) => {
                use_atom(f, live);
                args.iter().for_each(|a| use_atom(a, live));
            }
            Rhs::If(c, t, e) => {
                sweep(m, t, live);
                sweep(m, e, live);
                use_atom(c, live);
            }
            Rhs::Match(s, arms, default) => {
                for arm in arms.iter_mut() {
                    sweep(m, &mut arm.body, live);
                }
                if let Some(d) = default {
                    sweep(m, d, live);
                }
                use_atom(s, live);
            }
        }
        kept.push(binding);
    }
    kept.reverse();
    body.bindings = kept;
}

fn is_pure(m: &Module, rhs: &Rhs) -> bool {
    match rhs {
        Rhs::Atom(_)
        | Rhs::Tuple(_)
        | Rhs::Proj(..)
        | Rhs::Array(_)
        | Rhs::Ctor(..)
        | Rhs::Closure(..) => true,
        // Real arithmetic never fails (Int arithmetic can overflow).
        Rhs::Prim(p, args) => {
            is_real_function(*p) && args.iter().all(|a| m.atom_ty(a) != Type::Int)
        }
        _ => false,
    }
}
