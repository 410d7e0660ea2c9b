//! Unzipping loops of tuples: `let ys = map(f, xs)` (or `map2`, `build`) whose
//! function returns a tuple built in its body, and whose result is only ever taken
//! apart — each element projected by the next loop's lambda, or its length read —
//! becomes one loop per component used, `ys_i = map(|x| f(x).i, xs)`, each a copy of
//! `f` that dead-code elimination trims to what that component needs.
//!
//! This is what CHAD's array rules need ([CHAD]'s (value, backpropagator) pairs;
//! the "tupling" of [Knossos] §5 read backwards): `map` of a translated function makes
//! an array of pairs whose values the primal reads and whose backpropagators the
//! backward pass calls. Unzipped, the values are an array of reals and the
//! backpropagators an array of closures that `fuse` then merges into the backward
//! loop and `inline` turns into plain code: no closure, pair or array of closures is
//! made per element.
//!
//! Uses may be in this code or in a lambda made here (at its one closure site: its
//! captures are then rewritten, `ys` replaced by the components). `f`'s body is
//! copied once per component, so it must be plain code: no call, no loop, no delta
//! primitive but `%delta` where every component is a `(Real, Int)` pair (copies of a
//! failing binding fail at the same element, first in the first copy's loop, so
//! errors are unchanged). A use that reads two components of an element of `map2`'s
//! operand (no `map3`), or any other use, leaves `ys` alone.
//!
//! Reverse over forward (kmeans' `dir`, a `jvp` of a `grad`) makes such loops: a
//! forward-mode sum's elements are dual numbers of reverse-mode pairs, summed per
//! component. Each component's copy keeps the `%delta`s its pair needs (`dce` drops
//! the rest); one both need is recorded twice, and the adjoints reaching its terms are
//! the two copies' summed — the same derivative. The loops after the first move down
//! to their first use (they cannot fail), so that each lies next to its `%delta_sum`:
//! natively a loop node computing its elements again (`delta_loop.rs`), no array of
//! tuples and no tape node per element (kmeans `dir` at k = 10, n = 10⁴, d = 16:
//! 9.4 → 5.0 ms a run).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use fluxion_core::{Atom, Binding, Body, CodeId, Prim, Rhs, Type, VarId};

use fluxion_core::visit::for_each_branch_mut;

use crate::Context;
use crate::fuse::Producer;
use crate::lambda::Lambda;
use crate::uses::{closures_in, mentions, results_in};

/// Unzips are looked for again after each one, at most this often per code.
const MAX_PER_CODE: usize = 16;

/// Unzips the tuple loops of `body`.
pub(crate) fn unzip_tuple_loops(cx: &mut Context, body: &mut Body) {
    for _ in 0..MAX_PER_CODE {
        let Some(plan) = find(cx, body) else { break };
        // One copy of the producer's function per component (the consumers' lambdas
        // are copied too, but each once, and their originals die).
        let cost = plan.needed.len() * crate::instantiate::deep_size(cx.m, plan.f.0);
        if !cx.spend(cost) {
            break;
        }
        apply(cx, body, plan);
        cx.changed = true;
    }
}

/// One loop to unzip.
struct Plan {
    ys: VarId,
    producer: Producer,
    /// The producer's function: its code, captured atoms, and its result's parts.
    f: (CodeId, Vec<Atom>),
    parts: Vec<Type>,
    /// How the function's result is built.
    shape: Shape,
    /// The components some use reads.
    needed: BTreeSet<usize>,
    /// Lambdas made here that read `ys`.
    children: Vec<CodeId>,
}

/// How a loop's function builds its result: a tuple, or one constructor of a
/// cotangent enum (which only `%lsum` followed by `%lfield` of that tag takes apart).
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Tuple,
    Ctor(u32),
}

/// The span of the binding of `v` in `body` (its branches included).
fn producer_span(body: &Body, v: VarId) -> fluxion_core::Span {
    let mut span = fluxion_core::Span::default();
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        if b.var == v {
            span = b.span;
        }
    });
    span
}

