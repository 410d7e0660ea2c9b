//! JAX-style transformations as generated Fluxion source.
//!
//! `fluxion.grad(m.f, argnums=1)` becomes a top-level function appended to the
//! module's source, e.g.
//!
//! ```text
//! fn __fx_grad_f(x: [Real], w: Real) -> Real { grad(|w: Real| f(x, w), w) }
//! ```
//!
//! so every transformation is the language's own operator (same semantics, same AD
//! modes, nesting for free: a derived function can be transformed again), and the
//! only thing the bindings add is the choice of the differentiated arguments.

use fluxion_driver::core::{Module, Type};

use crate::compiled::Signature;
use crate::errors::{FxError, Kind};

/// Which transformation to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transform {
    Grad,
    ValueAndGrad,
    Jacobian,
    Hessian,
    /// `(params..., tangent) -> (f(params), J·tangent)`.
    Jvp,
    /// `(params..., cotangent) -> cotangent of the differentiated arguments`.
    VjpPullback,
    /// `(params..., direction) -> (f(params), [c1..ck])`.
    Taylor(u32),
    /// `(params..., directions) -> (f(params), [partials])`: `jet` of order r.
    Jet(u32),
    /// `f` mapped over the leading axis of the chosen arguments (`vmap`).
    Vmap,
    /// The Jacobian of `f: .. -> [Real]` in one argument of any tangent type `T(A)`,
    /// as its rows `[T(A)]` (one pullback per output: `fluxion.jax`'s second order).
    JacobianRows,
}

impl Transform {
    pub fn parse(name: &str, order: Option<u32>) -> Option<Transform> {
        Some(match (name, order) {
            ("grad", _) => Transform::Grad,
            ("value_and_grad", _) => Transform::ValueAndGrad,
            ("jacobian", _) => Transform::Jacobian,
            ("hessian", _) => Transform::Hessian,
            ("jvp", _) => Transform::Jvp,
            ("vjp", _) => Transform::VjpPullback,
            ("taylor", Some(k)) => Transform::Taylor(k),
            ("jet", Some(r)) => Transform::Jet(r),
            ("vmap", _) => Transform::Vmap,
            ("jacobian_rows", _) => Transform::JacobianRows,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Transform::Grad => "grad",
            Transform::ValueAndGrad => "value_and_grad",
            Transform::Jacobian => "jacobian",
            Transform::Hessian => "hessian",
            Transform::Jvp => "jvp",
            Transform::VjpPullback => "vjp",
            Transform::Taylor(_) => "taylor",
            Transform::Jet(_) => "jet",
            Transform::Vmap => "vmap",
            Transform::JacobianRows => "jacobian_rows",
        }
    }
}

/// The wrapper's name and source for `t` of function `fname` with respect to the
/// parameters `argnums` (their tuple when there are several).
pub fn wrapper(
    module: &Module,
    fname: &str,
    sig: &Signature,
    t: Transform,
    argnums: &[usize],
) -> Result<(String, String), FxError> {
    let n = sig.params.len();
    let bad = |m: String| FxError::new(Kind::Argument, m);
    if argnums.is_empty() {
        return Err(bad(format!("{}: argnums is empty", t.name())));
    }
    for (i, &a) in argnums.iter().enumerate() {
        if a >= n {
            return Err(bad(format!(
                "{}: argnums {a} is out of range: `{fname}` takes {n} argument(s)",
                t.name()
            )));
        }
        if argnums[..i].contains(&a) {
            return Err(bad(format!("{}: argnums repeats {a}", t.name())));
        }
    }
    let mut m = module.clone();
    let show = |m: &Module, ty: &Type| ty.display(&m.enums).to_string();
    // The wrapper's parameters take the user's names, unless a name would hide the
    // function the wrapper calls.
    let names: Vec<String> = sig
        .names
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if is_plain_name(s) && s != fname {
                s.clone()
            } else {
                format!("__p{i}")
            }
        })
        .collect();
    if t == Transform::Vmap {
        return Ok(vmap_wrapper(&m, fname, sig, &names, argnums));
    }
    let a = if let [i] = argnums {
        sig.params[*i].clone()
    } else {
        Type::Tuple(argnums.iter().map(|&i| sig.params[i].clone()).collect())
    };
    let ta = m.tangent_type(&a);
    let ret = sig.ret.clone();
    let tr = m.tangent_type(&ret);
    let (a_s, ta_s, r_s, tr_s) = (show(&m, &a), show(&m, &ta), show(&m, &ret), show(&m, &tr));
    let real_vec = Type::Array(Box::new(Type::Real));
    let need = |ok: bool, what: &str| -> Result<(), FxError> {
        if ok {
            Ok(())
        } else {
            Err(bad(format!(
                "{} needs {what}; `{fname}` is {a_s} -> {r_s} in the differentiated argument(s)",
                t.name()
            )))
        }
    };
    match t {
        Transform::Grad | Transform::ValueAndGrad => need(
            ret == Type::Real,
            "a function that returns Real (use jacobian or vjp)",
        )?,
        Transform::Jacobian => need(
            a == real_vec && ret == real_vec,
            "a function from [Real] to [Real]",
        )?,
        Transform::Hessian => need(
            a == real_vec && ret == Type::Real,
            "a function from [Real] to Real",
        )?,
        Transform::JacobianRows => need(
            array_depth(&ret).is_some(),
            "a function returning an array of reals ([Real], [[Real]], ...)",
        )?,
        _ => {}
    }
    let call = format!("{fname}({})", names.join(", "));
    let (lambda, x) = if let [i] = argnums {
        (format!("|{}: {a_s}| {call}", names[*i]), names[*i].clone())
    } else {
        let picked: Vec<&str> = argnums.iter().map(|&i| names[i].as_str()).collect();
        (
            format!(
                "|__x: {a_s}| {{ let ({}) = __x; {call} }}",
                picked.join(", ")
            ),
            format!("({})", picked.join(", ")),
        )
    };
    let params: Vec<String> = names
        .iter()
        .zip(&sig.params)
        .map(|(n, ty)| format!("{n}: {}", show(&m, ty)))
        .collect();
    let params = params.join(", ");
    let wname = format!("__fx_{}_{fname}", t.name());
    let (extra, result, body) = match t {
        Transform::Grad => (String::new(), ta_s, format!("grad({lambda}, {x})")),
        Transform::ValueAndGrad => (
            String::new(),
            format!("(Real, {ta_s})"),
            format!("value_and_grad({lambda}, {x})"),
        ),
        Transform::Jacobian => (
            String::new(),
            "[[Real]]".into(),
            format!("jacobian({lambda}, {x})"),
        ),
        Transform::Hessian => (
            String::new(),
            "[[Real]]".into(),
            format!("hessian({lambda}, {x})"),
        ),
        Transform::Jvp => (
            format!(", __tangent: {ta_s}"),
            format!("({r_s}, {tr_s})"),
            format!("jvp({lambda}, {x}, __tangent)"),
        ),
        Transform::VjpPullback => (
            format!(", __cotangent: {tr_s}"),
            ta_s,
            format!("{{ let (_, __pullback) = vjp({lambda}, {x}); __pullback(__cotangent) }}"),
        ),
        Transform::Taylor(k) => (
            format!(", __direction: {ta_s}"),
            format!("({r_s}, [{tr_s}])"),
            format!("taylor({lambda}, {x}, __direction, {k})"),
        ),
        Transform::Jet(r) => (
            format!(", __directions: [{ta_s}]"),
            format!("({r_s}, [{tr_s}])"),
            format!("jet({lambda}, {x}, __directions, {r})"),
        ),
        Transform::JacobianRows => {
            let depth = array_depth(&ret).unwrap_or(1);
            (
                String::new(),
                format!("{}{ta_s}{}", "[".repeat(depth), "]".repeat(depth)),
                jacobian_rows(&lambda, &x, depth),
            )
        }
        Transform::Vmap => unreachable!("vmap_wrapper"),
    };
    let source = format!(
        "// Generated by the Python bindings: {} of `{fname}` in argument(s) {argnums:?}.\n\
         fn {wname}({params}{extra}) -> {result} {{\n    {body}\n}}\n",
        t.name()
    );
    Ok((wname, source))
}

