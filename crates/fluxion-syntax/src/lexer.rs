//! Tokens of Fluxion (docs/language.md §1), produced by a logos-generated DFA.
//!
//! Unknown characters become [`Token::Error`] so that the parser can report them and
//! carry on. Literal values are parsed from the token's text by the parser, which can
//! then report an out-of-range `Int` with its location.

use logos::Logos;

use crate::span::{SourceId, Span};

#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq, Hash)]
// U+FEFF: the byte-order mark some editors start a UTF-8 file with.
#[logos(skip r"[ \t\r\n\f\u{FEFF}]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
pub enum Token {
    #[token("fn")]
    Fn,
    #[token("enum")]
    Enum,
    #[token("let")]
    Let,
    #[token("if")]
    If,
    #[token("else")]
    Else,
    #[token("match")]
    Match,
    #[token("true")]
    True,
    #[token("false")]
    False,
    #[regex(r"[a-z_][A-Za-z0-9_]*")]
    Ident,
    #[regex(r"[A-Z][A-Za-z0-9_]*")]
    UpperIdent,
    #[regex(r"[0-9]+")]
    IntLit,
    #[regex(r"[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?")]
    #[regex(r"[0-9]+[eE][+-]?[0-9]+")]
    RealLit,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(";")]
    Semi,
    #[token(":")]
    Colon,
    #[token(".")]
    Dot,
    #[token("->")]
    Arrow,
    #[token("=>")]
    FatArrow,
    #[token("=")]
    Eq,
    #[token("||")]
    OrOr,
    #[token("&&")]
    AndAnd,
    #[token("|")]
    Pipe,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("!")]
    Bang,
    /// A character that starts no token.
    Error,
    /// End of input (added by [`lex`], never produced by logos).
    Eof,
}

impl Token {
    /// How the token is described in "expected ..., found ..." messages.
    pub fn describe(self) -> &'static str {
        use Token::*;
        match self {
            Fn => "`fn`",
            Enum => "`enum`",
            Let => "`let`",
            If => "`if`",
            Else => "`else`",
            Match => "`match`",
            True => "`true`",
            False => "`false`",
            Ident => "an identifier",
            UpperIdent => "a type or constructor name",
            IntLit => "an integer literal",
            RealLit => "a real literal",
            LParen => "`(`",
            RParen => "`)`",
            LBracket => "`[`",
            RBracket => "`]`",
            LBrace => "`{`",
            RBrace => "`}`",
            Comma => "`,`",
            Semi => "`;`",
            Colon => "`:`",
            Dot => "`.`",
            Arrow => "`->`",
            FatArrow => "`=>`",
            Eq => "`=`",
            OrOr => "`||`",
            AndAnd => "`&&`",
            Pipe => "`|`",
            EqEq => "`==`",
            NotEq => "`!=`",
            Lt => "`<`",
            Le => "`<=`",
            Gt => "`>`",
            Ge => "`>=`",
            Plus => "`+`",
            Minus => "`-`",
            Star => "`*`",
            Slash => "`/`",
            Percent => "`%`",
            Bang => "`!`",
            Error => "an unexpected character",
            Eof => "end of input",
        }
    }
}

/// Splits `text` into tokens with their spans; always ends with [`Token::Eof`].
pub fn lex(text: &str, source: SourceId) -> Vec<(Token, Span)> {
    let mut out: Vec<(Token, Span)> = Token::lexer(text)
        .spanned()
        .map(|(tok, range)| {
            (
                tok.unwrap_or(Token::Error),
                Span::new(source, range.start, range.end),
            )
        })
        .collect();
    out.push((Token::Eof, Span::new(source, text.len(), text.len())));
    out
}
