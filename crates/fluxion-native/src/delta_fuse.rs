//! A `%delta_sum` of a loop's array, fused (`--ad delta`, [Delta] §7's `Add` of
//! deltas): where the delta translation of `sum(map(f, xs))`, `sumbuild(n, f)` or `dot`
//! makes an array of `(Real, Int)` pairs — one tape node per element — and sums it into
//! one node, and the element function makes no node but its result's, the loop writes
//! each element's terms straight into the sum's node instead: no array, no node per
//! element.
//!
//! The tape it leaves is the one the sweep would have walked with the elements' nodes
//! inlined: the sum's node holds the elements' terms, the last element's first, each
//! element's in its order (the sweep met the elements' nodes last to first after the
//! sum's, each with adjoint `1.0 × ā`, exactly `ā`), so adjoints are summed in the same
//! order and are bit-identical to the interpreter's.
//!
//! The element function, a lambda of known code, is compiled a second time as
//! `fn_N_t`, whose final `%delta` writes its terms into the room the sum's node has
//! on the tape (`fx_tape_fused_*` in `runtime.c`) and yields the id 0.
//!
//! A dot product — the element is `a[t] * b[t]` of two arrays of `(Real, Int)` pairs,
//! as `dot`, `sum(map2(|x, y| x * y, ..))` or `sumbuild(n, |t| a[t] * b[t])` make
//! it — writes no terms at all: the sum's node is a dot node that holds the two arrays
//! (`fx_tape_dot`), whose terms the sweep reads back from them in the same order.
//! That is O(1) tape per dot where the terms took 24 bytes per element, which was
//! most of the tape of a GMM gradient (BENCHMARKS.md).

use std::fmt::Write;

use fluxion_core::visit::free_vars;
use fluxion_core::{Atom, Binding, CodeId, Module, Prim, Rhs, Type, VarId};

use crate::emitter::{Emitter, span_args, var, versioned};

/// A fusable pair of bindings: the loop (`build`, `map` or `map2` of a lambda of
/// code `code`) and the `%delta_sum` of its array right after it.
pub(crate) struct Fusion {
    pub code: CodeId,
    /// Terms per element where the element function is a leaf ([`leaf_delta`]): the
    /// final `%delta`'s.
    pub terms: Option<usize>,
    /// Where the element can be computed again at the sweep: a loop node
    /// (`delta_loop.rs`).
    pub recompute: Option<crate::delta_loop::Recompute>,
}

/// Whether `bindings[k]` and `bindings[k + 1]` are a loop and its `%delta_sum` that
/// can be fused: the array is used by the sum alone, and the element function's
/// code is a leaf (see [`leaf_delta`]).
pub(crate) fn fusable(
    m: &Module,
    known: &dyn Fn(VarId) -> Option<CodeId>,
    bindings: &[Binding],
    result: &Atom,
    k: usize,
) -> Option<Fusion> {
    let (loop_, sum) = (bindings.get(k)?, bindings.get(k + 1)?);
    if !crate::delta_loop::sums_array(&sum.rhs, loop_.var) {
        return None;
    }
    let (p, _, f) = crate::delta_loop::element_fn(&loop_.rhs)?;
    let Atom::Var(f) = f else { return None };
    let code = known(*f)?;
    if mentions(&bindings[k + 2..], result, loop_.var) {
        return None;
    }
    let terms = leaf_delta(m, code).map(|(_, terms)| terms);
    let recompute = crate::delta_loop::recomputable(m, p, code);
    (terms.is_some() || recompute.is_some()).then_some(Fusion {
        code,
        terms,
        recompute,
    })
}

/// For a code whose body makes exactly one tape node — a `%delta` whose id is used
/// only as the second component of the `(Real, Int)` pair it returns — and calls
/// nothing (no call, no branch, no primitive that takes a function or touches the
/// tape otherwise): that `%delta`'s variable and its number of terms.
pub(crate) fn leaf_delta(m: &Module, c: CodeId) -> Option<(VarId, usize)> {
    let body = &m.code(c).body;
    let Atom::Var(r) = body.result else {
        return None;
    };
    let mut delta = None;
    for b in &body.bindings {
        match &b.rhs {
            Rhs::Atom(_) | Rhs::Proj(..) | Rhs::Tuple(_) => {}
            Rhs::Prim(Prim::DeltaPush, args) if delta.is_none() => {
                delta = Some((b.var, args.len() / 2));
            }
            Rhs::Prim(p, args) => {
                let takes_fn = args.iter().any(|a| matches!(m.atom_ty(a), Type::Fn(..)));
                // Only the delta layer's primitives touch the tape.
                if p.name().starts_with("%delta") || takes_fn {
                    return None;
                }
            }
            _ => return None,
        }
    }
    let (id, terms) = delta?;
    let last = body.bindings.last()?;
    let returns_pair = last.var == r
        && matches!(&last.rhs, Rhs::Tuple(parts) if parts.len() == 2 && parts[1] == Atom::Var(id));
    let id_used_elsewhere = {
        let n = body.bindings.len();
        mentions(&body.bindings[..n - 1], &Atom::Var(r), id)
            || matches!(&last.rhs, Rhs::Tuple(parts) if parts[0] == Atom::Var(id))
    };
    (returns_pair && !id_used_elsewhere).then_some((id, terms))
}

