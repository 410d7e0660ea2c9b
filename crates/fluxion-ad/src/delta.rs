//! Reverse mode by dual numbers with deltas ([Delta] §7, the classic tape of its §7.3): the
//! delta layer `Δ(Real) = (Real, Int)`, a primal and the id of its delta on the
//! current tape; every other type constructor maps to itself (`A -> B` to
//! `Δ(A) -> Δ(B)`, effectful only through the tape). The monad of §7 — a state of
//! fresh ids and an appended list of delta bindings — is the interpreter's tape, so
//! the translated code is ordinary Core whose effects are three internal primitives:
//!
//! - a real primitive `y = p(x₁, …, xₙ)` becomes `y = p(primals)` and
//!   `id = %delta(∂₁, id₁, …, ∂ₙ, idₙ)`: one tape entry `Σ ∂ᵢ·idᵢ` with the partials of
//!   the shared table (`calculus.rs`), which the backward sweep transposes (§7's
//!   `eval`: each entry is visited once, so the sweep is linear in the tape);
//!   a constant (a literal, `to_real`) has id 0, the zero delta;
//! - a real used once, as an argument of another real primitive of its own block, gets
//!   no entry: its terms stay pending ([`Parts::defer`]) and that primitive's entry
//!   takes them, each coefficient multiplied by its partial (§7's delta terms need a
//!   `Share`, an id, only where they are used more than once; statement-level
//!   preaccumulation, as hand-written and tool-made adjoints do). `x + h·(k₁ + 2k₂)/6`
//!   is one entry, not four. The products are `%lscale`, whose zero passes nothing on,
//!   so the sweep's rules hold (a zero partial stops an infinite adjoint); only the
//!   rounding of the adjoints changes. A pending combination keeps at most
//!   [`MAX_PENDING`] terms (each primitive that takes it pays one product per term);
//! - `sum(a)` of `a: [Real]` is one entry `Σⱼ 1·idⱼ` (`%delta_sum`), not n additions
//!   of ids (docs/design-ad.md §5: sums of deltas are never sums of ids), and so is each real
//!   of a sum of tuples of reals; `sum` of arrays holding arrays is a fold of
//!   translated additions; `sumbuild` is `build` then sum.
//! - Everything else is the structural skeleton (`structural.rs`): closures are
//!   translated with their code, so a closure records on every call, not at creation
//!   (§7.5: each function's translation reads only its own code).
//!
//! Arrays (the paper only sketches them): `Δ([A]) = [Δ(A)]`, so `build`, `map`, `fold`,
//! `scan`, `a[i]`, `slice`, `concat`, `reverse`, `zip`, `replicate` are themselves on
//! translated elements — indexing copies an element's (primal, id) and adds no tape
//! entry, so a gradient never builds a one-hot cotangent per element: the sweep adds
//! each read's adjoint into the element's id directly.
//!
//! Nested operators inside translated code (the layers do not commute with `Δ`):
//! `jvp`/`taylor` of a translated closure become `%delta_jvp`/`%delta_taylor`, which
//! the run time evaluates with `Δ(Fwd(code))`/`Δ(Taylor(code))` of the closure's
//! original code (reverse-over-forward); `%delta_vjp` inside translated code (reverse
//! over reverse) is a tape of tapes where its function is a closure the code builds
//! (`delta_twice.rs`: this layer applied to its own output, whose `%delta`s go on a
//! second tape), and elsewhere computed by forward mode (`pullback_by_jvps.rs`) and
//! translated.

use fluxion_core::{Atom, CodeId, Module, Prim, Rhs, Type, TypeMap, VarId};

use crate::AdError;
use crate::builder::{Builder, int, real};
use crate::calculus::{self, Partial, RealRule};
use crate::helpers::{enum_match, helper};
use crate::layer::primal_of;
use crate::structural::{KnownVjp, Layer, Parts, translate_code};

/// The delta translation of `code`, creating it on first request.
pub fn delta_code(m: &mut Module, code: CodeId) -> Result<CodeId, AdError> {
    translate_code(m, code, &Delta, None)
}

/// The delta layer.
pub(crate) struct Delta;

/// The most terms a pending combination keeps before it is made an entry: each
/// primitive that takes one multiplies every term by its partial, so a cap keeps a long
/// chain linear.
const MAX_PENDING: usize = 8;

