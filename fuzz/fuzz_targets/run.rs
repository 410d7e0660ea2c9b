//! Fuzz target `run`: see `fluxion_fuzz::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fluxion_fuzz::run(data));
