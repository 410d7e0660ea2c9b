//! The clock of the scaling tests: the CPU time of the measuring thread, which other
//! processes sharing the machine's cores do not inflate.

use std::time::{Duration, Instant};

/// CPU time this thread has run, where Linux reports it (to within a scheduler tick).
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
