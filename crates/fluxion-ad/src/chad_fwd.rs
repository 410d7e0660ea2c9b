//! Forward CHAD ([CHAD] §7.4), on Core's A-normal
//! form: each code `f: A -> B` becomes a code returning its value paired with its
//! pushforward, `Df(f): Df(A)1 -> (Df(B)1, fn(T(A), FnCt) -> T(B))` (the type map is
//! `TypeMap::ChadFwd`). The primal half is `chad_sweep.rs`'s, shared with reverse
//! CHAD; this module is the tangent half: the steps the sweep recorded are replayed
//! *forwards* inside the pushforward, a closure over the primals it reads. `jvp(f, x,
//! dx)` under `--fwd chad` is `let (y, f') = Df(f)(x) in (y, f'(dx, 0))`.
//!
//! The paper's rules, and where they live here:
//!
//! | paper (§7.4) | here |
//! |---|---|
//! | `Df_G(x) = <x, LAM v. proj_idx(x)(v)>` | the context tangent `Df(Γ)2` is kept *split*: a variable's tangent is looked up in [`Tangents`] (absent: the static zero) |
//! | `Df_G(let x = t in s)`: `y' @ <v, x' @ v>` | bindings are replayed in order, each binding's tangent computed once from its operands' and recorded under its variable |
//! | `Df_G(op(t1..tk))` with `Dop` | a real primitive's `Σᵢ %lscale(∂ᵢ, dxᵢ)` from the one table of partials (`calculus::push`) |
//! | `Df_G(<t, s>)`, `fst`, `snd` | the tuple of the components' tangents; `%lproj(v, i)` |
//! | `Df_G(\x. t)`: primal keeps `z' @ <0, v>`, tangent `LAM v. \x. (snd (y x)) @ <v, 0>` (a power) | defunctionalised, as reverse CHAD's copower: a function value's tangent is its captures' tangents, the `FnCt` constructor of its lambda code; a translated lambda's pushforward takes the argument's tangent *and* that `FnCt`, and reads each capture's tangent with `%lfield` |
//! | `Df_G(t s)`: `(x'ctx @ v) y + x'arg @ (y' @ v)` | the call's pushforward applied to (the argument's tangent, the function value's `FnCt`): both halves in one linear call, the power applied at the call's own argument |
//! | sums (left to later work, §11.2) | each branch of an `if`/`match` returns its value and a pushforward from the tangents of the match's free variables; in a `match` arm a field's tangent is `%lfield` of the scrutinee's |
//! | arrays (§10 `map`; the rest ours) | `build`, `map`, `map2`, `sumbuild`: each element's pushforward applied to the element's tangent (`%lindex`); `fold`, `scan`, `iterate`: the steps' pushforwards chained by a `fold`/`scan` over the tangent; `a[i]`: `%lindex`, `sum`: `%lsum`, `slice`: `%lslice`; `concat`, `reverse`, `zip`, `replicate`: the same primitive on the tangents |
//!
//! Complexity: every binding's tangent rule is O(1) work beyond what its primal does
//! (a read of an array's tangent is `%lindex`, O(1), never a dense copy), and a
//! tangent that is zero statically emits no code (a call whose inputs are all zero has
//! a zero tangent: its pushforward is linear), so `jvp` costs a constant factor of the
//! primal, like dual numbers, and the pushforward can be applied to many directions
//! without running the primal again.

use std::collections::HashMap;

use fluxion_core::{Atom, CodeId, CodeKind, Lit, Module, Prim, Rhs, Type, TypeMap, VarId};

use crate::AdError;
use crate::builder::{Builder, int};
use crate::calculus;
use crate::chad_sweep::{Block, Chad, Direction, Outputs, Step, carries_cotangent, translate_code};
use crate::layer::negate_array;
use crate::tangent::{self, Tan};

/// The forward-CHAD translation of `code`, creating it on first request.
pub fn chad_fwd_code(m: &mut Module, code: CodeId) -> Result<CodeId, AdError> {
    translate_code(m, code, &Forward)
}

/// Forward CHAD's linear part: the pushforward.
struct Forward;

impl Direction for Forward {
    fn map(&self) -> TypeMap {
        TypeMap::ChadFwd
    }

    fn linear(&self, t: &mut Chad, b: &mut Builder, block: Block) -> Atom {
        t.pushforward(b, block)
    }

