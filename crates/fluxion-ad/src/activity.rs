//! Activity analysis for the structure-preserving layers (forward, Taylor, jets, deltas,
//! dependencies): a binding whose value reaches the code's result only through
//! primitives whose derivative is zero — comparisons, `argmax`, `length`, `to_int` —
//! carries no perturbation that matters, so the translation computes it on primals (a
//! copy of the original binding) instead of translating it. This is the "useful" half of
//! the classic activity analysis of source-transformation AD; in the delta layer it
//! keeps such values off the tape.
//!
//! The "varied" half: a binding computed from no input — from literals, values without
//! perturbation (`Int`s: a point `t = to_real(i) / to_real(n)`), other such bindings
//! and captures the enclosing translation passes as primals — has zero perturbation
//! wherever it is read, so it is computed on primals too, and a translated binding
//! reads it as a constant: a real is lifted where it is read (as a literal is), and
//! other data may be captured by a lambda made for a loop or a call, or passed to a
//! function, whose translation then takes it as a primal — specialised to it — where
//! its uses there are served so in turn ([`stays_primal`]; an array of reals a lambda
//! only indexes always is: llsq's powers of `t`, a `scan`, no pair per power, no tape
//! entry). The seeds: captures and parameters a caller passes as primals, among them
//! the data a closure an operator differentiates captures (`ahead/lift.rs`: the
//! operator differentiates in its argument only) — ht's model data, passed down
//! through `errors`, `vertex_positions` and `matmul` unlifted.
//!
//! The rewrite that exposes it ([`rewrite_extrema`]): `minimum(map(f, xs))` is
//! `f(xs[i])` at the first index `i` attaining the minimum (`minimum` follows the first
//! index, `docs/language.md` §5), so the map is left to find `i` — on primals — and one
//! element is translated (k-means' nearest centroid: one translated distance per point
//! instead of one per centroid).
//!
//! What must stay true: a primal-only variable is read by the translation only where a
//! primal is wanted (the primitives of [`reads_primal`]), by another primal-only
//! binding (or inside one), or, made from no input, where it lifts cheaply; its
//! binding's free variables have primals (a primal-only
//! variable, a value of a type without perturbation, a translated value without
//! functions, whose primal `primal_of` takes, or a translated function whose arguments
//! can be lifted, called on lifted arguments — [`wraps`]); and its right-hand side
//! holds no operator or tape primitive, there or in any code it reaches.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use fluxion_core::{Atom, Binding, Body, CodeId, Lit, Module, Prim, Rhs, Type, TypeMap, VarId};

use crate::builder::Builder;
use crate::layer::{empty_check, negate_array};

/// Primitives that read their arguments' primals only (the translation reads them so):
/// their results carry no perturbation.
pub(crate) fn reads_primal(p: Prim) -> bool {
    use Prim::*;
    matches!(p, Lt | Le | Gt | Ge | Eq | Ne | Argmax | ToInt | Length)
}

/// Rewrites, in `body` and its branches, `let m = minimum(ys)` (or `maximum`) where
/// `ys = map(f, xs)` or `ys = build(n, f)` is bound before it in scope, used there
/// alone, and `f` is a closure made in this code, into
/// `if length(ys) == 0 { minimum([]) }; let i = argmax(-ys); let m = f'(xs[i])` (`f(i)`
/// for `build`), `f'` a second closure of `f`'s code, so that `ys` (read by `argmax`
/// alone) and `f` become primal-only. The same value: `minimum` is the element at the
/// first index attaining it; an empty array fails with `minimum`'s own message.
pub(crate) fn rewrite_extrema(m: &mut Module, body: &mut Body) {
    let uses = fluxion_opt::count_uses(body);
    let mut b = Builder::new(m, fluxion_core::Span::default());
    rewrite_block(&mut b, body, &uses, &mut HashMap::new());
}

fn rewrite_block(
    b: &mut Builder,
    body: &mut Body,
    uses: &HashMap<VarId, usize>,
    scope: &mut HashMap<VarId, Rhs>,
) {
    let mut out = Vec::with_capacity(body.bindings.len());
    let mut local = Vec::new();
    for mut binding in std::mem::take(&mut body.bindings) {
        fluxion_core::visit::for_each_branch_mut(&mut binding.rhs, &mut |inner| {
            rewrite_block(b, inner, uses, scope)
        });
        if let Some(bindings) = extremum(b, &binding, uses, scope) {
            out.extend(bindings);
            continue;
        }
        if matches!(
            binding.rhs,
            Rhs::Closure(..) | Rhs::Prim(Prim::Map | Prim::Build, _)
        ) {
            scope.insert(binding.var, binding.rhs.clone());
            local.push(binding.var);
        }
        out.push(binding);
    }
    for v in local {
        scope.remove(&v);
    }
    body.bindings = out;
}

