//! Loop nodes (`--ad delta`, issue 32's array-level reverse for loops of cheap
//! elements): a `%delta_sum` of a loop whose element function is arithmetic, index
//! reads, `%delta`s and inner sums of such functions — no call, transcendental
//! function or branch that makes a `%delta` — records no node per element. The loop runs a *primal variant* of the
//! element function (`fn_N_p`: its `%delta`s record nothing) and the sum's delta is one
//! tape node that holds the element function's closure (a heap copy) and the loop's
//! operand arrays. Its sweep (`fx_sweep_K`, one per loop) runs the *apply variant*
//! (`fn_N_a`) for each element, last to first: the element computed again, then its
//! own `%delta`s swept in registers, each term added into the local adjoint of an
//! earlier `%delta` of the element or into the tape's adjoint of an id it read (inside
//! a preaccumulating sum's element, an id below the element's mark goes into the sum's
//! coefficients, `FX_PRE_ADD`, as the element's sweep routes every node's).
//!
//! A *map* loop node ([`emit_map`]) stands for the elements of a `build`, `map` or
//! `map2` of such a function (an `if` whose branches make no `%delta` allowed): it
//! takes one id per element, in order, which the elements' pairs carry, and its sweep
//! runs each element's apply variant with that element's own adjoint, last to first.
//! The interpreter's elements lie together on its tape and nothing reads one before
//! the loop ends, so the updates are again its own, in its order. (An element whose
//! result's terms all fell on the zero id has an id here where the interpreter gave
//! it 0: the adjoint it gathers reaches only such terms, so the inputs' are the same.
//! Where every id the elements read is zero — constant data inside a gradient — no
//! node is made and each element takes the zero id ([`live`]): the ids would hold 16
//! bytes per element until the sweep where the interpreter holds none.)
//!
//! An *inner sum* ([`inner_sum`]) — a `build`, `map` or `map2` of a closure made in
//! the element whose code is such a function without inner sums, and the `%delta_sum`
//! of its array: GMM's `(Q·v)ᵢ² = (qᵢvᵢ + Σ_{j<i} Lᵢⱼvⱼ)²` per row — is summed by
//! the inner code's primal variant in both variants, and is one local adjoint of the
//! apply variant, whose sweep runs the inner code's apply variant per inner element,
//! last to first. Its elements may read no id of the element's own `%delta`s (only
//! the element's inputs'), so their terms go to the tape's adjoints alone. Per GMM
//! point and component, one node where there were a dot node and three nodes per row.
//!
//! Why the bits are the interpreter's: the elements' nodes would lie on the tape
//! element after element, the sum's node last, and the sweep would visit the sum's node
//! (giving each element's result delta the adjoint `0.0 + 1.0·ā = ā`), then each
//! element's nodes last to first, elements last to first — the updates the apply
//! variants make, in the same order, with the same rules (a zero adjoint is skipped; a
//! zero coefficient passes no infinite or NaN adjoint on; ids below the tape's mark
//! and the zero id take nothing). A `%delta` whose terms all fell on the zero id made
//! no node and had id 0: here its local adjoint reaches only such terms, so nothing.
//! An inner sum is the same argument one level down: its elements' nodes, then its
//! sum's node, lay where the element made them.
//!
//! The rule that decides recompute over store (the "stated rule"): an element
//! is computed again where its primal operations are arithmetic (`+ − × ÷`, `min`,
//! `max`, `abs`, comparisons, `to_real`, `%lscale`) and reads; one that evaluates a
//! transcendental function or calls anything keeps its terms on the tape
//! (`delta_fuse.rs`). The held arrays count against the tape's memory as dot nodes'
//! do (`fx_tape_loop_pays`): where they would hold more than twice the nodes' bytes,
//! the loop records its elements' nodes as written.

use std::collections::HashMap;
use std::fmt::Write;

use fluxion_core::visit::free_vars;
use fluxion_core::{Atom, Binding, Body, CodeId, Lit, Module, Prim, Rhs, Type, VarId};

use crate::emitter::{
    APPLY_SUFFIX, Emitter, LocalDelta, PRIMAL_SUFFIX, atom, span_args, var, versioned,
};

/// The most `%delta`s an element may make (each a local adjoint in the sweep).
const MAX_DELTAS: usize = 64;
/// The most arrays a loop node holds (`FX_LOOP_HELD`, `fx_tape_loop_t.arrs`).
const MAX_HELD: usize = 8;

/// The fewest elements a loop node is made for: below, making the node (the closure's
/// copy, the references) costs more than the elements' nodes (GMM at d = 2, where most
/// loops had one element: 287 M instructions a gradient against 166 M).
const MIN_COUNT: usize = 8;

/// What a loop node needs of its element function.
pub(crate) struct Recompute {
    deltas: usize,
    terms: usize,
    /// Where the ids its `%delta`s read come from; `None` where that is not known.
    reads: Option<Vec<IdSource>>,
}

/// A value of the element function's inputs that its `%delta`s may read ids from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum IdSource {
    /// The pairs of operand `k` (the element's parameter `k`).
    Operand(usize),
    /// Capture `i`: a pair or an `Int`.
    Capture(usize),
    /// The pairs of captured array `i`.
    CapturedArray(usize),
}

