//! The reverse modes take time linear in the primal's. Delta ([Delta]): one recording
//! pass (a constant number of tape entries per real operation) and one backward sweep
//! over the tape (§7.4). CHAD ([CHAD]): a primal pass building backpropagators and
//! one call of them, with sparse context cotangents and lazily accumulated array
//! cotangents. So a gradient over 4x the inputs (or 4x the operations) takes about 4x
//! as long; one loss of sharing, a per-input allocation in the wrapper, a map that is
//! not an array, a sweep that rescans the tape, a dense one-hot cotangent per read or
//! a dense context per binding makes it 16x or worse (docs/references.md lists
//! most of these programs and the failures they catch; the last two are [CHAD]'s
//! cost caveats 3 and 1 there).
//!
//! Each program is run at two sizes 4x apart and must grow at most `MAX_GROWTH`
//! (between linear, 4x, and quadratic, 16x; fixed costs only make the measured growth
//! smaller). The same programs with `jvp` instead of `grad`, which is linear in every
//! mode, check the harness itself on this machine.

use std::time::Duration;

use fluxion_bench::clock::time_on_this_thread;
use fluxion_driver::{AdMode, Backend, RunOptions, compile, with_big_stack};

const MAX_GROWTH: f64 = 10.0;
const ATTEMPTS: usize = 3;
const SMALL_RUNS: u32 = 4;

/// The timing tests run one at a time, so that they do not slow each other down.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A program to run: its source and `main`'s arguments (JSON).
type Run = (String, Option<String>);

/// How long expanding and running `main` takes (compiling is not counted).
fn run_time((src, args): &Run, options: RunOptions) -> Duration {
    let (src, args) = (src.clone(), args.clone());
    let mode = options.mode;
    with_big_stack(move || {
        let program = compile("t.flx", &src).unwrap_or_else(|f| panic!("{}", f.render()));
        let (out, elapsed) =
            time_on_this_thread(|| program.run_with_options("main", args.as_deref(), options));
        let out = out.unwrap_or_else(|f| panic!("[{}] {}", mode.name(), f.render()));
        drop(out);
        elapsed
    })
}

fn assert_linear(name: &str, program: impl Fn(usize) -> Run, n: usize, options: RunOptions) {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (small, large) = (program(n), program(4 * n));
    let mode = options.mode;
    // Native code is compiled (and cached) by a first run, which is not counted.
    run_time(&small, options);
    let mut growth = f64::INFINITY;
    for _ in 0..ATTEMPTS {
        // Several small runs, so that both measurements are long beside the clock's
        // resolution (a scheduler tick).
        let t_small = (0..SMALL_RUNS)
            .map(|_| run_time(&small, options))
            .sum::<Duration>()
            / SMALL_RUNS;
        let t_large = run_time(&large, options);
        growth = growth.min(t_large.as_secs_f64() / t_small.as_secs_f64());
        eprintln!(
            "{name} [{}]: {t_small:?} at {n}, {t_large:?} at {}: {growth:.1}x",
            mode.name(),
            4 * n
        );
        if growth <= MAX_GROWTH {
            return;
        }
    }
    panic!(
        "{name} [{}]: 4x the size took {growth:.1}x as long; it should be linear (4x)",
        mode.name()
    );
}

/// What a program differentiates: `grad` (reverse mode) or, for the harness check,
/// `jvp` along the point itself (forward mode, linear in every mode).
#[derive(Clone, Copy)]
enum Op {
    Grad,
    Jvp,
}

impl Op {
    /// `op(f, x)` reduced to one real (the sum of a gradient, or the jvp's tangent).
    fn apply(self, f: &str, x: &str) -> String {
        match self {
            Op::Grad => format!("sum(grad({f}, {x}))"),
            Op::Jvp => format!("{{ let p = {x}; jvp({f}, p, p).1 }}"),
        }
    }
}

/// The halving chain (docs/references.md, [Delta]): n lets x_{i+1} = 0.5·(x_i + x_i) over an array's first
/// element (its gradient is exactly 1 there); loses sharing → exponential.
fn halving_chain(n: usize, op: Op) -> String {
    let mut src = String::from("fn f(x: [Real]) -> Real {\n    let x0 = x[0];\n");
    for i in 0..n {
        src.push_str(&format!("    let x{} = 0.5 * (x{i} + x{i});\n", i + 1));
    }
    src.push_str(&format!("    x{n}\n}}\n"));
    src.push_str(&format!(
        "fn main() -> Real {{ {} }}",
        op.apply("f", "[1.25, 2.0]")
    ));
    src
}

/// Sum of squares of n inputs: dense per-input gradients or a map per input → n².
fn wide_sum_of_squares(n: usize, op: Op) -> String {
    format!(
        "fn f(x: [Real]) -> Real {{ sum(map(|y| y * y, x)) }}\n\
         fn main() -> Real {{ {} }}",
        op.apply("f", &format!("build({n}, |i| to_real(i) * 0.001)"))
    )
}

