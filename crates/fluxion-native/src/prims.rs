//! C for each primitive: the same results and the same runtime errors as the
//! interpreter's `prims.rs`, `linear.rs` and `tangent.rs` (whose messages are
//! repeated here). Higher-order built-ins become loops that call the closure — directly
//! when its code is known, so the C compiler inlines the lambda's body.
//!
//! Returns whether the bound variable owns its value (see `emit.rs`).

use std::fmt::Write;

use fluxion_core::{Atom, Prim, Span, Type, VarId};

use crate::emitter::{Emitter as FnEmitter, Operands, Unsupported, versioned};
use crate::types::{Helper, Helper2, has_array, has_rc};

fn elem(t: &Type) -> Type {
    match t {
        Type::Array(e) => (**e).clone(),
        _ => Type::Unit,
    }
}

/// `minimum`, `maximum` or `argmax` (binding `red`) of the `map` just before it
/// (binding `map`), which nothing else reads ([`Emitter::reduction_of_map`]): one loop
/// keeping the best element as it goes, no array. The elements are computed in the
/// map's order and compared as the reduction compares them (`<`/`>` against the best
/// so far), so values and errors are the unfused pair's.
pub(crate) fn emit_reduction_of_map(
    e: &mut FnEmitter<'_>,
    map: &fluxion_core::Binding,
    red: &fluxion_core::Binding,
    s: &mut String,
    pad: &str,
) {
    use fluxion_core::Rhs;
    let (Rhs::Prim(Prim::Map, margs), Rhs::Prim(p, _)) = (&map.rhs, &red.rhs) else {
        unreachable!("a map and its reduction")
    };
    let m = e.module();
    let ty = m.var_ty(red.var).clone();
    let et = elem(m.var_ty(map.var));
    let xty = elem(&m.atom_ty(&margs[1]));
    let Operands { ct, name, sp, .. } = Operands::of(e, &[], red.var, &ty, red.span);
    let xs = e.atom(&margs[1]);
    let ce = e.types().c(&et);
    let at = |e: &mut FnEmitter<'_>, i: &str| {
        let x = e.types().get(&xty, &xs, i);
        e.call_closure(&margs[0], &[x])
    };
    let (first, next) = (at(e, "0"), at(e, "i"));
    let cmp = better(*p);
    let value = if *p == Prim::Argmax { "best" } else { "best_v" };
    let _ = writeln!(s, "{pad}{}", nonempty(*p, &xs, &sp));
    let _ = writeln!(
        s,
        "{pad}{ct} {name};\n{pad}{{ {ce} best_v = {first}; int64_t best = 0; for (int64_t i = 1; i < FX_LEN({xs}); i++) {{ {ce} t = {next}; int b_ = t {cmp} best_v; best = b_ ? i : best; best_v = b_ ? t : best_v; }} {name} = {value}; (void)best; }}"
    );
}

/// The comparison by which `minimum`, `maximum` or `argmax` takes an element over
/// the best so far.
fn better(p: Prim) -> &'static str {
    if p == Prim::Minimum { "<" } else { ">" }
}

/// The check that `minimum`, `maximum` or `argmax` (`p`) is not of the empty array
/// `xs`.
fn nonempty(p: Prim, xs: &str, sp: &str) -> String {
    format!(
        "if (FX_LEN({xs}) == 0) fx_fail({sp}, \"{} of an empty array\");",
        p.name()
    )
}

