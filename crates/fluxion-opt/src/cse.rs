//! Common-subexpression elimination: a binding whose right-hand side equals an
//! earlier one's in scope (`pure::is_repeatable`) becomes a use of that one. Scope is
//! dominance in the tree of bodies: what a body binds is available to the bodies
//! nested after it, not to its siblings.

use std::collections::HashMap;

use fluxion_core::{Atom, Body, Lit, Rhs, Type, VarId};

use crate::Context;

use crate::pure::is_repeatable;
use crate::subst::Subst;

/// Merges repeated pure right-hand sides in `body` and the bodies nested in it.
pub(crate) fn eliminate_common_subexpressions(cx: &mut Context, body: &mut Body) {
    let mut subst = Subst::default();
    walk(cx, body, &mut HashMap::new(), &mut subst);
}

/// An atom with its real compared by bits (so `NaN` equals itself and `0.0` is not
/// `-0.0`).
#[derive(Clone, PartialEq, Eq, Hash)]
enum AtomKey {
    Var(u32),
    Real(u64),
    Int(i64),
    Bool(bool),
    Unit,
}

fn key_of(a: &Atom) -> AtomKey {
    match a {
        Atom::Var(VarId(v)) => AtomKey::Var(*v),
        Atom::Lit(Lit::Real(x)) => AtomKey::Real(x.to_bits()),
        Atom::Lit(Lit::Int(i)) => AtomKey::Int(*i),
        Atom::Lit(Lit::Bool(b)) => AtomKey::Bool(*b),
        Atom::Lit(Lit::Unit) => AtomKey::Unit,
    }
}

/// What a repeatable right-hand side computes: its kind, operands and type (`%tzero()`
/// and `[]` say their type only through their binding).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    kind: (u8, u32, u32),
    args: Vec<AtomKey>,
    ty: Type,
}

fn key(rhs: &Rhs, ty: &Type) -> Option<Key> {
    if !is_repeatable(rhs) {
        return None;
    }
    let keys = |args: &[Atom]| args.iter().map(key_of).collect();
    let (kind, args) = match rhs {
        Rhs::Tuple(args) => ((0, 0, 0), keys(args)),
        Rhs::Proj(a, i) => ((1, *i as u32, 0), vec![key_of(a)]),
        Rhs::Array(args) => ((2, 0, 0), keys(args)),
        Rhs::Ctor(e, tag, args) => ((3, e.0, *tag), keys(args)),
        Rhs::Closure(c, args) => ((4, c.0, 0), keys(args)),
        Rhs::Prim(p, args) => ((5, *p as u32, 0), keys(args)),
        _ => return None,
    };
    Some(Key {
        kind,
        args,
        ty: ty.clone(),
    })
}

/// `available` holds what the enclosing bodies bound; what this body adds is removed
/// again at its end (an undo list, not a copy per body: linear in the code's size).
fn walk(cx: &Context, body: &mut Body, available: &mut HashMap<Key, VarId>, subst: &mut Subst) {
    let mut added = Vec::new();
    let mut kept = Vec::with_capacity(body.bindings.len());
    for mut binding in std::mem::take(&mut body.bindings) {
        subst.rhs(&mut binding.rhs);
        match &mut binding.rhs {
            Rhs::If(_, t, e) => {
                walk(cx, t, available, subst);
                walk(cx, e, available, subst);
            }
            Rhs::Match(_, arms, default) => {
                for arm in arms.iter_mut() {
                    walk(cx, &mut arm.body, available, subst);
                }
                if let Some(d) = default {
                    walk(cx, d, available, subst);
                }
            }
            rhs => {
                if let Some(k) = key(rhs, cx.m.var_ty(binding.var)) {
                    if let Some(earlier) = available.get(&k) {
                        if cx.captured.contains(&binding.var) {
                            // A lambda reads it under this id: a copy, not a renaming.
                            *rhs = Rhs::Atom(Atom::Var(*earlier));
                            kept.push(binding);
                        } else {
                            subst.insert(binding.var, Atom::Var(*earlier));
                        }
                        continue;
                    }
                    available.insert(k.clone(), binding.var);
                    added.push(k);
                }
            }
        }
        kept.push(binding);
    }
    body.bindings = kept;
    body.result = subst.atom(&body.result);
    for k in added {
        available.remove(&k);
    }
}
