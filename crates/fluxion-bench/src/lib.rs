//! Program generators shared by the benchmark binary and the compile-time scaling
//! test (`tests/compile_scaling.rs`), and the scaling tests' clock.

pub mod clock;
pub mod programs;
