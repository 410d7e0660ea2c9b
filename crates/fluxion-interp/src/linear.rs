//! The run-time side of CHAD's linear building blocks (fluxion-ad's `chad.rs` emits
//! them; fluxion-core's `prim.rs` lists them): `%lscale`, `%lproj`, `%lfield`,
//! `%lonehot`, `%lembed`, `%lslice`, `%lsum`, `%lindex`, and the lazy array cotangents that keep
//! reverse mode linear-time.
//!
//! An array cotangent made by `%lonehot` (the transpose of one read `a[i]`) or
//! `%lembed` (of a `slice`), or by `%tplus` of array cotangents, is not materialised:
//! it is a [`Value::Lazy`] node, O(1) to make. It is forced — every leaf added into one
//! buffer of the array's length, iteratively — when something reads it (`%tdense`,
//! `%lslice`, `%lsum`). So a gradient with k reads of an n-array costs O(n + k), where
//! dense one-hot arrays would cost O(n·k) ([CHAD]'s cost caveats 3 and 6, docs/references.md; this is
//! the accumulation of "Efficient CHAD").

use std::rc::Rc;

use crate::tangent::plus;
use crate::value::Value;

/// An unmaterialised array cotangent, and its dense form once read.
#[derive(Debug)]
pub struct Lazy {
    pub ct: LazyCt,
    /// Set by the first [`force`] of the node, and used wherever the node is met
    /// again, as compiled code caches it (`runtime.c`'s `fx_dense`): a node read, then
    /// added into a larger sum, adds its dense form, so both backends associate the
    /// additions alike.
    cache: std::cell::OnceCell<Value>,
}

/// The shape of an unmaterialised array cotangent.
#[derive(Debug)]
pub enum LazyCt {
    /// `u + v`, each an array cotangent (dense, lazy, or the symbolic zero).
    Sum(Value, Value),
    /// The length-`len` array cotangent with `value` at `index`, zero elsewhere.
    OneHot {
        len: usize,
        index: usize,
        value: Value,
    },
    /// The length-`len` array cotangent with the array cotangent `value` at `start`.
    Embed {
        len: usize,
        start: usize,
        value: Value,
    },
}

impl Drop for LazyCt {
    /// Long chains of sums (one per recursive call, say) are freed iteratively, not by
    /// a recursion as deep as the chain.
    fn drop(&mut self) {
        let mut work = Vec::new();
        take_children(self, &mut work);
        while let Some(node) = work.pop() {
            if let Ok(mut inner) = Rc::try_unwrap(node) {
                take_children(&mut inner.ct, &mut work);
            }
        }
    }
}

fn take_children(node: &mut LazyCt, work: &mut Vec<Rc<Lazy>>) {
    let mut take = |v: &mut Value| {
        if let Value::Lazy(l) = v {
            work.push(l.clone());
            *v = Value::Zero;
        }
    };
    match node {
        LazyCt::Sum(a, b) => {
            take(a);
            take(b);
        }
        LazyCt::OneHot { value, .. } | LazyCt::Embed { value, .. } => take(value),
    }
}

fn lazy(ct: LazyCt) -> Value {
    Value::Lazy(Rc::new(Lazy {
        ct,
        cache: std::cell::OnceCell::new(),
    }))
}

/// `u + v` of two array cotangents, left unmaterialised.
pub fn lazy_sum(u: &Value, v: &Value) -> Value {
    lazy(LazyCt::Sum(u.clone(), v.clone()))
}

/// `%lscale(c, w) = c·w`; `w` itself where `w` is zero (symbolic, 0.0 or -0.0), so that
/// a partial that overflows where no cotangent flows makes no NaN, and 0.0 where the
/// partial `c` is 0.0, so that an infinite cotangent through a branch not followed
/// (`max`) or a constant factor makes no NaN either (the delta mode's `%delta(0.0, id)`
/// records nothing, the same convention).
pub fn scale(c: &Value, w: &Value) -> Value {
    match (c, w) {
        (_, Value::Zero) => Value::Zero,
        (Value::Real(c), Value::Real(w)) => Value::Real(fluxion_core::prim::lscale(*c, *w)),
        _ => Value::Real(0.0),
    }
}

