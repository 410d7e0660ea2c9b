//! Truncated power-series arithmetic for Taylor mode ([Taylor]; docs/language.md §5).
//!
//! A jet is `[Real]`: the Taylor coefficients c₀..c_k of a real function of t (each
//! already divided by j!). The rules are the classic recurrences of Taylor arithmetic
//! (products by Cauchy convolution; exp, log, sin/cos, sqrt, tanh, sigmoid, division,
//! powers by the linear ODEs they satisfy; atan, asin, acos, erf, atan2 by integrating
//! the series of their derivative; the lgamma family by composing with the Taylor
//! polynomial of ψ⁽ⁿ⁾ at the primal). Any formula algebraically equivalent
//! to [Taylor] §3.2's op rule will do; each recurrence below is the
//! coefficient identity of its ODE, cost O(k²) per operation (the composition O(k³)).
//!
//! Every rule is a generated Core function over arrays, generic in the length, so the
//! other translations (forward mode, Taylor of Taylor) apply to it like to user code.
//!
//! A zero coefficient scaled by a non-finite factor stays zero, as a zero tangent does
//! in every mode (`%lscale`, calculus.rs): every product of a coefficient past the
//! primal with a factor that can be infinite (the primal of a series, `1/y₀`) is a
//! `%lscale`, so a series whose perturbation is zero (a constant: `sqrt(0.0)`, a
//! captured `log(z)` at z = 0) stays constant, and order 1 agrees with `jvp`. (A
//! branch on whether a series is constant would read coefficients past the primal,
//! which a layer over this one perturbs.)

use fluxion_core::{Atom, CodeId, Prim, Rhs, Type};

use crate::builder::{Builder, int, real};
use crate::helpers::{call, helper, var_of};

fn reals() -> Type {
    Type::array(Type::Real)
}

/// `[r, 0.0, ..., 0.0]` with k zeros (a constant's jet of order k).
pub(crate) fn constant(b: &mut Builder, r: Atom, k: u32) -> Atom {
    let mut coefs = vec![r];
    coefs.extend((0..k).map(|_| real(0.0)));
    b.emit("c", Rhs::Array(coefs), reals())
}

fn index(b: &mut Builder, a: Atom, i: Atom) -> Atom {
    b.prim(Prim::Index, &[a, i], Type::Real)
}

fn length(b: &mut Builder, a: Atom) -> Atom {
    b.prim(Prim::Length, &[a], Type::Int)
}

fn to_real(b: &mut Builder, i: Atom) -> Atom {
    b.prim(Prim::ToReal, &[i], Type::Real)
}

/// `%lscale(c, w)`: `c·w`, zero where `w` or `c` is (for `w` linear in coefficients
/// past the primal).
fn lscale_real(b: &mut Builder, c: Atom, w: Atom) -> Atom {
    b.prim(Prim::LinScale, &[c, w], Type::Real)
}

/// `w / d` as `%lscale(1/d, w)`, for `w` linear in coefficients past the primal.
fn over(b: &mut Builder, w: Atom, d: Atom) -> Atom {
    let inv = b.div(real(1.0), d);
    lscale_real(b, inv, w)
}

fn singleton(b: &mut Builder, x: Atom) -> Atom {
    b.emit("coef", Rhs::Array(vec![x]), reals())
}

fn append(b: &mut Builder, acc: Atom, x: Atom) -> Atom {
    let one = singleton(b, x);
    b.prim(Prim::Concat, &[acc, one], reals())
}

/// A helper over jets: `name(params) -> ret`, generated once.
fn jet_helper(
    b: &mut Builder,
    name: &str,
    params: Vec<Type>,
    ret: Type,
    body: impl FnOnce(&mut Builder, &[Atom]) -> Atom,
) -> CodeId {
    helper(b, name, &reals(), params, ret, body)
}

/// `Σ_{i<n} f(i)` as `sumbuild(n, |i| f(i))`, capturing `captures`.
fn sum_over(
    b: &mut Builder,
    n: Atom,
    captures: &[Atom],
    f: impl FnOnce(&mut Builder, Atom, &[Atom]) -> Atom,
) -> Atom {
    let vars: Vec<_> = captures.iter().map(|a| var_of(b, *a)).collect();
    let inner: Vec<Atom> = vars.iter().map(|v| Atom::Var(*v)).collect();
    let lam = b.lambda("term", &vars, vec![Type::Int], |b, ps| f(b, ps[0], &inner));
    b.prim(Prim::Sumbuild, &[n, lam], Type::Real)
}

