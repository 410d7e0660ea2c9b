//! The dependency layer behind `sparsity(f, x)` (docs/language.md §5; [CHAD] §11.3: the
//! derivative's structure over any commutative monoid — here the Boolean semiring).
//! A real becomes `(Real, [Int])`: its value and the set of inputs (ascending) that a
//! chain of real operations carried to it. A real primitive's result depends on the
//! union of the sets of its arguments whose partial is not identically zero in the
//! table (`calculus.rs`: `floor`, `ceil`, `polygamma`'s order carry nothing), whatever
//! the partial's value at the point: the pattern is structural, so `0.0 * x` still
//! depends on x. `min`/`max` depend on the argument they choose, as a branch on reals
//! does; comparisons, `to_int` and branches read values only. This is forward mode
//! over the Boolean semiring (a real's tangent is a set, a partial is "structurally
//! nonzero", the sum is union): one pass gives every row of the pattern. Everything else
//! is the structural skeleton (`structural.rs`).

use fluxion_core::{Atom, CodeId, Lit, Module, Prim, Rhs, Span, Type, TypeMap};

use crate::AdError;
use crate::builder::{Builder, int, real};
use crate::calculus::{Partial, RealRule};
use crate::helpers::{call, helper};
use crate::structural::{Layer, Parts, translate_code};

/// The dependency translation of `code`, creating it on first request. A function
/// that applies a differential operator itself is refused: an operator's translation
/// by this layer is not defined yet (`T(D(A)) ≠ D(T(A))`: a set of inputs has no
/// tangent).
pub fn deps_code(m: &mut Module, code: CodeId) -> Result<CodeId, AdError> {
    if crate::ahead::applies_an_operator(m, code) {
        return Err(AdError::new(
            "sparsity (or sparse_jacobian): the function applies a differential operator \
             itself (grad, jvp, jet, … or a pullback of vjp), which the dependency \
             analysis does not follow yet"
                .to_string(),
        ));
    }
    translate_code(m, code, &Deps, None)
}

fn ints() -> Type {
    Type::array(Type::Int)
}

/// The dependency layer.
pub(crate) struct Deps;

impl Layer for Deps {
    fn map(&self) -> TypeMap {
        TypeMap::Deps
    }

    fn constant(&self, b: &mut Builder, r: Atom) -> Atom {
        let none = b.emit("none", Rhs::Array(vec![]), ints());
        b.tuple("c", vec![r, none])
    }

    fn real_function(
        &self,
        b: &mut Builder,
        rule: &RealRule,
        args: &[Atom],
        _: &mut Parts,
        hint: &str,
    ) -> Atom {
        // Values (literals and Ints as they are) and the sets of translated reals.
        let mut values = Vec::new();
        let mut sets = Vec::new();
        for a in args {
            match (a, b.ty(a)) {
                (Atom::Lit(Lit::Real(_)), _) | (_, Type::Int) => {
                    values.push(*a);
                    sets.push(None);
                }
                _ => {
                    values.push(b.proj(a, 0));
                    sets.push(Some(b.proj(a, 1)));
                }
            }
        }
        let y = b.prim(rule.prim, &values, Type::Real);
        let set = match rule.prim {
            p if crate::calculus::follows_one_argument(p) => {
                // The argument the primitive follows (`a` on ties, docs/language.md §5).
                let cmp = if rule.prim == Prim::Min {
                    Prim::Le
                } else {
                    Prim::Ge
                };
                let first = b.cmp(cmp, values[0], values[1]);
                let (s0, s1) = (sets[0], sets[1]);
                let empty = |b: &mut Builder| b.emit("none", Rhs::Array(vec![]), ints());
                b.if_(
                    first,
                    ints(),
                    |b| s0.unwrap_or_else(|| empty(b)),
                    |b| s1.unwrap_or_else(|| empty(b)),
                )
            }
            _ => {
                // The partials' structure, not their values (their code is dead).
                let partials = (rule.partials)(b, &values, y);
                let carried: Vec<Atom> = sets
                    .iter()
                    .zip(&partials)
                    .filter_map(|(s, p)| match p {
                        Partial::Zero => None,
                        Partial::At(_) => *s,
                    })
                    .collect();
                let mut acc: Option<Atom> = None;
                for s in carried {
                    acc = Some(match acc {
                        None => s,
                        Some(a) => b.prim(Prim::IntUnion, &[a, s], ints()),
                    });
                }
                acc.unwrap_or_else(|| b.emit("none", Rhs::Array(vec![]), ints()))
            }
        };
        b.tuple(hint, vec![y, set])
    }

