//! Resolves a Core code to frame slots, once per code, so evaluation indexes a
//! `Vec<Value>` instead of looking names up.
//!
//! Slot layout of a frame: captures, then parameters, then every variable the body
//! binds (including those in nested `if`/`match` bodies), in binding order.

use std::collections::HashMap;
use std::rc::Rc;

use fluxion_core::{Atom, Body, CodeId, Lit, Module, Prim, Rhs, Span, Type, VarId};

use crate::value::Value;

#[derive(Debug)]
pub(crate) struct CCode {
    pub(crate) n_slots: usize,
    pub(crate) n_captures: usize,
    pub(crate) n_params: usize,
    pub(crate) body: CBody,
}

#[derive(Debug)]
pub(crate) struct CBody {
    pub(crate) binds: Vec<CBind>,
    pub(crate) result: CAtom,
}

#[derive(Debug)]
pub(crate) struct CBind {
    pub(crate) slot: u32,
    pub(crate) rhs: CRhs,
    pub(crate) span: Span,
}

#[derive(Debug, Clone)]
pub(crate) enum CAtom {
    Slot(u32),
    Const(Value),
}

#[derive(Debug)]
pub(crate) enum CRhs {
    Atom(CAtom),
    /// The result type is kept for primitives that need it (the zero of `sum`).
    Prim(Prim, Vec<CAtom>, Rc<Type>),
    /// `+ - * / %`, the commonest primitives, evaluated on borrowed operands (no
    /// argument vector, no reference counting).
    Arith(Prim, CAtom, CAtom),
    /// `< <= > >=`, likewise.
    Compare(Prim, CAtom, CAtom),
    /// `%delta(c₁, id₁, …)`: a tape entry from borrowed operands (the delta layer
    /// emits one per real primitive).
    Delta(Vec<CAtom>),
    Call(CAtom, Vec<CAtom>),
    CallDirect(CodeId, Vec<CAtom>),
    Closure(CodeId, Vec<CAtom>),
    Tuple(Vec<CAtom>),
    Proj(CAtom, usize),
    Array(Vec<CAtom>),
    Ctor(u32, Vec<CAtom>),
    If(CAtom, Box<CBody>, Box<CBody>),
    /// Arms indexed by constructor tag: field slots and body; the constructor names
    /// are kept for the "non-exhaustive match" message.
    Match(
        CAtom,
        Vec<Option<(Vec<u32>, CBody)>>,
        Option<Box<CBody>>,
        Rc<[String]>,
    ),
}

pub(crate) fn compile_code(module: &Module, id: CodeId) -> CCode {
    let code = module.code(id);
    let mut c = Compiler {
        module,
        slots: HashMap::new(),
    };
    for v in code.captures.iter().chain(&code.params) {
        c.slot(*v);
    }
    let body = c.body(&code.body);
    CCode {
        n_slots: c.slots.len(),
        n_captures: code.captures.len(),
        n_params: code.params.len(),
        body,
    }
}

struct Compiler<'m> {
    module: &'m Module,
    slots: HashMap<VarId, u32>,
}

impl Compiler<'_> {
    fn slot(&mut self, v: VarId) -> u32 {
        let n = self.slots.len() as u32;
        *self.slots.entry(v).or_insert(n)
    }

    fn atom(&mut self, a: &Atom) -> CAtom {
        match a {
            Atom::Var(v) => CAtom::Slot(self.slot(*v)),
            Atom::Lit(l) => CAtom::Const(match l {
                Lit::Real(x) => Value::Real(*x),
                Lit::Int(i) => Value::Int(*i),
                Lit::Bool(b) => Value::Bool(*b),
                Lit::Unit => Value::Unit,
            }),
        }
    }

    fn atoms(&mut self, atoms: &[Atom]) -> Vec<CAtom> {
        atoms.iter().map(|a| self.atom(a)).collect()
    }

    fn body(&mut self, body: &Body) -> CBody {
        let binds = body
            .bindings
            .iter()
            .map(|b| {
                let rhs = self.rhs(&b.rhs, b.var);
                CBind {
                    slot: self.slot(b.var),
                    rhs,
                    span: b.span,
                }
            })
            .collect();
        CBody {
            binds,
            result: self.atom(&body.result),
        }
    }

    fn rhs(&mut self, rhs: &Rhs, var: VarId) -> CRhs {
        match rhs {
            Rhs::Atom(a) => CRhs::Atom(self.atom(a)),
            Rhs::Prim(
                p @ (Prim::Add | Prim::Sub | Prim::Mul | Prim::Div | Prim::Rem | Prim::LinScale),
                args,
            ) if args.len() == 2 => CRhs::Arith(*p, self.atom(&args[0]), self.atom(&args[1])),
            Rhs::Prim(p @ (Prim::Lt | Prim::Le | Prim::Gt | Prim::Ge), args) if args.len() == 2 => {
                CRhs::Compare(*p, self.atom(&args[0]), self.atom(&args[1]))
            }
            Rhs::Prim(Prim::DeltaPush, args) => CRhs::Delta(self.atoms(args)),
            Rhs::Prim(
                p @ (Prim::DeltaInputs
                | Prim::DeltaLift
                | Prim::DeltaGrad
                | Prim::DeltaRows
                | Prim::Delta2Inputs
                | Prim::Delta2Lift
                | Prim::Delta2Grad),
                args,
            ) => {
                let arg_tys: Vec<_> = args.iter().map(|a| self.module.atom_ty(a)).collect();
                let ty = crate::resolved::walk_types(*p, &arg_tys, self.module.var_ty(var));
                CRhs::Prim(*p, self.atoms(args), Rc::new(ty))
            }
            Rhs::Prim(p, args) => CRhs::Prim(
                *p,
                self.atoms(args),
                Rc::new(self.module.var_ty(var).clone()),
            ),
            Rhs::Call(f, args) => CRhs::Call(self.atom(f), self.atoms(args)),
            Rhs::CallDirect(c, args) => CRhs::CallDirect(*c, self.atoms(args)),
            Rhs::Closure(c, args) => CRhs::Closure(*c, self.atoms(args)),
            Rhs::Tuple(args) => CRhs::Tuple(self.atoms(args)),
            Rhs::Proj(a, i) => CRhs::Proj(self.atom(a), *i),
            Rhs::Array(args) => CRhs::Array(self.atoms(args)),
            Rhs::Ctor(_, tag, args) => CRhs::Ctor(*tag, self.atoms(args)),
            Rhs::If(c, t, e) => {
                CRhs::If(self.atom(c), Box::new(self.body(t)), Box::new(self.body(e)))
            }
            Rhs::Match(s, arms, default) => {
                let scrutinee = self.atom(s);
                let names: Rc<[String]> = match self.module.atom_ty(s) {
                    Type::Enum(e) => self
                        .module
                        .enum_def(e)
                        .variants
                        .iter()
                        .map(|v| v.name.clone())
                        .collect(),
                    _ => Rc::new([]),
                };
                let mut table: Vec<Option<(Vec<u32>, CBody)>> =
                    (0..names.len()).map(|_| None).collect();
                for arm in arms {
                    let fields = arm.fields.iter().map(|f| self.slot(*f)).collect();
                    let body = self.body(&arm.body);
                    if let Some(entry) = table.get_mut(arm.tag as usize) {
                        *entry = Some((fields, body));
                    }
                }
                let default = default.as_ref().map(|d| Box::new(self.body(d)));
                CRhs::Match(scrutinee, table, default, names)
            }
        }
    }
}
