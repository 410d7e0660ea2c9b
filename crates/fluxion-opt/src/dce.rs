//! Dead-code elimination: bindings whose value is unused and whose right-hand side
//! cannot fail or have an effect (`pure::is_removable`), so the program's meaning,
//! errors included, is unchanged.

use std::collections::HashSet;

use fluxion_core::{Atom, Body, Module, Rhs, VarId};

use crate::Context;
use crate::pure::is_removable;

/// Removes dead removable bindings from `body` and the bodies nested in it.
pub(crate) fn eliminate_dead_bindings(cx: &mut Context, body: &mut Body) {
    let mut live = HashSet::new();
    sweep(cx.m, body, &mut live);
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
        if !live.contains(&binding.var) && is_removable(m, &binding.rhs) {
            continue;
        }
        match &mut binding.rhs {
            Rhs::Atom(a) | Rhs::Proj(a, _) => use_atom(a, live),
            Rhs::Prim(_, args)
            | Rhs::Tuple(args)
            | Rhs::Array(args)
            | Rhs::Ctor(_, _, args)
            | Rhs::Closure(_, args)
            | Rhs::CallDirect(_, args) => args.iter().for_each(|a| use_atom(a, live)),
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
