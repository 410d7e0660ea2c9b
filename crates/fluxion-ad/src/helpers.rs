//! Generated helper functions, one per type, memoised in `Module::derived_codes`:
//! the linear-algebra glue the expanded operators need, written as ordinary Core so
//! that every transformation applies to them in turn.
//!
//! For a D-type `A`, the tangent space `T(A)` at a point `x: A` has coordinates: the
//! real leaves of `x` in order (array elements, tuple components, constructor fields).
//! - `tdim(x)`: how many;
//! - `tbasis(x, i)`: the unit tangent along coordinate `i` (zero if out of range);
//! - `tfrom(x, c, off)`: the tangent whose coordinates are `c[off..]`;
//! - `tcoords(v)`: the coordinates of a tangent `v: T(A)`;
//! - `primal(v)`: the primal part of a forward-mode value `v: Tf(A)`.

use fluxion_core::{Arm, Atom, CodeId, CodeKind, Lit, Prim, Rhs, Type, TypeMap, VarId};

use crate::builder::{Builder, int, real};

/// The memo key of a helper for a type: by enum ids, not names (a user enum may be
/// called like a derived one).
fn key(name: &str, ty: &Type) -> String {
    format!("{name}#{ty:?}")
}

/// A top-level helper code `name` for type `ty`, built by `body` on first request.
pub(crate) fn helper(
    b: &mut Builder,
    name: &str,
    ty: &Type,
    params: Vec<Type>,
    ret: Type,
    body: impl FnOnce(&mut Builder, &[Atom]) -> Atom,
) -> CodeId {
    let k = key(name, ty);
    if let Some(id) = b.m.derived_codes.get(&k) {
        return *id;
    }
    let n = b.m.derived_codes.len();
    let id = b.reserve_code(&format!("{name}_{n}"), CodeKind::TopLevel);
    b.m.derived_codes.insert(k, id);
    // Known before the body exists: recursive calls (recursive enums) read it.
    b.m.codes[id.0 as usize].ret = ret.clone();
    let vars: Vec<VarId> = params.iter().map(|t| b.fresh("x", t.clone())).collect();
    let args: Vec<Atom> = vars.iter().map(|v| Atom::Var(*v)).collect();
    let result = b.block(|b| body(b, &args));
    b.finish_code(id, vec![], vars, ret, result);
    id
}

pub(crate) fn call(b: &mut Builder, code: CodeId, args: Vec<Atom>) -> Atom {
    let ret = b.m.code(code).ret.clone();
    let name = b.m.code(code).name.clone();
    b.emit(&name, Rhs::CallDirect(code, args), ret)
}

/// A variable holding `a` (captures must be variables).
pub(crate) fn var_of(b: &mut Builder, a: Atom) -> VarId {
    match a {
        Atom::Var(v) => v,
        Atom::Lit(_) => {
            let ty = b.ty(&a);
            match b.emit("k", Rhs::Atom(a), ty) {
                Atom::Var(v) => v,
                Atom::Lit(_) => unreachable!("emit returns a variable"),
            }
        }
    }
}

/// The number of coordinates of `T(A)` when it does not depend on the value.
pub(crate) fn static_dim(b: &Builder, ty: &Type) -> Option<i64> {
    match ty {
        Type::Real => Some(1),
        Type::Int | Type::Bool | Type::Unit => Some(0),
        Type::Tuple(ts) => ts.iter().map(|t| static_dim(b, t)).sum(),
        Type::Array(_) | Type::Fn(..) => None,
        Type::Enum(_) => b.m.is_fixed(ty, TypeMap::Fwd).then_some(0),
    }
}

/// `tdim(x)` for `x: A`.
pub(crate) fn dim_of(b: &mut Builder, ty: &Type, x: Atom) -> Atom {
    if let Some(d) = static_dim(b, ty) {
        return int(d);
    }
    let code = helper(b, "tdim", ty, vec![ty.clone()], Type::Int, |b, args| {
        let x = args[0];
        match ty {
            Type::Tuple(ts) => {
                let mut acc = int(0);
                for (i, t) in ts.iter().enumerate() {
                    let c = b.proj(&x, i);
                    let d = dim_of(b, t, c);
                    acc = b.add(acc, d);
                }
                acc
            }
            Type::Array(elem) => {
                let n = b.prim(Prim::Length, &[x], Type::Int);
                if let Some(d) = static_dim(b, elem) {
                    return b.mul(n, int(d));
                }
                let elem = (**elem).clone();
                let f = b.lambda("tdim_step", &[], vec![Type::Int, elem.clone()], |b, ps| {
                    let d = dim_of(b, &elem, ps[1]);
                    b.add(ps[0], d)
                });
                b.prim(Prim::Fold, &[f, int(0), x], Type::Int)
            }
            Type::Enum(e) => enum_match(b, *e, x, Type::Int, |b, fields, field_tys, _| {
                let mut acc = int(0);
                for (f, t) in fields.iter().zip(field_tys) {
                    let d = dim_of(b, t, *f);
                    acc = b.add(acc, d);
                }
                acc
            }),
            _ => int(0),
        }
    });
    call(b, code, vec![x])
}

