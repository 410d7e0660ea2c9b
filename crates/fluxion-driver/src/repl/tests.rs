//! The session API: inputs evaluated once, bindings kept, definitions replaced.

use super::Session;
use crate::with_big_stack;

/// Runs `inputs` in a fresh session; each one's stdout, or its error text.
fn transcript(inputs: &[&str]) -> Vec<Result<String, String>> {
    with_big_stack(|| {
        let mut s = Session::new().expect("the prelude loads");
        inputs.iter().map(|i| s.eval(i).map(|r| r.output)).collect()
    })
}

fn ok(s: &str) -> Result<String, String> {
    Ok(s.to_string())
}

#[test]
fn lets_are_kept_and_seen_by_later_inputs() {
    let out = transcript(&["let x = 2.0", "let (a, b) = (x, 3)", "x * a + to_real(b)"]);
    assert_eq!(out, vec![ok(""), ok(""), ok("7.0\n")]);
}

#[test]
fn each_input_is_evaluated_once() {
    with_big_stack(|| {
        let mut s = Session::new().unwrap();
        s.eval("let slow = sum(build(1000, |i| to_real(i)))")
            .unwrap();
        assert_eq!(s.evaluations(), 1);
        for _ in 0..5 {
            assert_eq!(s.eval("slow + 1.0").unwrap().output, "499501.0\n");
        }
        // One evaluation per input: the `let` was not run again.
        assert_eq!(s.evaluations(), 6);
        // Definitions and type queries evaluate nothing.
        s.eval("fn f(x: Real) -> Real { x }").unwrap();
        s.type_of("slow").unwrap();
        assert_eq!(s.evaluations(), 6);
    });
}

#[test]
fn a_later_input_does_not_re_run_a_slow_let() {
    with_big_stack(|| {
        let mut s = Session::new().unwrap();
        let start = std::time::Instant::now();
        s.eval("let slow = fold(|a, i| a + sin(to_real(i)), 0.0, range(2000000))")
            .unwrap();
        let slow = start.elapsed();
        let start = std::time::Instant::now();
        for _ in 0..3 {
            s.eval("slow * 2.0").unwrap();
        }
        let later = start.elapsed();
        assert!(
            later * 2 < slow,
            "three uses took {later:?}, the let itself {slow:?}"
        );
    });
}

#[test]
fn closures_and_derivatives_work_across_inputs() {
    let out = transcript(&[
        "let f = |x: Real| x * x * x",
        "f(2.0)",
        "grad(f, 2.0)",
        "let g = |v: [Real]| dot(v, v)",
        "grad(g, [1.0, 2.0])",
        "diff(|x| f(x) + x, 1.0)",
        "let h = vjp(f, 3.0)",
        "h.1(1.0)",
    ]);
    assert_eq!(
        out,
        vec![
            ok(""),
            ok("8.0\n"),
            ok("12.0\n"),
            ok(""),
            ok("[2.0, 4.0]\n"),
            ok("4.0\n"),
            ok(""),
            ok("27.0\n"),
        ]
    );
}

#[test]
fn enums_and_functions_across_inputs() {
    let out = transcript(&[
        "enum Shape { Circle(Real), Rect(Real, Real) }",
        "fn area(s: Shape) -> Real { match s { Circle(r) => 3.0 * r * r, Rect(w, h) => w * h } }",
        "let s = Rect(2.0, 3.0)",
        "area(s)",
        "s",
        "grad(area, s)",
    ]);
    assert_eq!(
        out,
        vec![
            ok(""),
            ok(""),
            ok(""),
            ok("6.0\n"),
            ok("Rect(2.0, 3.0)\n"),
            ok("Rect(3.0, 2.0)\n"),
        ]
    );
}

#[test]
fn a_redefined_fn_replaces_the_old_one_and_old_values_keep_old_code() {
    let out = transcript(&[
        "fn sq(x: Real) -> Real { x * x }",
        "let old = sq",
        "fn sq(x: Real) -> Real { x * x * x }",
        "sq(2.0)",
        "old(2.0)",
        "fn cube_of_sq(x: Real) -> Real { sq(x) }",
        "cube_of_sq(2.0)",
    ]);
    assert_eq!(out[3], ok("8.0\n"));
    assert_eq!(out[4], ok("4.0\n"));
    assert_eq!(out[6], ok("8.0\n"));
}

#[test]
fn a_redefined_enum_drops_bindings_of_the_old_type() {
    with_big_stack(|| {
        let mut s = Session::new().unwrap();
        s.eval("enum E { A(Real), B }").unwrap();
        s.eval("let e = A(1.0)").unwrap();
        s.eval("let es = [e, B]").unwrap();
        s.eval("let x = 1.0").unwrap();
        let reply = s.eval("enum E { A(Int), B, C }").unwrap();
        assert!(
            reply.notes.contains("binding `e` removed"),
            "{}",
            reply.notes
        );
        assert!(
            reply.notes.contains("binding `es` removed"),
            "{}",
            reply.notes
        );
        assert_eq!(s.binding_names(), vec!["x".to_string()]);
        assert_eq!(s.eval("[A(2), C]").unwrap().output, "[A(2), C]\n");
        let err = s.eval("e").unwrap_err();
        assert!(err.contains("unknown variable `e`"), "{err}");
    });
}

