//! Fluxion as a GradBench tool (`fluxion gradbench`): the protocol of GradBench's
//! CONTRIBUTING.md, one JSON message a line on stdin and one response a line on
//! stdout. A module is compiled, expanded and optimised once, at `define`, and kept
//! with one interpreter for the session, so derivative code translated during the
//! first evaluation is reused by the later ones. No message, however malformed, ends
//! the session: it is answered with `success: false` and an error.

mod bind;
pub mod programs;
mod session;

use std::io::{BufRead, Write};
use std::path::PathBuf;

use fluxion_driver::{AdMode, Backend, FwdMode, OptLevel};

pub use session::{Session, user_function};

/// How the tool runs the programs (the subcommand's flags).
#[derive(Clone, Debug)]
pub struct Config {
    /// The algorithm behind `grad`, `vjp`, `jacobian`, `hessian`.
    pub ad: AdMode,
    /// The algorithm behind `jvp` and `diff`.
    pub fwd: FwdMode,
    pub opt: OptLevel,
    /// Where evaluation runs: machine code from the native backend by default (each
    /// function compiled at its first evaluation; one the backend cannot compile — one
    /// whose operator needs the interpreter, such as `--ad delta`'s tape — runs in the
    /// interpreter), so primal functions run as machine code and the reverse mode the
    /// interpreter runs fastest (delta) keeps its speed; or the interpreter.
    pub backend: Backend,
    /// The memory budget of the session's evaluations (`None`: the default).
    pub memory_limit: Option<usize>,
    /// Read `DIR/<module>/<module>.flx` instead of the programs built in.
    pub dir: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            ad: AdMode::default(),
            fwd: FwdMode::default(),
            opt: OptLevel::default(),
            backend: Backend::Native,
            memory_limit: None,
            dir: None,
        }
    }
}

/// Answers every message on `input` until it ends. Call inside
/// `fluxion_driver::with_big_stack` (the interpreter's values stay on its thread). The
/// error is an I/O error of the streams themselves.
pub fn serve(input: impl BufRead, mut output: impl Write, config: Config) -> std::io::Result<()> {
    let mut session = Session::new(config);
    for line in input.split(b'\n') {
        let line = line?;
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        let response = session.handle(&text);
        writeln!(output, "{response}")?;
        output.flush()?;
    }
    Ok(())
}
