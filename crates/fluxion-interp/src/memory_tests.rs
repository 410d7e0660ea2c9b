//! The memory budget (`Interp::set_memory_limit`) and the size of unboxed arrays,
//! measured by the counting allocator this test binary installs (lib.rs).

use fluxion_core::Span;

use crate::tests::compile;
use crate::{Interp, RuntimeError, Value, thread_live_bytes};

/// Runs `main` of `src` under a budget of `limit` bytes.
fn run_within(src: &str, limit: usize) -> Result<Value, RuntimeError> {
    let module = compile(src);
    let main = module.functions["main"];
    let mut interp = Interp::new(module);
    interp.set_memory_limit(limit);
    interp.call_code(main, &[], [], Span::default())
}

/// The bytes the value of `body` holds, per element of an array of `n`.
fn bytes_per_element(ret: &str, body: &str, n: usize) -> f64 {
    let src = format!("fn main() -> {ret} {{ {body} }}");
    let module = compile(&src);
    let main = module.functions["main"];
    let interp = Interp::new(module);
    // The first call compiles the code; measure a second one.
    drop(interp.call_code(main, &[], [], Span::default()));
    let before = thread_live_bytes();
    let value = interp.call_code(main, &[], [], Span::default()).unwrap();
    let held = thread_live_bytes() - before;
    assert_eq!(value.array_len(), Some(n));
    held as f64 / n as f64
}

#[test]
fn int_arrays_take_8_bytes_an_element_and_bool_arrays_1() {
    let n = 1 << 20;
    for body in [
        format!("range({n})"),
        format!("build({n}, |i| i * 2)"),
        format!("map(|x| x + 1, range({n}))"),
        format!("replicate({n}, 3)"),
    ] {
        let size = bytes_per_element("[Int]", &body, n);
        assert!((8.0..8.01).contains(&size), "{body}: {size} bytes");
    }
    let size = bytes_per_element("[Bool]", &format!("build({n}, |i| i % 2 == 0)"), n);
    assert!((1.0..1.01).contains(&size), "{size} bytes");
    // For comparison: a boxed array holds a 24-byte value per element.
    let size = bytes_per_element("[[Int]]", &format!("replicate({n}, [1])"), n);
    assert!(size >= 24.0, "{size} bytes");
}

#[test]
fn exceeding_the_budget_is_a_located_runtime_error() {
    let src = "fn main() -> Int { length(build(100000, |i| build(100000, |j| i + j))) }";
    let before = thread_live_bytes();
    let e = run_within(src, 64 << 20).unwrap_err();
    assert!(
        e.message.starts_with("memory budget of 64 MiB exceeded"),
        "{}",
        e.message
    );
    assert_eq!(
        &src[e.span.start as usize..e.span.end as usize],
        "build(100000, |j| i + j)"
    );
    // Everything the failed run held is freed.
    assert!(thread_live_bytes() - before < 1 << 20);
}

#[test]
fn one_huge_request_fails_before_it_is_made() {
    for (body, needs) in [
        ("length(replicate(200000000, 1.5))", "1.5 GiB"),
        ("length(range(200000000))", "1.5 GiB"),
        ("length(build(200000000, |i| i))", "1.5 GiB"),
        ("length(concat(range(3000000), range(3000000)))", "45.8 MiB"),
    ] {
        let src = format!("fn main() -> Int {{ {body} }}");
        let e = run_within(&src, 64 << 20).unwrap_err();
        assert!(
            e.message
                .contains(&format!("this operation needs {needs} more")),
            "{body}: {}",
            e.message
        );
    }
}

#[test]
fn the_budget_counts_what_is_held_not_what_was_allocated() {
    // 10,000 arrays of 8 KiB, each freed before the next: 80 MB allocated in all.
    let src =
        "fn main() -> Int { fold(|n, i| n + length(build(1000, |j| i + j)), 0, range(10000)) }";
    let v = run_within(src, 1 << 20).unwrap_or_else(|e| panic!("{}", e.message));
    assert!(matches!(v, Value::Int(10_000_000)), "{v:?}");
}

#[test]
fn without_a_limit_nothing_is_checked() {
    let module = compile("fn main() -> Int { length(range(1000)) }");
    let main = module.functions["main"];
    let interp = Interp::new(module);
    assert_eq!(interp.memory_limit(), usize::MAX);
    assert!(interp.call_code(main, &[], [], Span::default()).is_ok());
}