/// The bindings replacing `binding` when it is an extremum of a map or build of a known
/// closure (see [`rewrite_extrema`]).
fn extremum(
    b: &mut Builder,
    binding: &Binding,
    uses: &HashMap<VarId, usize>,
    scope: &HashMap<VarId, Rhs>,
) -> Option<Vec<Binding>> {
    let Rhs::Prim(p @ (Prim::Minimum | Prim::Maximum), args) = &binding.rhs else {
        return None;
    };
    let Atom::Var(ys) = args[0] else { return None };
    if b.m.var_ty(ys) != &Type::array(Type::Real) || uses.get(&ys) != Some(&1) {
        return None;
    }
    let (f, element) = match scope.get(&ys)? {
        Rhs::Prim(Prim::Map, a) => (a[0], Some(a[1])),
        Rhs::Prim(Prim::Build, a) => (a[1], None),
        _ => return None,
    };
    let Atom::Var(fv) = f else { return None };
    let Rhs::Closure(code, captures) = scope.get(&fv)?.clone() else {
        return None;
    };
    let (p, span) = (*p, binding.span);
    b.span = span;
    let body = b.block(|b| {
        empty_check(b, p, Atom::Var(ys));
        let key = if p == Prim::Minimum {
            negate_array(b, Atom::Var(ys))
        } else {
            Atom::Var(ys)
        };
        let i = b.prim(Prim::Argmax, &[key], Type::Int);
        let arg = match element {
            Some(xs) => {
                let elem = match b.ty(&xs) {
                    Type::Array(t) => (*t).clone(),
                    _ => unreachable!("map over an array"),
                };
                b.prim(Prim::Index, &[xs, i], elem)
            }
            None => i,
        };
        let fty = b.m.var_ty(fv).clone();
        let again = b.emit("again", Rhs::Closure(code, captures), fty);
        b.bind(binding.var, Rhs::Call(again, vec![arg]));
        Atom::Lit(Lit::Unit)
    });
    Some(body.bindings)
}

/// One use of a variable: the bindings it is under, innermost first (the binding whose
/// right-hand side reads it, then those whose branches hold that one; empty for the
/// code's result), and whether it is read for its primal only.
struct Use {
    chain: Vec<VarId>,
    primal: bool,
}

/// The variables of `body` (a code's body, branches included, lambdas not: they are
/// codes of their own) whose binding the translation by `map` computes on primals.
/// The greatest set closed under the rules of the module doc: every binding that could
/// be primal-only starts in, and one that breaks a rule leaves, until none does.
pub(crate) fn primal_only(
    m: &Module,
    body: &Body,
    map: TypeMap,
    seeds: &HashSet<VarId>,
) -> HashSet<VarId> {
    Analysis::of(m, body, map, seeds, &Memo::default()).set
}

/// An input of a code: a capture or a parameter, by position.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Input {
    Capture(usize),
    Param(usize),
}

/// Verdicts of [`stays_primal`] per code and input; `None` while one is being decided
/// (a recursive call meeting it: not kept).
#[derive(Default)]
pub(crate) struct Memo(RefCell<HashMap<(CodeId, Input), Option<bool>>>);