/// The C function of a real primitive of one argument.
fn real_fn(p: Prim) -> Option<&'static str> {
    use Prim::*;
    Some(match p {
        Sin => "sin",
        Cos => "cos",
        Tan => "tan",
        Asin => "asin",
        Acos => "acos",
        Atan => "atan",
        Tanh => "tanh",
        Sinh => "sinh",
        Cosh => "cosh",
        Exp => "exp",
        Log => "log",
        Log1p => "log1p",
        Expm1 => "expm1",
        Sqrt => "sqrt",
        Sigmoid => "fx_sigmoid",
        Lgamma => "fx_lgamma",
        Erf => "erf",
        Floor => "floor",
        Ceil => "ceil",
        Digamma => "fx_digamma",
        Trigamma => "fx_trigamma",
        _ => return None,
    })
}

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
    use Prim::*;
    let m = e.module();
    let Operands { ct, name, sp, a } = Operands::of(e, args, v, ty, span);
    let aty = |i: usize| m.atom_ty(&args[i]);
    let line = |s: &mut String, text: String| {
        let _ = writeln!(s, "{pad}{text}");
    };
    let decl = |s: &mut String, expr: String| {
        let _ = writeln!(s, "{pad}{ct} {name} = {expr};");
    };
    // A new array of `len` elements of `size` bytes (`Emitter::new_array`).
    let fresh = |e: &FnEmitter<'_>, s: &mut String, len: &str, size: &str, what: &str| {
        e.new_array(s, pad, v, len, size, what, &sp)
    };
    if let Some(f) = real_fn(p) {
        decl(s, format!("{f}({})", a[0]));
        return Ok(false);
    }
    let is_int = !args.is_empty() && matches!(aty(0), Type::Int);
    match p {
        Add | Sub | Mul | Div | Rem => {
            let expr = if is_int {
                let f = match p {
                    Add => "fx_iadd",
                    Sub => "fx_isub",
                    Mul => "fx_imul",
                    Div => "fx_idiv",
                    _ => "fx_irem",
                };
                format!("{f}({}, {}, {sp})", a[0], a[1])
            } else if p == Rem {
                format!("fmod({}, {})", a[0], a[1])
            } else {
                let op = p.operator_symbol().unwrap_or("+");
                format!("{} {op} {}", a[0], a[1])
            };
            decl(s, expr);
        }
        Neg if is_int => decl(s, format!("fx_ineg({}, {sp})", a[0])),
        Neg => decl(s, format!("-{}", a[0])),
        Not => decl(s, format!("!{}", a[0])),
        Eq | Ne => {
            let eq = e.types().eq_expr(&aty(0), &a[0], &a[1]);
            decl(s, if p == Eq { eq } else { format!("!{eq}") });
        }
        Lt | Le | Gt | Ge => {
            let op = p.operator_symbol().unwrap_or("<");
            decl(s, format!("{} {op} {}", a[0], a[1]));
        }
        Abs if is_int => decl(s, format!("fx_iabs({}, {sp})", a[0])),
        Abs => decl(s, format!("fabs({})", a[0])),
        Pow => decl(s, format!("pow({}, {})", a[0], a[1])),
        Atan2 => decl(s, format!("atan2({}, {})", a[0], a[1])),
        Polygamma => decl(s, format!("fx_polygamma({}, {})", a[0], a[1])),
        Min | Max => {
            let f = match (p, is_int) {
                (Min, true) => "fx_imin",
                (Min, false) => "fx_rmin",
                (_, true) => "fx_imax",
                _ => "fx_rmax",
            };
            decl(s, format!("{f}({}, {})", a[0], a[1]));
        }
        ToReal => decl(s, format!("(double){}", a[0])),
        ToInt => decl(s, format!("fx_to_int({}, {sp})", a[0])),
        Length => decl(s, format!("FX_LEN({})", a[0])),
        Index => {
            line(s, format!("fx_bounds({}, FX_LEN({}), {sp});", a[1], a[0]));
            let read = e.types().get(&elem(&aty(0)), &a[0], &a[1]);
            decl(s, read);
            return Ok(false);
        }
        Build => {
            let size = e.types().elem_size(&elem(ty));
            let call = e.call_closure(&args[1], &["i".into()]);
            let put = e.types().set(&elem(ty), &name, "i", &call);
            let new = fresh(e, s, &a[0], &size.to_string(), "build");
            decl(s, new);
            let body = |assume: &str| {
                format!("for (int64_t i = 0; i < {}; i++) {{ {assume}{put} }}", a[0])
            };
            line(s, versioned(e.index_hints(&args[1], &a[0]), body));
        }
        Map => {
            let x = e.types().get(&elem(&aty(1)), &a[1], "i");
            let size = e.types().elem_size(&elem(ty));
            let call = e.call_closure(&args[0], &[x]);
            let put = e.types().set(&elem(ty), &name, "i", &call);
            let new = fresh(e, s, &format!("FX_LEN({})", a[1]), &size.to_string(), "map");
            decl(s, new);
            line(
                s,
                format!("for (int64_t i = 0; i < FX_LEN({}); i++) {put}", a[1]),
            );
        }
        Map2 => {
            let x = e.types().get(&elem(&aty(1)), &a[1], "i");
            let y = e.types().get(&elem(&aty(2)), &a[2], "i");
            let size = e.types().elem_size(&elem(ty));
            let call = e.call_closure(&args[0], &[x, y]);
            let put = e.types().set(&elem(ty), &name, "i", &call);
            line(
                s,
                format!(
                    "fx_same_length(\"map2\", FX_LEN({}), FX_LEN({}), {sp});",
                    a[1], a[2]
                ),
            );
            let new = fresh(
                e,
                s,
                &format!("FX_LEN({})", a[1]),
                &size.to_string(),
                "map2",
            );
            decl(s, new);
            line(
                s,
                format!("for (int64_t i = 0; i < FX_LEN({}); i++) {put}", a[1]),
            );
        }
        Zip => {
            let (xt, yt) = (elem(&aty(0)), elem(&aty(1)));
            let ce = e.types().c(&elem(ty));
            let size = e.types().elem_size(&elem(ty));
            line(
                s,
                format!(
                    "fx_same_length(\"zip\", FX_LEN({}), FX_LEN({}), {sp});",
                    a[0], a[1]
                ),
            );
            decl(
                s,
                format!("fx_arr_new(FX_LEN({}), {size}, \"zip\", {sp})", a[0]),
            );
            let ix = e.types().get(&xt, &a[0], "i");
            let iy = e.types().get(&yt, &a[1], "i");
            let (incx, incy) = (e.types().inc(&xt, "t.f0"), e.types().inc(&yt, "t.f1"));
            let put = e.types().set(&elem(ty), &name, "i", "t");
            line(
                s,
                format!(
                    "for (int64_t i = 0; i < FX_LEN({}); i++) {{ {ce} t = {{{ix}, {iy}}}; {put} {incx} {incy} }}",
                    a[0]
                ),
            );
        }
        Fold | Scan | Iterate => {
            let acc_ty = if p == Iterate { aty(2) } else { aty(1) };
            let cacc = e.types().c(&acc_ty);
            let (init, xs) = if p == Iterate {
                (&a[2], None)
            } else {
                (&a[1], Some(&a[2]))
            };
            let inc_acc = e.types().inc(&acc_ty, "acc");
            let dec_acc = e.types().dec(&acc_ty, "acc");
            let f = if p == Iterate { &args[1] } else { &args[0] };
            // A range never made (`Emitter::loop_ranges`): its variable is its length.
            let counted =
                p != Iterate && matches!(&args[2], Atom::Var(x) if e.loop_ranges.contains(x));
            let call = match xs {
                Some(_) if counted => e.call_closure(f, &["acc".into(), "i".into()]),
                Some(xs) => {
                    let x = e.types().get(&elem(&aty(2)), xs, "i");
                    e.call_closure(f, &["acc".into(), x])
                }
                None => e.call_closure(f, &["acc".into()]),
            };
            let count = match (p, xs) {
                (Iterate, _) => {
                    line(
                        s,
                        format!(
                            "if ({0} < 0) fx_fail({sp}, \"iterate: negative count %lld\", (long long){0});",
                            a[0]
                        ),
                    );
                    a[0].clone()
                }
                (_, Some(xs)) if counted => xs.clone(),
                (_, Some(xs)) => format!("FX_LEN({xs})"),
                _ => "0".into(),
            };
            if p == Scan {
                let size = e.types().elem_size(&acc_ty);
                decl(s, format!("fx_arr_new({count}, {size}, \"scan\", {sp})"));
            } else {
                line(s, format!("{ct} {name};"));
            }
            let store = if p == Scan {
                let put = e.types().set(&acc_ty, &name, "i", "acc");
                format!(" {put} {inc_acc}")
            } else {
                String::new()
            };
            let finish = if p == Scan {
                dec_acc.clone()
            } else {
                format!("{name} = acc;")
            };
            line(
                s,
                format!(
                    "{{ {cacc} acc = {init}; {inc_acc}\n{pad}  for (int64_t i = 0; i < {count}; i++) {{ {cacc} nx = {call}; {dec_acc} acc = nx;{store} }}\n{pad}  {finish} }}"
                ),
            );
        }
        Sum | Sumbuild => {
            let term_ty = ty.clone();
            let cterm = ct.clone();
            let (count, term, owned_term) = if p == Sum {
                let term = e.types().get(&elem(&aty(0)), &a[0], "i");
                (format!("FX_LEN({})", a[0]), term, false)
            } else {
                line(s, format!("fx_length({}, \"sumbuild\", {sp});", a[0]));
                (a[0].clone(), e.call_closure(&args[1], &["i".into()]), true)
            };
            line(s, format!("{ct} {name};"));
            let add = e.types().plus_expr(Helper::Add, &term_ty, "acc", "t", &sp);
            if !has_array(&term_ty) {
                let zero = sum_zero(e, &term_ty, &sp);
                let hints = if p == Sum {
                    None
                } else {
                    e.index_hints(&args[1], &count)
                };
                let body = |assume: &str| {
                    format!(
                        "for (int64_t i = 0; i < {count}; i++) {{ {assume}{cterm} t = {term}; acc = {add}; }}"
                    )
                };
                line(
                    s,
                    format!(
                        "{{ {cterm} acc = {zero}; {} {name} = acc; }}",
                        versioned(hints, body)
                    ),
                );
            } else {
                // A sum of arrays starts from its first term (no zero of unknown length).
                let zero = sum_zero(e, &term_ty, &sp);
                let (dec_acc, dec_t) =
                    (e.types().dec(&term_ty, "acc"), e.types().dec(&term_ty, "t"));
                let inc_first = if owned_term {
                    String::new()
                } else {
                    e.types().inc(&term_ty, "acc")
                };
                let dec_t = if owned_term { dec_t } else { String::new() };
                line(
                    s,
                    format!(
                        "if ({count} == 0) {name} = {zero}; else {{ int64_t i = 0; {cterm} acc = {term}; {inc_first}\n{pad}  for (i = 1; i < {count}; i++) {{ {cterm} t = {term}; {cterm} nx = {add}; {dec_acc} {dec_t} acc = nx; }}\n{pad}  {name} = acc; }}"
                    ),
                );
            }
        }
        Replicate => {
            let et = aty(1);
            let size = e.types().elem_size(&et);
            let inc = e.types().inc(&et, &a[1]);
            let put = e.types().set(&et, &name, "i", &a[1]);
            decl(
                s,
                format!("fx_arr_new({}, {size}, \"replicate\", {sp})", a[0]),
            );
            line(
                s,
                format!("for (int64_t i = 0; i < {}; i++) {{ {put} {inc} }}", a[0]),
            );
        }
        IntUnion => {
            decl(s, format!("fx_int_union({}, {}, {sp})", a[0], a[1]));
        }
        Colour => {
            decl(
                s,
                format!(
                    "fx_colour({}, {}, {}, {}, {}, {sp})",
                    a[0], a[1], a[2], a[3], a[4]
                ),
            );
        }
        RowsOf => {
            decl(s, format!("fx_rows_of({}, {sp})", a[0]));
        }
        Range if e.loop_ranges.contains(&v) => {
            line(
                s,
                format!("fx_arr_check({}, sizeof(fx_int), \"range\", {sp});", a[0]),
            );
            let _ = writeln!(s, "{pad}fx_int {name} = {};", a[0]);
            return Ok(false);
        }
        Range => {
            decl(
                s,
                format!("fx_arr_new({}, sizeof(fx_int), \"range\", {sp})", a[0]),
            );
            line(
                s,
                format!(
                    "for (int64_t i = 0; i < {}; i++) FX_DATA({name}, fx_int)[i] = i;",
                    a[0]
                ),
            );
        }
        Reverse | Concat | Slice => {
            let et = elem(ty);
            let ce = e.types().c(&et);
            let size = e.types().elem_size(&et);
            let (start, len) = match p {
                Reverse => ("0".to_string(), format!("FX_LEN({})", a[0])),
                Slice => {
                    line(
                        s,
                        format!(
                            "if ({1} < 0 || {2} < 0 || {1} > FX_LEN({0}) - {2}) fx_fail({sp}, \"slice(%lld, %lld) out of range for an array of length %lld\", (long long){1}, (long long){2}, (long long)FX_LEN({0}));",
                            a[0], a[1], a[2]
                        ),
                    );
                    if e.unread_slices.contains(&v) {
                        return Ok(false);
                    }
                    (a[1].clone(), a[2].clone())
                }
                _ => {
                    line(
                        s,
                        format!(
                            "if (FX_LEN({0}) + FX_LEN({1}) > FX_MAX_ARRAY_LEN) fx_fail({sp}, \"concat: result too large\");",
                            a[0], a[1]
                        ),
                    );
                    ("0".into(), format!("FX_LEN({}) + FX_LEN({})", a[0], a[1]))
                }
            };
            let new = fresh(e, s, &len, &size.to_string(), p.name());
            decl(s, new);
            let read = match p {
                Reverse => e
                    .types()
                    .get(&et, &a[0], &format!("FX_LEN({}) - 1 - i", a[0])),
                Slice => e.types().get(&et, &a[0], &format!("{start} + i")),
                _ => {
                    let first = e.types().get(&et, &a[0], "i");
                    let second = e.types().get(&et, &a[1], &format!("i - FX_LEN({})", a[0]));
                    format!("(i < FX_LEN({}) ? {first} : {second})", a[0])
                }
            };
            let inc = e.types().inc(&et, "v");
            let put = e.types().set(&et, &name, "i", "v");
            line(
                s,
                format!(
                    "for (int64_t i = 0; i < FX_LEN({name}); i++) {{ {ce} v = {read}; {put} {inc} }}"
                ),
            );
        }
        Maximum | Minimum | Argmax => {
            let et = elem(&aty(0));
            let ce = e.types().c(&et);
            let cmp = better(p);
            line(s, nonempty(p, &a[0], &sp));
            let x = format!("FX_DATA({}, {ce})", a[0]);
            let best = format!(
                "int64_t best = 0; for (int64_t i = 1; i < FX_LEN({0}); i++) if ({x}[i] {cmp} {x}[best]) best = i;",
                a[0]
            );
            line(s, format!("{ct} {name};"));
            let value = if p == Argmax {
                "best".to_string()
            } else {
                format!("{x}[best]")
            };
            line(s, format!("{{ {best} {name} = {value}; }}"));
            return Ok(false);
        }
        MatchFail => {
            line(
                s,
                format!("fx_fail({sp}, \"non-exhaustive match: no arm matches this value\");"),
            );
            line(
                s,
                format!("{ct} {name}; memset(&{name}, 0, sizeof {name});"),
            );
            return Ok(false);
        }
        CheckTangent | CheckDirection => {
            let h = if p == CheckTangent {
                Helper2::Check
            } else {
                Helper2::CheckDirection
            };
            if let Some(c) = e.types().check_stmt(h, &aty(0), &aty(1), &a[0], &a[1], &sp) {
                line(s, c);
            }
            decl(s, "0".into());
            return Ok(false);
        }
        TanZero => {
            let z = e.types().zero(ty);
            decl(s, z);
            return Ok(false);
        }
        TanPlus => {
            let x = e.types().plus_expr(Helper::TanPlus, ty, &a[0], &a[1], &sp);
            decl(s, x);
        }
        TanDense => {
            let x = e.types().dense_expr(&aty(0), &aty(1), &a[0], &a[1], &sp);
            decl(s, x);
        }
        ClosureCapture => {
            // Borrowed from the closure's environment, like a projection.
            let (i, c) = (e.lit_int(&args[1]), e.lit_int(&args[2]));
            decl(s, format!("((env_{c}*){})->c{i}", a[0]));
            return Ok(false);
        }
        ChadOf => {
            // The closure with its code's translation (`%chad_of`'s helper per function
            // type and direction, emit.rs).
            let f = e.chad_of_helper(&aty(0), e.lit_int(&args[1]));
            decl(s, format!("{f}({}, {sp})", a[0]));
        }
        _ if p.is_tape() => {
            return Err(Unsupported(format!(
                "internal error: `{}` reached the primitives' emitter",
                p.name()
            )));
        }
        LinScale => decl(s, format!("fx_lscale({}, {})", a[0], a[1])),
        LinProj => {
            decl(s, format!("{}.f{}", a[0], e.lit_int(&args[1])));
            return Ok(false);
        }
        LinField => {
            let Type::Enum(te) = aty(0) else {
                return Err(Unsupported("%lfield of a non-enum".into()));
            };
            let (tag, j) = (e.lit_int(&args[1]), e.lit_int(&args[2]));
            let vs = e.types().variant_struct(te, tag as u32);
            let z = e.types().zero(ty);
            line(s, format!("{ct} {name};"));
            line(
                s,
                format!(
                    "if (!{0}) {name} = {z}; else {{ if ({0}->tag != {tag}) fx_fail({sp}, \"a cotangent with another constructor than its value\"); {name} = (({vs}*){0})->f{j}; }}",
                    a[0]
                ),
            );
            return Ok(false);
        }
        LinIndex => {
            let et = elem(&aty(0));
            let read = e.types().get(&et, &a[0], &a[1]);
            let z = e.types().zero(&et);
            line(s, format!("{ct} {name};"));
            line(
                s,
                format!(
                    "if (!{0}) {name} = {z}; else {{ if ((uint64_t){1} >= (uint64_t)FX_LEN({0})) fx_fail({sp}, \"internal error: %%lindex %lld out of range\", (long long){1}); {name} = {read}; }}",
                    a[0], a[1]
                ),
            );
            return Ok(false);
        }
        LinOneHot | LinEmbed => {
            // Lazy: O(1) here, dense when read (see `runtime.c`).
            let lazy = e.types().helper(Helper::Lazy, ty);
            let id = lazy.trim_start_matches("lazy_").to_string();
            let w = &a[2];
            let wty = aty(2);
            let is_null = if has_rc(&wty) && !matches!(wty, Type::Tuple(_)) {
                format!("!{w}")
            } else {
                "0".into()
            };
            line(s, format!("{ct} {name};"));
            let make = if p == LinOneHot {
                format!(
                    "if ((uint64_t){1} >= (uint64_t){0}) fx_fail({sp}, \"internal error: one-hot index %lld of length %lld\", (long long){1}, (long long){0}); {name} = onehot_{id}({0}, {1}, {w});",
                    a[0], a[1]
                )
            } else {
                format!(
                    "if ({1} < 0 || FX_LEN({w}) > {0} - {1}) fx_fail({sp}, \"internal error: an embedded cotangent out of range\"); {name} = lembed_{id}({0}, {1}, {w});",
                    a[0], a[1]
                )
            };
            line(
                s,
                format!("if ({is_null}) {name} = NULL; else {{ {make} }}"),
            );
        }
        LinSlice => {
            let et = elem(ty);
            let ce = e.types().c(&et);
            let size = e.types().elem_size(&et);
            let inc = e.types().inc(&et, "v");
            let read = e.types().get(&et, &a[0], &format!("{} + i", a[1]));
            let put = e.types().set(&et, &name, "i", "v");
            line(s, format!("{ct} {name};"));
            line(
                s,
                format!(
                    "if (!{0}) {name} = NULL; else {{ if ({1} < 0 || {2} < 0 || {1} > FX_LEN({0}) - {2}) fx_fail({sp}, \"internal error: %%lslice out of range\"); {name} = fx_arr_new({2}, {size}, \"a cotangent\", {sp}); for (int64_t i = 0; i < {2}; i++) {{ {ce} v = {read}; {put} {inc} }} }}",
                    a[0], a[1], a[2]
                ),
            );
        }
        LinSum => {
            let ce = e.types().c(ty);
            let z = e.types().zero(ty);
            let x = e.types().get(ty, &a[0], "i");
            let add = e.types().plus_expr(Helper::TanPlus, ty, "acc", &x, &sp);
            let dec = e.types().dec(ty, "acc");
            line(s, format!("{ct} {name};"));
            line(
                s,
                format!(
                    "{{ {ce} acc = {z}; for (int64_t i = 0; i < FX_LEN({0}); i++) {{ {ce} nx = {add}; {dec} acc = nx; }} {name} = acc; }}",
                    a[0]
                ),
            );
        }
        _ => {
            return Err(Unsupported(format!(
                "`{}` is evaluated by the interpreter",
                p.name()
            )));
        }
    }
    Ok(true)
}

/// The sum of no terms of `ty` (`sum`'s zero: 0.0, 0, empty arrays).
fn sum_zero(e: &mut FnEmitter<'_>, ty: &Type, sp: &str) -> String {
    match ty {
        Type::Real => "0.0".into(),
        Type::Array(t) => {
            let size = e.types().elem_size(t);
            format!("fx_arr_new(0, {size}, \"sum\", {sp})")
        }
        Type::Tuple(ts) => {
            let c = e.types().c(ty);
            let parts: Vec<String> = ts.iter().map(|t| sum_zero(e, t, sp)).collect();
            format!("(({c}){{{}}})", parts.join(", "))
        }
        _ => "0".into(),
    }
}
