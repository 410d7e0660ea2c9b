//! Recursive-descent parser with precedence climbing for operators (docs/language.md §3).
//!
//! Parsing never fails outright: it returns the module it could build plus every
//! syntax error found. After an error the parser skips to a synchronisation point
//! (`;` or `}` inside a block, the next `fn`/`enum` at top level) and carries on, so a
//! file with several mistakes reports several errors.

use crate::ast::*;
use crate::lexer::{Token, lex};
use crate::span::{SourceId, Span};

/// A syntax error: where, and what went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub span: Span,
    pub message: String,
}

/// The result of parsing one source text.
#[derive(Clone, Debug, Default)]
pub struct Parse {
    pub module: Module,
    pub errors: Vec<SyntaxError>,
}

/// Deepest nesting of expressions and types accepted; deeper input is reported as an
/// error instead of exhausting the stack.
const MAX_DEPTH: usize = 400;
/// Longest chain of binary operators accepted in one expression (it nests the tree).
const MAX_CHAIN: usize = 20_000;

/// Parses a whole program.
pub fn parse_module(text: &str, source: SourceId) -> Parse {
    let mut p = Parser::new(text, source);
    let module = p.module();
    Parse {
        module,
        errors: p.errors,
    }
}

/// Parses a single expression (used by the REPL); errors if input remains.
pub fn parse_expr(text: &str, source: SourceId) -> (Option<Expr>, Vec<SyntaxError>) {
    let mut p = Parser::new(text, source);
    let e = p.expr().ok();
    if e.is_some() && p.peek() != Token::Eof {
        p.error_here("expected end of input");
    }
    (e, p.errors)
}

/// One REPL input: definitions, a `let`, or an expression.
#[derive(Clone, Debug, PartialEq)]
pub enum ReplInput {
    /// `fn` and `enum` definitions (one or more).
    Items(Vec<Item>),
    /// `let pat (: ty)? = value` (the `;` is optional).
    Let {
        pat: Pat,
        ty: Option<TypeExpr>,
        value: Expr,
    },
    Expr(Expr),
}

/// Parses one REPL input, deciding by its first token what it is; `None` (with errors)
/// if it does not parse. Spans are offsets into `text` itself, so errors point at what
/// the user typed.
pub fn parse_repl_input(text: &str, source: SourceId) -> (Option<ReplInput>, Vec<SyntaxError>) {
    let mut p = Parser::new(text, source);
    let input = match p.peek() {
        Token::Fn | Token::Enum => {
            let module = p.module();
            Some(ReplInput::Items(module.items))
        }
        Token::Let => p.repl_let().ok(),
        _ => p.expr().ok().map(ReplInput::Expr),
    };
    if input.is_some() && p.errors.is_empty() && p.peek() != Token::Eof {
        p.error_here("expected end of input");
    }
    let input = if p.errors.is_empty() { input } else { None };
    (input, p.errors)
}

/// Marker for "an error was already recorded; unwind to a synchronisation point".
struct Recover;

