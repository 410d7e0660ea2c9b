//! Calling entries of one compiled program many times, for timings of a derivative
//! against its primal: compiled and expanded for an AD mode once, one interpreter
//! kept between calls, arguments made in Rust (no JSON decoding in the timings).
//!
//! Use inside `fluxion_driver::with_big_stack` (values are `Rc`s: they stay on the
//! thread that made them).

use std::hint::black_box;
use std::time::Duration;

use fluxion_driver::interp::{Interp, Value};
use fluxion_driver::{AdMode, OptLevel, PRELUDE_SOURCE, default_memory_limit};

use crate::clock::time_on_this_thread;
use crate::peak;

/// Stack the interpreter may use (the driver's budget inside `with_big_stack`).
const STACK_LIMIT: usize = 1 << 30;

/// One program, expanded for one AD mode, with the interpreter its entries run in.
pub struct Bench {
    interp: Interp,
}

/// Timings of one entry: the median of several samples (each the mean over a batch
/// of calls, so that a sample is long beside the clock's resolution) and the peak
/// memory of a call above what the thread held before it (`None` without the
/// counting allocator).
#[derive(Clone, Copy, Debug)]
pub struct Measurement {
    pub time: Duration,
    pub peak: Option<usize>,
}

impl Bench {
    /// Compiles `src` and expands its differential operators for `mode`. The error is
    /// the rendered diagnostic (`--ad delta` in a tree without delta is one).
    pub fn new(src: &str, mode: AdMode) -> Result<Bench, String> {
        Bench::with_opt(src, mode, OptLevel::On)
    }

    /// [`Bench::new`] with the optimiser on or off (for the program and for the
    /// codes differentiation derives while it runs).
    pub fn with_opt(src: &str, mode: AdMode, opt: OptLevel) -> Result<Bench, String> {
        let mut program = fluxion_driver::compile("bench.flx", src).map_err(|f| f.render())?;
        let options = fluxion_driver::RunOptions {
            mode,
            opt,
            ..Default::default()
        };
        program
            .prepare(options)
            .map_err(|d| fluxion_driver::render(&[d], &program.sources))?;
        let mut interp = Interp::with_mode(program.module, mode);
        interp.set_opt_level(opt);
        interp.set_library_source(PRELUDE_SOURCE);
        interp.set_stack_limit(STACK_LIMIT);
        interp.set_memory_limit(default_memory_limit());
        Ok(Bench { interp })
    }

    /// The number of bindings of the codes the entries (`primal`, `tangent`,
    /// `gradient`) reach, the codes derived at run time so far included.
    pub fn code_size(&self) -> usize {
        let m = self.interp.module();
        let entries: Vec<fluxion_core::CodeId> = ["primal", "tangent", "gradient"]
            .iter()
            .filter_map(|name| m.functions.get(*name).copied())
            .collect();
        fluxion_opt::live_size(&m, &entries)
    }

    /// Calls top-level function `entry`; the error is the runtime error's message.
    pub fn call(&self, entry: &str, args: &[Value]) -> Result<Value, String> {
        let (code, span) = {
            let module = self.interp.module();
            let code = *module
                .functions
                .get(entry)
                .ok_or_else(|| format!("no function named `{entry}`"))?;
            (code, module.code(code).span)
        };
        self.interp
            .call_code(code, &[], args.iter().cloned(), span)
            .map_err(|e| e.message)
    }

    /// Times `entry(args)`: one warm-up call (it translates what the call
    /// differentiates and prepares the interpreter's code, once per program, as an
    /// embedding calling a gradient repeatedly pays it once), then `samples` samples
    /// of at least `min_sample` each of thread CPU time. The peak is the largest of
    /// the timed calls'.
    pub fn measure(
        &self,
        entry: &str,
        args: &[Value],
        samples: usize,
        min_sample: Duration,
    ) -> Result<Measurement, String> {
        let (warm, first) = time_on_this_thread(|| self.call(entry, args));
        drop(black_box(warm?));
        let batch = (min_sample.as_secs_f64() / first.as_secs_f64().max(1e-9)).ceil();
        let batch = (batch as usize).clamp(1, 10_000);
        let mut times = Vec::with_capacity(samples);
        let mut peak = None;
        for _ in 0..samples.max(1) {
            let baseline = peak::reset_peak();
            let (result, t) = time_on_this_thread(|| {
                for _ in 0..batch {
                    drop(black_box(self.call(entry, args)?));
                }
                Ok::<(), String>(())
            });
            result?;
            peak = peak.max(peak::peak_since(baseline));
            times.push(t / batch as u32);
        }
        times.sort();
        Ok(Measurement {
            time: times[times.len() / 2],
            peak,
        })
    }
}

/// `[Real]` from Rust.
pub fn reals(xs: &[f64]) -> Value {
    Value::RealArray(xs.into())
}

/// `[[Real]]` from Rust, row by row.
pub fn real_rows(rows: &[Vec<f64>]) -> Value {
    Value::Array(rows.iter().map(|r| reals(r)).collect())
}

/// Every real in a value, in order (tuples and arrays flattened), for comparing
/// gradients.
pub fn flatten_reals(v: &Value) -> Vec<f64> {
    let mut out = Vec::new();
    flatten_into(v, &mut out);
    out
}

fn flatten_into(v: &Value, out: &mut Vec<f64>) {
    match v {
        Value::Real(r) => out.push(*r),
        Value::Dual(p, t) => out.extend([*p, *t]),
        Value::RealArray(xs) => out.extend_from_slice(xs),
        Value::Tuple(vs) | Value::Array(vs) => vs.iter().for_each(|v| flatten_into(v, out)),
        other => {
            if let Some(n) = other.array_len() {
                (0..n).for_each(|i| flatten_into(&other.array_get(i).expect("in range"), out));
            }
        }
    }
}

/// The largest |a − b| / (1 + |b|) over two equally long lists (infinite when the
/// lengths differ).
pub fn max_relative_difference(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / (1.0 + y.abs()))
        .fold(0.0, f64::max)
}
