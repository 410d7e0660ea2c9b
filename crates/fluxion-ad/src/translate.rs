//! The structure-preserving translations, as Core → Core passes on one code at a time:
//!
//! - forward mode by dual numbers (seed 004 §4, Fig. 3 `Dfwd`; seed 001 §3, the (1,1)
//!   case): `Tf(Real) = (Real, Real)` (primal, tangent);
//! - Taylor mode of order k (seed 001 §3.2, the (1,k) case, with coefficients divided
//!   by factorials as LANGUAGE.md §5 asks): `T_k(Real) = [Real]`, k+1 coefficients.
//!
//! Every other type constructor maps to itself — tuples, arrays, functions, enums (a
//! derived enum with translated fields; see `Module::map_type`). Terms: `let` to `let`,
//! lambda to lambda, call to call, `if`/`match` to themselves, array built-ins to
//! themselves. Only primitives on reals carry calculus: forward mode through the shared
//! table in `derivatives.rs`, Taylor mode through the series arithmetic of `jets.rs`.
//!
//! Nesting: an operator `jvp(f, x, dx)` or `taylor(f, x, v, k)` maps to the same
//! operator on the translated values, because `T(L(A)) = L(T(A))` with the same layout
//! for either layer `L`. The inner operator then translates `f'`'s code, whose reals
//! are already translated: two perturbations are two layers of the types, never tags on
//! shared values, so they cannot be confused. Other operators are expanded to `jvp`
//! (see `expand.rs`) before this pass runs.
//!
//! Memoised per code in `Module::derived_codes` under `fwd#<code id>` or
//! `taylor<k>#<code id>`, so recursive and shared functions are translated once
//! (separate compilation, seed 004 §7.5).

use std::collections::HashMap;

use fluxion_core::{Arm, Atom, Body, CodeId, Lit, Module, Prim, Rhs, Type, TypeMap, VarId};

use crate::AdError;
use crate::builder::{Builder, real};
use crate::derivatives::{is_real_function, real_tangent};
use crate::helpers;
use crate::jets;

/// The forward-mode translation of `code`, creating it on first request.
pub fn forward_code(m: &mut Module, code: CodeId) -> Result<CodeId, AdError> {
    translate_code(m, code, TypeMap::Fwd, None)
}

/// The Taylor-mode translation of order `k` of `code`, creating it on first request.
pub fn taylor_code(m: &mut Module, code: CodeId, k: u32) -> Result<CodeId, AdError> {
    translate_code(m, code, TypeMap::Taylor(k), None)
}

/// The name of a layer in memo keys and code names.
pub(crate) fn layer_name(layer: TypeMap) -> String {
    match layer {
        TypeMap::Fwd => "fwd".into(),
        TypeMap::Taylor(k) => format!("taylor{k}"),
        TypeMap::Tangent => "tangent".into(),
    }
}

/// Translates `code` by `layer`; `captures` names the variables the translated lambda
/// should capture (the enclosing translation's variables), so printed code stays
/// inline.
fn translate_code(
    m: &mut Module,
    code: CodeId,
    layer: TypeMap,
    captures: Option<Vec<VarId>>,
) -> Result<CodeId, AdError> {
    let key = format!("{}#{}", layer_name(layer), code.0);
    if let Some(id) = m.derived_codes.get(&key) {
        return Ok(*id);
    }
    let original = m.code(code).clone();
    let mut b = Builder::new(m, original.span);
    let id = b.reserve_code(
        &format!("{}_{}", original.name, layer_name(layer)),
        original.kind,
    );
    b.m.derived_codes.insert(key, id);
    let ret = b.m.map_type(&original.ret, layer);
    // Known before the body exists: recursive calls read it.
    b.m.codes[id.0 as usize].ret = ret.clone();
    let mut t = Translate {
        env: HashMap::new(),
        layer,
        parts: Vec::new(),
    };
    let mut new_captures = Vec::new();
    for (i, c) in original.captures.iter().enumerate() {
        let v = match &captures {
            Some(cs) => cs[i],
            None => t.fresh_like(&mut b, *c),
        };
        t.env.insert(*c, Atom::Var(v));
        new_captures.push(v);
    }
    let mut params = Vec::new();
    for p in &original.params {
        let v = t.fresh_like(&mut b, *p);
        t.env.insert(*p, Atom::Var(v));
        params.push(v);
    }
    let mut body = t.nested(&mut b, &original.body)?;
    crate::cleanup::eliminate_dead_bindings(b.m, &mut body);
    b.finish_code(id, new_captures, params, ret, body);
    Ok(id)
}

struct Translate {
    /// Original variable → its translation.
    env: HashMap<VarId, Atom>,
    layer: TypeMap,
    /// Forward mode: the (primal, tangent) atoms of pair variables, one map per open
    /// block (an entry is valid in its block and the blocks nested in it), so each
    /// pair is taken apart once.
    parts: Vec<HashMap<VarId, (Atom, Atom)>>,
}