/// `iterate(length(a) - 1, step, init)`: grows a series one coefficient at a time;
/// `step(acc)` gets the state and the captured atoms.
fn grow(
    b: &mut Builder,
    a: Atom,
    init: Atom,
    captures: &[Atom],
    step: impl FnOnce(&mut Builder, Atom, &[Atom]) -> Atom,
) -> Atom {
    let n = length(b, a);
    let count = b.sub(n, int(1));
    let state_ty = b.ty(&init);
    let vars: Vec<_> = captures.iter().map(|x| var_of(b, *x)).collect();
    let inner: Vec<Atom> = vars.iter().map(|v| Atom::Var(*v)).collect();
    let lam = b.lambda("grow", &vars, vec![state_ty.clone()], |b, ps| {
        step(b, ps[0], &inner)
    });
    b.prim(Prim::Iterate, &[count, lam, init], state_ty)
}

/// `(1/n) Σ_{j=1..n} j·a_j·w_{n-j}` where n = length(acc): the next coefficient of y
/// with y' = w·a' (the coefficient identity of that ODE).
fn ode_term(b: &mut Builder, n: Atom, a: Atom, w: Atom) -> Atom {
    let s = sum_over(b, n, &[a, w, n], |b, i, c| {
        let (a, w, n) = (c[0], c[1], c[2]);
        let j = b.add(i, int(1));
        let jr = to_real(b, j);
        let aj = index(b, a, j);
        let n1 = b.sub(n, int(1));
        let k = b.sub(n1, i);
        let wk = index(b, w, k);
        let t = b.mul(jr, aj);
        lscale_real(b, wk, t)
    });
    let nr = to_real(b, n);
    b.div(s, nr)
}

fn elementwise(b: &mut Builder, name: &str, p: Prim) -> CodeId {
    jet_helper(b, name, vec![reals(), reals()], reals(), move |b, args| {
        let f = b.lambda(name, &[], vec![Type::Real, Type::Real], |b, ps| {
            b.arith(p, &[ps[0], ps[1]])
        });
        b.prim(Prim::Map2, &[f, args[0], args[1]], reals())
    })
}

pub(crate) fn add(b: &mut Builder, x: Atom, y: Atom) -> Atom {
    let f = elementwise(b, "jet_add", Prim::Add);
    call(b, f, vec![x, y])
}

pub(crate) fn sub(b: &mut Builder, x: Atom, y: Atom) -> Atom {
    let f = elementwise(b, "jet_sub", Prim::Sub);
    call(b, f, vec![x, y])
}

fn scale(b: &mut Builder, s: Atom, x: Atom) -> Atom {
    scale_by(b, Prim::Mul, "jet_scale", s, x)
}

/// Every coefficient of `x` times the real `s` by `times` (`*`, or `%lscale` where `s`
/// can be infinite).
fn scale_by(b: &mut Builder, times: Prim, name: &str, s: Atom, x: Atom) -> Atom {
    let f = jet_helper(b, name, vec![Type::Real, reals()], reals(), |b, args| {
        let sv = var_of(b, args[0]);
        let lam = b.lambda("scale", &[sv], vec![Type::Real], |b, ps| {
            b.prim(times, &[Atom::Var(sv), ps[0]], Type::Real)
        });
        b.prim(Prim::Map, &[lam, args[1]], reals())
    });
    call(b, f, vec![s, x])
}

pub(crate) fn neg(b: &mut Builder, x: Atom) -> Atom {
    scale(b, real(-1.0), x)
}

/// Replaces coefficient 0 (the primal) of `x` by `c`.
pub(crate) fn with_primal(b: &mut Builder, x: Atom, c: Atom) -> Atom {
    let f = jet_helper(
        b,
        "jet_with_primal",
        vec![reals(), Type::Real],
        reals(),
        |b, args| {
            let n = length(b, args[0]);
            let rest_n = b.sub(n, int(1));
            let rest = b.prim(Prim::Slice, &[args[0], int(1), rest_n], reals());
            let head = singleton(b, args[1]);
            b.prim(Prim::Concat, &[head, rest], reals())
        },
    );
    call(b, f, vec![x, c])
}

/// The jet of the constant `c` with the length of `like`.
fn constant_like(b: &mut Builder, c: Atom, like: Atom) -> Atom {
    let f = jet_helper(
        b,
        "jet_constant",
        vec![Type::Real, reals()],
        reals(),
        |b, args| {
            let n = length(b, args[1]);
            let cv = var_of(b, args[0]);
            let lam = b.lambda("coef", &[cv], vec![Type::Int], |b, ps| {
                let first = b.cmp(Prim::Eq, ps[0], int(0));
                b.if_(first, Type::Real, |_| Atom::Var(cv), |_| real(0.0))
            });
            b.prim(Prim::Build, &[n, lam], reals())
        },
    );
    call(b, f, vec![c, like])
}

