//! The cost of `grad` in forward mode is inherent (inputs × primal): quadratic in the
//! number of reals for these linear-time functions, never cubic. A basis vector once
//! recomputed the dimension of a list's tail at every level, or an array's element
//! offsets for every element, which made a gradient over a cons list of n reals grow
//! like n³ (issue 14: 0.15 s at 100, 6.3 s at 400).
//!
//! Each program is run at two sizes 4x apart: quadratic growth is 16x, cubic 64x; the
//! assertion allows 32x (fixed costs make the measured growth smaller, not larger).

use std::time::Duration;

use fluxion_bench::clock::time_on_this_thread;
use fluxion_driver::{compile, with_big_stack};

const MAX_GROWTH: f64 = 32.0;
const ATTEMPTS: usize = 3;
const SMALL_RUNS: u32 = 6;

fn run_time(src: &str) -> Duration {
    let src = src.to_string();
    with_big_stack(move || {
        let program = compile("t.flx", &src).unwrap_or_else(|f| panic!("{}", f.render()));
        let (out, elapsed) = time_on_this_thread(|| program.run("main", None));
        out.unwrap_or_else(|f| panic!("{}", f.render()));
        elapsed
    })
}

fn assert_at_most_quadratic(name: &str, program: impl Fn(usize) -> String, n: usize) {
    let (small, large) = (program(n), program(4 * n));
    let mut growth = f64::INFINITY;
    for _ in 0..ATTEMPTS {
        // Several small runs, so that both measurements are long beside the clock's
        // resolution (a scheduler tick).
        let t_small = (0..SMALL_RUNS).map(|_| run_time(&small)).sum::<Duration>() / SMALL_RUNS;
        let t_large = run_time(&large);
        growth = growth.min(t_large.as_secs_f64() / t_small.as_secs_f64());
        eprintln!(
            "{name}: {t_small:?} at {n}, {t_large:?} at {}: {growth:.1}x",
            4 * n
        );
        if growth <= MAX_GROWTH {
            return;
        }
    }
    panic!(
        "{name}: 4x the inputs took {growth:.1}x as long; forward-mode grad should be quadratic"
    );
}

#[test]
fn grad_over_a_cons_list_is_quadratic() {
    assert_at_most_quadratic(
        "cons list",
        |n| {
            format!(
                "enum L {{ Nil, Cons(Real, L) }}\n\
                 fn mk(n: Int) -> L {{ if n == 0 {{ Nil }} else {{ Cons(to_real(n) * 0.01, mk(n - 1)) }} }}\n\
                 fn total(l: L) -> Real {{ match l {{ Nil => 0.0, Cons(h, t) => h * h + total(t) }} }}\n\
                 fn first(l: L) -> Real {{ match l {{ Nil => 0.0, Cons(h, t) => h }} }}\n\
                 fn main() -> Real {{ first(grad(total, mk({n}))) }}"
            )
        },
        100,
    );
}

#[test]
fn grad_over_an_array_of_arrays_is_quadratic() {
    assert_at_most_quadratic(
        "array of arrays",
        |n| {
            format!(
                "fn f(m: [[Real]]) -> Real {{ sum(map(|r| r[0] * r[1], m)) }}\n\
                 fn main() -> Real {{ grad(f, build({n}, |i| [to_real(i) * 0.01, 1.0]))[1][0] }}"
            )
        },
        100,
    );
}
