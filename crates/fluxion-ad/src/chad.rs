//! Reverse CHAD (seed 000, §7.5; digest `notes/000_chad.md` §5.3), on Core's A-normal
//! form: each code `f: A -> B` becomes a code returning its value paired with its
//! backpropagator, `Dr(f): Dr(A)1 -> (Dr(B)1, fn(T(B)) -> (T(A), FnCt))` (the type map
//! is `TypeMap::Chad`). The backpropagator is an ordinary closure over the primal
//! values the backward pass needs: CHAD's "closures as the tape" (§7.2 caveat 7).
//!
//! The paper's rules, and where they live here:
//!
//! | paper (§7.5) | here |
//! |---|---|
//! | `Dr_G(x) = <x, LAM v. coproj_idx(x)(v)>` | the context cotangent `Dr(Γ)2` is kept *split* and *sparse*: one list of contribution terms per context variable ([`Adjoints`]); a variable's occurrence adds one term to its own list, never an environment-sized tuple |
//! | `Dr_G(let x = t in s)`: `let v = y' @ v in fst v + x' @ (snd v)` | bindings are processed in reverse; when `x`'s binding is reached its terms are summed once (`%tplus`) and pushed back through its rule — the fan-in `+` |
//! | `Dr_G(op(t1..tk))` with `DopT` | a real primitive's transposed derivative `∂ᵢ·w` from the one table of partials (`calculus.rs`), as `%lscale(∂ᵢ, w)` |
//! | `Dr_G(<t, s>)`, `fst`, `snd` | `%lproj(w, i)` per component; a projection's cotangent is the tuple with `w` in its slot and symbolic zeros elsewhere |
//! | `Dr_G(\x. t)`: primal keeps `snd (z' @ v)`, cotangent `case v of !x ⊗ v -> fst ((snd (y x)) @ v)` | a translated lambda returns its value with its backpropagator, which yields the argument's cotangent *and* the captures' cotangents; the copower `!Dr(A)1 ⊗ T(B)` is folded at each call (`lcopowfold` applied entry by entry): the call's backpropagator is the entry's consumer, already applied to that call's argument, so nothing is recomputed (caveat 4). The folded value is the captures' cotangent, a constructor of the enum `FnCt` per lambda code (closure conversion, as "Efficient CHAD" does); `+` of two is fieldwise |
//! | `Dr_G(t s)`: `x'ctx @ (!y ⊗ v) + y' @ (x'arg @ v)` | the call's backpropagator applied to `v` gives `(x'arg @ v, x'ctx-part)`: the first goes to the argument, the second to the function value's cotangent, and from there (at the closure's creation) into the captured variables |
//! | sums (digest §6.2) | `match`/`if`: each branch returns its value and a backpropagator onto the free variables of the match (the scrutinee gets `Ctor(tag, fields' cotangents)`); only the branch taken is recorded |
//! | arrays (§10 `map`; digest §6.3) | `build`, `map`, `map2`, `sumbuild`: the translated closure runs per element and its backpropagators are kept (not recomputed); `fold`, `scan`, `iterate`: a `scan` keeps each step's backpropagator, the backward pass runs them in reverse; `a[i]`: `%lonehot`, `slice`: `%lembed`, `concat`: `%lslice`, `replicate`: `%lsum`, `sum`: `replicate` |
//!
//! Complexity (the caveats of digest §7.2 and their fixes): (1) one-hot context
//! cotangents — split sparse adjoints, and `%tzero` is a symbolic zero; (3) one-hot
//! arrays — `%lonehot`/`%lembed` are unmaterialised at run time and `%tplus` of array
//! cotangents is a lazy sum, forced once into one buffer (accumulation); (4)
//! recomputation at closures — stored backpropagators; (5) copower growth — the
//! copower is folded at each call, so a function cotangent has the size of the
//! closure's environment. Each original binding gives O(1) backward bindings, so the
//! derivative code is linear in the program's size and its run time a constant
//! factor of the primal's.
//!
//! Recursion: a recursive function's translation calls its own translation (memoised
//! under `chad#<code>` before its body is translated); each call's backpropagator
//! calls the backpropagators of the calls it made, so the backward pass recurses as
//! deep as the primal did (the reference implementation handles recursion the same
//! way; the paper leaves its theory to future work, §11.2).
//!
//! Not translated: code that applies a differential operator itself (`jvp`, `taylor`,
//! or a nested reverse pass); [`chad_unsupported`] says so before anything is
//! translated, and the run time then computes that `%chad_vjp` by forward mode.

