//! Use counts of variables in one code, for the passes whose rules need a value used
//! once (`inline` of a lambda used by one call, `fuse` of an array read by one loop).

use std::collections::HashMap;

use fluxion_core::{Atom, Body, CodeId, Rhs, VarId};

pub use fluxion_core::visit::count_uses;

/// Whether `rhs`'s own operands include `v`.
pub(crate) fn mentions(rhs: &Rhs, v: VarId) -> bool {
    let a = Atom::Var(v);
    match rhs {
        Rhs::Atom(x) | Rhs::Proj(x, _) | Rhs::If(x, _, _) | Rhs::Match(x, _, _) => *x == a,
        Rhs::Prim(_, args)
        | Rhs::Tuple(args)
        | Rhs::Array(args)
        | Rhs::Ctor(_, _, args)
        | Rhs::Closure(_, args)
        | Rhs::CallDirect(_, args) => args.contains(&a),
        Rhs::Call(f, args) => *f == a || args.contains(&a),
    }
}

/// Variables bound to closures in `body`: code and captured atoms.
pub(crate) fn closures_in(body: &Body) -> HashMap<VarId, (CodeId, Vec<Atom>)> {
    let mut out = HashMap::new();
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        if let Rhs::Closure(c, args) = &b.rhs {
            out.insert(b.var, (*c, args.clone()));
        }
    });
    out
}

/// How many `Closure`s of each code the module makes (a lambda made at one site only
/// may change its capture list).
pub(crate) fn closure_sites(m: &fluxion_core::Module, first: usize) -> HashMap<CodeId, usize> {
    let mut sites = HashMap::new();
    // Older codes make no closure of the newer codes being optimised.
    for code in &m.codes[first..] {
        fluxion_core::visit::for_each_binding(&code.body, &mut |b| {
            if let Rhs::Closure(c, _) = &b.rhs {
                *sites.entry(*c).or_default() += 1;
            }
        });
    }
    // A body kept as written beside its resolved one (`Module::unresolved`, which a
    // run-time translation puts back) makes its closures too, and no pass rewrites
    // it: a lambda made there keeps its capture list (counted as two sites).
    for body in m.unresolved.values() {
        fluxion_core::visit::for_each_binding(body, &mut |b| {
            if let Rhs::Closure(c, _) = &b.rhs {
                *sites.entry(*c).or_default() += 2;
            }
        });
    }
    sites
}

/// How many references (calls and closures) to each code the codes from `first` on
/// make, a body kept as written (`Module::unresolved`) counting twice: a top-level
/// function referenced once is called at one site only (older codes do not refer to
/// the newer ones; what refers to a code by its translation's key, `derived_codes`,
/// is not counted: such a code is never inlined as called once).
pub(crate) fn code_references(m: &fluxion_core::Module, first: usize) -> HashMap<CodeId, usize> {
    let mut refs = HashMap::new();
    for code in &m.codes[first..] {
        fluxion_core::visit::for_each_code_ref(&code.body, &mut |c| {
            *refs.entry(c).or_default() += 1;
        });
    }
    for body in m.unresolved.values() {
        fluxion_core::visit::for_each_code_ref(body, &mut |c| {
            *refs.entry(c).or_default() += 2;
        });
    }
    refs
}

/// The element functions of the `build` and `sumbuild` loops of the codes from `first`
/// on, with their counts: a lambda made at one site (`closure_sites`) whose closure
/// that loop alone uses, so wherever its body runs its index is below the count.
pub(crate) fn loop_element_counts(
    m: &fluxion_core::Module,
    first: usize,
    closure_sites: &HashMap<CodeId, usize>,
) -> HashMap<CodeId, Atom> {
    let mut counts = HashMap::new();
    for code in &m.codes[first..] {
        let uses = count_uses(&code.body);
        let mut closures = HashMap::new();
        fluxion_core::visit::for_each_binding(&code.body, &mut |b| match &b.rhs {
            Rhs::Closure(c, _) => {
                closures.insert(b.var, *c);
            }
            Rhs::Prim(
                fluxion_core::Prim::Build
                | fluxion_core::Prim::Sumbuild
                | fluxion_core::Prim::DeltaSumbuild,
                a,
            ) => {
                if let Atom::Var(f) = a[1]
                    && uses.get(&f) == Some(&1)
                    && let Some(c) = closures.get(&f)
                    && closure_sites.get(c) == Some(&1)
                {
                    counts.insert(*c, a[0]);
                }
            }
            _ => {}
        });
    }
    counts
}

/// Whether a branch of `rhs` ends in `v` (a use `mentions` does not see).
pub(crate) fn results_in(rhs: &Rhs, v: VarId) -> bool {
    let a = Atom::Var(v);
    match rhs {
        Rhs::If(_, t, e) => t.result == a || e.result == a,
        Rhs::Match(_, arms, d) => {
            arms.iter().any(|arm| arm.body.result == a) || d.as_ref().is_some_and(|d| d.result == a)
        }
        _ => false,
    }
}

/// Captures known to hold a closure of a code without captures of its own, with that
/// code: a lambda made at one site only (`closure_sites`) captures there a variable
/// bound to `Closure(k, [])` (or a copy of one, or another such capture). Code made by
/// the AD passes binds such closures once (a primal projection, a negation) and
/// captures them into the lambdas of its loops; a call of the capture is then a call
/// of `k`, which `inline` may copy like any known closure's.
pub(crate) fn known_capture_closures(
    m: &fluxion_core::Module,
    first: usize,
    closure_sites: &HashMap<CodeId, usize>,
) -> HashMap<VarId, CodeId> {
    let mut known: HashMap<VarId, CodeId> = HashMap::new();
    let mut sites: Vec<(CodeId, Vec<Atom>)> = Vec::new();
    let mut copies: Vec<(VarId, VarId)> = Vec::new();
    for code in &m.codes[first..] {
        fluxion_core::visit::for_each_binding(&code.body, &mut |b| match &b.rhs {
            Rhs::Closure(c, args) if args.is_empty() => {
                known.insert(b.var, *c);
            }
            Rhs::Closure(c, args) if closure_sites.get(c) == Some(&1) => {
                sites.push((*c, args.clone()));
            }
            Rhs::Atom(Atom::Var(x)) => copies.push((b.var, *x)),
            _ => {}
        });
    }
    // A variable a body kept as written (`Module::unresolved`) binds may hold another
    // value there (an operator's, before resolution): never known.
    let mut excluded = std::collections::HashSet::new();
    for body in m.unresolved.values() {
        fluxion_core::visit::for_each_binding(body, &mut |b| {
            excluded.insert(b.var);
        });
    }
    known.retain(|v, _| !excluded.contains(v));
    // A capture's value may be another lambda's capture: to the fixed point (each
    // round adds a variable, or stops).
    loop {
        let before = known.len();
        for (v, x) in &copies {
            if let Some(k) = known.get(x).copied()
                && !excluded.contains(v)
            {
                known.entry(*v).or_insert(k);
            }
        }
        for (c, args) in &sites {
            let code = m.code(*c);
            if code.kind != fluxion_core::CodeKind::Lambda || (c.0 as usize) < first {
                continue;
            }
            for (cv, a) in code.captures.iter().zip(args) {
                if let Atom::Var(x) = a
                    && let Some(k) = known.get(x).copied()
                    && !excluded.contains(cv)
                {
                    known.entry(*cv).or_insert(k);
                }
            }
        }
        if known.len() == before {
            return known;
        }
    }
}
