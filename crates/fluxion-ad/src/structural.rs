//! The structure-preserving translation skeleton shared by forward mode and Taylor
//! mode ([Delta] §4, Fig. 3 `Dfwd`; [Taylor] §3): one code at a time, every type
//! constructor to itself but `Real` (tuples, arrays, functions, enums — a derived enum
//! with translated fields, `Module::map_type`), every term construct to itself: `let`
//! to `let`, lambda to lambda, call to call, `if`/`match` to themselves, array
//! built-ins to themselves. Only real primitives carry calculus, and that is the
//! [`Layer`]'s business (`forward.rs`, `taylor.rs`).
//!
//! Nesting: an operator `jvp(f, x, dx)` or `taylor(f, x, v, k)` maps to the same
//! operator on the translated values, because `T(L(A)) = L(T(A))` with the same layout
//! for either layer `L`. The inner operator then translates `f'`'s code, whose reals
//! are already translated: two perturbations are two layers of the types, never tags on
//! shared values, so they cannot be confused. Other operators are expanded (see
//! `expand.rs`) before this pass runs.
//!
//! Memoised per code in `Module::derived_codes` under [`translation_key`], so recursive
//! and shared functions are translated once (separate compilation, [Delta] §7.5).

use std::collections::{HashMap, HashSet};

use fluxion_core::{
    Arm, Atom, Binding, Body, CodeId, CodeKind, Lit, Module, Prim, Rhs, Type, TypeMap, VarId,
};

use crate::AdError;
use crate::activity::Input;
use crate::builder::{Builder, real};
use crate::calculus::{self, RealRule};
use crate::helpers::var_of;
use crate::layer::{Captures, empty_check, layer_name, negate_array, primal_of, translation_key};

/// What distinguishes one structure-preserving layer from another: how a real is
/// represented and how real primitives act on that representation.
pub(crate) trait Layer {
    /// The type map (`Real ↦ L(Real)`).
    fn map(&self) -> TypeMap;

    /// The real `r` (a primal atom) as a translated constant.
    fn constant(&self, b: &mut Builder, r: Atom) -> Atom;

    /// The pieces [`Parts`] splits a constant of `r` into, where the layer's real
    /// functions split their arguments so (a zero tangent they then leave out).
    fn constant_parts(&self, _r: Atom) -> Option<(Atom, Atom)> {
        None
    }

    /// `p(args)` for a real primitive; `args` are translated reals, real literals (not
    /// translated: their perturbation is zero) or `Int`s (passed through). `parts` caches the pieces of translated reals per open block.
    fn real_function(
        &self,
        b: &mut Builder,
        rule: &RealRule,
        args: &[Atom],
        parts: &mut Parts,
        hint: &str,
    ) -> Atom;

    /// Whether the layer may leave the perturbation of a real used once, by another real
    /// primitive of its block, pending for that primitive (the delta layer: one tape
    /// entry for a chain of operations, see `delta.rs`).
    fn defers_single_use(&self) -> bool {
        false
    }

    /// A layer-specific translation of a non-real primitive, or `None` for the
    /// structural default (the same primitive on translated arguments).
    fn special_prim(
        &self,
        _b: &mut Builder,
        _p: Prim,
        _args: &[Atom],
        _ty: &Type,
        _hint: &str,
    ) -> Option<Atom> {
        None
    }

    /// The translation of a run-time vjp primitive `%p(f, x, w)` (`%delta_vjp` or
    /// `%chad_vjp`; `f: fty`; `args` translated) when the layer carries a reverse pass
    /// through it, or `None` for the default: the same pullback by forward mode
    /// (`pullback_by_jvps.rs`), translated.
    fn reverse_vjp(&self, _b: &mut Builder, _p: Prim, _fty: &Type, _args: &[Atom]) -> Option<Atom> {
        None
    }

    /// The translation of `%delta_vjp(f, x, w)` (or `%chad_vjp`, the same function)
    /// where `f` is a closure the code being translated builds, when the layer has one
    /// of its own (reverse over reverse by a tape of tapes, `delta_twice.rs`); `None`
    /// for [`Layer::reverse_vjp`]'s.
    fn reverse_vjp_of_closure(
        &self,
        _b: &mut Builder,
        _known: KnownVjp<'_>,
    ) -> Result<Option<Atom>, AdError> {
        Ok(None)
    }

    /// The translation of `%delta_vjp(f, x, w)` (or `%chad_vjp`) where `f` is a
    /// closure the code being translated does not build (`targs` translated, `result`
    /// the binding's translated type), when the layer has one of its own; `None` for
    /// [`Layer::reverse_vjp`]'s.
    fn reverse_vjp_of_unknown(
        &self,
        _b: &mut Builder,
        _f: VarId,
        _targs: &[Atom],
        _result: &Type,
    ) -> Option<Atom> {
        None
    }
}

/// A `%delta_vjp(f, x, w)` or `%chad_vjp(f, x, w)` whose `f` is `Closure(code, caps)`:
/// the original code, and the translated captures, point, cotangent and the binding's
/// translated type.
pub(crate) struct KnownVjp<'a> {
    pub code: CodeId,
    pub caps: &'a [Atom],
    pub x: Atom,
    pub w: Atom,
    pub result: &'a Type,
}

