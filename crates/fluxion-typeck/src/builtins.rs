//! Calls of built-ins: instantiating their schemes, and the differential operators,
//! whose result types `T(A)` are computed once `A` is known (deferred).

use fluxion_core::verify::differential_result_type;
use fluxion_core::{Atom, Lit, Prim, Rhs, Span, Type};
use fluxion_syntax::ast::{self, ExprKind};

use crate::elaborate::{Deferred, Elab, span};
use crate::infer::Ty;

impl Elab {
    pub(crate) fn prim_call(
        &mut self,
        prim: Prim,
        args: &[ast::Expr],
        sp: Span,
        _expected: Option<&Ty>,
    ) -> (Atom, Ty) {
        if prim.is_differential() {
            return self.differential_call(prim, args, sp);
        }
        let scheme = prim
            .scheme()
            .expect("non-differential surface primitives have schemes");
        if scheme.params.len() != args.len() {
            self.error(
                sp,
                format!(
                    "`{}` takes {} argument(s) but {} were given",
                    prim.name(),
                    scheme.params.len(),
                    args.len()
                ),
            );
            return self.poison();
        }
        let (params, ret) =
            self.instantiate(&scheme.vars, &scheme.params, &scheme.ret, prim.name(), sp);
        let atoms = self.args(args, &params, &format!("argument of `{}`", prim.name()));
        (
            self.emit(prim.name(), Rhs::Prim(prim, atoms), ret.clone(), sp),
            ret,
        )
    }

    /// `grad(f, x)` and friends (docs/language.md §5). The function's expected type is
    /// derived from the other arguments where possible, so lambda parameters need no
    /// annotations: for `grad(|a, b| ..., (x, y))`, `a` and `b` get `x`'s and `y`'s types.
    fn differential_call(&mut self, prim: Prim, args: &[ast::Expr], sp: Span) -> (Atom, Ty) {
        let arity = match prim {
            Prim::Jvp => 3,
            Prim::Taylor | Prim::Jet => 4,
            _ => 2,
        };
        if args.len() != arity {
            self.error(
                sp,
                format!(
                    "`{}` takes {arity} arguments but {} were given",
                    prim.name(),
                    args.len()
                ),
            );
            return self.poison();
        }
        if matches!(prim, Prim::Taylor | Prim::Jet) {
            let name = prim.name();
            match &args[3].kind {
                ExprKind::Int(k) if (1..=64).contains(k) => {}
                ExprKind::Int(k) if *k > 64 => {
                    self.error(
                        span(args[3].span),
                        format!("{name} orders above 64 are not supported (found {k})"),
                    );
                    return self.poison();
                }
                _ => {
                    self.error(
                        span(args[3].span),
                        format!("the order of `{name}` must be an Int literal >= 1"),
                    );
                    return self.poison();
                }
            }
        }
        // The point (and direction) first.
        let mut atoms = vec![Atom::Lit(Lit::Unit); arity];
        let mut tys = vec![Ty::Unit; arity];
        for i in 1..arity {
            // The direction of `jvp`/`taylor` is expected to be a tangent of the point
            // (so that `Tagged((), 1.0)` builds a `ShapeTan`).
            let expected = match (i, self.u.concrete(&tys[1])) {
                (2, Some(point)) if point.is_dtype(&self.module.enums) => {
                    let tangent = self.module.tangent_type(&point);
                    // `jet`'s directions are an array of tangents.
                    Some(Ty::from_type(&match prim {
                        Prim::Jet => fluxion_core::Type::array(tangent),
                        _ => tangent,
                    }))
                }
                _ => None,
            };
            let (a, t) = self.expr(&args[i], expected.as_ref());
            atoms[i] = a;
            tys[i] = t;
        }
        match prim {
            Prim::Diff => self.expect(&tys[1], &Ty::Real, span(args[1].span), "point of `diff`"),
            Prim::Jacobian | Prim::Hessian | Prim::Sparsity | Prim::SparseJacobian => self.expect(
                &tys[1],
                &Ty::array(Ty::Real),
                span(args[1].span),
                &format!("point of `{}`", prim.name()),
            ),
            _ => {}
        }
        let n_params = match &args[0].kind {
            ExprKind::Lambda(ps, _) => Some(ps.len()),
            _ => None,
        };
        let point = self.u.shallow(&tys[1]);
        let params: Vec<Ty> = match (n_params, point) {
            (Some(n), Ty::Tuple(ts)) if n >= 2 && ts.len() == n => ts,
            (Some(n), _) if n >= 2 => (0..n).map(|_| self.u.fresh()).collect(),
            _ => vec![tys[1].clone()],
        };
        let ret = match prim {
            Prim::Grad | Prim::ValueAndGrad | Prim::Hessian => Ty::Real,
            Prim::Jacobian | Prim::Sparsity | Prim::SparseJacobian => Ty::array(Ty::Real),
            _ => self.u.fresh(),
        };
        // Only a lambda written in place receives the expected type: for any other
        // expression (an `if` choosing between functions, a call) the function's own
        // type decides, and the operator's typing is checked once it is known.
        let fn_expected = Ty::func(params, ret);
        let expected = n_params.is_some().then_some(&fn_expected);
        let (fa, fty) = self.expr(&args[0], expected);
        atoms[0] = fa;
        tys[0] = fty;
        let result = self.u.fresh();
        self.defer(Deferred::Differential {
            prim,
            args: tys,
            result: result.clone(),
            span: sp,
        });
        self.solve_deferred(false);
        (
            self.emit(prim.name(), Rhs::Prim(prim, atoms), result.clone(), sp),
            result,
        )
    }