    /// `fn(T(outputs)...) -> T(ty)`.
    fn branch_linear_type(&self, b: &mut Builder, ty: &Type, outputs: &[VarId]) -> Type {
        let inputs = outputs
            .iter()
            .map(|v| b.m.tangent_type(&b.m.var_ty(*v).clone()))
            .collect();
        Type::func(inputs, b.m.tangent_type(ty))
    }
}

/// The split context tangent inside one pushforward: per original variable, its
/// tangent (absent: zero, statically).
#[derive(Default)]
struct Tangents(HashMap<VarId, Atom>);

impl Tangents {
    fn of(&self, b: &mut Builder, a: &Atom) -> Tan {
        match a {
            Atom::Var(v) if self.0.contains_key(v) => Tan::Of(self.0[v]),
            _ => Tan::Zero(b.m.tangent_type(&b.m.atom_ty(a))),
        }
    }

    /// `a`'s tangent as an atom (`%tzero()` where it is zero).
    fn atom(&self, b: &mut Builder, a: &Atom) -> Atom {
        self.of(b, a).atom(b)
    }

    fn set(&mut self, v: VarId, t: Tan) {
        if let Tan::Of(a) = t {
            self.0.insert(v, a);
        }
    }

    fn is_zero(&self, a: &Atom) -> bool {
        !matches!(a, Atom::Var(v) if self.0.contains_key(v))
    }
}

impl Chad {
    /// The pushforward of a block: its parameters are the tangents of `outputs` (a
    /// code's parameters and its `FnCt`, or a branch's free variables); its body
    /// replays the steps forwards and returns the tangent of the block's result.
    fn pushforward(&mut self, b: &mut Builder, block: Block) -> Atom {
        let Block {
            steps,
            result,
            ty,
            outputs,
            fields,
        } = block;
        let id = b.reserve_code("pushforward", CodeKind::Lambda);
        let mut tan = Tangents::default();
        let mut params = Vec::new();
        let mut param = |b: &mut Builder, v: VarId, tan: &mut Tangents| {
            let t = b.m.tangent_type(&b.m.var_ty(v).clone());
            let hint = format!("d{}", b.m.var(v).name);
            let p = b.fresh(&hint, t);
            tan.set(v, Tan::Of(Atom::Var(p)));
            params.push(p);
        };
        let mut env = None;
        match &outputs {
            Outputs::Code {
                code,
                params: ps,
                captures,
            } => {
                for p in *ps {
                    param(b, *p, &mut tan);
                }
                let fn_ct = Type::Enum(b.m.fn_cotangent_enum());
                let denv = b.fresh("denv", fn_ct);
                params.push(denv);
                env = Some((*code, *captures, denv));
            }
            Outputs::Vars(vs) => {
                for v in *vs {
                    param(b, *v, &mut tan);
                }
            }
        }
        let param_tys: Vec<Type> = params.iter().map(|p| b.m.var_ty(*p).clone()).collect();
        let tty = b.m.tangent_type(ty);
        let mut body = b.block(|b| {
            // A code's captures: their tangents are the fields of its `FnCt`.
            if let Some((code, captures, denv)) = env
                && !captures.is_empty()
            {
                let tag = b.m.fn_cotangent_variant(code) as i64;
                for (j, c) in captures.iter().enumerate() {
                    read_field(b, &mut tan, Atom::Var(denv), tag, j, *c);
                }
            }
            // A `match` arm's fields: the fields of the scrutinee's tangent.
            if let Some((Atom::Var(s), tag, fs)) = fields
                && let Tan::Of(ds) = tan.of(b, &Atom::Var(s))
            {
                for (j, f) in fs.iter().enumerate() {
                    read_field(b, &mut tan, ds, tag as i64, j, *f);
                }
            }
            for step in &steps {
                let t = self.tangent(b, step, &tan);
                tan.set(step.binding.var, t);
            }
            match tan.of(b, result) {
                Tan::Zero(_) => tangent::zero(b, tty.clone()),
                Tan::Of(a) => a,
            }
        });
        fluxion_opt::eliminate_dead_bindings(b.m, &mut body);
        let captures: Vec<VarId> = fluxion_core::visit::free_vars(&body)
            .into_iter()
            .filter(|v| !params.contains(v))
            .collect();
        b.finish_code(id, captures.clone(), params, tty.clone(), body);
        b.emit(
            "pushforward",
            Rhs::Closure(id, captures.into_iter().map(Atom::Var).collect()),
            Type::func(param_tys, tty),
        )
    }

