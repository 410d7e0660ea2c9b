//! The Fluxion pipeline as a library (the embedding API the CLI is a shell over):
//! source text → [`compile`] → [`Program`] → [`Program::run`] → value, or
//! [`Diagnostic`]s.
//!
//! The prelude (`prelude.flx`, Fluxion source) is parsed before every program; user
//! functions shadow it. All evaluation should happen inside [`with_big_stack`], which
//! gives deep (non-tail) recursion room and turns exhaustion into a clean error.

mod abi;
mod diagnostic;
pub mod gradcheck;
pub mod json;
mod memory;
mod native;
pub mod repl;
pub mod value_path;

pub use diagnostic::{Diagnostic, Phase, SourceFile, render};
pub use fluxion_ad as ad;
pub use fluxion_ad::{AdMode, FwdMode};
pub use fluxion_core as core;
pub use fluxion_interp as interp;
pub use fluxion_interp::CountingAlloc;
/// The native backend, and calls of its programs with values (`abi.rs`).
pub mod native_backend {
    pub use crate::abi::{CallValues, decode_values, encode_value};
    pub use fluxion_native::*;
}
pub use fluxion_opt::{OptLevel, Report as OptReport};
pub use memory::{default_memory_limit, parse_size};
pub use native::{Backend, compile as compile_native};

use fluxion_core::{Module, Span, Type};
use fluxion_interp::{Interp, Value};
use fluxion_syntax::ast;

/// The prelude's source text.
pub const PRELUDE: &str = include_str!("prelude.flx");
/// Source id of the prelude; the user's file is [`USER_SOURCE`].
pub const PRELUDE_SOURCE: u32 = fluxion_core::PRELUDE_SOURCE;
pub const USER_SOURCE: u32 = 1;

/// Stack given to the evaluation thread, and the part of it the interpreter may use.
/// The budget allows about 1.3 million nested calls in a release build (about 800
/// bytes of Rust stack each); touching more stack than that costs seconds of page
/// faults, which is how long a runaway recursion takes to be reported.
const STACK_SIZE: usize = (1 << 30) + (256 << 20);
const STACK_BUDGET: usize = 1 << 30;

/// Smaller stacks to fall back on when the address space is limited (`ulimit -v`):
/// recursion is then limited sooner, but the program runs.
const FALLBACK_STACK_SIZES: [usize; 3] = [320 << 20, 80 << 20, 16 << 20];

/// The stack budget outside [`with_big_stack`] (a thread's default stack is 2–8 MiB).
const DEFAULT_STACK_BUDGET: usize = 1 << 20;

thread_local! {
    /// How much stack the interpreter may use on this thread.
    static EVAL_STACK_BUDGET: std::cell::Cell<usize> =
        const { std::cell::Cell::new(DEFAULT_STACK_BUDGET) };
    /// The stack this thread reserved, if [`with_big_stack`] made it (else 0).
    static EVAL_STACK_SIZE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The address space the current evaluation thread's stack reserves (0 outside
/// [`with_big_stack`]).
pub(crate) fn eval_stack_size() -> usize {
    EVAL_STACK_SIZE.with(|s| s.get())
}

/// The stack the interpreter (or native code) may use on the current thread: most of
/// the evaluation thread's stack inside [`with_big_stack`], a small default elsewhere.
pub fn stack_budget() -> usize {
    EVAL_STACK_BUDGET.with(|b| b.get())
}

/// Runs `f` on a thread with a 1.25 GiB stack (reserved, not committed), so that deep
/// recursion in the program, or deep nesting in its source, does not overflow. Where
/// the address space is too small for that, a smaller stack (and budget) is used.
pub fn with_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    // Under an address-space limit, the stack takes at most a quarter of it, so that
    // the heap (and its memory budget) keeps the rest.
    let room = memory::address_space_soft_limit().map_or(usize::MAX, |l| (l / 4) as usize);
    let sizes = std::iter::once((STACK_SIZE, STACK_BUDGET))
        .chain(FALLBACK_STACK_SIZES.iter().map(|&s| (s, s / 4 * 3)))
        .filter(|&(size, _)| size <= room || size == FALLBACK_STACK_SIZES[2]);
    // Held here, so that a spawn that fails (too little address space) does not take
    // the work with it.
    let work = std::sync::Mutex::new(Some(f));
    let take_work = || {
        work.lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
            .expect("the work runs once")
    };
    std::thread::scope(|scope| {
        for (size, budget) in sizes {
            let spawned = std::thread::Builder::new()
                .name("fluxion-eval".into())
                .stack_size(size)
                .spawn_scoped(scope, move || {
                    EVAL_STACK_BUDGET.with(|b| b.set(budget));
                    EVAL_STACK_SIZE.with(|s| s.set(size));
                    take_work()()
                });
            if let Ok(handle) = spawned {
                return handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            }
        }
        // Not even a small stack: run here, with the default budget.
        take_work()()
    })
}

