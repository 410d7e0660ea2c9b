//! C for `--ad delta` ([Delta] §7): the delta layer's primitives `%delta` and
//! `%delta_sum` (tape entries, `runtime.c`'s `fx_tape_*`), and the primitives of a
//! resolved `%delta_vjp` (fluxion-ad's `ahead/delta.rs`) with the per-type walks they
//! need (`types/delta.rs`):
//!
//! - `dlift`/`dinputs` (`A` → `Δ(A)`): each real with the zero delta / a fresh input;
//! - `dprimal` (`Δ(B)` → `B`): the reals without their deltas;
//! - `dseed` (`Δ(B)`, `T(B)`): adds each real's cotangent to its delta's adjoint;
//! - `dread` (`Δ(A)` → `T(A)`): each input's adjoint, in the shape of the point.
//!
//! A walk meets a real of the original program where one of its two types is `Real`
//! and the other the pair `(Real, Int)` (`Δ(Real)`; `T(Real) = Real`). Values are
//! visited in the interpreter's order (fields, then elements, left to right), so the
//! tape, its sweep and the adjoints' sums are the interpreter's, operation for
//! operation.

use std::collections::HashSet;
use std::fmt::Write;

use fluxion_core::visit::for_each_binding;
use fluxion_core::{Atom, CodeId, Lit, Module, Prim, Rhs, Span, Type, VarId};

use crate::emitter::{Emitter as FnEmitter, Operands, Unsupported};
use crate::types::delta::{rebuild, seed};
use crate::types::{Helper2, has_rc};

/// The `%delta_open`s among `codes` whose tape a `%delta_rows` sweeps (a Jacobian's).
pub(crate) fn rows_tapes(m: &Module, codes: &[CodeId]) -> HashSet<VarId> {
    let mut marks = HashSet::new();
    for &c in codes {
        for_each_binding(&m.code(c).body, &mut |b| {
            if let Rhs::Prim(Prim::DeltaRows, args) = &b.rhs
                && let Some(Atom::Var(mark)) = args.first()
            {
                marks.insert(*mark);
            }
        });
    }
    marks
}

/// Whether `p` is a delta primitive, emitted here: every tape primitive.
pub(crate) fn emits(p: Prim) -> bool {
    p.is_tape()
}