    /// The tangent of one step's variable, from its operands' tangents.
    fn tangent(&mut self, b: &mut Builder, step: &Step, tan: &Tangents) -> Tan {
        let binding = &step.binding;
        b.span = binding.span;
        let ty = b.m.var_ty(binding.var).clone();
        let tty = b.m.tangent_type(&ty);
        let zero = Tan::Zero(tty.clone());
        let all_zero = |args: &[Atom]| args.iter().all(|a| tan.is_zero(a));
        match &binding.rhs {
            Rhs::Atom(a) => tan.of(b, a),
            Rhs::Tuple(args) | Rhs::Array(args) if all_zero(args) => zero,
            Rhs::Tuple(args) => {
                let parts = args.iter().map(|a| tan.atom(b, a)).collect();
                Tan::Of(b.emit("dt", Rhs::Tuple(parts), tty))
            }
            Rhs::Array(args) => {
                let parts = args.iter().map(|a| tan.atom(b, a)).collect();
                Tan::Of(b.emit("dt", Rhs::Array(parts), tty))
            }
            Rhs::Proj(a, i) => match tan.of(b, a) {
                Tan::Zero(_) => zero,
                Tan::Of(d) => {
                    Tan::Of(b.emit("dt", Rhs::Prim(Prim::LinProj, vec![d, int(*i as i64)]), tty))
                }
            },
            Rhs::Ctor(_, _, args) | Rhs::Closure(_, args) if all_zero(args) => zero,
            Rhs::Ctor(_, tag, args) => {
                let Type::Enum(te) = tty else {
                    unreachable!("the tangent of an enum")
                };
                let parts = args.iter().map(|a| tan.atom(b, a)).collect();
                Tan::Of(b.emit("dt", Rhs::Ctor(te, *tag, parts), tty))
            }
            Rhs::Closure(code, args) => {
                // A function value's tangent: its captures' tangents, as its `FnCt`.
                let tag = b.m.fn_cotangent_variant(*code);
                let e = b.m.fn_cotangent_enum();
                let parts = args.iter().map(|a| tan.atom(b, a)).collect();
                Tan::Of(b.emit("dt", Rhs::Ctor(e, tag, parts), tty))
            }
            Rhs::Call(f, args) => {
                let mut inputs = args.clone();
                inputs.push(*f);
                apply_linear(b, tan, step.extra[0], &inputs, tty)
            }
            Rhs::CallDirect(_, args) => {
                // A top-level function captures nothing: its `FnCt` is zero.
                let pf = step.extra[0];
                if all_zero(args) {
                    return zero;
                }
                let mut parts: Vec<Atom> = args.iter().map(|a| tan.atom(b, a)).collect();
                let fn_ct = Type::Enum(b.m.fn_cotangent_enum());
                parts.push(tangent::zero(b, fn_ct));
                Tan::Of(b.emit("dt", Rhs::Call(pf, parts), tty))
            }
            Rhs::If(..) | Rhs::Match(..) => match step.extra.first() {
                None => zero,
                Some(pf) => {
                    let inputs: Vec<Atom> = step.outputs.iter().map(|v| Atom::Var(*v)).collect();
                    apply_linear(b, tan, *pf, &inputs, tty)
                }
            },
            Rhs::Prim(p, args) => self.tangent_prim(b, *p, args, step, tan, zero),
        }
    }

