//! `import fluxion`: Fluxion modules whose functions are Python callables, with NumPy
//! arrays in and out. The Python half of the package (`python/fluxion/`) adds the
//! JAX-style transformations over [`Function::derive`].
//!
//! - `compiled.rs`: the shared compiled module and how its functions run;
//! - `eval_thread.rs`: the big-stack evaluation threads, kept between calls;
//! - `to_words.rs`, `from_words.rs`, `variant.rs`: conversions to and from the entry
//!   ABI's word stream, which both backends take and give;
//! - `transform.rs`: transformations as generated Fluxion source;
//! - `errors.rs`: the `fluxion.Error` hierarchy.

mod compiled;
mod errors;
mod eval_thread;
mod from_words;
mod to_words;
mod transform;
mod variant;

use std::sync::Arc;

use fluxion_driver::{AdMode, Backend};
use pyo3::exceptions::PyAttributeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use compiled::{Compiled, default_backend, on_eval_thread};
use errors::{FxError, Kind};
use transform::Transform;

/// What `__reduce__` returns: the callable that rebuilds an object, and its arguments.
type Reduced<A> = (Py<PyAny>, A);

/// A compiled Fluxion module: its top-level functions are attributes (`m.f`), and
/// so are its enum constructors (`m.Circle(1.0)` makes a `fluxion.Variant`).
#[pyclass(frozen, module = "fluxion", name = "Module")]
struct PyModuleObj {
    compiled: Arc<Compiled>,
    /// The backend its functions run on.
    backend: Backend,
}

#[pymethods]
impl PyModuleObj {
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        if self.compiled.function(name).is_some() {
            let f = Function {
                compiled: self.compiled.clone(),
                entry: name.to_string(),
                label: name.to_string(),
                mode: AdMode::default(),
                backend: self.backend,
            };
            return Ok(Py::new(py, f)?.into_any());
        }
        for def in &self.compiled.module.enums {
            if def.origin.is_some() {
                continue;
            }
            if let Some(v) = def.variants.iter().find(|v| v.name == name) {
                let make = py.import("fluxion._variant")?.getattr("constructor")?;
                return Ok(make
                    .call1((def.name.as_str(), name, v.fields.len()))?
                    .unbind());
            }
        }
        Err(PyAttributeError::new_err(format!(
            "the Fluxion module has no function or constructor `{name}` (functions: {})",
            self.compiled.function_names().join(", ")
        )))
    }

    /// The names of the module's own top-level functions, in source order.
    #[getter]
    fn functions(&self) -> Vec<String> {
        self.compiled.function_names()
    }

    /// The source text the module was compiled from.
    #[getter]
    fn source(&self) -> &str {
        &self.compiled.text
    }

    /// The backend its functions run on: `"native"` or `"interp"`.
    #[getter]
    fn backend(&self) -> &'static str {
        self.backend.name()
    }

    /// Pickles by source, name and backend: unpickling compiles the source again
    /// (once per process: see [`compiled::shared`]).
    fn __reduce__(&self, py: Python<'_>) -> PyResult<Reduced<(String, String, &'static str)>> {
        let rebuild = py.import("fluxion._fluxion")?.getattr("compile")?.unbind();
        Ok((
            rebuild,
            (
                self.compiled.text.clone(),
                self.compiled.name.clone(),
                self.backend.name(),
            ),
        ))
    }

    fn __dir__(&self) -> Vec<String> {
        let mut names = self.compiled.function_names();
        names.extend(["functions".into(), "source".into(), "backend".into()]);
        names
    }

    fn __repr__(&self) -> String {
        format!(
            "<fluxion.Module {} with functions {}>",
            self.compiled.name,
            self.compiled.function_names().join(", ")
        )
    }
}

/// A Fluxion function as a Python callable: `f(*args, **kwargs)` converts the
/// arguments, runs the function with the GIL released, and converts the result.
#[pyclass(frozen, module = "fluxion")]
struct Function {
    compiled: Arc<Compiled>,
    /// The top-level function to call (a generated wrapper for a derived function).
    entry: String,
    /// What the user calls it (`grad(f)`), for messages.
    label: String,
    mode: AdMode,
    backend: Backend,
}

