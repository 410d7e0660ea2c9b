//! The one table of primitive calculus, shared by every mode: for each real primitive,
//! its partial derivatives and its series rule.
//!
//! - **Partials** `∂p/∂xᵢ` are emitted from the primal arguments and the primal result
//!   only, so no rule can branch on a tangent or a cotangent. Forward mode builds the
//!   JVP `Σᵢ ∂ᵢ·dxᵢ` from them ([`tangent`]); the reverse modes build the transposed
//!   contributions `∂ᵢ·ct` ([`transpose`]) — the same numbers, so the modes agree by
//!   construction ([Delta] §4 and §7 use exactly this split: a primitive's derivative
//!   is the linear map of its partials).
//! - **Series** points to the primitive's rule of truncated power-series arithmetic in
//!   `jets.rs` (Taylor mode, [Taylor]).
//!
//! Non-differentiable points follow docs/language.md §5: `abs'(0) = 0`; `min`/`max` follow
//! their first argument on ties; `∂pow(x, y)/∂y = pow(x, y)·log(x)` is taken as 0
//! where `x = 0` — and where `x < 0`, where `x^y` is real only at integer `y` and not
//! differentiable in `y` (docs/decisions.md, "AD at non-smooth points"); `floor`, `ceil`
//! have zero derivative.

use fluxion_core::{Atom, Lit, Prim, Type};

use crate::builder::{Builder, int, real};
use crate::jets;

/// One partial derivative `∂p/∂xᵢ`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Partial {
    /// Identically zero (an `Int` argument, or a locally constant function): no term.
    Zero,
    /// The partial's value, computed from primals.
    At(Atom),
}

/// A partial-derivative rule: the primal arguments and the primal result in, one
/// [`Partial`] per argument out.
pub(crate) type PartialsRule = fn(&mut Builder, &[Atom], Atom) -> Vec<Partial>;

/// A series rule: argument jets (or `Int`s, passed through) in, the result's jet out.
pub(crate) type SeriesRule = fn(&mut Builder, &[Atom]) -> Atom;

/// The calculus of one real primitive.
pub(crate) struct RealRule {
    pub(crate) prim: Prim,
    pub(crate) partials: PartialsRule,
    pub(crate) series: SeriesRule,
}

/// `1 / x`.
fn recip(b: &mut Builder, x: Atom) -> Atom {
    b.div(real(1.0), x)
}

fn at(a: Atom) -> Vec<Partial> {
    vec![Partial::At(a)]
}