/// Whether `code`'s translation by `map` can take input `input` as a primal — it
/// made from no input, its every use served on primals (read for its primal, by a
/// primal-only binding, or lifting cheaply) — so that a caller passing an unvaried
/// value there passes it unlifted, and the translation is specialised to it
/// (`structural.rs`'s `PrimalInputs`). For data of a type [`liftable`] takes (a real
/// always: it is lifted where it is read).
pub(crate) fn stays_primal(
    m: &Module,
    map: TypeMap,
    code: CodeId,
    input: Input,
    memo: &Memo,
) -> bool {
    if let Some(known) = memo.0.borrow().get(&(code, input)) {
        return known.unwrap_or(false);
    }
    let c = m.code(code);
    let var = match input {
        Input::Capture(i) => c.captures.get(i),
        Input::Param(i) => c.params.get(i),
    };
    let Some(&var) = var else { return false };
    let ty = m.var_ty(var);
    if *ty == Type::Real {
        // Lifted where it is read (the element of an array a `map` walks).
        return true;
    }
    if m.is_fixed(ty, map) || !liftable(m, ty, map) {
        return false;
    }
    memo.0.borrow_mut().insert((code, input), None);
    let seeds = HashSet::from([var]);
    let analysis = Analysis::of(m, &c.body, map, &seeds, memo);
    let verdict = analysis.used_well(m, var, &analysis.set, memo);
    memo.0.borrow_mut().insert((code, input), Some(verdict));
    verdict
}

/// One code body's activity analysis: the primal-only set, and what it was computed
/// from (to ask of an input afterwards whether its uses are served).
struct Analysis<'a> {
    set: HashSet<VarId>,
    unvaried: HashSet<VarId>,
    rhs_of: HashMap<VarId, &'a Rhs>,
    uses: HashMap<VarId, Vec<Use>>,
    map: TypeMap,
}

