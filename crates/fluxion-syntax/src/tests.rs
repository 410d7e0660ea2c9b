//! Unit tests of the lexer and the parser (docs/language.md §1 and §3).

use crate::ast::*;
use crate::lexer::{Token, lex};
use crate::{parse_expr, parse_module};

// ---------------------------------------------------------------- helpers

/// Token kinds of `text`, without the final `Eof`.
fn kinds(text: &str) -> Vec<Token> {
    let mut toks: Vec<Token> = lex(text, 0).into_iter().map(|(t, _)| t).collect();
    assert_eq!(toks.pop(), Some(Token::Eof), "lex always ends with Eof");
    toks
}

/// Parses an expression that must be free of syntax errors.
fn expr(text: &str) -> Expr {
    let (e, errors) = parse_expr(text, 0);
    assert!(
        errors.is_empty(),
        "unexpected errors for {text:?}: {errors:?}"
    );
    e.expect("an expression")
}

/// Error messages of parsing `text` as an expression.
fn expr_errors(text: &str) -> Vec<String> {
    parse_expr(text, 0)
        .1
        .into_iter()
        .map(|e| e.message)
        .collect()
}

/// The one function of a module that must be free of syntax errors.
fn single_fn(text: &str) -> FnDef {
    let parse = parse_module(text, 0);
    assert!(
        parse.errors.is_empty(),
        "unexpected errors: {:?}",
        parse.errors
    );
    match parse.module.items.as_slice() {
        [Item::Fn(f)] => f.clone(),
        other => panic!("expected one function, got {other:?}"),
    }
}

