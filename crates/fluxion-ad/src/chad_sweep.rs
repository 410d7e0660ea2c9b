//! CHAD's primal sweep, shared by its two directions ([CHAD] §7.4 and
//! §7.5): each code `f: A -> B` becomes a code returning its value
//! paired with its *linear part* — reverse CHAD's backpropagator
//! `fn(T(B)) -> (T(A), FnCt)` (`chad.rs`, `TypeMap::Chad`) or forward CHAD's
//! pushforward `fn(T(A), FnCt) -> T(B)` (`chad_fwd.rs`, `TypeMap::ChadFwd`). The two
//! translations agree on the primal (the paper's `Dr(t)1 = Df(t)1`): this module
//! emits it, binding by binding, and records a [`Step`] for each binding whose value
//! carries a (co)tangent, with what its linear rule will need (the linear part a call
//! returned, the per-element pairs of a `map`, ...). A [`Direction`] turns the steps
//! into the linear part: replayed backwards into a backpropagator, or forwards into a
//! pushforward. Either is an ordinary closure over the primal values it reads:
//! CHAD's "closures as the tape" (cost caveat 7 of docs/references.md).
//!
//! Shared rules: a lambda is translated inline, capturing the enclosing translation's
//! primals (a top-level function used as a value is translated on its own, memoised);
//! a call binds the callee's value and linear part; `if`/`match` branches return their
//! value with a linear part over the match's free variables; `build`, `map`, `map2`,
//! `sumbuild` keep each element's (value, linear part); `fold`, `scan`, `iterate` run a
//! `scan` of (value, linear part) pairs.
//!
//! Recursion: a recursive function's translation calls its own translation (memoised
//! under `chad#<code>` / `chadfwd#<code>` before its body is translated); each call's
//! linear part calls the linear parts of the calls it made, so the linear pass recurses
//! as deep as the primal did (the reference implementation handles recursion the same
//! way; the paper leaves its theory to future work, §11.2).
//!
//! Not translated: code that applies a differential operator itself (`jvp`, `taylor`,
//! or a nested reverse pass); [`unsupported`] says so before anything is translated,
//! and the run time then uses forward mode (dual numbers) for that operator.

use std::collections::HashMap;

use fluxion_core::{
    Arm, Atom, Binding, Body, CodeId, CodeKind, Lit, Module, Prim, Rhs, Type, TypeMap, VarId,
};

use crate::AdError;
use crate::builder::{Builder, int};
use crate::calculus;
use crate::layer::{layer_name, translation_key};
use crate::tangent;

/// The translation of `code` in direction `dir`, creating it on first request.
pub(crate) fn translate_code(
    m: &mut Module,
    code: CodeId,
    dir: &'static dyn Direction,
) -> Result<CodeId, AdError> {
    if let Some(id) = m.derived_codes.get(&dir.key(code)) {
        return Ok(*id);
    }
    if let Some(why) = unsupported(m, code, dir.map()) {
        return Err(AdError::new(why));
    }
    translate(m, code, None, dir)
}

/// Why `code` (or a code it reaches) cannot be translated by CHAD in the direction
/// `map` (`TypeMap::Chad` or `TypeMap::ChadFwd`): it applies a differential operator
/// itself. `None` when it can.
pub fn unsupported(m: &Module, code: CodeId, map: TypeMap) -> Option<String> {
    // A code this direction translated applies no operator.
    let translated = |c: CodeId| m.derived_codes.contains_key(&translation_key(map, c));
    reaches_operator(m, code, translated).map(|(c, p)| {
        let what = match p {
            Prim::ChadVjp | Prim::DeltaVjp | Prim::DeltaJacobian => {
                "a reverse-mode operator".to_string()
            }
            p => format!("`{}`", p.name()),
        };
        let (name, instead) = if map == TypeMap::Chad {
            (
                "CHAD",
                "under --ad chad such a function is differentiated by forward mode",
            )
        } else {
            (
                "forward CHAD",
                "under --fwd chad such a function's jvp uses dual numbers",
            )
        };
        format!(
            "{name} does not translate `{}`: it applies {what} itself ({instead})",
            m.code(c).name
        )
    })
}

