//! A typed random generator of Fluxion programs, for the differential tests in
//! `tests/generated.rs`.
//!
//! [`generate`] returns the source text of a program defining `fn f(x: [Real]) -> Real`
//! (with `x` of length [`X_LEN`]), plus helper functions and enums, and a point `x`.
//! The program is well typed by construction: every expression is generated for a
//! known type (`Ty`, which also knows array lengths, so constant indices are in range).
//! It is deterministic in `(seed, Config)`; a smaller `Config` gives a smaller program
//! (used to shrink failures).
//!
//! Smoothness, so that finite differences are valid at every point:
//! - branch conditions (`if`, `match`) only ever depend on `Int`s and `Bool`s, and no
//!   `Int` or `Bool` is ever computed from a `Real` (no comparisons of reals, no
//!   `to_int`, `floor`, `argmax`...);
//! - only smooth real operations: `+ - *`, division by a constant or by `1 + y*y`,
//!   `sin`, `tanh`, `exp(tanh(y))`, `log(1 + y*y)`, `sqrt(1 + y*y)`, `pow(1 + y*y, 1.5)`, ...
//!
//! Scaling, so that values stay finite and finite differences accurate: every
//! expression carries a bound `B` on the magnitude of its reals (`m`), on their
//! derivatives with respect to the input (`g`) and on the magnitude of its `Int`s (`i`).
//! Values that cross a boundary (arguments, function results that feed back such as
//! fold accumulators, enum fields) are "normalised" (`B <= NORMAL`) by wrapping reals in
//! `sin(c * e)` with `c` a power of two that brings the derivative bound down, and ints
//! in `e % 7`; anything above `LIMIT` is normalised on the spot.

use std::fmt::Write as _;

// One module per family of constructs (`Gen::apply` dispatches to them).
mod arrays;
mod closures;
mod control;
mod enums;
mod operators;
mod scalars;

/// Length of the input `x` of `f`.
pub const X_LEN: usize = 3;

/// Size budget: `depth` bounds nesting, `fuel` the number of expression nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub depth: u32,
    pub fuel: i64,
}

impl Config {
    pub const DEFAULT: Config = Config {
        depth: 5,
        fuel: 120,
    };

    /// Smaller budgets to try when shrinking a failure, smallest first.
    pub fn smaller(self) -> Vec<Config> {
        let mut out = Vec::new();
        for depth in 1..=self.depth {
            for fuel in [4, 8, 16, 32, 64, 128] {
                let c = Config { depth, fuel };
                if fuel <= self.fuel && c != self {
                    out.push(c);
                }
            }
        }
        out
    }
}

/// A generated program and the point to check it at.
pub struct Generated {
    pub source: String,
    pub x: Vec<f64>,
}

/// The program for `seed` within `config`'s budget.
pub fn generate(seed: u64, config: Config) -> Generated {
    generate_with(seed, config, true)
}

/// Like [`generate`], without differential operators inside `f` (the native backend
/// compiles only first-order uses of them: nested ones run in the interpreter).
#[allow(dead_code)]
pub fn generate_without_operators(seed: u64, config: Config) -> Generated {
    generate_with(seed, config, false)
}

