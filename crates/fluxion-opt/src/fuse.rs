//! Fusion (seed 002 §2.6, "sum of build"): `sum(map(f, xs))` over reals becomes
//! `sumbuild(length(xs), |i| f(xs[i]))`, so the mapped array is never built — the
//! Knossos rule `sum(build(n, f)) = sumbuild(n, f)`, with `map` as the `build` it is.
//!
//! It fires where the mapped array is used by the `sum` alone (bound in the same
//! block, used once, captured by no lambda) and its elements are `Real`s: `sum` of
//! reals adds left to right from 0.0, as `sumbuild` of reals does, so the value is
//! the same bit for bit, and neither can fail, so no error can change either (an
//! `Int` sum can overflow, which fused would report before a later `f` fails).

use std::collections::HashMap;

use fluxion_core::{Atom, Binding, Body, Code, CodeKind, Prim, Rhs, Type, VarId};

use crate::Context;

/// Fuses `sum(map(f, xs))` in `body` and the blocks nested in it.
pub fn fuse_body(cx: &mut Context, body: &mut Body) {
    let mut uses = HashMap::new();
    count_uses(body, &mut uses);
    fuse_block(cx, body, &uses);
}

fn count_uses(body: &Body, uses: &mut HashMap<VarId, usize>) {
    let atom = |a: &Atom, uses: &mut HashMap<VarId, usize>| {
        if let Atom::Var(v) = a {
            *uses.entry(*v).or_default() += 1;
        }
    };
    for b in &body.bindings {
        match &b.rhs {
            Rhs::Atom(a) | Rhs::Proj(a, _) => atom(a, uses),
            Rhs::Prim(_, args)
            | Rhs::CallDirect(_, args)
            | Rhs::Closure(_, args)
            | Rhs::Tuple(args)
            | Rhs::Array(args)
            | Rhs::Ctor(_, _, args) => args.iter().for_each(|a| atom(a, uses)),
            Rhs::Call(f, args) => {
                atom(f, uses);
                args.iter().for_each(|a| atom(a, uses));
            }
            Rhs::If(c, t, e) => {
                atom(c, uses);
                count_uses(t, uses);
                count_uses(e, uses);
            }
            Rhs::Match(a, arms, d) => {
                atom(a, uses);
                arms.iter().for_each(|arm| count_uses(&arm.body, uses));
                if let Some(d) = d {
                    count_uses(d, uses);
                }
            }
        }
    }
    atom(&body.result, uses);
}

fn fuse_block(cx: &mut Context, body: &mut Body, uses: &HashMap<VarId, usize>) {
    // Where each `map` of this block is bound: its index and (f, xs).
    let mut maps: HashMap<VarId, (usize, Atom, Atom)> = HashMap::new();
    let mut k = 0;
    while k < body.bindings.len() {
        match &mut body.bindings[k].rhs {
            Rhs::If(_, t, e) => {
                fuse_block(cx, t, uses);
                fuse_block(cx, e, uses);
            }
            Rhs::Match(_, arms, d) => {
                for arm in arms.iter_mut() {
                    fuse_block(cx, &mut arm.body, uses);
                }
                if let Some(d) = d {
                    fuse_block(cx, d, uses);
                }
            }
            _ => {}
        }
        let b = &body.bindings[k];
        match &b.rhs {
            Rhs::Prim(Prim::Map, args) if *cx.m.var_ty(b.var) == Type::array(Type::Real) => {
                maps.insert(b.var, (k, args[0], args[1]));
            }
            Rhs::Prim(Prim::Sum, args) => {
                if let Atom::Var(ys) = args[0]
                    && let Some(&(at, Atom::Var(f), Atom::Var(xs))) = maps.get(&ys)
                    && uses.get(&ys) == Some(&1)
                    && !cx.captured.contains(&ys)
                {
                    let (var, span) = (b.var, b.span);
                    let (n, g, s) = sumbuild_of_map(cx, f, xs, var, span);
                    body.bindings[k] = s;
                    body.bindings[at] = n;
                    body.bindings.insert(at + 1, g);
                    maps.remove(&ys);
                    for (i, _, _) in maps.values_mut() {
                        if *i > at {
                            *i += 1;
                        }
                    }
                    k += 1;
                }
            }
            _ => {}
        }
        k += 1;
    }
}

/// The bindings that replace `ys = map(f, xs)` (`n = length(xs)`, `g = |i| f(xs[i])`)
/// and `s = sum(ys)` (`s = sumbuild(n, g)`).
fn sumbuild_of_map(
    cx: &mut Context,
    f: VarId,
    xs: VarId,
    s: VarId,
    span: fluxion_core::Span,
) -> (Binding, Binding, Binding) {
    let elem = match cx.m.var_ty(xs) {
        Type::Array(e) => (**e).clone(),
        _ => Type::Unit,
    };
    let i = cx.m.fresh_var("i", Type::Int);
    let x = cx.m.fresh_var("x", elem);
    let r = cx.m.fresh_var("fx", Type::Real);
    let code = Code {
        name: "fused".into(),
        kind: CodeKind::Lambda,
        captures: vec![f, xs],
        params: vec![i],
        ret: Type::Real,
        body: Body {
            bindings: vec![
                Binding {
                    var: x,
                    rhs: Rhs::Prim(Prim::Index, vec![Atom::Var(xs), Atom::Var(i)]),
                    span,
                },
                Binding {
                    var: r,
                    rhs: Rhs::Call(Atom::Var(f), vec![Atom::Var(x)]),
                    span,
                },
            ],
            result: Atom::Var(r),
        },
        span,
    };
    let lambda = cx.m.add_code(code);
    let n = cx.m.fresh_var("n", Type::Int);
    let g =
        cx.m.fresh_var("fused", Type::func(vec![Type::Int], Type::Real));
    (
        Binding {
            var: n,
            rhs: Rhs::Prim(Prim::Length, vec![Atom::Var(xs)]),
            span,
        },
        Binding {
            var: g,
            rhs: Rhs::Closure(lambda, vec![Atom::Var(f), Atom::Var(xs)]),
            span,
        },
        Binding {
            var: s,
            rhs: Rhs::Prim(Prim::Sumbuild, vec![Atom::Var(n), Atom::Var(g)]),
            span,
        },
    )
}
