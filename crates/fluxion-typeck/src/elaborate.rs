//! Elaboration: resolves names, infers types by unification and lowers the surface AST
//! to Core A-normal form, in one walk.
//!
//! Desugaring, done here once and nowhere else:
//! - every intermediate value gets a `let` (ANF); `&&`/`||` become `if`;
//! - `let` and parameter tuple patterns become projections;
//! - `match` patterns (nested constructors, tuples, literals) are compiled to flat
//!   constructor `match`es and `if`s by `compile_rows` (patterns.rs);
//! - lambdas are lifted to [`Code`]s with their captured variables listed; a closure is
//!   made where the lambda stood;
//! - a built-in or constructor used as a value is eta-expanded to a lambda.
//!
//! Inference is local: top-level signatures are given, everything inside is inferred.
//! Arguments that are lambdas are checked after the other arguments of the same call,
//! so that `map(|p| p.0, pairs)` knows `p`'s type. Checks that need a type to be known
//! (`.N`, differential operators, `+` on numbers only) are deferred until the end.

use std::collections::{HashMap, HashSet};

use fluxion_core::prim::{Constraint, SchemeTy};
use fluxion_core::{
    Atom, Binding, Body, Code, CodeId, CodeKind, EnumDef, EnumId, Lit, Module, Prim, Rhs, Span,
    Type, VarId, VariantDef,
};
use fluxion_syntax::ast::{self, BinOp, ExprKind, PatKind, UnOp};

use crate::TypeError;
use crate::infer::{Ty, Unifier, UnifyError};
use crate::scope::{Local, Scope};

pub(crate) fn span(s: fluxion_syntax::Span) -> Span {
    Span {
        source: s.source,
        start: s.start,
        end: s.end,
    }
}

/// The expression whose value a block (or nested blocks) returns, for error spans.
pub(crate) fn result_expr(e: &ast::Expr) -> &ast::Expr {
    match &e.kind {
        ExprKind::Block(_, r) => result_expr(r),
        _ => e,
    }
}

/// A lambda being elaborated: the variables of enclosing scopes it uses.
#[derive(Default)]
struct LambdaCtx {
    /// In order of first use (the closure's capture list).
    captures: Vec<VarId>,
    /// The same variables, for a membership test that does not scan the list.
    captured: HashSet<VarId>,
}

impl LambdaCtx {
    fn capture(&mut self, var: VarId) {
        if self.captured.insert(var) {
            self.captures.push(var);
        }
    }
}

/// What a constraint is on, for its message. Static, so that recording one of the
/// many constraints (one per arithmetic operator) allocates nothing.
#[derive(Clone, Copy)]
pub(crate) enum Subject {
    /// An operator or built-in, shown in backticks.
    Named(&'static str),
    /// A phrase, shown as it is.
    Phrase(&'static str),
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Named(name) => write!(f, "`{name}`"),
            Subject::Phrase(phrase) => f.write_str(phrase),
        }
    }
}

pub(crate) enum Deferred {
    Proj {
        tuple: Ty,
        index: usize,
        result: Ty,
        span: Span,
    },
    Constraint {
        ty: Ty,
        constraint: Constraint,
        what: Subject,
        span: Span,
    },
    Differential {
        prim: Prim,
        args: Vec<Ty>,
        result: Ty,
        span: Span,
    },
}

struct FnSig {
    code: CodeId,
    params: Vec<Ty>,
    ret: Ty,
}

pub(crate) struct Elab {
    pub(crate) module: Module,
    pub(crate) var_tys: Vec<Ty>,
    pub(crate) u: Unifier,
    pub(crate) errors: Vec<TypeError>,
    /// The errors above, to find a repeated one without scanning them all.
    reported: HashSet<TypeError>,
    /// Projections and differential operators waiting for a type to become known,
    /// each with its [`Elab::defer`] sequence number; retried whenever one is added.
    pub(crate) deferred: Vec<(usize, Deferred)>,
    /// Constraints, checked only at the end (with their sequence numbers), so kept
    /// apart: retrying them at every `.N` would make elaboration quadratic.
    pub(crate) constraints: Vec<(usize, Deferred)>,
    /// How many checks were ever deferred: the next sequence number.
    pub(crate) deferred_count: usize,
    scope: Scope,
    lambdas: Vec<LambdaCtx>,
    blocks: Vec<Vec<Binding>>,
    /// Top-level functions by name, one table per input (the prelude's, then the
    /// user's): code of input i sees inputs i, i-1, …, 0, innermost first, so user
    /// definitions shadow prelude names in user code only (lexical scoping).
    functions: Vec<HashMap<String, FnSig>>,
    /// The input whose code is being elaborated.
    current_input: usize,
    enum_names: HashMap<String, EnumId>,
    ctors: HashMap<String, (EnumId, u32)>,
    current_fn: String,
    lambda_counter: usize,
    /// Result types of lambda codes, resolved when elaboration ends.
    pub(crate) lambda_rets: Vec<(CodeId, Ty)>,
}

/// The Core name of a function whose name a later input's function takes: `name_prelude`,
/// numbered if even that is taken.
fn shadowed_name(name: &str, taken: &mut HashSet<String>) -> String {
    let mut candidate = format!("{name}_prelude");
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{name}_prelude{n}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

/// Which source a top-level item came from, to let user functions shadow the prelude.
pub(crate) struct Input<'a> {
    pub(crate) module: &'a ast::Module,
}