#[test]
fn a_definition_that_breaks_others_is_rejected() {
    with_big_stack(|| {
        let mut s = Session::new().unwrap();
        s.eval("enum E { A(Real) }").unwrap();
        s.eval("fn get(e: E) -> Real { match e { A(x) => x } }")
            .unwrap();
        let err = s.eval("enum E { B(Int) }").unwrap_err();
        assert!(err.contains("type error"), "{err}");
        // The error points at `get`; the note says what happened to the new `E`.
        assert!(
            err.contains("note: `E` keeps its earlier definition: this one was not made"),
            "{err}"
        );
        assert_eq!(s.eval("get(A(2.5))").unwrap().output, "2.5\n");
    });
}

#[test]
fn errors_point_into_the_input_as_typed() {
    let out = transcript(&["let x = 1.0", "x + nope", "x +", "[1.0][3]"]);
    let err = out[1].as_ref().unwrap_err();
    assert!(
        err.starts_with("<input 2>:1:5: type error: unknown variable `nope`"),
        "{err}"
    );
    let err = out[2].as_ref().unwrap_err();
    assert!(err.starts_with("<input 3>:1:4: syntax error"), "{err}");
    let err = out[3].as_ref().unwrap_err();
    assert!(err.starts_with("<input 4>:1:1: runtime error"), "{err}");
}

#[test]
fn errors_in_a_loaded_file_keep_its_name_and_lines() {
    with_big_stack(|| {
        let mut s = Session::new().unwrap();
        let err = s
            .load("lib.flx", "fn f(x: Real) -> Real {\n  x + true\n}\n")
            .unwrap_err();
        assert!(err.starts_with("lib.flx:2:"), "{err}");
        s.load(
            "lib.flx",
            "fn f(x: Real) -> Real {\n  x[0]\n}\nfn g(x: Int) -> Int { x }\n",
        )
        .unwrap_err();
        s.load("lib.flx", "fn f(xs: [Real]) -> Real {\n  xs[5]\n}\n")
            .unwrap();
        let err = s.eval("f([1.0])").unwrap_err();
        assert!(err.starts_with("lib.flx:2:3: runtime error"), "{err}");
    });
}

#[test]
fn reloading_a_file_replaces_its_definitions() {
    with_big_stack(|| {
        let mut s = Session::new().unwrap();
        s.load("lib.flx", "fn a() -> Int { 1 }\nfn b() -> Int { 2 }\n")
            .unwrap();
        s.load("lib.flx", "fn a() -> Int { 10 }\n").unwrap();
        assert_eq!(s.eval("a()").unwrap().output, "10\n");
        assert!(s.eval("b()").is_err());
    });
}

#[test]
fn type_of_does_not_evaluate() {
    with_big_stack(|| {
        let mut s = Session::new().unwrap();
        s.eval("let v = [1.0, 2.0]").unwrap();
        assert_eq!(
            s.type_of("|x: Real| (x, v)").unwrap(),
            "fn(Real) -> (Real, [Real])\n"
        );
        assert_eq!(s.type_of("v[7]").unwrap(), "Real\n");
        assert!(s.type_of("let y = 1").is_err());
    });
}

#[test]
fn show_prints_the_stages_of_session_functions() {
    with_big_stack(|| {
        let mut s = Session::new().unwrap();
        s.eval("fn sq(x: Real) -> Real { x * x }").unwrap();
        let core = s.show("core", "sq").unwrap();
        assert!(core.contains("fn sq("), "{core}");
        let fwd = s.show("fwd", "sq").unwrap();
        assert!(fwd.contains("(Real, Real)"), "{fwd}");
        assert!(s.show("fwd", "nope").is_err());
        assert!(s.show("reverse", "sq").is_err());
    });
}

#[test]
fn completion_names_include_session_names() {
    with_big_stack(|| {
        let mut s = Session::new().unwrap();
        s.eval("fn my_fun(x: Real) -> Real { x }").unwrap();
        s.eval("let my_val = 1").unwrap();
        let names = s.completion_names();
        for n in ["my_fun", "my_val", "sin", "dot", "let"] {
            assert!(names.iter().any(|m| m == n), "{n} missing");
        }
    });
}

#[test]
fn a_failed_input_leaves_the_session_usable() {
    let out = transcript(&["let x = 1", "let y = x / 0", "y", "x + 1"]);
    assert!(out[1].as_ref().unwrap_err().contains("runtime error"));
    assert!(
        out[2]
            .as_ref()
            .unwrap_err()
            .contains("unknown variable `y`")
    );
    assert_eq!(out[3], ok("2\n"));
}

#[test]
fn an_untyped_lambda_binding_and_multi_line_input() {
    let out = transcript(&[
        "let f = |x| x * x",
        "grad(f, 3.0)",
        "let m = {\n  let a = 2.0;\n  a * f(a)\n}",
        "m",
    ]);
    assert_eq!(out[1], ok("6.0\n"));
    assert_eq!(out[3], ok("8.0\n"));
}

/// An input that needs more than the session's budget is a runtime error at its
/// location, and the session goes on with its bindings.
#[test]
fn an_input_over_the_memory_budget_fails_and_the_session_goes_on() {
    with_big_stack(|| {
        let mut s = Session::new().unwrap();
        s.set_memory_limit(64 << 20);
        s.eval("let a = range(10)").unwrap();
        let err = s
            .eval("length(replicate(200000000, 1.5))")
            .expect_err("1.6 GB");
        assert!(
            err.contains("<input 2>:1:8: runtime error: memory budget of 64 MiB"),
            "{err}"
        );
        assert_eq!(s.eval("length(a)").unwrap().output, "10\n");
    });
}

/// A line holding only a comment says nothing, like an empty line.
#[test]
fn a_comment_alone_is_not_an_error() {
    let out = transcript(&["// a note", "  // indented\n", "1 + 1 // and after"]);
    assert_eq!(out, vec![ok(""), ok(""), ok("2\n")]);
}
