//! Array representations: building an array in its canonical form, and reading any
//! array's elements without boxing the whole array first.
//!
//! Canonical form of a non-empty array, chosen by its elements (see [`Value`]):
//! reals, `Int`s and `Bool`s are one unboxed buffer each (`RealArray`, `IntArray`,
//! `BoolArray`: 8, 8 and 1 bytes per element), pairs of reals (dual numbers) are two
//! unboxed buffers (`DualArray`, struct of arrays), anything else is boxed (`Array`,
//! 24 bytes per element plus what the elements point to). An empty array may be any
//! kind.

use std::rc::Rc;

use crate::memory::MemoryBudget;
use crate::value::Value;

/// An array of pairs of reals `(primal, tangent)` as two buffers of equal length:
/// forward mode's `[(Real, Real)]` without a heap value per element (the layout a
/// native backend uses too). The buffers are shared, so an array of reals becomes
/// the primal or tangent half of a dual array, and back, without copying.
#[derive(Debug, Clone)]
pub struct DualArray {
    primal: Rc<[f64]>,
    tangent: Rc<[f64]>,
}

impl DualArray {
    /// Pairs two buffers; `None` when their lengths differ.
    pub fn new(primal: Rc<[f64]>, tangent: Rc<[f64]>) -> Option<DualArray> {
        (primal.len() == tangent.len()).then_some(DualArray { primal, tangent })
    }

    /// The reals `primal`, each with a zero tangent.
    pub fn constant(primal: Rc<[f64]>) -> DualArray {
        let tangent = vec![0.0; primal.len()].into();
        DualArray { primal, tangent }
    }

    pub fn primal(&self) -> &Rc<[f64]> {
        &self.primal
    }

    pub fn tangent(&self) -> &Rc<[f64]> {
        &self.tangent
    }

    pub fn len(&self) -> usize {
        self.primal.len()
    }

    pub fn is_empty(&self) -> bool {
        self.primal.is_empty()
    }

    /// Element `i` as a pair.
    pub fn get(&self, i: usize) -> Option<(f64, f64)> {
        Some((*self.primal.get(i)?, *self.tangent.get(i)?))
    }

    /// The same rearrangement (slice, reversal, …) applied to both buffers.
    pub(crate) fn map_buffers(&self, f: impl Fn(&[f64]) -> Rc<[f64]>) -> DualArray {
        DualArray {
            primal: f(&self.primal),
            tangent: f(&self.tangent),
        }
    }
}

/// Collects elements one at a time into the canonical representation of the array
/// they make, so that producers (`build`, `map`, literals, …) never hold a boxed
/// value per real, `Int` or `Bool`.
pub(crate) struct ArrayBuilder {
    elems: Elems,
    capacity: usize,
    /// When set, the full capacity is allocated up front only if it fits in this
    /// budget; otherwise the buffer grows as elements come, and the budget check of
    /// the next call reports the excess (no huge allocation is attempted first).
    budget: Option<MemoryBudget>,
}

enum Elems {
    /// No element yet: the first one decides the representation.
    Unknown,
    Reals(Vec<f64>),
    Ints(Vec<i64>),
    Bools(Vec<bool>),
    Duals(Vec<f64>, Vec<f64>),
    Boxed(Vec<Value>),
}

impl ArrayBuilder {
    /// A builder for about `capacity` elements, allocated with the first element.
    /// For arrays no bigger than values already held (a copy, a rearrangement).
    pub(crate) fn with_capacity(capacity: usize) -> ArrayBuilder {
        ArrayBuilder {
            elems: Elems::Unknown,
            capacity,
            budget: None,
        }
    }

