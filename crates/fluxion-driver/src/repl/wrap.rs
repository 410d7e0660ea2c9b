//! An input as a function of the session's bindings: the REPL elaborates
//! `|x: T, ...| input` (each earlier binding the input mentions becomes a typed
//! parameter), so the input is compiled and run on its own while the bindings' values
//! stay in memory. Built as AST, so spans stay those of the text the user typed.

use fluxion_core::{EnumDef, Type};
use fluxion_syntax::ast::{
    Expr, ExprKind, LambdaParam, Pat, PatKind, Stmt, TypeExpr, TypeExprKind,
};
use fluxion_syntax::lexer::{Token, lex};
use fluxion_syntax::{SourceId, Span};

/// The lower-case names in `text` (a superset of the bindings it uses: a local that
/// shadows a binding only adds an unused parameter).
pub(crate) fn mentioned_names(text: &str, source: SourceId) -> Vec<String> {
    lex(text, source)
        .into_iter()
        .filter(|(tok, _)| *tok == Token::Ident)
        .map(|(_, s)| text[s.start as usize..s.end as usize].to_string())
        .collect()
}

/// `|p1: T1, ...| body`, spanning `span`.
pub(crate) fn input_function(params: Vec<(String, TypeExpr)>, body: Expr, span: Span) -> Expr {
    let params = params
        .into_iter()
        .map(|(name, ty)| LambdaParam {
            pat: Pat {
                kind: PatKind::Var(name),
                span,
            },
            ty: Some(ty),
        })
        .collect();
    Expr {
        kind: ExprKind::Lambda(params, Box::new(body)),
        span,
    }
}

/// `{ let pat: ty = value; (names bound by pat) }` and those names, in order.
pub(crate) fn let_body(
    pat: Pat,
    ty: Option<TypeExpr>,
    value: Expr,
    span: Span,
) -> (Expr, Vec<String>) {
    let mut names = Vec::new();
    pattern_names(&pat, &mut names);
    let var = |n: &String| Expr {
        kind: ExprKind::Var(n.clone()),
        span,
    };
    let result = match names.as_slice() {
        [] => ExprKind::Unit,
        [one] => var(one).kind,
        many => ExprKind::Tuple(many.iter().map(var).collect()),
    };
    let block = Expr {
        kind: ExprKind::Block(
            vec![Stmt::Let { pat, ty, value }],
            Box::new(Expr { kind: result, span }),
        ),
        span,
    };
    (block, names)
}

fn pattern_names(pat: &Pat, out: &mut Vec<String>) {
    match &pat.kind {
        PatKind::Var(n) => {
            out.retain(|o| o != n);
            out.push(n.clone());
        }
        PatKind::Tuple(ps) | PatKind::Ctor(_, ps) => ps.iter().for_each(|p| pattern_names(p, out)),
        _ => {}
    }
}

/// `ty` as source syntax: enums by name (a binding whose enum was redefined is dropped
/// before this could name the wrong one).
pub(crate) fn type_expr(ty: &Type, enums: &[EnumDef], span: Span) -> TypeExpr {
    let kind = match ty {
        Type::Real => TypeExprKind::Real,
        Type::Int => TypeExprKind::Int,
        Type::Bool => TypeExprKind::Bool,
        Type::Unit => TypeExprKind::Unit,
        Type::Tuple(ts) => {
            TypeExprKind::Tuple(ts.iter().map(|t| type_expr(t, enums, span)).collect())
        }
        Type::Array(t) => TypeExprKind::Array(Box::new(type_expr(t, enums, span))),
        Type::Fn(ps, r) => TypeExprKind::Fn(
            ps.iter().map(|t| type_expr(t, enums, span)).collect(),
            Box::new(type_expr(r, enums, span)),
        ),
        Type::Enum(e) => TypeExprKind::Named(enums[e.0 as usize].name.clone()),
    };
    TypeExpr { kind, span }
}
