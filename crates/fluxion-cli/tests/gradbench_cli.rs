//! `fluxion gradbench` as a process: GradBench talks to it through pipes, and a bad
//! line must not end it.

use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn gradbench_subcommand_answers_each_line_and_survives_bad_ones() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fluxion"))
        .args(["gradbench", "--ad", "chad"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("fluxion runs");
    let session = concat!(
        r#"{"id":0,"kind":"start","eval":"hello"}"#,
        "\n{oops\n",
        r#"{"id":1,"kind":"define","module":"hello"}"#,
        "\n",
        r#"{"id":2,"kind":"evaluate","module":"hello","function":"double","input":2.5}"#,
        "\n",
    );
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(session.as_bytes())
        .expect("write");
    let out = child
        .wait_with_output()
        .expect("fluxion ends with its input");
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["config"]["ad"], "chad");
    assert_eq!(lines[1]["success"], false);
    assert_eq!(lines[2]["success"], true);
    assert_eq!(lines[3]["output"], 5.0);
}