/// The (primal, perturbation) atoms of translated reals, one map per open block (an
/// entry is valid in its block and the blocks nested in it), so that each translated
/// real is taken apart once; and, for a layer that defers perturbations
/// ([`Layer::defers_single_use`]), the pending ones.
#[derive(Default)]
pub(crate) struct Parts {
    blocks: Vec<HashMap<VarId, (Atom, Atom)>>,
    /// Set by the translator around a real primitive whose result's only use is as an
    /// argument of another real primitive of the same block: the layer may leave its
    /// perturbation pending for that primitive to take.
    pub(crate) may_defer: bool,
    /// Pending perturbations by the translated real they belong to (the delta layer's
    /// linear combinations `Σ cᵢ·idᵢ` not yet on the tape).
    pending: HashMap<VarId, Vec<(Atom, Atom)>>,
}

impl Parts {
    /// Leaves `terms` pending for translated real `d` (see [`Parts::may_defer`]).
    pub(crate) fn defer(&mut self, d: Atom, terms: Vec<(Atom, Atom)>) {
        if let Atom::Var(v) = d {
            self.pending.insert(v, terms);
        }
    }

    /// The pending perturbation of translated real `d`, taken by its one use.
    pub(crate) fn take_pending(&mut self, d: Atom) -> Option<Vec<(Atom, Atom)>> {
        let Atom::Var(v) = d else { return None };
        self.pending.remove(&v)
    }

    /// The pieces of `d`, made by `split` the first time they are asked for in scope.
    pub(crate) fn get_or_split(
        &mut self,
        b: &mut Builder,
        d: Atom,
        split: impl FnOnce(&mut Builder, Atom) -> (Atom, Atom),
    ) -> (Atom, Atom) {
        let Atom::Var(v) = d else {
            return split(b, d);
        };
        if let Some(parts) = self.blocks.iter().rev().find_map(|m| m.get(&v)) {
            return *parts;
        }
        let parts = split(b, d);
        self.remember(d, parts);
        parts
    }

    /// The arguments of a real primitive as primals and perturbation parts: a real
    /// literal or an `Int` is its own primal with no perturbation (`None`); a
    /// translated real `(primal, perturbation)` pair is taken apart once per block.
    pub(crate) fn split_args(
        &mut self,
        b: &mut Builder,
        args: &[Atom],
    ) -> (Vec<Atom>, Vec<Option<Atom>>) {
        args.iter()
            .map(|a| {
                if matches!(a, Atom::Lit(Lit::Real(_))) || b.ty(a) == Type::Int {
                    (*a, None)
                } else {
                    let (x, d) = self.get_or_split(b, *a, |b, d| (b.proj(&d, 0), b.proj(&d, 1)));
                    (x, Some(d))
                }
            })
            .unzip()
    }

    /// Records the pieces of a translated real made here.
    pub(crate) fn remember(&mut self, d: Atom, parts: (Atom, Atom)) {
        if let (Atom::Var(v), Some(top)) = (d, self.blocks.last_mut()) {
            top.insert(v, parts);
        }
    }
}

/// Translates `code` by `layer`: on its own (`captures` = `None`: fresh captured
/// variables, memoised), or inline in an enclosing translation whose variables it
/// captures (not memoised: it belongs to that translation).
pub(crate) fn translate_code<L: Layer>(
    m: &mut Module,
    code: CodeId,
    layer: &L,
    captures: Captures,
) -> Result<CodeId, AdError> {
    translate_code_with(m, code, layer, captures, &PrimalInputs::default())
}

/// The inputs of a code its translation takes as primals, by position: unvaried data
/// whose every use there is served on primals (`activity::stays_primal`). The
/// translation is specialised to them — memoised under its own key — and keeps their
/// types.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PrimalInputs {
    pub(crate) captures: Vec<usize>,
    pub(crate) params: Vec<usize>,
}

impl PrimalInputs {
    fn holds(&self, input: Input) -> bool {
        match input {
            Input::Capture(i) => self.captures.contains(&i),
            Input::Param(i) => self.params.contains(&i),
        }
    }

    /// The suffix of the translated code's name and memo key (`_on_c0_p2`: capture 0
    /// and parameter 2 taken as primals; nothing for a translation of every input): a
    /// printed program names each specialisation apart.
    fn suffix(&self) -> String {
        if self.captures.is_empty() && self.params.is_empty() {
            return String::new();
        }
        let part = |tag: &str, xs: &[usize]| -> String {
            xs.iter().map(|i| format!("_{tag}{i}")).collect()
        };
        format!(
            "_on{}{}",
            part("c", &self.captures),
            part("p", &self.params)
        )
    }
}

