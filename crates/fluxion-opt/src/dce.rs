//! Dead-code elimination: bindings whose value is unused and whose right-hand side
//! cannot fail or have an effect (`pure::is_removable`), or is a `%delta` whose node
//! no adjoint reaches (`pure::is_dead_if_unused`), so the program's meaning, errors
//! included, is unchanged.

use std::collections::HashSet;

use fluxion_core::{Atom, Body, Module, Rhs, VarId};

use fluxion_core::visit::for_each_branch_mut;

use crate::Context;
use crate::pure::is_dead_if_unused;
use crate::uses::count_uses;

/// Removes dead removable bindings from `body` and the bodies nested in it, and the
/// captures that the lambdas made here no longer read.
pub(crate) fn eliminate_dead_bindings(cx: &mut Context, body: &mut Body) {
    prune_captures(cx, body);
    let mut live = HashSet::new();
    sweep(cx.m, body, &mut live);
}

/// Drops the captures of lambdas made in `body` that their bodies no longer read (a
/// rule removed the reader), where the capture list may be rewritten
/// (`Context::may_recapture`): what they captured may then die here.
fn prune_captures(cx: &mut Context, body: &mut Body) {
    for b in &mut body.bindings {
        match &mut b.rhs {
            Rhs::Closure(child, args) if cx.may_recapture(*child, args) => {
                let used = count_uses(&cx.m.code(*child).body);
                let code = &mut cx.m.codes[child.0 as usize];
                let keep: Vec<bool> = code.captures.iter().map(|c| used.contains_key(c)).collect();
                if keep.iter().all(|k| *k) {
                    continue;
                }
                let mut kept = keep.iter();
                code.captures
                    .retain(|_| *kept.next().expect("one per capture"));
                let mut kept = keep.iter();
                args.retain(|_| *kept.next().expect("one per capture"));
            }
            rhs => for_each_branch_mut(rhs, &mut |branch| prune_captures(cx, branch)),
        }
    }
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
        if !live.contains(&binding.var) && is_dead_if_unused(m, &binding.rhs) {
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
