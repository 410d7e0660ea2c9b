//! Emits Core: fresh variables, `let` bindings into a stack of open blocks, and small
//! conveniences (projections, pairs, arithmetic) used by every transformation.

use fluxion_core::{
    Atom, Binding, Body, Code, CodeId, CodeKind, Lit, Module, Prim, Rhs, Span, Type, VarId,
};

pub(crate) struct Builder<'m> {
    pub(crate) m: &'m mut Module,
    blocks: Vec<Vec<Binding>>,
    pub(crate) span: Span,
}

pub(crate) fn real(x: f64) -> Atom {
    Atom::Lit(Lit::Real(x))
}

pub(crate) fn int(i: i64) -> Atom {
    Atom::Lit(Lit::Int(i))
}

impl<'m> Builder<'m> {
    pub(crate) fn new(m: &'m mut Module, span: Span) -> Builder<'m> {
        Builder {
            m,
            blocks: Vec::new(),
            span,
        }
    }

    pub(crate) fn ty(&self, a: &Atom) -> Type {
        self.m.atom_ty(a)
    }

    pub(crate) fn fresh(&mut self, hint: &str, ty: Type) -> VarId {
        self.m.fresh_var(hint, ty)
    }

    /// Emits `let v: ty = rhs;` and returns `v`.
    pub(crate) fn emit(&mut self, hint: &str, rhs: Rhs, ty: Type) -> Atom {
        let var = self.m.fresh_var(hint, ty);
        self.bind(var, rhs);
        Atom::Var(var)
    }

    /// Emits `let var = rhs;` for an existing variable.
    pub(crate) fn bind(&mut self, var: VarId, rhs: Rhs) {
        let span = self.span;
        self.blocks
            .last_mut()
            .expect("emit inside a block")
            .push(Binding { var, rhs, span });
    }

    /// Runs `f` in a new block; the block's bindings end in `f`'s atom.
    pub(crate) fn block(&mut self, f: impl FnOnce(&mut Self) -> Atom) -> Body {
        self.blocks.push(Vec::new());
        let result = f(self);
        let bindings = self.blocks.pop().expect("block stack");
        Body { bindings, result }
    }

    pub(crate) fn proj(&mut self, a: &Atom, i: usize) -> Atom {
        let Type::Tuple(ts) = self.ty(a) else {
            panic!("projection of a non-tuple in generated code")
        };
        let hint = if ts.len() == 2 && ts[0] == Type::Real {
            // Forward mode's (primal, tangent) or the delta layer's (primal, id).
            match (i, &ts[1]) {
                (0, _) => "pri",
                (_, Type::Int) => "id",
                _ => "tan",
            }
        } else {
            "proj"
        };
        self.emit(hint, Rhs::Proj(*a, i), ts[i].clone())
    }

    pub(crate) fn tuple(&mut self, hint: &str, parts: Vec<Atom>) -> Atom {
        let ty = Type::Tuple(parts.iter().map(|a| self.ty(a)).collect());
        self.emit(hint, Rhs::Tuple(parts), ty)
    }

    /// A primitive whose result has the type of its first argument (arithmetic).
    pub(crate) fn arith(&mut self, p: Prim, args: &[Atom]) -> Atom {
        let ty = self.ty(&args[0]);
        self.emit(
            p.name().trim_start_matches('%'),
            Rhs::Prim(p, args.to_vec()),
            ty,
        )
    }

    pub(crate) fn prim(&mut self, p: Prim, args: &[Atom], ty: Type) -> Atom {
        self.emit(
            p.name().trim_start_matches('%'),
            Rhs::Prim(p, args.to_vec()),
            ty,
        )
    }

    pub(crate) fn add(&mut self, a: Atom, b: Atom) -> Atom {
        self.arith(Prim::Add, &[a, b])
    }

    pub(crate) fn sub(&mut self, a: Atom, b: Atom) -> Atom {
        self.arith(Prim::Sub, &[a, b])
    }

    pub(crate) fn mul(&mut self, a: Atom, b: Atom) -> Atom {
        self.arith(Prim::Mul, &[a, b])
    }

    pub(crate) fn div(&mut self, a: Atom, b: Atom) -> Atom {
        self.arith(Prim::Div, &[a, b])
    }

    pub(crate) fn neg(&mut self, a: Atom) -> Atom {
        self.arith(Prim::Neg, &[a])
    }

    pub(crate) fn unary(&mut self, p: Prim, a: Atom) -> Atom {
        self.prim(p, &[a], Type::Real)
    }

    pub(crate) fn cmp(&mut self, p: Prim, a: Atom, b: Atom) -> Atom {
        self.prim(p, &[a, b], Type::Bool)
    }

    /// `if c { then } else { els }` with result type `ty`.
    pub(crate) fn if_(
        &mut self,
        c: Atom,
        ty: Type,
        then: impl FnOnce(&mut Self) -> Atom,
        els: impl FnOnce(&mut Self) -> Atom,
    ) -> Atom {
        let t = self.block(then);
        let e = self.block(els);
        self.emit("if", Rhs::If(c, Box::new(t), Box::new(e)), ty)
    }

    /// Like [`Builder::block`] for a body that may fail: the block's bindings end in
    /// `f`'s atom, or its error is returned.
    pub(crate) fn try_block<E>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Atom, E>,
    ) -> Result<Body, E> {
        let mut failure = None;
        let body = self.block(|b| {
            f(b).unwrap_or_else(|e| {
                failure = Some(e);
                Atom::Lit(Lit::Unit)
            })
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(body),
        }
    }

    /// Reserves a code (filled in later by [`Builder::finish_code`]).
    pub(crate) fn reserve_code(&mut self, name: &str, kind: CodeKind) -> CodeId {
        self.m.add_code(Code::placeholder(name, kind, self.span))
    }

    pub(crate) fn finish_code(
        &mut self,
        id: CodeId,
        captures: Vec<VarId>,
        params: Vec<VarId>,
        ret: Type,
        body: Body,
    ) {
        let c = &mut self.m.codes[id.0 as usize];
        c.captures = captures;
        c.params = params;
        c.ret = ret;
        c.body = body;
    }

    /// Makes a lambda with parameters of `param_tys` whose body `f` builds, capturing
    /// the variables of this scope its body reads (its free variables).
    pub(crate) fn closure(
        &mut self,
        name: &str,
        param_tys: Vec<Type>,
        f: impl FnOnce(&mut Self, &[Atom]) -> Atom,
    ) -> Atom {
        self.make_lambda(name, name, None, param_tys, f)
    }

    /// Makes a lambda with parameters of `param_tys` capturing `captures` (variables in
    /// scope here, used under the same ids inside), whose body `f` builds.
    pub(crate) fn lambda(
        &mut self,
        name: &str,
        captures: &[VarId],
        param_tys: Vec<Type>,
        f: impl FnOnce(&mut Self, &[Atom]) -> Atom,
    ) -> Atom {
        self.make_lambda(name, "lam", Some(captures), param_tys, f)
    }

    /// A lambda capturing `captures`, or (`None`) its body's free variables; its code
    /// is called `name`, the variable holding it `hint`.
    fn make_lambda(
        &mut self,
        name: &str,
        hint: &str,
        captures: Option<&[VarId]>,
        param_tys: Vec<Type>,
        f: impl FnOnce(&mut Self, &[Atom]) -> Atom,
    ) -> Atom {
        let id = self.reserve_code(name, CodeKind::Lambda);
        let params: Vec<VarId> = param_tys
            .iter()
            .map(|t| self.fresh("p", t.clone()))
            .collect();
        let args: Vec<Atom> = params.iter().map(|p| Atom::Var(*p)).collect();
        let body = self.block(|b| f(b, &args));
        let captures: Vec<VarId> = match captures {
            Some(cs) => cs.to_vec(),
            None => fluxion_core::visit::free_vars(&body)
                .into_iter()
                .filter(|v| !params.contains(v))
                .collect(),
        };
        let ret = self.ty(&body.result);
        self.finish_code(id, captures.clone(), params, ret.clone(), body);
        self.emit(
            hint,
            Rhs::Closure(id, captures.into_iter().map(Atom::Var).collect()),
            Type::func(param_tys, ret),
        )
    }
}
