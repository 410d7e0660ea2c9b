//! A scan read only by a sum over its own indices is one fold: `let ys = scan(g, a,
//! xs)`, whose function is inert and whose result only `sumbuild(n, f)` reads (`n` the
//! length of `xs`; `f` reads `ys` once, at its index), becomes
//!
//! ```text
//! fold(|(p, s), k| { let p' = g(p, xs[k]); (p', s + f(k)[ys[k] := p']) }, (a, 0.0), range(n)).1
//! ```
//!
//! at the `sumbuild`'s place, so the prefix array is never made (llsq's powers of `t`,
//! a running product per data point). The same value: the sum adds the same terms
//! from `0.0` in index order. The same faults: `g` cannot fail, so `f`'s faults come
//! in the order and at the place they did; `n` is an array's length, so neither the
//! range nor the reads fail. (`xs` a `range` is read as its index.)

use std::collections::HashMap;

use fluxion_core::{Atom, Binding, Body, CodeId, Lit, Prim, Rhs, Type, VarId};

use crate::Context;
use crate::instantiate::instantiate;
use crate::lambda::Lambda;

/// Fuses the scans of `body` read by one sum (in its branches too).
pub(crate) fn fuse_scans_into_sums(cx: &mut Context, body: &mut Body) {
    let uses = crate::uses::count_uses(body);
    Fuser {
        cx,
        uses,
        closures: HashMap::new(),
        scans: HashMap::new(),
        ranges: HashMap::new(),
    }
    .body(body);
}

struct Fuser<'a, 'c> {
    cx: &'a mut Context<'c>,
    uses: HashMap<VarId, usize>,
    /// Variables bound to a closure here.
    closures: HashMap<VarId, (CodeId, Vec<Atom>)>,
    /// Variables bound to `scan(g, a, xs)` here.
    scans: HashMap<VarId, [Atom; 3]>,
    /// Variables bound to `range(n)` here.
    ranges: HashMap<VarId, Atom>,
}

/// What the fused fold needs.
struct Fusion {
    ys: VarId,
    /// The scan's function, initial value and array.
    g: (CodeId, Vec<Atom>),
    init: Atom,
    xs: Atom,
    /// The sum's function and count.
    f: (CodeId, Vec<Atom>),
    n: Atom,
}

impl Fuser<'_, '_> {
    fn body(&mut self, body: &mut Body) {
        let mut out: Vec<Binding> = Vec::with_capacity(body.bindings.len());
        for mut b in std::mem::take(&mut body.bindings) {
            match &mut b.rhs {
                Rhs::Closure(c, args) => {
                    self.closures.insert(b.var, (*c, args.clone()));
                }
                Rhs::Prim(Prim::Scan, a) => {
                    self.scans.insert(b.var, [a[0], a[1], a[2]]);
                }
                Rhs::Prim(Prim::Range, a) => {
                    self.ranges.insert(b.var, a[0]);
                }
                Rhs::Prim(Prim::Sumbuild, a) if *self.cx.m.var_ty(b.var) == Type::Real => {
                    if let Some(fusion) = self.fusion(a[0], a[1], b.span, &out) {
                        // The scan and the sum's closure go (nothing else reads them;
                        // neither can fail).
                        let closure = a[1];
                        out.retain(|o| o.var != fusion.ys && Atom::Var(o.var) != closure);
                        self.cx.changed = true;
                        self.fuse(&b, fusion, &mut out);
                        continue;
                    }
                }
                rhs => fluxion_core::visit::for_each_branch_mut(rhs, &mut |inner| self.body(inner)),
            }
            out.push(b);
        }
        body.bindings = out;
    }

    /// The scan `sumbuild(n, f)` (at `span`, after the bindings `before` of its block)
    /// fuses with, if any.
    fn fusion(
        &self,
        n: Atom,
        f: Atom,
        span: fluxion_core::Span,
        before: &[Binding],
    ) -> Option<Fusion> {
        let Atom::Var(f) = f else { return None };
        let (fcode, fargs) = self.closures.get(&f)?.clone();
        if self.uses.get(&f) != Some(&1) || !self.cx.may_copy(fcode, span) {
            return None;
        }
        // The scan `f` captures, read there once at `f`'s index and nowhere else.
        let code = self.cx.m.code(fcode);
        let j = *code.params.first()?;
        let ys = code
            .captures
            .iter()
            .zip(&fargs)
            .find_map(|(c, a)| match a {
                Atom::Var(v) if self.scans.contains_key(v) && c == v => Some(*v),
                _ => None,
            })?;
        if self.uses.get(&ys) != Some(&1)
            || fluxion_core::visit::count_uses(&code.body).get(&ys) != Some(&1)
            || !before.iter().any(|b| b.var == ys)
            || !before.iter().any(|b| b.var == f)
        {
            return None;
        }
        let mut read_at_index = false;
        fluxion_core::visit::for_each_binding(&code.body, &mut |b| {
            read_at_index |= b.rhs == Rhs::Prim(Prim::Index, vec![Atom::Var(ys), Atom::Var(j)]);
        });
        let [g, init, xs] = self.scans[&ys];
        let Atom::Var(g) = g else { return None };
        let (gcode, gargs) = self.closures.get(&g)?.clone();
        (read_at_index
            && self.cx.inert_code(gcode)
            && self.cx.may_copy(gcode, span)
            && self.cx.lengths.has_length(xs, n))
        .then_some(Fusion {
            ys,
            g: (gcode, gargs),
            init,
            xs,
            f: (fcode, fargs),
            n,
        })
    }

