//! Inlining ([Knossos] §3's inlining before CSE, and §5.4's "the more inlining the better"; the rule the
//! Knossos simplifier applies to `let f = lam; f(a)`): a call whose callee is known here
//! — `CallDirect` of a top-level function, `Call` of a variable bound to a `Closure`,
//! or `Call` of a capture of this lambda known to hold a closure without captures
//! (`uses::known_capture_closures`: a helper bound once and called in a loop's lambda)
//! — is replaced by the callee's body under fresh names, its captures and parameters
//! bound to the closure's captured atoms and the arguments by copies (`simplify`
//! propagates them). This is beta reduction when the closure is a lambda made in the
//! same code, and what turns CHAD's and forward mode's per-call closures into plain
//! code that the other passes see through.
//!
//! What is inlined: codes that are not recursive (no cycle through calls or closures
//! reaches them from themselves), either small (at most [`SMALL`] bindings) or a lambda
//! whose closure is used by this call alone, or a top-level function called at one
//! site in the module (either dies, so nothing is duplicated). Each
//! code may grow by its own size plus [`BUDGET`] bindings, so chains of small callees
//! cannot blow up. A callee that takes or returns a small array of known length is
//! inlined up to [`SMALL_ARRAYS`] bindings, so that `unroll` and `simplify` can make
//! its elements scalars. The inlined bindings keep their spans: an error inside reports the
//! callee's location, as the call would.

use std::collections::HashMap;

use fluxion_core::{Atom, Binding, Body, CodeId, Rhs, Span, VarId};

use crate::Context;
use crate::instantiate::instantiate;

/// Callees of at most this many bindings are inlined wherever they are called.
pub(crate) const SMALL: usize = 12;
/// Callees of at most this many bindings are inlined where they pass a small array
/// (`unroll::MAX_COUNT` elements at most, of known length) in or out: its elements
/// become scalars only once its maker and reader are in one code.
pub(crate) const SMALL_ARRAYS: usize = 3 * SMALL;
/// Bindings each code may gain by inlining beyond its own size.
pub(crate) const BUDGET: usize = 400;

/// Inlines the known calls of `body` (and of the branches nested in it).
pub(crate) fn inline_calls(cx: &mut Context, body: &mut Body) {
    let uses = crate::uses::count_uses(body);
    let size = fluxion_core::visit::count_bindings(body);
    let closures = cx.captured_closures();
    let mut inliner = Inliner {
        cx,
        closures,
        uses,
        budget: size + BUDGET,
    };
    inliner.body(body);
}

struct Inliner<'a, 'c> {
    cx: &'a mut Context<'c>,
    /// Variables bound to a closure here: its code and captured atoms.
    closures: HashMap<VarId, (CodeId, Vec<Atom>)>,
    /// How often each variable is used in this code (captures of lambdas included).
    uses: HashMap<VarId, usize>,
    /// Bindings this code may still gain.
    budget: usize,
}

impl Inliner<'_, '_> {
    fn body(&mut self, body: &mut Body) {
        let mut out = Vec::with_capacity(body.bindings.len());
        // Bindings still to look at, in order (an inlined body's come first).
        let mut todo: Vec<Binding> = std::mem::take(&mut body.bindings);
        todo.reverse();
        while let Some(mut b) = todo.pop() {
            if let Some((code, captures, args, size)) = self.callee(&b.rhs, b.span) {
                let (bindings, result) = instantiate(self.cx.m, code, &captures, &args, b.span);
                self.budget = self.budget.saturating_sub(size);
                self.cx.changed = true;
                todo.push(Binding {
                    var: b.var,
                    rhs: Rhs::Atom(result),
                    span: b.span,
                });
                todo.extend(bindings.into_iter().rev());
                continue;
            }
            match &mut b.rhs {
                Rhs::Closure(c, args) => {
                    self.closures.insert(b.var, (*c, args.clone()));
                }
                Rhs::Atom(Atom::Var(v)) => {
                    if let Some(known) = self.closures.get(v).cloned() {
                        self.closures.insert(b.var, known);
                    }
                }
                Rhs::If(_, t, e) => {
                    self.body(t);
                    self.body(e);
                }
                Rhs::Match(_, arms, default) => {
                    for arm in arms.iter_mut() {
                        self.body(&mut arm.body);
                    }
                    if let Some(d) = default {
                        self.body(d);
                    }
                }
                _ => {}
            }
            out.push(b);
        }
        body.bindings = out;
    }