impl Elab {
    pub(crate) fn new() -> Elab {
        Elab {
            module: Module::default(),
            var_tys: Vec::new(),
            u: Unifier::default(),
            errors: Vec::new(),
            reported: HashSet::new(),
            deferred: Vec::new(),
            constraints: Vec::new(),
            deferred_count: 0,
            scope: Scope::default(),
            lambdas: Vec::new(),
            blocks: Vec::new(),
            functions: Vec::new(),
            current_input: 0,
            enum_names: HashMap::new(),
            ctors: HashMap::new(),
            current_fn: String::new(),
            lambda_counter: 0,
            lambda_rets: Vec::new(),
        }
    }

    pub(crate) fn error(&mut self, span: Span, message: impl Into<String>) {
        let error = TypeError {
            span,
            message: message.into(),
        };
        // Bodies compiled twice by pattern matching would report twice.
        if self.reported.insert(error.clone()) {
            self.errors.push(error);
        }
    }

    pub(crate) fn show(&self, t: &Ty) -> String {
        self.u.show(t, &self.module.enums)
    }

    /// Unifies `found` with `expected`, reporting a mismatch at `span`.
    pub(crate) fn expect(&mut self, found: &Ty, expected: &Ty, span: Span, what: &str) {
        match self.u.unify(found, expected) {
            Ok(()) => {}
            Err(UnifyError::Mismatch) => {
                let msg = format!(
                    "{what}: expected {}, found {}",
                    self.show(expected),
                    self.show(found)
                );
                self.error(span, msg);
            }
            Err(UnifyError::Infinite(v, t)) => {
                let msg = format!(
                    "{what}: this needs an infinite type, `{}` (is a value applied to \
                     itself, or put inside itself?)",
                    self.u.show_infinite(v, &t, &self.module.enums)
                );
                self.error(span, msg);
            }
        }
    }

    pub(crate) fn fresh_var(&mut self, name: &str, ty: Ty) -> VarId {
        let v = self.module.fresh_var(name, Type::Unit);
        self.var_tys.push(ty);
        v
    }

    /// Emits `let v = rhs;` into the current block.
    pub(crate) fn emit(&mut self, hint: &str, rhs: Rhs, ty: Ty, span: Span) -> Atom {
        let var = self.fresh_var(hint, ty);
        self.blocks
            .last_mut()
            .expect("emit outside a block")
            .push(Binding { var, rhs, span });
        Atom::Var(var)
    }

    /// Runs `f` with a fresh block and returns it as a body ending in `f`'s atom.
    pub(crate) fn in_block(&mut self, f: impl FnOnce(&mut Elab) -> Atom) -> Body {
        self.blocks.push(Vec::new());
        let result = f(self);
        let bindings = self.blocks.pop().expect("block stack");
        Body { bindings, result }
    }

    /// An atom standing for a piece that failed to type-check.
    pub(crate) fn poison(&mut self) -> (Atom, Ty) {
        (Atom::Lit(Lit::Unit), self.u.fresh())
    }

    pub(crate) fn push_scope(&mut self, name: &str, var: VarId) {
        let depth = self.lambdas.len();
        self.scope.push(name, Local { var, depth });
    }

    // ------------------------------------------------------------ declarations

    pub(crate) fn declare_enums(&mut self, inputs: &[Input]) {
        let defs: Vec<&ast::EnumDef> = inputs
            .iter()
            .flat_map(|i| &i.module.items)
            .filter_map(|it| match it {
                ast::Item::Enum(e) => Some(e),
                _ => None,
            })
            .collect();
        // `ETan` names the tangent type of an enum `E` (docs/decisions.md, "Language"): an
        // enum of that name would make the two indistinguishable ("expected PTan,
        // found PTan"), so it is not declared.
        let declared: std::collections::HashSet<&str> =
            defs.iter().map(|d| d.name.name.as_str()).collect();
        for def in &defs {
            let name = &def.name.name;
            if let Some(base) = name.strip_suffix("Tan")
                && (declared.contains(base) || self.enum_names.contains_key(base))
            {
                self.error(
                    span(def.name.span),
                    format!(
                        "type `{name}` cannot be defined: `{name}` names the tangent type of enum `{base}`"
                    ),
                );
                continue;
            }
            if ["Real", "Int", "Bool"].contains(&def.name.name.as_str())
                || self.enum_names.contains_key(&def.name.name)
            {
                self.error(
                    span(def.name.span),
                    format!("type `{}` is already defined", def.name.name),
                );
                continue;
            }
            let id = EnumId(self.module.enums.len() as u32);
            self.enum_names.insert(def.name.name.clone(), id);
            self.module.enums.push(EnumDef {
                name: def.name.name.clone(),
                variants: Vec::new(),
                origin: None,
            });
        }
        for def in &defs {
            let Some(&id) = self.enum_names.get(&def.name.name) else {
                continue;
            };
            if !self.module.enums[id.0 as usize].variants.is_empty() {
                continue;
            }
            let mut variants = Vec::new();
            for v in &def.variants {
                // A constructor's tag is its place among those kept (a duplicate is
                // reported and left out).
                let tag = variants.len();
                if self.ctors.contains_key(&v.name.name) {
                    self.error(
                        span(v.name.span),
                        format!("constructor `{}` is already defined", v.name.name),
                    );
                    continue;
                }
                self.ctors.insert(v.name.name.clone(), (id, tag as u32));
                let fields = v.fields.iter().map(|t| self.type_expr(t)).collect();
                variants.push(VariantDef {
                    name: v.name.name.clone(),
                    fields,
                });
            }
            // (Not when every constructor was a duplicate, reported above.)
            if def.variants.is_empty() {
                self.error(
                    span(def.name.span),
                    "an enum needs at least one constructor",
                );
            }
            self.module.enums[id.0 as usize].variants = variants;
        }
    }

