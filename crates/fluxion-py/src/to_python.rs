//! Interpreter values → Python objects, against the result's Core type.
//!
//! Runs on the evaluation thread with the GIL held. Arrays of reals, `Int`s and
//! `Bool`s become 1-D NumPy arrays (float64, int64, bool) copied once from the
//! interpreter's buffer; an array of such arrays becomes a 2-D NumPy array when it is
//! rectangular (a list of 1-D arrays when ragged); any other array becomes a list.
//! Tuples are tuples, `()` is `None`, enum values are `fluxion.Variant`s.

use fluxion_driver::core::{Module, Type};
use fluxion_driver::interp::Value;
use numpy::{Element, PyArray1, PyArray2, PyArrayMethods};
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::errors::{CallError, FxError, Kind};
use crate::variant::make_variant;

type Result<T> = std::result::Result<T, CallError>;

/// Converts a result of type `ty` to Python objects; each level runs under `deep`, so a
/// value of any nesting depth converts.
pub fn to_python<'py>(
    py: Python<'py>,
    v: &Value,
    ty: &Type,
    module: &Module,
) -> Result<Bound<'py, PyAny>> {
    fluxion_driver::interp::deep(|| convert(py, v, ty, module))
}

fn convert<'py>(
    py: Python<'py>,
    v: &Value,
    ty: &Type,
    module: &Module,
) -> Result<Bound<'py, PyAny>> {
    Ok(match (v, ty) {
        (Value::Real(x), _) => x.into_bound_py_any(py)?,
        (Value::Int(i), _) => i.into_bound_py_any(py)?,
        (Value::Bool(b), _) => b.into_bound_py_any(py)?,
        (Value::Unit, _) => py.None().into_bound(py),
        (Value::Tuple(_) | Value::Dual(..) | Value::RealInt(..), Type::Tuple(ts)) => {
            let fields = v.tuple_fields().unwrap_or_default();
            let items = fields
                .iter()
                .zip(ts)
                .map(|(f, t)| to_python(py, f, t, module))
                .collect::<Result<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any()
        }
        (_, Type::Array(elem)) => array(py, v, elem, module)?,
        (Value::Enum(tag, fields), Type::Enum(e)) => {
            let def = module.enum_def(*e);
            let variant = &def.variants[*tag as usize];
            let items = fields
                .iter()
                .zip(&variant.fields)
                .map(|(f, t)| to_python(py, f, t, module))
                .collect::<Result<Vec<_>>>()?;
            make_variant(py, &def.name, &variant.name, items)?
        }
        (_, Type::Fn(..)) => {
            return Err(FxError::new(
                Kind::Argument,
                format!(
                    "the result ({}) is a function, which cannot be returned to Python; \
                     return data, or call the function in Fluxion",
                    ty.display(&module.enums)
                ),
            )
            .into());
        }
        _ => {
            return Err(FxError::new(
                Kind::Internal,
                format!(
                    "a value does not have its type {}",
                    ty.display(&module.enums)
                ),
            )
            .into());
        }
    })
}

fn array<'py>(
    py: Python<'py>,
    v: &Value,
    elem: &Type,
    module: &Module,
) -> Result<Bound<'py, PyAny>> {
    match (v, elem) {
        (Value::RealArray(xs), _) => Ok(PyArray1::from_slice(py, xs).into_any()),
        (Value::IntArray(xs), _) => Ok(PyArray1::from_slice(py, xs).into_any()),
        (Value::BoolArray(xs), _) => Ok(PyArray1::from_slice(py, xs).into_any()),
        // Empty, or a boxed array a value was built by hand as: element by element.
        (_, Type::Real) => numbers::<f64>(py, v, |x| match x {
            Value::Real(x) => Some(x),
            _ => None,
        }),
        (_, Type::Int) => numbers::<i64>(py, v, |x| match x {
            Value::Int(x) => Some(x),
            _ => None,
        }),
        (_, Type::Bool) => numbers::<bool>(py, v, |x| match x {
            Value::Bool(x) => Some(x),
            _ => None,
        }),
        (_, Type::Array(inner)) if matches!(**inner, Type::Real | Type::Int | Type::Bool) => {
            match &**inner {
                Type::Real => matrix::<f64>(py, v, elem, module, real_row),
                Type::Int => matrix::<i64>(py, v, elem, module, int_row),
                _ => matrix::<bool>(py, v, elem, module, bool_row),
            }
        }
        _ => list(py, v, elem, module),
    }
}

/// A 1-D array from the elements of a boxed (or empty) array.
fn numbers<'py, T: Element + Copy>(
    py: Python<'py>,
    v: &Value,
    get: impl Fn(Value) -> Option<T>,
) -> Result<Bound<'py, PyAny>> {
    let xs = v
        .array_iter()
        .map(&get)
        .collect::<Option<Vec<T>>>()
        .ok_or_else(|| FxError::new(Kind::Internal, "an array element does not have its type"))?;
    Ok(PyArray1::from_vec(py, xs).into_any())
}

/// A 2-D array when every row has the same length (and there is a row), else a list
/// of 1-D arrays. Rows are copied straight into the matrix's buffer.
fn matrix<'py, T: Element + Copy>(
    py: Python<'py>,
    v: &Value,
    row_ty: &Type,
    module: &Module,
    unboxed: for<'a> fn(&'a Value) -> Option<&'a [T]>,
) -> Result<Bound<'py, PyAny>> {
    let rows: Vec<Value> = v.array_iter().collect();
    let width = rows.first().and_then(|r| r.array_len());
    let rectangular = width.is_some() && rows.iter().all(|r| r.array_len() == width);
    if rows.is_empty() {
        return Ok(PyArray2::<T>::zeros(py, [0, 0], false).into_any());
    }
    if !rectangular {
        return list(py, v, row_ty, module);
    }
    let width = width.unwrap_or(0);
    let mut data: Vec<T> = Vec::with_capacity(rows.len() * width);
    for row in &rows {
        match unboxed(row) {
            Some(xs) => data.extend_from_slice(xs),
            // An empty row or a hand-boxed one: convert it, then copy its buffer.
            None => {
                let arr = array(py, row, elem_of(row_ty), module)?;
                let arr = arr.cast::<PyArray1<T>>().map_err(PyErr::from)?;
                data.extend_from_slice(arr.readonly().as_slice().map_err(|e| {
                    FxError::new(Kind::Internal, format!("a row is not contiguous: {e}"))
                })?);
            }
        }
    }
    let flat = PyArray1::from_vec(py, data);
    Ok(flat.reshape([rows.len(), width])?.into_any())
}

fn real_row(v: &Value) -> Option<&[f64]> {
    match v {
        Value::RealArray(xs) => Some(xs),
        _ => None,
    }
}

fn int_row(v: &Value) -> Option<&[i64]> {
    match v {
        Value::IntArray(xs) => Some(xs),
        _ => None,
    }
}

fn bool_row(v: &Value) -> Option<&[bool]> {
    match v {
        Value::BoolArray(xs) => Some(xs),
        _ => None,
    }
}

fn elem_of(ty: &Type) -> &Type {
    match ty {
        Type::Array(t) => t,
        other => other,
    }
}

fn list<'py>(
    py: Python<'py>,
    v: &Value,
    elem: &Type,
    module: &Module,
) -> Result<Bound<'py, PyAny>> {
    let items = v
        .array_iter()
        .map(|x| to_python(py, &x, elem, module))
        .collect::<Result<Vec<_>>>()?;
    Ok(PyList::new(py, items)?.into_any())
}
