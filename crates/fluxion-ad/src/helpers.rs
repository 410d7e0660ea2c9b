//! Generated helper codes: top-level Core functions made once per type (or per jet
//! operation) and memoised in `Module::derived_codes`, so that every transformation
//! applies to them in turn like to user code. Shared by every layer and mode.

use fluxion_core::{Arm, Atom, CodeId, CodeKind, Rhs, Type, VarId};

use crate::builder::Builder;

/// The memo key of a helper for a type: by enum ids, not names (a user enum may be
/// called like a derived one).
fn key(name: &str, ty: &Type) -> String {
    format!("{name}#{ty:?}")
}

/// The helper code `name` for type `ty`, once [`helper`] has reserved it: a helper's
/// body calls itself through this.
pub(crate) fn helper_id(b: &Builder, name: &str, ty: &Type) -> Option<CodeId> {
    b.m.derived_codes.get(&key(name, ty)).copied()
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

/// `vars` with each repetition replaced by a fresh copy of it (`let v2 = v`): a
/// translated lambda captures the translations of its captures, and two captures
/// that are copies of one variable (the optimiser keeps copies of captured
/// variables) translate to one — a code's captures must be distinct variables.
pub(crate) fn distinct_vars(b: &mut Builder, vars: Vec<VarId>) -> Vec<VarId> {
    let mut seen = std::collections::HashSet::new();
    vars.into_iter()
        .map(|v| {
            if seen.insert(v) {
                return v;
            }
            let ty = b.m.var_ty(v).clone();
            match b.emit("capture", Rhs::Atom(Atom::Var(v)), ty) {
                Atom::Var(copy) => copy,
                Atom::Lit(_) => unreachable!("emit returns a variable"),
            }
        })
        .collect()
}

/// The field types of each constructor of enum `e`.
pub(crate) fn variant_fields(b: &Builder, e: fluxion_core::EnumId) -> Vec<Vec<Type>> {
    b.m.enum_def(e)
        .variants
        .iter()
        .map(|v| v.fields.clone())
        .collect()
}

/// `match x { C(fields) => arm(C's fields) ... }` over every constructor of `e`.
pub(crate) fn enum_match(
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
