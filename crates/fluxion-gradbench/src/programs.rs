//! The Fluxion program behind each GradBench module: `gradbench/<eval>/<eval>.flx` in
//! the repository, built into the binary (so `fluxion gradbench` works from any
//! directory), or read from a directory given with `--dir` (to try a program without
//! rebuilding).

use std::path::Path;

/// The evals this tool implements, with their programs.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("hello", include_str!("../../../gradbench/hello/hello.flx")),
    ("lse", include_str!("../../../gradbench/lse/lse.flx")),
    ("llsq", include_str!("../../../gradbench/llsq/llsq.flx")),
    ("gmm", include_str!("../../../gradbench/gmm/gmm.flx")),
    ("det", include_str!("../../../gradbench/det/det.flx")),
    (
        "kmeans",
        include_str!("../../../gradbench/kmeans/kmeans.flx"),
    ),
    ("ode", include_str!("../../../gradbench/ode/ode.flx")),
    ("lstm", include_str!("../../../gradbench/lstm/lstm.flx")),
    ("ba", include_str!("../../../gradbench/ba/ba.flx")),
    ("ht", include_str!("../../../gradbench/ht/ht.flx")),
    (
        "saddle",
        include_str!("../../../gradbench/saddle/saddle.flx"),
    ),
    (
        "particle",
        include_str!("../../../gradbench/particle/particle.flx"),
    ),
];

/// The source of module `name` and the file name diagnostics show; `None` when this
/// tool has no such module (GradBench then skips the eval).
pub fn source(name: &str, dir: Option<&Path>) -> Option<(String, String)> {
    let file = format!("gradbench/{name}/{name}.flx");
    match dir {
        Some(dir) => {
            // Module names come from the eval: only plain names reach the file system.
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            let path = dir.join(name).join(format!("{name}.flx"));
            let text = std::fs::read_to_string(&path).ok()?;
            Some((path.display().to_string(), text))
        }
        None => EMBEDDED
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, text)| (file, text.to_string())),
    }
}

/// How a result is sent: as its JSON encoding, or a tuple as an object whose fields
/// are the tuple's components, each shaped in turn.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    Plain,
    Object(Vec<(String, Shape)>),
}

/// The shape of FUNCTION's result, from a line `// gradbench: FUNCTION returns {a, b:
/// {c, d}}` in the program (a tuple of two, the second a tuple of two, sent as
/// `{"a": .., "b": {"c": .., "d": ..}}`); plain without such a line. The error says
/// why a directive does not parse.
pub fn output_shape(text: &str, function: &str) -> Result<Shape, String> {
    for line in text.lines() {
        let Some(rest) = line
            .trim()
            .strip_prefix("//")
            .and_then(|r| r.trim().strip_prefix("gradbench:"))
        else {
            continue;
        };
        let Some((name, spec)) = rest.trim().split_once(" returns ") else {
            continue;
        };
        if name.trim() == function {
            let mut chars = spec
                .trim()
                .chars()
                .filter(|c| !c.is_whitespace())
                .peekable();
            let shape = parse_object(&mut chars)?;
            return match chars.next() {
                None => Ok(shape),
                Some(c) => Err(format!(
                    "unexpected `{c}` after the output shape of `{function}`"
                )),
            };
        }
    }
    Ok(Shape::Plain)
}

fn parse_object(
    chars: &mut std::iter::Peekable<impl Iterator<Item = char>>,
) -> Result<Shape, String> {
    if chars.next() != Some('{') {
        return Err("an output shape starts with `{`".into());
    }
    let mut fields = Vec::new();
    loop {
        let mut name = String::new();
        while let Some(&c) = chars.peek()
            && (c.is_alphanumeric() || c == '_')
        {
            name.push(c);
            chars.next();
        }
        if name.is_empty() {
            return Err("an output shape's field needs a name".into());
        }
        let shape = if chars.peek() == Some(&':') {
            chars.next();
            parse_object(chars)?
        } else {
            Shape::Plain
        };
        fields.push((name, shape));
        match chars.next() {
            Some(',') => continue,
            Some('}') => return Ok(Shape::Object(fields)),
            _ => {
                return Err(
                    "an output shape's fields are separated by `,` and end with `}`".into(),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_shapes_are_read_from_a_directive_comment() {
        let text = "// gradbench: jacobian returns {alpha, mu: {a, b}}\nfn f() -> Real { 1.0 }";
        let plain = |n: &str| (n.to_string(), Shape::Plain);
        assert_eq!(
            output_shape(text, "jacobian"),
            Ok(Shape::Object(vec![
                plain("alpha"),
                ("mu".into(), Shape::Object(vec![plain("a"), plain("b")]))
            ]))
        );
        assert_eq!(output_shape(text, "objective"), Ok(Shape::Plain));
        for bad in ["{a,", "{}", "a, b", "{a} x", "{a: b}"] {
            let text = format!("// gradbench: f returns {bad}");
            assert!(output_shape(&text, "f").is_err(), "{bad}");
        }
    }

    #[test]
    fn a_module_name_never_leaves_the_directory() {
        let dir = std::env::temp_dir();
        assert!(source("../etc", Some(&dir)).is_none());
        assert!(source("", Some(&dir)).is_none());
        assert!(source("nope", None).is_none());
        assert!(source("hello", None).is_some());
    }
}