impl<'a> Analysis<'a> {
    fn of(
        m: &Module,
        body: &'a Body,
        map: TypeMap,
        seeds: &HashSet<VarId>,
        memo: &Memo,
    ) -> Analysis<'a> {
        let mut rhs_of: HashMap<VarId, &Rhs> = HashMap::new();
        let mut uses: HashMap<VarId, Vec<Use>> = HashMap::new();
        let mut inside: HashMap<VarId, Vec<VarId>> = HashMap::new();
        collect(body, &mut Vec::new(), &mut rhs_of, &mut uses, &mut inside);
        let mut clean = HashMap::new();
        let mut set: HashSet<VarId> = rhs_of
            .iter()
            .filter(|(v, rhs)| {
                let ty = m.var_ty(**v);
                !m.is_fixed(ty, map)
                    && (!matches!(ty, Type::Fn(..)) || matches!(rhs, Rhs::Closure(..)))
                    && operator_free(m, rhs, &mut clean)
            })
            .map(|(v, _)| *v)
            .collect();
        let free: HashMap<VarId, Vec<VarId>> =
            set.iter().map(|v| (*v, free_vars_of(rhs_of[v]))).collect();
        let mut readers: HashMap<VarId, Vec<VarId>> = HashMap::new();
        for (v, xs) in &free {
            for x in xs {
                readers.entry(*x).or_default().push(*v);
            }
        }
        // Seeds are unvaried too (their uses are asked about by `stays_primal`).
        let mut unvaried = unvaried(m, map, &set, &free, &readers, seeds);
        unvaried.extend(seeds);
        let mut analysis = Analysis {
            set: HashSet::new(),
            unvaried,
            rhs_of,
            uses,
            map,
        };
        let keeps = |v: &VarId, set: &HashSet<VarId>, a: &Analysis| {
            a.used_well(m, *v, set, memo)
                && free[v].iter().all(|x| {
                    set.contains(x) || seeds.contains(x) || {
                        let t = m.var_ty(*x);
                        m.is_fixed(t, map) || !m.can_hold_fn(t) || wraps(m, t, map)
                    }
                })
        };
        // A worklist: a variable leaving changes the verdict of what it reads (their
        // uses by it), of what reads it (their primals) and of what is bound in its
        // branches (their uses under it).
        let mut queue: Vec<VarId> = set.iter().copied().collect();
        let mut queued: HashSet<VarId> = set.clone();
        while let Some(v) = queue.pop() {
            queued.remove(&v);
            if !set.contains(&v) || keeps(&v, &set, &analysis) {
                continue;
            }
            set.remove(&v);
            let affected = free[&v]
                .iter()
                .chain(readers.get(&v).into_iter().flatten())
                .chain(inside.get(&v).into_iter().flatten());
            for w in affected {
                if set.contains(w) && queued.insert(*w) {
                    queue.push(*w);
                }
            }
        }
        analysis.set = set;
        analysis
    }

    /// Whether every use of `v` is served with `set` primal-only: read for its primal,
    /// under a primal-only binding, or (`v` unvaried) lifting cheaply.
    fn used_well(&self, m: &Module, v: VarId, set: &HashSet<VarId>, memo: &Memo) -> bool {
        self.uses.get(&v).is_none_or(|us| {
            us.iter().all(|u| {
                u.primal
                    || u.chain.iter().any(|c| set.contains(c))
                    || (self.unvaried.contains(&v) && self.lifts_cheaply(m, v, u, memo))
            })
        })
    }

    /// The code of `f` where it is a lambda made in this code and used once (by the
    /// loop or call asking).
    fn loop_lambda(&self, m: &Module, f: &Atom) -> Option<CodeId> {
        let Atom::Var(fv) = f else { return None };
        let Some(Rhs::Closure(code, _)) = self.rhs_of.get(fv) else {
            return None;
        };
        let single = self.uses.get(fv).is_some_and(|us| us.len() == 1);
        (single && m.code(*code).kind == fluxion_core::CodeKind::Lambda).then_some(*code)
    }

    /// Whether use `u` of unvaried `v` by a translated binding is cheap to serve: a
    /// real is lifted where it is read (a constant, as a literal is); other data may be
    /// captured by a lambda made for a loop, a call or an operator, passed to a
    /// function or to a lambda made for that call alone (the extrema rewrite's
    /// `again(xs[i])`), or walked by a `map` of a lambda made for it, whose translation
    /// then takes it (or its elements) as a primal where it [`stays_primal`] there (an
    /// array of reals a lambda only indexes and takes the length of always does).
    fn lifts_cheaply(&self, m: &Module, v: VarId, u: &Use, memo: &Memo) -> bool {
        let ty = m.var_ty(v);
        if *ty == Type::Real {
            return true;
        }
        // Only data is passed on as a primal (a function never: `lift_value` lifts
        // none), and only where the reader takes it as an argument.
        let Some(w) = u.chain.first().filter(|_| !m.can_hold_fn(ty)) else {
            return false;
        };
        let positions = |args: &[Atom]| -> Vec<usize> {
            (args.iter().enumerate())
                .filter(|(_, a)| **a == Atom::Var(v))
                .map(|(i, _)| i)
                .collect()
        };
        // Whether `code` keeps its parameters at `args`' positions of `v` primal.
        let params_stay = |code: CodeId, args: &[Atom]| {
            (positions(args).into_iter())
                .all(|i| stays_primal(m, self.map, code, Input::Param(i), memo))
        };
        match self.rhs_of.get(w) {
            Some(Rhs::Closure(code, args)) => {
                let c = m.code(*code);
                let indexed_reals = *ty == Type::array(Type::Real);
                c.kind == fluxion_core::CodeKind::Lambda
                    && positions(args).into_iter().all(|i| {
                        (indexed_reals && only_indexed(&c.body, c.captures[i]))
                            || stays_primal(m, self.map, *code, Input::Capture(i), memo)
                    })
                    && self.uses.get(w).is_some_and(|us| {
                        us.iter().all(|u| {
                            u.chain
                                .first()
                                .and_then(|r| self.rhs_of.get(r))
                                .is_some_and(|rhs| applies_only(rhs, *w))
                        })
                    })
            }
            Some(Rhs::CallDirect(code, args)) => params_stay(*code, args),
            // The argument of a lambda made here for this call alone (the extrema
            // rewrite's `again(xs[i])`), which then takes it as a primal.
            Some(Rhs::Call(g, args)) => self
                .loop_lambda(m, g)
                .is_some_and(|code| params_stay(code, args)),
            // The array a `map` or `map2` walks (`v` is data: never the function), its
            // function a lambda made here for it alone, which then takes the elements
            // as primals.
            Some(Rhs::Prim(Prim::Map | Prim::Map2, args)) => self
                .loop_lambda(m, &args[0])
                .is_some_and(|code| params_stay(code, &args[1..])),
            _ => false,
        }
    }
}

