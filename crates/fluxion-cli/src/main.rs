//! The `fluxion` command (docs/language.md §6): a thin shell over `fluxion-driver`.
//! Exit status: 0 success, 1 a program error, 2 a usage error.

mod gradbench;
mod modes;
mod repl;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Counts the heap each thread holds, so the evaluation's memory budget is enforced.
#[global_allocator]
static ALLOC: fluxion_driver::CountingAlloc = fluxion_driver::CountingAlloc;

#[derive(Parser)]
#[command(
    name = "fluxion",
    version,
    about = "Fluxion: a differentiable functional array language"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate a program's `main` (or another entry) and print the result.
    Run {
        file: String,
        /// The function to run.
        #[arg(long, default_value = "main")]
        entry: String,
        /// Arguments as a JSON array, or @FILE to read them from a file.
        #[arg(long)]
        args: Option<String>,
        #[command(flatten)]
        modes: modes::ModeArgs,
        /// Print each optimiser pass's time and the code size after it, on stderr.
        #[arg(long)]
        time_passes: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// Evaluator: interp (the reference interpreter, the default) or native (C
        /// through the system compiler; what it cannot compile runs in the interpreter,
        /// with a note).
        #[arg(long, value_parser = ["interp", "native"])]
        backend: Option<String>,
        /// Memory the evaluation may hold, e.g. 512M or 2G (default: half of the
        /// memory available: physical, cgroup or `ulimit -v`, the smallest).
        #[arg(long, value_name = "SIZE", value_parser = fluxion_driver::parse_size)]
        memory_limit: Option<usize>,
    },
    /// Parse and type-check a program.
    Check { file: String },
    /// Print the program after a pipeline stage, as Fluxion source.
    Show {
        file: String,
        /// Print only what this function needs (default: every function in the file).
        #[arg(long)]
        entry: Option<String>,
        /// The stage: core (typed ANF after desugaring), opt (after expansion and the
        /// optimiser), fwd (forward mode), chad
        /// (reverse CHAD), chad-fwd (forward CHAD), delta (reverse mode by deltas),
        /// taylor (Taylor mode of order 2; taylorK for order K), jet (jets of 2
        /// directions of order 2; jetKxR for K directions of order R), deps (the dependency
        /// sets of `sparsity`), resolved (the program with its operators made into
        /// derivative code ahead of time, as both backends run it), c (the C the native
        /// backend compiles, of `main` or --entry).
        #[arg(long, default_value = "core")]
        stage: String,
        /// The algorithm the reverse-mode operators are shown expanded with (default:
        /// chad for the chad stage, else the default mode).
        #[arg(long, value_parser = ["fwd", "chad", "delta"])]
        ad: Option<String>,
        /// With 1, a transformation's stage is printed optimised, as it runs (default
        /// 0: as the transformation's rules make it; the `opt` stage is always
        /// optimised).
        #[arg(long, value_parser = ["0", "1"])]
        opt: Option<String>,
    },
    /// Interactive read-eval-print loop, optionally with a file's definitions loaded.
    Repl {
        file: Option<String>,
        /// Memory one input's evaluation may add, e.g. 512M or 2G (default as for `run`).
        #[arg(long, value_name = "SIZE", value_parser = fluxion_driver::parse_size)]
        memory_limit: Option<usize>,
    },
    /// Be a GradBench tool: answer the protocol's JSON messages on stdin/stdout.
    Gradbench(gradbench::GradbenchArgs),
}

/// What a command produced: text for stdout and stderr, and the exit status.
struct Outcome {
    stdout: String,
    stderr: String,
    status: u8,
}

impl Outcome {
    fn ok(stdout: String) -> Outcome {
        Outcome {
            stdout,
            stderr: String::new(),
            status: 0,
        }
    }

    fn program_error(stderr: String) -> Outcome {
        Outcome {
            stdout: String::new(),
            stderr,
            status: 1,
        }
    }

    fn usage_error(stderr: String) -> Outcome {
        Outcome {
            stdout: String::new(),
            stderr,
            status: 2,
        }
    }
}

fn read_file(path: &str) -> Result<String, Outcome> {
    std::fs::read_to_string(path)
        .map_err(|e| Outcome::usage_error(format!("error: cannot read `{path}`: {e}\n")))
}

