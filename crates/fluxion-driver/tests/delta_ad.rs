//! Reverse mode by dual numbers with deltas (`--ad delta`, [Delta]): the reverse-mode
//! suite (`common/reverse_suite.rs`) under delta.

const MODE_UNDER_TEST: fluxion_driver::AdMode = fluxion_driver::AdMode::Delta;

#[path = "common/programs.rs"]
mod programs;

include!("common/reverse_suite.rs");