    /// `b: s = sumbuild(n, f)` as the fold of the scan and the sum.
    fn fuse(&mut self, b: &Binding, u: Fusion, out: &mut Vec<Binding>) {
        let span = b.span;
        let m = &mut *self.cx.m;
        let a = m.atom_ty(&u.init);
        let state = Type::Tuple(vec![a.clone(), Type::Real]);
        let (st, k) = (
            m.fresh_var("state", state.clone()),
            m.fresh_var("k", Type::Int),
        );
        let mut lam = Lambda::new(span);
        let p = lam.bind(m, "p", a.clone(), Rhs::Proj(Atom::Var(st), 0));
        let s = lam.bind(m, "s", Type::Real, Rhs::Proj(Atom::Var(st), 1));
        // The scan's element: `xs[k]`, or `k` itself where `xs` is `range(n)`.
        let x = match u.xs {
            Atom::Var(r) if self.ranges.contains_key(&r) => Atom::Var(k),
            xs => lam.read(m, "x", xs, k),
        };
        u.g.1.iter().for_each(|c| lam.capture(c));
        let (bindings, next) = instantiate(m, u.g.0, &u.g.1, &[p, x], span);
        lam.extend(bindings);
        // The sum's term, its read of the scan (through the copy `let ys' = ys` of
        // the capture) replaced by the new prefix element.
        u.f.1.iter().for_each(|c| lam.capture(c));
        let (mut bindings, term) = instantiate(m, u.f.0, &u.f.1, &[Atom::Var(k)], span);
        let copies: Vec<VarId> = bindings
            .iter()
            .filter(|c| c.rhs == Rhs::Atom(Atom::Var(u.ys)))
            .map(|c| c.var)
            .collect();
        bindings.retain(|c| !copies.contains(&c.var));
        replace_reads(&mut bindings, &copies, next);
        lam.extend(bindings);
        let sum = lam.bind(m, "sum", Type::Real, Rhs::Prim(Prim::Add, vec![s, term]));
        let result = lam.bind(m, "state", state.clone(), Rhs::Tuple(vec![next, sum]));
        let (code, caps) = lam.finish(m, "scan_sum", vec![st, k], result, state.clone());
        let mut bind = |name: &str, ty: Type, rhs: Rhs| {
            let v = self.cx.m.fresh_var(name, ty);
            out.push(Binding { var: v, rhs, span });
            Atom::Var(v)
        };
        let f = bind(
            "scan_sum",
            Type::func(vec![state.clone(), Type::Int], state.clone()),
            Rhs::Closure(code, caps),
        );
        let start = bind(
            "start",
            state.clone(),
            Rhs::Tuple(vec![u.init, Atom::Lit(Lit::Real(0.0))]),
        );
        let indices = match u.xs {
            Atom::Var(r) if self.ranges.contains_key(&r) => u.xs,
            _ => bind(
                "range",
                Type::array(Type::Int),
                Rhs::Prim(Prim::Range, vec![u.n]),
            ),
        };
        let last = bind(
            "fold",
            state,
            Rhs::Prim(Prim::Fold, vec![f, start, indices]),
        );
        out.push(Binding {
            var: b.var,
            rhs: Rhs::Proj(last, 1),
            span,
        });
    }
}

/// Replaces, in `bindings` and their branches, each read `c[_]` of a variable of
/// `copies` by `x`.
fn replace_reads(bindings: &mut [Binding], copies: &[VarId], x: Atom) {
    for b in bindings {
        match &mut b.rhs {
            Rhs::Prim(Prim::Index, args) if matches!(args[0], Atom::Var(v) if copies.contains(&v)) =>
            {
                b.rhs = Rhs::Atom(x);
            }
            rhs => fluxion_core::visit::for_each_branch_mut(rhs, &mut |inner| {
                replace_reads(&mut inner.bindings, copies, x)
            }),
        }
    }
}
