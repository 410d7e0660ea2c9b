//! Reverse mode by dual numbers with deltas (`--ad delta`, seed 004): the reverse-mode
//! suite (`common/reverse_suite.rs`) under delta.

const MODE_UNDER_TEST: fluxion_driver::AdMode = fluxion_driver::AdMode::Delta;

include!("common/reverse_suite.rs");
