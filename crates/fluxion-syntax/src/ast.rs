//! The surface syntax tree, exactly as written: every node carries its span.
//!
//! Nothing here is resolved or typed; `fluxion-typeck` turns it into Core.

use crate::span::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    pub items: Vec<Item>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Fn(FnDef),
    Enum(EnumDef),
}

#[derive(Clone, Debug, PartialEq)]
pub struct FnDef {
    pub name: Ident,
    pub params: Vec<(Pat, TypeExpr)>,
    pub ret: TypeExpr,
    pub body: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EnumDef {
    pub name: Ident,
    pub variants: Vec<Variant>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub name: Ident,
    pub fields: Vec<TypeExpr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TypeExpr {
    pub kind: TypeExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeExprKind {
    Real,
    Int,
    Bool,
    Unit,
    Tuple(Vec<TypeExpr>),
    Array(Box<TypeExpr>),
    Fn(Vec<TypeExpr>, Box<TypeExpr>),
    /// A user enum, by name.
    Named(String),
}

/// Patterns. `let` and parameters accept only the irrefutable ones (`_`, names,
/// tuples); `match` arms accept all.
#[derive(Clone, Debug, PartialEq)]
pub struct Pat {
    pub kind: PatKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PatKind {
    Wild,
    Var(String),
    Tuple(Vec<Pat>),
    Ctor(Ident, Vec<Pat>),
    Int(i64),
    Real(f64),
    Bool(bool),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LambdaParam {
    pub pat: Pat,
    pub ty: Option<TypeExpr>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `let pat (: ty)? = value;`
    Let {
        pat: Pat,
        ty: Option<TypeExpr>,
        value: Expr,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct MatchArm {
    pub pat: Pat,
    pub body: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Real(f64),
    Bool(bool),
    Unit,
    /// A lower-case name: a local, a top-level function or a built-in.
    Var(String),
    /// An upper-case name: an enum constructor.
    Ctor(String),
    Call(Box<Expr>, Vec<Expr>),
    Lambda(Vec<LambdaParam>, Box<Expr>),
    Block(Vec<Stmt>, Box<Expr>),
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    Match(Box<Expr>, Vec<MatchArm>),
    Tuple(Vec<Expr>),
    Proj(Box<Expr>, usize),
    Array(Vec<Expr>),
    Index(Box<Expr>, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
    /// Stands in for a piece that failed to parse (an error was reported).
    Error,
}
