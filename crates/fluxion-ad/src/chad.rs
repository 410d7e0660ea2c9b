//! Reverse CHAD ([CHAD] §7.5), on Core's A-normal
//! form: each code `f: A -> B` becomes a code returning its value paired with its
//! backpropagator, `Dr(f): Dr(A)1 -> (Dr(B)1, fn(T(B)) -> (T(A), FnCt))` (the type map
//! is `TypeMap::Chad`). The primal half is `chad_sweep.rs`'s, shared with forward
//! CHAD; this module is the backward half. The backpropagator is an ordinary closure
//! over the primal values the backward pass needs: CHAD's "closures as the tape"
//! (cost caveat 7 of docs/references.md).
//!
//! The paper's rules, and where they live here:
//!
//! | paper (§7.5) | here |
//! |---|---|
//! | `Dr_G(x) = <x, LAM v. coproj_idx(x)(v)>` | the context cotangent `Dr(Γ)2` is kept *split* and *sparse*: one list of contribution terms per context variable ([`Adjoints`]); a variable's occurrence adds one term to its own list, never an environment-sized tuple |
//! | `Dr_G(let x = t in s)`: `let v = y' @ v in fst v + x' @ (snd v)` | bindings are processed in reverse; when `x`'s binding is reached its terms are summed once (`%tplus`) and pushed back through its rule — the fan-in `+` |
//! | `Dr_G(op(t1..tk))` with `DopT` | a real primitive's transposed derivative `∂ᵢ·w` from the one table of partials (`calculus.rs`), as `%lscale(∂ᵢ, w)` |
//! | §11.3: CHAD over any commutative monoid | the ground interpretation is a parameter ([`Ground`]): the rule above is `Reals`'; `Dependencies` (the Boolean semiring, embedded in the reals ≥ 0) passes `w` itself to each argument whose partial is not structurally zero — every other rule is shared ([`chad_deps_code`]) |
//! | `Dr_G(<t, s>)`, `fst`, `snd` | `%lproj(w, i)` per component; a projection's cotangent is the tuple with `w` in its slot and symbolic zeros elsewhere |
//! | `Dr_G(\x. t)`: primal keeps `snd (z' @ v)`, cotangent `case v of !x ⊗ v -> fst ((snd (y x)) @ v)` | a translated lambda returns its value with its backpropagator, which yields the argument's cotangent *and* the captures' cotangents; the copower `!Dr(A)1 ⊗ T(B)` is folded at each call (`lcopowfold` applied entry by entry): the call's backpropagator is the entry's consumer, already applied to that call's argument, so nothing is recomputed (caveat 4). The folded value is the captures' cotangent, a constructor of the enum `FnCt` per lambda code (closure conversion, as "Efficient CHAD" does); `+` of two is fieldwise |
//! | `Dr_G(t s)`: `x'ctx @ (!y ⊗ v) + y' @ (x'arg @ v)` | the call's backpropagator applied to `v` gives `(x'arg @ v, x'ctx-part)`: the first goes to the argument, the second to the function value's cotangent, and from there (at the closure's creation) into the captured variables |
//! | sums (left to later work, §11.2) | `match`/`if`: each branch returns its value and a backpropagator onto the free variables of the match (the scrutinee gets `Ctor(tag, fields' cotangents)`); only the branch taken is recorded |
//! | arrays (§10 `map`; the rest ours) | `build`, `map`, `map2`, `sumbuild`: the translated closure runs per element and its backpropagators are kept (not recomputed); `fold`, `scan`, `iterate`: a `scan` keeps each step's backpropagator, the backward pass runs them in reverse; `a[i]`: `%lonehot`, `slice`: `%lembed`, `concat`: `%lslice`, `replicate`: `%lsum`, `sum`: `replicate` |
//!
//! Complexity ([CHAD]'s cost caveats, listed in docs/references.md, and their fixes): (1) one-hot context
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

use std::collections::HashMap;

use fluxion_core::{Atom, CodeId, CodeKind, Module, Prim, Rhs, Type, TypeMap, VarId};

use crate::AdError;
use crate::builder::{Builder, int};
use crate::calculus;
use crate::chad_sweep::{
    Block, Chad, Direction, Ground, Outputs, Step, carries_cotangent, is_active, last_value,
    map_proj, result_of, translate_code, zeros,
};
use crate::layer::negate_array;
use crate::tangent::{self, Tan};

/// The CHAD translation of `code`, creating it on first request.
pub fn chad_code(m: &mut Module, code: CodeId) -> Result<CodeId, AdError> {
    translate_code(m, code, &REVERSE_AD)
}

/// The CHAD translation of `code` over the Boolean semiring ([CHAD] §11.3): the same
/// rules with the dependency analysis as the ground interpretation
/// ([`Ground::Dependencies`]). Its backpropagator, given an output's one-hot seed,
/// is nonzero exactly at the inputs that output depends on (`sparsity_by_chad_code`).
pub fn chad_deps_code(m: &mut Module, code: CodeId) -> Result<CodeId, AdError> {
    translate_code(m, code, &DEPENDENCIES)
}

/// Reverse CHAD's linear part: the backpropagator, over a ground interpretation.
struct Reverse {
    ground: Ground,
}

/// Reverse AD: CHAD over the reals.
static REVERSE_AD: Reverse = Reverse {
    ground: Ground::Reals,
};
/// The dependency analysis: CHAD over the Boolean semiring.
static DEPENDENCIES: Reverse = Reverse {
    ground: Ground::Dependencies,
};

impl Direction for Reverse {
    fn map(&self) -> TypeMap {
        TypeMap::Chad
    }

    fn ground(&self) -> Ground {
        self.ground
    }

    fn linear(&self, t: &mut Chad, b: &mut Builder, block: Block) -> Atom {
        t.backprop(b, block)
    }

    /// `fn(T(ty)) -> T(outputs)` (one cotangent, or the tuple of them).
    fn branch_linear_type(&self, b: &mut Builder, ty: &Type, outputs: &[VarId]) -> Type {
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
        Type::func(vec![tty], ret)
    }
}

/// The split, sparse context cotangent: per original variable, the terms added to it
/// so far (none: the symbolic zero).
#[derive(Default)]
struct Adjoints(HashMap<VarId, Vec<Atom>>);

impl Chad {
    /// The backpropagator `|w| ...` of a block: replays `steps` backwards from `w`,
    /// the cotangent of `result: ty`, and returns `outputs`' cotangents. It captures
    /// the primal values its body reads.
    fn backprop(&mut self, b: &mut Builder, block: Block) -> Atom {
        let Block {
            steps,
            result,
            ty,
            outputs,
            fields,
        } = block;
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
                let cts = match self.dir.ground() {
                    Ground::Reals => calculus::transpose(b, rule, &targs, y, w),
                    Ground::Dependencies => calculus::transpose_dependencies(b, rule, &targs, y, w),
                };
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