/// C for a delta primitive binding `v: ty`; whether `v` owns its value.
#[allow(clippy::too_many_arguments)]
pub(crate) fn emit(
    e: &mut FnEmitter<'_>,
    p: Prim,
    args: &[Atom],
    v: VarId,
    ty: &Type,
    span: Span,
    s: &mut String,
    pad: &str,
) -> Result<bool, Unsupported> {
    let m = e.module();
    let Operands { ct, name, sp, a } = Operands::of(e, args, v, ty, span);
    let aty = |i: usize| m.atom_ty(&args[i]);
    let mut line = |text: String| {
        let _ = writeln!(s, "{pad}{text}");
    };
    match p {
        // A loop node's element function's variant (`delta_loop.rs`): no tape; the
        // apply variant sweeps these terms itself at its end.
        Prim::DeltaPush if e.loop_variant.is_some() => {
            if let Some(crate::emitter::LoopVariant::Apply(deltas)) = &mut e.loop_variant {
                let terms = a.chunks(2).zip(args.chunks(2));
                let terms = terms.map(|(c, id)| (c[0].clone(), id[1])).collect();
                deltas.push((v, crate::emitter::LocalDelta::Terms(terms)));
            }
            line(format!("{ct} {name} = 0;"));
        }
        Prim::DeltaPush if e.terms_of() == Some(v) => {
            // A fused loop's element (delta_fuse.rs): the terms go to the sum's node.
            let mut text = format!("{{ int64_t at = fx_tape_fused_terms({});", a.len() / 2);
            for (j, pair) in a.chunks(2).enumerate() {
                let _ = write!(
                    text,
                    " fx_tape.coefs[at + {j}] = {}; fx_tape.parents[at + {j}] = (uint32_t){};",
                    pair[0], pair[1]
                );
            }
            line(format!("{text} }}"));
            line(format!("{ct} {name} = 0;"));
        }
        Prim::DeltaPush => {
            // Terms on the literal zero delta are dropped here (the tape drops them
            // at run time too: `fx_tape_term`); with none left, the zero delta.
            let live: Vec<&[String]> = a
                .chunks(2)
                .zip(args.chunks(2))
                .filter(|(_, atoms)| atoms[1] != Atom::Lit(Lit::Int(0)))
                .map(|(c, _)| c)
                .collect();
            if live.is_empty() {
                line(format!("{ct} {name} = 0;"));
            } else if e.many_pushes() && live.len() <= 2 {
                let terms: Vec<String> = live.iter().map(|t| t.join(", ")).collect();
                line(format!(
                    "{ct} {name} = fx_tape_push{}({}, {sp});",
                    live.len(),
                    terms.join(", ")
                ));
            } else {
                let mut text = format!("fx_tape_reserve({}, {sp});", live.len());
                for pair in &live {
                    let _ = write!(text, " fx_tape_term({}, {});", pair[0], pair[1]);
                }
                line(text);
                line(format!("{ct} {name} = fx_tape_node();"));
            }
        }
        Prim::DeltaSum => {
            let d = e.types().get(&elem(&aty(0)), &a[0], "i");
            line(format!("{ct} {name};"));
            line(format!(
                "{{ int64_t n = FX_LEN({0}); double t = 0.0; for (int64_t i = 0; i < n; i++) t += {d}.f0; {name}.f0 = t; if (n == 0) {name}.f1 = 0; else {{ fx_tape_reserve(n, {sp}); for (int64_t i = 0; i < n; i++) fx_tape_term(1.0, {d}.f1); {name}.f1 = fx_tape_node(); }} }}",
                a[0]
            ));
        }
        Prim::DeltaSumbuild => {
            // fluxion-opt's preaccumulate.rs; runtime.c's `fx_pre_*`.
            let call = e.call_closure(&args[1], &["i".into()]);
            line(format!("fx_length({}, \"sumbuild\", {sp});", a[0]));
            line(format!("{ct} {name};"));
            line(format!(
                "{{ int64_t n_ = {0}, pm_ = fx_pre_open({sp}); double t_ = 0.0; fx_arr *ids_ = pm_ < 0 ? fx_arr_new(n_, sizeof(int64_t), \"sumbuild\", {sp}) : NULL; for (int64_t i = 0; i < n_; i++) {{ {ct} x_ = {call}; t_ += x_.f0; if (pm_ < 0) ((int64_t *)(ids_ + 1))[i] = x_.f1; else fx_pre_element(pm_, x_.f1, {sp}); }} {name}.f0 = t_; if (pm_ < 0) {{ {name}.f1 = fx_pre_plain(ids_, {sp}); fx_release(ids_); }} else {name}.f1 = fx_pre_close({sp}); }}",
                a[0]
            ));
        }
        Prim::DeltaOpen if e.rows_tapes.contains(&v) => {
            line(format!("{ct} {name} = fx_tape_open_plain({sp});"))
        }
        Prim::DeltaOpen => line(format!("{ct} {name} = fx_tape_open();")),
        Prim::DeltaLift | Prim::DeltaInputs => {
            let h = if p == Prim::DeltaLift {
                Helper2::DeltaLift
            } else {
                Helper2::DeltaInputs
            };
            let x = rebuild(e.types(), h, &aty(0), ty, &a[0], &sp);
            line(format!("{ct} {name} = {x};"));
        }
        Prim::DeltaPrimal => {
            let x = rebuild(e.types(), Helper2::DeltaPrimal, &aty(0), ty, &a[0], &sp);
            line(format!("{ct} {name} = {x};"));
        }
        Prim::DeltaGrad => {
            let seed = seed(
                e.types(),
                Helper2::DeltaSeed,
                &aty(1),
                &aty(2),
                &a[1],
                &a[2],
                &sp,
            );
            let read = rebuild(e.types(), Helper2::DeltaRead, &aty(3), ty, &a[3], &sp);
            line(format!("fx_tape_sweep_begin({}, {sp});", a[0]));
            line(seed);
            line("fx_tape_sweep();".into());
            line(format!("{ct} {name} = {read};"));
            line(format!("fx_tape_close({});", a[0]));
        }
        Prim::DeltaRows => {
            // One sweep per output, seeded with 1 at its delta (the interpreter's
            // `delta::rows`): row i is the inputs' adjoints, eᵢᵀ·J.
            let row_ty = elem(ty);
            let (crow, size) = (e.types().c(&row_ty), e.types().elem_size(&row_ty));
            let yi = e.types().get(&elem(&aty(1)), &a[1], "i");
            let read = rebuild(e.types(), Helper2::DeltaRead, &aty(2), &row_ty, &a[2], &sp);
            let set = e.types().set(&row_ty, &name, "i", "row");
            line(format!(
                "{ct} {name} = fx_arr_new(FX_LEN({}), {size}, \"an array\", {sp});",
                a[1]
            ));
            // Fewer inputs than outputs: by columns, forward (`fx_tape_columns`), where
            // the input and the result are arrays of reals.
            let pair = Type::Tuple(vec![Type::Real, Type::Int]);
            let by_columns =
                row_ty == Type::array(Type::Real) && elem(&aty(1)) == pair && elem(&aty(2)) == pair;
            let guard = if by_columns {
                format!(
                    "if (!fx_tape_columns({}, {}, {}, {name}, {sp})) ",
                    a[0], a[1], a[2]
                )
            } else {
                String::new()
            };
            line(format!(
                "{guard}for (int64_t i = 0; i < FX_LEN({}); i++) {{ fx_tape_sweep_begin({}, {sp}); fx_tape_seed({yi}.f1, 1.0); fx_tape_sweep(); {crow} row = {read}; {set} }}",
                a[1], a[0]
            ));
            line(format!("fx_tape_close({});", a[0]));
        }
        // The second tape of reverse over reverse (fluxion-ad's `delta_twice.rs`):
        // its coefficients are outer pairs.
        Prim::Delta2Push => {
            let mut text = format!("fx_tape2_reserve({}, {sp});", a.len() / 2);
            for pair in a.chunks(2) {
                let _ = write!(
                    text,
                    " fx_tape2_term({0}.f0, {0}.f1, {1});",
                    pair[0], pair[1]
                );
            }
            line(text);
            line(format!("{ct} {name} = fx_tape2_node();"));
        }
        Prim::Delta2Sum => {
            // The value's outer node first, then the inner node (the interpreter's order).
            let d = e.types().get(&elem(&aty(0)), &a[0], "i");
            line(format!("{ct} {name};"));
            line(format!(
                "{{ int64_t n = FX_LEN({0}); double t = 0.0; for (int64_t i = 0; i < n; i++) t += {d}.f0.f0; {name}.f0.f0 = t; if (n == 0) {{ {name}.f0.f1 = 0; {name}.f1 = 0; }} else {{ fx_tape_reserve(n, {sp}); for (int64_t i = 0; i < n; i++) fx_tape_term(1.0, {d}.f0.f1); {name}.f0.f1 = fx_tape_node(); fx_tape2_reserve(n, {sp}); for (int64_t i = 0; i < n; i++) fx_tape2_term(1.0, 0, {d}.f1); {name}.f1 = fx_tape2_node(); }} }}",
                a[0]
            ));
        }
        Prim::Delta2Open => line(format!("{ct} {name} = fx_tape2_open();")),
        Prim::Delta2Lift | Prim::Delta2Inputs | Prim::Delta2Primal => {
            let h = match p {
                Prim::Delta2Lift => Helper2::Delta2Lift,
                Prim::Delta2Inputs => Helper2::Delta2Inputs,
                _ => Helper2::Delta2Primal,
            };
            let x = rebuild(e.types(), h, &aty(0), ty, &a[0], &sp);
            line(format!("{ct} {name} = {x};"));
        }
        Prim::Delta2Grad => {
            let seed = seed(
                e.types(),
                Helper2::Delta2Seed,
                &aty(1),
                &aty(2),
                &a[1],
                &a[2],
                &sp,
            );
            let read = rebuild(e.types(), Helper2::Delta2Read, &aty(3), ty, &a[3], &sp);
            line(format!("fx_tape2_sweep_begin({}, {sp});", a[0]));
            line(seed);
            line(format!("fx_tape2_sweep({sp});"));
            line(format!("{ct} {name} = {read};"));
            line(format!("fx_tape2_close({});", a[0]));
        }
        _ => {
            return Err(Unsupported(format!(
                "`{}` is evaluated by the interpreter",
                p.name()
            )));
        }
    }
    Ok(has_rc(ty))
}

fn elem(t: &Type) -> Type {
    match t {
        Type::Array(e) => (**e).clone(),
        _ => Type::Unit,
    }
}
