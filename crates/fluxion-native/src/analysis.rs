//! Analyses of Core the C emission reads: which codes the entry reaches, which closures
//! never escape their function (their environments live on the C stack), which bodies
//! enter code (a stack check on entry). They know nothing of C.

use std::collections::{HashMap, HashSet};

use fluxion_core::{Atom, Body, CodeId, Module, Prim, Rhs, Type, VarId};

/// The closures of `body` that never escape it: used only as the function a call or a
/// higher-order built-in applies (never stored, returned, captured or passed on). Their
/// environments live on the C stack, where the C compiler can take them apart once it
/// inlines the (known) code.
pub(crate) fn non_escaping_closures(body: &Body) -> HashSet<VarId> {
    fn walk(body: &Body, made: &mut HashSet<VarId>, escaped: &mut HashSet<VarId>) {
        let escape = |a: &Atom, escaped: &mut HashSet<VarId>| {
            if let Atom::Var(v) = a {
                escaped.insert(*v);
            }
        };
        for b in &body.bindings {
            match &b.rhs {
                Rhs::Closure(_, args) => {
                    made.insert(b.var);
                    args.iter().for_each(|a| escape(a, escaped));
                }
                Rhs::Call(_, args) => args.iter().for_each(|a| escape(a, escaped)),
                Rhs::Prim(p, args) => {
                    let applied = match p {
                        Prim::Map | Prim::Map2 | Prim::Fold | Prim::Scan => Some(0),
                        Prim::Build | Prim::Sumbuild | Prim::Iterate => Some(1),
                        _ => None,
                    };
                    for (i, a) in args.iter().enumerate() {
                        if applied != Some(i) {
                            escape(a, escaped);
                        }
                    }
                }
                Rhs::If(c, t, e) => {
                    escape(c, escaped);
                    walk(t, made, escaped);
                    walk(e, made, escaped);
                }
                Rhs::Match(a, arms, d) => {
                    escape(a, escaped);
                    arms.iter().for_each(|arm| walk(&arm.body, made, escaped));
                    if let Some(d) = d {
                        walk(d, made, escaped);
                    }
                }
                Rhs::Atom(a) | Rhs::Proj(a, _) => escape(a, escaped),
                Rhs::CallDirect(_, args)
                | Rhs::Tuple(args)
                | Rhs::Array(args)
                | Rhs::Ctor(_, _, args) => args.iter().for_each(|a| escape(a, escaped)),
            }
        }
        escape(&body.result, escaped);
    }
    let (mut made, mut escaped) = (HashSet::new(), HashSet::new());
    walk(body, &mut made, &mut escaped);
    made.retain(|v| !escaped.contains(v));
    made
}

/// The codes `entry` reaches by calls and closures, in id order.
pub(crate) fn reachable(m: &Module, roots: &[CodeId]) -> Vec<CodeId> {
    let mut seen: HashSet<CodeId> = roots.iter().copied().collect();
    let mut stack = roots.to_vec();
    while let Some(c) = stack.pop() {
        fluxion_core::visit::for_each_code_ref(&m.code(c).body, &mut |d| {
            if seen.insert(d) {
                stack.push(d);
            }
        });
    }
    let mut codes: Vec<CodeId> = seen.into_iter().collect();
    codes.sort();
    codes
}

/// Whether running `body` may enter code: a call, or a primitive given a function (a
/// higher-order built-in's loop, an operator). A body that does not is the end of any
/// chain of calls, so no recursion runs through it.
pub(crate) fn enters_code(m: &Module, body: &Body) -> bool {
    let mut enters = false;
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        enters |= match &b.rhs {
            Rhs::Call(..) | Rhs::CallDirect(..) => true,
            Rhs::Prim(_, args) => args.iter().any(|a| matches!(m.atom_ty(a), Type::Fn(..))),
            _ => false,
        };
    });
    enters
}

/// The `range(n)` arrays of `body` read only as the array a `fold` or `scan` runs
/// over: never made, the loop counts its indices (llsq's powers of `t` by a running
/// product over `range(m - 1)` were an array allocated and filled per data point).
pub(crate) fn loop_ranges(body: &Body) -> HashSet<VarId> {
    let mut ranges = HashSet::new();
    let mut looped: HashMap<VarId, usize> = HashMap::new();
    fluxion_core::visit::for_each_binding(body, &mut |b| match &b.rhs {
        Rhs::Prim(Prim::Range, _) => {
            ranges.insert(b.var);
        }
        Rhs::Prim(Prim::Fold | Prim::Scan, args) => {
            if let Some(Atom::Var(xs)) = args.get(2) {
                *looped.entry(*xs).or_default() += 1;
            }
        }
        _ => {}
    });
    let uses = fluxion_core::visit::count_uses(body);
    ranges.retain(|v| looped.get(v).is_some_and(|n| uses.get(v) == Some(n)));
    ranges
}

/// The `slice`s of `body` whose result nothing reads: kept by the optimiser because
/// they can fail (`simplify` reads a literal index of a slice from the sliced array),
/// they are their bounds check only, no array.
pub(crate) fn unread_slices(body: &Body) -> HashSet<VarId> {
    let uses = fluxion_core::visit::count_uses(body);
    let mut slices = HashSet::new();
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        if matches!(b.rhs, Rhs::Prim(Prim::Slice, _)) && !uses.contains_key(&b.var) {
            slices.insert(b.var);
        }
    });
    slices
}
