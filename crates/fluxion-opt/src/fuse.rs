//! Loop fusion ([Knossos] §4's `sum(build)` rule, ksc's `sumbuild`, and their map/fold relatives): an
//! array made by `map`, `map2` or `build` and read once, by the next loop over it, is
//! never made — the two loops become one whose lambda applies both functions
//! (their bodies copied in when the closures are known here, so no call is added).
//!
//! | producer `ys` | consumer | becomes |
//! |---|---|---|
//! | `map(f, xs)` | `map(g, ys)` | `map(|x| g(f(x)), xs)` |
//! | `map2(f, xs, zs)` | `map(g, ys)` | `map2(|x, z| g(f(x, z)), xs, zs)` |
//! | `build(n, f)` | `map(g, ys)` | `build(n, |i| g(f(i)))` |
//! | `map(f, xs)` | `map2(g, ys, bs)`, `map2(g, bs, ys)` | `map2(|x, b| g(f(x), b), xs, bs)`, … |
//! | `map(f, xs)` | `fold(g, a, ys)` | `fold(|acc, x| g(acc, f(x)), a, xs)` |
//! | `map(f, xs)` | `sum(ys)` (reals, tuples of reals) | `sumbuild(length(xs), |i| f(xs[i]))` |
//! | `build(n, f)` | `sum(ys)` | `if 0 <= n <= limit { sumbuild(n, f) } else { sum(build(n, f)) }` |
//! | `map2(f, xs, zs)`, `xs` and `zs` known of one length | `sum(ys)` | `sumbuild(length(xs), |i| f(xs[i], zs[i]))` |
//! | `build(n, |i| .. %lonehot(len, i, w))` | `%lsum(ys)` | `build(len, |i| if i < n { .. w } else { 0 })` (`one_hot.rs`) |
//! | `build(n, f)`, `n` an array's length | `ys[i]` | `if 0 <= i < n { f(i) } else { build(n, |_| 0)[i] }` (`read.rs`) |
//!
//! No guard where `lengths.rs` knows the check holds (`n` an array's length); in the
//! other branch the producer fails on its lengths before calling its function, so a
//! constant function stands in for it. (`sum(map2)` under a guard was tried: in the
//! interpreter a loop reading two arrays by index costs about what the two loops did,
//! for twice the code — GMM's primal ran 7% slower.) Whatever the
//! uses, `length(ys)` is `length(xs)` (`n` for `build`): the array exists, so it has
//! its producer's length; and `map2(g, xs, replicate(n, t))` with `xs` of length `n` is
//! `map(|x| g(x, t), xs)` (CHAD's backward loops over a replicated cotangent).
//!
//! Meaning, errors included, is kept. The fused loop interleaves the two functions'
//! calls, so one of them must be *inert* (every binding of its body removable: it
//! cannot fail and has no effect, such as a delta-tape push); if only the consumer's
//! is, the producer must come right before the consumer (no binding between them that
//! can fail or has an effect), since its failures now happen later. Before `map2`,
//! whose length check comes first, the producer's function must be inert. Where a `build`
//! producer checks its `n` and the consumer is `sum`, the fused loop runs under the
//! same check and the original loops run where it fails, so the error is the
//! producer's own. `sum`
//! adds in the same order from the same zero as `sumbuild` (bit-identical); `Int`
//! sums (whose overflow message differs) and sums of arrays are left alone.

mod one_hot;
mod read;

use std::collections::HashMap;

use fluxion_core::{Atom, Binding, Body, CodeId, Prim, Rhs, Span, Type, VarId};

use fluxion_core::visit::for_each_branch_mut;

use crate::Context;
use crate::lambda::{Callee, Lambda};
use crate::pure::is_removable;
use crate::uses::count_uses;

/// Fuses the loops of `body` (and of the branches nested in it).
pub(crate) fn fuse_loops(cx: &mut Context, body: &mut Body) {
    let closures = cx.captured_closures();
    let mut fuser = Fuser {
        cx,
        producers: HashMap::new(),
        closures,
        zeros: Default::default(),
        uses: HashMap::new(),
        bound: Default::default(),
    };
    fuser.learn(body);
    fuser.lengths(body);
    fuser.uses = count_uses(body);
    fuser.body(body);
}

/// An array-making loop.
#[derive(Clone, Copy)]
pub(crate) enum Producer {
    Map { f: Atom, xs: Atom },
    Map2 { f: Atom, xs: Atom, zs: Atom },
    Build { n: Atom, f: Atom },
}

impl Producer {
    pub(crate) fn of(rhs: &Rhs) -> Option<Producer> {
        match rhs {
            Rhs::Prim(Prim::Map, a) => Some(Producer::Map { f: a[0], xs: a[1] }),
            Rhs::Prim(Prim::Map2, a) => Some(Producer::Map2 {
                f: a[0],
                xs: a[1],
                zs: a[2],
            }),
            Rhs::Prim(Prim::Build, a) => Some(Producer::Build { n: a[0], f: a[1] }),
            _ => None,
        }
    }

    pub(crate) fn function(self) -> Atom {
        match self {
            Producer::Map { f, .. } | Producer::Map2 { f, .. } | Producer::Build { f, .. } => f,
        }
    }
}

