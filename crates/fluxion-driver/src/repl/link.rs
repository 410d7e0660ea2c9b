//! Linking: copies codes of a freshly elaborated module into the session's module,
//! renumbering codes, variables and enums, so that values made earlier (closures hold
//! code ids) stay valid while new code joins them.
//!
//! Each generation of definitions is linked once, whole; an input is linked alone,
//! its references to top-level functions and enums resolved by name to the current
//! generation's copies.

use std::collections::HashMap;

use fluxion_core::{
    Arm, Atom, Binding, Body, Code, CodeId, CodeKind, EnumDef, EnumId, Module, Rhs, Type, TypeMap,
    VarId,
};

/// The current generation's top-level functions and enums, by name, in the session.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    pub(crate) functions: HashMap<String, CodeId>,
    pub(crate) enums: HashMap<String, EnumId>,
}

/// Lengths of the session module before a link, to undo it.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    codes: usize,
    vars: usize,
    enums: usize,
}

impl Mark {
    pub(crate) fn of(m: &Module) -> Mark {
        Mark {
            codes: m.codes.len(),
            vars: m.vars.len(),
            enums: m.enums.len(),
        }
    }

    pub(crate) fn first_code(self) -> usize {
        self.codes
    }

    /// Removes everything added since the mark (never run, so nothing refers to it).
    pub(crate) fn undo(self, m: &mut Module) {
        m.codes.truncate(self.codes);
        m.vars.truncate(self.vars);
        m.enums.truncate(self.enums);
        m.derived_enums.retain(|_, e| (e.0 as usize) < self.enums);
        m.derived_codes.retain(|_, c| (c.0 as usize) < self.codes);
        m.translated_from.retain(|d, _| (d.0 as usize) < self.codes);
    }
}

struct Linker<'a> {
    from: &'a Module,
    into: &'a mut Module,
    names: &'a Names,
    codes: HashMap<CodeId, CodeId>,
    vars: HashMap<VarId, VarId>,
    enums: HashMap<EnumId, EnumId>,
    queue: Vec<(CodeId, CodeId)>,
}

/// Links every code and enum of `from` (a generation's definitions) into `into` and
/// returns the names of the copies.
pub(crate) fn link_definitions(from: &Module, into: &mut Module) -> Names {
    let mut names = Names::default();
    for def in from.enums.iter().filter(|d| d.origin.is_none()) {
        let id = EnumId(into.enums.len() as u32);
        into.enums.push(EnumDef {
            name: def.name.clone(),
            variants: Vec::new(),
            origin: None,
        });
        names.enums.insert(def.name.clone(), id);
    }
    let mut functions: Vec<(&String, &CodeId)> = from.functions.iter().collect();
    functions.sort_by_key(|(_, c)| **c);
    let mut linker = Linker::new(from, into, &names);
    let mut copies = Vec::new();
    for (name, code) in functions {
        copies.push((name.clone(), linker.code(*code)));
    }
    // Base enums' fields, now that every base enum has its copy.
    for (i, def) in from.enums.iter().enumerate() {
        if def.origin.is_none() {
            let id = linker.enum_id(EnumId(i as u32));
            let variants = def
                .variants
                .iter()
                .map(|v| fluxion_core::VariantDef {
                    name: v.name.clone(),
                    fields: v.fields.iter().map(|t| linker.ty(t)).collect(),
                })
                .collect();
            linker.into.enums[id.0 as usize].variants = variants;
        }
    }
    linker.drain();
    drop(linker);
    names.functions = copies.into_iter().collect();
    into.functions = names.functions.clone();
    names
}

/// Links the code `entry` of `from` (an input) and what it needs that is not a
/// top-level function or enum of the generation `names` describes; returns its copy.
pub(crate) fn link_input(from: &Module, entry: CodeId, into: &mut Module, names: &Names) -> CodeId {
    let mut linker = Linker::new(from, into, names);
    let copy = linker.fresh_code(entry);
    linker.drain();
    copy
}