/// The field types of each constructor of enum `e`.
fn variant_fields(b: &Builder, e: fluxion_core::EnumId) -> Vec<Vec<Type>> {
    b.m.enum_def(e)
        .variants
        .iter()
        .map(|v| v.fields.clone())
        .collect()
}

/// `match x { C(fields) => arm(C's fields) ... }` over every constructor of `e`.
fn enum_match(
    b: &mut Builder,
    e: fluxion_core::EnumId,
    x: Atom,
    ty: Type,
    mut arm: impl FnMut(&mut Builder, &[Atom], &[Type], u32) -> Atom,
) -> Atom {
    let variants = b.m.enum_def(e).variants.clone();
    let mut arms = Vec::new();
    for (tag, v) in variants.iter().enumerate() {
        let fields: Vec<VarId> = v
            .fields
            .iter()
            .map(|t| b.fresh("field", t.clone()))
            .collect();
        let atoms: Vec<Atom> = fields.iter().map(|f| Atom::Var(*f)).collect();
        let body = b.block(|b| arm(b, &atoms, &v.fields, tag as u32));
        arms.push(Arm {
            tag: tag as u32,
            fields,
            body,
        });
    }
    b.emit("match", Rhs::Match(x, arms, None), ty)
}

/// Offsets of the elements of an array `x: [E]` among its coordinates: element `j`
/// starts at the returned function of `j`.
fn element_offset(b: &mut Builder, elem: &Type, x: Atom, j: Atom) -> Atom {
    if let Some(d) = static_dim(b, elem) {
        return b.mul(j, int(d));
    }
    // Inclusive prefix sums of element dimensions, minus element j's own.
    let e = elem.clone();
    let f = b.lambda("tdim_step", &[], vec![Type::Int, elem.clone()], |b, ps| {
        let d = dim_of(b, &e, ps[1]);
        b.add(ps[0], d)
    });
    let prefix = b.prim(Prim::Scan, &[f, int(0), x], Type::array(Type::Int));
    let upto = b.prim(Prim::Index, &[prefix, j], Type::Int);
    let xj = b.prim(Prim::Index, &[x, j], elem.clone());
    let own = dim_of(b, elem, xj);
    b.sub(upto, own)
}

/// `tbasis(x, i)`: the unit tangent along coordinate `i` at `x: A`.
pub(crate) fn basis_of(b: &mut Builder, ty: &Type, x: Atom, i: Atom) -> Atom {
    match ty {
        Type::Real => {
            let hit = b.cmp(Prim::Eq, i, int(0));
            return b.if_(hit, Type::Real, |_| real(1.0), |_| real(0.0));
        }
        Type::Int | Type::Bool | Type::Unit => return Atom::Lit(Lit::Unit),
        _ => {}
    }
    let tty = b.m.tangent_type(ty);
    let code = helper(
        b,
        "tbasis",
        ty,
        vec![ty.clone(), Type::Int],
        tty.clone(),
        |b, args| {
            let (x, i) = (args[0], args[1]);
            match ty {
                Type::Tuple(ts) => {
                    let mut off = int(0);
                    let mut parts = Vec::new();
                    for (k, t) in ts.iter().enumerate() {
                        let c = b.proj(&x, k);
                        let local = b.sub(i, off);
                        parts.push(basis_of(b, t, c, local));
                        let d = dim_of(b, t, c);
                        off = b.add(off, d);
                    }
                    b.tuple("basis", parts)
                }
                Type::Array(elem) => {
                    let elem = (**elem).clone();
                    let n = b.prim(Prim::Length, &[x], Type::Int);
                    let (xv, iv) = (var_of(b, x), var_of(b, i));
                    let f = b.lambda("tbasis_elem", &[xv, iv], vec![Type::Int], |b, ps| {
                        let j = ps[0];
                        let off = element_offset(b, &elem, Atom::Var(xv), j);
                        let local = b.sub(Atom::Var(iv), off);
                        let xj = b.prim(Prim::Index, &[Atom::Var(xv), j], elem.clone());
                        basis_of(b, &elem, xj, local)
                    });
                    b.prim(Prim::Build, &[n, f], tty.clone())
                }
                Type::Enum(e) => {
                    let Type::Enum(te) = tty.clone() else {
                        unreachable!("tangent of an enum")
                    };
                    enum_match(b, *e, x, tty.clone(), |b, fields, field_tys, tag| {
                        let mut off = int(0);
                        let mut parts = Vec::new();
                        for (f, t) in fields.iter().zip(field_tys) {
                            let local = b.sub(i, off);
                            parts.push(basis_of(b, t, *f, local));
                            let d = dim_of(b, t, *f);
                            off = b.add(off, d);
                        }
                        b.emit("basis", Rhs::Ctor(te, tag, parts), Type::Enum(te))
                    })
                }
                _ => Atom::Lit(Lit::Unit),
            }
        },
    );
    call(b, code, vec![x, i])
}

