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

/// Calls `f` on every binding of `body` and of the branches nested in it, in order (a
/// binding before those of its branches); not on the bindings of the lambdas made in
/// it: they are codes of their own.
pub fn for_each_binding(body: &Body, f: &mut dyn FnMut(&Binding)) {
    for_each_binding_in(&body.bindings, f);
}

/// [`for_each_binding`] over a run of bindings (part of a body).
pub fn for_each_binding_in(bindings: &[Binding], f: &mut dyn FnMut(&Binding)) {
    for b in bindings {
        f(b);
        match &b.rhs {
            Rhs::If(_, t, e) => {
                for_each_binding(t, f);
                for_each_binding(e, f);
            }
            Rhs::Match(_, arms, d) => {
                for arm in arms {
                    for_each_binding(&arm.body, f);
                }
                if let Some(d) = d {
                    for_each_binding(d, f);
                }
            }
            _ => {}
        }
    }
}

/// Calls `f` on each body nested directly in `rhs` (an `if`'s branches, a `match`'s
/// arms and default), for the passes that rewrite branches as they rewrite a body.
pub fn for_each_branch_mut(rhs: &mut Rhs, f: &mut dyn FnMut(&mut Body)) {
    match rhs {
        Rhs::If(_, t, e) => {
            f(t);
            f(e);
        }
        Rhs::Match(_, arms, default) => {
            arms.iter_mut().for_each(|arm| f(&mut arm.body));
            if let Some(d) = default {
                f(d);
            }
        }
        _ => {}
    }
}

/// The number of bindings in `body`, those of nested branches included (not of the
/// lambdas made in it: they are codes of their own).
pub fn count_bindings(body: &Body) -> usize {
    let mut n = 0;
    for_each_binding(body, &mut |_| n += 1);
    n
}

/// The variables `body` uses without binding them, in order of first use (a lambda
/// made here counts through the captures its `Closure` lists).
pub fn free_vars(body: &Body) -> Vec<VarId> {
    fn atom(
        a: &Atom,
        bound: &std::collections::HashSet<VarId>,
        out: &mut Vec<VarId>,
        seen: &mut std::collections::HashSet<VarId>,
    ) {
        if let Atom::Var(v) = a
            && !bound.contains(v)
            && seen.insert(*v)
        {
            out.push(*v);
        }
    }
    fn go(
        body: &Body,
        bound: &mut std::collections::HashSet<VarId>,
        out: &mut Vec<VarId>,
        seen: &mut std::collections::HashSet<VarId>,
    ) {
        for b in &body.bindings {
            match &b.rhs {
                Rhs::Atom(a) | Rhs::Proj(a, _) => atom(a, bound, out, seen),
                Rhs::Prim(_, args)
                | Rhs::CallDirect(_, args)
                | Rhs::Closure(_, args)
                | Rhs::Tuple(args)
                | Rhs::Array(args)
                | Rhs::Ctor(_, _, args) => args.iter().for_each(|a| atom(a, bound, out, seen)),
                Rhs::Call(f, args) => {
                    atom(f, bound, out, seen);
                    args.iter().for_each(|a| atom(a, bound, out, seen));
                }
                Rhs::If(c, t, e) => {
                    atom(c, bound, out, seen);
                    go(t, bound, out, seen);
                    go(e, bound, out, seen);
                }
                Rhs::Match(s, arms, default) => {
                    atom(s, bound, out, seen);
                    for arm in arms {
                        bound.extend(arm.fields.iter().copied());
                        go(&arm.body, bound, out, seen);
                    }
                    if let Some(d) = default {
                        go(d, bound, out, seen);
                    }
                }
            }
            bound.insert(b.var);
        }
        atom(&body.result, bound, out, seen);
    }
    let mut out = Vec::new();
    go(
        body,
        &mut Default::default(),
        &mut out,
        &mut Default::default(),
    );
    out
}

/// How often each variable is used in `body`: operands, branch results, and the
/// captures of closures made here (a lambda's uses count once, at its `Closure`).
pub fn count_uses(body: &Body) -> std::collections::HashMap<VarId, usize> {
    let mut uses = std::collections::HashMap::new();
    count(body, &mut uses);
    uses
}

fn count(body: &Body, uses: &mut std::collections::HashMap<VarId, usize>) {
    let atom = |a: &Atom, uses: &mut std::collections::HashMap<VarId, usize>| {
        if let Atom::Var(v) = a {
            *uses.entry(*v).or_default() += 1;
        }
    };
    for b in &body.bindings {
        match &b.rhs {
            Rhs::Atom(a) | Rhs::Proj(a, _) => atom(a, uses),
            Rhs::Prim(_, args)
            | Rhs::Tuple(args)
            | Rhs::Array(args)
            | Rhs::Ctor(_, _, args)
            | Rhs::Closure(_, args)
            | Rhs::CallDirect(_, args) => args.iter().for_each(|a| atom(a, uses)),
            Rhs::Call(f, args) => {
                atom(f, uses);
                args.iter().for_each(|a| atom(a, uses));
            }
            Rhs::If(c, t, e) => {
                atom(c, uses);
                count(t, uses);
                count(e, uses);
            }
            Rhs::Match(s, arms, default) => {
                atom(s, uses);
                arms.iter().for_each(|arm| count(&arm.body, uses));
                if let Some(d) = default {
                    count(d, uses);
                }
            }
        }
    }
    atom(&body.result, uses);
}

/// Over the bindings of `codes`: the code of every variable bound to a closure, or to
/// a copy of one (variables are bound once in a module, so this holds wherever the
/// variable is used), and the codes some closure is made of.
pub fn closures_of(
    m: &crate::Module,
    codes: &[CodeId],
) -> (
    std::collections::HashMap<VarId, CodeId>,
    std::collections::HashSet<CodeId>,
) {
    let (mut known, mut made) = (
        std::collections::HashMap::new(),
        std::collections::HashSet::new(),
    );
    for c in codes {
        for_each_binding(&m.code(*c).body, &mut |b| match &b.rhs {
            Rhs::Closure(c, _) => {
                known.insert(b.var, *c);
                made.insert(*c);
            }
            Rhs::Atom(Atom::Var(x)) => {
                if let Some(&c) = known.get(x) {
                    known.insert(b.var, c);
                }
            }
            _ => {}
        });
    }
    (known, made)
}