/// A producer not yet fused, in the block being walked.
struct Pending {
    /// Its index among the block's bindings so far.
    index: usize,
    producer: Producer,
    /// Where it is (its length checks' errors point there).
    span: Span,
    /// A binding that can fail or has an effect came after it.
    interrupted: bool,
}

struct Fuser<'a, 'c> {
    cx: &'a mut Context<'c>,
    /// Every array-making loop of the code, by the variable it binds.
    producers: HashMap<VarId, Producer>,
    /// Variables bound to a closure in this code: its code and captured atoms.
    closures: HashMap<VarId, (CodeId, Vec<Atom>)>,
    /// Variables bound to `%tzero()` in this code (or copies of one).
    zeros: std::collections::HashSet<VarId>,
    uses: HashMap<VarId, usize>,
    /// The variables this code binds, its parameters and captures: what a rewrite
    /// may read here (`Lengths` knows variables of other codes too).
    bound: std::collections::HashSet<VarId>,
}

impl Fuser<'_, '_> {
    /// Records the producers and closures of the code, and its variables.
    fn learn(&mut self, body: &Body) {
        if let Some(c) = self.cx.current {
            let code = self.cx.m.code(c);
            self.bound
                .extend(code.params.iter().chain(&code.captures).copied());
        }
        fluxion_core::visit::for_each_binding(body, &mut |b| {
            self.bound.insert(b.var);
            if let Some(p) = Producer::of(&b.rhs) {
                self.producers.insert(b.var, p);
            }
            if let Rhs::Closure(c, args) = &b.rhs {
                self.closures.insert(b.var, (*c, args.clone()));
            }
            match &b.rhs {
                Rhs::Prim(Prim::TanZero, _) => {
                    self.zeros.insert(b.var);
                }
                Rhs::Atom(Atom::Var(x)) if self.zeros.contains(x) => {
                    self.zeros.insert(b.var);
                }
                _ => {}
            }
        });
    }

    /// `length(ys)` of a producer is its length: `length(xs)`, or `n` for `build`,
    /// followed through chains of producers; `%lsum(ys)` of a producer of zeros is zero.
    /// (Before uses are counted: the producer may become unused.)
    fn lengths(&mut self, body: &mut Body) {
        for b in &mut body.bindings {
            match &mut b.rhs {
                Rhs::Prim(Prim::Length, args) => {
                    let mut rhs = None;
                    let mut array = args[0];
                    while let Atom::Var(ys) = array {
                        match self.producers.get(&ys) {
                            Some(Producer::Map { xs, .. } | Producer::Map2 { xs, .. }) => {
                                array = *xs;
                                rhs = Some(Rhs::Prim(Prim::Length, vec![*xs]));
                            }
                            Some(Producer::Build { n, .. }) => {
                                rhs = Some(Rhs::Atom(*n));
                                break;
                            }
                            None => break,
                        }
                    }
                    if let Some(rhs) = rhs {
                        b.rhs = rhs;
                    }
                }
                // `%lsum` of a loop whose function returns the symbolic zero is zero
                // (its elements all are: CHAD's cotangent of a closure that captures
                // nothing, per element).
                Rhs::Prim(Prim::LinSum, args)
                    if matches!(args[0], Atom::Var(ys)
                        if self.producers.get(&ys).is_some_and(|p| self.returns_zero(&p.function()))) =>
                {
                    b.rhs = Rhs::Prim(Prim::TanZero, vec![]);
                    self.cx.changed = true;
                }
                rhs => for_each_branch_mut(rhs, &mut |branch| self.lengths(branch)),
            }
        }
    }

