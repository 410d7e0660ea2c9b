//! The entry ABI's result stream → Python objects, against the result's Core type: the
//! one conversion of results, for both backends (native code writes the stream; the
//! interpreter's value is encoded into one, `native_backend::encode_value`). The layout
//! is fluxion-driver's `abi.rs` (see `to_words.rs`).
//!
//! Runs with the GIL held. Arrays of reals, `Int`s and `Bool`s become 1-D NumPy arrays
//! (float64, int64, bool) copied once from the stream; an array of such arrays becomes
//! a 2-D NumPy array when it is rectangular (a list of 1-D arrays when ragged); any
//! other array becomes a list. Tuples are tuples, `()` is `None`, enum values are
//! `fluxion.Variant`s.

use fluxion_driver::core::{EnumId, Module, Type};
use numpy::{Element, PyArray1, PyArray2, PyArrayMethods};
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::errors::{CallError, FxError, Kind};
use crate::variant::make_variant;

type Result<T> = std::result::Result<T, CallError>;

/// The value of type `ty` that `words` hold, all of them, as Python objects (`ty` holds
/// no function: the caller refused those, [`refuse_functions`]).
pub fn to_python<'py>(
    py: Python<'py>,
    words: &[u64],
    ty: &Type,
    module: &Module,
) -> Result<Bound<'py, PyAny>> {
    let mut r = Reader { words, pos: 0 };
    let v = r.value(py, ty, module)?;
    if r.pos != words.len() {
        return Err(malformed());
    }
    Ok(v)
}

/// An error when a value of type `ty` may hold a function, which Python cannot receive
/// (checked before a result is encoded or read).
pub fn refuse_functions(ty: &Type, module: &Module) -> Result<()> {
    if holds_function(ty, module, &mut Vec::new()) {
        return Err(FxError::new(
            Kind::Argument,
            format!(
                "the result ({}) holds a function, which cannot be returned to Python; \
                 return data, or call the function in Fluxion",
                ty.display(&module.enums)
            ),
        )
        .into());
    }
    Ok(())
}

/// Whether a value of `ty` may hold a function; `seen` holds the enums being looked
/// through (a recursive enum is looked at once).
fn holds_function(ty: &Type, module: &Module, seen: &mut Vec<EnumId>) -> bool {
    match ty {
        Type::Fn(..) => true,
        Type::Tuple(ts) => ts.iter().any(|t| holds_function(t, module, seen)),
        Type::Array(t) => holds_function(t, module, seen),
        Type::Enum(e) if !seen.contains(e) => {
            seen.push(*e);
            module
                .enum_def(*e)
                .variants
                .iter()
                .any(|v| v.fields.iter().any(|t| holds_function(t, module, seen)))
        }
        _ => false,
    }
}

fn malformed() -> CallError {
    FxError::new(Kind::Internal, "internal error: a malformed result stream").into()
}

struct Reader<'w> {
    words: &'w [u64],
    pos: usize,
}

impl<'w> Reader<'w> {
    fn next(&mut self) -> Result<u64> {
        let w = *self.words.get(self.pos).ok_or_else(malformed)?;
        self.pos += 1;
        Ok(w)
    }

