//! Run-time values. Reals, `Int`s, `Bool`s and pairs of reals (forward mode's dual
//! numbers) are held inline; arrays of any of them are unboxed buffers (`RealArray`,
//! `IntArray`, `BoolArray`, `DualArray`); everything else is shared with `Rc`, so
//! copying a value is cheap.
//!
//! Invariant (canonical forms): a 2-tuple whose fields are both reals is always
//! `Dual`, never `Tuple`; a non-empty array of reals is always `RealArray`, one of
//! `Int`s always `IntArray`, one of `Bool`s always `BoolArray` and one of pairs of
//! reals always `DualArray`. Build values with [`Value::tuple`] and
//! [`Value::array`] to keep it. Readers also accept the boxed forms (through
//! [`Value::tuple_fields`], [`Value::array_get`], …), so a value made by hand still
//! behaves as the tuple or array it denotes.

use std::borrow::Cow;
use std::fmt;
use std::rc::Rc;

use fluxion_core::print::format_real;
use fluxion_core::{CodeId, Module};

pub use crate::array::{ArrayIter, DualArray};

#[derive(Clone, Debug)]
pub enum Value {
    Real(f64),
    Int(i64),
    Bool(bool),
    Unit,
    /// A tuple of another shape than `(Real, Real)`.
    Tuple(Rc<[Value]>),
    /// The tuple `(Real, Real)`: forward mode's `(primal, tangent)`, without a heap
    /// allocation (it is the size of the `Rc` slice the other variants hold).
    Dual(f64, f64),
    /// The tuple `(Real, Int)`: the delta layer's `(primal, delta id)` (`--ad delta`),
    /// without a heap allocation.
    RealInt(f64, i64),
    /// An array whose elements are reals.
    RealArray(Rc<[f64]>),
    /// An array whose elements are `Int`s (8 bytes each, not a boxed `Value`).
    IntArray(Rc<[i64]>),
    /// An array whose elements are `Bool`s (1 byte each).
    BoolArray(Rc<[bool]>),
    /// An array whose elements are pairs of reals, as two buffers.
    DualArray(Rc<DualArray>),
    /// An array of anything else (an empty array may be of any array kind).
    Array(Rc<[Value]>),
    Enum(u32, Rc<[Value]>),
    Closure(Rc<Closure>),
    /// The symbolic zero of any tangent type (`%tzero`, see `tangent.rs`): only the
    /// tangent algebra of the reverse modes makes it, and `%tdense` removes it before
    /// a tangent reaches the user.
    Zero,
    /// An array cotangent not yet materialised (CHAD's `%lonehot`, `%lembed`, and sums
    /// of array cotangents; `linear.rs`): forced by whatever reads its elements.
    Lazy(Rc<crate::linear::Lazy>),
}

#[derive(Debug)]
pub struct Closure {
    pub code: CodeId,
    pub env: Vec<Value>,
}

/// A value nested millions deep (a list built by a `fold`, a chain of closures) would
/// be dropped by one recursion per level and overflow the stack. While the stack has
/// room the drop is Rust's own; when it runs low, the rest is dropped from a work list:
/// the values this one alone owns are moved out (leaving `()` behind) level by level,
/// so each is dropped with nothing nested left in it.
impl Drop for Value {
    #[inline(always)]
    fn drop(&mut self) {
        if self.nests() {
            self.drop_nested();
        }
    }
}

impl Value {
    /// The rest of `drop` for a value that nests (out of line: most values dropped are
    /// scalars, whose drop stays a discriminant check).
    #[inline(never)]
    fn drop_nested(&mut self) {
        if crate::deep::has_room() {
            return;
        }
        let mut work = Vec::new();
        self.take_owned_nested(&mut work);
        while let Some(mut v) = work.pop() {
            v.take_owned_nested(&mut work);
        }
    }

    /// Whether this value can hold values that hold values (what may recurse on drop).
    #[inline(always)]
    fn nests(&self) -> bool {
        matches!(
            self,
            Value::Tuple(_) | Value::Array(_) | Value::Enum(..) | Value::Closure(_)
        )
    }

    /// Moves the nesting values that this one alone owns into `work`.
    fn take_owned_nested(&mut self, work: &mut Vec<Value>) {
        let take = |v: &mut Value| {
            if v.nests() {
                work.push(std::mem::replace(v, Value::Unit));
            }
        };
        match self {
            Value::Tuple(kids) | Value::Array(kids) | Value::Enum(_, kids) => {
                if let Some(kids) = Rc::get_mut(kids) {
                    kids.iter_mut().for_each(take);
                }
            }
            Value::Closure(c) => {
                if let Some(c) = Rc::get_mut(c) {
                    c.env.iter_mut().for_each(take);
                }
            }
            // (A chain of lazy sums drops itself iteratively: `LazyCt`'s `Drop`.)
            _ => {}
        }
    }