use std::collections::HashMap;

use fluxion_core::{
    Arm, Atom, Binding, Body, CodeId, CodeKind, Lit, Module, Prim, Rhs, Type, TypeMap, VarId,
};

use crate::AdError;
use crate::builder::{Builder, int};
use crate::calculus;
use crate::layer::{negate_array, translation_key};
use crate::tangent::{self, Tan};

/// The CHAD translation of `code`, creating it on first request.
pub fn chad_code(m: &mut Module, code: CodeId) -> Result<CodeId, AdError> {
    if let Some(id) = m.derived_codes.get(&translation_key(TypeMap::Chad, code)) {
        return Ok(*id);
    }
    if let Some(why) = chad_unsupported(m, code) {
        return Err(AdError::new(why));
    }
    translate(m, code, None)
}

/// Why `code` (or a code it reaches) cannot be translated by CHAD: it applies a
/// differential operator itself. `None` when it can.
pub fn chad_unsupported(m: &Module, code: CodeId) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    let mut work = vec![code];
    while let Some(c) = work.pop() {
        if !seen.insert(c)
            || m.derived_codes
                .contains_key(&translation_key(TypeMap::Chad, c))
        {
            continue;
        }
        let body = &m.code(c).body;
        if let Some(p) = first_operator(body) {
            let what = match p {
                Prim::ChadVjp | Prim::DeltaVjp => "a reverse-mode operator".to_string(),
                p => format!("`{}`", p.name()),
            };
            return Some(format!(
                "CHAD does not translate `{}`: it applies {what} itself (under --ad chad \
                 such a function is differentiated by forward mode)",
                m.code(c).name
            ));
        }
        fluxion_core::visit::for_each_code_ref(body, &mut |r| work.push(r));
    }
    None
}

fn first_operator(body: &Body) -> Option<Prim> {
    body.bindings.iter().find_map(|b| match &b.rhs {
        Rhs::Prim(p, _) if is_operator(*p) => Some(*p),
        Rhs::If(_, t, e) => first_operator(t).or_else(|| first_operator(e)),
        Rhs::Match(_, arms, d) => arms
            .iter()
            .find_map(|a| first_operator(&a.body))
            .or_else(|| d.as_deref().and_then(first_operator)),
        _ => None,
    })
}

fn is_operator(p: Prim) -> bool {
    use Prim::*;
    p.is_differential()
        || matches!(
            p,
            DeltaVjp | DeltaPush | DeltaSum | DeltaJvp | DeltaTaylor | ChadVjp
        )
}

/// Whether values of `ty` have a non-trivial cotangent (`T(ty)` holds a real or a
/// function cotangent): only those get adjoints.
fn carries_cotangent(m: &Module, ty: &Type) -> bool {
    fn go(m: &Module, t: &Type, seen: &mut Vec<fluxion_core::EnumId>) -> bool {
        match t {
            Type::Real | Type::Fn(..) => true,
            Type::Int | Type::Bool | Type::Unit => false,
            Type::Tuple(ts) => ts.iter().any(|t| go(m, t, seen)),
            Type::Array(t) => go(m, t, seen),
            Type::Enum(e) => {
                if seen.contains(e) {
                    return false;
                }
                seen.push(*e);
                m.enum_def(*e)
                    .variants
                    .iter()
                    .any(|v| v.fields.iter().any(|f| go(m, f, seen)))
            }
        }
    }
    go(m, ty, &mut Vec::new())
}

/// One original binding whose backward rule runs, with what its forward translation
/// made for it (a backpropagator, the per-element results of a map, ...).
struct Step {
    binding: Binding,
    extra: Vec<Atom>,
    /// The free variables a branch's backpropagator returns cotangents for.
    outputs: Vec<VarId>,
}

/// The split, sparse context cotangent: per original variable, the terms added to it
/// so far (none: the symbolic zero).
#[derive(Default)]
struct Adjoints(HashMap<VarId, Vec<Atom>>);

/// What a backpropagator returns.
enum Outputs<'a> {
    /// A code's: its parameters' cotangents and its captures' (as `FnCt`).
    Code {
        code: CodeId,
        params: &'a [VarId],
        captures: &'a [VarId],
    },
    /// A branch's: the cotangents of the free variables of the `if`/`match`.
    Vars(&'a [VarId]),
}

struct Chad {
    /// Original variable → its primal in the translation.
    env: HashMap<VarId, Atom>,
}

