//! `wᵀ·J` by forward mode: one JVP per input coordinate, assembled with the
//! tangent-space coordinates of `coordinates.rs`. `--ad fwd`'s pullback, and how a
//! layer that cannot carry a reverse pass translates `%delta_vjp` (Taylor mode, or the
//! delta layer itself: reverse-over-reverse becomes reverse-over-forward).

use fluxion_core::{Atom, CodeId, Prim, Type, VarId};

use crate::builder::{Builder, int};
use crate::coordinates::{basis_of, coords_of, dim_of, dot, from_coords};
use crate::helpers::{call, helper, var_of};
use crate::mode::{Site, call_at, jvp_tangent, output_count};
use crate::push_forward::push_forward;

/// `wᵀ·J` of `f` at `x` (`y = f(x)`) by one JVP per input coordinate.
pub(crate) fn pullback_at(b: &mut Builder, s: &Site, y: Atom, w: Atom) -> Atom {
    pullback_with(b, s, None, y, w)
}

/// [`pullback_at`], each JVP by `jvp` — or, with `push: Some(code)`, by that
/// [`crate::push_forward::push_forward`] code applied to `s.f`, already translated.
fn pullback_with(b: &mut Builder, s: &Site, push: Option<CodeId>, y: Atom, w: Atom) -> Atom {
    let (f, x, a_ty, ret) = (s.f, s.x, s.a.clone(), s.b.clone());
    // A cotangent must have the result's shape (constructors, lengths).
    b.prim(Prim::CheckTangent, &[y, w], Type::Unit);
    let w = coords_of(b, &ret, w);
    let wv = var_of(b, w);
    let n = dim_of(b, &a_ty, Atom::Var(x));
    let column = b.lambda("pullback_coord", &[f, x, wv], vec![Type::Int], |b, ps| {
        let e = basis_of(b, &a_ty, Atom::Var(x), ps[0]);
        let jv = match push {
            Some(pf) => {
                let pushed = call(b, pf, vec![Atom::Var(f), Atom::Var(x), e]);
                b.proj(&pushed, 1)
            }
            None => jvp_tangent(b, Atom::Var(f), Atom::Var(x), e, &ret),
        };
        let jc = coords_of(b, &ret, jv);
        dot(b, jc, Atom::Var(wv))
    });
    let coords = b.prim(Prim::Build, &[n, column], Type::array(Type::Real));
    from_coords(b, &a_ty, Atom::Var(x), coords, int(0))
}

/// A helper code `(f, x, w) -> (f(x), wᵀ·J)` for functions of type `fty`, by forward
/// mode: how a layer that cannot carry a reverse pass through `%delta_vjp` (Taylor,
/// or the delta layer itself: reverse-over-reverse) translates it — as
/// forward-over-that-layer instead.
pub(crate) fn vjp_by_forward_code(b: &mut Builder, fty: &Type) -> fluxion_core::CodeId {
    let Type::Fn(params, ret) = fty else {
        unreachable!("%delta_vjp of a non-function")
    };
    let a = fluxion_core::verify::differentiated_argument(params);
    let ret = (**ret).clone();
    let (ta, tb) = (b.m.tangent_type(&a), b.m.tangent_type(&ret));
    let result = Type::Tuple(vec![ret.clone(), ta]);
    let n_params = params.len();
    helper(
        b,
        "vjp_by_forward",
        fty,
        vec![fty.clone(), a.clone(), tb],
        result,
        |b, ps| {
            let site = Site {
                f: var_of(b, ps[0]),
                x: var_of(b, ps[1]),
                a,
                b: ret.clone(),
                n_params,
            };
            let y = call_at(b, ps[0], ps[1], n_params, ret);
            let y = var_of(b, y);
            let xbar = pullback_at(b, &site, Atom::Var(y), ps[2]);
            b.tuple("vjp", vec![Atom::Var(y), xbar])
        },
    )
}

/// A code `(f, Tf(f), x, w) -> (f(x), wᵀ·J)` for functions of type `fty`: the value by
/// `f`, each JVP by pushing the forward-translated closure (`push_forward.rs`).
pub(crate) fn vjp_by_push_forward_code(b: &mut Builder, fty: &Type) -> CodeId {
    let Type::Fn(params, ret) = fty else {
        unreachable!("vjp of a non-function")
    };
    let a = fluxion_core::verify::differentiated_argument(params);
    let ret = (**ret).clone();
    let ffty = b.m.map_type(fty, fluxion_core::TypeMap::Fwd);
    let (ta, tb) = (b.m.tangent_type(&a), b.m.tangent_type(&ret));
    let result = Type::Tuple(vec![ret.clone(), ta]);
    let n_params = params.len();
    let pf = push_forward(b, fluxion_core::TypeMap::Fwd, fty);
    helper(
        b,
        "vjp_by_push_forward",
        fty,
        vec![fty.clone(), ffty, a.clone(), tb],
        result,
        |b, ps| {
            let site = Site {
                f: var_of(b, ps[1]),
                x: var_of(b, ps[2]),
                a,
                b: ret.clone(),
                n_params,
            };
            let y = call_at(b, ps[0], ps[2], n_params, ret);
            let y = var_of(b, y);
            let xbar = pullback_with(b, &site, Some(pf), Atom::Var(y), ps[3]);
            b.tuple("vjp", vec![Atom::Var(y), xbar])
        },
    )
}

/// `jacobian(f, x)` for `f: [Real] -> [Real]` by forward mode: columns
/// `jvp(f, x, e_j).1`, transposed into rows (row i the gradient of output i).
pub(crate) fn jacobian_by_jvps(b: &mut Builder, s: &Site) -> Atom {
    let m = output_count(b, s);
    jacobian_by_jvps_of(b, s, m)
}

/// [`jacobian_by_jvps`] with the number of outputs `m` known.
pub(crate) fn jacobian_by_jvps_of(b: &mut Builder, s: &Site, m: VarId) -> Atom {
    let (f, x) = (s.f, s.x);
    let reals = Type::array(Type::Real);
    let matrix = Type::array(reals.clone());
    let n = b.prim(Prim::Length, &[Atom::Var(x)], Type::Int);
    let column = b.lambda("jacobian_column", &[f, x], vec![Type::Int], |b, ps| {
        let e = basis_of(b, &Type::array(Type::Real), Atom::Var(x), ps[0]);
        jvp_tangent(b, Atom::Var(f), Atom::Var(x), e, &Type::array(Type::Real))
    });
    let cols = b.prim(Prim::Build, &[n, column], matrix.clone());
    let (cols, n) = (var_of(b, cols), var_of(b, n));
    let row = b.lambda("jacobian_row", &[cols, n], vec![Type::Int], |b, ps| {
        let i = var_of(b, ps[0]);
        let entry = b.lambda("jacobian_entry", &[cols, i], vec![Type::Int], |b, ps| {
            let col = b.prim(
                Prim::Index,
                &[Atom::Var(cols), ps[0]],
                Type::array(Type::Real),
            );
            b.prim(Prim::Index, &[col, Atom::Var(i)], Type::Real)
        });
        b.prim(Prim::Build, &[Atom::Var(n), entry], Type::array(Type::Real))
    });
    b.prim(Prim::Build, &[Atom::Var(m), row], matrix)
}

/// [`vjp_by_forward_code`] for a caller outside a translation: the run time computes a
/// `%chad_vjp` by it where CHAD does not translate the function.
pub fn vjp_by_forward(m: &mut fluxion_core::Module, fty: &Type) -> fluxion_core::CodeId {
    let mut b = Builder::new(m, fluxion_core::Span::default());
    vjp_by_forward_code(&mut b, fty)
}
