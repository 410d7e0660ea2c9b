//! Generated Fluxion programs of a chosen size.
//!
//! For compile time, two shapes stress different things: many top-level functions (a
//! mix of the language's constructs, so that each pass sees realistic code), and one
//! function with very many `let`s (one long scope, where a name lookup that scans the
//! scope shows up as quadratic time).
//!
//! For the cost of reverse mode: four families of functions of n reals ([`Family`]),
//! and GradBench's GMM objective ([`GMM`]).

use std::fmt::Write;

/// Lines of one generated function in [`many_functions`] (with its blank line).
const LINES_PER_FUNCTION: usize = 12;

/// A program of about `lines` lines: an enum and a chain of functions,
/// each using `let` patterns, a lambda, a `match`, an `if`, a differential operator
/// and a call of the previous function, and a `main` calling the last one.
pub fn many_functions(lines: usize) -> String {
    let count = lines.div_ceil(LINES_PER_FUNCTION).max(1);
    let mut src = String::from("enum Shape { Circle(Real), Rect(Real, Real) }\n\n");
    src.push_str("fn f0(x: Real, v: [Real]) -> Real { x + sum(v) }\n\n");
    for i in 1..count {
        write_function(&mut src, i);
    }
    let _ = writeln!(
        src,
        "fn main() -> Real {{ f{}(1.5, [1.0, 2.0, 3.0]) }}",
        count - 1
    );
    src
}

fn write_function(src: &mut String, i: usize) {
    let prev = i - 1;
    let _ = write!(
        src,
        "fn f{i}(x: Real, v: [Real]) -> Real {{
    let a = x * 0.5 + {i}.25;
    let (p, q) = (a, x - 1.0);
    let s = sum(map(|y| y * p + q, v));
    let m = match if a > 0.0 {{ Circle(a) }} else {{ Rect(a, q) }} {{
        Circle(r) => r * r,
        Rect(w, h) => w * h,
    }};
    let d = diff(|z| z * z * a, x);
    if s > m {{ f{prev}(x - 1.0, v) + d }} else {{ s - m }}
}}

"
    );
}

/// One function of `lets` `let`s, each using the previous variable, one bound far
/// earlier and a built-in (so names are looked up across the whole scope).
pub fn many_lets(lets: usize) -> String {
    let mut src = String::from("fn main() -> Real {\n    let x0 = 1.0;\n");
    for i in 1..lets.max(1) {
        let _ = writeln!(src, "    let x{i} = x{} * 0.5 + sin(x{});", i - 1, i / 2);
    }
    let _ = writeln!(src, "    x{}\n}}", lets.max(1) - 1);
    src
}

/// The four program families of the reverse-mode table (`fluxion-bench delta`): each
/// defines `f: [Real] -> Real`, linear in the length of its input, with the entries
/// `primal(x) = f(x)` and `gradient(x) = grad(f, x)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Straight-line code: a generated block of one `let` per input, each a few
    /// scalar operations on the previous two results and one input.
    StraightLine,
    /// A `fold` whose closure captures two reals computed from the input.
    FoldClosure,
    /// Indexing: an array built from three reads of the input per element, then read
    /// three times per element.
    Indexing,
    /// Closures stored in an array and in an enum, picked per element.
    ClosuresInData,
}

impl Family {
    pub const ALL: [Family; 4] = [
        Family::StraightLine,
        Family::FoldClosure,
        Family::Indexing,
        Family::ClosuresInData,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::StraightLine => "straight-line code",
            Family::FoldClosure => "fold with a closure",
            Family::Indexing => "indexing-heavy",
            Family::ClosuresInData => "closures in data structures",
        }
    }

    /// The family's name on the command line (`fluxion-bench source NAME N`).
    pub fn short_name(self) -> &'static str {
        match self {
            Family::StraightLine => "straight",
            Family::FoldClosure => "fold",
            Family::Indexing => "indexing",
            Family::ClosuresInData => "closures",
        }
    }

    /// The program for inputs of length `n` (only the straight-line block depends on
    /// it; `n` must be a multiple of the block's length, as powers of ten are).
    pub fn source(self, n: usize) -> String {
        let body = match self {
            Family::StraightLine => straight_line(n.clamp(1, MAX_BLOCK)),
            Family::FoldClosure => FOLD_CLOSURE.to_string(),
            Family::Indexing => INDEXING.to_string(),
            Family::ClosuresInData => CLOSURES_IN_DATA.to_string(),
        };
        format!("{body}{ENTRIES}")
    }
}

/// The entries the reverse-mode table calls.
const ENTRIES: &str = "
fn primal(x: [Real]) -> Real { f(x) }
fn gradient(x: [Real]) -> [Real] { grad(f, x) }
";

