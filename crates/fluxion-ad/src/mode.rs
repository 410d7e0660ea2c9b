//! The reverse-mode algorithm chosen with `--ad` (docs/language.md §5): the one type that
//! reaches every pass and the interpreter. A mode decides how `vjp`, `grad` and
//! `jacobian` are computed; `diff`, `value_and_grad` and `hessian` are built from those
//! (`expand.rs`), and `jvp`/`taylor` never depend on the mode.
//!
//! Adding a mode is adding a module that implements [`ReverseAlgorithm`] and one line
//! in [`AdMode::algorithm`].

use fluxion_core::{Atom, Prim, Rhs, Type, VarId};

use crate::builder::Builder;

/// An algorithm for the reverse-mode operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum AdMode {
    /// Forward mode, one JVP per input coordinate (the reference).
    Fwd,
    /// CHAD: combinatory homomorphic reverse AD ([CHAD]).
    Chad,
    /// Dual numbers with delta terms, monadic, linear time ([Delta]): the default,
    /// the fastest reverse mode measured (BENCHMARKS.md, "Reverse mode").
    #[default]
    Delta,
}

impl AdMode {
    /// Every mode the language names, implemented or not.
    pub const ALL: &'static [AdMode] = &[AdMode::Fwd, AdMode::Chad, AdMode::Delta];

    /// The name `--ad` takes.
    pub fn name(self) -> &'static str {
        match self {
            AdMode::Fwd => "fwd",
            AdMode::Chad => "chad",
            AdMode::Delta => "delta",
        }
    }

    pub fn parse(name: &str) -> Option<AdMode> {
        AdMode::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// The mode's algorithm; `None` while it is not built.
    pub(crate) fn algorithm(self) -> Option<&'static dyn ReverseAlgorithm> {
        match self {
            AdMode::Fwd => Some(&crate::fwd_mode::FwdMode),
            AdMode::Delta => Some(&crate::delta_mode::DELTA_MODE),
            AdMode::Chad => Some(&crate::chad_mode::CHAD_MODE),
        }
    }

    pub fn is_implemented(self) -> bool {
        self.algorithm().is_some()
    }

    /// The modes that are implemented, the reference (`fwd`) first.
    pub fn implemented() -> Vec<AdMode> {
        AdMode::ALL
            .iter()
            .copied()
            .filter(|m| m.is_implemented())
            .collect()
    }
}

/// The algorithm of the forward-mode operators `jvp` and `diff`, chosen with `--fwd`
/// (the reverse modes' own forward passes — `hessian`'s forward-over-reverse, `--ad
/// fwd`'s JVPs, which expand to `jvp` — follow it too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FwdMode {
    /// Dual numbers ([Delta] §4): the default, the faster of the two measured
    /// (BENCHMARKS.md, "Forward CHAD").
    #[default]
    Dual,
    /// Forward CHAD ([CHAD] §7.4): the primal returns its pushforward.
    Chad,
}

impl FwdMode {
    pub const ALL: &'static [FwdMode] = &[FwdMode::Dual, FwdMode::Chad];

    /// The name `--fwd` takes.
    pub fn name(self) -> &'static str {
        match self {
            FwdMode::Dual => "dual",
            FwdMode::Chad => "chad",
        }
    }

    pub fn parse(name: &str) -> Option<FwdMode> {
        FwdMode::ALL.iter().copied().find(|m| m.name() == name)
    }
}

/// One application `op(f, x)` of a differential operator, as the expansion sees it:
/// `f` and `x` are variables, `f: A -> B` (for n ≥ 2 parameters, `A` is the tuple of
/// them and `x` that tuple).
pub(crate) struct Site {
    pub(crate) f: VarId,
    pub(crate) x: VarId,
    pub(crate) a: Type,
    pub(crate) b: Type,
    pub(crate) n_params: usize,
}

/// How a mode computes the reverse-mode operators. Each method emits Core into `b`
/// (ordinary Core that later passes — the forward and Taylor layers included —
/// transform like user code) and returns the operator's value.
pub(crate) trait ReverseAlgorithm: Sync {
    /// `vjp(f, x)`: `(f(x), pullback)` with `pullback: fn(T(B)) -> T(A)`.
    fn vjp(&self, b: &mut Builder, site: &Site) -> Atom;
    /// `grad(f, x): T(A)` for `B = Real`.
    fn grad(&self, b: &mut Builder, site: &Site) -> Atom;
    /// `jacobian(f, x): [[Real]]` for `f: [Real] -> [Real]`, row i the gradient of
    /// output i.
    fn jacobian(&self, b: &mut Builder, site: &Site) -> Atom;

    /// `value_and_grad(f, x) = (f(x), grad(f, x))` unless the mode gets both at once.
    fn value_and_grad(&self, b: &mut Builder, s: &Site) -> Atom {
        let y = call_at(b, Atom::Var(s.f), Atom::Var(s.x), s.n_params, s.b.clone());
        let g = self.grad(b, s);
        b.tuple("value_and_grad", vec![y, g])
    }

    /// `hessian(f, x) = jacobian(|y| grad(f, y), x)` unless the mode nests otherwise.
    fn hessian(&self, b: &mut Builder, s: &Site) -> Atom {
        hessian_by(b, s, self, &|b, s| self.jacobian(b, s))
    }
}

/// `hessian(f, x)` as `jacobian(|y| inner.grad(f, y), x)`.
pub(crate) fn hessian_by(
    b: &mut Builder,
    s: &Site,
    inner: &(impl ReverseAlgorithm + ?Sized),
    jacobian: &dyn Fn(&mut Builder, &Site) -> Atom,
) -> Atom {
    let reals = Type::array(Type::Real);
    let f = s.f;
    let g = b.lambda("gradient", &[f], vec![reals.clone()], |b, ps| {
        let y = crate::helpers::var_of(b, ps[0]);
        let site = Site {
            f,
            x: y,
            a: reals.clone(),
            b: Type::Real,
            n_params: 1,
        };
        inner.grad(b, &site)
    });
    let site = Site {
        f: crate::helpers::var_of(b, g),
        x: s.x,
        a: reals.clone(),
        b: reals,
        n_params: 1,
    };
    jacobian(b, &site)
}

/// `f(x)`, where `x` is the tuple of the arguments if `f` has several.
pub(crate) fn call_at(b: &mut Builder, f: Atom, x: Atom, n_params: usize, ret: Type) -> Atom {
    let args = if n_params == 1 {
        vec![x]
    } else {
        (0..n_params).map(|i| b.proj(&x, i)).collect()
    };
    b.emit("value", Rhs::Call(f, args), ret)
}

/// The number of reals `f(x)` returns, for `f: [Real] -> [Real]` (a Jacobian's rows).
pub(crate) fn output_count(b: &mut Builder, s: &Site) -> VarId {
    let y = call_at(
        b,
        Atom::Var(s.f),
        Atom::Var(s.x),
        s.n_params,
        Type::array(Type::Real),
    );
    let m = b.prim(Prim::Length, &[y], Type::Int);
    crate::helpers::var_of(b, m)
}

/// `jvp(f, x, d).1`
pub(crate) fn jvp_tangent(b: &mut Builder, f: Atom, x: Atom, d: Atom, ret: &Type) -> Atom {
    let tret = b.m.tangent_type(ret);
    let pair = b.prim(Prim::Jvp, &[f, x, d], Type::Tuple(vec![ret.clone(), tret]));
    b.proj(&pair, 1)
}
