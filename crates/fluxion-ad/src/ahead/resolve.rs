//! Ahead-of-time translations: the translations the differential operators need are
//! made here, before evaluation, and each operator becomes ordinary Core that calls
//! the translated code.
//!
//! An operator is resolved where its function argument is a variable bound to
//! `Closure(code, captures)` (variables are bound once in a module, so the binding is
//! known wherever the variable is used), the captures are in scope at the operator,
//! and CHAD translates the code with first-order captures (`Dr(A)1 = A`: the
//! translated closure captures the same values, [CHAD] §7.5). Then, as the
//! interpreter's `chad.rs` does at run time:
//!
//! - `%chad_vjp(f, x, w)` (`--ad chad`'s `grad`, `vjp`, …) becomes
//!   `let (y, bp) = chad(f)(x); check(y, w); (y, dense(x, bp(w).0))`;
//! - `jvp(f, x, dx)` becomes, by forward CHAD ([CHAD] §7.4),
//!   `let (y, push) = chad_fwd(f)(x); (y, dense(y, push(dx, 0)))`.
//!
//! `%delta_vjp` runs `f`'s delta translation on a tape (`delta.rs`); `taylor`, `jvp`
//! under dual numbers and operators of functions that apply operators push forward
//! through Core walks (`push.rs`). An operator resolved nowhere stays: the interpreter
//! translates it at run time, and native code sends the program to the interpreter.
//!
//! Both backends run what this makes (`Program::prepare` resolves for the user's
//! functions; the native backend again for its entry, a no-op unless the entry was
//! not among them). A walk over a value nested deeper than the interpreter's stack
//! allows (a list of a million cells) is not an error there: the run is handed to the
//! module as written, whose run-time walks take any depth (`Interp::run_code`).

use std::collections::{HashMap, HashSet};

use crate::FwdMode;
use crate::delta_twice::TWICE;
/// `%chad_of`'s second argument for a layer.
pub(crate) use fluxion_core::prim::chad_of_direction as direction;
use fluxion_core::{
    Atom, Binding, Body, CodeId, Lit, Module, Prim, Rhs, Span, Type, TypeMap, VarId,
};

/// Replaces the differential operators of the codes `roots` reach whose translations
/// can be made ahead of time by calls of the translated codes (new codes are optimised
/// like the module, unless `opt` is off).
pub fn resolve_operators(
    m: &mut Module,
    roots: &[CodeId],
    opt: fluxion_opt::OptLevel,
    fwd: FwdMode,
) {
    let first_new = m.codes.len();
    let live = fluxion_opt::reachable_codes(m, roots);
    let mut table = Translations {
        first_var: m.vars.len(),
        fwd,
        ..Translations::default()
    };
    let mut rewritten: HashSet<CodeId> = m.unresolved.keys().copied().collect();
    // Rounds: the codes the entry reaches, then the codes the round before made whose
    // operators are still to resolve (a forward translation of a function applying an
    // operator applies its translation: forward-over-reverse).
    let mut round: Vec<CodeId> = (0..first_new)
        .filter(|&i| live[i])
        .map(|i| CodeId(i as u32))
        .collect();
    let mut seen = round.clone();
    // A closure the compiler cannot see is translated for every code that can flow to
    // it (`flow.rs`, rerun each round: the translations the last round made receive
    // only what translated code passes them). A function that differentiates its
    // argument and can receive itself (Halley's method iterated) still makes a
    // translation of a translation without end: the rounds stop, and the translations
    // they left unfinished are dropped (`drop_unfinished`).
    let mut rounds = 0;
    while !round.is_empty() && rounds < MAX_ROUNDS {
        rounds += 1;
        let closures = closure_bindings(m);
        table.flow = super::flow::analyse(m, roots);
        table
            .made
            .extend(fluxion_core::visit::closures_of(m, &seen).1);
        let made_before = m.codes.len();
        for id in callees_first(m, &round) {
            fill_twice(m, &table, id);
            if !mentions_operator(&m.code(id).body) {
                continue;
            }
            let i = id.0 as usize;
            let code = m.code(id);
            let mut scope = Scope::default();
            for v in code.params.iter().chain(&code.captures) {
                scope.bind(*v);
            }
            // A copy: translating a code below may read this one (a lambda nested in
            // the code translated), which must keep its body meanwhile.
            let mut body = m.codes[i].body.clone();
            rewrite_body(m, &mut table, &closures, &rewritten, &mut scope, &mut body);
            if body != m.codes[i].body {
                let original = std::mem::replace(&mut m.codes[i].body, body);
                // A code resolved by an earlier resolution keeps its first body.
                m.unresolved.entry(id).or_insert(original);
                rewritten.insert(id);
            }
        }
        // Optimised before the next round translates them again (forward over reverse:
        // the delta layer records what the forward translation's optimised code does,
        // not its duplicate subterms: flat code differentiates into flat code).
        if m.codes.len() > made_before && opt == fluxion_opt::OptLevel::On {
            let mut report = fluxion_opt::Report::default();
            let _ = fluxion_opt::optimize_codes_from(
                m,
                made_before,
                fluxion_opt::Stage::BeforeAd,
                &mut report,
            );
        }
        round = (made_before..m.codes.len())
            .map(|i| CodeId(i as u32))
            .collect();
        seen.extend(&round);
    }
    drop_unfinished(m);
    if m.codes.len() > first_new && opt == fluxion_opt::OptLevel::On {
        let mut report = fluxion_opt::Report::default();
        // Optimising is an improvement only; a failure leaves the codes as made. (No
        // translation reads these again: every pass, `fluxion_opt::Stage::Final`.)
        let _ =
            fluxion_opt::optimize_codes_from(m, first_new, fluxion_opt::Stage::Final, &mut report);
    }
}