    /// Builds a tuple in canonical form (a pair of reals is `Dual`).
    pub fn tuple(fields: Vec<Value>) -> Value {
        match fields[..] {
            [Value::Real(p), Value::Real(t)] => Value::Dual(p, t),
            [Value::Real(p), Value::Int(i)] => Value::RealInt(p, i),
            _ => Value::Tuple(fields.into()),
        }
    }

    /// The fields of a tuple, of either representation (`None` for a non-tuple).
    pub fn tuple_fields(&self) -> Option<Cow<'_, [Value]>> {
        match self {
            Value::Tuple(vs) => Some(Cow::Borrowed(vs)),
            Value::Dual(p, t) => Some(Cow::Owned(vec![Value::Real(*p), Value::Real(*t)])),
            Value::RealInt(p, i) => Some(Cow::Owned(vec![Value::Real(*p), Value::Int(*i)])),
            _ => None,
        }
    }

    /// Field `i` of a tuple (`None` when out of range or not a tuple).
    #[inline]
    pub fn tuple_get(&self, i: usize) -> Option<Value> {
        match (self, i) {
            (Value::Dual(p, _), 0) => Some(Value::Real(*p)),
            (Value::Dual(_, t), 1) => Some(Value::Real(*t)),
            (Value::RealInt(p, _), 0) => Some(Value::Real(*p)),
            (Value::RealInt(_, i), 1) => Some(Value::Int(*i)),
            (Value::Tuple(vs), i) => vs.get(i).cloned(),
            _ => None,
        }
    }

    /// Builds an array in canonical form (unboxed when its elements are reals, `Int`s,
    /// `Bool`s or pairs of reals).
    pub fn array(elems: Vec<Value>) -> Value {
        Value::array_from(elems)
    }

    pub fn array_len(&self) -> Option<usize> {
        match self {
            Value::RealArray(a) => Some(a.len()),
            Value::IntArray(a) => Some(a.len()),
            Value::BoolArray(a) => Some(a.len()),
            Value::DualArray(a) => Some(a.len()),
            Value::Array(a) => Some(a.len()),
            _ => None,
        }
    }

    /// Element `i` of an array (`None` when out of range or not an array).
    #[inline]
    pub fn array_get(&self, i: usize) -> Option<Value> {
        match self {
            Value::RealArray(a) => a.get(i).map(|x| Value::Real(*x)),
            Value::IntArray(a) => a.get(i).map(|x| Value::Int(*x)),
            Value::BoolArray(a) => a.get(i).map(|x| Value::Bool(*x)),
            Value::DualArray(a) => a.get(i).map(|(p, t)| Value::Dual(p, t)),
            Value::Array(a) => a.get(i).cloned(),
            _ => None,
        }
    }

    /// The elements of an array, boxed.
    pub fn array_elems(&self) -> Vec<Value> {
        self.array_iter().collect()
    }

    /// Structural equality (`==`); reals compare as IEEE doubles. The pairs still to
    /// compare are kept in a work list, so values of any depth compare in constant
    /// stack.
    pub fn equals(&self, other: &Value) -> bool {
        // (Scalars and flat arrays push nothing: no allocation.)
        let mut work = Vec::new();
        if !self.equals_here(other, &mut work) {
            return false;
        }
        while let Some((a, b)) = work.pop() {
            if !a.equals_here(&b, &mut work) {
                return false;
            }
        }
        true
    }

    /// Compares the two values' own parts; pushes the pairs of their parts that hold
    /// more (fields, elements) onto `work`.
    fn equals_here(&self, other: &Value, work: &mut Vec<(Value, Value)>) -> bool {
        let mut pairs = |a: &[Value], b: &[Value]| {
            work.extend(a.iter().cloned().zip(b.iter().cloned()));
            a.len() == b.len()
        };
        match (self, other) {
            (Value::Real(a), Value::Real(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Unit, Value::Unit) => true,
            (Value::Dual(p, t), Value::Dual(q, u)) => p == q && t == u,
            (Value::RealInt(p, i), Value::RealInt(q, j)) => p == q && i == j,
            // Slices of f64 compare elementwise as IEEE doubles (NaN differs).
            (Value::RealArray(a), Value::RealArray(b)) => a[..] == b[..],
            (Value::IntArray(a), Value::IntArray(b)) => a[..] == b[..],
            (Value::BoolArray(a), Value::BoolArray(b)) => a[..] == b[..],
            (Value::DualArray(a), Value::DualArray(b)) => {
                a.primal()[..] == b.primal()[..] && a.tangent()[..] == b.tangent()[..]
            }
            (
                Value::Tuple(_) | Value::Dual(..) | Value::RealInt(..),
                Value::Tuple(_) | Value::Dual(..) | Value::RealInt(..),
            ) => match (self.tuple_fields(), other.tuple_fields()) {
                (Some(a), Some(b)) => pairs(&a, &b),
                _ => false,
            },
            (Value::Enum(t, a), Value::Enum(u, b)) => t == u && pairs(a, b),
            (a, b) => match (a.array_len(), b.array_len()) {
                (Some(n), Some(m)) if n == m => {
                    for i in 0..n {
                        match (a.array_get(i), b.array_get(i)) {
                            (Some(x), Some(y)) => work.push((x, y)),
                            _ => return false,
                        }
                    }
                    true
                }
                _ => false,
            },
        }
    }

    /// Displays the value in Fluxion literal syntax (enum names need the module).
    pub fn display<'a>(&'a self, module: &'a Module) -> ValueDisplay<'a> {
        ValueDisplay {
            value: self,
            module,
        }
    }
}

