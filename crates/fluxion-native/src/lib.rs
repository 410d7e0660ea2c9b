//! The native backend: a Core module (differentiated and optimised: every pass before
//! is Core → Core) becomes one C11 translation unit (`emit.rs`, `prims.rs`, over the
//! representation in `types/` and the runtime in `runtime.c`), which the system C
//! compiler turns into a shared library (`toolchain.rs`, cached), loaded and called
//! through a small ABI:
//!
//! ```c
//! int fx_entry(const uint64_t *in, size_t n_in,      /* the arguments (abi.rs)   */
//!              uint64_t **out, size_t *n_out,        /* the result, to free with */
//!              fx_error *err, const fx_config *cfg); /*   fx_free_words          */
//! ```
//!
//! `fx_entry` returns 0 with the result, 1 with a runtime error (message and source
//! span) in `err`, or 2 when the run needs the interpreter (a closure without an
//! ahead-of-time translation met an operator: `RuntimeError::needs_interpreter`);
//! `cfg` bounds the stack and the heap, and says how often to run the function on the
//! arguments decoded once (a benchmark's timed runs, each timed in C:
//! [`NativeProgram::call_words_repeated`]). A program the backend cannot
//! compile — one that applies a differential operator the run time would have to
//! translate (fluxion-ad's `ahead` makes the translations it can ahead of time) — is
//! reported as [`Unsupported`], and the caller runs it in the interpreter.

mod analysis;
mod delta_c;
mod delta_fuse;
mod delta_loop;
mod emit;
mod emitter;
mod prims;
mod toolchain;
mod types;

use std::path::PathBuf;
use std::time::Duration;

use fluxion_core::{CodeId, Module, Span, Type};

pub use emitter::Unsupported;
pub use toolchain::{Toolchain, default_cache_dir};

/// The C runtime every translation unit starts with.
pub const RUNTIME: &str = include_str!("runtime.c");

/// The C translation unit of `entry` (after fluxion-ad's `resolve_operators`).
pub fn c_source(m: &Module, entry: CodeId) -> Result<String, Unsupported> {
    emit::emit_module(m, entry)
}

/// Why native compilation did not produce a library.
#[derive(Debug)]
pub enum NativeError {
    /// The program needs the interpreter (the reason, for a one-line note).
    Unsupported(String),
    /// The C compiler is missing or failed (a bug of the backend if it failed).
    Toolchain(String),
}

/// A runtime error of native code, as the interpreter reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeError {
    pub message: String,
    pub span: Span,
    /// Not the program's error: a closure met an operator whose translation of its code
    /// was not made ahead of time; the caller runs the program in the interpreter
    /// (programs have no effects, so running again from the start is the same run).
    pub needs_interpreter: bool,
}

impl RuntimeError {
    /// A fault of the backend or its caller, not of the program.
    pub fn internal(message: &str) -> RuntimeError {
        RuntimeError {
            message: format!("internal error: {message}"),
            span: Span::default(),
            needs_interpreter: false,
        }
    }
}

#[repr(C)]
struct FxError {
    message: [u8; 512],
    source: u32,
    start: u32,
    end: u32,
    real: f64,
}

#[repr(C)]
struct FxConfig {
    stack_limit: usize,
    memory_limit: u64,
    min_runs: u64,
    min_ns: u64,
    times: *mut u64,
    times_cap: u64,
    n_times: *mut u64,
}

/// How often [`NativeProgram::call_words_repeated`] runs the entry's function: at least
/// `min_runs` times and for `min_time` in all (GradBench's `min_runs`, `min_seconds`),
/// at most `max_runs` times.
#[derive(Clone, Copy, Debug)]
pub struct Repeat {
    pub min_runs: u64,
    pub min_time: Duration,
    pub max_runs: u64,
}

type EntryFn = unsafe extern "C" fn(
    *const u64,
    usize,
    *mut *mut u64,
    *mut usize,
    *mut FxError,
    *const FxConfig,
) -> i32;

/// Native calls run one at a time: the C runtime keeps its state in globals.
static CALL_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

type FreeFn = unsafe extern "C" fn(*mut u64);
type LiveFn = unsafe extern "C" fn() -> i64;

