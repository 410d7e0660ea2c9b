//! The corpus of test programs (`tests/corpus/`) through one set of oracles: a new
//! program is a new file, a new mode a line in `oracles::ad_modes`.
//! - `programs/` and `regressions/`: each defines `f: [Real] -> Real` and names its
//!   point (`// x: [..]`); every oracle of `oracles/` (the generated programs' oracles:
//!   every mode against finite differences and each other, the transpose identity,
//!   the optimiser, agreements between operators, printed stages), and the native
//!   backend giving the interpreter's value, gradient and JVP bit for bit. A
//!   regression fails as [`KNOWN_FAILURES`] says, or passes.
//! - `vector/`: `f: [Real] -> [Real]`; its Jacobian natively is the interpreter's.
//!   (The forward and reverse suites, `common/*_suite.rs`, run `programs/` and
//!   `vector/` through their own checks too.)
//! - `higher_order/`: `main()` programs written to break the one route; natively each
//!   gives the interpreter's value or error.

#[path = "common/programs.rs"]
mod programs;

#[allow(dead_code)]
mod oracles;

use fluxion_driver::{AdMode, Backend, FwdMode, RunOptions, compile_with_expr, with_big_stack};
use oracles::{V, check, direction, literal};

/// Regressions that still fail, with the oracle and the text of the failure: (file,
/// oracle, text, what is wrong). The test fails when one passes, so the list shrinks.
const KNOWN_FAILURES: &[(&str, &str, &str, &str)] = &[(
    "pullback_cotangent_constructor_mismatch.flx",
    "run",
    "does not have the shape of the function's result: another constructor",
    "the program is wrong (a cotangent with another constructor than the result's); the \
     error must say so (it used to be an index error inside the pullback)",
)];

/// Each reverse mode with one of the forward algorithms (`jvp` follows `--fwd`).
const SETTINGS: [(AdMode, FwdMode); 2] = [
    (AdMode::Chad, FwdMode::Chad),
    (AdMode::Delta, FwdMode::Dual),
];

/// `expr` on `src` with `setting` and `backend`: the printed value or error, and the
/// notes of the run (a hand-over to the interpreter leaves one).
fn run(
    src: &str,
    expr: Option<&str>,
    setting: (AdMode, FwdMode),
    backend: Backend,
) -> (Result<String, String>, Vec<String>) {
    let (src, expr) = (src.to_string(), expr.map(str::to_string));
    let options = RunOptions {
        mode: setting.0,
        fwd: setting.1,
        backend,
        ..RunOptions::default()
    };
    with_big_stack(move || {
        let (program, entry) = match &expr {
            Some(e) => (
                compile_with_expr("corpus.flx", &src, Some(e)),
                fluxion_driver::core_entry_name(),
            ),
            None => (compile_with_expr("corpus.flx", &src, None), "main"),
        };
        let program = match program {
            Ok(p) => p,
            Err(f) => return (Err(f.render()), vec![]),
        };
        match program.run_with_options(entry, None, options) {
            Ok(out) => (Ok(out.to_literal()), out.notes.clone()),
            Err(f) => (Err(f.render()), f.notes.clone()),
        }
    })
}

/// `expr` natively is the interpreter's, bit for bit, run natively (no hand-over),
/// under every setting.
fn native_agrees(src: &str, expr: &str) -> Result<(), String> {
    for setting in SETTINGS {
        let (interp, _) = run(src, Some(expr), setting, Backend::Interp);
        let (native, notes) = run(src, Some(expr), setting, Backend::Native);
        let what = format!(
            "--ad {} --fwd {}: {expr}",
            setting.0.name(),
            setting.1.name()
        );
        if let Some(n) = notes.first() {
            return Err(format!("{what}: ran in the interpreter: {n}"));
        }
        if interp != native {
            return Err(format!("{what}: interpreter {interp:?}, native {native:?}"));
        }
    }
    Ok(())
}

