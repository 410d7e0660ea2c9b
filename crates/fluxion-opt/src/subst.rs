//! Renaming of variables to atoms, as the passes that drop a binding `let x = a`
//! (copy, projection of a known tuple, common subexpression) apply it to what follows.
//! Variables are unique in a module and a lambda sees its enclosing scope only through
//! its `Closure`'s capture list, so a renaming is a plain map over one code's body.

use std::collections::HashMap;

use fluxion_core::{Atom, Rhs, VarId};

#[derive(Default)]
pub(crate) struct Subst(HashMap<VarId, Atom>);

impl Subst {
    pub(crate) fn insert(&mut self, v: VarId, a: Atom) {
        let a = self.atom(&a);
        self.0.insert(v, a);
    }

    pub(crate) fn atom(&self, a: &Atom) -> Atom {
        match a {
            Atom::Var(v) => self.0.get(v).copied().unwrap_or(*a),
            Atom::Lit(_) => *a,
        }
    }

    /// Renames the atoms of `rhs` itself (not of the bodies nested in it).
    pub(crate) fn rhs(&self, rhs: &mut Rhs) {
        let fix = |a: &mut Atom| *a = self.atom(a);
        match rhs {
            Rhs::Atom(a) | Rhs::Proj(a, _) => fix(a),
            Rhs::Prim(_, args)
            | Rhs::Tuple(args)
            | Rhs::Array(args)
            | Rhs::Ctor(_, _, args)
            | Rhs::Closure(_, args)
            | Rhs::CallDirect(_, args) => args.iter_mut().for_each(fix),
            Rhs::Call(f, args) => {
                fix(f);
                args.iter_mut().for_each(fix);
            }
            Rhs::If(c, _, _) => fix(c),
            Rhs::Match(s, _, _) => fix(s),
        }
    }
}