/// [`translate_code`] with the inputs `primal` passed as primals.
pub(crate) fn translate_code_with<L: Layer>(
    m: &mut Module,
    code: CodeId,
    layer: &L,
    captures: Captures,
    primal: &PrimalInputs,
) -> Result<CodeId, AdError> {
    let key = translation_key(layer.map(), code) + &primal.suffix();
    if captures.is_none()
        && let Some(id) = m.derived_codes.get(&key)
    {
        return Ok(*id);
    }
    let original = m.code(code).clone();
    // The body as translated: extrema of maps rewritten so that activity analysis
    // finds the map primal-only (`activity.rs`); the original code stays as it is.
    let mut source = original.body.clone();
    crate::activity::rewrite_extrema(m, &mut source);
    // A closure made with another count of captures than its code has is a bug
    // upstream; an error here, not an index out of bounds below.
    if let Some(cs) = &captures
        && cs.len() != original.captures.len()
    {
        return Err(AdError::at(
            original.span,
            format!(
                "internal error: `{}` translated inline with {} captures for its {}",
                original.name,
                cs.len(),
                original.captures.len()
            ),
        ));
    }
    let seeds: HashSet<VarId> = (primal.captures.iter())
        .filter_map(|i| original.captures.get(*i).copied())
        .chain((primal.params.iter()).filter_map(|i| original.params.get(*i).copied()))
        .collect();
    let mut primal_only = crate::activity::primal_only(m, &source, layer.map(), &seeds);
    primal_only.extend(seeds);
    let loop_params = loop_params(&source, &primal_only);
    let mut b = Builder::new(m, original.span);
    let id = b.reserve_code(
        &format!(
            "{}_{}{}",
            original.name,
            layer_name(layer.map()),
            primal.suffix()
        ),
        original.kind,
    );
    if captures.is_none() {
        b.m.derived_codes.insert(key, id);
    }
    b.m.translated_from.insert(id, code);
    if !primal.captures.is_empty() {
        b.m.primal_captures.insert(id, primal.captures.clone());
    }
    let ret = b.m.map_type(&original.ret, layer.map());
    // Known before the body exists: recursive calls read it.
    b.m.codes[id.0 as usize].ret = ret.clone();
    let mut t = Translate {
        env: HashMap::new(),
        closures: HashMap::new(),
        layer,
        parts: Parts::default(),
        deferrable: if layer.defers_single_use() {
            single_use_reals(b.m, &source)
        } else {
            HashSet::new()
        },
        primal_only,
        loop_params,
        primals: Vec::new(),
        lifted: Vec::new(),
    };
    let mut new_captures = Vec::new();
    for (i, c) in original.captures.iter().enumerate() {
        let v = match &captures {
            Some(cs) => cs[i],
            None => t.fresh_input(&mut b, *c, primal.holds(Input::Capture(i))),
        };
        t.env.insert(*c, Atom::Var(v));
        new_captures.push(v);
    }
    let mut params = Vec::new();
    for (i, p) in original.params.iter().enumerate() {
        let v = t.fresh_input(&mut b, *p, primal.holds(Input::Param(i)));
        t.env.insert(*p, Atom::Var(v));
        params.push(v);
    }
    let mut body = t.nested(&mut b, &source)?;
    fluxion_opt::eliminate_dead_bindings(b.m, &mut body);
    b.finish_code(id, new_captures, params, ret, body);
    Ok(id)
}

struct Translate<'l, L: Layer> {
    /// Original variable → its translation.
    env: HashMap<VarId, Atom>,
    /// Original variable → the closure (code, original captures) bound to it here.
    closures: HashMap<VarId, (CodeId, Vec<Atom>)>,
    layer: &'l L,
    parts: Parts,
    /// Original real variables whose one use is as an argument of a real primitive of
    /// their own block (see [`single_use_reals`]).
    deferrable: HashSet<VarId>,
    /// Original variables computed on primals (`activity.rs`): their `env` entry is a
    /// primal value, not a translated one.
    primal_only: HashSet<VarId>,
    /// Lambdas a `map` or `map2` applies to primal-only arrays → the parameters they
    /// take as primals (see [`loop_params`]).
    loop_params: HashMap<VarId, Vec<usize>>,
    /// The primals taken of translated variables, one map per open block.
    primals: Vec<HashMap<VarId, Atom>>,
    /// Primal-only data lifted where a translated binding reads it, one map per open
    /// block (an input passed as a primal whose use the caller's analysis did not
    /// foresee: never the case where both analyses agree, as they should).
    lifted: Vec<HashMap<VarId, Atom>>,
}

