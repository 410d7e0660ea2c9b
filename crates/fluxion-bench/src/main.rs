//! `cargo run --release -p fluxion-bench`: prints the tables of BENCHMARKS.md.
//! `cargo run --release -p fluxion-bench -- TABLE` prints only that table (`native`,
//! `jvp`, `taylor`, `hessian`, `compile`; for quicker iteration — the published tables
//! come from one full run). `-- source functions|lets N` prints a generated program of
//! N lines or N `let`s (to compile it under a profiler).
//!
//! Every figure is a ratio of two timings taken in the same run (median of several
//! repetitions each), never a lone absolute time — except compile times, whose
//! targets are absolute; they are printed beside the ratios that show linearity.

use std::hint::black_box;
use std::time::{Duration, Instant};

use fluxion_bench::programs;

/// Counts memory as the `fluxion` binary does, so the timings include the budget's cost.
#[global_allocator]
static ALLOC: fluxion_driver::CountingAlloc = fluxion_driver::CountingAlloc;

/// Median wall time of `reps` runs of `f`.
fn median_time(reps: usize, mut f: impl FnMut()) -> Duration {
    median(
        (0..reps)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
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

/// One interpreter-vs-native case.
struct NativeCase {
    name: &'static str,
    src: &'static str,
    native: fn(),
}

/// One derivative-vs-primal case: `prog(s: Real) -> Real`.
struct AdCase {
    name: &'static str,
    src: &'static str,
}

const AD_MAP_SUM: &str = "fn prog(s: Real) -> Real { sum(map(|x| x * x + s * x, build(1000000, |i| to_real(i) * 0.000001))) }";
const AD_FOLD: &str = "fn prog(a: Real) -> Real { fold(|acc, x| acc * a + x, 0.0, build(1000000, |i| to_real(i) * 0.000001)) }";
const AD_RECURSIVE: &str = "fn r(x: Real, n: Int) -> Real { if n < 2 { x } else { sin(r(x, n - 1)) + 0.5 * r(x, n - 2) } }\nfn prog(x: Real) -> Real { r(x, 22) }";

const TAYLOR_PROG: &str = "fn prog(x: Real) -> Real { let v = build(100, |i| sin(x * to_real(i) * 0.01) * exp(x * 0.1)); sum(map(|y| y * y / (1.0 + y * y), v)) }";

/// `diff` nested `k` times around `prog`, at 1.1.
fn nested_diff(k: u32) -> String {
    let mut expr = format!("prog(a{k})");
    for i in (1..=k).rev() {
        let point = if i == 1 {
            "1.1".to_string()
        } else {
            format!("a{}", i - 1)
        };
        expr = format!("diff(|a{i}: Real| {expr}, {point})");
    }
    expr
}

const HESSIAN_PROG: &str = "fn f(x: [Real]) -> Real { sum(map2(|a, b| sin(a) * b + a * a * b, x, reverse(x))) + logsumexp(x) }
fn unit(n: Int, i: Int) -> [Real] { build(n, |j| if i == j { 1.0 } else { 0.0 }) }
fn hessian_by_taylor(x: [Real]) -> [[Real]] {
    let n = length(x);
    let d = build(n, |i| taylor(f, x, unit(n, i), 2).1[1]);
    build(n, |i| build(n, |j| if i == j { 2.0 * d[i] } else { taylor(f, x, vadd(unit(n, i), unit(n, j)), 2).1[1] - d[i] - d[j] }))
}
fn point() -> [Real] { build(8, |i| 0.1 * to_real(i) - 0.3) }";

const REPS: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let tables: [(&str, fn()); 5] = [
        ("native", native_table),
        ("jvp", jvp_table),
        ("taylor", taylor_table),
        ("hessian", hessian_table),
        ("compile", compile_table),
    ];
    match args[..] {
        [] => tables.iter().for_each(|(_, table)| table()),
        ["source", shape, size] => print_source(shape, size),
        [name] => match tables.iter().find(|(t, _)| *t == name) {
            Some((_, table)) => table(),
            None => usage(),
        },
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!("usage: fluxion-bench [native|jvp|taylor|hessian|compile | source functions|lets N]");
    std::process::exit(2);
}

/// Prints a generated program of the compile table.
fn print_source(shape: &str, size: &str) {
    let Ok(size) = size.parse() else { usage() };
    match shape {
        "functions" => print!("{}", programs::many_functions(size)),
        "lets" => print!("{}", programs::many_lets(size)),
        _ => usage(),
    }
}

/// Median time of `fluxion_driver::compile` on `src` (parse, then elaborate: names,
/// inference, lowering to Core; the verifier only in debug builds), after one warm-up
/// compile. At least `MIN_COMPILE_REPS` compiles, more for small programs, so that each
/// program is compiled for about `COMPILE_BUDGET` (a few milliseconds each are easily
/// disturbed). Freeing the program afterwards is not counted.
fn time_compile(src: &str) -> Duration {
    let src = src.to_string();
    fluxion_driver::with_big_stack(move || {
        let compile = || {
            let start = Instant::now();
            let program = fluxion_driver::compile("bench.flx", &src)
                .unwrap_or_else(|f| panic!("{}", f.render()));
            let elapsed = start.elapsed();
            drop(black_box(program));
            elapsed
        };
        let warm_up = compile();
        let reps = (COMPILE_BUDGET.as_secs_f64() / warm_up.as_secs_f64()) as usize;
        // An odd number, so that the median is one of the times.
        let reps = reps.max(MIN_COMPILE_REPS) | 1;
        median((0..reps).map(|_| compile()).collect())
    })
}

const MIN_COMPILE_REPS: usize = 5;
const COMPILE_BUDGET: Duration = Duration::from_millis(300);

/// Compile time of generated programs of growing size: time per line relative to the
/// smallest program of the same shape is 1.00 at every size when compiling is linear.
fn compile_table() {
    println!(
        "\n## Compile time (`fluxion_driver::compile`), median of at least {MIN_COMPILE_REPS}\n"
    );
    println!("| program | lines | compile | time per line / smallest's |");
    println!("|---|---|---|---|");
    compile_rows(&[1_000, 4_000, 16_000, 40_000], |lines| {
        (
            format!("many functions, {}k lines", lines / 1000),
            programs::many_functions(lines),
        )
    });
    compile_rows(&[2_500, 10_000, 40_000], |lets| {
        (
            format!("one function of {lets} `let`s"),
            programs::many_lets(lets),
        )
    });
}

/// Rows of the compile table for one shape of program, one per size; `generate`
/// gives a row's name and source.
fn compile_rows(sizes: &[usize], generate: impl Fn(usize) -> (String, String)) {
    let mut baseline = None;
    for &size in sizes {
        let (name, src) = generate(size);
        let lines = src.lines().count();
        let t = time_compile(&src);
        let per_line = t.as_secs_f64() / lines as f64;
        let base = *baseline.get_or_insert(per_line);
        println!(
            "| {name} | {lines} | {:.1} ms | {:.2} |",
            t.as_secs_f64() * 1e3,
            per_line / base
        );
    }
}

fn native_table() {
    let reps = REPS;
    println!("## Interpreter / native Rust (release), median of {reps}\n");
    println!("| program | interpreter / Rust |");
    println!("|---|---|");
    let cases = [
        NativeCase {
            name: "map/sum over 10^6 reals",
            src: MAP_SUM,
            native: || {
                black_box(rust_map_sum());
            },
        },
        NativeCase {
            name: "fold with a closure over 10^6",
            src: FOLD_CLOSURE,
            native: || {
                black_box(rust_fold_closure());
            },
        },
        NativeCase {
            name: "recursive fib(25)",
            src: FIB,
            native: || {
                black_box(rust_fib(black_box(25)));
            },
        },
    ];
    for case in cases {
        let interp = time_fluxion(case.src, "main", reps);
        let rust = median_time(reps * 4, case.native);
        println!(
            "| {} | {:.0}x |",
            case.name,
            interp.as_secs_f64() / rust.as_secs_f64()
        );
    }
}

fn jvp_table() {
    let reps = REPS;
    println!("\n## Forward mode: JVP / primal (interpreter, --ad fwd), median of {reps}\n");
    println!("| program | jvp / primal |");
    println!("|---|---|");
    let ad_cases = [
        AdCase {
            name: "map/sum over 10^6 reals",
            src: AD_MAP_SUM,
        },
        AdCase {
            name: "fold with a closure over 10^6",
            src: AD_FOLD,
        },
        AdCase {
            name: "recursive, 28657 calls",
            src: AD_RECURSIVE,
        },
    ];
    for case in ad_cases {
        let primal_src = format!("{}\nfn main() -> Real {{ prog(1.1) }}", case.src);
        let jvp_src = format!(
            "{}\nfn main() -> Real {{ jvp(prog, 1.1, 1.0).1 }}",
            case.src
        );
        let primal = time_fluxion(&primal_src, "main", reps);
        let jvp = time_fluxion(&jvp_src, "main", reps);
        println!(
            "| {} | {:.2} |",
            case.name,
            jvp.as_secs_f64() / primal.as_secs_f64()
        );
    }
}

fn taylor_table() {
    let reps = REPS;
    println!(
        "\n## Taylor mode: cost of order k / primal, against nested forward mode of the same order\n"
    );
    println!("| k | taylor / primal | nested diff / primal |");
    println!("|---|---|---|");
    let primal_src = format!("{TAYLOR_PROG}\nfn main() -> Real {{ prog(1.1) }}");
    let primal = time_fluxion(&primal_src, "main", reps);
    for k in [1u32, 2, 4, 8, 16] {
        let taylor_src = format!(
            "{TAYLOR_PROG}\nfn main() -> Real {{ taylor(prog, 1.1, 1.0, {k}).1[{}] }}",
            k - 1
        );
        let taylor = time_fluxion(&taylor_src, "main", reps);
        let nested = if k <= 8 {
            let nested_src = format!("{TAYLOR_PROG}\nfn main() -> Real {{ {} }}", nested_diff(k));
            let t = time_fluxion(&nested_src, "main", 3);
            format!("{:.1}", t.as_secs_f64() / primal.as_secs_f64())
        } else {
            "— (too slow: 2^16 passes)".to_string()
        };
        println!(
            "| {k} | {:.1} | {nested} |",
            taylor.as_secs_f64() / primal.as_secs_f64()
        );
    }
}

fn hessian_table() {
    let reps = REPS;
    println!("\n## Hessian of an 8-input function: forward over forward / Taylor polarisation\n");
    let fof = time_fluxion(
        &format!("{HESSIAN_PROG}\nfn main() -> [[Real]] {{ hessian(f, point()) }}"),
        "main",
        reps,
    );
    let tay = time_fluxion(
        &format!("{HESSIAN_PROG}\nfn main() -> [[Real]] {{ hessian_by_taylor(point()) }}"),
        "main",
        reps,
    );
    println!("| method | time / forward-over-forward |");
    println!("|---|---|");
    println!("| forward over forward (`hessian`) | 1.00 |");
    println!(
        "| Taylor order 2, polarisation | {:.2} |",
        tay.as_secs_f64() / fof.as_secs_f64()
    );
}
