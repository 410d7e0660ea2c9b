//! The run time's side of `jvp` and `taylor` as Core, for a caller that resolves the
//! operators ahead of time (the native backend): the interpreter's `ad.rs` lifts a
//! closure's captures into a layer with zero perturbation, combines the point with the
//! direction, calls the translated code and takes the result apart, walking values by
//! their types; here the same walks are generated helper codes, one per type ([Delta]
//! §4 `Dfwd` for the forward layer, [Taylor] §3.2 for Taylor's `[x, v, 0, …, 0]`).
//!
//! The caller translates the closure's code (`forward_code`/`taylor_code`) and builds
//! the translated closure itself: which closure an operator meets is its business.

use fluxion_core::verify::differentiated_argument;
use fluxion_core::{Atom, CodeId, Module, Prim, Rhs, Span, Type, TypeMap};

use crate::builder::{Builder, int, real};
use crate::helpers::{call, enum_match, helper, var_of, variant_fields};
use crate::layer::{layer_name, primal_of};
use crate::mode::call_at;

/// A code `A -> L(A)`: `v` with every real's perturbation zero (`(x, 0)` or
/// `[x, 0, …, 0]`), for a first-order `A` (a closure's capture).
pub fn lift_code(m: &mut Module, layer: TypeMap, ty: &Type) -> CodeId {
    let mut b = Builder::new(m, Span::default());
    let lty = b.m.map_type(ty, layer);
    // Not `combine`'s own "lift" helper, which this one calls.
    let name = format!("lift_capture_{}", layer_name(layer));
    helper(&mut b, &name, ty, vec![ty.clone()], lty, |b, ps| {
        combine(b, layer, ty, ps[0], None)
    })
}

/// A code `(L(A -> B), A, T(A)) -> (B, T(B))` (forward layer) or `-> (B, [T(B)])`
/// (Taylor of order k: coefficients 1..=k) for functions of type `fty`: the already
/// translated closure pushed along `x + t·v` — `jvp`'s and `taylor`'s value.
pub fn push_forward_code(m: &mut Module, layer: TypeMap, fty: &Type) -> CodeId {
    let mut b = Builder::new(m, Span::default());
    push_forward(&mut b, layer, fty)
}

/// A code `(A -> B, Tf(A -> B), A, T(B)) -> (B, wᵀ·J)`: `vjp` by one forward push per
/// input coordinate through the forward-translated closure (the second argument of the
/// first), for a reverse operator whose function a reverse layer cannot translate
/// ahead of time (it applies an operator itself). The interpreter computes such a
/// `%chad_vjp` the same way (`pullback_by_jvps.rs`).
pub fn vjp_by_push_forward(m: &mut Module, fty: &Type) -> CodeId {
    let mut b = Builder::new(m, Span::default());
    crate::pullback_by_jvps::vjp_by_push_forward_code(&mut b, fty)
}

pub(crate) fn push_forward(b: &mut Builder, layer: TypeMap, fty: &Type) -> CodeId {
    let Type::Fn(params, ret) = fty else {
        unreachable!("a push forward of a non-function")
    };
    let a = differentiated_argument(params);
    let ret = (**ret).clone();
    let lfty = b.m.map_type(fty, layer);
    let lret = b.m.map_type(&ret, layer);
    let (ta, tb) = (b.m.tangent_type(&a), b.m.tangent_type(&ret));
    let result = match layer {
        TypeMap::Taylor(_) => Type::Tuple(vec![ret.clone(), Type::array(tb.clone())]),
        _ => Type::Tuple(vec![ret.clone(), tb.clone()]),
    };
    let n_params = params.len();
    let name = format!("push_forward_{}", layer_name(layer));
    helper(b, &name, fty, vec![lfty, a.clone(), ta], result, |b, ps| {
        let (g, x, v) = (ps[0], ps[1], ps[2]);
        // A direction must have the point's shape (constructors, lengths).
        b.prim(Prim::CheckDirection, &[x, v], Type::Unit);
        let v = b.prim(Prim::TanDense, &[x, v], b.ty(&v));
        let point = combine(b, layer, &a, x, Some(v));
        let r = call_at(b, g, point, n_params, lret);
        let y = primal_of(b, layer, &ret, r);
        let rest = match layer {
            TypeMap::Taylor(k) => {
                let rv = var_of(b, r);
                let coef = b.lambda("coefficient", &[rv], vec![Type::Int], |b, j| {
                    let j = b.arith(Prim::Add, &[j[0], int(1)]);
                    coefficient(b, layer, &ret, Atom::Var(rv), j)
                });
                b.prim(
                    Prim::Build,
                    &[int(k.coefficients() as i64 - 1), coef],
                    Type::array(tb),
                )
            }
            _ => coefficient(b, layer, &ret, r, int(1)),
        };
        b.tuple("pushed", vec![y, rest])
    })
}

