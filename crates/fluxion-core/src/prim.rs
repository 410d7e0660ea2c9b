//! Primitive operations: every built-in of docs/language.md §4–§5 plus the internal ones
//! that lowering emits. This is the list every later stage matches on.
//!
//! Each primitive has a surface name (or an internal name starting with `%`, which no
//! surface program can spell) and a type [`Scheme`], used both by inference in
//! `fluxion-typeck` and by the Core verifier. The differential operators have types
//! that depend on `T(A)` and are typed specially (see [`Prim::is_differential`]).

use std::collections::HashMap;

/// The most elements an array may have (docs/language.md's limit: a longer `build`,
/// `replicate`, `range` or `concat` is a runtime error, not an allocation attempt).
pub const MAX_ARRAY_LEN: i64 = 1 << 28;
use std::sync::OnceLock;

use crate::ty::{Type, TypeMap};

macro_rules! prims {
    ($($variant:ident => $name:literal,)*) => {
        /// A primitive operation.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Prim { $($variant,)* }

        impl Prim {
            /// Every primitive, in declaration order.
            pub const ALL: &'static [Prim] = &[$(Prim::$variant,)*];

            /// The name a program uses (internal primitives start with `%`).
            pub fn name(self) -> &'static str {
                match self { $(Prim::$variant => $name,)* }
            }
        }
    };
}

