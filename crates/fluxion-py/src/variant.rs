//! Enum values in Python: `fluxion.Variant` objects (defined in
//! `python/fluxion/_variant.py`) out, and in a `Variant`, a dict as in `--json`
//! (`{"Circle": [1.0]}`) or the constructor's name for a nullary one (`"Nil"`).

use fluxion_driver::core::{EnumId, Module};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

use crate::errors::{CallError, FxError, Kind};
use crate::to_words::{Words, describe, sequence};
use fluxion_driver::value_path::ValuePath as Path;

static VARIANT: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The `fluxion.Variant` class.
pub fn variant_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    VARIANT.import(py, "fluxion._variant", "Variant")
}

/// Builds `Variant(name, *fields, enum=enum_name)`.
pub fn make_variant<'py>(
    py: Python<'py>,
    enum_name: &str,
    name: &str,
    fields: Vec<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut args = vec![PyString::new(py, name).into_any()];
    args.extend(fields);
    let kwargs = PyDict::new(py);
    kwargs.set_item("enum", enum_name)?;
    variant_class(py)?.call(PyTuple::new(py, args)?, Some(&kwargs))
}

/// Appends a Python enum value as a value of enum `e`: its tag, then its fields.
pub fn push_enum(
    words: &mut Words,
    obj: &Bound<'_, PyAny>,
    e: EnumId,
    module: &Module,
    path: &Path<'_>,
) -> Result<(), CallError> {
    let py = obj.py();
    let def = module.enum_def(e);
    let bad = || -> CallError {
        FxError::new(
            Kind::Argument,
            format!(
                "{path}: expected a fluxion.Variant, a dict {{\"Ctor\": [fields]}} or a \
                 constructor name for enum {}, found {}",
                def.name,
                describe(obj)
            ),
        )
        .into()
    };
    let (name, fields): (String, Vec<Bound<'_, PyAny>>) = if obj.is_instance(variant_class(py)?)? {
        let name = obj.getattr("name")?.extract::<String>()?;
        let fields = sequence(&obj.getattr("fields")?).ok_or_else(bad)?;
        (name, fields)
    } else if let Ok(s) = obj.cast::<PyString>() {
        (s.to_string(), Vec::new())
    } else if let Ok(d) = obj.cast::<PyDict>() {
        if d.len() != 1 {
            return Err(bad());
        }
        let (k, v) = d.iter().next().ok_or_else(bad)?;
        let name = k.extract::<String>().map_err(|_| bad())?;
        let fields = if v.is_none() {
            Vec::new()
        } else {
            sequence(&v).ok_or_else(bad)?
        };
        (name, fields)
    } else {
        return Err(bad());
    };
    let Some(tag) = def.variants.iter().position(|v| v.name == name) else {
        let names: Vec<_> = def.variants.iter().map(|v| v.name.as_str()).collect();
        return Err(FxError::new(
            Kind::Argument,
            format!(
                "{path}: `{name}` is not a constructor of {} (its constructors: {})",
                def.name,
                names.join(", ")
            ),
        )
        .into());
    };
    let variant = &def.variants[tag];
    if variant.fields.len() != fields.len() {
        return Err(FxError::new(
            Kind::Argument,
            format!(
                "{path}: `{name}` has {} field(s), found {}",
                variant.fields.len(),
                fields.len()
            ),
        )
        .into());
    }
    words.words.push(tag as u64);
    for (i, (x, t)) in fields.iter().zip(&variant.fields).enumerate() {
        words.push(x, t, module, &Path::Field(path, &name, i))?;
    }
    Ok(())
}
