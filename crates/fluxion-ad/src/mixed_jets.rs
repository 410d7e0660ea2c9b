//! (k,R)-jets of k ≥ 2 directions ([Taylor] §3.2, the (k,R)-Taylor representation of
//! each primitive, which any algebraically equivalent formula may compute, for example
//! truncated multivariate polynomial arithmetic — which this is).
//!
//! A jet is `[Real]`: the C = binom(R+k, k) Taylor coefficients of a real function of
//! t ∈ ℝ^k (the partial ∂^α divided by α!), in the graded order of [`Jet`]. Constants
//! have every coefficient but the first zero. The shape is fixed when translating (as
//! [Taylor] fixes (k,R) globally), so the product's pairs of multi-indices are literal
//! tables and every helper is generated once per shape.
//!
//! The rules, over the univariate table (`calculus.rs`, `jets.rs`; no second table):
//! - linear and locally constant primitives, `min`/`max`, `abs`, `%` act on
//!   coefficients independently of their layout: the univariate rule as it is;
//! - `*` (and `%lscale`) is the truncated product, c_γ = Σ_{α+β=γ} a_α·b_β over the
//!   pairs with |γ| ≤ R — at most C² terms, the pairs listed once per shape;
//! - a function f of one jet x is the composition Σ_{n ≤ R} f⁽ⁿ⁾(x₀)/n!·hⁿ with
//!   h = x − x₀ (Horner: R products): the coefficients f⁽ⁿ⁾(x₀)/n! are the univariate
//!   rule's series of f at [x₀, 1, 0, …, 0]; `polygamma`'s order passes through;
//! - `/` is x · (1/y), 1/y composed at y₀; `pow(x, y)` is x^{y₀} composed at x₀, times
//!   exp((y − y₀)·log x) where x₀ > 0 (elsewhere the exponent is held at y₀, as in
//!   every mode: `jets::pow`); `atan2(y, x)` is atan(y/x) (or −atan(x/y) where
//!   |y₀| > |x₀|) with the primal `atan2(y₀, x₀)`.
//!
//! Products are `%lscale`s past the primal, so a zero coefficient times a non-finite
//! one stays zero, as in the univariate rules (`jets.rs`).

use fluxion_core::{Atom, Jet, Lit, Prim, Rhs, Type};

use crate::builder::{Builder, int, real};
use crate::calculus::RealRule;
use crate::helpers::{call, helper};
use crate::jets;

fn reals() -> Type {
    Type::array(Type::Real)
}

fn ints(b: &mut Builder, xs: &[i64]) -> Atom {
    let atoms = xs.iter().map(|x| int(*x)).collect();
    b.emit("table", Rhs::Array(atoms), Type::array(Type::Int))
}

fn index(b: &mut Builder, a: Atom, i: Atom, ty: Type) -> Atom {
    b.prim(Prim::Index, &[a, i], ty)
}

/// The constant jet of `r`: `[r, 0, …, 0]`, C coefficients.
pub(crate) fn constant(b: &mut Builder, r: Atom, jet: Jet) -> Atom {
    jets::constant(b, r, jet.coefficients() as u32 - 1)
}

/// The univariate series `[x₀, 1, 0, …, 0]` of order R: the identity at x₀.
fn identity(b: &mut Builder, x0: Atom, order: u32) -> Atom {
    let mut coefs = vec![x0, real(1.0)];
    coefs.extend((1..order).map(|_| real(0.0)));
    b.emit("identity", Rhs::Array(coefs), reals())
}

/// For each coefficient γ, the pairs (α, β) with α + β = γ: `starts` (C + 1 offsets)
/// into `left` and `right`, the positions of α and β.
fn product_table(jet: Jet) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let mis = jet.multi_indices();
    let position: std::collections::HashMap<&Vec<u32>, i64> =
        mis.iter().enumerate().map(|(i, a)| (a, i as i64)).collect();
    let (mut starts, mut left, mut right) = (vec![0], vec![], vec![]);
    for gamma in &mis {
        for (i, alpha) in mis.iter().enumerate() {
            if alpha.iter().zip(gamma).all(|(a, g)| a <= g) {
                let beta: Vec<u32> = gamma.iter().zip(alpha).map(|(g, a)| g - a).collect();
                left.push(i as i64);
                right.push(position[&beta]);
            }
        }
        starts.push(left.len() as i64);
    }
    (starts, left, right)
}