/// `x: A` in `layer` moving with velocity `dx: T(A)` (none: at rest).
fn combine(b: &mut Builder, layer: TypeMap, ty: &Type, x: Atom, dx: Option<Atom>) -> Atom {
    match ty {
        Type::Real => return leaf(b, layer, x, dx.unwrap_or(real(0.0))),
        _ if b.m.is_fixed(ty, layer) => return x,
        _ => {}
    }
    let lty = b.m.map_type(ty, layer);
    let tty = b.m.tangent_type(ty);
    let (name, params, args) = match dx {
        Some(d) => ("combine", vec![ty.clone(), tty.clone()], vec![x, d]),
        None => ("lift", vec![ty.clone()], vec![x]),
    };
    let name = format!("{name}_{}", layer_name(layer));
    let code = helper(b, &name, ty, params, lty.clone(), |b, ps| {
        let (x, d) = (ps[0], ps.get(1).copied());
        match ty {
            Type::Tuple(ts) => {
                let parts = ts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let xi = b.proj(&x, i);
                        let di = d.map(|d| b.proj(&d, i));
                        combine(b, layer, t, xi, di)
                    })
                    .collect();
                b.tuple("combined", parts)
            }
            Type::Array(elem) => {
                let elem = (**elem).clone();
                let telem = b.m.tangent_type(&elem);
                match d {
                    Some(d) => {
                        let f = b.lambda("combine_elem", &[], vec![elem.clone(), telem], |b, p| {
                            combine(b, layer, &elem, p[0], Some(p[1]))
                        });
                        b.prim(Prim::Map2, &[f, x, d], lty.clone())
                    }
                    None => {
                        let f = b.lambda("lift_elem", &[], vec![elem.clone()], |b, p| {
                            combine(b, layer, &elem, p[0], None)
                        });
                        b.prim(Prim::Map, &[f, x], lty.clone())
                    }
                }
            }
            Type::Enum(e) => {
                let (e, lty) = (*e, lty.clone());
                let Type::Enum(le) = lty else {
                    unreachable!("the translation of an enum")
                };
                let tangent_enum = match &tty {
                    Type::Enum(te) => Some(*te),
                    _ => None,
                };
                enum_match(b, e, x, lty.clone(), |b, xs, tys, tag| {
                    let (xs, tys) = (xs.to_vec(), tys.to_vec());
                    let rebuild = |b: &mut Builder, ds: Option<&[Atom]>| {
                        let parts = tys
                            .iter()
                            .zip(&xs)
                            .enumerate()
                            .map(|(i, (t, x))| combine(b, layer, t, *x, ds.map(|ds| ds[i])))
                            .collect();
                        b.emit("combined", Rhs::Ctor(le, tag, parts), lty.clone())
                    };
                    match (d, tangent_enum) {
                        (Some(d), Some(te)) => {
                            // The same constructor in the direction (checked before).
                            let tfields = variant_fields(b, te)[tag as usize].clone();
                            let ds: Vec<_> =
                                tfields.iter().map(|t| b.fresh("d", t.clone())).collect();
                            let atoms: Vec<Atom> = ds.iter().map(|v| Atom::Var(*v)).collect();
                            let body = b.block(|b| rebuild(b, Some(&atoms)));
                            let fail = b.block(|b| b.prim(Prim::MatchFail, &[], lty.clone()));
                            let arm = fluxion_core::Arm {
                                tag,
                                fields: ds,
                                body,
                            };
                            b.emit(
                                "combined",
                                Rhs::Match(d, vec![arm], Some(Box::new(fail))),
                                lty.clone(),
                            )
                        }
                        _ => rebuild(b, None),
                    }
                })
            }
            _ => x,
        }
    });
    call(b, code, args)
}

/// A real `x` with velocity `dx`: `(x, dx)`, or `[x, dx, 0, …, 0]` of length k + 1.
fn leaf(b: &mut Builder, layer: TypeMap, x: Atom, dx: Atom) -> Atom {
    match layer {
        TypeMap::Taylor(k) => {
            let (xv, dv) = (var_of(b, x), var_of(b, dx));
            let f = b.lambda("series", &[xv, dv], vec![Type::Int], |b, i| {
                let first = b.cmp(Prim::Eq, i[0], int(0));
                b.if_(
                    first,
                    Type::Real,
                    |_| Atom::Var(xv),
                    |b| {
                        let second = b.cmp(Prim::Eq, i[0], int(1));
                        b.if_(second, Type::Real, |_| Atom::Var(dv), |_| real(0.0))
                    },
                )
            });
            b.prim(
                Prim::Build,
                &[int(k.coefficients() as i64), f],
                Type::array(Type::Real),
            )
        }
        // A capture under `sparsity` depends on no input.
        TypeMap::Deps => {
            let none = b.emit("none", Rhs::Array(vec![]), Type::array(Type::Int));
            b.tuple("constant", vec![x, none])
        }
        _ => b.tuple("dual", vec![x, dx]),
    }
}

