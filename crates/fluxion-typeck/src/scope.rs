//! The local variables in scope during elaboration.
//!
//! A stack of bindings, innermost last, so that leaving a block, a lambda or a match
//! arm is a truncation back to a mark; plus a hash index from each name to its
//! innermost binding, so that a lookup costs the same however many variables are in
//! scope (a function of 40,000 `let`s would otherwise be quadratic to elaborate).

use std::collections::HashMap;
use std::rc::Rc;

use fluxion_core::VarId;

/// A local variable as a use of its name sees it.
#[derive(Clone, Copy)]
pub(crate) struct Local {
    pub(crate) var: VarId,
    /// Lambda nesting depth where the variable is bound.
    pub(crate) depth: usize,
}

struct Entry {
    /// Shared with the index's key: one allocation per distinct name.
    name: Rc<str>,
    local: Local,
    /// The entry this one shadows (the same name, bound further out), if any.
    shadowed: Option<usize>,
}

#[derive(Default)]
pub(crate) struct Scope {
    entries: Vec<Entry>,
    innermost: HashMap<Rc<str>, usize>,
}

impl Scope {
    /// Binds `name`, shadowing any outer binding of it until [`Scope::truncate`].
    pub(crate) fn push(&mut self, name: &str, local: Local) {
        let (name, shadowed) = match self.innermost.get_key_value(name) {
            Some((key, &outer)) => (Rc::clone(key), Some(outer)),
            None => (Rc::from(name), None),
        };
        self.innermost.insert(Rc::clone(&name), self.entries.len());
        self.entries.push(Entry {
            name,
            local,
            shadowed,
        });
    }

    /// The innermost binding of `name`.
    pub(crate) fn lookup(&self, name: &str) -> Option<Local> {
        self.innermost.get(name).map(|&i| self.entries[i].local)
    }

    /// A mark to truncate back to.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Forgets the bindings made since `mark`, uncovering the ones they shadowed.
    pub(crate) fn truncate(&mut self, mark: usize) {
        while self.entries.len() > mark {
            let entry = self.entries.pop().expect("length checked");
            match entry.shadowed {
                Some(outer) => self.innermost.insert(entry.name, outer),
                None => self.innermost.remove(&entry.name),
            };
        }
    }
}
