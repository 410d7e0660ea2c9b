//! The oracles every program of the tests is checked by — generated ones
//! (`generated.rs`) and the corpus (`corpus.rs`) alike: they need no expected output.
//! For `f: [Real] -> Real` at a point `x` (any length): the gradient in every AD mode
//! against central finite differences and against the reference mode, the transpose
//! identity, `value_and_grad` against the value, the optimiser changing nothing,
//! agreements between operators (`jvp`, nested `diff`, `hessian`, `taylor`, `jet`),
//! `sparsity`/`sparse_jacobian` against `jacobian` (and `sparsity` against CHAD over
//! the Boolean semiring), and the printed Core and forward
//! stage re-parsing to the same values. A new mode joins in [`ad_modes`], a new
//! operator with a line of [`AGREEMENTS`].

#[path = "../common/chad_deps.rs"]
mod chad_deps;

use fluxion_driver::gradcheck::{
    check_transpose, compare_gradient, eval_reals, fd_gradient, parse_reals, runnable_stage,
    skeleton,
};
use fluxion_driver::{AdMode, FwdMode, OptLevel, RunOptions, compile, with_big_stack};

/// The time each oracle has taken in this process, by name (`generated.rs` prints it,
/// so the costly oracle is known when the suite grows slow).
static TIMES: std::sync::Mutex<Vec<(String, std::time::Duration)>> =
    std::sync::Mutex::new(Vec::new());

/// Adds the time since `start` to oracle `name`'s total.
fn charge(name: &str, start: std::time::Instant) {
    let mut times = TIMES.lock().unwrap_or_else(|e| e.into_inner());
    let spent = start.elapsed();
    match times.iter_mut().find(|(n, _)| n == name) {
        Some((_, t)) => *t += spent,
        None => times.push((name.to_string(), spent)),
    }
}

/// Each oracle's total time so far, the costliest first.
pub fn oracle_times() -> Vec<(String, std::time::Duration)> {
    let mut times = TIMES.lock().unwrap_or_else(|e| e.into_inner()).clone();
    times.sort_by_key(|t| std::cmp::Reverse(t.1));
    times
}

/// The algorithms behind `grad`, `vjp`, ... that are checked: every reverse mode that
/// is built (`AdMode::implemented`), the reference (`fwd`, JVPs by dual numbers) first,
/// which the others must agree with (to `MODE_TOLERANCE`), and `fwd` again with its
/// JVPs by forward CHAD (`--fwd chad`). A mode joins by being built.
pub fn ad_modes() -> Vec<RunOptions> {
    let mut modes: Vec<RunOptions> = AdMode::implemented().into_iter().map(Into::into).collect();
    modes.push(RunOptions {
        mode: AdMode::Fwd,
        fwd: FwdMode::Chad,
        opt: fluxion_driver::OptLevel::On,
        memory_limit: None,
        backend: fluxion_driver::Backend::Interp,
    });
    modes
}

/// Modes not built yet: `pending_features_are_still_unimplemented` asserts they still
/// say so.
pub fn pending_modes() -> Vec<AdMode> {
    AdMode::ALL
        .iter()
        .copied()
        .filter(|m| !m.is_implemented())
        .collect()
}

/// Expressions that must agree (to `MODE_TOLERANCE`) for every generated `f`, at the
/// point `{x}` along the directions `{v}` and `{u}`: (name, expression, reference).
pub const AGREEMENTS: &[(&str, &str, &str)] = &[
    (
        "jvp = gradient along v",
        "jvp(f, {x}, {v}).1",
        "dot(grad(f, {x}), {v})",
    ),
    (
        "second derivative along v: nested diff = Hessian quadratic form",
        "diff(|s| diff(|t| f(vadd({x}, scale(t, {v}))), s), 0.0)",
        "dot({v}, matvec(hessian(f, {x}), {v}))",
    ),
    (
        "taylor order 1 = jvp",
        "taylor(f, {x}, {v}, 1).1[0]",
        "jvp(f, {x}, {v}).1",
    ),
    (
        "taylor order 2 = half the nested forward second derivative",
        "taylor(f, {x}, {v}, 2).1[1]",
        "0.5 * diff(|s| diff(|t| f(vadd({x}, scale(t, {v}))), s), 0.0)",
    ),
    (
        "jet of two directions: the mixed partial (1,1) = nested diff along both",
        "jet(f, {x}, [{v}, {u}], 2).1[3]",
        "diff(|s| diff(|t| f(vadd({x}, vadd(scale(s, {v}), scale(t, {u})))), 0.0), 0.0)",
    ),
];