impl<'a> Linker<'a> {
    fn new(from: &'a Module, into: &'a mut Module, names: &'a Names) -> Linker<'a> {
        Linker {
            from,
            into,
            names,
            codes: HashMap::new(),
            vars: HashMap::new(),
            enums: HashMap::new(),
            queue: Vec::new(),
        }
    }

    /// The copy of `code`: a top-level function of the generation by name, else a new
    /// code (filled in by [`Linker::drain`]).
    fn code(&mut self, code: CodeId) -> CodeId {
        if let Some(c) = self.codes.get(&code) {
            return *c;
        }
        let src = self.from.code(code);
        if src.kind == CodeKind::TopLevel
            && let Some(c) = self.names.functions.get(&src.name)
        {
            self.codes.insert(code, *c);
            return *c;
        }
        self.fresh_code(code)
    }

    fn fresh_code(&mut self, code: CodeId) -> CodeId {
        let src = self.from.code(code);
        let copy = self
            .into
            .add_code(Code::placeholder(src.name.clone(), src.kind, src.span));
        self.codes.insert(code, copy);
        self.queue.push((code, copy));
        copy
    }

    /// Fills in every code allocated so far (and those they reach).
    fn drain(&mut self) {
        while let Some((code, copy)) = self.queue.pop() {
            let src = self.from.code(code);
            let captures = src.captures.iter().map(|v| self.var(*v)).collect();
            let params = src.params.iter().map(|v| self.var(*v)).collect();
            let ret = self.ty(&src.ret);
            let body = self.body(&src.body);
            let c = &mut self.into.codes[copy.0 as usize];
            c.captures = captures;
            c.params = params;
            c.ret = ret;
            c.body = body;
        }
    }

    fn var(&mut self, v: VarId) -> VarId {
        if let Some(c) = self.vars.get(&v) {
            return *c;
        }
        let info = self.from.var(v);
        let ty = self.ty(&info.ty);
        let copy = self.into.fresh_var(info.name.clone(), ty);
        self.vars.insert(v, copy);
        copy
    }

    fn enum_id(&mut self, e: EnumId) -> EnumId {
        if let Some(c) = self.enums.get(&e) {
            return *c;
        }
        let def = self.from.enum_def(e);
        let copy = match &def.origin {
            None => *self
                .names
                .enums
                .get(&def.name)
                .expect("every base enum of an input is one of its generation"),
            Some(origin) => {
                let mut id = self.enum_id(origin.base);
                for layer in &origin.layers {
                    id = self.into.derived_enum(id, *layer);
                }
                if origin.tangent {
                    id = self.into.derived_enum(id, TypeMap::Tangent);
                }
                id
            }
        };
        self.enums.insert(e, copy);
        copy
    }

    fn ty(&mut self, t: &Type) -> Type {
        match t {
            Type::Real | Type::Int | Type::Bool | Type::Unit => t.clone(),
            Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| self.ty(t)).collect()),
            Type::Array(t) => Type::array(self.ty(t)),
            Type::Fn(ps, r) => Type::func(ps.iter().map(|t| self.ty(t)).collect(), self.ty(r)),
            Type::Enum(e) => Type::Enum(self.enum_id(*e)),
        }
    }

    fn atom(&mut self, a: &Atom) -> Atom {
        match a {
            Atom::Var(v) => Atom::Var(self.var(*v)),
            Atom::Lit(l) => Atom::Lit(*l),
        }
    }

    fn atoms(&mut self, atoms: &[Atom]) -> Vec<Atom> {
        atoms.iter().map(|a| self.atom(a)).collect()
    }

    fn body(&mut self, body: &Body) -> Body {
        let bindings = body
            .bindings
            .iter()
            .map(|b| Binding {
                var: self.var(b.var),
                rhs: self.rhs(&b.rhs),
                span: b.span,
            })
            .collect();
        Body {
            bindings,
            result: self.atom(&body.result),
        }
    }

    fn rhs(&mut self, rhs: &Rhs) -> Rhs {
        match rhs {
            Rhs::Atom(a) => Rhs::Atom(self.atom(a)),
            Rhs::Prim(p, args) => Rhs::Prim(*p, self.atoms(args)),
            Rhs::Call(f, args) => Rhs::Call(self.atom(f), self.atoms(args)),
            Rhs::CallDirect(c, args) => Rhs::CallDirect(self.code(*c), self.atoms(args)),
            Rhs::Closure(c, args) => Rhs::Closure(self.code(*c), self.atoms(args)),
            Rhs::Tuple(args) => Rhs::Tuple(self.atoms(args)),
            Rhs::Proj(a, i) => Rhs::Proj(self.atom(a), *i),
            Rhs::Array(args) => Rhs::Array(self.atoms(args)),
            Rhs::Ctor(e, tag, args) => Rhs::Ctor(self.enum_id(*e), *tag, self.atoms(args)),
            Rhs::If(c, t, e) => {
                Rhs::If(self.atom(c), Box::new(self.body(t)), Box::new(self.body(e)))
            }
            Rhs::Match(a, arms, default) => Rhs::Match(
                self.atom(a),
                arms.iter()
                    .map(|arm| Arm {
                        tag: arm.tag,
                        fields: arm.fields.iter().map(|v| self.var(*v)).collect(),
                        body: self.body(&arm.body),
                    })
                    .collect(),
                default.as_ref().map(|d| Box::new(self.body(d))),
            ),
        }
    }
}