impl Translate {
    /// A fresh variable standing for original variable `v`, of the translated type.
    fn fresh_like(&self, b: &mut Builder, v: VarId) -> VarId {
        let ty = b.m.map_type(&b.m.var_ty(v).clone(), self.layer);
        let hint = b.m.var(v).name.clone();
        b.fresh(&hint, ty)
    }

    /// Emits the translation of `body`'s bindings into the current block; returns the
    /// translated result.
    fn body_into(&mut self, b: &mut Builder, body: &Body) -> Result<Atom, AdError> {
        for binding in &body.bindings {
            b.span = binding.span;
            let a = self.rhs(b, &binding.rhs, binding.var)?;
            self.env.insert(binding.var, a);
        }
        Ok(self.atom(b, &body.result))
    }

    fn nested(&mut self, b: &mut Builder, body: &Body) -> Result<Body, AdError> {
        let mut failure = None;
        self.parts.push(HashMap::new());
        let out = b.block(|b| match self.body_into(b, body) {
            Ok(a) => a,
            Err(e) => {
                failure = Some(e);
                Atom::Lit(Lit::Unit)
            }
        });
        self.parts.pop();
        match failure {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// The primal and tangent of a forward-mode pair, projected once per block.
    fn pair_parts(&mut self, b: &mut Builder, d: Atom) -> (Atom, Atom) {
        let Atom::Var(v) = d else {
            return (b.proj(&d, 0), b.proj(&d, 1));
        };
        if let Some(parts) = self.parts.iter().rev().find_map(|m| m.get(&v)) {
            return *parts;
        }
        let parts = (b.proj(&d, 0), b.proj(&d, 1));
        if let Some(top) = self.parts.last_mut() {
            top.insert(v, parts);
        }
        parts
    }

    /// The translated zero of a summable type: the empty array is the zero of any
    /// array (sums add arrays elementwise), a real's is a translated constant.
    fn zero(&self, b: &mut Builder, ty: &Type) -> Atom {
        match ty {
            Type::Real => self.constant(b, real(0.0)),
            Type::Tuple(ts) => {
                let parts = ts.iter().map(|t| self.zero(b, t)).collect();
                b.tuple("zero", parts)
            }
            Type::Array(_) => {
                let lty = b.m.map_type(ty, self.layer);
                b.emit("zero", Rhs::Array(vec![]), lty)
            }
            Type::Int => crate::builder::int(0),
            _ => Atom::Lit(Lit::Unit),
        }
    }

    /// A real as a translated constant: `(r, 0.0)`, or `[r, 0.0, ...]`.
    fn constant(&self, b: &mut Builder, r: Atom) -> Atom {
        match self.layer {
            TypeMap::Taylor(k) => jets::constant(b, r, k),
            _ => b.tuple("c", vec![r, real(0.0)]),
        }
    }

    /// The translation of an atom; a real literal becomes a constant.
    fn atom(&mut self, b: &mut Builder, a: &Atom) -> Atom {
        match a {
            Atom::Var(v) => self.env[v],
            Atom::Lit(Lit::Real(r)) => self.constant(b, real(*r)),
            Atom::Lit(l) => Atom::Lit(*l),
        }
    }

    fn atoms(&mut self, b: &mut Builder, atoms: &[Atom]) -> Vec<Atom> {
        atoms.iter().map(|a| self.atom(b, a)).collect()
    }

    /// The primal part of a real-typed original atom.
    fn primal(&mut self, b: &mut Builder, a: &Atom) -> Atom {
        match a {
            Atom::Lit(Lit::Real(r)) => real(*r),
            _ => {
                let d = self.atom(b, a);
                helpers::primal_of(b, self.layer, &Type::Real, d)
            }
        }
    }

    fn rhs(&mut self, b: &mut Builder, rhs: &Rhs, var: VarId) -> Result<Atom, AdError> {
        let ty = b.m.var_ty(var).clone();
        let hint = b.m.var(var).name.clone();
        let lty = b.m.map_type(&ty, self.layer);
        let new_rhs = match rhs {
            Rhs::Prim(p, args) => return self.prim(b, *p, args, &ty, &hint),
            Rhs::Atom(a) => Rhs::Atom(self.atom(b, a)),
            Rhs::Tuple(args) => Rhs::Tuple(self.atoms(b, args)),
            Rhs::Proj(a, i) => Rhs::Proj(self.atom(b, a), *i),
            Rhs::Array(args) => Rhs::Array(self.atoms(b, args)),
            Rhs::Ctor(_, tag, args) => {
                let Type::Enum(translated) = lty else {
                    unreachable!("constructor of a non-enum type")
                };
                Rhs::Ctor(translated, *tag, self.atoms(b, args))
            }
            Rhs::Call(f, args) => Rhs::Call(self.atom(b, f), self.atoms(b, args)),
            Rhs::CallDirect(c, args) => {
                let c = translate_code(b.m, *c, self.layer, None)?;
                Rhs::CallDirect(c, self.atoms(b, args))
            }
            Rhs::Closure(c, args) => {
                let args = self.atoms(b, args);
                let captures: Option<Vec<VarId>> = args
                    .iter()
                    .map(|a| match a {
                        Atom::Var(v) => Some(*v),
                        Atom::Lit(_) => None,
                    })
                    .collect();
                Rhs::Closure(translate_code(b.m, *c, self.layer, captures)?, args)
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
        let lty = b.m.map_type(ty, self.layer);
        let arg_ty = args.last().map(|a| b.m.atom_ty(a));
        let on_reals = arg_ty == Some(Type::Real);
        Ok(match p {
            // Real functions: the layer's calculus.
            _ if on_reals && ty == &Type::Real && is_real_function(p) => {
                self.real_function(b, p, args, hint)?
            }
            // Comparisons of reals compare primals.
            Lt | Le | Gt | Ge if on_reals => {
                let x = self.primal(b, &args[0]);
                let y = self.primal(b, &args[1]);
                b.prim(p, &[x, y], Type::Bool)
            }
            Eq | Ne => {
                let t = arg_ty.expect("binary");
                let x = self.atom(b, &args[0]);
                let y = self.atom(b, &args[1]);
                let x = helpers::primal_of(b, self.layer, &t, x);
                let y = helpers::primal_of(b, self.layer, &t, y);
                b.prim(p, &[x, y], Type::Bool)
            }
            ToReal => {
                let x = self.atom(b, &args[0]);
                let r = b.prim(ToReal, &[x], Type::Real);
                self.constant(b, r)
            }
            ToInt => {
                let x = self.primal(b, &args[0]);
                b.prim(ToInt, &[x], Type::Int)
            }
            Maximum | Minimum | Argmax if arg_ty == Some(Type::array(Type::Real)) => {
                // The element at the first index attaining the extreme primal.
                let a = self.atom(b, &args[0]);
                let primals = helpers::primal_of(b, self.layer, &Type::array(Type::Real), a);
                let key = if p == Minimum {
                    helpers::negate_array(b, primals)
                } else {
                    primals
                };
                let i = b.prim(Argmax, &[key], Type::Int);
                if p == Argmax {
                    i
                } else {
                    b.emit(hint, Rhs::Prim(Index, vec![a, i]), lty)
                }
            }
            Grad | ValueAndGrad | Vjp | Diff | Jacobian | Hessian => {
                return Err(AdError(format!(
                    "internal error: `{}` reached a translation unexpanded",
                    p.name()
                )));
            }
            // A sum of no elements: the interpreter's zero of `[Real]` is the empty
            // array, but a jet's zero is k+1 zero coefficients.
            Sum | Sumbuild if matches!(self.layer, TypeMap::Taylor(_)) && has_real_leaf(ty) => {
                let args = self.atoms(b, args);
                let total = b.emit(hint, Rhs::Prim(p, args.clone()), lty.clone());
                let count = match p {
                    Sum => b.prim(Length, &[args[0]], Type::Int),
                    _ => args[0],
                };
                let empty = b.cmp(Eq, count, crate::builder::int(0));
                b.if_(empty, lty, |b| self.zero(b, ty), |_| total)
            }
            // Everything else — integer arithmetic, array built-ins, `jvp`, `taylor` — is
            // the same primitive on translated arguments.
            _ => {
                let args = self.atoms(b, args);
                b.emit(hint, Rhs::Prim(p, args), lty)
            }
        })
    }

    /// `p(args)` for a real function `p` (result `Real`); `Int` arguments (the order
    /// of `%polygamma`) are passed through.
    fn real_function(
        &mut self,
        b: &mut Builder,
        p: Prim,
        args: &[Atom],
        hint: &str,
    ) -> Result<Atom, AdError> {
        let no_rule = || AdError(format!("no derivative rule for `{}`", p.name()));
        let is_int = |b: &Builder, a: &Atom| b.m.atom_ty(a) == Type::Int;
        match self.layer {
            TypeMap::Taylor(k) => {
                let mut series = Vec::new();
                for a in args {
                    series.push(self.atom(b, a));
                }
                jets::apply(b, p, &series, k).ok_or_else(no_rule)
            }
            _ => {
                let (mut xs, mut dxs) = (Vec::new(), Vec::new());
                for a in args {
                    let (x, dx) = match a {
                        _ if is_int(b, a) => (self.atom(b, a), Atom::Lit(Lit::Unit)),
                        Atom::Lit(Lit::Real(r)) => (real(*r), real(0.0)),
                        _ => {
                            let d = self.atom(b, a);
                            self.pair_parts(b, d)
                        }
                    };
                    xs.push(x);
                    dxs.push(dx);
                }
                let y = b.prim(p, &xs, Type::Real);
                let dy = real_tangent(b, p, &xs, y, &dxs).ok_or_else(no_rule)?;
                let pair = b.tuple(hint, vec![y, dy]);
                if let (Atom::Var(v), Some(top)) = (pair, self.parts.last_mut()) {
                    top.insert(v, (y, dy));
                }
                Ok(pair)
            }
        }
    }
}

/// Whether a summable type has a real in it (so that its translated zero is not the
/// interpreter's default).
fn has_real_leaf(ty: &Type) -> bool {
    match ty {
        Type::Real => true,
        Type::Tuple(ts) => ts.iter().any(has_real_leaf),
        Type::Array(t) => has_real_leaf(t),
        _ => false,
    }
}
