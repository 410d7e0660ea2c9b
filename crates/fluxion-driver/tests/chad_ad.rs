//! Reverse CHAD (`--ad chad`, seed 000): the reverse-mode suite
//! (`common/reverse_suite.rs`) under CHAD — the paper's worked examples, every
//! construct against `--ad fwd`, finite differences and the transpose identity,
//! nesting, and the linear-time stress programs.

const MODE_UNDER_TEST: fluxion_driver::AdMode = fluxion_driver::AdMode::Chad;

include!("common/reverse_suite.rs");