/// `sign(x)`, with `sign(0) = 0` (so `abs'(0) = 0`).
fn sign(b: &mut Builder, x: Atom) -> Atom {
    use Prim::*;
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

/// `(1, 0)` when the first argument is chosen (`x <= y` for min, `x >= y` for max;
/// ties choose the first), `(0, 1)` otherwise.
fn choice(b: &mut Builder, p: Prim, xs: &[Atom]) -> Vec<Partial> {
    let first = b.cmp(
        if p == Prim::Min { Prim::Le } else { Prim::Ge },
        xs[0],
        xs[1],
    );
    let d0 = b.if_(first, Type::Real, |_| real(1.0), |_| real(0.0));
    let d1 = b.sub(real(1.0), d0);
    vec![Partial::At(d0), Partial::At(d1)]
}

/// `x % y = x − q·y` with the integer quotient q locally constant: `(1, −q)`. q is
/// recovered exactly from the primal remainder r: `q = round((x − r) / y)`.
fn rem_partials(b: &mut Builder, xs: &[Atom], r: Atom) -> Vec<Partial> {
    let diff = b.sub(xs[0], r);
    let q = b.div(diff, xs[1]);
    let half_up = b.add(q, real(0.5));
    let q = b.unary(Prim::Floor, half_up);
    let minus_q = b.neg(q);
    vec![Partial::At(real(1.0)), Partial::At(minus_q)]
}

/// `∂/∂x = y·x^(y−1)`, taken as 0 where `x = y = 0` (x⁰ is constant; this avoids
/// 0·inf there). Elsewhere it is the product even at `y = 0`, whose value is 0 but whose
/// derivative in `y`, `x^(−1)`, is not: a constant 0 there made the mixed second
/// derivative of `x^y` at `y = 0` zero in one nesting order and `1/x` in the other
/// (found by a helper trying nested gradients as a new user). `+ 0.0` keeps the zero
/// positive (`0·x⁻¹` is −0 for negative x). `∂/∂y = x^y·log x`, taken as 0 where
/// `x <= 0`.
fn pow_partials(b: &mut Builder, xs: &[Atom], r: Atom) -> Vec<Partial> {
    use Prim::*;
    let (x, y) = (xs[0], xs[1]);
    let y_is_zero = b.cmp(Eq, y, real(0.0));
    let product = |b: &mut Builder| {
        let ym1 = b.sub(y, real(1.0));
        let pw = b.prim(Pow, &[x, ym1], Type::Real);
        let d = b.mul(y, pw);
        b.add(d, real(0.0))
    };
    let dx = b.if_(
        y_is_zero,
        Type::Real,
        |b| {
            let x_is_zero = b.cmp(Eq, x, real(0.0));
            b.if_(x_is_zero, Type::Real, |_| real(0.0), product)
        },
        |b| {
            let ym1 = b.sub(y, real(1.0));
            let pw = b.prim(Pow, &[x, ym1], Type::Real);
            b.mul(y, pw)
        },
    );
    let positive = b.cmp(Gt, x, real(0.0));
    let dy = b.if_(
        positive,
        Type::Real,
        |b| {
            let l = b.unary(Log, x);
            b.mul(r, l)
        },
        |_| real(0.0),
    );
    vec![Partial::At(dx), Partial::At(dy)]
}

/// `atan2(u, v)`: `(v, −u) / (u² + v²)`.
fn atan2_partials(b: &mut Builder, xs: &[Atom], _: Atom) -> Vec<Partial> {
    let (u, v) = (xs[0], xs[1]);
    let u2 = b.mul(u, u);
    let v2 = b.mul(v, v);
    let den = b.add(u2, v2);
    let du = b.div(v, den);
    let nu = b.neg(u);
    let dv = b.div(nu, den);
    vec![Partial::At(du), Partial::At(dv)]
}

/// `±1 / sqrt(1 − x²)`.
fn asin_slope(b: &mut Builder, x: Atom, negative: bool) -> Atom {
    let x2 = b.mul(x, x);
    let one_minus = b.sub(real(1.0), x2);
    let r = b.unary(Prim::Sqrt, one_minus);
    let inv = recip(b, r);
    if negative { b.neg(inv) } else { inv }
}

macro_rules! rule {
    ($p:ident, $partials:expr, $series:expr) => {
        RealRule {
            prim: Prim::$p,
            partials: $partials,
            series: $series,
        }
    };
}

/// The table. Order is irrelevant; [`rule`] finds an entry by primitive.
static RULES: &[RealRule] = &[
    rule!(
        Add,
        |_, _, _| vec![Partial::At(real(1.0)), Partial::At(real(1.0))],
        |b, a| jets::add(b, a[0], a[1])
    ),
    rule!(
        Sub,
        |_, _, _| vec![Partial::At(real(1.0)), Partial::At(real(-1.0))],
        |b, a| jets::sub(b, a[0], a[1])
    ),
    rule!(
        Mul,
        |_, xs, _| vec![Partial::At(xs[1]), Partial::At(xs[0])],
        |b, a| jets::mul(b, a[0], a[1])
    ),
    // `%lscale(c, w)`: `c·w`, zero where either factor is zero (docs/language.md is silent;
    // docs/decisions.md, "AD at non-smooth points"). Differentiated as the product it is,
    // so the forward layers can translate derivative code that scales (dual numbers'
    // tangents, `tdot`).
    rule!(
        LinScale,
        |_, xs, _| vec![Partial::At(xs[1]), Partial::At(xs[0])],
        |b, a| jets::lscale(b, a[0], a[1])
    ),
    rule!(
        Div,
        |b, xs, r| {
            // (1/y, −(x/y)/y)
            let inv = recip(b, xs[1]);
            let q = b.mul(r, inv);
            let dy = b.neg(q);
            vec![Partial::At(inv), Partial::At(dy)]
        },
        |b, a| jets::div(b, a[0], a[1])
    ),
    rule!(Rem, rem_partials, jets::rem),
    rule!(Neg, |_, _, _| at(real(-1.0)), |b, a| jets::neg(b, a[0])),
    rule!(Sin, |b, xs, _| at(b.unary(Prim::Cos, xs[0])), |b, a| {
        jets::sin_cos_part(b, a[0], false, 0)
    }),
    rule!(
        Cos,
        |b, xs, _| {
            let s = b.unary(Prim::Sin, xs[0]);
            at(b.neg(s))
        },
        |b, a| jets::sin_cos_part(b, a[0], false, 1)
    ),
    rule!(
        Tan,
        |b, _, r| {
            // 1 + tan²
            let r2 = b.mul(r, r);
            at(b.add(real(1.0), r2))
        },
        |b, a| jets::tan(b, a[0])
    ),
    rule!(Asin, |b, xs, _| at(asin_slope(b, xs[0], false)), |b, a| {
        jets::by_slope(b, Prim::Asin, a[0])
    }),
    rule!(Acos, |b, xs, _| at(asin_slope(b, xs[0], true)), |b, a| {
        jets::by_slope(b, Prim::Acos, a[0])
    }),
    rule!(
        Atan,
        |b, xs, _| {
            let x2 = b.mul(xs[0], xs[0]);
            let den = b.add(real(1.0), x2);
            at(recip(b, den))
        },
        |b, a| jets::by_slope(b, Prim::Atan, a[0])
    ),
    rule!(
        Erf,
        |b, xs, _| {
            // 2/sqrt(pi) · exp(−x²)
            let x2 = b.mul(xs[0], xs[0]);
            let nx2 = b.neg(x2);
            let e = b.unary(Prim::Exp, nx2);
            at(b.mul(real(std::f64::consts::FRAC_2_SQRT_PI), e))
        },
        |b, a| jets::by_slope(b, Prim::Erf, a[0])
    ),
    rule!(
        Tanh,
        |b, _, r| {
            let r2 = b.mul(r, r);
            at(b.sub(real(1.0), r2))
        },
        |b, a| jets::logistic_like(b, a[0], false)
    ),
    rule!(
        Sigmoid,
        |b, _, r| {
            let one_minus = b.sub(real(1.0), r);
            at(b.mul(r, one_minus))
        },
        |b, a| jets::logistic_like(b, a[0], true)
    ),
    rule!(Sinh, |b, xs, _| at(b.unary(Prim::Cosh, xs[0])), |b, a| {
        jets::sin_cos_part(b, a[0], true, 0)
    }),
    rule!(Cosh, |b, xs, _| at(b.unary(Prim::Sinh, xs[0])), |b, a| {
        jets::sin_cos_part(b, a[0], true, 1)
    }),
    rule!(Exp, |_, _, r| at(r), |b, a| jets::exp(b, a[0])),
    rule!(
        Expm1,
        |b, _, r| at(b.add(r, real(1.0))),
        |b, a| jets::expm1(b, a[0])
    ),
    rule!(Log, |b, xs, _| at(recip(b, xs[0])), |b, a| jets::log_of(
        b, a[0]
    )),
    rule!(
        Log1p,
        |b, xs, _| {
            let den = b.add(real(1.0), xs[0]);
            at(recip(b, den))
        },
        |b, a| jets::log1p(b, a[0])
    ),
    rule!(
        Sqrt,
        |b, _, r| {
            let twice = b.mul(real(2.0), r);
            at(recip(b, twice))
        },
        |b, a| jets::sqrt(b, a[0])
    ),
    rule!(Abs, |b, xs, _| at(sign(b, xs[0])), |b, a| jets::abs(
        b, a[0]
    )),
    rule!(
        Lgamma,
        |b, xs, _| at(b.unary(Prim::Digamma, xs[0])),
        |b, a| jets::polygamma(b, int(-1), a[0])
    ),
    rule!(
        Digamma,
        |b, xs, _| at(b.unary(Prim::Trigamma, xs[0])),
        |b, a| jets::polygamma(b, int(0), a[0])
    ),
    rule!(
        Trigamma,
        |b, xs, _| at(b.prim(Prim::Polygamma, &[int(2), xs[0]], Type::Real)),
        |b, a| jets::polygamma(b, int(1), a[0])
    ),
    rule!(
        Polygamma,
        |b, xs, _| {
            // ∂/∂x ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁺¹⁾(x); the order n is an Int.
            let n1 = b.add(xs[0], int(1));
            let d = b.prim(Prim::Polygamma, &[n1, xs[1]], Type::Real);
            vec![Partial::Zero, Partial::At(d)]
        },
        |b, a| jets::polygamma(b, a[0], a[1])
    ),
    rule!(Floor, |_, _, _| vec![Partial::Zero], |b, a| {
        jets::locally_constant(b, Prim::Floor, a[0])
    }),
    rule!(Ceil, |_, _, _| vec![Partial::Zero], |b, a| {
        jets::locally_constant(b, Prim::Ceil, a[0])
    }),
    rule!(Pow, pow_partials, |b, a| jets::pow(b, a[0], a[1])),
    rule!(Atan2, atan2_partials, |b, a| jets::atan2(b, a[0], a[1])),
    rule!(Min, |b, xs, _| choice(b, Prim::Min, xs), |b, a| {
        jets::choose(b, Prim::Min, a[0], a[1])
    }),
    rule!(Max, |b, xs, _| choice(b, Prim::Max, xs), |b, a| {
        jets::choose(b, Prim::Max, a[0], a[1])
    }),
];

/// The calculus of `p`, if it is a real primitive (a function of reals to a real
/// when applied to reals).
pub(crate) fn rule(p: Prim) -> Option<&'static RealRule> {
    RULES.iter().find(|r| r.prim == p)
}