    fn body(&mut self, body: &mut Body) {
        let mut out: Vec<Option<Binding>> = Vec::with_capacity(body.bindings.len());
        let mut pending: HashMap<VarId, Pending> = HashMap::new();
        for mut b in std::mem::take(&mut body.bindings) {
            for_each_branch_mut(&mut b.rhs, &mut |branch| self.body(branch));
            // A `map` whose result is unused (its `length` read through the producer)
            // and whose function is inert does nothing.
            if let Rhs::Prim(Prim::Map, args) = &b.rhs
                && !self.uses.contains_key(&b.var)
                && self.inert(&args[0])
            {
                continue;
            }
            // An unused `%tdense` of a real array and a cotangent known to have its
            // length cannot fail (the only check is the length's).
            if let Rhs::Prim(Prim::TanDense, args) = &b.rhs
                && !self.uses.contains_key(&b.var)
                && self.cx.m.atom_ty(&args[0]) == Type::Array(Box::new(Type::Real))
                && self.cx.lengths.same_length(args[0], args[1])
            {
                self.cx.changed = true;
                continue;
            }
            // An unused `replicate` of an array's length cannot fail: it does nothing.
            if let Rhs::Prim(Prim::Replicate, args) = &b.rhs
                && !self.uses.contains_key(&b.var)
                && self.cx.lengths.is_a_length(args[0])
            {
                self.cx.changed = true;
                continue;
            }
            // An unused loop that cannot fail — a shadowed copy, or a `map2`/`build` of
            // an inert function over lengths known valid — does nothing.
            if !self.uses.contains_key(&b.var)
                && Producer::of(&b.rhs).is_some_and(|p| self.cannot_fail(p))
            {
                self.cx.changed = true;
                continue;
            }
            // A `map2` whose result is unused and whose function is inert only checks
            // its lengths: that check, O(1), with the loop where it fails.
            if let Rhs::Prim(Prim::Map2, args) = &b.rhs
                && !self.uses.contains_key(&b.var)
                && self.inert(&args[0])
                && !self.is_fallback(b.var)
            {
                let (a, c) = (args[1], args[2]);
                let guard = self.length_guard(b, a, c, &mut out);
                out.push(Some(guard));
                self.cx.changed = true;
                // The guard can fail: what was pending may no longer move past it.
                pending.values_mut().for_each(|p| p.interrupted = true);
                continue;
            }
            // `map` of the identity is its operand (arrays are values).
            if let Rhs::Prim(Prim::Map, args) = &b.rhs
                && self.is_identity(&args[0])
            {
                let xs = args[1];
                b.rhs = Rhs::Atom(xs);
                self.cx.changed = true;
                // The copy is what its operand is.
                match xs {
                    Atom::Var(x) if self.producers.contains_key(&x) => {
                        let p = self.producers[&x];
                        self.producers.insert(b.var, p);
                    }
                    _ => {
                        self.producers.remove(&b.var);
                    }
                }
            }
            if let Some(rhs) = self.without_replica(&b, &mut out) {
                b.rhs = rhs;
                self.cx.changed = true;
            }
            if let Some((ys, fused)) = self.fuse(&b, &pending, &mut out) {
                let p = pending.remove(&ys).expect("a pending producer");
                let producer = out[p.index].take().expect("a producer binding");
                // The fused loop checks the producer's lengths (`build`'s `n`, `map2`'s
                // arrays) where it did; otherwise it is the consumer's loop.
                if matches!(fused, Rhs::Prim(Prim::Build | Prim::Map2, _))
                    && matches!(p.producer, Producer::Build { .. } | Producer::Map2 { .. })
                {
                    b.span = producer.span;
                }
                self.producers.remove(&ys);
                b.rhs = fused;
                self.cx.changed = true;
                if let Some(p) = Producer::of(&b.rhs) {
                    self.producers.insert(b.var, p);
                }
            }
            let inert = is_removable(self.cx.m, &b.rhs) || self.cx.read_in_range(&b.rhs);
            if !inert {
                // A `map` of an inert function cannot fail; `build` and `map2` check
                // lengths, so they can.
                // A shadowed copy (`Context::shadowed`) cannot fail at all.
                // Not where its count is the length of an array still pending: that
                // array's own check, moved past it, would come second.
                let keeps_order = Producer::of(&b.rhs)
                    .is_some_and(|p| self.cannot_fail(p) && !self.counts_on_pending(p, &pending));
                if !keeps_order {
                    pending.values_mut().for_each(|p| p.interrupted = true);
                }
            }
            if let Some(producer) = Producer::of(&b.rhs)
                && self.uses.get(&b.var) == Some(&1)
                && !self.is_fallback(b.var)
            {
                pending.insert(
                    b.var,
                    Pending {
                        index: out.len(),
                        producer,
                        span: b.span,
                        interrupted: false,
                    },
                );
            }
            out.push(Some(b));
        }
        body.bindings = out.into_iter().flatten().collect();
    }

    /// Whether `v` is the loop of a guarded fusion's other branch (kept as it was, so
    /// that its error is the original's: never fused again).
    fn is_fallback(&self, v: VarId) -> bool {
        self.cx.m.var(v).name == UNFUSED
    }

    /// `map2(g, xs, replicate(n, t))` where `xs` is known to have length `n` (so the
    /// lengths agree: the check cannot fail) is `map(|x| g(x, t), xs)`, either side
    /// (CHAD's backward loop over the primal's array and a cotangent replicated to its
    /// length). The lambda's closure is bound in `out`.
    fn without_replica(&mut self, b: &Binding, out: &mut Vec<Option<Binding>>) -> Option<Rhs> {
        let Rhs::Prim(Prim::Map2, args) = &b.rhs else {
            return None;
        };
        let lengths = self.cx.lengths;
        // The operand that is a replica of the right length, and the other one.
        let in_scope = |a: &Atom| match a {
            Atom::Var(v) => self.bound.contains(v),
            Atom::Lit(_) => true,
        };
        let (position, t, xs) = [(1, 2), (2, 1)].into_iter().find_map(|(r, o)| {
            let (n, t) = lengths.replicated(args[r])?;
            (lengths.has_length(args[o], n) && in_scope(&t)).then_some((r, t, args[o]))
        })?;
        let Type::Fn(params, ret) = self.cx.m.atom_ty(&args[0]) else {
            unreachable!("a function")
        };
        let x = self.cx.m.fresh_var("x", params[2 - position].clone());
        let mut l = Lambda::new(b.span);
        l.capture(&t);
        let gargs = if position == 2 {
            vec![Atom::Var(x), t]
        } else {
            vec![t, Atom::Var(x)]
        };
        let r = l.apply(self.cx.m, &self.callee(&args[0], b.span), gargs);
        let lambda = l.finish(self.cx.m, "fused", vec![x], r, *ret);
        let h = self.bind_closure(out, "fused", lambda, b.span);
        Some(Rhs::Prim(Prim::Map, vec![h, xs]))
    }