type PResult<T> = Result<T, Recover>;

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<(Token, Span)>,
    pos: usize,
    errors: Vec<SyntaxError>,
    depth: usize,
    /// Position of the token right after the last prefix `-`: only an Int literal
    /// there may be `9223372036854775808` (the magnitude of `i64::MIN`).
    after_prefix_minus: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, source: SourceId) -> Self {
        Parser {
            text,
            tokens: lex(text, source),
            pos: 0,
            errors: Vec::new(),
            depth: 0,
            after_prefix_minus: usize::MAX,
        }
    }

    fn peek(&self) -> Token {
        self.tokens[self.pos].0
    }

    fn span(&self) -> Span {
        self.tokens[self.pos].1
    }

    fn prev_span(&self) -> Span {
        self.tokens[self.pos.saturating_sub(1)].1
    }

    fn slice(&self, span: Span) -> &'a str {
        &self.text[span.start as usize..span.end as usize]
    }

    fn bump(&mut self) -> (Token, Span) {
        let t = self.tokens[self.pos];
        if t.0 != Token::Eof {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, tok: Token) -> bool {
        if self.peek() == tok {
            self.bump();
            true
        } else {
            false
        }
    }

    fn error(&mut self, span: Span, message: impl Into<String>) {
        // One error per location: recovery may revisit the same token.
        if self.errors.last().is_some_and(|e| e.span == span) {
            return;
        }
        self.errors.push(SyntaxError {
            span,
            message: message.into(),
        });
    }

    fn error_here(&mut self, expected: &str) {
        let (tok, span) = self.tokens[self.pos];
        let found = if tok == Token::Error {
            format!("unexpected character `{}`", self.slice(span))
        } else {
            format!("found {}", tok.describe())
        };
        self.error(span, format!("{expected}, {found}"));
    }

    fn expect(&mut self, tok: Token) -> PResult<Span> {
        if self.peek() == tok {
            Ok(self.bump().1)
        } else {
            self.error_here(&format!("expected {}", tok.describe()));
            Err(Recover)
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let span = self.span();
            self.error(span, "nesting too deep");
            // Skip everything: nothing sensible can follow.
            self.pos = self.tokens.len() - 1;
            return Err(Recover);
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // ---------------------------------------------------------------- items

    fn module(&mut self) -> Module {
        let mut items = Vec::new();
        while self.peek() != Token::Eof {
            let start = self.pos;
            let item = match self.peek() {
                Token::Fn => self.fn_def().map(Item::Fn),
                Token::Enum => self.enum_def().map(Item::Enum),
                _ => {
                    self.error_here("expected `fn` or `enum` at top level");
                    Err(Recover)
                }
            };
            match item {
                Ok(item) => items.push(item),
                Err(Recover) => {
                    if self.pos == start {
                        self.bump();
                    }
                    self.sync_item();
                }
            }
        }
        Module { items }
    }

    /// Skips to the next token that can start a top-level item.
    fn sync_item(&mut self) {
        while !matches!(self.peek(), Token::Fn | Token::Enum | Token::Eof) {
            self.bump();
        }
    }

    fn ident(&mut self) -> PResult<Ident> {
        let span = self.expect(Token::Ident)?;
        Ok(Ident {
            name: self.slice(span).to_string(),
            span,
        })
    }

    fn upper_ident(&mut self) -> PResult<Ident> {
        let span = self.expect(Token::UpperIdent)?;
        Ok(Ident {
            name: self.slice(span).to_string(),
            span,
        })
    }

    fn fn_def(&mut self) -> PResult<FnDef> {
        let start = self.expect(Token::Fn)?;
        let name = self.ident()?;
        self.expect(Token::LParen)?;
        let mut params = Vec::new();
        while self.peek() != Token::RParen {
            let pat = self.pattern(false)?;
            self.expect(Token::Colon)?;
            let ty = self.type_expr()?;
            params.push((pat, ty));
            if !self.eat(Token::Comma) {
                break;
            }
        }
        self.expect(Token::RParen)?;
        self.expect(Token::Arrow)?;
        let ret = self.type_expr()?;
        if self.peek() != Token::LBrace {
            self.error_here("expected `{` to start the function body");
            return Err(Recover);
        }
        let body = self.block()?;
        let span = start.to(body.span);
        Ok(FnDef {
            name,
            params,
            ret,
            body,
            span,
        })
    }

    fn enum_def(&mut self) -> PResult<EnumDef> {
        let start = self.expect(Token::Enum)?;
        let name = self.upper_ident()?;
        self.expect(Token::LBrace)?;
        let mut variants = Vec::new();
        while self.peek() != Token::RBrace {
            let vname = self.upper_ident()?;
            let mut fields = Vec::new();
            if self.eat(Token::LParen) {
                while self.peek() != Token::RParen {
                    fields.push(self.type_expr()?);
                    if !self.eat(Token::Comma) {
                        break;
                    }
                }
                self.expect(Token::RParen)?;
            }
            variants.push(Variant {
                name: vname,
                fields,
            });
            if !self.eat(Token::Comma) {
                break;
            }
        }
        let end = self.expect(Token::RBrace)?;
        Ok(EnumDef {
            name,
            variants,
            span: start.to(end),
        })
    }

    // ---------------------------------------------------------------- types

    fn type_expr(&mut self) -> PResult<TypeExpr> {
        self.enter()?;
        let r = self.type_expr_inner();
        self.leave();
        r
    }

    fn type_expr_inner(&mut self) -> PResult<TypeExpr> {
        let start = self.span();
        let kind = match self.peek() {
            Token::UpperIdent => {
                let (_, span) = self.bump();
                match self.slice(span) {
                    "Real" => TypeExprKind::Real,
                    "Int" => TypeExprKind::Int,
                    "Bool" => TypeExprKind::Bool,
                    name => TypeExprKind::Named(name.to_string()),
                }
            }
            Token::LParen => {
                self.bump();
                let mut elems = Vec::new();
                let mut trailing_comma = false;
                while self.peek() != Token::RParen {
                    elems.push(self.type_expr()?);
                    trailing_comma = self.eat(Token::Comma);
                    if !trailing_comma {
                        break;
                    }
                }
                self.expect(Token::RParen)?;
                match elems.len() {
                    0 => TypeExprKind::Unit,
                    1 if !trailing_comma => return Ok(elems.pop().expect("one element")),
                    1 => {
                        self.error(
                            start.to(self.prev_span()),
                            "tuples have two or more elements",
                        );
                        return Err(Recover);
                    }
                    _ => TypeExprKind::Tuple(elems),
                }
            }
            Token::LBracket => {
                self.bump();
                let elem = self.type_expr()?;
                self.expect(Token::RBracket)?;
                TypeExprKind::Array(Box::new(elem))
            }
            Token::Fn => {
                self.bump();
                self.expect(Token::LParen)?;
                let mut params = Vec::new();
                while self.peek() != Token::RParen {
                    params.push(self.type_expr()?);
                    if !self.eat(Token::Comma) {
                        break;
                    }
                }
                self.expect(Token::RParen)?;
                self.expect(Token::Arrow)?;
                let ret = self.type_expr()?;
                TypeExprKind::Fn(params, Box::new(ret))
            }
            _ => {
                self.error_here("expected a type");
                return Err(Recover);
            }
        };
        Ok(TypeExpr {
            kind,
            span: start.to(self.prev_span()),
        })
    }

    // ---------------------------------------------------------------- patterns

    /// A pattern; `refutable` allows constructors and literals (in `match` arms).
    fn pattern(&mut self, refutable: bool) -> PResult<Pat> {
        self.enter()?;
        let r = self.pattern_inner(refutable);
        self.leave();
        r
    }

    fn pattern_inner(&mut self, refutable: bool) -> PResult<Pat> {
        let start = self.span();
        let kind = match self.peek() {
            Token::Ident => {
                let (_, span) = self.bump();
                match self.slice(span) {
                    "_" => PatKind::Wild,
                    name => PatKind::Var(name.to_string()),
                }
            }
            Token::LParen => {
                self.bump();
                let mut elems = Vec::new();
                while self.peek() != Token::RParen {
                    elems.push(self.pattern(refutable)?);
                    if !self.eat(Token::Comma) {
                        break;
                    }
                }
                self.expect(Token::RParen)?;
                match elems.len() {
                    0 => {
                        self.error(start.to(self.prev_span()), "expected a pattern");
                        return Err(Recover);
                    }
                    1 => return Ok(elems.pop().expect("one element")),
                    _ => PatKind::Tuple(elems),
                }
            }
            Token::UpperIdent if refutable => {
                let name = self.upper_ident()?;
                let mut fields = Vec::new();
                if self.eat(Token::LParen) {
                    while self.peek() != Token::RParen {
                        fields.push(self.pattern(true)?);
                        if !self.eat(Token::Comma) {
                            break;
                        }
                    }
                    self.expect(Token::RParen)?;
                }
                PatKind::Ctor(name, fields)
            }
            Token::IntLit | Token::RealLit | Token::Minus if refutable => {
                let negative = self.eat(Token::Minus);
                let (tok, span) = self.bump();
                let text = format!("{}{}", if negative { "-" } else { "" }, self.slice(span));
                match tok {
                    Token::IntLit => match text.parse::<i64>() {
                        Ok(n) => PatKind::Int(n),
                        Err(_) => {
                            self.error(start.to(span), "integer literal out of range for Int");
                            return Err(Recover);
                        }
                    },
                    Token::RealLit => match real_literal(&text) {
                        Ok(x) => PatKind::Real(x),
                        Err(message) => {
                            self.error(span, message);
                            return Err(Recover);
                        }
                    },
                    _ => {
                        self.error(
                            span,
                            format!("expected a number after `-`, found {}", tok.describe()),
                        );
                        return Err(Recover);
                    }
                }
            }
            Token::True if refutable => {
                self.bump();
                PatKind::Bool(true)
            }
            Token::False if refutable => {
                self.bump();
                PatKind::Bool(false)
            }
            _ => {
                let what = if refutable {
                    "expected a pattern"
                } else {
                    "expected a name, `_` or a tuple pattern"
                };
                self.error_here(what);
                return Err(Recover);
            }
        };
        Ok(Pat {
            kind,
            span: start.to(self.prev_span()),
        })
    }

    // ---------------------------------------------------------------- expressions

    fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.binary(0);
        self.leave();
        r
    }

    /// Precedence climbing over the binary operators, loosest level 0.
    fn binary(&mut self, min_level: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut chain = 0;
        while let Some((op, level)) = binop_of(self.peek()) {
            if level < min_level {
                break;
            }
            let op_span = self.bump().1;
            chain += 1;
            if chain > MAX_CHAIN {
                self.error(op_span, "expression too long");
                return Err(Recover);
            }
            let rhs = self.binary(level + 1)?;
            let span = lhs.span.to(rhs.span);
            let is_comparison = level == COMPARISON_LEVEL;
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
            if is_comparison && binop_of(self.peek()).is_some_and(|(_, l)| l == COMPARISON_LEVEL) {
                let span = self.span();
                self.error(
                    span,
                    "comparison operators cannot be chained; use parentheses",
                );
                return Err(Recover);
            }
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> PResult<Expr> {
        let start = self.span();
        let op = match self.peek() {
            Token::Minus => UnOp::Neg,
            Token::Bang => UnOp::Not,
            _ => return self.postfix(),
        };
        self.bump();
        let operand_span = self.span();
        if op == UnOp::Neg {
            self.after_prefix_minus = self.pos;
        }
        self.enter()?;
        let inner = self.unary();
        self.leave();
        let inner = inner?;
        // `-3` and `-2.5` are literals, so that `-9223372036854775808` is an Int.
        if op == UnOp::Neg {
            let folded = match inner.kind {
                ExprKind::Real(r) => Some(ExprKind::Real(-r)),
                // The literal right after this `-` stands for its own magnitude, so
                // i64::MIN there is `-9223372036854775808` itself.
                ExprKind::Int(i64::MIN) if inner.span == operand_span => {
                    Some(ExprKind::Int(i64::MIN))
                }
                // Negating i64::MIN overflows: leave it to run time.
                ExprKind::Int(i) => i.checked_neg().map(ExprKind::Int),
                _ => None,
            };
            if let Some(kind) = folded {
                return Ok(Expr {
                    kind,
                    span: start.to(inner.span),
                });
            }
        }
        Ok(Expr {
            span: start.to(inner.span),
            kind: ExprKind::Unary(op, Box::new(inner)),
        })
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        let mut nesting = 0;
        loop {
            match self.peek() {
                Token::LParen => {
                    self.bump();
                    let args = self.comma_list(Token::RParen)?;
                    let end = self.expect(Token::RParen)?;
                    e = Expr {
                        span: e.span.to(end),
                        kind: ExprKind::Call(Box::new(e), args),
                    };
                }
                Token::LBracket => {
                    self.bump();
                    let index = self.expr()?;
                    let end = self.expect(Token::RBracket)?;
                    e = Expr {
                        span: e.span.to(end),
                        kind: ExprKind::Index(Box::new(e), Box::new(index)),
                    };
                }
                Token::Dot => {
                    self.bump();
                    let (tok, span) = self.bump();
                    let text = self.slice(span);
                    // `t.0.1` lexes as `t` `.` `0.1`: split the real literal.
                    let fields: Vec<&str> = match tok {
                        Token::IntLit => vec![text],
                        Token::RealLit if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') => {
                            text.split('.').collect()
                        }
                        _ => {
                            self.error(
                                span,
                                format!(
                                    "expected a tuple field number after `.`, found {}",
                                    tok.describe()
                                ),
                            );
                            return Err(Recover);
                        }
                    };
                    for field in fields {
                        let Ok(n) = field.parse::<usize>() else {
                            self.error(span, "tuple field number out of range");
                            return Err(Recover);
                        };
                        e = Expr {
                            span: e.span.to(span),
                            kind: ExprKind::Proj(Box::new(e), n),
                        };
                    }
                }
                _ => break,
            }
            nesting += 1;
            if nesting > MAX_DEPTH {
                let span = self.span();
                self.error(span, "nesting too deep");
                return Err(Recover);
            }
        }
        Ok(e)
    }

    /// Comma-separated expressions up to (not including) `close`; a trailing comma is allowed.
    fn comma_list(&mut self, close: Token) -> PResult<Vec<Expr>> {
        let mut items = Vec::new();
        while self.peek() != close {
            items.push(self.expr()?);
            if !self.eat(Token::Comma) {
                break;
            }
        }
        Ok(items)
    }

    fn primary(&mut self) -> PResult<Expr> {
        let (tok, span) = (self.peek(), self.span());
        let kind = match tok {
            Token::IntLit => {
                self.bump();
                match self.slice(span).parse::<i64>() {
                    Ok(n) => ExprKind::Int(n),
                    // Allow the magnitude of i64::MIN so that `-9223372036854775808` works.
                    Err(_)
                        if self.slice(span) == "9223372036854775808"
                            && self.after_prefix_minus == self.pos - 1 =>
                    {
                        ExprKind::Int(i64::MIN)
                    }
                    Err(_) => {
                        self.error(span, "integer literal out of range for Int");
                        ExprKind::Error
                    }
                }
            }
            Token::RealLit => {
                self.bump();
                match real_literal(self.slice(span)) {
                    Ok(r) => ExprKind::Real(r),
                    Err(message) => {
                        self.error(span, message);
                        ExprKind::Error
                    }
                }
            }
            Token::True => {
                self.bump();
                ExprKind::Bool(true)
            }
            Token::False => {
                self.bump();
                ExprKind::Bool(false)
            }
            Token::Ident => {
                self.bump();
                ExprKind::Var(self.slice(span).to_string())
            }
            Token::UpperIdent => {
                self.bump();
                ExprKind::Ctor(self.slice(span).to_string())
            }
            Token::LParen => {
                self.bump();
                let mut elems = Vec::new();
                let mut trailing_comma = false;
                while self.peek() != Token::RParen {
                    elems.push(self.expr()?);
                    trailing_comma = self.eat(Token::Comma);
                    if !trailing_comma {
                        break;
                    }
                }
                let end = self.expect(Token::RParen)?;
                match elems.len() {
                    0 => ExprKind::Unit,
                    1 if !trailing_comma => {
                        let mut inner = elems.pop().expect("one element");
                        inner.span = span.to(end);
                        return Ok(inner);
                    }
                    1 => {
                        self.error(span.to(end), "tuples have two or more elements");
                        return Err(Recover);
                    }
                    _ => ExprKind::Tuple(elems),
                }
            }
            Token::LBracket => {
                self.bump();
                let elems = self.comma_list(Token::RBracket)?;
                self.expect(Token::RBracket)?;
                ExprKind::Array(elems)
            }
            Token::LBrace => return self.block(),
            Token::If => return self.if_expr(),
            Token::Match => return self.match_expr(),
            Token::Pipe | Token::OrOr => return self.lambda(),
            _ => {
                self.error_here("expected an expression");
                return Err(Recover);
            }
        };
        Ok(Expr {
            kind,
            span: span.to(self.prev_span()),
        })
    }

    fn lambda(&mut self) -> PResult<Expr> {
        let start = self.span();
        let mut params = Vec::new();
        if !self.eat(Token::OrOr) {
            self.expect(Token::Pipe)?;
            while self.peek() != Token::Pipe {
                let pat = self.pattern(false)?;
                let ty = if self.eat(Token::Colon) {
                    Some(self.type_expr()?)
                } else {
                    None
                };
                params.push(LambdaParam { pat, ty });
                if !self.eat(Token::Comma) {
                    break;
                }
            }
            self.expect(Token::Pipe)?;
        }
        let body = self.expr()?;
        Ok(Expr {
            span: start.to(body.span),
            kind: ExprKind::Lambda(params, Box::new(body)),
        })
    }

    fn if_expr(&mut self) -> PResult<Expr> {
        let start = self.expect(Token::If)?;
        let cond = self.expr()?;
        let then = self.block()?;
        if self.peek() != Token::Else {
            self.error_here("expected `else` (every `if` needs an `else` branch)");
            return Err(Recover);
        }
        self.bump();
        let els = if self.peek() == Token::If {
            self.enter()?;
            let e = self.if_expr();
            self.leave();
            e?
        } else {
            self.block()?
        };
        Ok(Expr {
            span: start.to(els.span),
            kind: ExprKind::If(Box::new(cond), Box::new(then), Box::new(els)),
        })
    }

    fn match_expr(&mut self) -> PResult<Expr> {
        let start = self.expect(Token::Match)?;
        let scrutinee = self.expr()?;
        self.expect(Token::LBrace)?;
        let mut arms = Vec::new();
        while self.peek() != Token::RBrace && self.peek() != Token::Eof {
            let arm_start = self.pos;
            let arm = (|| {
                let pat = self.pattern(true)?;
                self.expect(Token::FatArrow)?;
                let body = self.expr()?;
                Ok(MatchArm { pat, body })
            })();
            match arm {
                Ok(arm) => {
                    let block_like = matches!(arm.body.kind, ExprKind::Block(..));
                    arms.push(arm);
                    if !self.eat(Token::Comma) && !block_like {
                        break;
                    }
                }
                Err(Recover) => {
                    // Skip to the next arm separator or the closing brace.
                    self.sync_in_braces(Token::Comma);
                    if !self.eat(Token::Comma) {
                        break;
                    }
                }
            }
            if self.pos == arm_start {
                self.bump();
            }
        }
        let end = self.expect(Token::RBrace)?;
        if arms.is_empty() {
            self.error(start.to(end), "a `match` needs at least one arm");
        }
        Ok(Expr {
            span: start.to(end),
            kind: ExprKind::Match(Box::new(scrutinee), arms),
        })
    }

    /// Skips tokens until `stop` or a `}` at the current brace depth (not consumed).
    /// Callers that loop on errors must check they made progress.
    fn sync_in_braces(&mut self, stop: Token) {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                Token::Eof => return,
                Token::LBrace | Token::LParen | Token::LBracket => depth += 1,
                Token::RBrace if depth == 0 => return,
                Token::RBrace | Token::RParen | Token::RBracket => {
                    // A stray `)` or `]` at depth 0 is skipped like any other token.
                    depth = depth.saturating_sub(1);
                }
                t if t == stop && depth == 0 => return,
                _ => {}
            }
            self.bump();
        }
    }

    /// `{ let p = e; ... result }`
    fn block(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.block_inner();
        self.leave();
        r
    }

    fn block_inner(&mut self) -> PResult<Expr> {
        let start = self.expect(Token::LBrace)?;
        let mut stmts = Vec::new();
        let mut result: Option<Expr> = None;
        let mut failed = false;
        while self.peek() != Token::RBrace && self.peek() != Token::Eof {
            let stmt_start = self.pos;
            if result.is_some() {
                // Point at what follows the expression: that is the mistake.
                self.error_here("expected `;` or `}` after the expression");
                failed = true;
                result = None;
            }
            let stmt = if self.peek() == Token::Let {
                self.let_stmt().map(|s| {
                    stmts.push(s);
                })
            } else {
                self.expr().map(|e| {
                    result = Some(e);
                })
            };
            if stmt.is_err() {
                failed = true;
                self.sync_in_braces(Token::Semi);
                if !self.eat(Token::Semi) && self.pos == stmt_start {
                    self.bump();
                }
                continue;
            }
            if result.is_some() && self.peek() == Token::Semi {
                let span = self.span();
                self.error(
                    span,
                    "an expression statement has no effect in a pure language; remove the `;` to make it the block's result",
                );
                self.bump();
                failed = true;
                result = None;
            }
        }
        let end = self.expect(Token::RBrace)?;
        if failed {
            return Err(Recover);
        }
        let Some(result) = result else {
            self.error(
                start.to(end),
                "a block must end with an expression (its value)",
            );
            return Err(Recover);
        };
        Ok(Expr {
            span: start.to(end),
            kind: ExprKind::Block(stmts, Box::new(result)),
        })
    }

    /// A `let` typed at the REPL: like [`Parser::let_stmt`], with the `;` optional.
    fn repl_let(&mut self) -> PResult<ReplInput> {
        let (pat, ty, value) = self.let_binding()?;
        self.eat(Token::Semi);
        Ok(ReplInput::Let { pat, ty, value })
    }

    fn let_stmt(&mut self) -> PResult<Stmt> {
        let (pat, ty, value) = self.let_binding()?;
        self.expect(Token::Semi)?;
        Ok(Stmt::Let { pat, ty, value })
    }

    /// `let pattern (: type)? = expr`, without what ends it.
    fn let_binding(&mut self) -> PResult<(Pat, Option<TypeExpr>, Expr)> {
        self.expect(Token::Let)?;
        let pat = self.pattern(false)?;
        let ty = if self.eat(Token::Colon) {
            Some(self.type_expr()?)
        } else {
            None
        };
        self.expect(Token::Eq)?;
        let value = self.expr()?;
        Ok((pat, ty, value))
    }
}