    /// The tangent of a primitive's result.
    fn tangent_prim(
        &mut self,
        b: &mut Builder,
        p: Prim,
        args: &[Atom],
        step: &Step,
        tan: &Tangents,
        zero: Tan,
    ) -> Tan {
        use Prim::{
            Argmax, Build, Concat, Fold, Index, Iterate, LinIndex, LinSlice, LinSum, Map, Map2,
            Maximum, Minimum, Replicate, Reverse, Scan, Slice, Sum, Sumbuild, TanDense, TanPlus,
            Zip,
        };
        let targs = self.atoms(args);
        let y = self.env[&step.binding.var];
        let Tan::Zero(tty) = zero.clone() else {
            unreachable!("the zero tangent")
        };
        let dx: Vec<Tan> = args.iter().map(|a| tan.of(b, a)).collect();
        if dx.iter().all(|t| matches!(t, Tan::Zero(_))) {
            return zero; // nothing moves: no code (static sparsity)
        }
        let real = b.m.var_ty(step.binding.var) == &Type::Real;
        let linear = |b: &mut Builder, p: Prim, args: Vec<Atom>| {
            Tan::Of(b.emit("dt", Rhs::Prim(p, args), tty.clone()))
        };
        match p {
            _ if calculus::is_real_function(p) && real => {
                let rule = calculus::rule(p).expect("a real function has a rule");
                let dxs: Vec<Option<Atom>> = args
                    .iter()
                    .zip(&dx)
                    .map(|(a, t)| match t {
                        Tan::Of(d) if b.m.atom_ty(a) == Type::Real => Some(*d),
                        _ => None,
                    })
                    .collect();
                match calculus::push(b, rule, &targs, y, &dxs) {
                    Some(t) => Tan::Of(t),
                    None => zero,
                }
            }
            Sum => {
                let d = dx[0].clone().atom(b);
                linear(b, LinSum, vec![d])
            }
            Index => {
                let d = dx[0].clone().atom(b);
                linear(b, LinIndex, vec![d, targs[1]])
            }
            Maximum | Minimum => {
                let key = if p == Minimum {
                    negate_array(b, targs[0])
                } else {
                    targs[0]
                };
                let i = b.prim(Argmax, &[key], Type::Int);
                let d = dx[0].clone().atom(b);
                linear(b, LinIndex, vec![d, i])
            }
            Slice => {
                let d = dx[0].clone().atom(b);
                linear(b, LinSlice, vec![d, targs[1], targs[2]])
            }
            Concat | Reverse | Zip => {
                // O(n) like the primitive: the tangents are made dense and combined.
                let dense = targs
                    .iter()
                    .zip(dx)
                    .map(|(x, t)| tangent::dense(b, *x, t))
                    .collect();
                linear(b, p, dense)
            }
            Replicate => {
                let d = dx[1].clone().atom(b);
                linear(b, Replicate, vec![targs[0], d])
            }
            TanPlus => tangent::plus(b, dx[0].clone(), dx[1].clone()),
            TanDense => Tan::Of(tangent::dense(b, targs[0], dx[1].clone())),
            Build | Map | Map2 | Sumbuild => self.tangent_per_element(b, p, args, step, tan, y),
            Fold | Scan | Iterate => self.tangent_chain(b, p, args, step, tan),
            // Locally constant, or with no tangent in its arguments.
            _ => zero,
        }
    }

    /// `build`, `map`, `map2`, `sumbuild`: element i's tangent is its own
    /// pushforward applied to its inputs' tangents (`%lindex` of the arrays').
    fn tangent_per_element(
        &mut self,
        b: &mut Builder,
        p: Prim,
        args: &[Atom],
        step: &Step,
        tan: &Tangents,
        y: Atom,
    ) -> Tan {
        let ps = step.extra[0];
        let (f, xs): (&Atom, &[Atom]) = match p {
            Prim::Map | Prim::Map2 => (&args[0], &args[1..]),
            _ => (&args[1], &[]),
        };
        let df = tan.atom(b, f);
        let dxs: Vec<Option<Atom>> = xs
            .iter()
            .map(|a| (!tan.is_zero(a)).then(|| tan.atom(b, a)))
            .collect();
        let (pair, elem_t) = pair_and_tangent(b, ps);
        let n = b.prim(Prim::Length, &[ps], Type::Int);
        let per_element = b.closure("d_elem", vec![Type::Int], |b, is| {
            let i = is[0];
            let pf = element_linear(b, ps, i, &pair);
            let mut inputs: Vec<Atom> = dxs
                .iter()
                .zip(xs)
                .map(|(d, x)| match d {
                    Some(d) => {
                        let t = element_tangent_type(b, x);
                        b.prim(Prim::LinIndex, &[*d, i], t)
                    }
                    None => {
                        let t = element_tangent_type(b, x);
                        tangent::zero(b, t)
                    }
                })
                .collect();
            if xs.is_empty() {
                inputs.push(Atom::Lit(Lit::Unit)); // the index: T(Int) = ()
            }
            inputs.push(df);
            b.emit("dt", Rhs::Call(pf, inputs), elem_t.clone())
        });
        let dys = b.prim(Prim::Build, &[n, per_element], Type::array(elem_t.clone()));
        if p == Prim::Sumbuild {
            let s = b.prim(Prim::LinSum, &[dys], elem_t);
            // Made dense once, so that reading it costs O(1) (`%lsum` of array
            // tangents adds lazily).
            Tan::Of(tangent::dense(b, y, Tan::Of(s)))
        } else {
            Tan::Of(dys)
        }
    }