/// The codes of `round`, each after the codes of `round` it calls or closes over
/// (a depth-first post-order; a cycle in any order): an operator of a function that
/// applies one itself then meets that function resolved, whose delta translation can
/// record what its operators became ([`translate_delta_resolved`]).
fn callees_first(m: &Module, round: &[CodeId]) -> Vec<CodeId> {
    let members: HashSet<CodeId> = round.iter().copied().collect();
    // A code is entered when popped, not when pushed: one pushed by a caller and again
    // by a callee of that caller is entered under the callee, so it comes first.
    let mut entered = HashSet::new();
    let mut order = Vec::with_capacity(round.len());
    for &root in round {
        // (code, whether its callees were pushed)
        let mut stack = vec![(root, false)];
        while let Some((c, expanded)) = stack.pop() {
            if expanded {
                order.push(c);
                continue;
            }
            if !entered.insert(c) {
                continue;
            }
            stack.push((c, true));
            fluxion_core::visit::for_each_code_ref(&m.code(c).body, &mut |r| {
                if members.contains(&r) && !entered.contains(&r) {
                    stack.push((r, false));
                }
            });
        }
    }
    order
}

/// Drops the translations that still apply an operator when the rounds end, or reach
/// a code that does: a function that differentiates its argument and is itself a
/// candidate of that argument's type (Halley's method iterated) makes a tower of
/// translations as deep as the rounds go, whose top no closure of the program reaches
/// at run time. `%chad_of` meeting a closure of a dropped translation's code hands the
/// run to the interpreter (`fx_miss`); a code the entry reaches directly that still
/// applies an operator leaves the program to the interpreter, as before.
fn drop_unfinished(m: &mut Module) {
    let n = m.codes.len();
    let mut unfinished: Vec<bool> = m.codes.iter().map(|c| mentions_operator(&c.body)).collect();
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, c) in m.codes.iter().enumerate() {
        fluxion_core::visit::for_each_code_ref(&c.body, &mut |d| users[d.0 as usize].push(i));
    }
    let mut stack: Vec<usize> = (0..n).filter(|&i| unfinished[i]).collect();
    while let Some(c) = stack.pop() {
        for &u in &users[c] {
            if !std::mem::replace(&mut unfinished[u], true) {
                stack.push(u);
            }
        }
    }
    m.chad_of.retain(|_, t| !unfinished[t.0 as usize]);
}

/// How many times the resolution resolves the operators of the codes it made itself
/// (each round one more level of nested operators). A tower of translations
/// (`drop_unfinished`) doubles the C with each round: Halley's method iterated is
/// 2.6k lines after 3 rounds, 4.6k after 4, 24k after 6 (7 s in the C compiler);
/// four nested `diff`s still compile in 4.
const MAX_ROUNDS: usize = 4;

/// How many function types one operator's candidates may reach through captures
/// (`translate_candidates`).
const MAX_CAPTURED_TYPES: usize = 4;

/// How many variables the resolution's codes may bind in all; past it, operators stay
/// for the interpreter (a guard on size: each level of a tower of translations doubles
/// it).
const MAX_NEW_VARS: usize = 100_000;

/// The resolution's state (what `%chad_of` chooses among is `Module::chad_of`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Translations {
    /// The module's variables before the resolution.
    first_var: usize,
    /// The codes closures are made of in the codes resolved: only those are candidates
    /// of `%chad_of` (a closure of another code cannot reach it).
    made: HashSet<CodeId>,
    /// The codes the forward layers made here: closures of these are candidates of
    /// `%chad_of` like the program's own.
    pushed: HashSet<CodeId>,
    /// Whether `%chad_of` may go without the candidates that do not translate (the
    /// last resort of `rewrite_body`).
    partial: bool,
    /// Which closures can reach each variable, as of the round's start.
    flow: super::flow::Flow,
    /// The algorithm of `jvp` (`--fwd`): dual numbers push forward through the
    /// forward layer, as the interpreter does; forward CHAD translates by `ChadFwd`.
    fwd: FwdMode,
}

impl Translations {
    /// The codes of type `fty` that `%chad_of` may meet, where the flow is not known:
    /// those the program makes
    /// closures of (its own, or made by a forward layer here — not by a reverse
    /// layer's translation, whose closures never reach an operator), in id order.
    ///
    /// Where the flow analysis saw what reaches every variable of `vars`, those codes
    /// of type `fty` instead.
    pub(crate) fn candidates(&self, m: &Module, fty: &Type, vars: &[VarId]) -> Vec<CodeId> {
        let flows: Option<Vec<_>> = vars.iter().map(|v| self.flow.of(*v)).collect();
        if let Some(flows) = flows.filter(|f| !f.is_empty()) {
            let mut out: Vec<CodeId> = flows
                .into_iter()
                .flatten()
                .copied()
                .filter(|c| m.code_ty(*c) == *fty)
                .collect();
            out.sort();
            out.dedup();
            if !out.is_empty() {
                return out;
            }
        }
        let mut out: Vec<CodeId> = self
            .made
            .iter()
            .copied()
            .filter(|c| self.is_candidate(m, *c) && m.code_ty(*c) == *fty)
            .collect();
        out.sort();
        out
    }

    pub(crate) fn is_candidate(&self, m: &Module, c: CodeId) -> bool {
        !m.translated_from.contains_key(&c) || self.pushed.contains(&c)
    }
}

/// The operators the resolution resolves.
fn is_operator(p: Prim) -> bool {
    matches!(
        p,
        Prim::ChadVjp
            | Prim::DeltaVjp
            | Prim::DeltaJacobian
            | Prim::Jvp
            | Prim::Taylor
            | Prim::Jet
            | Prim::Sparsity
            | Prim::DeltaJvp
            | Prim::DeltaTaylor
    )
}

fn mentions_operator(body: &Body) -> bool {
    let mut found = false;
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        found |= matches!(b.rhs, Rhs::Prim(p, _) if is_operator(p));
    });
    found
}