/// The inputs of code `c` whose ids its `%delta`s read (through projections, copies
/// and reads of captured arrays), or `None` where an id comes from elsewhere (a
/// branch, say). A map node over elements reading only zero ids would give each an id
/// the interpreter gives none (its terms all fall on the zero delta): [`emit_map`]
/// checks them at run time and gives such elements the zero id instead.
fn id_sources(m: &Module, c: CodeId) -> Option<Vec<IdSource>> {
    let code = m.code(c);
    let mut defs: HashMap<VarId, &Rhs> = HashMap::new();
    fn define<'a>(body: &'a Body, defs: &mut HashMap<VarId, &'a Rhs>) {
        for b in &body.bindings {
            defs.insert(b.var, &b.rhs);
            if let Rhs::If(_, t, f) = &b.rhs {
                define(t, defs);
                define(f, defs);
            }
        }
    }
    define(&code.body, &mut defs);
    let deltas: Vec<VarId> = code
        .body
        .bindings
        .iter()
        .filter(|b| matches!(b.rhs, Rhs::Prim(Prim::DeltaPush, _)))
        .map(|b| b.var)
        .collect();
    let mut out = Vec::new();
    for b in &code.body.bindings {
        let Rhs::Prim(Prim::DeltaPush, args) = &b.rhs else {
            continue;
        };
        for id in args.iter().skip(1).step_by(2) {
            match id {
                Atom::Var(v) if deltas.contains(v) => {}
                _ => sources(code, &defs, id, 0, &mut out)?,
            }
        }
    }
    Some(out)
}

/// The inputs value `a` of code `code` may carry an id from, added to `out`: through
/// copies, projections (of a tuple made here, the projected part), branches' results
/// and reads of captured arrays; `None` where it comes from anything else.
fn sources(
    code: &fluxion_core::Code,
    defs: &HashMap<VarId, &Rhs>,
    a: &Atom,
    depth: usize,
    out: &mut Vec<IdSource>,
) -> Option<()> {
    let Atom::Var(v) = a else { return Some(()) };
    let mut add = |s: IdSource| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    if let Some(k) = code.params.iter().position(|p| p == v) {
        add(IdSource::Operand(k));
        return Some(());
    }
    if let Some(i) = code.captures.iter().position(|p| p == v) {
        add(IdSource::Capture(i));
        return Some(());
    }
    if depth > 32 {
        return None;
    }
    let next = depth + 1;
    match defs.get(v)? {
        Rhs::Atom(x) => sources(code, defs, x, next, out),
        Rhs::Proj(Atom::Var(x), k) => match defs.get(x) {
            Some(Rhs::Tuple(parts)) => sources(code, defs, parts.get(*k)?, next, out),
            _ => sources(code, defs, &Atom::Var(*x), next, out),
        },
        Rhs::Tuple(parts) => parts
            .iter()
            .try_for_each(|p| sources(code, defs, p, next, out)),
        Rhs::If(_, t, f) => {
            sources(code, defs, &t.result, next, out)?;
            sources(code, defs, &f.result, next, out)
        }
        Rhs::Prim(Prim::Index, args) => match args.first() {
            Some(Atom::Var(x)) => {
                let i = code.captures.iter().position(|p| p == x)?;
                add(IdSource::CapturedArray(i));
                Some(())
            }
            _ => None,
        },
        _ => None,
    }
}

fn is_pair(t: &Type) -> bool {
    matches!(t, Type::Tuple(ts) if ts.as_slice() == [Type::Real, Type::Int])
}

fn scalar(t: &Type) -> bool {
    matches!(t, Type::Real | Type::Int | Type::Bool) || is_pair(t)
}

/// A scalar or a tuple of scalars (a forward-mode dual number of pairs, as reverse
/// over forward makes): what an element may read from a captured array.
fn flat(t: &Type) -> bool {
    scalar(t) || matches!(t, Type::Tuple(ts) if ts.iter().all(scalar))
}

/// An array of [`flat`] elements.
fn flat_array(t: &Type) -> bool {
    matches!(t, Type::Array(e) if flat(e))
}

/// The `%delta` whose id code `c` returns as its result pair's second component.
fn result_delta(m: &Module, c: CodeId) -> Option<VarId> {
    let body = &m.code(c).body;
    let Atom::Var(r) = body.result else {
        return None;
    };
    body.bindings.iter().find_map(|b| match &b.rhs {
        Rhs::Tuple(parts) if b.var == r && parts.len() == 2 => match parts[1] {
            Atom::Var(d) => Some(d),
            _ => None,
        },
        _ => None,
    })
}

/// Whether code `c`, the element function of loop primitive `p` (`build`, `map`,
/// `map2`), can be computed again at the sweep: its parameters scalars or pairs, its
/// captures those or arrays of them or of tuples of them, or arrays of such arrays (at
/// most [`MAX_HELD`] arrays with the loop's operands), its bindings projections, tuples,
/// [`Prim::is_cheap_arithmetic`] primitives on scalars and reads (of tuples, or of a
/// captured array's row) besides its `%delta`s, whose ids flow only into later
/// `%delta`s' terms and, one of them, into the result pair — and *inner sums* (see
/// [`inner_sum`]).
pub(crate) fn recomputable(m: &Module, p: Prim, c: CodeId) -> Option<Recompute> {
    recomputable_in(m, p, c, true)
}

