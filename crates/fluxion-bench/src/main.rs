//! `cargo run --release -p fluxion-bench`: prints the tables of BENCHMARKS.md.
//!
//! Every figure is a ratio of two timings taken in the same run (median of several
//! repetitions each), never a lone absolute time.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Median wall time of `reps` runs of `f`.
fn median_time(reps: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[reps / 2]
}

/// Times `entry` of a Fluxion program (compiled once; each repetition evaluates).
fn time_fluxion(src: &str, entry: &str, reps: usize) -> Duration {
    let src = src.to_string();
    let entry = entry.to_string();
    fluxion_driver::with_big_stack(move || {
        median_time(reps, || {
            let program = fluxion_driver::compile("bench.flx", &src)
                .unwrap_or_else(|f| panic!("{}", f.render()));
            let out = program
                .run(&entry, None)
                .unwrap_or_else(|f| panic!("{}", f.render()));
            black_box(out.to_literal());
        })
    })
}

const MAP_SUM: &str =
    "fn main() -> Real { sum(map(|x| x * x + 1.0, build(1000000, |i| to_real(i) * 0.000001))) }";
const FOLD_CLOSURE: &str = "fn main() -> Real { let a = 0.5; fold(|acc, x| acc * a + x, 0.0, build(1000000, |i| to_real(i))) }";
const FIB: &str = "fn fib(n: Int) -> Int { if n < 2 { n } else { fib(n - 1) + fib(n - 2) } }\nfn main() -> Int { fib(25) }";

fn rust_map_sum() -> f64 {
    let xs: Vec<f64> = (0..1_000_000).map(|i| i as f64 * 0.000001).collect();
    xs.iter().map(|x| x * x + 1.0).sum()
}

fn rust_fold_closure() -> f64 {
    let a = black_box(0.5);
    let xs: Vec<f64> = (0..1_000_000).map(|i| i as f64).collect();
    xs.iter().fold(0.0, |acc, x| acc * a + x)
}

fn rust_fib(n: i64) -> i64 {
    if n < 2 {
        n
    } else {
        rust_fib(n - 1) + rust_fib(n - 2)
    }
}

fn main() {
    let reps = 5;
    println!("## Interpreter / native Rust (release), median of {reps}\n");
    println!("| program | interpreter / Rust |");
    println!("|---|---|");
    let cases: [(&str, &str, Box<dyn Fn()>); 3] = [
        (
            "map/sum over 10^6 reals",
            MAP_SUM,
            Box::new(|| {
                black_box(rust_map_sum());
            }),
        ),
        (
            "fold with a closure over 10^6",
            FOLD_CLOSURE,
            Box::new(|| {
                black_box(rust_fold_closure());
            }),
        ),
        (
            "recursive fib(25)",
            FIB,
            Box::new(|| {
                black_box(rust_fib(black_box(25)));
            }),
        ),
    ];
    for (name, src, native) in cases {
        let interp = time_fluxion(src, "main", reps);
        let rust = median_time(reps * 4, &*native);
        println!(
            "| {name} | {:.0}x |",
            interp.as_secs_f64() / rust.as_secs_f64()
        );
    }
}
