//! Traversals of Core terms.

use crate::term::*;

/// Calls `f` on every code a body refers to (direct calls and closures), including
/// inside nested bodies and the bodies of lambdas made here.
pub fn for_each_code_ref(body: &Body, f: &mut dyn FnMut(CodeId)) {
    for_each_code_ref_in(body, f, &mut |_| None);
}

/// Like [`for_each_code_ref`]; `lambda_body` gives the body of a lambda code so that
/// the walk descends into it (pass `|_| None` not to descend).
pub fn for_each_code_ref_in<'a>(
    body: &'a Body,
    f: &mut dyn FnMut(CodeId),
    lambda_body: &mut dyn FnMut(CodeId) -> Option<&'a Body>,
) {
    for b in &body.bindings {
        match &b.rhs {
            Rhs::CallDirect(c, _) | Rhs::Closure(c, _) => {
                f(*c);
                if let Some(inner) = lambda_body(*c) {
                    for_each_code_ref_in(inner, f, lambda_body);
                }
            }
            Rhs::If(_, t, e) => {
                for_each_code_ref_in(t, f, lambda_body);
                for_each_code_ref_in(e, f, lambda_body);
            }
            Rhs::Match(_, arms, default) => {
                for arm in arms {
                    for_each_code_ref_in(&arm.body, f, lambda_body);
                }
                if let Some(d) = default {
                    for_each_code_ref_in(d, f, lambda_body);
                }
            }
            _ => {}
        }
    }
}
