//! The reference interpreter over Fluxion Core: the semantics every transformation
//! and backend is tested against.
//!
//! Values are `Rc`-shared; dual numbers `(Real, Real)` are inline, and arrays of
//! reals, `Int`s, `Bool`s or dual numbers are unboxed buffers. Runtime faults (index
//! out of range, `Int` overflow, division by zero, non-exhaustive match, oversized
//! arrays, too-deep recursion, an exceeded memory budget) are [`RuntimeError`]s with
//! the source span, never panics or aborts.

mod ad;
mod array;
mod chad;
mod cmath;
mod colouring;
mod compile;
mod deep;
mod delta;
mod delta_twice;
mod eval;
pub mod linear;
mod memory;
mod prims;
mod resolved;
pub mod tangent;
pub mod tape;
pub mod value;

pub use deep::deep;
pub use eval::{EvalResult, Interp, RuntimeError, clear_interrupt, interrupt};
pub use memory::{CountingAlloc, WHAT_IS_COUNTED, show_bytes, thread_live_bytes};
pub use prims::{MAX_ARRAY_LEN, real_fn};
pub use value::{ArrayIter, Closure, DualArray, Value, write_value};

#[cfg(test)]
mod dual_tests;
#[cfg(test)]
mod int_array_tests;
#[cfg(test)]
mod memory_tests;

/// The unit tests count memory as the `fluxion` binary does, so budgets are enforced.
#[cfg(test)]
#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;
#[cfg(test)]
mod tests;
