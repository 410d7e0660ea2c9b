//! The one table of primitive derivatives, shared by every mode: for each real
//! primitive, its partial derivatives in terms of the primal arguments and result.
//!
//! Non-differentiable points follow LANGUAGE.md §5: `abs'(0) = 0`; `min`/`max` follow
//! their first argument on ties; `∂pow(x, y)/∂y = pow(x, y)·log(x)` is 0 where
//! `x = 0`; `floor`, `ceil` have zero derivative.

use fluxion_core::{Atom, Lit, Prim, Type};

use crate::builder::{Builder, real};

/// The primitives that are functions of reals to a real (when applied to reals):
/// exactly those with a rule here and in `jets.rs`.
pub(crate) fn is_real_function(p: Prim) -> bool {
    use Prim::*;
    matches!(
        p,
        Add | Sub
            | Mul
            | Div
            | Rem
            | Neg
            | Sin
            | Cos
            | Tan
            | Asin
            | Acos
            | Atan
            | Tanh
            | Sinh
            | Cosh
            | Exp
            | Log
            | Log1p
            | Expm1
            | Sqrt
            | Abs
            | Sigmoid
            | Lgamma
            | Erf
            | Floor
            | Ceil
            | Pow
            | Atan2
            | Min
            | Max
            | Digamma
            | Trigamma
            | Polygamma
    )
}