#[pymethods]
impl Function {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let sig = self.signature_of()?;
        let n = sig.params.len();
        let mut slots: Vec<Option<Py<PyAny>>> = (0..n).map(|_| None).collect();
        let arity = || {
            FxError::new(
                Kind::Argument,
                format!(
                    "`{}` takes {n} argument(s) ({}), {} given",
                    self.label,
                    sig.names.join(", "),
                    args.len() + kwargs.map_or(0, |k| k.len())
                ),
            )
            .into_pyerr(py)
        };
        if args.len() > n {
            return Err(arity());
        }
        for (i, a) in args.iter().enumerate() {
            slots[i] = Some(a.unbind());
        }
        if let Some(kwargs) = kwargs {
            for (k, v) in kwargs.iter() {
                let key: String = k.extract()?;
                let Some(i) = sig.names.iter().position(|n| *n == key) else {
                    return Err(FxError::new(
                        Kind::Argument,
                        format!("`{}` has no parameter `{key}`", self.label),
                    )
                    .into_pyerr(py));
                };
                if slots[i].is_some() {
                    return Err(FxError::new(
                        Kind::Argument,
                        format!("`{}` got two values for `{key}`", self.label),
                    )
                    .into_pyerr(py));
                }
                slots[i] = Some(v.unbind());
            }
        }
        let args = slots
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(arity)?;
        self.compiled
            .call(py, &self.entry, &self.label, args, self.mode, self.backend)
    }

    /// The function's name (for a derived function, how it was made: `grad(f)`).
    #[getter]
    fn name(&self) -> &str {
        &self.label
    }

    /// The parameter names, in order.
    #[getter]
    fn parameters(&self) -> PyResult<Vec<String>> {
        Ok(self.signature_of()?.names)
    }

    /// The Fluxion signature, e.g. `fn(x: [Real], y: Real) -> Real`.
    #[getter]
    fn signature(&self) -> PyResult<String> {
        let sig = self.signature_of()?;
        let enums = &self.compiled.module.enums;
        let params: Vec<String> = sig
            .names
            .iter()
            .zip(&sig.params)
            .map(|(n, t)| format!("{n}: {}", t.display(enums)))
            .collect();
        Ok(format!(
            "fn({}) -> {}",
            params.join(", "),
            sig.ret.display(enums)
        ))
    }

    /// The AD mode (`--ad`) behind this function's reverse-mode operators.
    #[getter]
    fn ad(&self) -> &'static str {
        self.mode.name()
    }

    /// The same function run with another AD mode (`"fwd"`, `"chad"`, `"delta"`).
    fn with_ad(&self, ad: &str) -> PyResult<Function> {
        Ok(Function {
            compiled: self.compiled.clone(),
            entry: self.entry.clone(),
            label: self.label.clone(),
            mode: parse_mode(ad)?,
            backend: self.backend,
        })
    }

    /// The backend this function runs on: `"native"` or `"interp"`.
    #[getter]
    fn backend(&self) -> &'static str {
        self.backend.name()
    }

    /// The same function run on another backend (`"native"`, `"interp"`).
    fn with_backend(&self, backend: &str) -> PyResult<Function> {
        Ok(Function {
            compiled: self.compiled.clone(),
            entry: self.entry.clone(),
            label: self.label.clone(),
            mode: self.mode,
            backend: parse_backend(Some(backend))?,
        })
    }

    /// A transformation of this function as a new function (used by
    /// `fluxion.grad` and the others; see `transform.rs`).
    #[pyo3(signature = (kind, argnums, order=None))]
    fn derive(
        &self,
        py: Python<'_>,
        kind: &str,
        argnums: Vec<usize>,
        order: Option<u32>,
    ) -> PyResult<Function> {
        let t = Transform::parse(kind, order).ok_or_else(|| {
            FxError::new(Kind::Argument, format!("unknown transformation `{kind}`")).into_pyerr(py)
        })?;
        if let Transform::Taylor(k) | Transform::Jet(k) = t
            && !(1..=64).contains(&k)
        {
            return Err(FxError::new(
                Kind::Argument,
                format!("{kind}: the order must be 1 to 64, found {k}"),
            )
            .into_pyerr(py));
        }
        // Only the reverse-mode operators depend on the mode (docs/language.md §5).
        let reverse = !matches!(
            t,
            Transform::Jvp | Transform::Taylor(_) | Transform::Jet(_) | Transform::Vmap
        );
        if reverse && !self.mode.is_implemented() {
            return Err(FxError::new(
                Kind::Unsupported,
                format!(
                    "{kind}: ad='{}' is not implemented yet; use ad='fwd'",
                    self.mode.name()
                ),
            )
            .into_pyerr(py));
        }
        let sig = self.signature_of()?;
        // As `jax.grad` of an integer input: an argument without a real has no
        // gradient (its tangent type is `()`), so asking for one is a mistake.
        if matches!(t, Transform::Grad | Transform::ValueAndGrad) {
            let module = &self.compiled.module;
            for &i in &argnums {
                let Some(ty) = sig.params.get(i) else {
                    continue;
                };
                if !module.has_leaf(ty, &|t| matches!(t, fluxion_driver::core::Type::Real)) {
                    return Err(FxError::new(
                        Kind::Argument,
                        format!(
                            "{kind}: argument {i} (`{}: {}`) holds no Real, so it has no \
                             gradient; differentiate with respect to an argument that does",
                            sig.names[i],
                            ty.display(&module.enums)
                        ),
                    )
                    .into_pyerr(py));
                }
            }
        }
        let compiled = self.compiled.clone();
        let name = self.entry.clone();
        let (wname, derived) = on_eval_thread(py, move || {
            let (wname, source) = transform::wrapper(&compiled.module, &name, &sig, t, &argnums)?;
            Ok((wname, compiled.derive(&source)?))
        })?;
        Ok(Function {
            compiled: derived,
            entry: wname,
            label: format!("{kind}({})", self.label),
            mode: self.mode,
            backend: self.backend,
        })
    }

    /// Pickles by the source of its module (with any generated wrappers), its entry,
    /// AD mode and backend: unpickling compiles the source again, once per process
    /// (so `multiprocessing`, Dask and Ray can ship functions to workers).
    #[allow(clippy::type_complexity)]
    fn __reduce__(
        &self,
        py: Python<'_>,
    ) -> PyResult<(
        Py<PyAny>,
        (String, String, String, String, &'static str, &'static str),
    )> {
        let rebuild = py
            .import("fluxion._fluxion")?
            .getattr("_function")?
            .unbind();
        Ok((
            rebuild,
            (
                self.compiled.text.clone(),
                self.compiled.name.clone(),
                self.entry.clone(),
                self.label.clone(),
                self.mode.name(),
                self.backend.name(),
            ),
        ))
    }

    fn __repr__(&self) -> PyResult<String> {
        Ok(format!(
            "<fluxion.Function {} : {}>",
            self.label,
            self.signature()?
        ))
    }
}