/// `d·c` as the sweep would have applied them one after the other: `%lscale`, whose
/// zero passes nothing on (a zero partial or a zero adjoint stops an infinite or NaN
/// one, `runtime.c`'s `fx_tape_sweep`); folded where `d` is the literal 1 or both are
/// literals, and `d` or `-d` where `c` is the literal ±1 (which differs from `%lscale`
/// only in the sign of a zero coefficient, and the sweep adds `±0·a` to an adjoint that
/// is never -0.0, or skips a zero coefficient, alike).
fn scale(b: &mut Builder, d: Atom, c: Atom) -> Atom {
    use fluxion_core::Lit;
    match (d, c) {
        (Atom::Lit(Lit::Real(1.0)), _) => c,
        (Atom::Lit(Lit::Real(x)), Atom::Lit(Lit::Real(y))) => {
            real(fluxion_core::prim::lscale(x, y))
        }
        (_, Atom::Lit(Lit::Real(1.0))) => d,
        (_, Atom::Lit(Lit::Real(-1.0))) => b.neg(d),
        _ => b.prim(Prim::LinScale, &[d, c], Type::Real),
    }
}

fn pair_ty() -> Type {
    Type::Tuple(vec![Type::Real, Type::Int])
}

impl Layer for Delta {
    fn map(&self) -> TypeMap {
        TypeMap::Delta
    }

    fn defers_single_use(&self) -> bool {
        true
    }

    fn constant(&self, b: &mut Builder, r: Atom) -> Atom {
        b.tuple("c", vec![r, int(0)])
    }

    fn real_function(
        &self,
        b: &mut Builder,
        rule: &RealRule,
        args: &[Atom],
        parts: &mut Parts,
        hint: &str,
    ) -> Atom {
        let (xs, ids) = parts.split_args(b, args);
        let y = b.prim(rule.prim, &xs, Type::Real);
        let mut terms = Vec::new();
        let partials = (rule.partials)(b, &xs, y);
        for ((partial, id), arg) in partials.into_iter().zip(ids).zip(args) {
            let (Partial::At(d), Some(id)) = (partial, id) else {
                continue;
            };
            match parts.take_pending(*arg) {
                // The argument's own combination, scaled by this partial: its entry
                // is never made.
                Some(pending) => {
                    for (c, i) in pending {
                        let c = scale(b, d, c);
                        terms.push((c, i));
                    }
                }
                None => terms.push((d, id)),
            }
        }
        let defer = parts.may_defer && !terms.is_empty() && terms.len() <= MAX_PENDING;
        let id = if terms.is_empty() || defer {
            int(0)
        } else {
            let flat: Vec<Atom> = terms.iter().flat_map(|(c, i)| [*c, *i]).collect();
            b.prim(Prim::DeltaPush, &flat, Type::Int)
        };
        let pair = b.tuple(hint, vec![y, id]);
        parts.remember(pair, (y, id));
        if defer {
            parts.defer(pair, terms);
        }
        pair
    }

    fn reverse_vjp_of_closure(
        &self,
        b: &mut Builder,
        known: KnownVjp<'_>,
    ) -> Result<Option<Atom>, AdError> {
        self.vjp_of_closure(b, known)
    }

    fn reverse_vjp_of_unknown(
        &self,
        b: &mut Builder,
        f: VarId,
        targs: &[Atom],
        result: &Type,
    ) -> Option<Atom> {
        self.vjp_of_unknown(b, f, targs, result)
    }