fn run_command(command: Command) -> Outcome {
    match command {
        Command::Run {
            file,
            entry,
            args,
            modes,
            time_passes,
            json,
            backend,
            memory_limit,
        } => {
            let text = match read_file(&file) {
                Ok(t) => t,
                Err(o) => return o,
            };
            let args = match args.as_deref() {
                Some(a) if a.starts_with('@') => match read_file(&a[1..]) {
                    Ok(t) => Some(t),
                    Err(o) => return o,
                },
                other => other.map(str::to_string),
            };
            let mut program = match fluxion_driver::compile(&file, &text) {
                Ok(p) => p,
                Err(f) => return Outcome::program_error(f.render()),
            };
            let (mode, fwd, opt) = modes.modes();
            let backend = backend
                .as_deref()
                .and_then(fluxion_driver::Backend::parse)
                .unwrap_or_default();
            let options = fluxion_driver::RunOptions {
                mode,
                fwd,
                opt,
                memory_limit,
                backend,
            };
            let passes = match program.prepare(options) {
                Ok(report) if time_passes => report.render(),
                Ok(_) => String::new(),
                Err(d) => {
                    return Outcome::program_error(fluxion_driver::render(&[d], &program.sources));
                }
            };
            let mut outcome = match program.run_prepared(&entry, args.as_deref(), options) {
                Ok(out) => {
                    let mut o = Outcome::ok(format!(
                        "{}\n",
                        if json {
                            out.to_json()
                        } else {
                            out.to_literal()
                        }
                    ));
                    o.stderr = out.notes.iter().map(|n| format!("{n}\n")).collect();
                    o
                }
                Err(f) => Outcome::program_error(f.render()),
            };
            outcome.stderr.insert_str(0, &passes);
            outcome
        }
        Command::Check { file } => {
            let text = match read_file(&file) {
                Ok(t) => t,
                Err(o) => return o,
            };
            match fluxion_driver::compile(&file, &text) {
                Ok(_) => Outcome::ok(String::new()),
                Err(f) => Outcome::program_error(f.render()),
            }
        }
        Command::Show {
            file,
            entry,
            stage,
            ad,
            opt,
        } => {
            if !fluxion_driver::is_stage(&stage) {
                return Outcome::usage_error(format!(
                    "error: unknown stage `{stage}` (available: {})\n",
                    fluxion_driver::STAGES.join(", ")
                ));
            }
            let text = match read_file(&file) {
                Ok(t) => t,
                Err(o) => return o,
            };
            let program = match fluxion_driver::compile(&file, &text) {
                Ok(p) => p,
                Err(f) => return Outcome::program_error(f.render()),
            };
            let mode = ad
                .as_deref()
                .and_then(fluxion_driver::AdMode::parse)
                .unwrap_or(if stage == "chad" {
                    fluxion_driver::AdMode::Chad
                } else {
                    fluxion_driver::AdMode::default()
                });
            let opt = match opt.as_deref() {
                Some("1") => fluxion_driver::OptLevel::On,
                _ => fluxion_driver::OptLevel::Off,
            };
            match program.show_optimized(&stage, entry.as_deref(), mode, opt) {
                Ok(s) => Outcome::ok(s),
                Err(msg) => Outcome::program_error(format!("error: {msg}\n")),
            }
        }
        Command::Repl { file, memory_limit } => {
            let text = match file.as_deref().map(read_file) {
                Some(Ok(t)) => Some((file.clone().unwrap_or_default(), t)),
                Some(Err(o)) => return o,
                None => None,
            };
            repl::run(text, memory_limit)
        }
        Command::Gradbench(args) => gradbench::run(args),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    // A panic is a bug in Fluxion, never the program's fault: report it as an
    // internal error (exit 1, as for any failed run) rather than with a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "internal compiler error{location}: {info}\nthis is a bug in Fluxion; please report it with the program that caused it"
        );
    }));
    let outcome = fluxion_driver::with_big_stack(move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_command(cli.command)))
            .unwrap_or(Outcome {
                stdout: String::new(),
                stderr: String::new(),
                status: 1,
            })
    });
    use std::io::Write;
    let _ = std::io::stdout().write_all(outcome.stdout.as_bytes());
    let _ = std::io::stderr().write_all(outcome.stderr.as_bytes());
    ExitCode::from(outcome.status)
}
