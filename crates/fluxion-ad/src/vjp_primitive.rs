//! The reverse-mode operators of a mode that computes `vjp` by one run-time primitive
//! `%p(f, x, w) = (f(x), wᵀ·J)` (`%delta_vjp` for `--ad delta`, `%chad_vjp` for
//! `--ad chad`): the interpreter translates `f` by the mode's transformation, runs it
//! and its reverse pass once.
//!
//! - `grad(f, x)           = %p(f, x, 1.0).1`
//! - `value_and_grad(f, x) = %p(f, x, 1.0)` (one pass for both)
//! - `vjp(f, x)            = (f(x), |w| %p(f, x, w).1)`: the pullback is an
//!   ordinary closure (it can be stored, called twice, differentiated); each call
//!   runs `f` again, so each costs one forward and one backward pass.
//! - `jacobian(f, x)`: row i is `%p(f, x, eᵢ).1`, one reverse pass per output; under
//!   delta `%delta_jacobian(f, x)`, which runs `f` once on one tape and sweeps it once
//!   per output. A layer translates it as the rows again (`structural.rs`); where the
//!   ahead-of-time resolution cannot run it, it is a call of [`jacobian_by_rows_code`].
//! - `hessian(f, x)`: forward-over-reverse, column j is `jvp(|y| grad(f, y), x, eⱼ).1`;
//!   the forward layer carries `%p` through with a reverse pass of the
//!   forward-translated function (`forward.rs`), so each column costs O(primal).

use fluxion_core::{Atom, Prim, Rhs, Type, VarId};

use crate::builder::{Builder, real};
use crate::helpers::var_of;
use crate::mode::{ReverseAlgorithm, Site, call_at, output_count};
use crate::pullback_by_jvps::{jacobian_by_jvps, jacobian_by_jvps_of};

/// The operators by the run-time vjp primitive `prim`.
pub(crate) struct ByVjpPrimitive {
    pub(crate) prim: Prim,
    /// The run-time Jacobian primitive `jacobian(f, x)` becomes, if the mode has one.
    pub(crate) jacobian: Option<Prim>,
}

impl ByVjpPrimitive {
    /// `%p(f, x, w)`: `(f(x), wᵀ·J)`.
    fn vjp_at(&self, b: &mut Builder, s: &Site, w: Atom) -> Atom {
        let ta = b.m.tangent_type(&s.a);
        b.prim(
            self.prim,
            &[Atom::Var(s.f), Atom::Var(s.x), w],
            Type::Tuple(vec![s.b.clone(), ta]),
        )
    }
}

impl ReverseAlgorithm for ByVjpPrimitive {
    fn vjp(&self, b: &mut Builder, s: &Site) -> Atom {
        let (f, x) = (s.f, s.x);
        let y = call_at(b, Atom::Var(f), Atom::Var(x), s.n_params, s.b.clone());
        let tb = b.m.tangent_type(&s.b);
        let pullback = b.lambda("pullback", &[f, x], vec![tb], |b, ps| {
            let r = self.vjp_at(b, s, ps[0]);
            b.proj(&r, 1)
        });
        b.tuple("vjp", vec![y, pullback])
    }

    fn grad(&self, b: &mut Builder, s: &Site) -> Atom {
        let r = self.vjp_at(b, s, real(1.0));
        b.proj(&r, 1)
    }

    fn value_and_grad(&self, b: &mut Builder, s: &Site) -> Atom {
        self.vjp_at(b, s, real(1.0))
    }

    fn jacobian(&self, b: &mut Builder, s: &Site) -> Atom {
        match self.jacobian {
            Some(p) => b.prim(
                p,
                &[Atom::Var(s.f), Atom::Var(s.x)],
                Type::array(Type::array(Type::Real)),
            ),
            None => {
                // The cheaper direction, as `%delta_jacobian`'s sweeps: with fewer
                // inputs than outputs, a column per input by forward mode.
                let m = output_count(b, s);
                let n = b.prim(Prim::Length, &[Atom::Var(s.x)], Type::Int);
                let fewer = b.cmp(Prim::Lt, n, Atom::Var(m));
                b.if_(
                    fewer,
                    Type::array(Type::array(Type::Real)),
                    |b| jacobian_by_jvps_of(b, s, m),
                    |b| rows_of(b, s, self.prim, m),
                )
            }
        }
    }

    /// Forward-over-reverse: the Jacobian of the gradient by columns of JVPs.
    fn hessian(&self, b: &mut Builder, s: &Site) -> Atom {
        crate::mode::hessian_by(b, s, self, &jacobian_by_jvps)
    }
}

/// `jacobian(f, x)` as `build(m, |i| p(f, x, eᵢ).1)` for `m = length(f(x))`: one run
/// of the vjp primitive `p` per row.
fn jacobian_by_rows(b: &mut Builder, s: &Site, p: Prim) -> Atom {
    let m = output_count(b, s);
    rows_of(b, s, p, m)
}

/// [`jacobian_by_rows`] with the number of outputs `m` known.
fn rows_of(b: &mut Builder, s: &Site, p: Prim, m: VarId) -> Atom {
    let reals = Type::array(Type::Real);
    let row = b.lambda("jacobian_row", &[s.f, s.x, m], vec![Type::Int], |b, ps| {
        let i = var_of(b, ps[0]);
        let unit = b.lambda("unit", &[i], vec![Type::Int], |b, ps| {
            let hit = b.cmp(Prim::Eq, ps[0], Atom::Var(i));
            b.if_(hit, Type::Real, |_| real(1.0), |_| real(0.0))
        });
        let e = b.emit(
            "e",
            Rhs::Prim(Prim::Build, vec![Atom::Var(m), unit]),
            reals.clone(),
        );
        let ta = b.m.tangent_type(&s.a);
        let r = b.prim(
            p,
            &[Atom::Var(s.f), Atom::Var(s.x), e],
            Type::Tuple(vec![s.b.clone(), ta]),
        );
        b.proj(&r, 1)
    });
    b.prim(Prim::Build, &[Atom::Var(m), row], Type::array(reals))
}

/// A helper code `(f, x) -> jacobian(f, x)` for `f: fty = [Real] -> [Real]`, by rows
/// of `%delta_vjp`: what `%delta_jacobian` is where the resolution cannot run `f`'s
/// delta translation itself.
pub(crate) fn jacobian_by_rows_code(b: &mut Builder, fty: &Type) -> fluxion_core::CodeId {
    let reals = Type::array(Type::Real);
    crate::helpers::helper(
        b,
        "jacobian_by_rows",
        fty,
        vec![fty.clone(), reals.clone()],
        Type::array(reals.clone()),
        |b, ps| {
            let site = Site {
                f: var_of(b, ps[0]),
                x: var_of(b, ps[1]),
                a: reals.clone(),
                b: reals.clone(),
                n_params: 1,
            };
            jacobian_by_rows(b, &site, Prim::DeltaVjp)
        },
    )
}