/// The first code `code` reaches (itself included) that applies a differential operator
/// or holds derivative code's primitives, with that primitive; codes `done` accepts
/// are not entered.
pub(crate) fn reaches_operator(
    m: &Module,
    code: CodeId,
    done: impl Fn(CodeId) -> bool,
) -> Option<(CodeId, Prim)> {
    reaches_prim(m, code, done, &is_operator)
}

/// The first code `code` reaches (itself included) that applies a primitive `wanted`
/// accepts, with that primitive; codes `done` accepts are not entered.
pub(crate) fn reaches_prim(
    m: &Module,
    code: CodeId,
    done: impl Fn(CodeId) -> bool,
    wanted: &dyn Fn(Prim) -> bool,
) -> Option<(CodeId, Prim)> {
    let mut seen = std::collections::HashSet::new();
    let mut work = vec![code];
    while let Some(c) = work.pop() {
        if !seen.insert(c) || done(c) {
            continue;
        }
        let body = &m.code(c).body;
        if let Some(p) = first_prim(body, wanted) {
            return Some((c, p));
        }
        fluxion_core::visit::for_each_code_ref(body, &mut |r| work.push(r));
    }
    None
}

fn first_prim(body: &Body, wanted: &dyn Fn(Prim) -> bool) -> Option<Prim> {
    body.bindings.iter().find_map(|b| match &b.rhs {
        Rhs::Prim(p, _) if wanted(*p) => Some(*p),
        Rhs::If(_, t, e) => first_prim(t, wanted).or_else(|| first_prim(e, wanted)),
        Rhs::Match(_, arms, d) => arms
            .iter()
            .find_map(|a| first_prim(&a.body, wanted))
            .or_else(|| d.as_deref().and_then(|d| first_prim(d, wanted))),
        _ => None,
    })
}

/// A differential operator or a primitive of derivative code (the tapes, `%chad_of`,
/// `%capture`, the operators' internal forms).
pub(crate) fn is_operator(p: Prim) -> bool {
    use Prim::*;
    p.is_differential()
        || p.is_tape()
        || matches!(
            p,
            DeltaVjp | DeltaJacobian | DeltaJvp | DeltaTaylor | ChadVjp | ChadOf | ClosureCapture
        )
}

/// Whether values of `ty` have a non-trivial cotangent (`T(ty)` holds a real or a
/// function cotangent): only those get adjoints.
pub(crate) fn carries_cotangent(m: &Module, ty: &Type) -> bool {
    m.has_leaf(ty, &|t| matches!(t, Type::Real | Type::Fn(..)))
}

/// One original binding whose backward rule runs, with what its forward translation
/// made for it (a backpropagator, the per-element results of a map, ...).
pub(crate) struct Step {
    pub(crate) binding: Binding,
    pub(crate) extra: Vec<Atom>,
    /// The free variables a branch's backpropagator returns cotangents for.
    pub(crate) outputs: Vec<VarId>,
}

/// What a block's linear part is about: the variables whose cotangents a
/// backpropagator returns, or whose tangents a pushforward takes.
pub(crate) enum Outputs<'a> {
    /// A code's: its parameters and its captures (whose (co)tangent is one `FnCt`).
    Code {
        code: CodeId,
        params: &'a [VarId],
        captures: &'a [VarId],
    },
    /// A branch's: the free variables of the `if`/`match`.
    Vars(&'a [VarId]),
}

/// A block whose linear part is built: its steps, its result (of type `ty`), what the
/// linear part is about, and, in a `match` arm, (scrutinee, tag, fields).
pub(crate) struct Block<'a> {
    pub(crate) steps: Vec<Step>,
    pub(crate) result: &'a Atom,
    pub(crate) ty: &'a Type,
    pub(crate) outputs: Outputs<'a>,
    pub(crate) fields: Option<(Atom, u32, &'a [VarId])>,
}