/// `tfrom(x, c, off)`: the tangent at `x: A` with coordinates `c[off..]`.
pub(crate) fn from_coords(b: &mut Builder, ty: &Type, x: Atom, c: Atom, off: Atom) -> Atom {
    match ty {
        Type::Real => return b.prim(Prim::Index, &[c, off], Type::Real),
        Type::Int | Type::Bool | Type::Unit => return Atom::Lit(Lit::Unit),
        _ => {}
    }
    let tty = b.m.tangent_type(ty);
    let params = vec![ty.clone(), Type::array(Type::Real), Type::Int];
    let code = helper(b, "tfrom", ty, params, tty.clone(), |b, args| {
        let (x, c, off) = (args[0], args[1], args[2]);
        match ty {
            Type::Tuple(ts) => {
                let mut o = off;
                let mut parts = Vec::new();
                for (k, t) in ts.iter().enumerate() {
                    let comp = b.proj(&x, k);
                    parts.push(from_coords(b, t, comp, c, o));
                    let d = dim_of(b, t, comp);
                    o = b.add(o, d);
                }
                b.tuple("tangent", parts)
            }
            Type::Array(elem) => {
                let elem = (**elem).clone();
                let n = b.prim(Prim::Length, &[x], Type::Int);
                let (xv, cv, ov) = (var_of(b, x), var_of(b, c), var_of(b, off));
                let f = b.lambda("tfrom_elem", &[xv, cv, ov], vec![Type::Int], |b, ps| {
                    let j = ps[0];
                    let rel = element_offset(b, &elem, Atom::Var(xv), j);
                    let start = b.add(Atom::Var(ov), rel);
                    let xj = b.prim(Prim::Index, &[Atom::Var(xv), j], elem.clone());
                    from_coords(b, &elem, xj, Atom::Var(cv), start)
                });
                b.prim(Prim::Build, &[n, f], tty.clone())
            }
            Type::Enum(e) => {
                let Type::Enum(te) = tty.clone() else {
                    unreachable!("tangent of an enum")
                };
                enum_match(b, *e, x, tty.clone(), |b, fields, field_tys, tag| {
                    let mut o = off;
                    let mut parts = Vec::new();
                    for (f, t) in fields.iter().zip(field_tys) {
                        parts.push(from_coords(b, t, *f, c, o));
                        let d = dim_of(b, t, *f);
                        o = b.add(o, d);
                    }
                    b.emit("tangent", Rhs::Ctor(te, tag, parts), Type::Enum(te))
                })
            }
            _ => Atom::Lit(Lit::Unit),
        }
    });
    call(b, code, vec![x, c, off])
}

/// `tcoords(v)`: the coordinates of a tangent `v: T(A)`, as `[Real]`.
pub(crate) fn coords_of(b: &mut Builder, ty: &Type, v: Atom) -> Atom {
    let reals = Type::array(Type::Real);
    match ty {
        Type::Real => return b.emit("coords", Rhs::Array(vec![v]), reals),
        Type::Int | Type::Bool | Type::Unit => return b.emit("coords", Rhs::Array(vec![]), reals),
        Type::Array(e) if **e == Type::Real => return v,
        _ => {}
    }
    let tty = b.m.tangent_type(ty);
    let code = helper(
        b,
        "tcoords",
        ty,
        vec![tty.clone()],
        reals.clone(),
        |b, args| {
            let v = args[0];
            let concat_all = |b: &mut Builder, parts: Vec<(Type, Atom)>| {
                let mut acc = b.emit("coords", Rhs::Array(vec![]), Type::array(Type::Real));
                for (t, p) in parts {
                    let c = coords_of(b, &t, p);
                    acc = b.prim(Prim::Concat, &[acc, c], Type::array(Type::Real));
                }
                acc
            };
            match ty {
                Type::Tuple(ts) => {
                    let parts = ts
                        .iter()
                        .enumerate()
                        .map(|(k, t)| (t.clone(), b.proj(&v, k)))
                        .collect();
                    concat_all(b, parts)
                }
                Type::Array(elem) => {
                    let elem = (**elem).clone();
                    let telem = b.m.tangent_type(&elem);
                    let f = b.lambda(
                        "tcoords_step",
                        &[],
                        vec![Type::array(Type::Real), telem],
                        |b, ps| {
                            let c = coords_of(b, &elem, ps[1]);
                            b.prim(Prim::Concat, &[ps[0], c], Type::array(Type::Real))
                        },
                    );
                    let empty = b.emit("coords", Rhs::Array(vec![]), Type::array(Type::Real));
                    b.prim(Prim::Fold, &[f, empty, v], Type::array(Type::Real))
                }
                Type::Enum(e) => {
                    let Type::Enum(te) = tty.clone() else {
                        unreachable!("tangent of an enum")
                    };
                    let base_fields = variant_fields(b, *e);
                    enum_match(b, te, v, Type::array(Type::Real), |b, fields, _, tag| {
                        let parts = base_fields[tag as usize]
                            .iter()
                            .cloned()
                            .zip(fields.iter().copied())
                            .collect();
                        concat_all(b, parts)
                    })
                }
                _ => b.emit("coords", Rhs::Array(vec![]), Type::array(Type::Real)),
            }
        },
    );
    call(b, code, vec![v])
}