/// Translates `code`: on its own (`captures` = `None`: fresh captured variables,
/// memoised), or inline, as a lambda made in an enclosing translation whose variables
/// it captures (not memoised: it belongs to that translation).
fn translate(
    m: &mut Module,
    code: CodeId,
    captures: Option<Vec<VarId>>,
) -> Result<CodeId, AdError> {
    let original = m.code(code).clone();
    let mut b = Builder::new(m, original.span);
    let id = b.reserve_code(&format!("{}_chad", original.name), original.kind);
    if captures.is_none() {
        b.m.derived_codes
            .insert(translation_key(TypeMap::Chad, code), id);
    }
    b.m.translated_from.insert(id, code);
    let Type::Fn(_, ret) = b.m.map_type(&b.m.code_ty(code), TypeMap::Chad) else {
        unreachable!("a code's type is a function type")
    };
    // Known before the body exists: recursive calls read it.
    b.m.codes[id.0 as usize].ret = (*ret).clone();
    let mut t = Chad {
        env: HashMap::new(),
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
        let bp = t.backprop(
            b,
            steps,
            &original.body.result,
            &original.ret,
            outputs,
            None,
        );
        Ok(b.tuple("chad", vec![y, bp]))
    })?;
    crate::cleanup::eliminate_dead_bindings(b.m, &mut body);
    b.finish_code(id, captures, params, (*ret).clone(), body);
    Ok(id)
}

impl Chad {
    /// A fresh variable for original `v`, of its primal type, bound in `env`.
    fn bind_fresh(&mut self, b: &mut Builder, v: VarId) -> VarId {
        let ty = b.m.map_type(&b.m.var_ty(v).clone(), TypeMap::Chad);
        let hint = b.m.var(v).name.clone();
        let fresh = b.fresh(&hint, ty);
        self.env.insert(v, Atom::Var(fresh));
        fresh
    }

    fn atom(&self, a: &Atom) -> Atom {
        match a {
            Atom::Var(v) => self.env[v],
            Atom::Lit(l) => Atom::Lit(*l),
        }
    }

    fn atoms(&self, atoms: &[Atom]) -> Vec<Atom> {
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
        let pty = b.m.map_type(&ty, TypeMap::Chad);
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
                let code = if b.m.code(*c).kind == CodeKind::Lambda {
                    translate(b.m, *c, Some(vars.clone()))?
                } else {
                    chad_code(b.m, *c)?
                };
                plain(
                    b,
                    Rhs::Closure(code, vars.into_iter().map(Atom::Var).collect()),
                )
            }
            Rhs::Call(f, args) => {
                // The translated function returns `(value, backprop)`.
                let f = self.atom(f);
                let rty = result_of(b, &f);
                let r = b.emit(&hint, Rhs::Call(f, self.atoms(args)), rty);
                let (y, bp) = (b.proj(&r, 0), b.proj(&r, 1));
                (y, vec![bp], vec![])
            }
            Rhs::CallDirect(c, args) => {
                let code = chad_code(b.m, *c)?;
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
                let rty = branch_type(b, &pty, &ty, &outputs);
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
                let rty = branch_type(b, &pty, &ty, &outputs);
                let r = b.emit(&hint, Rhs::Match(s, new_arms, default), rty);
                split_branch(b, r, outputs)
            }
            Rhs::Prim(p, args) => self.forward_prim(b, *p, args, &ty, &pty, &hint)?,
        })
    }

    /// One branch of an `if`/`match`: its primal, paired with its backpropagator onto
    /// `outputs` when there are any. In a `match` arm, `fields` (scrutinee, tag,
    /// fields) sends the fields' cotangents back to the scrutinee.
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
            let bp = self.backprop(b, steps, &body.result, ty, Outputs::Vars(outputs), fields);
            Ok(b.tuple("branch", vec![y, bp]))
        })
    }

    /// The backpropagator `|w| ...` of a block: replays `steps` backwards from `w`,
    /// the cotangent of `result: ty`, and returns `outputs`' cotangents. It captures
    /// the primal values its body reads.
    fn backprop(
        &mut self,
        b: &mut Builder,
        steps: Vec<Step>,
        result: &Atom,
        ty: &Type,
        outputs: Outputs,
        fields: Option<(Atom, u32, &[VarId])>,
    ) -> Atom {
        let id = b.reserve_code("backprop", CodeKind::Lambda);
        let tty = b.m.tangent_type(ty);
        let w = b.fresh("w", tty.clone());
        let mut adj = Adjoints::default();
        let body = b.block(|b| {
            if let Atom::Var(r) = result {
                adj.add(b.m, *r, Atom::Var(w));
            }
            for step in steps.iter().rev() {
                self.backward(b, step, &mut adj);
            }
            if let Some((Atom::Var(s), tag, fs)) = fields {
                self.fields_to_scrutinee(b, &mut adj, s, tag, fs);
            }
            match outputs {
                Outputs::Code {
                    code,
                    params,
                    captures,
                } => {
                    let mut parts: Vec<Atom> =
                        params.iter().map(|p| adj.take(b, *p).atom(b)).collect();
                    let env = env_cotangent(b, &mut adj, code, captures);
                    if parts.is_empty() {
                        return env;
                    }
                    parts.push(env);
                    b.tuple("ct", parts)
                }
                Outputs::Vars(vs) => {
                    let parts: Vec<Atom> = vs.iter().map(|v| adj.take(b, *v).atom(b)).collect();
                    if parts.len() == 1 {
                        parts[0]
                    } else {
                        b.tuple("ct", parts)
                    }
                }
            }
        });
        let captures: Vec<VarId> = fluxion_core::visit::free_vars(&body)
            .into_iter()
            .filter(|v| *v != w)
            .collect();
        let ret = b.ty(&body.result);
        b.finish_code(id, captures.clone(), vec![w], ret.clone(), body);
        b.emit(
            "backprop",
            Rhs::Closure(id, captures.into_iter().map(Atom::Var).collect()),
            Type::func(vec![tty], ret),
        )
    }

    /// In a `match` arm: the scrutinee's cotangent gets `Ctor(tag, fields' cotangents)`.
    fn fields_to_scrutinee(
        &self,
        b: &mut Builder,
        adj: &mut Adjoints,
        s: VarId,
        tag: u32,
        fields: &[VarId],
    ) {
        let cts: Vec<Tan> = fields.iter().map(|f| adj.take(b, *f)).collect();
        if cts.iter().all(|t| matches!(t, Tan::Zero(_))) {
            return;
        }
        let sty = b.m.tangent_type(&b.m.var_ty(s).clone());
        let Type::Enum(te) = sty else {
            unreachable!("a match on a non-enum")
        };
        let parts = cts.into_iter().map(|t| t.atom(b)).collect();
        let ct = b.emit("ct", Rhs::Ctor(te, tag, parts), sty.clone());
        adj.add(b.m, s, ct);
    }
}

