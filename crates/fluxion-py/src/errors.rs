//! The `fluxion.Error` hierarchy and the Rust-side error every call path returns.
//!
//! Errors are made on the evaluation thread without the GIL, as [`FxError`] (plain
//! data, `Send`), and become Python exceptions on the calling thread. The names carry
//! a `Fluxion` prefix so that `from fluxion import *` never shadows a builtin.

use fluxion_driver::{Diagnostic, Phase, SourceFile};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    fluxion,
    Error,
    PyException,
    "Base class of every error Fluxion reports; `str(e)` is the rendered diagnostic."
);
create_exception!(
    fluxion,
    FluxionSyntaxError,
    Error,
    "The source does not parse."
);
create_exception!(
    fluxion,
    FluxionTypeError,
    Error,
    "The source does not type-check."
);
create_exception!(
    fluxion,
    FluxionRuntimeError,
    Error,
    "Evaluation failed: index out of range, non-exhaustive match, overflow, budgets."
);
create_exception!(
    fluxion,
    FluxionArgumentError,
    Error,
    "A Python value does not convert to the parameter's Fluxion type (or a result to Python)."
);
create_exception!(
    fluxion,
    FluxionUnsupportedError,
    Error,
    "An option names something Fluxion does not build yet (an AD mode, a backend)."
);
create_exception!(
    fluxion,
    FluxionInternalError,
    Error,
    "A bug in Fluxion itself (a verifier failure or a panic), never the program's fault."
);

/// Which exception class an error becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Syntax,
    Type,
    Runtime,
    Argument,
    Unsupported,
    Internal,
}

/// An error as data: the rendered text (the exception's message) and its parts.
#[derive(Debug)]
pub struct FxError {
    pub kind: Kind,
    pub message: String,
    pub rendered: String,
    pub location: Option<(String, usize, usize)>,
}

impl FxError {
    /// An error about Python values or options (no source location).
    pub fn new(kind: Kind, message: impl Into<String>) -> FxError {
        let message = message.into();
        FxError {
            kind,
            rendered: message.clone(),
            message,
            location: None,
        }
    }

    /// The first of `diagnostics` (its kind and location), rendered with all of them.
    pub fn from_diagnostics(diagnostics: &[Diagnostic], sources: &[SourceFile]) -> FxError {
        let first = diagnostics.first();
        let kind = match first.map(|d| d.phase) {
            Some(Phase::Syntax) => Kind::Syntax,
            Some(Phase::Type) => Kind::Type,
            Some(Phase::Runtime) => Kind::Runtime,
            Some(Phase::Internal) => Kind::Internal,
            // An operator the chosen AD mode does not build, an unknown entry.
            Some(Phase::Input) | None => Kind::Unsupported,
        };
        FxError {
            kind,
            message: first.map(|d| d.message.clone()).unwrap_or_default(),
            rendered: fluxion_driver::render(diagnostics, sources)
                .trim_end()
                .to_string(),
            location: first.and_then(|d| d.location(sources)),
        }
    }

    /// The Python exception, with `message`, `file`, `line` and `column` attributes.
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        let err = match self.kind {
            Kind::Syntax => FluxionSyntaxError::new_err(self.rendered),
            Kind::Type => FluxionTypeError::new_err(self.rendered),
            Kind::Runtime => FluxionRuntimeError::new_err(self.rendered),
            Kind::Argument => FluxionArgumentError::new_err(self.rendered),
            Kind::Unsupported => FluxionUnsupportedError::new_err(self.rendered),
            Kind::Internal => FluxionInternalError::new_err(self.rendered),
        };
        let value = err.value(py);
        let (file, line, column) = match self.location {
            Some((f, l, c)) => (Some(f), Some(l), Some(c)),
            None => (None, None, None),
        };
        // Setting attributes on a fresh exception instance cannot fail.
        let _ = value.setattr("message", self.message);
        let _ = value.setattr("file", file);
        let _ = value.setattr("line", line);
        let _ = value.setattr("column", column);
        err
    }
}

/// What a call can fail with: a Fluxion error, or an exception Python raised while
/// a value was being converted (a `__float__` that raised, say).
#[derive(Debug)]
pub enum CallError {
    Fx(FxError),
    Py(PyErr),
}

impl From<FxError> for CallError {
    fn from(e: FxError) -> CallError {
        CallError::Fx(e)
    }
}

impl From<PyErr> for CallError {
    fn from(e: PyErr) -> CallError {
        CallError::Py(e)
    }
}

impl CallError {
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        match self {
            CallError::Fx(e) => e.into_pyerr(py),
            CallError::Py(e) => e,
        }
    }
}

/// Registers the exception classes on the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("FluxionSyntaxError", py.get_type::<FluxionSyntaxError>())?;
    m.add("FluxionTypeError", py.get_type::<FluxionTypeError>())?;
    m.add("FluxionRuntimeError", py.get_type::<FluxionRuntimeError>())?;
    m.add(
        "FluxionArgumentError",
        py.get_type::<FluxionArgumentError>(),
    )?;
    m.add(
        "FluxionUnsupportedError",
        py.get_type::<FluxionUnsupportedError>(),
    )?;
    m.add(
        "FluxionInternalError",
        py.get_type::<FluxionInternalError>(),
    )?;
    Ok(())
}