/// Every `let v = Closure(code, captures)` of the module, and every copy
/// `let w = v` of one (the optimiser leaves copies of closures behind).
fn closure_bindings(m: &Module) -> ClosureBindings {
    let mut out = HashMap::new();
    let mut copies = Vec::new();
    for c in &m.codes {
        fluxion_core::visit::for_each_binding(&c.body, &mut |b| match &b.rhs {
            Rhs::Closure(code, args) => {
                out.insert(b.var, (*code, args.clone()));
            }
            Rhs::Atom(Atom::Var(x)) if matches!(m.var_ty(b.var), Type::Fn(..)) => {
                copies.push((b.var, *x));
            }
            _ => {}
        });
    }
    // Copies of copies, in any order.
    loop {
        let before = out.len();
        for (v, x) in &copies {
            if !out.contains_key(v)
                && let Some(made) = out.get(x).cloned()
            {
                out.insert(*v, made);
            }
        }
        if out.len() == before {
            break out;
        }
    }
}

/// Every `let v = Closure(code, captures)` of the module, by `v`.
pub(crate) type ClosureBindings = HashMap<VarId, (CodeId, Vec<Atom>)>;

/// The variables in scope, with an undo log for leaving a block.
#[derive(Default)]
struct Scope {
    set: HashSet<VarId>,
    log: Vec<VarId>,
}

impl Scope {
    fn bind(&mut self, v: VarId) {
        if self.set.insert(v) {
            self.log.push(v);
        }
    }
    fn mark(&self) -> usize {
        self.log.len()
    }
    fn undo(&mut self, mark: usize) {
        for v in self.log.drain(mark..) {
            self.set.remove(&v);
        }
    }
}

fn rewrite_body(
    m: &mut Module,
    table: &mut Translations,
    closures: &ClosureBindings,
    rewritten: &HashSet<CodeId>,
    scope: &mut Scope,
    body: &mut Body,
) {
    let old = std::mem::take(&mut body.bindings);
    let mut out = Vec::with_capacity(old.len());
    for mut b in old {
        match &mut b.rhs {
            Rhs::If(_, t, e) => {
                for branch in [t, e] {
                    let mark = scope.mark();
                    rewrite_body(m, table, closures, rewritten, scope, branch);
                    scope.undo(mark);
                }
            }
            Rhs::Match(_, arms, d) => {
                for arm in arms.iter_mut() {
                    let mark = scope.mark();
                    for f in &arm.fields {
                        scope.bind(*f);
                    }
                    rewrite_body(m, table, closures, rewritten, scope, &mut arm.body);
                    scope.undo(mark);
                }
                if let Some(d) = d {
                    let mark = scope.mark();
                    rewrite_body(m, table, closures, rewritten, scope, d);
                    scope.undo(mark);
                }
            }
            Rhs::Prim(
                p @ (Prim::ChadVjp
                | Prim::DeltaVjp
                | Prim::DeltaJacobian
                | Prim::Jvp
                | Prim::Taylor
                | Prim::Jet
                | Prim::Sparsity),
                args,
            ) => {
                let (p, args) = (*p, args.clone());
                let expand_here = |m: &mut Module, table: &mut Translations| {
                    expand_operator(
                        m, table, closures, rewritten, scope, p, &args, b.var, b.span,
                    )
                };
                // Where no way works with every candidate of `%chad_of` translated, one
                // with those that translate (the others hand the run to the interpreter
                // if they meet the operator: `fx_miss`).
                let expansion = expand_here(m, table).or_else(|| {
                    table.partial = true;
                    let expansion = expand_here(m, table);
                    table.partial = false;
                    expansion
                });
                if let Some(expansion) = expansion {
                    for e in expansion {
                        scope.bind(e.var);
                        out.push(e);
                    }
                    continue;
                }
            }
            _ => {}
        }
        scope.bind(b.var);
        out.push(b);
    }
    body.bindings = out;
}

/// The bindings that compute the operator `v = p(args)`: by the translation of its
/// function (CHAD, forward CHAD, delta) or, for a function applying an operator itself
/// and for Taylor mode, by pushing forward through its forward or Taylor translation;
/// `None` where the operator stays for the interpreter.
#[allow(clippy::too_many_arguments)]
fn expand_operator(
    m: &mut Module,
    table: &mut Translations,
    closures: &ClosureBindings,
    rewritten: &HashSet<CodeId>,
    scope: &Scope,
    p: Prim,
    args: &[Atom],
    v: VarId,
    span: Span,
) -> Option<Vec<Binding>> {
    // Not `%chad_vjp` by pushing forward where the interpreter runs CHAD on a closure
    // that captures closures (translating them at run time) and `expand` could not
    // build that here: one reverse pass there, n passes here — the interpreter runs it.
    let push = p != Prim::ChadVjp
        || !(captures_a_closure(m, closures, &args[0])
            && chad_goes_forward(m, &table.flow, closures, rewritten, &args[0], 0) == Some(false));
    let mut site = super::lift::Site {
        m,
        table,
        closures,
        rewritten,
        scope: &scope.set,
        span,
    };
    match p {
        Prim::DeltaVjp => super::delta::expand(&mut site, args, v),
        Prim::DeltaJacobian => super::delta::expand_jacobian(&mut site, args, v)
            .or_else(|| Some(super::delta::jacobian_by_rows(&mut site, args, v))),
        Prim::Taylor | Prim::Jet | Prim::Sparsity => None,
        Prim::Jvp if site.table.fwd == FwdMode::Dual => None,
        // CHAD does not translate a function that applies operators itself; where its
        // reverse operators are of closures it builds, the delta layer's tape of tapes
        // does (fluxion-ad's `delta_twice.rs`): one pass each way, where pushing forward
        // takes one per input.
        Prim::ChadVjp if applies_operators(&site, &args[0]) => {
            super::delta::expand(&mut site, args, v)
        }
        _ => expand(&mut site, p, args, v),
    }
    .or_else(|| {
        push.then(|| super::push::expand(&mut site, p, args, v))
            .flatten()
    })
}