/// A cons list of n reals built by recursion from the input array, then its sum of
/// squares by recursion: n nested calls each way.
fn cons_list(n: usize, op: Op) -> String {
    format!(
        "enum List {{ Nil, Cons(Real, List) }}\n\
         fn from(x: [Real], i: Int) -> List {{ if i == length(x) {{ Nil }} else {{ Cons(x[i], from(x, i + 1)) }} }}\n\
         fn ssq(l: List) -> Real {{ match l {{ Nil => 0.0, Cons(h, t) => h * h + ssq(t) }} }}\n\
         fn f(x: [Real]) -> Real {{ ssq(from(x, 0)) }}\n\
         fn main() -> Real {{ {} }}",
        op.apply("f", &format!("build({n}, |i| to_real(i) * 0.001)"))
    )
}

/// A fold with a closure over n inputs, and a closure capturing one shared value
/// applied n times (its delta must be swept once, not once per use).
fn fold_and_shared_capture(n: usize, op: Op) -> String {
    format!(
        "fn f(x: [Real]) -> Real {{\n\
             let y = exp(x[0]);\n\
             let k = |z: Real| z * 0.999 + y;\n\
             fold(|acc, v| acc * 0.999 + v * y, 0.0, x) + iterate({n}, k, x[1])\n\
         }}\n\
         fn main() -> Real {{ {} }}",
        op.apply("f", &format!("build({n}, |i| to_real(i) * 0.001)"))
    )
}

/// An array of n pairs as arrays (forward mode's grad over it is quadratic,
/// `gradient_scaling.rs`).
fn array_of_arrays(n: usize, op: Op) -> String {
    let f = "fn f(x: [Real]) -> Real { let m = build(length(x) / 2, |i| [x[2 * i], x[2 * i + 1]]); sum(map(|r| r[0] * r[1], m)) }";
    format!(
        "{f}\nfn main() -> Real {{ {} }}",
        op.apply("f", &format!("build({}, |i| to_real(i) * 0.001)", 2 * n))
    )
}

/// Two rows of length n read element by element: every row's cotangent receives n
/// terms, each added into it in place (a row made dense again per term is n²).
fn rows_by_columns(n: usize, op: Op) -> String {
    let f = "fn f(v: [Real]) -> Real {
                 let k = length(v) / 2;
                 let m = [slice(v, 0, k), slice(v, k, k)];
                 sumbuild(k, |j| m[0][j] * m[1][j])
             }";
    format!(
        "{f}\nfn main() -> Real {{ {} }}",
        op.apply("f", &format!("build({}, |i| to_real(i) * 0.001)", 2 * n))
    )
}

/// n reads of one array, in a build and by recursion: a dense one-hot cotangent per
/// read, or an eager sum of sparse ones, makes it n².
fn indexing(n: usize, op: Op) -> String {
    format!(
        "fn r(x: [Real], i: Int) -> Real {{ if i == length(x) {{ 0.0 }} else {{ x[i] * x[length(x) - 1 - i] + r(x, i + 1) }} }}\n\
         fn f(x: [Real]) -> Real {{ sumbuild(length(x), |i| x[i] * x[(i * 7) % length(x)]) + r(x, 0) }}\n\
         fn main() -> Real {{ {} }}",
        op.apply("f", &format!("build({n}, |i| to_real(i) * 0.001)"))
    )
}

type Program = fn(usize, Op) -> String;

/// Each program with its smaller size.
const PROGRAMS: &[(&str, Program, usize)] = &[
    ("halving chain", halving_chain, 4_000),
    ("wide sum of squares", wide_sum_of_squares, 100_000),
    ("cons list", cons_list, 20_000),
    ("fold and shared capture", fold_and_shared_capture, 40_000),
    ("array of arrays", array_of_arrays, 40_000),
    ("rows by columns", rows_by_columns, 20_000),
    ("indexing", indexing, 20_000),
];

fn check(name: &str, op: Op, mode: AdMode) {
    let &(_, program, n) = PROGRAMS
        .iter()
        .find(|(p, ..)| *p == name)
        .expect("a program of the table");
    assert_linear(name, |n| (program(n, op), None), n, mode.into());
}