/// Cauchy product, truncated to the length of `x`: the primals' product as `*`, every
/// other term a `%lscale`.
pub(crate) fn mul(b: &mut Builder, x: Atom, y: Atom) -> Atom {
    let f = jet_helper(b, "jet_mul", vec![reals(), reals()], reals(), |b, args| {
        let (x, y) = (args[0], args[1]);
        let x0 = index(b, x, int(0));
        let y0 = index(b, y, int(0));
        let c0 = b.mul(x0, y0);
        let p = lscale(b, x, y);
        with_primal(b, p, c0)
    });
    call(b, f, vec![x, y])
}

/// `%lscale(x, y)` on series: the Cauchy product with every term a `%lscale`, so a
/// zero coefficient scaled by a non-finite one stays zero, as `%lscale` on reals.
pub(crate) fn lscale(b: &mut Builder, x: Atom, y: Atom) -> Atom {
    let f = jet_helper(
        b,
        "jet_lscale",
        vec![reals(), reals()],
        reals(),
        |b, args| {
            let (x, y) = (var_of(b, args[0]), var_of(b, args[1]));
            let n = length(b, Atom::Var(x));
            let lam = b.lambda("coef", &[x, y], vec![Type::Int], |b, ps| {
                let m = ps[0];
                let count = b.add(m, int(1));
                sum_over(b, count, &[Atom::Var(x), Atom::Var(y), m], |b, j, c| {
                    let xj = index(b, c[0], j);
                    let k = b.sub(c[2], j);
                    let yk = index(b, c[1], k);
                    b.prim(Prim::LinScale, &[xj, yk], Type::Real)
                })
            });
            b.prim(Prim::Build, &[n, lam], reals())
        },
    );
    call(b, f, vec![x, y])
}

/// x / y: c_n = (x_n − Σ_{j=1..n} y_j c_{n−j}) / y_0, to the length of `x`.
pub(crate) fn div(b: &mut Builder, x: Atom, y: Atom) -> Atom {
    divide(b, "jet_div", x, y, false)
}

/// [`div`] of a series `x` linear in coefficients past the primal (a derivative's
/// numerator): its coefficient 0 too is a `%lscale`.
fn div_linear(b: &mut Builder, x: Atom, y: Atom) -> Atom {
    divide(b, "jet_div_linear", x, y, true)
}

fn divide(b: &mut Builder, name: &str, x: Atom, y: Atom, linear: bool) -> Atom {
    let f = jet_helper(b, name, vec![reals(), reals()], reals(), |b, args| {
        let (x, y) = (args[0], args[1]);
        let x0 = index(b, x, int(0));
        let y0 = index(b, y, int(0));
        let c0 = if linear {
            over(b, x0, y0)
        } else {
            b.div(x0, y0)
        };
        let init = singleton(b, c0);
        grow(b, x, init, &[x, y, y0], |b, acc, c| {
            let (x, y, y0) = (c[0], c[1], c[2]);
            let n = length(b, acc);
            let s = sum_over(b, n, &[y, acc, n], |b, i, c| {
                let j = b.add(i, int(1));
                let yj = index(b, c[0], j);
                let n1 = b.sub(c[2], int(1));
                let k = b.sub(n1, i);
                let ck = index(b, c[1], k);
                lscale_real(b, ck, yj)
            });
            let xn = index(b, x, n);
            let num = b.sub(xn, s);
            let cn = over(b, num, y0);
            append(b, acc, cn)
        })
    });
    call(b, f, vec![x, y])
}

/// exp: y' = y·a'.
pub(crate) fn exp(b: &mut Builder, a: Atom) -> Atom {
    let f = jet_helper(b, "jet_exp", vec![reals()], reals(), |b, args| {
        let a = args[0];
        let a0 = index(b, a, int(0));
        let y0 = b.unary(Prim::Exp, a0);
        let init = singleton(b, y0);
        grow(b, a, init, &[a], |b, acc, c| {
            let n = length(b, acc);
            let t = ode_term(b, n, c[0], acc);
            append(b, acc, t)
        })
    });
    call(b, f, vec![a])
}