    /// A sum of reals adds the values and unites the sets (the structural default
    /// would add the sets as arrays).
    fn special_prim(
        &self,
        b: &mut Builder,
        p: Prim,
        args: &[Atom],
        ty: &Type,
        hint: &str,
    ) -> Option<Atom> {
        if !matches!(p, Prim::Sum | Prim::Sumbuild) || !crate::taylor::has_real_leaf(ty) {
            return None;
        }
        let lty = b.m.map_type(ty, TypeMap::Deps);
        let elems = match p {
            Prim::Sum => args[0],
            _ => {
                let arr = b.m.map_type(&Type::array(ty.clone()), TypeMap::Deps);
                b.emit(hint, Rhs::Prim(Prim::Build, args.to_vec()), arr)
            }
        };
        if *ty == Type::Real {
            return Some(real_sum(b, elems));
        }
        let plus = plus_code(b, ty);
        let step = b.closure("plus", vec![lty.clone(), lty.clone()], |b, ps| {
            call(b, plus, vec![ps[0], ps[1]])
        });
        // The first element, then the others added to it; the empty sum is the
        // language's zero (an empty array or 0.0 with no inputs).
        let n = b.prim(Prim::Length, &[elems], Type::Int);
        let empty = b.cmp(Prim::Eq, n, int(0));
        Some(b.if_(
            empty,
            lty.clone(),
            |b| crate::taylor::translated_zero(&Deps, b, ty),
            |b| {
                let first = b.prim(Prim::Index, &[elems, int(0)], lty.clone());
                let n1 = b.sub(n, int(1));
                let elem_ty = b.ty(&first);
                let rest = b.prim(Prim::Slice, &[elems, int(1), n1], Type::array(elem_ty));
                b.prim(Prim::Fold, &[step, first, rest], lty.clone())
            },
        ))
    }
}

/// The sum of translated reals `elems`: the values added from the first, as the
/// language's sum adds them, and the sets united by halves ([`union_all_code`]): a
/// fold of unions copies the growing set once per element, O(n²) for a row that
/// depends on all n inputs.
fn real_sum(b: &mut Builder, elems: Atom) -> Atom {
    let dreal = b.m.map_type(&Type::Real, TypeMap::Deps);
    let n = b.prim(Prim::Length, &[elems], Type::Int);
    let empty = b.cmp(Prim::Eq, n, int(0));
    b.if_(
        empty,
        dreal.clone(),
        |b| crate::taylor::translated_zero(&Deps, b, &Type::Real),
        |b| {
            let value = b.closure("value", vec![dreal.clone()], |b, y| b.proj(&y[0], 0));
            let values = b.prim(Prim::Map, &[value, elems], Type::array(Type::Real));
            let first = b.prim(Prim::Index, &[values, int(0)], Type::Real);
            let n1 = b.sub(n, int(1));
            let rest = b.prim(Prim::Slice, &[values, int(1), n1], Type::array(Type::Real));
            let add = b.closure("add", vec![Type::Real, Type::Real], |b, p| {
                b.add(p[0], p[1])
            });
            let total = b.prim(Prim::Fold, &[add, first, rest], Type::Real);
            let set = b.closure("set", vec![dreal.clone()], |b, y| b.proj(&y[0], 1));
            let sets = b.prim(Prim::Map, &[set, elems], Type::array(ints()));
            let all = union_all_code(b);
            let union = call(b, all, vec![sets]);
            b.tuple("sum", vec![total, union])
        },
    )
}

/// A code `[[Int]] -> [Int]`: the union of ascending sets, by halves — a balanced
/// tree of `%union`s, each level copying every set once: O(total · log n).
fn union_all_code(b: &mut Builder) -> CodeId {
    let sets = Type::array(ints());
    let name = "union_all";
    helper(b, name, &sets, vec![sets.clone()], ints(), |b, ps| {
        let s = ps[0];
        let this = crate::helpers::helper_id(b, name, &sets).expect("reserved");
        let n = b.prim(Prim::Length, &[s], Type::Int);
        let few = b.cmp(Prim::Le, n, int(1));
        let sets_ty = sets.clone();
        b.if_(
            few,
            ints(),
            |b| {
                let empty = b.cmp(Prim::Eq, n, int(0));
                b.if_(
                    empty,
                    ints(),
                    |b| b.emit("none", Rhs::Array(vec![]), ints()),
                    |b| b.prim(Prim::Index, &[s, int(0)], ints()),
                )
            },
            |b| {
                let half = b.emit("half", Rhs::Prim(Prim::Div, vec![n, int(2)]), Type::Int);
                let left = b.prim(Prim::Slice, &[s, int(0), half], sets_ty.clone());
                let rest = b.sub(n, half);
                let right = b.prim(Prim::Slice, &[s, half, rest], sets_ty.clone());
                let l = call(b, this, vec![left]);
                let r = call(b, this, vec![right]);
                b.prim(Prim::IntUnion, &[l, r], ints())
            },
        )
    })
}

