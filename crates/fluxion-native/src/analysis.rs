//! Analyses of Core the C emission reads: which codes the entry reaches, which closures
//! never escape their function (their environments live on the C stack), which bodies
//! enter code (a stack check on entry). They know nothing of C.

use std::collections::{HashMap, HashSet};

use fluxion_core::{Atom, Body, CodeId, Module, Prim, Rhs, Type, VarId};

/// The closures of `body` that never escape it: used only as the function a call or a
/// higher-order built-in applies (never stored, returned or passed on), or captured
/// by such a closure whose code only applies them in turn — unless a loop node may
/// run that code again at its sweep (`held`: it holds the captures past the frame).
/// Their environments live on the C stack, where the C compiler can take them apart
/// once it inlines the (known) code (gmm's row of Q·v, captured by the loop that sums
/// its squares).
pub(crate) fn non_escaping_closures(
    m: &Module,
    body: &Body,
    held: &HashSet<CodeId>,
) -> HashSet<VarId> {
    let (mut made, mut escaped, captured) = escapes(body);
    // A capture escapes with the closure holding it, or where its code does more
    // than apply it.
    let mut applied_in: HashMap<CodeId, HashSet<VarId>> = HashMap::new();
    loop {
        let before = escaped.len();
        for &(x, owner, c, k) in &captured {
            if escaped.contains(&x) {
                continue;
            }
            let code = m.code(c);
            let kept = !made.contains(&owner) || escaped.contains(&owner) || held.contains(&c);
            let passed_on = applied_in
                .entry(c)
                .or_insert_with(|| passed_on(&code.body))
                .contains(&code.captures[k]);
            if kept || passed_on {
                escaped.insert(x);
            }
        }
        if escaped.len() == before {
            break;
        }
    }
    made.retain(|v| !escaped.contains(v));
    made
}

/// The variables `body` uses other than as the function a call or a higher-order
/// built-in applies, a closure's captures included (a closure made there may escape
/// with them: a capture passed on is not followed further).
fn passed_on(body: &Body) -> HashSet<VarId> {
    let (_, mut escaped, captured) = escapes(body);
    escaped.extend(captured.iter().map(|&(x, ..)| x));
    escaped
}

/// A closure captured by another made in the same body: the captured variable, the
/// capturing closure's variable, its code and the capture's position.
type Captured = (VarId, VarId, CodeId, usize);

/// The closures `body` makes, the variables it uses other than as the function a
/// call or a higher-order built-in applies (a closure's captures aside), and the
/// captures of the closures it makes.
fn escapes(body: &Body) -> (HashSet<VarId>, HashSet<VarId>, Vec<Captured>) {
    fn walk(
        body: &Body,
        made: &mut HashSet<VarId>,
        escaped: &mut HashSet<VarId>,
        captured: &mut Vec<Captured>,
    ) {
        let escape = |a: &Atom, escaped: &mut HashSet<VarId>| {
            if let Atom::Var(v) = a {
                escaped.insert(*v);
            }
        };
        for b in &body.bindings {
            match &b.rhs {
                Rhs::Closure(c, args) => {
                    made.insert(b.var);
                    for (k, a) in args.iter().enumerate() {
                        if let Atom::Var(x) = a {
                            captured.push((*x, b.var, *c, k));
                        }
                    }
                }
                Rhs::Call(_, args) => args.iter().for_each(|a| escape(a, escaped)),
                Rhs::Prim(p, args) => {
                    let applied = match p {
                        Prim::Map | Prim::Map2 | Prim::Fold | Prim::Scan => Some(0),
                        Prim::Build | Prim::Sumbuild | Prim::Iterate | Prim::DeltaSumbuild => {
                            Some(1)
                        }
                        _ => None,
                    };
                    for (i, a) in args.iter().enumerate() {
                        if applied != Some(i) {
                            escape(a, escaped);
                        }
                    }
                }
                Rhs::If(c, t, e) => {
                    escape(c, escaped);
                    walk(t, made, escaped, captured);
                    walk(e, made, escaped, captured);
                }
                Rhs::Match(a, arms, d) => {
                    escape(a, escaped);
                    arms.iter()
                        .for_each(|arm| walk(&arm.body, made, escaped, captured));
                    if let Some(d) = d {
                        walk(d, made, escaped, captured);
                    }
                }
                Rhs::Atom(a) | Rhs::Proj(a, _) => escape(a, escaped),
                Rhs::CallDirect(_, args)
                | Rhs::Tuple(args)
                | Rhs::Array(args)
                | Rhs::Ctor(_, _, args) => args.iter().for_each(|a| escape(a, escaped)),
            }
        }
        escape(&body.result, escaped);
    }
    let (mut made, mut escaped, mut captured) = (HashSet::new(), HashSet::new(), Vec::new());
    walk(body, &mut made, &mut escaped, &mut captured);
    (made, escaped, captured)
}

