//! Derivative checking, for every AD mode: central finite differences and the
//! transpose identity ⟨J·u, w⟩ = ⟨u, Jᵀ·w⟩.
//!
//! The functions under test are Fluxion functions of `[Real]` (any structured function
//! can be wrapped to one); derivatives are computed by Fluxion's own operators in the
//! chosen [`AdMode`] (and `FwdMode`: any [`RunOptions`]) and compared with differences of the function's values, also
//! computed by Fluxion.
//!
//! Step and tolerance: the central difference (f(x+h) − f(x−h)) / 2h has truncation
//! error h²/6·|f'''| and rounding error about ε·|f|/h (ε = 2.2e-16). With
//! h = 6e-6·max(1, |xᵢ|) (≈ ε^(1/3), which balances the two) both are about 4e-11 times
//! the size of f and its third derivative, so for the smooth, moderately scaled test
//! functions here a tolerance of 1e-6·(1 + |expected|) leaves four orders of magnitude
//! of margin while still catching any wrong rule (errors of order 1).

use crate::{AdMode, RunOptions, with_big_stack};

/// Relative step of the central differences (see the module doc).
pub const FD_STEP: f64 = 6e-6;
/// Tolerance: |ad − fd| ≤ FD_TOLERANCE · (1 + |fd|).
pub const FD_TOLERANCE: f64 = 1e-6;

fn literal(xs: &[f64]) -> String {
    let parts: Vec<String> = xs
        .iter()
        .map(|x| crate::core::print::format_real(*x))
        .collect();
    format!("[{}]", parts.join(", "))
}

/// A printed derivative stage as a program to run: `%lscale(c, w)` — the scaling of
/// a tangent, an internal primitive no source can spell — becomes a call of a source
/// function with the same values (`w` where `w` is zero, 0 where `c` is, else `c·w`;
/// `fluxion_core::prim::lscale`), so the run gives the stage's result bit for
/// bit. `None` where the stage still applies a differential operator: differentiated,
/// that function's `if` would follow one branch where `%lscale` is a product.
pub fn runnable_stage(printed: &str) -> Option<String> {
    if !printed.contains("%lscale(") {
        return Some(printed.to_string());
    }
    // A call of a differential operator: a name the `Prim` table calls one, then `(`.
    let applies_operator = printed.match_indices('(').any(|(at, _)| {
        let before = &printed[..at];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        crate::core::Prim::from_surface_name(&before[start..])
            .is_some_and(crate::core::Prim::is_differential)
    });
    (!applies_operator).then(|| {
        format!(
            "{}\n\nfn lscale_as_source(c: Real, w: Real) -> Real {{\n    if w == 0.0 {{ w }} else {{ if c == 0.0 {{ 0.0 }} else {{ c * w }} }}\n}}\n",
            printed.replace("%lscale(", "lscale_as_source(")
        )
    })
}

/// Evaluates `expr` (which may use the functions of `src`) and parses the printed
/// result as a flat list of reals (nested arrays and tuples are flattened).
pub fn eval_reals(src: &str, expr: &str, mode: impl Into<RunOptions>) -> Result<Vec<f64>, String> {
    eval_literal(src, expr, mode).map(|text| parse_reals(&text))
}

/// Evaluates `expr` (which may use the functions of `src`) and prints its value in
/// Fluxion literal syntax; the error is the rendered diagnostic.
pub fn eval_literal(src: &str, expr: &str, mode: impl Into<RunOptions>) -> Result<String, String> {
    let options = mode.into();
    let src = src.to_string();
    let expr = expr.to_string();
    with_big_stack(move || {
        let program =
            crate::compile_with_expr("check.flx", &src, Some(&expr)).map_err(|f| f.render())?;
        let out = program
            .run_with_options(crate::core_entry_name(), None, options)
            .map_err(|f| f.render())?;
        Ok(out.to_literal())
    })
}

/// The printed value with every real replaced by `#`: the shape (constructors, tuple
/// and array structure, `Int`s, `Bool`s and units) two modes must print identically.
pub fn skeleton(text: &str) -> String {
    let mut out = String::new();
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        let is_real = matches!(token.as_str(), "NaN" | "inf" | "-inf")
            || ((token.contains('.') || token.contains('e'))
                && token.starts_with(|c: char| c.is_ascii_digit() || c == '-')
                && token.parse::<f64>().is_ok());
        out.push_str(if is_real { "#" } else { token });
        token.clear();
    };
    for c in text.chars() {
        if matches!(c, '[' | ']' | '(' | ')' | ',' | ' ') {
            flush(&mut token, &mut out);
            out.push(c);
        } else {
            token.push(c);
        }
    }
    flush(&mut token, &mut out);
    out
}

/// Every real number in a printed value, in order.
pub fn parse_reals(text: &str) -> Vec<f64> {
    text.split(['[', ']', '(', ')', ',', ' '])
        .filter(|t| !t.is_empty())
        .filter_map(|t| match t {
            "NaN" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            t if t.contains('.') || t.contains('e') => t.parse().ok(),
            _ => None,
        })
        .collect()
}

fn close(ad: f64, fd: f64) -> bool {
    (ad - fd).abs() <= FD_TOLERANCE * (1.0 + fd.abs())
}