/// A direction of CHAD: the primal sweep is shared, the linear part is the
/// direction's (a backpropagator, or a pushforward).
pub(crate) trait Direction: Sync {
    /// `TypeMap::Chad` or `TypeMap::ChadFwd`.
    fn map(&self) -> TypeMap;
    /// The interpretation of the ground type `Real` and the real primitives.
    fn ground(&self) -> Ground {
        Ground::Reals
    }
    /// The translation's name: the layer's (`chad`, `chad_fwd`), `_deps` added over
    /// the Boolean semiring. Translated codes are named `<code>_<name>`.
    fn name(&self) -> String {
        match self.ground() {
            Ground::Reals => layer_name(self.map()),
            Ground::Dependencies => format!("{}_deps", layer_name(self.map())),
        }
    }
    /// The key a code's translation is memoised under (`Module::derived_codes`):
    /// `<name>#<code>`, over the reals the layer's `translation_key`.
    fn key(&self, code: CodeId) -> String {
        format!("{}#{}", self.name(), code.0)
    }
    /// The linear part of `block`, as a closure over the primals it reads.
    fn linear(&self, t: &mut Chad, b: &mut Builder, block: Block) -> Atom;
    /// The type of the linear part of a branch of type `ty` over `outputs`.
    fn branch_linear_type(&self, b: &mut Builder, ty: &Type, outputs: &[VarId]) -> Type;
}

pub(crate) struct Chad {
    /// Original variable → its primal in the translation.
    pub(crate) env: HashMap<VarId, Atom>,
    pub(crate) dir: &'static dyn Direction,
}

/// The ground interpretation CHAD is taken over ([CHAD] §11.3): the cotangent monoid
/// of `Real` and each real primitive's backward part. The rules for everything else
/// (tuples, closures, sums, arrays, recursion) are the same for every instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ground {
    /// Reverse AD: cotangents are reals, a primitive's backward part `∂ᵢ·w`.
    Reals,
    /// The dependency analysis over the Boolean semiring, embedded in the reals ≥ 0
    /// (x ↦ x ≠ 0 is a semiring map onto ({0, 1}, ∨, ∧)): a primitive passes `w` to
    /// each argument whose partial is not structurally zero (`calculus.rs`), `min` and
    /// `max` to the argument they follow; an input's cotangent is nonzero exactly
    /// where the seeded output depends on it.
    Dependencies,
}

/// Translates `code`: on its own (`captures` = `None`: fresh captured variables,
/// memoised), or inline, as a lambda made in an enclosing translation whose variables
/// it captures (not memoised: it belongs to that translation).
fn translate(
    m: &mut Module,
    code: CodeId,
    captures: Option<Vec<VarId>>,
    dir: &'static dyn Direction,
) -> Result<CodeId, AdError> {
    let original = m.code(code).clone();
    let map = dir.map();
    let mut b = Builder::new(m, original.span);
    let name = format!("{}_{}", original.name, dir.name());
    let id = b.reserve_code(&name, original.kind);
    if captures.is_none() {
        b.m.derived_codes.insert(dir.key(code), id);
    }
    b.m.translated_from.insert(id, code);
    let Type::Fn(_, ret) = b.m.map_type(&b.m.code_ty(code), map) else {
        unreachable!("a code's type is a function type")
    };
    // Known before the body exists: recursive calls read it.
    b.m.codes[id.0 as usize].ret = (*ret).clone();
    let mut t = Chad {
        env: HashMap::new(),
        dir,
    };
    let captures: Vec<VarId> = match captures {
        Some(vars) => {
            for (c, v) in original.captures.iter().zip(&vars) {
                t.env.insert(*c, Atom::Var(*v));
            }
            vars
        }
        None => original
            .captures
            .iter()
            .map(|c| t.bind_fresh(&mut b, *c))
            .collect(),
    };
    let params: Vec<VarId> = original
        .params
        .iter()
        .map(|p| t.bind_fresh(&mut b, *p))
        .collect();
    let mut body = b.try_block(|b| {
        let (y, steps) = t.forward(b, &original.body)?;
        let outputs = Outputs::Code {
            code,
            params: &original.params,
            captures: &original.captures,
        };
        let block = Block {
            steps,
            result: &original.body.result,
            ty: &original.ret,
            outputs,
            fields: None,
        };
        let linear = dir.linear(&mut t, b, block);
        Ok(b.tuple("chad", vec![y, linear]))
    })?;
    fluxion_opt::eliminate_dead_bindings(b.m, &mut body);
    b.finish_code(id, captures, params, (*ret).clone(), body);
    Ok(id)
}