const COMPARISON_LEVEL: u8 = 2;

/// Binary operators and their precedence level, loosest first (docs/language.md §3).
fn binop_of(tok: Token) -> Option<(BinOp, u8)> {
    Some(match tok {
        Token::OrOr => (BinOp::Or, 0),
        Token::AndAnd => (BinOp::And, 1),
        Token::EqEq => (BinOp::Eq, COMPARISON_LEVEL),
        Token::NotEq => (BinOp::Ne, COMPARISON_LEVEL),
        Token::Lt => (BinOp::Lt, COMPARISON_LEVEL),
        Token::Le => (BinOp::Le, COMPARISON_LEVEL),
        Token::Gt => (BinOp::Gt, COMPARISON_LEVEL),
        Token::Ge => (BinOp::Ge, COMPARISON_LEVEL),
        Token::Plus => (BinOp::Add, 3),
        Token::Minus => (BinOp::Sub, 3),
        Token::Star => (BinOp::Mul, 4),
        Token::Slash => (BinOp::Div, 4),
        Token::Percent => (BinOp::Rem, 4),
        _ => return None,
    })
}

/// The value of a real literal's text, or the error to report: out of range as an
/// out-of-range Int literal is (`1e400` would silently be inf; `1.0 / 0.0` is that).
fn real_literal(text: &str) -> Result<f64, &'static str> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err("real literal out of range (larger than 1.8e308)"),
        Err(_) => Err("malformed real literal"),
    }
}
