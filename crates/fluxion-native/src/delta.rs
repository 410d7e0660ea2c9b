//! `--ad delta` ahead of time: `%delta_vjp(f, x, w)` as Core that runs `f`'s delta
//! translation on a tape in the C runtime (seed 004 §7, "the classic tape"; the
//! interpreter's `delta.rs` takes the same steps at run time):
//!
//! ```text
//! let c'ᵢ  = %delta_lift(cᵢ)            -- f's captures, every real with the zero delta
//! let fd   = Closure(Δ(code), c')       -- the delta layer's translation (fluxion-ad)
//! let mark = %delta_open()              -- a tape nested in the current one
//! let xd   = %delta_inputs(x)           -- every real of x a fresh input
//! let r    = fd(xd)                     -- records Σ cᵢ·idᵢ per real operation
//! let y    = %delta_primal(r)
//! check(y, w)                           -- w has y's shape
//! let g    = %delta_grad(mark, r, w, xd) -- seed r's deltas with w, one backward sweep,
//!                                        -- the inputs' adjoints, the tape closed
//! (y, g)
//! ```
//!
//! Resolved where `f`'s captures, argument and result hold no functions (the walks
//! above are over first-order values). Where `f` is not known at the operator, every
//! code of its type is translated and `%chad_of(f, 2)` picks one at run time, lifting
//! the closure's captures. A translation holding an operator the C backend leaves to
//! the interpreter (a nested one) sends the program there.

use std::collections::HashSet;

use fluxion_core::{Atom, Binding, CodeId, Module, Prim, Rhs, Span, Type, TypeMap, VarId, verify};

use crate::emit::contains_fn;
use crate::resolve::{
    ClosureBindings, Emit, Translations, known_closure, reaches, translate, translated_at_run_time,
};

/// The bindings that compute `v = %delta_vjp(args)` natively, or `None` where it stays
/// for the interpreter.
#[allow(clippy::too_many_arguments)]
pub(crate) fn expand(
    m: &mut Module,
    table: &mut Translations,
    closures: &ClosureBindings,
    rewritten: &HashSet<CodeId>,
    scope: &HashSet<VarId>,
    args: &[Atom],
    v: VarId,
    span: Span,
) -> Option<Vec<Binding>> {
    let mut lifts = Vec::new();
    let mut site = Site {
        m,
        table,
        closures,
        rewritten,
        scope,
        span,
    };
    let (make, translated, params) = site.delta_closure(args[0], &mut lifts, 0)?;
    let m = site.m;
    // `v: (B, T(A))`; the walks are over first-order `A` and `B`.
    let Type::Tuple(result) = m.var_ty(v).clone() else {
        return None;
    };
    let (b, ta) = (result[0].clone(), result[1].clone());
    if params.iter().chain([&b]).any(|t| contains_fn(t, m)) {
        return None;
    }
    let a = verify::differentiated_argument(&params);
    let ret = m.code(translated).ret.clone();
    let da = m.map_type(&a, TypeMap::Delta);
    let dparams: Vec<Type> = params
        .iter()
        .map(|t| m.map_type(t, TypeMap::Delta))
        .collect();
    let mut e = Emit {
        m,
        out: lifts,
        span,
    };
    let fd = e.bind("delta_f", Type::func(dparams, ret.clone()), make);
    let (x, w) = (args[1], args[2]);
    let mark = e.bind("mark", Type::Int, Rhs::Prim(Prim::DeltaOpen, vec![]));
    let xd = e.bind("xd", da, Rhs::Prim(Prim::DeltaInputs, vec![x]));
    let xs = e.split(xd, params.len());
    let r = e.bind("r", ret, Rhs::Call(fd, xs));
    let y = e.bind("y", b, Rhs::Prim(Prim::DeltaPrimal, vec![r]));
    e.bind(
        "check",
        Type::Unit,
        Rhs::Prim(Prim::CheckTangent, vec![y, w]),
    );
    let g = e.bind(
        "x_bar",
        ta,
        Rhs::Prim(Prim::DeltaGrad, vec![mark, r, w, xd]),
    );
    e.out.push(Binding {
        var: v,
        rhs: Rhs::Tuple(vec![y, g]),
        span,
    });
    Some(e.out)
}

/// What the resolution of one `%delta_vjp` reads.
struct Site<'a, 'm> {
    m: &'m mut Module,
    table: &'a mut Translations,
    closures: &'a ClosureBindings,
    rewritten: &'a HashSet<CodeId>,
    scope: &'a HashSet<VarId>,
    span: Span,
}

impl Site<'_, '_> {
    /// The closure `f` as its delta translation (`Δ(code)` with its captures lifted:
    /// reals with the zero delta, captured closures translated the same way, as the
    /// interpreter's `lift` does), the bindings that lift the captures appended to
    /// `lifts`: the right-hand side making it, the translated code and the parameter
    /// types. A closure the compiler cannot see goes through `%chad_of(f, 2)`.
    fn delta_closure(
        &mut self,
        f: Atom,
        lifts: &mut Vec<Binding>,
        depth: usize,
    ) -> Option<(Rhs, CodeId, Vec<Type>)> {
        let Atom::Var(fv) = f else { return None };
        let Some((code, captures)) = known_closure(self.closures, self.scope, fv).cloned() else {
            return translated_at_run_time(self.m, self.table, self.rewritten, f, TypeMap::Delta);
        };
        if depth > 8 || reaches(self.m, code, self.rewritten) {
            return None;
        }
        let c = self.m.code(code);
        let params: Vec<Type> = c.params.iter().map(|p| self.m.var_ty(*p).clone()).collect();
        let capture_tys: Vec<Type> = c
            .captures
            .iter()
            .map(|x| self.m.var_ty(*x).clone())
            .collect();
        let translated = translate(self.m, code, TypeMap::Delta)?;
        let mut lifted = Vec::new();
        for (c, t) in captures.iter().zip(&capture_tys) {
            let rhs = match t {
                _ if !contains_fn(t, self.m) => Rhs::Prim(Prim::DeltaLift, vec![*c]),
                Type::Fn(..) => self.delta_closure(*c, lifts, depth + 1)?.0,
                // A function inside a tuple, array or enum: not walked here.
                _ => return None,
            };
            let dt = self.m.map_type(t, TypeMap::Delta);
            let var = self.m.fresh_var("lifted", dt);
            lifts.push(Binding {
                var,
                rhs,
                span: self.span,
            });
            lifted.push(Atom::Var(var));
        }
        Some((Rhs::Closure(translated, lifted), translated, params))
    }
}

/// The parameter types of `code` if its delta translation can be chosen at run time by
/// `%chad_of(f, 2)`: no function in its captures (their lifting is a first-order walk),
/// parameters or result, nothing rewritten by the resolution reached.
pub(crate) fn translatable(
    m: &Module,
    code: CodeId,
    rewritten: &HashSet<CodeId>,
) -> Option<Vec<Type>> {
    let c = m.code(code);
    let params: Vec<Type> = c.params.iter().map(|p| m.var_ty(*p).clone()).collect();
    let first_order = params
        .iter()
        .chain(c.captures.iter().map(|x| m.var_ty(*x)))
        .chain([&c.ret])
        .all(|t| !contains_fn(t, m));
    (first_order && !reaches(m, code, rewritten)).then_some(params)
}
