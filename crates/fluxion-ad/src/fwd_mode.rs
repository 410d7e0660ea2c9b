//! `--ad fwd`: the reverse-mode operators by forward mode, one JVP per input
//! coordinate (the reference every other mode is checked against), assembled with the
//! tangent-space coordinates of `coordinates.rs`:
//!
//! - `grad(f, x)  = tfrom(x, build(tdim(x), |i| jvp(f, x, tbasis(x, i)).1), 0)`
//! - `vjp(f, x)   = (f(x), |w| tfrom(x, build(tdim(x), |i|
//!                    tdot(tcoords(jvp(f, x, tbasis(x, i)).1), tcoords(w))), 0))`
//! - `jacobian(f, x)`: columns `jvp(f, x, e_j).1`, transposed into rows.

use fluxion_core::{Atom, Prim, Type};

use crate::builder::{Builder, int};
use crate::coordinates::{basis_of, coords_of, dim_of, dot, from_coords};
use crate::helpers::var_of;
use crate::mode::{ReverseAlgorithm, Site, call_at, jvp_tangent};

/// The forward-mode algorithm.
pub(crate) struct FwdMode;

impl ReverseAlgorithm for FwdMode {
    fn vjp(&self, b: &mut Builder, s: &Site) -> Atom {
        let (f, x, a_ty, ret) = (s.f, s.x, s.a.clone(), s.b.clone());
        let y = call_at(b, Atom::Var(f), Atom::Var(x), s.n_params, ret.clone());
        let yv = var_of(b, y);
        let tb = b.m.tangent_type(&ret);
        let pullback = b.lambda("pullback", &[f, x, yv], vec![tb], |b, ps| {
            // A cotangent must have the result's shape (constructors, lengths).
            b.prim(Prim::CheckTangent, &[Atom::Var(yv), ps[0]], Type::Unit);
            let w = coords_of(b, &ret, ps[0]);
            let wv = var_of(b, w);
            let n = dim_of(b, &a_ty, Atom::Var(x));
            let column = b.lambda("pullback_coord", &[f, x, wv], vec![Type::Int], |b, ps| {
                let e = basis_of(b, &a_ty, Atom::Var(x), ps[0]);
                let jv = jvp_tangent(b, Atom::Var(f), Atom::Var(x), e, &ret);
                let jc = coords_of(b, &ret, jv);
                dot(b, jc, Atom::Var(wv))
            });
            let coords = b.prim(Prim::Build, &[n, column], Type::array(Type::Real));
            from_coords(b, &a_ty, Atom::Var(x), coords, int(0))
        });
        b.tuple("vjp", vec![Atom::Var(yv), pullback])
    }

    fn grad(&self, b: &mut Builder, s: &Site) -> Atom {
        let (f, x, a_ty) = (s.f, s.x, s.a.clone());
        let n = dim_of(b, &a_ty, Atom::Var(x));
        let a = a_ty.clone();
        let column = b.lambda("grad_coord", &[f, x], vec![Type::Int], |b, ps| {
            let e = basis_of(b, &a, Atom::Var(x), ps[0]);
            jvp_tangent(b, Atom::Var(f), Atom::Var(x), e, &Type::Real)
        });
        let coords = b.prim(Prim::Build, &[n, column], Type::array(Type::Real));
        from_coords(b, &a_ty, Atom::Var(x), coords, int(0))
    }

    /// Rows are gradients of the outputs: columns `jvp(f, x, e_j).1`, transposed.
    fn jacobian(&self, b: &mut Builder, s: &Site) -> Atom {
        let (f, x) = (s.f, s.x);
        let reals = Type::array(Type::Real);
        let matrix = Type::array(reals.clone());
        let n = b.prim(Prim::Length, &[Atom::Var(x)], Type::Int);
        let column = b.lambda("jacobian_column", &[f, x], vec![Type::Int], |b, ps| {
            let e = basis_of(b, &Type::array(Type::Real), Atom::Var(x), ps[0]);
            jvp_tangent(b, Atom::Var(f), Atom::Var(x), e, &Type::array(Type::Real))
        });
        let cols = b.prim(Prim::Build, &[n, column], matrix.clone());
        let y = call_at(b, Atom::Var(f), Atom::Var(x), s.n_params, reals.clone());
        let m = b.prim(Prim::Length, &[y], Type::Int);
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
        b.prim(Prim::Build, &[m, row], matrix)
    }
}