    /// Whether loop `p`'s own checks cannot fail: a `map` has none; a `map2`'s arrays
    /// and a `build`'s `n` are known to pass (one length; an array's length), or the
    /// loop is a shadowed copy, whose sibling passed them.
    fn own_checks_pass(&self, p: Producer) -> bool {
        let lengths = self.cx.lengths;
        match p {
            Producer::Map { .. } => true,
            Producer::Map2 { f, xs, zs } => self.shadowed(&f) || lengths.same_length(xs, zs),
            Producer::Build { n, f } => self.shadowed(&f) || lengths.is_a_length(n),
        }
    }

    /// Whether loop `p`'s count is the length of an array whose loop is pending (to be
    /// moved past `p` into its consumer): `p`'s count is valid only once that loop has
    /// checked it (found by a helper: `build(length(a), ..)` reported `a`'s negative
    /// length at its own line).
    fn counts_on_pending(&self, p: Producer, pending: &HashMap<VarId, Pending>) -> bool {
        match p {
            Producer::Build { n, f } => {
                !self.shadowed(&f)
                    && matches!(self.cx.lengths.array_of(n), Some(Atom::Var(a)) if pending.contains_key(&a))
            }
            _ => false,
        }
    }

    /// Whether loop `p` can neither fail nor have an effect.
    fn cannot_fail(&self, p: Producer) -> bool {
        let f = p.function();
        let calls_inert = match p {
            Producer::Build { n, .. } => self.inert_at_indices(&f, n),
            _ => self.inert(&f),
        };
        calls_inert && self.own_checks_pass(p)
    }

    /// Whether a `map2` over `producer`'s result and `other` can run as one `build`
    /// that reads every array by index: the producer's own checks pass and `other` is
    /// known to have its length.
    fn indexable(&self, producer: Producer, other: Atom) -> bool {
        let lengths = self.cx.lengths;
        let other_fits = match producer {
            Producer::Build { n, .. } => lengths.has_length(other, n),
            Producer::Map2 { xs, .. } => lengths.same_length(xs, other),
            Producer::Map { .. } => false,
        };
        other_fits && self.own_checks_pass(producer)
    }

    /// Whether `f` is a closure of a shadowed code (`Context::shadowed`).
    fn shadowed(&self, f: &Atom) -> bool {
        let Atom::Var(v) = f else { return false };
        self.closures
            .get(v)
            .is_some_and(|(c, _)| self.cx.shadowed.borrow().contains(c))
    }

    /// Whether `f` is a closure known here that returns its argument (through copies).
    fn is_identity(&self, f: &Atom) -> bool {
        let Atom::Var(v) = f else { return false };
        self.closures.get(v).is_some_and(|(c, _)| {
            let code = self.cx.m.code(*c);
            code.params.len() == 1
                && code
                    .body
                    .bindings
                    .iter()
                    .all(|b| matches!(b.rhs, Rhs::Atom(_)))
                && through_copies(&code.body.bindings, code.body.result)
                    == Atom::Var(code.params[0])
        })
    }

    /// Whether `f` is a closure known here whose result is `%tzero()` (bound in its body
    /// or captured from this code, through copies).
    fn returns_zero(&self, f: &Atom) -> bool {
        let Atom::Var(v) = f else { return false };
        self.closures.get(v).is_some_and(|(c, _)| {
            let body = &self.cx.m.code(*c).body;
            let Atom::Var(r) = through_copies(&body.bindings, body.result) else {
                return false;
            };
            self.zeros.contains(&r)
                || body
                    .bindings
                    .iter()
                    .any(|b| b.var == r && b.rhs == Rhs::Prim(Prim::TanZero, vec![]))
        })
    }

    /// Whether `f` is a closure known here whose body is inert.
    fn inert(&self, f: &Atom) -> bool {
        let Atom::Var(v) = f else { return false };
        self.closures
            .get(v)
            .is_some_and(|(c, _)| self.cx.inert_code(*c))
    }