/// A compact S-expression rendering of a tree, to state its shape in one string.
fn sexp(e: &Expr) -> String {
    let list = |es: &[Expr]| es.iter().map(sexp).collect::<Vec<_>>().join(" ");
    match &e.kind {
        ExprKind::Int(n) => n.to_string(),
        ExprKind::Real(r) => format!("{r:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Unit => "()".into(),
        ExprKind::Var(v) | ExprKind::Ctor(v) => v.clone(),
        ExprKind::Call(f, args) if args.is_empty() => format!("(call {})", sexp(f)),
        ExprKind::Call(f, args) => format!("(call {} {})", sexp(f), list(args)),
        ExprKind::Lambda(ps, body) => {
            let ps: Vec<String> = ps
                .iter()
                .map(|p| {
                    let ty = if p.ty.is_some() { ":ty" } else { "" };
                    format!("{}{ty}", pat(&p.pat))
                })
                .collect();
            format!("(lambda [{}] {})", ps.join(" "), sexp(body))
        }
        ExprKind::Block(stmts, result) => {
            let mut s = String::from("(block");
            for Stmt::Let { pat: p, ty, value } in stmts {
                let ty = if ty.is_some() { ":ty" } else { "" };
                s += &format!(" (let {}{ty} {})", pat(p), sexp(value));
            }
            format!("{s} {})", sexp(result))
        }
        ExprKind::If(c, t, f) => format!("(if {} {} {})", sexp(c), sexp(t), sexp(f)),
        ExprKind::Match(s, arms) => {
            let arms: Vec<String> = arms
                .iter()
                .map(|a| format!("[{} {}]", pat(&a.pat), sexp(&a.body)))
                .collect();
            format!("(match {} {})", sexp(s), arms.join(" "))
        }
        ExprKind::Tuple(es) => format!("(tuple {})", list(es)),
        ExprKind::Proj(t, i) => format!("(.{i} {})", sexp(t)),
        ExprKind::Array(es) => format!("[{}]", list(es)),
        ExprKind::Index(a, i) => format!("(index {} {})", sexp(a), sexp(i)),
        ExprKind::Binary(op, l, r) => format!("({} {} {})", op.symbol(), sexp(l), sexp(r)),
        ExprKind::Unary(UnOp::Neg, x) => format!("(neg {})", sexp(x)),
        ExprKind::Unary(UnOp::Not, x) => format!("(not {})", sexp(x)),
        ExprKind::Error => "<error>".into(),
    }
}

fn pat(p: &Pat) -> String {
    let list = |ps: &[Pat]| ps.iter().map(pat).collect::<Vec<_>>().join(" ");
    match &p.kind {
        PatKind::Wild => "_".into(),
        PatKind::Var(v) => v.clone(),
        PatKind::Tuple(ps) => format!("(tuple {})", list(ps)),
        PatKind::Ctor(c, ps) if ps.is_empty() => c.name.clone(),
        PatKind::Ctor(c, ps) => format!("({} {})", c.name, list(ps)),
        PatKind::Int(n) => n.to_string(),
        PatKind::Real(r) => format!("{r:?}"),
        PatKind::Bool(b) => b.to_string(),
    }
}

fn s(text: &str) -> String {
    sexp(&expr(text))
}

// ---------------------------------------------------------------- lexer

#[test]
fn int_literal_is_an_int_token() {
    assert_eq!(kinds("1"), [Token::IntLit]);
    assert_eq!(kinds("1234567"), [Token::IntLit]);
}

#[test]
fn real_literals_need_a_dot_or_an_exponent() {
    for text in ["1.0", "0.5", "1e-3", "2.5E+4", "3e7", "6.02e23"] {
        assert_eq!(kinds(text), [Token::RealLit], "{text}");
    }
}

#[test]
fn real_literal_values() {
    assert_eq!(expr("1.0").kind, ExprKind::Real(1.0));
    assert_eq!(expr("1e-3").kind, ExprKind::Real(0.001));
    // 2.5E+4 = 2.5 * 10^4
    assert_eq!(expr("2.5E+4").kind, ExprKind::Real(25000.0));
    assert_eq!(expr("1").kind, ExprKind::Int(1));
}

#[test]
fn dot_without_fraction_digits_is_not_a_real() {
    // `1.` is the Int `1` followed by `.`; `1e` is `1` then the identifier `e`.
    assert_eq!(kinds("1."), [Token::IntLit, Token::Dot]);
    assert_eq!(kinds("1e"), [Token::IntLit, Token::Ident]);
}

#[test]
fn comments_are_skipped_to_end_of_line() {
    assert_eq!(
        kinds("a // b c + d\n e // trailing without newline"),
        [Token::Ident, Token::Ident]
    );
    // A single slash is division, not a comment.
    assert_eq!(kinds("a / b"), [Token::Ident, Token::Slash, Token::Ident]);
}

#[test]
fn lower_case_names_are_identifiers_upper_case_are_constructors() {
    assert_eq!(
        kinds("foo _bar x1 Baz X_1 Real"),
        [
            Token::Ident,
            Token::Ident,
            Token::Ident,
            Token::UpperIdent,
            Token::UpperIdent,
            Token::UpperIdent,
        ]
    );
    assert_eq!(expr("foo").kind, ExprKind::Var("foo".into()));
    assert_eq!(expr("Foo").kind, ExprKind::Ctor("Foo".into()));
}

#[test]
fn keywords_are_not_identifiers_but_longer_names_are() {
    assert_eq!(
        kinds("fn let if else match true false enum"),
        [
            Token::Fn,
            Token::Let,
            Token::If,
            Token::Else,
            Token::Match,
            Token::True,
            Token::False,
            Token::Enum,
        ]
    );
    assert_eq!(kinds("fnx lets iff truey"), [Token::Ident; 4]);
}

#[test]
fn unknown_character_is_an_error_token_and_a_syntax_error() {
    assert_eq!(kinds("a $ b"), [Token::Ident, Token::Error, Token::Ident]);
    let errors = expr_errors("1 + $");
    assert!(
        errors
            .iter()
            .any(|m| m.contains("unexpected character `$`")),
        "{errors:?}"
    );
}

#[test]
fn multi_character_operators_lex_greedily() {
    assert_eq!(
        kinds("|| | && == = => -> <= >= != !"),
        [
            Token::OrOr,
            Token::Pipe,
            Token::AndAnd,
            Token::EqEq,
            Token::Eq,
            Token::FatArrow,
            Token::Arrow,
            Token::Le,
            Token::Ge,
            Token::NotEq,
            Token::Bang,
        ]
    );
}

// ---------------------------------------------------------------- operators

#[test]
fn subtraction_is_left_associative() {
    assert_eq!(s("a - b - c"), "(- (- a b) c)");
    assert_eq!(s("a / b / c"), "(/ (/ a b) c)");
    assert_eq!(s("a / b % c"), "(% (/ a b) c)");
}

#[test]
fn multiplication_binds_tighter_than_addition() {
    assert_eq!(s("a + b * c"), "(+ a (* b c))");
    assert_eq!(s("a * b + c"), "(+ (* a b) c)");
    assert_eq!(s("(a + b) * c"), "(* (+ a b) c)");
}

#[test]
fn prefix_minus_binds_tighter_than_multiplication() {
    assert_eq!(s("-a * b"), "(* (neg a) b)");
    assert_eq!(s("a * -b"), "(* a (neg b))");
    assert_eq!(s("!a && b"), "(&& (not a) b)");
}

#[test]
fn postfix_binds_tighter_than_prefix() {
    assert_eq!(s("-f(x)"), "(neg (call f x))");
    assert_eq!(s("-a[0]"), "(neg (index a 0))");
    assert_eq!(s("-t.1"), "(neg (.1 t))");
}

#[test]
fn or_is_looser_than_and() {
    assert_eq!(s("a || b && c"), "(|| a (&& b c))");
    assert_eq!(s("a && b || c"), "(|| (&& a b) c)");
    assert_eq!(s("a || b || c"), "(|| (|| a b) c)");
}

#[test]
fn comparison_is_looser_than_arithmetic_and_tighter_than_and() {
    assert_eq!(s("a + 1 < b * 2"), "(< (+ a 1) (* b 2))");
    assert_eq!(s("a == b && c != d"), "(&& (== a b) (!= c d))");
}

#[test]
fn comparisons_do_not_chain() {
    let errors = expr_errors("a < b < c");
    assert!(
        errors.iter().any(|m| m.contains("cannot be chained")),
        "{errors:?}"
    );
    // Parenthesised, it is fine.
    assert_eq!(s("(a < b) == c"), "(== (< a b) c)");
}

#[test]
fn negative_literals_fold_into_literals() {
    assert_eq!(expr("-3").kind, ExprKind::Int(-3));
    assert_eq!(expr("-2.5").kind, ExprKind::Real(-2.5));
    assert_eq!(s("a - 3"), "(- a 3)");
}

#[test]
fn most_negative_int_literal_is_i64_min() {
    assert_eq!(expr("-9223372036854775808").kind, ExprKind::Int(i64::MIN));
    assert_eq!(s("x - -9223372036854775808"), "(- x -9223372036854775808)");
}

#[test]
fn int_literal_above_i64_max_is_an_error() {
    let errors = expr_errors("9223372036854775808");
    assert!(
        errors.iter().any(|m| m.contains("out of range")),
        "{errors:?}"
    );
    let errors = expr_errors("-9223372036854775809");
    assert!(
        errors.iter().any(|m| m.contains("out of range")),
        "{errors:?}"
    );
}

#[test]
fn i64_min_magnitude_after_binary_minus_is_an_error() {
    // `5 - 9223372036854775808` subtracts the literal 2^63, which is not an Int; only
    // a prefix minus directly before it makes `-2^63`.
    let errors = expr_errors("5 - 9223372036854775808");
    assert!(
        errors.iter().any(|m| m.contains("out of range")),
        "{errors:?}"
    );
}

#[test]
fn negating_i64_min_is_not_folded_into_a_wrapped_literal() {
    // -(-2^63) = 2^63 is not an Int: it must stay a negation (which overflows at run
    // time), not become the literal i64::MIN again by wrapping.
    for text in ["-(-9223372036854775808)", "--9223372036854775808"] {
        let e = expr(text);
        assert_ne!(e.kind, ExprKind::Int(i64::MIN), "{text}");
        assert_eq!(sexp(&e), "(neg -9223372036854775808)", "{text}");
    }
    // Double negation of an ordinary literal still folds: -(-5) = 5.
    assert_eq!(expr("-(-5)").kind, ExprKind::Int(5));
}

// ---------------------------------------------------------------- postfix

#[test]
fn double_projection_parses_as_two_projections() {
    // `t.0.1` lexes as `t` `.` `0.1` (a real literal) and is split back.
    assert_eq!(s("t.0.1"), "(.1 (.0 t))");
    assert_eq!(s("t.1.0.2"), "(.2 (.0 (.1 t)))");
    assert_eq!(s("t.0 .1"), "(.1 (.0 t))");
}

#[test]
fn projection_needs_a_field_number() {
    let errors = expr_errors("t.x");
    assert!(
        errors.iter().any(|m| m.contains("tuple field number")),
        "{errors:?}"
    );
    let errors = expr_errors("t.1e3");
    assert!(
        errors.iter().any(|m| m.contains("tuple field number")),
        "{errors:?}"
    );
}

#[test]
fn calls_and_indexing_chain_left_to_right() {
    assert_eq!(s("f(a)(b)[0].1"), "(.1 (index (call (call f a) b) 0))");
    assert_eq!(s("f()"), "(call f)");
    assert_eq!(s("f(a, b,)"), "(call f a b)");
}

#[test]
fn parentheses_tuples_and_unit() {
    assert_eq!(s("()"), "()");
    assert_eq!(s("(a)"), "a");
    assert_eq!(s("(a, b)"), "(tuple a b)");
    assert_eq!(s("[1, 2, 3]"), "[1 2 3]");
    assert_eq!(s("[]"), "[]");
    let errors = expr_errors("(a,)");
    assert!(
        errors.iter().any(|m| m.contains("two or more")),
        "{errors:?}"
    );
}

// ---------------------------------------------------------------- compound

#[test]
fn else_if_chains_nest_in_the_else_branch() {
    assert_eq!(
        s("if a { 1 } else if b { 2 } else { 3 }"),
        "(if a (block 1) (if b (block 2) (block 3)))"
    );
}

#[test]
fn if_without_else_is_an_error() {
    let errors = expr_errors("if a { 1 }");
    assert!(errors.iter().any(|m| m.contains("`else`")), "{errors:?}");
}

#[test]
fn lambda_with_annotated_and_unannotated_parameters() {
    let e = expr("|x, y: Real| x + y");
    let ExprKind::Lambda(params, body) = &e.kind else {
        panic!("not a lambda: {e:?}")
    };
    assert_eq!(params.len(), 2);
    assert_eq!(params[0].pat.kind, PatKind::Var("x".into()));
    assert!(params[0].ty.is_none());
    assert_eq!(params[1].pat.kind, PatKind::Var("y".into()));
    assert_eq!(
        params[1].ty.as_ref().map(|t| &t.kind),
        Some(&TypeExprKind::Real)
    );
    assert_eq!(sexp(body), "(+ x y)");
}

#[test]
fn lambda_without_parameters() {
    assert_eq!(s("|| 1"), "(lambda [] 1)");
    assert_eq!(s("| | 1"), "(lambda [] 1)");
}

#[test]
fn lambda_with_tuple_pattern_parameter() {
    assert_eq!(s("|(a, b)| a * b"), "(lambda [(tuple a b)] (* a b))");
    assert_eq!(
        s("|(a, (b, _)), c| c"),
        "(lambda [(tuple a (tuple b _)) c] c)"
    );
}

#[test]
fn lambda_body_extends_as_far_as_possible() {
    assert_eq!(s("|x| x + 1"), "(lambda [x] (+ x 1))");
    assert_eq!(s("|x| |y| x * y"), "(lambda [x] (lambda [y] (* x y)))");
    assert_eq!(
        s("map(|x| x * 2, xs)"),
        "(call map (lambda [x] (* x 2)) xs)"
    );
}

#[test]
fn or_between_operands_is_not_a_lambda() {
    assert_eq!(s("a || || b"), "(|| a (lambda [] b))");
}

#[test]
fn match_arms_with_nested_constructor_patterns() {
    assert_eq!(
        s("match t { Node(Leaf, x, Node(_, y, _)) => x + y, Leaf => 0, _ => 1 }"),
        "(match t [(Node Leaf x (Node _ y _)) (+ x y)] [Leaf 0] [_ 1])"
    );
}

#[test]
fn match_arms_with_literal_and_tuple_patterns() {
    assert_eq!(
        s("match p { (0, true) => 1, (-2, false) => 2, (_, _) => 3 }"),
        "(match p [(tuple 0 true) 1] [(tuple -2 false) 2] [(tuple _ _) 3])"
    );
    assert_eq!(
        s("match x { 1.5 => 1, -0.5 => 2, _ => 3 }"),
        "(match x [1.5 1] [-0.5 2] [_ 3])"
    );
    assert_eq!(
        s("match n { -9223372036854775808 => 1, _ => 0 }"),
        "(match n [-9223372036854775808 1] [_ 0])"
    );
}

#[test]
fn match_arm_with_block_body_needs_no_comma() {
    assert_eq!(
        s("match c { A => { 1 } B => { 2 } }"),
        "(match c [A (block 1)] [B (block 2)])"
    );
}

#[test]
fn match_without_arms_is_an_error() {
    let errors = expr_errors("match c { }");
    assert!(
        errors.iter().any(|m| m.contains("at least one arm")),
        "{errors:?}"
    );
}

#[test]
fn let_with_tuple_pattern_and_type_annotation() {
    let e = expr("{ let (a, (b, _)): (Int, (Real, Bool)) = t; let c = a; c }");
    assert_eq!(
        sexp(&e),
        "(block (let (tuple a (tuple b _)):ty t) (let c a) c)"
    );
    let ExprKind::Block(stmts, _) = &e.kind else {
        panic!()
    };
    let Stmt::Let { ty: Some(ty), .. } = &stmts[0] else {
        panic!("annotation missing")
    };
    let TypeExprKind::Tuple(parts) = &ty.kind else {
        panic!("not a tuple type: {ty:?}")
    };
    assert_eq!(parts[0].kind, TypeExprKind::Int);
    let TypeExprKind::Tuple(inner) = &parts[1].kind else {
        panic!("not a tuple type: {:?}", parts[1])
    };
    assert_eq!(inner[0].kind, TypeExprKind::Real);
    assert_eq!(inner[1].kind, TypeExprKind::Bool);
}

#[test]
fn let_rejects_refutable_patterns() {
    let errors = expr_errors("{ let Some(x) = y; x }");
    assert!(
        errors.iter().any(|m| m.contains("expected a name")),
        "{errors:?}"
    );
}

#[test]
fn block_must_end_with_an_expression() {
    let errors = expr_errors("{ let x = 1; }");
    assert!(
        errors
            .iter()
            .any(|m| m.contains("must end with an expression")),
        "{errors:?}"
    );
    let errors = expr_errors("{ 1; 2 }");
    assert!(errors.iter().any(|m| m.contains("no effect")), "{errors:?}");
}

#[test]
fn function_and_enum_definitions() {
    let parse = parse_module(
        "enum Shape { Circle(Real), Rect(Real, Real), Dot }\n\
         fn area(s: Shape, (a, b): (Int, Int)) -> fn([Real]) -> Real { f }",
        0,
    );
    assert!(parse.errors.is_empty(), "{:?}", parse.errors);
    let [Item::Enum(e), Item::Fn(f)] = parse.module.items.as_slice() else {
        panic!("{:?}", parse.module.items)
    };
    assert_eq!(e.name.name, "Shape");
    let arities: Vec<(&str, usize)> = e
        .variants
        .iter()
        .map(|v| (v.name.name.as_str(), v.fields.len()))
        .collect();
    assert_eq!(arities, [("Circle", 1), ("Rect", 2), ("Dot", 0)]);
    assert_eq!(f.name.name, "area");
    assert_eq!(f.params.len(), 2);
    assert_eq!(f.params[0].1.kind, TypeExprKind::Named("Shape".into()));
    assert_eq!(pat(&f.params[1].0), "(tuple a b)");
    let TypeExprKind::Fn(ps, r) = &f.ret.kind else {
        panic!("{:?}", f.ret)
    };
    assert_eq!(ps.len(), 1);
    assert!(
        matches!(&ps[0].kind, TypeExprKind::Array(t) if t.kind == TypeExprKind::Real),
        "{:?}",
        ps[0]
    );
    assert_eq!(r.kind, TypeExprKind::Real);
}

#[test]
fn spans_cover_the_whole_node() {
    let text = "foo(1, 2) + -x";
    let e = expr(text);
    assert_eq!((e.span.start, e.span.end), (0, text.len() as u32));
    let ExprKind::Binary(_, l, r) = &e.kind else {
        panic!()
    };
    assert_eq!(
        &text[l.span.start as usize..l.span.end as usize],
        "foo(1, 2)"
    );
    assert_eq!(&text[r.span.start as usize..r.span.end as usize], "-x");
    let f = single_fn("fn f() -> Int { 1 }");
    assert_eq!(f.span.start, 0);
}

// ---------------------------------------------------------------- errors

#[test]
fn recovery_reports_several_errors_in_one_file() {
    let text = "fn f() -> Int { let x = ; 1 }\n\
                fn g() -> Int { 1 + }\n\
                fn h() -> Int { 2 }\n";
    let parse = parse_module(text, 0);
    assert!(parse.errors.len() >= 2, "{:?}", parse.errors);
    // The errors are in different functions (lines 1 and 2).
    let lines: Vec<usize> = parse
        .errors
        .iter()
        .map(|e| crate::line_col(text, e.span.start as usize).0)
        .collect();
    assert!(lines.contains(&1) && lines.contains(&2), "{lines:?}");
    // The good function after them is still parsed.
    assert!(
        parse
            .module
            .items
            .iter()
            .any(|i| matches!(i, Item::Fn(f) if f.name.name == "h")),
        "{:?}",
        parse.module.items
    );
}

#[test]
fn recovery_inside_a_block_continues_with_the_next_statement() {
    let text = "fn f() -> Int { let a = 1 +; let b = ); b }";
    let parse = parse_module(text, 0);
    assert_eq!(parse.errors.len(), 2, "{:?}", parse.errors);
}

#[test]
fn garbage_at_top_level_is_reported_and_skipped() {
    let parse = parse_module("let x = 1; fn ok() -> Int { 1 }", 0);
    assert_eq!(parse.errors.len(), 1, "{:?}", parse.errors);
    assert!(parse.errors[0].message.contains("expected `fn` or `enum`"));
    assert_eq!(parse.module.items.len(), 1);
}

#[test]
fn parse_expr_rejects_trailing_input() {
    let errors = expr_errors("1 2");
    assert!(
        errors.iter().any(|m| m.contains("expected end of input")),
        "{errors:?}"
    );
}

/// Parses on a thread with a modest, explicit stack: the depth limit must stop the
/// parser well before that is exhausted.
fn parse_expr_on_small_stack(text: String) -> Vec<String> {
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || expr_errors(&text))
        .expect("spawn")
        .join()
        .expect("the parser must not crash on deep nesting")
}