impl Chad {
    /// A fresh variable for original `v`, of its primal type, bound in `env`.
    fn bind_fresh(&mut self, b: &mut Builder, v: VarId) -> VarId {
        let ty = b.m.map_type(&b.m.var_ty(v).clone(), self.dir.map());
        let hint = b.m.var(v).name.clone();
        let fresh = b.fresh(&hint, ty);
        self.env.insert(v, Atom::Var(fresh));
        fresh
    }

    pub(crate) fn atom(&self, a: &Atom) -> Atom {
        match a {
            Atom::Var(v) => self.env[v],
            Atom::Lit(l) => Atom::Lit(*l),
        }
    }

    pub(crate) fn atoms(&self, atoms: &[Atom]) -> Vec<Atom> {
        atoms.iter().map(|a| self.atom(a)).collect()
    }

    /// Emits the primal translation of `body`'s bindings; returns the primal result
    /// and the steps the backward pass replays.
    fn forward(&mut self, b: &mut Builder, body: &Body) -> Result<(Atom, Vec<Step>), AdError> {
        let mut steps = Vec::new();
        for binding in &body.bindings {
            b.span = binding.span;
            let (primal, extra, outputs) = self.forward_rhs(b, binding)?;
            self.env.insert(binding.var, primal);
            let ty = b.m.var_ty(binding.var).clone();
            if carries_cotangent(b.m, &ty) {
                steps.push(Step {
                    binding: binding.clone(),
                    extra,
                    outputs,
                });
            }
        }
        Ok((self.atom(&body.result), steps))
    }

