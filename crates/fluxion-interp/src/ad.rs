//! The run-time side of the differential operators. Only `jvp` remains after
//! `fluxion_ad::expand_module`: it translates the function's code with the forward
//! pass (memoised), lifts the closure's captured values into forward-mode values with
//! zero tangents (the operator differentiates with respect to its argument only),
//! pairs the point with the direction, calls, and splits the result.
//!
//! Lifting, pairing and splitting are directed by the Core types: a value of type
//! `A` becomes a value of type `Tf(A)` where every real leaf is `(primal, tangent)`.

use std::rc::Rc;

use fluxion_core::verify::differentiated_argument;
use fluxion_core::{Module, Prim, Span, Type};

use crate::eval::{EvalResult, Interp, fail};
use crate::value::{Closure, Value};

impl Interp {
    pub(crate) fn differential(&self, p: Prim, args: Vec<Value>, span: Span) -> EvalResult<Value> {
        match p {
            Prim::Jvp => self.jvp(&args[0], &args[1], &args[2], span),
            Prim::Taylor => fail(span, "`taylor` is not implemented yet"),
            _ => fail(
                span,
                format!(
                    "internal error: `{}` was not expanded before evaluation",
                    p.name()
                ),
            ),
        }
    }

    fn jvp(&self, f: &Value, x: &Value, dx: &Value, span: Span) -> EvalResult<Value> {
        let Value::Closure(clo) = f else {
            return fail(span, "internal error: jvp of a non-function");
        };
        let (params, ret) = {
            let m = self.module();
            match m.code_ty(clo.code) {
                Type::Fn(ps, r) => (ps, *r),
                _ => return fail(span, "internal error: code without a function type"),
            }
        };
        let fwd = self.forward(clo, span)?;
        let a = differentiated_argument(&params);
        let point = {
            let m = self.module();
            pair(&m, x, dx, &a).map_err(|msg| crate::eval::RuntimeError { span, message: msg })?
        };
        let args = if params.len() == 1 {
            vec![point]
        } else {
            match point {
                Value::Tuple(vs) => vs.to_vec(),
                _ => return fail(span, "internal error: multi-argument point is not a tuple"),
            }
        };
        let result = self.apply(&fwd, args, span)?;
        let (y, dy) = split(&self.module(), &result, &ret);
        Ok(Value::Tuple(Rc::new([y, dy])))
    }

    /// The forward translation of a closure: translated code, lifted environment.
    fn forward(&self, clo: &Closure, span: Span) -> EvalResult<Value> {
        let (code, capture_tys) = {
            let mut m = self.module_mut();
            let code = fluxion_ad::forward_code(&mut m, clo.code)
                .map_err(|e| crate::eval::RuntimeError { span, message: e.0 })?;
            let tys: Vec<Type> = m
                .code(clo.code)
                .captures
                .iter()
                .map(|c| m.var_ty(*c).clone())
                .collect();
            (code, tys)
        };
        let mut env = Vec::with_capacity(clo.env.len());
        for (v, t) in clo.env.iter().zip(&capture_tys) {
            env.push(self.lift(v, t, span)?);
        }
        Ok(Value::Closure(Rc::new(Closure { code, env })))
    }

    /// A value of type `A` as a forward-mode value of type `Tf(A)`, tangents zero.
    fn lift(&self, v: &Value, ty: &Type, span: Span) -> EvalResult<Value> {
        Ok(match (v, ty) {
            (Value::Real(x), _) => real_pair(*x, 0.0),
            (Value::RealArray(xs), _) => {
                Value::Array(xs.iter().map(|x| real_pair(*x, 0.0)).collect())
            }
            (Value::Tuple(vs), Type::Tuple(ts)) => Value::Tuple(
                vs.iter()
                    .zip(ts)
                    .map(|(v, t)| self.lift(v, t, span))
                    .collect::<EvalResult<Vec<_>>>()?
                    .into(),
            ),
            (Value::Array(vs), Type::Array(t)) => Value::Array(
                vs.iter()
                    .map(|v| self.lift(v, t, span))
                    .collect::<EvalResult<Vec<_>>>()?
                    .into(),
            ),
            (Value::Enum(tag, fields), Type::Enum(e)) => {
                let field_tys = self.module().enum_def(*e).variants[*tag as usize]
                    .fields
                    .clone();
                Value::Enum(
                    *tag,
                    fields
                        .iter()
                        .zip(&field_tys)
                        .map(|(v, t)| self.lift(v, t, span))
                        .collect::<EvalResult<Vec<_>>>()?
                        .into(),
                )
            }
            (Value::Closure(c), _) => self.forward(c, span)?,
            (v, _) => v.clone(),
        })
    }
}