/// A compiled entry point, loaded.
pub struct NativeProgram {
    /// Keeps the library loaded: the function pointers below point into it.
    _lib: libloading::Library,
    entry: EntryFn,
    free: FreeFn,
    live: LiveFn,
    params: Vec<Type>,
    ret: Type,
    /// Where the library is (in the cache).
    pub path: PathBuf,
    /// Time the C compiler took (zero when the cache had the library).
    pub compile_time: Duration,
    /// Whether the library came from the cache.
    pub cached: bool,
    /// The module's inline sites: a fault in an inlined prelude function's copy is
    /// reported at the user's call (`fluxion_core::inline_site`).
    sites: Vec<fluxion_core::InlineSite>,
}

impl NativeProgram {
    /// Compiles `entry` of `m` (operators already resolved) and loads it.
    pub fn compile(
        m: &Module,
        entry: CodeId,
        tc: &Toolchain,
    ) -> Result<NativeProgram, NativeError> {
        let source = c_source(m, entry).map_err(|u| NativeError::Unsupported(u.0))?;
        let Type::Fn(params, ret) = m.code_ty(entry) else {
            return Err(NativeError::Unsupported(
                "the entry is not a function".into(),
            ));
        };
        let built = tc.build(&source).map_err(NativeError::Toolchain)?;
        // SAFETY: the library is one this backend generated; loading runs no
        // initialisers beyond the C runtime's static data.
        let lib = unsafe { libloading::Library::new(&built.path) }.map_err(|e| {
            NativeError::Toolchain(format!("cannot load {}: {e}", built.path.display()))
        })?;
        let missing = |name: &str| NativeError::Toolchain(format!("the library has no `{name}`"));
        // SAFETY: every generated unit defines these with these signatures; the
        // pointers stay valid while `_lib` keeps the library loaded.
        let (entry, free, live) = unsafe {
            (
                *lib.get::<EntryFn>(b"fx_entry")
                    .map_err(|_| missing("fx_entry"))?,
                *lib.get::<FreeFn>(b"fx_free_words")
                    .map_err(|_| missing("fx_free_words"))?,
                *lib.get::<LiveFn>(b"fx_live")
                    .map_err(|_| missing("fx_live"))?,
            )
        };
        Ok(NativeProgram {
            _lib: lib,
            entry,
            free,
            live,
            params,
            ret: *ret,
            path: built.path,
            compile_time: built.compile_time,
            cached: built.cached,
            sites: m.inline_sites.clone(),
        })
    }

    /// The entry's parameter types and result type (the streams' layouts: the
    /// driver's `abi.rs`).
    pub fn signature(&self) -> (&[Type], &Type) {
        (&self.params, &self.ret)
    }

    /// Calls the entry with its arguments as one word stream (`input`, the layout of
    /// the driver's `abi.rs`); `read` takes the result's words apart (`None`: a
    /// malformed result). `stack_bytes` is how much of the current thread's stack the
    /// program may use; `memory_limit` the heap it may hold.
    pub fn call_words<R>(
        &self,
        input: &[u64],
        stack_bytes: usize,
        memory_limit: u64,
        read: impl FnOnce(&[u64]) -> Option<R>,
    ) -> Result<R, RuntimeError> {
        self.call_configured(input, stack_bytes, memory_limit, None, read)
    }

    /// [`NativeProgram::call_words`], the function run as `repeat` says on the
    /// arguments decoded once (as a hand-written tool converts its input once before
    /// its timed runs): the last run's result, and each run's time — the function's
    /// call alone, not decoding the arguments, encoding the result or releasing it.
    pub fn call_words_repeated<R>(
        &self,
        input: &[u64],
        stack_bytes: usize,
        memory_limit: u64,
        repeat: Repeat,
        read: impl FnOnce(&[u64]) -> Option<R>,
    ) -> Result<(R, Vec<Duration>), RuntimeError> {
        let cap = repeat.max_runs.max(1);
        let mut times = vec![0u64; usize::try_from(cap).unwrap_or(usize::MAX)];
        let mut n_times = 0u64;
        let runs = Some((repeat, times.as_mut_ptr(), cap, &mut n_times as *mut u64));
        let value = self.call_configured(input, stack_bytes, memory_limit, runs, read)?;
        times.truncate(n_times as usize);
        Ok((value, times.into_iter().map(Duration::from_nanos).collect()))
    }