    /// The next `n` words.
    fn take(&mut self, n: u64) -> Result<&'w [u64]> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|end| *end <= self.words.len())
            .ok_or_else(malformed)?;
        let body = &self.words[self.pos..end];
        self.pos = end;
        Ok(body)
    }

    /// Each level runs under `deep`, so a value of any nesting depth converts.
    fn value<'py>(
        &mut self,
        py: Python<'py>,
        ty: &Type,
        module: &Module,
    ) -> Result<Bound<'py, PyAny>> {
        fluxion_driver::interp::deep(|| self.convert(py, ty, module))
    }

    fn convert<'py>(
        &mut self,
        py: Python<'py>,
        ty: &Type,
        module: &Module,
    ) -> Result<Bound<'py, PyAny>> {
        Ok(match ty {
            Type::Real => f64::from_bits(self.next()?).into_bound_py_any(py)?,
            Type::Int => (self.next()? as i64).into_bound_py_any(py)?,
            Type::Bool => (self.next()? != 0).into_bound_py_any(py)?,
            Type::Unit => py.None().into_bound(py),
            Type::Tuple(ts) => {
                let items = ts
                    .iter()
                    .map(|t| self.value(py, t, module))
                    .collect::<Result<Vec<_>>>()?;
                PyTuple::new(py, items)?.into_any()
            }
            Type::Array(elem) => self.array(py, elem, module)?,
            Type::Enum(e) => {
                let def = module.enum_def(*e);
                let tag = usize::try_from(self.next()?).map_err(|_| malformed())?;
                let variant = def.variants.get(tag).ok_or_else(malformed)?;
                let items = variant
                    .fields
                    .iter()
                    .map(|t| self.value(py, t, module))
                    .collect::<Result<Vec<_>>>()?;
                make_variant(py, &def.name, &variant.name, items)?
            }
            Type::Fn(..) => return Err(malformed()),
        })
    }

    fn array<'py>(
        &mut self,
        py: Python<'py>,
        elem: &Type,
        module: &Module,
    ) -> Result<Bound<'py, PyAny>> {
        match elem {
            Type::Real => self.vector(py, f64::from_bits),
            Type::Int => self.vector(py, |w| w as i64),
            Type::Bool => self.vector(py, |w| w != 0),
            Type::Array(inner) => match **inner {
                Type::Real => self.matrix(py, elem, module, f64::from_bits),
                Type::Int => self.matrix(py, elem, module, |w| w as i64),
                Type::Bool => self.matrix(py, elem, module, |w| w != 0),
                _ => self.list(py, elem, module),
            },
            _ => self.list(py, elem, module),
        }
    }

    /// A 1-D NumPy array, copied once from the stream.
    fn vector<'py, T: Element>(
        &mut self,
        py: Python<'py>,
        of: fn(u64) -> T,
    ) -> Result<Bound<'py, PyAny>> {
        let n = self.next()?;
        let body = self.take(n)?;
        Ok(PyArray1::from_vec(py, body.iter().map(|w| of(*w)).collect()).into_any())
    }

    /// A 2-D array when every row has the same length (and there is a row), else a
    /// list of 1-D arrays.
    fn matrix<'py, T: Element>(
        &mut self,
        py: Python<'py>,
        row_ty: &Type,
        module: &Module,
        of: fn(u64) -> T,
    ) -> Result<Bound<'py, PyAny>> {
        let start = self.pos;
        let rows = self.next()?;
        let mut width = None;
        let mut rectangular = true;
        for _ in 0..rows {
            let n = self.next()?;
            self.take(n)?;
            rectangular &= *width.get_or_insert(n) == n;
        }
        if rows == 0 {
            return Ok(PyArray2::<T>::zeros(py, [0, 0], false).into_any());
        }
        if !rectangular {
            self.pos = start;
            return self.list(py, row_ty, module);
        }
        let (end, width) = (self.pos, width.unwrap_or(0));
        let mut data: Vec<T> = Vec::with_capacity(usize::try_from(rows * width).unwrap_or(0));
        self.pos = start + 1;
        for _ in 0..rows {
            let n = self.next()?;
            data.extend(self.take(n)?.iter().map(|w| of(*w)));
        }
        debug_assert_eq!(self.pos, end);
        let shape = [rows as usize, width as usize];
        Ok(PyArray1::from_vec(py, data).reshape(shape)?.into_any())
    }

    fn list<'py>(
        &mut self,
        py: Python<'py>,
        elem: &Type,
        module: &Module,
    ) -> Result<Bound<'py, PyAny>> {
        let n = self.next()?;
        // Each element takes a word at least (but `()`): no length beyond the stream.
        if !matches!(elem, Type::Unit) && n > (self.words.len() - self.pos) as u64 {
            return Err(malformed());
        }
        let items = (0..n)
            .map(|_| self.value(py, elem, module))
            .collect::<Result<Vec<_>>>()?;
        Ok(PyList::new(py, items)?.into_any())
    }
}
