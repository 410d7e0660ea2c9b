//! Compile time grows linearly with the size of the program: compiling one 8x larger
//! takes at most 16x as long (twice linear). A step that scans everything seen so far
//! (a name lookup through the whole scope, say) makes it about 64x.
//!
//! Each shape of program from `fluxion_bench::programs` is compiled (parse,
//! elaborate, expand, and the Core verifier, as this is a debug build) at two sizes.
//! The sizes are large enough that the fixed cost (the prelude) is small beside them.
//! The instructions executed grow in proportion (measured with callgrind), but the
//! time per line does not: from 8,000 to 512,000 lines it grows by half again, step by
//! step, as more memory accesses miss the caches (a 4x step measured 4.2x to 5.4x on
//! machines like CI's). The wide bound leaves room for that and still fails every
//! attempt of a quadratic step.

use std::sync::Mutex;
use std::time::Duration;

use fluxion_bench::clock::time_on_this_thread;
use fluxion_bench::programs;

/// How many times larger the large program is than the small one.
const SCALE: usize = 8;
/// How much longer the large program may take to compile: twice linear.
const MAX_GROWTH: f64 = 2.0 * SCALE as f64;
/// Measurements of each size; the fastest counts, which cuts the noise of a shared
/// machine.
const REPS: usize = 3;
/// Attempts before a growth beyond `MAX_GROWTH` fails the test.
const ATTEMPTS: usize = 3;
/// The smaller program is compiled this many times per measurement, so that both
/// measurements are long beside the clock's resolution (a scheduler tick).
const SMALL_COMPILES: u32 = 4;

/// The timing tests run one at a time, so that they do not slow each other down.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How long one compile of `src` takes, averaged over `times` compiles in a row: CPU
/// time if available, else wall time. Freeing the programs is not counted.
fn compile_time(src: &str, times: u32) -> Duration {
    let (programs, elapsed) = time_on_this_thread(|| {
        (0..times)
            .map(|_| {
                fluxion_driver::compile("generated.flx", src)
                    .unwrap_or_else(|f| panic!("{}", f.render()))
            })
            .collect::<Vec<_>>()
    });
    drop(programs);
    elapsed / times
}

/// The fastest compile of each program, measuring them in turn so that a burst of
/// load on the machine slows both alike.
fn fastest_compile_times(small: &str, large: &str) -> (Duration, Duration) {
    let mut fastest = (Duration::MAX, Duration::MAX);
    for _ in 0..REPS {
        fastest.0 = fastest.0.min(compile_time(small, SMALL_COMPILES));
        fastest.1 = fastest.1.min(compile_time(large, 1));
    }
    fastest
}

fn assert_linear(shape: &str, generate: fn(usize) -> String, size: usize) {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (small_src, large_src) = (generate(size), generate(SCALE * size));
    // A quadratic step makes every attempt about 64x; a burst of memory traffic from
    // other processes (these programs spill out of the caches) makes one attempt slow.
    let mut attempt = 0;
    let (small, large, growth) = loop {
        attempt += 1;
        let (small, large) = fastest_compile_times(&small_src, &large_src);
        let growth = large.as_secs_f64() / small.as_secs_f64();
        eprintln!(
            "{shape}, attempt {attempt}: {small:?} at size {size}, {large:?} at size {}: \
             {growth:.2}x",
            SCALE * size
        );
        if growth <= MAX_GROWTH || attempt == ATTEMPTS {
            break (small, large, growth);
        }
    };
    assert!(
        growth <= MAX_GROWTH,
        "{shape}: compiling a {SCALE}x larger program took {growth:.1}x as long ({small:?} for \
         size {size}, {large:?} for size {}); compile time should grow linearly",
        SCALE * size
    );
}

#[test]
fn compile_time_grows_linearly_with_the_number_of_functions() {
    assert_linear("many functions", programs::many_functions, 16_000);
}

#[test]
fn compile_time_grows_linearly_with_the_number_of_lets_in_one_function() {
    assert_linear("many lets", programs::many_lets, 20_000);
}