fn find(cx: &Context, body: &Body) -> Option<Plan> {
    let closures = closures_in(body);
    let mut candidates = Vec::new();
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        if let Some(p) = Producer::of(&b.rhs) {
            candidates.push((b.var, p));
        }
    });
    for (ys, producer) in candidates {
        let Atom::Var(f) = producer.function() else {
            continue;
        };
        let Some((code, caps)) = closures.get(&f) else {
            continue;
        };
        let span = producer_span(body, ys);
        if !cx.may_copy(*code, span) {
            continue;
        }
        let Some((shape, parts)) = tuple_result(cx, *code) else {
            continue;
        };
        let mut uses = Uses {
            cx,
            ys,
            shape,
            needed: BTreeSet::new(),
            children: Vec::new(),
        };
        if !uses.body(body, &closures, true) {
            continue;
        }
        let mut needed = uses.needed;
        if needed.is_empty() && (parts.is_empty() || shape != Shape::Tuple) {
            // Nothing to split a sum of constructors into.
            continue;
        }
        if needed.is_empty() {
            // Read only for its length (or not at all: `dce` keeps a loop that may
            // fail, so keep the cheapest honest form, component 0).
            needed.insert(0);
        }
        return Some(Plan {
            ys,
            producer,
            f: (*code, caps.clone()),
            parts,
            shape,
            needed,
            children: uses.children,
        });
    }
    None
}

/// The shape and component types of `code`'s result, if its body ends in a tuple or
/// constructor built at its top level and is plain code (no call, loop or delta
/// primitive anywhere in it).
fn tuple_result(cx: &Context, code: CodeId) -> Option<(Shape, Vec<Type>)> {
    let code = cx.m.code(code);
    let Atom::Var(r) = code.body.result else {
        return None;
    };
    let built = code.body.bindings.iter().find(|b| b.var == r)?;
    let (shape, parts) = match (&built.rhs, &code.ret) {
        (Rhs::Tuple(_), Type::Tuple(parts)) => (Shape::Tuple, parts.clone()),
        (Rhs::Ctor(_, tag, fields), _) => (
            Shape::Ctor(*tag),
            fields.iter().map(|a| cx.m.atom_ty(a)).collect(),
        ),
        _ => return None,
    };
    // Reverse mode's deltas, each component a `(Real, Int)` pair: a `%delta` copied
    // into two components' loops records its node twice, and the adjoints reaching
    // its terms are the two copies' summed — the same derivative. What it buys is a
    // loop of pairs, which the native backend sweeps as one node computing its
    // elements again (`delta_loop.rs`), and no array of tuples.
    let pair = Type::Tuple(vec![Type::Real, Type::Int]);
    let deltas_allowed = shape == Shape::Tuple && parts.iter().all(|t| *t == pair);
    let mut plain = true;
    fluxion_core::visit::for_each_binding(&code.body, &mut |b| match &b.rhs {
        Rhs::Call(..) | Rhs::CallDirect(..) => plain = false,
        Rhs::Prim(Prim::DeltaPush, _) if deltas_allowed => {}
        Rhs::Prim(p, _) if is_loop_or_effect(*p) => plain = false,
        _ => {}
    });
    plain.then_some((shape, parts))
}

fn is_loop_or_effect(p: Prim) -> bool {
    use Prim::*;
    matches!(
        p,
        Map | Map2
            | Build
            | Sumbuild
            | Fold
            | Scan
            | Iterate
            | DeltaPush
            | DeltaSum
            | DeltaSumbuild
            | DeltaVjp
            | DeltaJacobian
            | DeltaJvp
            | DeltaTaylor
            | ChadVjp
            | ChadOf
            | ClosureCapture
            | DeltaOpen
            | DeltaInputs
            | DeltaGrad
            | DeltaRows
            | Delta2Push
            | Delta2Sum
            | Delta2Open
            | Delta2Inputs
            | Delta2Grad
    ) || p.is_differential()
}

/// The check that every use of `ys` takes it apart.
struct Uses<'a, 'c> {
    cx: &'a Context<'c>,
    ys: VarId,
    shape: Shape,
    needed: BTreeSet<usize>,
    children: Vec<CodeId>,
}

