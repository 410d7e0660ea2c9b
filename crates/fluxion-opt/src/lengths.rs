//! What is known of array lengths, across the codes being optimised: `build(n, f)` and
//! `replicate(n, x)` have length `n`, `map(f, xs)` and `map2(f, xs, zs)` the length of
//! `xs`, and `let l = length(ys)` names one. Variables are unique and a fact about
//! one holds wherever it is in scope (its binding ran), so a lambda may use what its
//! enclosing code knows of the arrays it captures.
//!
//! `fuse` asks it whether two lengths are equal without a check at run time (CHAD's
//! backward loops run over the primal's array and a `replicate` of its length).

use std::collections::HashMap;

use fluxion_core::{Atom, Module, Prim, Rhs, Type, VarId};

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

/// Chains longer than this are not followed (they do not occur; a bound keeps the
/// walk linear however the program looks).
const MAX_CHAIN: usize = 64;

impl Lengths {
    pub(crate) fn collect(m: &Module, first: usize) -> Lengths {
        let mut known = Lengths::default();
        for code in &m.codes[first..] {
            fluxion_core::visit::for_each_binding(&code.body, &mut |b| {
                let source = match &b.rhs {
                    Rhs::Prim(Prim::Replicate, args) => {
                        known.replicas.insert(b.var, (args[0], args[1]));
                        Source::Count(args[0])
                    }
                    Rhs::Prim(Prim::Build, args) => Source::Count(args[0]),
                    Rhs::Prim(Prim::Map, args) => Source::SameAs(args[1]),
                    Rhs::Prim(Prim::Map2, args) => Source::SameAs(args[1]),
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

    /// Whether `n` is the length of some array (so it is a valid length: a loop of
    /// that many elements cannot fail on it).
    pub(crate) fn is_a_length(&self, n: Atom) -> bool {
        matches!(n, Atom::Var(l) if self.length_of.contains_key(&l))
    }
}