/// [`recomputable`], with inner sums allowed where `nest`.
fn recomputable_in(m: &Module, p: Prim, c: CodeId, nest: bool) -> Option<Recompute> {
    let code = m.code(c);
    let operands = match p {
        Prim::Build => 0,
        Prim::Map => 1,
        Prim::Map2 => 2,
        _ => return None,
    };
    let params_ok =
        code.params.len() == operands.max(1) && code.params.iter().all(|x| scalar(m.var_ty(*x)));
    let mut arrays = operands;
    for x in &code.captures {
        match m.var_ty(*x) {
            t if flat_array(t) => arrays += 1,
            Type::Array(e) if nest && flat_array(e) => arrays += 1,
            t if scalar(t) => {}
            _ => return None,
        }
    }
    if !params_ok || arrays > MAX_HELD {
        return None;
    }
    let r = result_delta(m, c)?;
    let mut defs: HashMap<VarId, &Rhs> = HashMap::new();
    for b in &code.body.bindings {
        defs.insert(b.var, &b.rhs);
    }
    // `%delta`s and the id parts of inner sums: the element's local adjoints.
    let mut deltas: Vec<VarId> = Vec::new();
    let mut sums: Vec<VarId> = Vec::new();
    let mut inner_arrays: Vec<VarId> = Vec::new();
    let mut locals = 0;
    let mut terms = 0;
    let bindings = &code.body.bindings;
    let mut k = 0;
    while k < bindings.len() {
        let b = &bindings[k];
        match &b.rhs {
            Rhs::Atom(_) | Rhs::Tuple(_) => {}
            Rhs::Proj(Atom::Var(s), 1) if sums.contains(s) => deltas.push(b.var),
            Rhs::Proj(..) => {}
            Rhs::Prim(Prim::DeltaPush, args) => {
                deltas.push(b.var);
                locals += 1;
                terms += args.len() / 2;
            }
            Rhs::Prim(q, _) if q.is_cheap_arithmetic() && scalar(m.var_ty(b.var)) => {}
            Rhs::Prim(Prim::Index, _) if flat(m.var_ty(b.var)) => {}
            Rhs::Prim(Prim::Index, args) if nest && flat_array(m.var_ty(b.var)) => {
                sources(code, &defs, &args[0], 0, &mut Vec::new())?;
            }
            Rhs::If(_, t, f) if scalar(m.var_ty(b.var)) && inert(m, t) && inert(m, f) => {}
            Rhs::Closure(..) if nest => {}
            Rhs::Prim(..) if nest => {
                let inner = inner_sum(m, code, &defs, bindings, k)?;
                sums.push(bindings[k + 1].var);
                inner_arrays.push(b.var);
                locals += 1;
                terms += inner;
                k += 2;
                continue;
            }
            _ => return None,
        }
        k += 1;
    }
    if !deltas.contains(&r) || locals > MAX_DELTAS {
        return None;
    }
    // Every use of a `%delta`'s id: a later `%delta`'s id operand, or the result pair's
    // second component; the result pair itself is used by nothing; an inner sum's
    // array by its sum alone, the sum by its projections, a closure by its loop.
    let result = code.body.result;
    for b in bindings {
        let branch_vars: Vec<Atom>;
        let uses: Vec<(usize, &Atom)> = match &b.rhs {
            Rhs::Atom(a) | Rhs::Proj(a, _) => vec![(0, a)],
            Rhs::Tuple(xs) | Rhs::Prim(_, xs) | Rhs::Closure(_, xs) => {
                xs.iter().enumerate().collect()
            }
            Rhs::If(c, t, f) => {
                branch_vars = [t, f]
                    .iter()
                    .flat_map(|x| free_vars(x))
                    .map(Atom::Var)
                    .chain([*c])
                    .collect();
                branch_vars.iter().map(|a| (0, a)).collect()
            }
            _ => return None,
        };
        let id_operand = |k: usize| match &b.rhs {
            Rhs::Prim(Prim::DeltaPush, _) => k % 2 == 1,
            Rhs::Tuple(_) => Atom::Var(b.var) == result && k == 1,
            _ => false,
        };
        let loop_of = |v: &VarId| {
            element_fn(&b.rhs).is_some_and(|(_, _, f)| *f == Atom::Var(*v))
                && inner_arrays.contains(&b.var)
        };
        for (k, a) in uses {
            let Atom::Var(v) = a else { continue };
            let misused = (deltas.contains(v) && !id_operand(k))
                || *a == result
                || (sums.contains(v) && !matches!(b.rhs, Rhs::Proj(..)))
                || (inner_arrays.contains(v) && !sums_array(&b.rhs, *v))
                || (matches!(defs.get(v), Some(Rhs::Closure(..))) && !loop_of(v));
            if misused {
                return None;
            }
        }
    }
    Some(Recompute {
        deltas: locals,
        terms,
        reads: id_sources(m, c),
    })
}