/// Agreements waiting for a feature; asserted to fail with "not implemented" until
/// then. Move an entry to `AGREEMENTS` when the feature lands.
pub const PENDING_AGREEMENTS: &[(&str, &str, &str)] = &[];

/// Relative agreement required between modes and between the sides of an agreement.
pub const MODE_TOLERANCE: f64 = 1e-9;

/// The vector-valued variant of `f` for the transpose identity.
pub const FV: &str = "\nfn fv(x: [Real]) -> [Real] { [f(x), f(reverse(x)) * 0.5] }\n";
/// Directions cycled to the point's length (`direction`).
pub const U: [f64; 3] = [0.7, -1.1, 0.4];
pub const W: [f64; 2] = [1.3, -0.6];
pub const V: [f64; 3] = [0.3, 0.9, -0.5];

/// `pattern` repeated to length `n`: a direction for a point of `n` reals.
pub fn direction(pattern: &[f64], n: usize) -> Vec<f64> {
    pattern.iter().copied().cycle().take(n).collect()
}

/// A failed oracle: its name (stable, used by `KNOWN_FAILURES`) and what happened.
#[derive(Debug)]
pub struct Failure {
    pub oracle: String,
    pub message: String,
}

pub fn fail(oracle: impl Into<String>, message: impl Into<String>) -> Failure {
    Failure {
        oracle: oracle.into(),
        message: message.into(),
    }
}

pub fn literal(xs: &[f64]) -> String {
    let parts: Vec<String> = xs.iter().map(|x| format!("{x:?}")).collect();
    format!("[{}]", parts.join(", "))
}

pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= MODE_TOLERANCE * (1.0 + a.abs().max(b.abs()))
}

pub fn all_close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(p, q)| close(*p, *q))
}

