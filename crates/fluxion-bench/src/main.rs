//! `cargo run --release -p fluxion-bench`: prints the tables of BENCHMARKS.md.
//! `cargo run --release -p fluxion-bench -- TABLE` prints only that table (`native`,
//! `jvp`, `taylor`, `hessian`, `compile`, `delta`, `gmm`; for quicker iteration — the
//! published tables come from one full run). `-- source functions|lets N` prints a
//! generated program of N lines or N `let`s (to compile it under a profiler);
//! `-- source straight|fold|indexing|closures N` the `delta` table's program of that
//! family for inputs of length N (its entries `primal` and `gradient` take `[Real]`).
//!
//! `delta` and `gmm` take `--ad MODE` (default `delta`: the reverse mode they
//! measure) and `delta` takes `--max-n N` (default 10^6, or 10^3 with `--ad fwd`,
//! whose gradient is n passes).
//!
//! Every figure is a ratio of two timings taken in the same run (median of several
//! repetitions each), never a lone absolute time — except compile times, whose
//! targets are absolute; they are printed beside the ratios that show linearity. The
//! reverse-mode tables print the absolute times beside their ratios too, and peak
//! memory.

use std::hint::black_box;
use std::time::{Duration, Instant};

use fluxion_bench::gmm::Gmm;
use fluxion_bench::harness::{self, Bench, Measurement};
use fluxion_bench::programs::{self, Family};
use fluxion_driver::AdMode;

/// Counts memory as the `fluxion` binary does (`CountingAlloc`), so the timings
/// include the budget's cost, and keeps each thread's peak for the reverse-mode tables.
#[global_allocator]
static ALLOC: fluxion_bench::peak::PeakAlloc = fluxion_bench::peak::PeakAlloc;

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
    time_fluxion_with(src, entry, reps, fluxion_driver::RunOptions::default())
}