/// Whether `v` occurs in `bindings` (their branches included) or `result`.
fn mentions(bindings: &[Binding], result: &Atom, v: VarId) -> bool {
    let body = fluxion_core::Body {
        bindings: bindings.to_vec(),
        result: *result,
    };
    free_vars(&body).contains(&v)
}

/// The fused loop and sum, binding the sum's `(Real, Int)` to the sum's variable
/// (`fusable` said the pair is one): a dot node for a dot product, else the
/// elements' terms in the sum's node.
pub(crate) fn emit(
    e: &mut Emitter<'_>,
    loop_: &Binding,
    sum: &Binding,
    fusion: &Fusion,
    s: &mut String,
    pad: &str,
) {
    // An inner sum of a loop node's element function, in its primal or apply variant.
    if e.loop_variant.is_some() {
        crate::delta_loop::emit_inner_sum(e, loop_, sum, fusion.code, s, pad);
        return;
    }
    let m = e.module();
    let Some((p, args, f)) = crate::delta_loop::element_fn(&loop_.rhs) else {
        return;
    };
    let lsp = span_args(loop_.span);
    let (len, what) = crate::delta_loop::loop_count(e, p, args, &lsp, s, pad);
    let ct = e.types().c(m.var_ty(sum.var));
    let _ = writeln!(s, "{pad}{ct} {};", var(sum.var));
    let pair = e
        .types()
        .elem_size(&Type::Tuple(vec![Type::Real, Type::Int]));
    // As written where the element is no leaf; its terms in the sum's node where it
    // is; a dot node, or else a loop node, in front of either where they apply.
    let written = match fusion.terms {
        Some(terms) => fused_loop(e, loop_, sum, fusion.code, terms),
        None => crate::delta_loop::unfused(e, loop_, sum, (p, args, f), fusion.code),
    };
    let body = match (
        dot_or(e, loop_, sum, fusion.code, &written),
        &fusion.recompute,
    ) {
        (Some(dot), _) => dot,
        (None, Some(rec)) => {
            crate::delta_loop::emit(e, loop_, sum, (p, args, f), fusion.code, rec, &written)
        }
        (None, None) => written,
    };
    let _ = writeln!(
        s,
        "{pad}{{ int64_t n = {len}; fx_arr_check(n, {pair}, \"{what}\", {lsp}); {body} }}"
    );
}

/// The loop writing each element's terms into the sum's node, as C statements over
/// the count `n` (declared and checked before them) that assign the sum's variable.
fn fused_loop(
    e: &mut Emitter<'_>,
    loop_: &Binding,
    sum: &Binding,
    code: CodeId,
    k: usize,
) -> String {
    let ssp = span_args(sum.span);
    let name = var(sum.var);
    let Some((p, args, f)) = crate::delta_loop::element_fn(&loop_.rhs) else {
        return String::new();
    };
    // A `build` whose lambda indexes captured arrays by its index: two copies of the
    // loop, as `prims.rs` emits `build` (`index_hints`).
    let hints = match p {
        Prim::Build => e.index_hints(f, "n"),
        _ => None,
    };
    let f = e.atom(f);
    let call_args = crate::delta_loop::element_reads(e, p, args, "i").join(", ");
    let variant = e.terms_variant(code);
    let body = |assume: &str| {
        format!(
            "for (int64_t i = 0; i < n; i++) {{ {assume}t += {variant}({f}, {call_args}).f0; }}"
        )
    };
    let loops = versioned(hints, body);
    format!(
        "fx_tape_fused_open(n * {k}, {ssp}); double t = 0.0; {loops} {name}.f0 = t; {name}.f1 = fx_tape_fused_close(n * {k}, {k}, {ssp});"
    )
}

/// An operand of a dot product's elements: the element function's parameter `k`
/// (`map`, `map2`), or its captured array `k` indexed by its one parameter (`build`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Operand {
    Param(usize),
    Captured(usize),
}

/// What a variable of an element function is, as far as a dot product goes.
#[derive(Clone, Copy, PartialEq)]
enum Meaning {
    Pair(Operand),
    Value(Operand),
    Id(Operand),
    Product(Operand, Operand),
    /// `%delta(b.0, a.1, a.0, b.1)`: the product's delta, in the calculus's order.
    Delta(Operand, Operand),
    Result(Operand, Operand),
}