prims! {
    // Arithmetic and comparison: spelled as operators in source.
    Add => "%add", Sub => "%sub", Mul => "%mul", Div => "%div", Rem => "%rem",
    Neg => "%neg", Not => "%not",
    Eq => "%eq", Ne => "%ne", Lt => "%lt", Le => "%le", Gt => "%gt", Ge => "%ge",
    // Real functions.
    Sin => "sin", Cos => "cos", Tan => "tan", Asin => "asin", Acos => "acos", Atan => "atan",
    Tanh => "tanh", Sinh => "sinh", Cosh => "cosh", Exp => "exp", Log => "log",
    Log1p => "log1p", Expm1 => "expm1", Sqrt => "sqrt", Abs => "abs", Sigmoid => "sigmoid",
    Lgamma => "lgamma", Erf => "erf", Floor => "floor", Ceil => "ceil",
    Pow => "pow", Atan2 => "atan2", Min => "min", Max => "max",
    ToReal => "to_real", ToInt => "to_int",
    // Arrays.
    Build => "build", Length => "length", Index => "%index", Sum => "sum", Map => "map",
    Map2 => "map2", Zip => "zip", Fold => "fold", Scan => "scan", Iterate => "iterate",
    Replicate => "replicate", Range => "range", Reverse => "reverse", Concat => "concat",
    Slice => "slice", Maximum => "maximum", Minimum => "minimum", Argmax => "argmax",
    Sumbuild => "sumbuild",
    // Differential operators (§5).
    Grad => "grad", ValueAndGrad => "value_and_grad", Jvp => "jvp", Vjp => "vjp",
    Diff => "diff", Jacobian => "jacobian", Hessian => "hessian", Taylor => "taylor",
    Jet => "jet", Sparsity => "sparsity", SparseJacobian => "sparse_jacobian",
    // Internal: the union of two ascending arrays of distinct Ints, ascending (a real's
    // set of inputs in the dependency layer, fluxion-ad's `deps.rs`).
    IntUnion => "%union",
    // Internal, of `sparse_jacobian`'s expansion: `%colour(offsets, cols, n, by_rows)`
    // colours a compressed-row pattern with n columns greedily (first fit, in order):
    // the columns (by_rows = 0; two sharing a row differ) or the rows (1; two sharing
    // a column differ), colours 0, 1, …; `%rows_of(offsets)` is the row of each
    // nonzero.
    Colour => "%colour", RowsOf => "%rows_of",
    // Internal: a `match` with no arm for the value (a runtime error).
    MatchFail => "%match_fail",
    // Internal: checks that a (co)tangent has the shape of a value — the same
    // constructors and array lengths — or stops with a runtime error.
    CheckTangent => "%check_tangent",
    // Internal: the same check of a direction `dx` against its point `x` (`jvp`,
    // `taylor`), with the forward layer's words for the error.
    CheckDirection => "%check_direction",
    // Internal: the algebra of tangent and cotangent values (fluxion-ad's `tangent.rs`).
    // `%tzero()` is the symbolic zero of any tangent type — no length, no constructor,
    // never a dense value; `%tplus(u, v)` adds two tangents of one type (zero is its
    // unit; different lengths or constructors are a runtime error); `%tdense(x, t)` is
    // `t: T(A)` with every symbolic zero in it made dense in the shape of `x: A`.
    TanZero => "%tzero", TanPlus => "%tplus", TanDense => "%tdense",
    // Internal: reverse mode by dual numbers with deltas ([Delta] §7; fluxion-ad's
    // `delta.rs`). `%delta_vjp(f, x, w)` is `(f(x), wᵀ·J)`: the run time translates `f`
    // by the delta layer, runs it on a fresh tape and sweeps it backwards once.
    // In delta-translated code: `%delta(c₁, id₁, …, cₙ, idₙ)` puts the delta
    // `Σ cᵢ·idᵢ` on the current tape and returns its id; `%delta_sum(a)` is the sum of
    // `a: [(Real, Int)]` with one delta for all of it; `%delta_jvp(f, x, dx)` and
    // `%delta_taylor(f, x, v, k)` are `jvp` and `taylor` of a delta-translated
    // closure (the run time applies the forward layer to the closure's original code,
    // then the delta layer).
    // `%delta_jacobian(f, x)` is `jacobian(f, x)` by one run on one tape and one sweep
    // per output (each row `eᵢᵀ·J`), where rows of `%delta_vjp` would run `f` once per
    // row.
    // `%delta_sumbuild(n, f)` is `%delta_sum(build(n, f))` for `f: Int -> (Real, Int)`,
    // each element's own entries swept as soon as it is made and dropped, the sum one
    // entry on what they read (preaccumulation; fluxion-opt's `preaccumulate.rs`).
    DeltaVjp => "%delta_vjp", DeltaPush => "%delta", DeltaSum => "%delta_sum",
    DeltaSumbuild => "%delta_sumbuild",
    DeltaJvp => "%delta_jvp", DeltaTaylor => "%delta_taylor", DeltaJacobian => "%delta_jacobian",
    // Internal: reverse CHAD ([CHAD]; fluxion-ad's `chad.rs`). `%chad_vjp(f, x, w)` is
    // `(f(x), wᵀ·J)`: the run time translates `f` by CHAD, calls it for its value and
    // backpropagator, and applies that to `w`. The linear building blocks CHAD's
    // backpropagators are made of (besides `%tzero` and `%tplus`), each linear in its
    // last argument and zero-preserving: `%lscale(c, w) = c·w` (0 where `w` is 0, so a
    // dead partial that overflows cannot make a NaN); `%lproj(t, i)` and
    // `%lfield(t, tag, j)`, a component of a tuple or enum cotangent; `%lonehot(n, i, w)`,
    // the length-n array cotangent with `w` at `i` (the transpose of indexing);
    // `%lembed(n, s, t)`, `t` placed at `s` in a length-n array cotangent (the
    // transpose of `slice`); `%lslice(t, s, l)` (the transpose of `%lembed`); `%lsum(t)`,
    // the sum of an array of cotangents (the transpose of `replicate`); `%lindex(t, i)`,
    // element `i` of an array tangent (forward CHAD's `a[i]`, the transpose of
    // `%lonehot`). All take the symbolic zero to zero. The run time
    // keeps one-hot, embedded and added array cotangents unmaterialised until they are
    // read, so a sum of k sparse terms costs O(n + k), not O(n·k).
    // Internal, made by the ahead-of-time resolution (fluxion-ad's `ahead`) and the
    // delta layer's tape of tapes of a closure chosen at run time: `%chad_of(f, d)` is the closure `f` with its code replaced by that code's
    // translation (d = 0: reverse CHAD, `chad_code`; d = 1: forward CHAD,
    // `chad_fwd_code`; d = 2: the delta layer, `delta_code`; d = 3: the forward layer;
    // d = `CHAD_OF_TWICE`: of a delta translation's closure, the delta layer again;
    // d = `CHAD_OF_TAYLOR` + k: Taylor mode of order k) and
    // its captures (CHAD's first-order captures are the same values, `Dr(A)1 = A`;
    // delta lifts every real to the zero delta, as `%delta_lift` does, and twice as
    // `%delta2_lift` does). Its binding's type is the translated function type
    // (trusted, like the delta primitives').
    ChadOf => "%chad_of",
    // Internal, made only by the native backend's resolution: `%capture(f, i, c)` is
    // the i-th captured value of the closure `f`, which the resolution knows is made of
    // code `c` (variables are bound once, so `f`'s binding says so): how a translated
    // closure is built where the captures themselves are out of scope. Its binding's
    // type (`c`'s i-th capture's) is trusted.
    ClosureCapture => "%capture",
    // Internal, made only by the native backend's ahead-of-time resolution of
    // `%delta_vjp(f, x, w)` (its steps, which the interpreter's `delta.rs` takes at run
    // time, as Core): `%delta_lift(v)` is `v: A` as `Δ(A)` with the zero delta on every
    // real (a capture of `f`); `%delta_open()` opens a tape nested in the current one
    // and returns its mark; `%delta_inputs(x)` is `x: A` as `Δ(A)` with a fresh input
    // on every real; `%delta_primal(y)` is `y: Δ(B)` without its deltas;
    // `%delta_grad(mark, y, w, x)` seeds `y: Δ(B)`'s deltas with `w: T(B)`, sweeps the
    // tape opened at `mark` backwards, closes it and returns the inputs' adjoints
    // (`T(A)`, in the shape of `x: Δ(A)`); `%delta_rows(mark, y, x)` (a resolved
    // `%delta_jacobian`, `y: Δ([Real])`, `x: Δ([Real])`) sweeps that tape once per
    // element of `y`, seeded with 1 there, closes it and returns the rows of inputs'
    // adjoints (`[[Real]]`). Their binding's type is trusted.
    DeltaLift => "%delta_lift", DeltaOpen => "%delta_open", DeltaInputs => "%delta_inputs",
    DeltaPrimal => "%delta_primal", DeltaGrad => "%delta_grad", DeltaRows => "%delta_rows",
    // Internal: reverse over reverse by a tape of tapes (fluxion-ad's `delta_twice.rs`),
    // in code the delta layer translated twice, `Δₒ(Δᵢ(c))`, where a real is
    // `((Real, Int), Int)`: its value and outer delta, then its inner delta. A second
    // tape holds the inner deltas, whose coefficients are outer pairs
    // `(Real, Int)`: `%delta2(c₁, id₁, …)` and `%delta2_sum(a)` are `%delta` and
    // `%delta_sum` on it (the sum's value gets its outer delta too); `%delta2_open`,
    // `%delta2_lift`, `%delta2_inputs`, `%delta2_primal` are the first-order steps
    // one layer up (`Δₒ(A)` to `Δₒ(Δᵢ(A))` and back); `%delta2_grad(mark, r, w, x)`
    // seeds with `w: Δₒ(T(B))`, sweeps the second tape recording each step
    // `adj[p] += c·a` on the outer tape, closes it and returns `Δₒ(T(A))`. Their
    // binding's type is trusted.
    Delta2Push => "%delta2", Delta2Sum => "%delta2_sum", Delta2Lift => "%delta2_lift",
    Delta2Open => "%delta2_open", Delta2Inputs => "%delta2_inputs",
    Delta2Primal => "%delta2_primal", Delta2Grad => "%delta2_grad",
    ChadVjp => "%chad_vjp", LinScale => "%lscale", LinProj => "%lproj", LinField => "%lfield",
    LinOneHot => "%lonehot", LinEmbed => "%lembed", LinSlice => "%lslice", LinSum => "%lsum",
    LinIndex => "%lindex",
    // Derivatives of `lgamma` (an extension of docs/language.md §4, so that differentiated
    // programs print as source): ψ, ψ', and ψ⁽ⁿ⁾(x).
    Digamma => "digamma", Trigamma => "trigamma", Polygamma => "polygamma",
}