fn generate_with(seed: u64, config: Config, operators: bool) -> Generated {
    let mut g = Gen::new(seed, config);
    if !operators {
        g.ad_count = MAX_AD;
    }
    let mut env = vec![Var {
        name: "x".into(),
        ty: Ty::Arr(Box::new(Ty::Real), X_LEN),
        b: B::real(1.5, 1.0),
        range: None,
    }];
    // The body: a sum of two or three terms, each depending on x (retried a few
    // times, dropping what a try defined), so that most programs have a nonzero
    // gradient.
    let n_terms = g.rng.range(2, 3);
    let mut terms = Vec::new();
    for _ in 0..n_terms {
        let saved = g.snapshot();
        let mut tries = 0;
        let (term, b) = loop {
            g.fuel = config.fuel / n_terms as i64;
            let (term, b) = g.expr_with(&Ty::Real, &mut env, config.depth, false);
            tries += 1;
            if b.g > 0.0 || tries == 4 {
                break (term, b);
            }
            g.restore(&saved);
        };
        let (term, _) = g.limit(term, b, &Ty::Real);
        terms.push(paren(&term));
    }
    let body = terms.join("\n        + ");
    let mut source = String::new();
    for e in &g.enums {
        let variants: Vec<String> = e
            .variants
            .iter()
            .map(|(name, fields)| {
                if fields.is_empty() {
                    name.clone()
                } else {
                    let fs: Vec<String> = fields.iter().map(|t| g.render_ty(t)).collect();
                    format!("{name}({})", fs.join(", "))
                }
            })
            .collect();
        let _ = writeln!(source, "enum {} {{ {} }}", e.name, variants.join(", "));
    }
    for item in &g.fns {
        source.push_str(item);
        source.push('\n');
    }
    let _ = writeln!(source, "fn f(x: [Real]) -> Real {{\n    {body}\n}}");
    let mut prng = Rng(seed ^ 0x005e_ed0f_9017);
    let x = (0..X_LEN)
        .map(|_| (prng.below(3001) as f64 - 1500.0) / 1000.0)
        .collect();
    Generated { source, x }
}

/// splitmix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// A type, with array lengths (so constant indices can be in range).
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    Real,
    Int,
    Bool,
    Unit,
    Tuple(Vec<Ty>),
    Arr(Box<Ty>, usize),
    Fn(Vec<Ty>, Box<Ty>),
    /// Index into `Gen::enums`.
    Enum(usize),
}

use Ty::*;

fn arr(t: Ty, n: usize) -> Ty {
    Arr(Box::new(t), n)
}

fn func(ps: Vec<Ty>, r: Ty) -> Ty {
    Ty::Fn(ps, Box::new(r))
}

/// Bounds on a value: magnitude of its reals, of their derivatives, of its ints.
#[derive(Clone, Copy, Debug, PartialEq)]
struct B {
    m: f64,
    g: f64,
    i: f64,
}

impl B {
    const ZERO: B = B {
        m: 0.0,
        g: 0.0,
        i: 0.0,
    };
    fn real(m: f64, g: f64) -> B {
        B { m, g, i: 0.0 }
    }
    fn int(i: f64) -> B {
        B { m: 0.0, g: 0.0, i }
    }
    fn max(self, o: B) -> B {
        B {
            m: self.m.max(o.m),
            g: self.g.max(o.g),
            i: self.i.max(o.i),
        }
    }
}

const NORMAL: B = B {
    m: 4.0,
    g: 4.0,
    i: 50.0,
};
const LIMIT: B = B {
    m: 16.0,
    g: 16.0,
    i: 50.0,
};

/// Whether the leaves of `ty` are within `lim` given the (shared) bound `b`.
fn fits(ty: &Ty, b: B, lim: B) -> bool {
    match ty {
        Real => b.m <= lim.m && b.g <= lim.g,
        Int => b.i <= lim.i,
        Bool | Unit | Enum(_) => true,
        Tuple(ts) => ts.iter().all(|t| fits(t, b, lim)),
        Arr(t, _) => fits(t, b, lim),
        Ty::Fn(_, r) => fits(r, b, lim),
    }
}

#[derive(Clone)]
struct Var {
    name: String,
    ty: Ty,
    b: B,
    /// An `Int` index known to be in `0..n`.
    range: Option<usize>,
}

type Env = Vec<Var>;

struct EnumDef {
    name: String,
    variants: Vec<(String, Vec<Ty>)>,
}

struct Helper {
    name: String,
    params: Vec<Ty>,
    ret: Ty,
    b: B,
    /// False for a helper being generated and for recursive helpers (whose first
    /// argument is the counter).
    callable: bool,
}

struct Snapshot {
    fns: usize,
    helpers: usize,
    enums: usize,
    list: Option<ListInfo>,
    deep: bool,
}

