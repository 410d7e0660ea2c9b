//! Forward mode by dual numbers ([Delta] §4, Fig. 3 `Dfwd`; [Taylor] §3, the (1,1)
//! case): `Tf(Real) = (Real, Real)` (primal, tangent). A real primitive's tangent is
//! `Σᵢ ∂ᵢ·dxᵢ` from the table of partials (`calculus.rs`); everything else is the
//! structural skeleton (`structural.rs`).

use fluxion_core::{Atom, CodeId, Lit, Module, Prim, Rhs, Type, TypeMap};

use crate::AdError;
use crate::builder::{Builder, real};
use crate::calculus::{self, RealRule};
use crate::helpers::{call, enum_match, helper, variant_fields};
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

    fn constant_parts(&self, r: Atom) -> Option<(Atom, Atom)> {
        Some((r, real(0.0)))
    }

    fn real_function(
        &self,
        b: &mut Builder,
        rule: &RealRule,
        args: &[Atom],
        parts: &mut Parts,
        hint: &str,
    ) -> Atom {
        let (xs, dxs) = parts.split_args(b, args);
        let dxs: Vec<Atom> = dxs
            .into_iter()
            .zip(&xs)
            .map(|(dx, x)| match dx {
                Some(dx) => dx,
                None if b.ty(x) == Type::Int => Atom::Lit(Lit::Unit),
                None => real(0.0),
            })
            .collect();
        let y = b.prim(rule.prim, &xs, Type::Real);
        let dy = calculus::tangent(b, rule, &xs, y, &dxs);
        let pair = b.tuple(hint, vec![y, dy]);
        parts.remember(pair, (y, dy));
        pair
    }

    /// Forward-over-reverse (docs/design-ad.md §5): for `G = Fwd(f)`, `(x, dx) ↦ (f x, f'(x)·dx)`,
    /// the reverse pass of `G` at `(x, dx)` from the cotangent `(ȳ_p, ȳ_t)` is
    /// `(ȳ_p·f' + ȳ_t·f''·dx, ȳ_t·f')`. So `Fwd(%p(f, x, w))` (`%p` = `%delta_vjp` or
    /// `%chad_vjp`) with `w = (w, dw)` — whose value is `(w·f', dw·f' + w·f''·dx)` — is
    /// `%p(G, x, swap(w))`
    /// with the components of each real of the result swapped back: one reverse pass
    /// of the forward-translated function (a Hessian-vector product).
    fn reverse_vjp(&self, b: &mut Builder, p: Prim, fty: &Type, args: &[Atom]) -> Option<Atom> {
        let Type::Fn(params, ret) = fty else {
            return None;
        };
        let a = fluxion_core::verify::differentiated_argument(params);
        let (ta, tb) = (b.m.tangent_type(&a), b.m.tangent_type(ret));
        let w = swap(b, &tb, args[2]);
        let fb = b.m.map_type(ret, TypeMap::Fwd);
        let fta = b.m.map_type(&ta, TypeMap::Fwd);
        let r = b.prim(p, &[args[0], args[1], w], Type::Tuple(vec![fb, fta]));
        let y = b.proj(&r, 0);
        let g = b.proj(&r, 1);
        let g = swap(b, &ta, g);
        Some(b.tuple("vjp", vec![y, g]))
    }
}

/// `v: Fwd(t)` with the primal and tangent of every real swapped.
fn swap(b: &mut Builder, t: &Type, v: Atom) -> Atom {
    match t {
        Type::Real => {
            let (p, d) = (b.proj(&v, 0), b.proj(&v, 1));
            b.tuple("swap", vec![d, p])
        }
        _ if b.m.is_fixed(t, TypeMap::Fwd) => v,
        _ => {
            let ft = b.m.map_type(t, TypeMap::Fwd);
            let code = helper(b, "swap_fwd", t, vec![ft.clone()], ft.clone(), |b, ps| {
                let v = ps[0];
                match t {
                    Type::Tuple(ts) => {
                        let parts = ts
                            .iter()
                            .enumerate()
                            .map(|(i, t)| {
                                let c = b.proj(&v, i);
                                swap(b, t, c)
                            })
                            .collect();
                        b.tuple("swap", parts)
                    }
                    Type::Array(elem) => {
                        let fe = b.m.map_type(elem, TypeMap::Fwd);
                        let f = b.lambda("swap", &[], vec![fe], |b, ps| swap(b, elem, ps[0]));
                        b.prim(Prim::Map, &[f, v], ft.clone())
                    }
                    Type::Enum(e) => {
                        let Type::Enum(fe) = ft.clone() else {
                            unreachable!("translation of an enum")
                        };
                        let tangent_fields = variant_fields(b, *e);
                        enum_match(b, fe, v, ft.clone(), |b, fields, _, tag| {
                            let parts = tangent_fields[tag as usize]
                                .iter()
                                .zip(fields)
                                .map(|(t, f)| swap(b, t, *f))
                                .collect();
                            b.emit("swap", Rhs::Ctor(fe, tag, parts), ft.clone())
                        })
                    }
                    _ => v,
                }
            });
            call(b, code, vec![v])
        }
    }
}