/// log with primal `y0`: a·y' = a' gives y_n = (a_n − (1/n) Σ_{j=1..n−1} j·y_j·a_{n−j}) / a_0.
fn log_from(b: &mut Builder, a: Atom, y0: Atom) -> Atom {
    let f = jet_helper(
        b,
        "jet_log",
        vec![reals(), Type::Real],
        reals(),
        |b, args| {
            let a = args[0];
            let init = singleton(b, args[1]);
            grow(b, a, init, &[a], |b, acc, c| {
                let a = c[0];
                let n = length(b, acc);
                let count = b.sub(n, int(1));
                let s = sum_over(b, count, &[a, acc, n], |b, i, c| {
                    let j = b.add(i, int(1));
                    let jr = to_real(b, j);
                    let yj = index(b, c[1], j);
                    let k = b.sub(c[2], j);
                    let ak = index(b, c[0], k);
                    let t = b.mul(jr, yj);
                    lscale_real(b, ak, t)
                });
                let nr = to_real(b, n);
                let s = b.div(s, nr);
                let an = index(b, a, n);
                let num = b.sub(an, s);
                let a0 = index(b, a, int(0));
                let yn = over(b, num, a0);
                append(b, acc, yn)
            })
        },
    );
    call(b, f, vec![a, y0])
}

/// (sin, cos) — or (sinh, cosh) when `hyperbolic` — together: s' = c·a', c' = ∓s·a'.
fn sin_cos(b: &mut Builder, a: Atom, hyperbolic: bool) -> Atom {
    let pair = Type::Tuple(vec![reals(), reals()]);
    let name = if hyperbolic {
        "jet_sinh_cosh"
    } else {
        "jet_sin_cos"
    };
    let f = jet_helper(b, name, vec![reals()], pair, move |b, args| {
        let a = args[0];
        let a0 = index(b, a, int(0));
        let (sp, cp) = if hyperbolic {
            (Prim::Sinh, Prim::Cosh)
        } else {
            (Prim::Sin, Prim::Cos)
        };
        let s0 = b.unary(sp, a0);
        let c0 = b.unary(cp, a0);
        let s = singleton(b, s0);
        let c = singleton(b, c0);
        let init = b.tuple("sc", vec![s, c]);
        grow(b, a, init, &[a], move |b, st, cap| {
            let a = cap[0];
            let s = b.proj(&st, 0);
            let c = b.proj(&st, 1);
            let n = length(b, s);
            let sn = ode_term(b, n, a, c);
            let cn = ode_term(b, n, a, s);
            let cn = if hyperbolic { cn } else { b.neg(cn) };
            let s = append(b, s, sn);
            let c = append(b, c, cn);
            b.tuple("sc", vec![s, c])
        })
    });
    call(b, f, vec![a])
}

/// sqrt: y² = a gives y_n = (a_n − Σ_{j=1..n−1} y_j y_{n−j}) / (2 y_0).
pub(crate) fn sqrt(b: &mut Builder, a: Atom) -> Atom {
    let f = jet_helper(b, "jet_sqrt", vec![reals()], reals(), |b, args| {
        let a = args[0];
        let a0 = index(b, a, int(0));
        let y0 = b.unary(Prim::Sqrt, a0);
        let init = singleton(b, y0);
        grow(b, a, init, &[a], |b, acc, c| {
            let a = c[0];
            let n = length(b, acc);
            let count = b.sub(n, int(1));
            let s = sum_over(b, count, &[acc, n], |b, i, c| {
                let j = b.add(i, int(1));
                let yj = index(b, c[0], j);
                let k = b.sub(c[1], j);
                let yk = index(b, c[0], k);
                lscale_real(b, yj, yk)
            });
            let an = index(b, a, n);
            let num = b.sub(an, s);
            let y0 = index(b, acc, int(0));
            let den = b.mul(real(2.0), y0);
            let yn = over(b, num, den);
            append(b, acc, yn)
        })
    });
    call(b, f, vec![a])
}

