//! Let-floating out of loops (the demo of [Knossos] §9 shows `let` floating among ksc's
//! simplifications): a binding of a lambda's body that depends only on what the
//! lambda captures is computed once, where the closure is made, instead of once per
//! call — when the closure is the function a higher-order built-in calls per element
//! (`map`, `map2`, `build`, `sumbuild`, `fold`, `scan`, `iterate`).
//!
//! Only inert bindings float (`pure::is_total`: they cannot fail and have no
//! effect, or a `map` of a closure whose code is all inert), since the loop may call
//! the lambda zero times; only from the top of the
//! lambda's body (not from its branches); only from a lambda made at this one site, so
//! that its capture list can grow. A lambda reads its enclosing scope under the
//! variables' own ids, so a floated binding keeps its variable: it moves before the
//! `Closure` and joins the lambda's captures, nothing is renamed.

use std::collections::HashSet;

use fluxion_core::{Atom, Binding, Body, CodeId, Prim, Rhs, VarId};

use fluxion_core::visit::for_each_branch_mut;

use crate::Context;
use crate::pure::is_total;

/// Floats the loop-invariant bindings of the lambdas `body`'s loops call.
pub(crate) fn float_invariants(cx: &mut Context, body: &mut Body) {
    let loop_functions = loop_functions(body);
    let mut total = HashSet::new();
    total_closures(cx.m, body, &mut total, &mut HashSet::new());
    float_in(cx, body, &loop_functions, &total);
}

/// Adds to `total` the variables of `body` (branches included) bound to a closure
/// whose code cannot fail: every binding of it inert, or a `map` of such a closure.
/// A `map` of one is inert too, so it may float (a translation's primal of a captured
/// array of pairs is such a map: `activity.rs` in fluxion-ad). `open` holds the codes
/// being looked at (a function may close over itself).
fn total_closures(
    m: &fluxion_core::Module,
    body: &Body,
    total: &mut HashSet<VarId>,
    open: &mut HashSet<CodeId>,
) -> bool {
    let mut all = true;
    fluxion_core::visit::for_each_binding(body, &mut |b| match &b.rhs {
        Rhs::Closure(code, _) => {
            if open.insert(*code) {
                if total_closures(m, &m.code(*code).body, total, open) {
                    total.insert(b.var);
                }
                open.remove(code);
            }
        }
        rhs if is_total(m, rhs) || total_map(rhs, total) => {}
        _ => all = false,
    });
    all
}

/// A `map` of a closure that cannot fail.
fn total_map(rhs: &Rhs, total: &HashSet<VarId>) -> bool {
    matches!(rhs, Rhs::Prim(Prim::Map, args) if matches!(args[0], Atom::Var(f) if total.contains(&f)))
}

/// The variables passed as the per-element function of a higher-order built-in.
fn loop_functions(body: &Body) -> HashSet<VarId> {
    let mut out = HashSet::new();
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        if let Rhs::Prim(p, args) = &b.rhs {
            let f = match p {
                Prim::Map | Prim::Map2 | Prim::Fold | Prim::Scan => args.first(),
                Prim::Build | Prim::Sumbuild | Prim::Iterate | Prim::DeltaSumbuild => args.get(1),
                _ => None,
            };
            if let Some(Atom::Var(f)) = f {
                out.insert(*f);
            }
        }
    });
    out
}

fn float_in(
    cx: &mut Context,
    body: &mut Body,
    loop_functions: &HashSet<VarId>,
    total: &HashSet<VarId>,
) {
    let mut out = Vec::with_capacity(body.bindings.len());
    for mut b in std::mem::take(&mut body.bindings) {
        for_each_branch_mut(&mut b.rhs, &mut |branch| {
            float_in(cx, branch, loop_functions, total)
        });
        match &mut b.rhs {
            Rhs::Closure(code, args)
                if loop_functions.contains(&b.var)
                    && cx.closure_sites.get(code) == Some(&1)
                    && code.0 as usize >= cx.first
                    && Some(*code) != cx.current =>
            {
                let floated = float_from(cx, *code, args, total);
                cx.changed |= !floated.is_empty();
                out.extend(floated);
            }
            _ => {}
        }
        out.push(b);
    }
    body.bindings = out;
}

/// Takes the invariant inert bindings out of lambda `code`'s body, adding their
/// variables to its captures and to the closure's `args`; returns them.
fn float_from(
    cx: &mut Context,
    code: CodeId,
    args: &mut Vec<Atom>,
    total: &HashSet<VarId>,
) -> Vec<Binding> {
    let lambda = &cx.m.codes[code.0 as usize];
    // Captures read under their own ids: the closure must pass each as itself.
    if lambda.kind != fluxion_core::CodeKind::Lambda
        || lambda.captures.len() != args.len()
        || lambda
            .captures
            .iter()
            .zip(args.iter())
            .any(|(c, a)| *a != Atom::Var(*c))
    {
        return Vec::new();
    }
    let mut invariant: HashSet<VarId> = lambda.captures.iter().copied().collect();
    let mut body = std::mem::replace(
        &mut cx.m.codes[code.0 as usize].body,
        Body {
            bindings: Vec::new(),
            result: Atom::Lit(fluxion_core::Lit::Unit),
        },
    );
    let mut floated = Vec::new();
    let mut kept = Vec::with_capacity(body.bindings.len());
    for b in std::mem::take(&mut body.bindings) {
        if floats(cx, &b.rhs, &invariant, total) {
            invariant.insert(b.var);
            floated.push(b);
        } else {
            kept.push(b);
        }
    }
    body.bindings = kept;
    let lambda = &mut cx.m.codes[code.0 as usize];
    lambda.body = body;
    // Only what the rest of the body still reads becomes a capture.
    let used: HashSet<VarId> = fluxion_core::visit::free_vars(&lambda.body)
        .into_iter()
        .collect();
    for b in &floated {
        if used.contains(&b.var) {
            lambda.captures.push(b.var);
            args.push(Atom::Var(b.var));
        }
    }
    floated
}

/// Whether a binding may float: inert, every operand invariant, and not itself a
/// plain copy or a literal (nothing to save), nor a closure whose captures are passed
/// as other variables.
fn floats(cx: &Context, rhs: &Rhs, invariant: &HashSet<VarId>, total: &HashSet<VarId>) -> bool {
    if matches!(rhs, Rhs::Atom(_)) || !(is_total(cx.m, rhs) || total_map(rhs, total)) {
        return false;
    }
    let atoms: Vec<Atom> = match rhs {
        Rhs::Proj(a, _) => vec![*a],
        Rhs::Prim(_, args) | Rhs::Tuple(args) | Rhs::Array(args) | Rhs::Ctor(_, _, args) => {
            args.clone()
        }
        Rhs::Closure(c, args) => {
            let code = cx.m.code(*c);
            if code
                .captures
                .iter()
                .zip(args)
                .any(|(v, a)| *a != Atom::Var(*v))
            {
                return false;
            }
            args.clone()
        }
        _ => return false,
    };
    atoms.iter().all(|a| match a {
        Atom::Var(v) => invariant.contains(v),
        Atom::Lit(_) => true,
    })
}