/// The longest straight-line block generated: 10^4 `let`s compile in about 20 ms; a
/// block of 10^6 would take seconds and gigabytes to compile.
pub const MAX_BLOCK: usize = 10_000;

/// `block(x, o, t0)` is a chain of `block` `let`s,
/// t_j = t_{j−1}/2 + sin(x[o + j − 1] + t_{j/2}), so most results are used twice;
/// `f` folds it over the chunks of `block` inputs, each chunk's block starting from
/// the previous one's result. The table uses blocks of `min(n, MAX_BLOCK)`: pure
/// straight-line code for n ≤ `MAX_BLOCK`. Every value stays in [-2, 2].
pub fn straight_line(block: usize) -> String {
    let mut src = String::from("fn block(x: [Real], o: Int, t0: Real) -> Real {\n");
    for j in 1..=block {
        let _ = writeln!(
            src,
            "    let t{j} = t{} * 0.5 + sin(x[o + {}] + t{});",
            j - 1,
            j - 1,
            j / 2
        );
    }
    let _ = writeln!(src, "    t{block}\n}}\n");
    let _ = writeln!(
        src,
        "fn f(x: [Real]) -> Real {{\n    fold(|t, c| block(x, c * {block}, t), 0.5, range(length(x) / {block}))\n}}"
    );
    src
}

/// `acc ↦ acc·c + sin(x_i + acc)·w + 0.01·x_i`, with c and w computed from the input
/// and captured by the closure (|c| ≤ 0.6, so the accumulator stays bounded).
const FOLD_CLOSURE: &str = "fn f(x: [Real]) -> Real {
    let c = 0.5 + 0.1 * tanh(x[0]);
    let w = 0.3 * x[length(x) - 1];
    fold(|acc, xi| acc * c + sin(xi + acc) * w + xi * 0.01, 0.0, x)
}
";

const INDEXING: &str = "fn f(x: [Real]) -> Real {
    let n = length(x);
    let b = build(n, |i| x[i] * x[(i + 1) % n] - 0.5 * x[(i * 7 + 3) % n]);
    sumbuild(n, |i| b[i] * b[n - 1 - i] + sin(b[(i * 13 + 5) % n]))
}
";

/// Four closures in an array (two capture reals computed from the input) and four
/// values of an enum, two of them holding closures; element i applies closure i mod 4
/// to x_i and operation (i / 4) mod 4 to x_{i+1}.
const CLOSURES_IN_DATA: &str = "enum Op { Scale(Real), Apply(fn(Real) -> Real) }

fn run(o: Op, y: Real) -> Real {
    match o {
        Scale(c) => c * y,
        Apply(g) => g(y),
    }
}

fn f(x: [Real]) -> Real {
    let n = length(x);
    let a = x[0] * 0.1 + 1.0;
    let b = x[n - 1] * 0.2;
    let fs = [|y: Real| y * a, |y: Real| sin(y) + b, |y: Real| y * y * 0.5, |y: Real| exp(-y * y) * a];
    let ops = [Scale(b), Apply(fs[3]), Apply(|y: Real| cos(y * a)), Scale(0.5)];
    sumbuild(n, |i| fs[i % 4](x[i]) * run(ops[(i / 4) % 4], x[(i + 1) % n]))
}
";

/// The input of the reverse-mode table at size n: reals in [-0.9, 0.9].
pub fn family_input(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 0.9 * (i as f64 * 0.618 + 0.3).sin())
        .collect()
}

/// GradBench's GMM objective (`fluxion-bench gmm`): the log-likelihood of the points
/// `x[n][d]` under a mixture of k Gaussians with log-weights `alphas[k]`, means
/// `means[k][d]` and precisions Q_kᵀQ_k, plus a Wishart prior (γ, m) on them. Row k of
/// `icf` is Q_k: its d log-diagonal entries, then its strict lower triangle column by
/// column (entry (j, i), i < j, at d + i(d−1) − i(i−1)/2 + (j − i − 1)). As in
/// GradBench's reference (ADBench's C++), with its sign for the prior term:
///
/// ```text
/// −(nd/2)·log 2π + Σ_i logsumexp_k(α_k + Σ_j q_kj − ½‖Q_k(x_i − μ_k)‖²) − n·logsumexp(α)
///   + Σ_k (½γ²(‖exp q_k‖² + ‖L_k‖²) − m·Σ_j q_kj) − k·(n_w·d·(log γ − ½ log 2) − log Γ_d(n_w/2))
/// ```
///
/// with n_w = d + m + 1 and log Γ_d the multivariate log-gamma function.
pub const GMM: &str = include_str!("../../../examples/gmm.flx");
