//! Compiles `match` with nested patterns to Core's flat constructor `match` and `if`.
//!
//! Rows are tried top to bottom (first match wins). Each row is a list of pending
//! tests `(variable, pattern)`. Names, `_` and tuples are simplified away (tuples into
//! projections); then the first row's first test decides: a constructor test becomes
//! one Core `match` over every constructor some row tests for, a literal test becomes
//! an `if`. Rows without a test on that variable go into every branch, so a body can be
//! elaborated more than once (only for patterns that need it). A constructor no row
//! accepts gets no arm and no default: reaching it is the runtime error
//! "non-exhaustive match".

use std::collections::HashMap;

use fluxion_core::{Arm, Atom, EnumId, Lit, Prim, Rhs, Span, VarId};
use fluxion_syntax::ast::{self, PatKind};

use crate::elaborate::{Elab, span};
use crate::infer::Ty;

#[derive(Clone)]
struct Row<'e> {
    tests: Vec<(VarId, &'e ast::Pat)>,
    binds: Vec<(String, VarId)>,
    body: &'e ast::Expr,
}

impl Elab {
    pub(crate) fn match_expr(
        &mut self,
        scrutinee: &ast::Expr,
        arms: &[ast::MatchArm],
        expected: Option<&Ty>,
        sp: Span,
    ) -> (Atom, Ty) {
        let (sa, sty) = self.expr(scrutinee, None);
        let svar = match sa {
            Atom::Var(v) => v,
            Atom::Lit(_) => {
                match self.emit("scrut", Rhs::Atom(sa), sty.clone(), span(scrutinee.span)) {
                    Atom::Var(v) => v,
                    Atom::Lit(_) => unreachable!("emit returns a variable"),
                }
            }
        };
        let ty = expected.cloned().unwrap_or_else(|| self.u.fresh());
        for arm in arms {
            self.bound_once([&arm.pat]);
        }
        let rows = arms
            .iter()
            .map(|arm| Row {
                tests: vec![(svar, &arm.pat)],
                binds: vec![],
                body: &arm.body,
            })
            .collect();
        let mut projections = HashMap::new();
        let atom = self.compile_rows(rows, &ty, sp, &mut projections);
        (atom, ty)
    }

    /// Emits code choosing the first matching row; returns the match's value.
    fn compile_rows(
        &mut self,
        rows: Vec<Row>,
        ty: &Ty,
        sp: Span,
        projections: &mut HashMap<(VarId, usize), VarId>,
    ) -> Atom {
        let rows: Vec<Row> = rows
            .into_iter()
            .filter_map(|r| self.simplify(r, projections))
            .collect();
        let Some(first) = rows.first() else {
            return self.emit("fail", Rhs::Prim(Prim::MatchFail, vec![]), ty.clone(), sp);
        };
        let Some(&(var, pat)) = first.tests.first() else {
            let row = first.clone();
            let mark_binds: Vec<(String, VarId)> = row.binds.clone();
            let before = self.scope_len();
            for (name, v) in &mark_binds {
                self.push_scope(name, *v);
            }
            let (a, bty) = self.expr(row.body, Some(ty));
            self.expect(
                &bty,
                ty,
                span(row.body.span),
                "match arm (all arms must have the same type)",
            );
            self.truncate_scope(before);
            return a;
        };
        match &pat.kind {
            PatKind::Ctor(..) => self.compile_ctor_test(var, rows, ty, sp, projections),
            PatKind::Int(n) => {
                self.compile_literal_test(var, Lit::Int(*n), rows, ty, sp, projections)
            }
            PatKind::Real(x) => {
                self.compile_literal_test(var, Lit::Real(*x), rows, ty, sp, projections)
            }
            PatKind::Bool(b) => {
                self.compile_literal_test(var, Lit::Bool(*b), rows, ty, sp, projections)
            }
            PatKind::Wild | PatKind::Var(_) | PatKind::Tuple(_) => unreachable!("simplified away"),
        }
    }