#[test]
fn programs_and_regressions_pass_every_oracle() {
    let mut problems = Vec::new();
    let mut count = 0;
    for dir in ["programs", "regressions"] {
        for path in programs::files(dir) {
            count += 1;
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let src = std::fs::read_to_string(&path).unwrap();
            let Some(x) = programs::point_of(&src) else {
                problems.push(format!("{dir}/{name}: no `// x:` line"));
                continue;
            };
            let xs = literal(&x);
            let v = literal(&direction(&V, x.len()));
            let result = check(&src, &x).map(|_| ()).and_then(|()| {
                let expr = format!("(f({xs}), grad(f, {xs}), jvp(f, {xs}, {v}))");
                native_agrees(&src, &expr).map_err(|m| oracles::fail("native", m))
            });
            match (KNOWN_FAILURES.iter().find(|k| k.0 == name), result) {
                (None, Ok(())) => {}
                (None, Err(f)) => {
                    problems.push(format!("{dir}/{name}: {}: {}", f.oracle, f.message))
                }
                (Some((_, oracle, text, _)), Err(f))
                    if f.oracle == *oracle && f.message.contains(text) => {}
                (Some((_, oracle, text, _)), Err(f)) => problems.push(format!(
                    "{name}: known to fail {oracle} with \"{text}\", but now fails {}: {}",
                    f.oracle, f.message
                )),
                (Some((_, oracle, _, bug)), Ok(())) => problems.push(format!(
                    "{name}: known to fail {oracle} ({bug}) but passes now: remove it from \
                     KNOWN_FAILURES"
                )),
            }
        }
    }
    assert!(count >= 30, "only {count} programs");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn vector_programs_jacobians_natively_are_the_interpreters() {
    let mut problems = Vec::new();
    for (name, src, x) in programs::corpus("vector") {
        let xs = literal(&x);
        let expr = format!("(f({xs}), jacobian(f, {xs}))");
        if let Err(m) = native_agrees(&src, &expr) {
            problems.push(format!("{name}: {m}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// The higher-order corpus (`higher_order/`: seventy programs written to break the
/// one route — closures taken from arrays, enums and lists, returned functions,
/// pullbacks captured and stored, operators nested three and four deep, Hessians of
/// closures, error programs): under `--ad delta` (the default) natively, each gives
/// the interpreter's value bit for bit, or its error (both run the Core
/// `Program::prepare` made, nested operators of closures passed in included), and
/// none leaves native code but the documented cases (docs/decisions.md, "Native backend"
/// and, for CHAD, "Differentiation"):
/// a closure that can reach an operator while applying one itself or capturing a
/// pullback (and under CHAD, a program making a pullback). `FLUXION_CORPUS_ALL=1`
/// runs every `--ad`/`--fwd` setting.
#[test]
fn the_higher_order_corpus_runs_natively() {
    let files = programs::files("higher_order");
    assert!(files.len() >= 70, "{} programs", files.len());
    let documented = [
        "p59_vjp_of_closure_returning_closure_result",
        "p61_restart_late",
    ];
    let settings: Vec<(AdMode, FwdMode)> = if std::env::var_os("FLUXION_CORPUS_ALL").is_some() {
        vec![
            (AdMode::Chad, FwdMode::Chad),
            (AdMode::Fwd, FwdMode::Chad),
            (AdMode::Fwd, FwdMode::Dual),
            (AdMode::Delta, FwdMode::Dual),
        ]
    } else {
        vec![(AdMode::Delta, FwdMode::Dual)]
    };
    let mut handed_over = Vec::new();
    for path in &files {
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let src = std::fs::read_to_string(path).expect("readable");
        for &setting in &settings {
            let (interp, _) = run(&src, None, setting, Backend::Interp);
            let (native, notes) = run(&src, None, setting, Backend::Native);
            let what = format!(
                "{name} --ad {} --fwd {}",
                setting.0.name(),
                setting.1.name()
            );
            for n in &notes {
                assert!(
                    !n.contains("a bug") && !n.contains("internal error"),
                    "{what}: {n}"
                );
            }
            // Under CHAD, a program making a pullback (CHAD translates none).
            let pullback = setting.0 == AdMode::Chad && src.contains("vjp(");
            if !notes.is_empty() && !documented.contains(&name) && !pullback {
                handed_over.push(format!("{what}: {}", notes[0]));
            }
            // An error rendered after a hand-over starts with the note.
            let without_notes = |r: &Result<String, String>| {
                r.clone().map_err(|e| {
                    e.lines()
                        .filter(|l| !l.starts_with("note: running in the interpreter"))
                        .collect::<Vec<_>>()
                        .join("\n")
                })
            };
            match (&interp, &native) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{what}"),
                _ => assert_eq!(without_notes(&interp), without_notes(&native), "{what}"),
            }
        }
    }
    assert!(
        handed_over.is_empty(),
        "ran in the interpreter: {handed_over:#?}"
    );
}
