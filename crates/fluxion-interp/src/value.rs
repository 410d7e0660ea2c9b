//! Run-time values. Arrays of reals are unboxed (`RealArray`, one contiguous `f64`
//! buffer); everything else is shared with `Rc`, so copying a value is cheap.

use std::fmt;
use std::rc::Rc;

use fluxion_core::print::format_real;
use fluxion_core::{CodeId, Module};

#[derive(Clone, Debug)]
pub enum Value {
    Real(f64),
    Int(i64),
    Bool(bool),
    Unit,
    Tuple(Rc<[Value]>),
    /// An array whose elements are reals.
    RealArray(Rc<[f64]>),
    /// An array of anything else (an empty array may be either kind).
    Array(Rc<[Value]>),
    Enum(u32, Rc<[Value]>),
    Closure(Rc<Closure>),
    /// The symbolic zero of any tangent type (`%tzero`, see `tangent.rs`): only the
    /// tangent algebra of the reverse modes makes it, and `%tdense` removes it before
    /// a tangent reaches the user.
    Zero,
}

#[derive(Debug)]
pub struct Closure {
    pub code: CodeId,
    pub env: Vec<Value>,
}

impl Value {
    /// Builds an array, unboxing it when its elements are reals (all of them: an array
    /// of real tangents may hold a symbolic zero, which stays boxed).
    pub fn array(elems: Vec<Value>) -> Value {
        let reals: Option<Vec<f64>> = elems
            .iter()
            .map(|v| match v {
                Value::Real(x) => Some(*x),
                _ => None,
            })
            .collect();
        match reals {
            Some(xs) if !xs.is_empty() => Value::RealArray(xs.into()),
            _ => Value::Array(elems.into()),
        }
    }

    pub fn array_len(&self) -> Option<usize> {
        match self {
            Value::RealArray(a) => Some(a.len()),
            Value::Array(a) => Some(a.len()),
            _ => None,
        }
    }

    /// Element `i` of an array (`None` when out of range or not an array).
    pub fn array_get(&self, i: usize) -> Option<Value> {
        match self {
            Value::RealArray(a) => a.get(i).map(|x| Value::Real(*x)),
            Value::Array(a) => a.get(i).cloned(),
            _ => None,
        }
    }

    /// The elements of an array, boxed.
    pub fn array_elems(&self) -> Vec<Value> {
        match self {
            Value::RealArray(a) => a.iter().map(|x| Value::Real(*x)).collect(),
            Value::Array(a) => a.to_vec(),
            _ => Vec::new(),
        }
    }

    /// Structural equality (`==`); reals compare as IEEE doubles.
    pub fn equals(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Real(a), Value::Real(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Unit, Value::Unit) => true,
            (Value::Tuple(a), Value::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.equals(y))
            }
            (Value::Enum(t, a), Value::Enum(u, b)) => {
                t == u && a.iter().zip(b.iter()).all(|(x, y)| x.equals(y))
            }
            (a, b) => match (a.array_len(), b.array_len()) {
                (Some(n), Some(m)) => {
                    n == m
                        && (0..n).all(|i| match (a.array_get(i), b.array_get(i)) {
                            (Some(x), Some(y)) => x.equals(&y),
                            _ => false,
                        })
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
        Value::RealArray(xs) => {
            write!(f, "[")?;
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{}", format_real(*x))?;
            }
            write!(f, "]")
        }
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
    }
}
