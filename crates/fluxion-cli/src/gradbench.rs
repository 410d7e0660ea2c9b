//! `fluxion gradbench`: the GradBench tool (protocol in `fluxion-gradbench`).

use crate::Outcome;

/// The flags of `fluxion gradbench`.
#[derive(clap::Args)]
pub struct GradbenchArgs {
    /// Reverse-mode algorithm for grad, vjp, jacobian and hessian (default: delta,
    /// the fastest measured).
    #[arg(long, value_parser = ["fwd", "chad", "delta"])]
    ad: Option<String>,
    /// Forward-mode algorithm for jvp and diff (default: dual).
    #[arg(long, value_parser = ["dual", "chad"])]
    fwd: Option<String>,
    /// The optimiser: 1 (on, the default) or 0 (off).
    #[arg(long, value_parser = ["0", "1"])]
    opt: Option<String>,
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
    let config = fluxion_gradbench::Config {
        ad: args
            .ad
            .as_deref()
            .and_then(fluxion_driver::AdMode::parse)
            .unwrap_or_default(),
        fwd: args
            .fwd
            .as_deref()
            .and_then(fluxion_driver::FwdMode::parse)
            .unwrap_or_default(),
        opt: args
            .opt
            .as_deref()
            .and_then(fluxion_driver::OptLevel::parse)
            .unwrap_or_default(),
        backend: args
            .backend
            .as_deref()
            .and_then(fluxion_gradbench::Backend::parse)
            .unwrap_or_default(),
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
