//! Protocol sessions replayed in memory: the answers GradBench needs, and bad messages
//! answered with `success: false` without ending the session.

mod common;

use common::{lines, replay, replay_with};
use fluxion_gradbench::Config;
use serde_json::json;

#[test]
fn a_hello_session_answers_every_message() {
    let r = replay(&[
        json!({"id": 0, "kind": "start", "eval": "hello"}),
        json!({"id": 1, "kind": "define", "module": "hello"}),
        json!({"id": 2, "kind": "evaluate", "module": "hello", "function": "square", "input": 3.0}),
        json!({"id": 3, "kind": "analysis", "of": 2, "valid": true}),
        json!({"id": 4, "kind": "evaluate", "module": "hello", "function": "double", "input": 9.0}),
        json!({"id": 5, "kind": "end"}),
    ]);
    assert_eq!(r.len(), 6);
    for (i, response) in r.iter().enumerate() {
        assert_eq!(response["id"], i, "{response}");
    }
    assert_eq!(r[0]["tool"], "fluxion");
    assert_eq!(r[0]["config"]["ad"], "delta");
    assert_eq!(r[1]["success"], true);
    let define_timings: Vec<_> = r[1]["timings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(define_timings, ["compile", "prepare"]);
    assert_eq!(r[2]["output"], 9.0);
    assert_eq!(r[4]["output"], 18.0);
    assert_eq!(r[3], json!({"id": 3}));
    assert_eq!(r[5], json!({"id": 5}));
}

/// The `evaluate` timings of a response.
fn evaluate_timings(response: &serde_json::Value) -> Vec<u64> {
    response["timings"]
        .as_array()
        .expect("timings")
        .iter()
        .filter(|t| t["name"] == "evaluate")
        .map(|t| t["nanoseconds"].as_u64().expect("nanoseconds"))
        .collect()
}

#[test]
fn min_runs_and_min_seconds_decide_the_number_of_timed_runs() {
    let input = |runs: u64, seconds: f64| json!({"x": [1.0, 2.0, 3.0], "min_runs": runs, "min_seconds": seconds});
    let r = replay(&[
        json!({"id": 0, "kind": "define", "module": "lse"}),
        json!({"id": 1, "kind": "evaluate", "module": "lse", "function": "gradient", "input": input(5, 0.0)}),
        json!({"id": 2, "kind": "evaluate", "module": "lse", "function": "gradient", "input": input(1, 0.05)}),
        json!({"id": 3, "kind": "evaluate", "module": "lse", "function": "primal", "input": input(2, 0.0)}),
    ]);
    assert_eq!(evaluate_timings(&r[1]).len(), 5, "{}", r[1]);
    let runs = evaluate_timings(&r[2]);
    let total: u64 = runs.iter().sum();
    assert!(runs.len() > 1 && total >= 50_000_000, "{runs:?}");
    // Each function's first evaluation is preceded by its compilation to machine code
    // (the default `--backend native`) and one warm-up run, each timed apart.
    let names = |i: usize| -> Vec<String> {
        r[i]["timings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(1)[..2], ["native_compile", "warmup"]);
    assert!(names(2).iter().all(|n| n == "evaluate"));
    assert_eq!(
        names(3),
        ["native_compile", "warmup", "evaluate", "evaluate"]
    );
}

#[test]
fn bad_messages_get_an_error_and_the_session_goes_on() {
    let good = json!({"id": 99, "kind": "evaluate", "module": "lse", "function": "primal",
        "input": {"x": [0.0, 0.0]}});
    let messages = vec![
        json!({"id": 0, "kind": "define", "module": "lse"}).to_string(),
        "this is not json".to_string(),
        "[1, 2, 3]".to_string(),
        json!({"kind": "start"}).to_string(),
        json!({"id": 4}).to_string(),
        json!({"id": 5, "kind": "define", "module": "no_such_eval"}).to_string(),
        json!({"id": 6, "kind": "define"}).to_string(),
        json!({"id": 7, "kind": "evaluate", "module": "gmm", "function": "objective", "input": {}})
            .to_string(),
        json!({"id": 8, "kind": "evaluate", "module": "lse", "function": "nope", "input": {}})
            .to_string(),
        json!({"id": 9, "kind": "evaluate", "module": "lse", "function": "primal"}).to_string(),
        json!({"id": 10, "kind": "evaluate", "module": "lse", "function": "primal", "input": {"y": [1.0]}})
            .to_string(),
        json!({"id": 11, "kind": "evaluate", "module": "lse", "function": "primal", "input": {"x": [[1.0]]}})
            .to_string(),
        json!({"id": 12, "kind": "evaluate", "module": "lse", "function": "primal", "input": {"x": "text"}})
            .to_string(),
        json!({"id": 13, "kind": "evaluate", "module": "lse", "function": "primal", "input": {"x": []}})
            .to_string(),
        json!({"id": 14, "kind": "evaluate", "module": "lse", "function": "primal",
            "input": {"x": [1.0], "min_runs": -1}})
        .to_string(),
        json!({"id": 15, "kind": "evaluate", "module": "lse", "function": "primal", "input": 3.0})
            .to_string(),
        json!({"id": 16, "kind": "evaluate", "module": "lse", "function": "prelude_is_not_exposed",
            "input": {}})
        .to_string(),
        json!({"id": 17, "kind": "evaluate", "module": "lse", "function": "logsumexp",
            "input": {"v": [1.0]}})
        .to_string(),
        "".to_string(),
        good.to_string(),
    ];
    let r = replay_with(Config::default(), &messages);
    // The empty line gets no answer; every other line one.
    assert_eq!(r.len(), messages.len() - 1, "{r:#?}");
    assert_eq!(r[0]["success"], true);
    let error = |i: usize| {
        assert_eq!(r[i]["success"], false, "{}", r[i]);
        r[i]["error"].as_str().expect("an error text").to_string()
    };
    assert!(error(1).contains("not JSON"));
    assert!(r[1]["id"].is_null());
    assert!(error(2).contains("not a JSON object"));
    assert!(error(3).contains("no `id`"));
    assert!(error(4).contains("no string `kind`"));
    assert!(error(5).contains("no module `no_such_eval`"));
    assert!(error(6).contains("no string `module`"));
    assert!(error(7).contains("not defined"));
    assert!(error(8).contains("no function `nope`"));
    assert!(error(9).contains("no `input`"));
    assert!(error(10).contains("no field `x`"));
    assert!(error(11).contains("input.x[0]"));
    assert!(error(12).contains("input.x"));
    // A runtime error of the program (maximum of no elements), with its location.
    assert!(error(13).contains("runtime error"), "{}", error(13));
    assert!(error(14).contains("min_runs"));
    // A one-parameter entry takes an input that is not an object as its argument.
    assert!(
        error(15).contains("at input: expected [Real]"),
        "{}",
        error(15)
    );
    assert!(error(16).contains("no function"));
    // The prelude's functions are not the module's.
    assert!(error(17).contains("no function `logsumexp`"));
    assert_eq!(r[18]["id"], 99);
    assert_eq!(r[18]["success"], true);
    assert_eq!(r[18]["output"], std::f64::consts::LN_2);
}

#[test]
fn programs_come_from_a_directory_with_dir() {
    let dir = std::env::temp_dir().join(format!("fluxion-gb-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("mine")).unwrap();
    let config = Config {
        dir: Some(dir.clone()),
        ..Config::default()
    };
    std::fs::write(
        dir.join("mine/mine.flx"),
        "// gradbench: both returns {value, twice: {a, b}}\n\
         fn both(a: Real) -> (Real, (Real, Real)) { (a, (2.0 * a, 3.0)) }",
    )
    .unwrap();
    // Fluxion names start in lower case: the field `A` is found by case.
    let r = replay_with(
        config,
        &lines(&[
            json!({"id": 0, "kind": "define", "module": "mine"}),
            json!({"id": 1, "kind": "evaluate", "module": "mine", "function": "both",
                "input": {"A": 1.5}}),
            json!({"id": 2, "kind": "define", "module": "hello"}),
        ]),
    );
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(r[0]["success"], true, "{}", r[0]);
    assert_eq!(
        r[1]["output"],
        json!({"value": 1.5, "twice": {"a": 3.0, "b": 3.0}})
    );
    // Only the directory's programs exist then.
    assert_eq!(r[2]["success"], false);
}

#[test]
fn a_compile_error_fails_define_with_the_diagnostic() {
    let dir = std::env::temp_dir().join(format!("fluxion-gb-bad-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("bad")).unwrap();
    std::fs::write(
        dir.join("bad/bad.flx"),
        "fn f(x: Real) -> Real { x + true }",
    )
    .unwrap();
    let r = replay_with(
        Config {
            dir: Some(dir.clone()),
            ..Config::default()
        },
        &lines(&[json!({"id": 0, "kind": "define", "module": "bad"})]),
    );
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(r[0]["success"], false);
    assert!(
        r[0]["error"].as_str().unwrap().contains("bad.flx:1:"),
        "{}",
        r[0]
    );
}