    fn special_prim(
        &self,
        b: &mut Builder,
        p: Prim,
        args: &[Atom],
        ty: &Type,
        hint: &str,
    ) -> Option<Atom> {
        let lty = b.m.map_type(ty, TypeMap::Delta);
        Some(match p {
            Prim::Sum => self.sum(b, ty, args[0]),
            Prim::Sumbuild => {
                let elems = b.m.map_type(&Type::array(ty.clone()), TypeMap::Delta);
                let a = b.emit(hint, Rhs::Prim(Prim::Build, args.to_vec()), elems);
                self.sum(b, ty, a)
            }
            // Delta code translated again (`delta_twice.rs`): the inner tape's entries,
            // their coefficients now outer pairs, go on the second tape.
            Prim::DeltaPush => b.emit(hint, Rhs::Prim(Prim::Delta2Push, args.to_vec()), lty),
            Prim::DeltaSum => b.emit(hint, Rhs::Prim(Prim::Delta2Sum, args.to_vec()), lty),
            // A preaccumulated sum is the sum of its elements: on the second tape, as
            // `%delta_sum` of their `build`.
            Prim::DeltaSumbuild => {
                let elems = b.m.map_type(&Type::array(ty.clone()), TypeMap::Delta);
                let a = b.emit(hint, Rhs::Prim(Prim::Build, args.to_vec()), elems);
                b.emit(hint, Rhs::Prim(Prim::Delta2Sum, vec![a]), lty)
            }
            // A push forward's direction in derivative code translated again (reverse
            // over forward: `ahead::translate_delta_resolved`). No code that translation
            // reaches makes a symbolic zero (`%tzero`, CHAD's linear blocks) and every
            // operator's result is dense, so what is left of `%tdense` is that it makes
            // each real `r + 0.0` (a -0.0 direction is 0.0): that on each primal, the
            // delta kept (its derivative is 1).
            Prim::TanDense => dense(b, ty, args[1]),
            Prim::Jvp => b.emit(hint, Rhs::Prim(Prim::DeltaJvp, args.to_vec()), lty),
            Prim::Taylor => b.emit(hint, Rhs::Prim(Prim::DeltaTaylor, args.to_vec()), lty),
            _ => return None,
        })
    }
}

/// `t: Δ(ty)` with every real's primal `p + 0.0` and its delta kept (`%tdense` of a
/// dense tangent, translated).
fn dense(b: &mut Builder, ty: &Type, t: Atom) -> Atom {
    if !b.m.has_leaf(ty, &|l| *l == Type::Real) {
        return t;
    }
    let lty = b.m.map_type(ty, TypeMap::Delta);
    if *ty == Type::Real {
        let p = b.proj(&t, 0);
        let id = b.proj(&t, 1);
        let p = b.arith(Prim::Add, &[p, real(0.0)]);
        return b.tuple("dense", vec![p, id]);
    }
    let code = helper(
        b,
        "delta_dense",
        ty,
        vec![lty.clone()],
        lty.clone(),
        |b, ps| {
            let x = ps[0];
            match ty {
                Type::Tuple(ts) => {
                    let parts = ts
                        .iter()
                        .enumerate()
                        .map(|(i, t)| {
                            let xi = b.proj(&x, i);
                            dense(b, t, xi)
                        })
                        .collect();
                    b.tuple("dense", parts)
                }
                Type::Array(elem) => {
                    let elem = (**elem).clone();
                    let lelem = b.m.map_type(&elem, TypeMap::Delta);
                    let f = b.lambda("dense_elem", &[], vec![lelem], |b, p| dense(b, &elem, p[0]));
                    b.prim(Prim::Map, &[f, x], lty.clone())
                }
                Type::Enum(e) => {
                    let Type::Enum(le) = lty else {
                        unreachable!("the delta translation of an enum")
                    };
                    let fields: Vec<Vec<Type>> =
                        b.m.enum_def(*e)
                            .variants
                            .iter()
                            .map(|v| v.fields.clone())
                            .collect();
                    enum_match(b, le, x, lty.clone(), |b, xs, _, tag| {
                        let parts = fields[tag as usize]
                            .iter()
                            .zip(xs)
                            .map(|(t, x)| dense(b, t, *x))
                            .collect();
                        b.emit("dense", Rhs::Ctor(le, tag, parts), lty.clone())
                    })
                }
                _ => unreachable!("a tangent type holding reals"),
            }
        },
    );
    b.emit("dense", Rhs::CallDirect(code, vec![t]), lty)
}

