//! Which closures can reach an operator: a flow analysis over the whole module (0-CFA,
//! context-insensitive, with tuples, arrays and enums smashed to one set each), so that
//! `%chad_of` chooses among the codes that can flow to its argument, not among every
//! code of the type.
//!
//! What makes the candidates finite is that translated codes are analysed as the
//! program they are: `%chad_of(f, d)` yields the translations of the codes flowing to
//! `f`, with their captured closures translated in turn (as the run time lifts them),
//! so a translated function receives only what translated code passes it. Saddle's
//! gradient of `max_over_y` (which applies the inner gradient) reaches the forward
//! translation of that gradient applied to the inner objective only — by type, the
//! candidates would include `max_over_y` again, a tower of translations without end.
//!
//! The analysis may miss a flow only where the run time recovers: a closure whose code
//! is not among `%chad_of`'s candidates hands the run to the interpreter natively
//! (`fx_miss`) and is translated at run time by the interpreter.

use std::collections::{BTreeSet, HashMap, HashSet};

use fluxion_core::{Atom, Body, CodeId, Lit, Module, Prim, Rhs, VarId};

/// The codes of the closures each variable may hold (for a variable of a tuple, array
/// or enum type, those anywhere inside it).
#[derive(Clone, Debug, Default)]
pub(crate) struct Flow {
    sets: HashMap<VarId, BTreeSet<CodeId>>,
    /// The variables the analysis saw bound (a variable bound later, by a translation
    /// made after it ran, has no flow known).
    analysed: HashSet<VarId>,
}

impl Flow {
    /// The codes `v` may hold, or `None` where the analysis did not see `v` (or saw
    /// nothing reach it: dead code, or a root's parameter).
    pub(crate) fn of(&self, v: VarId) -> Option<&BTreeSet<CodeId>> {
        if !self.analysed.contains(&v) {
            return None;
        }
        self.sets.get(&v).filter(|s| !s.is_empty())
    }
}

/// The flow of closures through the codes `roots` reach.
pub(crate) fn analyse(m: &Module, roots: &[CodeId]) -> Flow {
    let mut a = Analysis {
        m,
        holds: m.vars.iter().map(|v| m.can_hold_fn(&v.ty)).collect(),
        flow: Flow::default(),
        results: HashMap::new(),
        reached: roots.iter().copied().collect(),
        order: roots.to_vec(),
        changed: true,
    };
    let mut passes = 0;
    while a.changed && passes < MAX_PASSES {
        a.changed = false;
        passes += 1;
        let mut i = 0;
        while i < a.order.len() {
            let c = a.order[i];
            let code = m.code(c);
            for v in code.params.iter().chain(&code.captures) {
                a.flow.analysed.insert(*v);
            }
            let result = a.body(&code.body);
            a.add_to_result(c, &result);
            i += 1;
        }
    }
    a.flow
}

/// A bound on the passes (each pass carries every flow one step further; the sets only
/// grow, so the analysis ends anyway — this bounds its cost on a pathological module).
const MAX_PASSES: usize = 200;

struct Analysis<'m> {
    m: &'m Module,
    /// Whether a variable's type can hold a function (only those carry flow).
    holds: Vec<bool>,
    flow: Flow,
    /// The codes a code's result may hold.
    results: HashMap<CodeId, BTreeSet<CodeId>>,
    reached: HashSet<CodeId>,
    order: Vec<CodeId>,
    changed: bool,
}