/// Whether `f` is a closure known here whose code applies an operator itself.
pub(crate) fn applies_operators(site: &super::lift::Site, f: &Atom) -> bool {
    let Atom::Var(fv) = f else { return false };
    site.closures
        .get(fv)
        .is_some_and(|(code, _)| holds_operator(site.m, *code, site.rewritten))
}

/// Whether the interpreter's `--ad chad` differentiates the closure `f` by forward
/// mode (fluxion-interp's `chad.rs`, `chad_translates`): CHAD does not translate its
/// code (it applies an operator itself, as written: `rewritten` holds the codes whose
/// operators this resolution replaced), or a closure it captures is such a closure.
/// `None` where `f` or a captured function is not a closure known here.
fn chad_goes_forward(
    m: &Module,
    flow: &super::flow::Flow,
    closures: &ClosureBindings,
    rewritten: &HashSet<CodeId>,
    f: &Atom,
    depth: usize,
) -> Option<bool> {
    let Atom::Var(f) = f else { return None };
    let (code, captured) = closures.get(f)?;
    if crate::chad_unsupported(m, *code, TypeMap::Chad).is_some()
        || holds_operator(m, *code, rewritten)
    {
        return Some(true);
    }
    let mut forward = false;
    for (x, value) in m.code(*code).captures.iter().zip(captured) {
        if m.is_fixed(m.var_ty(*x), TypeMap::Chad) {
            continue;
        }
        // A closure capturing itself through a chain of closures is not one to follow.
        if depth >= MAX_CAPTURE_DEPTH {
            return None;
        }
        if !matches!(m.var_ty(*x), Type::Fn(..)) {
            // Functions inside a tuple, array or enum: the interpreter's CHAD translates
            // them if every code that can flow there translates and captures no function.
            let Atom::Var(v) = value else { return None };
            let codes = flow.of(*v)?;
            let plain = codes.iter().all(|c| {
                crate::chad_unsupported(m, *c, TypeMap::Chad).is_none()
                    && !holds_operator(m, *c, rewritten)
                    && m.code(*c)
                        .captures
                        .iter()
                        .all(|y| !m.can_hold_fn(m.var_ty(*y)))
            });
            if !plain {
                return None;
            }
            continue;
        }
        forward |= chad_goes_forward(m, flow, closures, rewritten, value, depth + 1)?;
    }
    Some(forward)
}

/// Whether `f` is a closure known here that captures a function (or a tuple, array or
/// enum holding one).
fn captures_a_closure(m: &Module, closures: &ClosureBindings, f: &Atom) -> bool {
    let Atom::Var(f) = f else { return false };
    closures.get(f).is_some_and(|(code, _)| {
        m.code(*code)
            .captures
            .iter()
            .any(|x| m.can_hold_fn(m.var_ty(*x)))
    })
}

/// How deep [`chad_goes_forward`] follows closures captured by closures.
const MAX_CAPTURE_DEPTH: usize = 16;

/// The bindings that compute `v = p(args)` with the translated code, or `None` where
/// the operator stays for the interpreter.
fn expand(site: &mut super::lift::Site, p: Prim, args: &[Atom], v: VarId) -> Option<Vec<Binding>> {
    let Atom::Var(f) = args[0] else { return None };
    let layer = if p == Prim::ChadVjp {
        TypeMap::Chad
    } else {
        TypeMap::ChadFwd
    };
    let mut reads = Vec::new();
    // A known closure capturing closures: its code translated with the captured
    // closures translated in turn (`lift.rs`), as the interpreter's CHAD does at run
    // time ([CHAD] §7.5: a function's translation is a function of translations).
    let lifted = if layer == TypeMap::Chad && captures_a_closure(site.m, site.closures, &args[0]) {
        Some(site.closure(args[0], layer, &mut reads, 0)?)
    } else {
        None
    };
    let (m, table, span) = (&mut *site.m, &mut *site.table, site.span);
    let (closures, rewritten, scope) = (site.closures, site.rewritten, site.scope);
    // The translated closure: of the known code with the same captures (those out of
    // scope here read out of the closure), or, where the closure is not known here,
    // chosen at run time among the codes that can flow to it (`%chad_of`), each translated
    // ahead of time.
    let (make, translated, params) = match (lifted, closures.get(&f)) {
        (Some(lifted), _) => lifted,
        (None, None) => translated_at_run_time(m, table, rewritten, args[0], layer)?,
        (None, Some((code, captures))) => {
            let (code, captures) = (*code, captures.clone());
            let params = translatable(m, code, layer, rewritten, true)?;
            let translated = translate(m, code, layer)?;
            let captures = captures_here(m, scope, args[0], code, &captures, &mut reads, span);
            (Rhs::Closure(translated, captures), translated, params)
        }
    };
    let ret = m.code(translated).ret.clone();
    let Type::Tuple(parts) = &ret else {
        return None;
    };
    let (y_ty, lin_ty) = (parts[0].clone(), parts[1].clone());
    let Type::Fn(lin_params, lin_ret) = lin_ty.clone() else {
        return None;
    };
    // The value must be first-order for its type to be the original's.
    if !m.is_fixed(&y_ty, layer) {
        return None;
    }
    let mut e = Emit {
        m,
        out: reads,
        span,
    };
    let (x, w) = (args[1], args[2]);
    let fn_ty = Type::func(params.clone(), ret.clone());
    let g = e.bind("chad_f", fn_ty, make);
    let xs = e.split(x, params.len());
    let r = e.bind("chad_r", ret.clone(), Rhs::Call(g, xs));
    let y = e.bind("y", y_ty.clone(), Rhs::Proj(r, 0));
    let lin = e.bind("lin", lin_ty, Rhs::Proj(r, 1));
    let result_ty = e.m.var_ty(v).clone();
    let Type::Tuple(result_parts) = &result_ty else {
        return None;
    };
    let t_ty = result_parts[1].clone();
    let t = if p == Prim::ChadVjp {
        e.bind(
            "check",
            Type::Unit,
            Rhs::Prim(Prim::CheckTangent, vec![y, w]),
        );
        let cts = e.bind("cts", (*lin_ret).clone(), Rhs::Call(lin, vec![w]));
        let x_ct = match params.len() {
            0 => Atom::Lit(Lit::Unit),
            1 => e.bind("x_ct", t_ty.clone(), Rhs::Proj(cts, 0)),
            n => {
                let Type::Tuple(ts) = &t_ty else { return None };
                let ts = ts.clone();
                let parts: Vec<Atom> = (0..n)
                    .map(|i| e.bind("x_ct", ts[i].clone(), Rhs::Proj(cts, i)))
                    .collect();
                e.bind("x_ct", t_ty.clone(), Rhs::Tuple(parts))
            }
        };
        e.bind("x_bar", t_ty, Rhs::Prim(Prim::TanDense, vec![x, x_ct]))
    } else {
        e.bind(
            "check",
            Type::Unit,
            Rhs::Prim(Prim::CheckDirection, vec![x, w]),
        );
        let mut inputs = e.split(w, params.len());
        let fn_ct = lin_params.last()?.clone();
        inputs.push(e.bind("zero", fn_ct, Rhs::Prim(Prim::TanZero, vec![])));
        let dy = e.bind("dy", (*lin_ret).clone(), Rhs::Call(lin, inputs));
        e.bind("dy", t_ty, Rhs::Prim(Prim::TanDense, vec![y, dy]))
    };
    e.out.push(Binding {
        var: v,
        rhs: Rhs::Tuple(vec![y, t]),
        span,
    });
    Some(e.out)
}

