//! The reference interpreter over Fluxion Core: the semantics every transformation
//! and backend is tested against.
//!
//! Values are `Rc`-shared; dual numbers `(Real, Real)` are inline, and arrays of
//! reals or of dual numbers are unboxed buffers. Runtime faults (index out of
//! range, `Int` overflow, division by zero, non-exhaustive match, oversized arrays,
//! too-deep recursion) are [`RuntimeError`]s with the source span, never panics.

mod ad;
mod array;
mod compile;
mod eval;
mod prims;
pub mod tangent;
pub mod value;

pub use eval::{EvalResult, Interp, RuntimeError};
pub use prims::{MAX_ARRAY_LEN, real_fn};
pub use value::{ArrayIter, Closure, DualArray, Value, write_value};

#[cfg(test)]
mod dual_tests;
#[cfg(test)]
mod tests;
