//! The entry ABI's argument and result streams: values as 64-bit words, by type. A
//! `Real` is its bits, an `Int` its value, a `Bool` 0 or 1, `()` nothing; a tuple is
//! its fields, an array its length then its elements, an enum value its constructor's
//! tag then its fields (the C side's `decode_*`/`encode_*` helpers read and write the
//! same layout). The native backend takes and gives words only; this module, in the
//! driver (which also converts JSON ↔ `Value`), converts `Value` ↔ words.

use std::rc::Rc;

use fluxion_core::{Module, Type};
use fluxion_interp::Value;

/// Appends `v` (of type `ty`) to `out`; `None` if the value does not have the type.
pub(crate) fn encode(v: &Value, ty: &Type, m: &Module, out: &mut Vec<u64>) -> Option<()> {
    fluxion_interp::deep(|| {
        match (ty, v) {
            (Type::Real, Value::Real(x)) => out.push(x.to_bits()),
            (Type::Int, Value::Int(i)) => out.push(*i as u64),
            (Type::Bool, Value::Bool(b)) => out.push(u64::from(*b)),
            (Type::Unit, _) => {}
            (Type::Tuple(ts), v) => {
                let fields = v.tuple_fields()?;
                for (t, f) in ts.iter().zip(fields.iter()) {
                    encode(f, t, m, out)?;
                }
            }
            // Unboxed buffers in bulk: element by element, each word cost a boxed
            // value and a stack check (~29 ns; Python's arguments pay it per call).
            (Type::Array(e), Value::RealArray(xs)) if **e == Type::Real => {
                out.push(xs.len() as u64);
                out.extend(xs.iter().map(|x| x.to_bits()));
            }
            (Type::Array(e), Value::IntArray(xs)) if **e == Type::Int => {
                out.push(xs.len() as u64);
                out.extend(xs.iter().map(|i| *i as u64));
            }
            (Type::Array(e), Value::BoolArray(xs)) if **e == Type::Bool => {
                out.push(xs.len() as u64);
                out.extend(xs.iter().map(|b| u64::from(*b)));
            }
            (Type::Array(e), v) => {
                let n = v.array_len()?;
                out.push(n as u64);
                for i in 0..n {
                    encode(&v.array_get(i)?, e, m, out)?;
                }
            }
            (Type::Enum(e), Value::Enum(tag, fields)) => {
                out.push(u64::from(*tag));
                let def = m.enum_def(*e);
                let variant = def.variants.get(*tag as usize)?;
                for (t, f) in variant.fields.iter().zip(fields.iter()) {
                    encode(f, t, m, out)?;
                }
            }
            _ => return None,
        }
        Some(())
    })
}

/// A value being read whose parts are not all read yet.
enum Partial {
    Tuple(Vec<Type>, Vec<Value>),
    Array(Type, usize, Vec<Value>),
    Enum(u32, Vec<Type>, Vec<Value>),
}

impl Partial {
    /// The type of the next part, or `None` when every part is read.
    fn next_type(&self) -> Option<Type> {
        match self {
            Partial::Tuple(ts, vs) => ts.get(vs.len()).cloned(),
            Partial::Array(e, n, vs) => (vs.len() < *n).then(|| e.clone()),
            Partial::Enum(_, ts, vs) => ts.get(vs.len()).cloned(),
        }
    }

    fn push(&mut self, v: Value) {
        match self {
            Partial::Tuple(_, vs) | Partial::Array(_, _, vs) | Partial::Enum(_, _, vs) => {
                vs.push(v)
            }
        }
    }

    fn finish(self) -> Value {
        match self {
            Partial::Tuple(_, vs) => Value::tuple(vs),
            Partial::Array(_, _, vs) => Value::array(vs),
            Partial::Enum(tag, _, vs) => Value::Enum(tag, Rc::from(vs)),
        }
    }
}