/// The cotangent of a code's captures: its `FnCt` constructor, or the symbolic zero.
fn env_cotangent(b: &mut Builder, adj: &mut Adjoints, code: CodeId, captures: &[VarId]) -> Atom {
    let fn_ct = Type::Enum(b.m.fn_cotangent_enum());
    let cts: Vec<Tan> = captures.iter().map(|c| adj.take(b, *c)).collect();
    if cts.iter().all(|t| matches!(t, Tan::Zero(_))) {
        return tangent::zero(b, fn_ct);
    }
    let tag = b.m.fn_cotangent_variant(code);
    let parts = cts.into_iter().map(|t| t.atom(b)).collect();
    let e = b.m.fn_cotangent_enum();
    b.emit("env_ct", Rhs::Ctor(e, tag, parts), fn_ct)
}

impl Adjoints {
    /// Adds the term `ct` to `v`'s cotangent (nothing for a variable without one).
    fn add(&mut self, m: &Module, v: VarId, ct: Atom) {
        if carries_cotangent(m, m.var_ty(v)) {
            self.0.entry(v).or_default().push(ct);
        }
    }

    fn add_atom(&mut self, m: &Module, a: &Atom, ct: Atom) {
        if let Atom::Var(v) = a {
            self.add(m, *v, ct);
        }
    }

    /// `v`'s cotangent, its terms summed (the fan-in of every use of `v`).
    fn take(&mut self, b: &mut Builder, v: VarId) -> Tan {
        let ty = b.m.tangent_type(&b.m.var_ty(v).clone());
        let terms = self.0.remove(&v).unwrap_or_default();
        tangent::sum(b, ty, terms.into_iter().map(Tan::Of))
    }
}

/// The primal and backpropagator of a translated `if`/`match`, when it has one.
fn split_branch(b: &mut Builder, r: Atom, outputs: Vec<VarId>) -> (Atom, Vec<Atom>, Vec<VarId>) {
    if outputs.is_empty() {
        return (r, vec![], vec![]);
    }
    let (y, bp) = (b.proj(&r, 0), b.proj(&r, 1));
    (y, vec![bp], outputs)
}