/// A class of types a scheme variable may stand for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Constraint {
    Any,
    /// `Int` or `Real`.
    Num,
    /// Values that `==` compares: anything without functions.
    Eq,
    /// What `sum` adds: `Real`, `Int`, or tuples/arrays of them, elementwise.
    Summable,
}

/// A type with numbered variables, as in a polymorphic signature.
#[derive(Clone, Debug, PartialEq)]
pub enum SchemeTy {
    Var(usize),
    Real,
    Int,
    Bool,
    Unit,
    Tuple(Vec<SchemeTy>),
    Array(Box<SchemeTy>),
    Fn(Vec<SchemeTy>, Box<SchemeTy>),
}

/// `∀ vars. (params) -> ret`, where `vars[i]` constrains `SchemeTy::Var(i)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Scheme {
    pub vars: Vec<Constraint>,
    pub params: Vec<SchemeTy>,
    pub ret: SchemeTy,
}

impl SchemeTy {
    /// Replaces variables by `args[i]`.
    pub fn instantiate(&self, args: &[Type]) -> Type {
        match self {
            SchemeTy::Var(i) => args[*i].clone(),
            SchemeTy::Real => Type::Real,
            SchemeTy::Int => Type::Int,
            SchemeTy::Bool => Type::Bool,
            SchemeTy::Unit => Type::Unit,
            SchemeTy::Tuple(ts) => Type::Tuple(ts.iter().map(|t| t.instantiate(args)).collect()),
            SchemeTy::Array(t) => Type::array(t.instantiate(args)),
            SchemeTy::Fn(ps, r) => Type::func(
                ps.iter().map(|t| t.instantiate(args)).collect(),
                r.instantiate(args),
            ),
        }
    }
}

