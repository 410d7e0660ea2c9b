//! Program generators shared by the benchmark binary and the scaling tests
//! (`tests/compile_scaling.rs`), the scaling tests' clock, and what the reverse-mode
//! tables need: a harness that calls a compiled program's entries repeatedly, peak
//! memory, and the GMM problem.

pub mod clock;
pub mod gmm;
pub mod harness;
pub mod native;
pub mod peak;
pub mod programs;