/// Whether `bindings[k]` and `bindings[k + 1]` of element function `code` are an
/// *inner sum*: a `build`, `map` or `map2` of a closure made in the element, whose
/// code can be computed again without inner sums of its own, then the `%delta_sum` of
/// its array — which the element's apply variant sweeps by running that code's apply
/// variant per inner element, last to first, from the sum's adjoint (what the
/// interpreter's sweep does with the inner elements' nodes and the sum's). The terms
/// the inner elements read must not fall on the element's own `%delta`s: every id
/// they read comes from the element's inputs (`sources`). Its terms per element.
fn inner_sum(
    m: &Module,
    code: &fluxion_core::Code,
    defs: &HashMap<VarId, &Rhs>,
    bindings: &[Binding],
    k: usize,
) -> Option<usize> {
    let (loop_, sum) = (bindings.get(k)?, bindings.get(k + 1)?);
    let (p, args, f) = element_fn(&loop_.rhs)?;
    if !sums_array(&sum.rhs, loop_.var)
        || !matches!(m.var_ty(loop_.var), Type::Array(t) if is_pair(t))
    {
        return None;
    }
    let Atom::Var(f) = f else { return None };
    let Some(Rhs::Closure(g, caps)) = defs.get(f) else {
        return None;
    };
    let inner = recomputable_in(m, p, *g, false)?;
    // The loop's operand arrays (`map`, `map2`: after the function).
    let operands = if p == Prim::Build {
        &[][..]
    } else {
        &args[1..]
    };
    let mut outer = Vec::new();
    for s in inner.reads.as_ref()? {
        match *s {
            IdSource::Operand(j) => outer.push(*operands.get(j)?),
            IdSource::Capture(j) | IdSource::CapturedArray(j) => outer.push(*caps.get(j)?),
        }
    }
    // The loop's operands and the closure's captures outlive the element's body (its
    // apply variant sweeps the inner elements after it): none an array made in the
    // element. A real or a flag the element computed is copied into the closure.
    let copied = |a: &Atom| matches!(m.atom_ty(a), Type::Real | Type::Bool);
    outer.extend(operands.iter().chain(caps).filter(|a| !copied(a)).copied());
    for a in &outer {
        sources(code, defs, a, 0, &mut Vec::new())?;
    }
    Some(inner.terms)
}

/// Whether a branch of an element function is computed again as it is: projections,
/// tuples, [`Prim::is_cheap_arithmetic`] primitives and such branches on scalars, no `%delta` (its
/// sweep would depend on the branch taken).
fn inert(m: &Module, body: &Body) -> bool {
    body.bindings.iter().all(|b| {
        scalar(m.var_ty(b.var))
            && match &b.rhs {
                Rhs::Atom(_) | Rhs::Proj(..) | Rhs::Tuple(_) => true,
                Rhs::Prim(q, _) => q.is_cheap_arithmetic(),
                Rhs::If(_, t, f) => inert(m, t) && inert(m, f),
                _ => false,
            }
    })
}

/// The end of an apply variant (`fn_N_a(self_, params…, A_, adj_, mark_, pre_)`): the
/// element's `%delta`s swept last to first from its result's adjoint `A_`, the terms
/// on its own `%delta`s into locals, the others into the tape's adjoints — or, in a
/// preaccumulating sum's element (`pre_`), those below the mark into the sum's
/// coefficients, as `fx_sweep_impl` routes a node's.
pub(crate) fn local_sweep(m: &Module, c: CodeId, deltas: &[(VarId, LocalDelta)]) -> String {
    let mut index: HashMap<VarId, usize> = deltas
        .iter()
        .enumerate()
        .map(|(k, (v, _))| (*v, k))
        .collect();
    // An inner sum's id part names the sum's local.
    for b in &m.code(c).body.bindings {
        if let Rhs::Proj(Atom::Var(s), 1) = &b.rhs
            && let Some(&k) = index.get(s)
        {
            index.insert(b.var, k);
        }
    }
    let mut s = String::from("  {\n");
    let locals: Vec<String> = (0..deltas.len()).map(|k| format!("l{k} = 0.0")).collect();
    let _ = writeln!(s, "    double {};", locals.join(", "));
    if let Some(r) = result_delta(m, c).and_then(|r| index.get(&r)) {
        let _ = writeln!(s, "    l{r} = A_;");
    }
    for (k, (_, local)) in deltas.iter().enumerate().rev() {
        let terms = match local {
            LocalDelta::Terms(terms) => terms,
            LocalDelta::Loop(sweep) => {
                let _ = writeln!(s, "    if (l{k} != 0.0) {{ double A = l{k}; {sweep} }}");
                continue;
            }
        };
        let _ = write!(s, "    if (l{k} != 0.0) {{ int fin_ = isfinite(l{k});");
        for (coef, id) in terms {
            match id {
                Atom::Var(v) if index.contains_key(v) => {
                    let j = index[v];
                    let _ = write!(
                        s,
                        " {{ double c_ = {coef}; if (fin_ || c_ != 0.0) l{j} += c_ * l{k}; }}"
                    );
                }
                Atom::Lit(Lit::Int(0)) => {}
                _ => {
                    let _ = write!(
                        s,
                        " {{ double c_ = {coef}; int64_t p_ = {}; if (p_ >= mark_ && (fin_ || c_ != 0.0)) adj_[p_ - mark_] += c_ * l{k}; else if (pre_ && p_ < mark_ && (fin_ || c_ != 0.0)) FX_PRE_ADD(p_, c_ * l{k}); }}",
                        atom(id)
                    );
                }
            }
        }
        s.push_str(" }\n");
    }
    s.push_str("    (void)adj_; (void)mark_; (void)pre_;\n  }\n");
    s
}

