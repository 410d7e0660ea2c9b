//! Small loops unrolled, so that small arrays become scalars: a `build`, `map` or
//! `map2` whose count is known here to be a literal K ≤ [`MAX_COUNT`] (`lengths.rs`:
//! `build(3, f)`, a `map` over a literal or a `slice(v, s, 3)`), and whose function is
//! a closure made in this code, becomes the array literal of its K applications, each
//! a copy of the function's body; a `sumbuild` or `sum` of reals over such a count
//! becomes K additions from `0.0` in the loop's order (the interpreter's and the
//! native sum's order: the same bits). `simplify` then reads a literal at a constant
//! index as the element (`[a, b, c][1]` is `b`) and its `length` as its count, so an
//! array made and read only at constant indices dies: bundle adjustment's 3-vectors
//! (`cross`, `rotate`'s `build(3, ..)`, `dot` of two of them) are scalar code, which
//! the AD passes differentiate without an array per point.
//!
//! Faults and their order are the loop's: elements are computed in index order, each
//! copied binding keeps its span, and a `map2` is unrolled only where both lengths are
//! known to be the same K (its length check could not fail).

use std::collections::HashMap;

use fluxion_core::{Atom, Binding, Body, CodeId, Lit, Prim, Rhs, Span, Type, VarId};

use crate::Context;
use crate::instantiate::{deep_size, instantiate};

/// Loops of at most this many elements are unrolled.
pub(crate) const MAX_COUNT: i64 = 4;
/// Element functions of at most this many bindings (their lambdas' included) are
/// copied.
const MAX_BODY: usize = 24;

/// Unrolls the small loops of `body` (and of the branches nested in it).
pub(crate) fn unroll_small_loops(cx: &mut Context, body: &mut Body) {
    Unroller {
        cx,
        closures: HashMap::new(),
    }
    .body(body);
}

struct Unroller<'a, 'c> {
    cx: &'a mut Context<'c>,
    /// Variables bound to a closure here: its code and captured atoms.
    closures: HashMap<VarId, (CodeId, Vec<Atom>)>,
}

/// What a loop computes per element.
enum Shape {
    /// `build`/`map`/`map2`: the array of the applications.
    Array,
    /// `sumbuild`/`sum` of reals: their sum from `0.0`.
    Sum,
}

impl Unroller<'_, '_> {
    fn body(&mut self, body: &mut Body) {
        let mut out = Vec::with_capacity(body.bindings.len());
        for mut b in std::mem::take(&mut body.bindings) {
            if let Some(bindings) = self.unrolled(&b) {
                self.cx.changed = true;
                out.extend(bindings);
                continue;
            }
            match &mut b.rhs {
                Rhs::Closure(c, args) => {
                    self.closures.insert(b.var, (*c, args.clone()));
                }
                Rhs::Atom(Atom::Var(v)) => {
                    if let Some(known) = self.closures.get(v).cloned() {
                        self.closures.insert(b.var, known);
                    }
                }
                Rhs::If(_, t, e) => {
                    self.body(t);
                    self.body(e);
                }
                Rhs::Match(_, arms, default) => {
                    for arm in arms.iter_mut() {
                        self.body(&mut arm.body);
                    }
                    if let Some(d) = default {
                        self.body(d);
                    }
                }
                _ => {}
            }
            out.push(b);
        }
        body.bindings = out;
    }

    /// The bindings that replace `b`, if it is a small loop to unroll: the copies of
    /// the element function, then `b`'s variable bound to their array or sum.
    fn unrolled(&mut self, b: &Binding) -> Option<Vec<Binding>> {
        let lengths = self.cx.lengths;
        let real = self.cx.m.var_ty(b.var) == &Type::Real;
        // The count, the element function (none for `sum`) and the arrays read.
        let (count, f, arrays, shape) = match &b.rhs {
            Rhs::Prim(Prim::Build, a) => (
                lengths.literal_count(a[0])?,
                Some(a[1]),
                vec![],
                Shape::Array,
            ),
            Rhs::Prim(Prim::Sumbuild, a) if real => {
                (lengths.literal_count(a[0])?, Some(a[1]), vec![], Shape::Sum)
            }
            Rhs::Prim(Prim::Map, a) => (
                lengths.literal_length(a[1])?,
                Some(a[0]),
                vec![a[1]],
                Shape::Array,
            ),
            Rhs::Prim(Prim::Map2, a) if lengths.same_length(a[1], a[2]) => (
                lengths.literal_length(a[1])?,
                Some(a[0]),
                vec![a[1], a[2]],
                Shape::Array,
            ),
            Rhs::Prim(Prim::Sum, a) if real => {
                (lengths.literal_length(a[0])?, None, vec![a[0]], Shape::Sum)
            }
            _ => return None,
        };
        if !(0..=MAX_COUNT).contains(&count) {
            return None;
        }
        let callee = match f {
            Some(Atom::Var(f)) => {
                let (code, captures) = self.closures.get(&f)?.clone();
                let size = deep_size(self.cx.m, code);
                if !self.cx.may_copy(code, b.span)
                    || size > MAX_BODY
                    || !self.cx.spend(size * count as usize)
                {
                    return None;
                }
                Some((code, captures))
            }
            Some(Atom::Lit(_)) => return None,
            None => None,
        };
        let mut out = Vec::new();
        let mut items = Vec::with_capacity(count as usize);
        for i in 0..count {
            let index = Atom::Lit(Lit::Int(i));
            let elems: Vec<Atom> = arrays
                .iter()
                .map(|xs| self.read(*xs, index, b.span, &mut out))
                .collect();
            let item = match &callee {
                Some((code, captures)) => {
                    let args = if arrays.is_empty() {
                        vec![index]
                    } else {
                        elems
                    };
                    let (bindings, result) = instantiate(self.cx.m, *code, captures, &args, b.span);
                    out.extend(bindings);
                    result
                }
                None => elems[0],
            };
            items.push(item);
        }
        let rhs = match shape {
            Shape::Array => Rhs::Array(items),
            Shape::Sum => {
                let mut acc = Atom::Lit(Lit::Real(0.0));
                for (i, item) in items.into_iter().enumerate() {
                    let rhs = Rhs::Prim(Prim::Add, vec![acc, item]);
                    if i + 1 == count as usize {
                        return Some(finish(out, b, rhs));
                    }
                    let v = self.cx.m.fresh_var("sum", Type::Real);
                    out.push(Binding {
                        var: v,
                        rhs,
                        span: b.span,
                    });
                    acc = Atom::Var(v);
                }
                Rhs::Atom(acc)
            }
        };
        Some(finish(out, b, rhs))
    }

    /// Binds `xs[i]` (in range: `xs` has the loop's count) and returns it.
    fn read(&mut self, xs: Atom, i: Atom, span: Span, out: &mut Vec<Binding>) -> Atom {
        let ty = match self.cx.m.atom_ty(&xs) {
            Type::Array(t) => *t,
            t => unreachable!("a loop over a {t:?}"),
        };
        let v = self.cx.m.fresh_var("elem", ty);
        out.push(Binding {
            var: v,
            rhs: Rhs::Prim(Prim::Index, vec![xs, i]),
            span,
        });
        Atom::Var(v)
    }
}

/// `out`, then `b`'s variable bound to `rhs`.
fn finish(mut out: Vec<Binding>, b: &Binding, rhs: Rhs) -> Vec<Binding> {
    out.push(Binding {
        var: b.var,
        rhs,
        span: b.span,
    });
    out
}