/// Whether `p` is a real primitive with an entry in the table.
pub(crate) fn is_real_function(p: Prim) -> bool {
    rule(p).is_some()
}

/// `%lscale(s, t)`, without it where `s` is the literal ±1.
fn scaled(b: &mut Builder, s: Atom, t: Atom) -> Atom {
    match s {
        Atom::Lit(Lit::Real(1.0)) => t,
        Atom::Lit(Lit::Real(-1.0)) => b.neg(t),
        _ => b.prim(Prim::LinScale, &[s, t], Type::Real),
    }
}

/// Forward mode: the tangent `Σᵢ ∂ᵢ·dxᵢ` of `y = p(xs)`. A term is left out where it
/// is zero by construction (a zero partial, or a tangent that is the literal 0); each
/// product is `%lscale(∂ᵢ, dxᵢ)`, so a zero tangent stays zero even where the partial
/// is infinite or NaN — the rule every mode follows (the reverse modes skip zero
/// cotangents; forward CHAD scales by `%lscale` too), so the modes agree outside a
/// function's domain as well. Not an `if` on the tangent: `%lscale` has its own rule
/// in this table, so nesting differentiates it as the bilinear map it is.
pub(crate) fn tangent(
    b: &mut Builder,
    rule: &RealRule,
    xs: &[Atom],
    y: Atom,
    dxs: &[Atom],
) -> Atom {
    if matches!(rule.prim, Prim::Min | Prim::Max) {
        // The followed argument's tangent itself, selected, not multiplied by 1 and 0:
        // the other argument's tangent may be infinite (`max(sqrt(x), 1.0)` at 0),
        // and 0·inf would make the derivative NaN (docs/language.md §5: `max` follows one
        // argument).
        let first = b.cmp(
            if rule.prim == Prim::Min {
                Prim::Le
            } else {
                Prim::Ge
            },
            xs[0],
            xs[1],
        );
        return b.if_(first, Type::Real, |_| dxs[0], |_| dxs[1]);
    }
    let partials = (rule.partials)(b, xs, y);
    let mut acc: Option<Atom> = None;
    for (d, dx) in partials.into_iter().zip(dxs) {
        let Partial::At(d) = d else { continue };
        if *dx == real(0.0) {
            continue;
        }
        acc = Some(match (acc, d) {
            (Some(a), Atom::Lit(Lit::Real(-1.0))) => b.sub(a, *dx),
            (Some(a), d) => {
                let term = scaled(b, d, *dx);
                b.add(a, term)
            }
            (None, d) => scaled(b, d, *dx),
        });
    }
    acc.unwrap_or(real(0.0))
}

