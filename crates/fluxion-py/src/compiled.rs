//! A compiled Fluxion module as the Python objects share it, and the one way
//! anything runs: on a big-stack evaluation thread, with the GIL released.
//!
//! Interpreter values are `Rc` (not `Send`), so they live and die on that thread:
//! it re-attaches to Python to convert the arguments (one copy of each array), runs
//! without the GIL, and re-attaches to convert the result. Each call evaluates a copy
//! of the module expanded for its AD mode (the interpreter adds run-time AD
//! translations to its module), so concurrent calls share nothing mutable.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock};

use fluxion_driver::core::{CodeId, Module, Type};
use fluxion_driver::value_path::ValuePath;
use fluxion_driver::{AdMode, Program, RunOptions, SourceFile};
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
    /// parameters), on the evaluation thread; errors call it `label`.
    pub fn call(
        self: &Arc<Self>,
        py: Python<'_>,
        name: &str,
        label: &str,
        args: Vec<Py<PyAny>>,
        mode: AdMode,
    ) -> PyResult<Py<PyAny>> {
        on_eval_thread(py, || {
            let module = self.expanded(mode)?;
            let sig = self
                .function(name)
                .ok_or_else(|| FxError::new(Kind::Internal, format!("no function `{name}`")))?;
            let values = Python::attach(|py| {
                args.iter()
                    .zip(sig.params.iter().zip(&sig.names))
                    .map(|(a, (t, n))| {
                        to_value(a.bind(py), t, &module, &ValuePath::Root(n))
                            .map_err(|e| in_call(e, label))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })?;
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

/// A function's signature as the bindings need it.
pub struct Signature {
    pub code: CodeId,
    pub names: Vec<String>,
    pub params: Vec<Type>,
    pub ret: Type,
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

fn panic_error(payload: Box<dyn std::any::Any + Send>) -> CallError {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    FxError::new(
        Kind::Internal,
        format!("internal error in Fluxion (please report it): {what}"),
    )
    .into()
}
