//! Sinking a loop into the lambda that alone reads it: `let ys = map(f, xs); let g =
//! |..| { .. loop over ys .. }` where nothing else reads `ys` becomes `let g = |..| {
//! let ys = map(f, xs); .. }`, so that `fuse` can merge the two loops, which it only
//! does within one code. This is CHAD's shape: the primal makes the array of
//! backpropagators, the backpropagator closure loops over it.
//!
//! Only a `map` (which cannot fail by itself) whose function is inert (cannot fail, no
//! effect) sinks, or a `build`/`map2` that `unzip` made after a sibling loop with the
//! same lengths and function (`Context::shadowed`), so whether and when it runs is
//! invisible; only into a lambda made at
//! this one site (its captures change) whose every use of `ys` is a whole loop over it
//! (`map`, `map2`, `fold`, `scan`, `sum`), so each call of the lambda already costs a
//! pass over `ys` and computing it there costs no more than a constant factor.

use std::collections::HashMap;

use fluxion_core::{Atom, Binding, Body, CodeId, Prim, Rhs, VarId};

use fluxion_core::visit::for_each_branch_mut;

use crate::Context;
use crate::fuse::Producer;
use crate::uses::{closures_in, count_uses, mentions, results_in};

/// Sinks the loops of `body`'s top level that one lambda made here alone reads.
pub(crate) fn sink_loops(cx: &mut Context, body: &mut Body) {
    // The branches' own loops first (CHAD's translation of a guarded loop: the
    // backward pass is made in the branch).
    for b in &mut body.bindings {
        for_each_branch_mut(&mut b.rhs, &mut |branch| sink_loops(cx, branch));
    }
    let uses = count_uses(body);
    let closures = closures_in(body);
    let mut i = 0;
    while i < body.bindings.len() {
        if let Some(sunk) = try_sink(cx, body, i, &uses, &closures) {
            // The binding at `i` moved; what follows shifted down.
            if sunk {
                continue;
            }
        }
        i += 1;
    }
}

/// Sinks the binding at `i` if it is a sinkable loop; `Some(true)` if it moved.
fn try_sink(
    cx: &mut Context,
    body: &mut Body,
    i: usize,
    uses: &HashMap<VarId, usize>,
    closures: &HashMap<VarId, (CodeId, Vec<Atom>)>,
) -> Option<bool> {
    let b = &body.bindings[i];
    let ys = b.var;
    let producer = Producer::of(&b.rhs)?;
    let Atom::Var(fv) = producer.function() else {
        return None;
    };
    let (fcode, fcaps) = closures.get(&fv)?.clone();
    // A `map` cannot fail by itself; a `build` or `map2` can (on its lengths), unless
    // it is a shadowed copy (`Context::shadowed`), whose sibling had the same lengths.
    let sinkable = match producer {
        Producer::Map { .. } => cx.inert_code(fcode),
        Producer::Map2 { .. } | Producer::Build { .. } => {
            cx.inert_code(fcode) && cx.shadowed.borrow().contains(&fcode)
        }
    };
    if !sinkable || uses.get(&ys) != Some(&1) {
        return None;
    }
    // The one use: a closure made later in this block.
    let site = body.bindings[i + 1..]
        .iter()
        .position(|c| matches!(&c.rhs, Rhs::Closure(_, args) if args.contains(&Atom::Var(ys))))?
        + i
        + 1;
    let Rhs::Closure(child, args) = &body.bindings[site].rhs else {
        unreachable!("a closure")
    };
    let child = *child;
    let ok = cx.may_recapture(child, args) && only_looped_over(&cx.m.code(child).body, ys);
    if !ok {
        return Some(false);
    }
    // Move `f`'s closure too when this loop is its only use (so `fuse` knows it).
    let move_f = uses.get(&fv) == Some(&1)
        && body.bindings[..i]
            .iter()
            .any(|c| c.var == fv && matches!(c.rhs, Rhs::Closure(..)));
    let mut moved: Vec<Binding> = Vec::new();
    if move_f {
        let at = body.bindings.iter().position(|c| c.var == fv)?;
        moved.push(body.bindings.remove(at));
    }
    let at = body.bindings.iter().position(|c| c.var == ys)?;
    moved.push(body.bindings.remove(at));
    // What the moved bindings read from here becomes captures of the lambda.
    let mut needed: Vec<VarId> = Vec::new();
    let mut need = |a: &Atom| {
        if let Atom::Var(v) = a
            && !needed.contains(v)
        {
            needed.push(*v);
        }
    };
    if move_f {
        fcaps.iter().for_each(&mut need);
    } else {
        need(&producer.function());
    }
    match producer {
        Producer::Map { xs, .. } => need(&xs),
        Producer::Map2 { xs, zs, .. } => {
            need(&xs);
            need(&zs);
        }
        Producer::Build { n, .. } => need(&n),
    }
    let site = body
        .bindings
        .iter()
        .position(|c| matches!(&c.rhs, Rhs::Closure(c2, _) if *c2 == child))?;
    let Rhs::Closure(_, args) = &mut body.bindings[site].rhs else {
        unreachable!("a closure")
    };
    args.retain(|a| *a != Atom::Var(ys));
    let code = &mut cx.m.codes[child.0 as usize];
    code.captures.retain(|c| *c != ys);
    for v in needed {
        if !code.captures.contains(&v) {
            code.captures.push(v);
            args.push(Atom::Var(v));
        }
    }
    // Just before the first binding that reads `ys` (so that nothing comes between
    // the loop and its consumer, which `fuse` asks of a loop that checks lengths).
    let at = code
        .body
        .bindings
        .iter()
        .position(|c| mentions(&c.rhs, ys))
        .unwrap_or(code.body.bindings.len());
    code.body.bindings.splice(at..at, moved);
    cx.changed = true;
    Some(true)
}

/// Whether every use of `ys` in `body` is the array a loop at the body's top level runs
/// over (so every call of the lambda already passes over it; a loop in a branch might
/// not run), and nothing else — a branch, a lambda made there — reads it.
fn only_looped_over(body: &Body, ys: VarId) -> bool {
    let a = Atom::Var(ys);
    let looped_over = |rhs: &Rhs| match rhs {
        Rhs::Prim(Prim::Map | Prim::Fold | Prim::Scan, args) => {
            args.last() == Some(&a) && args[..args.len() - 1].iter().all(|x| *x != a)
        }
        Rhs::Prim(Prim::Map2, args) => args[0] != a && (args[1] == a || args[2] == a),
        Rhs::Prim(Prim::Sum, args) => args[0] == a,
        _ => false,
    };
    if body.result == a {
        return false;
    }
    let mut looped = false;
    for b in &body.bindings {
        if looped_over(&b.rhs) {
            looped = true;
            continue;
        }
        let mut reads = false;
        fluxion_core::visit::for_each_binding_in(std::slice::from_ref(b), &mut |inner| {
            reads |= mentions(&inner.rhs, ys) || results_in(&inner.rhs, ys)
        });
        if reads {
            return false;
        }
    }
    looped
}
