//! Local simplification, one forward walk with what is known of each variable:
//!
//! - copies: `let x = a` is dropped, `x` renamed to `a`;
//! - projections of known tuples: `let t = (a, b); t.0` is `a` (the pairs forward mode
//!   builds and takes apart again), `%lproj` of a known tuple likewise;
//! - case of known constructor: `match` of a value built by `Ctor` here runs its arm
//!   inline, with the fields renamed; `if` of a literal runs its branch inline;
//!   `%lfield` of a known constructor is its field;
//! - constant folding: `+ - * /` and negation of real literals (the same IEEE operation
//!   the interpreter performs, so the same bits), `+ - *` of `Int` literals where they
//!   do not overflow, `Int` `+ 0` and `- 0`, comparisons and `!` of `Int`/`Bool` literals;
//! - zero propagation through the linear building blocks ([Knossos] §2.1.2 and §2.3, [CHAD] App. B's
//!   simplifications): `%tplus(0, x) = x`, `%lscale(c, 0) = 0`, `%lproj(0, i) = 0`,
//!   `%lfield(0, ..) = 0`, `%lindex(0, i) = 0`, `%lsum(0) = 0`, `%lslice(0, ..) = 0` —
//!   identities of the run-time algebra, where `%tzero()` is the symbolic zero;
//!   `%tplus` of two tuples built in scope is the tuple of the components' sums
//!   (which the zero rules then reduce: CHAD's fan-in of one-hot tuple cotangents).

use std::collections::{HashMap, HashSet};

use fluxion_core::{Atom, Binding, Body, Lit, Module, Prim, Rhs, VarId};

use crate::Context;

use crate::subst::Subst;

/// Simplifies `body` and the bodies nested in it.
pub(crate) fn simplify_body(cx: &mut Context, body: &mut Body) {
    let mut s = Simplifier {
        m: cx.m,
        captured: cx.captured,
        known: HashMap::new(),
        subst: Subst::default(),
    };
    s.body(body);
}

/// What is known of a variable's value.
#[derive(Clone)]
enum Known {
    Tuple(Vec<Atom>),
    Ctor(u32, Vec<Atom>),
    /// The symbolic zero `%tzero()`.
    Zero,
    /// An array literal's elements.
    Array(Vec<Atom>),
    /// `slice(array, start, len)` with literal start and length (it ran: in range).
    Slice(Atom, i64, i64),
}

struct Simplifier<'c> {
    /// For the variables a rule introduces.
    m: &'c mut Module,
    /// Variables a lambda captures: renamed only by a copy binding.
    captured: &'c HashSet<VarId>,
    /// Facts about variables; valid wherever the variable is in scope (variables are
    /// unique, so a fact learnt in one branch is never consulted in another).
    known: HashMap<VarId, Known>,
    subst: Subst,
}

/// What becomes of one binding.
enum Outcome {
    /// Kept, with its right-hand side simplified.
    Keep(Rhs),
    /// Dropped: its variable stands for this atom.
    Rename(Atom),
    /// Replaced by the bindings of a branch run inline, ending in its result; a
    /// `match` arm's fields stand for the constructor's arguments.
    Inline(Body, Vec<(VarId, Atom)>),
}