/// y' = z·a' where z = 1 − y² (tanh) or z = y − y² (sigmoid), grown together.
pub(crate) fn logistic_like(b: &mut Builder, a: Atom, sigmoid: bool) -> Atom {
    let pair = Type::Tuple(vec![reals(), reals()]);
    let name = if sigmoid { "jet_sigmoid" } else { "jet_tanh" };
    let f = jet_helper(b, name, vec![reals()], pair, move |b, args| {
        let a = args[0];
        let a0 = index(b, a, int(0));
        let y0 = b.unary(if sigmoid { Prim::Sigmoid } else { Prim::Tanh }, a0);
        let y0sq = b.mul(y0, y0);
        let z0 = if sigmoid {
            b.sub(y0, y0sq)
        } else {
            b.sub(real(1.0), y0sq)
        };
        let y = singleton(b, y0);
        let z = singleton(b, z0);
        let init = b.tuple("yz", vec![y, z]);
        grow(b, a, init, &[a], move |b, st, cap| {
            let y = b.proj(&st, 0);
            let z = b.proj(&st, 1);
            let n = length(b, y);
            let yn = ode_term(b, n, cap[0], z);
            let y = append(b, y, yn);
            // (y²)_n = Σ_{j=0..n} y_j y_{n−j}
            let count = b.add(n, int(1));
            let sq = sum_over(b, count, &[y, n], |b, j, c| {
                let yj = index(b, c[0], j);
                let k = b.sub(c[1], j);
                let yk = index(b, c[0], k);
                b.mul(yj, yk)
            });
            let zn = if sigmoid { b.sub(yn, sq) } else { b.neg(sq) };
            let z = append(b, z, zn);
            b.tuple("yz", vec![y, z])
        })
    });
    let both = call(b, f, vec![a]);
    b.proj(&both, 0)
}

/// The series of x'(t) (one shorter): (n+1)·x_{n+1}.
fn derivative(b: &mut Builder, x: Atom) -> Atom {
    let f = jet_helper(b, "jet_derivative", vec![reals()], reals(), |b, args| {
        let x = var_of(b, args[0]);
        let n = length(b, Atom::Var(x));
        let count = b.sub(n, int(1));
        let lam = b.lambda("coef", &[x], vec![Type::Int], |b, ps| {
            let j = b.add(ps[0], int(1));
            let jr = to_real(b, j);
            let xj = index(b, Atom::Var(x), j);
            b.mul(jr, xj)
        });
        b.prim(Prim::Build, &[count, lam], reals())
    });
    call(b, f, vec![x])
}

/// The series with constant term `y0` whose derivative series is `d` (one longer).
fn integrate(b: &mut Builder, y0: Atom, d: Atom) -> Atom {
    let f = jet_helper(
        b,
        "jet_integrate",
        vec![Type::Real, reals()],
        reals(),
        |b, args| {
            let (y0, d) = (var_of(b, args[0]), var_of(b, args[1]));
            let n = length(b, Atom::Var(d));
            let count = b.add(n, int(1));
            let lam = b.lambda("coef", &[y0, d], vec![Type::Int], |b, ps| {
                let first = b.cmp(Prim::Eq, ps[0], int(0));
                b.if_(
                    first,
                    Type::Real,
                    |_| Atom::Var(y0),
                    |b| {
                        let j = b.sub(ps[0], int(1));
                        let dj = index(b, Atom::Var(d), j);
                        let nr = to_real(b, ps[0]);
                        b.div(dj, nr)
                    },
                )
            });
            b.prim(Prim::Build, &[count, lam], reals())
        },
    );
    call(b, f, vec![y0, d])
}

/// g(a) from g(a₀) and the series w of g'(a(t)): integrate(g(a₀), a'·w).
fn by_derivative(b: &mut Builder, g0: Atom, a: Atom, w: Atom) -> Atom {
    let da = derivative(b, a);
    let d = lscale(b, da, w);
    integrate(b, g0, d)
}

/// a^r for a constant r and a₀ ≠ 0: a·y' = r·a'·y gives
/// y_n = (1/(n·a₀)) Σ_{j=1..n} (r·j − (n − j))·a_j·y_{n−j}.
fn pow_const(b: &mut Builder, a: Atom, r: Atom) -> Atom {
    let f = jet_helper(
        b,
        "jet_pow_const",
        vec![reals(), Type::Real],
        reals(),
        |b, args| {
            let (a, r) = (args[0], args[1]);
            let a0 = index(b, a, int(0));
            let y0 = b.prim(Prim::Pow, &[a0, r], Type::Real);
            let init = singleton(b, y0);
            grow(b, a, init, &[a, r], |b, acc, c| {
                let (a, r) = (c[0], c[1]);
                let n = length(b, acc);
                let s = sum_over(b, n, &[a, r, acc, n], |b, i, c| {
                    let (a, r, acc, n) = (c[0], c[1], c[2], c[3]);
                    let j = b.add(i, int(1));
                    let jr = to_real(b, j);
                    let nr = to_real(b, n);
                    let rj = b.mul(r, jr);
                    let nj = b.sub(nr, jr);
                    let coef = b.sub(rj, nj);
                    let aj = index(b, a, j);
                    let k = b.sub(n, j);
                    let yk = index(b, acc, k);
                    let t = b.mul(coef, aj);
                    lscale_real(b, yk, t)
                });
                let nr = to_real(b, n);
                let a0 = index(b, a, int(0));
                let den = b.mul(nr, a0);
                let yn = over(b, s, den);
                append(b, acc, yn)
            })
        },
    );
    call(b, f, vec![a, r])
}