/// A type-checked program with the sources its spans point into.
pub struct Program {
    pub module: Module,
    pub sources: Vec<SourceFile>,
}

/// Failure of a pipeline step: the diagnostics and the sources to render them with.
pub struct Failure {
    pub diagnostics: Vec<Diagnostic>,
    pub sources: Vec<SourceFile>,
    /// One-line notes (the native backend's fallback to the interpreter).
    pub notes: Vec<String>,
}

impl Failure {
    fn new(diagnostics: Vec<Diagnostic>, sources: Vec<SourceFile>) -> Failure {
        Failure {
            diagnostics,
            sources,
            notes: Vec::new(),
        }
    }

    /// The notes, then the diagnostics.
    pub fn render(&self) -> String {
        let mut s: String = self.notes.iter().map(|n| format!("{n}\n")).collect();
        s.push_str(&render(&self.diagnostics, &self.sources));
        s
    }
}

fn core_span(s: fluxion_syntax::Span) -> Span {
    Span {
        source: s.source,
        start: s.start,
        end: s.end,
    }
}

fn parse(source: &SourceFile, id: u32) -> (ast::Module, Vec<Diagnostic>) {
    let parse = fluxion_syntax::parse_module(&source.text, id);
    let diags = parse
        .errors
        .into_iter()
        .map(|e| Diagnostic::new(Phase::Syntax, Some(core_span(e.span)), e.message))
        .collect();
    (parse.module, diags)
}

/// Parses and type-checks a program (with the prelude).
pub fn compile(name: &str, text: &str) -> Result<Program, Failure> {
    compile_with_expr(name, text, None)
}

/// Like [`compile`]; `expr` (source text) is also elaborated as the parameterless
/// function [`fluxion_typeck::EXPR_ENTRY`] (used by the REPL).
pub fn compile_with_expr(name: &str, text: &str, expr: Option<&str>) -> Result<Program, Failure> {
    let mut sources = vec![
        SourceFile {
            name: "<prelude>".into(),
            text: PRELUDE.into(),
        },
        SourceFile {
            name: name.into(),
            text: text.into(),
        },
    ];
    let (prelude, mut diags) = parse(&sources[0], PRELUDE_SOURCE);
    let (user, user_diags) = parse(&sources[1], USER_SOURCE);
    diags.extend(user_diags);
    let expr_ast = match expr {
        Some(e) => {
            sources.push(SourceFile {
                name: "<input>".into(),
                text: e.into(),
            });
            let (parsed, errors) = fluxion_syntax::parse_expr(e, 2);
            diags.extend(
                errors
                    .into_iter()
                    .map(|e| Diagnostic::new(Phase::Syntax, Some(core_span(e.span)), e.message)),
            );
            parsed
        }
        None => None,
    };
    if !diags.is_empty() {
        return Err(Failure::new(diags, sources));
    }
    match elaborate(&[&prelude, &user], expr_ast.as_ref()) {
        Ok(module) => Ok(Program { module, sources }),
        Err(diagnostics) => Err(Failure::new(diagnostics, sources)),
    }
}

/// Type-checks parsed modules (the prelude first) and an optional expression entry,
/// and verifies the Core made (debug builds).
fn elaborate(
    modules: &[&ast::Module],
    expr: Option<&ast::Expr>,
) -> Result<Module, Vec<Diagnostic>> {
    let module = fluxion_typeck::elaborate_with_expr(modules, expr).map_err(|errors| {
        errors
            .into_iter()
            .map(|e| Diagnostic::new(Phase::Type, Some(e.span), e.message))
            .collect::<Vec<_>>()
    })?;
    check_core(&module, "elaboration").map_err(|d| vec![d])?;
    Ok(module)
}

