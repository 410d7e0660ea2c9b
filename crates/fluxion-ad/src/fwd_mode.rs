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
use crate::coordinates::{basis_of, dim_of, from_coords};
use crate::helpers::var_of;
use crate::mode::{ReverseAlgorithm, Site, call_at, jvp_tangent};
use crate::pullback_by_jvps::{jacobian_by_jvps, pullback_at};

/// The forward-mode algorithm.
pub(crate) struct FwdMode;

impl ReverseAlgorithm for FwdMode {
    fn vjp(&self, b: &mut Builder, s: &Site) -> Atom {
        let (f, x, ret) = (s.f, s.x, s.b.clone());
        let y = call_at(b, Atom::Var(f), Atom::Var(x), s.n_params, ret.clone());
        let yv = var_of(b, y);
        let tb = b.m.tangent_type(&ret);
        let pullback = b.lambda("pullback", &[f, x, yv], vec![tb], |b, ps| {
            pullback_at(b, s, Atom::Var(yv), ps[0])
        });
        b.tuple("vjp", vec![Atom::Var(yv), pullback])
    }

    fn grad(&self, b: &mut Builder, s: &Site) -> Atom {
        let (f, x, a_ty) = (s.f, s.x, s.a.clone());
        // `f` runs once at `x` even where `x` has no real coordinate (no JVP runs):
        // its runtime errors are the program's, as in the reverse modes.
        call_at(b, Atom::Var(f), Atom::Var(x), s.n_params, s.b.clone());
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
        jacobian_by_jvps(b, s)
    }
}
