//! What a new user meets on the first day (issue 14): the prelude is lexically scoped,
//! and messages name the file and point at the mistake.

#[path = "common/messages.rs"]
mod messages;
use fluxion_driver::gradcheck::eval_literal;
use fluxion_driver::{AdMode, compile, with_big_stack};

fn run(src: &str) -> Result<String, String> {
    let src = src.to_string();
    with_big_stack(move || {
        let program = compile("user.flx", &src).map_err(|f| f.render())?;
        let out = program.run("main", None).map_err(|f| f.render())?;
        Ok(out.to_literal())
    })
}

/// A user `dot` of another type does not break the prelude (before: 12 type errors
/// inside `<prelude>`).
#[test]
fn a_file_may_start_with_a_byte_order_mark() {
    assert_eq!(run("\u{feff}fn main() -> Int { 1 }"), Ok("1".into()));
}

#[test]
fn logsumexp_of_an_infinite_maximum_is_that_maximum() {
    // Every exp(x - m) is 0 (m = -inf) or the sum is inf (m = inf): as JAX and SciPy
    // give it (x - m was NaN).
    assert_eq!(
        run("fn main() -> (Real, Real, Real) { let inf = 1.0 / 0.0; \
             (logsumexp([0.0 - inf, 0.0 - inf]), logsumexp([inf, 1.0]), logsumexp([0.0 - inf, 0.0])) }"),
        Ok("(-inf, inf, 0.0)".into())
    );
}

#[test]
fn a_user_function_may_take_a_prelude_name_with_another_type() {
    let src = "fn dot(a: Int, b: Int) -> Int { a * b }\n\
               fn main() -> (Int, [Real]) { (dot(2, 3), matvec([[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0])) }";
    assert_eq!(run(src).as_deref(), Ok("(6, [3.0, 7.0])"));
}

/// With the prelude's own signature, prelude functions still call the prelude's `dot`
/// (before: `matvec` used the user's and returned [100.0, 100.0]); the user's code
/// calls the user's. matvec([[1, 2], [3, 4]], [1, 1]) = [3, 7].
#[test]
fn prelude_functions_always_mean_the_preludes() {
    let src = "fn dot(u: [Real], v: [Real]) -> Real { 100.0 }\n\
               fn main() -> ([Real], Real) { (matvec([[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0]), dot([1.0], [2.0])) }";
    assert_eq!(run(src).as_deref(), Ok("([3.0, 7.0], 100.0)"));
}

/// The printed Core of such a program names the shadowed prelude function apart, so it
/// re-parses and computes the same.
#[test]
fn printed_core_keeps_the_two_functions_apart() {
    let src = "fn dot(u: [Real], v: [Real]) -> Real { 100.0 }\n\
               fn main() -> ([Real], Real) { (matvec([[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0]), dot([1.0], [2.0])) }";
    let printed = with_big_stack(|| {
        compile("user.flx", src)
            .ok()
            .expect("compiles")
            .show("core", None)
            .expect("prints")
    });
    assert!(printed.contains("fn dot_prelude("), "{printed}");
    assert_eq!(run(&printed).as_deref(), Ok("([3.0, 7.0], 100.0)"));
}

/// A user mistake is reported in the user's file, never at a `<prelude>` location.
#[test]
fn no_user_mistake_is_reported_in_the_prelude() {
    for src in [
        "fn dot(a: Int) -> Int { a }\nfn main() -> Real { norm([3.0, 4.0]) + to_real(dot(1)) }",
        "fn transpose(x: Real) -> Real { x }\nfn main() -> [[Real]] { matmul([[1.0]], [[2.0]]) }",
        "fn main() -> Real { dot([1.0], 2.0) }",
    ] {
        match run(src) {
            Ok(_) => {}
            Err(e) => assert!(!e.contains("<prelude>"), "{src}:\n{e}"),
        }
    }
    // The first two are fine programs; the third is a mistake at the user's call.
    let err = run("fn main() -> Real { dot([1.0], 2.0) }").expect_err("a type error");
    assert!(err.contains("user.flx:1:"), "{err}");
    assert_eq!(
        eval_literal(
            "fn transpose(x: Real) -> Real { x }",
            "(matmul([[1.0]], [[2.0]]), transpose(3.0))",
            AdMode::Fwd
        )
        .as_deref(),
        Ok("([[2.0]], 3.0)")
    );
}

/// A value applied to itself needs an infinite type; the message shows it.
#[test]
fn an_infinite_type_is_named() {
    let err = run("fn main() -> Int { let f = |x| x(x); 1 }").expect_err("x(x)");
    assert!(err.contains("infinite type, `a = fn(a) -> _`"), "{err}");
    let err = run("fn main() -> Bool { let g = |y| [y] == y; true }").expect_err("[y] == y");
    assert!(err.contains("infinite type, `a = [a]`"), "{err}");
}

/// Every error names its file, even one about the program as a whole.
#[test]
fn an_error_without_a_location_names_the_file() {
    let err = run("").expect_err("no main");
    assert!(
        err.starts_with("user.flx: error: no function named `main`"),
        "{err}"
    );
}

