//! `build` then index (a fusion rule of ksc, the compiler of [Knossos]; the "`build` then index"): an
//! array made by `build(n, f)` and read once, `ys[i]`, is never made — the read is
//! `f(i)` where `0 <= i < n`. Elsewhere the read fails as it did: on a `build` of a
//! constant function (the array's elements are never read there), then the read.
//!
//! Conditions: `f` is inert (its calls for the other indices are dropped) — reads
//! `a[i]` of its own index in an array known to have length `n` count as inert — and `n` is
//! an array's length (or the loop a shadowed copy), so that `build` itself cannot
//! fail — its failure would have come first, at its own place.

use fluxion_core::{Atom, Binding, Body, Lit, Prim, Rhs, Type};

use super::{Fuser, Pending, Producer};
use crate::instantiate::instantiate;
use crate::lambda::Callee;

impl Fuser<'_, '_> {
    /// The fused form of read `b` (`%index(ys, i)`) of pending producer `pend`, if the
    /// rule applies; the range check is bound in `out`.
    pub(super) fn index_of_build(
        &mut self,
        b: &Binding,
        pend: &Pending,
        i: Atom,
        out: &mut Vec<Option<Binding>>,
    ) -> Option<Rhs> {
        let Producer::Build { n, f } = pend.producer else {
            return None;
        };
        if !self.inert_at_indices(&f, n) || !self.own_checks_pass(pend.producer) {
            return None;
        }
        let span = b.span;
        let ty = self.cx.m.var_ty(b.var).clone();
        // `0 <= i && i < n`
        let nonnegative = self.push(
            out,
            "ok",
            Type::Bool,
            Rhs::Prim(Prim::Ge, vec![i, Atom::Lit(Lit::Int(0))]),
            span,
        );
        let below = self.cx.m.fresh_var("ok", Type::Bool);
        let inside = self.push(
            out,
            "ok",
            Type::Bool,
            Rhs::If(
                nonnegative,
                Box::new(Body {
                    bindings: vec![Binding {
                        var: below,
                        rhs: Rhs::Prim(Prim::Lt, vec![i, n]),
                        span,
                    }],
                    result: Atom::Var(below),
                }),
                Box::new(Body {
                    bindings: Vec::new(),
                    result: Atom::Lit(Lit::Bool(false)),
                }),
            ),
            span,
        );
        // In range: `f(i)`, its body copied in where it is known here.
        let element = match self.callee(&f, span) {
            Callee::Known(code, caps) => {
                let (bindings, result) = instantiate(self.cx.m, code, &caps, &[i], pend.span);
                Body { bindings, result }
            }
            Callee::Var(v) => {
                let r = self.cx.m.fresh_var("elem", ty.clone());
                Body {
                    bindings: vec![Binding {
                        var: r,
                        rhs: Rhs::Call(Atom::Var(v), vec![i]),
                        span: pend.span,
                    }],
                    result: Atom::Var(r),
                }
            }
        };
        // Out of range: the array (of a constant function, where one can be made) and
        // the read, which fails.
        let (producer, constant) = self.never_called(Rhs::Prim(Prim::Build, vec![n, f]), pend.span);
        let array = self
            .cx
            .m
            .fresh_var(super::UNFUSED, Type::Array(Box::new(ty.clone())));
        let read = self.cx.m.fresh_var(self.cx.m.var(b.var).name.clone(), ty);
        let failing = Body {
            bindings: constant
                .map(|(c, _)| c)
                .into_iter()
                .chain([
                    Binding {
                        var: array,
                        rhs: producer,
                        span: pend.span,
                    },
                    Binding {
                        var: read,
                        rhs: Rhs::Prim(Prim::Index, vec![Atom::Var(array), i]),
                        span,
                    },
                ])
                .collect(),
            result: Atom::Var(read),
        };
        Some(Rhs::If(inside, Box::new(element), Box::new(failing)))
    }

    /// Whether `build(n, f)`'s calls cannot fail and have no effect: `f`'s body is inert
    /// but for reads `a[i]` of its parameter `i` in an array it captures (possibly
    /// through a copy) known to have length `n`, which are in range.
    pub(super) fn inert_at_indices(&self, f: &Atom, n: Atom) -> bool {
        if self.inert(f) {
            return true;
        }
        let Atom::Var(v) = f else { return false };
        let Some((code, caps)) = self.closures.get(v) else {
            return false;
        };
        if self.cx.recursive.contains(code)
            || Some(*code) == self.cx.current
            || !super::inert_but(self.cx.m, &self.cx.m.code(*code).body, &|rhs| {
                matches!(rhs, Rhs::Prim(Prim::Index, _))
            })
        {
            return false;
        }
        let code = self.cx.m.code(*code);
        let [i] = code.params[..] else { return false };
        // The array read, as the closure made here passes it (a copied code's capture
        // variables may not be the atoms this closure captures).
        let array = |a: Atom| match super::through_copies(&code.body.bindings, a) {
            Atom::Var(x) => match code.captures.iter().position(|c| *c == x) {
                Some(j) => caps.get(j).copied(),
                None => None,
            },
            Atom::Lit(_) => None,
        };
        let mut ok = true;
        fluxion_core::visit::for_each_binding(&code.body, &mut |c| {
            if let Rhs::Prim(Prim::Index, args) = &c.rhs {
                ok &= args[1] == Atom::Var(i)
                    && array(args[0]).is_some_and(|a| self.cx.lengths.has_length(a, n));
            }
        });
        ok
    }
}
