//! The sum of a loop of one-hot cotangents ([Knossos] §4's rule for a sum of
//! one-hot vectors; the transpose of a loop of reads `xs[i]`): `%lsum(build(n, |i| ..
//! %lonehot(len, i, w)))`, each element one-hot at its own index, is the dense array
//! `build(len, |i| if i < n { .. w } else { 0 })` — one loop writing each entry
//! once, where the lazy sum would make `n` one-hot arrays and add them. Where `n`
//! and `len` are known equal (`Lengths`), the `if` goes.
//!
//! Conditions: `w` is a `Real` (its zero a literal), `len` comes from outside the
//! loop and is an array's length (`build(len, ..)` cannot fail), and so is `n` or the
//! producer is a shadowed copy (its own `build` could not fail either). The
//! function runs on the same indices in the same order, at the sum's place rather
//! than the producer's: it must be inert, or nothing that can fail came between.

use fluxion_core::{Atom, Binding, Body, Lit, Prim, Rhs, Type};

use super::{Fuser, Pending, Producer};
use crate::instantiate::instantiate;
use crate::lambda::Lambda;

impl Fuser<'_, '_> {
    /// The dense form of `%lsum` binding `b` of pending producer `pend`, if the rule
    /// applies; the new lambda's closure is bound in `out`.
    pub(super) fn sum_of_one_hots(
        &mut self,
        b: &Binding,
        pend: &Pending,
        out: &mut Vec<Option<Binding>>,
    ) -> Option<Rhs> {
        let Producer::Build { n, f } = pend.producer else {
            return None;
        };
        let Atom::Var(fv) = f else { return None };
        let (code, caps) = self.closures.get(&fv)?.clone();
        let may_move = self.inert(&f) || !pend.interrupted;
        if !self.cx.may_copy(code, b.span) || !may_move || !self.own_checks_pass(pend.producer) {
            return None;
        }
        let source = self.one_hot_length(code)?;
        if matches!(source, OneHotLength::Outside(n) if !self.cx.lengths.is_a_length(n)) {
            return None;
        }
        // The function's body at a fresh index `j`, ending in `w` instead of the
        // one-hot array.
        let j = self.cx.m.fresh_var("i", Type::Int);
        let (mut bindings, r) = instantiate(self.cx.m, code, &caps, &[Atom::Var(j)], b.span);
        let at = bindings.iter().position(|c| Atom::Var(c.var) == r)?;
        let Rhs::Prim(Prim::LinOneHot, args) = bindings.remove(at).rhs else {
            unreachable!("checked: a one-hot result")
        };
        let (mut len, w) = (args[0], args[2]);
        // The copied body binds the captures it reads to copies: outside it, an atom
        // is what the copies stand for.
        let outer = |bindings: &[Binding], a: Atom| {
            let a = super::through_copies(bindings, a);
            (!bindings.iter().any(|c| Atom::Var(c.var) == a)).then_some(a)
        };
        // `length(a)` of an `a` from outside, computed in the body, moves out before
        // the loop (the body may read it too: the lambda captures it).
        let mut of_array = None;
        match source {
            OneHotLength::Inside => {
                let at = bindings.iter().position(|c| Atom::Var(c.var) == len)?;
                let mut moved = bindings.remove(at);
                let Rhs::Prim(Prim::Length, operand) = &mut moved.rhs else {
                    unreachable!("checked: a length")
                };
                operand[0] = outer(&bindings, operand[0])?;
                of_array = Some(operand[0]);
                out.push(Some(moved));
            }
            OneHotLength::Outside(_) => len = outer(&bindings, len)?,
        }
        let same = match of_array {
            Some(a) => self.cx.lengths.has_length(a, n),
            None => self.cx.lengths.same_count(n, len),
        };
        let mut l = Lambda::new(b.span);
        caps.iter().for_each(|a| l.capture(a));
        l.capture(&len);
        let result = if same {
            l.extend(bindings);
            w
        } else {
            l.capture(&n);
            let inside = l.bind(
                self.cx.m,
                "inside",
                Type::Bool,
                Rhs::Prim(Prim::Lt, vec![Atom::Var(j), n]),
            );
            l.bind(
                self.cx.m,
                "entry",
                Type::Real,
                Rhs::If(
                    inside,
                    Box::new(Body {
                        bindings,
                        result: w,
                    }),
                    Box::new(Body {
                        bindings: Vec::new(),
                        result: Atom::Lit(Lit::Real(0.0)),
                    }),
                ),
            )
        };
        let lambda = l.finish(self.cx.m, "dense", vec![j], result, Type::Real);
        let h = self.bind_closure(out, "dense", lambda, b.span);
        Some(Rhs::Prim(Prim::Build, vec![len, h]))
    }

    /// Where the length `len` comes from if `code`'s body ends in
    /// `%lonehot(len, i, w)` of its parameter `i` and a `Real` `w`: from outside the
    /// body, or from a `length(a)` at its top level of an `a` from outside.
    fn one_hot_length(&self, code: fluxion_core::CodeId) -> Option<OneHotLength> {
        let code = self.cx.m.code(code);
        let [i] = code.params[..] else { return None };
        let Atom::Var(r) = code.body.result else {
            return None;
        };
        let last = code.body.bindings.iter().find(|c| c.var == r)?;
        let Rhs::Prim(Prim::LinOneHot, args) = &last.rhs else {
            return None;
        };
        if args[1] != Atom::Var(i) || self.cx.m.atom_ty(&args[2]) != Type::Real {
            return None;
        }
        let mut bound = std::collections::HashSet::new();
        fluxion_core::visit::for_each_binding(&code.body, &mut |c| {
            bound.insert(c.var);
        });
        let outside = |a: &Atom| !matches!(a, Atom::Var(v) if bound.contains(v));
        if outside(&args[0]) {
            return Some(OneHotLength::Outside(args[0]));
        }
        let top = code
            .body
            .bindings
            .iter()
            .find(|c| Atom::Var(c.var) == args[0])?;
        match &top.rhs {
            Rhs::Prim(Prim::Length, a) if outside(&a[0]) => Some(OneHotLength::Inside),
            _ => None,
        }
    }
}

/// Where a one-hot loop's length comes from.
enum OneHotLength {
    /// This atom, bound outside the loop's function.
    Outside(Atom),
    /// A `length` of an array from outside, computed in the function.
    Inside,
}
