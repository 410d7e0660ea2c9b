//! A closure an operator meets, as its translation in a layer, built where the operator
//! is: the translated code with the captures lifted into the layer — reals with zero
//! perturbation (the operator differentiates in its argument only), captured closures
//! translated the same way, recursively — as the interpreter's `lift` does at run time
//! (`fluxion-interp/src/ad.rs`).
//!
//! A capture need not be in scope at the operator: it is read out of the closure
//! (`%capture`), whose binding says its code.

use std::collections::HashSet;

use fluxion_core::{Atom, Binding, CodeId, Module, Prim, Rhs, Span, Type, TypeMap, VarId};

use super::resolve::{
    ClosureBindings, Translations, captures_here, direction, holds_operator, translate,
    translate_original, translated_at_run_time,
};

/// What building one operator's translated closure reads.
pub(crate) struct Site<'a, 'm> {
    pub(crate) m: &'m mut Module,
    pub(crate) table: &'a mut Translations,
    pub(crate) closures: &'a ClosureBindings,
    pub(crate) rewritten: &'a HashSet<CodeId>,
    pub(crate) scope: &'a HashSet<VarId>,
    pub(crate) span: Span,
}

impl Site<'_, '_> {
    /// The closure `f` as its translation by `layer` (delta, CHAD, forward or Taylor), the
    /// bindings that lift its captures appended to `lifts`: the right-hand side making
    /// it, the translated code and the parameter types. Under delta and the forward
    /// layer a closure the compiler cannot see goes through `%chad_of(f, 2 or 3)`;
    /// CHAD and Taylor need it known. Delta and CHAD translate no code that applies an operator (the caller computes
    /// such a reverse pass by pushing forward); the forward layers translate the code
    /// as written, before the resolution rewrote its operators.
    pub(crate) fn closure(
        &mut self,
        f: Atom,
        layer: TypeMap,
        lifts: &mut Vec<Binding>,
        depth: usize,
    ) -> Option<(Rhs, CodeId, Vec<Type>)> {
        let Atom::Var(fv) = f else { return None };
        self.closure_at(fv, f, layer, lifts, depth)
    }

    /// [`Site::closure`] for the closure bound to `fv` (its binding says its code and
    /// captures), whose value is `value` here.
    fn closure_at(
        &mut self,
        fv: VarId,
        value: Atom,
        layer: TypeMap,
        lifts: &mut Vec<Binding>,
        depth: usize,
    ) -> Option<(Rhs, CodeId, Vec<Type>)> {
        let before = lifts.len();
        if let Some(known) = self.known(fv, value, layer, lifts, depth) {
            return Some(known);
        }
        lifts.truncate(before);
        if matches!(layer, TypeMap::Delta | TypeMap::Fwd) {
            // A closure of known code that did not translate above is not chosen at run
            // time either (the caller pushes forward instead).
            let known = self.closures.get(&fv).map(|(code, _)| *code);
            return translated_at_run_time(self.m, self.table, self.rewritten, value, layer)
                .filter(|_| {
                    known.is_none_or(|c| self.m.chad_of.contains_key(&(c, direction(layer))))
                });
        }
        None
    }

    /// [`Site::closure_at`] where `fv` is bound to a closure of known code: its
    /// captures are those in scope here, the others read out of `value`.
    fn known(
        &mut self,
        fv: VarId,
        value: Atom,
        layer: TypeMap,
        lifts: &mut Vec<Binding>,
        depth: usize,
    ) -> Option<(Rhs, CodeId, Vec<Type>)> {
        let (code, captures) = self.closures.get(&fv).cloned()?;
        if depth > 8 {
            return None;
        }
        let c = self.m.code(code);
        let params: Vec<Type> = c.params.iter().map(|p| self.m.var_ty(*p).clone()).collect();
        let capture_tys: Vec<Type> = c
            .captures
            .iter()
            .map(|x| self.m.var_ty(*x).clone())
            .collect();
        let translated = if matches!(layer, TypeMap::Delta | TypeMap::Chad) {
            if holds_operator(self.m, code, self.rewritten) {
                return None;
            }
            translate(self.m, code, layer)?
        } else {
            translate_original(self.m, self.table, code, layer)?
        };
        let here = captures_here(self.m, self.scope, value, code, &captures, lifts, self.span);
        let mut lifted = Vec::new();
        for ((c, here), t) in captures.iter().zip(here).zip(&capture_tys) {
            let rhs = match (t, c) {
                _ if !self.m.can_hold_fn(t) => self.lift_data(here, t, layer),
                (Type::Fn(..), Atom::Var(cv)) => {
                    self.closure_at(*cv, here, layer, lifts, depth + 1)?.0
                }
                // A function inside a tuple, array or enum: not walked here.
                _ => return None,
            };
            let lt = self.m.map_type(t, layer);
            lifted.push(self.bind(lifts, "lifted", lt, rhs));
        }
        Some((Rhs::Closure(translated, lifted), translated, params))
    }

    fn bind(&mut self, lifts: &mut Vec<Binding>, name: &str, ty: Type, rhs: Rhs) -> Atom {
        let var = self.m.fresh_var(name, ty);
        lifts.push(Binding {
            var,
            rhs,
            span: self.span,
        });
        Atom::Var(var)
    }

    /// A first-order capture with zero perturbation in `layer`.
    fn lift_data(&mut self, c: Atom, t: &Type, layer: TypeMap) -> Rhs {
        match layer {
            TypeMap::Delta => Rhs::Prim(Prim::DeltaLift, vec![c]),
            _ if self.m.is_fixed(t, layer) => Rhs::Atom(c),
            _ => Rhs::CallDirect(crate::push_forward::lift_code(self.m, layer, t), vec![c]),
        }
    }
}