/// `vmap` of `fname` over the arguments `batched`: each is passed as an array of its
/// type and `fname` is applied to their `i`-th elements (the other arguments whole)
/// for every `i`, as one `build` in Fluxion (so natively, one compiled loop), e.g.
/// `fn __fx_vmap_f(x: [[Real]], s: Real) -> [Real] { build(length(x), |__i: Int| f(x[__i], s)) }`.
/// The batched arrays' lengths are checked equal by the caller.
fn vmap_wrapper(
    m: &Module,
    fname: &str,
    sig: &Signature,
    names: &[String],
    batched: &[usize],
) -> (String, String) {
    let show = |ty: &Type| ty.display(&m.enums).to_string();
    let params: Vec<String> = names
        .iter()
        .zip(&sig.params)
        .enumerate()
        .map(|(i, (n, ty))| {
            if batched.contains(&i) {
                format!("{n}: [{}]", show(ty))
            } else {
                format!("{n}: {}", show(ty))
            }
        })
        .collect();
    let args: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if batched.contains(&i) {
                format!("{n}[__i]")
            } else {
                n.clone()
            }
        })
        .collect();
    let wname = format!("__fx_vmap_{fname}");
    let source = format!(
        "// Generated by the Python bindings: vmap of `{fname}` over argument(s) {batched:?}.\n\
         fn {wname}({}) -> [{}] {{\n    build(length({}), |__i: Int| {fname}({}))\n}}\n",
        params.join(", "),
        show(&sig.ret),
        names[batched[0]],
        args.join(", ")
    );
    (wname, source)
}

/// How deep `ty` nests arrays around `Real` (`[[Real]]`: 2), if it is such a type.
fn array_depth(ty: &Type) -> Option<usize> {
    match ty {
        Type::Array(e) if **e == Type::Real => Some(1),
        Type::Array(e) => array_depth(e).map(|d| d + 1),
        _ => None,
    }
}

/// The Jacobian of `lambda` at `x`, whose result `__y` nests `depth` arrays of reals,
/// as the pullbacks of every one-hot cotangent, indexed as `__y` is: for depth 1,
/// `build(length(__y), |__k1| __pullback(build(length(__y), |__l1| if __l1 == __k1
/// { 1.0 } else { 0.0 })))`.
fn jacobian_rows(lambda: &str, x: &str, depth: usize) -> String {
    // `build(length(__y[i1]..[i(j-1)]), |ij: Int| inner)` for j = depth down to 1.
    let nest = |var: &str, inner: String| {
        (1..=depth).rev().fold(inner, |inner, j| {
            let at: String = (1..j).map(|i| format!("[{var}{i}]")).collect();
            format!("build(length(__y{at}), |{var}{j}: Int| {inner})")
        })
    };
    let same: Vec<String> = (1..=depth).map(|i| format!("__l{i} == __k{i}")).collect();
    let one_hot = nest(
        "__l",
        format!("if {} {{ 1.0 }} else {{ 0.0 }}", same.join(" && ")),
    );
    let rows = nest("__k", format!("__pullback({one_hot})"));
    format!("{{ let (__y, __pullback) = vjp({lambda}, {x}); {rows} }}")
}

/// A name the wrapper can reuse as a parameter (not `_`, not generated).
fn is_plain_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
