//! Concatenated slices made once: `concat(slice(a, s, n), slice(a, t, k))`, each slice
//! read by this `concat` alone and the second known to start where the first ends or
//! later (`t >= s + n`, by offsets from one variable), becomes one `build(n + k, ..)`
//! reading `a` at an offset, so neither slice is made (natively each is its bounds
//! check only, `analysis::unread_slices`). The determinant's minors (`concat(slice(cols,
//! 0, j), slice(cols, j + 1, m - j - 1))` per term) allocated three arrays where one
//! does.
//!
//! The same value and the same faults: each slice ran, so its range lies in `a`; the
//! two ranges do not overlap, so `n + k <= length(a)` — the `concat` could not have
//! been too large, nor can the `build` be, and its reads are in range.

use std::collections::HashMap;

use fluxion_core::{Atom, Binding, Body, Lit, Prim, Rhs, Span, Type, VarId};

use crate::Context;
use crate::lambda::Lambda;

/// Rewrites the `concat`s of slices in `body` (and in the branches nested in it).
pub(crate) fn build_concats_of_slices(cx: &mut Context, body: &mut Body) {
    let uses = crate::uses::count_uses(body);
    Joiner {
        cx,
        uses,
        slices: HashMap::new(),
        offsets: HashMap::new(),
    }
    .body(body);
}

struct Joiner<'a, 'c> {
    cx: &'a mut Context<'c>,
    uses: HashMap<VarId, usize>,
    /// Variables bound to `slice(array, start, len)` here.
    slices: HashMap<VarId, [Atom; 3]>,
    /// `Int` variables bound here to a variable plus a constant (or a constant).
    offsets: HashMap<VarId, Offset>,
}

/// An `Int` as a variable (none: zero) plus a constant.
type Offset = (Option<VarId>, i64);

impl Joiner<'_, '_> {
    fn body(&mut self, body: &mut Body) {
        let mut out = Vec::with_capacity(body.bindings.len());
        for mut b in std::mem::take(&mut body.bindings) {
            match &mut b.rhs {
                Rhs::Prim(Prim::Slice, a) => {
                    self.slices.insert(b.var, [a[0], a[1], a[2]]);
                }
                Rhs::Prim(p @ (Prim::Add | Prim::Sub), a)
                    if *self.cx.m.var_ty(b.var) == Type::Int =>
                {
                    let (x, y) = (self.offset(a[0]), self.offset(a[1]));
                    let sum = match (p, x, y) {
                        (Prim::Add, (v, c), (None, d)) | (Prim::Add, (None, d), (v, c)) => {
                            c.checked_add(d).map(|k| (v, k))
                        }
                        (Prim::Sub, (v, c), (None, d)) => c.checked_sub(d).map(|k| (v, k)),
                        _ => None,
                    };
                    if let Some(o) = sum {
                        self.offsets.insert(b.var, o);
                    }
                }
                Rhs::Prim(Prim::Concat, a) => {
                    if let Some((first, second)) = self.joinable(a[0], a[1]) {
                        self.cx.changed = true;
                        self.join(&b, first, second, &mut out);
                        continue;
                    }
                }
                rhs => fluxion_core::visit::for_each_branch_mut(rhs, &mut |inner| self.body(inner)),
            }
            out.push(b);
        }
        body.bindings = out;
    }

    fn offset(&self, a: Atom) -> Offset {
        match a {
            Atom::Lit(Lit::Int(k)) => (None, k),
            Atom::Var(v) => self.offsets.get(&v).copied().unwrap_or((Some(v), 0)),
            Atom::Lit(_) => unreachable!("an Int"),
        }
    }

    /// The slice `a` is bound to, if this `concat` is its only reader.
    fn slice_read_once(&self, a: Atom) -> Option<[Atom; 3]> {
        let Atom::Var(v) = a else { return None };
        (self.uses.get(&v) == Some(&1)).then(|| self.slices.get(&v).copied())?
    }

