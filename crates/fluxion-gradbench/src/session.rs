//! One protocol session: the modules defined so far, each with its interpreter, and
//! the answer to each message.

use fluxion_driver::native_backend::CallValues;
use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use fluxion_driver::core::CodeId;
use fluxion_driver::interp::{Interp, Value};
use fluxion_driver::{Diagnostic, OptLevel, PRELUDE_SOURCE, Phase, RunOptions, SourceFile};
use serde_json::{Value as Json, json};

use fluxion_driver::Backend;

use crate::{Config, bind, programs};

/// A function compiled by the native backend, with the module it was compiled from.
type Native = (
    fluxion_driver::native_backend::NativeProgram,
    fluxion_driver::core::Module,
);

/// A defined module: compiled and prepared once, run by one interpreter (and, with
/// `--backend native`, its functions as machine code).
struct Loaded {
    interp: Interp,
    /// Per function evaluated so far with `--backend native`: its machine code, or
    /// `None` where it runs in the interpreter.
    native: HashMap<CodeId, Option<Native>>,
    sources: Vec<SourceFile>,
    /// The program's text (for its output directives).
    text: String,
    /// Functions evaluated at least once (their derivative codes are translated).
    warm: HashSet<String>,
}

/// The state of a session.
pub struct Session {
    config: Config,
    modules: HashMap<String, Loaded>,
}

/// A failed request: the error text of the `success: false` answer.
type Failed = String;

impl Session {
    pub fn new(config: Config) -> Session {
        Session {
            config,
            modules: HashMap::new(),
        }
    }

    /// The response to one line of input. A bug in Fluxion (a panic) fails this
    /// message only, and forgets the module it was running (its interpreter may be
    /// left mid-call).
    pub fn handle(&mut self, line: &str) -> Json {
        let message: Json = match serde_json::from_str(line) {
            Ok(m) => m,
            Err(e) => return failure(Json::Null, format!("the message is not JSON: {e}")),
        };
        let id = message.get("id").cloned().unwrap_or(Json::Null);
        let module = message
            .get("module")
            .and_then(Json::as_str)
            .map(str::to_string);
        match catch_unwind(AssertUnwindSafe(|| self.dispatch(&id, &message))) {
            Ok(response) => response,
            Err(panic) => {
                if let Some(m) = module {
                    self.modules.remove(&m);
                }
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failure(id, format!("internal error in Fluxion (a bug): {what}"))
            }
        }
    }

    fn dispatch(&mut self, id: &Json, message: &Json) -> Json {
        if !message.is_object() {
            return failure(id.clone(), "the message is not a JSON object".into());
        }
        if id.is_null() {
            return failure(Json::Null, "the message has no `id`".into());
        }
        match message.get("kind").and_then(Json::as_str) {
            Some("start") => json!({"id": id, "tool": "fluxion", "config": self.describe()}),
            Some("define") => self.define(message).map_or_else(
                |e| failure(id.clone(), e),
                |timings| json!({"id": id, "success": true, "timings": timings}),
            ),
            Some("evaluate") => self.evaluate(message).map_or_else(
                |e| failure(id.clone(), e),
                |(output, timings)| {
                    json!({"id": id, "success": true, "output": output, "timings": timings})
                },
            ),
            Some(_) => json!({"id": id}),
            None => failure(id.clone(), "the message has no string `kind`".into()),
        }
    }

    /// The configuration the start response reports.
    fn describe(&self) -> Json {
        json!({
            "ad": self.config.ad.name(),
            "fwd": self.config.fwd.name(),
            "opt": self.config.opt == OptLevel::On,
            "backend": self.config.backend.name(),
        })
    }

    fn options(&self) -> RunOptions {
        RunOptions {
            mode: self.config.ad,
            fwd: self.config.fwd,
            opt: self.config.opt,
            memory_limit: self.config.memory_limit,
            backend: fluxion_driver::Backend::Interp,
        }
    }

    /// Compiles (parse, type-check) and prepares (expand, optimise) a module; the
    /// timings of the two steps.
    fn define(&mut self, message: &Json) -> Result<Json, Failed> {
        let name = field_str(message, "module")?;
        let (file, text) = programs::source(name, self.config.dir.as_deref())
            .ok_or_else(|| format!("fluxion has no module `{name}`"))?;
        let start = Instant::now();
        let mut program = fluxion_driver::compile(&file, &text).map_err(|f| f.render())?;
        let compiled = start.elapsed();
        let options = self.options();
        let start = Instant::now();
        program
            .prepare(options)
            .map_err(|d| fluxion_driver::render(&[d], &program.sources))?;
        let prepared = start.elapsed();
        let interp = fluxion_driver::interpreter(program.module, options);
        self.modules.insert(
            name.to_string(),
            Loaded {
                interp,
                native: HashMap::new(),
                sources: program.sources,
                text,
                warm: HashSet::new(),
            },
        );
        Ok(json!([
            timing("compile", compiled),
            timing("prepare", prepared)
        ]))
    }