/// Second order (issue 31): the gradient of a gradient penalty, `|∇f(w)|²`, and the
/// gradient with respect to a scale of a gradient that captures it; the penalty again
/// of a loss taken from an array at run time (the tape of tapes of a closure chosen at
/// run time, `%chad_of(f, 4)`). Under delta the
/// inner reverse pass inside the outer one is a tape of tapes (fluxion-ad's
/// `delta_twice.rs`), one pass each way; forward over the inner pass (its fallback)
/// was one inner gradient per input, quadratic. `n` is an argument, so that native
/// code is compiled once for both sizes.
const SECOND_ORDER: &[(&str, &str)] = &[
    (
        "gradient penalty",
        "fn f(w: [Real]) -> Real { sum(map(|t| sin(t) * t, w)) }
         fn penalty(w: [Real]) -> Real { let g = grad(f, w); dot(g, g) }
         fn main(n: Int) -> Real { sum(grad(penalty, build(n, |i| to_real(i) / to_real(n)))) }",
    ),
    (
        "grad of a grad capturing its scale",
        "fn main(n: Int) -> Real {
             let x0 = build(n, |i| to_real(i) / to_real(n));
             grad(|s: Real| sum(grad(|v: [Real]| s * sum(map(|t| t * t, v)), x0)), 1.0)
         }",
    ),
    (
        "gradient penalty of a loss chosen at run time",
        "fn penalty(f: fn([Real]) -> Real, w: [Real]) -> Real { let g = grad(f, w); dot(g, g) }
         fn main(n: Int) -> Real {
             let losses = [|w: [Real]| sum(map(|t| t * t * t, w)), |w: [Real]| sum(map(sin, w))];
             let w0 = build(n, |i| to_real(i) / to_real(n));
             sum(grad(|w: [Real]| penalty(losses[n % 2], w), w0))
         }",
    ),
    (
        "reverse over forward: grad of a jvp",
        "fn f(w: [Real]) -> Real { sum(map(|t| sin(t) * t, w)) }
         fn main(n: Int) -> Real {
             let w0 = build(n, |i| to_real(i) / to_real(n));
             let u = build(n, |i| 1.0);
             sum(grad(|w: [Real]| jvp(f, w, u).1, w0))
         }",
    ),
    (
        "reverse over forward: grad of a diff along a scale",
        "fn f(w: [Real]) -> Real { sum(map(|t| sin(t) * t, w)) }
         fn main(n: Int) -> Real {
             let w0 = build(n, |i| to_real(i) / to_real(n));
             sum(grad(|w: [Real]| diff(|s: Real| f(map(|t| t * s, w)), 1.0), w0))
         }",
    ),
];

fn check_second_order(mode: AdMode, backend: Backend) {
    for (name, src) in SECOND_ORDER {
        let options = RunOptions {
            mode,
            backend,
            ..RunOptions::default()
        };
        let program = |n: usize| (src.to_string(), Some(format!("[{n}]")));
        assert_linear(name, program, 20_000, options);
    }
}

#[test]
fn delta_second_order_is_linear_in_the_interpreter() {
    check_second_order(AdMode::Delta, Backend::Interp);
}

#[test]
fn delta_second_order_is_linear_natively() {
    check_second_order(AdMode::Delta, Backend::Native);
}

/// `--ad chad` computes these by the same tape of tapes (CHAD does not translate a
/// function that applies `grad` itself).
#[test]
fn chad_second_order_is_linear_in_the_interpreter() {
    check_second_order(AdMode::Chad, Backend::Interp);
}

#[test]
fn chad_second_order_is_linear_natively() {
    check_second_order(AdMode::Chad, Backend::Native);
}

#[test]
fn the_harness_sees_forward_mode_jvp_as_linear() {
    for (name, ..) in PROGRAMS {
        check(name, Op::Jvp, AdMode::Fwd);
    }
}

#[test]
fn delta_grad_of_the_halving_chain_is_linear() {
    check("halving chain", Op::Grad, AdMode::Delta);
}

#[test]
fn delta_grad_of_a_wide_sum_of_squares_is_linear() {
    check("wide sum of squares", Op::Grad, AdMode::Delta);
}

#[test]
fn delta_grad_over_a_cons_list_is_linear() {
    check("cons list", Op::Grad, AdMode::Delta);
}

#[test]
fn delta_grad_of_a_fold_and_a_shared_capture_is_linear() {
    check("fold and shared capture", Op::Grad, AdMode::Delta);
}

#[test]
fn delta_grad_over_an_array_of_arrays_is_linear() {
    check("array of arrays", Op::Grad, AdMode::Delta);
}

#[test]
fn delta_grad_of_indexing_is_linear() {
    check("indexing", Op::Grad, AdMode::Delta);
}

#[test]
fn chad_grad_of_the_halving_chain_is_linear() {
    check("halving chain", Op::Grad, AdMode::Chad);
}

#[test]
fn chad_grad_of_a_wide_sum_of_squares_is_linear() {
    check("wide sum of squares", Op::Grad, AdMode::Chad);
}

#[test]
fn chad_grad_over_a_cons_list_is_linear() {
    check("cons list", Op::Grad, AdMode::Chad);
}

#[test]
fn chad_grad_of_a_fold_and_a_shared_capture_is_linear() {
    check("fold and shared capture", Op::Grad, AdMode::Chad);
}

#[test]
fn chad_grad_over_an_array_of_arrays_is_linear() {
    check("array of arrays", Op::Grad, AdMode::Chad);
}

#[test]
fn chad_grad_of_rows_read_by_columns_is_linear() {
    check("rows by columns", Op::Grad, AdMode::Chad);
}

#[test]
fn chad_grad_of_indexing_is_linear() {
    check("indexing", Op::Grad, AdMode::Chad);
}
