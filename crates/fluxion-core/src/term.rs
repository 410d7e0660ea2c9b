//! Core terms: explicitly typed A-normal form.
//!
//! A [`Body`] is a sequence of bindings `let v = rhs;` ending in an atom. Every
//! operand is an [`Atom`] (a variable or a literal); only bindings name compound
//! computations. Every [`VarId`] is bound exactly once in the module, and its type
//! and name hint live in [`crate::Module::vars`].
//!
//! Functions are [`Code`]: a top-level function has no captures; a lambda's code
//! lists the variables it captures. A closure value is (code, captured values), made by
//! [`Rhs::Closure`]; the code id is the closure's stable identity, so a transformation
//! of a function's code can be derived once and memoised.

use crate::prim::Prim;
use crate::ty::{EnumId, Type};

/// A source location: source id and byte range (the same shape as the front end's
/// span; Core does not depend on the front end).
/// The source id of the prelude (the library every program is compiled with): a fault
/// inside its functions is reported at the user's call that reached it.
pub const PRELUDE_SOURCE: u32 = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub source: u32,
    pub start: u32,
    pub end: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lit {
    Real(f64),
    Int(i64),
    Bool(bool),
    Unit,
}

impl Lit {
    pub fn ty(self) -> Type {
        match self {
            Lit::Real(_) => Type::Real,
            Lit::Int(_) => Type::Int,
            Lit::Bool(_) => Type::Bool,
            Lit::Unit => Type::Unit,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Atom {
    Var(VarId),
    Lit(Lit),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub var: VarId,
    pub rhs: Rhs,
    /// Where the computation came from, for runtime error messages.
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    pub bindings: Vec<Binding>,
    pub result: Atom,
}

/// One arm of a [`Rhs::Match`]: constructor `tag`, binding its fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Arm {
    pub tag: u32,
    pub fields: Vec<VarId>,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Rhs {
    Atom(Atom),
    Prim(Prim, Vec<Atom>),
    /// Calls a closure value.
    Call(Atom, Vec<Atom>),
    /// Calls a top-level function (a code without captures) directly.
    CallDirect(CodeId, Vec<Atom>),
    /// Makes a closure of `code`, capturing `args` for `code.captures` in order.
    Closure(CodeId, Vec<Atom>),
    Tuple(Vec<Atom>),
    Proj(Atom, usize),
    Array(Vec<Atom>),
    Ctor(EnumId, u32, Vec<Atom>),
    If(Atom, Box<Body>, Box<Body>),
    /// Branches on the constructor; `default` runs for constructors without an arm.
    Match(Atom, Vec<Arm>, Option<Box<Body>>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeKind {
    /// A named top-level function.
    TopLevel,
    /// A lambda, lifted out of the function it appears in.
    Lambda,
}

/// The code of one function.
#[derive(Clone, Debug, PartialEq)]
pub struct Code {
    pub name: String,
    pub kind: CodeKind,
    /// Variables the closure captures (bound outside, in scope where it is made).
    pub captures: Vec<VarId>,
    pub params: Vec<VarId>,
    pub ret: Type,
    pub body: Body,
    pub span: Span,
}

impl Code {
    /// A code whose parameters, result type and body are filled in later (reserving
    /// its id first lets recursive references to it be made while it is built).
    pub fn placeholder(name: impl Into<String>, kind: CodeKind, span: Span) -> Code {
        Code {
            name: name.into(),
            kind,
            captures: vec![],
            params: vec![],
            ret: Type::Unit,
            body: Body {
                bindings: vec![],
                result: Atom::Lit(Lit::Unit),
            },
            span,
        }
    }
}

/// Information about one variable.
#[derive(Clone, Debug, PartialEq)]
pub struct VarInfo {
    /// The source name (or a generated hint); printing appends the id.
    pub name: String,
    pub ty: Type,
}