    /// The fused right-hand side of consumer `b` and the producer it absorbs, if one of
    /// the rules applies. The fused lambda's closure is bound in `out` before `b`.
    fn fuse(
        &mut self,
        b: &Binding,
        pending: &HashMap<VarId, Pending>,
        out: &mut Vec<Option<Binding>>,
    ) -> Option<(VarId, Rhs)> {
        let Rhs::Prim(p, args) = &b.rhs else {
            return None;
        };
        let producer_of = |a: &Atom| match a {
            Atom::Var(v) => pending.get(v).map(|p| (*v, p)),
            Atom::Lit(_) => None,
        };
        if *p == Prim::Index {
            let (ys, pend) = producer_of(&args[0])?;
            return self
                .index_of_build(b, pend, args[1], out)
                .map(|rhs| (ys, rhs));
        }
        if *p == Prim::LinSum {
            let (ys, pend) = producer_of(&args[0])?;
            return self.sum_of_one_hots(b, pend, out).map(|rhs| (ys, rhs));
        }
        // The consumer's array operand, which operand it is, and its function.
        let (ys, pend, position) = match p {
            Prim::Map => {
                let (ys, pend) = producer_of(&args[1])?;
                (ys, pend, 1)
            }
            Prim::Map2 => match (producer_of(&args[1]), producer_of(&args[2])) {
                (Some((ys, pend)), _) => (ys, pend, 1),
                (None, Some((ys, pend))) => (ys, pend, 2),
                (None, None) => return None,
            },
            Prim::Fold => {
                let (ys, pend) = producer_of(&args[2])?;
                (ys, pend, 2)
            }
            Prim::Sum if summed_in_order(self.cx.m.var_ty(b.var)) => {
                let (ys, pend) = producer_of(&args[0])?;
                (ys, pend, 0)
            }
            _ => return None,
        };
        let f = pend.producer.function();
        // A `build`'s function may read its own index in arrays of the loop's length.
        let f_inert = match pend.producer {
            Producer::Build { n, .. } => self.inert_at_indices(&f, n),
            _ => self.inert(&f),
        };
        let g_inert = match p {
            Prim::Sum => true,
            _ => self.inert(&args[0]),
        };
        // The producer's calls may move later (past what came between, and into the
        // consumer's loop) if they cannot fail and the producer itself cannot
        // (`map`) or nothing that can came between; the consumer's may move earlier
        // if they cannot fail and nothing that can came between.
        // (A shadowed `build`/`map2` checks lengths its sibling passed: it cannot fail.)
        let producer_is_map = matches!(pend.producer, Producer::Map { .. }) || self.shadowed(&f);
        let in_order =
            (f_inert && (producer_is_map || !pend.interrupted)) || (g_inert && !pend.interrupted);
        let applies = match (p, pend.producer) {
            // Only where the lengths are known equal: under a guard, a fused loop that
            // reads both arrays by index costs the interpreter (the reference backend,
            // and the default) about what the two loops did, for twice the code.
            (Prim::Sum, Producer::Map2 { xs, zs, .. }) => {
                in_order && self.cx.lengths.same_length(xs, zs)
            }
            (Prim::Map, _) | (Prim::Fold, Producer::Map { .. }) | (Prim::Sum, _) => in_order,
            (Prim::Map2, Producer::Map { .. }) => f_inert,
            (Prim::Map2, producer) => f_inert && self.indexable(producer, args[3 - position]),
            _ => false,
        };
        // The fused lambda copies the functions known here (the lambdas they make too).
        let functions: &[Atom] = if *p == Prim::Sum { &[f] } else { &[f, args[0]] };
        let cost: usize = functions
            .iter()
            .map(|g| match self.callee(g, b.span) {
                Callee::Known(c, _) => crate::instantiate::deep_size(self.cx.m, c),
                Callee::Var(_) => 0,
            })
            .sum();
        if !applies || !self.cx.spend(cost) {
            return None;
        }
        let elem = |ty: &Type| match ty {
            Type::Array(t) => (**t).clone(),
            _ => unreachable!("an array"),
        };
        let result_ty = self.cx.m.var_ty(b.var).clone();
        let span = b.span;
        let (lambda, rhs) = match (p, pend.producer) {
            (Prim::Map, producer) if in_order => {
                let g = self.callee(&args[0], b.span);
                let ret = elem(&result_ty);
                let (params, fargs) = self.producer_params(producer);
                let mut l = Lambda::new(span);
                let y = l.apply_at(self.cx.m, &self.callee(&f, b.span), fargs, pend.span);
                let r = l.apply(self.cx.m, &g, vec![y]);
                let h = l.finish(self.cx.m, "fused", params, r, ret);
                let rhs = match producer {
                    Producer::Map { xs, .. } => vec![xs],
                    Producer::Map2 { xs, zs, .. } => vec![xs, zs],
                    Producer::Build { n, .. } => vec![n],
                };
                let prim = match producer {
                    Producer::Map { .. } => Prim::Map,
                    Producer::Map2 { .. } => Prim::Map2,
                    Producer::Build { .. } => Prim::Build,
                };
                (h, (prim, rhs))
            }
            (Prim::Map2, producer @ (Producer::Map2 { .. } | Producer::Build { .. }))
                if f_inert =>
            {
                // `build(n, |i| g(f(xs[i], zs[i]), bs[i]))`: every length is known
                // equal (`indexable`), so no read can fail.
                let g = self.callee(&args[0], b.span);
                let other = args[3 - position];
                let n = match producer {
                    Producer::Build { n, .. } => n,
                    Producer::Map2 { xs, .. } => self.push(
                        out,
                        "length",
                        Type::Int,
                        Rhs::Prim(Prim::Length, vec![xs]),
                        span,
                    ),
                    Producer::Map { .. } => unreachable!("matched above"),
                };
                let i = self.cx.m.fresh_var("i", Type::Int);
                let mut l = Lambda::new(span);
                let fargs = match producer {
                    Producer::Build { .. } => vec![Atom::Var(i)],
                    Producer::Map2 { xs, zs, .. } => {
                        vec![l.read(self.cx.m, "x", xs, i), l.read(self.cx.m, "z", zs, i)]
                    }
                    Producer::Map { .. } => unreachable!("matched above"),
                };
                let y = l.apply_at(self.cx.m, &self.callee(&f, b.span), fargs, pend.span);
                let o = l.read(self.cx.m, "elem", other, i);
                let gargs = if position == 1 {
                    vec![y, o]
                } else {
                    vec![o, y]
                };
                let r = l.apply(self.cx.m, &g, gargs);
                let h = l.finish(self.cx.m, "fused", vec![i], r, elem(&result_ty));
                (h, (Prim::Build, vec![n]))
            }
            (Prim::Map2, Producer::Map { xs, .. }) if f_inert => {
                let g = self.callee(&args[0], b.span);
                let other = args[3 - position];
                let x = self.fresh_elem(&xs);
                let o = self.fresh_elem(&other);
                let mut l = Lambda::new(span);
                let y = l.apply_at(
                    self.cx.m,
                    &self.callee(&f, b.span),
                    vec![Atom::Var(x)],
                    pend.span,
                );
                let (params, gargs, arrays) = if position == 1 {
                    (vec![x, o], vec![y, Atom::Var(o)], vec![xs, other])
                } else {
                    (vec![o, x], vec![Atom::Var(o), y], vec![other, xs])
                };
                let r = l.apply(self.cx.m, &g, gargs);
                let h = l.finish(self.cx.m, "fused", params, r, elem(&result_ty));
                (h, (Prim::Map2, arrays))
            }
            (Prim::Fold, Producer::Map { xs, .. }) if in_order => {
                let g = self.callee(&args[0], b.span);
                let acc = self.cx.m.fresh_var("acc", result_ty.clone());
                let x = self.fresh_elem(&xs);
                let mut l = Lambda::new(span);
                let y = l.apply_at(
                    self.cx.m,
                    &self.callee(&f, b.span),
                    vec![Atom::Var(x)],
                    pend.span,
                );
                let r = l.apply(self.cx.m, &g, vec![Atom::Var(acc), y]);
                let h = l.finish(self.cx.m, "fused", vec![acc, x], r, result_ty);
                (h, (Prim::Fold, vec![args[1], xs]))
            }
            (Prim::Sum, Producer::Map { xs, .. }) if in_order => {
                let i = self.cx.m.fresh_var("i", Type::Int);
                let mut l = Lambda::new(span);
                l.capture(&xs);
                let x = l.bind(
                    self.cx.m,
                    "x",
                    elem(&self.cx.m.atom_ty(&xs)),
                    Rhs::Prim(Prim::Index, vec![xs, Atom::Var(i)]),
                );
                let r = l.apply_at(self.cx.m, &self.callee(&f, b.span), vec![x], pend.span);
                let h = l.finish(self.cx.m, "fused", vec![i], r, result_ty);
                let n = self.cx.m.fresh_var("length", Type::Int);
                out.push(Some(Binding {
                    var: n,
                    rhs: Rhs::Prim(Prim::Length, vec![xs]),
                    span,
                }));
                (h, (Prim::Sumbuild, vec![Atom::Var(n)]))
            }
            (Prim::Sum, Producer::Build { n, f }) if in_order => {
                return Some((ys, self.guarded_sum_of_build(b, pend.span, n, f, out)));
            }
            (Prim::Sum, Producer::Map2 { f, xs, zs }) if in_order => {
                return Some((ys, self.sum_of_map2(b, pend.span, f, xs, zs, out)));
            }
            _ => return None,
        };
        // `let h = closure; consumer(h, arrays..)` (fold: `fold(h, init, xs)`).
        let h = self.bind_closure(out, "fused", lambda, span);
        let (prim, rest) = rhs;
        let operands = match prim {
            // `build(n, h)`, `sumbuild(n, h)`
            Prim::Build | Prim::Sumbuild => vec![rest[0], h],
            // `map(h, xs)`, `map2(h, xs, zs)`, `fold(h, init, xs)`
            _ => std::iter::once(h).chain(rest).collect(),
        };
        Some((ys, Rhs::Prim(prim, operands)))
    }

