//! Differential testing: random well-typed, smooth programs from `tests/generator`
//! checked by oracles that need no expected output (derivatives against finite
//! differences, the transpose identity, modes against each other, printed stages
//! against the original: `oracles/`, which the corpus, `corpus.rs`, runs too).
//!
//! `FLUXION_GEN_CASES=<n>` and `FLUXION_GEN_SEED=<start>` choose the seeds for long
//! runs, `FLUXION_GEN_DEPTH` and `FLUXION_GEN_FUEL` the size of the programs, and
//! `FLUXION_GEN_SHOW=1` prints every program (CONTRIBUTING.md, "Random programs: the
//! generator and its oracles"). A failure is shrunk (the same seed with smaller
//! budgets), written to `target/generated-failures/` and reported by path.

mod generator;
mod oracles;
#[allow(dead_code)]
#[path = "common/programs.rs"]
mod programs;

use std::path::{Path, PathBuf};

use fluxion_driver::gradcheck::eval_reals;
use generator::{Config, generate};
use oracles::{Failure, PENDING_AGREEMENTS, agreement, check, literal, pending_modes};

/// Seeds run by `cargo test`, in two shards run at once: about 0.45 s of CPU per
/// program in a release build, about four times that in CI's debug build (measured
/// with the oracles' timings, which the shards print: the gradients in every mode and
/// the optimiser's check cost most). The debug build runs the first 500 of the release
/// build's 800 (every construct of [`CONSTRUCTS`] occurs in them), which keeps CI's
/// debug run near eight minutes of its thirty.
const DEFAULT_CASES: u64 = if cfg!(debug_assertions) { 500 } else { 800 };

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

/// The text of a failure report, in the format `tests/corpus/regressions/*.flx` use.
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

/// The seeds of shard `shard` of [`SHARDS`]: every `SHARDS`-th seed from
/// `FLUXION_GEN_SEED`, `FLUXION_GEN_CASES` in all. The shards are separate tests, so
/// the test harness runs them on separate cores.
const SHARDS: u64 = 2;

fn run_shard(shard: u64) {
    let start = env_u64("FLUXION_GEN_SEED", 0);
    let cases = env_u64("FLUXION_GEN_CASES", DEFAULT_CASES);
    // Bigger (or smaller) programs for long runs.
    let config = Config {
        depth: env_u64("FLUXION_GEN_DEPTH", Config::DEFAULT.depth.into()) as u32,
        fuel: env_u64("FLUXION_GEN_FUEL", Config::DEFAULT.fuel as u64) as i64,
    };
    let mut reports = Vec::new();
    let (mut total_len, mut nonzero, mut checked) = (0, 0, 0);
    let show = std::env::var_os("FLUXION_GEN_SHOW").is_some();
    for seed in (start..start + cases).filter(|s| s % SHARDS == shard) {
        let g = generate(seed, config);
        total_len += g.source.len();
        checked += 1;
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
        "shard {shard}: {checked} programs from seed {start}, {} bytes on average, {nonzero} \
         with a nonzero gradient; time per oracle (both shards so far):",
        total_len / checked.max(1)
    );
    for (name, t) in oracles::oracle_times() {
        eprintln!("  {:>8.1} s  {name}", t.as_secs_f64());
    }
    assert!(
        reports.is_empty(),
        "{} generated program(s) failed; shrunk reports:\n{}",
        reports.len(),
        reports.join("\n")
    );
    // Most programs must actually depend on x, or the derivative oracles test little.
    if cases >= DEFAULT_CASES {
        assert!(
            nonzero * 10 >= checked * 7,
            "only {nonzero} of {checked} programs have a nonzero gradient"
        );
    }
}

#[test]
fn generated_programs_pass_every_oracle() {
    run_shard(0);
}

#[test]
fn generated_programs_pass_every_oracle_odd_seeds() {
    run_shard(1);
}

/// Every construct of [`CONSTRUCTS`] is generated within the seeds the oracles check
/// (generation alone: cheap).
#[test]
fn the_seeds_checked_generate_every_construct() {
    let start = env_u64("FLUXION_GEN_SEED", 0);
    let cases = env_u64("FLUXION_GEN_CASES", DEFAULT_CASES);
    let mut seen = vec![0usize; CONSTRUCTS.len()];
    for seed in start..start + cases {
        let g = generate(seed, Config::DEFAULT);
        for (k, c) in CONSTRUCTS.iter().enumerate() {
            seen[k] += usize::from(g.source.contains(c));
        }
    }
    eprintln!("programs using each construct:");
    for (c, n) in CONSTRUCTS.iter().zip(&seen) {
        eprintln!("  {c:<18} {n}");
    }
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
    assert_eq!(programs::point_of(&text), Some(x.to_vec()));
}