#[test]
fn deep_parenthesis_nesting_is_an_error_not_a_crash() {
    let n = 5000;
    let text = format!("{}1{}", "(".repeat(n), ")".repeat(n));
    let errors = parse_expr_on_small_stack(text);
    assert!(errors.iter().any(|m| m == "nesting too deep"), "{errors:?}");
}

#[test]
fn deep_nesting_of_every_kind_is_an_error_not_a_crash() {
    let n = 5000;
    let cases = [
        format!("{}1{}", "[".repeat(n), "]".repeat(n)),
        format!("{}1{}", "{".repeat(n), "}".repeat(n)),
        format!("{}x", "-".repeat(n)),
        format!("{}x", "!".repeat(n)),
        format!("{}x", "|a| ".repeat(n)),
        format!("{}1{}", "f(".repeat(n), ")".repeat(n)),
        format!("x{}", ".0".repeat(n)),
        format!("x{}", "[0]".repeat(n)),
        format!("{{ let a: {}Real{} = 1; a }}", "[".repeat(n), "]".repeat(n)),
        format!("match x {{ {}_{} => 1 }}", "(".repeat(n), ")".repeat(n)),
        format!("if a {{ 1 }}{}", " else if a { 1 }".repeat(n)) + " else { 2 }",
    ];
    for text in cases {
        let head: String = text.chars().take(20).collect();
        let errors = parse_expr_on_small_stack(text);
        assert!(
            errors.iter().any(|m| m == "nesting too deep"),
            "{head}...: {errors:?}"
        );
    }
}

#[test]
fn nesting_within_the_limit_parses() {
    let n = 100;
    let text = format!("{}1{}", "(".repeat(n), ")".repeat(n));
    assert_eq!(parse_expr_on_small_stack(text), Vec::<String>::new());
}

#[test]
fn line_index_agrees_with_line_col_at_every_offset() {
    // Empty lines, a multi-byte character, a final line without a newline, offsets
    // inside a character and past the end.
    let text = "fn f() -> Int {\n\n  let é = 1;\r\n  é }\nx";
    let index = crate::LineIndex::new(text);
    for offset in 0..=text.len() + 2 {
        assert_eq!(
            index.line_col(text, offset),
            crate::line_col(text, offset),
            "offset {offset}"
        );
    }
    assert_eq!(index.line_col(text, text.len()), (5, 2));
}
