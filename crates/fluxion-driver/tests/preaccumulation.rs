//! Preaccumulation (fluxion-opt's `preaccumulate.rs`): under `--ad delta`, a sum whose
//! element runs a loop is `%delta_sumbuild`, each element's tape swept and dropped as
//! it is made. Checked by what it computes — gradients against oracles derived by hand
//! (below) and computed here in plain `f64`, against the other modes, and bit for bit
//! between the back ends, which run the same code — by the code it makes (a snapshot),
//! and by the memory it holds: a gradient whose whole tape would pass the budget fits
//! in it, and does not with the optimiser off (the pass not run).

use fluxion_driver::gradcheck::eval_literal;
use fluxion_driver::{
    AdMode, Backend, CountingAlloc, OptLevel, RunOptions, compile, with_big_stack,
};

// The interpreter's budget counts what this allocator counts (as in the binary).
#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// f(x) = Σ_{i<n} log Σ_{j<m} exp(x_j·c_ij), c_ij = sin(i + 2j): a log-sum-exp per
/// point, as GMM's likelihood. ∂f/∂x_j = Σ_i c_ij·exp(x_j·c_ij) / Σ_l exp(x_l·c_il).
/// `g` nests such sums: g(x) = Σ_{i<n} Σ_{k<3} s_ik², s_ik = Σ_j x_j·c_ij·(k + 1), so
/// ∂g/∂x_j = Σ_i Σ_k 2·s_ik·c_ij·(k + 1). `h`'s element runs a loop of sines but its result is
/// an input's own pair (no entry of its own): h(x) = Σ_{i<n} x_{i mod m}, so
/// ∂h/∂x_j = #{i < n : i mod m = j}.
const SUMS: &str = "
fn c(i: Int, j: Int) -> Real { sin(to_real(i) + 2.0 * to_real(j)) }
fn f(x: [Real], n: Int) -> Real {
    sumbuild(n, |i| log(sumbuild(length(x), |j| exp(x[j] * c(i, j)))))
}
fn g(x: [Real], n: Int) -> Real {
    sumbuild(n, |i| sumbuild(3, |k| {
        let s = sumbuild(length(x), |j| x[j] * c(i, j) * to_real(k + 1));
        s * s
    }))
}
fn h(x: [Real], n: Int) -> Real {
    sumbuild(n, |i| {
        let m = length(x);
        let w = sumbuild(m, |j| sin(to_real(j)));
        if w >= 0.0 { x[i % m] } else { 0.0 }
    })
}";

const X: [f64; 3] = [0.3, -0.8, 1.1];
const N: usize = 7;

fn c(i: usize, j: usize) -> f64 {
    (i as f64 + 2.0 * j as f64).sin()
}

fn f_grad() -> Vec<f64> {
    let mut g = vec![0.0; X.len()];
    for i in 0..N {
        let total: f64 = (0..X.len()).map(|l| (X[l] * c(i, l)).exp()).sum();
        for (j, gj) in g.iter_mut().enumerate() {
            *gj += c(i, j) * (X[j] * c(i, j)).exp() / total;
        }
    }
    g
}

fn g_grad() -> Vec<f64> {
    let mut g = vec![0.0; X.len()];
    for i in 0..N {
        for k in 0..3 {
            let w = (k + 1) as f64;
            let s: f64 = (0..X.len()).map(|j| X[j] * c(i, j) * w).sum();
            for (j, gj) in g.iter_mut().enumerate() {
                *gj += 2.0 * s * c(i, j) * w;
            }
        }
    }
    g
}

fn h_grad() -> Vec<f64> {
    (0..X.len())
        .map(|j| (0..N).filter(|i| i % X.len() == j).count() as f64)
        .collect()
}

/// Every real printed, in order (arrays and tuples flattened).
fn numbers(printed: &str) -> Vec<f64> {
    printed
        .replace(['[', ']', '(', ')'], "")
        .split(", ")
        .map(|x| {
            x.parse()
                .unwrap_or_else(|_| panic!("a real: {x} in {printed}"))
        })
        .collect()
}

fn grad_of(function: &str, mode: AdMode, backend: Backend) -> String {
    let options = RunOptions {
        mode,
        backend,
        ..RunOptions::default()
    };
    let expr = format!("grad(|x| {function}(x, {N}), {X:?})");
    eval_literal(SUMS, &expr, options).unwrap_or_else(|e| panic!("{mode:?}, {backend:?}: {e}"))
}

#[test]
fn preaccumulated_sums_give_the_gradient_in_every_mode_on_both_back_ends() {
    for (function, oracle) in [("f", f_grad()), ("g", g_grad()), ("h", h_grad())] {
        let delta = grad_of(function, AdMode::Delta, Backend::Interp);
        // The same code on both back ends: the same bits.
        assert_eq!(
            delta,
            grad_of(function, AdMode::Delta, Backend::Native),
            "{function}"
        );
        for mode in [AdMode::Delta, AdMode::Chad, AdMode::Fwd] {
            let got = numbers(&grad_of(function, mode, Backend::Interp));
            for (g, o) in got.iter().zip(&oracle) {
                // Sums of a few dozen terms of size ≤ 10: a few ulps each.
                assert!(
                    (g - o).abs() <= 1e-12 * (1.0 + o.abs()),
                    "{function} {mode:?}: {got:?} against {oracle:?}"
                );
            }
            assert_eq!(got.len(), oracle.len());
        }
    }
}