/// `%lproj(t, i)`: component `i` of a tuple cotangent.
pub fn proj(t: &Value, i: usize) -> Result<Value, String> {
    match t {
        Value::Zero => Ok(Value::Zero),
        t => t
            .tuple_get(i)
            .ok_or_else(|| "internal error: %lproj of a non-tuple".into()),
    }
}

/// `%lfield(t, tag, j)`: field `j` of an enum cotangent of constructor `tag`.
pub fn field(t: &Value, tag: u32, j: usize) -> Result<Value, String> {
    match t {
        Value::Zero => Ok(Value::Zero),
        Value::Enum(found, fields) if *found == tag => fields
            .get(j)
            .cloned()
            .ok_or_else(|| "internal error: %lfield out of range".into()),
        Value::Enum(..) => Err("a cotangent with another constructor than its value".into()),
        _ => Err("internal error: %lfield of a non-enum".into()),
    }
}

/// `%lonehot(n, i, w)`.
pub fn one_hot(len: i64, index: i64, w: &Value) -> Result<Value, String> {
    if matches!(w, Value::Zero) {
        return Ok(Value::Zero);
    }
    let (len, index) = sizes(len, index)?;
    if index >= len {
        return Err(format!(
            "internal error: one-hot index {index} of length {len}"
        ));
    }
    Ok(lazy(LazyCt::OneHot {
        len,
        index,
        value: w.clone(),
    }))
}

/// `%lembed(n, s, t)`.
pub fn embed(len: i64, start: i64, t: &Value) -> Result<Value, String> {
    if matches!(t, Value::Zero) {
        return Ok(Value::Zero);
    }
    let (len, start) = sizes(len, start)?;
    Ok(lazy(LazyCt::Embed {
        len,
        start,
        value: t.clone(),
    }))
}

fn sizes(a: i64, b: i64) -> Result<(usize, usize), String> {
    match (usize::try_from(a), usize::try_from(b)) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        _ => Err("internal error: a negative size in a cotangent".into()),
    }
}

/// `%lslice(t, s, l)`: elements `s..s+l` of an array cotangent.
pub fn slice(t: &Value, start: i64, len: i64) -> Result<Value, String> {
    // Zero, or forced to zero (see `index`).
    let t = force(t)?;
    if matches!(t, Value::Zero) {
        return Ok(Value::Zero);
    }
    let (start, len) = sizes(start, len)?;
    match t.array_len() {
        Some(n) if start + len <= n => Ok(Value::array_from(t.array_iter().skip(start).take(len))),
        _ => Err("internal error: %lslice out of range".into()),
    }
}

/// `%lindex(t, i)`: element `i` of an array tangent (forward CHAD reads `a[i]`'s
/// tangent with it): O(1) on a dense array or the symbolic zero.
///
/// `t` may be zero in two ways: the symbolic zero itself, or a lazy sum that [`force`]
/// turns into it (every leaf zero, say `[0, 0] + [0, 0]`, where forward CHAD adds
/// the tangents of two uses of an array whose elements' tangents are all zero at run
/// time). Forced, that zero has no length left to index, but `%lindex(·, i)` is
/// linear, so it gives zero: a linear term maps `0̲` to `0̲` ([CHAD] §4, Fig. 6:
/// `t[0̲/v] = 0̲`; forward CHAD's tangents are such terms, §7.4). `%lslice`, and
/// `%lembed` when forced, read it the same way.
pub fn index(t: &Value, i: i64) -> Result<Value, String> {
    let t = force(t)?;
    if matches!(t, Value::Zero) {
        return Ok(Value::Zero);
    }
    usize::try_from(i)
        .ok()
        .and_then(|i| t.array_get(i))
        .ok_or_else(|| format!("internal error: %lindex {i} out of range"))
}

/// `%lsum(t)`: the sum of the elements of an array cotangent (zero if empty).
pub fn sum(t: &Value) -> Result<Value, String> {
    if matches!(t, Value::Zero) {
        return Ok(Value::Zero);
    }
    let t = force(t)?;
    if let Value::RealArray(xs) = &t {
        return Ok(Value::Real(xs.iter().sum()));
    }
    let mut acc = Value::Zero;
    for x in t.array_iter() {
        acc = plus(&acc, &x)?;
    }
    Ok(acc)
}

