//! Peak memory of a run: the most bytes a thread held at once, above what it held
//! when the run began.
//!
//! `fluxion_driver::CountingAlloc` counts each thread's live bytes (the memory
//! budget's accounting); [`PeakAlloc`] forwards to it and, after every allocation,
//! raises this thread's high-water mark to the count. The benchmark binary installs it
//! as its global allocator; elsewhere (the library's tests) the count stays 0 and
//! [`peak_since`] reports `None`.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

use fluxion_driver::CountingAlloc;
use fluxion_driver::interp::thread_live_bytes;

thread_local! {
    /// The highest live-byte count this thread reached since [`reset_peak`].
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

#[inline]
fn note_peak() {
    let live = thread_live_bytes();
    // A const-initialised `Cell` has no destructor: this never allocates.
    PEAK.with(|peak| {
        if live > peak.get() {
            peak.set(live);
        }
    });
}

/// `CountingAlloc` (what the `fluxion` binary installs) plus a per-thread high-water
/// mark: `#[global_allocator] static ALLOC: PeakAlloc = PeakAlloc;`
pub struct PeakAlloc;

// SAFETY: every method forwards to `CountingAlloc` unchanged; the high-water mark
// touches only a thread-local integer.
unsafe impl GlobalAlloc for PeakAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { CountingAlloc.alloc(layout) };
        note_peak();
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { CountingAlloc.alloc_zeroed(layout) };
        note_peak();
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { CountingAlloc.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { CountingAlloc.realloc(ptr, layout, new_size) };
        note_peak();
        p
    }
}

/// Starts a new measurement on this thread; returns the live bytes now, the baseline
/// to pass to [`peak_since`].
pub fn reset_peak() -> isize {
    let live = thread_live_bytes();
    PEAK.with(|peak| peak.set(live));
    live
}

/// The most bytes this thread held at once since [`reset_peak`] returned `baseline`,
/// above `baseline`; `None` when no counting allocator is installed.
pub fn peak_since(baseline: isize) -> Option<usize> {
    let peak = PEAK.with(Cell::get);
    if peak == 0 && thread_live_bytes() == 0 {
        return None;
    }
    Some(peak.saturating_sub(baseline).max(0) as usize)
}
