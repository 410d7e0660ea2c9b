//! What is known of array lengths, across the codes being optimised: `build(n, f)`,
//! `range(n)` and `replicate(n, x)` have length `n`, `map(f, xs)` and `map2(f, xs, zs)` the length of
//! `xs`, and `let l = length(ys)` names one. Variables are unique and a fact about
//! one holds wherever it is in scope (its binding ran), so a lambda may use what its
//! enclosing code knows of the arrays it captures.
//!
//! `fuse` asks it whether two lengths are equal without a check at run time (CHAD's
//! backward loops run over the primal's array and a `replicate` of its length).

use std::collections::HashMap;

use fluxion_core::{Atom, Lit, Module, Prim, Rhs, Type, VarId};

/// Where an array's length comes from.
#[derive(Clone, Copy)]
enum Source {
    /// The length is this `Int`.
    Count(Atom),
    /// The length is that of this other array.
    SameAs(Atom),
}

/// The known lengths of the codes from `first` on.
#[derive(Default)]
pub struct Lengths {
    arrays: HashMap<VarId, Source>,
    /// `l` bound to `length(ys)`: `l ↦ ys`.
    length_of: HashMap<VarId, Atom>,
    /// `ys` bound to `replicate(n, x)`: `ys ↦ (n, x)` (or to `%tdense` of one, where
    /// `x` is a dense real: the same array).
    replicas: HashMap<VarId, (Atom, Atom)>,
    /// Reals bound to `%tdense(_, _)`: never the symbolic zero.
    dense_reals: std::collections::HashSet<VarId>,
}

/// A length in canonical form: an `Int` atom not known to be a `length`, or the
/// length of an array whose length is not known otherwise.
#[derive(PartialEq, Debug)]
enum Len {
    Count(Atom),
    Of(VarId),
}

/// A binding whose length follows from others' (`Lengths::collect`).
enum Later {
    /// `map2(f, xs, zs)`.
    Map2(Atom, Atom),
    /// An `if` ending in these arrays.
    If(Atom, Atom),
}

/// Rounds of `Lengths::collect`'s second look (nesting deeper than this is rare; a
/// fact it misses is only a loop not unrolled or fused).
const MAX_ROUNDS: usize = 4;

/// Chains longer than this are not followed (they do not occur; a bound keeps the
/// walk linear however the program looks).
const MAX_CHAIN: usize = 64;