/// How a product's terms combine.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Times {
    /// `*` of two jets: the primals' plain product, every other term a `%lscale`.
    Mul,
    /// `%lscale` of two jets: every term a `%lscale`.
    Linear,
    /// One step of Horner's rule, `c + (x − x₀)·y` for a constant `c`: the terms with
    /// α = 0 left out, coefficient 0 is `c`.
    Horner,
}

/// Products with at most this many pairs (α, β) are written out term by term (no
/// table, loop or closure: at (k, R) = (4, 4), 495 pairs); larger ones loop over the
/// table of pairs.
const UNROLL_PAIRS: usize = 4096;

/// The truncated product of two jets (`Times::Horner`: plus the constant `c`).
fn product(b: &mut Builder, jet: Jet, x: Atom, y: Atom, times: Times, c: Option<Atom>) -> Atom {
    let suffix = match times {
        Times::Mul => "mul",
        Times::Linear => "lscale",
        Times::Horner => "horner",
    };
    let name = format!("jet{}x{}_{suffix}", jet.dirs, jet.order);
    let mut params = vec![reals(), reals()];
    if times == Times::Horner {
        params.push(Type::Real);
    }
    let f = helper(b, &name, &reals(), params, reals(), |b, args| {
        let (x, y) = (args[0], args[1]);
        let (starts, left, right) = product_table(jet);
        if left.len() <= UNROLL_PAIRS {
            return unrolled(
                b,
                jet,
                [x, y],
                times,
                args.get(2).copied(),
                (&starts, &left, &right),
            );
        }
        let x = match times {
            Times::Horner => jets::with_primal(b, x, real(0.0)),
            _ => x,
        };
        let starts = ints(b, &starts);
        let left = ints(b, &left);
        let right = ints(b, &right);
        let coef = b.closure("coefficient", vec![Type::Int], |b, g| {
            let g = g[0];
            if times != Times::Mul {
                return pairs_sum(b, [starts, left, right], x, y, g);
            }
            // Coefficient 0: the primals' product.
            let first = b.cmp(Prim::Eq, g, int(0));
            b.if_(
                first,
                Type::Real,
                |b| {
                    let x0 = index(b, x, int(0), Type::Real);
                    let y0 = index(b, y, int(0), Type::Real);
                    b.mul(x0, y0)
                },
                |b| pairs_sum(b, [starts, left, right], x, y, g),
            )
        });
        let n = int(jet.coefficients() as i64);
        let p = b.prim(Prim::Build, &[n, coef], reals());
        match (times, args.get(2)) {
            (Times::Horner, Some(c)) => jets::with_primal(b, p, *c),
            _ => p,
        }
    });
    let mut call_args = vec![x, y];
    call_args.extend(c);
    call(b, f, call_args)
}

/// The product written out: every coefficient a sum of its pairs' terms.
fn unrolled(
    b: &mut Builder,
    jet: Jet,
    [x, y]: [Atom; 2],
    times: Times,
    c: Option<Atom>,
    (starts, left, right): (&[i64], &[i64], &[i64]),
) -> Atom {
    let n = jet.coefficients();
    let xs: Vec<Atom> = (0..n)
        .map(|i| index(b, x, int(i as i64), Type::Real))
        .collect();
    let ys: Vec<Atom> = (0..n)
        .map(|i| index(b, y, int(i as i64), Type::Real))
        .collect();
    let mut coefs = Vec::with_capacity(n);
    for g in 0..n {
        let (s, e) = (starts[g] as usize, starts[g + 1] as usize);
        let coef = match (g, times) {
            (0, Times::Mul) => b.mul(xs[0], ys[0]),
            (0, Times::Horner) => c.expect("Horner's constant"),
            _ => {
                let mut sum: Option<Atom> = None;
                for q in s..e {
                    let (i, j) = (left[q] as usize, right[q] as usize);
                    if times == Times::Horner && i == 0 {
                        continue;
                    }
                    let t = b.prim(Prim::LinScale, &[xs[i], ys[j]], Type::Real);
                    sum = Some(match sum {
                        None => t,
                        Some(acc) => b.add(acc, t),
                    });
                }
                sum.unwrap_or(real(0.0))
            }
        };
        coefs.push(coef);
    }
    b.emit("product", Rhs::Array(coefs), reals())
}