    /// Runs a function at least `min_runs` times and for `min_seconds`, one `evaluate`
    /// timing a run. The first evaluation of a function in the session is preceded by
    /// a `warmup` run, timed apart: it translates the derivative code the function
    /// needs, which later runs reuse (compilation, not evaluation). Natively the input
    /// is converted once and each `evaluate` times the function's call alone, as the
    /// hand-written tools time theirs.
    fn evaluate(&mut self, message: &Json) -> Result<(Json, Json), Failed> {
        let name = field_str(message, "module")?;
        let function = field_str(message, "function")?;
        let input = message
            .get("input")
            .ok_or("the message has no `input`".to_string())?;
        let loaded = self
            .modules
            .get_mut(name)
            .ok_or_else(|| format!("module `{name}` is not defined (send `define` first)"))?;
        let (code, span, ty, args) = {
            let module = loaded.interp.module();
            let code = user_function(&module, function)
                .ok_or_else(|| format!("module `{name}` has no function `{function}`"))?;
            let args = bind::arguments(&module, code, input)?;
            let c = module.code(code);
            (code, c.span, c.ret.clone(), args)
        };
        let (min_runs, min_seconds) = bind::runs(input)?;
        let mut timings = Vec::new();
        if self.config.backend == Backend::Native && !loaded.native.contains_key(&code) {
            // Compiling to C and machine code is preparation: timed apart.
            let start = Instant::now();
            let compiled = fluxion_driver::compile_native(
                &loaded.interp.module(),
                code,
                &fluxion_driver::native_backend::Toolchain::default(),
                self.config.opt,
                self.config.fwd,
            )
            .ok();
            timings.push(timing("native_compile", start.elapsed()));
            loaded.native.insert(code, compiled);
        }
        let memory = self
            .config
            .memory_limit
            .unwrap_or_else(fluxion_driver::default_memory_limit) as u64;
        let run = |loaded: &Loaded| -> Result<(Value, Duration), Failed> {
            if let Some(Some((program, module))) = loaded.native.get(&code) {
                let start = Instant::now();
                let result = program.call(module, &args, NATIVE_STACK, memory);
                let elapsed = start.elapsed();
                match result {
                    Ok(v) => return Ok((v, elapsed)),
                    // A closure without an ahead-of-time translation: the interpreter.
                    Err(e) if e.needs_interpreter => {}
                    Err(e) => {
                        let d = Diagnostic::new(Phase::Runtime, Some(e.span), e.message);
                        return Err(fluxion_driver::render(&[d], &loaded.sources));
                    }
                }
            }
            let start = Instant::now();
            let result = loaded.interp.run_code(code, args.to_vec(), span);
            let elapsed = start.elapsed();
            result
                .map(|v| (v, elapsed))
                .map_err(|e| runtime_error(e, &loaded.sources))
        };
        if !loaded.warm.contains(function) {
            let (_, elapsed) = run(loaded)?;
            timings.push(timing("warmup", elapsed));
            loaded.warm.insert(function.to_string());
        }
        let mut last = None;
        // Native code runs its timed runs itself, on the input converted once (as
        // GradBench's hand-written tools do), each timing the function's call alone.
        if let Some(Some((program, module))) = loaded.native.get(&code) {
            let repeat = fluxion_driver::native_backend::Repeat {
                min_runs,
                min_time: Duration::from_secs_f64(min_seconds),
                max_runs: MAX_RUNS,
            };
            match program.call_repeated(module, &args, NATIVE_STACK, memory, repeat) {
                Ok((value, times)) => {
                    timings.extend(times.into_iter().map(|t| timing("evaluate", t)));
                    last = Some(value);
                }
                // A closure without an ahead-of-time translation: the interpreter.
                Err(e) if e.needs_interpreter => {}
                Err(e) => {
                    let d = Diagnostic::new(Phase::Runtime, Some(e.span), e.message);
                    return Err(fluxion_driver::render(&[d], &loaded.sources));
                }
            }
        }
        if last.is_none() {
            let (mut total, mut runs) = (Duration::ZERO, 0);
            while runs < min_runs || total.as_secs_f64() < min_seconds {
                let (value, elapsed) = run(loaded)?;
                last = Some(value);
                timings.push(timing("evaluate", elapsed));
                total += elapsed;
                runs += 1;
            }
        }
        let value = last.expect("at least one run");
        let shape = programs::output_shape(&loaded.text, function)?;
        let output = bind::output(&value, &ty, &loaded.interp.module(), &shape)?;
        Ok((output, Json::Array(timings)))
    }
}

/// The most timed runs of one `evaluate` natively (a function of a microsecond reaches
/// GradBench's `min_seconds` of 0.3 s well before).
const MAX_RUNS: u64 = 1 << 22;

/// Stack native code may use (evaluation runs on `with_big_stack`'s thread).
const NATIVE_STACK: usize = 512 << 20;

/// The user's top-level function (not the prelude's) that implements GradBench's
/// function `name`: the one of that name, else `name_`, as a name that is a Fluxion
/// built-in (`jacobian`) cannot be defined.
pub fn user_function(module: &fluxion_driver::core::Module, name: &str) -> Option<CodeId> {
    let find = |n: &str| {
        module
            .functions
            .get(n)
            .copied()
            .filter(|c| module.code(*c).span.source != PRELUDE_SOURCE)
    };
    find(name).or_else(|| find(&format!("{name}_")))
}

fn runtime_error(e: fluxion_driver::interp::RuntimeError, sources: &[SourceFile]) -> String {
    let d = Diagnostic::new(Phase::Runtime, Some(e.span), e.message);
    fluxion_driver::render(&[d], sources)
}

fn field_str<'a>(message: &'a Json, name: &str) -> Result<&'a str, Failed> {
    message
        .get(name)
        .and_then(Json::as_str)
        .ok_or_else(|| format!("the message has no string `{name}`"))
}

fn timing(name: &str, d: Duration) -> Json {
    json!({"name": name, "nanoseconds": d.as_nanos() as u64})
}

fn failure(id: Json, error: String) -> Json {
    json!({"id": id, "success": false, "error": error})
}