/// The free variables (with cotangents) of an `if`/`match` of type `ty`, whose
/// cotangents its branches' backpropagators return, in a fixed order (none when its
/// value has no cotangent: nothing flows back through it).
fn branch_outputs(m: &Module, rhs: &Rhs, ty: &Type) -> Vec<VarId> {
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

/// The type of a translated `if`/`match`: the primal, paired with the branch
/// backpropagator when there are outputs.
fn branch_type(b: &mut Builder, pty: &Type, ty: &Type, outputs: &[VarId]) -> Type {
    if outputs.is_empty() {
        return pty.clone();
    }
    let tty = b.m.tangent_type(ty);
    let parts: Vec<Type> = outputs
        .iter()
        .map(|v| b.m.tangent_type(&b.m.var_ty(*v).clone()))
        .collect();
    let ret = if parts.len() == 1 {
        parts[0].clone()
    } else {
        Type::Tuple(parts)
    };
    Type::Tuple(vec![pty.clone(), Type::func(vec![tty], ret)])
}

/// `map(|p| p.i, a)` for `a` an array of tuples.
fn map_proj(b: &mut Builder, a: Atom, i: usize) -> Atom {
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
fn result_of(b: &Builder, f: &Atom) -> Type {
    match b.ty(f) {
        Type::Fn(_, r) => *r,
        _ => unreachable!("a function"),
    }
}

/// `if length(ps) == 0 { empty } else { ps[length(ps) - 1].0 }`: the final value of a
/// scan of (value, backpropagator) pairs.
fn last_value(b: &mut Builder, ps: Atom, empty: Atom) -> Atom {
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

/// A backpropagator that is never called (the initial element of a scan of
/// (value, backpropagator) pairs), of type `fn(T) -> R` with `R` a tuple of tangents.
fn unused_backprop(b: &mut Builder, bp_ty: &Type) -> Atom {
    let Type::Fn(ps, r) = bp_ty else {
        unreachable!("a backpropagator type")
    };
    let r = (**r).clone();
    b.lambda("no_backprop", &[], ps.clone(), |b, _| zeros(b, &r))
}

/// A tuple of symbolic zeros of tuple type `ty` (a single zero otherwise).
fn zeros(b: &mut Builder, ty: &Type) -> Atom {
    match ty {
        Type::Tuple(ts) => {
            let parts = ts.iter().map(|t| tangent::zero(b, t.clone())).collect();
            b.tuple("zeros", parts)
        }
        _ => tangent::zero(b, ty.clone()),
    }
}

/// `map2(|p, w| p.1(w), ps, ws)`: each element's backpropagator applied to its
/// cotangent.
fn apply_each(b: &mut Builder, ps: Atom, ws: Atom) -> Atom {
    let (Type::Array(r), Type::Array(w)) = (b.ty(&ps), b.ty(&ws)) else {
        unreachable!("arrays")
    };
    let Type::Tuple(rs) = (*r).clone() else {
        unreachable!("(value, backpropagator) pairs")
    };
    let out = match &rs[1] {
        Type::Fn(_, o) => (**o).clone(),
        _ => unreachable!("a backpropagator"),
    };
    let out2 = out.clone();
    let f = b.lambda(
        "apply",
        &[],
        vec![(*r).clone(), (*w).clone()],
        move |b, ps| {
            let bp = b.proj(&ps[0], 1);
            b.emit("ct", Rhs::Call(bp, vec![ps[1]]), out2)
        },
    );
    b.prim(Prim::Map2, &[f, ps, ws], Type::array(out))
}

impl Chad {
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
                // A scan of (value, backpropagator) pairs keeps every step's
                // backpropagator for the backward pass.
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
                let bp0 = unused_backprop(b, &rs[1]);
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

    /// Emits the backward rule of one step: the cotangent of its variable, pushed to
    /// the cotangents of its operands.
    fn backward(&mut self, b: &mut Builder, step: &Step, adj: &mut Adjoints) {
        let binding = &step.binding;
        b.span = binding.span;
        let w = match adj.take(b, binding.var) {
            Tan::Zero(_) => return, // nothing flows back: no code (static sparsity)
            Tan::Of(w) => w,
        };
        let y = self.env[&binding.var];
        match &binding.rhs {
            Rhs::Atom(a) => adj.add_atom(b.m, a, w),
            Rhs::Tuple(args) => {
                for (i, a) in args.iter().enumerate() {
                    if is_active(b, a) {
                        let t = b.m.tangent_type(&b.m.atom_ty(a));
                        let c = b.emit("ct", Rhs::Prim(Prim::LinProj, vec![w, int(i as i64)]), t);
                        adj.add_atom(b.m, a, c);
                    }
                }
            }
            Rhs::Proj(a, i) => {
                let Type::Tuple(ts) = b.m.atom_ty(a) else {
                    unreachable!("projection of a non-tuple")
                };
                let parts = ts
                    .iter()
                    .enumerate()
                    .map(|(j, t)| {
                        if j == *i {
                            w
                        } else {
                            let t = b.m.tangent_type(t);
                            tangent::zero(b, t)
                        }
                    })
                    .collect();
                let c = b.tuple("ct", parts);
                adj.add_atom(b.m, a, c);
            }
            Rhs::Array(args) => {
                let ty = b.m.tangent_type(&b.m.var_ty(binding.var).clone());
                let wd = tangent::dense(b, y, tangent::Tan::Of(w));
                let Type::Array(elem) = ty else {
                    unreachable!("an array")
                };
                for (i, a) in args.iter().enumerate() {
                    if is_active(b, a) {
                        let c = b.prim(Prim::Index, &[wd, int(i as i64)], (*elem).clone());
                        adj.add_atom(b.m, a, c);
                    }
                }
            }
            Rhs::Ctor(_, tag, args) => {
                for (j, a) in args.iter().enumerate() {
                    if is_active(b, a) {
                        let t = b.m.tangent_type(&b.m.atom_ty(a));
                        let c = b.emit(
                            "ct",
                            Rhs::Prim(Prim::LinField, vec![w, int(*tag as i64), int(j as i64)]),
                            t,
                        );
                        adj.add_atom(b.m, a, c);
                    }
                }
            }
            Rhs::Closure(code, args) => {
                let tag = b.m.fn_cotangent_variant(*code);
                for (j, a) in args.iter().enumerate() {
                    if is_active(b, a) {
                        let t = b.m.tangent_type(&b.m.atom_ty(a));
                        let c = b.emit(
                            "ct",
                            Rhs::Prim(Prim::LinField, vec![w, int(tag as i64), int(j as i64)]),
                            t,
                        );
                        adj.add_atom(b.m, a, c);
                    }
                }
            }
            Rhs::Call(_, args) | Rhs::CallDirect(_, args) => {
                let bp = step.extra[0];
                let out = result_of(b, &bp);
                let t = b.emit("ct", Rhs::Call(bp, vec![w]), out);
                if args.is_empty() {
                    if let Rhs::Call(f, _) = &binding.rhs {
                        adj.add_atom(b.m, f, t);
                    }
                    return;
                }
                for (i, a) in args.iter().enumerate() {
                    if is_active(b, a) {
                        let c = b.proj(&t, i);
                        adj.add_atom(b.m, a, c);
                    }
                }
                if let Rhs::Call(f, _) = &binding.rhs {
                    let c = b.proj(&t, args.len());
                    adj.add_atom(b.m, f, c);
                }
            }
            Rhs::If(..) | Rhs::Match(..) => {
                let Some(bp) = step.extra.first().copied() else {
                    return;
                };
                let out = result_of(b, &bp);
                let t = b.emit("ct", Rhs::Call(bp, vec![w]), out);
                if step.outputs.len() == 1 {
                    adj.add(b.m, step.outputs[0], t);
                    return;
                }
                for (i, v) in step.outputs.iter().enumerate() {
                    let c = b.proj(&t, i);
                    adj.add(b.m, *v, c);
                }
            }
            Rhs::Prim(p, args) => self.backward_prim(b, *p, args, step, y, w, adj),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn backward_prim(
        &mut self,
        b: &mut Builder,
        p: Prim,
        args: &[Atom],
        step: &Step,
        y: Atom,
        w: Atom,
        adj: &mut Adjoints,
    ) {
        use Prim::*;
        let targs = self.atoms(args);
        let ty = b.m.var_ty(step.binding.var).clone();
        let tty = b.m.tangent_type(&ty);
        let tangent_of = |b: &mut Builder, a: &Atom| {
            let t = b.m.atom_ty(a);
            b.m.tangent_type(&t)
        };
        match p {
            _ if calculus::is_real_function(p) && ty == Type::Real => {
                let rule = calculus::rule(p).expect("a real function has a rule");
                let cts = calculus::transpose(b, rule, &targs, y, w);
                for (a, c) in args.iter().zip(cts) {
                    if let Some(c) = c
                        && b.m.atom_ty(a) == Type::Real
                    {
                        adj.add_atom(b.m, a, c);
                    }
                }
            }
            Sum => {
                let wd = tangent::dense(b, y, tangent::Tan::Of(w));
                let n = b.prim(Length, &[targs[0]], Type::Int);
                let t = tangent_of(b, &args[0]);
                let c = b.prim(Replicate, &[n, wd], t);
                adj.add_atom(b.m, &args[0], c);
            }
            Index => {
                let n = b.prim(Length, &[targs[0]], Type::Int);
                let t = tangent_of(b, &args[0]);
                let c = b.prim(LinOneHot, &[n, targs[1], w], t);
                adj.add_atom(b.m, &args[0], c);
            }
            Maximum | Minimum => {
                let key = if p == Minimum {
                    negate_array(b, targs[0])
                } else {
                    targs[0]
                };
                let i = b.prim(Argmax, &[key], Type::Int);
                let n = b.prim(Length, &[targs[0]], Type::Int);
                let t = tangent_of(b, &args[0]);
                let c = b.prim(LinOneHot, &[n, i, w], t);
                adj.add_atom(b.m, &args[0], c);
            }
            Slice => {
                let n = b.prim(Length, &[targs[0]], Type::Int);
                let c = b.prim(LinEmbed, &[n, targs[1], w], tty);
                adj.add_atom(b.m, &args[0], c);
            }
            Concat => {
                let la = b.prim(Length, &[targs[0]], Type::Int);
                let lc = b.prim(Length, &[targs[1]], Type::Int);
                let ca = b.prim(LinSlice, &[w, int(0), la], tty.clone());
                adj.add_atom(b.m, &args[0], ca);
                let cc = b.prim(LinSlice, &[w, la, lc], tty);
                adj.add_atom(b.m, &args[1], cc);
            }
            Reverse => {
                let wd = tangent::dense(b, y, tangent::Tan::Of(w));
                let c = b.prim(Reverse, &[wd], tty);
                adj.add_atom(b.m, &args[0], c);
            }
            Replicate => {
                let t = tangent_of(b, &args[1]);
                let c = b.prim(LinSum, &[w], t);
                adj.add_atom(b.m, &args[1], c);
            }
            Zip => {
                let wd = tangent::dense(b, y, tangent::Tan::Of(w));
                for (i, a) in args.iter().enumerate() {
                    if is_active(b, a) {
                        let c = map_proj(b, wd, i);
                        adj.add_atom(b.m, a, c);
                    }
                }
            }
            TanPlus => {
                adj.add_atom(b.m, &args[0], w);
                adj.add_atom(b.m, &args[1], w);
            }
            TanDense => adj.add_atom(b.m, &args[1], w),
            Build | Map | Map2 | Sumbuild => {
                let ps = step.extra[0];
                let wd = tangent::dense(b, y, tangent::Tan::Of(w));
                let ws = if p == Sumbuild {
                    let n = b.prim(Length, &[ps], Type::Int);
                    let wty = b.ty(&wd);
                    b.prim(Replicate, &[n, wd], Type::array(wty))
                } else {
                    wd
                };
                let rs = apply_each(b, ps, ws);
                let (f, xs): (&Atom, &[Atom]) = match p {
                    Map | Map2 => (&args[0], &args[1..]),
                    _ => (&args[1], &[]),
                };
                for (i, a) in xs.iter().enumerate() {
                    if is_active(b, a) {
                        let c = map_proj(b, rs, i);
                        adj.add_atom(b.m, a, c);
                    }
                }
                let fi = if p == Map2 { 2 } else { 1 };
                self.closure_cotangents(b, rs, fi, f, adj);
            }
            Fold | Iterate => {
                let ps = step.extra[0];
                let out = bp_out(b, ps);
                let start = if p == Fold {
                    let Type::Tuple(os) = &out else {
                        unreachable!("a fold step's cotangents are a tuple")
                    };
                    let z1 = tangent::zero(b, os[1].clone());
                    let z2 = tangent::zero(b, os[2].clone());
                    b.tuple("start", vec![w, z1, z2])
                } else {
                    let Type::Tuple(os) = &out else {
                        unreachable!("an iterate step's cotangents are a pair")
                    };
                    let z1 = tangent::zero(b, os[1].clone());
                    b.tuple("start", vec![w, z1])
                };
                let rev = b.prim(Reverse, &[ps], b.ty(&ps));
                let Type::Array(r) = b.ty(&ps) else {
                    unreachable!("an array")
                };
                let out2 = out.clone();
                let back = b.lambda(
                    "step_back",
                    &[],
                    vec![out.clone(), (*r).clone()],
                    |b, qs| {
                        let carried = b.proj(&qs[0], 0);
                        let bp = b.proj(&qs[1], 1);
                        b.emit("ct", Rhs::Call(bp, vec![carried]), out2)
                    },
                );
                let rs = b.prim(Scan, &[back, start, rev], Type::array(out.clone()));
                let (init, f) = if p == Fold {
                    (&args[1], &args[0])
                } else {
                    (&args[2], &args[1])
                };
                let c = last_value(b, rs, w);
                adj.add_atom(b.m, init, c);
                if p == Fold && is_active(b, &args[2]) {
                    let xs = map_proj(b, rs, 1);
                    let xty = b.ty(&xs);
                    let c = b.prim(Reverse, &[xs], xty);
                    adj.add_atom(b.m, &args[2], c);
                }
                let fi = if p == Fold { 2 } else { 1 };
                self.closure_cotangents(b, rs, fi, f, adj);
            }
            Scan => {
                let ps = step.extra[0];
                let out = bp_out(b, ps);
                let Type::Tuple(os) = &out else {
                    unreachable!("a scan step's cotangents are a tuple")
                };
                let start = zeros(b, &out);
                let wd = tangent::dense(b, y, tangent::Tan::Of(w));
                let rev_ps = b.prim(Reverse, &[ps], b.ty(&ps));
                let rev_w = b.prim(Reverse, &[wd], tty);
                let Type::Array(r) = b.ty(&ps) else {
                    unreachable!("an array")
                };
                let acc_t = os[0].clone();
                let q_ty = Type::Tuple(vec![(*r).clone(), acc_t.clone()]);
                let qs = b.prim(Zip, &[rev_ps, rev_w], Type::array(q_ty.clone()));
                let out2 = out.clone();
                let back = b.lambda("step_back", &[], vec![out.clone(), q_ty], |b, qs| {
                    let carried = b.proj(&qs[0], 0);
                    let here = b.proj(&qs[1], 1);
                    let total =
                        tangent::plus(b, tangent::Tan::Of(carried), tangent::Tan::Of(here)).atom(b);
                    let pair = b.proj(&qs[1], 0);
                    let bp = b.proj(&pair, 1);
                    b.emit("ct", Rhs::Call(bp, vec![total]), out2)
                });
                let rs = b.prim(Scan, &[back, start, qs], Type::array(out.clone()));
                let none = tangent::zero(b, acc_t);
                let c = last_value(b, rs, none);
                adj.add_atom(b.m, &args[1], c);
                if is_active(b, &args[2]) {
                    let xs = map_proj(b, rs, 1);
                    let xty = b.ty(&xs);
                    let c = b.prim(Reverse, &[xs], xty);
                    adj.add_atom(b.m, &args[2], c);
                }
                self.closure_cotangents(b, rs, 2, &args[0], adj);
            }
            // Locally constant, or with no cotangent in its arguments.
            _ => {}
        }
    }

    /// The cotangent of a closure applied once per element: the sum of the calls'
    /// captures' cotangents (component `i` of each element of `rs`).
    fn closure_cotangents(
        &self,
        b: &mut Builder,
        rs: Atom,
        i: usize,
        f: &Atom,
        adj: &mut Adjoints,
    ) {
        if !is_active(b, f) {
            return;
        }
        let cts = map_proj(b, rs, i);
        let fty = b.m.tangent_type(&b.m.atom_ty(f));
        let c = b.prim(Prim::LinSum, &[cts], fty);
        adj.add_atom(b.m, f, c);
    }
}

/// What the backpropagators in an array of (value, backpropagator) pairs return.
fn bp_out(b: &Builder, ps: Atom) -> Type {
    let Type::Array(r) = b.ty(&ps) else {
        unreachable!("an array")
    };
    let Type::Tuple(rs) = *r else {
        unreachable!("(value, backpropagator) pairs")
    };
    match &rs[1] {
        Type::Fn(_, o) => (**o).clone(),
        _ => unreachable!("a backpropagator"),
    }
}

/// Whether `a` is a variable that has a cotangent.
fn is_active(b: &Builder, a: &Atom) -> bool {
    matches!(a, Atom::Var(v) if carries_cotangent(b.m, b.m.var_ty(*v)))
}