/// For an element function (of code `c`, run by loop primitive `p`) that is exactly
/// `a * b` of two `(Real, Int)` operands — reads, projections, the product, its
/// `%delta` and the pair, nothing else — the operands `(a, b)`.
fn dot_operands(m: &Module, p: Prim, c: CodeId) -> Option<(Operand, Operand)> {
    use Meaning::*;
    let code = m.code(c);
    let pair = Type::Tuple(vec![Type::Real, Type::Int]);
    let mut meaning: std::collections::HashMap<VarId, Meaning> = Default::default();
    let mut index = None;
    if p == Prim::Build {
        let &[i] = code.params.as_slice() else {
            return None;
        };
        index = Some(i);
    } else {
        for (k, &x) in code.params.iter().enumerate() {
            if *m.var_ty(x) == pair {
                meaning.insert(x, Pair(Operand::Param(k)));
            }
        }
    }
    let of = |meaning: &std::collections::HashMap<VarId, Meaning>, a: &Atom| match a {
        Atom::Var(v) => meaning.get(v).copied(),
        _ => None,
    };
    for b in &code.body.bindings {
        let means = match &b.rhs {
            Rhs::Prim(Prim::Index, args) if *m.var_ty(b.var) == pair => {
                let (&Atom::Var(xs), &Atom::Var(i)) = (&args[0], &args[1]) else {
                    return None;
                };
                if Some(i) != index {
                    return None;
                }
                Pair(Operand::Captured(
                    code.captures.iter().position(|&c| c == xs)?,
                ))
            }
            Rhs::Proj(x, field) => match (of(&meaning, x)?, field) {
                (Pair(o), 0) => Value(o),
                (Pair(o), 1) => Id(o),
                _ => return None,
            },
            Rhs::Prim(Prim::Mul, args) => {
                match (of(&meaning, &args[0])?, of(&meaning, &args[1])?) {
                    (Value(a), Value(b)) => Product(a, b),
                    _ => return None,
                }
            }
            Rhs::Prim(Prim::DeltaPush, args) if args.len() == 4 => {
                let parts: Option<Vec<Meaning>> = args.iter().map(|a| of(&meaning, a)).collect();
                match parts?.as_slice() {
                    &[Value(b), Id(a), Value(a2), Id(b2)] if a == a2 && b == b2 => Delta(a, b),
                    _ => return None,
                }
            }
            Rhs::Tuple(parts) if parts.len() == 2 => {
                match (of(&meaning, &parts[0])?, of(&meaning, &parts[1])?) {
                    (Product(a, b), Delta(a2, b2)) if (a, b) == (a2, b2) => Result(a, b),
                    _ => return None,
                }
            }
            _ => return None,
        };
        meaning.insert(b.var, means);
    }
    match of(&meaning, &code.body.result)? {
        Result(a, b) => Some((a, b)),
        _ => None,
    }
}

/// The fused loop and sum of a dot product (`fusable` said the pair is one, and
/// [`dot_operands`] that its element is a product), as C statements over the count
/// `n`: the value summed in the loop's order, the delta a dot node (`fx_tape_dot`).
/// The `fused` loop runs instead where a `build` would read past an operand (it
/// faults where the interpreter does) and where holding the arrays would cost more
/// memory than their terms (`fx_tape_dot_pays`). `None` for any other loop.
fn dot_or(
    e: &mut Emitter<'_>,
    loop_: &Binding,
    sum: &Binding,
    code: CodeId,
    fused: &str,
) -> Option<String> {
    let (p, args, f) = crate::delta_loop::element_fn(&loop_.rhs)?;
    let (a, b) = dot_operands(e.module(), p, code)?;
    let array = |o: Operand| match o {
        Operand::Param(k) => Some(e.atom(&args[k + 1])),
        Operand::Captured(k) => e.captured_by(f).map(|c| e.atom(&c[k])),
    };
    let (a, b) = (array(a)?, array(b)?);
    let ssp = span_args(sum.span);
    let name = var(sum.var);
    // A `map` or `map2` reads its arrays' own elements (of the length checked).
    let fits = match p {
        Prim::Build => format!("n <= FX_LEN({a}) && n <= FX_LEN({b}) && "),
        _ => String::new(),
    };
    // For one element the node costs more than its terms (GMM at d = 2, where most
    // dots have one: 227 M instructions a gradient against 174 M).
    let fits = format!("n >= 2 && {fits}");
    Some(format!(
        "fx_arr *da = fx_dense((fx_arr*)({a})), *db = fx_dense((fx_arr*)({b})); uint64_t held = fx_tape_dot_held(da, db); if ({fits}fx_tape_dot_pays(held, n)) {{ double t = 0.0; if (n > 0) {{ const double *av = fx_pair_vals(da), *bv = fx_pair_vals(db); for (int64_t i = 0; i < n; i++) t += av[i] * bv[i]; }} {name}.f0 = t; {name}.f1 = fx_tape_dot(da, db, n, held, {ssp}); }} else {{ {fused} }}"
    ))
}