    /// The primal of one binding, what its backward rule needs, and (for a branch)
    /// the variables its backpropagator returns cotangents for.
    fn forward_rhs(
        &mut self,
        b: &mut Builder,
        binding: &Binding,
    ) -> Result<(Atom, Vec<Atom>, Vec<VarId>), AdError> {
        let var = binding.var;
        let ty = b.m.var_ty(var).clone();
        let pty = b.m.map_type(&ty, self.dir.map());
        let hint = b.m.var(var).name.clone();
        let plain = |b: &mut Builder, rhs: Rhs| (b.emit(&hint, rhs, pty.clone()), vec![], vec![]);
        Ok(match &binding.rhs {
            Rhs::Atom(a) => (self.atom(a), vec![], vec![]),
            Rhs::Tuple(args) => plain(b, Rhs::Tuple(self.atoms(args))),
            Rhs::Proj(a, i) => plain(b, Rhs::Proj(self.atom(a), *i)),
            Rhs::Array(args) => plain(b, Rhs::Array(self.atoms(args))),
            Rhs::Ctor(_, tag, args) => {
                let Type::Enum(e) = pty else {
                    unreachable!("constructor of a non-enum type")
                };
                plain(b, Rhs::Ctor(e, *tag, self.atoms(args)))
            }
            Rhs::Closure(c, args) => {
                // A lambda is translated inline, capturing the primals of its captures
                // (a literal is bound to a variable first); a top-level function used
                // as a value is translated on its own, once.
                let vars: Vec<VarId> = args
                    .iter()
                    .map(|a| crate::helpers::var_of(b, self.atom(a)))
                    .collect();
                let vars = crate::helpers::distinct_vars(b, vars);
                let code = if b.m.code(*c).kind == CodeKind::Lambda {
                    translate(b.m, *c, Some(vars.clone()), self.dir)?
                } else {
                    translate_code(b.m, *c, self.dir)?
                };
                plain(
                    b,
                    Rhs::Closure(code, vars.into_iter().map(Atom::Var).collect()),
                )
            }
            Rhs::Call(f, args) => {
                // The translated function returns `(value, its linear part)`.
                let f = self.atom(f);
                let rty = result_of(b, &f);
                let r = b.emit(&hint, Rhs::Call(f, self.atoms(args)), rty);
                let (y, bp) = (b.proj(&r, 0), b.proj(&r, 1));
                (y, vec![bp], vec![])
            }
            Rhs::CallDirect(c, args) => {
                let code = translate_code(b.m, *c, self.dir)?;
                let ret = b.m.code(code).ret.clone();
                let r = b.emit(&hint, Rhs::CallDirect(code, self.atoms(args)), ret);
                let (y, bp) = (b.proj(&r, 0), b.proj(&r, 1));
                (y, vec![bp], vec![])
            }
            Rhs::If(c, then, els) => {
                let outputs = branch_outputs(b.m, &binding.rhs, &ty);
                let c = self.atom(c);
                let then = self.branch(b, then, &ty, &outputs, None)?;
                let els = self.branch(b, els, &ty, &outputs, None)?;
                let rty = self.branch_type(b, &pty, &ty, &outputs);
                b.span = binding.span; // the branches' bindings moved it
                let r = b.emit(&hint, Rhs::If(c, Box::new(then), Box::new(els)), rty);
                split_branch(b, r, outputs)
            }
            Rhs::Match(s, arms, default) => {
                let outputs = branch_outputs(b.m, &binding.rhs, &ty);
                let scrutinee = *s;
                let s = self.atom(s);
                let mut new_arms = Vec::new();
                for arm in arms {
                    let fields: Vec<VarId> =
                        arm.fields.iter().map(|f| self.bind_fresh(b, *f)).collect();
                    let of_fields = (scrutinee, arm.tag, arm.fields.as_slice());
                    let body = self.branch(b, &arm.body, &ty, &outputs, Some(of_fields))?;
                    new_arms.push(Arm {
                        tag: arm.tag,
                        fields,
                        body,
                    });
                }
                let default = match default {
                    Some(d) => Some(Box::new(self.branch(b, d, &ty, &outputs, None)?)),
                    None => None,
                };
                let rty = self.branch_type(b, &pty, &ty, &outputs);
                b.span = binding.span; // the branches' bindings moved it
                let r = b.emit(&hint, Rhs::Match(s, new_arms, default), rty);
                split_branch(b, r, outputs)
            }
            Rhs::Prim(p, args) => self.forward_prim(b, *p, args, &ty, &pty, &hint)?,
        })
    }

    /// One branch of an `if`/`match`: its primal, paired with its linear part over
    /// `outputs` when there are any. In a `match` arm, `fields` (scrutinee, tag,
    /// fields) relates the fields' (co)tangents to the scrutinee's.
    fn branch(
        &mut self,
        b: &mut Builder,
        body: &Body,
        ty: &Type,
        outputs: &[VarId],
        fields: Option<(Atom, u32, &[VarId])>,
    ) -> Result<Body, AdError> {
        b.try_block(|b| {
            let (y, steps) = self.forward(b, body)?;
            if outputs.is_empty() {
                return Ok(y);
            }
            let block = Block {
                steps,
                result: &body.result,
                ty,
                outputs: Outputs::Vars(outputs),
                fields,
            };
            let dir = self.dir;
            let linear = dir.linear(self, b, block);
            Ok(b.tuple("branch", vec![y, linear]))
        })
    }