/// The codes `entry` reaches by calls and closures, in id order.
pub(crate) fn reachable(m: &Module, roots: &[CodeId]) -> Vec<CodeId> {
    let mut seen: HashSet<CodeId> = roots.iter().copied().collect();
    let mut stack = roots.to_vec();
    while let Some(c) = stack.pop() {
        fluxion_core::visit::for_each_code_ref(&m.code(c).body, &mut |d| {
            if seen.insert(d) {
                stack.push(d);
            }
        });
    }
    let mut codes: Vec<CodeId> = seen.into_iter().collect();
    codes.sort();
    codes
}

/// Whether running `body` may enter code: a call, or a primitive given a function (a
/// higher-order built-in's loop, an operator). A body that does not is the end of any
/// chain of calls, so no recursion runs through it.
pub(crate) fn enters_code(m: &Module, body: &Body) -> bool {
    let mut enters = false;
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        enters |= match &b.rhs {
            Rhs::Call(..) | Rhs::CallDirect(..) => true,
            Rhs::Prim(_, args) => args.iter().any(|a| matches!(m.atom_ty(a), Type::Fn(..))),
            _ => false,
        };
    });
    enters
}

/// The `range(n)` arrays of `body` read only as the array a `fold` or `scan` runs
/// over: never made, the loop counts its indices (llsq's powers of `t` by a running
/// product over `range(m - 1)` were an array allocated and filled per data point).
pub(crate) fn loop_ranges(body: &Body) -> HashSet<VarId> {
    let mut ranges = HashSet::new();
    let mut looped: HashMap<VarId, usize> = HashMap::new();
    fluxion_core::visit::for_each_binding(body, &mut |b| match &b.rhs {
        Rhs::Prim(Prim::Range, _) => {
            ranges.insert(b.var);
        }
        Rhs::Prim(Prim::Fold | Prim::Scan, args) => {
            if let Some(Atom::Var(xs)) = args.get(2) {
                *looped.entry(*xs).or_default() += 1;
            }
        }
        _ => {}
    });
    let uses = fluxion_core::visit::count_uses(body);
    ranges.retain(|v| looped.get(v).is_some_and(|n| uses.get(v) == Some(n)));
    ranges
}

/// The `slice`s of `body` whose result nothing reads: kept by the optimiser because
/// they can fail (`simplify` reads a literal index of a slice from the sliced array),
/// they are their bounds check only, no array.
pub(crate) fn unread_slices(body: &Body) -> HashSet<VarId> {
    let uses = fluxion_core::visit::count_uses(body);
    let mut slices = HashSet::new();
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        if matches!(b.rhs, Rhs::Prim(Prim::Slice, _)) && !uses.contains_key(&b.var) {
            slices.insert(b.var);
        }
    });
    slices
}

fn var_of(a: &Atom) -> Option<VarId> {
    match a {
        Atom::Var(v) => Some(*v),
        _ => None,
    }
}

/// Whether `t` is an array of scalars (its elements hold no reference).
fn scalar_array(t: &Type) -> bool {
    matches!(t, Type::Array(e) if matches!(**e, Type::Real | Type::Int | Type::Bool))
}

/// Whether primitive `p` only reads its array operand `i` (its result never shares it).
fn reads_operand(p: Prim, i: usize) -> bool {
    use Prim::*;
    match p {
        Index | Length | Sum | Slice | Reverse | Argmax | Maximum | Minimum => i == 0,
        Concat => i <= 1,
        Map => i == 1,
        Map2 => i == 1 || i == 2,
        Fold | Scan => i == 2,
        _ => false,
    }
}

/// Whether every use of `v` in `body` (its branches included) only reads it: a
/// primitive that reads it ([`reads_operand`]), a direct call's parameter in
/// `ro.vars`, or a capture in `ro.vars` of a closure in `on_stack` (one that never
/// escapes `body`). In a module that records on a tape, not a capture of a closure a
/// loop node may hold ([`ReadOnly::held`]) nor the operand of a `map` making pairs:
/// the node keeps them until the sweep, after the frame that made them is gone (a map
/// making reals records nothing: no node). A branch may give `v` as
/// its result when the branch's `if`/`match` is in `joins` (itself only read).
fn only_read(
    m: &Module,
    body: &Body,
    v: VarId,
    ro: &ReadOnly,
    on_stack: &HashSet<VarId>,
    joins: &HashSet<VarId>,
) -> bool {
    only_read_in(m, body, v, ro, on_stack, joins, false)
}