/// The varied half of activity analysis: the candidates computed from `seeds`
/// (captures the enclosing translation passes as primals), literals and values
/// without perturbation only, to a fixed point. Their perturbation is zero wherever
/// they are read, so a translated binding may read them lifted as constants.
fn unvaried(
    m: &Module,
    map: TypeMap,
    candidates: &HashSet<VarId>,
    free: &HashMap<VarId, Vec<VarId>>,
    readers: &HashMap<VarId, Vec<VarId>>,
    seeds: &HashSet<VarId>,
) -> HashSet<VarId> {
    let mut set = candidates.clone();
    let mut queue: Vec<VarId> = set.iter().copied().collect();
    while let Some(v) = queue.pop() {
        let constant = |x: &VarId, set: &HashSet<VarId>| {
            set.contains(x) || seeds.contains(x) || m.is_fixed(m.var_ty(*x), map)
        };
        if !set.contains(&v) || free[&v].iter().all(|x| constant(x, &set)) {
            continue;
        }
        set.remove(&v);
        queue.extend(
            readers
                .get(&v)
                .into_iter()
                .flatten()
                .filter(|r| set.contains(r)),
        );
    }
    set
}

/// Whether `c` occurs in `body` (branches included; a lambda capturing it counts)
/// only as the array of `c[i]` or `length(c)`.
fn only_indexed(body: &Body, c: VarId) -> bool {
    body.result != Atom::Var(c)
        && body.bindings.iter().all(|b| match &b.rhs {
            Rhs::Prim(Prim::Index | Prim::Length, _) => true,
            Rhs::If(cond, t, e) => {
                *cond != Atom::Var(c) && only_indexed(t, c) && only_indexed(e, c)
            }
            Rhs::Match(s, arms, default) => {
                *s != Atom::Var(c)
                    && arms.iter().all(|a| only_indexed(&a.body, c))
                    && default.iter().all(|d| only_indexed(d, c))
            }
            rhs => !free_vars_of(rhs).contains(&c),
        })
}

/// Whether `rhs` reads closure `w` only as the function a loop or a call applies, or
/// an operator differentiates (its translation is a translated function like any
/// other: a capture taken as a primal is data that operator does not differentiate
/// either — k-means' `dir`, a `jvp` of a `grad` of a closure capturing the points).
fn applies_only(rhs: &Rhs, w: VarId) -> bool {
    let f = Atom::Var(w);
    let (callee, rest): (Option<&Atom>, Vec<&Atom>) = match rhs {
        Rhs::Prim(Prim::Build | Prim::Sumbuild | Prim::Iterate, a) if a.len() >= 2 => (
            Some(&a[1]),
            a.iter()
                .enumerate()
                .filter(|(i, _)| *i != 1)
                .map(|(_, x)| x)
                .collect(),
        ),
        Rhs::Prim(
            Prim::Map
            | Prim::Map2
            | Prim::Fold
            | Prim::Scan
            | Prim::Jvp
            | Prim::Taylor
            | Prim::Jet
            | Prim::DeltaVjp
            | Prim::ChadVjp
            | Prim::DeltaJacobian,
            a,
        ) if !a.is_empty() => (Some(&a[0]), a[1..].iter().collect()),
        Rhs::Call(g, a) => (Some(g), a.iter().collect()),
        _ => (None, Vec::new()),
    };
    callee == Some(&f) && !rest.contains(&&f)
}

/// Whether a translated function of type `ty` has a primal counterpart the
/// translation can make (`structural.rs`'s `primal_function`): its arguments liftable,
/// its result without functions.
pub(crate) fn wraps(m: &Module, ty: &Type, map: TypeMap) -> bool {
    match ty {
        Type::Fn(params, ret) => params.iter().all(|p| liftable(m, p, map)) && !m.can_hold_fn(ret),
        _ => false,
    }
}

/// Whether a value of type `ty` can be lifted into the translation with zero
/// perturbation by walking it: reals, values without perturbation, tuples and arrays
/// of them.
pub(crate) fn liftable(m: &Module, ty: &Type, map: TypeMap) -> bool {
    match ty {
        Type::Real => true,
        _ if m.is_fixed(ty, map) => true,
        Type::Tuple(ts) => ts.iter().all(|t| liftable(m, t, map)),
        Type::Array(t) => liftable(m, t, map),
        _ => false,
    }
}

