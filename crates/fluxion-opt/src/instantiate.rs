//! Copies of a code's body under fresh names, for the passes that put a function's
//! body where it is called (`inline`) or compose two lambdas into one (`fuse`).
//!
//! Variables are bound once in a module, so a copy renames every variable the body
//! binds (`let`s, match fields). A lambda made inside the body reads its enclosing
//! scope under the variables' own ids (its capture list names them), so its code is
//! copied too, its captures renamed with the rest; a derived code (a translation made
//! on its own, which binds its captures positionally) is shared, not copied.

use std::collections::{HashMap, HashSet};

use fluxion_core::{Arm, Atom, Binding, Body, Code, CodeId, CodeKind, Module, Rhs, Span, VarId};

/// `code`'s body as bindings for one call: copies `let c' = capture` and `let p' =
/// argument` first, then the body under fresh names; returns them and the result.
pub(crate) fn instantiate(
    m: &mut Module,
    code: CodeId,
    captures: &[Atom],
    args: &[Atom],
    span: Span,
) -> (Vec<Binding>, Atom) {
    instantiate_projecting(m, code, captures, args, None, span)
}

/// Like [`instantiate`], but the parameter `projected.0` is not bound: its argument is
/// a tuple given by its components, and each projection `p.i` of it in the body is
/// the component `projected.1[i]` (the body reads it only so; `unzip` checks).
pub(crate) fn instantiate_projecting(
    m: &mut Module,
    code: CodeId,
    captures: &[Atom],
    args: &[Atom],
    projected: Option<(usize, Vec<Option<Atom>>)>,
    span: Span,
) -> (Vec<Binding>, Atom) {
    let derived: HashSet<CodeId> = m.derived_codes.values().copied().collect();
    // A prelude function's body put into the user's code: its faults are the call's
    // (`fluxion_core::inline_site`).
    let site = if m.code(code).span.is_prelude() {
        m.inline_site(code, span)
    } else {
        None
    };
    let mut copier = Copier {
        m,
        derived: &derived,
        names: HashMap::new(),
        projections: HashMap::new(),
        site,
    };
    let source = copier.m.code(code).clone();
    if let Some((i, parts)) = projected {
        copier.projections.insert(source.params[i], parts);
    }
    let mut out = Vec::with_capacity(captures.len() + args.len() + source.body.bindings.len());
    for (&v, a) in source
        .captures
        .iter()
        .zip(captures)
        .chain(source.params.iter().zip(args))
    {
        if copier.projections.contains_key(&v) {
            continue;
        }
        let fresh = copier.fresh(v);
        out.push(Binding {
            var: fresh,
            rhs: Rhs::Atom(*a),
            span,
        });
    }
    let body = copier.body(&source.body);
    out.extend(body.bindings);
    (out, body.result)
}

/// The bindings a copy of `code`'s body makes: its own and those of the lambdas made
/// in it, which are copied with it (what inlining and fusion pay for).
pub(crate) fn deep_size(m: &Module, code: CodeId) -> usize {
    copied_codes(m, code)
        .into_iter()
        .map(|c| fluxion_core::visit::count_bindings(&m.code(c).body))
        .sum()
}

/// `code` and the lambdas made in it, at any depth: the codes a copy of its body
/// copies (a derived code is shared, not copied).
pub(crate) fn copied_codes(m: &Module, code: CodeId) -> Vec<CodeId> {
    let derived: HashSet<CodeId> = m.derived_codes.values().copied().collect();
    let mut out = Vec::new();
    let mut stack = vec![code];
    let mut seen = HashSet::new();
    while let Some(c) = stack.pop() {
        if !seen.insert(c) {
            continue;
        }
        out.push(c);
        fluxion_core::visit::for_each_binding(&m.code(c).body, &mut |b| {
            if let Rhs::Closure(d, _) = &b.rhs
                && m.code(*d).kind == CodeKind::Lambda
                && !derived.contains(d)
            {
                stack.push(*d);
            }
        });
    }
    out
}

struct Copier<'m> {
    m: &'m mut Module,
    derived: &'m HashSet<CodeId>,
    /// Variable of the source → its copy.
    names: HashMap<VarId, VarId>,
    /// A tuple parameter given by its components: `p.i` is the i-th.
    projections: HashMap<VarId, Vec<Option<Atom>>>,
    /// The inline site the copied prelude spans become, if the copy is put into the
    /// user's code.
    site: Option<Span>,
}

