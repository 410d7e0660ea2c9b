//! Coordinates of tangent spaces, as generated Core (one helper per type): the
//! linear-algebra glue of the `--ad fwd` algorithm (`fwd_mode.rs`).
//!
//! For a D-type `A`, the tangent space `T(A)` at a point `x: A` has coordinates: the
//! real leaves of `x` in order (array elements, tuple components, constructor fields).
//! - `tdim(x)`: how many;
//! - `tbasis(x, i)`: the unit tangent along coordinate `i` (zero if out of range);
//! - `tfrom(x, c, off)`: the tangent whose coordinates are `c[off..]`;
//! - `tcoords(v)`: the coordinates of a tangent `v: T(A)`;
//! - `tdot(u, v)`: the dot product of two coordinate arrays.

use fluxion_core::{Atom, Lit, Prim, Rhs, Type, TypeMap, VarId};

use crate::builder::{Builder, int, real};
use crate::helpers::{call, enum_match, helper, var_of, variant_fields};

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

/// Where the elements of an array `x: [E]` start among its coordinates, computed once
/// per array (recomputing them per element would make a basis vector cost O(n²)).
enum ElementStarts {
    /// Every element has `d` coordinates: element j starts at j·d.
    Every(i64),
    /// `starts[j]`: an `[Int]` of exclusive prefix sums of element dimensions.
    Table(VarId),
}

fn element_starts(b: &mut Builder, elem: &Type, x: Atom) -> ElementStarts {
    if let Some(d) = static_dim(b, elem) {
        return ElementStarts::Every(d);
    }
    let e = elem.clone();
    let f = b.lambda("tdim_step", &[], vec![Type::Int, elem.clone()], |b, ps| {
        let d = dim_of(b, &e, ps[1]);
        b.add(ps[0], d)
    });
    let ints = Type::array(Type::Int);
    let inclusive = b.prim(Prim::Scan, &[f, int(0), x], ints.clone());
    let zero = b.emit("starts", Rhs::Array(vec![int(0)]), ints.clone());
    let starts = b.prim(Prim::Concat, &[zero, inclusive], ints);
    ElementStarts::Table(var_of(b, starts))
}

impl ElementStarts {
    /// The variables a lambda needs to capture to use these starts.
    fn captures(&self) -> Vec<VarId> {
        match self {
            ElementStarts::Every(_) => vec![],
            ElementStarts::Table(v) => vec![*v],
        }
    }

    /// Where element `j` starts.
    fn of(&self, b: &mut Builder, j: Atom) -> Atom {
        match self {
            ElementStarts::Every(d) => b.mul(j, int(*d)),
            ElementStarts::Table(starts) => {
                b.prim(Prim::Index, &[Atom::Var(*starts), j], Type::Int)
            }
        }
    }
}