    /// `fold`, `scan`, `iterate`: the steps' pushforwards chained over the carried
    /// tangent, `d_{i+1} = f'_i(d_i, dx_i, df)`, by a `fold` (a `scan` for `scan`).
    fn tangent_chain(
        &mut self,
        b: &mut Builder,
        p: Prim,
        args: &[Atom],
        step: &Step,
        tan: &Tangents,
    ) -> Tan {
        let ps = step.extra[0];
        let (f, init, xs) = match p {
            Prim::Iterate => (&args[1], &args[2], None),
            _ => (&args[0], &args[1], Some(&args[2])),
        };
        let df = tan.atom(b, f);
        let dinit = tan.atom(b, init);
        let dxs = xs.and_then(|x| (!tan.is_zero(x)).then(|| tan.atom(b, x)));
        let (pair, acc_t) = pair_and_tangent(b, ps);
        let n = b.prim(Prim::Length, &[ps], Type::Int);
        let range = b.prim(Prim::Range, &[n], Type::array(Type::Int));
        let step_fn = b.closure("d_step", vec![acc_t.clone(), Type::Int], |b, qs| {
            let (d, i) = (qs[0], qs[1]);
            let pf = element_linear(b, ps, i, &pair);
            let mut inputs = vec![d];
            if let Some(x) = xs {
                let t = element_tangent_type(b, x);
                inputs.push(match dxs {
                    Some(dxs) => b.prim(Prim::LinIndex, &[dxs, i], t),
                    None => tangent::zero(b, t),
                });
            }
            inputs.push(df);
            b.emit("dt", Rhs::Call(pf, inputs), acc_t.clone())
        });
        let (prim, out) = match p {
            Prim::Scan => (Prim::Scan, Type::array(acc_t.clone())),
            _ => (Prim::Fold, acc_t.clone()),
        };
        Tan::Of(b.prim(prim, &[step_fn, dinit, range], out))
    }
}

/// `f'(inputs' tangents)` for a linear `f'`; zero, with no call, when every input's
/// tangent is zero statically.
fn apply_linear(b: &mut Builder, tan: &Tangents, f: Atom, inputs: &[Atom], out: Type) -> Tan {
    if inputs.iter().all(|a| tan.is_zero(a)) {
        return Tan::Zero(out);
    }
    let parts = inputs.iter().map(|a| tan.atom(b, a)).collect();
    Tan::Of(b.emit("dt", Rhs::Call(f, parts), out))
}

/// Records `v`'s tangent as field `j` of constructor `tag` of the enum tangent `t`.
fn read_field(b: &mut Builder, tan: &mut Tangents, t: Atom, tag: i64, j: usize, v: VarId) {
    let vt = b.m.var_ty(v).clone();
    if !carries_cotangent(b.m, &vt) {
        return;
    }
    let ft = b.m.tangent_type(&vt);
    let d = b.emit(
        "dt",
        Rhs::Prim(Prim::LinField, vec![t, int(tag), int(j as i64)]),
        ft,
    );
    tan.set(v, Tan::Of(d));
}

/// The element type of an array of (value, pushforward) pairs, and the tangent type
/// the pushforwards return.
fn pair_and_tangent(b: &Builder, ps: Atom) -> (Type, Type) {
    let Type::Array(pair) = b.ty(&ps) else {
        unreachable!("an array of (value, pushforward) pairs")
    };
    let Type::Tuple(parts) = (*pair).clone() else {
        unreachable!("(value, pushforward) pairs")
    };
    (*pair, result_of_type(&parts[1]))
}

fn result_of_type(t: &Type) -> Type {
    match t {
        Type::Fn(_, r) => (**r).clone(),
        _ => unreachable!("a pushforward"),
    }
}

/// `ps[i].1`: element i's pushforward.
fn element_linear(b: &mut Builder, ps: Atom, i: Atom, pair: &Type) -> Atom {
    let p = b.prim(Prim::Index, &[ps, i], pair.clone());
    b.proj(&p, 1)
}

/// The tangent type of an element of the array `x`.
fn element_tangent_type(b: &mut Builder, x: &Atom) -> Type {
    match b.m.atom_ty(x) {
        Type::Array(e) => b.m.tangent_type(&e),
        _ => unreachable!("an array"),
    }
}
