//! Inference types and their unifier (union-find over type variables).

use fluxion_core::{EnumDef, EnumId, Type};

/// A type during inference: like [`Type`] but with unknowns.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ty {
    Var(u32),
    Real,
    Int,
    Bool,
    Unit,
    Tuple(Vec<Ty>),
    Array(Box<Ty>),
    Fn(Vec<Ty>, Box<Ty>),
    Enum(EnumId),
}

impl Ty {
    pub(crate) fn array(t: Ty) -> Ty {
        Ty::Array(Box::new(t))
    }

    pub(crate) fn func(ps: Vec<Ty>, r: Ty) -> Ty {
        Ty::Fn(ps, Box::new(r))
    }

    pub(crate) fn from_type(t: &Type) -> Ty {
        match t {
            Type::Real => Ty::Real,
            Type::Int => Ty::Int,
            Type::Bool => Ty::Bool,
            Type::Unit => Ty::Unit,
            Type::Tuple(ts) => Ty::Tuple(ts.iter().map(Ty::from_type).collect()),
            Type::Array(t) => Ty::array(Ty::from_type(t)),
            Type::Fn(ps, r) => Ty::func(ps.iter().map(Ty::from_type).collect(), Ty::from_type(r)),
            Type::Enum(e) => Ty::Enum(*e),
        }
    }
}

/// Why two types cannot be made equal.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum UnifyError {
    /// Different type constructors.
    Mismatch,
    /// The unknown would have to contain itself (`x(x)`): its number and the type.
    Infinite(u32, Ty),
}

/// Solutions of type variables.
#[derive(Default)]
pub(crate) struct Unifier {
    solution: Vec<Option<Ty>>,
}

impl Unifier {
    pub(crate) fn fresh(&mut self) -> Ty {
        self.solution.push(None);
        Ty::Var(self.solution.len() as u32 - 1)
    }

    /// Follows solved variables at the top of `t`.
    pub(crate) fn shallow(&self, t: &Ty) -> Ty {
        let mut t = t.clone();
        while let Ty::Var(v) = t {
            match &self.solution[v as usize] {
                Some(s) => t = s.clone(),
                None => break,
            }
        }
        t
    }

    fn occurs(&self, v: u32, t: &Ty) -> bool {
        match self.shallow(t) {
            Ty::Var(w) => v == w,
            Ty::Tuple(ts) => ts.iter().any(|t| self.occurs(v, t)),
            Ty::Array(t) => self.occurs(v, &t),
            Ty::Fn(ps, r) => ps.iter().any(|t| self.occurs(v, t)) || self.occurs(v, &r),
            _ => false,
        }
    }

    /// Makes `a` and `b` equal, or reports why they cannot be.
    pub(crate) fn unify(&mut self, a: &Ty, b: &Ty) -> Result<(), UnifyError> {
        let (a, b) = (self.shallow(a), self.shallow(b));
        match (&a, &b) {
            (Ty::Var(x), Ty::Var(y)) if x == y => Ok(()),
            (Ty::Var(x), t) | (t, Ty::Var(x)) => {
                if self.occurs(*x, t) {
                    return Err(UnifyError::Infinite(*x, t.clone()));
                }
                self.solution[*x as usize] = Some(t.clone());
                Ok(())
            }
            (Ty::Real, Ty::Real)
            | (Ty::Int, Ty::Int)
            | (Ty::Bool, Ty::Bool)
            | (Ty::Unit, Ty::Unit) => Ok(()),
            (Ty::Enum(x), Ty::Enum(y)) if x == y => Ok(()),
            (Ty::Tuple(xs), Ty::Tuple(ys)) if xs.len() == ys.len() => {
                for (x, y) in xs.iter().zip(ys) {
                    self.unify(x, y)?;
                }
                Ok(())
            }
            (Ty::Array(x), Ty::Array(y)) => self.unify(x, y),
            (Ty::Fn(xp, xr), Ty::Fn(yp, yr)) if xp.len() == yp.len() => {
                for (x, y) in xp.iter().zip(yp) {
                    self.unify(x, y)?;
                }
                self.unify(xr, yr)
            }
            _ => Err(UnifyError::Mismatch),
        }
    }

    /// `a = t` for the unknown `a` that occurs in `t`, as text: `a = fn(a) -> _`.
    pub(crate) fn show_infinite(&self, v: u32, t: &Ty, enums: &[EnumDef]) -> String {
        format!("a = {}", self.show_naming(t, enums, Some(v)))
    }

    /// The concrete type, if `t` has no unknowns left.
    pub(crate) fn concrete(&self, t: &Ty) -> Option<Type> {
        Some(match self.shallow(t) {
            Ty::Var(_) => return None,
            Ty::Real => Type::Real,
            Ty::Int => Type::Int,
            Ty::Bool => Type::Bool,
            Ty::Unit => Type::Unit,
            Ty::Tuple(ts) => {
                Type::Tuple(ts.iter().map(|t| self.concrete(t)).collect::<Option<_>>()?)
            }
            Ty::Array(t) => Type::array(self.concrete(&t)?),
            Ty::Fn(ps, r) => Type::func(
                ps.iter().map(|t| self.concrete(t)).collect::<Option<_>>()?,
                self.concrete(&r)?,
            ),
            Ty::Enum(e) => Type::Enum(e),
        })
    }

    /// The final type: unknowns that nothing constrained default to `Real`.
    pub(crate) fn zonk(&self, t: &Ty) -> Type {
        match self.shallow(t) {
            Ty::Var(_) | Ty::Real => Type::Real,
            Ty::Int => Type::Int,
            Ty::Bool => Type::Bool,
            Ty::Unit => Type::Unit,
            Ty::Tuple(ts) => Type::Tuple(ts.iter().map(|t| self.zonk(t)).collect()),
            Ty::Array(t) => Type::array(self.zonk(&t)),
            Ty::Fn(ps, r) => Type::func(ps.iter().map(|t| self.zonk(t)).collect(), self.zonk(&r)),
            Ty::Enum(e) => Type::Enum(e),
        }
    }

    /// Shows `t` for an error message (`_` for unknowns).
    pub(crate) fn show(&self, t: &Ty, enums: &[EnumDef]) -> String {
        self.show_naming(t, enums, None)
    }

    /// Shows `t`, writing the unknown `named` as `a` and the others as `_`.
    fn show_naming(&self, t: &Ty, enums: &[EnumDef], named: Option<u32>) -> String {
        let show = |t: &Ty| self.show_naming(t, enums, named);
        match self.shallow(t) {
            Ty::Var(v) if Some(v) == named => "a".into(),
            Ty::Var(_) => "_".into(),
            Ty::Real => "Real".into(),
            Ty::Int => "Int".into(),
            Ty::Bool => "Bool".into(),
            Ty::Unit => "()".into(),
            Ty::Tuple(ts) => format!("({})", ts.iter().map(show).collect::<Vec<_>>().join(", ")),
            Ty::Array(t) => format!("[{}]", show(&t)),
            Ty::Fn(ps, r) => format!(
                "fn({}) -> {}",
                ps.iter().map(show).collect::<Vec<_>>().join(", "),
                show(&r)
            ),
            Ty::Enum(e) => enums
                .get(e.0 as usize)
                .map_or_else(|| "?".into(), |d| d.name.clone()),
        }
    }
}
