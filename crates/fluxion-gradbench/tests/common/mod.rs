//! Replaying protocol sessions in memory, and independent checks of outputs.

#![allow(dead_code)]

use fluxion_gradbench::Config;
use serde_json::{Value as Json, json};

/// The responses to `messages`, one each, from a session with `config`.
pub fn replay_with(config: Config, messages: &[String]) -> Vec<Json> {
    let input = messages.join("\n") + "\n";
    let output = fluxion_driver::with_big_stack(move || {
        let mut out = Vec::new();
        fluxion_gradbench::serve(input.as_bytes(), &mut out, config).expect("in-memory streams");
        out
    });
    String::from_utf8(output)
        .expect("UTF-8 responses")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each response is one line of JSON"))
        .collect()
}

pub fn replay(messages: &[Json]) -> Vec<Json> {
    replay_with(Config::default(), &lines(messages))
}

pub fn lines(messages: &[Json]) -> Vec<String> {
    messages.iter().map(Json::to_string).collect()
}

/// A session that defines `module` and evaluates `function` at each input: the
/// outputs, in order (panics on a failed response, naming its error).
pub fn evaluate_all(config: Config, module: &str, calls: &[(&str, Json)]) -> Vec<Json> {
    let mut messages = vec![json!({"id": 0, "kind": "define", "module": module})];
    for (i, (function, input)) in calls.iter().enumerate() {
        messages.push(json!({"id": i + 1, "kind": "evaluate", "module": module,
            "function": function, "input": input}));
    }
    let responses = replay_with(config, &lines(&messages));
    assert_eq!(responses.len(), messages.len());
    assert_eq!(
        responses[0]["success"], true,
        "define {module}: {}",
        responses[0]
    );
    responses[1..]
        .iter()
        .map(|r| {
            assert_eq!(r["success"], true, "{}", r["error"]);
            r["output"].clone()
        })
        .collect()
}

/// [`finite_differences`] of a scalar output.
pub fn scalar_finite_differences(
    module: &str,
    function: &str,
    input: &Json,
    path: &str,
) -> Vec<f64> {
    finite_differences(module, function, input, path, numbers)
        .into_iter()
        .map(|d| d[0])
        .collect()
}

pub fn evaluate(module: &str, function: &str, input: Json) -> Json {
    evaluate_all(Config::default(), module, &[(function, input)]).remove(0)
}

/// Every number in a JSON value, in order.
pub fn numbers(v: &Json) -> Vec<f64> {
    match v {
        Json::Number(n) => vec![n.as_f64().expect("a number")],
        Json::Array(xs) => xs.iter().flat_map(numbers).collect(),
        other => panic!("not numbers: {other}"),
    }
}

/// Central finite differences of `output` (numbers read from `function`'s result) at
/// `input`, in each real at `path` (a JSON pointer to a real or to an array of reals
/// or of arrays of reals): one vector a coordinate, from one session of two
/// evaluations a coordinate.
pub fn finite_differences(
    module: &str,
    function: &str,
    input: &Json,
    path: &str,
    output: impl Fn(&Json) -> Vec<f64>,
) -> Vec<Vec<f64>> {
    let at = input.pointer(path).expect("the path exists");
    let coords = if at.is_number() {
        vec![vec![]]
    } else {
        coordinates(at)
    };
    let h = 1e-6;
    let mut calls = Vec::new();
    for c in &coords {
        for sign in [1.0, -1.0] {
            let mut moved = input.clone();
            let x = pointer(&mut moved, path, c);
            *x = json!(x.as_f64().expect("a real") + sign * h);
            calls.push((function, moved));
        }
    }
    let outs = evaluate_all(Config::default(), module, &calls);
    outs.chunks(2)
        .map(|pair| {
            let (up, down) = (output(&pair[0]), output(&pair[1]));
            up.iter()
                .zip(down)
                .map(|(u, d)| (u - d) / (2.0 * h))
                .collect()
        })
        .collect()
}

/// The index paths of the reals in an array (of arrays) of reals.
fn coordinates(v: &Json) -> Vec<Vec<usize>> {
    match v {
        Json::Array(xs) => xs
            .iter()
            .enumerate()
            .flat_map(|(i, x)| {
                let mut inner = coordinates(x);
                if inner.is_empty() && x.is_number() {
                    inner.push(vec![]);
                }
                inner.into_iter().map(move |mut p| {
                    p.insert(0, i);
                    p
                })
            })
            .collect(),
        _ => vec![],
    }
}

fn pointer<'a>(v: &'a mut Json, path: &str, coords: &[usize]) -> &'a mut Json {
    let mut x = v.pointer_mut(path).expect("the path exists");
    for &i in coords {
        x = &mut x[i];
    }
    x
}

/// Asserts |a - b| <= tol·(1 + |b|) elementwise.
pub fn assert_close(what: &str, a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}[{i}]: {x} against {y}"
        );
    }
}

/// A deterministic pseudo-random number in [0, 1) (xorshift), for inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.next()).collect()
    }

    pub fn matrix(&mut self, rows: usize, cols: usize) -> Vec<Vec<f64>> {
        (0..rows).map(|_| self.vec(cols)).collect()
    }
}
