//! Tab completion of names and commands (rustyline's `Helper`).

use std::cell::RefCell;
use std::rc::Rc;

use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use super::commands::COMMANDS;

/// Completes the word before the cursor from `names` (which the loop refreshes
/// after each input), or a command at the start of the line.
pub(crate) struct NameCompleter {
    pub(crate) names: Rc<RefCell<Vec<String>>>,
}

impl NameCompleter {
    /// The start of the word ending at `pos`, and the candidates for it.
    pub(crate) fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let before = &line[..pos];
        let start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .map_or(0, |i| i + 1);
        let word = &before[start..];
        if word.starts_with(':') {
            if !before[..start].trim().is_empty() {
                return (start, Vec::new());
            }
            let commands = COMMANDS
                .iter()
                .map(|(usage, _)| usage.split(' ').next().unwrap_or(usage))
                .filter(|c| c.starts_with(word))
                .map(str::to_string)
                .collect();
            return (start, commands);
        }
        if word.is_empty() {
            return (start, Vec::new());
        }
        let names = self
            .names
            .borrow()
            .iter()
            .filter(|n| n.starts_with(word))
            .cloned()
            .collect();
        (start, names)
    }
}

impl Completer for NameCompleter {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(self.candidates(line, pos))
    }
}

impl Hinter for NameCompleter {
    type Hint = String;
}

impl Highlighter for NameCompleter {}

impl Validator for NameCompleter {}

impl Helper for NameCompleter {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_names_and_commands() {
        let c = NameCompleter {
            names: Rc::new(RefCell::new(vec![
                "sin".into(),
                "sinh".into(),
                "sqrt".into(),
                "my_fn".into(),
            ])),
        };
        assert_eq!(
            c.candidates("1.0 + si", 8),
            (6, vec!["sin".into(), "sinh".into()])
        );
        assert_eq!(c.candidates("my", 2), (0, vec!["my_fn".into()]));
        assert_eq!(c.candidates(":sh", 3), (0, vec![":show".into()]));
        assert_eq!(c.candidates("", 0).1, Vec::<String>::new());
    }
}
