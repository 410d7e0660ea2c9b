//! The REPL's `:` commands: what they are called and what they take.

/// A parsed command line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Command<'a> {
    Help,
    Type(&'a str),
    Show { stage: &'a str, name: &'a str },
    Load(&'a str),
    Reload,
    Quit,
}

/// Every command with its usage, for `:help` and completion.
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    (":help", "this list"),
    (":type EXPR", "the type of EXPR, without evaluating it"),
    (
        ":show STAGE NAME",
        "function NAME after STAGE (core, fwd, taylor, taylorK), as `fluxion show` prints it",
    ),
    (
        ":load FILE",
        "load FILE's definitions (replacing those of the same name)",
    ),
    (":reload", "load again the files loaded so far"),
    (":quit", "leave (Ctrl-D too)"),
];

pub(crate) fn help() -> String {
    let mut s = String::from(
        "Enter a definition (`fn`, `enum`), a `let` or an expression; input continues \
         while brackets are open.\nCommands (each may be shortened to its first letter):\n",
    );
    for (usage, what) in COMMANDS {
        s.push_str(&format!("  {usage:<18} {what}\n"));
    }
    s
}

/// Parses a line starting with `:`; the error is the message to print.
pub(crate) fn parse(line: &str) -> Result<Command<'_>, String> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let no_argument = |c: Command<'static>| {
        if rest.is_empty() {
            Ok(c)
        } else {
            Err(format!("error: `{word}` takes no argument\n"))
        }
    };
    let needs = |what: &str| format!("error: usage: {word} {what}\n");
    match word {
        ":help" | ":h" | ":?" => no_argument(Command::Help),
        ":quit" | ":q" => no_argument(Command::Quit),
        ":reload" | ":r" => no_argument(Command::Reload),
        ":type" | ":t" if rest.is_empty() => Err(needs("EXPR")),
        ":type" | ":t" => Ok(Command::Type(rest)),
        ":load" | ":l" if rest.is_empty() => Err(needs("FILE")),
        ":load" | ":l" => Ok(Command::Load(rest)),
        ":show" | ":s" => match rest.split_whitespace().collect::<Vec<_>>()[..] {
            [stage, name] => Ok(Command::Show { stage, name }),
            _ => Err(needs("STAGE NAME (e.g. :show fwd f)")),
        },
        _ => Err(format!(
            "error: unknown command `{word}`; type :help for the commands\n"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_their_arguments() {
        assert_eq!(parse(":help"), Ok(Command::Help));
        assert_eq!(
            parse(":t map(sin, [1.0])"),
            Ok(Command::Type("map(sin, [1.0])"))
        );
        assert_eq!(
            parse(":show fwd f"),
            Ok(Command::Show {
                stage: "fwd",
                name: "f"
            })
        );
        assert_eq!(parse(":load a file.flx"), Ok(Command::Load("a file.flx")));
        assert!(parse(":show fwd").unwrap_err().contains("usage"));
        assert!(
            parse(":quit now")
                .unwrap_err()
                .contains("takes no argument")
        );
        assert!(parse(":frobnicate").unwrap_err().contains(":help"));
    }
}
