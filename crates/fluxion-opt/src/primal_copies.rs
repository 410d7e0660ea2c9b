//! The late passes ([`crate::Stage::Final`]) for the module's own functions, once the
//! operators are resolved: a function that a translation read keeps its body (its
//! translations, and any a run makes later, agree with it), and the program's
//! primal calls go to a copy optimised with every pass.
//!
//! A user function whose body (or a lambda made in it) holds a `scan`, and which is
//! *closed* — no function goes in or out, and it reaches no operator or derivative
//! code, so no closure it makes can flow where resolving expected the original's
//! lambdas (`%chad_of`'s tables, `fluxion-ad`'s `flow.rs`) — is copied
//! (`instantiate`), the copy optimised at `Final`; where a late pass fired (fewer
//! scans), every direct call of the function in the module's codes and the copies
//! names the copy, and so does its entry in `functions` (a closure of it stays the
//! original's: the function as a value is what operators' tables know). Derivative
//! code that calls the function for a primal value calls the copy too: the same
//! value, bit for bit, as every pass keeps. `m.unresolved` keeps the bodies as
//! written.

use std::collections::{HashMap, HashSet};

use fluxion_core::{Atom, Body, Code, CodeId, CodeKind, Module, Prim, Rhs};

use crate::instantiate::{copied_codes, instantiate};
use crate::{Report, Stage};

/// Optimises copies of the module's user functions at [`Stage::Final`] and points the
/// primal calls at them (see the module doc). A failure leaves the module as it was
/// but for unused copies.
pub fn finish_primal_code(m: &mut Module, report: &mut Report) -> Result<(), String> {
    let live = crate::live_codes(m);
    let derived: HashSet<CodeId> = m.derived_codes.values().copied().collect();
    let candidates: Vec<CodeId> = (0..m.codes.len())
        .map(|i| CodeId(i as u32))
        .filter(|c| {
            let code = m.code(*c);
            live[c.0 as usize]
                && code.kind == CodeKind::TopLevel
                && code.captures.is_empty()
                && !code.span.is_prelude()
                && !derived.contains(c)
                && !m.translated_from.contains_key(c)
                && scans(m, *c) > 0
                && closed(m, *c)
        })
        .collect();
    if candidates.is_empty() {
        return Ok(());
    }
    let first_copy = m.codes.len();
    let mut copies = Vec::new();
    for &c in &candidates {
        let source = m.code(c).clone();
        let args: Vec<Atom> = source.params.iter().map(|p| Atom::Var(*p)).collect();
        let (mut bindings, result) = instantiate(m, c, &[], &args, source.span);
        // The copy's first bindings copy the arguments (`let p' = p`, no captures):
        // their variables are its parameters.
        let params: Vec<_> = bindings.drain(..args.len()).map(|b| b.var).collect();
        let copy = m.add_code(Code {
            name: source.name.clone(),
            kind: CodeKind::TopLevel,
            captures: Vec::new(),
            params,
            ret: source.ret.clone(),
            body: Body { bindings, result },
            span: source.span,
        });
        copies.push((c, copy));
    }
    crate::optimize_codes_from(m, first_copy, Stage::Final, report)?;
    // Only where a late pass fired.
    let redirect: HashMap<CodeId, CodeId> = copies
        .into_iter()
        .filter(|(c, copy)| scans(m, *copy) < scans(m, *c))
        .collect();
    if redirect.is_empty() {
        return Ok(());
    }
    for code in &mut m.codes {
        rename_calls(&mut code.body, &redirect);
    }
    for target in m.functions.values_mut() {
        if let Some(copy) = redirect.get(target) {
            *target = *copy;
        }
    }
    Ok(())
}

/// Whether no function value enters or leaves `code` (parameters and result) and
/// the codes it reaches (calls, closures) hold no operator or tape primitive and are
/// no derivative code.
fn closed(m: &Module, code: CodeId) -> bool {
    let c = m.code(code);
    if c.params.iter().any(|p| m.can_hold_fn(m.var_ty(*p))) || m.can_hold_fn(&c.ret) {
        return false;
    }
    let mut stack = vec![code];
    let mut seen = HashSet::new();
    let mut ok = true;
    while let Some(c) = stack.pop() {
        if !seen.insert(c) {
            continue;
        }
        ok &= !m.translated_from.contains_key(&c);
        fluxion_core::visit::for_each_binding(&m.code(c).body, &mut |b| match &b.rhs {
            Rhs::Prim(p, _) => ok &= !p.is_derivative_machinery(),
            Rhs::CallDirect(d, _) | Rhs::Closure(d, _) => stack.push(*d),
            _ => {}
        });
    }
    ok
}

/// The `scan`s in `code`'s body and in the lambdas made in it.
fn scans(m: &Module, code: CodeId) -> usize {
    let mut count = 0;
    for c in copied_codes(m, code) {
        fluxion_core::visit::for_each_binding(&m.code(c).body, &mut |b| {
            count += usize::from(matches!(b.rhs, Rhs::Prim(Prim::Scan, _)));
        });
    }
    count
}

/// Direct calls of the keys of `redirect` in `body` name their values. (Not closures:
/// a function used as a value may meet an operator at run time, whose tables —
/// `%chad_of`'s, the tapes of tapes' — know the original code.)
fn rename_calls(body: &mut Body, redirect: &HashMap<CodeId, CodeId>) {
    for b in &mut body.bindings {
        match &mut b.rhs {
            Rhs::CallDirect(c, _) => {
                if let Some(copy) = redirect.get(c) {
                    *c = *copy;
                }
            }
            rhs => fluxion_core::visit::for_each_branch_mut(rhs, &mut |inner| {
                rename_calls(inner, redirect)
            }),
        }
    }
}