/// The captures of the closure `f` (made of `code` with `captures`) as atoms in scope
/// here: each in scope itself, or read out of `f` (`%capture`, bound in `reads`).
pub(crate) fn captures_here(
    m: &mut Module,
    scope: &HashSet<VarId>,
    f: Atom,
    code: CodeId,
    captures: &[Atom],
    reads: &mut Vec<Binding>,
    span: Span,
) -> Vec<Atom> {
    let capture_vars = m.code(code).captures.clone();
    captures
        .iter()
        .zip(capture_vars)
        .enumerate()
        .map(|(i, (c, cv))| match c {
            Atom::Var(v) if !scope.contains(v) => {
                let var = m.fresh_var("capture", m.var_ty(cv).clone());
                let read = vec![
                    f,
                    Atom::Lit(Lit::Int(i as i64)),
                    Atom::Lit(Lit::Int(code.0 as i64)),
                ];
                reads.push(Binding {
                    var,
                    rhs: Rhs::Prim(Prim::ClosureCapture, read),
                    span,
                });
                Atom::Var(var)
            }
            _ => *c,
        })
        .collect()
}

/// `f`'s translation by reverse CHAD over the Boolean semiring ([CHAD] §11.3,
/// `chad::chad_deps_code`) as a closure of the same captures, where `f` is a closure
/// known here that CHAD translates ahead of time (first-order captures, no operator
/// inside): the right-hand side and its type, the reads of captures out of scope bound
/// in `reads`. `sparsity` runs it for functions of few outputs
/// (`deps::sparsity_either_code`).
pub(crate) fn chad_deps_closure(
    site: &mut super::lift::Site,
    f: Atom,
    reads: &mut Vec<Binding>,
) -> Option<(Rhs, Type)> {
    let Atom::Var(fv) = f else { return None };
    let (code, captures) = site.closures.get(&fv)?.clone();
    chad_translatable(site.m, code, TypeMap::Chad, site.rewritten)?;
    let before = site.m.codes.len();
    let Ok(translated) = crate::chad::chad_deps_code(site.m, code) else {
        undo_translations(site.m, before);
        return None;
    };
    let captures = captures_here(site.m, site.scope, f, code, &captures, reads, site.span);
    let c = site.m.code(translated);
    let params = c.params.iter().map(|p| site.m.var_ty(*p).clone()).collect();
    let ty = Type::func(params, c.ret.clone());
    Some((Rhs::Closure(translated, captures), ty))
}

/// `%chad_of(f, d)`, the closure `f` the compiler cannot see with its code's translation
/// in `layer`, chosen at run time among the translations of the codes that can flow
/// to `f` (`flow.rs`; where the analysis saw nothing reach `f`, every code of its type
/// the program makes a closure of), all made here (and, under delta and the forward
/// layer, those of the closures they capture, which the run time translates the same
/// way): the right-hand side, one of the translated codes and the parameter types;
/// `None` where one of them cannot be made.
pub(crate) fn translated_at_run_time(
    m: &mut Module,
    table: &mut Translations,
    rewritten: &HashSet<CodeId>,
    f: Atom,
    layer: TypeMap,
) -> Option<(Rhs, CodeId, Vec<Type>)> {
    let fty = m.atom_ty(&f);
    let mut seen = Seen::default();
    let vars: Vec<VarId> = match f {
        Atom::Var(v) => vec![v],
        _ => vec![],
    };
    let (translated, params) =
        translate_candidates(m, table, rewritten, &fty, &vars, layer, &mut seen)?;
    let d = Atom::Lit(Lit::Int(direction(layer)));
    Some((Rhs::Prim(Prim::ChadOf, vec![f, d]), translated, params))
}