/// [`only_read`] in `body`, whose result may be `v` when `result_joins`.
fn only_read_in(
    m: &Module,
    body: &Body,
    v: VarId,
    ro: &ReadOnly,
    on_stack: &HashSet<VarId>,
    joins: &HashSet<VarId>,
    result_joins: bool,
) -> bool {
    let a = Atom::Var(v);
    if body.result == a && !result_joins {
        return false;
    }
    let within = |b: &Body, joined: bool| only_read_in(m, b, v, ro, on_stack, joins, joined);
    body.bindings.iter().all(|b| match &b.rhs {
        // In a module recording on a tape a `map` or `map2` making pairs may be a loop
        // node holding its operands until the sweep (`delta_loop::recomputable`: its
        // element function returns a delta); one making scalars records none.
        Rhs::Prim(p, args) => args.iter().enumerate().all(|(i, x)| {
            let node =
                ro.tape && matches!(p, Prim::Map | Prim::Map2) && !scalar_array(m.var_ty(b.var));
            *x != a || (reads_operand(*p, i) && !node)
        }),
        Rhs::CallDirect(c, args) => args
            .iter()
            .zip(&m.code(*c).params)
            .all(|(x, p)| *x != a || ro.vars.contains(p)),
        Rhs::Closure(c, args) => args.iter().zip(&m.code(*c).captures).all(|(x, k)| {
            *x != a || (on_stack.contains(&b.var) && ro.vars.contains(k) && !ro.held.contains(c))
        }),
        Rhs::If(c, t, e) => {
            let joined = joins.contains(&b.var);
            *c != a && within(t, joined) && within(e, joined)
        }
        Rhs::Match(x, arms, d) => {
            let joined = joins.contains(&b.var);
            *x != a
                && arms.iter().all(|arm| within(&arm.body, joined))
                && d.as_ref().is_none_or(|d| within(d, joined))
        }
        // A copy (the optimiser leaves them where it inlined): its uses are `v`'s.
        Rhs::Atom(x) if *x == a => only_read_in(m, body, b.var, ro, on_stack, joins, result_joins),
        Rhs::Atom(x) | Rhs::Proj(x, _) => *x != a,
        Rhs::Call(f, args) => *f != a && !args.contains(&a),
        Rhs::Tuple(args) | Rhs::Array(args) | Rhs::Ctor(_, _, args) => !args.contains(&a),
    })
}

/// What [`read_only_inputs`] finds: the parameters and captures only read, and what a
/// tape may hold.
pub(crate) struct ReadOnly {
    pub(crate) vars: HashSet<VarId>,
    /// Where the module records on a tape: the codes a loop node may run again at its
    /// sweep (`delta_loop::recomputable`), whose captures the node holds.
    pub(crate) held: HashSet<CodeId>,
    pub(crate) tape: bool,
}

/// The parameters and captures, arrays of scalars, that their code only reads (and
/// passes only where they are only read): an array made for such a parameter can live
/// on the caller's C stack. The greatest such set, by removing what fails until none
/// does (a recursive function's parameter read by itself stays). `held(c)`: whether a
/// loop node may run code `c` again at its sweep, holding its captures
/// (`delta_loop::recomputable`, a layer above).
pub(crate) fn read_only_inputs(
    m: &Module,
    codes: &[CodeId],
    held: &dyn Fn(CodeId) -> bool,
) -> ReadOnly {
    let mut tape = false;
    for c in codes {
        fluxion_core::visit::for_each_binding(&m.code(*c).body, &mut |b| {
            tape |= matches!(&b.rhs, Rhs::Prim(p, _) if p.name().starts_with("%delta"));
        });
    }
    let held = if tape {
        codes.iter().filter(|c| held(**c)).copied().collect()
    } else {
        HashSet::new()
    };
    let mut ro = ReadOnly {
        vars: codes
            .iter()
            .flat_map(|c| {
                let code = m.code(*c);
                code.params.iter().chain(&code.captures).copied()
            })
            .filter(|v| scalar_array(m.var_ty(*v)))
            .collect(),
        held,
        tape,
    };
    let stacks: HashMap<CodeId, HashSet<VarId>> = codes
        .iter()
        .map(|c| (*c, non_escaping_closures(m, &m.code(*c).body, &ro.held)))
        .collect();
    loop {
        let mut out = Vec::new();
        for c in codes {
            let code = m.code(*c);
            for v in code.params.iter().chain(&code.captures) {
                if ro.vars.contains(v)
                    && !only_read(m, &code.body, *v, &ro, &stacks[c], &HashSet::new())
                {
                    out.push(*v);
                }
            }
        }
        if out.is_empty() {
            return ro;
        }
        for v in out {
            ro.vars.remove(&v);
        }
    }
}

/// The arrays of scalars a function makes on the C stack ([`stack_arrays`]).
#[derive(Default)]
pub(crate) struct StackArrays {
    pub(crate) vars: HashSet<VarId>,
    /// Those a branch gives as its result: their buffers are declared at the
    /// function's top, where they outlive the branch's C block.
    pub(crate) hoisted: HashSet<VarId>,
}