impl Simplifier<'_> {
    fn body(&mut self, body: &mut Body) {
        let mut out = Vec::with_capacity(body.bindings.len());
        for binding in std::mem::take(&mut body.bindings) {
            self.binding(binding, &mut out);
        }
        body.bindings = out;
        body.result = self.subst.atom(&body.result);
    }

    fn binding(&mut self, mut binding: Binding, out: &mut Vec<Binding>) {
        self.subst.rhs(&mut binding.rhs);
        let rhs = std::mem::replace(&mut binding.rhs, Rhs::Atom(Atom::Lit(Lit::Unit)));
        match self.rewrite(rhs) {
            Outcome::Keep(rhs) => {
                self.learn(binding.var, &rhs);
                binding.rhs = rhs;
                out.push(binding);
            }
            Outcome::Rename(a) => self.rename(binding, a, out),
            Outcome::Inline(mut inner, fields) => {
                // The inlined body is simplified in this scope, its bindings join it.
                for (f, a) in fields {
                    let copy = Binding {
                        var: f,
                        rhs: Rhs::Atom(a),
                        span: binding.span,
                    };
                    self.rename(copy, a, out);
                }
                for b in std::mem::take(&mut inner.bindings) {
                    self.binding(b, out);
                }
                let r = self.subst.atom(&inner.result);
                self.rename(binding, r, out);
            }
        }
    }

    /// `binding`'s variable stands for `a`: renamed in what follows, or, if a lambda
    /// captures it, bound to `a` by a copy (what `a` is known to be, it is too).
    fn rename(&mut self, mut binding: Binding, a: Atom, out: &mut Vec<Binding>) {
        if self.captured.contains(&binding.var) {
            if let Some(fact) = self.fact(&a).cloned() {
                self.known.insert(binding.var, fact);
            }
            binding.rhs = Rhs::Atom(a);
            out.push(binding);
        } else {
            self.subst.insert(binding.var, a);
        }
    }

    fn learn(&mut self, v: VarId, rhs: &Rhs) {
        let fact = match rhs {
            Rhs::Tuple(args) => Known::Tuple(args.clone()),
            Rhs::Ctor(_, tag, args) => Known::Ctor(*tag, args.clone()),
            Rhs::Prim(Prim::TanZero, _) => Known::Zero,
            Rhs::Array(items) => Known::Array(items.clone()),
            Rhs::Prim(Prim::Slice, args) => match (args[1], args[2]) {
                (Atom::Lit(Lit::Int(s)), Atom::Lit(Lit::Int(n))) => Known::Slice(args[0], s, n),
                _ => return,
            },
            _ => return,
        };
        self.known.insert(v, fact);
    }

    fn fact(&self, a: &Atom) -> Option<&Known> {
        match a {
            Atom::Var(v) => self.known.get(v),
            Atom::Lit(_) => None,
        }
    }

    fn is_zero(&self, a: &Atom) -> bool {
        matches!(self.fact(a), Some(Known::Zero))
    }

    fn rewrite(&mut self, rhs: Rhs) -> Outcome {
        let zero = Outcome::Keep(Rhs::Prim(Prim::TanZero, vec![]));
        match rhs {
            Rhs::Atom(a) => Outcome::Rename(a),
            Rhs::Proj(a, i) => match self.fact(&a) {
                Some(Known::Tuple(parts)) => Outcome::Rename(parts[i]),
                _ => Outcome::Keep(Rhs::Proj(a, i)),
            },
            Rhs::If(Atom::Lit(Lit::Bool(c)), t, e) => {
                Outcome::Inline(if c { *t } else { *e }, Vec::new())
            }
            Rhs::If(c, mut t, mut e) => {
                self.body(&mut t);
                self.body(&mut e);
                Outcome::Keep(Rhs::If(c, t, e))
            }
            Rhs::Match(s, mut arms, mut default) => {
                if let Some(Known::Ctor(tag, fields)) = self.fact(&s).cloned() {
                    if let Some(i) = arms.iter().position(|a| a.tag == tag) {
                        let arm = arms.swap_remove(i);
                        let fields = arm.fields.iter().copied().zip(fields).collect();
                        return Outcome::Inline(arm.body, fields);
                    }
                    if let Some(d) = default {
                        return Outcome::Inline(*d, Vec::new());
                    }
                }
                for arm in arms.iter_mut() {
                    self.body(&mut arm.body);
                }
                if let Some(d) = default.as_deref_mut() {
                    self.body(d);
                }
                Outcome::Keep(Rhs::Match(s, arms, default))
            }
            Rhs::Prim(Prim::TanPlus, args) if self.both_tuples(&args) => self.plus_tuples(&args),
            Rhs::Prim(p, args) => self.prim(p, args).unwrap_or(zero),
            rhs => Outcome::Keep(rhs),
        }
    }

    fn both_tuples(&self, args: &[Atom]) -> bool {
        args.iter()
            .all(|a| matches!(self.fact(a), Some(Known::Tuple(_))))
    }

    /// `%tplus((a0, a1, ..), (b0, b1, ..)) = (%tplus(a0, b0), %tplus(a1, b1), ..)`: the
    /// componentwise sum, whose components the zero rules then simplify (CHAD's fan-in
    /// of two tuple cotangents, each mostly zeros, becomes the tuple of the non-zero
    /// parts).
    fn plus_tuples(&mut self, args: &[Atom]) -> Outcome {
        let parts = |a: &Atom| match self.fact(a) {
            Some(Known::Tuple(ps)) => ps.clone(),
            _ => unreachable!("a known tuple"),
        };
        let (xs, ys) = (parts(&args[0]), parts(&args[1]));
        let mut bindings = Vec::with_capacity(xs.len() + 1);
        let mut sums = Vec::with_capacity(xs.len());
        for (x, y) in xs.into_iter().zip(ys) {
            let ty = self.m.atom_ty(&x);
            let v = self.m.fresh_var("tplus", ty);
            bindings.push(Binding {
                var: v,
                rhs: Rhs::Prim(Prim::TanPlus, vec![x, y]),
                span: Default::default(),
            });
            sums.push(Atom::Var(v));
        }
        let ty = self.m.atom_ty(&args[0]);
        let t = self.m.fresh_var("tplus", ty);
        bindings.push(Binding {
            var: t,
            rhs: Rhs::Tuple(sums),
            span: Default::default(),
        });
        Outcome::Inline(
            Body {
                bindings,
                result: Atom::Var(t),
            },
            Vec::new(),
        )
    }

    /// `None`: the result is the symbolic zero.
    fn prim(&mut self, p: Prim, args: Vec<Atom>) -> Option<Outcome> {
        use Prim::*;
        let keep = |args| Some(Outcome::Keep(Rhs::Prim(p, args)));
        match p {
            TanPlus if self.is_zero(&args[0]) => Some(Outcome::Rename(args[1])),
            TanPlus if self.is_zero(&args[1]) => Some(Outcome::Rename(args[0])),
            LinScale if self.is_zero(&args[1]) => None,
            // `%lscale(1, w) = w` for every `w` (a zero stays the same zero, a NaN or an
            // infinity itself): the unit partials of `+`, `-` and copies.
            LinScale if args[0] == Atom::Lit(Lit::Real(1.0)) => Some(Outcome::Rename(args[1])),
            LinProj | LinField | LinIndex | LinSum | LinSlice if self.is_zero(&args[0]) => None,
            LinProj => match (self.fact(&args[0]), args[1]) {
                (Some(Known::Tuple(parts)), Atom::Lit(Lit::Int(i))) => {
                    Some(Outcome::Rename(parts[i as usize]))
                }
                _ => keep(args),
            },
            LinField => match (self.fact(&args[0]), args[1], args[2]) {
                (
                    Some(Known::Ctor(tag, fields)),
                    Atom::Lit(Lit::Int(t)),
                    Atom::Lit(Lit::Int(j)),
                ) if *tag as i64 == t => Some(Outcome::Rename(fields[j as usize])),
                _ => keep(args),
            },
            // A tape term on the zero delta (a constant's id, 0) adds nothing, as the
            // tape's push drops it; with no term left, the push is the zero delta.
            DeltaPush if args.chunks(2).any(|t| t[1] == Atom::Lit(Lit::Int(0))) => {
                let live: Vec<Atom> = args
                    .chunks(2)
                    .filter(|t| t[1] != Atom::Lit(Lit::Int(0)))
                    .flatten()
                    .copied()
                    .collect();
                if live.is_empty() {
                    Some(Outcome::Rename(Atom::Lit(Lit::Int(0))))
                } else {
                    keep(live)
                }
            }
            // `0 + n`, `n + 0` and `n - 0` of `Int`s are `n` (no overflow; not so for
            // reals: `0.0 + -0.0` is `0.0`).
            Add if args[0] == Atom::Lit(Lit::Int(0)) => Some(Outcome::Rename(args[1])),
            Add | Sub if args[1] == Atom::Lit(Lit::Int(0)) => Some(Outcome::Rename(args[0])),
            // An element of a literal at a constant index in range is that element; a
            // slice's, the sliced array's (the slice ran, so that index is in range).
            Index => match (self.fact(&args[0]), args[1]) {
                (Some(Known::Array(items)), Atom::Lit(Lit::Int(i)))
                    if (0..items.len() as i64).contains(&i) =>
                {
                    Some(Outcome::Rename(items[i as usize]))
                }
                (Some(Known::Slice(xs, s, n)), Atom::Lit(Lit::Int(i)))
                    if (0..*n).contains(&i) && s.checked_add(i).is_some() =>
                {
                    keep(vec![*xs, Atom::Lit(Lit::Int(s + i))])
                }
                _ => keep(args),
            },
            Length => match self.fact(&args[0]) {
                Some(Known::Array(items)) => {
                    Some(Outcome::Rename(Atom::Lit(Lit::Int(items.len() as i64))))
                }
                _ => keep(args),
            },
            _ => match fold(p, &args) {
                Some(l) => Some(Outcome::Rename(Atom::Lit(l))),
                None => keep(args),
            },
        }
    }
}

