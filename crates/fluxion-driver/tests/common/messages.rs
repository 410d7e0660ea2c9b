//! Reading rendered diagnostics in tests.

/// How often `what` occurs in the first line of a rendered diagnostic (the report
/// below it repeats the message at its label).
pub fn on_the_first_line(rendered: &str, what: &str) -> usize {
    rendered.lines().next().unwrap_or("").matches(what).count()
}