/// The arrays of scalars `body` makes (`build`, `map`, `map2`, `slice`, `reverse`,
/// `concat`, a literal) and only reads ([`only_read`]), directly or as the result of
/// an `if` or `match` only read in turn: small ones live on the C stack
/// (`fx_stack_arr`), no allocation (det's minor: the columns left, one array per
/// term; ba's camera centre and rotated point, per observation).
pub(crate) fn stack_arrays(
    m: &Module,
    body: &Body,
    read_only: &ReadOnly,
    on_stack: &HashSet<VarId>,
) -> StackArrays {
    let mut made = Vec::new();
    let mut joins = HashSet::new();
    let mut results = HashSet::new();
    let mut copy_of = HashMap::new();
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        let scalars = scalar_array(m.var_ty(b.var));
        match &b.rhs {
            Rhs::Prim(
                Prim::Build | Prim::Map | Prim::Map2 | Prim::Slice | Prim::Reverse | Prim::Concat,
                _,
            )
            | Rhs::Array(_)
                if scalars =>
            {
                made.push(b.var)
            }
            Rhs::If(_, t, e) => {
                joins.extend(scalars.then_some(b.var));
                results.extend([&t.result, &e.result].into_iter().filter_map(var_of));
            }
            Rhs::Match(_, arms, d) => {
                joins.extend(scalars.then_some(b.var));
                let bodies = arms.iter().map(|a| &a.body).chain(d.as_deref());
                results.extend(bodies.filter_map(|b| var_of(&b.result)));
            }
            // A copy: a branch's result may be one (`let w = v; w`).
            Rhs::Atom(Atom::Var(x)) => {
                copy_of.insert(b.var, *x);
            }
            _ => {}
        }
    });
    // The joins only read: the greatest such set (a join may be a branch's result).
    loop {
        let out: Vec<VarId> = joins
            .iter()
            .copied()
            .filter(|u| !only_read(m, body, *u, read_only, on_stack, &joins))
            .collect();
        if out.is_empty() {
            break;
        }
        for u in out {
            joins.remove(&u);
        }
    }
    let vars: HashSet<VarId> = made
        .into_iter()
        .filter(|v| only_read(m, body, *v, read_only, on_stack, &joins))
        .collect();
    // Where a branch's result is a copy of the array, the copied one's buffer is the
    // one to hoist.
    let mut flowing = results.clone();
    for r in results {
        let mut v = r;
        while let Some(&w) = copy_of.get(&v) {
            flowing.insert(w);
            v = w;
        }
    }
    let hoisted = vars.intersection(&flowing).copied().collect();
    StackArrays { vars, hoisted }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxion_core::{Binding, Lit, Span};

    fn bind(var: VarId, rhs: Rhs) -> Binding {
        Binding {
            var,
            rhs,
            span: Span::default(),
        }
    }

    fn read_only() -> ReadOnly {
        ReadOnly {
            vars: HashSet::new(),
            held: HashSet::new(),
            tape: false,
        }
    }

    /// `let d = if c { let q = [x, x]; let w = q; w } else { [x] }; d[0]`: the literal
    /// reaches the join through a copy, and its buffer must outlive the branch — it is
    /// hoisted, as the other branch's literal is.
    #[test]
    fn an_array_a_branch_gives_through_a_copy_is_hoisted() {
        let mut m = Module::default();
        let reals = Type::array(Type::Real);
        let x = m.fresh_var("x", Type::Real);
        let c = m.fresh_var("c", Type::Bool);
        let (q, w, e, d, r) = (
            m.fresh_var("q", reals.clone()),
            m.fresh_var("w", reals.clone()),
            m.fresh_var("e", reals.clone()),
            m.fresh_var("d", reals.clone()),
            m.fresh_var("r", Type::Real),
        );
        let then = Body {
            bindings: vec![
                bind(q, Rhs::Array(vec![Atom::Var(x), Atom::Var(x)])),
                bind(w, Rhs::Atom(Atom::Var(q))),
            ],
            result: Atom::Var(w),
        };
        let other = Body {
            bindings: vec![bind(e, Rhs::Array(vec![Atom::Var(x)]))],
            result: Atom::Var(e),
        };
        let body = Body {
            bindings: vec![
                bind(d, Rhs::If(Atom::Var(c), Box::new(then), Box::new(other))),
                bind(
                    r,
                    Rhs::Prim(Prim::Index, vec![Atom::Var(d), Atom::Lit(Lit::Int(0))]),
                ),
            ],
            result: Atom::Var(r),
        };
        let stack = stack_arrays(&m, &body, &read_only(), &HashSet::new());
        assert_eq!(stack.vars, HashSet::from([q, e]));
        assert_eq!(stack.hoisted, HashSet::from([q, e]));
    }
}
