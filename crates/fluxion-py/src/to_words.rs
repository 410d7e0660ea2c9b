//! Python objects → the entry ABI's word stream, against the parameters' Core types:
//! the one conversion of a call's arguments, for both backends (native code reads the
//! stream; the interpreter decodes it into values, `native_backend::decode_values`).
//! The layout is fluxion-driver's `abi.rs`: a Real as its bits, an Int or Bool as a
//! number, `()` as nothing, a tuple as its fields, an array as its length then its
//! elements, an enum value as its tag then its fields.
//!
//! Runs with the GIL held. A C-contiguous float64 or int64 NumPy array (1-D, or each
//! row of a 2-D one) is read in place by native code ([`Words::native`]): the stream
//! holds its length with the top bit set, then the buffer's address, and the native
//! code copies it once into its own array (`runtime.c`'s `fx_read_numbers`) — the
//! caller keeps the argument alive until the call returns. Any other NumPy array of
//! numbers is copied once into the stream by buffer; lists and tuples element by
//! element. Errors name the path to the offending part (`x[2][0]`).

use fluxion_driver::core::{Module, Type};
use fluxion_driver::interp::{MAX_ARRAY_LEN, deep};
use fluxion_driver::value_path::ValuePath as Path;
use numpy::{Element, PyArray1, PyArray2, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString, PyTuple};

use crate::errors::{CallError, FxError, Kind};
use crate::variant;

type Result<T> = std::result::Result<T, CallError>;

/// The top bit of an array's length word: its elements are at the address in the next
/// word, not in the stream (`runtime.c`'s `FX_BORROWED`).
const BORROWED: u64 = 1 << 63;

/// An argument stream being written.
pub struct Words {
    pub words: Vec<u64>,
    /// Whether NumPy buffers may be read in place (native code only: the interpreter's
    /// decoder reads the stream alone).
    borrow: bool,
}

impl Words {
    /// A stream for native code, which reads contiguous NumPy buffers in place.
    pub fn native() -> Words {
        Words {
            words: Vec::new(),
            borrow: true,
        }
    }

    /// A stream holding every element (for the interpreter's decoder).
    pub fn inline() -> Words {
        Words {
            words: Vec::new(),
            borrow: false,
        }
    }

    /// Appends `obj` as a value of type `ty`; `path` names it in errors (`x`, `x[0]`).
    /// Each level runs under `deep`, so a value of any nesting depth converts.
    pub fn push(
        &mut self,
        obj: &Bound<'_, PyAny>,
        ty: &Type,
        module: &Module,
        path: &Path<'_>,
    ) -> Result<()> {
        deep(|| self.convert(obj, ty, module, path))
    }