    /// The code, captured atoms, arguments and copy size of a call to inline here, if
    /// `rhs` is one (the size taken from the run's growth budget).
    fn callee(&self, rhs: &Rhs, span: Span) -> Option<(CodeId, Vec<Atom>, Vec<Atom>, usize)> {
        let (code, captures, args, once) = match rhs {
            Rhs::CallDirect(c, args) => (*c, Vec::new(), args.clone(), self.called_once(*c)),
            Rhs::Call(Atom::Var(f), args) => {
                let (c, captures) = self.closures.get(f)?;
                // A captured closure may be called elsewhere too: copied only if small.
                let captured = self
                    .cx
                    .current
                    .is_some_and(|c| self.cx.m.code(c).captures.contains(f));
                let once = self.uses.get(f) == Some(&1) && !captured;
                (*c, captures.clone(), args.clone(), once)
            }
            _ => return None,
        };
        // Not a recursive code, nor one of another source that can fail (a prelude
        // fault is reported at the user's call; inlined, it would point inside).
        if !self.cx.may_copy(code, span) {
            return None;
        }
        // What a copy makes, the lambdas made in the body included.
        let size = crate::instantiate::deep_size(self.cx.m, code);
        let limit = if self.small_arrays(code, &args) {
            SMALL_ARRAYS
        } else {
            SMALL
        };
        ((size <= limit || once) && size <= self.budget && self.cx.spend(size))
            .then_some((code, captures, args, size))
    }
}

impl Inliner<'_, '_> {
    /// Whether top-level function `code` is called at this one site: its copy
    /// replaces it (nothing is duplicated but an entry point the host may call).
    fn called_once(&self, code: CodeId) -> bool {
        let m = &self.cx.m;
        code.0 as usize >= self.cx.first
            && m.code(code).kind == fluxion_core::CodeKind::TopLevel
            && self.cx.references.get(&code) == Some(&1)
            && !m.derived_codes.values().any(|d| *d == code)
    }

    /// Whether a call of `code` with `args` passes a small array in (an argument of
    /// literal length) or out (the body's result is an array literal).
    fn small_arrays(&self, code: CodeId, args: &[Atom]) -> bool {
        let small = |k: Option<i64>| k.is_some_and(|k| k <= crate::unroll::MAX_COUNT);
        let body = &self.cx.m.code(code).body;
        let returns_literal = body.bindings.iter().any(|b| {
            Atom::Var(b.var) == body.result
                && matches!(&b.rhs, Rhs::Array(items) if small(Some(items.len() as i64)))
        });
        returns_literal
            || args
                .iter()
                .any(|a| small(self.cx.lengths.literal_length(*a)))
    }
}

/// The codes on a cycle of references (calls and closures): those that can reach
/// themselves, which inlining would unfold forever. Kosaraju's two depth-first
/// searches, iterative (a module may have many codes).
pub(crate) fn recursive_codes(
    m: &fluxion_core::Module,
    first: usize,
) -> std::collections::HashSet<CodeId> {
    let n = m.codes.len();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut pred: Vec<Vec<usize>> = vec![Vec::new(); n];
    // Only the codes the optimised ones reach can be inlined into them: the graph is
    // that part (closed under references, so its cycles are the module's).
    let mut reached = vec![false; n];
    let mut stack: Vec<usize> = (first..n).collect();
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut reached[i], true) {
            continue;
        }
        fluxion_core::visit::for_each_code_ref(&m.codes[i].body, &mut |c| {
            succ[i].push(c.0 as usize);
            pred[c.0 as usize].push(i);
            if !reached[c.0 as usize] {
                stack.push(c.0 as usize);
            }
        });
    }
    // First search: the order in which nodes finish.
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for root in 0..n {
        if seen[root] || !reached[root] {
            continue;
        }
        seen[root] = true;
        let mut stack = vec![(root, 0)];
        while let Some((v, next)) = stack.last_mut() {
            if let Some(&w) = succ[*v].get(*next) {
                *next += 1;
                if !seen[w] {
                    seen[w] = true;
                    stack.push((w, 0));
                }
            } else {
                order.push(*v);
                stack.pop();
            }
        }
    }
    // Second search on the reversed graph, in reverse finishing order: one component
    // per tree.
    let mut component = vec![usize::MAX; n];
    let mut sizes = Vec::new();
    for &root in order.iter().rev() {
        if component[root] != usize::MAX || !reached[root] {
            continue;
        }
        let id = sizes.len();
        let mut size = 0;
        component[root] = id;
        let mut stack = vec![root];
        while let Some(v) = stack.pop() {
            size += 1;
            for &w in &pred[v] {
                if component[w] == usize::MAX {
                    component[w] = id;
                    stack.push(w);
                }
            }
        }
        sizes.push(size);
    }
    (0..n)
        .filter(|&v| reached[v] && (sizes[component[v]] > 1 || succ[v].contains(&v)))
        .map(|v| CodeId(v as u32))
        .collect()
}