impl Lengths {
    pub(crate) fn collect(m: &Module, first: usize) -> Lengths {
        let mut known = Lengths::default();
        // Bindings whose length is better known once the others' are (below).
        let mut later: Vec<(VarId, Later)> = Vec::new();
        for code in &m.codes[first..] {
            fluxion_core::visit::for_each_binding(&code.body, &mut |b| {
                let source = match &b.rhs {
                    Rhs::Prim(Prim::Replicate, args) => {
                        known.replicas.insert(b.var, (args[0], args[1]));
                        Source::Count(args[0])
                    }
                    Rhs::Prim(Prim::Build | Prim::Range, args) => Source::Count(args[0]),
                    // A literal has its count; a slice that ran, the length asked for.
                    Rhs::Array(items) => Source::Count(Atom::Lit(Lit::Int(items.len() as i64))),
                    Rhs::Prim(Prim::Slice, args) => Source::Count(args[2]),
                    Rhs::Prim(Prim::Map, args) => Source::SameAs(args[1]),
                    Rhs::Prim(Prim::Map2, args) => {
                        later.push((b.var, Later::Map2(args[1], args[2])));
                        Source::SameAs(args[1])
                    }
                    Rhs::If(_, t, e) if matches!(m.var_ty(b.var), Type::Array(_)) => {
                        later.push((b.var, Later::If(t.result, e.result)));
                        return;
                    }
                    // `%tdense(x, t)` checks that `t` has `x`'s shape; a real is dense.
                    Rhs::Prim(Prim::TanDense, _) if m.var_ty(b.var) == &Type::Real => {
                        known.dense_reals.insert(b.var);
                        return;
                    }
                    Rhs::Prim(Prim::TanDense, args)
                        if matches!(m.var_ty(b.var), Type::Array(_)) =>
                    {
                        // A replica of a dense real is dense already: the same replica.
                        if let Atom::Var(r) = args[1]
                            && let Some(&(n, Atom::Var(t))) = known.replicas.get(&r)
                            && known.dense_reals.contains(&t)
                        {
                            known.replicas.insert(b.var, (n, Atom::Var(t)));
                        }
                        Source::SameAs(args[0])
                    }
                    Rhs::Prim(Prim::Length, args) => {
                        known.length_of.insert(b.var, args[0]);
                        return;
                    }
                    _ => return,
                };
                known.arrays.insert(b.var, source);
            });
        }
        // A `map2` that ran had two operands of one length: its length is a literal
        // if either's is. An `if` whose branches end in arrays of one known length has
        // that length. (Rounds: an `if` nested in a branch is listed after it.)
        for _ in 0..MAX_ROUNDS {
            let mut changed = false;
            for (v, what) in later.iter().rev() {
                let literal = |l: &Len| matches!(l, Len::Count(Atom::Lit(_)));
                if literal(&known.of_array(Atom::Var(*v), 0)) {
                    continue;
                }
                let source = match *what {
                    Later::Map2(xs, zs) => {
                        let (lx, lz) = (known.of_array(xs, 0), known.of_array(zs, 0));
                        (!literal(&lx) && literal(&lz)).then_some(Source::SameAs(zs))
                    }
                    Later::If(t, e) => (!known.arrays.contains_key(v)
                        && known.of_array(t, 0) == known.of_array(e, 0))
                    .then_some(Source::SameAs(t)),
                };
                if let Some(source) = source {
                    known.arrays.insert(*v, source);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        known
    }

    /// The canonical form of array `ys`'s length (definitions come before their uses,
    /// so the chain ends; `depth` bounds it all the same).
    fn of_array(&self, ys: Atom, depth: usize) -> Len {
        let Atom::Var(v) = ys else {
            return Len::Count(ys);
        };
        match self.arrays.get(&v) {
            Some(_) if depth >= MAX_CHAIN => Len::Of(v),
            Some(Source::SameAs(xs)) => self.of_array(*xs, depth + 1),
            Some(Source::Count(n)) => self.of_count(*n, depth + 1),
            None => Len::Of(v),
        }
    }

    /// The canonical form of `Int` `n` used as a length.
    fn of_count(&self, n: Atom, depth: usize) -> Len {
        match n {
            Atom::Var(l) if depth < MAX_CHAIN => match self.length_of.get(&l) {
                Some(ys) => self.of_array(*ys, depth + 1),
                None => Len::Count(n),
            },
            _ => Len::Count(n),
        }
    }

    /// Whether array `xs` has length `n` wherever both are in scope.
    pub(crate) fn has_length(&self, xs: Atom, n: Atom) -> bool {
        self.of_array(xs, 0) == self.of_count(n, 0)
    }

    /// `(n, x)` if `ys` is bound to `replicate(n, x)`.
    pub(crate) fn replicated(&self, ys: Atom) -> Option<(Atom, Atom)> {
        match ys {
            Atom::Var(v) => self.replicas.get(&v).copied(),
            Atom::Lit(_) => None,
        }
    }

    /// Whether arrays `xs` and `zs` are known to have one length.
    pub(crate) fn same_length(&self, xs: Atom, zs: Atom) -> bool {
        self.of_array(xs, 0) == self.of_array(zs, 0)
    }

    /// Whether `Int`s `a` and `b`, used as lengths, are known equal.
    pub(crate) fn same_count(&self, a: Atom, b: Atom) -> bool {
        self.of_count(a, 0) == self.of_count(b, 0)
    }

    /// The length of array `xs` if it is known to be an `Int` literal.
    pub(crate) fn literal_length(&self, xs: Atom) -> Option<i64> {
        match self.of_array(xs, 0) {
            Len::Count(Atom::Lit(Lit::Int(k))) => Some(k),
            _ => None,
        }
    }

    /// The value of `Int` `n` used as a count, if it is known to be a literal (itself,
    /// or the length of an array of literal length).
    pub(crate) fn literal_count(&self, n: Atom) -> Option<i64> {
        match self.of_count(n, 0) {
            Len::Count(Atom::Lit(Lit::Int(k))) => Some(k),
            _ => None,
        }
    }

    /// The array `n` is bound as the `length` of, if it is one.
    pub(crate) fn array_of(&self, n: Atom) -> Option<Atom> {
        match n {
            Atom::Var(l) => self.length_of.get(&l).copied(),
            Atom::Lit(_) => None,
        }
    }

    /// Whether `n` is the length of some array (so it is a valid length: a loop of
    /// that many elements cannot fail on it).
    pub(crate) fn is_a_length(&self, n: Atom) -> bool {
        matches!(n, Atom::Var(l) if self.length_of.contains_key(&l))
    }
}
