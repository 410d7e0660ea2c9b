//! Zero and plus for every tangent type, with a symbolic zero — what the reverse modes
//! add cotangents with.
//!
//! Two levels of zero, neither ever a dense value or a one-hot array:
//! - while code is generated, [`Tan::Zero`] is a zero known statically: `plus` drops
//!   it, and no code is emitted for it until something needs an atom;
//! - at run time, `%tzero()` is the symbolic zero of any tangent type (in the
//!   interpreter, `Value::Zero`): it has no length and no constructor, so the zero of
//!   an array or of an enum costs nothing. `%tplus` treats it as its unit.
//!
//! A tangent that reaches the user (a gradient, a pullback's result) is made dense in
//! the shape of the primal point with `%tdense(x, t)`: arrays get x's lengths, enums
//! x's constructors. Adding tangents of different lengths or constructors is a runtime
//! error, as in the language's `sum` (docs/language.md §4).
//!
//! Reverse CHAD (`chad.rs`) is this module's user.

use fluxion_core::{Atom, Prim, Rhs, Type};

use crate::builder::Builder;

/// A tangent (or cotangent) while code is generated.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tan {
    /// Zero, known statically, of this tangent type.
    Zero(Type),
    /// The value of this atom (which may still be the run-time symbolic zero).
    Of(Atom),
}

impl Tan {
    /// The tangent as an atom: the symbolic zero is emitted as `%tzero()`.
    pub(crate) fn atom(self, b: &mut Builder) -> Atom {
        match self {
            Tan::Zero(ty) => zero(b, ty),
            Tan::Of(a) => a,
        }
    }
}

/// `%tzero()` of tangent type `ty`.
pub(crate) fn zero(b: &mut Builder, ty: Type) -> Atom {
    b.emit("zero", Rhs::Prim(Prim::TanZero, vec![]), ty)
}

/// `u + v`; a statically zero side costs nothing.
pub(crate) fn plus(b: &mut Builder, u: Tan, v: Tan) -> Tan {
    match (u, v) {
        (Tan::Zero(_), t) | (t, Tan::Zero(_)) => t,
        (Tan::Of(u), Tan::Of(v)) => {
            let ty = b.ty(&u);
            Tan::Of(b.prim(Prim::TanPlus, &[u, v], ty))
        }
    }
}

/// The sum of many tangents of type `ty` (zero if there are none).
pub(crate) fn sum(b: &mut Builder, ty: Type, terms: impl IntoIterator<Item = Tan>) -> Tan {
    terms
        .into_iter()
        .fold(Tan::Zero(ty), |acc, t| plus(b, acc, t))
}

/// `t`, dense in the shape of the primal `x` (the form a user sees).
pub(crate) fn dense(b: &mut Builder, x: Atom, t: Tan) -> Atom {
    let tty = match &t {
        Tan::Zero(ty) => ty.clone(),
        Tan::Of(a) => b.ty(a),
    };
    let t = t.atom(b);
    b.prim(Prim::TanDense, &[x, t], tty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::real;
    use fluxion_core::verify::verify_module;
    use fluxion_core::{CodeKind, Module, Span};

    #[test]
    fn static_zero_is_dropped_and_emitted_code_verifies() {
        let mut m = Module::default();
        let pair = Type::Tuple(vec![Type::Real, Type::array(Type::Real)]);
        let mut b = Builder::new(&mut m, Span::default());
        let id = b.reserve_code("laws", CodeKind::TopLevel);
        let x = b.fresh("x", pair.clone());
        let u = b.fresh("u", pair.clone());
        let body = b.block(|b| {
            let s = sum(
                b,
                pair.clone(),
                [Tan::Zero(pair.clone()), Tan::Of(Atom::Var(u))],
            );
            assert_eq!(s, Tan::Of(Atom::Var(u)), "0 + u is u, with no code");
            let z = Tan::Zero(pair.clone()).atom(b);
            let both = plus(b, Tan::Of(z), Tan::Of(Atom::Var(u)));
            let d = dense(b, Atom::Var(x), both);
            let r = dense(b, real(1.0), Tan::Zero(Type::Real));
            b.tuple("out", vec![d, r])
        });
        // zero, plus, dense; zero, dense; the tuple.
        assert_eq!(body.bindings.len(), 6, "{body:?}");
        let ret = b.ty(&body.result);
        b.finish_code(id, vec![], vec![x, u], ret, body);
        verify_module(&m).unwrap_or_else(|e| panic!("{e:?}"));
    }

    #[test]
    fn the_verifier_rejects_non_tangent_types() {
        let mut m = Module::default();
        let mut b = Builder::new(&mut m, Span::default());
        let id = b.reserve_code("bad", CodeKind::TopLevel);
        let body = b.block(|b| zero(b, Type::Int));
        b.finish_code(id, vec![], vec![], Type::Int, body);
        let errors = verify_module(&m).expect_err("Int is not a tangent type");
        assert!(
            errors[0].message.contains("not a tangent type"),
            "{errors:?}"
        );
    }
}
