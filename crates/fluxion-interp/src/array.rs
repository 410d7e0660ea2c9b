//! Array representations: building an array in its canonical form, and reading any
//! array's elements without boxing the whole array first.
//!
//! Canonical form of a non-empty array, chosen by its elements (see [`Value`]):
//! reals are one unboxed buffer (`RealArray`), pairs of reals (dual numbers) are two
//! unboxed buffers (`DualArray`, struct of arrays), anything else is boxed (`Array`).
//! An empty array may be any of the three.

use std::rc::Rc;

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
/// value per real.
pub(crate) struct ArrayBuilder {
    elems: Elems,
    capacity: usize,
}

enum Elems {
    /// No element yet: the first one decides the representation.
    Unknown,
    Reals(Vec<f64>),
    Duals(Vec<f64>, Vec<f64>),
    Boxed(Vec<Value>),
}

impl ArrayBuilder {
    pub(crate) fn with_capacity(capacity: usize) -> ArrayBuilder {
        ArrayBuilder {
            elems: Elems::Unknown,
            capacity,
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, v: Value) {
        match (&mut self.elems, v) {
            (Elems::Reals(xs), Value::Real(x)) => xs.push(x),
            (Elems::Duals(ps, ts), Value::Dual(p, t)) => {
                ps.push(p);
                ts.push(t);
            }
            (Elems::Boxed(vs), v) => vs.push(v),
            (_, v) => self.push_first_or_mixed(v),
        }
    }

    /// The first element chooses the representation. An element of another kind
    /// afterwards (no well-typed program makes one) boxes what was collected.
    #[cold]
    fn push_first_or_mixed(&mut self, v: Value) {
        let n = self.capacity;
        self.elems = match std::mem::replace(&mut self.elems, Elems::Unknown) {
            Elems::Unknown => match v {
                Value::Real(x) => {
                    let mut xs = Vec::with_capacity(n);
                    xs.push(x);
                    Elems::Reals(xs)
                }
                Value::Dual(p, t) => {
                    let (mut ps, mut ts) = (Vec::with_capacity(n), Vec::with_capacity(n));
                    ps.push(p);
                    ts.push(t);
                    Elems::Duals(ps, ts)
                }
                v => {
                    let mut vs = Vec::with_capacity(n);
                    vs.push(v);
                    Elems::Boxed(vs)
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
    Duals(std::iter::Zip<std::slice::Iter<'a, f64>, std::slice::Iter<'a, f64>>),
    Boxed(std::slice::Iter<'a, Value>),
}

impl Iterator for ArrayIter<'_> {
    type Item = Value;

    #[inline]
    fn next(&mut self) -> Option<Value> {
        match self {
            ArrayIter::Reals(xs) => xs.next().map(|x| Value::Real(*x)),
            ArrayIter::Duals(ds) => ds.next().map(|(p, t)| Value::Dual(*p, *t)),
            ArrayIter::Boxed(vs) => vs.next().cloned(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            ArrayIter::Reals(xs) => xs.size_hint(),
            ArrayIter::Duals(ds) => ds.size_hint(),
            ArrayIter::Boxed(vs) => vs.size_hint(),
        }
    }
}

impl DoubleEndedIterator for ArrayIter<'_> {
    fn next_back(&mut self) -> Option<Value> {
        match self {
            ArrayIter::Reals(xs) => xs.next_back().map(|x| Value::Real(*x)),
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
            Value::DualArray(d) => ArrayIter::Duals(d.primal.iter().zip(d.tangent.iter())),
            Value::Array(vs) => ArrayIter::Boxed(vs.iter()),
            _ => ArrayIter::Boxed([].iter()),
        }
    }
}
