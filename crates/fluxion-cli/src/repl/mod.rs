//! `fluxion repl`: reads inputs (a definition, a `let`, an expression, or a `:`
//! command), continuing over several lines while brackets are open, and hands them
//! to a [`fluxion_driver::repl::Session`], which evaluates each once.

mod commands;
mod complete;

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use fluxion_driver::repl::{Reply, Session};
use rustyline::Editor;
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;

use crate::Outcome;
use commands::Command;
use complete::NameCompleter;

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

/// The session and the files loaded into it (for `:reload`).
struct Repl {
    session: Session,
    loaded: Vec<String>,
}

/// Whether the loop goes on after an entry.
enum Next {
    Continue,
    Quit,
}

impl Repl {
    /// [`Repl::entry`], where a bug in Fluxion (a panic, reported by the hook in main)
    /// does not end the session.
    fn entry_guarded(&mut self, entry: &str) -> Next {
        // A Ctrl-C before this entry is not for it.
        fluxion_driver::interp::clear_interrupt();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.entry(entry)))
            .unwrap_or(Next::Continue)
    }

    /// Handles one complete entry, printing what it produced.
    fn entry(&mut self, entry: &str) -> Next {
        let trimmed = entry.trim();
        if !trimmed.starts_with(':') {
            report(self.session.eval(entry));
            return Next::Continue;
        }
        match commands::parse(trimmed) {
            Err(message) => print_err(&message),
            Ok(Command::Help) => print_out(&commands::help()),
            Ok(Command::Quit) => return Next::Quit,
            Ok(Command::Type(expr)) => match self.session.type_of(expr) {
                Ok(t) => print_out(&t),
                Err(e) => print_err(&e),
            },
            Ok(Command::Show { stage, name }) => match self.session.show(stage, name) {
                Ok(text) => print_out(&text),
                Err(e) => print_err(&e),
            },
            Ok(Command::Load(path)) => {
                if self.load(path) && !self.loaded.iter().any(|p| p == path) {
                    self.loaded.push(path.to_string());
                }
            }
            Ok(Command::Reload) => {
                if self.loaded.is_empty() {
                    print_err("error: no file loaded yet (use :load FILE)\n");
                }
                for path in self.loaded.clone() {
                    self.load(&path);
                }
            }
        }
        Next::Continue
    }

    /// Reads and loads a file; whether it loaded.
    fn load(&mut self, path: &str) -> bool {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let result = self.session.load(path, &text);
                let ok = result.is_ok();
                report(result);
                ok
            }
            Err(e) => {
                print_err(&format!("error: cannot read `{path}`: {e}\n"));
                false
            }
        }
    }
}

fn print_out(text: &str) {
    let _ = std::io::stdout().write_all(text.as_bytes());
    let _ = std::io::stdout().flush();
}

fn print_err(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}

fn report(result: Result<Reply, String>) {
    match result {
        Ok(reply) => {
            print_err(&reply.notes);
            print_out(&reply.output);
        }
        Err(e) => print_err(&e),
    }
}

/// Ctrl-C during an evaluation stops it and returns to the prompt, the session's
/// bindings kept (it killed the process, and every binding with it). At the prompt the
/// line editor reads Ctrl-C itself (raw mode), as a cleared line.
fn stop_evaluations_on_ctrl_c() {
    extern "C" fn on_sigint(_: libc::c_int) {
        fluxion_driver::interp::interrupt();
    }
    // SAFETY: the handler makes one atomic store, which is async-signal-safe; glibc's
    // `signal` restarts interrupted system calls.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

pub(crate) fn run(file: Option<(String, String)>, memory_limit: Option<usize>) -> Outcome {
    let mut session = match Session::new() {
        Ok(s) => s,
        Err(e) => return Outcome::program_error(e),
    };
    if let Some(bytes) = memory_limit {
        session.set_memory_limit(bytes);
    }
    let mut loaded = Vec::new();
    if let Some((name, text)) = file {
        if let Err(e) = session.load(&name, &text) {
            return Outcome::program_error(e);
        }
        loaded.push(name);
    }
    let mut repl = Repl { session, loaded };
    stop_evaluations_on_ctrl_c();
    let mut editor: Editor<NameCompleter, DefaultHistory> = match Editor::new() {
        Ok(e) => e,
        Err(e) => {
            return Outcome::usage_error(format!("error: cannot start the line editor: {e}\n"));
        }
    };
    let names = Rc::new(RefCell::new(repl.session.completion_names()));
    editor.set_helper(Some(NameCompleter {
        names: names.clone(),
    }));
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
                let next = repl.entry_guarded(&entry);
                *names.borrow_mut() = repl.session.completion_names();
                if let Next::Quit = next {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => pending.clear(),
            Err(_) => {
                // The input ended inside an unclosed bracket: read as it is, so that
                // its syntax error is shown, not dropped.
                if !pending.trim().is_empty() {
                    repl.entry_guarded(&pending);
                }
                break;
            }
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    Outcome::ok(String::new())
}
