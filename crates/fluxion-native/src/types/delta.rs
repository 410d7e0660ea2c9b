//! The delta layer's per-type walks (`delta_c.rs` lists them): C helpers converting
//! between a type and its delta translation, written with the representation of
//! `types.rs` (which asks for their bodies here).

use std::fmt::Write;

use fluxion_core::Type;

use super::{Helper2, Types, has_rc};

/// The pair type `Δ(Real)`.
fn is_delta_real(t: &Type) -> bool {
    matches!(t, Type::Tuple(ts) if ts.as_slice() == [Type::Real, Type::Int])
}

/// The twice-translated real `Δₒ(Δᵢ(Real))`: an outer pair and an inner id.
fn is_delta2_real(t: &Type) -> bool {
    matches!(t, Type::Tuple(ts) if ts.len() == 2 && is_delta_real(&ts[0]) && ts[1] == Type::Int)
}

/// An owned value of type `to` made from `x: from` by walk `h`, as a C expression.
pub(crate) fn rebuild(
    t: &mut Types<'_>,
    h: Helper2,
    from: &Type,
    to: &Type,
    x: &str,
    sp: &str,
) -> String {
    match (h, from, to) {
        // In a delta-translated type `(Real, Int)` is always a translated real.
        (Helper2::Delta2Lift, _, _) if is_delta_real(from) => {
            format!("(({}){{{x}, 0}})", t.c(to))
        }
        (Helper2::Delta2Inputs, _, _) if is_delta_real(from) => {
            format!("(({}){{{x}, fx_tape2_input({sp})}})", t.c(to))
        }
        (Helper2::Delta2Primal, _, _) if is_delta2_real(from) => format!("{x}.f0"),
        (Helper2::Delta2Read, _, _) if is_delta2_real(from) => {
            format!(
                "(({}){{fx_tape2_adjv({x}.f1), fx_tape2_adjd({x}.f1)}})",
                t.c(to)
            )
        }
        (Helper2::Delta2Read, _, Type::Unit) => "0".into(),
        (Helper2::DeltaLift, Type::Real, _) => {
            format!("(({}){{{x}, 0}})", t.c(to))
        }
        (Helper2::FwdLift, Type::Real, _) => {
            format!("(({}){{{x}, 0.0}})", t.c(to))
        }
        (Helper2::TaylorLift(j), Type::Real, _) => {
            format!("fx_jet_lift({x}, {}, {sp})", j.coefficients() - 1)
        }
        // A closure inside a captured tuple, array or enum: its code's translation
        // (`%chad_of`'s direction 2, delta, 3, the forward layer, or Taylor's).
        (_, Type::Fn(..), _) if let Some(layer) = h.lifted_layer() => {
            let d = fluxion_core::prim::chad_of_direction(layer);
            format!("{}({x}, {sp})", t.chad_of_helper(from, d))
        }
        (Helper2::DeltaInputs, Type::Real, _) => {
            format!("(({}){{{x}, fx_tape_input({sp})}})", t.c(to))
        }
        (Helper2::DeltaPrimal, _, Type::Real) if is_delta_real(from) => format!("{x}.f0"),
        (Helper2::DeltaRead, _, Type::Real) if is_delta_real(from) => {
            format!("fx_tape_adjoint({x}.f1)")
        }
        // `T(Int) = T(Bool) = ()`.
        (Helper2::DeltaRead, _, Type::Unit) => "0".into(),
        _ if from == to && !has_rc(to) => x.into(),
        _ if from == to && matches!(to, Type::Array(_) | Type::Enum(_)) => {
            format!("(({})fx_inc_ret({x}))", t.c(to))
        }
        _ => format!("{}({x}, {sp})", t.helper2(h, from, to)),
    }
}

/// The statement that seeds the deltas of `y: dy` with the cotangent `w: tw`: walk `h`
/// is `DeltaSeed` (`Δ(B)`, `T(B)`) or, for the second tape, `Delta2Seed`
/// (`Δₒ(Δᵢ(B))`, `Δₒ(T(B))`, where `(Real, Int)` is a translated real).
pub(crate) fn seed(
    t: &mut Types<'_>,
    h: Helper2,
    dy: &Type,
    tw: &Type,
    y: &str,
    w: &str,
    sp: &str,
) -> String {
    match tw {
        _ if h == Helper2::Delta2Seed && is_delta_real(tw) => {
            format!("fx_tape2_seed({y}.f1, {w}.f0, {w}.f1, {sp});")
        }
        Type::Real => format!("fx_tape_seed({y}.f1, {w});"),
        Type::Unit | Type::Int | Type::Bool => String::new(),
        _ => format!("{}({y}, {w}, {sp});", t.helper2(h, dy, tw)),
    }
}