/// A code `(D(t), D(t)) -> D(t)`: the sum of two translated values of a summable type
/// (arrays elementwise, of one length as the language's sum requires).
fn plus_code(b: &mut Builder, ty: &Type) -> CodeId {
    let lty = b.m.map_type(ty, TypeMap::Deps);
    helper(
        b,
        "plus_deps",
        ty,
        vec![lty.clone(), lty.clone()],
        lty.clone(),
        |b, ps| {
            let (u, v) = (ps[0], ps[1]);
            match ty {
                Type::Real => {
                    let (x, y) = (b.proj(&u, 0), b.proj(&v, 0));
                    let s = b.add(x, y);
                    let (a, c) = (b.proj(&u, 1), b.proj(&v, 1));
                    let set = b.prim(Prim::IntUnion, &[a, c], ints());
                    b.tuple("sum", vec![s, set])
                }
                Type::Tuple(ts) => {
                    let parts = ts
                        .iter()
                        .enumerate()
                        .map(|(i, t)| {
                            let (x, y) = (b.proj(&u, i), b.proj(&v, i));
                            if crate::taylor::has_real_leaf(t) {
                                let f = plus_code(b, t);
                                call(b, f, vec![x, y])
                            } else {
                                b.arith(Prim::Add, &[x, y])
                            }
                        })
                        .collect();
                    b.tuple("sum", parts)
                }
                Type::Array(elem) => {
                    let f = plus_code(b, elem);
                    let le = b.m.map_type(elem, TypeMap::Deps);
                    let g = b.closure("plus", vec![le.clone(), le], |b, ps| {
                        call(b, f, vec![ps[0], ps[1]])
                    });
                    b.prim(Prim::Map2, &[g, u, v], lty.clone())
                }
                _ => b.arith(Prim::Add, &[u, v]),
            }
        },
    )
}

/// A code `(D([Real] -> [Real]), [Real]) -> ([Int], [Int])`: the translated closure
/// run at `x` with input j depending on itself, its result's sets laid out as
/// compressed rows (offsets of length m + 1, then the column indices row by row).
pub fn sparsity_code(m: &mut Module) -> CodeId {
    let mut b = Builder::new(m, Span::default());
    let b = &mut b;
    let reals = Type::array(Type::Real);
    let fty = forward_type(b.m);
    let result = Type::Tuple(vec![ints(), ints()]);
    helper(
        b,
        "sparsity",
        &reals,
        vec![fty, reals.clone()],
        result,
        |b, ps| {
            let sets = forward_rows(b, ps[0], ps[1]);
            compressed_rows(b, sets)
        },
    )
}

/// The most outputs for which `sparsity` runs reverse passes, one per output, rather
/// than the forward layer's one pass of set unions (`sparsity_either_code`).
pub const REVERSE_OUTPUTS: i64 = 8;