/// pow(a, b): a constant exponent uses [`pow_const`] (or repeated products at a₀ = 0
/// for a small natural exponent); otherwise exp(b·log a).
pub(crate) fn pow(b: &mut Builder, x: Atom, y: Atom) -> Atom {
    let f = jet_helper(b, "jet_pow", vec![reals(), reals()], reals(), |b, args| {
        let (x, y) = (args[0], args[1]);
        let x0 = index(b, x, int(0));
        let y0 = index(b, y, int(0));
        let value = b.prim(Prim::Pow, &[x0, y0], Type::Real);
        // Branches read primals only, so that every nested layer sees the same rule.
        let positive = b.cmp(Prim::Gt, x0, real(0.0));
        let series = b.if_(
            positive,
            reals(),
            |b| {
                let l = log_of(b, x);
                let e = mul(b, y, l);
                exp(b, e)
            },
            |b| {
                // x₀ ≤ 0: the exponent is held at its value y₀, as ∂pow/∂y is taken as 0
                // there in every mode (calculus.rs; x^y is real at x < 0 only for integer
                // y, where it is not differentiable in y).
                let at_zero = b.cmp(Prim::Eq, x0, real(0.0));
                let whole = b.unary(Prim::Floor, y0);
                let natural = b.cmp(Prim::Eq, whole, y0);
                let small = b.cmp(Prim::Le, y0, real(64.0));
                let nonneg = b.cmp(Prim::Ge, y0, real(0.0));
                let no = Atom::Lit(fluxion_core::Lit::Bool(false));
                let natural_small = b.if_(natural, Type::Bool, |_| small, |_| no);
                let natural_power = b.if_(natural_small, Type::Bool, |_| nonneg, |_| no);
                let use_product = b.if_(at_zero, Type::Bool, |_| natural_power, |_| no);
                b.if_(
                    use_product,
                    reals(),
                    |b| {
                        // 0^n for a natural n ≤ 64: a finite product.
                        let times = b.prim(Prim::ToInt, &[y0], Type::Int);
                        let one = constant_like(b, real(1.0), x);
                        let xv = var_of(b, x);
                        let step = b.lambda("power", &[xv], vec![reals()], |b, ps| {
                            mul(b, ps[0], Atom::Var(xv))
                        });
                        b.prim(Prim::Iterate, &[times, step, one], reals())
                    },
                    |b| {
                        b.if_(
                            at_zero,
                            reals(),
                            // 0^r for another r: x(t)^r vanishes to order r, so the
                            // coefficients below r are 0; the others have no finite
                            // value — unless x does not move past the primal: then 0,
                            // as a zero tangent scaled by ∞ is 0. (Σ %lscale(NaN, x_j)
                            // is NaN where some x_j ≠ 0 and 0 where none is, with no
                            // underflow, and linear in each coefficient.)
                            |b| {
                                let n = length(b, x);
                                let moves = sum_over(b, n, &[x], |b, j, c| {
                                    let first = b.cmp(Prim::Eq, j, int(0));
                                    let xj = index(b, c[0], j);
                                    let nan = lscale_real(b, real(f64::NAN), xj);
                                    b.if_(first, Type::Real, |_| real(0.0), |_| nan)
                                });
                                let rv = var_of(b, y0);
                                let mv = var_of(b, moves);
                                let lam = b.lambda("coef", &[rv, mv], vec![Type::Int], |b, ps| {
                                    let jr = to_real(b, ps[0]);
                                    let below = b.cmp(Prim::Lt, jr, Atom::Var(rv));
                                    b.if_(below, Type::Real, |_| real(0.0), |_| Atom::Var(mv))
                                });
                                b.prim(Prim::Build, &[n, lam], reals())
                            },
                            |b| pow_const(b, x, y0),
                        )
                    },
                )
            },
        );
        // The value itself is pow's, also where the series is not defined.
        with_primal(b, series, value)
    });
    call(b, f, vec![x, y])
}

pub(crate) fn log_of(b: &mut Builder, a: Atom) -> Atom {
    let a0 = index(b, a, int(0));
    let y0 = b.unary(Prim::Log, a0);
    log_from(b, a, y0)
}