    fn call_configured<R>(
        &self,
        input: &[u64],
        stack_bytes: usize,
        memory_limit: u64,
        runs: Option<(Repeat, *mut u64, u64, *mut u64)>,
        read: impl FnOnce(&[u64]) -> Option<R>,
    ) -> Result<R, RuntimeError> {
        let here = 0u8;
        let sp = std::ptr::addr_of!(here) as usize;
        let (min_runs, min_ns, times, times_cap, n_times) = match runs {
            Some((r, times, cap, n)) => (
                r.min_runs,
                u64::try_from(r.min_time.as_nanos()).unwrap_or(u64::MAX),
                times,
                cap,
                n,
            ),
            None => (1, 0, std::ptr::null_mut(), 0, std::ptr::null_mut()),
        };
        let config = FxConfig {
            stack_limit: sp.saturating_sub(stack_bytes),
            memory_limit,
            min_runs,
            min_ns,
            times,
            times_cap,
            n_times,
        };
        let mut err = FxError {
            message: [0; 512],
            source: 0,
            start: 0,
            end: 0,
            real: 0.0,
        };
        let (mut out, mut n_out) = (std::ptr::null_mut(), 0usize);
        // The runtime's state is global in each library (see `runtime.c`).
        let _one_at_a_time = CALL_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the pointers are valid for the call; the entry writes `out`/`n_out`
        // (a buffer it allocated) on success and `err` on failure.
        let status = unsafe {
            (self.entry)(
                input.as_ptr(),
                input.len(),
                &mut out,
                &mut n_out,
                &mut err,
                &config,
            )
        };
        if status != 0 {
            let len = err.message.iter().position(|b| *b == 0).unwrap_or(512);
            let (span, message) = fluxion_core::inline_site::attribute(
                &self.sites,
                Span {
                    source: err.source,
                    start: err.start,
                    end: err.end,
                },
                String::from_utf8_lossy(&err.message[..len])
                    .replace('\u{1}', &fluxion_core::print::format_real(err.real)),
            );
            return Err(RuntimeError {
                message,
                span,
                needs_interpreter: status == 2,
            });
        }
        // A result of no words (`()`) may come back as a null pointer, which no slice
        // may be made from, even an empty one.
        let words: &[u64] = if out.is_null() || n_out == 0 {
            &[]
        } else {
            // SAFETY: on success `out` holds `n_out` words.
            unsafe { std::slice::from_raw_parts(out, n_out) }
        };
        let value = read(words);
        // SAFETY: `out` came from the library's allocator; `words` is not used after.
        unsafe { (self.free)(out) };
        value.ok_or_else(|| RuntimeError::internal("a malformed result"))
    }

    /// Heap objects the library holds (0 after every successful call: the leak check
    /// of the tests).
    pub fn live_objects(&self) -> i64 {
        let _one_at_a_time = CALL_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: `live` points into the loaded library.
        unsafe { (self.live)() }
    }
}

#[cfg(test)]
mod layering {
    /// The modules bottom-up: analyses of Core, the C representation of types, the
    /// emitter's state and services, primitives, then the emission of codes. Each uses
    /// only the modules before it, so there is no circle.
    const LAYERS: &[(&str, &str)] = &[
        ("toolchain", include_str!("toolchain.rs")),
        ("analysis", include_str!("analysis.rs")),
        ("types", include_str!("types/mod.rs")),
        ("types", include_str!("types/delta.rs")),
        ("emitter", include_str!("emitter.rs")),
        ("prims", include_str!("prims.rs")),
        ("delta_loop", include_str!("delta_loop.rs")),
        ("delta_c", include_str!("delta_c.rs")),
        ("delta_fuse", include_str!("delta_fuse.rs")),
        ("emit", include_str!("emit.rs")),
    ];

    fn uses(src: &str, module: &str) -> bool {
        src.contains(&format!("crate::{module}::")) || src.contains(&format!("crate::{module}::{{"))
    }

    /// The backend compiles Core and knows nothing of the passes before it or of the
    /// interpreter (values are converted to words by the driver).
    #[test]
    fn the_backend_depends_on_core_only() {
        let manifest = include_str!("../Cargo.toml");
        for other in [
            "fluxion-interp",
            "fluxion-ad",
            "fluxion-opt",
            "fluxion-driver",
        ] {
            assert!(
                !manifest.contains(other),
                "fluxion-native depends on {other}"
            );
        }
    }

    #[test]
    fn modules_use_only_the_layers_below() {
        for (i, (name, src)) in LAYERS.iter().enumerate() {
            for (other, _) in &LAYERS[i + 1..] {
                assert!(
                    name == other || !uses(src, other),
                    "`{name}` uses `{other}`, a layer above it"
                );
            }
        }
    }
}
