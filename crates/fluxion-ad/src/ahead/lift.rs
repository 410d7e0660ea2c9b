//! A closure an operator meets, as its translation in a layer, built where the operator
//! is: the translated code with the captures lifted into the layer — reals with zero
//! perturbation (the operator differentiates in its argument only), captured closures
//! translated the same way, recursively — as the interpreter's `lift` does at run time
//! (`fluxion-interp/src/ad.rs`).
//!
//! A capture need not be in scope at the operator: it is read out of the closure
//! (`%capture`), whose binding says its code.

use std::collections::HashSet;

use fluxion_core::{Atom, Binding, CodeId, EnumId, Module, Prim, Rhs, Span, Type, TypeMap, VarId};

use super::resolve::{
    ClosureBindings, Translations, captures_here, direction, holds_operator, is_forward_layer,
    translate, translate_delta_original, translate_delta_resolved, translate_lifted,
    translate_original, translate_original_primal_captures, translate_primal_captures,
    translated_at_run_time,
};
use crate::builder::{Builder, int};
use crate::helpers::{call, enum_match, helper};

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
    /// it, the translated code and the parameter types. Under delta, the forward
    /// layer and Taylor a closure the compiler cannot see goes through `%chad_of(f, d)`
    /// (d = 2, 3, or `CHAD_OF_TAYLOR` + k); CHAD needs it known. CHAD translates no
    /// code that applies an operator; delta translates such code as written (its reverse
    /// operators as tapes of tapes) or else as resolved, where its operators became
    /// calls of pushed-forward code (reverse over forward); failing both, the caller
    /// pushes forward. The forward layers translate the code as written, before the
    /// resolution rewrote its operators.
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
        if layer == TypeMap::Delta || is_forward_layer(layer) {
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
        // The forward and delta layers take data captures unlifted where the code keeps
        // them primal (the operator differentiates in its argument only: `activity.rs`).
        let data: Vec<usize> = (capture_tys.iter().enumerate())
            .filter(|(_, t)| !self.m.can_hold_fn(t) && !self.m.is_fixed(t, layer))
            .map(|(i, _)| i)
            .collect();
        let mut primal = Vec::new();
        let translated = if matches!(layer, TypeMap::Fwd | TypeMap::Taylor(_)) {
            let (t, p) =
                translate_original_primal_captures(self.m, self.table, code, layer, &data)?;
            primal = p;
            t
        } else if matches!(layer, TypeMap::Delta | TypeMap::Chad) {
            if holds_operator(self.m, code, self.rewritten) {
                if layer == TypeMap::Chad {
                    return None;
                }
                translate_delta_original(self.m, self.table, code)
                    .or_else(|| translate_delta_resolved(self.m, code))?
            } else if layer == TypeMap::Delta && depth == 0 {
                // A reverse operator differentiates in its argument only, too: data the
                // code keeps primal is passed as it is, not lifted onto the tape.
                let (t, p) = translate_primal_captures(self.m, code, layer, &data)?;
                primal = p;
                t
            } else {
                translate(self.m, code, layer)?
            }
        } else {
            translate_original(self.m, self.table, code, layer)?
        };
        let here = captures_here(self.m, self.scope, value, code, &captures, lifts, self.span);
        let mut lifted = Vec::new();
        for (i, ((c, here), t)) in captures.iter().zip(here).zip(&capture_tys).enumerate() {
            if primal.contains(&i) {
                lifted.push(here);
                continue;
            }
            let rhs = match (t, c) {
                _ if !self.m.can_hold_fn(t) => self.lift_data(here, t, layer),
                (Type::Fn(..), Atom::Var(cv)) => {
                    self.closure_at(*cv, here, layer, lifts, depth + 1)?.0
                }
                // Functions inside tuples, arrays and enums (closures taken from an array):
                // each chosen at run time among the codes that flow into the capture.
                (_, Atom::Var(cv))
                    if matches!(layer, TypeMap::Delta | TypeMap::Chad)
                        || is_forward_layer(layer) =>
                {
                    for leaf in fn_leaves(self.m, t) {
                        translate_lifted(self.m, self.table, self.rewritten, &leaf, *cv, layer)?;
                    }
                    Rhs::CallDirect(lift_holding_fns_code(self.m, layer, t), vec![here])
                }
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

/// The function types inside `ty` (through tuples, arrays and enum fields).
pub(crate) fn fn_leaves(m: &Module, ty: &Type) -> Vec<Type> {
    fn go(m: &Module, ty: &Type, enums: &mut HashSet<EnumId>, out: &mut Vec<Type>) {
        match ty {
            Type::Fn(..) if !out.contains(ty) => out.push(ty.clone()),
            Type::Tuple(ts) => ts.iter().for_each(|t| go(m, t, enums, out)),
            Type::Array(elem) => go(m, elem, enums, out),
            Type::Enum(e) if enums.insert(*e) => {
                for v in &m.enum_def(*e).variants {
                    v.fields.iter().for_each(|t| go(m, t, enums, out));
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    go(m, ty, &mut HashSet::new(), &mut out);
    out
}

/// A code `A -> L(A)` lifting a capture of type `A` holding functions into `layer` (delta,
/// CHAD or forward): every function as `%chad_of(g, d)` (its code's translation, chosen
/// at run time), every real with zero perturbation (under CHAD, the same value).
fn lift_holding_fns_code(m: &mut Module, layer: TypeMap, ty: &Type) -> CodeId {
    let mut b = Builder::new(m, Span::default());
    walk_code(&mut b, layer, ty)
}

/// The lifting code of one tuple, array or enum type (memoised per type: a recursive
/// enum's calls itself).
fn walk_code(b: &mut Builder, layer: TypeMap, ty: &Type) -> CodeId {
    let lty = b.m.map_type(ty, layer);
    let name = format!("lift_fns_{}", direction(layer));
    helper(b, &name, ty, vec![ty.clone()], lty.clone(), |b, ps| {
        let x = ps[0];
        match ty {
            Type::Tuple(ts) => {
                let parts = ts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let xi = b.proj(&x, i);
                        lift_holding_fns(b, layer, t, xi)
                    })
                    .collect();
                b.tuple("lifted", parts)
            }
            Type::Array(elem) => {
                let elem = (**elem).clone();
                let f = b.lambda("lift_fn_elem", &[], vec![elem.clone()], |b, p| {
                    lift_holding_fns(b, layer, &elem, p[0])
                });
                b.prim(Prim::Map, &[f, x], lty.clone())
            }
            Type::Enum(e) => {
                let Type::Enum(le) = lty else {
                    unreachable!("the translation of an enum")
                };
                enum_match(b, *e, x, lty.clone(), |b, xs, tys, tag| {
                    let parts = tys
                        .iter()
                        .zip(xs)
                        .map(|(t, x)| lift_holding_fns(b, layer, t, *x))
                        .collect();
                    b.emit("lifted", Rhs::Ctor(le, tag, parts), lty.clone())
                })
            }
            _ => unreachable!("walk_code of a function or of a type holding none"),
        }
    })
}

/// `x: A` lifted into `layer`: a function by `%chad_of`, data with zero perturbation,
/// tuples, arrays and enums by their [`walk_code`].
fn lift_holding_fns(b: &mut Builder, layer: TypeMap, ty: &Type, x: Atom) -> Atom {
    let lty = b.m.map_type(ty, layer);
    match ty {
        Type::Fn(..) => b.prim(Prim::ChadOf, &[x, int(direction(layer))], lty),
        _ if !b.m.can_hold_fn(ty) => match layer {
            TypeMap::Delta => b.prim(Prim::DeltaLift, &[x], lty),
            _ if b.m.is_fixed(ty, layer) => x,
            _ => {
                let code = crate::push_forward::lift_code(b.m, layer, ty);
                call(b, code, vec![x])
            }
        },
        _ => {
            let code = walk_code(b, layer, ty);
            call(b, code, vec![x])
        }
    }
}