fn eval(expr: &str, mode: AdMode, backend: Backend) -> Result<String, String> {
    let options = RunOptions {
        mode,
        backend,
        ..RunOptions::default()
    };
    eval_literal(SUMS, expr, options)
}

/// Second order through a preaccumulated gradient (forward over it, reverse over it):
/// every mode and back end agree with forward over forward, to rounding.
#[test]
fn second_order_through_preaccumulated_sums_agrees_with_forward_mode() {
    for expr in [
        format!("hessian(|x| f(x, {N}), {X:?})"),
        format!("jvp(|x| grad(|y| g(y, {N}), x), {X:?}, [1.0, -0.5, 0.25])"),
        format!("vjp(|x| grad(|y| f(y, {N}), x), {X:?}).1([1.0, -0.5, 0.25])"),
    ] {
        let reference = numbers(&eval(&expr, AdMode::Fwd, Backend::Interp).expect("fwd"));
        for mode in [AdMode::Delta, AdMode::Chad] {
            for backend in [Backend::Interp, Backend::Native] {
                let got = eval(&expr, mode, backend)
                    .unwrap_or_else(|e| panic!("{mode:?} {backend:?}: {e}"));
                let got = numbers(&got);
                assert_eq!(got.len(), reference.len(), "{expr}");
                for (g, r) in got.iter().zip(&reference) {
                    assert!(
                        (g - r).abs() <= 1e-10 * (1.0 + r.abs()),
                        "{expr} {mode:?} {backend:?}: {got:?} against {reference:?}"
                    );
                }
            }
        }
    }
}

/// A fault inside an element is reported where it happens, on both back ends, and
/// the next run is not disturbed by the sum it left unfinished.
#[test]
fn a_fault_inside_an_element_is_reported_at_its_place() {
    let expr = format!("grad(|x| f(x, 7) + sumbuild(3, |i| sumbuild(2, |j| x[i + 2 * j])), {X:?})");
    for backend in [Backend::Interp, Backend::Native] {
        let err = eval(&expr, AdMode::Delta, backend).expect_err("out of range");
        assert!(
            err.contains("index 3 out of range for an array of length 3"),
            "{backend:?}: {err}"
        );
        let ok = eval(
            &format!("grad(|x| f(x, {N}), {X:?})"),
            AdMode::Delta,
            backend,
        )
        .expect("runs");
        assert_eq!(numbers(&ok).len(), 3);
    }
}

#[test]
fn a_sum_of_elements_that_loop_is_preaccumulated() {
    let program = compile("sums.flx", SUMS).unwrap_or_else(|f| panic!("{}", f.render()));
    let shown = program
        .show_optimized("delta", Some("f"), AdMode::Delta, OptLevel::On)
        .expect("shown");
    insta::assert_snapshot!("preaccumulated_log_sum_exp", shown);
}

/// ∂/∂x_j of F(x) = Σ_{i<n} Σ_{j<m} sin(x_j·w_i), w_i = 1 + i/n: Σ_i w_i·cos(x_j·w_i).
/// n·m = 10⁶ sines (no loop node: `sin` is not cheap arithmetic), each an entry on
/// the tape where the sum is not preaccumulated — tens of MB — over m = 10³ inputs.
const WIDE: &str = "
fn wide(x: [Real]) -> Real {
    let n = 1000;
    sumbuild(n, |i| {
        let w = 1.0 + to_real(i) / to_real(n);
        sumbuild(length(x), |j| sin(x[j] * w))
    })
}
fn main() -> [Real] {
    grad(wide, build(1000, |j| to_real(j) / 1000.0))
}";

fn run_wide(backend: Backend, opt: OptLevel) -> Result<String, String> {
    let options = RunOptions {
        mode: AdMode::Delta,
        backend,
        opt,
        memory_limit: Some(16 << 20),
        ..RunOptions::default()
    };
    with_big_stack(move || {
        let program = compile("wide.flx", WIDE).unwrap_or_else(|f| panic!("{}", f.render()));
        program
            .run_with_options("main", None, options)
            .map(|v| v.to_literal())
            .map_err(|f| f.render())
    })
}

#[test]
fn a_preaccumulated_gradient_holds_one_element_of_tape() {
    for backend in [Backend::Interp, Backend::Native] {
        let got = numbers(&run_wide(backend, OptLevel::On).unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(got.len(), 1000);
        for (j, g) in got.iter().enumerate() {
            let x = j as f64 / 1000.0;
            let o: f64 = (0..1000)
                .map(|i| {
                    let w = 1.0 + i as f64 / 1000.0;
                    w * (x * w).cos()
                })
                .sum();
            // A sum of 10³ terms of size ≤ 2: rounding ≤ 10³ ulps of 2·10³.
            assert!((g - o).abs() <= 1e-9, "{backend:?} at {j}: {g} against {o}");
        }
        // Without the pass, the whole tape is held until the sweep.
        let err = run_wide(backend, OptLevel::Off).expect_err("over the budget");
        assert!(
            err.contains("memory budget of 16 MiB exceeded"),
            "{backend:?}: {err}"
        );
    }
}
