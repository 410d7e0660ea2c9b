//! The memory budget's accounting: a global allocator that counts the bytes each
//! thread holds, and the budget an interpreter checks against that count.
//!
//! Counting is per thread: every value the interpreter makes is `Rc`-shared and so
//! never leaves the evaluation thread, and a per-thread count keeps two evaluations
//! (two tests, two embedded programs) from charging each other. The count is the
//! bytes this thread allocated minus the bytes it freed; a block allocated on one
//! thread and freed on another (rare: a result string handed back) only makes the
//! freeing thread's count lower, i.e. the budget looser, never tighter.
//!
//! Without [`CountingAlloc`] installed as the program's global allocator the count
//! stays 0 and only the checks of single requests ([`MemoryBudget::reserve`]) apply.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread (may go negative, see above).
    static LIVE_BYTES: Cell<isize> = const { Cell::new(0) };
}

#[inline]
fn count(delta: isize) {
    // A const-initialised `Cell` has no destructor, so this never touches a
    // destroyed thread local and never allocates.
    LIVE_BYTES.with(|live| live.set(live.get().wrapping_add(delta)));
}

/// Bytes the current thread holds (allocated minus freed) under [`CountingAlloc`].
#[inline]
pub fn thread_live_bytes() -> isize {
    LIVE_BYTES.with(Cell::get)
}

/// The system allocator, counting each thread's live bytes. Install it in a binary
/// (or test binary) that should enforce memory budgets:
/// `#[global_allocator] static ALLOC: CountingAlloc = CountingAlloc;`
pub struct CountingAlloc;

// SAFETY: every method forwards to `System` unchanged; the counting touches only a
// thread-local integer.
unsafe impl GlobalAlloc for CountingAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// How many bytes an evaluation may hold, measured from the thread's count when the
/// budget was set (what the thread held before — the module, the sources — is not
/// charged). `usize::MAX` is no limit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemoryBudget {
    baseline: isize,
    limit: usize,
    /// `baseline + limit`: the thread's count above which the budget is exceeded
    /// (what a check compares with, so that it is one load and one comparison).
    ceiling: isize,
}

/// Why a check failed: the message of the runtime error.
pub(crate) struct OverBudget(pub(crate) String);

impl MemoryBudget {
    pub(crate) const UNLIMITED: MemoryBudget = MemoryBudget {
        baseline: 0,
        limit: usize::MAX,
        ceiling: isize::MAX,
    };

    /// A budget of `limit` bytes on top of what the thread holds now.
    pub(crate) fn starting_now(limit: usize) -> MemoryBudget {
        let baseline = thread_live_bytes();
        let ceiling = baseline.saturating_add(isize::try_from(limit).unwrap_or(isize::MAX));
        MemoryBudget {
            baseline,
            limit,
            ceiling,
        }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held since the budget was set (0 if fewer were held than before).
    #[inline]
    fn used(&self) -> usize {
        thread_live_bytes().saturating_sub(self.baseline).max(0) as usize
    }

    /// Whether the evaluation holds more than its budget: one thread-local load and
    /// a comparison, cheap enough for every call.
    #[inline]
    pub(crate) fn check(&self) -> Result<(), OverBudget> {
        if thread_live_bytes() > self.ceiling {
            return Err(self.exceeded(None));
        }
        Ok(())
    }

    /// Whether `bytes` more would still fit: checked before a large allocation is
    /// attempted, so that one huge request fails without being made.
    #[inline]
    pub(crate) fn reserve(&self, bytes: usize) -> Result<(), OverBudget> {
        if self.used().saturating_add(bytes) > self.limit {
            return Err(self.exceeded(Some(bytes)));
        }
        Ok(())
    }

    /// Whether `bytes` more would fit (no error: for optional preallocation).
    #[inline]
    pub(crate) fn fits(&self, bytes: usize) -> bool {
        self.used().saturating_add(bytes) <= self.limit
    }

    #[cold]
    fn exceeded(&self, request: Option<usize>) -> OverBudget {
        let used = self.used();
        let detail = match request {
            Some(bytes) => format!(
                "this operation needs {} more, with {} allocated",
                show_bytes(bytes),
                show_bytes(used)
            ),
            None => format!("{} allocated", show_bytes(used)),
        };
        OverBudget(format!(
            "memory budget of {} exceeded: {detail} ({WHAT_IS_COUNTED})",
            show_bytes(self.limit)
        ))
    }
}

/// What the budget counts, said with every overrun (a user compared "14.0 GiB in use"
/// with a peak resident size of 7.5 GB): the bytes asked of the allocator, not what
/// the operating system reports. `runtime.c`'s `fx_over_budget` says the same.
pub const WHAT_IS_COUNTED: &str = "the budget counts the bytes the evaluation has allocated and not freed, \
     reserved capacity included, which can exceed the resident memory a process monitor shows";

/// A byte count for people: whole MiB when it is one, else one decimal in the
/// largest unit that fits (`512 MiB`, `1.5 GiB`, `12.3 KiB`).
pub fn show_bytes(bytes: usize) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else if value.fract() == 0.0 {
        format!("{value} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::show_bytes;

    #[test]
    fn byte_counts_read_as_people_write_them() {
        assert_eq!(show_bytes(64 << 20), "64 MiB");
        assert_eq!(show_bytes(3 << 29), "1.5 GiB");
        assert_eq!(show_bytes(100), "100 bytes");
        assert_eq!(show_bytes(1 << 10), "1 KiB");
    }
}