impl Analysis<'_> {
    fn reach(&mut self, c: CodeId) {
        if self.reached.insert(c) {
            self.order.push(c);
            self.changed = true;
        }
    }

    fn atom(&self, a: &Atom) -> BTreeSet<CodeId> {
        match a {
            Atom::Var(v) => self.flow.sets.get(v).cloned().unwrap_or_default(),
            _ => BTreeSet::new(),
        }
    }

    fn add(&mut self, v: VarId, codes: &BTreeSet<CodeId>) {
        if codes.is_empty() || !self.holds.get(v.0 as usize).copied().unwrap_or(false) {
            return;
        }
        let set = self.flow.sets.entry(v).or_default();
        for c in codes {
            self.changed |= set.insert(*c);
        }
    }

    fn add_to_result(&mut self, c: CodeId, codes: &BTreeSet<CodeId>) {
        if codes.is_empty() {
            return;
        }
        let set = self.results.entry(c).or_default();
        for d in codes {
            self.changed |= set.insert(*d);
        }
    }

    /// Analyses `body`; the codes its result may hold.
    fn body(&mut self, body: &Body) -> BTreeSet<CodeId> {
        for b in &body.bindings {
            self.flow.analysed.insert(b.var);
            let out = self.rhs(&b.rhs);
            self.add(b.var, &out);
        }
        self.atom(&body.result)
    }

    /// Applies the closures of `codes` to arguments holding `args`: the codes the
    /// results may hold.
    fn apply(&mut self, codes: &BTreeSet<CodeId>, args: &[BTreeSet<CodeId>]) -> BTreeSet<CodeId> {
        let mut out = BTreeSet::new();
        for &d in codes {
            self.reach(d);
            let params = self.m.code(d).params.clone();
            for (p, a) in params.iter().zip(args) {
                self.add(*p, a);
            }
            // A higher-order primitive passes its function any of its arguments.
            if args.len() != params.len() {
                let all: BTreeSet<CodeId> = args.iter().flatten().copied().collect();
                for p in &params {
                    self.add(*p, &all);
                }
            }
            out.extend(self.results.get(&d).into_iter().flatten().copied());
        }
        out
    }

    fn rhs(&mut self, rhs: &Rhs) -> BTreeSet<CodeId> {
        match rhs {
            Rhs::Atom(a) | Rhs::Proj(a, _) => self.atom(a),
            Rhs::Tuple(xs) | Rhs::Array(xs) | Rhs::Ctor(_, _, xs) => {
                xs.iter().flat_map(|x| self.atom(x)).collect()
            }
            Rhs::Closure(c, args) => {
                self.reach(*c);
                let captures = self.m.code(*c).captures.clone();
                for (x, a) in captures.iter().zip(args) {
                    let s = self.atom(a);
                    self.add(*x, &s);
                }
                BTreeSet::from([*c])
            }
            Rhs::CallDirect(c, args) => {
                let args: Vec<_> = args.iter().map(|a| self.atom(a)).collect();
                self.apply(&BTreeSet::from([*c]), &args)
            }
            Rhs::Call(f, args) => {
                let codes = self.atom(f);
                let args: Vec<_> = args.iter().map(|a| self.atom(a)).collect();
                self.apply(&codes, &args)
            }
            Rhs::If(_, t, e) => {
                let mut out = self.body(t);
                out.extend(self.body(e));
                out
            }
            Rhs::Match(x, arms, d) => {
                let s = self.atom(x);
                let mut out = BTreeSet::new();
                for arm in arms {
                    for f in &arm.fields {
                        self.flow.analysed.insert(*f);
                        self.add(*f, &s);
                    }
                    out.extend(self.body(&arm.body));
                }
                if let Some(d) = d {
                    out.extend(self.body(d));
                }
                out
            }
            Rhs::Prim(Prim::ChadOf, args) => match args.as_slice() {
                [f, Atom::Lit(Lit::Int(d))] => {
                    let s = self.atom(f);
                    self.lift(&s, *d)
                }
                _ => BTreeSet::new(),
            },
            Rhs::Prim(Prim::ClosureCapture, args) => match args.as_slice() {
                [_, Atom::Lit(Lit::Int(i)), Atom::Lit(Lit::Int(c))] => {
                    let code = self.m.code(CodeId(*c as u32));
                    match code.captures.get(*i as usize) {
                        Some(x) => self.atom(&Atom::Var(*x)),
                        None => BTreeSet::new(),
                    }
                }
                _ => BTreeSet::new(),
            },
            Rhs::Prim(_, args) => {
                // Any argument's closures may be applied to the others and returned.
                let sets: Vec<_> = args.iter().map(|a| self.atom(a)).collect();
                let all: BTreeSet<CodeId> = sets.iter().flatten().copied().collect();
                let mut out = all.clone();
                let applied = self.apply(&all, &sets);
                out.extend(applied);
                out
            }
        }
    }

    /// The closures of `codes` as `%chad_of(·, d)` makes them at run time: each code's
    /// translation, capturing the translations of what the original captured.
    fn lift(&mut self, codes: &BTreeSet<CodeId>, d: i64) -> BTreeSet<CodeId> {
        let mut out = BTreeSet::new();
        let mut work: Vec<CodeId> = codes.iter().copied().collect();
        let mut seen: HashSet<CodeId> = HashSet::new();
        while let Some(e) = work.pop() {
            if !seen.insert(e) {
                continue;
            }
            let Some(&t) = self.m.chad_of.get(&(e, d)) else {
                continue;
            };
            if codes.contains(&e) {
                out.insert(t);
            }
            self.reach(t);
            let (from, to) = (
                self.m.code(e).captures.clone(),
                self.m.code(t).captures.clone(),
            );
            if from.len() != to.len() {
                continue;
            }
            for (x, y) in from.iter().zip(&to) {
                let inner = self.atom(&Atom::Var(*x));
                let lifted: BTreeSet<CodeId> = inner
                    .iter()
                    .filter_map(|c| self.m.chad_of.get(&(*c, d)).copied())
                    .collect();
                self.add(*y, &lifted);
                work.extend(inner);
            }
        }
        out
    }
}
