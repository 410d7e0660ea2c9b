//! Which right-hand sides a pass may remove or reuse.

use fluxion_core::{Module, Prim, Rhs, Type};

/// Real primitives that are total on reals (a NaN is a value, not a failure).
fn total_real(p: Prim) -> bool {
    use Prim::*;
    matches!(
        p,
        Add | Sub
            | Mul
            | Div
            | Neg
            | Sin
            | Cos
            | Tan
            | Asin
            | Acos
            | Atan
            | Tanh
            | Sinh
            | Cosh
            | Exp
            | Log
            | Log1p
            | Expm1
            | Sqrt
            | Abs
            | Sigmoid
            | Lgamma
            | Erf
            | Floor
            | Ceil
            | Pow
            | Atan2
            | Min
            | Max
            | Digamma
            | Trigamma
    )
}

/// Never fails and has no effect: an unused binding of it can go.
pub(crate) fn is_removable(m: &Module, rhs: &Rhs) -> bool {
    match rhs {
        Rhs::Atom(_)
        | Rhs::Tuple(_)
        | Rhs::Proj(..)
        | Rhs::Array(_)
        | Rhs::Ctor(..)
        | Rhs::Closure(..) => true,
        // Int arithmetic can overflow or divide by zero; real arithmetic cannot fail.
        Rhs::Prim(p, args) if total_real(*p) => args.iter().all(|a| m.atom_ty(a) != Type::Int),
        Rhs::Prim(
            Prim::TanZero
            | Prim::LinScale
            | Prim::LinProj
            | Prim::ToReal
            | Prim::Length
            // Its index was read in the primal where it runs: dropped, it cannot fail
            // (moved, it can: see `is_total`).
            | Prim::LinOneHot,
            _,
        ) => true,
        // Adding two real tangents (either may be the symbolic zero) cannot fail, nor
        // can making a real one dense.
        Rhs::Prim(Prim::TanPlus, args) => args.iter().all(|a| m.atom_ty(a) == Type::Real),
        Rhs::Prim(Prim::TanDense, args) => m.atom_ty(&args[0]) == Type::Real,
        _ => false,
    }
}

/// Removable where unused ([`is_removable`]), or a tape node whose id nothing reads:
/// the sweep meets it with a zero adjoint and passes nothing on (the copies `unzip`
/// makes of a loop's function keep the other components' `%delta`s otherwise). Only
/// `dce` drops these: moved or merged, a `%delta` could land on another tape.
pub(crate) fn is_dead_if_unused(m: &Module, rhs: &Rhs) -> bool {
    is_removable(m, rhs) || matches!(rhs, Rhs::Prim(Prim::DeltaPush, _))
}

/// Removable, and safe to compute where it would not have been (before a loop that
/// may run zero times: `float`): `%lonehot` fails — on an index its primal never
/// read — only when moved so.
pub(crate) fn is_total(m: &Module, rhs: &Rhs) -> bool {
    is_removable(m, rhs) && !matches!(rhs, Rhs::Prim(Prim::LinOneHot, _))
}

/// Deterministic and without effect: a second binding equal to an earlier one in scope
/// computes the same value (if it could fail, the earlier one failed first), so it
/// can reuse it. Calls and the higher-order built-ins are left alone (a delta-mode
/// translation's calls record on the tape), as are the delta primitives.
pub(crate) fn is_repeatable(rhs: &Rhs) -> bool {
    use Prim::*;
    match rhs {
        Rhs::Tuple(_) | Rhs::Proj(..) | Rhs::Array(_) | Rhs::Ctor(..) | Rhs::Closure(..) => true,
        Rhs::Prim(p, _) => !matches!(
            p,
            DeltaPush
                | DeltaSum
                | DeltaSumbuild
                | DeltaVjp
                | DeltaJacobian
                | DeltaJvp
                | DeltaTaylor
                | DeltaOpen
                | DeltaInputs
                | DeltaGrad
                | DeltaRows
                | Delta2Push
                | Delta2Sum
                | Delta2Open
                | Delta2Inputs
                | Delta2Grad
                | MatchFail
                | Build
                | Map
                | Map2
                | Fold
                | Scan
                | Iterate
                | Sumbuild
        ),
        _ => false,
    }
}
