//! Stack for walks over values of any depth.
//!
//! A value may nest as deep as memory allows: a list of a million cells built by a
//! `fold` is a million nested enum values. The interpreter's own recursion (calls in
//! the program) has a stack budget and stops with "stack depth exceeded", but the
//! walks over a value's structure — lifting a point into dual numbers, adding
//! tangents, printing — recurse once per level and must not abort the process. Each
//! such walk calls [`deep`] at every level: when less than [`RED_ZONE`] of the
//! current stack is left, the rest of the walk continues on a fresh segment of
//! [`SEGMENT`] bytes, mapped from the heap and freed when that part returns.
//!
//! Only walks that never evaluate program code may use it: the evaluator measures its
//! depth by stack addresses, which a segment would confuse.

/// Stack left below which a walk moves to a new segment: more than any one level of
/// a walk uses (about 1–2 KiB in an unoptimised build).
const RED_ZONE: usize = 256 << 10;

/// The size of each new segment (reserved address space, committed as it is used).
const SEGMENT: usize = 16 << 20;

/// Runs `f`, on a new stack segment if the current one is nearly used up.
#[inline]
pub fn deep<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

/// Whether the current stack has [`RED_ZONE`] left (or its size is unknown): room for
/// a few more levels of an ordinary recursion.
#[inline]
pub(crate) fn has_room() -> bool {
    stacker::remaining_stack().is_none_or(|left| left > RED_ZONE)
}
