//! Forward-mode differentiation by dual numbers, as a Core → Core pass on one code at
//! a time (seed 004 §4, Fig. 3 `Dfwd`; seed 001 §3 for the (1,1) case).
//!
//! Types: `Tf(Real) = (Real, Real)` (primal, tangent); every other type constructor
//! maps to itself — tuples, arrays, functions, enums (a derived enum with translated
//! fields; see `Module::fwd_type`). Terms: `let` to `let`, lambda to lambda, call to
//! call, `if`/`match` to themselves, array built-ins to themselves. Only primitives on
//! reals carry calculus, through the shared table in `derivatives.rs`.
//!
//! Nesting: `jvp(f, x, dx)` maps to `jvp(f', x', dx')` — the same operator on the
//! translated values — because `T(Tf(A)) = Tf(T(A))` with the same layout. The inner
//! operator then differentiates `f'`'s code, whose reals are already pairs: the two
//! perturbations are two layers of the types, never tags on shared values, so they
//! cannot be confused. Other operators are expanded to `jvp` (see `expand.rs`) before
//! this pass runs.
//!
//! Memoised per code in `Module::derived_codes` under `fwd#<code id>`, so recursive and
//! shared functions are translated once (separate compilation, seed 004 §7.5).

use std::collections::HashMap;

use fluxion_core::{Arm, Atom, Body, CodeId, CodeKind, Lit, Module, Prim, Rhs, Type, VarId};

use crate::AdError;
use crate::builder::{Builder, real};
use crate::derivatives::real_tangent;
use crate::helpers;

/// The forward-mode translation of `code`, creating it on first request.
pub fn forward_code(m: &mut Module, code: CodeId) -> Result<CodeId, AdError> {
    forward_code_with_captures(m, code, None)
}