/// Σ over the pairs (α, β) of coefficient `g` (`table`: starts, left, right) of
/// `%lscale(x_α, y_β)`.
fn pairs_sum(b: &mut Builder, table: [Atom; 3], x: Atom, y: Atom, g: Atom) -> Atom {
    let [starts, left, right] = table;
    let s = index(b, starts, g, Type::Int);
    let g1 = b.add(g, int(1));
    let e = index(b, starts, g1, Type::Int);
    let count = b.sub(e, s);
    let term = b.closure("term", vec![Type::Int], |b, p| {
        let q = b.add(s, p[0]);
        let i = index(b, left, q, Type::Int);
        let j = index(b, right, q, Type::Int);
        let xi = index(b, x, i, Type::Real);
        let yj = index(b, y, j, Type::Real);
        b.prim(Prim::LinScale, &[xi, yj], Type::Real)
    });
    b.prim(Prim::Sumbuild, &[count, term], Type::Real)
}

/// Σ_{n ≤ R} u_n·hⁿ with h = x − x₀, for the univariate coefficients `u` (R + 1 of
/// them, u_n = f⁽ⁿ⁾(x₀)/n!): the jet of f(x). Horner's rule: y = u_R, then
/// y = u_n + h·y (h₀ = 0, so adding u_n sets coefficient 0).
fn compose(b: &mut Builder, jet: Jet, u: Atom, x: Atom) -> Atom {
    let name = format!("jet{}x{}_compose", jet.dirs, jet.order);
    let f = helper(
        b,
        &name,
        &reals(),
        vec![reals(), reals()],
        reals(),
        |b, args| {
            let (u, x) = (args[0], args[1]);
            let top = index(b, u, int(i64::from(jet.order)), Type::Real);
            let mut y = constant(b, top, jet);
            for n in (0..jet.order).rev() {
                let un = index(b, u, int(i64::from(n)), Type::Real);
                y = product(b, jet, x, y, Times::Horner, Some(un));
            }
            y
        },
    );
    call(b, f, vec![u, x])
}

