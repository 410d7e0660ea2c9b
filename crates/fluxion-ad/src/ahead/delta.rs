//! `--ad delta` ahead of time: `%delta_vjp(f, x, w)` as Core that runs `f`'s delta
//! translation on a tape in the C runtime ([Delta] §7, the classic tape of its §7.3; the
//! interpreter's `delta.rs` takes the same steps at run time):
//!
//! ```text
//! let c'ᵢ  = %delta_lift(cᵢ)            -- f's captures, every real with the zero delta
//! let fd   = Closure(Δ(code), c')       -- the delta layer's translation (fluxion-ad)
//! let mark = %delta_open()              -- a tape nested in the current one
//! let xd   = %delta_inputs(x)           -- every real of x a fresh input
//! let r    = fd(xd)                     -- records Σ cᵢ·idᵢ per real operation
//! let y    = %delta_primal(r)
//! check(y, w)                           -- w has y's shape
//! let g    = %delta_grad(mark, r, w, xd) -- seed r's deltas with w, one backward sweep,
//!                                        -- the inputs' adjoints, the tape closed
//! (y, g)
//! ```
//!
//! `%delta_jacobian(f, x)` takes the same steps up to `r`, then
//! `%delta_rows(mark, r, xd)`: the tape swept once per real of `r`, seeded with 1
//! there, each sweep's inputs' adjoints a row, the tape closed (`f` runs once, where
//! rows of `%delta_vjp` would run it once per row). Where that cannot be resolved it is
//! a call of the rows of `%delta_vjp` (`vjp_primitive.rs`'s `jacobian_by_rows_code`),
//! resolved in the next round.
//!
//! Resolved where `f`'s captures, argument and result hold no functions (the walks
//! above are over first-order values). Where `f` is not known at the operator, every
//! code that can flow to it is translated and `%chad_of(f, 2)` picks one at run time, lifting
//! the closure's captures. A translation holding an operator the C backend leaves to
//! the interpreter (a nested one) sends the program there.

use fluxion_core::{Atom, Binding, Prim, Rhs, Type, TypeMap, VarId, verify};

use crate::builder::Builder;

use super::lift::Site;
use super::resolve::Emit;

/// The bindings that compute `v = %delta_vjp(args)` natively, or `None` where it stays
/// for the interpreter.
pub(crate) fn expand(site: &mut Site, args: &[Atom], v: VarId) -> Option<Vec<Binding>> {
    // `v: (B, T(A))`; the walks are over first-order `A` and `B`.
    let Type::Tuple(result) = site.m.var_ty(v).clone() else {
        return None;
    };
    let (b, ta) = (result[0].clone(), result[1].clone());
    let (mut e, Recorded { mark, r, xd }) = record(site, args[0], args[1], &b)?;
    let w = args[2];
    let y = e.bind("y", b, Rhs::Prim(Prim::DeltaPrimal, vec![r]));
    e.bind(
        "check",
        Type::Unit,
        Rhs::Prim(Prim::CheckTangent, vec![y, w]),
    );
    let g = e.bind(
        "x_bar",
        ta,
        Rhs::Prim(Prim::DeltaGrad, vec![mark, r, w, xd]),
    );
    e.out.push(Binding {
        var: v,
        rhs: Rhs::Tuple(vec![y, g]),
        span: e.span,
    });
    Some(e.out)
}

/// The bindings that compute `v = %delta_jacobian(f, x)` natively: one run of `f`'s
/// delta translation, one sweep per output (`%delta_rows`); `None` where it cannot.
pub(crate) fn expand_jacobian(site: &mut Site, args: &[Atom], v: VarId) -> Option<Vec<Binding>> {
    let reals = Type::array(Type::Real);
    let (mut e, Recorded { mark, r, xd }) = record(site, args[0], args[1], &reals)?;
    e.out.push(Binding {
        var: v,
        rhs: Rhs::Prim(Prim::DeltaRows, vec![mark, r, xd]),
        span: e.span,
    });
    Some(e.out)
}

/// What [`record`] binds: the tape's mark, `f`'s translated result, the inputs.
struct Recorded {
    mark: Atom,
    r: Atom,
    xd: Atom,
}

/// The steps both operators share, up to the call: `f`'s captures lifted, its delta
/// translation, a tape opened, `x` made its inputs, the call. `None` where `f` is not
/// resolved or its parameters or result `b` can hold functions.
fn record<'m>(site: &'m mut Site, f: Atom, x: Atom, b: &Type) -> Option<(Emit<'m>, Recorded)> {
    let mut lifts = Vec::new();
    let span = site.span;
    let (make, translated, params) = site.closure(f, TypeMap::Delta, &mut lifts, 0)?;
    let m = &mut *site.m;
    if params.iter().chain([b]).any(|t| m.can_hold_fn(t)) {
        return None;
    }
    let a = verify::differentiated_argument(&params);
    let ret = m.code(translated).ret.clone();
    let da = m.map_type(&a, TypeMap::Delta);
    let dparams: Vec<Type> = params
        .iter()
        .map(|t| m.map_type(t, TypeMap::Delta))
        .collect();
    let mut e = Emit {
        m,
        out: lifts,
        span,
    };
    let fd = e.bind("delta_f", Type::func(dparams, ret.clone()), make);
    let mark = e.bind("mark", Type::Int, Rhs::Prim(Prim::DeltaOpen, vec![]));
    let xd = e.bind("xd", da, Rhs::Prim(Prim::DeltaInputs, vec![x]));
    let xs = e.split(xd, params.len());
    let r = e.bind("r", ret, Rhs::Call(fd, xs));
    Some((e, Recorded { mark, r, xd }))
}

/// `v = %delta_jacobian(f, x)` as a call of the rows of `%delta_vjp`, which the next
/// round resolves.
pub(crate) fn jacobian_by_rows(site: &mut Site, args: &[Atom], v: VarId) -> Vec<Binding> {
    let fty = site.m.atom_ty(&args[0]);
    let mut b = Builder::new(site.m, site.span);
    let h = crate::vjp_primitive::jacobian_by_rows_code(&mut b, &fty);
    vec![Binding {
        var: v,
        rhs: Rhs::CallDirect(h, args.to_vec()),
        span: site.span,
    }]
}
