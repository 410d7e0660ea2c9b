//! Differential testing: random well-typed, smooth programs from `tests/generator`
//! checked by oracles that need no expected output (derivatives against finite
//! differences, the transpose identity, modes against each other, printed stages
//! against the original), plus every program in `tests/regressions/*.flx` through the
//! same oracles.
//!
//! `FLUXION_GEN_CASES=<n>` and `FLUXION_GEN_SEED=<start>` choose the seeds for long
//! runs, `FLUXION_GEN_DEPTH` and `FLUXION_GEN_FUEL` the size of the programs, and
//! `FLUXION_GEN_SHOW=1` prints every program (README.md, "Differential testing"). A failure is shrunk (the same seed with
//! smaller budgets), written to `target/generated-failures/` and reported by path.

mod generator;

use std::path::{Path, PathBuf};

use fluxion_driver::gradcheck::{
    check_gradient, check_transpose, eval_reals, parse_reals, runnable_stage, skeleton,
};
use fluxion_driver::{AdMode, FwdMode, OptLevel, RunOptions, compile, with_big_stack};
use generator::{Config, generate};

/// The algorithms behind `grad`, `vjp`, ... that are checked: every reverse mode that
/// is built (`AdMode::implemented`), the reference (`fwd`, JVPs by dual numbers) first,
/// which the others must agree with (to `MODE_TOLERANCE`), and `fwd` again with its
/// JVPs by forward CHAD (`--fwd chad`). A mode joins by being built.
fn ad_modes() -> Vec<RunOptions> {
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
fn pending_modes() -> Vec<AdMode> {
    AdMode::ALL
        .iter()
        .copied()
        .filter(|m| !m.is_implemented())
        .collect()
}

/// Expressions that must agree (to `MODE_TOLERANCE`) for every generated `f`, at the
/// point `{x}` along the direction `{v}`: (name, expression, reference).
const AGREEMENTS: &[(&str, &str, &str)] = &[
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
        "jet(f, {x}, [{v}, [0.7, -1.1, 0.4]], 2).1[3]",
        "diff(|s| diff(|t| f(vadd({x}, vadd(scale(s, {v}), scale(t, [0.7, -1.1, 0.4])))), 0.0), 0.0)",
    ),
];

/// Agreements waiting for a feature; asserted to fail with "not implemented" until
/// then. Move an entry to `AGREEMENTS` when the feature lands.
const PENDING_AGREEMENTS: &[(&str, &str, &str)] = &[];

/// Relative agreement required between modes and between the sides of an agreement.
const MODE_TOLERANCE: f64 = 1e-9;

/// Seeds run by `cargo test`: this file takes about 50 s in a debug build on this
/// 2-core machine shared with another build (measured: 52 s, 45 s of CPU; about
/// 55 ms per program).
const DEFAULT_CASES: u64 = 800;

/// The vector-valued variant of `f` for the transpose identity.
const FV: &str = "\nfn fv(x: [Real]) -> [Real] { [f(x), f(reverse(x)) * 0.5] }\n";
const U: [f64; generator::X_LEN] = [0.7, -1.1, 0.4];
const W: [f64; 2] = [1.3, -0.6];
const V: [f64; generator::X_LEN] = [0.3, 0.9, -0.5];

/// A failed oracle: its name (stable, used by `KNOWN_FAILURES`) and what happened.
#[derive(Debug)]
struct Failure {
    oracle: String,
    message: String,
}

fn fail(oracle: impl Into<String>, message: impl Into<String>) -> Failure {
    Failure {
        oracle: oracle.into(),
        message: message.into(),
    }
}

fn literal(xs: &[f64]) -> String {
    let parts: Vec<String> = xs.iter().map(|x| format!("{x:?}")).collect();
    format!("[{}]", parts.join(", "))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= MODE_TOLERANCE * (1.0 + a.abs().max(b.abs()))
}

fn all_close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(p, q)| close(*p, *q))
}

