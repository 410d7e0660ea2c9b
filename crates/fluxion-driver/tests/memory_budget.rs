//! The memory budget through the library API (`Program::run_with_options`), with the
//! counting allocator installed as the `fluxion` binary installs it.

use std::time::{Duration, Instant};

use fluxion_driver::{AdMode, Backend, CountingAlloc, RunOptions};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Runs `main` of `src` under `limit` bytes: the printed value or the rendered error.
fn run_within(src: &str, limit: Option<usize>) -> Result<String, String> {
    let options = RunOptions {
        memory_limit: limit,
        ..RunOptions::default()
    };
    run_with(src, options).0
}

/// Runs `main` of `src` with `options`: the printed value or the rendered error, and
/// the notes of the run.
fn run_with(src: &str, options: RunOptions) -> (Result<String, String>, Vec<String>) {
    let src = src.to_string();
    fluxion_driver::with_big_stack(move || {
        let program = match fluxion_driver::compile("t.flx", &src) {
            Ok(p) => p,
            Err(f) => return (Err(f.render()), Vec::new()),
        };
        match program.run_with_options("main", None, options) {
            Ok(out) => (Ok(out.to_literal()), out.notes.clone()),
            Err(f) => (Err(f.render()), f.notes.clone()),
        }
    })
}

/// [`run_with`] with `--ad delta` on `backend` under `limit` bytes.
fn run_delta_on(
    src: &str,
    limit: usize,
    backend: Backend,
) -> (Result<String, String>, Vec<String>) {
    let options = RunOptions {
        memory_limit: Some(limit),
        mode: AdMode::Delta,
        backend,
        ..RunOptions::default()
    };
    run_with(src, options)
}

/// The delta tape counts in the memory budget natively, as in the interpreter (whose
/// tape is on the counted heap): 10⁷ steps of `iterate` make about 700 MB of tape, a
/// clean budget error under 64 MiB on both backends (natively it ran on, unbounded);
/// 10⁵ steps (about 7 MB) fit, and give the interpreter's gradient.
#[test]
fn the_delta_tape_counts_in_the_memory_budget_on_both_backends() {
    let program = |steps: u64| {
        format!(
            "fn main() -> Real {{ grad(|x: Real| iterate({steps}, |y: Real| sin(y) + 0.5 * y, x), 0.3) }}"
        )
    };
    let (interp, _) = run_delta_on(&program(100_000), 64 << 20, Backend::Interp);
    let (native, notes) = run_delta_on(&program(100_000), 64 << 20, Backend::Native);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(interp, native);
    for backend in [Backend::Interp, Backend::Native] {
        let (out, notes) = run_delta_on(&program(10_000_000), 64 << 20, backend);
        assert!(notes.is_empty(), "{notes:?}");
        let err = out.expect_err("over the budget");
        assert!(
            err.contains("runtime error: memory budget of 64 MiB exceeded"),
            "{}: {err}",
            backend.name()
        );
        // What is counted is said (a user compared the figure with a resident size).
        assert!(
            err.contains(fluxion_driver::interp::WHAT_IS_COUNTED),
            "{}: {err}",
            backend.name()
        );
    }
}

const NESTED_BUILD: &str = "fn main() -> Int {
    length(build(100000, |i| build(100000, |j| i + j)))
}
";

#[test]
fn a_runaway_program_stops_at_its_budget_with_the_location() {
    let start = Instant::now();
    let err = run_within(NESTED_BUILD, Some(64 << 20)).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    assert!(
        err.contains("t.flx:2:30: runtime error: memory budget of 64 MiB exceeded"),
        "{err}"
    );
}

#[test]
fn a_huge_request_fails_before_it_is_made() {
    let start = Instant::now();
    let err = run_within(
        "fn main() -> Int { length(replicate(200000000, 1.5)) }",
        Some(64 << 20),
    )
    .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        err.contains("memory budget of 64 MiB exceeded: this operation needs 1.5 GiB more"),
        "{err}"
    );
}

#[test]
fn programs_within_the_budget_run_as_before() {
    let src = "fn main() -> (Int, Real) {
        let xs = range(1000000);
        (sum(xs), sum(map(to_real, xs)))
    }";
    assert_eq!(
        run_within(src, Some(64 << 20)),
        Ok("(499999500000, 499999500000.0)".into())
    );
    // The default budget (half of memory) is set when none is given.
    assert_eq!(
        run_within(src, None),
        Ok("(499999500000, 499999500000.0)".into())
    );
    assert!(fluxion_driver::default_memory_limit() >= 64 << 20);
}