    /// The type of a translated `if`/`match`: the primal, paired with the branch's
    /// linear part when there are outputs.
    fn branch_type(&self, b: &mut Builder, pty: &Type, ty: &Type, outputs: &[VarId]) -> Type {
        if outputs.is_empty() {
            return pty.clone();
        }
        let linear = self.dir.branch_linear_type(b, ty, outputs);
        Type::Tuple(vec![pty.clone(), linear])
    }

    /// The primal of a primitive; for the higher-order ones, the per-element
    /// (value, linear part) pairs the linear part reads.
    fn forward_prim(
        &mut self,
        b: &mut Builder,
        p: Prim,
        args: &[Atom],
        ty: &Type,
        pty: &Type,
        hint: &str,
    ) -> Result<(Atom, Vec<Atom>, Vec<VarId>), AdError> {
        use Prim::*;
        let targs = self.atoms(args);
        let pairs = |b: &mut Builder, p: Prim, args: Vec<Atom>, f: &Atom| {
            let r = result_of(b, f);
            b.emit(hint, Rhs::Prim(p, args), Type::array(r))
        };
        Ok(match p {
            Build | Map | Map2 | Sumbuild => {
                let f = targs[if p == Map || p == Map2 { 0 } else { 1 }];
                let prim = if p == Sumbuild { Build } else { p };
                let ps = pairs(b, prim, targs.clone(), &f);
                let ys = map_proj(b, ps, 0);
                let y = if p == Sumbuild {
                    b.prim(Sum, &[ys], pty.clone())
                } else {
                    ys
                };
                (y, vec![ps], vec![])
            }
            Fold | Scan | Iterate => {
                // A scan of (value, linear part) pairs keeps every step's linear part.
                let (f, init, xs) = if p == Iterate {
                    let n = targs[0];
                    let r = b.prim(Range, &[n], Type::array(Type::Int));
                    (targs[1], targs[2], r)
                } else {
                    (targs[0], targs[1], targs[2])
                };
                let r = result_of(b, &f);
                let Type::Tuple(rs) = r.clone() else {
                    unreachable!("a translated function returns a pair")
                };
                let bp0 = unused_linear(b, &rs[1]);
                let start = b.tuple("start", vec![init, bp0]);
                let Type::Array(x) = b.ty(&xs) else {
                    unreachable!("an array")
                };
                let fv = crate::helpers::var_of(b, f);
                let one_param = p == Iterate;
                let step = b.lambda("step", &[fv], vec![r.clone(), (*x).clone()], |b, ps| {
                    let acc = b.proj(&ps[0], 0);
                    let args = if one_param {
                        vec![acc]
                    } else {
                        vec![acc, ps[1]]
                    };
                    b.emit("step", Rhs::Call(Atom::Var(fv), args), r.clone())
                });
                let ps = b.emit(hint, Rhs::Prim(Scan, vec![step, start, xs]), Type::array(r));
                let y = if p == Scan {
                    map_proj(b, ps, 0)
                } else {
                    last_value(b, ps, init)
                };
                (y, vec![ps], vec![])
            }
            _ => {
                let y = b.emit(hint, Rhs::Prim(p, targs), pty.clone());
                let covered = calculus::is_real_function(p)
                    || matches!(
                        p,
                        Sum | Index
                            | Slice
                            | Concat
                            | Reverse
                            | Replicate
                            | Zip
                            | Maximum
                            | Minimum
                            | TanPlus
                            | TanDense
                            | TanZero
                    );
                let differentiable_args =
                    args.iter().any(|a| carries_cotangent(b.m, &b.m.atom_ty(a)));
                if carries_cotangent(b.m, ty) && differentiable_args && !covered {
                    return Err(AdError::new(format!(
                        "internal error: CHAD has no rule for `{}`",
                        p.name()
                    )));
                }
                (y, vec![], vec![])
            }
        })
    }
}