/// Runs every oracle on `src` (which defines `f: [Real] -> Real`) at `x`; returns the
/// gradient (of the reference mode).
pub fn check(src: &str, x: &[f64]) -> Result<Vec<f64>, Failure> {
    let xs = literal(x);
    // 1. It type-checks and runs, to a finite value.
    let (core, fwd) = with_big_stack(|| {
        let program = compile("gen.flx", src).map_err(|f| fail("compile", f.render()))?;
        let core = program
            .show("core", None)
            .map_err(|m| fail("show core", m))?;
        let fwd = program.show("fwd", None).map_err(|m| fail("show fwd", m))?;
        Ok::<_, Failure>((core, fwd))
    })?;
    let y = eval_reals(src, &format!("f({xs})"), AdMode::Fwd).map_err(|m| fail("run", m))?;
    if y.len() != 1 || !y[0].is_finite() {
        return Err(fail("run", format!("f({xs}) = {y:?}, not a finite real")));
    }
    // 2. Per mode: gradient against finite differences, the transpose identity,
    //    value_and_grad against the value; every mode against the first.
    let mut reference: Option<(RunOptions, Vec<f64>)> = None;
    let start = std::time::Instant::now();
    let fd = fd_gradient(src, "f", x).map_err(|m| fail("finite differences", m))?;
    for mode in ad_modes() {
        let with_fv = format!("{src}{FV}");
        check_transpose(&with_fv, "fv", x, &direction(&U, x.len()), &W, mode)
            .map_err(|m| fail(format!("transpose {mode:?}"), m))?;
        let both = eval_reals(
            src,
            &format!("(value_and_grad(f, {xs}), grad(f, {xs}))"),
            mode,
        )
        .map_err(|m| fail(format!("value_and_grad {mode:?}"), m))?;
        if both.len() != 2 * x.len() + 1 {
            return Err(fail(
                format!("value_and_grad {mode:?}"),
                format!("(value_and_grad(f, {xs}), grad(f, {xs})) = {both:?}: wrong length"),
            ));
        }
        let (vg, grad) = both.split_at(x.len() + 1);
        let grad = grad.to_vec();
        compare_gradient("f", x, &grad, &fd).map_err(|m| fail(format!("gradient {mode:?}"), m))?;
        // The value is `f`'s, bit for bit — unless `f` applies an operator itself: the
        // inner operator then runs inside the outer one's translation, where a reverse
        // mode may compute it another way (reverse-over-reverse by forward mode), so
        // the two agree to rounding.
        let nested = applies_operator(src);
        let same_value = match vg.first() {
            Some(v) if nested => all_close(&[*v], &y),
            Some(v) => v.to_bits() == y[0].to_bits(),
            None => false,
        };
        if !same_value || !all_close(&vg[1..], &grad) {
            return Err(fail(
                format!("value_and_grad {mode:?}"),
                format!("value_and_grad(f, {xs}) = {vg:?}, but f = {y:?} and grad = {grad:?}"),
            ));
        }
        match &reference {
            None => reference = Some((mode, grad)),
            Some((rmode, rgrad)) => {
                if !all_close(&grad, rgrad) {
                    return Err(fail(
                        format!("modes {mode:?} vs {rmode:?}"),
                        format!("grad(f, {xs}): {mode:?} {grad:?}, {rmode:?} {rgrad:?}"),
                    ));
                }
            }
        }
    }
    charge("gradients, transposes, modes", start);
    let start = std::time::Instant::now();
    // 2b. The optimiser changes nothing: value, gradient, Hessian and a JVP with
    //     `--opt 1` and `--opt 0` have the same shape and the same reals to 1e-12
    //     relative (its rules are exact identities of the primal, but a derivative of
    //     optimised code adds the same contributions in another order: two uses of
    //     one merged expression get their cotangents summed before the partial is
    //     applied, not after), under CHAD (with forward CHAD) and delta.
    for mode in [AdMode::Chad, AdMode::Delta] {
        // The Hessian (forward over reverse, over optimised code) once: under CHAD.
        let expr = if mode == AdMode::Chad {
            format!("(f({xs}), grad(f, {xs}), hessian(f, {xs}), jvp(f, {xs}, {xs}))")
        } else {
            format!("(f({xs}), grad(f, {xs}), jvp(f, {xs}, {xs}))")
        };
        let with = |opt| {
            let options = RunOptions {
                mode,
                fwd: if mode == AdMode::Chad {
                    FwdMode::Chad
                } else {
                    FwdMode::Dual
                },
                opt,
                memory_limit: None,
                backend: fluxion_driver::Backend::Interp,
            };
            fluxion_driver::gradcheck::eval_literal(src, &expr, options)
        };
        let (on, off) = (with(OptLevel::On), with(OptLevel::Off));
        let same = match (&on, &off) {
            (Ok(a), Ok(b)) => {
                let (ra, rb) = (parse_reals(a), parse_reals(b));
                skeleton(a) == skeleton(b)
                    && ra.len() == rb.len()
                    && ra.iter().zip(&rb).all(|(p, q)| {
                        p.to_bits() == q.to_bits() || (p - q).abs() <= 1e-12 * (1.0 + q.abs())
                    })
            }
            (a, b) => a == b,
        };
        if !same {
            return Err(fail(
                format!("optimiser {mode:?}"),
                format!("{expr}: --opt 1 {on:?}, --opt 0 {off:?}"),
            ));
        }
    }
    charge("optimiser", start);
    // 3. Agreements between operators.
    let start = std::time::Instant::now();
    agreements(src, x).map_err(|(name, m)| fail(format!("agreement: {name}"), m))?;
    charge("agreements", start);
    // 3b. Where `f` applies no operator itself: `sparsity` of the vector variant holds
    //     every nonzero of its Jacobian, and `sparse_jacobian` is that Jacobian at the
    //     pattern.
    if !applies_operator(src) {
        let start = std::time::Instant::now();
        sparsity_oracle(src, x).map_err(|m| fail("sparsity", m))?;
        charge("sparsity", start);
    }
    // 4. The printed Core re-parses, type-checks and computes the same value and
    //    gradient; the printed forward stage re-parses, type-checks, and its `f_fwd`
    //    on (x, e_i) gives the value and the i-th partial derivative.
    let grad = reference.map(|r| r.1).unwrap_or_default();
    let expr = format!("(f({xs}), grad(f, {xs}))");
    let got = eval_reals(&core, &expr, AdMode::Fwd)
        .map_err(|m| fail("core round trip", format!("{m}\nprinted Core:\n{core}")))?;
    let expected: Vec<f64> = y.iter().chain(&grad).copied().collect();
    if !bits_equal(&got, &expected) {
        return Err(fail(
            "core round trip",
            format!("{expr}: {expected:?}, printed Core: {got:?}\nprinted Core:\n{core}"),
        ));
    }
    // The printed stage is source wherever its language allows (docs/language.md §6): a
    // stage that uses an internal primitive (`%name`, never nameable in programs)
    // cannot re-parse or run as source; everything else must. `%lscale`, in every
    // tangent, is spelt as a source function of the same values where the stage
    // differentiates nothing further.
    let Some(fwd) = runnable_stage(&fwd) else {
        return Ok(grad);
    };
    if uses_internal_primitive(&fwd) {
        return Ok(grad);
    }
    with_big_stack(|| compile("fwd.flx", &fwd).map(|_| ()))
        .map_err(|f| fail("fwd reparses", format!("{}\nprinted:\n{fwd}", f.render())))?;
    // One evaluation for all the coordinates: (f_fwd(zip(x, e_0)), f_fwd(zip(x, e_1)), ...).
    let calls: Vec<String> = (0..x.len())
        .map(|i| {
            let e: Vec<f64> = (0..x.len()).map(|j| f64::from(u8::from(i == j))).collect();
            format!("f_fwd(zip({xs}, {}))", literal(&e))
        })
        .collect();
    let expr = format!("({})", calls.join(", "));
    let got = eval_reals(&fwd, &expr, AdMode::Fwd)
        .map_err(|m| fail("fwd runs", format!("{expr}: {m}\nprinted:\n{fwd}")))?;
    let expected: Vec<f64> = grad.iter().flat_map(|d| [y[0], *d]).collect();
    if !bits_equal(&got, &expected) {
        return Err(fail(
            "fwd runs",
            format!("{expr} = {got:?}, expected (f, df/dx_i) = {expected:?}\nprinted:\n{fwd}"),
        ));
    }
    Ok(grad)
}