/// Runs the Core verifier after `pass` (in debug builds, so in every test).
fn check_core(module: &Module, pass: &str) -> Result<(), Diagnostic> {
    check_core_from(module, 0, pass)
}

/// Like [`check_core`], for the codes from index `first` on (those `pass` added).
fn check_core_from(module: &Module, first: usize, pass: &str) -> Result<(), Diagnostic> {
    if !cfg!(debug_assertions) {
        return Ok(());
    }
    fluxion_core::verify::verify_codes_from(module, first).map_err(|errors| {
        let text = fluxion_core::verify::describe(&errors);
        Diagnostic::new(
            Phase::Internal,
            None,
            format!("Core verification failed after {pass}:\n{text}"),
        )
    })
}

/// The value an entry returned, with its type and the interpreter (for printing).
pub struct Output {
    pub value: Value,
    pub ty: Type,
    pub interp: Interp,
    /// One-line notes for stderr (the native backend's fallback to the interpreter).
    pub notes: Vec<String>,
}

impl Output {
    /// The value in Fluxion literal syntax.
    pub fn to_literal(&self) -> String {
        let mut s = String::new();
        let module = self.interp.module();
        let _ = fluxion_interp::write_value(&mut s, &self.value, &module, Some(&self.ty));
        s
    }

    /// The value as JSON text.
    pub fn to_json(&self) -> String {
        let mut text = String::new();
        json::write(&mut text, &self.value, &self.ty, &self.interp.module());
        text
    }
}

/// How to run a program: the AD modes and the memory budget.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    pub mode: AdMode,
    /// The algorithm of `jvp` and `diff` (`--fwd`).
    pub fwd: FwdMode,
    /// Whether the optimiser runs (`--opt`; on by default).
    pub opt: OptLevel,
    /// Bytes the evaluation may hold (`None`: [`default_memory_limit`]). Enforced in
    /// full when [`CountingAlloc`] is the global allocator (the `fluxion` binary
    /// installs it); without it, only single large requests are checked.
    pub memory_limit: Option<usize>,
    /// Which evaluator runs the program (`--backend`).
    pub backend: Backend,
}

impl From<AdMode> for RunOptions {
    fn from(mode: AdMode) -> RunOptions {
        RunOptions {
            mode,
            ..RunOptions::default()
        }
    }
}

impl Program {
    /// Runs `entry` with arguments given as a JSON array (`None`: no arguments).
    /// Call inside [`with_big_stack`].
    pub fn run(self, entry: &str, args_json: Option<&str>) -> Result<Output, Failure> {
        self.run_with_options(entry, args_json, RunOptions::default())
    }

    /// Runs `entry` with the given AD mode.
    pub fn run_with(
        self,
        entry: &str,
        args_json: Option<&str>,
        mode: AdMode,
    ) -> Result<Output, Failure> {
        let options = RunOptions {
            mode,
            ..RunOptions::default()
        };
        self.run_with_options(entry, args_json, options)
    }

    /// Runs `entry` with the given options.
    pub fn run_with_options(
        mut self,
        entry: &str,
        args_json: Option<&str>,
        options: RunOptions,
    ) -> Result<Output, Failure> {
        if let Err(d) = self.prepare(options) {
            return Err(Failure::new(vec![d], self.sources));
        }
        self.run_prepared(entry, args_json, options)
    }

    /// The steps before running: [`Program::expand`] for `options.mode`, then
    /// [`Program::optimize`], then [`Program::resolve`]; returns what each optimiser
    /// pass did.
    pub fn prepare(&mut self, options: RunOptions) -> Result<OptReport, Diagnostic> {
        self.expand(options.mode)?;
        let report = self.optimize(options.opt)?;
        self.resolve(options)?;
        Ok(report)
    }

