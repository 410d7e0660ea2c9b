//! A `%delta_sum` of a loop's array, fused (`--ad delta`, seed 004 §7's `Add` of
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

use std::fmt::Write;

use fluxion_core::visit::free_vars;
use fluxion_core::{Atom, Binding, CodeId, Module, Prim, Rhs, Type, VarId};

use crate::emit::{Emitter, span_args, var};

/// A fusable pair of bindings: the loop (`build`, `map` or `map2` of a lambda of
/// code `code`) and the `%delta_sum` of its array right after it.
pub(crate) struct Fusion {
    pub code: CodeId,
    /// Terms per element: the final `%delta`'s.
    pub terms: usize,
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
    let Rhs::Prim(Prim::DeltaSum, sum_args) = &sum.rhs else {
        return None;
    };
    if sum_args.as_slice() != [Atom::Var(loop_.var)] {
        return None;
    }
    let (_, _, f) = element_fn(&loop_.rhs)?;
    let Atom::Var(f) = f else { return None };
    let code = known(*f)?;
    if mentions(&bindings[k + 2..], result, loop_.var) {
        return None;
    }
    let (_, terms) = leaf_delta(m, code)?;
    Some(Fusion { code, terms })
}

/// A loop that makes an array by calling a function per element: the primitive
/// (`build`, `map` or `map2`), its arguments and the function among them.
fn element_fn(rhs: &Rhs) -> Option<(Prim, &[Atom], &Atom)> {
    match rhs {
        Rhs::Prim(p @ Prim::Build, args) if args.len() == 2 => Some((*p, args, &args[1])),
        Rhs::Prim(p @ Prim::Map, args) if args.len() == 2 => Some((*p, args, &args[0])),
        Rhs::Prim(p @ Prim::Map2, args) if args.len() == 3 => Some((*p, args, &args[0])),
        _ => None,
    }
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
/// (`fusable` said the pair is one).
pub(crate) fn emit(
    e: &mut Emitter<'_>,
    loop_: &Binding,
    sum: &Binding,
    fusion: &Fusion,
    s: &mut String,
    pad: &str,
) {
    let m = e.module();
    let (lsp, ssp) = (span_args(loop_.span), span_args(sum.span));
    let name = var(sum.var);
    let ct = e.types().c(m.var_ty(sum.var));
    let Some((p, args, f)) = element_fn(&loop_.rhs) else {
        return;
    };
    // A `build` whose lambda indexes captured arrays by its index: two copies of the
    // loop, as `prims.rs` emits `build` (`index_hints`).
    let hints = match p {
        Prim::Build => e.index_hints(f, "n"),
        _ => None,
    };
    let f = e.atom(f);
    let a: Vec<String> = args.iter().map(|x| e.atom(x)).collect();
    let read = |e: &mut Emitter<'_>, x: &Atom, arr: &str| match m.atom_ty(x) {
        Type::Array(t) => e.types().get(&t, arr, "i"),
        _ => "0".into(),
    };
    let variant = e.terms_variant(fusion.code);
    let (len, what, call_args) = match p {
        Prim::Build => (a[0].clone(), "build", vec!["i".to_string()]),
        Prim::Map => (
            format!("FX_LEN({})", a[1]),
            "map",
            vec![read(e, &args[1], &a[1])],
        ),
        _ => {
            let (x, y) = (read(e, &args[1], &a[1]), read(e, &args[2], &a[2]));
            let _ = writeln!(
                s,
                "{pad}fx_same_length(\"map2\", FX_LEN({}), FX_LEN({}), {lsp});",
                a[1], a[2]
            );
            (format!("FX_LEN({})", a[1]), "map2", vec![x, y])
        }
    };
    let pair = e
        .types()
        .elem_size(&Type::Tuple(vec![Type::Real, Type::Int]));
    let k = fusion.terms;
    let _ = writeln!(s, "{pad}{ct} {name};");
    let call_args = call_args.join(", ");
    let body = |assume: &str| {
        format!(
            "for (int64_t i = 0; i < n; i++) {{ {assume}t += {variant}({f}, {call_args}).f0; }}"
        )
    };
    let loops = crate::prims::versioned(hints, body);
    let _ = writeln!(
        s,
        "{pad}{{ int64_t n = {len}; fx_arr_check(n, {pair}, \"{what}\", {lsp}); fx_tape_fused_open(n * {k}, {ssp}); double t = 0.0; {loops} {name}.f0 = t; {name}.f1 = fx_tape_fused_close(n * {k}); }}"
    );
}
