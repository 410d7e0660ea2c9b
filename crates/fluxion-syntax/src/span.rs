//! Source positions: byte spans tagged with the source they come from.

/// Which source text a span points into (the user's file, the prelude, a REPL line).
pub type SourceId = u32;

/// A half-open byte range `[start, end)` in one source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub source: SourceId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(source: SourceId, start: usize, end: usize) -> Span {
        Span {
            source,
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            source: self.source,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// 1-based line and column (in characters) of byte offset `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

/// Where each line of a text starts, so that many offsets can be turned into lines and
/// columns without rescanning the text before each one (rendering thousands of
/// diagnostics would otherwise take time quadratic in their number).
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let after_newlines = text.match_indices('\n').map(|(i, _)| i + 1);
        LineIndex {
            starts: std::iter::once(0).chain(after_newlines).collect(),
        }
    }

    /// [`line_col`] of `offset` in `text`, the text this index was made from.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(text, offset.min(text.len()));
        let line = self.starts.partition_point(|&start| start <= offset);
        let col = text[self.starts[line - 1]..offset].chars().count() + 1;
        (line, col)
    }
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}