/// The primal and linear part of a translated `if`/`match`, when it has one.
pub(crate) fn split_branch(
    b: &mut Builder,
    r: Atom,
    outputs: Vec<VarId>,
) -> (Atom, Vec<Atom>, Vec<VarId>) {
    if outputs.is_empty() {
        return (r, vec![], vec![]);
    }
    let (y, bp) = (b.proj(&r, 0), b.proj(&r, 1));
    (y, vec![bp], outputs)
}

/// The free variables (with cotangents) of an `if`/`match` of type `ty`, which its
/// branches' linear parts are about, in a fixed order (none when its value has no
/// cotangent: nothing flows through it).
pub(crate) fn branch_outputs(m: &Module, rhs: &Rhs, ty: &Type) -> Vec<VarId> {
    if !carries_cotangent(m, ty) {
        return Vec::new();
    }
    let body = Body {
        bindings: vec![Binding {
            var: VarId(u32::MAX),
            rhs: rhs.clone(),
            span: Default::default(),
        }],
        result: Atom::Lit(Lit::Unit),
    };
    fluxion_core::visit::free_vars(&body)
        .into_iter()
        .filter(|v| carries_cotangent(m, m.var_ty(*v)))
        .collect()
}

/// `map(|p| p.i, a)` for `a` an array of tuples.
pub(crate) fn map_proj(b: &mut Builder, a: Atom, i: usize) -> Atom {
    let Type::Array(elem) = b.ty(&a) else {
        unreachable!("an array")
    };
    let Type::Tuple(ts) = (*elem).clone() else {
        unreachable!("an array of tuples")
    };
    let f = b.lambda("part", &[], vec![(*elem).clone()], |b, ps| {
        b.proj(&ps[0], i)
    });
    b.prim(Prim::Map, &[f, a], Type::array(ts[i].clone()))
}

/// The result type of a function-typed atom.
pub(crate) fn result_of(b: &Builder, f: &Atom) -> Type {
    match b.ty(f) {
        Type::Fn(_, r) => *r,
        _ => unreachable!("a function"),
    }
}

/// `if length(ps) == 0 { empty } else { ps[length(ps) - 1].0 }`: the final value of a
/// scan of (value, backpropagator) pairs.
pub(crate) fn last_value(b: &mut Builder, ps: Atom, empty: Atom) -> Atom {
    let ty = b.ty(&empty);
    let Type::Array(r) = b.ty(&ps) else {
        unreachable!("an array")
    };
    let n = b.prim(Prim::Length, &[ps], Type::Int);
    let none = b.cmp(Prim::Eq, n, int(0));
    b.if_(
        none,
        ty,
        |_| empty,
        |b| {
            let i = b.sub(n, int(1));
            let last = b.prim(Prim::Index, &[ps, i], (*r).clone());
            b.proj(&last, 0)
        },
    )
}

/// A linear part that is never called (the initial element of a scan of
/// (value, linear part) pairs), of type `fn(..) -> R` with `R` a (tuple of) tangents.
fn unused_linear(b: &mut Builder, ty: &Type) -> Atom {
    let Type::Fn(ps, r) = ty else {
        unreachable!("a linear part's type")
    };
    let r = (**r).clone();
    b.lambda("unused", &[], ps.clone(), |b, _| zeros(b, &r))
}

/// A tuple of symbolic zeros of tuple type `ty` (a single zero otherwise).
pub(crate) fn zeros(b: &mut Builder, ty: &Type) -> Atom {
    match ty {
        Type::Tuple(ts) => {
            let parts = ts.iter().map(|t| tangent::zero(b, t.clone())).collect();
            b.tuple("zeros", parts)
        }
        _ => tangent::zero(b, ty.clone()),
    }
}

/// Whether `a` is a variable that has a cotangent.
pub(crate) fn is_active(b: &Builder, a: &Atom) -> bool {
    matches!(a, Atom::Var(v) if carries_cotangent(b.m, b.m.var_ty(*v)))
}