/// The value of `p` on literal arguments, where it is a plain IEEE or checked
/// integer operation that cannot fail.
fn fold(p: Prim, args: &[Atom]) -> Option<Lit> {
    use Prim::*;
    let lit = |i: usize| match args.get(i) {
        Some(Atom::Lit(l)) => Some(*l),
        _ => None,
    };
    match (p, lit(0)?, args.get(1).map(|_| lit(1))) {
        (Neg, Lit::Real(x), None) => Some(Lit::Real(-x)),
        (Neg, Lit::Int(x), None) => x.checked_neg().map(Lit::Int),
        (Not, Lit::Bool(b), None) => Some(Lit::Bool(!b)),
        (_, Lit::Real(x), Some(Some(Lit::Real(y)))) => match p {
            Add => Some(Lit::Real(x + y)),
            Sub => Some(Lit::Real(x - y)),
            Mul => Some(Lit::Real(x * y)),
            Div => Some(Lit::Real(x / y)),
            LinScale => Some(Lit::Real(fluxion_core::prim::lscale(x, y))),
            _ => None,
        },
        (_, Lit::Int(x), Some(Some(Lit::Int(y)))) => match p {
            Add => x.checked_add(y).map(Lit::Int),
            Sub => x.checked_sub(y).map(Lit::Int),
            Mul => x.checked_mul(y).map(Lit::Int),
            Eq => Some(Lit::Bool(x == y)),
            Ne => Some(Lit::Bool(x != y)),
            Lt => Some(Lit::Bool(x < y)),
            Le => Some(Lit::Bool(x <= y)),
            Gt => Some(Lit::Bool(x > y)),
            Ge => Some(Lit::Bool(x >= y)),
            _ => None,
        },
        _ => None,
    }
}