    /// A builder for `capacity` elements of a length the program chose: preallocates
    /// only what fits in `budget`.
    pub(crate) fn within(capacity: usize, budget: &MemoryBudget) -> ArrayBuilder {
        ArrayBuilder {
            elems: Elems::Unknown,
            capacity,
            budget: Some(*budget),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, v: Value) {
        match (&mut self.elems, v) {
            (Elems::Reals(xs), Value::Real(x)) => xs.push(x),
            (Elems::Ints(xs), Value::Int(x)) => xs.push(x),
            (Elems::Bools(xs), Value::Bool(x)) => xs.push(x),
            (Elems::Duals(ps, ts), Value::Dual(p, t)) => {
                ps.push(p);
                ts.push(t);
            }
            (Elems::Boxed(vs), v) => vs.push(v),
            (_, v) => self.push_first_or_mixed(v),
        }
    }

    /// How many elements of `bytes_each` to allocate up front.
    fn initial_capacity(&self, bytes_each: usize) -> usize {
        let n = self.capacity;
        match &self.budget {
            Some(b) if !b.fits(n.saturating_mul(bytes_each)) => 0,
            _ => n,
        }
    }

    /// The first element chooses the representation. An element of another kind
    /// afterwards (no well-typed program makes one) boxes what was collected.
    #[cold]
    fn push_first_or_mixed(&mut self, v: Value) {
        fn first<T>(n: usize, x: T) -> Vec<T> {
            let mut xs = Vec::with_capacity(n);
            xs.push(x);
            xs
        }
        self.elems = match std::mem::replace(&mut self.elems, Elems::Unknown) {
            Elems::Unknown => match v {
                Value::Real(x) => Elems::Reals(first(self.initial_capacity(8), x)),
                Value::Int(x) => Elems::Ints(first(self.initial_capacity(8), x)),
                Value::Bool(x) => Elems::Bools(first(self.initial_capacity(1), x)),
                Value::Dual(p, t) => {
                    let n = self.initial_capacity(16);
                    Elems::Duals(first(n, p), first(n, t))
                }
                v => {
                    let n = self.initial_capacity(size_of::<Value>());
                    Elems::Boxed(first(n, v))
                }
            },
            other => {
                let mut vs: Vec<Value> = Self::finish_elems(other).array_iter().collect();
                vs.push(v);
                Elems::Boxed(vs)
            }
        };
    }

    pub(crate) fn finish(self) -> Value {
        Self::finish_elems(self.elems)
    }

    fn finish_elems(elems: Elems) -> Value {
        match elems {
            Elems::Unknown => Value::Array(Rc::new([])),
            Elems::Reals(xs) => Value::RealArray(xs.into()),
            Elems::Ints(xs) => Value::IntArray(xs.into()),
            Elems::Bools(xs) => Value::BoolArray(xs.into()),
            Elems::Duals(ps, ts) => Value::DualArray(Rc::new(DualArray {
                primal: ps.into(),
                tangent: ts.into(),
            })),
            Elems::Boxed(vs) => Value::Array(vs.into()),
        }
    }
}

impl Value {
    /// The array of `elems`, in canonical form.
    pub fn array_from(elems: impl IntoIterator<Item = Value>) -> Value {
        let elems = elems.into_iter();
        let mut b = ArrayBuilder::with_capacity(elems.size_hint().0);
        for v in elems {
            b.push(v);
        }
        b.finish()
    }
}

/// The elements of an array of any representation, each as a `Value` made on the
/// fly (reals and pairs of reals are not heap values, so this does not allocate).
pub enum ArrayIter<'a> {
    Reals(std::slice::Iter<'a, f64>),
    Ints(std::slice::Iter<'a, i64>),
    Bools(std::slice::Iter<'a, bool>),
    Duals(std::iter::Zip<std::slice::Iter<'a, f64>, std::slice::Iter<'a, f64>>),
    Boxed(std::slice::Iter<'a, Value>),
}

impl Iterator for ArrayIter<'_> {
    type Item = Value;

    #[inline]
    fn next(&mut self) -> Option<Value> {
        match self {
            ArrayIter::Reals(xs) => xs.next().map(|x| Value::Real(*x)),
            ArrayIter::Ints(xs) => xs.next().map(|x| Value::Int(*x)),
            ArrayIter::Bools(xs) => xs.next().map(|x| Value::Bool(*x)),
            ArrayIter::Duals(ds) => ds.next().map(|(p, t)| Value::Dual(*p, *t)),
            ArrayIter::Boxed(vs) => vs.next().cloned(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            ArrayIter::Reals(xs) => xs.size_hint(),
            ArrayIter::Ints(xs) => xs.size_hint(),
            ArrayIter::Bools(xs) => xs.size_hint(),
            ArrayIter::Duals(ds) => ds.size_hint(),
            ArrayIter::Boxed(vs) => vs.size_hint(),
        }
    }
}

impl DoubleEndedIterator for ArrayIter<'_> {
    fn next_back(&mut self) -> Option<Value> {
        match self {
            ArrayIter::Reals(xs) => xs.next_back().map(|x| Value::Real(*x)),
            ArrayIter::Ints(xs) => xs.next_back().map(|x| Value::Int(*x)),
            ArrayIter::Bools(xs) => xs.next_back().map(|x| Value::Bool(*x)),
            ArrayIter::Duals(ds) => ds.next_back().map(|(p, t)| Value::Dual(*p, *t)),
            ArrayIter::Boxed(vs) => vs.next_back().cloned(),
        }
    }
}

impl ExactSizeIterator for ArrayIter<'_> {}

impl Value {
    /// The elements of an array (none for a non-array).
    pub fn array_iter(&self) -> ArrayIter<'_> {
        match self {
            Value::RealArray(xs) => ArrayIter::Reals(xs.iter()),
            Value::IntArray(xs) => ArrayIter::Ints(xs.iter()),
            Value::BoolArray(xs) => ArrayIter::Bools(xs.iter()),
            Value::DualArray(d) => ArrayIter::Duals(d.primal.iter().zip(d.tangent.iter())),
            Value::Array(vs) => ArrayIter::Boxed(vs.iter()),
            _ => ArrayIter::Boxed([].iter()),
        }
    }
}
