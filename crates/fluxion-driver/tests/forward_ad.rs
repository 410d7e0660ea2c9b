//! The forward-mode suite (`common/forward_suite.rs`) with `jvp` by dual numbers.

const FWD_UNDER_TEST: fluxion_driver::FwdMode = fluxion_driver::FwdMode::Dual;

#[path = "common/programs.rs"]
mod programs;

include!("common/forward_suite.rs");