/// The jet of `p(args)`, a real primitive on jets (`args`: jets, real literals, `Int`s).
pub(crate) fn real_function(b: &mut Builder, jet: Jet, rule: &RealRule, args: &[Atom]) -> Atom {
    let lit = |a: &Atom| matches!(a, Atom::Lit(Lit::Real(_)));
    let literal_exponent = rule.prim == Prim::Pow && lit(&args[1]);
    let jets_of: Vec<Atom> = args
        .iter()
        .map(|a| if lit(a) { constant(b, *a, jet) } else { *a })
        .collect();
    let a = &jets_of;
    let primal = |b: &mut Builder, x: Atom| index(b, x, int(0), Type::Real);
    match rule.prim {
        Prim::Mul => product(b, jet, a[0], a[1], Times::Mul, None),
        Prim::LinScale => product(b, jet, a[0], a[1], Times::Linear, None),
        // Layout-free rules.
        Prim::Add
        | Prim::Sub
        | Prim::Neg
        | Prim::Rem
        | Prim::Floor
        | Prim::Ceil
        | Prim::Min
        | Prim::Max
        | Prim::Abs => (rule.series)(b, a),
        // By a literal c: the primal x₀/c, the other coefficients scaled by 1/c (zero
        // stays zero at c = 0, as `jets::div` and forward mode have it).
        Prim::Div if lit(&args[1]) => {
            let (x, c) = (a[0], args[1]);
            let inv = b.div(real(1.0), c);
            let each = b.closure("divide", vec![Type::Int], |b, i| {
                let xi = index(b, x, i[0], Type::Real);
                let first = b.cmp(Prim::Eq, i[0], int(0));
                b.if_(
                    first,
                    Type::Real,
                    |b| b.div(xi, c),
                    |b| b.prim(Prim::LinScale, &[inv, xi], Type::Real),
                )
            });
            let n = int(jet.coefficients() as i64);
            b.prim(Prim::Build, &[n, each], reals())
        }
        Prim::Div => {
            let (x0, y0) = (primal(b, a[0]), primal(b, a[1]));
            let one = jets::constant(b, real(1.0), jet.order);
            let t = identity(b, y0, jet.order);
            let u = jets::div(b, one, t);
            let inv = compose(b, jet, u, a[1]);
            let q = product(b, jet, a[0], inv, Times::Mul, None);
            // The primal as the program computes it (x₀·(1/y₀) may differ in the last bit).
            let q0 = b.div(x0, y0);
            jets::with_primal(b, q, q0)
        }
        Prim::Pow => {
            let (x0, y0) = (primal(b, a[0]), primal(b, a[1]));
            let t = identity(b, x0, jet.order);
            let e = jets::constant(b, y0, jet.order);
            let u = jets::pow(b, t, e);
            let held = compose(b, jet, u, a[0]);
            if literal_exponent {
                return held;
            }
            let positive = b.cmp(Prim::Gt, x0, real(0.0));
            let (x, y) = (a[0], a[1]);
            b.if_(
                positive,
                reals(),
                |b| {
                    // x^y = x^{y₀}·exp((y − y₀)·log x)
                    let t = identity(b, x0, jet.order);
                    let lu = jets::log_of(b, t);
                    let l = compose(b, jet, lu, x);
                    let dy = jets::with_primal(b, y, real(0.0));
                    let s = product(b, jet, dy, l, Times::Linear, None);
                    let z = identity(b, real(0.0), jet.order);
                    let eu = jets::exp(b, z);
                    let factor = compose(b, jet, eu, s);
                    product(b, jet, held, factor, Times::Mul, None)
                },
                |_| held,
            )
        }
        Prim::Atan2 => {
            let (y, x) = (a[0], a[1]);
            let (y0, x0) = (primal(b, y), primal(b, x));
            let g0 = b.prim(Prim::Atan2, &[y0, x0], Type::Real);
            let ay = b.unary(Prim::Abs, y0);
            let ax = b.unary(Prim::Abs, x0);
            let steep = b.cmp(Prim::Gt, ay, ax);
            let atan_rule = crate::calculus::rule(Prim::Atan).expect("atan has a rule");
            let of_quotient = |b: &mut Builder, num: Atom, den: Atom, negate: bool| {
                let q = real_function(b, jet, rule_of(Prim::Div), &[num, den]);
                let r = real_function(b, jet, atan_rule, &[q]);
                let r = if negate { jets::neg(b, r) } else { r };
                jets::with_primal(b, r, g0)
            };
            b.if_(
                steep,
                reals(),
                |b| of_quotient(b, x, y, true),
                |b| of_quotient(b, y, x, false),
            )
        }
        // A function of one jet (and `polygamma`'s order): composed with its series.
        _ => {
            let series: Vec<Atom> = a
                .iter()
                .map(|x| match b.ty(x) {
                    Type::Int => *x,
                    _ => {
                        let x0 = primal(b, *x);
                        identity(b, x0, jet.order)
                    }
                })
                .collect();
            let u = (rule.series)(b, &series);
            let x = *a.last().expect("a real function has an argument");
            compose(b, jet, u, x)
        }
    }
}

fn rule_of(p: Prim) -> &'static RealRule {
    crate::calculus::rule(p).expect("a real primitive")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_product_table_pairs_every_split_of_a_multi_index() {
        let jet = Jet { dirs: 2, order: 2 };
        let (starts, left, right) = product_table(jet);
        // (0,0) | (1,0) (0,1) | (2,0) (1,1) (0,2): 1, 2, 2, 3, 4, 3 splits.
        assert_eq!(starts, vec![0, 1, 3, 5, 8, 12, 15]);
        // (1,1) = (0,0)+(1,1) = (1,0)+(0,1) = (0,1)+(1,0) = (1,1)+(0,0).
        assert_eq!(&left[8..12], &[0, 1, 2, 4]);
        assert_eq!(&right[8..12], &[4, 2, 1, 0]);
    }
}