    /// Makes the derivative code of the operators ahead of time, once, for both
    /// backends (fluxion-ad's `ahead`): every function of the user's file is a root
    /// (the prelude's are reached through them: a prelude lambda the program never
    /// makes is no candidate for a closure the compiler cannot see). What it cannot
    /// bound is left to run time (the interpreter translates it there; native code
    /// hands the run to the interpreter).
    pub fn resolve(&mut self, options: RunOptions) -> Result<(), Diagnostic> {
        let roots = self.user_functions();
        fluxion_ad::ahead::resolve_operators(&mut self.module, &roots, options.opt, options.fwd);
        if options.opt == OptLevel::On {
            // The primal calls' copies with the late passes (`fluxion_opt::Stage`). An
            // improvement only: a failure leaves the calls as they were.
            let mut report = OptReport::default();
            let _ = fluxion_opt::finish_primal_code(&mut self.module, &mut report);
        }
        if std::env::var_os("FLUXION_DUMP_RESOLVED").is_some() {
            eprintln!(
                "{}",
                fluxion_core::print::print_reachable(&self.module, &roots)
            );
        }
        check_core(&self.module, "making derivative code ahead of time")
    }

    /// Runs `entry` of a program already [`Program::prepare`]d with `options`.
    pub fn run_prepared(
        self,
        entry: &str,
        args_json: Option<&str>,
        options: RunOptions,
    ) -> Result<Output, Failure> {
        let fail = |d: Diagnostic, sources: Vec<SourceFile>| Failure::new(vec![d], sources);
        let Some(&code) = self.module.functions.get(entry) else {
            return Err(fail(
                Diagnostic::new(
                    Phase::Input,
                    None,
                    format!("no function named `{entry}` to run"),
                ),
                self.sources,
            ));
        };
        let Type::Fn(params, _) = self.module.code_ty(code) else {
            unreachable!("code types are function types")
        };
        let args = match decode_args(args_json, &params, &self.module) {
            Ok(a) => a,
            Err(msg) => {
                return Err(fail(
                    Diagnostic::new(Phase::Input, None, format!("--args: {msg}")),
                    self.sources,
                ));
            }
        };
        let (result, notes) = call_with_notes(self.module, code, args, options);
        result.map_err(|d| Failure {
            notes,
            ..fail(d, self.sources)
        })
    }

    /// Expands the differential operators for `mode`: the step before running. Only
    /// the reverse-mode operators depend on the mode; a program without them runs the
    /// same in every mode, built or not. An embedding that calls a program many times
    /// expands it once and then [`call`]s a copy of the module each time.
    pub fn expand(&mut self, mode: AdMode) -> Result<(), Diagnostic> {
        fluxion_ad::expand_module(&mut self.module, mode)
            .map_err(|e| Diagnostic::new(Phase::Input, e.1, e.0))?;
        check_core(&self.module, "expanding differential operators")
    }

    /// Runs the optimiser over the (expanded) module unless `opt` is `Off`: the step
    /// between [`Program::expand`] and running. Returns what each pass did.
    pub fn optimize(&mut self, opt: OptLevel) -> Result<OptReport, Diagnostic> {
        let mut report = OptReport::default();
        if opt == OptLevel::On {
            fluxion_opt::optimize_module(
                &mut self.module,
                fluxion_opt::Stage::BeforeAd,
                &mut report,
            )
            .map_err(|m| Diagnostic::new(Phase::Input, None, m))?;
            check_core(&self.module, "optimising")?;
        }
        Ok(report)
    }

    /// The program after a pipeline stage, as Fluxion source, its operators expanded
    /// with the default `--ad` mode.
    pub fn show(&self, stage: &str, entry: Option<&str>) -> Result<String, String> {
        self.show_with(stage, entry, AdMode::default())
    }

    /// The program after a pipeline stage, its reverse-mode operators expanded with
    /// `mode` (`--ad fwd` output uses no internal primitive but `%check_tangent` and
    /// `%lscale`, so its stages re-parse once `gradcheck::runnable_stage` spells
    /// `%lscale`; `--ad delta` output calls `%delta_vjp`).
    pub fn show_with(
        &self,
        stage: &str,
        entry: Option<&str>,
        mode: AdMode,
    ) -> Result<String, String> {
        self.show_optimized(stage, entry, mode, OptLevel::Off)
    }

