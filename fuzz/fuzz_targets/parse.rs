//! Fuzz target `parse`: see `fluxion_fuzz::parse`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fluxion_fuzz::parse(data));
