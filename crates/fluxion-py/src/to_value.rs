//! Python objects → interpreter values, against the parameter's Core type.
//!
//! Runs on the evaluation thread with the GIL held. NumPy arrays of numbers are read
//! in place and copied once into the interpreter's unboxed buffer (`Rc<[f64]>`,
//! `Rc<[i64]>`, `Rc<[bool]>`); a 2-D array becomes an array of such rows, one copy in
//! all. Lists and tuples are converted element by element. Errors name the path to
//! the offending part (`x[2][0]`).

use std::rc::Rc;

use fluxion_driver::core::{Module, Type};
use fluxion_driver::interp::{MAX_ARRAY_LEN, Value, deep};
use fluxion_driver::value_path::ValuePath as Path;
use numpy::{Element, PyArray1, PyArray2, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString, PyTuple};

use crate::errors::{CallError, FxError, Kind};
use crate::variant;

type Result<T> = std::result::Result<T, CallError>;

/// Converts `obj` to a value of type `ty`; `path` names it in errors (`x`, `x[0]`).
/// Each level runs under `deep`, so a value of any nesting depth converts.
pub fn to_value(
    obj: &Bound<'_, PyAny>,
    ty: &Type,
    module: &Module,
    path: &Path<'_>,
) -> Result<Value> {
    deep(|| convert(obj, ty, module, path))
}

fn convert(obj: &Bound<'_, PyAny>, ty: &Type, module: &Module, path: &Path<'_>) -> Result<Value> {
    let bad = |expected: &str| -> CallError {
        FxError::new(
            Kind::Argument,
            format!(
                "{path}: expected {expected} for Fluxion type {}, found {}",
                ty.display(&module.enums),
                describe(obj)
            ),
        )
        .into()
    };
    match ty {
        Type::Real => {
            // `bool` is an `int` in Python, but a Bool where a Real is expected is a
            // mistake, not a number.
            if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyString>() {
                return Err(bad("a float"));
            }
            obj.extract::<f64>()
                .map(Value::Real)
                .map_err(|_| bad("a float"))
        }
        Type::Int => {
            if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyFloat>() {
                return Err(bad("an int"));
            }
            obj.extract::<i64>()
                .map(Value::Int)
                .map_err(|_| bad("an int (64-bit)"))
        }
        Type::Bool => obj
            .extract::<bool>()
            .map(Value::Bool)
            .map_err(|_| bad("a bool")),
        Type::Unit => {
            if obj.is_none() {
                Ok(Value::Unit)
            } else {
                Err(bad("None"))
            }
        }
        Type::Tuple(ts) => {
            let items = sequence(obj).ok_or_else(|| bad("a tuple"))?;
            if items.len() != ts.len() {
                return Err(bad(&format!("a tuple of {}", ts.len())));
            }
            let fields = items
                .iter()
                .zip(ts)
                .enumerate()
                .map(|(i, (x, t))| to_value(x, t, module, &Path::Index(path, i)))
                .collect::<Result<Vec<_>>>()?;
            Ok(Value::tuple(fields))
        }
        Type::Array(elem) => array(obj, elem, ty, module, path),
        Type::Enum(e) => variant::to_enum_value(obj, *e, module, path),
        Type::Fn(..) => Err(FxError::new(
            Kind::Argument,
            format!(
                "{path}: a function ({}) cannot be passed from Python; define it in Fluxion",
                ty.display(&module.enums)
            ),
        )
        .into()),
    }
}