/// Translates every candidate of function type `fty` that can flow to `vars` in `layer`
/// (and of the function types they capture; `seen` holds the types met): one
/// translated code and the parameter types.
fn translate_candidates(
    m: &mut Module,
    table: &mut Translations,
    rewritten: &HashSet<CodeId>,
    fty: &Type,
    vars: &[VarId],
    layer: TypeMap,
    seen: &mut Seen,
) -> Option<(CodeId, Vec<Type>)> {
    // Translations made in a forward layer are candidates too, and capture functions
    // of translated types, whose candidates are translated again: a tower of types
    // that can grow without end (found by a generated program: `taylor` of a lambda
    // applying `grad(grad(..))` filled 9 GB). Past these bounds the operator stays
    // for the interpreter.
    seen.calls += 1;
    if seen.types.len() >= MAX_CAPTURED_TYPES
        || seen.calls > MAX_CAPTURE_DEPTH
        || m.vars.len() >= table.first_var + MAX_NEW_VARS
    {
        return None;
    }
    // The operator's own function (its argument and result walked), not one captured.
    let top = seen.types.is_empty() && !seen.lifted;
    if !seen.types.contains(fty) {
        seen.types.push(fty.clone());
    }
    // A candidate that cannot be translated is left out: a closure of its code meeting
    // the operator at run time hands the run to the interpreter (`fx_miss`).
    let all = table.candidates(m, fty, vars);
    let candidates: Vec<CodeId> = all
        .iter()
        .copied()
        .filter(|&c| translatable(m, c, layer, rewritten, top).is_some())
        .collect();
    // Under CHAD a candidate left out may be one CHAD cannot translate, which the
    // run time differentiates by forward mode around the whole operator: `%chad_of`
    // could not stand for it, so CHAD's operators are resolved with every candidate or
    // not at all (the interpreter then runs the operator at run time).
    let whole = !table.partial || layer.is_chad();
    if whole && candidates.len() < all.len() {
        return None;
    }
    let params = translatable(m, *candidates.first()?, layer, rewritten, top)?;
    // The function types the candidates capture, with the captures of each.
    let mut captured: Vec<(Type, Vec<VarId>)> = Vec::new();
    for &c in &candidates {
        for x in &m.code(c).captures {
            for t in super::lift::fn_leaves(m, m.var_ty(*x)) {
                match captured.iter_mut().find(|(u, _)| *u == t) {
                    Some((_, xs)) => xs.push(*x),
                    None => captured.push((t, vec![*x])),
                }
            }
        }
    }
    let mut translated = None;
    for c in candidates {
        let t = if is_forward_layer(layer) {
            translate_original(m, table, c, layer)
        } else {
            translate(m, c, layer)
        };
        let Some(t) = t else {
            if !whole {
                continue;
            }
            return None;
        };
        m.chad_of.insert((c, direction(layer)), t);
        if is_forward_layer(layer) {
            // `%chad_of` makes closures of it at run time, which may meet an operator.
            table.made.insert(t);
        }
        translated = Some(t);
    }
    for (t, xs) in captured {
        // The captures whose flow is known: their codes not translated yet (a type
        // seen before may be captured with other closures). The others (a capture of
        // a lambda made in code nothing calls): every code of the type, if the type is
        // not seen yet — one capture with no flow known must not hide the flow of the
        // others (saddle's objective, captured by a lambda `maximise` makes, which is
        // also inlined where its closure flows from nowhere).
        let (known, unknown): (Vec<VarId>, Vec<VarId>) =
            xs.iter().partition(|x| table.flow.of(**x).is_some());
        let vars = if !unknown.is_empty() && !seen.types.contains(&t) {
            xs
        } else if !known.is_empty()
            && table
                .candidates(m, &t, &known)
                .iter()
                .any(|c| !m.chad_of.contains_key(&(*c, direction(layer))))
        {
            known
        } else {
            continue;
        };
        translate_candidates(m, table, rewritten, &t, &vars, layer, seen)?;
    }
    Some((translated?, params))
}

/// Translates the candidates of function type `fty` that can flow into the capture
/// `x` (functions inside a tuple or array a closure captures), to be lifted at run
/// time by `%chad_of`; `None` where one cannot be made.
pub(crate) fn translate_lifted(
    m: &mut Module,
    table: &mut Translations,
    rewritten: &HashSet<CodeId>,
    fty: &Type,
    x: VarId,
    layer: TypeMap,
) -> Option<()> {
    let mut seen = Seen {
        lifted: true,
        ..Seen::default()
    };
    translate_candidates(m, table, rewritten, fty, &[x], layer, &mut seen).map(|_| ())
}

/// What [`translate_candidates`] has met: the function types, and how many times it
/// was called (once per set of captured closures with a code not translated yet).
#[derive(Default)]
struct Seen {
    types: Vec<Type>,
    calls: usize,
    /// Whether the first call's function is lifted (captured), not the operator's own.
    lifted: bool,
}

/// The layers that translate a code as written, its operators by their own rules
/// (forward over reverse, Taylor over anything): dual numbers, Taylor series and jets,
/// dependency sets.
pub(crate) fn is_forward_layer(layer: TypeMap) -> bool {
    matches!(layer, TypeMap::Fwd | TypeMap::Taylor(_) | TypeMap::Deps)
}

/// The parameter types of `code` if `layer` can translate it ahead of time for
/// `%chad_of` to choose at run time: CHAD's with first-order captures, delta's, the
/// forward layer's and Taylor's with any captures (functions among them, alone or inside tuples,
/// arrays and enums, translated at run time in turn); argument and result first-order
/// where the operator walks them
/// (`walked`: the operator's own function, not one it captures); under the reverse
/// layers, no operator applied in it.
fn translatable(
    m: &Module,
    code: CodeId,
    layer: TypeMap,
    rewritten: &HashSet<CodeId>,
    walked: bool,
) -> Option<Vec<Type>> {
    if !(layer == TypeMap::Delta || is_forward_layer(layer)) {
        return chad_translatable(m, code, layer, rewritten);
    }
    let c = m.code(code);
    let params: Vec<Type> = c.params.iter().map(|p| m.var_ty(*p).clone()).collect();
    let first_order = !walked || params.iter().chain([&c.ret]).all(|t| !m.can_hold_fn(t));
    let operators = layer == TypeMap::Delta && holds_operator(m, code, rewritten);
    (first_order && !operators).then_some(params)
}