    /// `sum(build(n, f))`: `sumbuild(n, f)` where `build` would succeed (0 ≤ n ≤ the
    /// array limit), the original two loops otherwise (so its error is the same).
    fn guarded_sum_of_build(
        &mut self,
        b: &Binding,
        build_span: Span,
        n: Atom,
        f: Atom,
        out: &mut Vec<Option<Binding>>,
    ) -> Rhs {
        // An array's length is a valid one: no check, no other branch.
        if self.cx.lengths.is_a_length(n) {
            return Rhs::Prim(Prim::Sumbuild, vec![n, f]);
        }
        let nonnegative = self.push(
            out,
            "ok",
            Type::Bool,
            Rhs::Prim(Prim::Ge, vec![n, Atom::Lit(fluxion_core::Lit::Int(0))]),
            b.span,
        );
        let limit = Atom::Lit(fluxion_core::Lit::Int(fluxion_core::MAX_ARRAY_LEN));
        let small = self.push(
            out,
            "ok",
            Type::Bool,
            Rhs::Prim(Prim::Le, vec![n, limit]),
            b.span,
        );
        let fused = self.one(b, Rhs::Prim(Prim::Sumbuild, vec![n, f]));
        let inner = Rhs::If(
            small,
            Box::new(fused),
            Box::new(self.unfused(b, build_span, Rhs::Prim(Prim::Build, vec![n, f]))),
        );
        let inner = self.one(b, inner);
        Rhs::If(
            nonnegative,
            Box::new(inner),
            Box::new(self.unfused(b, build_span, Rhs::Prim(Prim::Build, vec![n, f]))),
        )
    }

