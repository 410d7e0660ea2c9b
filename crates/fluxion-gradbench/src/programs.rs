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

/// The field names of a function whose result GradBench wants as a JSON object: a
/// line `// gradbench: FUNCTION returns {a, b, c}` in the program says that the tuple
/// FUNCTION returns is the object with fields a, b, c in that order.
pub fn object_fields(text: &str, function: &str) -> Option<Vec<String>> {
    text.lines().find_map(|line| {
        let rest = line
            .trim()
            .strip_prefix("//")?
            .trim()
            .strip_prefix("gradbench:")?;
        let (name, fields) = rest.trim().split_once(" returns ")?;
        if name.trim() != function {
            return None;
        }
        let fields = fields.trim().strip_prefix('{')?.strip_suffix('}')?;
        Some(fields.split(',').map(|f| f.trim().to_string()).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_fields_are_read_from_a_directive_comment() {
        let text = "// gradbench: jacobian returns {alpha, mu, q}\nfn f() -> Real { 1.0 }";
        assert_eq!(
            object_fields(text, "jacobian"),
            Some(vec!["alpha".into(), "mu".into(), "q".into()])
        );
        assert_eq!(object_fields(text, "objective"), None);
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
