//! A `map2` over one array twice is a `map`: `map2(f, xs, xs)` becomes
//! `map(|x| f(x, x), xs)`, `f`'s body copied, so the array is read once and `fuse` can
//! merge the loop that made it (`dot(r, r)` of a `build`, gmm's `qtimes` squared: one
//! loop, no array). The same value and faults: the length check cannot fail, and the
//! elements are visited in the same order.

use std::collections::HashMap;

use fluxion_core::{Atom, Body, CodeId, Prim, Rhs, Type, VarId};

use crate::Context;
use crate::lambda::{Callee, Lambda};

/// Rewrites the `map2`s of one array twice in `body` (in its branches too).
pub(crate) fn merge_twin_operands(cx: &mut Context, body: &mut Body) {
    Merger {
        cx,
        closures: HashMap::new(),
    }
    .body(body);
}

struct Merger<'a, 'c> {
    cx: &'a mut Context<'c>,
    /// Variables bound to a closure here.
    closures: HashMap<VarId, (CodeId, Vec<Atom>)>,
}

impl Merger<'_, '_> {
    fn body(&mut self, body: &mut Body) {
        let mut out = Vec::with_capacity(body.bindings.len());
        for mut b in std::mem::take(&mut body.bindings) {
            match &mut b.rhs {
                Rhs::Closure(c, args) => {
                    self.closures.insert(b.var, (*c, args.clone()));
                }
                Rhs::Prim(Prim::Map2, a) if a[1] == a[2] => {
                    if let Atom::Var(f) = a[0]
                        && let Some((code, caps)) = self.closures.get(&f).cloned()
                        && self.cx.may_copy(code, b.span)
                        && self
                            .cx
                            .spend(crate::instantiate::deep_size(self.cx.m, code))
                    {
                        let xs = a[1];
                        let m = &mut *self.cx.m;
                        let Type::Array(elem) = m.atom_ty(&xs) else {
                            unreachable!("map2 of arrays")
                        };
                        let Type::Fn(_, ret) = m.var_ty(f).clone() else {
                            unreachable!("map2 of a function")
                        };
                        let x = m.fresh_var("x", *elem.clone());
                        let mut lam = Lambda::new(b.span);
                        let r = lam.apply(m, &Callee::Known(code, caps), vec![Atom::Var(x); 2]);
                        let (code, caps) = lam.finish(m, "twin", vec![x], r, *ret.clone());
                        let g = m.fresh_var("twin", Type::func(vec![*elem], *ret));
                        out.push(fluxion_core::Binding {
                            var: g,
                            rhs: Rhs::Closure(code, caps),
                            span: b.span,
                        });
                        b.rhs = Rhs::Prim(Prim::Map, vec![Atom::Var(g), xs]);
                        self.cx.changed = true;
                    }
                }
                rhs => fluxion_core::visit::for_each_branch_mut(rhs, &mut |inner| self.body(inner)),
            }
            out.push(b);
        }
        body.bindings = out;
    }
}