/// `%chad_of`'s direction for the closure of a delta translation `Δ(c)` as that
/// translation translated again, `Δ(Δ(c))`, its captures lifted by `%delta2_lift`:
/// reverse over reverse of a closure chosen at run time, a tape of tapes
/// (fluxion-ad's `delta_twice.rs`).
pub const CHAD_OF_TWICE: i64 = 4;

/// `%chad_of`'s direction for Taylor mode of order k is `CHAD_OF_TAYLOR + k`: the
/// closure's code translated by Taylor mode of that order, its reals lifted to
/// `[x, 0, …, 0]`; for jets of k ≥ 2 directions and order R, `CHAD_OF_TAYLOR + R +
/// CHAD_OF_JET_DIRS·(k − 1)` (orders are at most 64).
pub const CHAD_OF_TAYLOR: i64 = 100;

/// `%chad_of`'s direction for the dependency layer (`sparsity`).
pub const CHAD_OF_DEPS: i64 = 5;

/// See [`CHAD_OF_TAYLOR`].
pub const CHAD_OF_JET_DIRS: i64 = 100;

/// `%chad_of`'s direction for a closure's translation by `layer`: 0 reverse CHAD, 1
/// forward CHAD, 2 delta, 3 dual numbers, `CHAD_OF_TAYLOR` + k Taylor of order k. The
/// one map between layers and directions; [`chad_of_layer`] is its inverse. `Tangent`
/// is no translation and is never asked for (0).
pub fn chad_of_direction(layer: TypeMap) -> i64 {
    match layer {
        TypeMap::Chad | TypeMap::Tangent => 0,
        TypeMap::ChadFwd => 1,
        TypeMap::Delta => 2,
        TypeMap::Fwd => 3,
        TypeMap::Deps => CHAD_OF_DEPS,
        TypeMap::Taylor(j) => {
            CHAD_OF_TAYLOR + i64::from(j.order) + CHAD_OF_JET_DIRS * (i64::from(j.dirs) - 1)
        }
    }
}