/// Reverse CHAD (delta mode records the partials themselves on its tape): the
/// cotangent contribution `∂ᵢ·ct` of each argument of `y = p(xs)` given the result's
/// cotangent `ct` (`None` where the partial is zero), as the linear `%lscale(∂ᵢ, ct)`:
/// zero where `ct` is zero, so a partial that overflows in dead code makes no NaN.
pub(crate) fn transpose(
    b: &mut Builder,
    rule: &RealRule,
    xs: &[Atom],
    y: Atom,
    ct: Atom,
) -> Vec<Option<Atom>> {
    transpose_by(b, rule, xs, y, |b, d| {
        b.prim(Prim::LinScale, &[d, ct], Type::Real)
    })
}

/// Each argument's contribution `scaled(∂ᵢ)` where its partial is not structurally
/// zero (`None` where it is).
fn transpose_by(
    b: &mut Builder,
    rule: &RealRule,
    xs: &[Atom],
    y: Atom,
    mut scaled: impl FnMut(&mut Builder, Atom) -> Atom,
) -> Vec<Option<Atom>> {
    (rule.partials)(b, xs, y)
        .into_iter()
        .map(|d| match d {
            Partial::Zero => None,
            Partial::At(d) => Some(scaled(b, d)),
        })
        .collect()
}

