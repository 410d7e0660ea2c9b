//! Inputs found by fuzzing (`fuzz/regressions/*`, any file) through what each fuzz
//! target does (`fuzz/src/lib.rs`, included here): parsing, type checking and
//! printing, and running. None may panic. A crash artifact from
//! `fuzz/artifacts/<target>/` becomes a regression test by copying it there.

#[path = "../../../fuzz/src/lib.rs"]
mod fuzz;

use std::path::Path;

#[test]
fn fuzz_regressions_do_not_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "fuzz/regressions is empty");
    for path in files {
        let data = std::fs::read(&path).unwrap();
        for (name, target) in [
            ("parse", fuzz::parse as fn(&[u8])),
            ("check", fuzz::check),
            ("run", fuzz::run),
        ] {
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name} panicked on {}", path.display());
        }
    }
}

#[test]
fn cheap_to_run_rejects_what_could_run_long() {
    assert!(fuzz::cheap_to_run(
        "fn main() -> Real { sum(build(50, |i| to_real(i))) }"
    ));
    assert!(!fuzz::cheap_to_run(
        "fn main() -> Int { length(range(100000)) }"
    ));
    assert!(!fuzz::cheap_to_run(
        "fn g(n: Int) -> Int { g(n) }\nfn main() -> Int { g(1) }"
    ));
    assert!(!fuzz::cheap_to_run(
        "fn main() -> Int { iterate(5, |n| n, 1) }"
    ));
    assert!(!fuzz::cheap_to_run(
        "enum R { R(fn(R) -> Int) }\nfn main() -> Int { 1 }"
    ));
}