    /// [`Program::show_with`]; with `opt` on, a transformation's stage (`fwd`, `chad`,
    /// ...) prints its derived codes optimised, as the run time runs them (`opt` always
    /// prints the optimised program; `core` never is).
    pub fn show_optimized(
        &self,
        stage: &str,
        entry: Option<&str>,
        mode: AdMode,
        opt: OptLevel,
    ) -> Result<String, String> {
        match stage {
            "core" => {
                let roots = self.roots(&self.module, entry)?;
                Ok(fluxion_core::print::print_reachable(&self.module, &roots))
            }
            "opt" => {
                // As the primal runs: a closed function the late passes improve is its
                // copy (`fluxion_opt::finish_primal_code`).
                let mut program = self.optimised_copy(mode)?;
                let mut report = OptReport::default();
                let _ = fluxion_opt::finish_primal_code(&mut program.module, &mut report);
                let roots = self.roots(&program.module, entry)?;
                Ok(fluxion_core::print::print_reachable(
                    &program.module,
                    &roots,
                ))
            }
            "resolved" => {
                // What both backends run: the operators made into derivative code ahead
                // of time (`resolve`), optimised, as `run` runs.
                let (program, roots) = self.resolved_copy(mode, |m| self.roots(m, entry))?;
                check_core(&program.module, stage).map_err(|d| d.message)?;
                Ok(fluxion_core::print::print_reachable(
                    &program.module,
                    &roots,
                ))
            }
            "c" => {
                // What `run --backend native` compiles: optimised, as `run` runs.
                let name = entry.unwrap_or("main");
                let (program, _) = self.resolved_copy(mode, |m| match m.functions.get(name) {
                    Some(&code) => Ok(vec![code]),
                    None => Err(format!(
                        "no function named `{name}` (choose one with --entry)"
                    )),
                })?;
                let code = program.module.functions[name];
                fluxion_native::c_source(&program.module, code).map_err(|u| {
                    format!("the native backend does not compile this program: {}", u.0)
                })
            }
            stage
                if stage == "fwd"
                    || stage == "delta"
                    || stage == "chad"
                    || stage == "chad-deps"
                    || stage == "chad-fwd"
                    || stage == "deps"
                    || stage.starts_with("taylor")
                    || stage.starts_with("jet") =>
            {
                let layer = match stage {
                    "delta" => fluxion_core::TypeMap::Delta,
                    "chad" | "chad-deps" => fluxion_core::TypeMap::Chad,
                    "chad-fwd" => fluxion_core::TypeMap::ChadFwd,
                    "fwd" => fluxion_core::TypeMap::Fwd,
                    "deps" => fluxion_core::TypeMap::Deps,
                    _ => fluxion_core::TypeMap::Taylor(jet_stage(stage)?),
                };
                let mut module = self.module.clone();
                fluxion_ad::expand_module(&mut module, mode).map_err(|e| e.0)?;
                let roots = self.roots(&module, entry)?;
                let mut derived = Vec::new();
                let mut skipped = String::new();
                let first_new = module.codes.len();
                for root in roots {
                    // Without `--entry`, a function CHAD leaves to forward mode (it
                    // applies an operator itself) is skipped with a note, not an error.
                    let unsupported = layer
                        .is_chad()
                        .then(|| fluxion_ad::chad_unsupported(&module, root, layer))
                        .flatten();
                    if let (None, Some(why)) = (entry, unsupported) {
                        skipped.push_str(&format!("// {why}\n"));
                        continue;
                    }
                    let code = if stage == "chad-deps" {
                        fluxion_ad::chad_deps_code(&mut module, root)
                    } else {
                        fluxion_ad::translate_code(&mut module, root, layer)
                    };
                    derived.push(code.map_err(|e| e.0)?);
                }
                if opt == OptLevel::On {
                    let mut report = OptReport::default();
                    fluxion_opt::optimize_codes_from(
                        &mut module,
                        first_new,
                        fluxion_opt::Stage::Final,
                        &mut report,
                    )?;
                }
                check_core(&module, stage).map_err(|d| d.message)?;
                Ok(skipped + &fluxion_core::print::print_reachable(&module, &derived))
            }
            other => Err(format!(
                "unknown stage `{other}` (available: {}, taylorK, jetKxR)",
                STAGES.join(", ")
            )),
        }
    }

