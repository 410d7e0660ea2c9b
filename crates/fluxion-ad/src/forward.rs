//! Forward mode by dual numbers (seed 004 §4, Fig. 3 `Dfwd`; seed 001 §3, the (1,1)
//! case): `Tf(Real) = (Real, Real)` (primal, tangent). A real primitive's tangent is
//! `Σᵢ ∂ᵢ·dxᵢ` from the table of partials (`calculus.rs`); everything else is the
//! structural skeleton (`structural.rs`).

use fluxion_core::{Atom, CodeId, Lit, Module, Type, TypeMap};

use crate::AdError;
use crate::builder::{Builder, real};
use crate::calculus::{self, RealRule};
use crate::structural::{Layer, Parts, translate_code};

/// The forward-mode translation of `code`, creating it on first request.
pub fn forward_code(m: &mut Module, code: CodeId) -> Result<CodeId, AdError> {
    translate_code(m, code, &Forward, None)
}

/// The dual-number layer.
pub(crate) struct Forward;

impl Layer for Forward {
    fn map(&self) -> TypeMap {
        TypeMap::Fwd
    }

    fn constant(&self, b: &mut Builder, r: Atom) -> Atom {
        b.tuple("c", vec![r, real(0.0)])
    }

    fn real_function(
        &self,
        b: &mut Builder,
        rule: &RealRule,
        args: &[Atom],
        parts: &mut Parts,
        hint: &str,
    ) -> Atom {
        let (mut xs, mut dxs) = (Vec::new(), Vec::new());
        for a in args {
            let (x, dx) = if let Atom::Lit(Lit::Real(_)) = a {
                (*a, real(0.0))
            } else if b.ty(a) == Type::Int {
                (*a, Atom::Lit(Lit::Unit))
            } else {
                parts.get_or_split(b, *a, |b, d| (b.proj(&d, 0), b.proj(&d, 1)))
            };
            xs.push(x);
            dxs.push(dx);
        }
        let y = b.prim(rule.prim, &xs, Type::Real);
        let dy = calculus::tangent(b, rule, &xs, y, &dxs);
        let pair = b.tuple(hint, vec![y, dy]);
        parts.remember(pair, (y, dy));
        pair
    }
}