/// The recursive list enum and its (lazily created) helpers.
#[derive(Clone)]
struct ListInfo {
    id: usize,
    elem: Ty,
    from: bool,
    map: bool,
    fold: bool,
}

// Constructs that once triggered bugs (each kept as a file in tests/corpus/regressions/);
// a switch turns a construct off while its bug is open.
/// `lgamma_fwd_print.flx`: the printed forward stage of `lgamma` does not re-parse.
const GENERATE_LGAMMA: bool = true;
/// `pow_of_negative_base.flx`: NaN derivatives of `pow(y, 2.0)` for y < 0.
const GENERATE_POW_ANY_BASE: bool = true;
/// `tangent_enum_core_round_trip.flx`: printed Core with a derived tangent enum does
/// not type-check (operators on enums with Int/Bool fields, whose tangent is `ETan`).
const GENERATE_TANGENT_ENUMS: bool = true;

const MAX_HELPERS: usize = 6;
const MAX_ENUMS: usize = 2;
const MAX_AD: u32 = 8;
const MAX_AD_DEPTH: u32 = 3;

/// Productions; which apply depends on the type asked for.
#[derive(Clone, Copy, Debug)]
enum P {
    Leaf,
    Let,
    LetTuple,
    If,
    MatchEnum,
    MatchInt,
    MatchTuple,
    Proj,
    Index,
    CallClosure,
    CallHelper,
    CallRec,
    Fold,
    Iterate,
    ScanIndex,
    RealBin,
    DivConst,
    DivSmooth,
    Unary,
    ToReal,
    SumReal,
    SumBuild,
    PreludeReal,
    Diff,
    GradWhole,
    GradComp,
    ValueAndGrad,
    Jvp,
    Vjp,
    Hessian,
    Jacobian,
    GradMulti,
    ListFold,
    IntBin,
    IntDivRem,
    IntLength,
    IntSum,
    IntMinMax,
    BoolCmp,
    BoolLogic,
    BoolNot,
    TupleLit,
    ZipIndex,
    SumRows,
    ArrLit,
    Map,
    Map2,
    Build,
    Scan,
    Reverse,
    Concat,
    Slice,
    Replicate,
    Range,
    Zip,
    PreludeArr,
    VjpArr,
    JacobianRow,
    Lambda,
    HelperRef,
    Pullback,
    CallDeep,
    EnumCtor,
    ListFrom,
    ListMap,
}

struct Gen {
    rng: Rng,
    fuel: i64,
    ad_depth: u32,
    ad_count: u32,
    enums: Vec<EnumDef>,
    list: Option<ListInfo>,
    helpers: Vec<Helper>,
    fns: Vec<String>,
    counter: usize,
    /// Whether `deep` (deep recursion) is defined.
    deep: bool,
    /// Generating the step of `lst_fold`.
    in_list_fold: bool,
}