/// The layer whose translation `%chad_of(f, d)` picks; `None` for [`CHAD_OF_TWICE`]
/// (the delta layer twice) and directions no layer has.
pub fn chad_of_layer(d: i64) -> Option<TypeMap> {
    Some(match d {
        0 => TypeMap::Chad,
        1 => TypeMap::ChadFwd,
        2 => TypeMap::Delta,
        3 => TypeMap::Fwd,
        CHAD_OF_DEPS => TypeMap::Deps,
        d if d > CHAD_OF_TAYLOR => {
            let e = d - CHAD_OF_TAYLOR;
            TypeMap::Taylor(crate::Jet {
                dirs: u32::try_from(e / CHAD_OF_JET_DIRS + 1).ok()?,
                order: u32::try_from(e % CHAD_OF_JET_DIRS).ok()?,
            })
        }
        _ => return None,
    })
}

/// Whether `p(args)` is `%chad_of(f, CHAD_OF_TWICE)`: a tape of tapes of a closure
/// chosen at run time.
pub fn is_chad_of_twice(p: Prim, args: &[crate::Atom]) -> bool {
    p == Prim::ChadOf && args.get(1) == Some(&crate::Atom::Lit(crate::Lit::Int(CHAD_OF_TWICE)))
}

/// `%lscale(c, w)` on two reals: `w` itself where `w` is zero (0.0, or -0.0: the
/// native backend's symbolic zero of a real), 0.0 where `c` is, `c·w` otherwise — a
/// zero times a NaN or infinite factor is zero, the rule of every mode
/// (docs/decisions.md, "AD at non-smooth points"). The interpreter runs it, the
/// optimiser folds it; the native backend's `fx_lscale` is the same function in C.
pub fn lscale(c: f64, w: f64) -> f64 {
    if w == 0.0 {
        w
    } else if c == 0.0 {
        0.0
    } else {
        c * w
    }
}

/// Whether a concrete type satisfies a constraint.
pub fn satisfies(ty: &Type, c: Constraint, enums: &[crate::EnumDef]) -> bool {
    match c {
        Constraint::Any => true,
        Constraint::Num => matches!(ty, Type::Int | Type::Real),
        Constraint::Eq => ty.is_dtype(enums),
        Constraint::Summable => match ty {
            Type::Real | Type::Int => true,
            Type::Tuple(ts) => ts.iter().all(|t| satisfies(t, c, enums)),
            Type::Array(t) => satisfies(t, c, enums),
            _ => false,
        },
    }
}

impl Prim {
    /// Looks up a surface built-in by name (internal `%` names are not found).
    /// A hash lookup: elaboration asks this for every name it binds or calls.
    pub fn from_surface_name(name: &str) -> Option<Prim> {
        static SURFACE: OnceLock<HashMap<&'static str, Prim>> = OnceLock::new();
        SURFACE
            .get_or_init(|| {
                Prim::ALL
                    .iter()
                    .filter(|p| !p.is_internal())
                    .map(|p| (p.name(), *p))
                    .collect()
            })
            .get(name)
            .copied()
    }

    /// Internal primitives cannot be named in source.
    pub fn is_internal(self) -> bool {
        self.name().starts_with('%')
    }

    /// The differential operators, whose types involve `T(A)`.
    pub fn is_differential(self) -> bool {
        use Prim::*;
        matches!(
            self,
            Grad | ValueAndGrad
                | Jvp
                | Vjp
                | Diff
                | Jacobian
                | Hessian
                | Taylor
                | Jet
                | Sparsity
                | SparseJacobian
        )
    }

    /// The delta tapes' primitives ([Delta] §7), in delta-translated code and in
    /// resolved `%delta_vjp`s: the first tape's and the second's of reverse over
    /// reverse. The run time provides them (fluxion-interp's `delta.rs`,
    /// `delta_twice.rs`, `resolved.rs`; fluxion-native's `delta_c.rs`).
    pub fn is_tape(self) -> bool {
        use Prim::*;
        matches!(
            self,
            DeltaPush
                | DeltaSum
                | DeltaSumbuild
                | DeltaLift
                | DeltaOpen
                | DeltaInputs
                | DeltaPrimal
                | DeltaGrad
                | DeltaRows
                | Delta2Push
                | Delta2Sum
                | Delta2Lift
                | Delta2Open
                | Delta2Inputs
                | Delta2Primal
                | Delta2Grad
        )
    }

