//! `fluxion gradbench`: the GradBench tool (protocol in `fluxion-gradbench`).

use crate::Outcome;

/// The flags of `fluxion gradbench`.
#[derive(clap::Args)]
pub struct GradbenchArgs {
    #[command(flatten)]
    modes: crate::modes::ModeArgs,
    /// Where programs run: native (the default: each function compiled to machine
    /// code at its first evaluation; what cannot be compiled runs in the interpreter)
    /// or interp.
    #[arg(long, value_parser = ["interp", "native"])]
    backend: Option<String>,
    /// Read each module from DIR/<module>/<module>.flx instead of the programs built
    /// into the binary (the repository's `gradbench/` folder).
    #[arg(long, value_name = "DIR")]
    dir: Option<String>,
    /// Memory the evaluations may hold, e.g. 512M or 2G (default as for `run`).
    #[arg(long, value_name = "SIZE", value_parser = fluxion_driver::parse_size)]
    memory_limit: Option<usize>,
}

/// Serves the protocol on stdin/stdout until stdin ends.
pub fn run(args: GradbenchArgs) -> Outcome {
    let (ad, fwd, opt) = args.modes.modes();
    let config = fluxion_gradbench::Config {
        ad,
        fwd,
        opt,
        backend: args
            .backend
            .as_deref()
            .and_then(fluxion_driver::Backend::parse)
            .unwrap_or(fluxion_driver::Backend::Native),
        memory_limit: args.memory_limit,
        dir: args.dir.map(Into::into),
    };
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    match fluxion_gradbench::serve(stdin.lock(), stdout.lock(), config) {
        Ok(()) => Outcome::ok(String::new()),
        Err(e) => Outcome::usage_error(format!("error: gradbench: {e}\n")),
    }
}