    /// `sum(map2(f, xs, zs))` where `xs` and `zs` are known to have one length (the
    /// map2's check cannot fail): `sumbuild(length(xs), |i| f(xs[i], zs[i]))`.
    fn sum_of_map2(
        &mut self,
        b: &Binding,
        map2_span: Span,
        f: Atom,
        xs: Atom,
        zs: Atom,
        out: &mut Vec<Option<Binding>>,
    ) -> Rhs {
        let lx = self.push(
            out,
            "length",
            Type::Int,
            Rhs::Prim(Prim::Length, vec![xs]),
            b.span,
        );
        let i = self.cx.m.fresh_var("i", Type::Int);
        let mut l = Lambda::new(b.span);
        let x = l.read(self.cx.m, "x", xs, i);
        let z = l.read(self.cx.m, "z", zs, i);
        let r = l.apply_at(self.cx.m, &self.callee(&f, b.span), vec![x, z], map2_span);
        let ret = self.cx.m.var_ty(b.var).clone();
        let lambda = l.finish(self.cx.m, "fused", vec![i], r, ret);
        let h = self.bind_closure(out, "fused", lambda, b.span);
        Rhs::Prim(Prim::Sumbuild, vec![lx, h])
    }

    /// `if length(a) == length(b) { () } else { <b>; () }` for an unused `map2` `b`.
    fn length_guard(
        &mut self,
        b: Binding,
        a: Atom,
        c: Atom,
        out: &mut Vec<Option<Binding>>,
    ) -> Binding {
        let span = b.span;
        let la = self.push(
            out,
            "length",
            Type::Int,
            Rhs::Prim(Prim::Length, vec![a]),
            span,
        );
        let lc = self.push(
            out,
            "length",
            Type::Int,
            Rhs::Prim(Prim::Length, vec![c]),
            span,
        );
        let same = self.push(
            out,
            "ok",
            Type::Bool,
            Rhs::Prim(Prim::Eq, vec![la, lc]),
            span,
        );
        let unit = |body: Vec<Binding>| Body {
            bindings: body,
            result: Atom::Lit(fluxion_core::Lit::Unit),
        };
        self.cx.m.vars[b.var.0 as usize].name = UNFUSED.into();
        let (rhs, constant) = self.never_called(b.rhs, span);
        let failing = constant
            .map(|(c, _)| c)
            .into_iter()
            .chain([Binding { rhs, ..b }])
            .collect();
        Binding {
            var: self.cx.m.fresh_var("checked", Type::Unit),
            rhs: Rhs::If(same, Box::new(unit(Vec::new())), Box::new(unit(failing))),
            span,
        }
    }

    /// Binds `rhs` to a fresh variable in `out`.
    fn push(
        &mut self,
        out: &mut Vec<Option<Binding>>,
        name: &str,
        ty: Type,
        rhs: Rhs,
        span: Span,
    ) -> Atom {
        let v = self.cx.m.fresh_var(name, ty);
        out.push(Some(Binding { var: v, rhs, span }));
        Atom::Var(v)
    }

    /// Binds the closure of a lambda a rule made, in `out`, and knows it (a later
    /// rule may copy its body).
    fn bind_closure(
        &mut self,
        out: &mut Vec<Option<Binding>>,
        name: &str,
        (code, captures): (CodeId, Vec<Atom>),
        span: Span,
    ) -> Atom {
        let ty = self.cx.m.code_ty(code);
        let h = self.cx.m.fresh_var(name, ty);
        out.push(Some(Binding {
            var: h,
            rhs: Rhs::Closure(code, captures.clone()),
            span,
        }));
        self.closures.insert(h, (code, captures));
        Atom::Var(h)
    }

    /// A branch computing `rhs` with `b`'s type and span.
    fn one(&mut self, b: &Binding, rhs: Rhs) -> Body {
        let v = self.cx.m.fresh_var(
            self.cx.m.var(b.var).name.clone(),
            self.cx.m.var_ty(b.var).clone(),
        );
        Body {
            bindings: vec![Binding {
                var: v,
                rhs,
                span: b.span,
            }],
            result: Atom::Var(v),
        }
    }

    /// The unfused branch: the producer (at its own span) and `sum` of it. The branch
    /// runs only where the producer fails on its lengths, before it calls its
    /// function: a constant function stands in for that one where its result type has
    /// a literal zero, and a literal for the sum never made, so the branch (and what
    /// differentiation makes of it) stays small.
    fn unfused(&mut self, b: &Binding, producer_span: Span, producer: Rhs) -> Body {
        let ty = Type::Array(Box::new(self.cx.m.var_ty(b.var).clone()));
        let a = self.cx.m.fresh_var(UNFUSED, ty);
        let (producer, constant) = self.never_called(producer, producer_span);
        let producer = Binding {
            var: a,
            rhs: producer,
            span: producer_span,
        };
        match constant {
            // The producer fails: the branch's value is never made, any literal does.
            Some((constant, zero)) => Body {
                bindings: vec![constant, producer],
                result: Atom::Lit(zero),
            },
            None => {
                let mut body = self.one(b, Rhs::Prim(Prim::Sum, vec![Atom::Var(a)]));
                body.bindings.insert(0, producer);
                body
            }
        }
    }

