//! Property tests: no input, however malformed, makes the front end panic or hang.
//! Inputs are random token soup and random mutations (deletions, insertions,
//! duplications) of the examples.

use proptest::prelude::*;

const TOKENS: &[&str] = &[
    "fn", "enum", "let", "if", "else", "match", "true", "false", "x", "y", "f", "main", "Real",
    "Int", "Bool", "Cons", "Nil", "1", "2.5", "1e3", "(", ")", "[", "]", "{", "}", ",", ";", ":",
    ".", "->", "=>", "=", "|", "||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/",
    "%", "!", "_", "0", ".0", "grad", "map", "build", "fold", "sum", "@", "\"", "é", "\n", " ",
];

fn check_does_not_panic(src: &str) {
    let src = src.to_string();
    fluxion_driver::with_big_stack(move || {
        let _ = fluxion_driver::compile("fuzz.flx", &src).map_err(|f| f.render());
    });
}

fn examples() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "flx") {
            out.push(std::fs::read_to_string(path).unwrap());
        }
    }
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn token_soup_never_panics(tokens in proptest::collection::vec(0..TOKENS.len(), 0..80)) {
        let src: Vec<&str> = tokens.iter().map(|i| TOKENS[*i]).collect();
        check_does_not_panic(&src.join(" "));
    }

    #[test]
    fn arbitrary_text_never_panics(src in ".{0,200}") {
        check_does_not_panic(&src);
    }

    #[test]
    fn mutated_examples_never_panic(
        which in 0usize..100,
        edits in proptest::collection::vec((0usize..100_000, 0usize..20, 0..TOKENS.len(), 0u8..3), 1..6),
    ) {
        let examples = examples();
        let mut src = examples[which % examples.len()].clone().into_bytes();
        for (pos, len, tok, kind) in edits {
            let pos = pos % (src.len() + 1);
            let end = (pos + len).min(src.len());
            match kind {
                0 => { src.drain(pos..end); }
                1 => { src.splice(pos..pos, TOKENS[tok].bytes()); }
                _ => {
                    let piece: Vec<u8> = src[pos..end].to_vec();
                    src.splice(pos..pos, piece);
                }
            }
        }
        check_does_not_panic(&String::from_utf8_lossy(&src));
    }
}
