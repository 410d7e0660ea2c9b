//! A compiled Fluxion module as the Python objects share it, and how its functions
//! run: natively (the default where a C compiler is present) or in the interpreter.
//!
//! Both backends take a call's arguments as the entry ABI's word stream
//! (`to_words.rs`) and give the result as one (`from_words.rs`): one conversion each
//! way. Natively, each function is compiled once per AD mode and kept
//! ([`NativeEntry`]); a call converts its arguments on the caller's thread (a
//! contiguous NumPy array is read in place, and copied once by the native code), runs
//! the machine code there with the GIL released and what is left of that thread's
//! stack ([`caller_stack`]), and converts the result from the stream the native code
//! wrote: no thread is spawned. A call that
//! runs out of that stack runs again on a big-stack evaluation thread (programs have
//! no effects, so the second run is the same run); one the native code hands over, or
//! a function it cannot compile, runs in the interpreter with a warning.
//!
//! In the interpreter, everything runs on a big-stack evaluation thread (kept between
//! calls: `eval_thread.rs`) with the GIL released: interpreter values are `Rc` (not
//! `Send`), so they live and die there; it re-attaches to Python to convert the
//! arguments and the result, decoding the argument stream into values and encoding
//! the result value into a stream. Each thread keeps the interpreters it ran, each
//! with its own copy of the module expanded for its AD mode (the interpreter adds
//! run-time AD translations to its module), so concurrent calls share nothing mutable.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use fluxion_driver::core::{CodeId, Module, Type};
use fluxion_driver::interp::Interp;
use fluxion_driver::native_backend::{
    NativeProgram, RuntimeError, Toolchain, decode_values, encode_value,
};
use fluxion_driver::value_path::ValuePath;
use fluxion_driver::{AdMode, Backend, Diagnostic, FwdMode, OptLevel, Phase, Program, SourceFile};
use pyo3::prelude::*;

use crate::errors::{CallError, FxError, Kind};
use crate::from_words::{refuse_functions, to_python};
use crate::to_words::Words;

pub struct Compiled {
    /// This module's number in the process (no two alive or dead share one): the key
    /// of the interpreters evaluation threads keep for it.
    id: u64,
    /// The file name diagnostics show and the user's text (with any generated
    /// wrappers appended), from which derived modules are compiled.
    pub name: String,
    pub text: String,
    /// The type-checked module, operators not yet expanded.
    pub module: Module,
    pub sources: Vec<SourceFile>,
    /// The module expanded for each AD mode used so far.
    expanded: Mutex<HashMap<AdMode, Arc<Module>>>,
    /// Modules with a generated transformation wrapper, by their source.
    derived: Mutex<HashMap<String, Arc<Compiled>>>,
    /// The functions compiled natively, by AD mode and name: a slot per function
    /// called so far, filled by its first call (callers arriving meanwhile wait on it).
    native: Mutex<HashMap<(AdMode, String), NativeSlot>>,
}

/// A function's native program once compiled.
type NativeSlot = Arc<Mutex<Option<Arc<NativeEntry>>>>;

/// A function compiled to machine code for one AD mode — the program and the module it
/// was compiled from (which types its values) — or the note saying why it was not
/// (the interpreter runs it).
type NativeEntry = Result<(NativeProgram, Module), String>;

/// The stack a native call may use on the caller's thread: what is left of it but a
/// margin, or `None` where that is too little to be worth it (the runtime frees deep
/// values in constant stack only with a few MiB of room: `runtime.c`'s
/// `FX_LATER_ROOM`); a deeper recursion runs again on the big-stack thread.
fn caller_stack() -> Option<usize> {
    const MARGIN: usize = 512 << 10;
    const LEAST: usize = 2 << 20;
    let left = stacker::remaining_stack()?.saturating_sub(MARGIN);
    (left >= LEAST).then_some(left)
}