impl Delta {
    /// `sum(a)` of `a: Δ([elem])`.
    fn sum(&self, b: &mut Builder, elem: &Type, a: Atom) -> Atom {
        if *elem == Type::Real {
            return b.prim(Prim::DeltaSum, &[a], pair_ty());
        }
        if let Some(leaves) = real_leaves(elem) {
            return self.sum_by_leaf(b, elem, a, &leaves);
        }
        let arr = Type::array(elem.clone());
        let la = b.m.map_type(&arr, TypeMap::Delta);
        let le = b.m.map_type(elem, TypeMap::Delta);
        let code = helper(
            b,
            "delta_sum",
            elem,
            vec![la.clone()],
            le.clone(),
            |b, ps| {
                let a = ps[0];
                let n = b.prim(Prim::Length, &[a], Type::Int);
                let empty = b.cmp(Prim::Eq, n, int(0));
                b.if_(
                    empty,
                    le.clone(),
                    // No element: the primal program's empty sum, a constant.
                    |b| {
                        let primals = primal_of(b, TypeMap::Delta, &arr, a);
                        let s = b.prim(Prim::Sum, &[primals], elem.clone());
                        // A summable value as a translated constant (ids 0).
                        crate::structural::lift_value(b, self, elem, s)
                    },
                    |b| {
                        let first = b.prim(Prim::Index, &[a, int(0)], le.clone());
                        let rest_len = b.sub(n, int(1));
                        let rest = b.prim(Prim::Slice, &[a, int(1), rest_len], la.clone());
                        let add = b.lambda("add", &[], vec![le.clone(), le.clone()], |b, ps| {
                            self.add(b, elem, ps[0], ps[1])
                        });
                        b.prim(Prim::Fold, &[add, first, rest], le.clone())
                    },
                )
            },
        );
        crate::helpers::call(b, code, vec![a])
    }

    /// `sum(a)` of tuples of reals, one `%delta_sum` per real of the tuple (at path
    /// `leaves[k]`): one entry of n terms each, where a fold of translated additions
    /// makes n entries of two. The primal is the program's sum of tuples without
    /// arrays, which starts from zero as a sum of reals does.
    fn sum_by_leaf(&self, b: &mut Builder, elem: &Type, a: Atom, leaves: &[Vec<usize>]) -> Atom {
        let le = b.m.map_type(elem, TypeMap::Delta);
        let sums: Vec<Atom> = leaves
            .iter()
            .map(|path| {
                let column = b.lambda("leaf", &[], vec![le.clone()], |b, ps| {
                    path.iter().fold(ps[0], |x, i| b.proj(&x, *i))
                });
                let xs = b.prim(Prim::Map, &[column, a], Type::array(pair_ty()));
                b.prim(Prim::DeltaSum, &[xs], pair_ty())
            })
            .collect();
        let mut next = sums.into_iter();
        rebuild(b, elem, &mut next)
    }

    /// `u + v` of two translated values of a summable type (reals get a delta each).
    fn add(&self, b: &mut Builder, ty: &Type, u: Atom, v: Atom) -> Atom {
        match ty {
            Type::Real => {
                let rule = calculus::rule(Prim::Add).expect("+ has a rule");
                self.real_function(b, rule, &[u, v], &mut Parts::default(), "sum")
            }
            Type::Tuple(ts) => {
                let parts = ts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let (x, y) = (b.proj(&u, i), b.proj(&v, i));
                        self.add(b, t, x, y)
                    })
                    .collect();
                b.tuple("sum", parts)
            }
            Type::Array(t) => {
                let le = b.m.map_type(t, TypeMap::Delta);
                let add = b.lambda("add", &[], vec![le.clone(), le.clone()], |b, ps| {
                    self.add(b, t, ps[0], ps[1])
                });
                let lty = b.m.map_type(ty, TypeMap::Delta);
                b.prim(Prim::Map2, &[add, u, v], lty)
            }
            _ => b.add(u, v),
        }
    }
}

/// The paths of the reals of `ty` when it is a tuple whose leaves are all reals (nested
/// tuples allowed), in order; `None` otherwise.
fn real_leaves(ty: &Type) -> Option<Vec<Vec<usize>>> {
    fn walk(ty: &Type, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) -> bool {
        match ty {
            Type::Real => {
                out.push(path.clone());
                true
            }
            Type::Tuple(ts) => ts.iter().enumerate().all(|(i, t)| {
                path.push(i);
                let ok = walk(t, path, out);
                path.pop();
                ok
            }),
            _ => false,
        }
    }
    let mut out = Vec::new();
    (matches!(ty, Type::Tuple(_)) && walk(ty, &mut Vec::new(), &mut out)).then_some(out)
}

/// A translated value of tuple-of-reals type `ty` from its reals in order.
fn rebuild(b: &mut Builder, ty: &Type, reals: &mut impl Iterator<Item = Atom>) -> Atom {
    match ty {
        Type::Tuple(ts) => {
            let parts = ts.iter().map(|t| rebuild(b, t, reals)).collect();
            b.tuple("sum", parts)
        }
        _ => reals.next().expect("one sum per real"),
    }
}
