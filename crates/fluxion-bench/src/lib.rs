//! Program generators shared by the benchmark binary and the compile-time scaling
//! test (`tests/compile_scaling.rs`).

pub mod programs;
