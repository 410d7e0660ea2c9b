//! Fuzz target `check`: see `fluxion_fuzz::check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fluxion_fuzz::check(data));