    pub(crate) fn type_expr(&mut self, t: &ast::TypeExpr) -> Type {
        use ast::TypeExprKind as K;
        match &t.kind {
            K::Real => Type::Real,
            K::Int => Type::Int,
            K::Bool => Type::Bool,
            K::Unit => Type::Unit,
            K::Tuple(ts) => Type::Tuple(ts.iter().map(|t| self.type_expr(t)).collect()),
            K::Array(t) => Type::array(self.type_expr(t)),
            K::Fn(ps, r) => Type::func(
                ps.iter().map(|t| self.type_expr(t)).collect(),
                self.type_expr(r),
            ),
            K::Named(name) => match self.enum_names.get(name) {
                Some(id) => Type::Enum(*id),
                // `ETan` names T(E), the tangent type of enum `E` (docs/language.md §5).
                None if name
                    .strip_suffix("Tan")
                    .is_some_and(|base| self.enum_names.contains_key(base)) =>
                {
                    let base = self.enum_names[&name[..name.len() - 3]];
                    self.module.tangent_type(&Type::Enum(base))
                }
                None => {
                    self.error(span(t.span), format!("unknown type `{name}`"));
                    Type::Unit
                }
            },
        }
    }

    /// Declares every top-level function of every input. A later input's function
    /// shadows an earlier one's of the same name for the later input's code only; the
    /// shadowed code keeps its meaning for its own input and gets a distinct Core name
    /// (`dot_prelude`), so that printed Core stays unambiguous.
    pub(crate) fn declare_functions<'a>(
        &mut self,
        inputs: &[Input<'a>],
    ) -> Vec<(CodeId, &'a ast::FnDef, usize)> {
        let mut defs = Vec::new();
        // The last input defining each name: its code gets the plain name.
        let mut last_owner: HashMap<&str, usize> = HashMap::new();
        let mut all_names: HashSet<String> = HashSet::new();
        for (i, input) in inputs.iter().enumerate() {
            for item in &input.module.items {
                if let ast::Item::Fn(f) = item {
                    last_owner.insert(&f.name.name, i);
                    all_names.insert(f.name.name.clone());
                }
            }
        }
        self.functions = inputs.iter().map(|_| HashMap::new()).collect();
        for (i, input) in inputs.iter().enumerate() {
            for item in &input.module.items {
                let ast::Item::Fn(f) = item else { continue };
                if self.functions[i].contains_key(&f.name.name) {
                    self.error(
                        span(f.name.span),
                        format!("function `{}` is defined twice", f.name.name),
                    );
                    continue;
                }
                if Prim::from_surface_name(&f.name.name).is_some() {
                    self.error(
                        span(f.name.span),
                        format!("`{}` is a built-in and cannot be redefined", f.name.name),
                    );
                    continue;
                }
                let core_name = if last_owner[f.name.name.as_str()] == i {
                    f.name.name.clone()
                } else {
                    shadowed_name(&f.name.name, &mut all_names)
                };
                let params: Vec<Ty> = f
                    .params
                    .iter()
                    .map(|(_, t)| Ty::from_type(&self.type_expr(t)))
                    .collect();
                let ret_type = self.type_expr(&f.ret);
                let code = self.module.add_code(Code {
                    ret: ret_type.clone(),
                    ..Code::placeholder(core_name.clone(), CodeKind::TopLevel, span(f.span))
                });
                self.module.functions.insert(core_name, code);
                self.functions[i].insert(
                    f.name.name.clone(),
                    FnSig {
                        code,
                        params,
                        ret: Ty::from_type(&ret_type),
                    },
                );
                defs.push((code, f, i));
            }
        }
        defs
    }

    /// The top-level function `name` as the current input's code sees it.
    fn function(&self, name: &str) -> Option<&FnSig> {
        let visible = self.functions.len().min(self.current_input + 1);
        self.functions[..visible]
            .iter()
            .rev()
            .find_map(|table| table.get(name))
    }

    pub(crate) fn define_function(&mut self, code: CodeId, f: &ast::FnDef, input: usize) {
        self.current_fn = f.name.name.clone();
        self.current_input = input;
        self.lambda_counter = 0;
        let sig = &self.functions[input][&f.name.name];
        let (param_tys, ret) = (sig.params.clone(), sig.ret.clone());
        let mut params = Vec::new();
        self.bound_once(f.params.iter().map(|(p, _)| p));
        let mark = self.scope.len();
        let mut body = self.in_block(|el| {
            for ((pat, _), ty) in f.params.iter().zip(&param_tys) {
                let v = el.param_var(pat, ty.clone());
                params.push(v);
            }
            let (atom, ty) = el.expr(&f.body, Some(&ret));
            el.expect(
                &ty,
                &ret,
                span(result_expr(&f.body).span),
                "function result",
            );
            atom
        });
        self.scope.truncate(mark);
        let c = &mut self.module.codes[code.0 as usize];
        c.params = params;
        std::mem::swap(&mut c.body, &mut body);
    }