/// A parse error points at the unexpected token (column 22 is the `@`), once.
#[test]
fn a_parse_error_points_at_the_unexpected_token() {
    let err = run("fn main() -> Int { 1 @ 2 }").expect_err("@");
    assert!(err.starts_with("user.flx:1:22: syntax error:"), "{err}");
    assert!(err.contains("unexpected character `@`"), "{err}");
    assert_eq!(err.matches("syntax error:").count(), 1, "{err}");
}

/// A fault inside a prelude function is the user's mistake at the call: reported
/// there (naming the prelude function), never at a `<prelude>` location; and `dot` of
/// arrays of different lengths is an error, not a truncation.
#[test]
fn faults_in_prelude_functions_are_reported_at_the_users_call() {
    for (src, col) in [
        ("fn main() -> Real { dot([1.0, 2.0], [1.0]) }", 21),
        ("fn main() -> Real { dot([1.0], [1.0, 2.0]) }", 21),
        ("fn main() -> [Real] { matvec([[1.0]], [1.0, 5.0]) }", 23),
        (
            "fn main() -> [[Real]] { transpose([[1.0, 2.0], [3.0]]) }",
            25,
        ),
    ] {
        let err = run(src).expect_err(src);
        assert!(
            err.starts_with(&format!("user.flx:1:{col}: runtime error:")),
            "{src}:\n{err}"
        );
        assert_eq!(
            messages::on_the_first_line(&err, "a prelude function"),
            1,
            "{err}"
        );
        assert!(!err.contains("<prelude>"), "{err}");
    }
}

/// `entry` of `src` (as `user.flx`) after the optimiser, printed.
fn optimised(src: &'static str, entry: &'static str) -> String {
    with_big_stack(move || {
        compile("user.flx", src)
            .ok()
            .expect("compiles")
            .show("opt", Some(entry))
            .expect("prints")
    })
}

/// The rendered fault of running `entry` of `src` (as `user.flx`), which must fail.
fn fault_of(src: &'static str, entry: &'static str) -> String {
    with_big_stack(move || {
        let program = compile("user.flx", src).map_err(|f| f.render())?;
        program.run(entry, None).map(|_| ()).map_err(|f| f.render())
    })
    .expect_err(entry)
}

/// The other way round: a user's closure copied into a prelude function's copy at the
/// user's call (`dot(r, r)` of the user's `build`: the fused loop's body is the user's
/// lambda, `fluxion-opt`'s `may_copy`) keeps its spans, so a fault inside is reported
/// where the user wrote it, naming no prelude function — in the primal and under
/// reverse mode.
#[test]
fn a_fault_in_a_users_closure_copied_into_a_prelude_copy_is_reported_where_written() {
    let src = "fn g(xs: [Real], n: Int) -> Real {\n    \
               let r = build(n, |i| { let row = xs[i]; row * 2.0 + sumbuild(i, |j| xs[j]) });\n    \
               dot(r, r)\n}\n\
               fn main() -> Real { g([1.0, 2.0], 3) }\n\
               fn h() -> [Real] { grad(|x: [Real]| g(x, 3), [1.0, 2.0]) }\n";
    let opt = optimised(src, "g");
    // The fused loop's lambda holds the user's body, not a call of the user's lambda.
    assert!(
        opt.contains("fused") && !opt.contains("dot(") && !opt.contains(": Real = lam_"),
        "not copied:\n{opt}"
    );
    for entry in ["main", "h"] {
        let err = fault_of(src, entry);
        assert!(
            err.starts_with("user.flx:2:38: runtime error: index 2 out of range"),
            "{entry}: {err}"
        );
        assert!(!err.contains("prelude function"), "{entry}: {err}");
    }
}

/// Prelude functions are inlined into the user's code before differentiating (issue
/// 32: flat code differentiates into flat code), and a fault inside the copy is still
/// the user's mistake at the call, naming the function — in the primal, under
/// forward and reverse mode, in both backends (the native side in `native_backend.rs`).
#[test]
fn a_fault_in_an_inlined_prelude_function_is_reported_at_the_users_call() {
    let src = "fn f(x: [Real]) -> Real {\n    let y = vsub(x, [1.0]);\n    dot(y, y)\n}\n\
               fn main() -> Real { f([1.0, 2.0]) }\n\
               fn g() -> [Real] { grad(f, [1.0, 2.0]) }\n\
               fn h() -> Real { diff(|t: Real| f([t, t]), 1.0) }\n";
    let opt = optimised(src, "f");
    assert!(
        !opt.contains("vsub(") && !opt.contains("dot("),
        "not inlined:\n{opt}"
    );
    for entry in ["main", "g", "h"] {
        let err = fault_of(src, entry);
        assert!(
            err.starts_with("user.flx:2:13: runtime error: map2: arrays of different lengths"),
            "{entry}: {err}"
        );
        assert_eq!(
            messages::on_the_first_line(&err, "(in `vsub`, a prelude function)"),
            1,
            "{entry}: {err}"
        );
    }
}