/// Each binding's right-hand side, each variable's uses, and the variables bound in
/// each binding's branches (at any depth).
fn collect<'a>(
    body: &'a Body,
    chain: &mut Vec<VarId>,
    rhs_of: &mut HashMap<VarId, &'a Rhs>,
    uses: &mut HashMap<VarId, Vec<Use>>,
    inside: &mut HashMap<VarId, Vec<VarId>>,
) {
    let mut note = |a: &Atom, chain: &[VarId], primal: bool| {
        if let Atom::Var(v) = a {
            uses.entry(*v).or_default().push(Use {
                chain: chain.to_vec(),
                primal,
            });
        }
    };
    let mut nested: Vec<(VarId, &'a Body)> = Vec::new();
    for binding in &body.bindings {
        rhs_of.insert(binding.var, &binding.rhs);
        for owner in chain.iter() {
            inside.entry(*owner).or_default().push(binding.var);
        }
        chain.insert(0, binding.var);
        match &binding.rhs {
            Rhs::Atom(a) | Rhs::Proj(a, _) => note(a, chain, false),
            Rhs::Prim(p, args) => args.iter().for_each(|a| note(a, chain, reads_primal(*p))),
            Rhs::CallDirect(_, args)
            | Rhs::Closure(_, args)
            | Rhs::Tuple(args)
            | Rhs::Array(args)
            | Rhs::Ctor(_, _, args) => args.iter().for_each(|a| note(a, chain, false)),
            Rhs::Call(f, args) => {
                note(f, chain, false);
                args.iter().for_each(|a| note(a, chain, false));
            }
            Rhs::If(c, t, e) => {
                note(c, chain, false);
                nested.push((binding.var, t));
                nested.push((binding.var, e));
            }
            Rhs::Match(s, arms, default) => {
                note(s, chain, false);
                nested.extend(arms.iter().map(|arm| (binding.var, &arm.body)));
                nested.extend(default.iter().map(|d| (binding.var, &**d)));
            }
        }
        chain.remove(0);
    }
    note(&body.result, chain, false);
    for (owner, inner) in nested {
        chain.insert(0, owner);
        collect(inner, chain, rhs_of, uses, inside);
        chain.remove(0);
    }
}

/// Whether `rhs`, its branches and every code it reaches (closures, direct calls) hold
/// no operator or tape primitive (what a copy on primals cannot run). `clean` memoises
/// per code.
fn operator_free(m: &Module, rhs: &Rhs, clean: &mut HashMap<CodeId, bool>) -> bool {
    let (ok, codes) = scan(&[one(rhs)]);
    ok && codes.into_iter().all(|c| code_operator_free(m, c, clean))
}

pub(crate) fn code_operator_free(
    m: &Module,
    code: CodeId,
    clean: &mut HashMap<CodeId, bool>,
) -> bool {
    if let Some(known) = clean.get(&code) {
        return *known;
    }
    // Every code reached, each once (cycles included); only final verdicts are kept,
    // so a code on a cycle is never taken as clean while it is still looked at.
    let (mut seen, mut stack, mut ok) = (HashSet::new(), vec![code], true);
    while let Some(c) = stack.pop() {
        if !seen.insert(c) {
            continue;
        }
        match clean.get(&c) {
            Some(true) => continue,
            Some(false) => {
                ok = false;
                break;
            }
            None => {}
        }
        let (clean_here, codes) = scan(&m.code(c).body.bindings);
        if !clean_here {
            ok = false;
            break;
        }
        stack.extend(codes);
    }
    clean.insert(code, ok);
    ok
}

/// Whether `bindings` (branches included) run only copyable primitives, and the codes
/// they close over or call.
fn scan(bindings: &[Binding]) -> (bool, Vec<CodeId>) {
    let (mut ok, mut codes) = (true, Vec::new());
    fluxion_core::visit::for_each_binding_in(bindings, &mut |b| match &b.rhs {
        Rhs::Prim(p, _) if !copyable(*p) => ok = false,
        Rhs::CallDirect(c, _) | Rhs::Closure(c, _) => codes.push(*c),
        _ => {}
    });
    (ok, codes)
}

/// `rhs` as a binding of its own (to walk it with the binding visitors).
fn one(rhs: &Rhs) -> Binding {
    Binding {
        var: VarId(u32::MAX),
        rhs: rhs.clone(),
        span: Default::default(),
    }
}

/// Primitives a copy on primals may run: not the operators, nor those of the tapes or
/// CHAD's closures (their effects belong to the translation).
fn copyable(p: Prim) -> bool {
    !p.is_derivative_machinery()
}

/// The variables `rhs` reads from outside (its branches' and lambdas' included).
pub(crate) fn free_vars_of(rhs: &Rhs) -> Vec<VarId> {
    fluxion_core::visit::free_vars(&Body {
        bindings: vec![one(rhs)],
        result: Atom::Lit(Lit::Unit),
    })
}
