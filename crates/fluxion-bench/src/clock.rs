//! The clock of the scaling tests and the reverse-mode tables: the CPU time of the
//! measuring thread, which other processes sharing the machine's cores do not inflate.

use std::time::{Duration, Instant};

/// CPU time this thread has run, to the nanosecond (`clock_gettime` with
/// `CLOCK_THREAD_CPUTIME_ID`, which counts the current time slice too).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub fn thread_cpu_time() -> Option<Duration> {
    /// `struct timespec` where `time_t` and `long` are 64 bits.
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `struct timespec` for the C library to fill.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// CPU time this thread has run, where Linux reports it in `/proc` (to within a
/// scheduler tick).
#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// How long `f` takes on this thread: CPU time if available, else wall time.
pub fn time_on_this_thread<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let (cpu_start, wall_start) = (thread_cpu_time(), Instant::now());
    let out = f();
    let elapsed = match (cpu_start, thread_cpu_time()) {
        (Some(start), Some(end)) => end - start,
        _ => wall_start.elapsed(),
    };
    (out, elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_advances_with_work_finely() {
        let start = thread_cpu_time().expect("a thread clock on this platform");
        let mut x = 0u64;
        while thread_cpu_time().unwrap() - start < Duration::from_millis(2) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let (_, short) = time_on_this_thread(|| std::hint::black_box(x * 3));
        // Far below a scheduler tick (1–10 ms): the clock is not tick-granular.
        assert!(short < Duration::from_micros(500), "{short:?}");
    }
}
