//! A whole Core program: enums, codes, variables.

use std::collections::HashMap;

use crate::term::*;
use crate::ty::{EnumDef, Type};

#[derive(Clone, Debug, Default)]
pub struct Module {
    pub enums: Vec<EnumDef>,
    pub codes: Vec<Code>,
    pub vars: Vec<VarInfo>,
    /// Top-level functions by name (user functions and the prelude).
    pub functions: HashMap<String, CodeId>,
}

impl Module {
    pub fn code(&self, id: CodeId) -> &Code {
        &self.codes[id.0 as usize]
    }

    pub fn var(&self, id: VarId) -> &VarInfo {
        &self.vars[id.0 as usize]
    }

    pub fn var_ty(&self, id: VarId) -> &Type {
        &self.vars[id.0 as usize].ty
    }

    /// A new variable, bound nowhere yet.
    pub fn fresh_var(&mut self, name: impl Into<String>, ty: Type) -> VarId {
        let id = VarId(self.vars.len() as u32);
        self.vars.push(VarInfo {
            name: name.into(),
            ty,
        });
        id
    }

    pub fn add_code(&mut self, code: Code) -> CodeId {
        let id = CodeId(self.codes.len() as u32);
        self.codes.push(code);
        id
    }

    pub fn atom_ty(&self, atom: &Atom) -> Type {
        match atom {
            Atom::Var(v) => self.var_ty(*v).clone(),
            Atom::Lit(l) => l.ty(),
        }
    }

    /// The type of a function value made from `code`.
    pub fn code_ty(&self, id: CodeId) -> Type {
        let code = self.code(id);
        Type::func(
            code.params
                .iter()
                .map(|p| self.var_ty(*p).clone())
                .collect(),
            code.ret.clone(),
        )
    }

    /// Looks up an enum constructor by name: (enum, tag).
    pub fn find_ctor(&self, name: &str) -> Option<(crate::EnumId, u32)> {
        self.enums.iter().enumerate().find_map(|(e, def)| {
            def.variants
                .iter()
                .position(|v| v.name == name)
                .map(|tag| (crate::EnumId(e as u32), tag as u32))
        })
    }

    pub fn enum_def(&self, id: crate::EnumId) -> &EnumDef {
        &self.enums[id.0 as usize]
    }
}