/// Whether a generated program applies a differential operator itself.
pub fn applies_operator(src: &str) -> bool {
    [
        "diff(",
        "grad(",
        "jvp(",
        "vjp(",
        "hessian(",
        "jacobian(",
        "taylor(",
        "jet(",
    ]
    .iter()
    .any(|op| src.contains(op))
}

/// `sparse_jacobian(fv, x)` against `jacobian(fv, x)` (2 rows), and `sparsity(fv, x)`
/// against the patterns of the two instances alone: the forward dependency layer, and
/// CHAD over the Boolean semiring ([CHAD] §11.3: reverse CHAD's rules with another
/// ground interpretation).
pub fn sparsity_oracle(src: &str, x: &[f64]) -> Result<(), String> {
    let xs = literal(x);
    let with_fv = format!("{src}{FV}");
    let operator = fluxion_driver::gradcheck::eval_literal(
        &with_fv,
        &format!("sparsity(fv, {xs})"),
        AdMode::Delta,
    )?;
    let (by_chad, _) =
        chad_deps::pattern_by_chad(&with_fv, "fv", &xs, fluxion_driver::Backend::Interp)?;
    let (by_forward, _) =
        chad_deps::pattern_by_forward(&with_fv, "fv", &xs, fluxion_driver::Backend::Interp)?;
    if by_chad != operator || by_forward != operator {
        return Err(format!(
            "sparsity(fv, {xs}) = {operator}, but CHAD over the Boolean semiring gives \
             {by_chad} and the forward layer {by_forward}"
        ));
    }
    let expr = format!("(sparse_jacobian(fv, {xs}), jacobian(fv, {xs}))");
    // Every number of the printed result, Ints included, in order.
    let text = fluxion_driver::gradcheck::eval_literal(&with_fv, &expr, AdMode::Delta)?;
    let flat: Vec<f64> = text
        .split(|c: char| "[](), ".contains(c))
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<f64>()
                .map_err(|_| format!("{expr} = {text}: not a number: {t}"))
        })
        .collect::<Result<_, _>>()?;
    let n = x.len();
    let nnz = flat[2] as usize;
    let (offsets, rest) = flat.split_at(3);
    let (cols, rest) = rest.split_at(nnz);
    let (values, jac) = rest.split_at(nnz);
    for i in 0..2 {
        let row: Vec<usize> = (offsets[i] as usize..offsets[i + 1] as usize).collect();
        for j in 0..n {
            let want = jac[i * n + j];
            match row.iter().find(|t| cols[**t] as usize == j) {
                // Both NaN agree (`fv`'s second row can leave a restricted domain).
                Some(t) if !(close(values[*t], want) || values[*t].is_nan() && want.is_nan()) => {
                    return Err(format!(
                        "{expr}: ({i}, {j}) = {}, jacobian {want}",
                        values[*t]
                    ));
                }
                None if want != 0.0 => {
                    return Err(format!("{expr}: ({i}, {j}) = {want} is not in the pattern"));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

pub fn bits_equal(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits())
}

/// Whether printed Core calls an internal primitive: `%` directly followed by a
/// letter (the remainder operator is followed by a space).
pub fn uses_internal_primitive(printed: &str) -> bool {
    printed
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == b'%' && w[1].is_ascii_lowercase())
}

pub fn substitute(template: &str, x: &[f64]) -> String {
    template
        .replace("{x}", &literal(x))
        .replace("{v}", &literal(&direction(&V, x.len())))
        .replace("{u}", &literal(&direction(&U, x.len())))
}

/// Every line of [`AGREEMENTS`] (each side a `Real`) in one run; where that run
/// fails, line by line, so the failure names its agreement.
pub fn agreements(src: &str, x: &[f64]) -> Result<(), (&'static str, String)> {
    let sides: Vec<String> = AGREEMENTS
        .iter()
        .flat_map(|(_, e, r)| [substitute(e, x), substitute(r, x)])
        .collect();
    match eval_reals(src, &format!("({})", sides.join(", ")), AdMode::Fwd) {
        Ok(all) if all.len() == sides.len() => {
            for (k, (name, _, _)) in AGREEMENTS.iter().enumerate() {
                let (a, b) = (all[2 * k], all[2 * k + 1]);
                if !close(a, b) {
                    return Err((
                        name,
                        format!("{} = {a:?}, but {} = {b:?}", sides[2 * k], sides[2 * k + 1]),
                    ));
                }
            }
            Ok(())
        }
        _ => {
            for (name, expr, reference) in AGREEMENTS {
                agreement(src, x, expr, reference).map_err(|m| (*name, m))?;
            }
            Ok(())
        }
    }
}

pub fn agreement(src: &str, x: &[f64], expr: &str, reference: &str) -> Result<(), String> {
    let (expr, reference) = (substitute(expr, x), substitute(reference, x));
    // Both sides have the same shape: one evaluation of the pair.
    let both = eval_reals(src, &format!("({expr}, {reference})"), AdMode::Fwd)?;
    let (a, b) = both.split_at(both.len() / 2);
    if !all_close(a, b) {
        return Err(format!("{expr} = {a:?}, but {reference} = {b:?}"));
    }
    Ok(())
}