    /// Resolves deferred checks whose types are now known. With `last`, reports the
    /// ones that never became known (and checks constraints, defaulting unknowns).
    pub(crate) fn solve_deferred(&mut self, last: bool) {
        if last {
            // Every check in the order it was deferred, as if in one list.
            let constraints = std::mem::take(&mut self.constraints);
            self.deferred.extend(constraints);
            self.deferred.sort_by_key(|(seq, _)| *seq);
        }
        loop {
            let mut progress = false;
            let pending = std::mem::take(&mut self.deferred);
            for (seq, d) in pending {
                match self.try_solve(&d, last) {
                    true => progress = true,
                    false => self.deferred.push((seq, d)),
                }
            }
            if !progress {
                break;
            }
        }
        if last {
            // After other errors, an unknown type is usually their consequence.
            let quiet = !self.errors.is_empty();
            for (_, d) in std::mem::take(&mut self.deferred) {
                if quiet {
                    continue;
                }
                match d {
                    Deferred::Proj { span, .. } => self.error(
                        span,
                        "the type of this tuple must be known here; annotate the variable or parameter",
                    ),
                    Deferred::Differential { prim, span, .. } => self.error(
                        span,
                        format!("the type of the function given to `{}` must be known here; annotate its parameters", prim.name()),
                    ),
                    Deferred::Constraint { .. } => {}
                }
            }
        }
    }

    /// Queues a check that needs a type to be known (see [`Elab::solve_deferred`]).
    pub(crate) fn defer(&mut self, check: Deferred) {
        let seq = self.deferred_count;
        self.deferred_count += 1;
        match check {
            Deferred::Constraint { .. } => self.constraints.push((seq, check)),
            Deferred::Proj { .. } | Deferred::Differential { .. } => {
                self.deferred.push((seq, check))
            }
        }
    }

    /// Tries one deferred check; true when it is done (solved or reported).
    fn try_solve(&mut self, d: &Deferred, last: bool) -> bool {
        match d {
            Deferred::Proj {
                tuple,
                index,
                result,
                span,
            } => match self.u.shallow(tuple) {
                Ty::Tuple(ts) => {
                    if *index < ts.len() {
                        let t = ts[*index].clone();
                        self.expect(&t, result, *span, "tuple field");
                    } else {
                        let msg = format!("tuple {} has no field {index}", self.show(tuple));
                        self.error(*span, msg);
                    }
                    true
                }
                Ty::Var(_) => false,
                other => {
                    let msg = format!("`.{index}` needs a tuple, found {}", self.show(&other));
                    self.error(*span, msg);
                    true
                }
            },
            Deferred::Constraint {
                ty,
                constraint,
                what,
                span,
            } => {
                if !last {
                    return false;
                }
                let t = self.u.zonk(ty);
                if !fluxion_core::prim::satisfies(&t, *constraint, &self.module.enums) {
                    let need = match constraint {
                        fluxion_core::prim::Constraint::Num => "Int or Real",
                        fluxion_core::prim::Constraint::Eq => "a type without functions",
                        fluxion_core::prim::Constraint::Summable => {
                            "Real, Int, or tuples/arrays of them"
                        }
                        fluxion_core::prim::Constraint::Any => "any type",
                    };
                    let msg = format!(
                        "{what} needs {need}, found {}",
                        t.display(&self.module.enums)
                    );
                    self.error(*span, msg);
                }
                true
            }
            Deferred::Differential {
                prim,
                args,
                result,
                span,
            } => {
                let concrete = if last {
                    args.iter().map(|t| self.u.zonk(t)).collect()
                } else {
                    match args
                        .iter()
                        .map(|t| self.u.concrete(t))
                        .collect::<Option<Vec<_>>>()
                    {
                        Some(c) => c,
                        None => return false,
                    }
                };
                // Derive the tangent types first; the result type reads them.
                if let Some(Type::Fn(params, ret)) = concrete.first() {
                    let a = fluxion_core::verify::differentiated_argument(params);
                    if a.is_dtype(&self.module.enums) && ret.is_dtype(&self.module.enums) {
                        self.module.tangent_type(&a);
                        self.module.tangent_type(ret);
                    }
                }
                match differential_result_type(&self.module, *prim, &concrete) {
                    Ok(t) => {
                        let t = Ty::from_type(&t);
                        self.expect(&t, result, *span, &format!("result of `{}`", prim.name()));
                    }
                    Err(msg) => self.error(*span, msg),
                }
                true
            }
        }
    }
}
