//! Core → C: one C function per code reachable from the entry, plus the entry point of
//! the ABI (`fx_entry`, see `lib.rs`).
//!
//! Every code becomes `static R fn_N(fx_clo *self_, params…)`; a lambda reads its
//! captures from `self_` (its environment struct `env_N`), a top-level function ignores
//! it. A closure call jumps through the closure's code pointer, except where the
//! closure was made in the same function (its code is known): then it is a direct
//! call the C compiler can inline — which is what turns `build`, `map`, `fold`,
//! `sumbuild`… applied to a lambda into a plain loop over the lambda's body.
//!
//! Ownership (reference counting): parameters and captures are borrowed; a binding
//! that makes a new value (a call, a constructor, most primitives) owns it and drops it
//! where its block ends, unless the block returns it (then it moves to the block's
//! destination); a binding that names part of a live value (a copy, a projection, an
//! element, a match field) borrows. A value stored into a structure gains a reference.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use fluxion_core::{Atom, Body, CodeId, CodeKind, Module, Prim, Rhs, Span, Type, VarId};

use crate::analysis::{enters_code, non_escaping_closures, reachable};
use crate::emitter::{
    APPLY_SUFFIX, Emitter, MANY_PUSHES, PRIMAL_SUFFIX, TERMS_SUFFIX, Unsupported, atom, span_args,
    var,
};
use crate::types::{Helper, Types, has_rc};

/// The C translation unit of `entry` and every code it reaches.
pub fn emit_module(m: &Module, entry: CodeId) -> Result<String, Unsupported> {
    let Type::Fn(params, ret) = m.code_ty(entry) else {
        return Err(Unsupported("the entry is not a function".into()));
    };
    for t in params.iter().chain(std::iter::once(&*ret)) {
        if m.can_hold_fn(t) {
            return Err(Unsupported("the entry takes or returns a function".into()));
        }
    }
    // The codes the entry reaches, and the translations `%chad_of` may pick for the
    // closures among them (and what those reach), to a fixed point.
    let mut roots = vec![entry];
    let (codes, known, closures) = loop {
        let codes = reachable(m, &roots);
        let (known, mut closures) = fluxion_core::visit::closures_of(m, &codes);
        // `%chad_of` makes closures of the translations it picks, which may be picked
        // from in turn (a forward translation's delta translation).
        loop {
            let before = closures.len();
            let picked: Vec<CodeId> = m
                .chad_of
                .iter()
                .filter(|((c, _), _)| closures.contains(c))
                .map(|(_, t)| *t)
                .collect();
            closures.extend(picked);
            if closures.len() == before {
                break;
            }
        }
        let missing: Vec<CodeId> = closures
            .iter()
            .filter(|c| !codes.contains(c))
            .copied()
            .collect();
        if missing.is_empty() {
            break (codes, known, closures);
        }
        roots.extend(missing);
    };
    let mut e = Emitter {
        m,
        types: Types::new(m),
        closures,
        known,
        owned: Vec::new(),
        on_stack: HashSet::new(),
        made_here: HashMap::new(),
        sites: 0,
        terms_variants: Vec::new(),
        terms_of: None,
        loop_variants: Vec::new(),
        loop_variant: None,
        loop_sweeps: (String::new(), String::new()),
        many_pushes: false,
        loop_ranges: HashSet::new(),
        unread_slices: HashSet::new(),
        read_only: crate::analysis::read_only_inputs(m, &codes, &|c| {
            [Prim::Build, Prim::Map, Prim::Map2]
                .iter()
                .any(|p| crate::delta_loop::recomputable(m, *p, c).is_some())
        }),
        stack_arrays: Default::default(),
        rows_tapes: crate::delta_c::rows_tapes(m, &codes),
    };
    let mut functions = String::new();
    let mut protos = String::new();
    for &c in &codes {
        let _ = writeln!(protos, "{};", e.signature(c));
        functions.push_str(&e.function(c)?);
    }
    // The terms variants of fused loops' element functions (leaves: they fuse nothing,
    // so they ask for no variant in turn).
    for c in std::mem::take(&mut e.terms_variants) {
        let _ = writeln!(protos, "{};", e.signature_named(c, TERMS_SUFFIX));
        functions.push_str(&e.function_named(c, TERMS_SUFFIX)?);
    }
    e.terms_of = None;
    // A loop node's element function's primal and apply variants (they ask for their
    // inner sums' element functions' in turn), then the nodes' sweeps, which call the
    // latter.
    let mut done = 0;
    while done < e.loop_variants.len() {
        let c = e.loop_variants[done];
        done += 1;
        for suffix in [PRIMAL_SUFFIX, APPLY_SUFFIX] {
            let _ = writeln!(protos, "{};", e.signature_named(c, suffix));
            functions.push_str(&e.function_named(c, suffix)?);
        }
    }
    e.loop_variants.clear();
    e.loop_variant = None;
    let (sweeps, sweep_protos) = std::mem::take(&mut e.loop_sweeps);
    protos.push_str(&sweep_protos);
    functions.push_str(&sweeps);
    let entry_fn = e.entry(entry, &params, &ret);
    // `%chad_of` helpers (one may ask for another: a captured closure's type, also
    // from a lifting walk the helpers flushed here ask for).
    let mut chad_of = String::new();
    let mut done = 0;
    loop {
        while done < e.types.chad_of.len() {
            let (fty, d) = e.types.chad_of[done].clone();
            let _ = writeln!(
                protos,
                "static fx_clo *fx_of_{done}(fx_clo *f, uint32_t s0, uint32_t s1, uint32_t s2);"
            );
            chad_of.push_str(&e.chad_of_body(done, &fty, d));
            done += 1;
        }
        e.types.flush();
        if done == e.types.chad_of.len() {
            break;
        }
    }
    functions.push_str(&chad_of);
    let mut envs = String::new();
    let mut closures: Vec<CodeId> = e.closures.iter().copied().collect();
    closures.sort();
    for c in closures {
        envs.push_str(&e.env(c));
    }
    e.types.flush();
    let mut out = String::new();
    if !e.types.makes_lazy_arrays() {
        out.push_str("#define FX_ALL_DENSE 1\n");
    }
    out.push_str(crate::RUNTIME);
    out.push_str("\n/* ---- types ---- */\n");
    out.push_str(&e.types.defs);
    out.push_str("\n/* ---- helpers ---- */\n");
    out.push_str(&e.types.protos);
    out.push_str(&protos);
    out.push_str(&envs);
    out.push_str(&e.types.bodies);
    out.push_str("\n/* ---- program ---- */\n");
    out.push_str(&functions);
    out.push_str(&entry_fn);
    Ok(out)
}

