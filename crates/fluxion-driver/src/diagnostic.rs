//! Diagnostics: every user-facing error of the pipeline, rendered with ariadne as
//! `FILE:LINE:COL`, the source line and a caret under the span.

use ariadne::{Config, IndexType, Label, Report, ReportKind};
use fluxion_core::Span;
use fluxion_syntax::LineIndex;

/// A source text the diagnostics can point into.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
}

/// What kind of error a diagnostic reports (its heading).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Syntax,
    Type,
    Runtime,
    /// `--args` that do not decode, an unknown entry.
    Input,
    /// A bug in Fluxion itself (a verifier failure).
    Internal,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub phase: Phase,
    pub span: Option<Span>,
    pub message: String,
}

impl Diagnostic {
    pub fn new(phase: Phase, span: Option<Span>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            phase,
            span,
            message: message.into(),
        }
    }

    /// Where the diagnostic points: file name, 1-based line and column (`None` for a
    /// diagnostic about the program as a whole). For embeddings that report errors as
    /// values with fields (the Python bindings).
    pub fn location(&self, sources: &[SourceFile]) -> Option<(String, usize, usize)> {
        let span = self.span?;
        let file = sources.get(span.source as usize)?;
        let start = (span.start as usize).min(file.text.len());
        let (line, col) = fluxion_syntax::line_col(&file.text, start);
        Some((file.name.clone(), line, col))
    }

    fn heading(&self) -> &'static str {
        match self.phase {
            Phase::Syntax => "syntax error",
            Phase::Type => "type error",
            Phase::Runtime => "runtime error",
            Phase::Input => "error",
            Phase::Internal => "internal compiler error",
        }
    }
}

/// A runtime error about a built-in (`build: negative length -2`), named by the
/// built-in the source calls where the error points (`at`: the source from there).
/// Derivative code computes `sumbuild` by `build`, `iterate` by `range` and a `sum` of
/// arrays by `map2`, whose faults would otherwise name a function the user never
/// called.
fn named_as_called(message: &str, at: &str) -> String {
    let called: &str = {
        let end = at
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(at.len());
        &at[..end]
    };
    let is_call = at[called.len()..].trim_start().starts_with('(');
    match message.split_once(": ") {
        Some((named, rest))
            if is_call
                && named != called
                && fluxion_core::Prim::from_surface_name(called).is_some()
                && fluxion_core::Prim::from_surface_name(named).is_some() =>
        {
            // CHAD runs `iterate` over a `range`, whose word for its count is "length".
            match (called, rest.strip_prefix("negative length ")) {
                ("iterate", Some(count)) => format!("iterate: negative count {count}"),
                _ => format!("{called}: {rest}"),
            }
        }
        _ => message.to_string(),
    }
}

/// Renders diagnostics as plain text (no colour), each starting with a
/// `FILE:LINE:COL: heading: message` line followed by ariadne's snippet.
pub fn render(diagnostics: &[Diagnostic], sources: &[SourceFile]) -> String {
    // Made once for all the diagnostics, so that rendering them takes linear time.
    let lines: Vec<LineIndex> = sources.iter().map(|s| LineIndex::new(&s.text)).collect();
    let mut cache = ariadne::sources(sources.iter().map(|s| (s.name.clone(), s.text.clone())));
    let mut out = String::new();
    for d in diagnostics {
        let located = d
            .span
            .and_then(|s| sources.get(s.source as usize).map(|f| (s, f)));
        let Some((span, file)) = located else {
            // Every error names its file: one without a location is about the
            // user's program as a whole (no `main`, bad `--args`).
            match sources.get(crate::USER_SOURCE as usize) {
                Some(user) => {
                    out.push_str(&format!("{}: {}: {}\n", user.name, d.heading(), d.message))
                }
                None => out.push_str(&format!("{}: {}\n", d.heading(), d.message)),
            }
            continue;
        };
        let start = (span.start as usize).min(file.text.len());
        let end = (span.end as usize).clamp(start, file.text.len());
        let (line, col) = lines[span.source as usize].line_col(&file.text, start);
        let message = match d.phase {
            Phase::Runtime => named_as_called(&d.message, &file.text[start..]),
            _ => d.message.clone(),
        };
        out.push_str(&format!(
            "{}:{line}:{col}: {}: {message}\n",
            file.name,
            d.heading(),
        ));
        let name = file.name.clone();
        let mut buf = Vec::new();
        let report = Report::build(ReportKind::Error, (name.clone(), start..end))
            .with_config(
                Config::default()
                    .with_color(false)
                    .with_index_type(IndexType::Byte),
            )
            .with_message(d.heading())
            .with_label(Label::new((name.clone(), start..end)).with_message(&d.message))
            .finish();
        if report.write(&mut cache, &mut buf).is_ok() {
            out.push_str(&String::from_utf8_lossy(&buf));
        }
    }
    out
}