/// Runs every oracle on `src` (which defines `f: [Real] -> Real`) at `x`; returns the
/// gradient (of the reference mode).
fn check(src: &str, x: &[f64]) -> Result<Vec<f64>, Failure> {
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
    for mode in ad_modes() {
        check_gradient(src, "f", x, mode).map_err(|m| fail(format!("gradient {mode:?}"), m))?;
        let with_fv = format!("{src}{FV}");
        check_transpose(&with_fv, "fv", x, &U, &W, mode)
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
    // 3. Agreements between operators.
    for (name, expr, reference) in AGREEMENTS {
        agreement(src, x, expr, reference).map_err(|m| fail(format!("agreement: {name}"), m))?;
    }
    // 3b. Where `f` applies no operator itself: `sparsity` of the vector variant holds
    //     every nonzero of its Jacobian, and `sparse_jacobian` is that Jacobian at the
    //     pattern.
    if !applies_operator(src) {
        sparsity_oracle(src, x).map_err(|m| fail("sparsity", m))?;
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
    // The printed stage is source wherever its language allows (LANGUAGE.md §6): a
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
fn applies_operator(src: &str) -> bool {
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

/// `sparse_jacobian(fv, x)` against `jacobian(fv, x)` (2 rows).
fn sparsity_oracle(src: &str, x: &[f64]) -> Result<(), String> {
    let xs = literal(x);
    let with_fv = format!("{src}{FV}");
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
                Some(t) if !close(values[*t], want) => {
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

fn bits_equal(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits())
}

/// Whether printed Core calls an internal primitive: `%` directly followed by a
/// letter (the remainder operator is followed by a space).
fn uses_internal_primitive(printed: &str) -> bool {
    printed
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == b'%' && w[1].is_ascii_lowercase())
}

fn substitute(template: &str, x: &[f64]) -> String {
    template
        .replace("{x}", &literal(x))
        .replace("{v}", &literal(&V))
}

fn agreement(src: &str, x: &[f64], expr: &str, reference: &str) -> Result<(), String> {
    let (expr, reference) = (substitute(expr, x), substitute(reference, x));
    // Both sides have the same shape: one evaluation of the pair.
    let both = eval_reals(src, &format!("({expr}, {reference})"), AdMode::Fwd)?;
    let (a, b) = both.split_at(both.len() / 2);
    if !all_close(a, b) {
        return Err(format!("{expr} = {a:?}, but {reference} = {b:?}"));
    }
    Ok(())
}

// ----- shrinking and reporting -----

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

/// The smallest program (the same seed with smaller budgets) that fails the same oracle.
fn shrink(seed: u64, config: Config, failure: Failure) -> (Config, String, Vec<f64>, Failure) {
    let g = generate(seed, config);
    let mut best = (config, g.source, g.x, failure);
    for smaller in config.smaller() {
        let g = generate(seed, smaller);
        if g.source.len() >= best.1.len() {
            continue;
        }
        if let Err(f) = check(&g.source, &g.x)
            && f.oracle == best.3.oracle
        {
            best = (smaller, g.source, g.x, f);
        }
    }
    best
}

/// The text of a failure report, in the format `tests/regressions/*.flx` use.
fn report_text(oracle: &str, origin: &str, x: &[f64], message: &str, source: &str) -> String {
    let mut text = format!("// oracle: {oracle}\n// {origin}\n// x: {}\n", literal(x));
    for line in message.lines().take(12) {
        text.push_str("// | ");
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(source);
    text
}

/// Shrinks and writes a failure; returns the report's path.
fn report(seed: u64, config: Config, failure: Failure) -> PathBuf {
    let (small, source, x, failure) = shrink(seed, config, failure);
    let dir = target_dir().join("generated-failures");
    std::fs::create_dir_all(&dir).expect("creating target/generated-failures");
    let path = dir.join(format!("seed-{seed}.flx"));
    let origin = format!(
        "generated: seed {seed}, depth {}, fuel {} (shrunk from depth {}, fuel {})",
        small.depth, small.fuel, config.depth, config.fuel
    );
    let text = report_text(&failure.oracle, &origin, &x, &failure.message, &source);
    std::fs::write(&path, text).expect("writing a failure report");
    path
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {v:?}")),
        Err(_) => default,
    }
}

/// Constructs every CI run must have exercised at least once (a check on the
/// generator itself: a regression in it must not silently stop testing something).
const CONSTRUCTS: &[&str] = &[
    "map(",
    "map2(",
    "fold(",
    "scan(",
    "build(",
    "sumbuild(",
    "sum(",
    "iterate(",
    "zip(",
    "reverse(",
    "concat(",
    "slice(",
    "replicate(",
    "range(",
    "length(",
    "to_real(",
    "let ",
    "if ",
    "match ",
    "enum E",
    "enum Lst",
    "Cons(",
    "lst_fold(",
    "lst_from(",
    "lst_map(",
    "fn h",
    "fn r",
    "|",
    "diff(",
    "grad(",
    "value_and_grad(",
    "jvp(",
    "vjp(",
    "hessian(",
    "jacobian(",
    "true",
    "&&",
    "% 7",
    "softmax(",
    "logsumexp(",
    "deep(",
    "maximum(",
    "abs(",
];

#[test]
fn generated_programs_pass_every_oracle() {
    let start = env_u64("FLUXION_GEN_SEED", 0);
    let cases = env_u64("FLUXION_GEN_CASES", DEFAULT_CASES);
    // Bigger (or smaller) programs for long runs.
    let config = Config {
        depth: env_u64("FLUXION_GEN_DEPTH", Config::DEFAULT.depth.into()) as u32,
        fuel: env_u64("FLUXION_GEN_FUEL", Config::DEFAULT.fuel as u64) as i64,
    };
    let mut seen = vec![0usize; CONSTRUCTS.len()];
    let mut reports = Vec::new();
    let mut total_len = 0;
    let mut nonzero = 0;
    let show = std::env::var_os("FLUXION_GEN_SHOW").is_some();
    for seed in start..start + cases {
        let g = generate(seed, config);
        total_len += g.source.len();
        for (k, c) in CONSTRUCTS.iter().enumerate() {
            seen[k] += usize::from(g.source.contains(c));
        }
        let result = check(&g.source, &g.x);
        if show {
            eprintln!("// seed {seed}, x = {:?}: {result:?}\n{}", g.x, g.source);
        }
        match result {
            Ok(grad) => nonzero += usize::from(grad.iter().any(|d| *d != 0.0)),
            Err(f) => {
                eprintln!("seed {seed}: {} failed; shrinking", f.oracle);
                let oracle = f.oracle.clone();
                let path = report(seed, config, f);
                reports.push(format!("seed {seed} ({oracle}): {}", path.display()));
            }
        }
    }
    eprintln!(
        "{cases} programs from seed {start}, {} bytes on average, {nonzero} with a nonzero \
         gradient; programs using each construct:",
        total_len / cases.max(1) as usize
    );
    for (c, n) in CONSTRUCTS.iter().zip(&seen) {
        eprintln!("  {c:<18} {n}");
    }
    assert!(
        reports.is_empty(),
        "{} generated program(s) failed; shrunk reports:\n{}",
        reports.len(),
        reports.join("\n")
    );
    if cases >= DEFAULT_CASES {
        let missing: Vec<&str> = CONSTRUCTS
            .iter()
            .zip(&seen)
            .filter(|(_, n)| **n == 0)
            .map(|(c, _)| *c)
            .collect();
        assert!(
            missing.is_empty(),
            "constructs never generated: {missing:?}"
        );
        // Most programs must actually depend on x, or the derivative oracles test little.
        assert!(
            nonzero * 10 >= cases as usize * 7,
            "only {nonzero} of {cases} programs have a nonzero gradient"
        );
    }
}

#[test]
fn generation_is_deterministic_and_bounded() {
    for seed in 0..50 {
        let a = generate(seed, Config::DEFAULT);
        let b = generate(seed, Config::DEFAULT);
        assert_eq!(a.source, b.source);
        assert_eq!(a.x, b.x);
        assert!(
            a.source.len() < 40_000,
            "seed {seed}: {} bytes",
            a.source.len()
        );
    }
    // Smaller budgets give smaller programs (on average: a budget changes the choices).
    let size = |c: Config| -> usize { (0..50).map(|s| generate(s, c).source.len()).sum() };
    assert!(size(Config { depth: 2, fuel: 8 }) < size(Config::DEFAULT) / 2);
}

// ----- regressions -----

/// Regression files that still fail: (file, the oracle it fails, a piece of the
/// failure message, why). The test asserts they still fail that way, so that a change
/// is noticed (then update or remove the entry).
const KNOWN_FAILURES: &[(&str, &str, &str, &str)] = &[(
    "pullback_cotangent_constructor_mismatch.flx",
    "run",
    "does not have the shape of the function's result: another constructor",
    "the program is wrong (a cotangent with another constructor than the result's); the \
     error must say so (it used to be an index error inside the pullback)",
)];

fn regression_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "flx"))
        .collect();
    files.sort();
    files
}

/// The point in a `// x: [..]` header line (default: a fixed point). `f` takes
/// `X_LEN` reals (the transpose oracle's directions have that length).
fn point_of(src: &str) -> Vec<f64> {
    src.lines()
        .find_map(|l| l.strip_prefix("// x:"))
        .map(|l| fluxion_driver::gradcheck::parse_reals(l.trim()))
        .unwrap_or_else(|| vec![0.3, -0.7, 1.1])
}

#[test]
fn regressions_pass_every_oracle_or_fail_as_known() {
    let files = regression_files();
    assert!(!files.is_empty(), "tests/regressions is empty");
    let mut problems = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_str().unwrap();
        let src = std::fs::read_to_string(path).unwrap();
        let x = point_of(&src);
        assert_eq!(
            x.len(),
            generator::X_LEN,
            "{name}: `// x:` needs {} reals",
            generator::X_LEN
        );
        let result = check(&src, &x).map(|_| ());
        match (
            KNOWN_FAILURES.iter().find(|k| k.0 == name),
            result,
        ) {
            (None, Ok(())) => {}
            (None, Err(f)) => problems.push(format!("{name}: {}: {}", f.oracle, f.message)),
            (Some((_, oracle, text, _)), Err(f))
                if f.oracle == *oracle && f.message.contains(text) => {}
            (Some((_, oracle, text, _)), Err(f)) => problems.push(format!(
                "{name}: known to fail {oracle} with \"{text}\", but now fails {}: {}",
                f.oracle, f.message
            )),
            (Some((_, oracle, _, bug)), Ok(())) => problems.push(format!(
                "{name}: known to fail {oracle} ({bug}) but passes now: remove it from KNOWN_FAILURES"
            )),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn pending_features_are_still_unimplemented() {
    let src = "fn f(x: [Real]) -> Real { x[0] * sin(x[1]) + x[2] }";
    let x = [0.5, 1.0, -0.5];
    for mode in pending_modes() {
        let err = eval_reals(src, &format!("grad(f, {})", literal(&x)), mode)
            .expect_err("a mode that is not built runs");
        assert!(err.contains("not implemented"), "{mode:?}: {err}");
    }
    for (name, expr, reference) in PENDING_AGREEMENTS {
        let err = agreement(src, &x, expr, reference)
            .expect_err("a pending agreement now holds: move it to AGREEMENTS");
        assert!(err.contains("not implemented"), "{name}: {err}");
    }
}

#[test]
fn a_wrong_derivative_is_caught_and_reported() {
    // The oracles are not vacuous: `floor` has zero derivative by the contract, but
    // a step of the staircase lies within the finite-difference stencil at 0.5.
    let src = "fn f(x: [Real]) -> Real { x[0] * x[1] + sin(x[2]) }";
    let x = [0.5, 1.0, -0.5];
    assert!(check(src, &x).is_ok_and(|g| g.len() == 3));
    let bad = "fn f(x: [Real]) -> Real { x[0] * x[1] + sin(x[2]) + floor(x[0] * 1000.0) / 1000.0 }";
    let f = check(bad, &x).expect_err("a function with a zero-derivative staircase");
    assert!(f.oracle.starts_with("gradient"), "{f:?}");
    let text = report_text(&f.oracle, "hand-written", &x, &f.message, bad);
    assert!(text.contains("// x: [0.5, 1.0, -0.5]"));
    assert_eq!(point_of(&text), x);
}