/// Is `e` safe as an operand of a postfix or infix operator without parentheses?
fn is_atomic(e: &str) -> bool {
    let b = e.as_bytes();
    let close = |mut i: usize| -> Option<usize> {
        let mut depth = 0i32;
        while i < b.len() {
            match b[i] {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    };
    let mut i = 0;
    if b.is_empty() {
        return false;
    }
    if b[0].is_ascii_alphanumeric() || b[0] == b'_' {
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
            i += 1;
        }
    } else if b[0] == b'(' || b[0] == b'[' {
        match close(0) {
            Some(j) => i = j,
            None => return false,
        }
    } else {
        return false;
    }
    while i < b.len() {
        match b[i] {
            b'(' | b'[' => match close(i) {
                Some(j) => i = j,
                None => return false,
            },
            b'.' => {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            _ => return false,
        }
    }
    true
}

fn has_enum(ty: &Ty) -> bool {
    match ty {
        Enum(_) => true,
        Tuple(ts) => ts.iter().any(has_enum),
        Arr(t, _) => has_enum(t),
        Ty::Fn(ps, r) => ps.iter().any(has_enum) || has_enum(r),
        _ => false,
    }
}

/// Whether `env[i]` is not shadowed by a later variable of the same name.
fn visible(env: &Env, i: usize) -> bool {
    !env[i + 1..].iter().any(|w| w.name == env[i].name)
}

/// Whether `text` uses the variable `name` (as a whole word).
fn mentions(text: &str, name: &str) -> bool {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = text.as_bytes();
    text.match_indices(name).any(|(i, _)| {
        let end = i + name.len();
        (i == 0 || !word(b[i - 1])) && (end == b.len() || !word(b[end]))
    })
}

fn paren(e: &str) -> String {
    if is_atomic(e) {
        e.to_string()
    } else {
        format!("({e})")
    }
}

fn real_lit(c: f64) -> String {
    format!("{c:?}")
}

const REAL_LITS: &[&str] = &[
    "0.5", "1.5", "-0.75", "2.0", "0.25", "-1.25", "3.0", "0.1", "-2.5", "1.0", "0.0",
];

impl Gen {
    fn new(seed: u64, config: Config) -> Gen {
        Gen {
            rng: Rng(seed),
            fuel: config.fuel,
            ad_depth: 0,
            ad_count: 0,
            enums: Vec::new(),
            list: None,
            helpers: Vec::new(),
            fns: Vec::new(),
            counter: 0,
            deep: false,
            in_list_fold: false,
        }
    }

    /// The definitions made so far (to drop those of an abandoned try).
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            fns: self.fns.len(),
            helpers: self.helpers.len(),
            enums: self.enums.len(),
            list: self.list.clone(),
            deep: self.deep,
        }
    }

    fn restore(&mut self, s: &Snapshot) {
        self.fns.truncate(s.fns);
        self.helpers.truncate(s.helpers);
        self.enums.truncate(s.enums);
        self.list = s.list.clone();
        self.deep = s.deep;
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}{}", self.counter)
    }

    fn render_ty(&self, ty: &Ty) -> String {
        match ty {
            Real => "Real".into(),
            Int => "Int".into(),
            Bool => "Bool".into(),
            Unit => "()".into(),
            Tuple(ts) => {
                let parts: Vec<String> = ts.iter().map(|t| self.render_ty(t)).collect();
                format!("({})", parts.join(", "))
            }
            Arr(t, _) => format!("[{}]", self.render_ty(t)),
            Ty::Fn(ps, r) => {
                let parts: Vec<String> = ps.iter().map(|t| self.render_ty(t)).collect();
                format!("fn({}) -> {}", parts.join(", "), self.render_ty(r))
            }
            Enum(k) => self.enums[*k].name.clone(),
        }
    }

    // ----- types -----

    /// Whether values of `ty` can contain reals.
    fn has_real(&self, ty: &Ty) -> bool {
        self.has_real_in(ty, &mut Vec::new())
    }

    fn has_real_in(&self, ty: &Ty, seen: &mut Vec<usize>) -> bool {
        match ty {
            Real => true,
            Tuple(ts) => ts.iter().any(|t| self.has_real_in(t, seen)),
            Arr(t, _) => self.has_real_in(t, seen),
            Enum(k) if !seen.contains(k) => {
                seen.push(*k);
                self.enums[*k]
                    .variants
                    .iter()
                    .any(|(_, fs)| fs.iter().any(|t| self.has_real_in(t, seen)))
            }
            _ => false,
        }
    }

    /// Differentiable data (no functions anywhere).
    fn is_dtype(&self, ty: &Ty) -> bool {
        self.is_dtype_in(ty, &mut Vec::new())
    }

    fn is_dtype_in(&self, ty: &Ty, seen: &mut Vec<usize>) -> bool {
        match ty {
            Real | Int | Bool | Unit => true,
            Tuple(ts) => ts.iter().all(|t| self.is_dtype_in(t, seen)),
            Arr(t, _) => self.is_dtype_in(t, seen),
            Ty::Fn(..) => false,
            Enum(k) => {
                if seen.contains(k) {
                    return true;
                }
                seen.push(*k);
                self.enums[*k]
                    .variants
                    .iter()
                    .all(|(_, fs)| fs.iter().all(|t| self.is_dtype_in(t, seen)))
            }
        }
    }

    /// An enum whose fields are all reals or such enums is its own tangent type
    /// (docs/decisions.md, "Language"); others have a derived `ETan`, which this
    /// generator does not use.
    fn enum_self_tangent(&self, k: usize) -> bool {
        self.enums[k].variants.iter().all(|(_, fs)| {
            fs.iter().all(|t| match t {
                Real => true,
                Enum(j) => *j == k || self.enum_self_tangent(*j),
                _ => false,
            })
        })
    }

    /// `T(ty)` (docs/language.md §5) where it can be written: `None` for functions and for
    /// enums with a derived tangent enum.
    fn tangent(&self, ty: &Ty) -> Option<Ty> {
        Some(match ty {
            Real => Real,
            Int | Bool | Unit => Unit,
            Tuple(ts) => Tuple(ts.iter().map(|t| self.tangent(t)).collect::<Option<_>>()?),
            Arr(t, n) => arr(self.tangent(t)?, *n),
            Ty::Fn(..) => return None,
            Enum(k) => {
                if self.enum_self_tangent(*k) && self.is_dtype(ty) {
                    Enum(*k)
                } else {
                    return None;
                }
            }
        })
    }

    /// Its own tangent type, with a real in it.
    fn self_tangent(&self, ty: &Ty) -> bool {
        self.is_dtype(ty) && self.has_real(ty) && self.tangent(ty).as_ref() == Some(ty)
    }

    /// A random type with at most `level` levels of nesting.
    fn rand_ty(&mut self, level: u32) -> Ty {
        if level == 0 {
            return match self.rng.below(10) {
                0..=5 => Real,
                6..=8 => Int,
                _ => Bool,
            };
        }
        match self.rng.below(20) {
            0..=6 => Real,
            7..=8 => Int,
            9 => Bool,
            10..=12 => {
                let n = self.rng.range(2, 3);
                Tuple((0..n).map(|_| self.rand_ty(level - 1)).collect())
            }
            13..=15 => {
                let n = self.rng.range(1, 4);
                arr(self.rand_ty(level - 1), n)
            }
            16..=17 => {
                let n = self.rng.range(1, 2);
                let ps = (0..n).map(|_| self.rand_ty(level - 1)).collect();
                func(ps, self.rand_ty(level - 1))
            }
            _ => self.enum_ty(level),
        }
    }

    /// A differentiable type with a real in it; `any_enum`: also enums whose tangent
    /// type is a derived `ETan` (else only enums that are their own tangent type).
    fn rand_dtype(&mut self, any_enum: bool) -> Ty {
        if self.rng.chance(0.2) {
            let enums: Vec<usize> = (0..self.enums.len())
                .filter(|k| {
                    let t = Enum(*k);
                    self.is_dtype(&t)
                        && self.has_real(&t)
                        && (any_enum || self.enum_self_tangent(*k))
                })
                .collect();
            if !enums.is_empty() {
                return Enum(*self.rng.pick(&enums));
            }
        }
        match self.rng.below(9) {
            0..=2 => Real,
            3..=4 => arr(Real, self.rng.range(1, 3)),
            5 => Tuple(vec![Real, Int]),
            6 => Tuple(vec![arr(Real, 2), Real]),
            7 => Tuple(vec![Int, Real, Bool]),
            _ => arr(Tuple(vec![Real, Int]), 2),
        }
    }

    // ----- expressions -----

    fn expr(&mut self, ty: &Ty, env: &mut Env, depth: u32) -> (String, B) {
        self.expr_with(ty, env, depth, true)
    }

    fn expr_with(&mut self, ty: &Ty, env: &mut Env, depth: u32, leaf_ok: bool) -> (String, B) {
        self.fuel -= 1;
        if depth == 0 || self.fuel <= 0 {
            return self.leaf(ty, env);
        }
        let mut prods = self.productions(ty);
        if !leaf_ok {
            prods.retain(|p| !matches!(p.1, P::Leaf));
        }
        loop {
            let total: u32 = prods.iter().map(|p| p.0).sum();
            if total == 0 {
                return self.leaf(ty, env);
            }
            let mut r = self.rng.below(total as usize) as u32;
            let mut i = 0;
            while r >= prods[i].0 {
                r -= prods[i].0;
                i += 1;
            }
            let p = prods.swap_remove(i).1;
            if let Some(out) = self.apply(p, ty, env, depth) {
                return out;
            }
        }
    }

    /// A normalised expression of type `ty`.
    fn nexpr(&mut self, ty: &Ty, env: &mut Env, depth: u32) -> (String, B) {
        let (e, b) = self.expr(ty, env, depth);
        self.norm(e, b, ty)
    }

    fn productions(&self, ty: &Ty) -> Vec<(u32, P)> {
        let ad = self.ad_depth < MAX_AD_DEPTH && self.ad_count < MAX_AD;
        let a = |w: u32| if ad { w } else { 0 };
        let mut v = vec![
            (4, P::Leaf),
            (3, P::Let),
            (1, P::LetTuple),
            (2, P::If),
            (2, P::MatchEnum),
            (1, P::MatchInt),
            (1, P::MatchTuple),
            (1, P::Proj),
            (2, P::Index),
            (2, P::CallClosure),
            (2, P::CallHelper),
            (1, P::CallRec),
            (1, P::Fold),
            (1, P::Iterate),
            (1, P::ScanIndex),
        ];
        match ty {
            Real => v.extend([
                (10, P::RealBin),
                (2, P::DivConst),
                (2, P::DivSmooth),
                (8, P::Unary),
                (1, P::ToReal),
                (2, P::SumReal),
                (2, P::SumBuild),
                (1, P::PreludeReal),
                (a(2), P::Diff),
                (a(2), P::GradComp),
                (a(1), P::ValueAndGrad),
                (a(1), P::Jvp),
                (a(1), P::Vjp),
                (a(1), P::Hessian),
                (a(1), P::Jacobian),
                (a(1), P::GradMulti),
                (1, P::ListFold),
                (if self.deep { 0 } else { 1 }, P::CallDeep),
            ]),
            Int => v.extend([
                (5, P::IntBin),
                (1, P::IntDivRem),
                (1, P::IntLength),
                (1, P::IntSum),
                (1, P::IntMinMax),
            ]),
            Bool => v.extend([(4, P::BoolCmp), (2, P::BoolLogic), (1, P::BoolNot)]),
            Unit => {}
            Tuple(ts) => {
                v.push((5, P::TupleLit));
                if ts.len() == 2 {
                    v.push((2, P::ZipIndex));
                }
                if ts.iter().all(|t| *t == Real) {
                    v.push((1, P::SumRows));
                }
            }
            Arr(t, n) => {
                v.extend([
                    (3, P::ArrLit),
                    (3, P::Map),
                    (1, P::Map2),
                    (3, P::Build),
                    (1, P::Scan),
                    (1, P::Reverse),
                    (1, P::Replicate),
                    (1, P::Slice),
                ]);
                if *n >= 2 {
                    v.push((1, P::Concat));
                }
                if **t == Int {
                    v.push((3, P::Range));
                }
                if let Tuple(ts) = &**t
                    && ts.len() == 2
                {
                    v.push((3, P::Zip));
                }
                if **t == Real {
                    v.extend([
                        (2, P::PreludeArr),
                        (1, P::SumRows),
                        (a(1), P::VjpArr),
                        (a(1), P::JacobianRow),
                    ]);
                }
            }
            Ty::Fn(ps, r) => {
                v.extend([(10, P::Lambda), (3, P::HelperRef)]);
                // Not for enums: the pullback could be applied to a cotangent with
                // another constructor than the result's.
                if ps.len() == 1
                    && self.self_tangent(&ps[0])
                    && self.self_tangent(r)
                    && !has_enum(&ps[0])
                    && !has_enum(r)
                {
                    v.push((a(2), P::Pullback));
                }
            }
            Enum(k) => {
                v.push((6, P::EnumCtor));
                if self.is_list(*k) {
                    v.extend([(3, P::ListFrom), (2, P::ListMap)]);
                }
            }
        }
        if self.self_tangent(ty) {
            v.push((a(1), P::Diff));
            v.push((a(1), P::GradWhole));
        }
        v
    }

    /// Accesses of variables in `env` that have type `ty` (`v`, `v.1`, `v[2]`, `v[i]`...),
    /// with the position of the variable in `env` (later is more recently bound).
    fn paths(&self, ty: &Ty, env: &Env) -> Vec<(String, B, usize)> {
        let mut out = Vec::new();
        for (rank, v) in env.iter().enumerate() {
            if !visible(env, rank) {
                continue;
            }
            let mut found = Vec::new();
            self.paths_from(&v.name, &v.ty, v.b, ty, env, 2, &mut found);
            out.extend(found.into_iter().map(|(e, b)| (e, b, rank)));
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn paths_from(
        &self,
        e: &str,
        ety: &Ty,
        b: B,
        ty: &Ty,
        env: &Env,
        depth: u32,
        out: &mut Vec<(String, B)>,
    ) {
        if ety == ty {
            out.push((e.to_string(), b));
        }
        if depth == 0 {
            return;
        }
        match ety {
            Tuple(ts) => {
                for (k, t) in ts.iter().enumerate() {
                    self.paths_from(&format!("{e}.{k}"), t, b, ty, env, depth - 1, out);
                }
            }
            Arr(t, n) => {
                for k in 0..*n {
                    self.paths_from(&format!("{e}[{k}]"), t, b, ty, env, depth - 1, out);
                }
                for (i, v) in env.iter().enumerate() {
                    if v.range.is_some_and(|r| r <= *n) && visible(env, i) {
                        self.paths_from(&format!("{e}[{}]", v.name), t, b, ty, env, depth - 1, out);
                    }
                }
            }
            _ => {}
        }
    }

    /// A variable access for a leaf: preferably one that depends on the input (`g > 0`),
    /// and strongly preferably of a recently bound variable (a lambda's parameter
    /// rather than `x`): variables are weighted 8^position among the candidates.
    fn pick_path(&mut self, ty: &Ty, env: &Env) -> Option<(String, B)> {
        let mut paths = self.paths(ty, env);
        if paths.is_empty() || self.rng.chance(0.1) {
            return None;
        }
        if paths.iter().any(|p| p.1.g > 0.0) && self.rng.chance(0.9) {
            paths.retain(|p| p.1.g > 0.0);
        }
        let mut ranks: Vec<usize> = paths.iter().map(|p| p.2).collect();
        ranks.dedup();
        let weights: Vec<u64> = (0..ranks.len())
            .map(|k| 8u64.pow(k.min(20) as u32))
            .collect();
        let mut r = self.rng.next_u64() % weights.iter().sum::<u64>();
        let mut i = 0;
        while r >= weights[i] {
            r -= weights[i];
            i += 1;
        }
        let of_var: Vec<(String, B)> = paths
            .into_iter()
            .filter(|p| p.2 == ranks[i])
            .map(|p| (p.0, p.1))
            .collect();
        Some(self.rng.pick(&of_var).clone())
    }

    fn leaf(&mut self, ty: &Ty, env: &mut Env) -> (String, B) {
        if let Some(p) = self.pick_path(ty, env) {
            return p;
        }
        match ty {
            Real => {
                let l = *self.rng.pick(REAL_LITS);
                let m: f64 = l.parse().unwrap();
                (l.to_string(), B::real(m.abs(), 0.0))
            }
            Int => {
                let n = self.rng.range(0, 5);
                (n.to_string(), B::int(n as f64))
            }
            Bool => (self.rng.pick(&["true", "false"]).to_string(), B::ZERO),
            Unit => ("()".into(), B::ZERO),
            Tuple(ts) => {
                let mut parts = Vec::new();
                let mut b = B::ZERO;
                for t in ts {
                    let (p, pb) = self.leaf(t, env);
                    parts.push(p);
                    b = b.max(pb);
                }
                (format!("({})", parts.join(", ")), b)
            }
            Arr(t, n) => {
                let (p, b) = self.leaf(t, env);
                if self.rng.chance(0.5) {
                    (format!("replicate({n}, {p})"), b)
                } else {
                    let mut parts = vec![p];
                    let mut b = b;
                    for _ in 1..*n {
                        let (p, pb) = self.leaf(t, env);
                        parts.push(p);
                        b = b.max(pb);
                    }
                    (format!("[{}]", parts.join(", ")), b)
                }
            }
            Ty::Fn(..) => self.lambda(ty, env, 0, true, None),
            Enum(k) => {
                let k = *k;
                let variants: Vec<(String, Vec<Ty>)> = self.enums[k]
                    .variants
                    .iter()
                    .filter(|(_, fs)| !fs.contains(&Enum(k)))
                    .cloned()
                    .collect();
                let (name, fields) = self.rng.pick(&variants).clone();
                self.ctor(&name, &fields, env, 0)
            }
        }
    }

    /// Generates with production `p` (one family of constructs per submodule), or
    /// `None` if `p` does not apply after all.
    fn apply(&mut self, p: P, ty: &Ty, env: &mut Env, depth: u32) -> Option<(String, B)> {
        match p {
            P::Leaf => Some(self.leaf(ty, env)),
            P::Let | P::LetTuple | P::If | P::MatchInt | P::MatchTuple | P::Proj | P::TupleLit => {
                self.apply_control(p, ty, env, depth)
            }
            P::MatchEnum | P::ListFold | P::EnumCtor | P::ListFrom | P::ListMap => {
                self.apply_enums(p, ty, env, depth)
            }
            P::CallClosure
            | P::CallHelper
            | P::CallRec
            | P::Lambda
            | P::HelperRef
            | P::CallDeep => self.apply_closures(p, ty, env, depth),
            P::Index
            | P::Fold
            | P::ScanIndex
            | P::Iterate
            | P::SumReal
            | P::SumBuild
            | P::PreludeReal
            | P::IntLength
            | P::IntSum
            | P::ZipIndex
            | P::SumRows
            | P::ArrLit
            | P::Map
            | P::Map2
            | P::Build
            | P::Scan
            | P::Reverse
            | P::Concat
            | P::Slice
            | P::Replicate
            | P::Range
            | P::Zip
            | P::PreludeArr => self.apply_arrays(p, ty, env, depth),
            P::RealBin
            | P::DivConst
            | P::DivSmooth
            | P::Unary
            | P::ToReal
            | P::IntBin
            | P::IntDivRem
            | P::IntMinMax
            | P::BoolCmp
            | P::BoolLogic
            | P::BoolNot => self.apply_scalars(p, env, depth),
            P::Diff
            | P::GradWhole
            | P::GradComp
            | P::ValueAndGrad
            | P::Jvp
            | P::Vjp
            | P::VjpArr
            | P::Hessian
            | P::Jacobian
            | P::JacobianRow
            | P::GradMulti
            | P::Pullback => self.apply_operators(p, ty, env, depth),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic() {
        assert!(is_atomic("x"));
        assert!(is_atomic("x[0]"));
        assert!(is_atomic("f(a, b)[1].0"));
        assert!(is_atomic("(a + b)"));
        assert!(!is_atomic("(a) + (b)"));
        assert!(!is_atomic("-1.5"));
        assert!(!is_atomic("{ let a = 1; a }"));
        assert!(is_atomic("1.5"));
        assert!(mentions("v1 + v12", "v12"));
        assert!(mentions("f(v1)", "v1"));
        assert!(!mentions("v12 + xv1", "v1"));
    }
}
