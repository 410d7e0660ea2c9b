//! The documents are maps that cannot go stale: the README's commands run, the
//! "Where is …" index of ARCHITECTURE.md names files and symbols that exist, every
//! relative link in the documents reaches a file, the two front documents stay short,
//! and the shared documents copied into `docs/` are still their originals.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    let p = root().join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

/// The documents a reader starts from, and those they link to.
const DOCUMENTS: &[&str] = &[
    "README.md",
    "ARCHITECTURE.md",
    "CONTRIBUTING.md",
    "BENCHMARKS.md",
    "docs/decisions.md",
    "docs/internals.md",
    "docs/references.md",
    "docs/design-ad.md",
    "crates/fluxion-py/README.md",
    "gradbench/README.md",
];

/// The lines of the code blocks fenced as ```` ```sh ```` in `text`.
fn sh_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let t = line.trim();
        if let Some(info) = t.strip_prefix("```") {
            inside = !inside && info.trim() == "sh";
            continue;
        }
        if inside && !t.is_empty() && !t.starts_with('#') {
            lines.push(t.to_string());
        }
    }
    lines
}

/// Splits a command line on spaces, keeping single- or double-quoted words whole.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, ' ') => {
                if started || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        out.push(word);
    }
    out
}

/// The `fluxion` arguments of a README command: `fluxion …` as written, and
/// `cargo run … -p fluxion-cli -- …` as the arguments after `--`; `None` for a
/// command that is not a run of the tool (the test command).
fn fluxion_args(line: &str) -> Option<Vec<String>> {
    let w = words(line);
    match w.first().map(String::as_str) {
        Some("fluxion") => Some(w[1..].to_vec()),
        Some("cargo") if w.get(1).is_some_and(|s| s == "run") => {
            let dash = w.iter().position(|s| s == "--")?;
            Some(w[dash + 1..].to_vec())
        }
        Some("cargo") => None,
        _ => panic!("README: a ```sh line that is neither `fluxion` nor `cargo`: {line}"),
    }
}

#[test]
fn the_readmes_commands_run() {
    let readme = read("README.md");
    let lines = sh_lines(&readme);
    assert!(
        lines.iter().any(|l| l.contains("examples/quickstart.flx")),
        "the quick start runs examples/quickstart.flx"
    );
    let mut ran = 0;
    for line in &lines {
        let Some(args) = fluxion_args(line) else {
            continue;
        };
        let out = Command::new(env!("CARGO_BIN_EXE_fluxion"))
            .args(&args)
            .current_dir(root())
            .output()
            .expect("fluxion runs");
        assert!(
            out.status.success(),
            "README command `{line}` failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 3, "only {ran} README commands found");
}

#[test]
fn the_readme_and_the_architecture_are_at_most_300_lines() {
    for doc in ["README.md", "ARCHITECTURE.md"] {
        let n = read(doc).lines().count();
        assert!(n <= 300, "{doc} has {n} lines; a map fits in 300");
    }
}

/// Whether `word` occurs in `text` as a whole identifier.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The text between the first pair of backticks in a table cell.
fn code(cell: &str) -> Option<&str> {
    let start = cell.find('`')? + 1;
    let len = cell[start..].find('`')?;
    Some(&cell[start..start + len])
}

#[test]
fn the_where_is_index_names_files_and_symbols_that_exist() {
    let arch = read("ARCHITECTURE.md");
    let section = arch
        .split("\n## ")
        .find(|s| s.starts_with("Where is"))
        .expect("ARCHITECTURE.md has a \"Where is …\" section");
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|--") && !l.starts_with("| Question"))
        .filter(|l| !l.chars().all(|c| "|-: ".contains(c)))
        .collect();
    assert!(rows.len() >= 15, "the index has {} rows", rows.len());
    let mut problems = Vec::new();
    for row in rows {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let [question, files, symbol] = cells[..] else {
            problems.push(format!("not three cells: {row}"));
            continue;
        };
        let paths: Vec<&str> = files.split(',').filter_map(code).collect();
        let Some(symbol) = code(symbol) else {
            problems.push(format!("{question}: no symbol in backticks"));
            continue;
        };
        if paths.is_empty() {
            problems.push(format!("{question}: no file in backticks"));
        }
        for (i, path) in paths.iter().enumerate() {
            match std::fs::read_to_string(root().join(path)) {
                Err(_) => problems.push(format!("{question}: {path} does not exist")),
                Ok(text) if i == 0 && !has_word(&text, symbol) => {
                    problems.push(format!("{question}: `{symbol}` is not in {path}"))
                }
                Ok(_) => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The targets of the relative links `[text](target)` in `text` (anchors dropped).
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or("");
        let external = target.contains("://") || target.starts_with("mailto:");
        if !target.is_empty() && !external && !target.contains(' ') {
            out.push(target.to_string());
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_documents_reaches_a_file() {
    let mut problems = Vec::new();
    for doc in DOCUMENTS {
        let text = read(doc);
        let dir = root().join(doc);
        let dir = dir.parent().unwrap();
        for target in relative_links(&text) {
            if !dir.join(&target).exists() {
                problems.push(format!("{doc}: ({target}) does not exist"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `docs/language.md` and `docs/design-ad.md` are the shared documents
/// `../shared/LANGUAGE.md` and `../shared/DESIGN-AD.md` (beside the repository where it
/// is developed and in CI) copied word for word, so a clone without them can read
/// what the code implements and cites.
#[test]
fn the_shared_documents_are_copied_word_for_word() {
    for (copy, shared) in [
        ("docs/language.md", "LANGUAGE.md"),
        ("docs/design-ad.md", "DESIGN-AD.md"),
    ] {
        let text = read(copy);
        let original = root().join("../shared").join(shared);
        match std::fs::read_to_string(&original) {
            Ok(o) => assert!(
                o == text,
                "{copy} differs from {}: copy it again",
                original.display()
            ),
            Err(_) => assert!(text.contains("Fluxion"), "{copy} is empty"),
        }
    }
}