/// How [`coefficient_read`] reads a real's coefficient: as stored, or (a jet's
/// coefficient α) times α!, the mixed partial (`jet`).
#[derive(Clone, Copy)]
pub(crate) enum Read {
    Stored,
    Partial(fluxion_core::Jet),
}

/// Coefficient `j ≥ 1` of every real of `v: L(B)`, a value of `T(B)`.
fn coefficient(b: &mut Builder, layer: TypeMap, ty: &Type, v: Atom, j: Atom) -> Atom {
    coefficient_read(b, layer, ty, v, j, Read::Stored)
}

/// Coefficient `j ≥ 1` of every real of `v: L(B)`, read as `read` says.
pub(crate) fn coefficient_read(
    b: &mut Builder,
    layer: TypeMap,
    ty: &Type,
    v: Atom,
    j: Atom,
    read: Read,
) -> Atom {
    let tty = b.m.tangent_type(ty);
    match ty {
        Type::Real => {
            return match (layer, read) {
                (TypeMap::Taylor(_), Read::Stored) => b.prim(Prim::Index, &[v, j], Type::Real),
                (_, Read::Partial(jet)) => {
                    let c = b.prim(Prim::Index, &[v, j], Type::Real);
                    let table = factorials(b, jet);
                    let f = b.prim(Prim::Index, &[table, j], Type::Real);
                    b.mul(c, f)
                }
                _ => b.proj(&v, 1),
            };
        }
        Type::Int | Type::Bool | Type::Unit => return Atom::Lit(fluxion_core::Lit::Unit),
        _ => {}
    }
    let lty = b.m.map_type(ty, layer);
    let what = match read {
        Read::Stored => "coefficient",
        Read::Partial(_) => "partial",
    };
    let name = format!("{what}_{}", layer_name(layer));
    let code = helper(b, &name, ty, vec![lty, Type::Int], tty.clone(), |b, ps| {
        let (v, j) = (ps[0], ps[1]);
        match ty {
            Type::Tuple(ts) => {
                let parts = ts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let vi = b.proj(&v, i);
                        coefficient_read(b, layer, t, vi, j, read)
                    })
                    .collect();
                b.tuple(what, parts)
            }
            Type::Array(elem) => {
                let elem = (**elem).clone();
                let lelem = b.m.map_type(&elem, layer);
                let jv = var_of(b, j);
                let f = b.lambda(&format!("{what}_elem"), &[jv], vec![lelem], |b, p| {
                    coefficient_read(b, layer, &elem, p[0], Atom::Var(jv), read)
                });
                b.prim(Prim::Map, &[f, v], tty.clone())
            }
            Type::Enum(e) => {
                let Type::Enum(te) = tty.clone() else {
                    unreachable!("the tangent of an enum with reals")
                };
                let lty = b.m.map_type(ty, layer);
                let Type::Enum(le) = lty else {
                    unreachable!("the translation of an enum")
                };
                let base_fields = variant_fields(b, *e);
                enum_match(b, le, v, tty.clone(), |b, fields, _, tag| {
                    let parts: Vec<Atom> = base_fields[tag as usize]
                        .iter()
                        .zip(fields)
                        .map(|(t, f)| coefficient_read(b, layer, t, *f, j, read))
                        .collect();
                    b.emit(what, Rhs::Ctor(te, tag, parts), Type::Enum(te))
                })
            }
            _ => Atom::Lit(fluxion_core::Lit::Unit),
        }
    });
    call(b, code, vec![v, j])
}

/// α! for each coefficient α of `jet`, in its order, as a literal array.
fn factorials(b: &mut Builder, jet: fluxion_core::Jet) -> Atom {
    let table: Vec<Atom> = jet
        .multi_indices()
        .iter()
        .map(|alpha| {
            let f: f64 = alpha
                .iter()
                .map(|a| (1..=*a).map(f64::from).product::<f64>())
                .product();
            real(f)
        })
        .collect();
    b.emit("factorials", Rhs::Array(table), Type::array(Type::Real))
}