impl<L: Layer> Translate<'_, L> {
    /// A fresh variable standing for original variable `v`, of the translated type.
    fn fresh_like(&self, b: &mut Builder, v: VarId) -> VarId {
        let ty = b.m.map_type(&b.m.var_ty(v).clone(), self.layer.map());
        let hint = b.m.var(v).name.clone();
        b.fresh(&hint, ty)
    }

    /// A fresh variable for input `v`: of its own type where it is passed as a primal.
    fn fresh_input(&self, b: &mut Builder, v: VarId, primal: bool) -> VarId {
        if !primal {
            return self.fresh_like(b, v);
        }
        let ty = b.m.var_ty(v).clone();
        let hint = b.m.var(v).name.clone();
        b.fresh(&hint, ty)
    }

    /// Emits the translation of `body`'s bindings into the current block; returns the
    /// translated result.
    fn body_into(&mut self, b: &mut Builder, body: &Body) -> Result<Atom, AdError> {
        for binding in &body.bindings {
            b.span = binding.span;
            let a = if self.primal_only.contains(&binding.var) {
                self.on_primals(b, binding)
            } else {
                self.rhs(b, &binding.rhs, binding.var)?
            };
            self.env.insert(binding.var, a);
        }
        Ok(self.atom(b, &body.result))
    }

    fn nested(&mut self, b: &mut Builder, body: &Body) -> Result<Body, AdError> {
        self.parts.blocks.push(HashMap::new());
        self.primals.push(HashMap::new());
        self.lifted.push(HashMap::new());
        let out = b.try_block(|b| self.body_into(b, body));
        self.lifted.pop();
        self.primals.pop();
        self.parts.blocks.pop();
        out
    }

    /// A primal-only binding: a copy of the original, reading its free variables'
    /// primals.
    fn on_primals(&mut self, b: &mut Builder, binding: &Binding) -> Atom {
        let mut renamed = HashMap::new();
        for x in crate::activity::free_vars_of(&binding.rhs) {
            let a = self.primal_value(b, x);
            renamed.insert(x, var_of(b, a));
        }
        let rhs = fluxion_opt::copy_rhs(b.m, &binding.rhs, &renamed);
        let ty = b.m.var_ty(binding.var).clone();
        let hint = b.m.var(binding.var).name.clone();
        b.emit(&hint, rhs, ty)
    }

    /// The primal value of original variable `x`: its own where it is primal-only or
    /// its type has no perturbation, else the primal of its translation (taken once
    /// per block).
    fn primal_value(&mut self, b: &mut Builder, x: VarId) -> Atom {
        let a = self.env[&x];
        let ty = b.m.var_ty(x).clone();
        if self.primal_only.contains(&x) || b.m.is_fixed(&ty, self.layer.map()) {
            return a;
        }
        if let Some(p) = self.primals.iter().rev().find_map(|m| m.get(&x)) {
            return *p;
        }
        let p = match &ty {
            Type::Fn(params, ret) => match self.remade(b, x) {
                Some(p) => p,
                None => primal_function(b, self.layer, params, ret, a),
            },
            _ => primal_of(b, self.layer.map(), &ty, a),
        };
        if let Some(top) = self.primals.last_mut() {
            top.insert(x, p);
        }
        p
    }

    /// Closure `x`, made in this code, made again on its captures' primals: the
    /// original code copied (its captures renamed), where every capture has a primal
    /// this way or by `primal_of` and the code runs no operator; else `None`.
    fn remade(&mut self, b: &mut Builder, x: VarId) -> Option<Atom> {
        let (code, captures) = self.closures.get(&x).cloned()?;
        let map = self.layer.map();
        if !crate::activity::code_operator_free(b.m, code, &mut HashMap::new()) {
            return None;
        }
        let mut renamed = HashMap::new();
        for c in &captures {
            let Atom::Var(v) = c else { continue };
            let ty = b.m.var_ty(*v);
            let has_primal =
                self.primal_only.contains(v) || b.m.is_fixed(ty, map) || !b.m.can_hold_fn(ty);
            let p = if has_primal {
                self.primal_value(b, *v)
            } else {
                self.remade(b, *v)?
            };
            renamed.insert(*v, var_of(b, p));
        }
        let rhs = fluxion_opt::copy_rhs(b.m, &Rhs::Closure(code, captures), &renamed);
        let ty = b.m.var_ty(x).clone();
        Some(b.emit("remade", rhs, ty))
    }

    /// The primal value of an original atom (a literal is its own).
    fn primal_atom(&mut self, b: &mut Builder, a: &Atom) -> Atom {
        match a {
            Atom::Var(v) => self.primal_value(b, *v),
            Atom::Lit(_) => *a,
        }
    }

    /// The translation of an atom; a real literal, or a primal-only real (unvaried,
    /// `activity.rs`), becomes a constant. (A primal-only array is its primal: only a
    /// lambda that indexes it captures it so.)
    fn atom(&mut self, b: &mut Builder, a: &Atom) -> Atom {
        match a {
            Atom::Var(v) if self.primal_only.contains(v) && *b.m.var_ty(*v) == Type::Real => {
                let r = self.env[v];
                let c = self.layer.constant(b, r);
                if let Some(parts) = self.layer.constant_parts(r) {
                    self.parts.remember(c, parts);
                }
                c
            }
            Atom::Var(v) if self.primal_only.contains(v) && !b.m.can_hold_fn(b.m.var_ty(*v)) => {
                if let Some(l) = self.lifted.iter().rev().find_map(|m| m.get(v)) {
                    return *l;
                }
                let ty = b.m.var_ty(*v).clone();
                let l = lift_value(b, self.layer, &ty, self.env[v]);
                if let Some(top) = self.lifted.last_mut() {
                    top.insert(*v, l);
                }
                l
            }
            Atom::Var(v) => self.env[v],
            Atom::Lit(Lit::Real(r)) => self.layer.constant(b, real(*r)),
            Atom::Lit(l) => Atom::Lit(*l),
        }
    }

    fn atoms(&mut self, b: &mut Builder, atoms: &[Atom]) -> Vec<Atom> {
        atoms.iter().map(|a| self.atom(b, a)).collect()
    }

    /// The positions of `args` holding primal-only data other than reals (a real is
    /// lifted where it is read): what a call or closure passes as primals.
    fn primal_positions(&self, b: &Builder, args: &[Atom]) -> Vec<usize> {
        (args.iter().enumerate())
            .filter(|(_, a)| {
                matches!(a, Atom::Var(v) if self.primal_only.contains(v)
                    && *b.m.var_ty(*v) != Type::Real)
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// `args` translated, those at `primal` positions as their primals.
    fn inputs(&mut self, b: &mut Builder, args: &[Atom], primal: &[usize]) -> Vec<Atom> {
        (args.iter().enumerate())
            .map(|(i, a)| match a {
                Atom::Var(v) if primal.contains(&i) => self.env[v],
                _ => self.atom(b, a),
            })
            .collect()
    }

    fn rhs(&mut self, b: &mut Builder, rhs: &Rhs, var: VarId) -> Result<Atom, AdError> {
        // The binding's own span: translating an `if`'s or a `match`'s arms moves the
        // builder's to their bindings, and a failing match is reported at its own.
        let span = b.span;
        let ty = b.m.var_ty(var).clone();
        let hint = b.m.var(var).name.clone();
        let lty = b.m.map_type(&ty, self.layer.map());
        let new_rhs = match rhs {
            Rhs::Prim(p, args) => {
                self.parts.may_defer = self.deferrable.contains(&var);
                let out = self.prim(b, *p, args, &ty, &hint);
                self.parts.may_defer = false;
                return out;
            }
            Rhs::Atom(a) => {
                // A copy of a closure is that closure (the optimiser leaves copies).
                if let Atom::Var(x) = a
                    && let Some(c) = self.closures.get(x).cloned()
                {
                    self.closures.insert(var, c);
                }
                Rhs::Atom(self.atom(b, a))
            }
            Rhs::Tuple(args) => Rhs::Tuple(self.atoms(b, args)),
            Rhs::Proj(a, i) => Rhs::Proj(self.atom(b, a), *i),
            Rhs::Array(args) => Rhs::Array(self.atoms(b, args)),
            Rhs::Ctor(_, tag, args) => {
                let Type::Enum(translated) = lty else {
                    unreachable!("constructor of a non-enum type")
                };
                Rhs::Ctor(translated, *tag, self.atoms(b, args))
            }
            Rhs::Call(f, args) => {
                // A lambda made for this call alone may take primal-only arguments as
                // primals (`loop_params`).
                let primal = match f {
                    Atom::Var(g) => self.loop_params.get(g).cloned().unwrap_or_default(),
                    _ => Vec::new(),
                };
                Rhs::Call(self.atom(b, f), self.inputs(b, args, &primal))
            }
            Rhs::CallDirect(c, args) => {
                // Unvaried data is passed as a primal (`activity::stays_primal`).
                let primal = PrimalInputs {
                    params: self.primal_positions(b, args),
                    captures: Vec::new(),
                };
                let c = translate_code_with(b.m, *c, self.layer, None, &primal)?;
                Rhs::CallDirect(c, self.inputs(b, args, &primal.params))
            }
            Rhs::Closure(c, args) => {
                self.closures.insert(var, (*c, args.clone()));
                // Unvaried data is captured as a primal (`activity::stays_primal`).
                let primal = PrimalInputs {
                    captures: self.primal_positions(b, args),
                    params: self.loop_params.get(&var).cloned().unwrap_or_default(),
                };
                // The translated lambda captures the translations of its captures, under
                // their own variables (a literal is bound to one first).
                let vars: Vec<VarId> = (self.inputs(b, args, &primal.captures).into_iter())
                    .map(|t| var_of(b, t))
                    .collect();
                let vars = crate::helpers::distinct_vars(b, vars);
                let args_out = vars.iter().map(|v| Atom::Var(*v)).collect();
                // A top-level function used as a value is translated on its own, once.
                let inline = (b.m.code(*c).kind == CodeKind::Lambda).then_some(vars);
                let code = translate_code_with(b.m, *c, self.layer, inline, &primal)?;
                // A loop's lambda taking parameters as primals (`loop_params`, an inline
                // translation: finished here) has its code's type; any other the
                // translated type (a function used as a value inside its own
                // translation is not finished yet).
                let fty = if primal.params.is_empty() {
                    lty
                } else {
                    b.m.code_ty(code)
                };
                b.span = span;
                return Ok(b.emit(&hint, Rhs::Closure(code, args_out), fty));
            }
            Rhs::If(c, t, e) => {
                let c = self.atom(b, c);
                Rhs::If(
                    c,
                    Box::new(self.nested(b, t)?),
                    Box::new(self.nested(b, e)?),
                )
            }
            Rhs::Match(s, arms, default) => {
                let s = self.atom(b, s);
                let mut new_arms = Vec::new();
                for arm in arms {
                    let mut fields = Vec::new();
                    for f in &arm.fields {
                        let v = self.fresh_like(b, *f);
                        self.env.insert(*f, Atom::Var(v));
                        fields.push(v);
                    }
                    let body = self.nested(b, &arm.body)?;
                    new_arms.push(Arm {
                        tag: arm.tag,
                        fields,
                        body,
                    });
                }
                let default = match default {
                    Some(d) => Some(Box::new(self.nested(b, d)?)),
                    None => None,
                };
                Rhs::Match(s, new_arms, default)
            }
        };
        b.span = span;
        Ok(b.emit(&hint, new_rhs, lty))
    }

    fn prim(
        &mut self,
        b: &mut Builder,
        p: Prim,
        args: &[Atom],
        ty: &Type,
        hint: &str,
    ) -> Result<Atom, AdError> {
        use Prim::*;
        let map = self.layer.map();
        let lty = b.m.map_type(ty, map);
        let arg_ty = args.last().map(|a| b.m.atom_ty(a));
        let on_reals = arg_ty == Some(Type::Real);
        Ok(match p {
            // Real primitives: the layer's calculus.
            _ if is_real_function_on_reals(b.m, p, args, ty) => {
                let rule = calculus::rule(p).expect("a real function has a rule");
                // Real literals stay literals: a layer knows their perturbation is 0.
                let args: Vec<Atom> = args
                    .iter()
                    .map(|a| match a {
                        Atom::Lit(Lit::Real(_)) => *a,
                        _ => self.atom(b, a),
                    })
                    .collect();
                self.layer
                    .real_function(b, rule, &args, &mut self.parts, hint)
            }
            // Comparisons of reals compare primals.
            Lt | Le | Gt | Ge if on_reals => {
                let x = self.primal_atom(b, &args[0]);
                let y = self.primal_atom(b, &args[1]);
                b.prim(p, &[x, y], Type::Bool)
            }
            Eq | Ne => {
                let x = self.primal_atom(b, &args[0]);
                let y = self.primal_atom(b, &args[1]);
                b.prim(p, &[x, y], Type::Bool)
            }
            ToReal => {
                let x = self.atom(b, &args[0]);
                let r = b.prim(ToReal, &[x], Type::Real);
                self.layer.constant(b, r)
            }
            ToInt => {
                let x = self.primal_atom(b, &args[0]);
                b.prim(ToInt, &[x], Type::Int)
            }
            Maximum | Minimum | Argmax if arg_ty == Some(Type::array(Type::Real)) => {
                // The element at the first index attaining the extreme primal.
                let primals = self.primal_atom(b, &args[0]);
                if p != Argmax {
                    empty_check(b, p, primals);
                }
                let key = if p == Minimum {
                    negate_array(b, primals)
                } else {
                    primals
                };
                let i = b.prim(Argmax, &[key], Type::Int);
                if p == Argmax {
                    i
                } else {
                    let a = self.atom(b, &args[0]);
                    b.emit(hint, Rhs::Prim(Index, vec![a, i]), lty)
                }
            }
            Grad | ValueAndGrad | Vjp | Diff | Jacobian | Hessian | SparseJacobian => {
                return Err(AdError::new(format!(
                    "internal error: `{}` reached a translation unexpanded",
                    p.name()
                )));
            }
            // A push forward's check of its direction (`push_forward.rs`) in derivative
            // code translated again (reverse over forward:
            // `ahead::translate_delta_resolved`): on primals. (Its `%tdense` is the
            // delta layer's own rule.)
            CheckDirection => {
                let (tx, tv) = (b.m.atom_ty(&args[0]), b.m.atom_ty(&args[1]));
                let (x, v) = (self.atom(b, &args[0]), self.atom(b, &args[1]));
                let x = primal_of(b, map, &tx, x);
                let v = primal_of(b, map, &tv, v);
                b.prim(CheckDirection, &[x, v], Type::Unit)
            }
            // Delta-translated code translated again by the delta layer (reverse over
            // reverse, `delta_twice.rs`): its tape entries go on a second tape.
            DeltaPush | DeltaSum | DeltaSumbuild => {
                let targs = self.atoms(b, args);
                match self.layer.special_prim(b, p, &targs, ty, hint) {
                    Some(a) => a,
                    None => {
                        return Err(AdError::new(format!(
                            "internal error: `{}` reached a translation",
                            p.name()
                        )));
                    }
                }
            }
            // Only delta- and CHAD-translated code has these, and no layer translates
            // them.
            DeltaJvp | DeltaTaylor | LinProj | LinField | LinOneHot | LinEmbed | LinSlice
            | LinSum | LinIndex | DeltaLift | ClosureCapture | DeltaOpen | DeltaInputs
            | DeltaPrimal | DeltaGrad | DeltaRows | Delta2Push | Delta2Sum | Delta2Lift
            | Delta2Open | Delta2Inputs | Delta2Primal | Delta2Grad => {
                return Err(AdError::new(format!(
                    "internal error: `{}` reached a translation",
                    p.name()
                )));
            }
            // Code with a tape of tapes of a closure chosen at run time is not
            // translated again (a third tape).
            ChadOf if fluxion_core::prim::is_chad_of_twice(p, args) => {
                return Err(AdError::new(
                    "internal error: a tape of tapes reached a translation".to_string(),
                ));
            }
            // The pattern of a function inside derivative code: not translated yet (the
            // closure of the captures' primals would do, but a lambda's captures are its
            // own variables, which the translated code does not bind).
            Sparsity => {
                return Err(AdError::new(
                    "`sparsity` or `sparse_jacobian` inside a function being differentiated is \
                     not supported yet (even in a branch that does not run)"
                        .to_string(),
                ));
            }
            // One tape swept per row cannot be carried through a layer: the rows of
            // `%delta_vjp` each are (`vjp_primitive.rs`).
            DeltaJacobian => {
                let targs = self.atoms(b, args);
                let f = self.reversed_fn(b, p, &args[0])?;
                return self.jacobian_rows(b, f, &targs, &lty, hint);
            }
            DeltaVjp | ChadVjp => {
                let targs = self.atoms(b, args);
                let f = self.reversed_fn(b, p, &args[0])?;
                return reverse_vjp(self.layer, b, p, f, &targs, &lty, hint);
            }
            // A loop over primal-only arrays: its lambda takes their elements as primals
            // (`loop_params`); a length is taken of the primal.
            Map | Map2 | Length => {
                let primal = match (p, args[0]) {
                    (Length, _) => self.primal_positions(b, args),
                    (_, Atom::Var(f)) => (self.loop_params.get(&f).into_iter().flatten())
                        .map(|i| i + 1)
                        .collect(),
                    _ => Vec::new(),
                };
                let args = self.inputs(b, args, &primal);
                b.emit(hint, Rhs::Prim(p, args), lty)
            }
            _ => {
                let args = self.atoms(b, args);
                match self.layer.special_prim(b, p, &args, ty, hint) {
                    Some(a) => a,
                    // Everything else — integer arithmetic, array built-ins, `jvp`,
                    // `taylor` — is the same primitive on translated arguments.
                    None => b.emit(hint, Rhs::Prim(p, args), lty),
                }
            }
        })
    }
}

/// The function of a reverse operator: its variable, and where the code around builds
/// it, its code and translated captures.
type ReversedFn = (VarId, Option<(CodeId, Vec<Atom>)>);

impl<L: Layer> Translate<'_, L> {
    /// The function operand `a` of reverse operator `p` (a variable: no literal is a
    /// function), with its closure where this code builds it.
    fn reversed_fn(&mut self, b: &mut Builder, p: Prim, a: &Atom) -> Result<ReversedFn, AdError> {
        let Atom::Var(f) = *a else {
            return Err(AdError::new(format!(
                "internal error: `{}` of a literal",
                p.name()
            )));
        };
        let known = self.closures.get(&f).cloned();
        Ok((f, known.map(|(code, caps)| (code, self.atoms(b, &caps)))))
    }

    /// `%delta_jacobian(f, x)` translated (its one recording cannot be carried through
    /// a layer): the rows of `%delta_vjp` it stands for, `build(m, |i| %delta_vjp(f, x,
    /// eᵢ).1)` for `m = length(f(x))`, each row's reverse pass translated as a
    /// `%delta_vjp` of `f` is — so a known closure or one `Module::twice` allows is a
    /// tape of tapes under delta, as the rows written out were.
    fn jacobian_rows(
        &mut self,
        b: &mut Builder,
        f: ReversedFn,
        targs: &[Atom],
        lty: &Type,
        hint: &str,
    ) -> Result<Atom, AdError> {
        let map = self.layer.map();
        let reals = Type::array(Type::Real);
        let ty_y = b.m.map_type(&reals, map);
        let y = b.emit("value", Rhs::Call(targs[0], vec![targs[1]]), ty_y);
        let m = b.prim(Prim::Length, &[y], Type::Int);
        let m = var_of(b, m);
        let pair_ty =
            b.m.map_type(&Type::Tuple(vec![reals.clone(), reals.clone()]), map);
        let layer = self.layer;
        let mut failed = None;
        let row = b.closure("jacobian_row", vec![Type::Int], |b, ps| {
            let i = var_of(b, ps[0]);
            let unit = b.closure("unit", vec![Type::Int], |b, qs| {
                let hit = b.cmp(Prim::Eq, qs[0], Atom::Var(i));
                b.if_(
                    hit,
                    Type::Real,
                    |_| crate::builder::real(1.0),
                    |_| crate::builder::real(0.0),
                )
            });
            let e = b.emit(
                "e",
                Rhs::Prim(Prim::Build, vec![Atom::Var(m), unit]),
                reals.clone(),
            );
            let te = lift_value(b, layer, &reals, e);
            let vjp_args = [targs[0], targs[1], te];
            let p = Prim::DeltaVjp;
            match reverse_vjp(layer, b, p, f, &vjp_args, &pair_ty, "vjp") {
                Ok(r) => b.proj(&r, 1),
                Err(e) => {
                    failed = Some(e);
                    Atom::Lit(fluxion_core::Lit::Unit)
                }
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(b.emit(
            hint,
            Rhs::Prim(Prim::Build, vec![Atom::Var(m), row]),
            lty.clone(),
        ))
    }
}

/// A reverse operator `p(f, x, w)` (`%delta_vjp`, `%chad_vjp`) on translated arguments
/// `targs`: by the layer's rule for `f`'s closure where the code around builds it
/// (`known`: its code and translated captures), for one chosen at run time where the
/// layer has one, else the layer's own, else forward mode's pullback translated.
fn reverse_vjp<L: Layer>(
    layer: &L,
    b: &mut Builder,
    p: Prim,
    (f, known): ReversedFn,
    targs: &[Atom],
    lty: &Type,
    hint: &str,
) -> Result<Atom, AdError> {
    let fty = b.m.var_ty(f).clone();
    if let Some((code, caps)) = &known {
        let known = KnownVjp {
            code: *code,
            caps,
            x: targs[1],
            w: targs[2],
            result: lty,
        };
        if let Some(a) = layer.reverse_vjp_of_closure(b, known)? {
            return Ok(a);
        }
    } else if let Some(a) = layer.reverse_vjp_of_unknown(b, f, targs, lty) {
        return Ok(a);
    }
    Ok(match layer.reverse_vjp(b, p, &fty, targs) {
        Some(a) => a,
        None => {
            let h = crate::pullback_by_jvps::vjp_by_forward_code(b, &fty);
            let h = translate_code(b.m, h, layer, None)?;
            b.emit(hint, Rhs::CallDirect(h, targs.to_vec()), lty.clone())
        }
    })
}

/// A primal function of translated closure `f` (its parameters' and result's types
/// `params`, `ret` untranslated): `|xs| primal(f(lift(xs)))`, the arguments lifted with
/// zero perturbation ([`lift_value`]). What a binding computed on primals calls where
/// the original closure is a parameter or capture, not made in the code (`activity.rs`
/// checks the types with [`crate::activity::wraps`]).
fn primal_function<L: Layer>(
    b: &mut Builder,
    layer: &L,
    params: &[Type],
    ret: &Type,
    f: Atom,
) -> Atom {
    let fv = var_of(b, f);
    b.lambda("primal_call", &[fv], params.to_vec(), |b, xs| {
        let args: Vec<Atom> = params
            .iter()
            .zip(xs)
            .map(|(t, x)| lift_value(b, layer, t, *x))
            .collect();
        let lret = b.m.map_type(ret, layer.map());
        let r = b.emit("lifted_call", Rhs::Call(Atom::Var(fv), args), lret);
        primal_of(b, layer.map(), ret, r)
    })
}

/// `v: ty` as a translated value whose perturbation is zero (the layer's constant for
/// each real), for the types [`crate::activity::liftable`] accepts (summable types
/// among them: the delta layer's empty sum).
pub(crate) fn lift_value<L: Layer>(b: &mut Builder, layer: &L, ty: &Type, v: Atom) -> Atom {
    match ty {
        Type::Real => layer.constant(b, v),
        _ if b.m.is_fixed(ty, layer.map()) => v,
        Type::Tuple(ts) => {
            let parts = ts
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let x = b.proj(&v, i);
                    lift_value(b, layer, t, x)
                })
                .collect();
            b.tuple("lifted", parts)
        }
        Type::Array(t) => {
            let lty = b.m.map_type(ty, layer.map());
            let f = b.lambda("lift", &[], vec![(**t).clone()], |b, ps| {
                lift_value(b, layer, t, ps[0])
            });
            b.prim(Prim::Map, &[f, v], lty)
        }
        _ => unreachable!("activity.rs lifts only reals, tuples and arrays of them"),
    }
}

/// The lambdas of `body` (branches included, not those of bindings computed on
/// primals) that a translated `map` or `map2` applies to primal-only arrays, or a
/// translated call to primal-only arguments, each with the positions of its
/// parameters taking those (elements). `activity.rs` made
/// such an array primal-only only where the lambda is made in this code for that loop
/// alone (one use) and keeps the parameter primal; a lambda used more than once, or
/// not made here, is left out here too (its one translation serves every use).
fn loop_params(body: &Body, primal_only: &HashSet<VarId>) -> HashMap<VarId, Vec<usize>> {
    fn walk(
        body: &Body,
        primal_only: &HashSet<VarId>,
        (uses, lambdas): (&HashMap<VarId, usize>, &HashSet<VarId>),
        out: &mut HashMap<VarId, Vec<usize>>,
    ) {
        for binding in &body.bindings {
            if primal_only.contains(&binding.var) {
                continue;
            }
            match &binding.rhs {
                Rhs::Prim(Prim::Map | Prim::Map2, args) | Rhs::Call(_, args) => {
                    let (f, inputs) = match &binding.rhs {
                        Rhs::Call(f, _) => (*f, &args[..]),
                        _ => (args[0], &args[1..]),
                    };
                    let Atom::Var(f) = f else { continue };
                    let params: Vec<usize> = (inputs.iter().enumerate())
                        .filter(|(_, a)| matches!(a, Atom::Var(v) if primal_only.contains(v)))
                        .map(|(i, _)| i)
                        .collect();
                    if !params.is_empty() && uses.get(&f) == Some(&1) && lambdas.contains(&f) {
                        out.insert(f, params);
                    }
                }
                Rhs::If(_, t, e) => {
                    walk(t, primal_only, (uses, lambdas), out);
                    walk(e, primal_only, (uses, lambdas), out);
                }
                Rhs::Match(_, arms, default) => {
                    for arm in arms {
                        walk(&arm.body, primal_only, (uses, lambdas), out);
                    }
                    if let Some(d) = default {
                        walk(d, primal_only, (uses, lambdas), out);
                    }
                }
                _ => {}
            }
        }
    }
    let uses = fluxion_opt::count_uses(body);
    let mut lambdas = HashSet::new();
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        if matches!(b.rhs, Rhs::Closure(..)) {
            lambdas.insert(b.var);
        }
    });
    let mut out = HashMap::new();
    walk(body, primal_only, (&uses, &lambdas), &mut out);
    out
}