    /// Elaborates a lone expression as a parameterless top-level function `name`
    /// whose result type is inferred.
    pub(crate) fn define_expr_entry(&mut self, name: &str, e: &ast::Expr) {
        self.current_fn = name.to_string();
        // The expression is the last input's (the user's) code.
        self.current_input = self.functions.len().saturating_sub(1);
        let ret = self.u.fresh();
        let code = self.module.add_code(Code::placeholder(
            name.to_string(),
            CodeKind::TopLevel,
            span(e.span),
        ));
        self.module.functions.insert(name.to_string(), code);
        let body = self.in_block(|el| {
            let (atom, ty) = el.expr(e, None);
            el.expect(&ty, &ret, span(e.span), "expression");
            atom
        });
        self.module.codes[code.0 as usize].body = body;
        self.lambda_rets.push((code, ret));
    }

    /// Binds a parameter pattern: a variable named after it, destructured in the block.
    fn param_var(&mut self, pat: &ast::Pat, ty: Ty) -> VarId {
        let name = match &pat.kind {
            PatKind::Var(n) => n.as_str(),
            _ => "arg",
        };
        let v = self.fresh_var(name, ty.clone());
        self.bind_irrefutable(pat, Atom::Var(v), ty);
        v
    }

    /// Reports a name bound twice by `pats` (one parameter list, or one pattern): the
    /// second would silently shadow the first.
    pub(crate) fn bound_once<'p>(&mut self, pats: impl IntoIterator<Item = &'p ast::Pat>) {
        fn walk<'p>(p: &'p ast::Pat, out: &mut Vec<(&'p str, &'p ast::Pat)>) {
            match &p.kind {
                PatKind::Var(name) => out.push((name, p)),
                PatKind::Tuple(ps) | PatKind::Ctor(_, ps) => ps.iter().for_each(|q| walk(q, out)),
                _ => {}
            }
        }
        let mut names = Vec::new();
        pats.into_iter().for_each(|p| walk(p, &mut names));
        let mut seen = HashSet::new();
        for (name, at) in names {
            if !seen.insert(name) {
                self.error(
                    span(at.span),
                    format!("`{name}` is bound more than once here"),
                );
            }
        }
    }

    /// Binds an irrefutable pattern (`_`, a name, tuples of them) to `atom`.
    pub(crate) fn bind_irrefutable(&mut self, pat: &ast::Pat, atom: Atom, ty: Ty) {
        match &pat.kind {
            PatKind::Wild => {}
            PatKind::Var(name) => {
                if Prim::from_surface_name(name).is_some() {
                    self.error(
                        span(pat.span),
                        format!("`{name}` is a built-in and cannot be rebound"),
                    );
                }
                let var = match atom {
                    Atom::Var(v) => v,
                    Atom::Lit(_) => match self.emit(name, Rhs::Atom(atom), ty, span(pat.span)) {
                        Atom::Var(v) => v,
                        Atom::Lit(_) => unreachable!("emit returns a variable"),
                    },
                };
                self.push_scope(name, var);
            }
            PatKind::Tuple(pats) => {
                let elems: Vec<Ty> = pats.iter().map(|_| self.u.fresh()).collect();
                self.expect(
                    &ty,
                    &Ty::Tuple(elems.clone()),
                    span(pat.span),
                    "tuple pattern",
                );
                for (i, (p, t)) in pats.iter().zip(elems).enumerate() {
                    if matches!(p.kind, PatKind::Wild) {
                        continue;
                    }
                    let hint = match &p.kind {
                        PatKind::Var(n) => n.clone(),
                        _ => "proj".into(),
                    };
                    let a = self.emit(&hint, Rhs::Proj(atom, i), t.clone(), span(p.span));
                    self.bind_irrefutable(p, a, t);
                }
            }
            PatKind::Ctor(..) | PatKind::Int(_) | PatKind::Real(_) | PatKind::Bool(_) => {
                self.error(
                    span(pat.span),
                    "refutable pattern where only a name, `_` or a tuple pattern is allowed",
                );
            }
        }
    }

    // ------------------------------------------------------------ expressions

    /// Elaborates `e` into the current block; returns its atom and type. `expected`
    /// is a hint pushed into lambdas; callers still unify the result.
    pub(crate) fn expr(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> (Atom, Ty) {
        let sp = span(e.span);
        match &e.kind {
            ExprKind::Int(n) => (Atom::Lit(Lit::Int(*n)), Ty::Int),
            ExprKind::Real(r) => (Atom::Lit(Lit::Real(*r)), Ty::Real),
            ExprKind::Bool(b) => (Atom::Lit(Lit::Bool(*b)), Ty::Bool),
            ExprKind::Unit => (Atom::Lit(Lit::Unit), Ty::Unit),
            ExprKind::Error => self.poison(),
            ExprKind::Var(name) => self.var_ref(name, sp),
            ExprKind::Ctor(name) => self.ctor_value(name, sp, expected),
            ExprKind::Lambda(params, body) => self.lambda(params, body, expected, sp),
            ExprKind::Call(callee, args) => self.call(callee, args, sp, expected),
            ExprKind::Block(stmts, result) => {
                let mark = self.scope.len();
                for ast::Stmt::Let { pat, ty, value } in stmts {
                    let annotated = ty.as_ref().map(|t| Ty::from_type(&self.type_expr(t)));
                    let before = self.module.vars.len();
                    let (atom, vty) = self.expr(value, annotated.as_ref());
                    if let Some(a) = &annotated {
                        self.expect(&vty, a, span(value.span), "`let` annotation");
                    }
                    // Name the value after the binder when this `let` computed it.
                    if let (PatKind::Var(name), Atom::Var(v)) = (&pat.kind, atom)
                        && v.0 as usize >= before
                    {
                        self.module.vars[v.0 as usize].name = name.clone();
                    }
                    self.bound_once([pat]);
                    self.bind_irrefutable(pat, atom, vty);
                }
                let r = self.expr(result, expected);
                self.scope.truncate(mark);
                r
            }
            ExprKind::If(c, t, f) => {
                let (ca, cty) = self.expr(c, None);
                self.expect(&cty, &Ty::Bool, span(c.span), "`if` condition");
                let ty = expected.cloned().unwrap_or_else(|| self.u.fresh());
                let then = self.in_block(|el| {
                    let (a, t_ty) = el.expr(t, Some(&ty));
                    el.expect(&t_ty, &ty, span(t.span), "`if` branch");
                    a
                });
                let els = self.in_block(|el| {
                    let (a, f_ty) = el.expr(f, Some(&ty));
                    el.expect(
                        &f_ty,
                        &ty,
                        span(f.span),
                        "`else` branch (both branches must have the same type)",
                    );
                    a
                });
                let a = self.emit(
                    "if",
                    Rhs::If(ca, Box::new(then), Box::new(els)),
                    ty.clone(),
                    sp,
                );
                (a, ty)
            }
            ExprKind::Match(scrutinee, arms) => self.match_expr(scrutinee, arms, expected, sp),
            ExprKind::Tuple(elems) => {
                // The expected type of each part, where a tuple of that size is expected
                // (so that `(Plain(1.0), 1.0)` builds an `(ItemTan, Real)`).
                let parts = match expected.map(|t| self.u.shallow(t)) {
                    Some(Ty::Tuple(ts)) if ts.len() == elems.len() => ts,
                    _ => Vec::new(),
                };
                let (atoms, tys): (Vec<Atom>, Vec<Ty>) = elems
                    .iter()
                    .enumerate()
                    .map(|(i, e)| self.expr(e, parts.get(i)))
                    .unzip();
                let ty = Ty::Tuple(tys);
                (self.emit("tup", Rhs::Tuple(atoms), ty.clone(), sp), ty)
            }
            ExprKind::Proj(t, index) => {
                let (ta, tty) = self.expr(t, None);
                let result = self.u.fresh();
                self.defer(Deferred::Proj {
                    tuple: tty,
                    index: *index,
                    result: result.clone(),
                    span: sp,
                });
                self.solve_deferred(false);
                (
                    self.emit("proj", Rhs::Proj(ta, *index), result.clone(), sp),
                    result,
                )
            }
            ExprKind::Array(elems) => {
                let elem = self.u.fresh();
                // The expected element type, a hint for the elements (`[Plain(1.0)]`
                // builds an `[ItemTan]` where one is expected).
                let hint = match expected.map(|t| self.u.shallow(t)) {
                    Some(Ty::Array(t)) => Some(*t),
                    _ => None,
                };
                let mut atoms = Vec::new();
                for e in elems {
                    let (a, t) = self.expr(e, hint.as_ref());
                    self.expect(
                        &t,
                        &elem,
                        span(e.span),
                        "array element (all elements must have the same type)",
                    );
                    atoms.push(a);
                }
                let ty = Ty::array(elem);
                (self.emit("arr", Rhs::Array(atoms), ty.clone(), sp), ty)
            }
            ExprKind::Index(a, i) => {
                let (aa, aty) = self.expr(a, None);
                let elem = self.u.fresh();
                self.expect(&aty, &Ty::array(elem.clone()), span(a.span), "indexing");
                let (ia, ity) = self.expr(i, None);
                self.expect(&ity, &Ty::Int, span(i.span), "array index");
                (
                    self.emit(
                        "elem",
                        Rhs::Prim(Prim::Index, vec![aa, ia]),
                        elem.clone(),
                        sp,
                    ),
                    elem,
                )
            }
            ExprKind::Unary(op, x) => {
                let (xa, xty) = self.expr(x, None);
                match op {
                    UnOp::Neg => {
                        self.constrain(&xty, Constraint::Num, Subject::Phrase("negation"), sp);
                        (
                            self.emit("neg", Rhs::Prim(Prim::Neg, vec![xa]), xty.clone(), sp),
                            xty,
                        )
                    }
                    UnOp::Not => {
                        self.expect(&xty, &Ty::Bool, span(x.span), "`!`");
                        (
                            self.emit("not", Rhs::Prim(Prim::Not, vec![xa]), Ty::Bool, sp),
                            Ty::Bool,
                        )
                    }
                }
            }
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r, sp),
        }
    }

    /// Records that `ty` must satisfy `constraint`, checked when elaboration ends —
    /// unless `ty` is already fully known and satisfies it (so the end would find the
    /// same), as most are: that keeps the list of waiting checks short.
    pub(crate) fn constrain(&mut self, ty: &Ty, constraint: Constraint, what: Subject, span: Span) {
        if let Some(known) = self.u.concrete(ty)
            && fluxion_core::prim::satisfies(&known, constraint, &self.module.enums)
        {
            return;
        }
        self.defer(Deferred::Constraint {
            ty: ty.clone(),
            constraint,
            what,
            span,
        });
    }

    fn binary(&mut self, op: BinOp, l: &ast::Expr, r: &ast::Expr, sp: Span) -> (Atom, Ty) {
        if matches!(op, BinOp::And | BinOp::Or) {
            // Short-circuit: `a && b` is `if a { b } else { false }`.
            let (la, lty) = self.expr(l, None);
            self.expect(
                &lty,
                &Ty::Bool,
                span(l.span),
                &format!("`{}` operand", op.symbol()),
            );
            let rhs_body = self.in_block(|el| {
                let (ra, rty) = el.expr(r, None);
                el.expect(
                    &rty,
                    &Ty::Bool,
                    span(r.span),
                    &format!("`{}` operand", op.symbol()),
                );
                ra
            });
            let short = Body {
                bindings: vec![],
                result: Atom::Lit(Lit::Bool(op == BinOp::Or)),
            };
            let (then, els) = if op == BinOp::And {
                (rhs_body, short)
            } else {
                (short, rhs_body)
            };
            let a = self.emit(
                if op == BinOp::And { "and" } else { "or" },
                Rhs::If(la, Box::new(then), Box::new(els)),
                Ty::Bool,
                sp,
            );
            return (a, Ty::Bool);
        }
        let (la, lty) = self.expr(l, None);
        let (ra, rty) = self.expr(r, None);
        let unified = self.u.unify(&lty, &rty);
        if let Err(UnifyError::Infinite(v, t)) = &unified {
            let msg = format!(
                "`{}`: its operands would need an infinite type, `{}`",
                op.symbol(),
                self.u.show_infinite(*v, t, &self.module.enums)
            );
            self.error(sp, msg);
        } else if unified.is_err() {
            let msg = format!(
                "`{}` needs operands of the same type, found {} and {}{}",
                op.symbol(),
                self.show(&lty),
                self.show(&rty),
                if matches!(
                    (self.u.shallow(&lty), self.u.shallow(&rty)),
                    (Ty::Int, Ty::Real) | (Ty::Real, Ty::Int)
                ) {
                    " (convert with `to_real`)"
                } else {
                    ""
                }
            );
            self.error(sp, msg);
        }
        // After a mismatch, the result's type is unknown (not the left operand's), so
        // that one mistake gives one error.
        let lty = if unified.is_err() {
            self.u.fresh()
        } else {
            lty
        };
        let (prim, hint) = match op {
            BinOp::Add => (Prim::Add, "add"),
            BinOp::Sub => (Prim::Sub, "sub"),
            BinOp::Mul => (Prim::Mul, "mul"),
            BinOp::Div => (Prim::Div, "div"),
            BinOp::Rem => (Prim::Rem, "rem"),
            BinOp::Eq => (Prim::Eq, "eq"),
            BinOp::Ne => (Prim::Ne, "ne"),
            BinOp::Lt => (Prim::Lt, "lt"),
            BinOp::Le => (Prim::Le, "le"),
            BinOp::Gt => (Prim::Gt, "gt"),
            BinOp::Ge => (Prim::Ge, "ge"),
            BinOp::And | BinOp::Or => unreachable!("handled above"),
        };
        let what = Subject::Named(op.symbol());
        let ty = match op {
            BinOp::Eq | BinOp::Ne => {
                self.constrain(&lty, Constraint::Eq, what, sp);
                Ty::Bool
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                self.constrain(&lty, Constraint::Num, what, sp);
                Ty::Bool
            }
            _ => {
                self.constrain(&lty, Constraint::Num, what, sp);
                lty
            }
        };
        (
            self.emit(hint, Rhs::Prim(prim, vec![la, ra]), ty.clone(), sp),
            ty,
        )
    }

    fn lookup_local(&self, name: &str) -> Option<Local> {
        self.scope.lookup(name)
    }

    fn var_ref(&mut self, name: &str, sp: Span) -> (Atom, Ty) {
        if let Some(Local { var, depth }) = self.lookup_local(name) {
            // Every lambda between the binder and this use captures the variable.
            for ctx in &mut self.lambdas[depth..] {
                ctx.capture(var);
            }
            return (Atom::Var(var), self.var_tys[var.0 as usize].clone());
        }
        if let Some(sig) = self.function(name) {
            let ty = Ty::func(sig.params.clone(), sig.ret.clone());
            let code = sig.code;
            return (
                self.emit(name, Rhs::Closure(code, vec![]), ty.clone(), sp),
                ty,
            );
        }
        if let Some(prim) = Prim::from_surface_name(name) {
            return self.eta_prim(prim, sp);
        }
        self.error(sp, format!("unknown variable `{name}`"));
        self.poison()
    }

    /// A built-in used as a value becomes `|x, ...| prim(x, ...)`.
    fn eta_prim(&mut self, prim: Prim, sp: Span) -> (Atom, Ty) {
        let Some(scheme) = prim.scheme() else {
            self.error(
                sp,
                format!(
                    "`{}` must be called directly, it is not a function value",
                    prim.name()
                ),
            );
            return self.poison();
        };
        let (params, ret) =
            self.instantiate(&scheme.vars, &scheme.params, &scheme.ret, prim.name(), sp);
        self.make_eta(prim.name(), params, ret, sp, |args| Rhs::Prim(prim, args))
    }

    fn make_eta(
        &mut self,
        name: &str,
        params: Vec<Ty>,
        ret: Ty,
        sp: Span,
        rhs: impl FnOnce(Vec<Atom>) -> Rhs,
    ) -> (Atom, Ty) {
        let code = self.new_lambda_code(sp);
        let vars: Vec<VarId> = params
            .iter()
            .map(|t| self.fresh_var("x", t.clone()))
            .collect();
        let body = self.in_block(|el| {
            let args = vars.iter().map(|v| Atom::Var(*v)).collect();
            el.emit(name, rhs(args), ret.clone(), sp)
        });
        self.finish_lambda_code(code, vec![], vars, ret.clone(), body);
        let ty = Ty::func(params, ret);
        (
            self.emit(name, Rhs::Closure(code, vec![]), ty.clone(), sp),
            ty,
        )
    }

    /// Fresh types for a scheme's variables, with their constraints recorded.
    pub(crate) fn instantiate(
        &mut self,
        vars: &[Constraint],
        params: &[SchemeTy],
        ret: &SchemeTy,
        what: &'static str,
        sp: Span,
    ) -> (Vec<Ty>, Ty) {
        let args: Vec<Ty> = vars.iter().map(|_| self.u.fresh()).collect();
        for (t, c) in args.iter().zip(vars) {
            if *c != Constraint::Any {
                self.constrain(t, *c, Subject::Named(what), sp);
            }
        }
        fn inst(s: &SchemeTy, args: &[Ty]) -> Ty {
            match s {
                SchemeTy::Var(i) => args[*i].clone(),
                SchemeTy::Real => Ty::Real,
                SchemeTy::Int => Ty::Int,
                SchemeTy::Bool => Ty::Bool,
                SchemeTy::Unit => Ty::Unit,
                SchemeTy::Tuple(ts) => Ty::Tuple(ts.iter().map(|t| inst(t, args)).collect()),
                SchemeTy::Array(t) => Ty::array(inst(t, args)),
                SchemeTy::Fn(ps, r) => {
                    Ty::func(ps.iter().map(|t| inst(t, args)).collect(), inst(r, args))
                }
            }
        }
        (
            params.iter().map(|p| inst(p, &args)).collect(),
            inst(ret, &args),
        )
    }

    fn ctor_value(&mut self, name: &str, sp: Span, expected: Option<&Ty>) -> (Atom, Ty) {
        let Some((eid, tag)) = self.resolve_ctor(name, expected) else {
            self.error(sp, format!("unknown constructor `{name}`"));
            return self.poison();
        };
        let fields: Vec<Ty> = self.module.enums[eid.0 as usize].variants[tag as usize]
            .fields
            .iter()
            .map(Ty::from_type)
            .collect();
        if fields.is_empty() {
            let ty = Ty::Enum(eid);
            return (
                self.emit(
                    &name.to_lowercase(),
                    Rhs::Ctor(eid, tag, vec![]),
                    ty.clone(),
                    sp,
                ),
                ty,
            );
        }
        self.make_eta(&name.to_lowercase(), fields, Ty::Enum(eid), sp, |args| {
            Rhs::Ctor(eid, tag, args)
        })
    }

    fn new_lambda_code(&mut self, sp: Span) -> CodeId {
        self.lambda_counter += 1;
        let name = format!("{}_lambda{}", self.current_fn, self.lambda_counter);
        self.module
            .add_code(Code::placeholder(name, CodeKind::Lambda, sp))
    }

    pub(crate) fn finish_lambda_code(
        &mut self,
        code: CodeId,
        captures: Vec<VarId>,
        params: Vec<VarId>,
        ret: Ty,
        body: Body,
    ) {
        self.lambda_rets.push((code, ret));
        let c = &mut self.module.codes[code.0 as usize];
        c.captures = captures;
        c.params = params;
        c.body = body;
    }

    fn lambda(
        &mut self,
        params: &[ast::LambdaParam],
        body: &ast::Expr,
        expected: Option<&Ty>,
        sp: Span,
    ) -> (Atom, Ty) {
        let expected = expected.map(|t| self.u.shallow(t));
        let expected_params: Option<Vec<Ty>> = match &expected {
            Some(Ty::Fn(ps, _)) if ps.len() == params.len() => Some(ps.clone()),
            _ => None,
        };
        let expected_ret = match &expected {
            Some(Ty::Fn(ps, r)) if ps.len() == params.len() => Some((**r).clone()),
            _ => None,
        };
        let code = self.new_lambda_code(sp);
        let mut param_tys = Vec::new();
        for (i, p) in params.iter().enumerate() {
            let ty = match &p.ty {
                Some(t) => Ty::from_type(&self.type_expr(t)),
                None => self.u.fresh(),
            };
            if let Some(ep) = &expected_params {
                self.expect(&ep[i], &ty, span(p.pat.span), "lambda parameter");
            }
            param_tys.push(ty);
        }
        self.bound_once(params.iter().map(|p| &p.pat));
        let mark = self.scope.len();
        self.lambdas.push(LambdaCtx::default());
        let mut param_vars = Vec::new();
        let ret = expected_ret.unwrap_or_else(|| self.u.fresh());
        let body = self.in_block(|el| {
            for (p, ty) in params.iter().zip(&param_tys) {
                let v = el.param_var(&p.pat, ty.clone());
                param_vars.push(v);
            }
            let (a, bty) = el.expr(body, Some(&ret));
            el.expect(&bty, &ret, span(result_expr(body).span), "lambda body");
            a
        });
        let ctx = self.lambdas.pop().expect("lambda stack");
        self.scope.truncate(mark);
        // Captures of an enclosing lambda were recorded by `var_ref` already.
        let captures = ctx.captures;
        self.finish_lambda_code(code, captures.clone(), param_vars, ret.clone(), body);
        let ty = Ty::func(param_tys, ret);
        let args = captures.iter().map(|v| Atom::Var(*v)).collect();
        (
            self.emit("lam", Rhs::Closure(code, args), ty.clone(), sp),
            ty,
        )
    }

    fn call(
        &mut self,
        callee: &ast::Expr,
        args: &[ast::Expr],
        sp: Span,
        expected: Option<&Ty>,
    ) -> (Atom, Ty) {
        if let ExprKind::Var(name) = &callee.kind
            && self.lookup_local(name).is_none()
        {
            if let Some(sig) = self.function(name) {
                let (code, params, ret) = (sig.code, sig.params.clone(), sig.ret.clone());
                if params.len() != args.len() {
                    self.error(
                        sp,
                        format!(
                            "`{name}` takes {} argument(s) but {} were given",
                            params.len(),
                            args.len()
                        ),
                    );
                    return self.poison();
                }
                let atoms = self.args(args, &params, &format!("argument of `{name}`"));
                return (
                    self.emit(name, Rhs::CallDirect(code, atoms), ret.clone(), sp),
                    ret,
                );
            }
            if let Some(prim) = Prim::from_surface_name(name) {
                return self.prim_call(prim, args, sp, expected);
            }
        }
        if let ExprKind::Ctor(name) = &callee.kind {
            return self.ctor_call(name, args, sp, expected);
        }
        let (fa, fty) = self.expr(callee, None);
        let params: Vec<Ty> = match self.u.shallow(&fty) {
            Ty::Fn(ps, _) if ps.len() == args.len() => ps,
            Ty::Fn(ps, _) => {
                self.error(
                    sp,
                    format!(
                        "this function takes {} argument(s) but {} were given",
                        ps.len(),
                        args.len()
                    ),
                );
                return self.poison();
            }
            _ => args.iter().map(|_| self.u.fresh()).collect(),
        };
        let ret = self.u.fresh();
        self.expect(
            &fty,
            &Ty::func(params.clone(), ret.clone()),
            span(callee.span),
            "called value",
        );
        let atoms = self.args(args, &params, "argument");
        (
            self.emit("call", Rhs::Call(fa, atoms), ret.clone(), sp),
            ret,
        )
    }

    /// Elaborates arguments against parameter types: lambdas last, so that they see
    /// what the other arguments taught about their parameter types.
    pub(crate) fn args(&mut self, args: &[ast::Expr], params: &[Ty], what: &str) -> Vec<Atom> {
        let mut atoms = vec![Atom::Lit(Lit::Unit); args.len()];
        let is_lambda = |e: &ast::Expr| matches!(e.kind, ExprKind::Lambda(..));
        let order = (0..args.len())
            .filter(|i| !is_lambda(&args[*i]))
            .chain((0..args.len()).filter(|i| is_lambda(&args[*i])));
        for i in order {
            let (a, t) = self.expr(&args[i], Some(&params[i]));
            self.expect(&t, &params[i], span(args[i].span), what);
            atoms[i] = a;
        }
        atoms
    }

    /// The enum and tag a constructor name denotes: a constructor of the expected
    /// enum type if there is one (so that a derived tangent enum's values, which share
    /// their base enum's constructor names, can be built and matched), otherwise the
    /// user enum that declares the name.
    pub(crate) fn resolve_ctor(&self, name: &str, expected: Option<&Ty>) -> Option<(EnumId, u32)> {
        if let Some(Ty::Enum(e)) = expected.map(|t| self.u.shallow(t))
            && let Some(tag) = self.module.enums[e.0 as usize]
                .variants
                .iter()
                .position(|v| v.name == name)
        {
            return Some((e, tag as u32));
        }
        self.ctors.get(name).copied()
    }

    fn ctor_call(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        sp: Span,
        expected: Option<&Ty>,
    ) -> (Atom, Ty) {
        let Some((eid, tag)) = self.resolve_ctor(name, expected) else {
            self.error(sp, format!("unknown constructor `{name}`"));
            return self.poison();
        };
        let fields: Vec<Ty> = self.module.enums[eid.0 as usize].variants[tag as usize]
            .fields
            .iter()
            .map(Ty::from_type)
            .collect();
        if fields.len() != args.len() {
            self.error(
                sp,
                format!(
                    "constructor `{name}` takes {} field(s) but {} were given",
                    fields.len(),
                    args.len()
                ),
            );
            return self.poison();
        }
        let atoms = self.args(args, &fields, &format!("field of `{name}`"));
        let ty = Ty::Enum(eid);
        (
            self.emit(
                &name.to_lowercase(),
                Rhs::Ctor(eid, tag, atoms),
                ty.clone(),
                sp,
            ),
            ty,
        )
    }
}

impl Elab {
    pub(crate) fn scope_len(&self) -> usize {
        self.scope.len()
    }

    pub(crate) fn truncate_scope(&mut self, len: usize) {
        self.scope.truncate(len);
    }
}