/// The accumulation buffer of [`force`]: its kind is chosen by the first term added
/// (unboxed reals for an array of reals).
enum Buffer {
    Empty(usize),
    Reals(Vec<f64>),
    /// Boxed elements; an array element added onto a nonzero one is made dense once,
    /// into a buffer of its own (`rows[i]`), which later terms are added into in place
    /// (compiled code's `accum`: a lazy sum of the two would add them in the other
    /// order, and making the row dense again for every term would cost its length).
    Values(Vec<Value>, Vec<Option<Sink>>),
}

/// A buffer being filled: its length and contents, once the first term says them.
type Sink = Option<(usize, Buffer)>;

impl Buffer {
    fn values(vs: Vec<Value>) -> Buffer {
        let rows = vs.iter().map(|_| None).collect();
        Buffer::Values(vs, rows)
    }

    fn add(&mut self, i: usize, x: &Value) -> Result<(), String> {
        match (&mut *self, x) {
            (_, Value::Zero) => {}
            (Buffer::Empty(n), x) => {
                *self = match x {
                    Value::Real(_) => Buffer::Reals(vec![0.0; *n]),
                    _ => Buffer::values(vec![Value::Zero; *n]),
                };
                return self.add(i, x);
            }
            (Buffer::Reals(xs), Value::Real(r)) => xs[i] += r,
            (Buffer::Reals(xs), _) => {
                *self = Buffer::values(xs.iter().map(|r| Value::Real(*r)).collect());
                return self.add(i, x);
            }
            (Buffer::Values(vs, rows), x)
                if (rows[i].is_some() || !matches!(vs[i], Value::Zero))
                    && (matches!(x, Value::Lazy(_)) || x.array_len().is_some()) =>
            {
                let row = match &mut rows[i] {
                    Some(row) => row,
                    None => {
                        let mut row = None;
                        accumulate_into(&std::mem::replace(&mut vs[i], Value::Zero), &mut row)?;
                        rows[i].insert(row)
                    }
                };
                accumulate_into(x, row)?;
            }
            (Buffer::Values(vs, _), x) => vs[i] = plus(&vs[i], x)?,
        }
        Ok(())
    }
}

/// An array cotangent with its lazy nodes added into one buffer (anything else is
/// returned as it is), the leaves in the order compiled code adds them (`runtime.c`'s
/// `accum`): a sum's right operand before its left, an embedded cotangent's leaves
/// straight into the buffer at its offset, a node forced before as its dense form.
/// Iterative: a chain of a million sums is no deeper than one. Where no leaf adds
/// anything nonzero the result is the symbolic zero, whatever the leaves' length:
/// callers that read elements must treat it as zero.
pub fn force(t: &Value) -> Result<Value, String> {
    crate::deep(|| {
        let Value::Lazy(root) = t else {
            return Ok(t.clone());
        };
        if let Some(dense) = root.cache.get() {
            return Ok(dense.clone());
        }
        let mut sink = None;
        accumulate_into(t, &mut sink)?;
        let forced = finish(sink);
        Ok(root.cache.get_or_init(|| forced).clone())
    })
}

/// Where a term of [`accumulate_into`] goes: at `offset` in the buffer, and either at
/// the top (its length is the buffer's) or inside an embedding (at most `room` long).
#[derive(Clone, Copy)]
struct Place {
    offset: usize,
    room: Option<usize>,
}