    /// `producer` with its function replaced by a constant one of the same type (and
    /// that closure's binding and constant, its result type's zero) if the result type
    /// is `Real` or `Int`.
    fn never_called(
        &mut self,
        producer: Rhs,
        span: Span,
    ) -> (Rhs, Option<(Binding, fluxion_core::Lit)>) {
        let Rhs::Prim(prim, mut args) = producer else {
            return (producer, None);
        };
        let at = match prim {
            Prim::Build => 1,
            Prim::Map2 => 0,
            _ => return (Rhs::Prim(prim, args), None),
        };
        let Type::Fn(params, ret) = self.cx.m.atom_ty(&args[at]) else {
            unreachable!("a function operand")
        };
        let zero = match *ret {
            Type::Real => fluxion_core::Lit::Real(0.0),
            Type::Int => fluxion_core::Lit::Int(0),
            _ => return (Rhs::Prim(prim, args), None),
        };
        let params = params
            .into_iter()
            .map(|t| self.cx.m.fresh_var("unused", t))
            .collect();
        let (code, captures) =
            Lambda::new(span).finish(self.cx.m, UNFUSED, params, Atom::Lit(zero), *ret);
        let f = self.cx.m.fresh_var("never_called", self.cx.m.code_ty(code));
        args[at] = Atom::Var(f);
        let closure = Binding {
            var: f,
            rhs: Rhs::Closure(code, captures),
            span,
        };
        (Rhs::Prim(prim, args), Some((closure, zero)))
    }

    /// The fused lambda's parameters for a producer and the arguments its function
    /// takes from them.
    fn producer_params(&mut self, producer: Producer) -> (Vec<VarId>, Vec<Atom>) {
        let params: Vec<VarId> = match producer {
            Producer::Map { xs, .. } => vec![self.fresh_elem(&xs)],
            Producer::Map2 { xs, zs, .. } => vec![self.fresh_elem(&xs), self.fresh_elem(&zs)],
            Producer::Build { .. } => vec![self.cx.m.fresh_var("i", Type::Int)],
        };
        let args = params.iter().map(|p| Atom::Var(*p)).collect();
        (params, args)
    }

    /// A fresh variable of `array`'s element type.
    fn fresh_elem(&mut self, array: &Atom) -> VarId {
        let Type::Array(t) = self.cx.m.atom_ty(array) else {
            unreachable!("an array operand")
        };
        self.cx.m.fresh_var("x", *t)
    }

    /// `f` as the fused lambda applies it at `at`: its body copied in if its closure is
    /// known here and may be copied (see `Context::may_copy`), else called.
    fn callee(&self, f: &Atom, at: Span) -> Callee {
        match f {
            Atom::Var(v) => match self.closures.get(v) {
                Some((c, caps)) if self.cx.may_copy(*c, at) => Callee::Known(*c, caps.clone()),
                _ => Callee::Var(*v),
            },
            Atom::Lit(_) => unreachable!("a function is a variable"),
        }
    }
}

/// The name of the loops a guarded fusion keeps in its other branch.
const UNFUSED: &str = "unfused";

/// What `a` copies, following `let x = y` bindings of `body`'s top level.
fn through_copies(bindings: &[Binding], mut a: Atom) -> Atom {
    while let Atom::Var(v) = a {
        match bindings.iter().find(|b| b.var == v) {
            Some(Binding {
                rhs: Rhs::Atom(x), ..
            }) => a = *x,
            _ => break,
        }
    }
    a
}

/// Reals and tuples of reals: what `sum` and `sumbuild` add the same way (from the
/// same zero, in order), unlike `Int` (whose overflow messages differ) and arrays.
fn summed_in_order(ty: &Type) -> bool {
    match ty {
        Type::Real => true,
        Type::Tuple(ts) => ts.iter().all(summed_in_order),
        _ => false,
    }
}

/// Every binding removable (branches included): the body cannot fail and has no effect.
pub(crate) fn inert_body(m: &fluxion_core::Module, body: &Body) -> bool {
    inert_but(m, body, &|_| false)
}

/// Whether every binding of `body`, its branches included, is removable or one that
/// `also` accepts (and the caller checks apart).
pub(crate) fn inert_but(
    m: &fluxion_core::Module,
    body: &Body,
    also: &dyn Fn(&Rhs) -> bool,
) -> bool {
    body.bindings.iter().all(|b| match &b.rhs {
        Rhs::If(_, t, e) => inert_but(m, t, also) && inert_but(m, e, also),
        Rhs::Match(_, arms, default) => {
            arms.iter().all(|a| inert_but(m, &a.body, also))
                && default.as_ref().is_none_or(|d| inert_but(m, d, also))
        }
        rhs => also(rhs) || is_removable(m, rhs),
    })
}