    /// Removes name, `_` and tuple tests from a row; drops rows with ill-typed tests.
    fn simplify<'e>(
        &mut self,
        mut row: Row<'e>,
        projections: &mut HashMap<(VarId, usize), VarId>,
    ) -> Option<Row<'e>> {
        let mut out = Vec::new();
        let mut work: Vec<(VarId, &ast::Pat)> = row.tests.drain(..).rev().collect();
        while let Some((v, p)) = work.pop() {
            match &p.kind {
                PatKind::Wild => {}
                PatKind::Var(name) => row.binds.push((name.clone(), v)),
                PatKind::Tuple(pats) => {
                    let elems: Vec<Ty> = pats.iter().map(|_| self.u.fresh()).collect();
                    let vty = self.var_tys[v.0 as usize].clone();
                    if self.u.unify(&vty, &Ty::Tuple(elems.clone())).is_err() {
                        let msg = format!(
                            "tuple pattern of {} fields, but the value is {}",
                            pats.len(),
                            self.show(&vty)
                        );
                        self.error(span(p.span), msg);
                        return None;
                    }
                    // Pushed in reverse so that tests keep left-to-right order.
                    for (i, (sub, t)) in pats.iter().zip(elems).enumerate().rev() {
                        let pv = *projections.entry((v, i)).or_insert_with(|| {
                            match self.emit(
                                "proj",
                                Rhs::Proj(Atom::Var(v), i),
                                t.clone(),
                                span(sub.span),
                            ) {
                                Atom::Var(pv) => pv,
                                Atom::Lit(_) => unreachable!("emit returns a variable"),
                            }
                        });
                        work.push((pv, sub));
                    }
                }
                PatKind::Ctor(..) | PatKind::Int(_) | PatKind::Real(_) | PatKind::Bool(_) => {
                    out.push((v, p))
                }
            }
        }
        row.tests = out;
        Some(row)
    }

    fn compile_ctor_test(
        &mut self,
        var: VarId,
        rows: Vec<Row>,
        ty: &Ty,
        sp: Span,
        projections: &mut HashMap<(VarId, usize), VarId>,
    ) -> Atom {
        let PatKind::Ctor(first_name, _) = &rows[0].tests[0].1.kind else {
            unreachable!("called on a constructor test")
        };
        let scrutinee_ty = self.var_tys[var.0 as usize].clone();
        let Some((eid, _)) = self.resolve_ctor(&first_name.name, Some(&scrutinee_ty)) else {
            self.error(
                span(first_name.span),
                format!("unknown constructor `{}`", first_name.name),
            );
            let rest = rows[1..].to_vec();
            return self.compile_rows(rest, ty, sp, projections);
        };
        let vty = self.var_tys[var.0 as usize].clone();
        self.expect(&vty, &Ty::Enum(eid), span(first_name.span), "pattern");
        let variants = self.module.enums[eid.0 as usize].variants.clone();
        // Which constructors are tested for (each row's test on `var`, if any).
        let mut tested = vec![false; variants.len()];
        let mut rows_checked = Vec::new();
        for row in rows {
            match row.tests.iter().position(|(v, _)| *v == var) {
                None => rows_checked.push(row),
                Some(i) => match &row.tests[i].1.kind {
                    PatKind::Ctor(name, subs) => match self.ctor_tag(eid, &name.name) {
                        Some(tag) if variants[tag as usize].fields.len() == subs.len() => {
                            tested[tag as usize] = true;
                            rows_checked.push(row);
                        }
                        Some(tag) => {
                            let msg = format!(
                                "constructor `{}` has {} field(s), but the pattern has {}",
                                name.name,
                                variants[tag as usize].fields.len(),
                                subs.len()
                            );
                            self.error(span(row.tests[i].1.span), msg);
                        }
                        None => {
                            let msg = format!(
                                "`{}` is not a constructor of `{}`",
                                name.name, self.module.enums[eid.0 as usize].name
                            );
                            self.error(span(name.span), msg);
                        }
                    },
                    _ => {
                        self.error(
                            span(row.tests[i].1.span),
                            "this pattern does not match an enum value",
                        );
                    }
                },
            }
        }
        let mut arms = Vec::new();
        for (tag, variant) in variants.iter().enumerate() {
            if !tested[tag] {
                continue;
            }
            let fields: Vec<VarId> = variant
                .fields
                .iter()
                .map(|t| self.fresh_var("field", Ty::from_type(t)))
                .collect();
            let specialised: Vec<Row> = rows_checked
                .iter()
                .filter_map(|row| {
                    let Some(i) = row.tests.iter().position(|(v, _)| *v == var) else {
                        return Some(row.clone());
                    };
                    let PatKind::Ctor(name, subs) = &row.tests[i].1.kind else {
                        return None;
                    };
                    if self.ctor_tag(eid, &name.name) != Some(tag as u32) {
                        return None;
                    }
                    let mut row = row.clone();
                    row.tests.remove(i);
                    for (j, (f, sub)) in fields.iter().zip(subs).enumerate() {
                        row.tests.insert(i + j, (*f, sub));
                    }
                    Some(row)
                })
                .collect();
            let body = self.in_block(|el| el.compile_rows(specialised, ty, sp, projections));
            arms.push(Arm {
                tag: tag as u32,
                fields,
                body,
            });
        }
        let default = if tested.iter().all(|t| *t) {
            None
        } else {
            let rest: Vec<Row> = rows_checked
                .iter()
                .filter(|row| !row.tests.iter().any(|(v, _)| *v == var))
                .cloned()
                .collect();
            if rest.is_empty() {
                None
            } else {
                Some(Box::new(
                    self.in_block(|el| el.compile_rows(rest, ty, sp, projections)),
                ))
            }
        };
        self.emit(
            "match",
            Rhs::Match(Atom::Var(var), arms, default),
            ty.clone(),
            sp,
        )
    }

    fn compile_literal_test(
        &mut self,
        var: VarId,
        lit: Lit,
        rows: Vec<Row>,
        ty: &Ty,
        sp: Span,
        projections: &mut HashMap<(VarId, usize), VarId>,
    ) -> Atom {
        let lit_ty = Ty::from_type(&lit.ty());
        let vty = self.var_tys[var.0 as usize].clone();
        self.expect(&vty, &lit_ty, span(rows[0].tests[0].1.span), "pattern");
        let is_same = |p: &ast::Pat| match (&p.kind, lit) {
            (PatKind::Int(n), Lit::Int(m)) => *n == m,
            // Real patterns compare like `==` (so `0.0` also matches `-0.0`).
            (PatKind::Real(x), Lit::Real(y)) => *x == y,
            (PatKind::Bool(b), Lit::Bool(c)) => *b == c,
            _ => false,
        };
        let mut then_rows = Vec::new();
        let mut else_rows = Vec::new();
        for row in rows {
            match row.tests.iter().position(|(v, _)| *v == var) {
                None => {
                    then_rows.push(row.clone());
                    else_rows.push(row);
                }
                Some(i) if is_same(row.tests[i].1) => {
                    let mut r = row.clone();
                    r.tests.remove(i);
                    then_rows.push(r);
                }
                Some(_) => else_rows.push(row),
            }
        }
        let cond = self.emit(
            "is",
            Rhs::Prim(Prim::Eq, vec![Atom::Var(var), Atom::Lit(lit)]),
            Ty::Bool,
            sp,
        );
        let then = self.in_block(|el| el.compile_rows(then_rows, ty, sp, projections));
        let els = self.in_block(|el| el.compile_rows(else_rows, ty, sp, projections));
        self.emit(
            "match",
            Rhs::If(cond, Box::new(then), Box::new(els)),
            ty.clone(),
            sp,
        )
    }

    fn ctor_tag(&self, eid: EnumId, name: &str) -> Option<u32> {
        self.module.enums[eid.0 as usize]
            .variants
            .iter()
            .position(|v| v.name == name)
            .map(|t| t as u32)
    }
}