/// `primal(v)`: the primal part of a translated value `v: L(A)` (the first component
/// of each real's pair or series).
pub(crate) fn primal_of(b: &mut Builder, layer: TypeMap, ty: &Type, v: Atom) -> Atom {
    match ty {
        Type::Real => {
            return match layer {
                TypeMap::Taylor(_) => b.prim(Prim::Index, &[v, int(0)], Type::Real),
                _ => b.proj(&v, 0),
            };
        }
        _ if b.m.is_fixed(ty, TypeMap::Fwd) => return v,
        _ => {}
    }
    let lty = b.m.map_type(ty, layer);
    let name = format!("primal_{}", crate::translate::layer_name(layer));
    let code = helper(b, &name, ty, vec![lty.clone()], ty.clone(), |b, args| {
        let v = args[0];
        match ty {
            Type::Tuple(ts) => {
                let parts = ts
                    .iter()
                    .enumerate()
                    .map(|(k, t)| {
                        let c = b.proj(&v, k);
                        primal_of(b, layer, t, c)
                    })
                    .collect();
                b.tuple("primal", parts)
            }
            Type::Array(elem) => {
                let elem = (**elem).clone();
                let lelem = b.m.map_type(&elem, layer);
                let f = b.lambda("primal_elem", &[], vec![lelem], |b, ps| {
                    primal_of(b, layer, &elem, ps[0])
                });
                b.prim(Prim::Map, &[f, v], ty.clone())
            }
            Type::Enum(e) => {
                let Type::Enum(le) = lty.clone() else {
                    unreachable!("translation of an enum")
                };
                let base_fields = variant_fields(b, *e);
                let e = *e;
                enum_match(b, le, v, ty.clone(), |b, fields, _, tag| {
                    let parts: Vec<Atom> = base_fields[tag as usize]
                        .iter()
                        .zip(fields)
                        .map(|(t, f)| primal_of(b, layer, t, *f))
                        .collect();
                    b.emit("primal", Rhs::Ctor(e, tag, parts), Type::Enum(e))
                })
            }
            _ => v,
        }
    });
    call(b, code, vec![v])
}

/// `map(|x| -x, a)` for `a: [Real]`.
pub(crate) fn negate_array(b: &mut Builder, a: Atom) -> Atom {
    let f = b.lambda("negate", &[], vec![Type::Real], |b, ps| b.neg(ps[0]));
    b.prim(Prim::Map, &[f, a], Type::array(Type::Real))
}

/// `sum of u[k]·v[k]` for two coordinate arrays of equal length.
pub(crate) fn dot(b: &mut Builder, u: Atom, v: Atom) -> Atom {
    let reals = Type::array(Type::Real);
    let code = helper(
        b,
        "tdot",
        &reals,
        vec![reals.clone(), reals.clone()],
        Type::Real,
        |b, args| {
            let (u, v) = (args[0], args[1]);
            let n = b.prim(Prim::Length, &[u], Type::Int);
            let (uv, vv) = (var_of(b, u), var_of(b, v));
            let f = b.lambda("tdot_term", &[uv, vv], vec![Type::Int], |b, ps| {
                let a = b.prim(Prim::Index, &[Atom::Var(uv), ps[0]], Type::Real);
                let c = b.prim(Prim::Index, &[Atom::Var(vv), ps[0]], Type::Real);
                b.mul(a, c)
            });
            b.prim(Prim::Sumbuild, &[n, f], Type::Real)
        },
    );
    call(b, code, vec![u, v])
}