/// An inner sum in an element's primal or apply variant ([`inner_sum`]): its value
/// from the inner elements' primal variants, the zero id; in the apply variant its
/// local, whose sweep runs their apply variants last to first. `n` is bound first
/// (`n_S` for sum `S`, which the sweep reads after the element's body).
pub(crate) fn emit_inner_sum(
    e: &mut Emitter<'_>,
    loop_: &Binding,
    sum: &Binding,
    code: CodeId,
    s: &mut String,
    pad: &str,
) {
    let m = e.module();
    let Some((p, args, f)) = element_fn(&loop_.rhs) else {
        return;
    };
    let lsp = span_args(loop_.span);
    let (len, what) = loop_count(e, p, args, &lsp, s, pad);
    let name = var(sum.var);
    let ct = e.types().c(m.var_ty(sum.var));
    let pair = e
        .types()
        .elem_size(&Type::Tuple(vec![Type::Real, Type::Int]));
    let n = format!("n_{name}");
    let fv = e.atom(f);
    let forward = element_reads(e, p, args, "i").join(", ");
    let backward = element_reads(e, p, args, "i_").join(", ");
    let c = code.0;
    // The count's checks where the elements first run (the primal variant, as the loop
    // written would check its array); the sweep's run of the element has passed them,
    // and must not check the budget again against what the tape holds by then.
    let check = match e.loop_variant {
        Some(crate::emitter::LoopVariant::Primal) => {
            format!(" fx_arr_check({n}, {pair}, \"{what}\", {lsp});")
        }
        _ => String::new(),
    };
    let _ = writeln!(
        s,
        "{pad}{ct} {name}; int64_t {n} = {len};{check} {{ double t = 0.0; for (int64_t i = 0; i < {n}; i++) t += fn_{c}{PRIMAL_SUFFIX}({fv}, {forward}).f0; {name}.f0 = t; {name}.f1 = 0; }}"
    );
    if !e.loop_variants.contains(&code) {
        e.loop_variants.push(code);
    }
    if let Some(crate::emitter::LoopVariant::Apply(deltas)) = &mut e.loop_variant {
        let sweep = format!(
            "for (int64_t i_ = {n} - 1; i_ >= 0; i_--) fn_{c}{APPLY_SUFFIX}({fv}, {backward}, A, adj_, mark_, pre_);"
        );
        deltas.push((sum.var, LocalDelta::Loop(sweep)));
    }
}

/// What a loop node holds: C declaring its dense operands (`d0_`, `d1_`), the arrays
/// it holds with their bytes, and `held_`, `terms_` and `node_` (whether the node
/// pays, over `n` elements); the operands with their element types; the arrays' count.
struct Held {
    c: String,
    operands: Vec<(String, Type)>,
    arrays: usize,
}

fn held(
    e: &mut Emitter<'_>,
    p: Prim,
    args: &[Atom],
    env: &str,
    code: CodeId,
    rec: &Recompute,
) -> Held {
    let m = e.module();
    let mut s = String::new();
    let mut operands: Vec<(String, Type)> = Vec::new();
    for (k, x) in args.iter().skip(1).enumerate() {
        if p == Prim::Build {
            break;
        }
        let Type::Array(t) = m.atom_ty(x) else {
            continue;
        };
        let _ = write!(s, "fx_arr *d{k}_ = fx_dense((fx_arr*)({})); ", e.atom(x));
        operands.push((format!("d{k}_"), (*t).clone()));
    }
    let mut held: Vec<(String, String)> = Vec::new();
    for (o, t) in &operands {
        let size = e.types().elem_size(t);
        held.push((o.clone(), format!("(uint64_t)FX_LEN({o}) * {size}")));
    }
    for (i, x) in m.code(code).captures.iter().enumerate() {
        let a = format!("{env}->c{i}");
        let Type::Array(t) = m.var_ty(*x) else {
            continue;
        };
        let bytes = match &**t {
            // Rows an element reads ([`inner_sum`]'s operands): each row's bytes too.
            Type::Array(row) => format!("fx_rows_bytes({a}, {})", e.types().elem_size(row)),
            t => format!("(uint64_t)FX_LEN({a}) * {}", e.types().elem_size(t)),
        };
        held.push((a, bytes));
    }
    let k = held.len();
    let (arrs, bytes) = if k == 0 {
        ("NULL".to_string(), "0".to_string())
    } else {
        let arrs: Vec<&str> = held.iter().map(|h| h.0.as_str()).collect();
        let bytes: Vec<&str> = held.iter().map(|h| h.1.as_str()).collect();
        (arrs.join(", "), bytes.join(", "))
    };
    let per = 12 * rec.terms + 8 * rec.deltas + 16;
    let _ = write!(
        s,
        "fx_arr *ha_[{n}] = {{{arrs}}}; uint64_t held_ = 0, terms_ = (uint64_t)n * {per}; int node_ = 0; if (n >= {MIN_COUNT}) {{ uint64_t hb_[{n}] = {{{bytes}}}; held_ = fx_tape_loop_held(ha_, hb_, {k}); node_ = fx_tape_loop_pays(held_, terms_); }} ",
        n = k.max(1)
    );
    Held {
        c: s,
        operands,
        arrays: k,
    }
}