    /// Both operands' slices, if they are of one array and the second starts at or
    /// after the first's end.
    fn joinable(&self, xs: Atom, ys: Atom) -> Option<([Atom; 3], [Atom; 3])> {
        if xs == ys {
            return None;
        }
        let (first, second) = (self.slice_read_once(xs)?, self.slice_read_once(ys)?);
        if first[0] != second[0] {
            return None;
        }
        let (start, len, next) = (
            self.offset(first[1]),
            self.offset(first[2]),
            self.offset(second[1]),
        );
        // end = start + len, as one variable plus a constant.
        let end = match (start, len) {
            ((None, c), (v, d)) | ((v, c), (None, d)) => (v, c.checked_add(d)?),
            _ => return None,
        };
        (next.0 == end.0 && next.1 >= end.1).then_some((first, second))
    }

    /// `b: v = concat(slice(a, s, n), slice(a, t, k))` as
    /// `build(n + k, |i| if i < n { a[s + i] } else { a[t + (i - n)] })`.
    fn join(&mut self, b: &Binding, first: [Atom; 3], second: [Atom; 3], out: &mut Vec<Binding>) {
        let span = b.span;
        let ty = self.cx.m.var_ty(b.var).clone();
        let Type::Array(elem) = ty.clone() else {
            unreachable!("concat of arrays")
        };
        let elem = *elem;
        let [array, s, n] = first;
        let [_, t, k] = second;
        // At most the array's length (the ranges are disjoint): no overflow.
        let total = bind(
            self.cx,
            out,
            "total",
            Type::Int,
            Rhs::Prim(Prim::Add, vec![n, k]),
            span,
        );
        let m = &mut *self.cx.m;
        let i = m.fresh_var("i", Type::Int);
        let mut lam = Lambda::new(span);
        for a in [array, s, n, t] {
            lam.capture(&a);
        }
        let read = |m: &mut fluxion_core::Module, bs: &mut Vec<Binding>, start: Atom, at: Atom| {
            let p = m.fresh_var("at", Type::Int);
            bs.push(Binding {
                var: p,
                rhs: Rhs::Prim(Prim::Add, vec![start, at]),
                span,
            });
            let e = m.fresh_var("elem", elem.clone());
            bs.push(Binding {
                var: e,
                rhs: Rhs::Prim(Prim::Index, vec![array, Atom::Var(p)]),
                span,
            });
            Body {
                bindings: std::mem::take(bs),
                result: Atom::Var(e),
            }
        };
        let before = lam.bind(
            m,
            "before",
            Type::Bool,
            Rhs::Prim(Prim::Lt, vec![Atom::Var(i), n]),
        );
        let then = read(m, &mut Vec::new(), s, Atom::Var(i));
        let past = m.fresh_var("past", Type::Int);
        let mut bs = vec![Binding {
            var: past,
            rhs: Rhs::Prim(Prim::Sub, vec![Atom::Var(i), n]),
            span,
        }];
        let otherwise = read(m, &mut bs, t, Atom::Var(past));
        let e = lam.bind(
            m,
            "elem",
            elem.clone(),
            Rhs::If(before, Box::new(then), Box::new(otherwise)),
        );
        let (code, captures) = lam.finish(m, "concat_read", vec![i], e, elem.clone());
        let f = bind(
            self.cx,
            out,
            "concat_read",
            Type::func(vec![Type::Int], elem),
            Rhs::Closure(code, captures),
            span,
        );
        out.push(Binding {
            var: b.var,
            rhs: Rhs::Prim(Prim::Build, vec![total, f]),
            span,
        });
    }
}

/// Appends `let v = rhs` to `out` and returns `v`.
fn bind(
    cx: &mut Context,
    out: &mut Vec<Binding>,
    name: &str,
    ty: Type,
    rhs: Rhs,
    span: Span,
) -> Atom {
    let v = cx.m.fresh_var(name, ty);
    out.push(Binding { var: v, rhs, span });
    Atom::Var(v)
}
