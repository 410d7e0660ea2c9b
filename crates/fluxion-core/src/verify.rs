//! Core verifier: checks that a [`Module`] is well formed. Tests run it after every
//! pass.
//!
//! Checked:
//! - every variable is bound exactly once in the module (parameters, captures of
//!   top-level codes, `let`s, match fields) and used only where in scope;
//! - a lambda's captures are in scope where its closure is made, and its body uses
//!   only its captures, parameters and its own bindings;
//! - every binding's recorded type equals the type of its right-hand side, computed
//!   from its operands (primitives by their [`crate::prim::Scheme`], differential
//!   operators by `T(A)`);
//! - call arities and argument types; constructor tags and field types; `if`
//!   conditions are `Bool`; match arms name constructors of the scrutinee's enum once.

use std::collections::HashSet;

use crate::module::Module;
use crate::prim::{Prim, Scheme, SchemeTy, satisfies};
use crate::term::*;
use crate::ty::Type;

/// A verifier complaint: the code it is in and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    pub code: String,
    pub message: String,
}

/// The complaints as text, one line each: `in CODE: message`.
pub fn describe(errors: &[VerifyError]) -> String {
    errors
        .iter()
        .map(|e| format!("in {}: {}", e.code, e.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Verifies every code of the module.
pub fn verify_module(module: &Module) -> Result<(), Vec<VerifyError>> {
    verify_codes_from(module, 0)
}

/// Verifies the codes from index `first` on — those a pass has just added. Roots are
/// the top-level codes and the codes a transformation derived on their own (the
/// values of `Module::derived_codes`, a lambda translated at run time among them): a
/// root binds its own captures. Every other lambda is checked where its closure is
/// made, against the scope there; a lambda no live code makes any more (its closure
/// was removed as dead) is unreachable and not checked.
pub fn verify_codes_from(module: &Module, first: usize) -> Result<(), Vec<VerifyError>> {
    let derived: HashSet<CodeId> = module.derived_codes.values().copied().collect();
    let mut v = Verifier {
        module,
        bound: vec![false; module.vars.len()],
        scope: Scope::new(module.vars.len()),
        errors: Vec::new(),
        code_name: String::new(),
        visited: HashSet::new(),
        derived: derived.clone(),
    };
    for i in first..module.codes.len() {
        let id = CodeId(i as u32);
        if module.code(id).kind == CodeKind::TopLevel || derived.contains(&id) {
            v.code(id, true);
        }
    }
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

struct Verifier<'a> {
    module: &'a Module,
    /// Per variable (indexed by `VarId`): whether a binding of it was seen.
    bound: Vec<bool>,
    scope: Scope,
    errors: Vec<VerifyError>,
    code_name: String,
    /// Codes already checked.
    visited: HashSet<CodeId>,
    /// Codes made by a translation on their own (`Module::derived_codes`).
    derived: HashSet<CodeId>,
}

/// The variables in scope at the point being checked.
///
/// Each variable records the code nesting level whose scope holds it, so a membership
/// test is one array read however many variables are in scope, and a lambda's body
/// (one level deeper) does not see the enclosing code's variables. An undo log
/// restores what a binding overwrote when its block, arm or code is left.
struct Scope {
    /// Per variable (indexed by `VarId`): the level whose scope holds it, or 0.
    level_of: Vec<u32>,
    /// The level of the code being checked: 1 for a top-level code, +1 per lambda.
    level: u32,
    /// Each binding in scope, innermost last, with the level it overwrote.
    undo: Vec<(VarId, u32)>,
}

impl Scope {
    fn new(vars: usize) -> Scope {
        Scope {
            level_of: vec![0; vars],
            level: 0,
            undo: Vec::new(),
        }
    }

    fn contains(&self, v: VarId) -> bool {
        self.level_of.get(v.0 as usize) == Some(&self.level)
    }

    /// Brings `v`, which must have an entry in the variable table, into scope.
    fn push(&mut self, v: VarId) {
        let slot = &mut self.level_of[v.0 as usize];
        self.undo.push((v, *slot));
        *slot = self.level;
    }

    /// A mark to [`Scope::truncate`] back to.
    fn mark(&self) -> usize {
        self.undo.len()
    }

    /// Takes the bindings made since `mark` out of scope.
    fn truncate(&mut self, mark: usize) {
        while self.undo.len() > mark {
            let (v, previous) = self.undo.pop().expect("length checked");
            self.level_of[v.0 as usize] = previous;
        }
    }
}

impl Verifier<'_> {
    fn err(&mut self, message: String) {
        self.errors.push(VerifyError {
            code: self.code_name.clone(),
            message,
        });
    }

    fn show(&self, ty: &Type) -> String {
        ty.display(&self.module.enums).to_string()
    }

    /// The type recorded for `v`, if the variable table has it.
    fn declared_ty(&self, v: VarId) -> Option<&Type> {
        self.module.vars.get(v.0 as usize).map(|info| &info.ty)
    }

    fn bind(&mut self, v: VarId) {
        if v.0 as usize >= self.module.vars.len() {
            self.err(format!(
                "variable {} has no entry in the variable table",
                v.0
            ));
            return;
        }
        if std::mem::replace(&mut self.bound[v.0 as usize], true) {
            self.err(format!("variable {} is bound twice", v.0));
        }
        self.scope.push(v);
    }

    /// Checks one code. A root (a top-level or derived code) binds its own captures;
    /// a lambda's captures are looked up where its closure is made — the current
    /// scope — before entering it.
    fn code(&mut self, id: CodeId, root: bool) {
        let code = self.module.code(id);
        // A code closed over at several sites (the native backend's ahead-of-time
        // translations are made once and used wherever the operator is) is checked
        // once; at every other site only its captures must be in scope.
        if !self.visited.insert(id) {
            for &c in &code.captures {
                if !root && !self.scope.contains(c) {
                    self.err(format!("captured variable {} is not in scope", c.0));
                }
            }
            return;
        }
        let saved = std::mem::replace(&mut self.code_name, code.name.clone());
        let mut captured = Vec::new();
        for &c in &code.captures {
            if !root && !self.scope.contains(c) {
                self.err(format!("captured variable {} is not in scope", c.0));
            } else {
                captured.push(c);
            }
        }
        let mark = self.scope.mark();
        self.scope.level += 1;
        for c in captured {
            if root {
                self.bind(c);
            } else {
                self.scope.push(c);
            }
        }
        for p in &code.params {
            self.bind(*p);
        }
        let ty = self.body(&code.body);
        self.scope.truncate(mark);
        self.scope.level -= 1;
        if let Some(ty) = ty
            && ty != code.ret
        {
            let msg = format!(
                "body has type {}, but the function returns {}",
                self.show(&ty),
                self.show(&code.ret)
            );
            self.err(msg);
        }
        self.code_name = saved;
    }

    fn atom(&mut self, a: &Atom) -> Option<Type> {
        match a {
            Atom::Lit(l) => Some(l.ty()),
            Atom::Var(v) => {
                if !self.scope.contains(*v) {
                    self.err(format!("variable {} used out of scope", v.0));
                    return None;
                }
                Some(self.module.var_ty(*v).clone())
            }
        }
    }

    fn atoms(&mut self, atoms: &[Atom]) -> Option<Vec<Type>> {
        atoms.iter().map(|a| self.atom(a)).collect()
    }

    fn body(&mut self, body: &Body) -> Option<Type> {
        let mark = self.scope.mark();
        for b in &body.bindings {
            // A variable missing from the table is reported by `bind`.
            let declared = self.declared_ty(b.var).cloned();
            let ty = match &b.rhs {
                // The symbolic zero takes its type from its binding.
                Rhs::Prim(Prim::TanZero, args) if args.is_empty() => declared
                    .clone()
                    .filter(|t| self.is_tangent_type(t, "%tzero")),
                rhs => self.rhs(rhs),
            };
            if let (Some(ty), Some(declared)) = (ty, declared)
                && ty != declared
            {
                let msg = format!(
                    "binding {} declared {} but its value has type {}",
                    b.var.0,
                    self.show(&declared),
                    self.show(&ty)
                );
                self.err(msg);
            }
            self.bind(b.var);
        }
        let ty = self.atom(&body.result);
        self.scope.truncate(mark);
        ty
    }

    fn rhs(&mut self, rhs: &Rhs) -> Option<Type> {
        match rhs {
            Rhs::Atom(a) => self.atom(a),
            Rhs::Prim(p @ (Prim::LinProj | Prim::LinField), args) => self.component_prim(*p, args),
            Rhs::Prim(p, args) => {
                let tys = self.atoms(args)?;
                self.prim(*p, &tys)
            }
            Rhs::Call(f, args) => {
                let fty = self.atom(f)?;
                let tys = self.atoms(args)?;
                match fty {
                    Type::Fn(ps, r) if ps == tys => Some(*r),
                    other => {
                        let msg = format!(
                            "call of {} with arguments ({})",
                            self.show(&other),
                            tys.iter()
                                .map(|t| self.show(t))
                                .collect::<Vec<_>>()
                                .join(", ")
                        );
                        self.err(msg);
                        None
                    }
                }
            }
            Rhs::CallDirect(id, args) => {
                let tys = self.atoms(args)?;
                match self.module.code_ty(*id) {
                    Type::Fn(ps, r) if ps == tys && self.module.code(*id).captures.is_empty() => {
                        Some(*r)
                    }
                    _ => {
                        let msg = format!("bad direct call of {}", self.module.code(*id).name);
                        self.err(msg);
                        None
                    }
                }
            }
            Rhs::Closure(id, args) => {
                let tys = self.atoms(args)?;
                let code = self.module.code(*id);
                let want: Vec<Type> = code
                    .captures
                    .iter()
                    .filter_map(|c| self.declared_ty(*c).cloned())
                    .collect();
                if want != tys {
                    self.err(format!("closure of {} captures the wrong types", code.name));
                }
                // A derived code (a translation made on its own, memoised) binds its
                // captures itself, positionally: it is checked as a root, not here.
                if code.kind == CodeKind::Lambda && !self.derived.contains(id) {
                    self.code(*id, false);
                }
                Some(self.module.code_ty(*id))
            }
            Rhs::Tuple(args) => {
                let tys = self.atoms(args)?;
                if tys.len() < 2 {
                    self.err("tuple with fewer than two components".into());
                }
                Some(Type::Tuple(tys))
            }
            Rhs::Proj(a, i) => match self.atom(a)? {
                Type::Tuple(ts) if *i < ts.len() => Some(ts[*i].clone()),
                other => {
                    let msg = format!("projection .{i} of {}", self.show(&other));
                    self.err(msg);
                    None
                }
            },
            Rhs::Array(args) => {
                let tys = self.atoms(args)?;
                // The element type of an empty literal is the binding's; checked by caller.
                let first = tys.first().cloned()?;
                if tys.iter().any(|t| *t != first) {
                    self.err("array literal elements differ in type".into());
                }
                Some(Type::array(first))
            }
            Rhs::Ctor(e, tag, args) => {
                let tys = self.atoms(args)?;
                let def = self.module.enums.get(e.0 as usize)?;
                match def.variants.get(*tag as usize) {
                    Some(v) if v.fields == tys => Some(Type::Enum(*e)),
                    _ => {
                        self.err(format!("bad constructor {tag} of {}", def.name));
                        None
                    }
                }
            }
            Rhs::If(c, t, e) => {
                if self.atom(c)? != Type::Bool {
                    self.err("`if` condition is not Bool".into());
                }
                let tt = self.body(t);
                let te = self.body(e);
                if tt.is_some() && te.is_some() && tt != te {
                    self.err("`if` branches differ in type".into());
                }
                tt.or(te)
            }
            Rhs::Match(s, arms, default) => {
                let Type::Enum(eid) = self.atom(s)? else {
                    self.err("match scrutinee is not an enum".into());
                    return None;
                };
                let def = self.module.enum_def(eid).clone();
                let mut ty: Option<Type> = None;
                let mut seen = HashSet::new();
                for arm in arms {
                    let Some(variant) = def.variants.get(arm.tag as usize) else {
                        self.err("match arm tag out of range".into());
                        continue;
                    };
                    if !seen.insert(arm.tag) {
                        self.err(format!("two arms for {}", variant.name));
                    }
                    let mark = self.scope.mark();
                    if arm.fields.len() != variant.fields.len() {
                        self.err(format!(
                            "arm for {} binds the wrong number of fields",
                            variant.name
                        ));
                    }
                    for (f, fty) in arm.fields.iter().zip(&variant.fields) {
                        if self.declared_ty(*f).is_some_and(|t| t != fty) {
                            self.err(format!("field of {} has the wrong type", variant.name));
                        }
                        self.bind(*f);
                    }
                    let t = self.body(&arm.body);
                    self.scope.truncate(mark);
                    self.join(&mut ty, t);
                }
                if let Some(d) = default {
                    let t = self.body(d);
                    self.join(&mut ty, t);
                }
                ty
            }
        }
    }

    /// Whether `t` is a tangent type (`T(t) = t`), complaining about `what` if not.
    fn is_tangent_type(&mut self, t: &Type, what: &str) -> bool {
        if self.module.lookup_tangent_type(t).as_ref() == Some(t) {
            return true;
        }
        let msg = format!("{what} of {}, which is not a tangent type", self.show(t));
        self.err(msg);
        false
    }

    /// `%tplus(u, v)` adds tangents; `%tdense(x, t)` needs `t: T(typeof x)`.
    fn tangent_prim(&mut self, p: Prim, args: &[Type], result: Type) -> Option<Type> {
        if p == Prim::TanDense {
            if self.module.lookup_tangent_type(&args[0]).as_ref() != Some(&args[1]) {
                let msg = format!(
                    "%tdense of {} with {}, which is not its tangent type",
                    self.show(&args[0]),
                    self.show(&args[1])
                );
                self.err(msg);
                return None;
            }
            return Some(result);
        }
        self.is_tangent_type(&result, p.name()).then_some(result)
    }

    /// `%lproj(t, i)` and `%lfield(t, tag, j)`: a component of a tuple or enum
    /// cotangent, the index and constructor given as literals.
    fn component_prim(&mut self, p: Prim, args: &[Atom]) -> Option<Type> {
        let index = |a: &Atom| match a {
            Atom::Lit(Lit::Int(i)) if *i >= 0 => Some(*i as usize),
            _ => None,
        };
        let t = self.atom(args.first()?)?;
        if !self.is_tangent_type(&t, p.name()) {
            return None;
        }
        let found = match (p, &t, args.len()) {
            (Prim::LinProj, Type::Tuple(ts), 2) => index(&args[1]).and_then(|i| ts.get(i)).cloned(),
            (Prim::LinField, Type::Enum(e), 3) => {
                let def = self.module.enum_def(*e);
                index(&args[1])
                    .and_then(|tag| def.variants.get(tag))
                    .and_then(|v| index(&args[2]).and_then(|j| v.fields.get(j)))
                    .cloned()
            }
            _ => None,
        };
        if found.is_none() {
            let msg = format!("{} of {} with these indices", p.name(), self.show(&t));
            self.err(msg);
        }
        found
    }

    fn join(&mut self, acc: &mut Option<Type>, t: Option<Type>) {
        match (acc.as_ref(), t) {
            (None, t) => *acc = t,
            (Some(a), Some(t)) if *a != t => self.err("match arms differ in type".into()),
            _ => {}
        }
    }

    fn prim(&mut self, p: Prim, args: &[Type]) -> Option<Type> {
        if p == Prim::MatchFail {
            return None;
        }
        if p.is_differential() || matches!(p, Prim::DeltaVjp | Prim::ChadVjp | Prim::DeltaJacobian)
        {
            return match differential_result_type(self.module, p, args) {
                Ok(t) => Some(t),
                Err(msg) => {
                    self.err(msg);
                    None
                }
            };
        }
        let scheme = p.scheme()?;
        match match_scheme(&scheme, args, self.module) {
            Some(t)
                if matches!(
                    p,
                    Prim::TanPlus
                        | Prim::TanDense
                        | Prim::LinOneHot
                        | Prim::LinEmbed
                        | Prim::LinSlice
                        | Prim::LinSum
                        | Prim::LinIndex
                ) =>
            {
                self.tangent_prim(p, args, t)
            }
            Some(t) => Some(t),
            None => {
                let msg = format!(
                    "{} applied to ({})",
                    p.name(),
                    args.iter()
                        .map(|t| self.show(t))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                self.err(msg);
                None
            }
        }
    }
}

/// Instantiates `scheme` to concrete argument types; the result type, if they fit.
pub fn match_scheme(scheme: &Scheme, args: &[Type], module: &Module) -> Option<Type> {
    fn go(s: &SchemeTy, t: &Type, subst: &mut Vec<Option<Type>>) -> bool {
        match (s, t) {
            (SchemeTy::Var(i), t) => match &subst[*i] {
                Some(prev) => prev == t,
                None => {
                    subst[*i] = Some(t.clone());
                    true
                }
            },
            (SchemeTy::Real, Type::Real)
            | (SchemeTy::Int, Type::Int)
            | (SchemeTy::Bool, Type::Bool)
            | (SchemeTy::Unit, Type::Unit) => true,
            (SchemeTy::Tuple(ss), Type::Tuple(ts)) => {
                ss.len() == ts.len() && ss.iter().zip(ts).all(|(s, t)| go(s, t, subst))
            }
            (SchemeTy::Array(s), Type::Array(t)) => go(s, t, subst),
            (SchemeTy::Fn(sp, sr), Type::Fn(tp, tr)) => {
                sp.len() == tp.len()
                    && sp.iter().zip(tp).all(|(s, t)| go(s, t, subst))
                    && go(sr, tr, subst)
            }
            _ => false,
        }
    }
    if scheme.params.len() != args.len() {
        return None;
    }
    let mut subst = vec![None; scheme.vars.len()];
    for (s, t) in scheme.params.iter().zip(args) {
        if !go(s, t, &mut subst) {
            return None;
        }
    }
    let subst: Vec<Type> = subst.into_iter().map(|t| t.unwrap_or(Type::Unit)).collect();
    for (t, c) in subst.iter().zip(&scheme.vars) {
        if !satisfies(t, *c, &module.enums) {
            return None;
        }
    }
    Some(scheme.ret.instantiate(&subst))
}

/// The argument type `A` of a function type as a differential operator sees it: the
/// single parameter, or the tuple of several (§5).
pub fn differentiated_argument(params: &[Type]) -> Type {
    match params {
        [one] => one.clone(),
        [] => Type::Unit,
        many => Type::Tuple(many.to_vec()),
    }
}

/// The result type of a differential operator applied to arguments of these types.
pub fn differential_result_type(module: &Module, p: Prim, args: &[Type]) -> Result<Type, String> {
    let show = |t: &Type| t.display(&module.enums).to_string();
    let Some(Type::Fn(params, ret)) = args.first() else {
        return Err(format!(
            "{} needs a function as its first argument",
            p.name()
        ));
    };
    let a = differentiated_argument(params);
    let b = (**ret).clone();
    if !a.is_dtype(&module.enums) || !b.is_dtype(&module.enums) {
        return Err(format!(
            "{} needs a function between differentiable types, not {}",
            p.name(),
            show(&args[0])
        ));
    }
    let expect = |want: Vec<Type>| -> Result<(), String> {
        if args.len() == want.len() && args.iter().zip(&want).all(|(x, y)| x == y) {
            Ok(())
        } else {
            Err(format!(
                "{} expects arguments ({}), got ({})",
                p.name(),
                want.iter().map(show).collect::<Vec<_>>().join(", "),
                args.iter().map(show).collect::<Vec<_>>().join(", ")
            ))
        }
    };
    let f = args[0].clone();
    let tan = |t: &Type| -> Result<Type, String> {
        module
            .lookup_tangent_type(t)
            .ok_or_else(|| format!("the tangent type of {} was never derived", show(t)))
    };
    let (ta, tb) = (tan(&a)?, tan(&b)?);
    let real_vec = Type::array(Type::Real);
    let matrix = Type::array(real_vec.clone());
    match p {
        Prim::Grad | Prim::ValueAndGrad => {
            if b != Type::Real {
                return Err(format!(
                    "{} needs a function returning Real, not {}",
                    p.name(),
                    show(&b)
                ));
            }
            expect(vec![f, a.clone()])?;
            Ok(if p == Prim::Grad {
                ta
            } else {
                Type::Tuple(vec![Type::Real, ta])
            })
        }
        Prim::Jvp => {
            expect(vec![f, a.clone(), ta])?;
            Ok(Type::Tuple(vec![b.clone(), tb]))
        }
        Prim::Vjp => {
            expect(vec![f, a.clone()])?;
            Ok(Type::Tuple(vec![b.clone(), Type::func(vec![tb], ta)]))
        }
        Prim::Diff => {
            if a != Type::Real {
                return Err(format!(
                    "diff needs a function of one Real, not {}",
                    show(&a)
                ));
            }
            expect(vec![f, a])?;
            Ok(tb)
        }
        Prim::Jacobian | Prim::DeltaJacobian => {
            if a != real_vec || b != real_vec {
                return Err(format!(
                    "jacobian needs a function [Real] -> [Real], not {}",
                    show(&args[0])
                ));
            }
            expect(vec![f, a])?;
            Ok(matrix)
        }
        Prim::Hessian => {
            if a != real_vec || b != Type::Real {
                return Err(format!(
                    "hessian needs a function [Real] -> Real, not {}",
                    show(&args[0])
                ));
            }
            expect(vec![f, a])?;
            Ok(matrix)
        }
        Prim::DeltaVjp | Prim::ChadVjp => {
            expect(vec![f, a.clone(), tb])?;
            Ok(Type::Tuple(vec![b.clone(), ta]))
        }
        Prim::Taylor => {
            expect(vec![f, a.clone(), ta, Type::Int])?;
            Ok(Type::Tuple(vec![b.clone(), Type::array(tb)]))
        }
        Prim::Sparsity => {
            if a != real_vec || b != real_vec {
                return Err(format!(
                    "sparsity needs a function [Real] -> [Real], not {}",
                    show(&args[0])
                ));
            }
            expect(vec![f, a])?;
            let ints = Type::array(Type::Int);
            Ok(Type::Tuple(vec![ints.clone(), ints]))
        }
        Prim::SparseJacobian => {
            if a != real_vec || b != real_vec {
                return Err(format!(
                    "sparse_jacobian needs a function [Real] -> [Real], not {}",
                    show(&args[0])
                ));
            }
            expect(vec![f, a])?;
            let ints = Type::array(Type::Int);
            Ok(Type::Tuple(vec![ints.clone(), ints, real_vec]))
        }
        Prim::Jet => {
            expect(vec![f, a.clone(), Type::array(ta), Type::Int])?;
            Ok(Type::Tuple(vec![b.clone(), Type::array(tb)]))
        }
        _ => Err(format!("{} is not a differential operator", p.name())),
    }
}