/// The arguments of element `i`'s call: its index for `build`, else the operands'
/// elements (`arr(k)` naming operand `k`).
fn element_args(
    e: &mut Emitter<'_>,
    p: Prim,
    operands: &[(String, Type)],
    arr: &dyn Fn(usize) -> String,
) -> String {
    if p == Prim::Build {
        return "i".into();
    }
    let reads: Vec<String> = operands
        .iter()
        .enumerate()
        .map(|(k, (_, t))| e.types().get(t, &arr(k), "i"))
        .collect();
    reads.join(", ")
}

/// This loop's sweep, `fx_sweep_K` (its number returned): the apply variant per
/// element, last to first, with the sum's adjoint `a` — or, for a map node
/// (`per_element`), with each element's own adjoint, skipping a zero one as the
/// interpreter's sweep skips a node.
fn sweep_function(
    e: &mut Emitter<'_>,
    p: Prim,
    code: CodeId,
    operands: &[(String, Type)],
    per_element: bool,
) -> usize {
    if !e.loop_variants.contains(&code) {
        e.loop_variants.push(code);
    }
    let c = code.0;
    let args = element_args(e, p, operands, &|k| {
        if k == 0 { "d->a".into() } else { "d->b".into() }
    });
    let sweep_no = e.loop_sweeps.1.lines().count();
    let proto = format!(
        "static void fx_sweep_{sweep_no}(const fx_tape_dot_t *d, double a, double *adj, int64_t mark, int pre)"
    );
    let _ = writeln!(e.loop_sweeps.1, "{proto};");
    // The loop twice, `pre` a constant in each (the apply variant inlined): the other
    // sweeps' inner loops keep no test of it.
    let body = [1, 0]
        .map(|pre| {
            let call = format!("fn_{c}{APPLY_SUFFIX}(f, {args}, a, adj, mark, {pre});");
            if per_element {
                format!(
                    "for (int64_t i = d->n - 1; i >= 0; i--) {{ double a = adj[first + i - mark]; if (a != 0.0) {call} }}"
                )
            } else {
                format!("for (int64_t i = d->n - 1; i >= 0; i--) {call}")
            }
        })
        .join(" } else { ");
    let first = if per_element {
        "int64_t first = d->id - d->n + 1; (void)a; "
    } else {
        ""
    };
    let body = format!("{first}if (pre) {{ {body} }}");
    let _ = writeln!(
        e.loop_sweeps.0,
        "{proto} {{\n  fx_clo *f = d->loop->clo;\n  {body}\n}}\n"
    );
    sweep_no
}

/// C pushing the loop node (after its elements ran): the closure's copy it owns (its
/// captures, each with a reference), its loop part in the same allocation, then
/// `fx_tape_loop`, whose first id is assigned to `id`.
#[allow(clippy::too_many_arguments)]
fn push_node(
    e: &mut Emitter<'_>,
    code: CodeId,
    env: &str,
    held: &Held,
    sweep_no: usize,
    ids: bool,
    id: &str,
    (lsp, ssp): (&str, &str),
) -> String {
    let m = e.module();
    let c = code.0;
    let mut copy = format!(
        "env_{c} *cp_ = (env_{c}*)fx_alloc(sizeof(env_{c}) + sizeof(fx_tape_loop_t), {lsp}); cp_->h.code = {env}->h.code; cp_->h.drop = {env}->h.drop;"
    );
    for (i, x) in m.code(code).captures.clone().iter().enumerate() {
        let ty = m.var_ty(*x).clone();
        let _ = write!(
            copy,
            " cp_->c{i} = {env}->c{i}; {}",
            e.types().inc(&ty, &format!("cp_->c{i}"))
        );
    }
    let a = held.operands.first().map_or("NULL", |o| o.0.as_str());
    let b = held.operands.get(1).map_or("NULL", |o| o.0.as_str());
    format!(
        "{{ {copy} fx_tape_loop_t *x_ = (fx_tape_loop_t*)(cp_ + 1); x_->sweep = fx_sweep_{sweep_no}; x_->clo = (fx_clo*)cp_; x_->terms = terms_; x_->ids = {}; for (int j = 0; j < FX_LOOP_HELD; j++) x_->arrs[j] = j < {k} ? ha_[j] : NULL; {id} = fx_tape_loop(x_, {a}, {b}, n, held_, {ssp}); }}",
        ids as u8,
        k = held.arrays
    )
}

/// The loop `loop_` (primitive `p`, operands `args`, element function `f` of code
/// `code`) and its `%delta_sum` `sum` as a loop node, as C statements over the count
/// `n` (declared and checked before them); `fallback` where holding its arrays does not
/// pay.
#[allow(clippy::too_many_arguments)]
pub(crate) fn emit(
    e: &mut Emitter<'_>,
    loop_: &Binding,
    sum: &Binding,
    (p, args, f): (Prim, &[Atom], &Atom),
    code: CodeId,
    rec: &Recompute,
    fallback: &str,
) -> String {
    let (lsp, ssp, name) = (span_args(loop_.span), span_args(sum.span), var(sum.var));
    let fv = e.atom(f);
    let env = format!("((env_{}*)({fv}))", code.0);
    let held = held(e, p, args, &env, code, rec);
    let sweep_no = sweep_function(e, p, code, &held.operands, false);
    // The primal run of the elements.
    let hints = match p {
        Prim::Build => e.index_hints(f, "n"),
        _ => None,
    };
    let in_loop = element_args(e, p, &held.operands, &|k| held.operands[k].0.clone());
    let c = code.0;
    let loops = versioned(hints, |assume| {
        format!(
            "for (int64_t i = 0; i < n; i++) {{ {assume}t += fn_{c}{PRIMAL_SUFFIX}({fv}, {in_loop}).f0; }}"
        )
    });
    let push = push_node(
        e,
        code,
        &env,
        &held,
        sweep_no,
        false,
        &format!("{name}.f1"),
        (&lsp, &ssp),
    );
    // Elements reading only zero ids ([`live`]): the sum is the zero delta, no node.
    let live = live(e, code, &env, &held, rec);
    format!(
        "{}int live_ = {live}; if (node_ || !live_) {{ double t = 0.0; {loops} {name}.f0 = t; if (live_) {{ {push} }} else {name}.f1 = 0; }} else {{ {fallback} }}",
        held.c
    )
}