/// A code `([Real] -> [Real], D([Real] -> [Real]), R, [Real]) -> ([Int], [Int])`:
/// a function, its forward dependency translation and `rev` (of type `R`), its CHAD
/// translation over the Boolean semiring (`chad::chad_deps_code`): the pattern at `x`
/// by whichever instance of [CHAD] §11.3 costs less. The function runs first, for its
/// number of outputs m; for m ≤ [`REVERSE_OUTPUTS`], `rev` runs and one backward pass
/// per output gives the rows (each pass the size of the run, in reals), else the
/// forward layer gives every row in one pass whose unions are the size of the sets: a
/// row depending on all n inputs costs the forward layer O(n log n) through a sum
/// ([`real_sum`]) and O(n²) through a fold, reverse O(n). (The first run costs a
/// primal: running `rev` first cost a third of the forward layer's pass for many
/// outputs.)
pub fn sparsity_either_code(m: &mut Module, rev: &Type) -> CodeId {
    let mut b = Builder::new(m, Span::default());
    let b = &mut b;
    let reals = Type::array(Type::Real);
    let plain = Type::func(vec![reals.clone()], reals.clone());
    let fty = forward_type(b.m);
    let result = Type::Tuple(vec![ints(), ints()]);
    let params = vec![plain, fty, rev.clone(), reals.clone()];
    helper(b, "sparsity_either", rev, params, result, |b, ps| {
        let (f, g, rev, x) = (ps[0], ps[1], ps[2], ps[3]);
        let y = b.emit("y", Rhs::Call(f, vec![x]), reals.clone());
        let outputs = b.prim(Prim::Length, &[y], Type::Int);
        let few = b.cmp(Prim::Le, outputs, int(REVERSE_OUTPUTS));
        let sets = b.if_(
            few,
            Type::array(ints()),
            |b| {
                let ret = crate::chad_sweep::result_of(b, &rev);
                let r = b.emit("r", Rhs::Call(rev, vec![x]), ret);
                let bp = b.proj(&r, 1);
                reverse_rows(b, x, outputs, bp)
            },
            |b| forward_rows(b, g, x),
        );
        compressed_rows(b, sets)
    })
}

/// A code `[Real] -> ([Int], [Int])` calling `translated`, the CHAD translation over
/// the Boolean semiring of a function `[Real] -> [Real]` (`chad::chad_deps_code`): the
/// pattern by reverse passes only, whatever the number of outputs — the function run
/// once at `x`, then its backpropagator seeded with each output's one-hot ([CHAD]
/// §11.3: reverse AD and this analysis are two instances of one transformation).
pub fn sparsity_by_chad_code(m: &mut Module, translated: CodeId) -> CodeId {
    let ret = m.code(translated).ret.clone();
    let mut b = Builder::new(m, Span::default());
    let b = &mut b;
    let reals = Type::array(Type::Real);
    let result = Type::Tuple(vec![ints(), ints()]);
    // Named by the code's id too: two translations may share a name (a REPL's
    // redefinition).
    let name = format!("sparsity_by_{}_{}", b.m.code(translated).name, translated.0);
    helper(b, &name, &reals, vec![reals.clone()], result, |b, ps| {
        let x = ps[0];
        let r = b.emit("r", Rhs::CallDirect(translated, vec![x]), ret.clone());
        let y = b.proj(&r, 0);
        let bp = b.proj(&r, 1);
        let outputs = b.prim(Prim::Length, &[y], Type::Int);
        let sets = reverse_rows(b, x, outputs, bp);
        compressed_rows(b, sets)
    })
}

/// A code `[Real] -> ([Int], [Int])` calling `translated`, the forward dependency
/// translation of a function `[Real] -> [Real]` without captures ([`deps_code`]): the
/// pattern by the forward layer only, whatever the number of outputs (the tests hold
/// the two instances equal).
pub fn sparsity_forward_code(m: &mut Module, translated: CodeId) -> CodeId {
    let mut b = Builder::new(m, Span::default());
    let b = &mut b;
    let reals = Type::array(Type::Real);
    let fty = forward_type(b.m);
    let result = Type::Tuple(vec![ints(), ints()]);
    let name = format!(
        "sparsity_fwd_{}_{}",
        b.m.code(translated).name,
        translated.0
    );
    helper(b, &name, &reals, vec![reals.clone()], result, |b, ps| {
        let g = b.emit("g", Rhs::Closure(translated, vec![]), fty.clone());
        let sets = forward_rows(b, g, ps[0]);
        compressed_rows(b, sets)
    })
}

/// `D([Real] -> [Real])`: a function's type in the forward dependency layer.
fn forward_type(m: &mut Module) -> Type {
    let dreals = Type::array(m.map_type(&Type::Real, TypeMap::Deps));
    Type::func(vec![dreals.clone()], dreals)
}

/// The rows of the pattern, `[[Int]]`, by the forward layer: `g`, the function's
/// dependency translation, run at `x` with input j depending on itself.
fn forward_rows(b: &mut Builder, g: Atom, x: Atom) -> Atom {
    let dreal = b.m.map_type(&Type::Real, TypeMap::Deps);
    let dreals = Type::array(dreal.clone());
    let n = b.prim(Prim::Length, &[x], Type::Int);
    let input = b.closure("input", vec![Type::Int], |b, j| {
        let xj = b.prim(Prim::Index, &[x, j[0]], Type::Real);
        let set = b.emit("input", Rhs::Array(vec![j[0]]), ints());
        b.tuple("input", vec![xj, set])
    });
    let point = b.prim(Prim::Build, &[n, input], dreals.clone());
    let ys = b.emit("ys", Rhs::Call(g, vec![point]), dreals);
    let set_of = b.closure("set", vec![dreal], |b, y| b.proj(&y[0], 1));
    b.prim(Prim::Map, &[set_of, ys], Type::array(ints()))
}

