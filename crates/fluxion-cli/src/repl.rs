//! `fluxion repl`: definitions (`fn`, `enum`), `let` bindings and expressions, one
//! per entry; an entry continues over several lines while brackets are open.

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::Outcome;

/// Whether `text` has unclosed `(`, `[` or `{` (ignoring comments).
fn is_incomplete(text: &str) -> bool {
    let mut depth = 0i64;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for c in code.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
        }
    }
    depth > 0
}

/// The session: accumulated definitions and `let`s.
struct Session {
    name: String,
    items: String,
    lets: Vec<String>,
}

impl Session {
    /// Evaluates one complete entry; returns what to print (stdout or stderr text).
    fn eval(&mut self, entry: &str) -> Result<String, String> {
        let trimmed = entry.trim();
        if trimmed.is_empty() {
            return Ok(String::new());
        }
        if trimmed.starts_with("fn ") || trimmed.starts_with("enum ") {
            let candidate = format!("{}\n{}\n", self.items, trimmed);
            return match fluxion_driver::compile(&self.name, &candidate) {
                Ok(_) => {
                    self.items = candidate;
                    Ok(String::new())
                }
                Err(f) => Err(f.render()),
            };
        }
        if let Some(rest) = trimmed.strip_prefix("let ") {
            // `let p = e` (with or without `;`): kept if it evaluates.
            let stmt = format!("let {};", rest.trim_end_matches(';'));
            let mut lets = self.lets.clone();
            lets.push(stmt);
            self.evaluate(&lets, "()")?;
            self.lets = lets;
            return Ok(String::new());
        }
        self.evaluate(&self.lets, trimmed)
    }

    fn evaluate(&self, lets: &[String], expr: &str) -> Result<String, String> {
        let text = format!("{{ {} {} }}", lets.join(" "), expr);
        let program = fluxion_driver::compile_with_expr(&self.name, &self.items, Some(&text))
            .map_err(|f| f.render())?;
        let out = program
            .run(fluxion_driver::core_entry_name(), None)
            .map_err(|f| f.render())?;
        Ok(format!("{}\n", out.to_literal()))
    }
}

pub(crate) fn run(file: Option<(String, String)>) -> Outcome {
    let (name, items) = file.unwrap_or_else(|| ("<repl>".into(), String::new()));
    if let Err(f) = fluxion_driver::compile(&name, &items) {
        return Outcome::program_error(f.render());
    }
    let mut session = Session {
        name,
        items,
        lets: Vec::new(),
    };
    let mut editor = match DefaultEditor::new() {
        Ok(e) => e,
        Err(e) => {
            return Outcome::usage_error(format!("error: cannot start the line editor: {e}\n"));
        }
    };
    let history =
        std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".fluxion_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    let mut pending = String::new();
    loop {
        let prompt = if pending.is_empty() {
            "fluxion> "
        } else {
            "   ...> "
        };
        match editor.readline(prompt) {
            Ok(line) => {
                pending.push_str(&line);
                pending.push('\n');
                if is_incomplete(&pending) {
                    continue;
                }
                let entry = std::mem::take(&mut pending);
                let _ = editor.add_history_entry(entry.trim());
                use std::io::Write;
                match session.eval(&entry) {
                    Ok(out) => {
                        let _ = std::io::stdout().write_all(out.as_bytes());
                    }
                    Err(err) => {
                        let _ = std::io::stderr().write_all(err.as_bytes());
                    }
                }
            }
            Err(ReadlineError::Interrupted) => pending.clear(),
            Err(_) => break,
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    Outcome::ok(String::new())
}