/// Whether binding `b` is a loop that makes an array of `(Real, Int)` pairs by a
/// known element function a loop node can compute again: a *map* loop node
/// ([`emit_map`]) then stands for its elements' nodes. The code and what it needs.
pub(crate) fn map_node(
    m: &Module,
    known: &dyn Fn(VarId) -> Option<CodeId>,
    b: &Binding,
) -> Option<(CodeId, Recompute)> {
    let (p, _, f) = element_fn(&b.rhs)?;
    if !matches!(m.var_ty(b.var), Type::Array(t) if is_pair(t)) {
        return None;
    }
    let Atom::Var(f) = f else { return None };
    let code = known(*f)?;
    recomputable(m, p, code).map(|r| (code, r))
}

/// A `build`, `map` or `map2` whose element function a loop node can compute again
/// ([`map_node`]), as C binding `b`'s array: over `n` >= [`MIN_COUNT`] elements where
/// holding its arrays pays, the elements run the primal variant and each gets the id
/// `first + i` of a map loop node pushed after them (`fx_tape_loop_t.ids`), whose
/// sweep runs the apply variant of each element with its adjoint, last to first — the
/// updates the elements' own nodes would have made, in the interpreter's order (each
/// element's nodes lay together, and nothing read an element before the loop ended).
/// Elsewhere the loop as written.
pub(crate) fn emit_map(
    e: &mut Emitter<'_>,
    b: &Binding,
    code: CodeId,
    rec: &Recompute,
    pad: &str,
) -> String {
    let Some((p, args, f)) = element_fn(&b.rhs) else {
        unreachable!("map_node said a loop")
    };
    let sp = span_args(b.span);
    let name = var(b.var);
    let fv = e.atom(f);
    let env = format!("((env_{}*)({fv}))", code.0);
    let pair = Type::Tuple(vec![Type::Real, Type::Int]);
    let mut s = String::new();
    let (len, what) = loop_count(e, p, args, &sp, &mut s, pad);
    let size = e.types().elem_size(&pair);
    let _ = writeln!(
        s,
        "{pad}fx_arr* {name} = fx_arr_new({len}, {size}, \"{what}\", {sp});"
    );
    let held = held(e, p, args, &env, code, rec);
    let sweep_no = sweep_function(e, p, code, &held.operands, true);
    let c = code.0;
    let in_loop = element_args(e, p, &held.operands, &|k| held.operands[k].0.clone());
    let hints = match p {
        Prim::Build => e.index_hints(f, "n"),
        _ => None,
    };
    let set_node = e.types().set(&pair, &name, "i", "r_");
    let node_loop = versioned(hints.clone(), |assume| {
        format!(
            "for (int64_t i = 0; i < n; i++) {{ {assume}tup_pair_ r_ = fn_{c}{PRIMAL_SUFFIX}({fv}, {in_loop}); r_.f1 = first_ + i; {set_node} }}"
        )
    });
    // Elements reading only zero ids ([`live`]): the zero id each, no node.
    let zero_loop = versioned(hints.clone(), |assume| {
        format!(
            "for (int64_t i = 0; i < n; i++) {{ {assume}tup_pair_ r_ = fn_{c}{PRIMAL_SUFFIX}({fv}, {in_loop}); r_.f1 = 0; {set_node} }}"
        )
    });
    let push = push_node(e, code, &env, &held, sweep_no, true, "first_", (&sp, &sp));
    let call = e.call_closure(f, std::slice::from_ref(&in_loop));
    let set_written = e.types().set(&pair, &name, "i", &call);
    let written = versioned(hints, |assume| {
        format!("for (int64_t i = 0; i < n; i++) {{ {assume}{set_written} }}")
    });
    let live = live(e, code, &env, &held, rec);
    let pc = e.types().c(&pair);
    let _ = writeln!(
        s,
        "{pad}{{ typedef {pc} tup_pair_; int64_t n = FX_LEN({name}); {}if (!({live})) {{ {zero_loop} }} else if (node_) {{ int64_t first_; {push} {node_loop} }} else {{ {written} }} }}",
        held.c
    );
    s
}

