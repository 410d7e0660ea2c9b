//! `sparse_jacobian(f, x)` (docs/language.md §5) as ordinary Core, expanded before the
//! other passes like `jacobian`:
//!
//! ```text
//! let (offsets, cols) = sparsity(f, x)            -- the pattern (deps.rs)
//! columns coloured greedily (%colour, by_rows = 0): columns sharing a row differ;
//! rows coloured the same way (by_rows = 1), stopped once they need as many colours
//! as the columns (%colour's limit); the direction with fewer colours wins
//! forward:  J·d_c for each column colour c, d_c = Σ_{colour(j) = c} e_j  (jvp)
//!           J[i][j] = (J·d_{colour(j)})[i]: no other column of that colour has row i
//! reverse:  w_cᵀ·J for each row colour c (the mode's vjp), J[i][j] = (w_{colour(i)}ᵀ·J)[j]
//! ```
//!
//! The colouring is the greedy first-fit colouring of the column (or row)
//! intersection graph in natural order (Curtis, Powell and Reid's grouping of
//! structurally orthogonal columns); its number of colours is the number of passes.

use fluxion_core::{Atom, Prim, Type};

use crate::builder::{Builder, int, real};
use crate::mode::{ReverseAlgorithm, Site, jvp_tangent};

fn ints() -> Type {
    Type::array(Type::Int)
}

fn reals() -> Type {
    Type::array(Type::Real)
}

/// The number of colours of a colouring (0 for no items).
fn count(b: &mut Builder, colours: Atom) -> Atom {
    let n = b.prim(Prim::Length, &[colours], Type::Int);
    let empty = b.cmp(Prim::Eq, n, int(0));
    b.if_(
        empty,
        Type::Int,
        |_| int(0),
        |b| {
            let top = b.prim(Prim::Maximum, &[colours], Type::Int);
            b.add(top, int(1))
        },
    )
}

/// `Σ_{colour(i) = c} e_i` of length `length(colours)`, for each colour c < k.
fn seeds(b: &mut Builder, colours: Atom, k: Atom) -> Atom {
    let n = b.prim(Prim::Length, &[colours], Type::Int);
    let seed = b.closure("seed", vec![Type::Int], |b, c| {
        let c = c[0];
        let entry = b.closure("entry", vec![Type::Int], |b, i| {
            let ci = b.prim(Prim::Index, &[colours, i[0]], Type::Int);
            let hit = b.cmp(Prim::Eq, ci, c);
            b.if_(hit, Type::Real, |_| real(1.0), |_| real(0.0))
        });
        b.prim(Prim::Build, &[n, entry], reals())
    });
    b.prim(Prim::Build, &[k, seed], Type::array(reals()))
}

/// `sparse_jacobian(f, x)` at the operator's site.
pub(crate) fn sparse_jacobian(b: &mut Builder, s: &Site, alg: &dyn ReverseAlgorithm) -> Atom {
    let (f, x) = (Atom::Var(s.f), Atom::Var(s.x));
    let pattern = b.prim(Prim::Sparsity, &[f, x], Type::Tuple(vec![ints(), ints()]));
    let offsets = b.proj(&pattern, 0);
    let cols = b.proj(&pattern, 1);
    let n = b.prim(Prim::Length, &[x], Type::Int);
    let by_columns = b.prim(Prim::Colour, &[offsets, cols, n, int(0), int(0)], ints());
    let kc = count(b, by_columns);
    // The rows' colouring stops once it needs as many colours as the columns' (it
    // cannot win then): a column in many rows makes finishing it quadratic.
    let by_rows = b.prim(Prim::Colour, &[offsets, cols, n, int(1), kc], ints());
    let kr = count(b, by_rows);
    let rows = b.prim(Prim::RowsOf, &[offsets], ints());
    let nnz = b.prim(Prim::Length, &[cols], Type::Int);
    let reverse = b.cmp(Prim::Lt, kr, kc);
    let values = b.if_(
        reverse,
        reals(),
        |b| {
            // One reverse pass per row colour: wᵀ·J.
            let ws = seeds(b, by_rows, kr);
            let (_, pullback) = {
                let pair = alg.vjp(b, s);
                (b.proj(&pair, 0), b.proj(&pair, 1))
            };
            let pull = b.closure("pull", vec![reals()], |b, w| {
                b.emit("wj", fluxion_core::Rhs::Call(pullback, vec![w[0]]), reals())
            });
            let passes = b.prim(Prim::Map, &[pull, ws], Type::array(reals()));
            let value = b.closure("value", vec![Type::Int], |b, t| {
                let i = b.prim(Prim::Index, &[rows, t[0]], Type::Int);
                let j = b.prim(Prim::Index, &[cols, t[0]], Type::Int);
                let c = b.prim(Prim::Index, &[by_rows, i], Type::Int);
                let pass = b.prim(Prim::Index, &[passes, c], reals());
                b.prim(Prim::Index, &[pass, j], Type::Real)
            });
            b.prim(Prim::Build, &[nnz, value], reals())
        },
        |b| {
            // One forward pass per column colour: J·d.
            let ds = seeds(b, by_columns, kc);
            let ret = s.b.clone();
            let push = b.closure("push", vec![reals()], |b, d| {
                jvp_tangent(b, f, x, d[0], &ret)
            });
            let passes = b.prim(Prim::Map, &[push, ds], Type::array(reals()));
            let value = b.closure("value", vec![Type::Int], |b, t| {
                let i = b.prim(Prim::Index, &[rows, t[0]], Type::Int);
                let j = b.prim(Prim::Index, &[cols, t[0]], Type::Int);
                let c = b.prim(Prim::Index, &[by_columns, j], Type::Int);
                let pass = b.prim(Prim::Index, &[passes, c], reals());
                b.prim(Prim::Index, &[pass, i], Type::Real)
            });
            b.prim(Prim::Build, &[nnz, value], reals())
        },
    );
    b.tuple("sparse_jacobian", vec![offsets, cols, values])
}