/// Emits the tangent of `y = p(xs)` given the argument tangents `dxs` (all reals).
/// Returns `None` for primitives that are not real functions.
pub(crate) fn real_tangent(
    b: &mut Builder,
    p: Prim,
    xs: &[Atom],
    y: Atom,
    dxs: &[Atom],
) -> Option<Atom> {
    use Prim::*;
    if p == Polygamma {
        // ∂/∂x ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁺¹⁾(x); the order n is an Int.
        let n1 = b.add(xs[0], crate::builder::int(1));
        let d = b.prim(Polygamma, &[n1, xs[1]], Type::Real);
        return Some(b.mul(d, dxs[1]));
    }
    if xs.len() == 1 {
        let (x, dx) = (xs[0], dxs[0]);
        // d = dy/dx
        let d = match p {
            Neg => return Some(b.neg(dx)),
            Sin => b.unary(Cos, x),
            Cos => {
                let s = b.unary(Sin, x);
                b.neg(s)
            }
            Tan => {
                // 1 + tan²
                let y2 = b.mul(y, y);
                b.add(real(1.0), y2)
            }
            Asin | Acos => {
                // ±1 / sqrt(1 - x²)
                let x2 = b.mul(x, x);
                let one_minus = b.sub(real(1.0), x2);
                let r = b.unary(Sqrt, one_minus);
                let inv = b.div(real(1.0), r);
                if p == Acos { b.neg(inv) } else { inv }
            }
            Atan => {
                let x2 = b.mul(x, x);
                let den = b.add(real(1.0), x2);
                b.div(real(1.0), den)
            }
            Tanh => {
                let y2 = b.mul(y, y);
                b.sub(real(1.0), y2)
            }
            Sinh => b.unary(Cosh, x),
            Cosh => b.unary(Sinh, x),
            Exp => y,
            Expm1 => b.add(y, real(1.0)),
            Log => b.div(real(1.0), x),
            Log1p => {
                let den = b.add(real(1.0), x);
                b.div(real(1.0), den)
            }
            Sqrt => {
                let twice = b.mul(real(2.0), y);
                b.div(real(1.0), twice)
            }
            Abs => {
                // sign(x), with abs'(0) = 0
                let pos = b.cmp(Gt, x, real(0.0));
                b.if_(
                    pos,
                    Type::Real,
                    |_| real(1.0),
                    |b| {
                        let negative = b.cmp(Lt, x, real(0.0));
                        b.if_(negative, Type::Real, |_| real(-1.0), |_| real(0.0))
                    },
                )
            }
            Sigmoid => {
                let one_minus = b.sub(real(1.0), y);
                b.mul(y, one_minus)
            }
            Erf => {
                // 2/sqrt(pi) · exp(-x²)
                let x2 = b.mul(x, x);
                let nx2 = b.neg(x2);
                let e = b.unary(Exp, nx2);
                b.mul(real(std::f64::consts::FRAC_2_SQRT_PI), e)
            }
            Lgamma => b.unary(Digamma, x),
            Digamma => b.unary(Trigamma, x),
            Trigamma => b.prim(Polygamma, &[crate::builder::int(2), x], Type::Real),
            Floor | Ceil => return Some(real(0.0)),
            _ => return None,
        };
        return Some(b.mul(d, dx));
    }
    let (x, y0, dx, dy) = (xs[0], xs[1], dxs[0], dxs[1]);
    Some(match p {
        Add => b.add(dx, dy),
        Sub => b.sub(dx, dy),
        Mul => {
            let a = b.mul(dx, y0);
            let c = b.mul(x, dy);
            b.add(a, c)
        }
        Div => {
            // (dx - (x/y)·dy) / y
            let q = b.mul(y, dy);
            let num = b.sub(dx, q);
            b.div(num, y0)
        }
        Rem => {
            // x % y = x − q·y with q the integer quotient, locally constant:
            // d = dx − q·dy. q is recovered exactly from the primal remainder r = y
            // (this function's result): q = round((x − r) / y).
            let diff = b.sub(x, y);
            let q = b.div(diff, y0);
            let half_up = b.add(q, real(0.5));
            let q = b.unary(Floor, half_up);
            let td = b.mul(q, dy);
            b.sub(dx, td)
        }
        Pow => {
            // ∂/∂x = y·x^(y−1), taken as 0 where y = 0 (x^0 is constant; this avoids
            // 0·inf at x = 0). ∂/∂y = x^y·log x, taken as 0 where x = 0 (LANGUAGE.md
            // §5); where x < 0 only constant exponents make sense, so the term is left
            // out when the exponent does not move. Branches read primals, except the
            // x < 0 case, whose derivative in the exponent is NaN anyway.
            let y_is_zero = b.cmp(Eq, y0, real(0.0));
            let dfdx = b.if_(
                y_is_zero,
                Type::Real,
                |_| real(0.0),
                |b| {
                    let ym1 = b.sub(y0, real(1.0));
                    let pw = b.prim(Pow, &[x, ym1], Type::Real);
                    b.mul(y0, pw)
                },
            );
            let a = b.mul(dfdx, dx);
            let positive = b.cmp(Gt, x, real(0.0));
            let skip = b.if_(
                positive,
                Type::Bool,
                |_| Atom::Lit(Lit::Bool(false)),
                |b| {
                    let zero_base = b.cmp(Eq, x, real(0.0));
                    b.if_(
                        zero_base,
                        Type::Bool,
                        |_| Atom::Lit(Lit::Bool(true)),
                        |b| b.cmp(Eq, dy, real(0.0)),
                    )
                },
            );
            let c = b.if_(
                skip,
                Type::Real,
                |_| real(0.0),
                |b| {
                    let l = b.unary(Log, x);
                    let dfdy = b.mul(y, l);
                    b.mul(dfdy, dy)
                },
            );
            b.add(a, c)
        }
        Atan2 => {
            // atan2(u, v): (v·du - u·dv) / (u² + v²)
            let (u, v, du, dv) = (x, y0, dx, dy);
            let a = b.mul(v, du);
            let c = b.mul(u, dv);
            let num = b.sub(a, c);
            let u2 = b.mul(u, u);
            let v2 = b.mul(v, v);
            let den = b.add(u2, v2);
            b.div(num, den)
        }
        Min | Max => {
            // The tangent of the argument chosen; ties choose the first.
            let first = b.cmp(if p == Min { Le } else { Ge }, x, y0);
            b.if_(first, Type::Real, |_| dx, |_| dy)
        }
        _ => return None,
    })
}