/// The length, in words, of the last native call's argument stream: a contiguous
/// NumPy array adds two (`fluxion._fluxion.argument_words()`, which the test that
/// arrays are read in place reads).
pub static ARGUMENT_WORDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many functions this process has compiled natively (each once per module and
/// AD mode): `fluxion._fluxion.native_compiles()`, which tests of the cache read.
pub static NATIVE_COMPILES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The backend a module's functions run on unless told otherwise: native code where a
/// C compiler is present (checked once), else the interpreter.
pub fn default_backend() -> Backend {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    if *AVAILABLE.get_or_init(|| Toolchain::default().available()) {
        Backend::Native
    } else {
        Backend::Interp
    }
}

impl Compiled {
    /// Parses and type-checks `text` (call on the evaluation thread).
    pub fn compile(name: &str, text: &str) -> Result<Compiled, FxError> {
        let program = fluxion_driver::compile(name, text)
            .map_err(|f| FxError::from_diagnostics(&f.diagnostics, &f.sources))?;
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Ok(Compiled {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            name: name.to_string(),
            text: text.to_string(),
            module: program.module,
            sources: program.sources,
            expanded: Mutex::default(),
            derived: Mutex::default(),
            native: Mutex::default(),
        })
    }

    /// The module compiled from this one's text followed by `wrapper` (memoised).
    pub fn derive(&self, wrapper: &str) -> Result<Arc<Compiled>, FxError> {
        if let Some(c) = lock(&self.derived).get(wrapper) {
            return Ok(c.clone());
        }
        let text = format!("{}\n\n{wrapper}", self.text.trim_end());
        let compiled = Arc::new(Compiled::compile(&self.name, &text)?);
        lock(&self.derived).insert(wrapper.to_string(), compiled.clone());
        Ok(compiled)
    }

    /// The module with its operators expanded for `mode` and optimised (memoised).
    fn expanded(&self, mode: AdMode) -> Result<Arc<Module>, FxError> {
        if let Some(m) = lock(&self.expanded).get(&mode) {
            return Ok(m.clone());
        }
        let mut program = Program {
            module: self.module.clone(),
            sources: Vec::new(),
        };
        program
            .prepare(mode.into())
            .map_err(|d| FxError::from_diagnostics(&[d], &self.sources))?;
        let module = Arc::new(program.module);
        lock(&self.expanded).insert(mode, module.clone());
        Ok(module)
    }

    /// A user-visible top-level function: its code, parameter names and types, and
    /// result type.
    pub fn function(&self, name: &str) -> Option<Signature> {
        let &code = self.module.functions.get(name)?;
        if self.module.code(code).span.source == fluxion_driver::PRELUDE_SOURCE {
            return None;
        }
        let Type::Fn(params, ret) = self.module.code_ty(code) else {
            return None;
        };
        let names = self
            .module
            .code(code)
            .params
            .iter()
            .map(|v| self.module.var(*v).name.clone())
            .collect();
        Some(Signature {
            code,
            names,
            params,
            ret: *ret,
        })
    }

    /// [`Compiled::function`] of a name the bindings made sure exists.
    fn called(&self, name: &str) -> Result<Signature, FxError> {
        self.function(name)
            .ok_or_else(|| FxError::new(Kind::Internal, format!("no function `{name}`")))
    }

    /// The user's top-level functions, in source order.
    pub fn function_names(&self) -> Vec<String> {
        let mut codes: Vec<(CodeId, String)> = self
            .module
            .functions
            .iter()
            .filter(|(_, c)| self.module.code(**c).span.source != fluxion_driver::PRELUDE_SOURCE)
            .map(|(n, c)| (*c, n.clone()))
            .collect();
        codes.sort();
        codes.into_iter().map(|(_, n)| n).collect()
    }

    /// Calls function `name` with Python arguments (already matched to its
    /// parameters) on `backend`; errors call it `label`.
    #[allow(clippy::too_many_arguments)]
    pub fn call(
        self: &Arc<Self>,
        py: Python<'_>,
        name: &str,
        label: &str,
        args: Vec<Py<PyAny>>,
        mode: AdMode,
        backend: Backend,
    ) -> PyResult<Py<PyAny>> {
        if backend == Backend::Native {
            let entry = self.native_entry(py, mode, name)?;
            match &*entry {
                Ok((program, module)) => {
                    if let Some(result) =
                        self.call_native(py, program, module, name, label, &args)?
                    {
                        return Ok(result);
                    }
                }
                Err(note) => warn(py, note)?,
            }
        }
        self.call_interp(py, name, label, args, mode)
    }

    /// The native program of `name` for `mode`, compiled on first use (on the
    /// evaluation thread: resolving operators ahead of time recurses).
    fn native_entry(
        self: &Arc<Self>,
        py: Python<'_>,
        mode: AdMode,
        name: &str,
    ) -> PyResult<Arc<NativeEntry>> {
        let slot = lock(&self.native)
            .entry((mode, name.to_string()))
            .or_default()
            .clone();
        // Threads making the same first call at once wait for the first one's compile
        // (without the GIL, which the compile does not need).
        let entry = py.detach(|| {
            let mut slot = lock(&slot);
            if let Some(e) = &*slot {
                return Ok(e.clone());
            }
            let entry = Arc::new(evaluate(|| {
                let module = self.expanded(mode)?;
                let sig = self.called(name)?;
                Ok(fluxion_driver::compile_native(
                    &module,
                    sig.code,
                    &Toolchain::default(),
                    OptLevel::On,
                    FwdMode::default(),
                ))
            })?);
            NATIVE_COMPILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            *slot = Some(entry.clone());
            Ok(entry)
        });
        entry.map_err(|e: CallError| e.into_pyerr(py))
    }

    /// A native call on the caller's thread; `None` when the native code hands the
    /// run over to the interpreter (with a warning).
    fn call_native(
        self: &Arc<Self>,
        py: Python<'_>,
        program: &NativeProgram,
        module: &Module,
        name: &str,
        label: &str,
        args: &[Py<PyAny>],
    ) -> PyResult<Option<Py<PyAny>>> {
        let sig = self.called(name).map_err(|e| e.into_pyerr(py))?;
        refuse_functions(&sig.ret, module).map_err(|e| e.into_pyerr(py))?;
        // The stream may point into the arguments' NumPy buffers: `args` keeps them
        // alive until the call returns.
        let convert = |py: Python<'_>| sig.arguments(py, args, module, label, Words::native());
        // The result read straight from the native code's stream, the GIL taken back
        // for it (no thread holding the GIL waits for the locks held here).
        let run = |words: &[u64], stack: usize| {
            ARGUMENT_WORDS.store(words.len() as u64, std::sync::atomic::Ordering::Relaxed);
            let library = library_lock(program);
            let _held = lock(&library);
            catch_unwind(AssertUnwindSafe(|| {
                program.call_words(words, stack, memory_limit() as u64, |out| {
                    Some(Python::attach(|py| {
                        to_python(py, out, &sig.ret, module).map(Bound::unbind)
                    }))
                })
            }))
            .unwrap_or_else(|p| Err(RuntimeError::internal(&panic_message(p))))
        };
        // On the big-stack thread, with its budget: where the caller's thread has
        // too little stack, or the run on it ran out.
        let on_big_stack = || {
            on_eval_thread(py, || {
                let words = Python::attach(convert)?;
                self.native_result(run(&words, fluxion_driver::stack_budget()))
            })
        };
        let result = match caller_stack() {
            None => on_big_stack()?,
            Some(stack) => {
                let words = convert(py).map_err(|e| e.into_pyerr(py))?;
                match py.detach(|| run(&words, stack)) {
                    Err(e) if e.message.starts_with("stack depth exceeded") => on_big_stack()?,
                    r => self.native_result(r).map_err(|e| e.into_pyerr(py))?,
                }
            }
        };
        match result {
            Ok(v) => Ok(Some(v)),
            Err(note) => warn(py, &note).map(|()| None),
        }
    }

    /// A native call's result; `Err(note)` when the run must be handed to the
    /// interpreter.
    fn native_result(
        &self,
        result: Result<Result<Py<PyAny>, CallError>, RuntimeError>,
    ) -> Result<Result<Py<PyAny>, String>, CallError> {
        match result {
            Ok(value) => value.map(Ok),
            Err(e) if e.needs_interpreter => Ok(Err(format!(
                "running in the interpreter: {} (at run time)",
                e.message
            ))),
            Err(e) => Err(FxError::from_diagnostics(
                &[Diagnostic::new(Phase::Runtime, Some(e.span), e.message)],
                &self.sources,
            )
            .into()),
        }
    }

    /// Calls function `name` in the interpreter, on the evaluation thread.
    fn call_interp(
        self: &Arc<Self>,
        py: Python<'_>,
        name: &str,
        label: &str,
        args: Vec<Py<PyAny>>,
        mode: AdMode,
    ) -> PyResult<Py<PyAny>> {
        on_eval_thread(py, || {
            let module = self.expanded(mode)?;
            let sig = self.called(name)?;
            let words =
                Python::attach(|py| sig.arguments(py, &args, &module, label, Words::inline()))?;
            let values = decode_values(&words, &sig.params, &module).ok_or_else(|| {
                FxError::new(
                    Kind::Internal,
                    "internal error: a malformed argument stream",
                )
            })?;
            let mut interp = kept_interpreter(self.id, mode)
                .unwrap_or_else(|| fluxion_driver::interpreter((*module).clone(), mode.into()));
            interp.set_stack_limit(fluxion_driver::stack_budget());
            interp.set_memory_limit(memory_limit());
            let span = module.code(sig.code).span;
            let value = interp.run_code(sig.code, values, span).map_err(|e| {
                // A failed run may leave state behind (its tapes): not kept.
                FxError::from_diagnostics(
                    &[Diagnostic::new(Phase::Runtime, Some(e.span), e.message)],
                    &self.sources,
                )
            })?;
            let ty = module.code(sig.code).ret.clone();
            let words = {
                let m = interp.module();
                refuse_functions(&ty, &m)?;
                encode_value(&value, &ty, &m).ok_or_else(|| {
                    FxError::new(Kind::Internal, "internal error: a result not of its type")
                })?
            };
            drop(value);
            let result = Python::attach(|py| {
                to_python(py, &words, &ty, &interp.module()).map(Bound::unbind)
            });
            keep_interpreter(self.id, mode, interp);
            result
        })
    }
}

/// How many interpreters an evaluation thread keeps (the most recently used).
const KEPT_INTERPRETERS: usize = 8;

thread_local! {
    /// The interpreters kept on this evaluation thread, by module id and AD mode,
    /// most recent last: a call reuses one (its compiled codes and run-time
    /// translations) instead of copying the module into a new one.
    static INTERPRETERS: std::cell::RefCell<Vec<((u64, AdMode), Interp)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The interpreter kept for module `id` and `mode` on this thread, taken out.
fn kept_interpreter(id: u64, mode: AdMode) -> Option<Interp> {
    INTERPRETERS.with(|k| {
        let mut k = k.borrow_mut();
        let i = k.iter().position(|(key, _)| *key == (id, mode))?;
        Some(k.remove(i).1)
    })
}

/// Keeps an interpreter that ran to completion for the next call on this thread.
fn keep_interpreter(id: u64, mode: AdMode, interp: Interp) {
    INTERPRETERS.with(|k| {
        let mut k = k.borrow_mut();
        if k.len() >= KEPT_INTERPRETERS {
            k.remove(0);
        }
        k.push(((id, mode), interp));
    });
}

/// The module compiled from `text` under `name`, shared by every `compile` of the same
/// text in this process while one is alive (an unpickled function finds the module,
/// and the native code compiled for it, of an earlier one).
pub fn shared(py: Python<'_>, name: &str, text: &str) -> PyResult<Arc<Compiled>> {
    type Key = (String, String);
    static MODULES: OnceLock<Mutex<HashMap<Key, Weak<Compiled>>>> = OnceLock::new();
    let modules = MODULES.get_or_init(Mutex::default);
    let key = (name.to_string(), text.to_string());
    if let Some(c) = lock(modules).get(&key).and_then(Weak::upgrade) {
        return Ok(c);
    }
    let (n, t) = key.clone();
    let compiled = Arc::new(on_eval_thread(py, move || Ok(Compiled::compile(&n, &t)?))?);
    let mut modules = lock(modules);
    modules.retain(|_, m| m.strong_count() > 0);
    modules.insert(key, Arc::downgrade(&compiled));
    Ok(compiled)
}

/// A function's signature as the bindings need it.
pub struct Signature {
    pub code: CodeId,
    pub names: Vec<String>,
    pub params: Vec<Type>,
    pub ret: Type,
}

impl Signature {
    /// The Python arguments (matched to the parameters) as one stream of `words` for
    /// `module`, for a call of the function errors call `label`: the one conversion
    /// of both backends.
    fn arguments(
        &self,
        py: Python<'_>,
        args: &[Py<PyAny>],
        module: &Module,
        label: &str,
        mut words: Words,
    ) -> Result<Vec<u64>, CallError> {
        for (a, (t, n)) in args.iter().zip(self.params.iter().zip(&self.names)) {
            words
                .push(a.bind(py), t, module, &ValuePath::Root(n))
                .map_err(|e| in_call(e, label))?;
        }
        Ok(words.words)
    }
}

/// Prefixes a conversion error with the function it was an argument of.
fn in_call(e: CallError, name: &str) -> CallError {
    match e {
        CallError::Fx(mut e) => {
            e.message = format!("calling `{name}`: {}", e.message);
            e.rendered = e.message.clone();
            CallError::Fx(e)
        }
        other => other,
    }
}

/// The memory budget of an evaluation: the CLI's default, computed once (it reads
/// `/proc`). Without the counting allocator, only single large requests are checked.
fn memory_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(fluxion_driver::default_memory_limit)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves a cache, which stays consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on a big-stack evaluation thread with the GIL released; a panic becomes
/// `FluxionInternalError`, never a crash.
pub fn on_eval_thread<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, CallError> + Send,
) -> PyResult<T> {
    py.detach(|| evaluate(f)).map_err(|e| e.into_pyerr(py))
}

/// [`on_eval_thread`] where the GIL is released already.
fn evaluate<T: Send>(f: impl FnOnce() -> Result<T, CallError> + Send) -> Result<T, CallError> {
    catch_unwind(AssertUnwindSafe(|| {
        crate::eval_thread::run(|| {
            catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panic_error(p)))
        })
    }))
    .unwrap_or_else(|p| Err(panic_error(p)))
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn panic_error(payload: Box<dyn std::any::Any + Send>) -> CallError {
    FxError::new(
        Kind::Internal,
        format!(
            "internal error in Fluxion (please report it): {}",
            panic_message(payload)
        ),
    )
    .into()
}

/// The lock of a compiled library: its runtime keeps its state (stack limit, memory
/// count, tapes) in the library's globals, and one library (one file in the cache,
/// loaded once per process) may serve several `Compiled`s, so calls into it take
/// turns.
fn library_lock(program: &NativeProgram) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<std::path::PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    lock(LOCKS.get_or_init(Mutex::default))
        .entry(program.path.clone())
        .or_default()
        .clone()
}

/// A `RuntimeWarning` saying a call ran in the interpreter, and why.
fn warn(py: Python<'_>, note: &str) -> PyResult<()> {
    let note = note.trim_start_matches("note: ");
    let warnings = py.import("warnings")?;
    let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
    warnings.call_method1("warn", (format!("fluxion: {note}"), category, 2))?;
    Ok(())
}