/// Reads a value of type `ty` from `words` at `*pos`. Iterative (an explicit stack of
/// values being read), so a list of millions of constructors is no deeper than one.
pub(crate) fn decode(words: &[u64], pos: &mut usize, ty: &Type, m: &Module) -> Option<Value> {
    let mut stack: Vec<Partial> = Vec::new();
    let mut next: Type = ty.clone();
    loop {
        let mut read = || {
            let w = words.get(*pos).copied();
            *pos += 1;
            w
        };
        let done: Value = match &next {
            Type::Real => Value::Real(f64::from_bits(read()?)),
            Type::Int => Value::Int(read()? as i64),
            Type::Bool => Value::Bool(read()? != 0),
            Type::Unit => Value::Unit,
            Type::Fn(..) => return None,
            // Arrays of reals and of Ints straight into their unboxed buffers: through
            // boxed values, a result of 2·10⁸ reals took three times the interpreter's
            // memory (a `Vec<Value>` doubling to 6 GiB) and aborted.
            Type::Array(e) if matches!(**e, Type::Real | Type::Int) => {
                let n = usize::try_from(read()?).ok()?;
                let end = pos.checked_add(n)?;
                let body = words.get(*pos..end)?;
                *pos = end;
                match **e {
                    _ if n == 0 => Value::array(Vec::new()),
                    Type::Real => {
                        Value::RealArray(body.iter().map(|w| f64::from_bits(*w)).collect())
                    }
                    _ => Value::IntArray(body.iter().map(|w| *w as i64).collect()),
                }
            }
            Type::Tuple(ts) => {
                stack.push(Partial::Tuple(ts.clone(), Vec::with_capacity(ts.len())));
                next = stack.last()?.next_type()?;
                continue;
            }
            Type::Array(e) => {
                let n = usize::try_from(read()?).ok()?;
                if n > words.len() + 1 && !matches!(**e, Type::Unit) {
                    return None;
                }
                stack.push(Partial::Array(
                    (**e).clone(),
                    n,
                    Vec::with_capacity(n.min(1 << 20)),
                ));
                match stack.last()?.next_type() {
                    Some(t) => {
                        next = t;
                        continue;
                    }
                    None => stack.pop()?.finish(),
                }
            }
            Type::Enum(e) => {
                let tag = u32::try_from(read()?).ok()?;
                let fields = m.enum_def(*e).variants.get(tag as usize)?.fields.clone();
                stack.push(Partial::Enum(tag, fields, Vec::new()));
                match stack.last()?.next_type() {
                    Some(t) => {
                        next = t;
                        continue;
                    }
                    None => stack.pop()?.finish(),
                }
            }
        };
        // Hand the value up until a partial value still needs a part.
        let mut value = done;
        loop {
            match stack.last_mut() {
                None => return Some(value),
                Some(top) => {
                    top.push(value);
                    match top.next_type() {
                        Some(t) => {
                            next = t;
                            break;
                        }
                        None => value = stack.pop()?.finish(),
                    }
                }
            }
        }
    }
}

/// `v` (of type `ty`) as the entry ABI's words; `None` if it does not have the type.
pub fn encode_value(v: &Value, ty: &Type, m: &Module) -> Option<Vec<u64>> {
    let mut out = Vec::new();
    encode(v, ty, m, &mut out)?;
    Some(out)
}

/// The values of types `tys`, one after another, that `words` hold, all of them (an
/// entry's argument stream); `None` if they do not.
pub fn decode_values(words: &[u64], tys: &[Type], m: &Module) -> Option<Vec<Value>> {
    let mut pos = 0;
    let vs = tys
        .iter()
        .map(|t| decode(words, &mut pos, t, m))
        .collect::<Option<Vec<_>>>()?;
    (pos == words.len()).then_some(vs)
}

/// Calls of a native program with values (the interpreter's `Value`s), encoded and
/// decoded here.
pub trait CallValues {
    /// Calls the entry with `args`. `stack_bytes` is how much of the current thread's
    /// stack the program may use; `memory_limit` the heap it may hold.
    fn call(
        &self,
        m: &Module,
        args: &[Value],
        stack_bytes: usize,
        memory_limit: u64,
    ) -> Result<Value, fluxion_native::RuntimeError>;

    /// [`CallValues::call`] with the function run as `repeat` says on the arguments
    /// encoded and decoded once: the last run's value and each run's time.
    fn call_repeated(
        &self,
        m: &Module,
        args: &[Value],
        stack_bytes: usize,
        memory_limit: u64,
        repeat: fluxion_native::Repeat,
    ) -> Result<(Value, Vec<std::time::Duration>), fluxion_native::RuntimeError>;
}

impl CallValues for fluxion_native::NativeProgram {
    fn call(
        &self,
        m: &Module,
        args: &[Value],
        stack_bytes: usize,
        memory_limit: u64,
    ) -> Result<Value, fluxion_native::RuntimeError> {
        let words = encode_args(self, m, args)?;
        self.call_words(&words, stack_bytes, memory_limit, |out| {
            decode(out, &mut 0, self.signature().1, m)
        })
    }

    fn call_repeated(
        &self,
        m: &Module,
        args: &[Value],
        stack_bytes: usize,
        memory_limit: u64,
        repeat: fluxion_native::Repeat,
    ) -> Result<(Value, Vec<std::time::Duration>), fluxion_native::RuntimeError> {
        let words = encode_args(self, m, args)?;
        self.call_words_repeated(&words, stack_bytes, memory_limit, repeat, |out| {
            decode(out, &mut 0, self.signature().1, m)
        })
    }
}

/// The entry's arguments as one word stream.
fn encode_args(
    p: &fluxion_native::NativeProgram,
    m: &Module,
    args: &[Value],
) -> Result<Vec<u64>, fluxion_native::RuntimeError> {
    let mut words = Vec::new();
    for (a, t) in args.iter().zip(p.signature().0) {
        encode(a, t, m, &mut words)
            .ok_or_else(|| fluxion_native::RuntimeError::internal("an argument of another type"))?;
    }
    Ok(words)
}