/// g(a) = Σ_m c_m (a − a₀)^m by Horner, where c_m = coefs[m] are g's Taylor
/// coefficients at a₀ (as many as a has).
fn compose(b: &mut Builder, coefs: Atom, a: Atom) -> Atom {
    let f = jet_helper(
        b,
        "jet_compose",
        vec![reals(), reals()],
        reals(),
        |b, args| {
            let (coefs, a) = (args[0], args[1]);
            let delta = with_primal(b, a, real(0.0));
            let n = length(b, a);
            let last_i = b.sub(n, int(1));
            let last = index(b, coefs, last_i);
            let init = constant_like(b, last, a);
            let order = b.prim(Prim::Range, &[last_i], Type::array(Type::Int));
            let order = b.prim(Prim::Reverse, &[order], Type::array(Type::Int));
            let (dv, cv) = (var_of(b, delta), var_of(b, coefs));
            let step = b.lambda("horner", &[dv, cv], vec![reals(), Type::Int], |b, ps| {
                let prod = lscale(b, ps[0], Atom::Var(dv));
                let cm = index(b, Atom::Var(cv), ps[1]);
                let c0 = index(b, prod, int(0));
                let sum0 = b.add(c0, cm);
                with_primal(b, prod, sum0)
            });
            b.prim(Prim::Fold, &[step, init, order], reals())
        },
    );
    call(b, f, vec![coefs, a])
}

/// Taylor coefficients at a₀ of ψ⁽ᵒʳᵈᵉʳ⁾ (order −1 is lgamma): c_m = ψ⁽ᵒʳᵈᵉʳ⁺ᵐ⁾(a₀)/m!.
fn polygamma_coefs(b: &mut Builder, order: Atom, a: Atom) -> Atom {
    let f = jet_helper(
        b,
        "jet_polygamma_coefs",
        vec![Type::Int, reals()],
        reals(),
        |b, args| {
            let (order, a) = (var_of(b, args[0]), args[1]);
            let n = length(b, a);
            let a0 = index(b, a, int(0));
            let a0v = var_of(b, a0);
            let lam = b.lambda("coef", &[order, a0v], vec![Type::Int], |b, ps| {
                let m = ps[0];
                let k = b.add(Atom::Var(order), m);
                let is_lgamma = b.cmp(Prim::Lt, k, int(0));
                let value = b.if_(
                    is_lgamma,
                    Type::Real,
                    |b| b.unary(Prim::Lgamma, Atom::Var(a0v)),
                    |b| b.prim(Prim::Polygamma, &[k, Atom::Var(a0v)], Type::Real),
                );
                // m! = exp(lgamma(m + 1)), rounded to the integer it is
                let mr = to_real(b, m);
                let m1 = b.add(mr, real(1.0));
                let lf = b.unary(Prim::Lgamma, m1);
                let fact = b.unary(Prim::Exp, lf);
                let half_up = b.add(fact, real(0.5));
                let fact = b.unary(Prim::Floor, half_up);
                b.div(value, fact)
            });
            b.prim(Prim::Build, &[n, lam], reals())
        },
    );
    call(b, f, vec![order, a])
}

/// `x % y = x − q·y` with the integer quotient q locally constant, recovered exactly
/// from the primal remainder: `q = round((x₀ − x₀ % y₀) / y₀)`; `q·y` by `%lscale`
/// (q is infinite where y₀ is 0), and the primal is `x₀ % y₀` itself.
pub(crate) fn rem(b: &mut Builder, args: &[Atom]) -> Atom {
    let (x, y) = (args[0], args[1]);
    let (x0, y0) = (primal(b, x), primal(b, y));
    let r0 = b.arith(Prim::Rem, &[x0, y0]);
    let d = b.sub(x0, r0);
    let q = b.div(d, y0);
    let half_up = b.add(q, real(0.5));
    let t = b.unary(Prim::Floor, half_up);
    let ty = scale_by(b, Prim::LinScale, "jet_lscale_by", t, y);
    let r = sub(b, x, ty);
    with_primal(b, r, r0)
}

/// The jet's coefficient 0 (its primal).
fn primal(b: &mut Builder, x: Atom) -> Atom {
    index(b, x, int(0))
}

/// `sin`/`cos` (`part` 0/1), or `sinh`/`cosh` when `hyperbolic`.
pub(crate) fn sin_cos_part(b: &mut Builder, a: Atom, hyperbolic: bool, part: usize) -> Atom {
    let both = sin_cos(b, a, hyperbolic);
    b.proj(&both, part)
}