/// Whether `p(args)` of type `ty` is a real primitive on reals: what the layer's
/// calculus translates ([`Layer::real_function`]).
fn is_real_function_on_reals(m: &Module, p: Prim, args: &[Atom], ty: &Type) -> bool {
    *ty == Type::Real
        && calculus::is_real_function(p)
        && args.last().map(|a| m.atom_ty(a)) == Some(Type::Real)
}

/// The reals bound by a real primitive, in `body` or a branch of it, whose one use (in
/// the code, branches and closures included) is as an argument of another real
/// primitive bound in the same block: their perturbation can be handed to that
/// primitive without being shared ([Delta] §7: only a delta used more than once needs
/// a `Share`). One count of uses for the whole code; each block's own bindings then
/// say which of its reals its real primitives take.
fn single_use_reals(m: &Module, body: &Body) -> HashSet<VarId> {
    fn block(m: &Module, body: &Body, uses: &HashMap<VarId, usize>, out: &mut HashSet<VarId>) {
        let mut by_real_function: HashMap<VarId, usize> = HashMap::new();
        let mut candidates = Vec::new();
        for binding in &body.bindings {
            match &binding.rhs {
                Rhs::Prim(p, args)
                    if is_real_function_on_reals(m, *p, args, m.var_ty(binding.var)) =>
                {
                    candidates.push(binding.var);
                    for a in args {
                        if let Atom::Var(v) = a {
                            *by_real_function.entry(*v).or_default() += 1;
                        }
                    }
                }
                Rhs::If(_, t, e) => {
                    block(m, t, uses, out);
                    block(m, e, uses, out);
                }
                Rhs::Match(_, arms, default) => {
                    for arm in arms {
                        block(m, &arm.body, uses, out);
                    }
                    if let Some(d) = default {
                        block(m, d, uses, out);
                    }
                }
                _ => {}
            }
        }
        out.extend(
            candidates
                .into_iter()
                .filter(|v| uses.get(v) == Some(&1) && by_real_function.get(v) == Some(&1)),
        );
    }
    let uses = fluxion_opt::count_uses(body);
    let mut out = HashSet::new();
    block(m, body, &uses, &mut out);
    out
}
