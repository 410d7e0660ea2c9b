//! Forward CHAD (`--fwd chad`, seed 000 §7.4): the forward-mode suite
//! (`common/forward_suite.rs`) with `jvp` by forward CHAD, and what is forward CHAD's
//! own: agreement with dual numbers on every construct, `show --stage chad-fwd`, linear
//! cost, and the fallback for functions that apply operators themselves.

const FWD_UNDER_TEST: fluxion_driver::FwdMode = fluxion_driver::FwdMode::Chad;

include!("common/forward_suite.rs");