/// `tan = sin / cos`.
pub(crate) fn tan(b: &mut Builder, a: Atom) -> Atom {
    let both = sin_cos(b, a, false);
    let s = b.proj(&both, 0);
    let c = b.proj(&both, 1);
    div(b, s, c)
}

/// `expm1`: the series of `exp` with the primal computed accurately.
pub(crate) fn expm1(b: &mut Builder, a: Atom) -> Atom {
    let e = exp(b, a);
    let a0 = primal(b, a);
    let p0 = b.unary(Prim::Expm1, a0);
    with_primal(b, e, p0)
}

/// `log1p(a) = log(1 + a)` with the primal computed accurately.
pub(crate) fn log1p(b: &mut Builder, a: Atom) -> Atom {
    let one = constant_like(b, real(1.0), a);
    let u = add(b, a, one);
    let a0 = primal(b, a);
    let y0 = b.unary(Prim::Log1p, a0);
    log_from(b, u, y0)
}

/// `asin`, `acos`, `atan`, `erf` (`p`) by integrating the series of their derivative.
pub(crate) fn by_slope(b: &mut Builder, p: Prim, a: Atom) -> Atom {
    let a0 = primal(b, a);
    let g0 = b.unary(p, a0);
    let one = constant_like(b, real(1.0), a);
    let sq = mul(b, a, a);
    let w = match p {
        // asin' = 1/sqrt(1 − a²), acos' = −asin', atan' = 1/(1 + a²)
        Prim::Asin | Prim::Acos => {
            let d = sub(b, one, sq);
            let r = sqrt(b, d);
            let inv = div(b, one, r);
            if p == Prim::Acos { neg(b, inv) } else { inv }
        }
        Prim::Atan => {
            let d = add(b, one, sq);
            div(b, one, d)
        }
        // erf' = 2/sqrt(pi)·exp(−a²)
        _ => {
            let m = neg(b, sq);
            let e = exp(b, m);
            scale(b, real(std::f64::consts::FRAC_2_SQRT_PI), e)
        }
    };
    by_derivative(b, g0, a, w)
}

/// `atan2(y, x)' = (x·y' − y·x') / (x² + y²)`, integrated.
pub(crate) fn atan2(b: &mut Builder, y: Atom, x: Atom) -> Atom {
    let (y0, x0) = (primal(b, y), primal(b, x));
    let g0 = b.prim(Prim::Atan2, &[y0, x0], Type::Real);
    let dy = derivative(b, y);
    let dx = derivative(b, x);
    let t1 = mul(b, dy, x);
    let t2 = mul(b, dx, y);
    let num = sub(b, t1, t2);
    let xx = mul(b, x, x);
    let yy = mul(b, y, y);
    let den = add(b, xx, yy);
    let q = div_linear(b, num, den);
    integrate(b, g0, q)
}

/// `sign(a₀)·a`, and 0 at a₀ = 0 (abs'(0) = 0).
pub(crate) fn abs(b: &mut Builder, a: Atom) -> Atom {
    let a0 = primal(b, a);
    let pos = b.cmp(Prim::Gt, a0, real(0.0));
    let negative = b.cmp(Prim::Lt, a0, real(0.0));
    let sign = b.if_(
        pos,
        Type::Real,
        |_| real(1.0),
        |b| b.if_(negative, Type::Real, |_| real(-1.0), |_| real(0.0)),
    );
    scale(b, sign, a)
}

/// `min`/`max`: the series of the argument chosen by the primals; ties choose the first.
pub(crate) fn choose(b: &mut Builder, p: Prim, x: Atom, y: Atom) -> Atom {
    let (x0, y0) = (primal(b, x), primal(b, y));
    let first = b.cmp(if p == Prim::Min { Prim::Le } else { Prim::Ge }, x0, y0);
    b.if_(first, reals(), |_| x, |_| y)
}

/// `floor`, `ceil`: the constant series of the primal's image.
pub(crate) fn locally_constant(b: &mut Builder, p: Prim, a: Atom) -> Atom {
    let a0 = primal(b, a);
    let v = b.unary(p, a0);
    constant_like(b, v, a)
}

/// ψ⁽ᵒʳᵈᵉʳ⁾(a) (order −1 is lgamma) by composition with its Taylor polynomial at a₀.
pub(crate) fn polygamma(b: &mut Builder, order: Atom, a: Atom) -> Atom {
    let coefs = polygamma_coefs(b, order, a);
    compose(b, coefs, a)
}
