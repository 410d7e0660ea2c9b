//! What every structure-preserving layer shares: its name (in memo keys and code
//! names), the memo key of a translated code, and `primal(v)`, the primal part of a
//! translated value.

use fluxion_core::{Atom, CodeId, Lit, Prim, Rhs, Type, TypeMap, VarId};

use crate::builder::{Builder, int};
use crate::helpers::{call, enum_match, helper, variant_fields};

/// The name of a layer in memo keys and code names.
pub(crate) fn layer_name(layer: TypeMap) -> String {
    match layer {
        TypeMap::Fwd => "fwd".into(),
        TypeMap::Taylor(j) if j.dirs == 1 => format!("taylor{}", j.order),
        TypeMap::Taylor(j) => format!("jet{}x{}", j.dirs, j.order),
        TypeMap::Deps => "deps".to_string(),
        TypeMap::Tangent => "tangent".into(),
        TypeMap::Delta => "delta".into(),
        TypeMap::Chad => "chad".into(),
        TypeMap::ChadFwd => "chadfwd".into(),
    }
}

/// The memo key of `code` translated by `layer` on its own (with fresh captures):
/// the translation depends on nothing else ([Delta] §7.5). A lambda translated inline,
/// inside its enclosing function's translation, captures that translation's variables
/// and is not memoised: it belongs to that translation alone.
pub(crate) fn translation_key(layer: TypeMap, code: CodeId) -> String {
    format!("{}#{}", layer_name(layer), code.0)
}

/// Whether `code` has been translated by `layer` on its own already (so translating it
/// again costs nothing).
pub fn is_translated(m: &fluxion_core::Module, code: CodeId, layer: TypeMap) -> bool {
    m.derived_codes.contains_key(&translation_key(layer, code))
}

/// Variables a translated lambda captures: its own fresh ones (`None`), or those of
/// the enclosing translation it is made in.
pub(crate) type Captures = Option<Vec<VarId>>;

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
    let name = format!("primal_{}", layer_name(layer));
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

/// An empty array makes `maximum`/`minimum` (`p`) fail with their own message where a
/// translation finds the extreme by `argmax`, whose message would name `argmax`:
/// `if length(xs) == 0 { p([]) }`, O(1) where the array is not empty. The failing call
/// reads an empty literal, not `xs`, so `xs` stays read by `length` alone (it may be
/// computed on primals: `activity.rs`).
pub(crate) fn empty_check(b: &mut Builder, p: Prim, xs: Atom) {
    let n = b.prim(Prim::Length, &[xs], Type::Int);
    let empty = b.cmp(Prim::Eq, n, int(0));
    let fails = b.block(|b| {
        let none = b.emit("empty", Rhs::Array(vec![]), Type::array(Type::Real));
        b.prim(p, &[none], Type::Real);
        Atom::Lit(Lit::Unit)
    });
    let unit = b.block(|_| Atom::Lit(Lit::Unit));
    b.emit(
        "checked",
        Rhs::If(empty, Box::new(fails), Box::new(unit)),
        Type::Unit,
    );
}