/// The offset of each of `parts` (of types `tys`) among their coordinates, the first
/// at `start`. The last part's dimension is never computed: it is not needed, and on
/// a recursive enum (a list's tail) computing it would make every level O(n).
fn part_offsets(b: &mut Builder, start: Atom, parts: &[Atom], tys: &[Type]) -> Vec<Atom> {
    let mut offsets = Vec::with_capacity(parts.len());
    let mut off = start;
    for (k, (p, t)) in parts.iter().zip(tys).enumerate() {
        offsets.push(off);
        if k + 1 < parts.len() {
            let d = dim_of(b, t, *p);
            off = b.add(off, d);
        }
    }
    offsets
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
                    let comps: Vec<Atom> = (0..ts.len()).map(|k| b.proj(&x, k)).collect();
                    let offsets = part_offsets(b, int(0), &comps, ts);
                    let mut parts = Vec::new();
                    for ((c, t), off) in comps.iter().zip(ts).zip(offsets) {
                        let local = b.sub(i, off);
                        parts.push(basis_of(b, t, *c, local));
                    }
                    b.tuple("basis", parts)
                }
                Type::Array(elem) => {
                    let elem = (**elem).clone();
                    let n = b.prim(Prim::Length, &[x], Type::Int);
                    let (xv, iv) = (var_of(b, x), var_of(b, i));
                    let starts = element_starts(b, &elem, Atom::Var(xv));
                    let mut captures = vec![xv, iv];
                    captures.extend(starts.captures());
                    let f = b.lambda("tbasis_elem", &captures, vec![Type::Int], |b, ps| {
                        let j = ps[0];
                        let off = starts.of(b, j);
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
                        let offsets = part_offsets(b, int(0), fields, field_tys);
                        let mut parts = Vec::new();
                        for ((f, t), off) in fields.iter().zip(field_tys).zip(offsets) {
                            let local = b.sub(i, off);
                            parts.push(basis_of(b, t, *f, local));
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
                let comps: Vec<Atom> = (0..ts.len()).map(|k| b.proj(&x, k)).collect();
                let offsets = part_offsets(b, off, &comps, ts);
                let mut parts = Vec::new();
                for ((comp, t), o) in comps.iter().zip(ts).zip(offsets) {
                    parts.push(from_coords(b, t, *comp, c, o));
                }
                b.tuple("tangent", parts)
            }
            Type::Array(elem) => {
                let elem = (**elem).clone();
                let n = b.prim(Prim::Length, &[x], Type::Int);
                let (xv, cv, ov) = (var_of(b, x), var_of(b, c), var_of(b, off));
                let starts = element_starts(b, &elem, Atom::Var(xv));
                let mut captures = vec![xv, cv, ov];
                captures.extend(starts.captures());
                let f = b.lambda("tfrom_elem", &captures, vec![Type::Int], |b, ps| {
                    let j = ps[0];
                    let rel = starts.of(b, j);
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
                    let offsets = part_offsets(b, off, fields, field_tys);
                    let mut parts = Vec::new();
                    for ((f, t), o) in fields.iter().zip(field_tys).zip(offsets) {
                        parts.push(from_coords(b, t, *f, c, o));
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
                    let n = b.prim(Prim::Length, &[v], Type::Int);
                    coords_of_range(b, ty, elem, v, int(0), n)
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

/// The coordinates of the elements `lo..hi` of a tangent array `v: T([E])`, by halves:
/// joining the halves' coordinates copies each coordinate once per level, O(N log n)
/// for N coordinates in n elements (a left fold of `concat` would copy them n times).
fn coords_of_range(b: &mut Builder, ty: &Type, elem: &Type, v: Atom, lo: Atom, hi: Atom) -> Atom {
    let reals = Type::array(Type::Real);
    let tty = b.m.tangent_type(ty);
    let elem = elem.clone();
    let params = vec![tty, Type::Int, Type::Int];
    let code = helper(b, "tcoords_range", ty, params, reals.clone(), |b, args| {
        let (v, lo, hi) = (args[0], args[1], args[2]);
        let width = b.sub(hi, lo);
        let none = b.cmp(Prim::Le, width, int(0));
        b.if_(
            none,
            reals.clone(),
            |b| b.emit("coords", Rhs::Array(vec![]), reals.clone()),
            |b| {
                let one = b.cmp(Prim::Eq, width, int(1));
                b.if_(
                    one,
                    reals.clone(),
                    |b| {
                        let telem = b.m.tangent_type(&elem);
                        let e = b.prim(Prim::Index, &[v, lo], telem);
                        coords_of(b, &elem, e)
                    },
                    |b| {
                        let half = b.arith(Prim::Div, &[width, int(2)]);
                        let mid = b.add(lo, half);
                        let left = coords_of_range(b, ty, &elem, v, lo, mid);
                        let right = coords_of_range(b, ty, &elem, v, mid, hi);
                        b.prim(Prim::Concat, &[left, right], reals.clone())
                    },
                )
            },
        )
    });
    call(b, code, vec![v, lo, hi])
}

/// `sum of u[k]·v[k]` for two coordinate arrays of equal length, each product a
/// `%lscale`: a zero component of the cotangent `v` takes no part, even against a NaN
/// or infinite partial in `u` (as a reverse sweep skips a zero adjoint).
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
                b.prim(Prim::LinScale, &[a, c], Type::Real)
            });
            b.prim(Prim::Sumbuild, &[n, f], Type::Real)
        },
    );
    call(b, code, vec![u, v])
}