impl Emitter<'_> {
    fn function(&mut self, c: CodeId) -> Result<String, Unsupported> {
        self.function_named(c, "")
    }

    /// C function `fn_N` + `suffix` of code `c`; with the suffix `_t`, its terms
    /// variant (`delta_fuse.rs`).
    fn function_named(&mut self, c: CodeId, suffix: &str) -> Result<String, Unsupported> {
        self.owned.clear();
        let code = self.m.code(c);
        self.on_stack = non_escaping_closures(self.m, &code.body, &self.read_only.held);
        self.loop_ranges = crate::analysis::loop_ranges(&code.body);
        self.unread_slices = crate::analysis::unread_slices(&code.body);
        self.stack_arrays =
            crate::analysis::stack_arrays(self.m, &code.body, &self.read_only, &self.on_stack);
        self.made_here.clear();
        let mut pushes = 0;
        fluxion_core::visit::for_each_binding(&code.body, &mut |b| match &b.rhs {
            Rhs::Closure(c, args) => {
                self.made_here.insert(b.var, (*c, args.clone()));
            }
            Rhs::Prim(Prim::DeltaPush, _) => pushes += 1,
            _ => {}
        });
        self.many_pushes = pushes > MANY_PUSHES;
        self.terms_of = if suffix == TERMS_SUFFIX {
            crate::delta_fuse::leaf_delta(self.m, c).map(|(v, _)| v)
        } else {
            None
        };
        self.loop_variant = crate::emitter::LoopVariant::of_suffix(suffix);
        let mut s = self.signature_named(c, suffix);
        s.push_str(" {\n");
        // Calls check the stack where they are made; a closure's code can also be
        // entered from a built-in's loop, so it checks on entry too — unless it enters
        // no code itself, so that no recursion passes through it (the innermost lambda
        // of a loop nest: GMM's `row[t] * xc[t]`). A terms variant is such a leaf.
        if self.closures.contains(&c) && suffix.is_empty() && enters_code(self.m, &code.body) {
            let _ = writeln!(s, "  FX_STACK_CHECK({});", span_args(code.span));
        }
        if code.kind == CodeKind::Lambda || !code.captures.is_empty() {
            for (i, v) in code.captures.iter().enumerate() {
                let t = self.types.c(self.m.var_ty(*v));
                let _ = writeln!(s, "  {t} {} = ((env_{}*)self_)->c{i};", var(*v), c.0);
            }
        } else {
            s.push_str("  (void)self_;\n");
        }
        let ret = self.types.c(&code.ret);
        let _ = writeln!(s, "  {ret} ret_;");
        let mut hoisted: Vec<VarId> = self.stack_arrays.hoisted.iter().copied().collect();
        hoisted.sort();
        for v in hoisted {
            let _ = writeln!(s, "  uint64_t {}_stk[FX_STACK_ARR_WORDS];", var(v));
        }
        self.body(&code.body, "ret_", &mut s, 1)?;
        if let Some(deltas) = self.loop_variant.take().and_then(|v| v.deltas()) {
            s.push_str(&crate::delta_loop::local_sweep(self.m, c, &deltas));
        }
        s.push_str("  return ret_;\n}\n\n");
        Ok(s)
    }

    fn entry(&mut self, entry: CodeId, params: &[Type], ret: &Type) -> String {
        let mut s = String::from(
            "int fx_entry(const uint64_t *in, size_t n_in, uint64_t **out, size_t *n_out, fx_error *err, const fx_config *cfg) {\n  FX_ENTRY_BEGIN(cfg, err)\n  fx_reader r = {in, n_in, 0};\n",
        );
        let mut args = Vec::new();
        for (i, p) in params.iter().enumerate() {
            let (t, d) = (self.types.c(p), self.types.helper(Helper::Decode, p));
            let _ = writeln!(s, "  {t} a{i} = {d}(&r);");
            args.push(format!("a{i}"));
        }
        let (rt, enc) = (self.types.c(ret), self.types.helper(Helper::Encode, ret));
        let mut call = String::from("NULL");
        for a in &args {
            call.push_str(", ");
            call.push_str(a);
        }
        // The function runs as often as `cfg` asks, on the arguments decoded once; each
        // run but the last releases its result and starts the next as a fresh call.
        let _ = writeln!(
            s,
            "  {rt} res;\n  for (uint64_t run = 0;; run++) {{\n    uint64_t t0 = fx_now_ns();\n    res = fn_{}({call});\n    if (fx_run_done(cfg, run, fx_now_ns() - t0)) break;\n    {}\n    fx_run_again();\n  }}",
            entry.0,
            self.types.dec(ret, "res")
        );
        let _ = writeln!(s, "  {enc}(&fx_out, res);");
        let _ = writeln!(s, "  {}", self.types.dec(ret, "res"));
        for (i, p) in params.iter().enumerate() {
            let _ = writeln!(s, "  {}", self.types.dec(p, &format!("a{i}")));
        }
        s.push_str("  fx_later_drain();\n  fx_pool_clear();\n  *out = fx_out.words;\n  *n_out = fx_out.len;\n  fx_out = (fx_writer){0};\n  return 0;\n}\n");
        s
    }

    fn body(
        &mut self,
        b: &Body,
        dest: &str,
        s: &mut String,
        depth: usize,
    ) -> Result<(), Unsupported> {
        let pad = "  ".repeat(depth);
        self.owned.push(Vec::new());
        let mut k = 0;
        while k < b.bindings.len() {
            if self.reduction_of_map(b, k) {
                let (map, red) = (&b.bindings[k], &b.bindings[k + 1]);
                crate::prims::emit_reduction_of_map(self, map, red, s, &pad);
                k += 2;
                continue;
            }
            let known = |x: VarId| self.known.get(&x).copied();
            if let Some(fusion) =
                crate::delta_fuse::fusable(self.m, &known, &b.bindings, &b.result, k)
            {
                let (loop_, sum) = (&b.bindings[k], &b.bindings[k + 1]);
                crate::delta_fuse::emit(self, loop_, sum, &fusion, s, &pad);
                k += 2;
                continue;
            }
            let bind = &b.bindings[k];
            if let Some((code, rec)) = crate::delta_loop::map_node(self.m, &known, bind) {
                let text = crate::delta_loop::emit_map(self, bind, code, &rec, &pad);
                s.push_str(&text);
                self.owned.last_mut().expect("a block").push(bind.var);
                k += 1;
                continue;
            }
            let ty = self.m.var_ty(bind.var).clone();
            let owns = self.binding(bind.var, &ty, &bind.rhs, bind.span, s, depth)?;
            if owns && has_rc(&ty) {
                self.owned.last_mut().expect("a block").push(bind.var);
            }
            k += 1;
        }
        let mut owned = self.owned.pop().expect("a block");
        match b.result {
            Atom::Var(v) => {
                let _ = writeln!(s, "{pad}{dest} = {};", var(v));
                if let Some(pos) = owned.iter().position(|o| *o == v) {
                    owned.remove(pos);
                } else {
                    let ty = self.m.var_ty(v).clone();
                    let inc = self.types.inc(&ty, &var(v));
                    if !inc.is_empty() {
                        let _ = writeln!(s, "{pad}{inc}");
                    }
                }
            }
            ref a => {
                let _ = writeln!(s, "{pad}{dest} = {};", atom(a));
            }
        }
        for v in owned.iter().rev() {
            let ty = self.m.var_ty(*v).clone();
            let _ = writeln!(s, "{pad}{}", self.types.dec(&ty, &var(*v)));
        }
        Ok(())
    }

    /// Emits one binding; returns whether the variable owns its value.
    fn binding(
        &mut self,
        v: VarId,
        ty: &Type,
        rhs: &Rhs,
        span: Span,
        s: &mut String,
        depth: usize,
    ) -> Result<bool, Unsupported> {
        let pad = "  ".repeat(depth);
        let ct = self.types.c(ty);
        let name = var(v);
        let sp = span_args(span);
        match rhs {
            Rhs::Atom(a) => {
                if let Atom::Var(x) = a
                    && let Some(&c) = self.known.get(x)
                {
                    self.known.insert(v, c);
                }
                let _ = writeln!(s, "{pad}{ct} {name} = {};", atom(a));
                Ok(false)
            }
            Rhs::Tuple(args) => {
                let parts: Vec<String> = args.iter().map(atom).collect();
                let _ = writeln!(s, "{pad}{ct} {name} = {{{}}};", parts.join(", "));
                self.inc_atoms(args, s, &pad);
                Ok(true)
            }
            Rhs::Proj(a, i) => {
                let _ = writeln!(s, "{pad}{ct} {name} = {}.f{i};", atom(a));
                Ok(false)
            }
            Rhs::Array(args) => {
                let ety = match ty {
                    Type::Array(e) => (**e).clone(),
                    _ => Type::Unit,
                };
                let ce = self.types.c(&ety);
                let size = self.types.elem_size(&ety);
                let len = args.len().to_string();
                let new = self.new_array(s, &pad, v, &len, &size.to_string(), "an array", &sp);
                let _ = writeln!(s, "{pad}{ct} {name} = {new};");
                // (Literals are scalars: a tuple element is always a variable.)
                if args.len() > 8 && args.iter().all(|a| matches!(a, Atom::Lit(_))) {
                    // A literal array is static data copied in: one statement per
                    // element would take the C compiler minutes for 10^4 elements.
                    let items: Vec<String> = args.iter().map(atom).collect();
                    let _ = writeln!(
                        s,
                        "{pad}{{ static const {ce} lit[] = {{{}}}; memcpy(FX_DATA({name}, {ce}), lit, sizeof lit); }}",
                        items.join(", ")
                    );
                    return Ok(true);
                }
                for (i, a) in args.iter().enumerate() {
                    let put = self.types.set(&ety, &name, &i.to_string(), &atom(a));
                    let _ = writeln!(s, "{pad}{put}");
                }
                self.inc_atoms(args, s, &pad);
                Ok(true)
            }
            Rhs::Ctor(e, tag, args) => {
                let vs = self.types.variant_struct(*e, *tag);
                if args.is_empty() {
                    let _ = writeln!(s, "{pad}{ct} {name} = (fx_enum*)&{vs}_unit;");
                    return Ok(false);
                }
                let _ = writeln!(
                    s,
                    "{pad}{ct} {name} = (fx_enum*)fx_alloc(sizeof({vs}), {sp}); {name}->tag = {tag};"
                );
                for (j, a) in args.iter().enumerate() {
                    let _ = writeln!(s, "{pad}(({vs}*){name})->f{j} = {};", atom(a));
                }
                self.inc_atoms(args, s, &pad);
                Ok(true)
            }
            Rhs::Closure(c, args) if self.on_stack.contains(&v) => {
                self.known.insert(v, *c);
                let _ = writeln!(
                    s,
                    "{pad}env_{0} {name}_env; {name}_env.h.h.rc = -1; {name}_env.h.code = (void*)fn_{0}; {name}_env.h.drop = drop_{0};",
                    c.0
                );
                for (i, a) in args.iter().enumerate() {
                    let _ = writeln!(s, "{pad}{name}_env.c{i} = {};", atom(a));
                }
                let _ = writeln!(s, "{pad}{ct} {name} = (fx_clo*)&{name}_env;");
                Ok(false)
            }
            Rhs::Closure(c, args) => {
                self.known.insert(v, *c);
                let _ = writeln!(
                    s,
                    "{pad}{ct} {name} = (fx_clo*)fx_alloc(sizeof(env_{0}), {sp}); {name}->code = (void*)fn_{0}; {name}->drop = drop_{0};",
                    c.0
                );
                for (i, a) in args.iter().enumerate() {
                    let _ = writeln!(s, "{pad}((env_{}*){name})->c{i} = {};", c.0, atom(a));
                }
                self.inc_atoms(args, s, &pad);
                Ok(true)
            }
            Rhs::CallDirect(c, args) => {
                let _ = writeln!(s, "{pad}FX_CALL_CHECK({sp});");
                let mut call = format!("fn_{}(NULL", c.0);
                for a in args {
                    call.push_str(", ");
                    call.push_str(&atom(a));
                }
                call.push(')');
                let site = self.library_call_site(Some(*c), span);
                self.call_at_site(site, &format!("{ct} {name} = {call};"), &pad, s);
                Ok(true)
            }
            Rhs::Call(f, args) => {
                let _ = writeln!(s, "{pad}FX_CALL_CHECK({sp});");
                let args: Vec<String> = args.iter().map(atom).collect();
                let call = self.call(f, &args);
                let callee = match f {
                    Atom::Var(x) => self.known.get(x).copied(),
                    Atom::Lit(_) => None,
                };
                let site = self.library_call_site(callee, span);
                self.call_at_site(site, &format!("{ct} {name} = {call};"), &pad, s);
                Ok(true)
            }
            Rhs::If(c, t, e) => {
                let _ = writeln!(s, "{pad}{ct} {name};\n{pad}if ({}) {{", atom(c));
                self.body(t, &name, s, depth + 1)?;
                let _ = writeln!(s, "{pad}}} else {{");
                self.body(e, &name, s, depth + 1)?;
                let _ = writeln!(s, "{pad}}}");
                Ok(true)
            }
            Rhs::Match(a, arms, default) => {
                let Type::Enum(eid) = self.m.atom_ty(a) else {
                    return Err(Unsupported("a match on a non-enum".into()));
                };
                let scrut = atom(a);
                let _ = writeln!(s, "{pad}{ct} {name};\n{pad}switch ({scrut}->tag) {{");
                for arm in arms {
                    let vs = self.types.variant_struct(eid, arm.tag);
                    let _ = writeln!(s, "{pad}case {}: {{", arm.tag);
                    for (j, f) in arm.fields.iter().enumerate() {
                        let ft = self.types.c(self.m.var_ty(*f));
                        let _ = writeln!(s, "{pad}  {ft} {} = (({vs}*){scrut})->f{j};", var(*f));
                    }
                    self.body(&arm.body, &name, s, depth + 1)?;
                    let _ = writeln!(s, "{pad}  break;\n{pad}}}");
                }
                let _ = writeln!(s, "{pad}default: {{");
                match default {
                    Some(d) => self.body(d, &name, s, depth + 1)?,
                    None => {
                        // The interpreter names the constructor no arm matches.
                        let def = self.m.enum_def(eid);
                        let _ = writeln!(s, "{pad}  switch ({scrut}->tag) {{");
                        for (tag, v) in def.variants.iter().enumerate() {
                            if arms.iter().all(|a| a.tag as usize != tag) {
                                let _ = writeln!(
                                    s,
                                    "{pad}  case {tag}: fx_fail({sp}, \"non-exhaustive match: no arm matches `%s`\", \"{}\");",
                                    v.name.escape_default()
                                );
                            }
                        }
                        let _ = writeln!(
                            s,
                            "{pad}  }}\n{pad}  fx_fail({sp}, \"non-exhaustive match: no arm matches this value\");"
                        );
                    }
                }
                let _ = writeln!(s, "{pad}}}\n{pad}}}");
                Ok(true)
            }
            Rhs::Prim(p, args) if crate::delta_c::emits(*p) => {
                crate::delta_c::emit(self, *p, args, v, ty, span, s, &pad)
            }
            Rhs::Prim(p, args) => {
                // A built-in's loop calling a prelude function passed from the user's
                // code (`map2(dot, ..)` as written, not inlined): a fault inside it is
                // reported at the built-in's call, naming the function, as the
                // interpreter does.
                let site = self.function_operand_site(args, span);
                if site.is_none() {
                    return crate::prims::emit(self, *p, args, v, ty, span, s, &pad);
                }
                let mut text = String::new();
                let owns = crate::prims::emit(self, *p, args, v, ty, span, &mut text, &pad)?;
                self.call_at_site(site, text.trim(), &pad, s);
                Ok(owns)
            }
        }
    }

    /// Whether binding `k` of `b` is a `map` of scalars read only by the `minimum`,
    /// `maximum` or `argmax` bound next, outside a module that records on a tape and
    /// with no prelude function as its operand (whose faults name a call site):
    /// [`crate::prims::emit_reduction_of_map`] makes the pair one loop (kmeans' nearest
    /// centroid per point).
    fn reduction_of_map(&self, b: &Body, k: usize) -> bool {
        let (Some(map), Some(red)) = (b.bindings.get(k), b.bindings.get(k + 1)) else {
            return false;
        };
        let (Rhs::Prim(Prim::Map, margs), Rhs::Prim(p, rargs)) = (&map.rhs, &red.rhs) else {
            return false;
        };
        let scalars = matches!(
            self.m.var_ty(map.var),
            Type::Array(e) if matches!(**e, Type::Real | Type::Int)
        );
        matches!(p, Prim::Minimum | Prim::Maximum | Prim::Argmax)
            && rargs.as_slice() == [Atom::Var(map.var)]
            && scalars
            && !self.read_only.tape
            && self.function_operand_site(margs, map.span).is_none()
            && fluxion_core::visit::count_uses(b).get(&map.var) == Some(&1)
    }

    /// The site [`Emitter::library_call_site`] gives a primitive at `span` whose
    /// function operand is a prelude function known here.
    fn function_operand_site(&self, args: &[Atom], span: Span) -> Option<(String, Span)> {
        args.iter().find_map(|a| match a {
            Atom::Var(x) if matches!(self.m.var_ty(*x), Type::Fn(..)) => {
                self.library_call_site(self.known.get(x).copied(), span)
            }
            _ => None,
        })
    }
}