/// [`transpose`] over the Boolean semiring (CHAD's dependency instance,
/// `chad_sweep::Ground::Dependencies`): `ct` itself for each argument whose partial is
/// not structurally zero, whatever its value (the pattern is structural: `0.0 * x`
/// depends on x), and for `min`/`max` the followed argument's indicator times `ct` —
/// the same structure the forward dependency layer (`deps.rs`) unites sets by.
pub(crate) fn transpose_dependencies(
    b: &mut Builder,
    rule: &RealRule,
    xs: &[Atom],
    y: Atom,
    ct: Atom,
) -> Vec<Option<Atom>> {
    let follows = follows_one_argument(rule.prim);
    transpose_by(b, rule, xs, y, |b, d| {
        if follows {
            b.prim(Prim::LinScale, &[d, ct], Type::Real)
        } else {
            ct
        }
    })
}

/// Whether the primitive's result is one of its arguments, chosen by comparing them
/// (`min`, `max`: ties follow the first): it depends on the one it follows only.
pub(crate) fn follows_one_argument(p: Prim) -> bool {
    matches!(p, Prim::Min | Prim::Max)
}

/// Forward CHAD: the tangent `Σᵢ %lscale(∂ᵢ, dxᵢ)` of `y = p(xs)` given the arguments'
/// tangents (`None` where one is zero statically); `None` when every term is zero.
/// Linear building blocks, not `*` and `+`, so that a tangent that is the run-time
/// symbolic zero passes through, and a partial that overflows where the tangent is
/// zero makes no NaN (as [`transpose`]).
pub(crate) fn push(
    b: &mut Builder,
    rule: &RealRule,
    xs: &[Atom],
    y: Atom,
    dxs: &[Option<Atom>],
) -> Option<Atom> {
    let mut acc: Option<Atom> = None;
    for (d, dx) in (rule.partials)(b, xs, y).into_iter().zip(dxs) {
        let (Partial::At(d), Some(dx)) = (d, dx) else {
            continue;
        };
        let term = match d {
            Atom::Lit(Lit::Real(1.0)) => *dx,
            d => b.prim(Prim::LinScale, &[d, *dx], Type::Real),
        };
        acc = Some(match acc {
            None => term,
            Some(a) => b.prim(Prim::TanPlus, &[a, term], Type::Real),
        });
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluxion_core::prim::{Scheme, SchemeTy};
    use fluxion_core::{CodeKind, Module, Span, verify::verify_module};

    /// Whether a primitive's scheme makes it a function of reals to a real (with `Num`
    /// instantiated at `Real`); `Int` parameters allowed beside at least one `Real`.
    fn is_real_scheme(s: &Scheme) -> bool {
        let real_like = |t: &SchemeTy| match t {
            SchemeTy::Real => true,
            SchemeTy::Var(i) => s.vars[*i] == fluxion_core::prim::Constraint::Num,
            _ => false,
        };
        real_like(&s.ret)
            && s.params.iter().any(real_like)
            && s.params.iter().all(|t| real_like(t) || *t == SchemeTy::Int)
    }

    /// Every primitive whose type makes it a real function has partials and a series
    /// rule, and both emit code that passes the verifier.
    #[test]
    fn every_real_primitive_has_partials_and_a_series_rule() {
        let mut missing = Vec::new();
        for &p in Prim::ALL {
            let Some(scheme) = p.scheme() else { continue };
            if !is_real_scheme(&scheme) || p == Prim::ToReal {
                continue;
            }
            // Comparisons return Bool and are excluded by the scheme; ToReal is Int → Real
            // (no real argument: excluded above by `any(real_like)`, listed for clarity).
            match rule(p) {
                None => missing.push(p.name()),
                Some(r) => check_rule_emits_verified_code(r, &scheme),
            }
        }
        assert!(missing.is_empty(), "no calculus for: {missing:?}");
    }

    /// Builds `fn(xs, dxs, ct) -> (dy, cts..., series)` from the rule and verifies it.
    fn check_rule_emits_verified_code(r: &RealRule, scheme: &Scheme) {
        let mut m = Module::default();
        let arg_tys: Vec<Type> = scheme
            .params
            .iter()
            .map(|t| {
                if *t == SchemeTy::Int {
                    Type::Int
                } else {
                    Type::Real
                }
            })
            .collect();
        let mut b = Builder::new(&mut m, Span::default());
        let id = b.reserve_code(&format!("check_{}", r.prim.name()), CodeKind::TopLevel);
        let xs: Vec<_> = arg_tys.iter().map(|t| b.fresh("x", t.clone())).collect();
        let dxs: Vec<_> = arg_tys.iter().map(|t| b.fresh("dx", t.clone())).collect();
        let jets_in: Vec<_> = arg_tys
            .iter()
            .map(|t| {
                let ty = if *t == Type::Int {
                    Type::Int
                } else {
                    Type::array(Type::Real)
                };
                b.fresh("jet", ty)
            })
            .collect();
        let ct = b.fresh("ct", Type::Real);
        let atoms = |vs: &[fluxion_core::VarId]| -> Vec<Atom> {
            vs.iter().map(|v| Atom::Var(*v)).collect()
        };
        let (xa, dxa, ja) = (atoms(&xs), atoms(&dxs), atoms(&jets_in));
        let body = b.block(|b| {
            let y = b.prim(r.prim, &xa, Type::Real);
            let mut parts = vec![tangent(b, r, &xa, y, &dxa)];
            for c in transpose(b, r, &xa, y, Atom::Var(ct)).into_iter().flatten() {
                parts.push(c);
            }
            parts.push((r.series)(b, &ja));
            b.tuple("out", parts)
        });
        let ret = b.ty(&body.result);
        let mut params = xs.clone();
        params.extend(&dxs);
        params.extend(&jets_in);
        params.push(ct);
        b.finish_code(id, vec![], params, ret, body);
        if let Err(e) = verify_module(&m) {
            panic!("{}: emitted code fails verification: {e:?}", r.prim.name());
        }
    }

    #[test]
    fn partials_read_no_tangent() {
        // A rule only receives primal atoms: the signature is the guarantee. Here the
        // JVP of `mul` at a literal-zero tangent leaves the term out statically.
        let mut m = Module::default();
        let mut b = Builder::new(&mut m, Span::default());
        let x = Atom::Var(b.fresh("x", Type::Real));
        let dx = Atom::Var(b.fresh("dx", Type::Real));
        let body = b.block(|b| {
            let y = b.mul(x, x);
            tangent(
                b,
                rule(Prim::Mul).unwrap(),
                &[x, real(2.0)],
                y,
                &[dx, real(0.0)],
            )
        });
        // One multiplication for the primal, one for 2·dx: the zero term is not there.
        assert_eq!(body.bindings.len(), 2, "{body:?}");
    }
}
