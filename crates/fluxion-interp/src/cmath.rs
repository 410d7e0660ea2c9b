//! `lgamma` and `erf` from the system C library: the functions the native backend's
//! code calls (`fx_lgamma`, `erf` in `runtime.c`), so that both backends give the same
//! bits. (Rust's standard library has neither; the `libm` crate, a port of musl's,
//! differed from glibc's in the last bits at about one point in four.)

use std::ffi::c_int;

mod sys {
    use std::ffi::c_int;
    unsafe extern "C" {
        pub fn lgamma_r(x: f64, sign: *mut c_int) -> f64;
        pub fn erf(x: f64) -> f64;
    }
}

/// log |Γ(x)| (the reentrant `lgamma_r`: no global sign variable).
pub fn lgamma(x: f64) -> f64 {
    let mut sign: c_int = 0;
    // SAFETY: a pure C library function; `sign` is a valid place for its int.
    unsafe { sys::lgamma_r(x, &mut sign) }
}

/// The error function.
pub fn erf(x: f64) -> f64 {
    // SAFETY: a pure C library function.
    unsafe { sys::erf(x) }
}