    /// A copy of the program optimised for `mode`, the operators the codes `roots`
    /// picks reach made into derivative code ahead of time and the primal copies
    /// finished (what both backends run), with those roots.
    fn resolved_copy(
        &self,
        mode: AdMode,
        roots: impl FnOnce(&Module) -> Result<Vec<fluxion_core::CodeId>, String>,
    ) -> Result<(Program, Vec<fluxion_core::CodeId>), String> {
        let mut program = self.optimised_copy(mode)?;
        let roots = roots(&program.module)?;
        fluxion_ad::ahead::resolve_operators(
            &mut program.module,
            &roots,
            OptLevel::On,
            FwdMode::default(),
        );
        let mut report = OptReport::default();
        let _ = fluxion_opt::finish_primal_code(&mut program.module, &mut report);
        Ok((program, roots))
    }

    /// A copy of the program expanded for `mode` and optimised (what `run` runs).
    fn optimised_copy(&self, mode: AdMode) -> Result<Program, String> {
        let mut program = Program {
            module: self.module.clone(),
            sources: Vec::new(),
        };
        program.expand(mode).map_err(|d| d.message)?;
        program.optimize(OptLevel::On).map_err(|d| d.message)?;
        Ok(program)
    }

    /// What `show` prints: `entry` of `module` (the program at some stage), or every
    /// function of the user's file.
    fn roots(
        &self,
        module: &Module,
        entry: Option<&str>,
    ) -> Result<Vec<fluxion_core::CodeId>, String> {
        match entry {
            Some(e) => match module.functions.get(e) {
                Some(c) => Ok(vec![*c]),
                None => Err(format!("no function named `{e}`")),
            },
            None => Ok(self.user_functions()),
        }
    }

    /// The top-level functions defined in the user's file, in source order.
    pub fn user_functions(&self) -> Vec<fluxion_core::CodeId> {
        let mut ids: Vec<_> = self
            .module
            .functions
            .values()
            .copied()
            .filter(|c| self.module.code(*c).span.source != PRELUDE_SOURCE)
            .collect();
        ids.sort();
        ids
    }
}

/// Calls the top-level function `code` of a module expanded for `options.mode`
/// ([`Program::expand`]) with argument values of its parameter types. The error is the
/// runtime error. Call inside [`with_big_stack`].
pub fn call(
    module: Module,
    code: fluxion_core::CodeId,
    args: Vec<Value>,
    options: RunOptions,
) -> Result<Output, Diagnostic> {
    call_with_notes(module, code, args, options).0
}

/// [`call`], with the notes of a native run that fell back to the interpreter (they
/// are in the [`Output`] too).
pub fn call_with_notes(
    module: Module,
    code: fluxion_core::CodeId,
    args: Vec<Value>,
    options: RunOptions,
) -> (Result<Output, Diagnostic>, Vec<String>) {
    let ty = module.code(code).ret.clone();
    let memory_limit = options.memory_limit.unwrap_or_else(default_memory_limit);
    let mut notes = Vec::new();
    if options.backend == Backend::Native {
        match native::run(
            &module,
            code,
            &args,
            stack_budget(),
            memory_limit,
            options.opt,
            options.fwd,
        ) {
            native::Native::Ran(Err(e)) if e.needs_interpreter => notes.push(format!(
                "note: running in the interpreter: {} (at run time)",
                e.message
            )),
            native::Native::Ran(result) => {
                let result = match result {
                    Ok(value) => Ok(Output {
                        value,
                        ty,
                        interp: Interp::with_mode(module, options.mode),
                        notes: Vec::new(),
                    }),
                    Err(e) => Err(Diagnostic::new(Phase::Runtime, Some(e.span), e.message)),
                };
                return (result, notes);
            }
            native::Native::Fallback(note) => notes.push(note),
        }
    }
    let result = interpret(module, code, args, options).map(|mut out| {
        out.notes = notes.clone();
        out
    });
    (result, notes)
}

