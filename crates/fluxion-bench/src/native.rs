//! Timing programs compiled by the native backend (`--backend native`): compiled once
//! (the C step timed on its own, with a cache of its own so that it really compiles),
//! then called many times with arguments made in Rust.

use std::hint::black_box;
use std::time::{Duration, Instant};

use fluxion_driver::interp::Value;
use fluxion_driver::native_backend::{CallValues, NativeProgram, Toolchain};
use fluxion_driver::{AdMode, Backend, RunOptions};

/// One entry of a program, compiled to machine code.
pub struct NativeEntry {
    program: NativeProgram,
    module: fluxion_driver::core::Module,
    /// Time the C compiler took.
    pub c_compile: Duration,
}

/// A cache directory no earlier run has filled.
fn fresh_toolchain() -> Toolchain {
    let dir = std::env::temp_dir().join(format!("fluxion-bench-cache-{}", std::process::id()));
    Toolchain {
        cache_dir: dir,
        ..Toolchain::default()
    }
}

impl NativeEntry {
    /// Compiles `entry` of `src` (expanded for `mode`, optimised) to machine code; the
    /// error is why it cannot be (a diagnostic or the backend's note).
    pub fn new(src: &str, entry: &str, mode: AdMode) -> Result<NativeEntry, String> {
        let mut program = fluxion_driver::compile("bench.flx", src).map_err(|f| f.render())?;
        let options = RunOptions {
            mode,
            backend: Backend::Native,
            ..RunOptions::default()
        };
        program.prepare(options).map_err(|d| d.message)?;
        let code = *program
            .module
            .functions
            .get(entry)
            .ok_or_else(|| format!("no function `{entry}`"))?;
        let (program, module) = fluxion_driver::compile_native(
            &program.module,
            code,
            &fresh_toolchain(),
            fluxion_driver::OptLevel::On,
            fluxion_driver::FwdMode::default(),
        )?;
        let c_compile = program.compile_time;
        Ok(NativeEntry {
            program,
            module,
            c_compile,
        })
    }

    /// Calls the entry; the error is the runtime error's message.
    pub fn call(&self, args: &[Value]) -> Result<Value, String> {
        self.program
            .call(&self.module, args, 256 << 20, 1 << 34)
            .map_err(|e| e.message)
    }

    /// The median over `samples` of the mean time of a call, each sample a batch of
    /// calls at least `min_sample` long.
    pub fn measure(
        &self,
        args: &[Value],
        samples: usize,
        min_sample: Duration,
    ) -> Result<Duration, String> {
        black_box(self.call(args)?);
        Ok(measure_rust(samples, min_sample, || {
            black_box(self.call(args).ok());
        }))
    }
}

/// The median time of `f` over batches at least `min_sample` long (native entries and
/// the Rust baselines are timed the same way).
pub fn measure_rust(samples: usize, min_sample: Duration, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    f();
    let first = start.elapsed();
    let batch = ((min_sample.as_secs_f64() / first.as_secs_f64().max(1e-9)).ceil() as usize)
        .clamp(1, 100_000);
    let mut times = Vec::new();
    for _ in 0..samples.max(1) {
        let start = Instant::now();
        for _ in 0..batch {
            f();
        }
        times.push(start.elapsed() / batch as u32);
    }
    times.sort();
    times[times.len() / 2]
}