/// The C function of walk `h` at (`x`, `t`) (its prototype is `types.rs`'s).
pub(crate) fn body(types: &mut Types<'_>, h: Helper2, x: &Type, t: &Type, name: &str) -> String {
    let m = types.module();
    let (cx, ct) = (types.c(x), types.c(t));
    let sp = "s0, s1, s2";
    let mut s = String::new();
    if matches!(h, Helper2::DeltaSeed | Helper2::Delta2Seed) {
        let _ = writeln!(
            s,
            "static void {name}({cx} x, {ct} t, uint32_t s0, uint32_t s1, uint32_t s2) {{"
        );
        match (x, t) {
            (Type::Tuple(xs), Type::Tuple(ts)) => {
                for (i, (xi, ti)) in xs.iter().zip(ts).enumerate() {
                    let st = seed(types, h, xi, ti, &format!("x.f{i}"), &format!("t.f{i}"), sp);
                    let _ = writeln!(s, "  {st}");
                }
            }
            (Type::Array(xe), Type::Array(te)) => {
                let (xi, ti) = (types.get(xe, "x", "i"), types.get(te, "t", "i"));
                let st = seed(types, h, xe, te, &xi, &ti, sp);
                let _ = writeln!(
                    s,
                    "  if (!t) return;\n  for (int64_t i = 0; i < FX_LEN(x); i++) {{ {st} }}"
                );
            }
            (Type::Enum(xe), Type::Enum(te)) => {
                let _ = writeln!(s, "  if (!t) return;\n  switch (x->tag) {{");
                for (tag, v) in m.enum_def(*xe).variants.iter().enumerate() {
                    let xs = types.variant_struct(*xe, tag as u32);
                    let ts = types.variant_struct(*te, tag as u32);
                    let _ = write!(s, "  case {tag}:");
                    for (j, (fx, ft)) in v
                        .fields
                        .iter()
                        .zip(&m.enum_def(*te).variants[tag].fields)
                        .enumerate()
                    {
                        let st = seed(
                            types,
                            h,
                            fx,
                            ft,
                            &format!("(({xs}*)x)->f{j}"),
                            &format!("(({ts}*)t)->f{j}"),
                            sp,
                        );
                        let _ = write!(s, " {st}");
                    }
                    let _ = writeln!(s, " break;");
                }
                s.push_str("  }\n");
            }
            _ => {}
        }
        s.push_str("}\n");
        return s;
    }
    let _ = writeln!(
        s,
        "static {ct} {name}({cx} x, uint32_t s0, uint32_t s1, uint32_t s2) {{"
    );
    match (x, t) {
        (Type::Tuple(xs), Type::Tuple(ts)) => {
            let _ = writeln!(s, "  {ct} r;");
            for (i, (xi, ti)) in xs.iter().zip(ts).enumerate() {
                let f = rebuild(types, h, xi, ti, &format!("x.f{i}"), sp);
                let _ = writeln!(s, "  r.f{i} = {f};");
            }
            s.push_str("  return r;\n");
        }
        (Type::Array(xe), Type::Array(te)) => {
            let xi = types.get(xe, "x", "i");
            let f = rebuild(types, h, xe, te, &xi, sp);
            let size = types.elem_size(te);
            let put = types.set(te, "r", "i", &f);
            let _ = writeln!(
                s,
                "  int64_t n = FX_LEN(x);\n  fx_arr *r = fx_arr_new(n, {size}, \"an array\", {sp});\n  for (int64_t i = 0; i < n; i++) {put}\n  return r;"
            );
        }
        (Type::Enum(xe), Type::Enum(te)) => {
            // A recursive enum (a list) is walked by recursion: deep is an error.
            s.push_str("  FX_STACK_CHECK(s0, s1, s2);\n  switch (x->tag) {\n");
            for (tag, v) in m.enum_def(*xe).variants.iter().enumerate() {
                let xs = types.variant_struct(*xe, tag as u32);
                let ts = types.variant_struct(*te, tag as u32);
                if v.fields.is_empty() {
                    let _ = writeln!(s, "  case {tag}: return (fx_enum*)&{ts}_unit;");
                    continue;
                }
                let _ = writeln!(
                    s,
                    "  case {tag}: {{ {ts} *r = ({ts}*)fx_alloc(sizeof({ts}), {sp}); r->h.tag = {tag};"
                );
                for (j, (fx, ft)) in v
                    .fields
                    .iter()
                    .zip(&m.enum_def(*te).variants[tag].fields)
                    .enumerate()
                {
                    let f = rebuild(types, h, fx, ft, &format!("(({xs}*)x)->f{j}"), sp);
                    let _ = writeln!(s, "    r->f{j} = {f};");
                }
                s.push_str("    return (fx_enum*)r; }\n");
            }
            s.push_str("  }\n  return NULL;\n");
        }
        _ => {
            let _ = writeln!(
                s,
                "  (void)x; fx_fail({sp}, \"internal error: no delta walk here\");"
            );
        }
    }
    s.push_str("}\n");
    s
}
