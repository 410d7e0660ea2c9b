//! End-to-end tests of the `fluxion` binary: every example with its expected output,
//! the failing examples with their locations, exit statuses, `--args`, `--json`,
//! `show` round trips, the memory budget and the REPL.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn fluxion() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fluxion"))
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn run(args: &[&str]) -> Output {
    fluxion().args(args).output().expect("fluxion runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write_temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fluxion-cli-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn example_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "flx"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_example_prints_its_expected_output() {
    let files = example_files(&examples_dir());
    assert!(
        files.len() >= 8,
        "expected at least 8 examples, found {}",
        files.len()
    );
    for file in files {
        let expected = std::fs::read_to_string(file.with_extension("expected"))
            .unwrap_or_else(|_| panic!("{} has no .expected file", file.display()));
        let out = run(&["run", file.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            file.display(),
            stderr(&out)
        );
        assert_eq!(stdout(&out), expected, "{}", file.display());
    }
}

#[test]
fn failing_examples_exit_1_and_name_their_line() {
    let dir = examples_dir().join("errors");
    for file in example_files(&dir) {
        let line: usize = std::fs::read_to_string(file.with_extension("expected_line"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let path = file.to_str().unwrap();
        let out = run(&["run", path]);
        assert_eq!(out.status.code(), Some(1), "{path}");
        let err = stderr(&out);
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.starts_with(&format!("{path}:{line}:")),
            "{path}: first line is {first:?}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn show_core_round_trips_every_example() {
    for file in example_files(&examples_dir()) {
        let path = file.to_str().unwrap();
        let shown = run(&["show", path, "--stage", "core"]);
        assert_eq!(shown.status.code(), Some(0), "{path}: {}", stderr(&shown));
        let core_file = write_temp(
            &format!("{}_core.flx", file.file_stem().unwrap().to_str().unwrap()),
            &stdout(&shown),
        );
        let original = run(&["run", path]);
        let reparsed = run(&["run", core_file.to_str().unwrap()]);
        assert_eq!(
            reparsed.status.code(),
            Some(0),
            "{path}: printed Core fails: {}",
            stderr(&reparsed)
        );
        assert_eq!(stdout(&original), stdout(&reparsed), "{path}");
        // Printing is stable: the printed program prints the same way again, up to
        // variable numbering, so compare the shape only.
        let again = run(&["show", core_file.to_str().unwrap()]);
        assert_eq!(again.status.code(), Some(0));
    }
}

#[test]
fn args_are_decoded_against_parameter_types() {
    let src = write_temp(
        "args.flx",
        "enum Shape { Circle(Real), Rect(Real, Real), Dot }\n\
         fn main(s: Shape, xs: [Real], p: (Int, Bool), u: ()) -> (Shape, Real) { (s, sum(xs) + to_real(p.0)) }\n",
    );
    let path = src.to_str().unwrap();
    let out = run(&[
        "run",
        path,
        "--args",
        r#"[{"Rect": [1.0, 2]}, [1, 2.5], [3, true], null]"#,
    ]);
    assert_eq!(stdout(&out), "(Rect(1.0, 2.0), 6.5)\n", "{}", stderr(&out));
    let out = run(&[
        "run",
        path,
        "--json",
        "--args",
        r#"[{"Dot": []}, [], [0, false], null]"#,
    ]);
    assert_eq!(stdout(&out), "[{\"Dot\":[]},0.0]\n", "{}", stderr(&out));
    let args_file = write_temp("args.json", r#"["Dot", [0.5], [1, true], null]"#);
    let out = run(&["run", path, "--args", &format!("@{}", args_file.display())]);
    assert_eq!(stdout(&out), "(Dot, 1.5)\n", "{}", stderr(&out));
    for bad in [
        r#"[{"Dot": []}, [1, "x"], [3, true], null]"#,
        r#"[1]"#,
        r#"not json"#,
        r#"[{"Square": [1.0]}, [], [0, false], null]"#,
        r#"[{"Dot": []}, [], [0.5, false], null]"#,
    ] {
        let out = run(&["run", path, "--args", bad]);
        assert_eq!(out.status.code(), Some(1), "{bad}");
        assert!(stderr(&out).contains("--args"), "{bad}: {}", stderr(&out));
    }
}

#[test]
fn json_output_spells_non_finite_reals_as_strings() {
    let src = write_temp(
        "nonfinite.flx",
        "fn main() -> [Real] { [0.0 / 0.0, 1.0 / 0.0, -1.0 / 0.0, 1e-7] }\n",
    );
    let out = run(&["run", src.to_str().unwrap(), "--json"]);
    assert_eq!(stdout(&out), "[\"NaN\",\"inf\",\"-inf\",1e-7]\n");
    let out = run(&["run", src.to_str().unwrap()]);
    assert_eq!(stdout(&out), "[NaN, inf, -inf, 1e-7]\n");
}

#[test]
fn exit_statuses_follow_the_contract() {
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(run(&["run"]).status.code(), Some(2));
    assert_eq!(run(&["run", "/no/such/file.flx"]).status.code(), Some(2));
    assert_eq!(run(&["run", "x.flx", "--bogus"]).status.code(), Some(2));
    assert_eq!(
        run(&["show", "x.flx", "--stage", "nonsense"]).status.code(),
        Some(2)
    );
    let src = write_temp(
        "entry.flx",
        "fn main() -> Int { 1 }\nfn other(x: Int) -> Int { x * 2 }\n",
    );
    let path = src.to_str().unwrap();
    assert_eq!(run(&["check", path]).status.code(), Some(0));
    let out = run(&["run", path, "--entry", "other", "--args", "[21]"]);
    assert_eq!(stdout(&out), "42\n");
    assert_eq!(
        run(&["run", path, "--entry", "missing"]).status.code(),
        Some(1)
    );
}

#[test]
fn runtime_faults_are_located_errors() {
    for (src, needle) in [
        ("fn main() -> Int { 1 / 0 }", "division by zero"),
        ("fn main() -> Int { 9223372036854775807 + 1 }", "overflow"),
        ("fn main() -> Int { -9223372036854775808 / -1 }", "overflow"),
        (
            "fn main() -> [Real] { build(100000000000000, |i| to_real(i)) }",
            "too large",
        ),
        ("fn main() -> [Int] { range(-1) }", "negative"),
        ("fn main() -> Real { maximum([]) }", "empty"),
        ("fn main() -> [Real] { slice([1.0], 1, 5) }", "out of range"),
        (
            "fn main() -> [Real] { map2(|a, b| a + b, [1.0], [1.0, 2.0]) }",
            "different lengths",
        ),
        ("fn main() -> Int { to_int(0.0 / 0.0) }", "to_int"),
    ] {
        let file = write_temp("fault.flx", src);
        let out = run(&["run", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{src}");
        let err = stderr(&out);
        assert!(err.contains(needle), "{src}: {err}");
        assert!(err.contains("fault.flx:1:"), "{src}: {err}");
    }
}

#[test]
fn deep_recursion_runs_or_stops_cleanly() {
    let src = write_temp(
        "deep.flx",
        "fn count(n: Int) -> Int { if n == 0 { 0 } else { 1 + count(n - 1) } }\n\
         fn main() -> Int { count(100000) }\n",
    );
    let out = run(&["run", src.to_str().unwrap()]);
    assert_eq!(stdout(&out), "100000\n", "{}", stderr(&out));
    let src = write_temp(
        "deeper.flx",
        "fn count(n: Int) -> Int { if n == 0 { 0 } else { 1 + count(n - 1) } }\n\
         fn main() -> Int { count(1000000000000) }\n",
    );
    let out = run(&["run", src.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("stack depth exceeded"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_memory_budget_stops_a_runaway_program_cleanly() {
    let src = write_temp(
        "nested_build.flx",
        "fn main() -> Int {\n    length(build(100000, |i| build(100000, |j| i + j)))\n}\n",
    );
    let path = src.to_str().unwrap();
    let start = std::time::Instant::now();
    let out = run(&["run", path, "--memory-limit", "64M"]);
    assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("nested_build.flx:2:30: runtime error: memory budget of 64 MiB exceeded"),
        "{err}"
    );
    // One huge request fails before it is attempted.
    let src = write_temp(
        "huge_request.flx",
        "fn main() -> Int { length(replicate(200000000, 1.5)) }\n",
    );
    let out = run(&["run", src.to_str().unwrap(), "--memory-limit", "64M"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("memory budget of 64 MiB exceeded: this operation needs 1.5 GiB"),
        "{}",
        stderr(&out)
    );
    for bad in ["64X", "0", "1.5G", ""] {
        let out = run(&["run", path, "--memory-limit", bad]);
        assert_eq!(out.status.code(), Some(2), "--memory-limit {bad:?}");
    }
    let fits = write_temp("fits.flx", "fn main() -> Int { sum(range(1000000)) }\n");
    let out = run(&["run", fits.to_str().unwrap(), "--memory-limit", "16M"]);
    assert_eq!(stdout(&out), "499999500000\n", "{}", stderr(&out));
}

/// `fluxion run FILE FLAGS` under an address-space limit of `kib` KiB (`ulimit -v`).
fn run_under_ulimit(kib: u64, src: &std::path::Path, flags: &str) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {kib} && exec '{}' run '{}' {flags}",
            env!("CARGO_BIN_EXE_fluxion"),
            src.display()
        ))
        .output()
        .expect("sh runs")
}

/// Under an address-space limit (`ulimit -v`), the default budget fits inside it:
/// the program stops with a runtime error instead of an allocation failure (abort).
#[test]
fn the_default_budget_honours_an_address_space_limit() {
    let src = write_temp(
        "ranges.flx",
        "fn main() -> Int {\n    length(build(100000, |i| range(1000000)))\n}\n",
    );
    let out = run_under_ulimit(2_000_000, &src, "");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("ranges.flx:2:30: runtime error: memory budget of"),
        "{err}"
    );
}

/// A large result comes back from native code at the interpreter's cost: 3·10⁷ reals
/// under a 1.5 GB address space (read through boxed values, the result took three
/// times its size and the allocation aborted, status 134).
#[test]
fn a_large_native_result_fits_where_the_interpreter_fits() {
    let src = write_temp(
        "large_result.flx",
        "fn main() -> [Real] { replicate(30000000, 1.5) }\n",
    );
    let out = run_under_ulimit(1_500_000, &src, "--backend native");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // "[1.5, 1.5, …]": five bytes an element, less the last ", ", plus "[]\n".
    assert_eq!(out.stdout.len(), 30000000 * 5 - 2 + 3);
}

/// Under an address-space limit too small for the 1.25 GiB evaluation stack, a smaller
/// stack is used: programs run, and deep recursion is still a clean error (before:
/// "internal compiler error", status 101).
#[test]
fn a_tight_address_space_limit_gets_a_smaller_stack_not_a_crash() {
    let run = |name: &str, text: &str| {
        let src = write_temp(name, text);
        run_under_ulimit(1_000_000, &src, "")
    };
    let out = run("small.flx", "fn main() -> Int { length(range(1000)) }\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1000");
    let out = run(
        "deep.flx",
        "fn r(n: Int) -> Int { if n == 0 { 0 } else { 1 + r(n - 1) } }\nfn main() -> Int { r(100000000) }\n",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("stack depth exceeded"), "{err}");
}

/// A value may nest as deep as memory allows (a list of 200 000 cells built by a
/// `fold` is 200 000 nested enum values), and every walk over one — lifting it into
/// dual numbers or deltas, adding tangents, printing, JSON in and out — takes stack per
/// level. Under `ulimit -v` the evaluation stack is 80 MiB, too small for such a walk
/// on the thread's own stack: each must carry on (on heap segments), not abort (134).
#[test]
fn values_nested_hundreds_of_thousands_deep_are_walked_not_a_crash() {
    const N: usize = 200_000;
    let list = format!(
        "enum L {{ Nil, Cons(Int, L) }}\n\
         enum R {{ RNil, RCons(Real, R) }}\n\
         fn ints() -> L {{ fold(|acc, x| Cons(x, acc), Nil, range({N})) }}\n\
         fn reals() -> R {{ fold(|acc, x| RCons(1.0, acc), RNil, range({N})) }}\n\
         fn hd(l: R) -> Real {{ match l {{ RNil => 0.0, RCons(h, _) => h }} }}\n\
         fn head(l: L) -> Int {{ match l {{ Nil => -1, Cons(h, _) => h }} }}\n"
    );
    let run = |name: &str, main: &str, flags: &str| {
        let src = write_temp(name, &format!("{list}{main}\n"));
        run_under_ulimit(1_000_000, &src, flags)
    };
    let cases = [
        (
            "jvp",
            "fn main() -> Real { let l = reals(); jvp(hd, l, l).1 }",
            "",
            "1.0",
        ),
        (
            "taylor",
            "fn main() -> (Real, [Real]) { let l = reals(); taylor(hd, l, l, 2) }",
            "",
            "(1.0, [1.0, 0.0])",
        ),
        (
            "grad_delta",
            "fn main() -> Real { hd(grad(hd, reals())) }",
            "--ad delta",
            "1.0",
        ),
        (
            "grad_chad",
            "fn main() -> Real { hd(grad(hd, reals())) }",
            "--ad chad",
            "1.0",
        ),
        (
            "vjp_delta",
            "fn main() -> Real { let (y, pb) = vjp(hd, reals()); hd(pb(2.0)) }",
            "--ad delta",
            "2.0",
        ),
        (
            "vjp_chad",
            "fn main() -> Real { let (y, pb) = vjp(hd, reals()); hd(pb(2.0)) }",
            "--ad chad",
            "2.0",
        ),
        (
            "jvp_fwd_chad",
            "fn main() -> Real { let l = reals(); jvp(hd, l, l).1 }",
            "--fwd chad",
            "1.0",
        ),
        // Captured by the differentiated function, not its argument (lifted with the
        // zero tangent or delta by the run time's walks).
        (
            "captured_jvp",
            "fn main() -> Real { let l = reals(); jvp(|x: Real| x * x * hd(l), 1.0, 1.0).1 }",
            "",
            "2.0",
        ),
        (
            "captured_grad_of_grad",
            "fn main() -> Real { let l = reals(); grad(|x: Real| grad(|y: Real| y * y * x * hd(l), x), 1.5) }",
            "--ad chad",
            "6.0",
        ),
    ];
    for (name, main, flags, expected) in cases {
        let out = run(&format!("deep_{name}.flx"), main, flags);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim(), expected, "{name}");
    }
    // Printed as text and as JSON.
    let last = N - 1;
    let out = run("deep_print.flx", "fn main() -> L { ints() }", "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!("Cons({last}, Cons({}, ", last - 1)),
        "{}",
        &text[..60]
    );
    assert!(text.trim_end().ends_with(&format!("Nil{}", ")".repeat(N))));
    let out = run("deep_json.flx", "fn main() -> L { ints() }", "--json");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json = stdout(&out);
    assert!(
        json.starts_with(&format!("{{\"Cons\":[{last},{{\"Cons\":[{}", last - 1)),
        "{}",
        &json[..60]
    );
    assert!(
        json.trim_end()
            .ends_with(&format!("{{\"Nil\":[]}}{}", "]}".repeat(N)))
    );
    // Read back from `--args` (serde_json alone refuses more than 128 levels).
    let args = write_temp("deep_args.json", &format!("[{}]", json.trim_end()));
    let flags = format!("--args @'{}'", args.display());
    let out = run("deep_args.flx", "fn main(l: L) -> Int { head(l) }", &flags);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), last.to_string());
    // Dropped and compared with `==` a million levels deep, on both backends (each
    // recursed once per level: an abort near a million levels under this limit).
    let deeper = "fn d(n: Int) -> L { fold(|acc, x| Cons(x, acc), Nil, range(n)) }";
    for backend in ["interp", "native"] {
        for (name, main, expected) in [
            ("drop", "fn main() -> Int { let l = d(1500000); 7 }", "7"),
            (
                "equal",
                "fn main() -> Bool { d(1000000) == d(1000000) }",
                "true",
            ),
        ] {
            let flags = format!("--backend {backend}");
            let out = run(
                &format!("deep_{name}_{backend}.flx"),
                &format!("{deeper}\n{main}"),
                &flags,
            );
            assert_eq!(
                out.status.code(),
                Some(0),
                "{name} {backend}: {}",
                stderr(&out)
            );
            assert_eq!(stdout(&out).trim(), expected, "{name} {backend}");
        }
    }
}

/// Under `ulimit -v`, the default budget is what is left of the address space (not of
/// the limit), and a run-time translation (nested forward mode grows the code about
/// 3x a level) reserves its size first: a clean budget error, never an abort (134).
#[test]
fn nested_forward_mode_under_an_address_space_limit_stops_cleanly() {
    let src = write_temp(
        "nested.flx",
        "fn nth(n: Int, x: Real) -> Real { if n == 0 { sin(x) * x } else { diff(|y| nth(n - 1, y), x) } }\n\
         fn main() -> Real { nth(16, 0.5) }\n",
    );
    for limit in [400_000, 1_500_000] {
        let out = run_under_ulimit(limit, &src, "");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "ulimit -v {limit}: {err}");
        assert!(err.contains("runtime error: memory budget of"), "{err}");
    }
}

#[test]
fn deeply_nested_source_is_a_syntax_error_not_a_crash() {
    let src = write_temp(
        "nested.flx",
        &format!(
            "fn main() -> Int {{ {}1{} }}",
            "(".repeat(100_000),
            ")".repeat(100_000)
        ),
    );
    let out = run(&["check", src.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("nesting too deep"));
}

/// `fluxion repl ARGS` with `input` piped in, to its end.
fn repl_with_input(args: &[&str], input: &str) -> std::process::Output {
    let mut child = fluxion()
        .arg("repl")
        .args(args)
        .env("HOME", std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn repl_evaluates_definitions_lets_and_multiline_input() {
    let input = "1 + 2\nfn sq(x: Real) -> Real {\n  x * x\n}\nlet y = sq(3.0)\ny + 1.0\nnope\ndot([1.0, 2.0], [3.0, 4.0])\n";
    let out = repl_with_input(&[], input);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "3\n10.0\n11.0\n");
    assert!(stderr(&out).contains("unknown variable `nope`"));
}

#[test]
fn repl_reports_input_left_open_at_its_end() {
    // It was dropped without a word (exit 0, nothing printed).
    let out = repl_with_input(&[], "1 + 1\nfn f(x: Int) -> Int {\n  x + 1\n");
    assert_eq!(stdout(&out), "2\n");
    let err = stderr(&out);
    assert!(
        err.contains("syntax error") && err.contains("end of input"),
        "{err}"
    );
}

#[test]
fn repl_loads_a_file() {
    let src = write_temp("lib.flx", "fn twice(x: Int) -> Int { 2 * x }\n");
    let out = repl_with_input(&[src.to_str().unwrap()], "twice(21)\n");
    assert_eq!(stdout(&out), "42\n");
}

#[test]
fn every_ad_mode_runs_and_unknown_modes_are_usage_errors() {
    let plain = write_temp(
        "plain_ad.flx",
        "fn main() -> Real { diff(|x: Real| x * x, 3.0) }\n",
    );
    let reverse = write_temp(
        "reverse_ad.flx",
        "fn main() -> Real { grad(|x: Real| x * x, 3.0) }\n",
    );
    for mode in ["fwd", "chad", "delta"] {
        let out = run(&["run", plain.to_str().unwrap(), "--ad", mode]);
        assert_eq!(stdout(&out), "6.0\n", "{mode}: {}", stderr(&out));
    }
    for mode in ["fwd", "chad", "delta"] {
        let out = run(&["run", reverse.to_str().unwrap(), "--ad", mode]);
        assert_eq!(stdout(&out), "6.0\n", "{mode}: {}", stderr(&out));
    }
    assert_eq!(
        run(&["run", reverse.to_str().unwrap(), "--ad", "nonsense"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn fwd_chad_runs_jvp_by_forward_chad_and_show_prints_pushforwards() {
    let file = write_temp(
        "chad_fwd.flx",
        "fn f(x: Real, y: Real) -> Real { sin(x) * y }\n\
         fn main() -> (Real, Real) { jvp(f, (0.0, 2.0), (1.0, 0.0)) }\n",
    );
    for fwd in ["dual", "chad"] {
        let out = run(&["run", file.to_str().unwrap(), "--fwd", fwd]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out), "(0.0, 2.0)\n", "--fwd {fwd}");
    }
    let out = run(&["run", file.to_str().unwrap(), "--fwd", "tape"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "show",
        file.to_str().unwrap(),
        "--stage",
        "chad-fwd",
        "--entry",
        "f",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("fn f_chadfwd("), "{text}");
    assert!(text.contains("pushforward"), "{text}");
}

/// `show --stage resolved`: the program as both backends run it, its operators made
/// into derivative code ahead of time (the delta translation of `f` and the tape's
/// primitives by name).
#[test]
fn show_stage_resolved_prints_the_derivative_code_the_backends_run() {
    let file = write_temp(
        "resolved.flx",
        "fn f(x: Real) -> Real { x * sin(x) }\nfn main() -> Real { grad(f, 3.0) }\n",
    );
    let out = run(&[
        "show",
        file.to_str().unwrap(),
        "--stage",
        "resolved",
        "--entry",
        "main",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("fn main("), "{text}");
    assert!(text.contains("fn f_delta("), "{text}");
    assert!(text.contains("%delta_grad("), "{text}");
    assert!(!text.contains("grad(f,"), "{text}");
}

#[test]
fn show_stage_chad_prints_values_with_backpropagators() {
    let file = write_temp(
        "chad_show.flx",
        "fn f(x: Real, y: Real) -> Real { sin(x) * y }\n",
    );
    let out = run(&["show", file.to_str().unwrap(), "--stage", "chad"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("fn f_chad("), "{text}");
    assert!(text.contains("%lscale("), "{text}");
    let nested = write_temp(
        "chad_show_nested.flx",
        "fn main() -> Real { grad(|x: Real| x * x, 3.0) }\n",
    );
    // Asked for by name, it is an error; among every function of the file, a note.
    let out = run(&[
        "show",
        nested.to_str().unwrap(),
        "--stage",
        "chad",
        "--entry",
        "main",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("differentiated by forward mode"),
        "{}",
        stderr(&out)
    );
    let out = run(&["show", nested.to_str().unwrap(), "--stage", "chad"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("// CHAD does not translate `main`"),
        "{}",
        stdout(&out)
    );
}
