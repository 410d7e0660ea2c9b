//! A lambda built by a pass (`fuse`, `unzip`): its captures — variables of the
//! enclosing scope, which it reads under their own ids — and its bindings, made of
//! copies of known functions' bodies (`instantiate`) or calls of unknown ones.

use fluxion_core::{Atom, Binding, Body, Code, CodeId, CodeKind, Rhs, Span, Type, VarId};

use crate::instantiate::{instantiate, instantiate_projecting};

/// A function the fused lambda applies: a closure known here (its body is copied in)
/// or a variable (called, and captured).
pub(crate) enum Callee {
    Known(CodeId, Vec<Atom>),
    Var(VarId),
}

/// The fused lambda being built: its captures (variables of the enclosing scope) and
/// bindings.
pub(crate) struct Lambda {
    captures: Vec<VarId>,
    bindings: Vec<Binding>,
    span: Span,
}

impl Lambda {
    pub(crate) fn new(span: Span) -> Lambda {
        Lambda {
            captures: Vec::new(),
            bindings: Vec::new(),
            span,
        }
    }

    pub(crate) fn capture(&mut self, a: &Atom) {
        if let Atom::Var(v) = a
            && !self.captures.contains(v)
        {
            self.captures.push(*v);
        }
    }

    pub(crate) fn bind(
        &mut self,
        m: &mut fluxion_core::Module,
        name: &str,
        ty: Type,
        rhs: Rhs,
    ) -> Atom {
        let v = m.fresh_var(name, ty);
        self.bindings.push(Binding {
            var: v,
            rhs,
            span: self.span,
        });
        Atom::Var(v)
    }

    /// `array[i]`, `array` captured: the element a fused loop reads at its index.
    pub(crate) fn read(
        &mut self,
        m: &mut fluxion_core::Module,
        name: &str,
        array: Atom,
        i: VarId,
    ) -> Atom {
        self.capture(&array);
        let Type::Array(elem) = m.atom_ty(&array) else {
            unreachable!("an array operand")
        };
        self.bind(
            m,
            name,
            *elem,
            Rhs::Prim(fluxion_core::Prim::Index, vec![array, Atom::Var(i)]),
        )
    }

    /// Appends bindings made elsewhere (whose free variables are captured already).
    pub(crate) fn extend(&mut self, bindings: Vec<Binding>) {
        self.bindings.extend(bindings);
    }

    pub(crate) fn apply(
        &mut self,
        m: &mut fluxion_core::Module,
        callee: &Callee,
        args: Vec<Atom>,
    ) -> Atom {
        let span = self.span;
        self.apply_at(m, callee, args, span)
    }

    /// Applies `callee`; a call of an unknown function is at `span` (where the loop
    /// that called it was, so that a fault reported at the call stays there).
    pub(crate) fn apply_at(
        &mut self,
        m: &mut fluxion_core::Module,
        callee: &Callee,
        args: Vec<Atom>,
        span: Span,
    ) -> Atom {
        match callee {
            Callee::Known(code, caps) => {
                caps.iter().for_each(|a| self.capture(a));
                let (bindings, result) = instantiate(m, *code, caps, &args, span);
                self.bindings.extend(bindings);
                result
            }
            Callee::Var(f) => {
                self.capture(&Atom::Var(*f));
                let Type::Fn(_, ret) = m.var_ty(*f).clone() else {
                    unreachable!("a function")
                };
                let v = m.fresh_var("call", *ret);
                self.bindings.push(Binding {
                    var: v,
                    rhs: Rhs::Call(Atom::Var(*f), args),
                    span,
                });
                Atom::Var(v)
            }
        }
    }

    /// Applies known `code` whose parameter `projected.0` is a tuple given by its
    /// components (see [`instantiate_projecting`]); `args` has a placeholder there.
    pub(crate) fn apply_projecting(
        &mut self,
        m: &mut fluxion_core::Module,
        code: CodeId,
        caps: &[Atom],
        args: Vec<Atom>,
        projected: (usize, Vec<Option<Atom>>),
    ) -> Atom {
        caps.iter().for_each(|a| self.capture(a));
        let (bindings, result) =
            instantiate_projecting(m, code, caps, &args, Some(projected), self.span);
        self.bindings.extend(bindings);
        result
    }

    /// The lambda's code and the atoms its closure captures.
    pub(crate) fn finish(
        self,
        m: &mut fluxion_core::Module,
        name: &str,
        params: Vec<VarId>,
        result: Atom,
        ret: Type,
    ) -> (CodeId, Vec<Atom>) {
        let body = Body {
            bindings: self.bindings,
            result,
        };
        // Only what the body reads (a rule may have dropped the reader of a capture).
        let used = crate::uses::count_uses(&body);
        let mut captures = self.captures;
        captures.retain(|v| used.contains_key(v));
        let atoms = captures.iter().map(|v| Atom::Var(*v)).collect();
        let code = m.add_code(Code {
            name: name.into(),
            kind: CodeKind::Lambda,
            captures,
            params,
            ret,
            body,
            span: self.span,
        });
        (code, atoms)
    }
}