    /// Arithmetic, comparisons and reads: what the native back end's loop nodes run
    /// again at their sweep (`delta_loop.rs`), and so what a preaccumulated sum's
    /// element may loop over and still be left as it is (fluxion-opt's
    /// `preaccumulate.rs`). None but the reads and integer division can fail.
    pub fn is_cheap_arithmetic(self) -> bool {
        use Prim::*;
        matches!(
            self,
            Add | Sub
                | Mul
                | Div
                | Rem
                | Neg
                | Not
                | Eq
                | Ne
                | Lt
                | Le
                | Gt
                | Ge
                | Index
                | Length
                | LinScale
                | ToReal
                | Min
                | Max
                | Abs
        )
    }

    /// The primitives of derivative code: the operators, the tapes', CHAD's closures'
    /// and `%capture` (their effects belong to a translation, so code holding one is
    /// neither copied on primals nor treated as plain primal code).
    pub fn is_derivative_machinery(self) -> bool {
        let name = self.name();
        self.is_differential()
            || self.is_tape()
            || name.starts_with("%delta")
            || name.starts_with("%chad")
            || name == "%capture"
    }

    /// Operators that printing spells infix or prefix.
    pub fn operator_symbol(self) -> Option<&'static str> {
        use Prim::*;
        Some(match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Rem => "%",
            Neg => "-",
            Not => "!",
            Eq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            _ => return None,
        })
    }

    /// The polymorphic signature; `None` for the differential operators, `MatchFail` and
    /// `TanZero` (whose type is its binding's: the verifier checks it).
    pub fn scheme(self) -> Option<Scheme> {
        use Prim::*;
        use SchemeTy as S;
        let v = S::Var;
        let arr = |t: SchemeTy| S::Array(Box::new(t));
        let func = |ps: Vec<SchemeTy>, r: SchemeTy| S::Fn(ps, Box::new(r));
        let mono = |params: Vec<SchemeTy>, ret: SchemeTy| Scheme {
            vars: vec![],
            params,
            ret,
        };
        let poly = |vars: Vec<Constraint>, params: Vec<SchemeTy>, ret: SchemeTy| Scheme {
            vars,
            params,
            ret,
        };
        use Constraint as C;
        Some(match self {
            Add | Sub | Mul | Div | Rem => poly(vec![C::Num], vec![v(0), v(0)], v(0)),
            Neg => poly(vec![C::Num], vec![v(0)], v(0)),
            Not => mono(vec![S::Bool], S::Bool),
            Eq | Ne => poly(vec![C::Eq], vec![v(0), v(0)], S::Bool),
            Lt | Le | Gt | Ge => poly(vec![C::Num], vec![v(0), v(0)], S::Bool),
            Sin | Cos | Tan | Asin | Acos | Atan | Tanh | Sinh | Cosh | Exp | Log | Log1p
            | Expm1 | Sqrt | Sigmoid | Lgamma | Erf | Floor | Ceil | Digamma | Trigamma => {
                mono(vec![S::Real], S::Real)
            }
            Abs => poly(vec![C::Num], vec![v(0)], v(0)),
            Pow | Atan2 => mono(vec![S::Real, S::Real], S::Real),
            Polygamma => mono(vec![S::Int, S::Real], S::Real),
            Min | Max => poly(vec![C::Num], vec![v(0), v(0)], v(0)),
            ToReal => mono(vec![S::Int], S::Real),
            ToInt => mono(vec![S::Real], S::Int),
            Build => poly(
                vec![C::Any],
                vec![S::Int, func(vec![S::Int], v(0))],
                arr(v(0)),
            ),
            Sumbuild => poly(
                vec![C::Summable],
                vec![S::Int, func(vec![S::Int], v(0))],
                v(0),
            ),
            Length => poly(vec![C::Any], vec![arr(v(0))], S::Int),
            Index => poly(vec![C::Any], vec![arr(v(0)), S::Int], v(0)),
            Sum => poly(vec![C::Summable], vec![arr(v(0))], v(0)),
            Map => poly(
                vec![C::Any, C::Any],
                vec![func(vec![v(0)], v(1)), arr(v(0))],
                arr(v(1)),
            ),
            Map2 => poly(
                vec![C::Any, C::Any, C::Any],
                vec![func(vec![v(0), v(1)], v(2)), arr(v(0)), arr(v(1))],
                arr(v(2)),
            ),
            Zip => poly(
                vec![C::Any, C::Any],
                vec![arr(v(0)), arr(v(1))],
                arr(S::Tuple(vec![v(0), v(1)])),
            ),
            Fold => poly(
                vec![C::Any, C::Any],
                vec![func(vec![v(0), v(1)], v(0)), v(0), arr(v(1))],
                v(0),
            ),
            Scan => poly(
                vec![C::Any, C::Any],
                vec![func(vec![v(0), v(1)], v(0)), v(0), arr(v(1))],
                arr(v(0)),
            ),
            Iterate => poly(
                vec![C::Any],
                vec![S::Int, func(vec![v(0)], v(0)), v(0)],
                v(0),
            ),
            Replicate => poly(vec![C::Any], vec![S::Int, v(0)], arr(v(0))),
            Range => mono(vec![S::Int], arr(S::Int)),
            IntUnion => mono(vec![arr(S::Int), arr(S::Int)], arr(S::Int)),
            Colour => mono(
                vec![arr(S::Int), arr(S::Int), S::Int, S::Int, S::Int],
                arr(S::Int),
            ),
            RowsOf => mono(vec![arr(S::Int)], arr(S::Int)),
            Reverse => poly(vec![C::Any], vec![arr(v(0))], arr(v(0))),
            Concat => poly(vec![C::Any], vec![arr(v(0)), arr(v(0))], arr(v(0))),
            Slice => poly(vec![C::Any], vec![arr(v(0)), S::Int, S::Int], arr(v(0))),
            Maximum | Minimum => poly(vec![C::Num], vec![arr(v(0))], v(0)),
            Argmax => poly(vec![C::Num], vec![arr(v(0))], S::Int),
            CheckTangent | CheckDirection => poly(vec![C::Any, C::Any], vec![v(0), v(1)], S::Unit),
            // The tangent-type side conditions are the verifier's (`tangent_prim`).
            TanPlus => poly(vec![C::Any], vec![v(0), v(0)], v(0)),
            TanDense => poly(vec![C::Any, C::Any], vec![v(0), v(1)], v(1)),
            TanZero => return None,
            DeltaSum => mono(
                vec![arr(S::Tuple(vec![S::Real, S::Int]))],
                S::Tuple(vec![S::Real, S::Int]),
            ),
            DeltaSumbuild => mono(
                vec![S::Int, func(vec![S::Int], S::Tuple(vec![S::Real, S::Int]))],
                S::Tuple(vec![S::Real, S::Int]),
            ),
            LinScale => mono(vec![S::Real, S::Real], S::Real),
            LinOneHot => poly(vec![C::Any], vec![S::Int, S::Int, v(0)], arr(v(0))),
            LinEmbed => poly(vec![C::Any], vec![S::Int, S::Int, arr(v(0))], arr(v(0))),
            LinSlice => poly(vec![C::Any], vec![arr(v(0)), S::Int, S::Int], arr(v(0))),
            LinSum => poly(vec![C::Any], vec![arr(v(0))], v(0)),
            LinIndex => poly(vec![C::Any], vec![arr(v(0)), S::Int], v(0)),
            // Their result types depend on literal arguments (`verify.rs` checks them).
            LinProj | LinField => return None,
            // `%delta_vjp` is checked like the differential operators; the others act
            // on delta-translated types, which do not say their original type: their
            // binding's type is trusted.
            DeltaVjp | ChadVjp | DeltaPush | DeltaJvp | DeltaTaylor | ChadOf | ClosureCapture
            | DeltaLift | DeltaOpen | DeltaInputs | DeltaPrimal | DeltaGrad | DeltaRows
            | DeltaJacobian | Delta2Push | Delta2Sum | Delta2Lift | Delta2Open | Delta2Inputs
            | Delta2Primal | Delta2Grad => {
                return None;
            }
            Grad | ValueAndGrad | Jvp | Vjp | Diff | Jacobian | Hessian | Taylor | Jet
            | Sparsity | SparseJacobian | MatchFail => {
                return None;
            }
        })
    }
}