    fn convert(
        &mut self,
        obj: &Bound<'_, PyAny>,
        ty: &Type,
        module: &Module,
        path: &Path<'_>,
    ) -> Result<()> {
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
                let x = obj.extract::<f64>().map_err(|_| bad("a float"))?;
                self.words.push(x.to_bits());
            }
            Type::Int => {
                if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyFloat>() {
                    return Err(bad("an int"));
                }
                let i = obj.extract::<i64>().map_err(|_| bad("an int (64-bit)"))?;
                self.words.push(i as u64);
            }
            Type::Bool => {
                let b = obj.extract::<bool>().map_err(|_| bad("a bool"))?;
                self.words.push(u64::from(b));
            }
            Type::Unit => {
                if !obj.is_none() {
                    return Err(bad("None"));
                }
            }
            Type::Tuple(ts) => {
                let items = sequence(obj).ok_or_else(|| bad("a tuple"))?;
                if items.len() != ts.len() {
                    return Err(bad(&format!("a tuple of {}", ts.len())));
                }
                for (i, (x, t)) in items.iter().zip(ts).enumerate() {
                    self.push(x, t, module, &Path::Index(path, i))?;
                }
            }
            Type::Array(elem) => self.array(obj, elem, ty, module, path)?,
            Type::Enum(e) => variant::push_enum(self, obj, *e, module, path)?,
            Type::Fn(..) => {
                return Err(FxError::new(
                    Kind::Argument,
                    format!(
                        "{path}: a function ({}) cannot be passed from Python; define it in Fluxion",
                        ty.display(&module.enums)
                    ),
                )
                .into());
            }
        }
        Ok(())
    }

    /// Appends the elements of a sequence (a list, a tuple, a NumPy array's rows).
    pub fn push_all(
        &mut self,
        items: &[Bound<'_, PyAny>],
        elem: &Type,
        module: &Module,
        path: &Path<'_>,
    ) -> Result<()> {
        check_len(items.len(), path)?;
        self.words.push(items.len() as u64);
        for (i, x) in items.iter().enumerate() {
            self.push(x, elem, module, &Path::Index(path, i))?;
        }
        Ok(())
    }

    /// An array: NumPy arrays of numbers by buffer, anything else element by element.
    fn array(
        &mut self,
        obj: &Bound<'_, PyAny>,
        elem: &Type,
        ty: &Type,
        module: &Module,
        path: &Path<'_>,
    ) -> Result<()> {
        if let Ok(arr) = obj.cast::<PyUntypedArray>() {
            return self.numpy_array(arr, elem, ty, module, path);
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
        self.push_all(&items, elem, module, path)
    }

    fn numpy_array(
        &mut self,
        arr: &Bound<'_, PyUntypedArray>,
        elem: &Type,
        ty: &Type,
        module: &Module,
        path: &Path<'_>,
    ) -> Result<()> {
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
                    Type::Real => self.vector::<f64>(arr, ty, module, path, f64::to_bits),
                    Type::Int => self.vector::<i64>(arr, ty, module, path, |i| i as u64),
                    _ => self.vector::<bool>(arr, ty, module, path, u64::from),
                }
            }
            Type::Array(inner) if matches!(**inner, Type::Real) && shape.len() == 2 => {
                self.matrix(arr, ty, module, path)
            }
            Type::Array(_) if shape.len() < 2 => {
                Err(shape_error(&format!("a {}-D array", array_depth(ty))))
            }
            // Higher dimensions: one NumPy view per row, converted recursively (never
            // one Python object per element); arrays of tuples or enums from an object
            // array, element by element.
            _ => {
                let items = sequence(arr.as_any()).ok_or_else(|| shape_error("an array"))?;
                self.push_all(&items, elem, module, path)
            }
        }
    }

    /// A 1-D NumPy array of dtype `T`: in place where native code reads it (8-byte
    /// elements, contiguous), else copied once into the stream.
    fn vector<T: Element + Copy>(
        &mut self,
        arr: &Bound<'_, PyUntypedArray>,
        ty: &Type,
        module: &Module,
        path: &Path<'_>,
        word: fn(T) -> u64,
    ) -> Result<()> {
        let typed = arr
            .cast::<PyArray1<T>>()
            .map_err(|_| dtype_error::<T>(arr, ty, module, path))?;
        let n = typed.len();
        if self.borrow && size_of::<T>() == 8 && typed.is_c_contiguous() && n > 0 {
            self.words.push(n as u64 | BORROWED);
            self.words.push(typed.data() as u64);
            return Ok(());
        }
        let view = typed.readonly();
        self.words.push(n as u64);
        match view.as_slice() {
            Ok(xs) => self.words.extend(xs.iter().map(|x| word(*x))),
            // Strided (a slice with a step, a column): still one copy.
            Err(_) => self.words.extend(view.as_array().iter().map(|x| word(*x))),
        }
        Ok(())
    }

    /// A 2-D float64 array as an array of rows, each in place or copied once.
    fn matrix(
        &mut self,
        arr: &Bound<'_, PyUntypedArray>,
        ty: &Type,
        module: &Module,
        path: &Path<'_>,
    ) -> Result<()> {
        let typed = arr
            .cast::<PyArray2<f64>>()
            .map_err(|_| dtype_error::<f64>(arr, ty, module, path))?;
        let [rows, width] = [typed.shape()[0], typed.shape()[1]];
        self.words.push(rows as u64);
        if self.borrow && typed.is_c_contiguous() && width > 0 {
            let data = typed.data();
            for i in 0..rows {
                self.words.push(width as u64 | BORROWED);
                // In bounds: row i of a contiguous rows × width buffer.
                self.words.push(data.wrapping_add(i * width) as u64);
            }
            return Ok(());
        }
        let view = typed.readonly();
        for row in view.as_array().rows() {
            self.words.push(row.len() as u64);
            self.words.extend(row.iter().map(|x| x.to_bits()));
        }
        Ok(())
    }
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
