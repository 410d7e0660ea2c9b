//! `fluxion repl` as a user types it: driven through a pseudo-terminal (rexpect), so
//! the line editor, completion and prompts are the real ones.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use rexpect::session::{PtySession, spawn_command};

const PROMPT: &str = "fluxion> ";

/// A directory of its own for each test: files to load and a `HOME` for the history.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fluxion-repl-pty-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn repl(dir: &PathBuf, args: &[&str]) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fluxion"));
    command
        .arg("repl")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir);
    let mut p = spawn_command(command, Some(30_000)).expect("fluxion repl starts in a pty");
    p.exp_string(PROMPT).expect("first prompt");
    p
}

/// Types `line` and waits for `expected` in what follows it, then the prompt. Lines are
/// kept shorter than the terminal, so that the editor never redraws them (a redraw
/// repeats the prompt): the first line break after the line is the editor's accepting
/// it.
fn type_line(p: &mut PtySession, line: &str, expected: &str) {
    assert!(line.len() + PROMPT.len() < 80, "`{line}` would wrap");
    p.send_line(line).unwrap();
    p.exp_string("\r\n").unwrap();
    if !expected.is_empty() {
        p.exp_string(expected)
            .unwrap_or_else(|e| panic!("after `{line}`, expected `{expected}`: {e}"));
    }
    p.exp_string(PROMPT)
        .unwrap_or_else(|e| panic!("no prompt after `{line}`: {e}"));
}

#[test]
fn a_scripted_session() {
    let dir = temp_dir("script");
    std::fs::write(dir.join("lib.flx"), "fn twice(x: Int) -> Int { 2 * x }\n").unwrap();
    std::fs::write(
        dir.join("more.flx"),
        "fn thrice(x: Int) -> Int {\n  3 * x\n}\n",
    )
    .unwrap();
    let mut p = repl(&dir, &["lib.flx"]);
    type_line(&mut p, "twice(21)", "42");
    type_line(&mut p, "fn sq(x: Real) -> Real { x * x }", "");
    type_line(&mut p, "let y = sq(3.0)", "");
    type_line(&mut p, "y + 0.5", "9.5");
    // Redefining a function: later inputs use the new one.
    type_line(&mut p, "fn sq(x: Real) -> Real { x * x * x }", "");
    type_line(&mut p, "sq(2.0)", "8.0");
    type_line(&mut p, "y * 2.0", "18.0");
    type_line(
        &mut p,
        ":type |v: [Real]| (v[0], y)",
        "fn([Real]) -> (Real, Real)",
    );
    type_line(&mut p, ":help", ":reload");
    type_line(&mut p, ":show fwd sq", "fn sq_fwd(");
    // An error points at the text as typed: column 5 of this one-line input.
    p.send_line("y + nope").unwrap();
    p.exp_string("\r\n").unwrap();
    p.exp_regex(r"<input \d+>:1:5: type error: unknown variable `nope`")
        .unwrap();
    p.exp_string(PROMPT).unwrap();
    type_line(&mut p, ":frobnicate", "unknown command `:frobnicate`");
    // Brackets left open continue the input on the next line.
    p.send_line("let z = [1.0,").unwrap();
    p.exp_string("\r\n").unwrap();
    p.exp_string("   ...> ").unwrap();
    type_line(&mut p, "2.5]", "");
    type_line(&mut p, "z[1] * 10.0", "25.0");
    // Loading a file; a runtime error in it is reported at its line.
    type_line(&mut p, ":load more.flx", "");
    type_line(&mut p, "thrice(5)", "15");
    // Tab completes a name defined by the loaded file.
    p.send("thr\t").unwrap();
    p.flush().unwrap();
    p.exp_string("thrice").unwrap();
    type_line(&mut p, "(7)", "21");
    std::fs::write(
        dir.join("more.flx"),
        "fn thrice(x: Int) -> Int {\n  [x][3]\n}\n",
    )
    .unwrap();
    type_line(&mut p, ":reload", "");
    type_line(&mut p, "thrice(1)", "more.flx:2:3: runtime error");
    p.send_line(":quit").unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn ctrl_d_leaves() {
    let dir = temp_dir("ctrl-d");
    let mut p = repl(&dir, &[]);
    type_line(&mut p, "1 + 1", "2");
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}

/// Ctrl-C during a long evaluation stops it and returns to the prompt with the
/// session's bindings (it killed the REPL and every binding with it).
#[test]
fn ctrl_c_stops_an_evaluation_not_the_session() {
    let dir = temp_dir("ctrl-c");
    let mut p = repl(&dir, &[]);
    type_line(&mut p, "let kept = 41", "");
    // About a minute of work: Ctrl-C comes long before it ends.
    p.send_line("fold(|a, i| a + sin(to_real(i)), 0.0, range(200000000))")
        .unwrap();
    p.exp_string("\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    p.send_control('c').unwrap();
    p.exp_string("evaluation interrupted (Ctrl-C)")
        .expect("the evaluation stops");
    p.exp_string(PROMPT).expect("back at the prompt");
    type_line(&mut p, "kept + 1", "42");
    p.send_line(":quit").unwrap();
    p.exp_eof().unwrap();
}

/// The regression of issue 14: every input re-ran every earlier `let`. A `let` that
/// takes a noticeable time is timed, then used three times; each use must take well
/// under the `let`'s own time (before, each took at least as long).
#[test]
fn a_slow_let_is_not_run_again() {
    let dir = temp_dir("slow");
    let mut p = repl(&dir, &[]);
    let start = Instant::now();
    for line in [
        "let slow = fold(|a, i| a + fold(|b, j|",
        "  b + sin(to_real(i * j)), 0.0, range(3000)),",
    ] {
        p.send_line(line).unwrap();
        p.exp_string("\r\n").unwrap();
        p.exp_string("   ...> ").unwrap();
    }
    type_line(&mut p, "  0.0, range(2000))", "");
    let slow = start.elapsed();
    assert!(
        slow > Duration::from_millis(100),
        "the let took only {slow:?}"
    );
    for i in 0..3 {
        let start = Instant::now();
        type_line(
            &mut p,
            &format!("slow * 0.0 + {i}.25"),
            &format!("{i}.25\r\n"),
        );
        let use_time = start.elapsed();
        assert!(
            use_time * 3 < slow,
            "a use of the binding took {use_time:?}, the let {slow:?}"
        );
    }
    p.send_line(":q").unwrap();
    p.exp_eof().unwrap();
}