/// Central differences of `f: [Real] -> [Real]` (or `-> Real`) at `x`: column j is
/// the derivative along coordinate j. Every point is evaluated in one run (one
/// compilation: the evaluations, not the differences, are what costs).
pub fn fd_jacobian(src: &str, f: &str, x: &[f64]) -> Result<Vec<Vec<f64>>, String> {
    let steps: Vec<f64> = x.iter().map(|v| FD_STEP * v.abs().max(1.0)).collect();
    let mut calls = Vec::with_capacity(2 * x.len());
    for (j, h) in steps.iter().enumerate() {
        let (mut plus, mut minus) = (x.to_vec(), x.to_vec());
        plus[j] += h;
        minus[j] -= h;
        calls.push(format!("{f}({})", literal(&plus)));
        calls.push(format!("{f}({})", literal(&minus)));
    }
    if calls.is_empty() {
        return Ok(Vec::new());
    }
    let all = eval_reals(src, &format!("({}, ())", calls.join(", ")), AdMode::Fwd)?;
    if all.len() % calls.len() != 0 {
        return Err(format!(
            "finite differences of {f} at {x:?}: results of different lengths"
        ));
    }
    let m = all.len() / calls.len();
    Ok(steps
        .iter()
        .enumerate()
        .map(|(j, h)| {
            let fp = &all[2 * j * m..(2 * j + 1) * m];
            let fm = &all[(2 * j + 1) * m..(2 * j + 2) * m];
            fp.iter()
                .zip(fm)
                .map(|(a, b)| (a - b) / (2.0 * h))
                .collect()
        })
        .collect())
}

/// The central-difference gradient of `f: [Real] -> Real` at `x`.
pub fn fd_gradient(src: &str, f: &str, x: &[f64]) -> Result<Vec<f64>, String> {
    Ok(fd_jacobian(src, f, x)?.into_iter().map(|c| c[0]).collect())
}

/// Checks `grad(f, x)` (f: [Real] -> Real) in `mode` against central differences.
pub fn check_gradient(
    src: &str,
    f: &str,
    x: &[f64],
    mode: impl Into<RunOptions>,
) -> Result<(), String> {
    check_gradient_against(src, f, x, mode, &fd_gradient(src, f, x)?)
}

/// [`check_gradient`] against central differences computed once for every mode
/// checked ([`fd_gradient`]).
pub fn check_gradient_against(
    src: &str,
    f: &str,
    x: &[f64],
    mode: impl Into<RunOptions>,
    fd: &[f64],
) -> Result<(), String> {
    let ad = eval_reals(src, &format!("grad({f}, {})", literal(x)), mode)?;
    compare_gradient(f, x, &ad, fd)
}

/// Whether a gradient `ad` of `f` at `x` agrees with central differences `fd`, to the
/// tolerance their truncation and rounding allow (`FD_TOLERANCE`).
pub fn compare_gradient(f: &str, x: &[f64], ad: &[f64], fd: &[f64]) -> Result<(), String> {
    if ad.len() != fd.len() || !ad.iter().zip(fd).all(|(a, b)| close(*a, *b)) {
        return Err(format!(
            "grad of {f} at {x:?}: AD {ad:?}, finite differences {fd:?}"
        ));
    }
    Ok(())
}

/// Checks `jacobian(f, x)` (f: [Real] -> [Real]) in `mode` against central differences.
pub fn check_jacobian(
    src: &str,
    f: &str,
    x: &[f64],
    mode: impl Into<RunOptions>,
) -> Result<(), String> {
    let ad = eval_reals(src, &format!("jacobian({f}, {})", literal(x)), mode)?;
    let cols = fd_jacobian(src, f, x)?;
    let m = cols.first().map_or(0, |c| c.len());
    // AD rows are output-major: entry (i, j) at i·n + j.
    let fd: Vec<f64> = (0..m)
        .flat_map(|i| cols.iter().map(move |c| c[i]))
        .collect();
    if ad.len() != fd.len() || !ad.iter().zip(&fd).all(|(a, b)| close(*a, *b)) {
        return Err(format!(
            "jacobian of {f} at {x:?}: AD {ad:?}, finite differences {fd:?}"
        ));
    }
    Ok(())
}

/// Checks ⟨J·u, w⟩ = ⟨u, Jᵀ·w⟩ for f: [Real] -> [Real] at `x`, with J·u from `jvp`
/// and Jᵀ·w from `vjp` (both in `mode`).
pub fn check_transpose(
    src: &str,
    f: &str,
    x: &[f64],
    u: &[f64],
    w: &[f64],
    mode: impl Into<RunOptions>,
) -> Result<(), String> {
    let mode = mode.into();
    // J·u then Jᵀ·w, in one run.
    let both = eval_reals(
        src,
        &format!(
            "(jvp({f}, {x}, {u}).1, vjp({f}, {x}).1({w}))",
            x = literal(x),
            u = literal(u),
            w = literal(w)
        ),
        mode,
    )?;
    let (ju, jtw) = both.split_at(w.len().min(both.len()));
    let lhs: f64 = ju.iter().zip(w).map(|(a, b)| a * b).sum();
    let rhs: f64 = u.iter().zip(jtw).map(|(a, b)| a * b).sum();
    // Both sides sum the same products J_ij·u_j·w_i in different orders, so they
    // differ by rounding only: a few ulps of the terms' total magnitude.
    let scale: f64 = ju.iter().zip(w).map(|(a, b)| (a * b).abs()).sum::<f64>() + 1.0;
    if ju.len() != w.len() || jtw.len() != u.len() || (lhs - rhs).abs() > 1e-12 * scale {
        return Err(format!(
            "transpose identity for {f} at {x:?}: <Ju, w> = {lhs}, <u, J^T w> = {rhs}"
        ));
    }
    Ok(())
}