/// C that is false where every id a map node's elements would read is zero (they are
/// then constants to the tape, each the zero id, as in the interpreter, and no node
/// is made): the operands' and captured arrays' ids scanned (a captured array longer
/// than `4n + 64` is taken as live, unscanned), captured pairs' ids tested.
fn live(e: &mut Emitter<'_>, code: CodeId, env: &str, held: &Held, rec: &Recompute) -> String {
    let Some(reads) = &rec.reads else {
        return "1".into();
    };
    let m = e.module();
    let captures = &m.code(code).captures;
    let tests: Vec<String> = reads
        .iter()
        .map(|r| match *r {
            IdSource::Operand(k) => match held.operands.get(k) {
                Some((o, t)) if is_pair(t) => format!("!fx_pair_ids_zero({o}, INT64_MAX)"),
                _ => "1".into(),
            },
            IdSource::Capture(i) => match m.var_ty(captures[i]) {
                t if is_pair(t) => format!("{env}->c{i}.f1 != 0"),
                Type::Int => format!("{env}->c{i} != 0"),
                _ => "1".into(),
            },
            IdSource::CapturedArray(i) => match m.var_ty(captures[i]) {
                Type::Array(t) if is_pair(t) => {
                    format!("!fx_pair_ids_zero((fx_arr*)({env}->c{i}), 4 * n + 64)")
                }
                _ => "1".into(),
            },
        })
        .collect();
    if tests.is_empty() {
        "0".into()
    } else {
        tests.join(" || ")
    }
}

/// The loop and its sum as written, without the loop's array of pairs: each element's
/// pair from the element function, which records its own nodes, then the sum's node
/// of their ids (`%delta_sum`), as C statements over `n` (declared and checked).
pub(crate) fn unfused(
    e: &mut Emitter<'_>,
    loop_: &Binding,
    sum: &Binding,
    (p, args, f): (Prim, &[Atom], &Atom),
    code: CodeId,
) -> String {
    let (lsp, ssp, name) = (span_args(loop_.span), span_args(sum.span), var(sum.var));
    let pair = Type::Tuple(vec![Type::Real, Type::Int]);
    let pc = e.types().c(&pair);
    let reads = element_reads(e, p, args, "i");
    let fv = e.atom(f);
    let set = e.types().set(&pair, "u_", "i", "r_");
    let get = e.types().get(&pair, "u_", "i");
    format!(
        "fx_arr *u_ = fx_arr_new(n, 16, \"an array\", {lsp}); for (int64_t i = 0; i < n; i++) {{ {pc} r_ = fn_{}({fv}, {}); {set} }} double t = 0.0; for (int64_t i = 0; i < n; i++) t += {get}.f0; {name}.f0 = t; if (n == 0) {name}.f1 = 0; else {{ fx_tape_reserve(n, {ssp}); for (int64_t i = 0; i < n; i++) fx_tape_term(1.0, {get}.f1); {name}.f1 = fx_tape_node(); }} if (fx_dec_last(u_)) fx_release(u_);",
        code.0,
        reads.join(", ")
    )
}

/// Element `i`'s arguments to loop `p`'s function (`build`, `map`, `map2` with
/// arguments `args`) as C: the index for `build`, else each operand array's element.
pub(crate) fn element_reads(e: &mut Emitter<'_>, p: Prim, args: &[Atom], i: &str) -> Vec<String> {
    let m = e.module();
    match p {
        Prim::Build => vec![i.to_string()],
        _ => args
            .iter()
            .skip(1)
            .map(|x| match m.atom_ty(x) {
                Type::Array(t) => {
                    let arr = e.atom(x);
                    e.types().get(&t, &arr, i)
                }
                _ => "0".into(),
            })
            .collect(),
    }
}

/// Whether `rhs` is `%delta_sum(v)`: the sum of loop array `v`.
pub(crate) fn sums_array(rhs: &Rhs, v: VarId) -> bool {
    matches!(rhs, Rhs::Prim(Prim::DeltaSum, xs) if xs.as_slice() == [Atom::Var(v)])
}

/// The count of loop `p` (`build`, `map` or `map2`, arguments `args`) as C and the
/// loop's name for its messages; a `map2`'s length check (at `sp`) is written first.
pub(crate) fn loop_count(
    e: &mut Emitter<'_>,
    p: Prim,
    args: &[Atom],
    sp: &str,
    s: &mut String,
    pad: &str,
) -> (String, &'static str) {
    match p {
        Prim::Build => (e.atom(&args[0]), "build"),
        Prim::Map => (format!("FX_LEN({})", e.atom(&args[1])), "map"),
        _ => {
            let (x, y) = (e.atom(&args[1]), e.atom(&args[2]));
            let _ = writeln!(
                s,
                "{pad}fx_same_length(\"map2\", FX_LEN({x}), FX_LEN({y}), {sp});"
            );
            (format!("FX_LEN({x})"), "map2")
        }
    }
}

/// A loop that makes an array by calling a function per element: the primitive
/// (`build`, `map` or `map2`), its arguments and the function among them.
pub(crate) fn element_fn(rhs: &Rhs) -> Option<(Prim, &[Atom], &Atom)> {
    match rhs {
        Rhs::Prim(p @ Prim::Build, args) if args.len() == 2 => Some((*p, args, &args[1])),
        Rhs::Prim(p @ Prim::Map, args) if args.len() == 2 => Some((*p, args, &args[0])),
        Rhs::Prim(p @ Prim::Map2, args) if args.len() == 3 => Some((*p, args, &args[0])),
        _ => None,
    }
}