pub struct ValueDisplay<'a> {
    value: &'a Value,
    module: &'a Module,
}

/// Finds a constructor's name from its tag; tags are unique only per enum, so the
/// printer is told the enum by the type where it can be; here we search all enums for
/// one whose variant count and arity fit (first match).
fn ctor_name(
    module: &Module,
    tag: u32,
    arity: usize,
    hint: Option<fluxion_core::EnumId>,
) -> String {
    if let Some(e) = hint
        && let Some(v) = module.enum_def(e).variants.get(tag as usize)
    {
        return v.name.clone();
    }
    for def in &module.enums {
        if let Some(v) = def.variants.get(tag as usize)
            && v.fields.len() == arity
        {
            return v.name.clone();
        }
    }
    format!("Ctor{tag}")
}

impl fmt::Display for ValueDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_value(f, self.value, self.module, None)
    }
}

/// Writes `v`, using `ty` (when known) to name enum constructors exactly.
pub fn write_value(
    f: &mut dyn fmt::Write,
    v: &Value,
    module: &Module,
    ty: Option<&fluxion_core::Type>,
) -> fmt::Result {
    crate::deep(|| {
        use fluxion_core::Type;
        let elem_ty = |i: usize| -> Option<&Type> {
            match ty {
                Some(Type::Tuple(ts)) => ts.get(i),
                Some(Type::Array(t)) => Some(t),
                _ => None,
            }
        };
        match v {
            Value::Real(x) => write!(f, "{}", format_real(*x)),
            Value::Int(i) => write!(f, "{i}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Unit => write!(f, "()"),
            Value::Dual(p, t) => write!(f, "({}, {})", format_real(*p), format_real(*t)),
            Value::RealInt(p, i) => write!(f, "({}, {i})", format_real(*p)),
            Value::DualArray(d) => {
                write!(f, "[")?;
                for (i, (p, t)) in d.primal().iter().zip(d.tangent().iter()).enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "({}, {})", format_real(*p), format_real(*t))?;
                }
                write!(f, "]")
            }
            Value::Tuple(vs) => {
                write!(f, "(")?;
                for (i, x) in vs.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write_value(f, x, module, elem_ty(i))?;
                }
                write!(f, ")")
            }
            Value::RealArray(xs) => write_elements(f, xs, |f, x| write!(f, "{}", format_real(*x))),
            Value::IntArray(xs) => write_elements(f, xs, |f, x| write!(f, "{x}")),
            Value::BoolArray(xs) => write_elements(f, xs, |f, x| write!(f, "{x}")),
            Value::Array(vs) => {
                write!(f, "[")?;
                for (i, x) in vs.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write_value(f, x, module, elem_ty(0))?;
                }
                write!(f, "]")
            }
            Value::Enum(tag, fields) => {
                let eid = match ty {
                    Some(Type::Enum(e)) => Some(*e),
                    _ => None,
                };
                write!(f, "{}", ctor_name(module, *tag, fields.len(), eid))?;
                if fields.is_empty() {
                    return Ok(());
                }
                let field_tys: Option<Vec<Type>> =
                    eid.map(|e| module.enum_def(e).variants[*tag as usize].fields.clone());
                write!(f, "(")?;
                for (i, x) in fields.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write_value(f, x, module, field_tys.as_ref().and_then(|t| t.get(i)))?;
                }
                write!(f, ")")
            }
            Value::Closure(c) => write!(f, "<function {}>", module.code(c.code).name),
            Value::Zero => write!(f, "<zero>"),
            Value::Lazy(_) => write!(f, "<lazy cotangent>"),
        }
    })
}

/// Writes `[x0, x1, …]`, each element by `write_one`.
fn write_elements<T>(
    f: &mut dyn fmt::Write,
    xs: &[T],
    write_one: impl Fn(&mut dyn fmt::Write, &T) -> fmt::Result,
) -> fmt::Result {
    write!(f, "[")?;
    for (i, x) in xs.iter().enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        write_one(f, x)?;
    }
    write!(f, "]")
}
