//! A compiled Fluxion module as the Python objects share it, and how its functions
//! run: natively (the default where a C compiler is present) or in the interpreter.
//!
//! Natively, each function is compiled once per AD mode and kept ([`NativeEntry`]);
//! a call converts its arguments on the caller's thread (one copy of each array),
//! runs the machine code there with the GIL released and what is left of that
//! thread's stack ([`caller_stack`]), and converts the result: no thread is spawned. A call that
//! runs out of that stack runs again on a big-stack evaluation thread (programs have
//! no effects, so the second run is the same run); one the native code hands over, or
//! a function it cannot compile, runs in the interpreter with a warning.
//!
//! In the interpreter, everything runs on a big-stack evaluation thread with the GIL
//! released: interpreter values are `Rc` (not `Send`), so they live and die there;
//! it re-attaches to Python to convert the arguments and the result. Each call
//! evaluates a copy of the module expanded for its AD mode (the interpreter adds
//! run-time AD translations to its module), so concurrent calls share nothing mutable.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use fluxion_driver::core::{CodeId, Module, Type};
use fluxion_driver::interp::Value;
use fluxion_driver::native_backend::{CallValues, NativeProgram, RuntimeError, Toolchain};
use fluxion_driver::value_path::ValuePath;
use fluxion_driver::{
    AdMode, Backend, Diagnostic, FwdMode, OptLevel, Phase, Program, RunOptions, SourceFile,
};
use pyo3::prelude::*;

use crate::errors::{CallError, FxError, Kind};
use crate::to_python::to_python;
use crate::to_value::to_value;

pub struct Compiled {
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
    /// The functions compiled natively so far, by AD mode and name.
    native: Mutex<HashMap<(AdMode, String), Arc<NativeEntry>>>,
}

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
        Ok(Compiled {
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
        let key = (mode, name.to_string());
        if let Some(e) = lock(&self.native).get(&key) {
            return Ok(e.clone());
        }
        let entry = on_eval_thread(py, || {
            let module = self.expanded(mode)?;
            let sig = self.called(name)?;
            Ok(fluxion_driver::compile_native(
                &module,
                sig.code,
                &Toolchain::default(),
                OptLevel::On,
                FwdMode::default(),
            ))
        })?;
        NATIVE_COMPILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let entry = Arc::new(entry);
        lock(&self.native).insert(key, entry.clone());
        Ok(entry)
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
        let convert = |py: Python<'_>| sig.arguments(py, args, module, label);
        let run = |values: &[Value], stack: usize| {
            let library = library_lock(program);
            let _held = lock(&library);
            catch_unwind(AssertUnwindSafe(|| {
                program.call(module, values, stack, memory_limit() as u64)
            }))
            .unwrap_or_else(|p| Err(RuntimeError::internal(&panic_message(p))))
        };
        // On the big-stack thread, with its budget: where the caller's thread has
        // too little stack, or the run on it ran out.
        let on_big_stack = || {
            on_eval_thread(py, || {
                let values = Python::attach(convert)?;
                let result = run(&values, fluxion_driver::stack_budget());
                self.native_result(result, &sig.ret, module)
            })
        };
        let result = match caller_stack() {
            None => on_big_stack()?,
            Some(stack) => {
                let values = OnThisThread(convert(py).map_err(|e| e.into_pyerr(py))?);
                match py.detach(|| OnThisThread(run(values.get(), stack))).0 {
                    Err(e) if e.message.starts_with("stack depth exceeded") => on_big_stack()?,
                    r => self
                        .native_result(r, &sig.ret, module)
                        .map_err(|e| e.into_pyerr(py))?,
                }
            }
        };
        match result {
            Ok(v) => Ok(Some(v)),
            Err(note) => warn(py, &note).map(|()| None),
        }
    }

    /// The Python value of a native call's result; `Err(note)` when the run must be
    /// handed to the interpreter.
    fn native_result(
        &self,
        result: Result<Value, RuntimeError>,
        ret: &Type,
        module: &Module,
    ) -> Result<Result<Py<PyAny>, String>, CallError> {
        match result {
            Ok(value) => {
                Python::attach(|py| to_python(py, &value, ret, module).map(|v| Ok(v.unbind())))
            }
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
            let values = Python::attach(|py| sig.arguments(py, &args, &module, label))?;
            let options = RunOptions {
                mode,
                memory_limit: Some(memory_limit()),
                ..RunOptions::default()
            };
            let out = fluxion_driver::call((*module).clone(), sig.code, values, options)
                .map_err(|d| FxError::from_diagnostics(&[d], &self.sources))?;
            let result = Python::attach(|py| {
                to_python(py, &out.value, &out.ty, &out.interp.module()).map(Bound::unbind)
            })?;
            Ok(result)
        })
    }
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
    /// The Python arguments (matched to the parameters) as values of `module`, for a
    /// call of the function errors call `label`: the one conversion of both backends.
    fn arguments(
        &self,
        py: Python<'_>,
        args: &[Py<PyAny>],
        module: &Module,
        label: &str,
    ) -> Result<Vec<Value>, CallError> {
        args.iter()
            .zip(self.params.iter().zip(&self.names))
            .map(|(a, (t, n))| {
                to_value(a.bind(py), t, module, &ValuePath::Root(n)).map_err(|e| in_call(e, label))
            })
            .collect()
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
    let result = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            fluxion_driver::with_big_stack(|| {
                catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panic_error(p)))
            })
        }))
        .unwrap_or_else(|p| Err(panic_error(p)))
    });
    result.map_err(|e| e.into_pyerr(py))
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

/// A value that stays on the thread that made it, carried through `Python::detach`
/// (whose closure must be `Send`).
struct OnThisThread<T>(T);

impl<T> OnThisThread<T> {
    /// The value (a method, so a closure captures the wrapper, not its field).
    fn get(&self) -> &T {
        &self.0
    }
}

// SAFETY: `Python::detach` runs its closure on the calling thread, before it returns;
// the interpreter values (`Rc`) inside are made, used and dropped on that one thread.
unsafe impl<T> Send for OnThisThread<T> {}
// SAFETY: as above: shared only with the closure, on the same thread.
unsafe impl<T> Sync for OnThisThread<T> {}

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