/// `t`'s leaves added into `sink` (a node's cache read, not set: compiled code sets it
/// only where the node is read).
fn accumulate_into(t: &Value, sink: &mut Sink) -> Result<(), String> {
    // The term's length `len` checked against where it goes.
    let fits = |len: usize, at: Place, sink: &mut Sink| match (at.room, &*sink) {
        (Some(room), _) if len <= room => Ok(()),
        (Some(_), _) => Err("internal error: an embedded cotangent out of range".to_string()),
        (None, None) => {
            *sink = Some((len, Buffer::Empty(len)));
            Ok(())
        }
        (None, Some((n, _))) if *n == len => Ok(()),
        (None, Some((n, _))) => Err(format!(
            "tangents of arrays of different lengths ({n} and {len})"
        )),
    };
    let top = Place {
        offset: 0,
        room: None,
    };
    let mut work = vec![(t.clone(), top)];
    while let Some((x, at)) = work.pop() {
        let x = match &x {
            Value::Lazy(node) => node.cache.get().cloned().unwrap_or(x),
            _ => x,
        };
        match &x {
            Value::Zero => {}
            Value::Lazy(node) => match &node.ct {
                LazyCt::Sum(a, b) => {
                    work.push((a.clone(), at));
                    work.push((b.clone(), at));
                }
                LazyCt::OneHot { len, index, value } => {
                    fits(*len, at, sink)?;
                    let (_, buf) = sink.as_mut().expect("started");
                    buf.add(at.offset + index, value)?;
                }
                LazyCt::Embed { len, start, value } => {
                    fits(*len, at, sink)?;
                    let Some(room) = len.checked_sub(*start) else {
                        return Err("internal error: an embedded cotangent out of range".into());
                    };
                    let inner = Place {
                        offset: at.offset + start,
                        room: Some(room),
                    };
                    work.push((value.clone(), inner));
                }
            },
            dense => {
                let Some(len) = dense.array_len() else {
                    return Err("internal error: adding an array cotangent to a non-array".into());
                };
                fits(len, at, sink)?;
                let (_, buf) = sink.as_mut().expect("started");
                if let (Buffer::Empty(n), Value::RealArray(_)) = (&*buf, dense) {
                    *buf = Buffer::Reals(vec![0.0; *n]);
                }
                if let (Buffer::Reals(acc), Value::RealArray(xs)) = (&mut *buf, dense) {
                    acc[at.offset..at.offset + len]
                        .iter_mut()
                        .zip(xs.iter())
                        .for_each(|(a, x)| *a += x);
                    continue;
                }
                for (i, e) in dense.array_iter().enumerate() {
                    buf.add(at.offset + i, &e)?;
                }
            }
        }
    }
    Ok(())
}

/// The value a filled buffer holds.
fn finish(sink: Sink) -> Value {
    match sink {
        None | Some((_, Buffer::Empty(_))) => Value::Zero,
        Some((_, Buffer::Reals(xs))) => Value::RealArray(xs.into()),
        Some((_, Buffer::Values(mut vs, rows))) => {
            for (v, row) in vs.iter_mut().zip(rows) {
                if let Some(row) = row {
                    *v = finish(row);
                }
            }
            Value::array(vs)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[0, 0] + [0, 0]`: a lazy sum of two arrays whose every element is the
    /// symbolic zero (a `map` whose elements' tangents are all zero, used twice).
    fn zero_leaves() -> Value {
        let zeros = Value::array(vec![Value::Zero, Value::Zero]);
        lazy_sum(&zeros, &zeros)
    }

    /// The linear readers give zero on an array tangent that forces to zero, as on
    /// the symbolic zero (they used to fail: "%lindex 0 out of range").
    #[test]
    fn an_array_tangent_forced_to_zero_reads_as_zero() {
        let t = zero_leaves();
        assert!(matches!(force(&t), Ok(Value::Zero)));
        assert!(matches!(index(&t, 1), Ok(Value::Zero)));
        assert!(matches!(slice(&t, 0, 1), Ok(Value::Zero)));
        assert!(matches!(sum(&t), Ok(Value::Zero)));
        // Embedded in a longer one, it adds nothing.
        let e = embed(3, 1, &t).unwrap();
        let one = one_hot(3, 0, &Value::Real(2.0)).unwrap();
        let forced = force(&lazy_sum(&e, &one)).unwrap();
        assert_eq!(forced.array_len(), Some(3));
        assert!(matches!(forced.array_get(0), Some(Value::Real(x)) if x == 2.0));
        assert!(matches!(forced.array_get(2), Some(Value::Real(x)) if x == 0.0));
        // Out of range is still an error where the tangent is not zero.
        let dense = Value::RealArray(vec![1.0, 2.0].into());
        assert!(index(&lazy_sum(&dense, &t), 2).is_err());
    }
}
