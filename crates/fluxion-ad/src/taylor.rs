//! Taylor mode ([Taylor] §3.2): the macro `D_(k,R)`, `Real` to `[Real]`, the jet's
//! C = binom(R+k, k) coefficients (divided by α!; docs/language.md §5's `taylor` asks for
//! that, `jet` multiplies back). One direction (`taylor`): a real primitive follows
//! its series rule (`calculus.rs` points into `jets.rs`); k ≥ 2 directions (`jet`): the
//! rules of `mixed_jets.rs` over the same table. Everything else is the structural
//! skeleton (`structural.rs`).

use fluxion_core::{Atom, CodeId, Jet, Module, Prim, Rhs, Type, TypeMap};

use crate::AdError;
use crate::builder::{Builder, int};
use crate::calculus::RealRule;
use crate::structural::{Layer, Parts, translate_code};

/// The jet translation of shape `jet` of `code`, creating it on first request.
pub fn taylor_code(m: &mut Module, code: CodeId, jet: Jet) -> Result<CodeId, AdError> {
    translate_code(m, code, &Taylor(jet), None)
}

/// The layer of jets of one shape.
pub(crate) struct Taylor(pub(crate) Jet);

impl Layer for Taylor {
    fn map(&self) -> TypeMap {
        TypeMap::Taylor(self.0)
    }

    fn constant(&self, b: &mut Builder, r: Atom) -> Atom {
        crate::mixed_jets::constant(b, r, self.0)
    }

    fn real_function(
        &self,
        b: &mut Builder,
        rule: &RealRule,
        args: &[Atom],
        _: &mut Parts,
        _: &str,
    ) -> Atom {
        if self.0.dirs > 1 {
            return crate::mixed_jets::real_function(b, self.0, rule, args);
        }
        let series: Vec<Atom> = args
            .iter()
            .map(|a| match a {
                Atom::Lit(fluxion_core::Lit::Real(_)) => self.constant(b, *a),
                _ => *a,
            })
            .collect();
        (rule.series)(b, &series)
    }

    /// A sum of no elements: the language's zero of `[Real]` is the empty array (its
    /// length unknown), but a jet's zero is k+1 zero coefficients.
    fn special_prim(
        &self,
        b: &mut Builder,
        p: Prim,
        args: &[Atom],
        ty: &Type,
        hint: &str,
    ) -> Option<Atom> {
        if !matches!(p, Prim::Sum | Prim::Sumbuild) || !has_real_leaf(ty) {
            return None;
        }
        let lty = b.m.map_type(ty, self.map());
        let total = b.emit(hint, Rhs::Prim(p, args.to_vec()), lty.clone());
        let count = match p {
            Prim::Sum => b.prim(Prim::Length, &[args[0]], Type::Int),
            _ => args[0],
        };
        let empty = b.cmp(Prim::Eq, count, int(0));
        Some(b.if_(empty, lty, |b| translated_zero(self, b, ty), |_| total))
    }
}

/// The translated zero of a summable type in `layer` (arrays: the empty array, whose
/// length the language's empty sum cannot know either): shared by the layers whose
/// sum of reals is their own (Taylor series, dependency sets).
pub(crate) fn translated_zero(layer: &impl Layer, b: &mut Builder, ty: &Type) -> Atom {
    match ty {
        Type::Real => layer.constant(b, crate::builder::real(0.0)),
        Type::Tuple(ts) => {
            let parts = ts.iter().map(|t| translated_zero(layer, b, t)).collect();
            b.tuple("zero", parts)
        }
        Type::Array(_) => {
            let lty = b.m.map_type(ty, layer.map());
            b.emit("zero", Rhs::Array(vec![]), lty)
        }
        _ => int(0),
    }
}

/// Whether a summable type has a real in it (so that its translated zero is not the
/// interpreter's, nor its sum the structural one).
pub(crate) fn has_real_leaf(ty: &Type) -> bool {
    match ty {
        Type::Real => true,
        Type::Tuple(ts) => ts.iter().any(has_real_leaf),
        Type::Array(t) => has_real_leaf(t),
        _ => false,
    }
}