impl Copier<'_> {
    fn fresh(&mut self, v: VarId) -> VarId {
        let info = self.m.var(v).clone();
        let copy = self.m.fresh_var(info.name, info.ty);
        self.names.insert(v, copy);
        copy
    }

    /// The span of a copy of what was at `span`.
    fn span(&self, span: Span) -> Span {
        match self.site {
            Some(site) if span.is_prelude() => site,
            _ => span,
        }
    }

    fn var(&self, v: VarId) -> VarId {
        self.names.get(&v).copied().unwrap_or(v)
    }

    fn atom(&self, a: &Atom) -> Atom {
        match a {
            Atom::Var(v) => Atom::Var(self.var(*v)),
            Atom::Lit(_) => *a,
        }
    }

    fn atoms(&self, args: &[Atom]) -> Vec<Atom> {
        args.iter().map(|a| self.atom(a)).collect()
    }

    fn body(&mut self, body: &Body) -> Body {
        let mut bindings = Vec::with_capacity(body.bindings.len());
        for b in &body.bindings {
            let rhs = self.rhs(&b.rhs);
            let var = self.fresh(b.var);
            bindings.push(Binding {
                var,
                rhs,
                span: self.span(b.span),
            });
        }
        Body {
            bindings,
            result: self.atom(&body.result),
        }
    }

    fn rhs(&mut self, rhs: &Rhs) -> Rhs {
        match rhs {
            Rhs::Atom(a) => Rhs::Atom(self.atom(a)),
            Rhs::Proj(Atom::Var(v), i) if self.projections.contains_key(v) => {
                Rhs::Atom(self.projections[v][*i].expect("a component the body reads"))
            }
            Rhs::Proj(a, i) => Rhs::Proj(self.atom(a), *i),
            Rhs::Prim(p, args) => Rhs::Prim(*p, self.atoms(args)),
            Rhs::Tuple(args) => Rhs::Tuple(self.atoms(args)),
            Rhs::Array(args) => Rhs::Array(self.atoms(args)),
            Rhs::Ctor(e, t, args) => Rhs::Ctor(*e, *t, self.atoms(args)),
            Rhs::CallDirect(c, args) => Rhs::CallDirect(*c, self.atoms(args)),
            Rhs::Call(f, args) => Rhs::Call(self.atom(f), self.atoms(args)),
            Rhs::Closure(c, args) => {
                let code = self.lambda(*c);
                Rhs::Closure(code, self.atoms(args))
            }
            Rhs::If(c, t, e) => {
                Rhs::If(self.atom(c), Box::new(self.body(t)), Box::new(self.body(e)))
            }
            Rhs::Match(s, arms, default) => {
                let s = self.atom(s);
                let arms = arms
                    .iter()
                    .map(|arm| {
                        let fields = arm.fields.iter().map(|f| self.fresh(*f)).collect();
                        Arm {
                            tag: arm.tag,
                            fields,
                            body: self.body(&arm.body),
                        }
                    })
                    .collect();
                let default = default.as_ref().map(|d| Box::new(self.body(d)));
                Rhs::Match(s, arms, default)
            }
        }
    }

    /// The code a copied `Closure` makes: a copy of a lambda whose captures were
    /// renamed (its body reads them by id); a top-level or derived code as it is.
    fn lambda(&mut self, c: CodeId) -> CodeId {
        let source = self.m.code(c);
        if source.kind != CodeKind::Lambda
            || self.derived.contains(&c)
            || !source.captures.iter().any(|v| self.names.contains_key(v))
        {
            return c;
        }
        let source = source.clone();
        let captures = source.captures.iter().map(|v| self.var(*v)).collect();
        let params = source.params.iter().map(|p| self.fresh(*p)).collect();
        let body = self.body(&source.body);
        let copy = self.m.add_code(Code {
            name: source.name,
            kind: CodeKind::Lambda,
            captures,
            params,
            ret: source.ret,
            body,
            span: self.span(source.span),
        });
        // A copy of a translation translates the same original (delta mode reads it to
        // apply another layer to a closure it holds).
        if let Some(&original) = self.m.translated_from.get(&c) {
            self.m.translated_from.insert(copy, original);
        }
        if let Some(primal) = self.m.primal_captures.get(&c).cloned() {
            self.m.primal_captures.insert(copy, primal);
        }
        copy
    }
}

/// A copy of `rhs` that reads each variable of `renamed` under its new name; what it
/// binds inside (branch bindings, arm fields, the lambdas made in it, whose codes are
/// copied) is fresh. A translation computing a binding on primals uses it
/// (fluxion-ad's `activity.rs`).
pub fn copy_rhs(m: &mut Module, rhs: &Rhs, renamed: &HashMap<VarId, VarId>) -> Rhs {
    let derived: HashSet<CodeId> = m.derived_codes.values().copied().collect();
    let mut copier = Copier {
        m,
        derived: &derived,
        names: renamed.clone(),
        projections: HashMap::new(),
        site: None,
    };
    copier.rhs(rhs)
}