impl Function {
    fn signature_of(&self) -> PyResult<compiled::Signature> {
        self.compiled.function(&self.entry).ok_or_else(|| {
            PyAttributeError::new_err(format!("no function `{}` in the module", self.entry))
        })
    }
}

fn parse_mode(ad: &str) -> PyResult<AdMode> {
    AdMode::parse(ad).ok_or_else(|| {
        Python::attach(|py| {
            FxError::new(
                Kind::Argument,
                format!("unknown AD mode `{ad}` (the modes: fwd, chad, delta)"),
            )
            .into_pyerr(py)
        })
    })
}

/// `"native"`, `"interp"`, or `None` for the default (native code where a C
/// compiler is present).
fn parse_backend(backend: Option<&str>) -> PyResult<Backend> {
    match backend {
        None => Ok(default_backend()),
        Some(b) => Backend::parse(b).ok_or_else(|| {
            Python::attach(|py| {
                FxError::new(
                    Kind::Argument,
                    format!("unknown backend `{b}` (the backends: native, interp)"),
                )
                .into_pyerr(py)
            })
        }),
    }
}

/// Compiles Fluxion source text into a module. `name` is the file name diagnostics
/// show; `backend` what its functions run on (`"native"`, the default where a C
/// compiler is present, or `"interp"`).
#[pyfunction]
#[pyo3(signature = (source, name="<string>", backend=None))]
fn compile(
    py: Python<'_>,
    source: &str,
    name: &str,
    backend: Option<&str>,
) -> PyResult<PyModuleObj> {
    let backend = parse_backend(backend)?;
    Ok(PyModuleObj {
        compiled: compiled::shared(py, name, source)?,
        backend,
    })
}

/// A pickled [`Function`] rebuilt: its module's source compiled (once per process).
#[pyfunction]
fn _function(
    py: Python<'_>,
    source: &str,
    name: &str,
    entry: String,
    label: String,
    mode: &str,
    backend: &str,
) -> PyResult<Function> {
    let compiled = compiled::shared(py, name, source)?;
    if compiled.function(&entry).is_none() {
        return Err(PyAttributeError::new_err(format!(
            "no function `{entry}` in the module"
        )));
    }
    Ok(Function {
        compiled,
        entry,
        label,
        mode: parse_mode(mode)?,
        backend: parse_backend(Some(backend))?,
    })
}

/// Reads and compiles a Fluxion source file.
#[pyfunction]
#[pyo3(signature = (path, backend=None))]
fn load(py: Python<'_>, path: std::path::PathBuf, backend: Option<&str>) -> PyResult<PyModuleObj> {
    let text = std::fs::read_to_string(&path).map_err(|e| {
        pyo3::exceptions::PyOSError::new_err((
            e.raw_os_error().unwrap_or(0),
            e.to_string(),
            path.display().to_string(),
        ))
    })?;
    compile(py, &text, &path.display().to_string(), backend)
}

/// How many functions this process has compiled to machine code so far (each once per
/// module and AD mode; a second call of a function compiles nothing).
#[pyfunction]
fn native_compiles() -> u64 {
    compiled::NATIVE_COMPILES.load(std::sync::atomic::Ordering::Relaxed)
}

/// The length, in words, of the last native call's argument stream: a contiguous
/// NumPy array adds two whatever its size (read in place), any other array its length
/// and one.
#[pyfunction]
fn argument_words() -> u64 {
    compiled::ARGUMENT_WORDS.load(std::sync::atomic::Ordering::Relaxed)
}

#[pymodule]
fn _fluxion(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<PyModuleObj>()?;
    m.add_class::<Function>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(native_compiles, m)?)?;
    m.add_function(wrap_pyfunction!(argument_words, m)?)?;
    m.add_function(wrap_pyfunction!(_function, m)?)?;
    Ok(())
}