/// The parameter types of `code` if CHAD (`layer`) can translate it ahead of time:
/// first-order captures, no operator inside, nothing rewritten here reached.
fn chad_translatable(
    m: &Module,
    code: CodeId,
    layer: TypeMap,
    rewritten: &HashSet<CodeId>,
) -> Option<Vec<Type>> {
    let fixed = m
        .code(code)
        .captures
        .iter()
        .all(|c| m.is_fixed(m.var_ty(*c), layer));
    if !fixed
        || crate::chad_unsupported(m, code, layer).is_some()
        || holds_operator(m, code, rewritten)
    {
        return None;
    }
    Some(
        m.code(code)
            .params
            .iter()
            .map(|p| m.var_ty(*p).clone())
            .collect(),
    )
}

/// `code`'s translation in `layer` (CHAD, forward CHAD or delta; memoised by
/// fluxion-ad); a failed one is undone (its placeholders would not verify).
pub(crate) fn translate(m: &mut Module, code: CodeId, layer: TypeMap) -> Option<CodeId> {
    translate_primal_captures(m, code, layer, &[]).map(|(t, _)| t)
}

/// Drops the codes made from `codes_before` on, and the memo entries naming them.
fn undo_translations(m: &mut Module, codes_before: usize) {
    m.codes.truncate(codes_before);
    m.derived_codes.retain(|_, c| (c.0 as usize) < codes_before);
    m.translated_from
        .retain(|c, _| (c.0 as usize) < codes_before);
    m.primal_captures
        .retain(|c, _| (c.0 as usize) < codes_before);
}

/// The delta translation of `code`, which applies operators itself, from the code as
/// written (the bodies the resolution rewrote put back while it translates): its
/// `%delta_vjp`s of closures it builds become tapes of tapes (fluxion-ad's
/// `delta_twice.rs`), reverse over reverse in one pass. Kept only where no operator is
/// left in what it reaches (any other nested operator: `None`, and the operator is
/// pushed forward instead).
pub(crate) fn translate_delta_original(
    m: &mut Module,
    table: &Translations,
    code: CodeId,
) -> Option<CodeId> {
    make_twice(m, table, code);
    let codes_before = m.codes.len();
    let t = translate_as_written(m, code, TypeMap::Delta)?;
    if holds_operator(m, t, &HashSet::new()) {
        undo_translations(m, codes_before);
        return None;
    }
    Some(t)
}

/// The delta translation of `code` as the resolution left it, where its operators
/// were resolved into calls of pushed-forward code (dual numbers, `push.rs`) and
/// nothing it reaches applies an operator or holds other derivative code's primitives
/// (the tape, `%chad_of`, CHAD's symbolic zeros and linear blocks): ordinary Core and
/// the push forward's check and `%tdense` of its direction, which the delta layer
/// translates like any other code (`structural.rs`). A `jvp` inside a reverse operator
/// (reverse over forward) then records the forward pass on the tape, one pass each
/// way, where pushing the outer operator forward takes one per input.
pub(crate) fn translate_delta_resolved(m: &mut Module, code: CodeId) -> Option<CodeId> {
    let refused = |p: Prim| {
        use Prim::*;
        crate::chad_sweep::is_operator(p)
            || matches!(
                p,
                TanZero
                    | TanPlus
                    | LinProj
                    | LinField
                    | LinOneHot
                    | LinEmbed
                    | LinSlice
                    | LinSum
                    | LinIndex
            )
    };
    if crate::chad_sweep::reaches_prim(m, code, |_| false, &refused).is_some() {
        return None;
    }
    translate(m, code, TypeMap::Delta)
}

/// Notes in `Module::twice` the functions `f` of the reverse operators in the codes
/// `code` reaches as written whose every candidate — each code that can flow to `f`
/// (`flow.rs`) — has its delta translation and that translation's own made here
/// (`%chad_of` directions 2 and [`TWICE`]), so the delta layer differentiates such an
/// operator by a tape of tapes of the closure chosen at run time (`delta_twice.rs`).
/// A candidate qualifies where it takes, returns and captures no functions and applies
/// no operator (its delta translation records on one tape).
fn make_twice(m: &mut Module, table: &Translations, code: CodeId) {
    m.swap_unresolved();
    let live = fluxion_opt::reachable_codes(m, &[code]);
    let mut sites: Vec<VarId> = Vec::new();
    for (i, c) in m.codes.iter().enumerate() {
        if live.get(i).copied().unwrap_or(false) {
            fluxion_core::visit::for_each_binding(&c.body, &mut |b| {
                if let Rhs::Prim(Prim::DeltaVjp | Prim::ChadVjp | Prim::DeltaJacobian, args) =
                    &b.rhs
                    && let Some(Atom::Var(f)) = args.first()
                {
                    sites.push(*f);
                }
            });
        }
    }
    m.swap_unresolved();
    for f in sites {
        if m.twice.contains(&f) || m.vars.len() >= table.first_var + MAX_NEW_VARS {
            continue;
        }
        let Some(flow) = table.flow.of(f) else {
            continue;
        };
        let fty = m.var_ty(f).clone();
        let candidates: Vec<CodeId> = flow
            .iter()
            .copied()
            .filter(|c| m.code_ty(*c) == fty)
            .collect();
        let made = !candidates.is_empty()
            && candidates.iter().all(|&c| twice_qualifies(m, c))
            && candidates
                .iter()
                .all(|&c| twice_translation(m, c).is_some());
        if made {
            m.twice.insert(f);
        }
    }
}

/// The entries of `%chad_of(f', 4)` in `code` (a delta translation with a tape of
/// tapes of a closure chosen at run time, which [`make_twice`] allowed): `Δ(t)` for
/// every delta-translated code `t` that can flow to `f'` — those [`make_twice`] made,
/// and the copies the layer made translating the lambdas of the code around.
fn fill_twice(m: &mut Module, table: &Translations, code: CodeId) {
    let mut sites = Vec::new();
    fluxion_core::visit::for_each_binding(&m.code(code).body, &mut |b| {
        if let Rhs::Prim(Prim::ChadOf, args) = &b.rhs
            && let [Atom::Var(f), Atom::Lit(Lit::Int(TWICE))] = args.as_slice()
        {
            sites.push(*f);
        }
    });
    for f in sites {
        let fty = m.var_ty(f).clone();
        let candidates: Vec<CodeId> = table
            .flow
            .of(f)
            .into_iter()
            .flatten()
            .copied()
            .filter(|t| m.code_ty(*t) == fty && !m.chad_of.contains_key(&(*t, TWICE)))
            .collect();
        for t in candidates {
            let first_order = m
                .code(t)
                .captures
                .iter()
                .all(|c| !m.can_hold_fn(m.var_ty(*c)));
            if first_order && let Some(tt) = translate(m, t, TypeMap::Delta) {
                m.chad_of.insert((t, TWICE), tt);
            }
        }
    }
}