/// The rows of the pattern, `[[Int]]`, by reverse passes: `bp`, the backpropagator
/// of the function's CHAD translation over the Boolean semiring at `x`, seeded with
/// each of the `outputs` one-hots; row i the inputs whose cotangent is nonzero.
fn reverse_rows(b: &mut Builder, x: Atom, outputs: Atom, bp: Atom) -> Atom {
    let reals = Type::array(Type::Real);
    let bp_ret = crate::chad_sweep::result_of(b, &bp);
    let row = b.closure("row", vec![Type::Int], |b, i| {
        let i = i[0];
        let seed_at = b.closure("seed", vec![Type::Int], |b, k| {
            let here = b.cmp(Prim::Eq, k[0], i);
            b.if_(here, Type::Real, |_| real(1.0), |_| real(0.0))
        });
        let w = b.prim(Prim::Build, &[outputs, seed_at], reals.clone());
        let cts = b.emit("cts", Rhs::Call(bp, vec![w]), bp_ret.clone());
        let ct = match &bp_ret {
            Type::Tuple(_) => b.proj(&cts, 0),
            _ => cts,
        };
        let xty = b.m.tangent_type(&reals);
        let ct = b.emit("ct", Rhs::Prim(Prim::TanDense, vec![x, ct]), xty);
        // The nonzeros' positions: each input a "row" of 0 or 1 entries, so
        // `%rows_of` of their offsets lists the inputs with one.
        let flag = b.closure("flag", vec![Type::Real], |b, c| {
            let nonzero = b.cmp(Prim::Ne, c[0], real(0.0));
            b.if_(nonzero, Type::Int, |_| int(1), |_| int(0))
        });
        let flags = b.prim(Prim::Map, &[flag, ct], ints());
        rows_of_counts(b, flags)
    });
    b.prim(Prim::Build, &[outputs, row], Type::array(ints()))
}

/// For counts `c`, the row of each of the Σc entries: `[0]·c₀ ++ [1]·c₁ ++ …`.
fn rows_of_counts(b: &mut Builder, counts: Atom) -> Atom {
    let offsets = offsets_of(b, counts);
    b.prim(Prim::RowsOf, &[offsets], ints())
}

/// `[0, c₀, c₀ + c₁, …]`: the offsets of rows of `counts` entries.
fn offsets_of(b: &mut Builder, counts: Atom) -> Atom {
    let add = b.closure("add", vec![Type::Int, Type::Int], |b, p| b.add(p[0], p[1]));
    let ends = b.prim(Prim::Scan, &[add, int(0), counts], ints());
    let first = b.emit("first", Rhs::Array(vec![int(0)]), ints());
    b.prim(Prim::Concat, &[first, ends], ints())
}

/// The sets of `sets: [[Int]]` (row i the columns of row i) in compressed rows:
/// `(offsets, columns)`.
fn compressed_rows(b: &mut Builder, sets: Atom) -> Atom {
    let len = b.closure("count", vec![ints()], |b, s| {
        b.prim(Prim::Length, &[s[0]], Type::Int)
    });
    let counts = b.prim(Prim::Map, &[len, sets], ints());
    let offsets = offsets_of(b, counts);
    // Nonzero t is in row rows[t], at t − offsets[rows[t]] in that row's set:
    // one pass over the nonzeros (a fold of `concat`s copies O(m·nnz)).
    let rows = b.prim(Prim::RowsOf, &[offsets], ints());
    let nnz = b.prim(Prim::Length, &[rows], Type::Int);
    let column = b.closure("column", vec![Type::Int], |b, t| {
        let i = b.prim(Prim::Index, &[rows, t[0]], Type::Int);
        let start = b.prim(Prim::Index, &[offsets, i], Type::Int);
        let at = b.sub(t[0], start);
        let set = b.prim(Prim::Index, &[sets, i], ints());
        b.prim(Prim::Index, &[set, at], Type::Int)
    });
    let columns = b.prim(Prim::Build, &[nnz, column], ints());
    b.tuple("pattern", vec![offsets, columns])
}
