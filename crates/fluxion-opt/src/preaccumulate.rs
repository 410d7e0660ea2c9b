//! Preaccumulation (issue 32): in delta-translated code, a sum of reals over a `build`
//! whose element function records much — it calls a function on no cycle of calls or
//! runs a loop of more than arithmetic — `%delta_sum(build(n, f))`, becomes
//! `%delta_sumbuild(n, f)`. The run time sweeps each
//! element's own tape entries as soon as the element is made, seeded with 1, adds
//! what reaches the ids made before the loop into one coefficient per id, and drops
//! the element's entries: the sum is one entry on the ids it read (Griewank and
//! Walther's local preaccumulation; [Delta] §7's tape, swept in pieces). The tape of a
//! sum over n points then holds one point's entries, not n points' (GMM's gradient:
//! its likelihood's sum over the data), and the sweep that follows meets one entry.
//!
//! The sum's derivative is linear in its elements', so the value is the same up to
//! rounding: each coefficient is a sum over the elements before it is scaled by the
//! sum's adjoint, where the whole tape's sweep scaled each element's part first. Both
//! back ends run this code, so they agree bit for bit (fluxion-interp's
//! `delta_sumbuild`, fluxion-native's `fx_pre_*`).
//!
//! Other elements stay as they are: the native back end makes a sum of arithmetic
//! elements a loop node (`delta_loop.rs`), which records nothing per element, and an
//! element whose loops are of arithmetic records a loop node or two. A late
//! pass: no translation reads `%delta_sumbuild` (the delta layer translated again
//! makes it `%delta_sum` of the `build` once more).

use std::collections::HashSet;

use fluxion_core::{Atom, Binding, Body, CodeId, Module, Prim, Rhs, Type};

use crate::Context;
use crate::uses::{closures_in, count_uses};

/// Rewrites the preaccumulable sums of `body` (in its branches too).
pub(crate) fn preaccumulate_sums(cx: &mut Context, body: &mut Body) {
    let uses = count_uses(body);
    let closures = closures_in(body);
    let recursive = cx.recursive;
    let mut changed = false;
    rewrite(
        cx.m,
        body,
        &mut |m, xs, f| {
            let Atom::Var(f) = f else { return false };
            uses.get(&xs) == Some(&1)
                && *m.var_ty(xs) == Type::array(pair())
                && closures
                    .get(&f)
                    .is_some_and(|(code, _)| records_much(m, *code, recursive))
        },
        &mut changed,
    );
    cx.changed |= changed;
}

/// `(Real, Int)`: a real and its delta's id.
fn pair() -> Type {
    Type::Tuple(vec![Type::Real, Type::Int])
}

/// Replaces `xs = build(n, f)` … `s = %delta_sum(xs)` (one body) where `wanted(xs, f)` by `t = %delta_sumbuild(n, f)` at the `build` and `s = t`.
fn rewrite(
    m: &mut Module,
    body: &mut Body,
    wanted: &mut dyn FnMut(&Module, fluxion_core::VarId, Atom) -> bool,
    changed: &mut bool,
) {
    let mut builds = std::collections::HashMap::new();
    for (k, b) in body.bindings.iter().enumerate() {
        if let Rhs::Prim(Prim::Build, a) = &b.rhs {
            builds.insert(b.var, (k, a[0], a[1]));
        }
    }
    let mut sums = Vec::new();
    for (k, b) in body.bindings.iter().enumerate() {
        if let Rhs::Prim(Prim::DeltaSum, a) = &b.rhs
            && let Atom::Var(xs) = a[0]
            && let Some(&(at, n, f)) = builds.get(&xs)
            && wanted(m, xs, f)
        {
            sums.push((at, k, n, f));
        }
    }
    for (at, k, n, f) in sums {
        let t = m.fresh_var("presum", pair());
        let span = body.bindings[at].span;
        body.bindings[at] = Binding {
            var: t,
            rhs: Rhs::Prim(Prim::DeltaSumbuild, vec![n, f]),
            span,
        };
        body.bindings[k].rhs = Rhs::Atom(Atom::Var(t));
        *changed = true;
    }
    for b in &mut body.bindings {
        fluxion_core::visit::for_each_branch_mut(&mut b.rhs, &mut |inner| {
            rewrite(m, inner, wanted, changed)
        });
    }
}

/// Whether `code`'s body (its branches included) calls a function on no cycle of
/// calls or runs a loop whose element does more than arithmetic and reads: an element
/// that records many entries, whose sweep pays for itself. Measured (GradBench, one
/// core): GMM's likelihood, a sum over points of a log-sum-exp of loops, 5–10% faster
/// preaccumulated, its tape one point's; a loop of arithmetic (a dot product, llsq's
/// sum) is one loop node natively, an element of a few entries, where sweeping each
/// element cost more than it saved (2.0 → 2.7 ms); a recursive call (det's expansion
/// by minors) 12% slower, its elements' sweeps the whole tape's work again and their
/// many terms on the matrix each a coefficient and two bits to set.
fn records_much(m: &Module, code: CodeId, recursive: &HashSet<CodeId>) -> bool {
    let body = &m.code(code).body;
    let closures = closures_in(body);
    let mut found = false;
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        found |= match &b.rhs {
            Rhs::CallDirect(callee, _) => !recursive.contains(callee),
            Rhs::Prim(p, args) => match element_function(*p, args) {
                Some(Atom::Var(f)) => closures
                    .get(&f)
                    .is_none_or(|(c, _)| !only_arithmetic(m, *c)),
                Some(_) => true,
                None => false,
            },
            _ => false,
        };
    });
    found
}

/// The function a loop primitive applies per element.
fn element_function(p: Prim, args: &[Atom]) -> Option<Atom> {
    use Prim::*;
    match p {
        Map | Map2 | Fold | Scan => args.first().copied(),
        Build | Sumbuild | Iterate | DeltaSumbuild => args.get(1).copied(),
        _ => None,
    }
}

/// Whether `code`'s body is arithmetic, comparisons, reads and tape entries only (what
/// a native loop node runs again: `Prim::is_cheap_arithmetic`).
fn only_arithmetic(m: &Module, code: CodeId) -> bool {
    let mut cheap = true;
    fluxion_core::visit::for_each_binding(&m.code(code).body, &mut |b| {
        cheap &= match &b.rhs {
            Rhs::Call(..) | Rhs::CallDirect(..) | Rhs::Closure(..) => false,
            Rhs::Prim(p, _) => p.is_cheap_arithmetic() || *p == Prim::DeltaPush,
            _ => true,
        };
    });
    cheap
}