fn real_pair(x: f64, dx: f64) -> Value {
    Value::Tuple(Rc::new([Value::Real(x), Value::Real(dx)]))
}

fn real_of(v: &Value) -> f64 {
    match v {
        Value::Real(x) => *x,
        _ => 0.0,
    }
}

/// Pairs a point `x: A` with a direction `dx: T(A)` into `Tf(A)`.
fn pair(m: &Module, x: &Value, dx: &Value, ty: &Type) -> Result<Value, String> {
    Ok(match ty {
        Type::Real => real_pair(real_of(x), real_of(dx)),
        Type::Int | Type::Bool | Type::Unit => x.clone(),
        Type::Tuple(ts) => match (x, dx) {
            (Value::Tuple(xs), Value::Tuple(ds)) => Value::Tuple(
                xs.iter()
                    .zip(ds.iter())
                    .zip(ts)
                    .map(|((x, d), t)| pair(m, x, d, t))
                    .collect::<Result<Vec<_>, _>>()?
                    .into(),
            ),
            _ => return Err("internal error: tuple point without a tuple direction".into()),
        },
        Type::Array(t) => {
            let (n, k) = (x.array_len().unwrap_or(0), dx.array_len().unwrap_or(0));
            if n != k {
                return Err(format!(
                    "the tangent has length {k} but the point has length {n}"
                ));
            }
            Value::Array(
                (0..n)
                    .map(|i| {
                        pair(
                            m,
                            &x.array_get(i).expect("in range"),
                            &dx.array_get(i).expect("in range"),
                            t,
                        )
                    })
                    .collect::<Result<Vec<_>, _>>()?
                    .into(),
            )
        }
        Type::Enum(e) => match (x, dx) {
            (Value::Enum(tag, xs), Value::Enum(dtag, ds)) => {
                if tag != dtag {
                    return Err(
                        "the tangent of an enum value must have the same constructor".into(),
                    );
                }
                let field_tys = &m.enum_def(*e).variants[*tag as usize].fields;
                Value::Enum(
                    *tag,
                    xs.iter()
                        .zip(ds.iter())
                        .zip(field_tys)
                        .map(|((x, d), t)| pair(m, x, d, t))
                        .collect::<Result<Vec<_>, _>>()?
                        .into(),
                )
            }
            _ => return Err("internal error: enum point without an enum direction".into()),
        },
        Type::Fn(..) => return Err("cannot differentiate with respect to a function".into()),
    })
}

/// Splits a forward-mode value of type `Tf(B)` into `(B, T(B))`.
fn split(m: &Module, v: &Value, ty: &Type) -> (Value, Value) {
    match ty {
        Type::Real => match v {
            Value::Tuple(p) if p.len() == 2 => (p[0].clone(), p[1].clone()),
            _ => (Value::Real(f64::NAN), Value::Real(f64::NAN)),
        },
        Type::Int | Type::Bool | Type::Unit => (v.clone(), Value::Unit),
        Type::Tuple(ts) => {
            let Value::Tuple(vs) = v else {
                return (v.clone(), Value::Unit);
            };
            let (ys, ds): (Vec<Value>, Vec<Value>) =
                vs.iter().zip(ts).map(|(v, t)| split(m, v, t)).unzip();
            (Value::Tuple(ys.into()), Value::Tuple(ds.into()))
        }
        Type::Array(t) => {
            let (ys, ds): (Vec<Value>, Vec<Value>) =
                v.array_elems().iter().map(|v| split(m, v, t)).unzip();
            if **t == Type::Real {
                (Value::array(ys), Value::array(ds))
            } else {
                (Value::Array(ys.into()), Value::Array(ds.into()))
            }
        }
        Type::Enum(e) => {
            let Value::Enum(tag, fields) = v else {
                return (v.clone(), Value::Unit);
            };
            let field_tys = &m.enum_def(*e).variants[*tag as usize].fields;
            let (ys, ds): (Vec<Value>, Vec<Value>) = fields
                .iter()
                .zip(field_tys)
                .map(|(v, t)| split(m, v, t))
                .unzip();
            (Value::Enum(*tag, ys.into()), Value::Enum(*tag, ds.into()))
        }
        Type::Fn(..) => (v.clone(), Value::Unit),
    }
}