/// [`time_fluxion`] with the given AD modes.
fn time_fluxion_with(
    src: &str,
    entry: &str,
    reps: usize,
    options: fluxion_driver::RunOptions,
) -> Duration {
    let src = src.to_string();
    let entry = entry.to_string();
    fluxion_driver::with_big_stack(move || {
        median_time(reps, || {
            let program = fluxion_driver::compile("bench.flx", &src)
                .unwrap_or_else(|f| panic!("{}", f.render()));
            let out = program
                .run_with_options(&entry, None, options)
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
    let tables: [(&str, fn()); 9] = [
        ("native", native_table),
        ("backend", backend_table),
        ("jvp", jvp_table),
        ("opt", opt_table),
        ("taylor", taylor_table),
        ("hessian", hessian_table),
        ("jet", jet_table),
        ("sparse", sparse_table),
        ("compile", compile_table),
    ];
    match args[..] {
        [] => {
            tables.iter().for_each(|(_, table)| table());
            let options = ReverseOptions::parse(&[]);
            delta_table(&options);
            gmm_table(&options);
        }
        ["source", shape, size] => print_source(shape, size),
        ["delta", ref options @ ..] => delta_table(&ReverseOptions::parse(options)),
        ["gmm", ref options @ ..] => gmm_table(&ReverseOptions::parse(options)),
        [name] => match tables.iter().find(|(t, _)| *t == name) {
            Some((_, table)) => table(),
            None => usage(),
        },
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: fluxion-bench [native|backend|jvp|taylor|hessian|jet|sparse|compile | delta [--ad MODE] [--max-n N] \
         | gmm [--ad MODE] | source functions|lets|straight|fold|indexing|closures N]"
    );
    std::process::exit(2);
}

/// Prints a generated program of the compile table, or the `delta` table's program
/// of a family for inputs of length N.
fn print_source(shape: &str, size: &str) {
    let Ok(size) = size.parse() else { usage() };
    match shape {
        "functions" => print!("{}", programs::many_functions(size)),
        "lets" => print!("{}", programs::many_lets(size)),
        _ => match Family::ALL.iter().find(|f| f.short_name() == shape) {
            Some(family) => print!("{}", family.source(size)),
            None => usage(),
        },
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

/// `--backend native` against hand-written Rust (and the interpreter beside it) on the
/// baseline programs, and the GMM objective and its gradient (`--ad chad`, compiled
/// ahead of time) at GradBench sizes against the plain Rust objective.
fn backend_table() {
    use fluxion_bench::native::{NativeEntry, measure_rust};
    let min = Duration::from_millis(50);
    println!("\n## Native backend / hand-written Rust (release), median of {REPS} batches\n");
    println!("| program | native / Rust | interpreter / Rust | C compile |");
    println!("|---|---|---|---|");
    let cases: [(&str, &str, fn()); 3] = [
        ("map/sum over 10^6 reals", MAP_SUM, || {
            black_box(rust_map_sum());
        }),
        ("fold with a closure over 10^6", FOLD_CLOSURE, || {
            black_box(rust_fold_closure());
        }),
        ("recursive fib(25)", FIB, || {
            black_box(rust_fib(black_box(25)));
        }),
    ];
    for (name, src, rust) in cases {
        let rust_t = measure_rust(REPS, min, rust);
        let interp = time_fluxion(src, "main", REPS);
        let result = fluxion_driver::with_big_stack(move || {
            let e = NativeEntry::new(src, "main", AdMode::Chad)?;
            Ok::<_, String>((e.measure(&[], REPS, min)?, e.c_compile))
        });
        match result {
            Ok((native, cc)) => println!(
                "| {name} | {:.2}x | {:.0}x | {} |",
                native.as_secs_f64() / rust_t.as_secs_f64(),
                interp.as_secs_f64() / rust_t.as_secs_f64(),
                fmt_time(cc)
            ),
            Err(e) => println!("| {name} | failed: {e} | | |"),
        }
    }
    println!(
        "\n### GMM (k = 25, n = 1000): native primal / plain Rust objective, native gradient (`--ad chad`, `--ad delta`) / native primal\n"
    );
    println!(
        "| d | primal / Rust | gradient / primal, chad | gradient / primal, delta | C compile (primal, chad, delta) |"
    );
    println!("|---|---|---|---|---|");
    for d in [10, 20] {
        let g = Gmm::generate(d, 25, 1000, GMM_SEED);
        let rust_t = measure_rust(REPS, min, || {
            black_box(g.objective());
        });
        let expected = g.objective();
        let g2 = g.clone();
        let result = fluxion_driver::with_big_stack(move || {
            let args = g2.args();
            let primal = NativeEntry::new(programs::GMM, "primal", AdMode::Chad)?;
            let gradient = NativeEntry::new(programs::GMM, "gradient", AdMode::Chad)?;
            let delta = NativeEntry::new(programs::GMM, "gradient", AdMode::Delta)?;
            // The two modes' gradients agree (reals printed with `{:?}`, to 1e-9).
            let reals = |v: &fluxion_driver::interp::Value| {
                fluxion_driver::gradcheck::parse_reals(&format!("{v:?}").replace("Real", ""))
            };
            let (c, dl) = (reals(&gradient.call(&args)?), reals(&delta.call(&args)?));
            let agree = c.len() == dl.len()
                && c.iter()
                    .zip(&dl)
                    .all(|(a, b)| (a - b).abs() <= 1e-9 * a.abs().max(1.0));
            if !agree || c.is_empty() {
                return Err("the chad and delta gradients differ".into());
            }
            let value = match primal.call(&args)? {
                fluxion_driver::interp::Value::Real(v) => v,
                other => return Err(format!("primal returned {other:?}")),
            };
            if (value - expected).abs() > 1e-10 * expected.abs().max(1.0) {
                return Err(format!("native objective {value} vs Rust {expected}"));
            }
            let p = primal.measure(&args, REPS, min)?;
            let gr = gradient.measure(&args, REPS, min)?;
            let gd = delta.measure(&args, REPS, min)?;
            Ok((
                p,
                gr,
                gd,
                [primal.c_compile, gradient.c_compile, delta.c_compile],
            ))
        });
        match result {
            Ok((p, gr, gd, cc)) => println!(
                "| {d} | {:.2}x | {:.2} | {:.2} | {} |",
                p.as_secs_f64() / rust_t.as_secs_f64(),
                gr.as_secs_f64() / p.as_secs_f64(),
                gd.as_secs_f64() / p.as_secs_f64(),
                cc.map(fmt_time).join(", ")
            ),
            Err(e) => println!("| {d} | failed: {e} | | | |"),
        }
    }
}

fn jvp_table() {
    let reps = REPS;
    println!(
        "\n## Forward mode: JVP / primal (interpreter), dual numbers and forward CHAD, median of {reps}\n"
    );
    println!("| program | jvp / primal, `--fwd dual` | jvp / primal, `--fwd chad` |");
    println!("|---|---|---|");
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
        let chad = fluxion_driver::RunOptions {
            fwd: fluxion_driver::FwdMode::Chad,
            ..Default::default()
        };
        let jvp_chad = time_fluxion_with(&jvp_src, "main", reps, chad);
        println!(
            "| {} | {:.2} | {:.2} |",
            case.name,
            jvp.as_secs_f64() / primal.as_secs_f64(),
            jvp_chad.as_secs_f64() / primal.as_secs_f64()
        );
    }
}

/// Per AD mode, with the optimiser off and on: the module's live size after the
/// derivative ran (derived codes included), JVP / primal and gradient / primal time,
/// and the optimiser's speed-up of the primal and of the gradient.
fn opt_table() {
    println!("\n## Optimiser: derivative code size and time, `--opt 0` against `--opt 1`\n");
    println!(
        "Interpreter; thread CPU time, medians. Size: bindings of the module's live codes \
         once the derivative has run (the codes derived at run time included).\n"
    );
    println!(
        "| program | `--ad` | size, opt 0 | size, opt 1 | jvp / primal, opt 0 | opt 1 | gradient / primal, opt 0 | opt 1 | primal time, opt 1 / opt 0 | gradient time, opt 1 / opt 0 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let cases = [
        ("map/sum over 10^6 reals", AD_MAP_SUM),
        ("fold with a closure over 10^6", AD_FOLD),
        ("recursive, 28657 calls", AD_RECURSIVE),
    ];
    for (name, src) in cases {
        let src = format!(
            "{src}\nfn primal() -> Real {{ prog(1.1) }}\nfn tangent() -> Real {{ jvp(prog, 1.1, 1.0).1 }}\nfn gradient() -> Real {{ grad(prog, 1.1) }}"
        );
        for mode in [AdMode::Chad, AdMode::Delta] {
            match opt_row(&src, mode, Vec::new) {
                Ok(row) => println!("| {name} | {} | {row}", mode.name()),
                Err(e) => println!("| {name} | {} | failed: {e} |", mode.name()),
            }
        }
    }
    let (d, k, n) = GMM_SIZE;
    for mode in [AdMode::Chad, AdMode::Delta] {
        let gmm_args = || Gmm::generate(GMM_SIZE.0, GMM_SIZE.1, GMM_SIZE.2, GMM_SEED).args();
        match opt_row(programs::GMM, mode, gmm_args) {
            Ok(row) => println!("| GMM d={d} k={k} n={n} | {} | {row}", mode.name()),
            Err(e) => println!("| GMM | {} | failed: {e} |", mode.name()),
        }
    }
}

/// One row of the optimiser table (after the program and mode columns).
fn opt_row(
    src: &str,
    mode: AdMode,
    make_args: fn() -> Vec<fluxion_driver::interp::Value>,
) -> Result<String, String> {
    let src = src.to_string();
    fluxion_driver::with_big_stack(move || {
        let args = make_args();
        let mut cells = Vec::new();
        let mut sizes = Vec::new();
        let mut times = Vec::new();
        for opt in [fluxion_driver::OptLevel::Off, fluxion_driver::OptLevel::On] {
            let bench = Bench::with_opt(&src, mode, opt)?;
            let primal = bench.measure("primal", &args, 5, MIN_SAMPLE)?;
            let jvp = if args.is_empty() {
                Some(bench.measure("tangent", &args, 5, MIN_SAMPLE)?)
            } else {
                None
            };
            let gradient = bench.measure("gradient", &args, 5, MIN_SAMPLE)?;
            sizes.push(bench.code_size());
            times.push((primal.time, gradient.time));
            cells.push((
                jvp.map(|j| ratio(j.time, primal.time)),
                ratio(gradient.time, primal.time),
            ));
        }
        let jvp = |c: &(Option<f64>, f64)| c.0.map_or("—".to_string(), |r| format!("{r:.2}"));
        Ok(format!(
            "{} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} |",
            sizes[0],
            sizes[1],
            jvp(&cells[0]),
            jvp(&cells[1]),
            cells[0].1,
            cells[1].1,
            ratio(times[1].0, times[0].0),
            ratio(times[1].1, times[0].1),
        ))
    })
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

/// A function of 4 inputs for the `jet` table: 100 elements, each a few primitives.
const JET_PROG: &str = "fn g(v: [Real]) -> Real { sum(map(|y| sin(y) * exp(0.1 * y) / (1.0 + y * y), build(100, |i| v[i % 4] * to_real(i) * 0.01 + v[(i + 1) % 4]))) }
fn unit(i: Int) -> [Real] { build(4, |j| if i == j { 1.0 } else { 0.0 }) }
fn point(s: Real) -> [Real] { [0.3 + 0.001 * s, -0.2, 0.5, 0.1] }";

/// One mixed partial of order `r` by `r` nested `jvp`s at `at`, the directions
/// cycling through the first `k` units.
fn nested_jvp(r: u32, k: u32, at: &str) -> String {
    let mut expr = format!("g(y{r})");
    for i in (1..=r).rev() {
        let point = if i == 1 {
            at.to_string()
        } else {
            format!("y{}", i - 1)
        };
        expr = format!(
            "jvp(|y{i}: [Real]| {expr}, {point}, unit({})).1",
            (i - 1) % k
        );
    }
    expr
}

/// Seconds per evaluation of `expr` (a real, of the point `point(s)`), without
/// compiling and preparing the program: the median time of a run evaluating it at
/// 11 points less that of a run evaluating it at 1, over 10.
fn seconds_per_eval(expr: impl Fn(&str) -> String) -> f64 {
    let run = |m: usize| {
        let body = expr("point(to_real(s))");
        let src = format!("{JET_PROG}\nfn main() -> Real {{ sumbuild({m}, |s| {body}) }}");
        time_fluxion(&src, "main", REPS).as_secs_f64()
    };
    ((run(11) - run(1)) / 10.0).max(f64::MIN_POSITIVE)
}

/// `jet` (every partial of order ≤ r along k directions, in one pass) against nested
/// forward mode (one `jvp` per order of each partial) and, at r = 2, Taylor
/// polarisation (the k directions' second-order block from k(k+1)/2 passes of order
/// 2). Run times only (the interpreter), per evaluation of the primal.
fn jet_table() {
    println!(
        "\n## `jet`: every mixed partial of order ≤ r along k directions, against nested forward mode\n"
    );
    println!(
        "| r | k | partials (C − 1) | jet / primal | every partial by nested `jvp` / primal | one order-r partial by nested `jvp` / primal | r = 2: polarisation by `taylor` / primal |"
    );
    println!("|---|---|---|---|---|---|---|");
    let primal = seconds_per_eval(|p| format!("g({p})"));
    // One partial of each order d by d nested `jvp`s (its cost does not depend on k).
    let nested: Vec<f64> = (1..=6)
        .map(|d| seconds_per_eval(|p| nested_jvp(d, 2, p)) / primal)
        .collect();
    for r in 2u32..=6 {
        for k in 1u32..=4 {
            let shape = fluxion_core::Jet { dirs: k, order: r };
            let c = shape.coefficients();
            let units: Vec<String> = (0..k).map(|i| format!("unit({i})")).collect();
            let jet = seconds_per_eval(|p| {
                format!("jet(g, {p}, [{}], {r}).1[{}]", units.join(", "), c - 2)
            }) / primal;
            // binom(d + k − 1, k − 1) partials of order d.
            let of_order = |d: u32| {
                fluxion_core::Jet {
                    dirs: k - 1,
                    order: d,
                }
                .coefficients()
            };
            let every: f64 = (1..=r)
                .map(|d| {
                    let count = if k == 1 { 1 } else { of_order(d) };
                    count as f64 * nested[d as usize - 1]
                })
                .sum();
            let polarisation = if r == 2 {
                let pairs: Vec<(u32, u32)> =
                    (0..k).flat_map(|i| (i..k).map(move |j| (i, j))).collect();
                let t = seconds_per_eval(|p| {
                    let terms: Vec<String> = pairs
                        .iter()
                        .map(|(i, j)| format!("taylor(g, {p}, vadd(unit({i}), unit({j})), 2).1[1]"))
                        .collect();
                    terms.join(" + ")
                });
                format!("{:.1}", t / primal)
            } else {
                "—".to_string()
            };
            println!(
                "| {r} | {k} | {} | {jet:.1} | {every:.1} | {:.1} | {polarisation} |",
                c - 1,
                nested[r as usize - 1],
            );
        }
    }
}

/// A banded and a block-sparse function of n inputs for the `sparse` table.
const SPARSE_PROGS: [(&str, &str); 2] = [
    (
        "banded (tridiagonal)",
        "fn f(x: [Real]) -> [Real] { let n = length(x); build(n, |i| x[i] * x[i] * (if i > 0 { x[i - 1] } else { 1.0 }) + sin(if i + 1 < n { x[i + 1] } else { 0.0 })) }",
    ),
    (
        "block-sparse (blocks of 4)",
        "fn f(x: [Real]) -> [Real] { build(length(x), |i| { let s = i - i % 4; x[i] * (x[s] * x[s] + x[s + 1] * x[s + 1] + x[s + 2] * x[s + 2] + x[s + 3] * x[s + 3]) }) }",
    ),
];

/// `sparse_jacobian` against the dense `jacobian` (`--ad delta`: one reverse pass per
/// output) as n grows, per evaluation of the function (interpreter; compiling and
/// building the input, a run of its own, subtracted).
fn sparse_table() {
    println!("\n## `sparse_jacobian` against `jacobian` as n grows\n");
    println!("| function | n | jacobian / primal | sparse_jacobian / primal | sparsity / primal |");
    println!("|---|---|---|---|---|");
    for (name, prog) in SPARSE_PROGS {
        for n in [200usize, 800, 1600] {
            let x = format!("build({n}, |i| 0.5 + 0.001 * to_real(i))");
            let time = |expr: &str| {
                let src = format!("{prog}\nfn main() -> Int {{ let x = {x}; length({expr}) }}");
                time_fluxion(&src, "main", REPS).as_secs_f64()
            };
            // Less compiling and building x (a run returning x's length).
            let base = time("x");
            let time = |expr: &str| (time(expr) - base).max(f64::MIN_POSITIVE);
            let primal = time("f(x)");
            let dense = time("jacobian(f, x)");
            let sparse = time("sparse_jacobian(f, x).2");
            let pattern = time("sparsity(f, x).1");
            println!(
                "| {name} | {n} | {:.1} | {:.1} | {:.1} |",
                dense / primal,
                sparse / primal,
                pattern / primal
            );
        }
    }
}

/// Options of the reverse-mode tables.
struct ReverseOptions {
    /// The mode whose `grad` is measured (`--ad`, default `delta`).
    mode: AdMode,
    /// The largest n of the `delta` table (`--max-n`).
    max_n: usize,
}

/// The sizes of the `delta` table.
const REVERSE_SIZES: [usize; 4] = [1_000, 10_000, 100_000, 1_000_000];
/// The default largest n with `--ad fwd`, whose gradient costs n passes.
const FWD_MAX_N: usize = 1_000;
/// A timing sample lasts at least this long (several calls of a short entry).
const MIN_SAMPLE: Duration = Duration::from_millis(50);

impl ReverseOptions {
    fn parse(args: &[&str]) -> ReverseOptions {
        let mut mode = AdMode::Delta;
        let mut max_n = None;
        let mut args = args.iter();
        while let Some(&flag) = args.next() {
            let Some(&value) = args.next() else { usage() };
            match flag {
                "--ad" => mode = AdMode::parse(value).unwrap_or_else(|| usage()),
                "--max-n" => max_n = Some(value.parse().unwrap_or_else(|_| usage())),
                _ => usage(),
            }
        }
        let max_n = max_n.unwrap_or(if mode == AdMode::Fwd {
            FWD_MAX_N
        } else {
            usize::MAX
        });
        ReverseOptions { mode, max_n }
    }
}

/// Says that `mode` is not built, instead of a table; returns whether it is built.
fn mode_is_built(mode: AdMode) -> bool {
    if !mode.is_implemented() {
        println!(
            "Pending: `--ad {}` is not built in this tree (the table runs once it is).",
            mode.name()
        );
    }
    mode.is_implemented()
}

fn fmt_time(t: Duration) -> String {
    let s = t.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 0.01 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.3} ms", s * 1e3)
    }
}

fn fmt_bytes(bytes: Option<usize>) -> String {
    match bytes {
        None => "—".into(),
        Some(b) if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        Some(b) => format!("{:.1} KiB", b as f64 / 1024.0),
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// Samples per timing: fewer where one call takes seconds.
fn samples_for(n: usize) -> usize {
    if n >= 1_000_000 { 3 } else { 5 }
}

/// One row of the `delta` table: primal and gradient of `family` at size n.
struct ReverseRow {
    primal: Measurement,
    gradient: Measurement,
    /// The gradient, at the size where it is compared with forward mode.
    value: Option<Vec<f64>>,
}

fn reverse_row(family: Family, n: usize, mode: AdMode, keep: bool) -> Result<ReverseRow, String> {
    let src = family.source(n);
    fluxion_driver::with_big_stack(move || {
        let bench = Bench::new(&src, mode)?;
        let args = [harness::reals(&programs::family_input(n))];
        let samples = samples_for(n);
        let primal = bench.measure("primal", &args, samples, MIN_SAMPLE)?;
        let gradient = bench.measure("gradient", &args, samples, MIN_SAMPLE)?;
        let value = keep
            .then(|| bench.call("gradient", &args))
            .transpose()?
            .map(|g| harness::flatten_reals(&g));
        Ok(ReverseRow {
            primal,
            gradient,
            value,
        })
    })
}

/// The forward-mode gradient of `family` at size n (n passes: for small n only).
fn fwd_gradient(family: Family, n: usize) -> Result<Vec<f64>, String> {
    let src = family.source(n);
    fluxion_driver::with_big_stack(move || {
        let bench = Bench::new(&src, AdMode::Fwd)?;
        let args = [harness::reals(&programs::family_input(n))];
        Ok(harness::flatten_reals(&bench.call("gradient", &args)?))
    })
}

/// Gradient / primal time and peak memory of `grad(f, x)` in the chosen mode for the
/// four families, at growing n; then the gradients at the smallest n against forward
/// mode's.
fn delta_table(options: &ReverseOptions) {
    let mode = options.mode;
    println!(
        "\n## Reverse mode (`--ad {}`): gradient / primal time and peak memory as n grows\n",
        mode.name()
    );
    if !mode_is_built(mode) {
        return;
    }
    println!(
        "Interpreter; thread CPU time, median of {} samples (3 at 10^6) of at least {} ms each.\n",
        samples_for(1),
        MIN_SAMPLE.as_millis()
    );
    println!(
        "| program | n | primal | gradient | gradient / primal | peak, gradient | per input | peak, primal |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let sizes: Vec<usize> = REVERSE_SIZES
        .iter()
        .copied()
        .filter(|&n| n <= options.max_n)
        .collect();
    let mut checks = Vec::new();
    for family in Family::ALL {
        for (i, &n) in sizes.iter().enumerate() {
            let keep = i == 0 && mode != AdMode::Fwd;
            match reverse_row(family, n, mode, keep) {
                Ok(row) => {
                    let per_input = row.gradient.peak.map(|b| b as f64 / n as f64);
                    println!(
                        "| {} | {n} | {} | {} | {:.2} | {} | {} | {} |",
                        family.name(),
                        fmt_time(row.primal.time),
                        fmt_time(row.gradient.time),
                        ratio(row.gradient.time, row.primal.time),
                        fmt_bytes(row.gradient.peak),
                        per_input.map_or("—".into(), |b| format!("{b:.0} B")),
                        fmt_bytes(row.primal.peak),
                    );
                    if let Some(value) = row.value {
                        checks.push((family, n, value));
                    }
                }
                Err(e) => println!(
                    "| {} | {n} | failed: {} |",
                    family.name(),
                    e.lines().next().unwrap_or("").replace('|', "/")
                ),
            }
        }
    }
    if !checks.is_empty() {
        println!(
            "\nAgreement with `--ad fwd` (max |g − g_fwd| / (1 + |g_fwd|) over the gradient):\n"
        );
        for (family, n, value) in checks {
            match fwd_gradient(family, n) {
                Ok(fwd) => println!(
                    "- {} at n = {n}: {:.1e}",
                    family.name(),
                    harness::max_relative_difference(&value, &fwd)
                ),
                Err(e) => println!("- {} at n = {n}: fwd failed: {e}", family.name()),
            }
        }
    }
}

/// GradBench's GMM sizes: d = 10, k = 25, n = 1000 (and d = 2, k = 5 to check the
/// forward-mode extrapolation against a measured forward-mode gradient).
const GMM_SIZE: (usize, usize, usize) = (10, 25, 1000);
const GMM_SMALL: (usize, usize, usize) = (2, 5, 1000);
const GMM_SEED: u64 = 31337;

/// The median time of `tangent` along a few basis vectors (one in each of alphas,
/// means and icf): one pass of `--ad fwd`'s gradient.
fn gmm_basis_jvp(bench: &Bench, g: &Gmm, samples: usize) -> Result<Measurement, String> {
    let p = g.parameters();
    let mut runs = Vec::new();
    for j in [0, g.k + g.k * g.d / 2, p - 1] {
        let mut e = vec![0.0; p];
        e[j] = 1.0;
        runs.push(bench.measure("tangent", &g.tangent_args(&e), samples, MIN_SAMPLE)?);
    }
    runs.sort_by_key(|m| m.time);
    Ok(runs[runs.len() / 2])
}

/// Results of the GMM table, made on the evaluation thread.
struct GmmResults {
    params: usize,
    fluxion_value: f64,
    rust_value: f64,
    primal: Measurement,
    jvp: Measurement,
    /// The chosen mode's gradient, and ⟨gradient, v⟩ against one JVP along v.
    reverse: Option<(Measurement, f64, f64)>,
    /// At the small size: fwd's measured gradient time / (parameters × one JVP).
    small_check: (usize, f64),
}

fn gmm_results(mode: AdMode) -> Result<GmmResults, String> {
    fluxion_driver::with_big_stack(move || {
        let (d, k, n) = GMM_SIZE;
        let g = Gmm::generate(d, k, n, GMM_SEED);
        let args = g.args();
        let fwd = Bench::new(programs::GMM, AdMode::Fwd)?;
        let fluxion_value = match fwd.call("primal", &args)? {
            fluxion_driver::interp::Value::Real(v) => v,
            other => return Err(format!("primal returned {other:?}")),
        };
        let primal = fwd.measure("primal", &args, 5, MIN_SAMPLE)?;
        let jvp = gmm_basis_jvp(&fwd, &g, 3)?;
        let reverse = if mode != AdMode::Fwd && mode.is_implemented() {
            let bench = Bench::new(programs::GMM, mode)?;
            let gradient = bench.measure("gradient", &args, 5, MIN_SAMPLE)?;
            let grad = harness::flatten_reals(&bench.call("gradient", &args)?);
            let v: Vec<f64> = programs::family_input(g.parameters());
            let along: f64 = grad.iter().zip(&v).map(|(a, b)| a * b).sum();
            let jvp_v = harness::flatten_reals(&fwd.call("tangent", &g.tangent_args(&v))?)[0];
            Some((gradient, along, jvp_v))
        } else {
            None
        };
        let (d, k, n) = GMM_SMALL;
        let small = Gmm::generate(d, k, n, GMM_SEED);
        let small_fwd = fwd.measure("gradient", &small.args(), 3, MIN_SAMPLE)?;
        let small_jvp = gmm_basis_jvp(&fwd, &small, 3)?;
        let predicted = small_jvp.time.as_secs_f64() * small.parameters() as f64;
        Ok(GmmResults {
            params: g.parameters(),
            fluxion_value,
            rust_value: g.objective(),
            primal,
            jvp,
            reverse,
            small_check: (small.parameters(), small_fwd.time.as_secs_f64() / predicted),
        })
    })
}

fn gmm_table(options: &ReverseOptions) {
    let mode = options.mode;
    let (d, k, n) = GMM_SIZE;
    println!(
        "\n## GMM objective (GradBench; d = {d}, k = {k}, n = {n}): gradient / primal, `--ad {}` against forward mode\n",
        mode.name()
    );
    let r = match gmm_results(mode) {
        Ok(r) => r,
        Err(e) => {
            println!("failed: {e}");
            return;
        }
    };
    let rel = (r.fluxion_value - r.rust_value).abs() / r.rust_value.abs().max(1.0);
    println!(
        "Objective {:.10e} (plain Rust: {:.10e}; relative difference {rel:.1e}); {} parameters. \
         Interpreter; thread CPU time, medians.\n",
        r.fluxion_value, r.rust_value, r.params
    );
    assert!(
        rel < 1e-10,
        "the Fluxion GMM objective disagrees with plain Rust"
    );
    println!("| computation | time | / primal | peak memory |");
    println!("|---|---|---|---|");
    println!(
        "| objective (primal) | {} | 1.00 | {} |",
        fmt_time(r.primal.time),
        fmt_bytes(r.primal.peak)
    );
    match r.reverse {
        Some((m, _, _)) => println!(
            "| gradient, `--ad {}` | {} | {:.2} | {} |",
            mode.name(),
            fmt_time(m.time),
            ratio(m.time, r.primal.time),
            fmt_bytes(m.peak)
        ),
        None if mode == AdMode::Fwd => {}
        None => println!(
            "| gradient, `--ad {}` | pending: not built in this tree | | |",
            mode.name()
        ),
    }
    let fwd = r.jvp.time * r.params as u32;
    println!(
        "| gradient, `--ad fwd`: {} × one JVP (extrapolated) | {} | {:.0} | {} |",
        r.params,
        fmt_time(fwd),
        ratio(fwd, r.primal.time),
        fmt_bytes(r.jvp.peak)
    );
    println!(
        "| one JVP along a basis vector (one pass of `--ad fwd`) | {} | {:.2} | {} |",
        fmt_time(r.jvp.time),
        ratio(r.jvp.time, r.primal.time),
        fmt_bytes(r.jvp.peak)
    );
    if let Some((_, along, jvp_v)) = r.reverse {
        println!(
            "\nCheck: ⟨gradient, v⟩ = {along:.10e}, one JVP along v = {jvp_v:.10e} (relative difference {:.1e}).",
            (along - jvp_v).abs() / jvp_v.abs().max(1.0)
        );
    }
    let (small_params, small_ratio) = r.small_check;
    let (d, k, n) = GMM_SMALL;
    println!(
        "\nThe extrapolation, checked at d = {d}, k = {k}, n = {n} ({small_params} parameters): \
         the measured `--ad fwd` gradient takes {small_ratio:.2} × ({small_params} × one JVP)."
    );
}