/// [`call`] in the interpreter.
fn interpret(
    module: Module,
    code: fluxion_core::CodeId,
    args: Vec<Value>,
    options: RunOptions,
) -> Result<Output, Diagnostic> {
    let span = module.code(code).span;
    let ty = module.code(code).ret.clone();
    let interp = interpreter(module, options);
    match interp.run_code(code, args, span) {
        Ok(value) => Ok(Output {
            value,
            ty,
            interp,
            notes: Vec::new(),
        }),
        Err(e) => Err(Diagnostic::new(Phase::Runtime, Some(e.span), e.message)),
    }
}

/// An interpreter for a module expanded for `options.mode`, set up as [`call`] sets up
/// its own, for an embedding that keeps one between calls (derivative codes are
/// translated once and reused; `fluxion gradbench` evaluates this way). Make it and
/// call it inside [`with_big_stack`].
pub fn interpreter(module: Module, options: RunOptions) -> Interp {
    let mut interp = Interp::with_mode(module, options.mode);
    interp.set_fwd_mode(options.fwd);
    interp.set_opt_level(options.opt);
    interp.set_library_source(PRELUDE_SOURCE);
    interp.set_stack_limit(stack_budget());
    interp.set_memory_limit(options.memory_limit.unwrap_or_else(default_memory_limit));
    interp
}

/// The stages `show` can print.
pub const STAGES: &[&str] = &[
    "core",
    "opt",
    "fwd",
    "chad",
    "chad-deps",
    "chad-fwd",
    "delta",
    "taylor",
    "jet",
    "deps",
    "resolved",
    "c",
];

/// Whether `stage` names a stage `show` can print (`taylorK` picks the order K,
/// `jetKxR` the directions and order).
pub fn is_stage(stage: &str) -> bool {
    STAGES.contains(&stage)
        || ((stage.starts_with("taylor") || stage.starts_with("jet")) && jet_stage(stage).is_ok())
}

fn decode_args(
    args_json: Option<&str>,
    params: &[Type],
    module: &Module,
) -> Result<Vec<Value>, String> {
    let json: serde_json::Value = match args_json {
        None => serde_json::Value::Array(vec![]),
        Some(text) => json::parse(text)?,
    };
    let serde_json::Value::Array(items) = json else {
        return Err("expected a JSON array with one element per parameter".into());
    };
    if items.len() != params.len() {
        return Err(format!(
            "the entry takes {} argument(s), but {} were given",
            params.len(),
            items.len()
        ));
    }
    let values = items
        .iter()
        .zip(params)
        .enumerate()
        .map(|(i, (j, t))| json::decode(j, t, module, &format!("$[{i}]")))
        .collect();
    json::drop_flat(serde_json::Value::Array(items));
    values
}

/// The entry name of an expression compiled by [`compile_with_expr`].
pub fn core_entry_name() -> &'static str {
    fluxion_typeck::EXPR_ENTRY
}

/// The jet shape a `show` stage names: `taylor` (order 2), `taylorK` (order K), `jet`
/// (2 directions, order 2), `jetKxR` (K directions, order R).
fn jet_stage(stage: &str) -> Result<fluxion_core::Jet, String> {
    let order = |r: &str| match r.parse::<u32>() {
        Ok(r) if (1..=64).contains(&r) => Ok(r),
        _ => Err(format!("unknown stage `{stage}`: the order must be 1..=64")),
    };
    if let Some(k) = stage.strip_prefix("taylor") {
        return Ok(fluxion_core::Jet::series(if k.is_empty() {
            2
        } else {
            order(k)?
        }));
    }
    let shape = stage.strip_prefix("jet").unwrap_or_default();
    if shape.is_empty() {
        return Ok(fluxion_core::Jet { dirs: 2, order: 2 });
    }
    let bad =
        || format!("unknown stage `{stage}`: write jetKxR, K directions (1..=16) and order R");
    let (k, r) = shape.split_once('x').ok_or_else(bad)?;
    let dirs = k
        .parse::<u32>()
        .ok()
        .filter(|k| (1..=16).contains(k))
        .ok_or_else(bad)?;
    Ok(fluxion_core::Jet {
        dirs,
        order: order(r)?,
    })
}