/// Like [`forward_code`]; `captures` names the variables the translated lambda should
/// capture (the enclosing translation's variables), so printed code stays inline.
fn forward_code_with_captures(
    m: &mut Module,
    code: CodeId,
    captures: Option<Vec<VarId>>,
) -> Result<CodeId, AdError> {
    let key = format!("fwd#{}", code.0);
    if let Some(id) = m.derived_codes.get(&key) {
        return Ok(*id);
    }
    let original = m.code(code).clone();
    let span = original.span;
    let mut b = Builder::new(m, span);
    let name = match original.kind {
        CodeKind::TopLevel => format!("{}_fwd", original.name),
        CodeKind::Lambda => format!("{}_fwd", original.name),
    };
    let id = b.reserve_code(&name, original.kind);
    b.m.derived_codes.insert(key, id);
    let mut t = Translate {
        env: HashMap::new(),
    };
    let mut new_captures = Vec::new();
    for (i, c) in original.captures.iter().enumerate() {
        let v = match &captures {
            Some(cs) => cs[i],
            None => {
                let ty = b.m.fwd_type(&b.m.var_ty(*c).clone());
                let hint = b.m.var(*c).name.clone();
                b.fresh(&hint, ty)
            }
        };
        t.env.insert(*c, Atom::Var(v));
        new_captures.push(v);
    }
    let mut params = Vec::new();
    for p in &original.params {
        let ty = b.m.fwd_type(&b.m.var_ty(*p).clone());
        let hint = b.m.var(*p).name.clone();
        let v = b.fresh(&hint, ty);
        t.env.insert(*p, Atom::Var(v));
        params.push(v);
    }
    let mut failure = None;
    let body = b.block(|b| match t.body_into(b, &original.body) {
        Ok(a) => a,
        Err(e) => {
            failure = Some(e);
            Atom::Lit(Lit::Unit)
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let ret = b.m.fwd_type(&original.ret);
    b.finish_code(id, new_captures, params, ret, body);
    Ok(id)
}

struct Translate {
    /// Original variable → its translation.
    env: HashMap<VarId, Atom>,
}

impl Translate {
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
        let out = b.block(|b| match self.body_into(b, body) {
            Ok(a) => a,
            Err(e) => {
                failure = Some(e);
                Atom::Lit(Lit::Unit)
            }
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// The translation of an atom; a real literal becomes `(r, 0.0)`.
    fn atom(&mut self, b: &mut Builder, a: &Atom) -> Atom {
        match a {
            Atom::Var(v) => self.env[v],
            Atom::Lit(Lit::Real(r)) => b.tuple("c", vec![real(*r), real(0.0)]),
            Atom::Lit(l) => Atom::Lit(*l),
        }
    }

    fn atoms(&mut self, b: &mut Builder, atoms: &[Atom]) -> Vec<Atom> {
        atoms.iter().map(|a| self.atom(b, a)).collect()
    }

    /// Primal and tangent of a real-typed original atom.
    fn dual(&mut self, b: &mut Builder, a: &Atom) -> (Atom, Atom) {
        match a {
            Atom::Lit(Lit::Real(r)) => (real(*r), real(0.0)),
            _ => {
                let d = self.atom(b, a);
                (b.proj(&d, 0), b.proj(&d, 1))
            }
        }
    }

    fn rhs(&mut self, b: &mut Builder, rhs: &Rhs, var: VarId) -> Result<Atom, AdError> {
        let ty = b.m.var_ty(var).clone();
        let hint = b.m.var(var).name.clone();
        let fty = b.m.fwd_type(&ty);
        let out = match rhs {
            Rhs::Atom(a) => {
                let a = self.atom(b, a);
                b.emit(&hint, Rhs::Atom(a), fty)
            }
            Rhs::Tuple(args) => {
                let args = self.atoms(b, args);
                b.emit(&hint, Rhs::Tuple(args), fty)
            }
            Rhs::Proj(a, i) => {
                let a = self.atom(b, a);
                b.emit(&hint, Rhs::Proj(a, *i), fty)
            }
            Rhs::Array(args) => {
                let args = self.atoms(b, args);
                b.emit(&hint, Rhs::Array(args), fty)
            }
            Rhs::Ctor(e, tag, args) => {
                let args = self.atoms(b, args);
                let Type::Enum(fe) = fty.clone() else {
                    unreachable!("constructor of a non-enum type")
                };
                let _ = e;
                b.emit(&hint, Rhs::Ctor(fe, *tag, args), fty)
            }
            Rhs::Call(f, args) => {
                let f = self.atom(b, f);
                let args = self.atoms(b, args);
                b.emit(&hint, Rhs::Call(f, args), fty)
            }
            Rhs::CallDirect(c, args) => {
                let c = forward_code(b.m, *c)?;
                let args = self.atoms(b, args);
                b.emit(&hint, Rhs::CallDirect(c, args), fty)
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
                let c = forward_code_with_captures(b.m, *c, captures)?;
                b.emit(&hint, Rhs::Closure(c, args), fty)
            }
            Rhs::If(c, t, e) => {
                let c = self.atom(b, c);
                let t = self.nested(b, t)?;
                let e = self.nested(b, e)?;
                b.emit(&hint, Rhs::If(c, Box::new(t), Box::new(e)), fty)
            }
            Rhs::Match(s, arms, default) => {
                let s = self.atom(b, s);
                let mut new_arms = Vec::new();
                for arm in arms {
                    let mut fields = Vec::new();
                    for f in &arm.fields {
                        let fty = b.m.fwd_type(&b.m.var_ty(*f).clone());
                        let h = b.m.var(*f).name.clone();
                        let v = b.fresh(&h, fty);
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
                b.emit(&hint, Rhs::Match(s, new_arms, default), fty)
            }
            Rhs::Prim(p, args) => self.prim(b, *p, args, &ty, &hint)?,
        };
        Ok(out)
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
        let fty = b.m.fwd_type(ty);
        let arg_ty = args.first().map(|a| b.m.atom_ty(a));
        let on_reals = arg_ty == Some(Type::Real);
        Ok(match p {
            // Real functions: primal by the primitive, tangent by the table.
            _ if on_reals && ty == &Type::Real && p.scheme().is_some() && !matches!(p, Index) => {
                let (xs, dxs): (Vec<Atom>, Vec<Atom>) =
                    args.iter().map(|a| self.dual(b, a)).unzip();
                let y = b.prim(p, &xs, Type::Real);
                let dy = real_tangent(b, p, &xs, y, &dxs)
                    .ok_or_else(|| AdError(format!("no derivative rule for `{}`", p.name())))?;
                b.tuple(hint, vec![y, dy])
            }
            // Comparisons of reals compare primals.
            Lt | Le | Gt | Ge if on_reals => {
                let (x, _) = self.dual(b, &args[0]);
                let (y, _) = self.dual(b, &args[1]);
                b.prim(p, &[x, y], Type::Bool)
            }
            Eq | Ne => {
                let t = arg_ty.expect("binary");
                let x = self.atom(b, &args[0]);
                let y = self.atom(b, &args[1]);
                let x = helpers::primal_of(b, &t, x);
                let y = helpers::primal_of(b, &t, y);
                b.prim(p, &[x, y], Type::Bool)
            }
            ToReal => {
                let x = self.atom(b, &args[0]);
                let r = b.prim(ToReal, &[x], Type::Real);
                b.tuple(hint, vec![r, real(0.0)])
            }
            ToInt => {
                let (x, _) = self.dual(b, &args[0]);
                b.prim(ToInt, &[x], Type::Int)
            }
            Maximum | Minimum | Argmax if arg_ty == Some(Type::array(Type::Real)) => {
                // The element at the first index attaining the extreme primal.
                let a = self.atom(b, &args[0]);
                let primals = helpers::primal_of(b, &Type::array(Type::Real), a);
                let key = if p == Minimum {
                    helpers::negate_array(b, primals)
                } else {
                    primals
                };
                let i = b.prim(Argmax, &[key], Type::Int);
                if p == Argmax {
                    i
                } else {
                    b.emit(hint, Rhs::Prim(Index, vec![a, i]), fty)
                }
            }
            Grad | ValueAndGrad | Vjp | Diff | Jacobian | Hessian => {
                return Err(AdError(format!(
                    "internal error: `{}` reached forward mode unexpanded",
                    p.name()
                )));
            }
            Taylor => return Err(AdError("`taylor` is not implemented yet".into())),
            // Everything else — integer arithmetic, array built-ins, `jvp` — is the same
            // primitive on translated arguments.
            _ => {
                let args = self.atoms(b, args);
                b.emit(hint, Rhs::Prim(p, args), fty)
            }
        })
    }
}
