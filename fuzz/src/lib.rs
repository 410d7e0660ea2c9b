//! What each fuzz target does with one input, shared with the normal test suite:
//! `crates/fluxion-driver/tests/fuzz_regressions.rs` includes this file and runs
//! every input in `fuzz/regressions/` through all three, so a crash found by fuzzing
//! becomes a regression test by copying its artifact there.
//!
//! Every function must return normally for every input: a panic (or an abort, a
//! stack overflow, a hang) is a bug.

/// Source text of an input: fuzz inputs are bytes; invalid UTF-8 is replaced.
pub fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// `parse`: the parser returns a tree and errors, never panics.
pub fn parse(data: &[u8]) {
    let text = text(data);
    let parse = fluxion_syntax::parse_module(&text, 1);
    for e in &parse.errors {
        assert!(e.span.start <= e.span.end && e.span.end as usize <= text.len());
    }
}

/// `check`: parsing and type checking (`fluxion_driver::compile`), rendering the
/// diagnostics, and printing the Core of what type-checks.
pub fn check(data: &[u8]) {
    let text = text(data);
    fluxion_driver::with_big_stack(move || match fluxion_driver::compile("fuzz.flx", &text) {
        Ok(program) => {
            let _ = program.show("core", None);
        }
        Err(failure) => {
            let _ = failure.render();
        }
    });
}

/// Whether running `main` of `text` is cheap enough to do on every fuzz input: no
/// way to recurse (one function, no enums, which could encode a fixed point), no
/// `iterate`, and small integer literals (bounding array sizes and loop counts, with
/// the bounded source length).
pub fn cheap_to_run(text: &str) -> bool {
    text.len() <= 2000
        && text.matches("fn ").count() <= 1
        && !text.contains("enum")
        && !text.contains("iterate")
        && text
            .split(|c: char| !c.is_ascii_digit())
            .all(|digits| digits.len() <= 2)
}

/// `run`: compile, print the Core and the forward-mode stage, and, when cheap
/// (`cheap_to_run`), run `main`: runtime errors are fine, panics are not.
pub fn run(data: &[u8]) {
    let text = text(data);
    fluxion_driver::with_big_stack(move || {
        let Ok(program) = fluxion_driver::compile("fuzz.flx", &text) else {
            return;
        };
        let _ = program.show("core", None);
        let _ = program.show("fwd", None);
        let runnable = cheap_to_run(&text)
            && program
                .module
                .functions
                .get("main")
                .is_some_and(|c| program.module.code(*c).params.is_empty());
        if runnable {
            match program.run("main", None) {
                Ok(out) => {
                    let _ = out.to_literal();
                }
                Err(failure) => {
                    let _ = failure.render();
                }
            }
        }
    });
}