/// Whether a closure of `c` can be differentiated by a tape of tapes: `c` takes,
/// returns and captures no functions and reaches no operator (nor a tape of its own).
fn twice_qualifies(m: &Module, c: CodeId) -> bool {
    let code = m.code(c);
    let first_order = code
        .params
        .iter()
        .chain(&code.captures)
        .map(|v| m.var_ty(*v))
        .chain([&code.ret])
        .all(|t| !m.can_hold_fn(t));
    let rewritten: HashSet<CodeId> = m.unresolved.keys().copied().collect();
    first_order
        && !m.translated_from.contains_key(&c)
        && !holds_operator(m, c, &rewritten)
        && crate::chad_sweep::reaches_operator(m, c, |_| false).is_none()
}

/// `Δ(Δ(c))` for the tape of tapes of a closure of `c` chosen at run time, made (and
/// noted in `Module::chad_of`, with `Δ(c)`); the caller checked [`twice_qualifies`].
fn twice_translation(m: &mut Module, c: CodeId) -> Option<CodeId> {
    let once = match m.chad_of.get(&(c, direction(TypeMap::Delta))) {
        Some(&t) => t,
        None => {
            let t = translate(m, c, TypeMap::Delta)?;
            m.chad_of.insert((c, direction(TypeMap::Delta)), t);
            t
        }
    };
    if let Some(&t) = m.chad_of.get(&(once, TWICE)) {
        return Some(t);
    }
    let t = translate(m, once, TypeMap::Delta)?;
    m.chad_of.insert((once, TWICE), t);
    Some(t)
}

/// `code`'s translation by a forward layer (memoised by fluxion-ad) of the code as
/// written: the bodies the resolution rewrote are put back while it translates (their
/// operators translate by the layer's own rules, forward-over-reverse), and the codes
/// it makes are noted as made by a push forward.
pub(crate) fn translate_original(
    m: &mut Module,
    table: &mut Translations,
    code: CodeId,
    layer: TypeMap,
) -> Option<CodeId> {
    translate_original_primal_captures(m, table, code, layer, &[]).map(|(t, _)| t)
}

/// [`translate`] with the captures at positions `candidates` passed as primals where
/// the code keeps them so (`activity::stays_primal`; none asked, the plain
/// translation): the translated code and the positions taken.
pub(crate) fn translate_primal_captures(
    m: &mut Module,
    code: CodeId,
    layer: TypeMap,
    candidates: &[usize],
) -> Option<(CodeId, Vec<usize>)> {
    let codes_before = m.codes.len();
    match crate::translate_code_primal_captures(m, code, layer, candidates) {
        Ok(t) => Some(t),
        Err(_) => {
            undo_translations(m, codes_before);
            None
        }
    }
}

/// [`translate_original`] with the captures at positions `candidates` passed as
/// primals where the code as written keeps them so.
pub(crate) fn translate_original_primal_captures(
    m: &mut Module,
    table: &mut Translations,
    code: CodeId,
    layer: TypeMap,
    candidates: &[usize],
) -> Option<(CodeId, Vec<usize>)> {
    let before = m.codes.len();
    m.swap_unresolved();
    let translated = translate_primal_captures(m, code, layer, candidates);
    m.swap_unresolved();
    table
        .pushed
        .extend((before..m.codes.len()).map(|i| CodeId(i as u32)));
    translated
}

/// [`translate`] with the bodies the resolution rewrote put back meanwhile.
fn translate_as_written(m: &mut Module, code: CodeId, layer: TypeMap) -> Option<CodeId> {
    m.swap_unresolved();
    let translated = translate(m, code, layer);
    m.swap_unresolved();
    translated
}

/// Whether `code` or a code it calls or closes over applies an operator, or did before
/// the resolution rewrote it (its body then holds calls of translated code — CHAD
/// types, linear blocks, the tape — which no layer translates again).
pub(crate) fn holds_operator(m: &Module, code: CodeId, rewritten: &HashSet<CodeId>) -> bool {
    let mut seen = HashSet::from([code]);
    let mut work = vec![code];
    while let Some(c) = work.pop() {
        if rewritten.contains(&c) || mentions_operator(&m.code(c).body) {
            return true;
        }
        fluxion_core::visit::for_each_code_ref(&m.code(c).body, &mut |r| {
            if seen.insert(r) {
                work.push(r);
            }
        });
    }
    false
}

/// Emits bindings with fresh variables.
pub(crate) struct Emit<'a> {
    pub(crate) m: &'a mut Module,
    pub(crate) out: Vec<Binding>,
    pub(crate) span: Span,
}

impl Emit<'_> {
    pub(crate) fn bind(&mut self, name: &str, ty: Type, rhs: Rhs) -> Atom {
        let var = self.m.fresh_var(name, ty);
        self.out.push(Binding {
            var,
            rhs,
            span: self.span,
        });
        Atom::Var(var)
    }

    /// The `n` arguments a point of `n` parameters stands for (a tuple when n > 1).
    pub(crate) fn split(&mut self, x: Atom, n: usize) -> Vec<Atom> {
        match n {
            0 => vec![],
            1 => vec![x],
            _ => {
                let Type::Tuple(ts) = self.m.atom_ty(&x) else {
                    return vec![x];
                };
                (0..n)
                    .map(|i| self.bind("x", ts[i].clone(), Rhs::Proj(x, i)))
                    .collect()
            }
        }
    }
}
