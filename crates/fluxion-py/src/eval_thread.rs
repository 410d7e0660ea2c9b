//! Big-stack evaluation threads kept between calls.
//!
//! The interpreter (and a native call too deep for the caller's stack) runs on a thread
//! with the driver's big stack (`fluxion_driver::with_big_stack`: 1.25 GiB reserved).
//! Spawning one per call cost ~150 µs, most of it the kernel releasing the reserved
//! stack when the thread exits; so threads are kept in a pool and reused, a new one
//! made only when every kept one is busy (concurrent calls still run at once). A job
//! that ran longer than [`RETIRE_AFTER`] retires its thread afterwards: a long job may
//! have touched much of the stack (a deep recursion), which only the thread's exit
//! gives back; a short one cannot have touched more than a few MiB (each new stack
//! page is a page fault, about a microsecond).

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Mutex;
use std::sync::mpsc::{Sender, channel, sync_channel};
use std::time::{Duration, Instant};

/// How long a job may run and still leave its thread in the pool.
const RETIRE_AFTER: Duration = Duration::from_millis(5);

type Job = Box<dyn FnOnce() + Send + 'static>;

/// An idle evaluation thread: where to send it a job. Dropping it ends the thread.
struct Worker(Sender<Job>);

/// The idle threads, and the process they belong to (a forked child has none of its
/// parent's threads: it starts with an empty pool).
static IDLE: Mutex<(u32, Vec<Worker>)> = Mutex::new((0, Vec::new()));

fn idle() -> std::sync::MutexGuard<'static, (u32, Vec<Worker>)> {
    let mut pool = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if pool.0 != pid {
        // The parent's workers: their threads are not in this process.
        std::mem::forget(std::mem::take(&mut pool.1));
        pool.0 = pid;
    }
    pool
}

/// A new evaluation thread: a small thread running the driver's big-stack thread,
/// which runs jobs until its channel closes.
fn spawn() -> Worker {
    let (tx, rx) = channel::<Job>();
    // Without a thread the receiver is gone, and `run` runs the job itself.
    let _ = std::thread::Builder::new()
        .name("fluxion-worker".into())
        .spawn(move || {
            fluxion_driver::with_big_stack(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
        });
    Worker(tx)
}

/// Runs `f` on an evaluation thread and returns its result (a panic in `f` is
/// resumed here).
pub fn run<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let (done_tx, done_rx) = sync_channel(1);
    let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
        let _ = done_tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    // SAFETY: the job borrows from this frame; this function waits below until the
    // job has run or been dropped unrun (its sender then drops, ending the wait), so
    // no borrow outlives the frame.
    let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(job) };
    let start = Instant::now();
    let kept = idle().1.pop();
    // An idle thread always receives (only dropping its `Worker` ends it); a fresh
    // one may not exist, and then the job runs here.
    let w = kept.unwrap_or_else(spawn);
    let worker = match w.0.send(job) {
        Ok(()) => Some(w),
        Err(unsent) => {
            (unsent.0)();
            None
        }
    };
    let result = done_rx.recv();
    if let Some(w) = worker
        && start.elapsed() <= RETIRE_AFTER
    {
        idle().1.push(w);
    }
    match result {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => resume_unwind(panic),
        Err(_) => panic!("an evaluation thread ended without running its job"),
    }
}