/// An array: NumPy arrays of numbers by buffer, anything else element by element.
fn array(
    obj: &Bound<'_, PyAny>,
    elem: &Type,
    ty: &Type,
    module: &Module,
    path: &Path<'_>,
) -> Result<Value> {
    if let Ok(arr) = obj.cast::<PyUntypedArray>() {
        return numpy_array(arr, elem, ty, module, path);
    }
    let items = sequence(obj).ok_or_else(|| {
        FxError::new(
            Kind::Argument,
            format!(
                "{path}: expected a list or NumPy array for Fluxion type {}, found {}",
                ty.display(&module.enums),
                describe(obj)
            ),
        )
    })?;
    check_len(items.len(), path)?;
    let elems = items
        .iter()
        .enumerate()
        .map(|(i, x)| to_value(x, elem, module, &Path::Index(path, i)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::array(elems))
}

fn numpy_array(
    arr: &Bound<'_, PyUntypedArray>,
    elem: &Type,
    ty: &Type,
    module: &Module,
    path: &Path<'_>,
) -> Result<Value> {
    let shape = arr.shape().to_vec();
    let shape_error = |want: &str| -> CallError {
        FxError::new(
            Kind::Argument,
            format!(
                "{path}: expected {want} for Fluxion type {}, found an array of shape {}",
                ty.display(&module.enums),
                show_shape(&shape)
            ),
        )
        .into()
    };
    check_len(shape.first().copied().unwrap_or(0), path)?;
    match elem {
        Type::Real | Type::Int | Type::Bool => {
            if shape.len() != 1 {
                return Err(shape_error("a 1-D array"));
            }
            match elem {
                Type::Real => Ok(Value::RealArray(buffer::<f64>(arr, ty, module, path)?)),
                Type::Int => Ok(Value::IntArray(buffer::<i64>(arr, ty, module, path)?)),
                _ => Ok(Value::BoolArray(buffer::<bool>(arr, ty, module, path)?)),
            }
        }
        Type::Array(inner) if matches!(**inner, Type::Real) && shape.len() == 2 => {
            let rows = matrix_rows(arr, ty, module, path)?;
            Ok(Value::array(
                rows.into_iter().map(Value::RealArray).collect(),
            ))
        }
        Type::Array(_) => {
            if shape.len() < 2 {
                return Err(shape_error(&format!("a {}-D array", array_depth(ty))));
            }
            // Higher dimensions: one NumPy view per row, converted recursively (never
            // one Python object per element).
            let items = sequence(arr.as_any()).ok_or_else(|| shape_error("an array"))?;
            let elems = items
                .iter()
                .enumerate()
                .map(|(i, x)| to_value(x, elem, module, &Path::Index(path, i)))
                .collect::<Result<Vec<_>>>()?;
            Ok(Value::array(elems))
        }
        // Arrays of tuples or enums from an object array: element by element.
        _ => {
            let items = sequence(arr.as_any()).ok_or_else(|| shape_error("an array"))?;
            let elems = items
                .iter()
                .enumerate()
                .map(|(i, x)| to_value(x, elem, module, &Path::Index(path, i)))
                .collect::<Result<Vec<_>>>()?;
            Ok(Value::array(elems))
        }
    }
}

/// The elements of a 1-D NumPy array of dtype `T`, copied once.
fn buffer<T: Element + Copy>(
    arr: &Bound<'_, PyUntypedArray>,
    ty: &Type,
    module: &Module,
    path: &Path<'_>,
) -> Result<Rc<[T]>> {
    let typed = arr
        .cast::<PyArray1<T>>()
        .map_err(|_| dtype_error::<T>(arr, ty, module, path))?;
    let view = typed.readonly();
    Ok(match view.as_slice() {
        Ok(slice) => Rc::from(slice),
        // Strided (a slice with a step, a column): still one copy.
        Err(_) => view.as_array().iter().copied().collect(),
    })
}

/// The rows of a 2-D float64 array, each copied once into its own buffer.
fn matrix_rows(
    arr: &Bound<'_, PyUntypedArray>,
    ty: &Type,
    module: &Module,
    path: &Path<'_>,
) -> Result<Vec<Rc<[f64]>>> {
    let typed = arr
        .cast::<PyArray2<f64>>()
        .map_err(|_| dtype_error::<f64>(arr, ty, module, path))?;
    let view = typed.readonly();
    let matrix = view.as_array();
    Ok(matrix
        .rows()
        .into_iter()
        .map(|row| match row.as_slice() {
            Some(s) => Rc::from(s),
            None => row.iter().copied().collect(),
        })
        .collect())
}

fn dtype_error<T: Element>(
    arr: &Bound<'_, PyUntypedArray>,
    ty: &Type,
    module: &Module,
    path: &Path<'_>,
) -> CallError {
    let want = numpy::dtype::<T>(arr.py());
    let want = want.str().map(|s| s.to_string()).unwrap_or_default();
    let found = arr.dtype().str().map(|s| s.to_string()).unwrap_or_default();
    FxError::new(
        Kind::Argument,
        format!(
            "{path}: expected a NumPy array of dtype {want} for Fluxion type {}, found dtype {found} \
             (convert with .astype(numpy.{want}))",
            ty.display(&module.enums)
        ),
    )
    .into()
}

/// How many array levels a type has (`[[Real]]`: 2).
fn array_depth(ty: &Type) -> usize {
    match ty {
        Type::Array(t) => 1 + array_depth(t),
        _ => 0,
    }
}

fn check_len(n: usize, path: &Path<'_>) -> Result<()> {
    if n as u64 > MAX_ARRAY_LEN as u64 {
        return Err(FxError::new(Kind::Argument, format!("{path}: array too large")).into());
    }
    Ok(())
}

/// The items of a list, a tuple or any other sequence (a NumPy array's rows); `None`
/// for strings, dicts and non-sequences.
pub fn sequence<'py>(obj: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        return Some(t.iter().collect());
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return Some(l.iter().collect());
    }
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyDict>() {
        return None;
    }
    if obj.cast::<PyUntypedArray>().is_ok() {
        return obj.try_iter().ok()?.collect::<PyResult<Vec<_>>>().ok();
    }
    None
}

fn show_shape(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A short description of a Python object for error messages: its type, and its
/// shape and dtype for a NumPy array.
pub fn describe(obj: &Bound<'_, PyAny>) -> String {
    if let Ok(arr) = obj.cast::<PyUntypedArray>() {
        let dtype = arr.dtype().str().map(|s| s.to_string()).unwrap_or_default();
        return format!(
            "a NumPy array of shape {} and dtype {dtype}",
            show_shape(arr.shape())
        );
    }
    let type_name = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    let text = obj.repr().map(|r| r.to_string()).unwrap_or_default();
    if text.len() <= 40 {
        format!("{type_name} {text}")
    } else {
        type_name
    }
}