impl Uses<'_, '_> {
    /// Whether every use of `ys` in `body` is one the rewrite handles.
    fn body(
        &mut self,
        body: &Body,
        closures: &HashMap<VarId, (CodeId, Vec<Atom>)>,
        top: bool,
    ) -> bool {
        if body.result == Atom::Var(self.ys) {
            return false;
        }
        for (k, b) in body.bindings.iter().enumerate() {
            let ok = match &b.rhs {
                // `%lsum(ys)` taken apart: the sum of each component (linear maps
                // commute with sums; [Knossos] §2.1.2).
                Rhs::Prim(Prim::LinSum, args) if args[0] == Atom::Var(self.ys) => {
                    match summed_components(&body.bindings[k + 1..], body.result, b.var, self.shape)
                    {
                        Some(read) => {
                            self.needed.extend(read);
                            true
                        }
                        None => false,
                    }
                }
                // Other uses project tuples.
                rhs if self.shape != Shape::Tuple && mentions(rhs, self.ys) => false,
                Rhs::If(c, t, e) => {
                    *c != Atom::Var(self.ys)
                        && self.body(t, closures, top)
                        && self.body(e, closures, top)
                }
                Rhs::Match(s, arms, default) => {
                    *s != Atom::Var(self.ys)
                        && arms.iter().all(|a| self.body(&a.body, closures, top))
                        && default.as_ref().is_none_or(|d| self.body(d, closures, top))
                }
                rhs if !mentions(rhs, self.ys) => true,
                // Its length: any component's (`needed` is never empty).
                Rhs::Prim(Prim::Length, _) => true,
                Rhs::Prim(Prim::Map, args) if args[1] == Atom::Var(self.ys) => {
                    match components(self.cx, &args[0], 0, closures, b.span) {
                        Some(s) if s.len() <= 2 && args[0] != Atom::Var(self.ys) => {
                            self.needed.extend(s);
                            true
                        }
                        _ => false,
                    }
                }
                Rhs::Prim(Prim::Map2, args) => {
                    let at = |i: usize| args[i] == Atom::Var(self.ys);
                    let position = match (at(0), at(1), at(2)) {
                        (false, true, false) => 0,
                        (false, false, true) => 1,
                        _ => return false,
                    };
                    match components(self.cx, &args[0], position, closures, b.span) {
                        Some(s) if s.len() <= 1 => {
                            self.needed.extend(s);
                            true
                        }
                        _ => false,
                    }
                }
                Rhs::Closure(child, args) if top => self.child(*child, args),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// A lambda made here that captures `ys`: made at this site only, reading its
    /// captures under their own ids, and taking `ys` apart inside.
    fn child(&mut self, child: CodeId, args: &[Atom]) -> bool {
        if !self.cx.may_recapture(child, args) {
            return false;
        }
        let body = self.cx.m.code(child).body.clone();
        let closures = closures_in(&body);
        self.children.push(child);
        self.body(&body, &closures, false)
    }
}

/// The components of `%lsum` result `s` that `rest` (the bindings after it) and
/// `result` read, if they read it only by `%lfield(s, tag, j)` of the loop's
/// constructor (or `%lproj(s, j)` of its tuple), in this body or its branches.
fn summed_components(
    rest: &[Binding],
    result: Atom,
    s: VarId,
    shape: Shape,
) -> Option<BTreeSet<usize>> {
    if result == Atom::Var(s) {
        return None;
    }
    let mut read = BTreeSet::new();
    let mut ok = true;
    fluxion_core::visit::for_each_binding_in(rest, &mut |b| match (&b.rhs, shape) {
        (Rhs::Prim(Prim::LinField, a), Shape::Ctor(tag)) if a[0] == Atom::Var(s) => {
            match (a[1], a[2]) {
                (Atom::Lit(fluxion_core::Lit::Int(t)), Atom::Lit(fluxion_core::Lit::Int(j)))
                    if t == tag as i64 =>
                {
                    read.insert(j as usize);
                }
                _ => ok = false,
            }
        }
        (Rhs::Prim(Prim::LinProj, a), Shape::Tuple) if a[0] == Atom::Var(s) => match a[1] {
            Atom::Lit(fluxion_core::Lit::Int(j)) => {
                read.insert(j as usize);
            }
            _ => ok = false,
        },
        (rhs, _) if mentions(rhs, s) || results_in(rhs, s) => ok = false,
        _ => {}
    });
    ok.then_some(read)
}

/// The components of parameter `index` that lambda `g` reads, if it reads that
/// parameter only by projections (`p.i`).
fn components(
    cx: &Context,
    g: &Atom,
    index: usize,
    closures: &HashMap<VarId, (CodeId, Vec<Atom>)>,
    at: fluxion_core::Span,
) -> Option<BTreeSet<usize>> {
    let Atom::Var(g) = g else { return None };
    let (code, _) = closures.get(g)?;
    // Copied with its parameter taken apart, at the use `at`.
    if !cx.may_copy(*code, at) {
        return None;
    }
    let code = cx.m.code(*code);
    let p = *code.params.get(index)?;
    if code.body.result == Atom::Var(p) {
        return None;
    }
    let mut read = BTreeSet::new();
    let mut only_projections = true;
    let mut visit = |body: &Body| {
        if body.result == Atom::Var(p) {
            only_projections = false;
        }
    };
    visit(&code.body);
    fluxion_core::visit::for_each_binding(&code.body, &mut |b| match &b.rhs {
        Rhs::Proj(Atom::Var(v), i) if *v == p => {
            read.insert(*i);
        }
        rhs if mentions(rhs, p) => only_projections = false,
        Rhs::If(_, t, e) if t.result == Atom::Var(p) || e.result == Atom::Var(p) => {
            only_projections = false;
        }
        Rhs::Match(_, arms, d)
            if arms.iter().any(|a| a.body.result == Atom::Var(p))
                || d.as_ref().is_some_and(|d| d.result == Atom::Var(p)) =>
        {
            only_projections = false;
        }
        _ => {}
    });
    only_projections.then_some(read)
}

fn apply(cx: &mut Context, body: &mut Body, plan: Plan) {
    // The component loops, in place of the producer.
    let mut comps: BTreeMap<usize, VarId> = BTreeMap::new();
    let mut made = Vec::new();
    // A shadowed function's copies are (they cannot fail where the loop runs).
    let shadowed = cx.shadowed.borrow().contains(&plan.f.0);
    for (k, &i) in plan.needed.iter().enumerate() {
        let (bindings, ys_i) = component_loop(cx, &plan, i);
        // The loops after the first run the same failing operations on the same
        // elements, after it: they cannot fail (`Context::shadowed`).
        // Not a copy that records on a tape: `sink` and `fuse` would take a shadowed
        // loop for inert and might move or recompute its `%delta`s.
        if (k > 0 || shadowed)
            && let Rhs::Closure(code, _) = &bindings[0].rhs
            && !records(cx, *code)
        {
            cx.shadowed.borrow_mut().insert(*code);
        }
        made.extend(bindings);
        comps.insert(i, ys_i);
    }
    replace_binding(body, plan.ys, &mut Some(made));
    let later: Vec<VarId> = plan.needed.iter().skip(1).map(|i| comps[i]).collect();
    let mut rw = Rewrite {
        cx,
        ys: plan.ys,
        comps: &comps,
        parts: &plan.parts,
        sums: HashMap::new(),
    };
    rw.body(body, &closures_in(body), true);
    for child in plan.children {
        let mut child_body = std::mem::replace(
            &mut rw.cx.m.codes[child.0 as usize].body,
            Body {
                bindings: Vec::new(),
                result: Atom::Lit(fluxion_core::Lit::Unit),
            },
        );
        let closures = closures_in(&child_body);
        rw.body(&mut child_body, &closures, false);
        let code = &mut rw.cx.m.codes[child.0 as usize];
        code.body = child_body;
        let captures: Vec<VarId> = code
            .captures
            .iter()
            .flat_map(|c| {
                if *c == plan.ys {
                    comps.values().copied().collect()
                } else {
                    vec![*c]
                }
            })
            .collect();
        code.captures = captures;
    }
    for ys_i in later {
        move_to_first_use(body, ys_i);
    }
}

/// Whether code `c` makes tape nodes (`%delta`).
fn records(cx: &Context, c: CodeId) -> bool {
    let mut found = false;
    fluxion_core::visit::for_each_binding(&cx.m.code(c).body, &mut |b| {
        found |= matches!(b.rhs, Rhs::Prim(Prim::DeltaPush, _));
    });
    found
}

/// Moves the loop `ys_i` (a component after the first, which cannot fail: the first
/// ran the same operations on the same elements before it; any unzipped loop) and its
/// function's closure, bound just before it at the top level of `body`, down to just
/// before the first binding that reads it: a component summed by the next binding
/// then lies next to its sum, which the native backend fuses only when adjacent
/// (`delta_fuse.rs`, `delta_loop.rs`). Both backends run the moved code.
fn move_to_first_use(body: &mut Body, ys_i: VarId) {
    let Some(at) = body.bindings.iter().position(|b| b.var == ys_i) else {
        return;
    };
    if at == 0 {
        return;
    }
    let f = body.bindings[at - 1].var;
    if !matches!(body.bindings[at - 1].rhs, Rhs::Closure(..)) || !reads(&body.bindings[at], f) {
        return;
    }
    let Some(first) = body.bindings[at + 1..]
        .iter()
        .position(|b| reads(b, ys_i) || reads(b, f))
    else {
        return;
    };
    // Its `%delta`s must land on the tape they did: it passes no binding that opens
    // a tape, sweeps or closes it (an operator that opens and closes its own tape
    // within one binding leaves the tape as it found it).
    if first == 0
        || body.bindings[at + 1..at + 1 + first]
            .iter()
            .any(|b| opens_or_sweeps(&b.rhs))
    {
        return;
    }
    let moved: Vec<Binding> = body.bindings.drain(at - 1..=at).collect();
    // `first` counted from `at + 1`; two bindings left from before it.
    let to = at - 1 + first;
    body.bindings.splice(to..to, moved);
}

/// Whether `rhs` opens, sweeps or closes a reverse pass's tape at this level, or
/// branches (a branch might).
fn opens_or_sweeps(rhs: &Rhs) -> bool {
    use Prim::*;
    match rhs {
        Rhs::If(..) | Rhs::Match(..) => true,
        Rhs::Prim(p, _) => matches!(
            p,
            DeltaOpen
                | DeltaInputs
                | DeltaGrad
                | DeltaRows
                | Delta2Open
                | Delta2Inputs
                | Delta2Grad
        ),
        _ => false,
    }
}

/// Whether binding `b` reads `v`, in its operands or its branches (their bindings and
/// results).
fn reads(b: &Binding, v: VarId) -> bool {
    let mut found = false;
    fluxion_core::visit::for_each_binding_in(std::slice::from_ref(b), &mut |x| {
        found |= mentions(&x.rhs, v) || results_in(&x.rhs, v);
    });
    found
}

/// `let f_i = |..| f(..).i; let ys_i = loop(f_i, ..)`: the bindings and `ys_i`.
fn component_loop(cx: &mut Context, plan: &Plan, i: usize) -> (Vec<Binding>, VarId) {
    // The function's own span (its source decides where it may be copied).
    let span = cx.m.code(plan.f.0).span;
    let elem = |cx: &mut Context, a: &Atom| {
        let Type::Array(t) = cx.m.atom_ty(a) else {
            unreachable!("an array operand")
        };
        cx.m.fresh_var("x", *t)
    };
    let params: Vec<VarId> = match plan.producer {
        Producer::Map { xs, .. } => vec![elem(cx, &xs)],
        Producer::Map2 { xs, zs, .. } => vec![elem(cx, &xs), elem(cx, &zs)],
        Producer::Build { .. } => vec![cx.m.fresh_var("i", Type::Int)],
    };
    let mut l = Lambda::new(span);
    let (code, caps) = plan.f.clone();
    let args = params.iter().map(|p| Atom::Var(*p)).collect();
    let tuple = l.apply(cx.m, &crate::lambda::Callee::Known(code, caps), args);
    let project = match plan.shape {
        Shape::Tuple => Rhs::Proj(tuple, i),
        Shape::Ctor(tag) => Rhs::Prim(
            Prim::LinField,
            vec![
                tuple,
                Atom::Lit(fluxion_core::Lit::Int(tag as i64)),
                Atom::Lit(fluxion_core::Lit::Int(i as i64)),
            ],
        ),
    };
    let part = l.bind(cx.m, "part", plan.parts[i].clone(), project);
    let (fcode, fcaps) = l.finish(cx.m, "part", params, part, plan.parts[i].clone());
    let fty = cx.m.code_ty(fcode);
    let fvar = cx.m.fresh_var("part", fty);
    let ys_ty = Type::Array(Box::new(plan.parts[i].clone()));
    let ys_i =
        cx.m.fresh_var(format!("{}_{i}", cx.m.var(plan.ys).name), ys_ty);
    let rhs = match plan.producer {
        Producer::Map { xs, .. } => Rhs::Prim(Prim::Map, vec![Atom::Var(fvar), xs]),
        Producer::Map2 { xs, zs, .. } => Rhs::Prim(Prim::Map2, vec![Atom::Var(fvar), xs, zs]),
        Producer::Build { n, .. } => Rhs::Prim(Prim::Build, vec![n, Atom::Var(fvar)]),
    };
    (
        vec![
            Binding {
                var: fvar,
                rhs: Rhs::Closure(fcode, fcaps),
                span,
            },
            Binding {
                var: ys_i,
                rhs,
                span,
            },
        ],
        ys_i,
    )
}

/// Replaces the binding of `v` (wherever it is in `body`) by `with`, keeping its span.
fn replace_binding(body: &mut Body, v: VarId, with: &mut Option<Vec<Binding>>) {
    let mut out = Vec::with_capacity(body.bindings.len() + 4);
    for mut b in std::mem::take(&mut body.bindings) {
        if b.var == v
            && let Some(mut new) = with.take()
        {
            new.iter_mut().for_each(|n| n.span = b.span);
            out.extend(new);
            continue;
        }
        for_each_branch_mut(&mut b.rhs, &mut |branch| replace_binding(branch, v, with));
        out.push(b);
    }
    body.bindings = out;
}

/// Rewrites the uses `Uses` accepted, in terms of the component loops.
struct Rewrite<'a, 'b, 'c> {
    cx: &'a mut Context<'c>,
    ys: VarId,
    comps: &'b BTreeMap<usize, VarId>,
    parts: &'b [Type],
    /// `%lsum(ys)`'s variable ↦ the sums of the components.
    sums: HashMap<VarId, BTreeMap<usize, VarId>>,
}

impl Rewrite<'_, '_, '_> {
    fn body(&mut self, body: &mut Body, closures: &HashMap<VarId, (CodeId, Vec<Atom>)>, top: bool) {
        let ys = Atom::Var(self.ys);
        let mut out = Vec::with_capacity(body.bindings.len());
        for mut b in std::mem::take(&mut body.bindings) {
            for_each_branch_mut(&mut b.rhs, &mut |branch| self.body(branch, closures, top));
            match &mut b.rhs {
                Rhs::Prim(Prim::LinSum, args) if args[0] == ys => {
                    let mut sums = BTreeMap::new();
                    for (&j, &ys_j) in self.comps {
                        let s_j = self
                            .cx
                            .m
                            .fresh_var(self.cx.m.var(b.var).name.clone(), self.parts[j].clone());
                        out.push(Binding {
                            var: s_j,
                            rhs: Rhs::Prim(Prim::LinSum, vec![Atom::Var(ys_j)]),
                            span: b.span,
                        });
                        sums.insert(j, s_j);
                    }
                    self.sums.insert(b.var, sums);
                    continue;
                }
                Rhs::Prim(Prim::LinField | Prim::LinProj, args) if matches!(args[0], Atom::Var(s) if self.sums.contains_key(&s)) =>
                {
                    let Atom::Var(s) = args[0] else {
                        unreachable!()
                    };
                    let j = match args.last() {
                        Some(Atom::Lit(fluxion_core::Lit::Int(j))) => *j as usize,
                        _ => unreachable!("checked: a literal component"),
                    };
                    b.rhs = Rhs::Atom(Atom::Var(self.sums[&s][&j]));
                }
                Rhs::Prim(Prim::Length, args) if args[0] == ys => {
                    args[0] = Atom::Var(*self.comps.values().next().expect("a component"));
                }
                Rhs::Prim(Prim::Map, args) if args[1] == ys => {
                    let (g, gcaps) = closures[&var(&args[0])].clone();
                    let read = components(self.cx, &args[0], 0, closures, b.span).expect("checked");
                    let read: Vec<usize> = if read.is_empty() {
                        vec![*self.comps.keys().next().expect("a component")]
                    } else {
                        read.into_iter().collect()
                    };
                    let (h, arrays) = self.projected_lambda(g, &gcaps, 0, &read, &[], b.span);
                    let h = self.bind_closure(h, b.span, &mut out);
                    b.rhs = match arrays.as_slice() {
                        [a] => Rhs::Prim(Prim::Map, vec![h, *a]),
                        [a, c] => Rhs::Prim(Prim::Map2, vec![h, *a, *c]),
                        _ => unreachable!("one or two components"),
                    };
                }
                Rhs::Prim(Prim::Map2, args) if args[1] == ys || args[2] == ys => {
                    let position = if args[1] == ys { 0 } else { 1 };
                    let other = args[2 - position];
                    let (g, gcaps) = closures[&var(&args[0])].clone();
                    let read =
                        components(self.cx, &args[0], position, closures, b.span).expect("checked");
                    let read: Vec<usize> = if read.is_empty() {
                        vec![*self.comps.keys().next().expect("a component")]
                    } else {
                        read.into_iter().collect()
                    };
                    let other_ty = match self.cx.m.atom_ty(&other) {
                        Type::Array(t) => *t,
                        _ => unreachable!("an array"),
                    };
                    let (h, arrays) =
                        self.projected_lambda(g, &gcaps, position, &read, &[other_ty], b.span);
                    let h = self.bind_closure(h, b.span, &mut out);
                    b.rhs = if position == 0 {
                        Rhs::Prim(Prim::Map2, vec![h, arrays[0], other])
                    } else {
                        Rhs::Prim(Prim::Map2, vec![h, other, arrays[0]])
                    };
                }
                Rhs::Closure(_, args) if top && args.contains(&ys) => {
                    let new: Vec<Atom> = args
                        .iter()
                        .flat_map(|a| {
                            if *a == ys {
                                self.comps.values().map(|v| Atom::Var(*v)).collect()
                            } else {
                                vec![*a]
                            }
                        })
                        .collect();
                    *args = new;
                }
                _ => {}
            }
            out.push(b);
        }
        body.bindings = out;
    }

    /// A copy of lambda `g` whose parameter `position` (a tuple) is given by the
    /// components `read` as parameters of their own; `others` are the types of its
    /// other parameters (map2's other operand), in order. Returns the new lambda and
    /// the component arrays to loop over.
    fn projected_lambda(
        &mut self,
        g: CodeId,
        gcaps: &[Atom],
        position: usize,
        read: &[usize],
        others: &[Type],
        span: fluxion_core::Span,
    ) -> ((CodeId, Vec<Atom>), Vec<Atom>) {
        let mut parts: Vec<Option<Atom>> = vec![None; self.parts.len()];
        let mut component_params = Vec::new();
        for &i in read {
            let q = self.cx.m.fresh_var("part", self.parts[i].clone());
            parts[i] = Some(Atom::Var(q));
            component_params.push(q);
        }
        let other_params: Vec<VarId> = others
            .iter()
            .map(|t| self.cx.m.fresh_var("x", t.clone()))
            .collect();
        // The copy's arguments: a placeholder at `position`, the others in order.
        let mut args = Vec::new();
        let mut rest = other_params.iter();
        let arity = self.cx.m.code(g).params.len();
        for k in 0..arity {
            if k == position {
                args.push(Atom::Lit(fluxion_core::Lit::Unit));
            } else {
                args.push(Atom::Var(*rest.next().expect("map2's other parameter")));
            }
        }
        let ret = self.cx.m.code(g).ret.clone();
        let mut l = Lambda::new(span);
        let r = l.apply_projecting(self.cx.m, g, gcaps, args, (position, parts));
        let params: Vec<VarId> = if position == 0 {
            component_params.into_iter().chain(other_params).collect()
        } else {
            other_params.into_iter().chain(component_params).collect()
        };
        let lambda = l.finish(self.cx.m, "parts", params, r, ret);
        let arrays = read.iter().map(|i| Atom::Var(self.comps[i])).collect();
        (lambda, arrays)
    }

    fn bind_closure(
        &mut self,
        (code, caps): (CodeId, Vec<Atom>),
        span: fluxion_core::Span,
        out: &mut Vec<Binding>,
    ) -> Atom {
        let ty = self.cx.m.code_ty(code);
        let v = self.cx.m.fresh_var("parts", ty);
        out.push(Binding {
            var: v,
            rhs: Rhs::Closure(code, caps),
            span,
        });
        Atom::Var(v)
    }
}

fn var(a: &Atom) -> VarId {
    match a {
        Atom::Var(v) => *v,
        Atom::Lit(_) => unreachable!("a function is a variable"),
    }
}
