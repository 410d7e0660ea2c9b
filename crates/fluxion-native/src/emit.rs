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

use fluxion_core::{Atom, Body, CodeId, CodeKind, Lit, Module, Prim, Rhs, Span, Type, VarId};

use crate::resolve::Translations;
use crate::types::{Helper, Types, has_rc};

/// Why a program cannot be compiled to C (it then runs in the interpreter).
#[derive(Debug, Clone, PartialEq)]
pub struct Unsupported(pub String);

/// The C translation unit of `entry` and every code it reaches.
pub fn emit_module(
    m: &Module,
    entry: CodeId,
    translations: &Translations,
) -> Result<String, Unsupported> {
    let Type::Fn(params, ret) = m.code_ty(entry) else {
        return Err(Unsupported("the entry is not a function".into()));
    };
    for t in params.iter().chain(std::iter::once(&*ret)) {
        if contains_fn(t, m) {
            return Err(Unsupported("the entry takes or returns a function".into()));
        }
    }
    // The codes the entry reaches, and the translations `%chad_of` may pick for the
    // closures among them (and what those reach), to a fixed point.
    let mut roots = vec![entry];
    let (codes, known, closures) = loop {
        let codes = reachable(m, &roots);
        let (known, mut closures) = closures_of(m, &codes);
        // `%chad_of` makes closures of the translations it picks, which may be picked
        // from in turn (a forward translation's delta translation).
        loop {
            let before = closures.len();
            let picked: Vec<CodeId> = translations
                .codes
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
        translations,
        owned: Vec::new(),
        on_stack: HashSet::new(),
        made_here: HashMap::new(),
        sites: 0,
        chad_of: Vec::new(),
        terms_variants: Vec::new(),
        terms_of: None,
        many_pushes: false,
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
    let entry_fn = e.entry(entry, &params, &ret);
    // `%chad_of` helpers (one may ask for another: a captured closure's type).
    let mut chad_of = String::new();
    let mut done = 0;
    while done < e.chad_of.len() {
        let (fty, d) = e.chad_of[done].clone();
        let _ = writeln!(
            protos,
            "static fx_clo *fx_of_{done}(fx_clo *f, uint32_t s0, uint32_t s1, uint32_t s2);"
        );
        chad_of.push_str(&e.chad_of_body(done, &fty, d));
        done += 1;
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

/// Whether a value of `t` can hold a function.
pub(crate) fn contains_fn(t: &Type, m: &Module) -> bool {
    fn go(t: &Type, m: &Module, seen: &mut HashSet<fluxion_core::EnumId>) -> bool {
        match t {
            Type::Fn(..) => true,
            Type::Tuple(ts) => ts.iter().any(|t| go(t, m, seen)),
            Type::Array(t) => go(t, m, seen),
            Type::Enum(e) => {
                seen.insert(*e)
                    && m.enum_def(*e)
                        .variants
                        .iter()
                        .any(|v| v.fields.iter().any(|t| go(t, m, seen)))
            }
            _ => false,
        }
    }
    go(t, m, &mut HashSet::new())
}

/// Over the bindings of `codes`: the code of every variable bound to a closure
/// (variables are bound once in a module, so this holds wherever the variable is used
/// — in a lambda that captured it too, whose calls of it are then direct), and the
/// codes some closure is made of.
pub(crate) fn closures_of(
    m: &Module,
    codes: &[CodeId],
) -> (HashMap<VarId, CodeId>, HashSet<CodeId>) {
    let (mut known, mut made) = (HashMap::new(), HashSet::new());
    for c in codes {
        fluxion_core::visit::for_each_binding(&m.code(*c).body, &mut |b| match &b.rhs {
            Rhs::Closure(c, _) => {
                known.insert(b.var, *c);
                made.insert(*c);
            }
            Rhs::Atom(Atom::Var(x)) => {
                if let Some(&c) = known.get(x) {
                    known.insert(b.var, c);
                }
            }
            _ => {}
        });
    }
    (known, made)
}

/// The closures of `body` that never escape it: used only as the function a call or a
/// higher-order built-in applies (never stored, returned, captured or passed on). Their
/// environments live on the C stack, where the C compiler can take them apart once it
/// inlines the (known) code.
fn non_escaping_closures(body: &Body) -> HashSet<VarId> {
    fn walk(body: &Body, made: &mut HashSet<VarId>, escaped: &mut HashSet<VarId>) {
        let escape = |a: &Atom, escaped: &mut HashSet<VarId>| {
            if let Atom::Var(v) = a {
                escaped.insert(*v);
            }
        };
        for b in &body.bindings {
            match &b.rhs {
                Rhs::Closure(_, args) => {
                    made.insert(b.var);
                    args.iter().for_each(|a| escape(a, escaped));
                }
                Rhs::Call(_, args) => args.iter().for_each(|a| escape(a, escaped)),
                Rhs::Prim(p, args) => {
                    let applied = match p {
                        Prim::Map | Prim::Map2 | Prim::Fold | Prim::Scan => Some(0),
                        Prim::Build | Prim::Sumbuild | Prim::Iterate => Some(1),
                        _ => None,
                    };
                    for (i, a) in args.iter().enumerate() {
                        if applied != Some(i) {
                            escape(a, escaped);
                        }
                    }
                }
                Rhs::If(c, t, e) => {
                    escape(c, escaped);
                    walk(t, made, escaped);
                    walk(e, made, escaped);
                }
                Rhs::Match(a, arms, d) => {
                    escape(a, escaped);
                    arms.iter().for_each(|arm| walk(&arm.body, made, escaped));
                    if let Some(d) = d {
                        walk(d, made, escaped);
                    }
                }
                Rhs::Atom(a) | Rhs::Proj(a, _) => escape(a, escaped),
                Rhs::CallDirect(_, args)
                | Rhs::Tuple(args)
                | Rhs::Array(args)
                | Rhs::Ctor(_, _, args) => args.iter().for_each(|a| escape(a, escaped)),
            }
        }
        escape(&body.result, escaped);
    }
    let (mut made, mut escaped) = (HashSet::new(), HashSet::new());
    walk(body, &mut made, &mut escaped);
    made.retain(|v| !escaped.contains(v));
    made
}

/// The codes `entry` reaches by calls and closures, in id order.
fn reachable(m: &Module, roots: &[CodeId]) -> Vec<CodeId> {
    let mut seen: HashSet<CodeId> = roots.iter().copied().collect();
    let mut stack = roots.to_vec();
    while let Some(c) = stack.pop() {
        fluxion_core::visit::for_each_code_ref(&m.code(c).body, &mut |d| {
            if seen.insert(d) {
                stack.push(d);
            }
        });
    }
    let mut codes: Vec<CodeId> = seen.into_iter().collect();
    codes.sort();
    codes
}

pub(crate) struct Emitter<'m> {
    m: &'m Module,
    types: Types<'m>,
    /// Codes some closure is made of (they need an environment struct).
    closures: HashSet<CodeId>,
    /// Variables bound to a closure of a known code (anywhere in the module).
    known: HashMap<VarId, CodeId>,
    /// Per open block, the variables it owns.
    owned: Vec<Vec<VarId>>,
    /// Closures of the current function whose environment is on the C stack.
    on_stack: HashSet<VarId>,
    /// The closures made in the function being emitted: code and captured atoms (for
    /// [`Emitter::index_hints`]).
    made_here: HashMap<VarId, (CodeId, Vec<Atom>)>,
    /// What `%chad_of` chooses among.
    translations: &'m Translations,
    /// Calls of prelude functions from the user's code so far (names their saved site).
    sites: usize,
    /// The `%chad_of` helpers asked for: (function type, direction), by index.
    chad_of: Vec<(Type, i64)>,
    /// Codes whose terms variant (`delta_fuse.rs`) a fused loop calls.
    terms_variants: Vec<CodeId>,
    /// In a terms variant, the `%delta` whose terms go into the sum's node.
    terms_of: Option<VarId>,
    /// Whether the function being emitted makes many tape nodes (long straight-line
    /// code): each is then an out-of-line call (`fx_tape_push1/2`), since hundreds of
    /// inlined room checks took GCC minutes at -O3.
    many_pushes: bool,
}

/// Tape nodes a function may make inline (`Emitter::many_pushes`): GMM's functions
/// make a few each.
const MANY_PUSHES: usize = 64;

/// The C name of a terms variant is its code's `fn_N` with this suffix.
const TERMS_SUFFIX: &str = "_t";

pub(crate) fn var(v: VarId) -> String {
    format!("v{}", v.0)
}

pub(crate) fn span_args(s: Span) -> String {
    format!("{}, {}, {}", s.source, s.start, s.end)
}

/// A real as an exact C literal.
pub fn real_lit(x: f64) -> String {
    if x.is_nan() {
        "NAN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "INFINITY".into()
        } else {
            "(-INFINITY)".into()
        }
    } else {
        format!("({x:e})")
    }
}

fn atom(a: &Atom) -> String {
    match a {
        Atom::Var(v) => var(*v),
        Atom::Lit(Lit::Real(x)) => real_lit(*x),
        Atom::Lit(Lit::Int(i)) if *i == i64::MIN => "INT64_MIN".into(),
        Atom::Lit(Lit::Int(i)) => format!("INT64_C({i})"),
        Atom::Lit(Lit::Bool(b)) => u8::from(*b).to_string(),
        Atom::Lit(Lit::Unit) => "0".into(),
    }
}

fn lit_int(a: &Atom) -> i64 {
    match a {
        Atom::Lit(Lit::Int(i)) => *i,
        _ => -1,
    }
}

impl<'m> Emitter<'m> {
    fn signature(&mut self, c: CodeId) -> String {
        self.signature_named(c, "")
    }

    /// The signature of `fn_N` followed by `suffix` (a variant of code `c`).
    fn signature_named(&mut self, c: CodeId, suffix: &str) -> String {
        let code = self.m.code(c);
        let ret = self.types.c(&code.ret);
        let mut s = format!("static {ret} fn_{}{suffix}(fx_clo *self_", c.0);
        for p in &code.params {
            let t = self.types.c(self.m.var_ty(*p));
            let _ = write!(s, ", {t} {}", var(*p));
        }
        s.push(')');
        s
    }

    /// The environment struct of `c`'s closures and the function that drops one.
    fn env(&mut self, c: CodeId) -> String {
        let code = self.m.code(c);
        let mut s = String::from("typedef struct { fx_clo h;");
        for (i, v) in code.captures.iter().enumerate() {
            let t = self.types.c(self.m.var_ty(*v));
            let _ = write!(s, " {t} c{i};");
        }
        let _ = writeln!(s, " }} env_{};", c.0);
        let _ = write!(
            s,
            "static void drop_{0}(fx_clo *c) {{ env_{0} *e = (env_{0}*)c; (void)e;",
            c.0
        );
        for (i, v) in code.captures.iter().enumerate() {
            let ty = self.m.var_ty(*v).clone();
            let _ = write!(s, " {}", self.types.dec(&ty, &format!("e->c{i}")));
        }
        s.push_str(" }\n");
        s
    }

    fn function(&mut self, c: CodeId) -> Result<String, Unsupported> {
        self.function_named(c, "")
    }

    /// C function `fn_N` + `suffix` of code `c`; with the suffix `_t`, its terms
    /// variant (`delta_fuse.rs`).
    fn function_named(&mut self, c: CodeId, suffix: &str) -> Result<String, Unsupported> {
        self.owned.clear();
        let code = self.m.code(c);
        self.on_stack = non_escaping_closures(&code.body);
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
        self.body(&code.body, "ret_", &mut s, 1)?;
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
        let _ = writeln!(s, "  {rt} res = fn_{}({call});", entry.0);
        let _ = writeln!(s, "  fx_writer w = {{0}};\n  {enc}(&w, res);");
        let _ = writeln!(s, "  {}", self.types.dec(ret, "res"));
        for (i, p) in params.iter().enumerate() {
            let _ = writeln!(s, "  {}", self.types.dec(p, &format!("a{i}")));
        }
        s.push_str("  fx_later_drain();\n  fx_pool_clear();\n  *out = w.words;\n  *n_out = w.len;\n  return 0;\n}\n");
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
                let _ = writeln!(
                    s,
                    "{pad}{ct} {name} = fx_arr_new({}, {size}, \"an array\", {sp});",
                    args.len()
                );
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
            Rhs::Prim(p, args) => crate::prims::emit(self, *p, args, v, ty, span, s, &pad),
        }
    }

    fn inc_atoms(&mut self, args: &[Atom], s: &mut String, pad: &str) {
        for a in args {
            if let Atom::Var(x) = a {
                let ty = self.m.var_ty(*x).clone();
                let inc = self.types.inc(&ty, &var(*x));
                if !inc.is_empty() {
                    let _ = writeln!(s, "{pad}{inc}");
                }
            }
        }
    }

    /// The prelude function a call at `span` of code `callee` enters from the user's
    /// code, if it does: a fault inside it is reported at this call, naming it, as
    /// the interpreter's `attribute_to_caller` does (calls of closures whose code is
    /// not known here are not tracked: a fault there keeps the prelude's location).
    /// A helper code the AD layers generate (`push_forward_*`, `vjp_by_push_forward_*`:
    /// no source span) is not the user's to know: a fault inside it is reported at the
    /// call without a name, as the interpreter reports it at the operator.
    fn library_call_site(&self, callee: Option<CodeId>, span: Span) -> Option<(String, Span)> {
        let callee = callee?;
        let library = fluxion_core::PRELUDE_SOURCE;
        let at = self.m.code(callee).span;
        if span.source == library || at.source != library {
            return None;
        }
        let generated = at == Span::default();
        let name = if generated {
            String::new()
        } else {
            self.m.source_name(callee).to_string()
        };
        Some((name, span))
    }

    /// `stmt` (a call), with the innermost user call of a prelude function set to this
    /// one around it when `site` names the function.
    fn call_at_site(
        &mut self,
        site: Option<(String, Span)>,
        stmt: &str,
        pad: &str,
        s: &mut String,
    ) {
        let Some((fname, span)) = site else {
            let _ = writeln!(s, "{pad}{stmt}");
            return;
        };
        self.sites += 1;
        let saved = format!("site_{}", self.sites);
        let _ = writeln!(
            s,
            "{pad}fx_site_t {saved} = fx_site; fx_site.name = \"{}\"; fx_site.src = {}; fx_site.start = {}; fx_site.end = {};",
            fname.escape_default(),
            span.source,
            span.start,
            span.end
        );
        let _ = writeln!(s, "{pad}{stmt}");
        let _ = writeln!(s, "{pad}fx_site = {saved};");
    }

    /// A call of closure `f` (a direct call when its code is known).
    fn call(&mut self, f: &Atom, args: &[String]) -> String {
        let fname = atom(f);
        let mut rest = String::new();
        for a in args {
            rest.push_str(", ");
            rest.push_str(a);
        }
        if let Atom::Var(x) = f
            && let Some(c) = self.known.get(x)
        {
            return format!("fn_{}({fname}{rest})", c.0);
        }
        let Type::Fn(ps, r) = self.m.atom_ty(f) else {
            return "0".into();
        };
        let mut cast = format!("{} (*)(fx_clo*", self.types.c(&r));
        for p in &ps {
            cast.push_str(", ");
            cast.push_str(&self.types.c(p));
        }
        cast.push(')');
        format!("(({cast}){fname}->code)({fname}{rest})")
    }
}

/// What the primitive emitter needs from the function emitter.
impl<'m> Emitter<'m> {
    pub(crate) fn module(&self) -> &'m Module {
        self.m
    }
    pub(crate) fn types(&mut self) -> &mut Types<'m> {
        &mut self.types
    }
    pub(crate) fn call_closure(&mut self, f: &Atom, args: &[String]) -> String {
        self.call(f, args)
    }

    /// For a loop `for i in 0..count` calling the closure `f` made here: the arrays it
    /// indexes by `i` (`xs[i]`, `xs` captured). Returns the condition under which no
    /// such index is out of range (`count <= length` of each) and the facts that hold
    /// in the loop then, as `FX_ASSUME`s: a loop emitted twice, with them where the
    /// condition holds and as written elsewhere, keeps every check's error exactly and
    /// lets the C compiler drop the checks from the fast copy (GMM's triangle loop).
    pub(crate) fn index_hints(&self, f: &Atom, count: &str) -> Option<(String, String)> {
        let Atom::Var(v) = f else { return None };
        let (code, captured) = self.made_here.get(v)?;
        let code = self.m.code(*code);
        let &[i] = code.params.as_slice() else {
            return None;
        };
        let mut arrays: Vec<String> = Vec::new();
        fluxion_core::visit::for_each_binding(&code.body, &mut |b| {
            if let Rhs::Prim(Prim::Index, args) = &b.rhs
                && args[1] == Atom::Var(i)
                && let Atom::Var(xs) = args[0]
                && let Some(k) = code.captures.iter().position(|c| *c == xs)
                && let Atom::Var(_) = captured[k]
            {
                let outside = atom(&captured[k]);
                if !arrays.contains(&outside) {
                    arrays.push(outside);
                }
            }
        });
        if arrays.is_empty() {
            return None;
        }
        let cond = arrays
            .iter()
            .map(|a| format!("{count} <= FX_LEN({a})"))
            .collect::<Vec<_>>()
            .join(" && ");
        let assume = arrays
            .iter()
            .map(|a| format!("FX_ASSUME((uint64_t)i < (uint64_t)FX_LEN({a}));"))
            .collect::<Vec<_>>()
            .join(" ");
        Some((cond, assume))
    }
    /// What a closure made in the function being emitted captured, in its code's
    /// `captures` order.
    pub(crate) fn captured_by(&self, f: &Atom) -> Option<&[Atom]> {
        let Atom::Var(v) = f else { return None };
        self.made_here
            .get(v)
            .map(|(_, captured)| captured.as_slice())
    }
    pub(crate) fn atom(&self, a: &Atom) -> String {
        atom(a)
    }
    pub(crate) fn lit_int(&self, a: &Atom) -> i64 {
        lit_int(a)
    }
    /// The name of code `c`'s terms variant, emitted with the module.
    pub(crate) fn terms_variant(&mut self, c: CodeId) -> String {
        if !self.terms_variants.contains(&c) {
            self.terms_variants.push(c);
        }
        format!("fn_{}{TERMS_SUFFIX}", c.0)
    }
    /// In a terms variant, the `%delta` whose terms go into the sum's node.
    pub(crate) fn terms_of(&self) -> Option<VarId> {
        self.terms_of
    }
    /// Whether the function being emitted makes its tape nodes out of line.
    pub(crate) fn many_pushes(&self) -> bool {
        self.many_pushes
    }
    /// The C function that is `%chad_of(f, d)` for closures of type `fty`.
    pub(crate) fn chad_of_helper(&mut self, fty: &Type, d: i64) -> String {
        let key = (fty.clone(), d);
        let i = match self.chad_of.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                self.chad_of.push(key);
                self.chad_of.len() - 1
            }
        };
        format!("fx_of_{i}")
    }

    /// `%chad_of(f, d)` for closures of type `fty`, helper `i`: by `f`'s code, a new
    /// closure of its translation with the captures as the translation needs them —
    /// the same values (CHAD: `Dr(A)1 = A`), every real with the zero delta (delta) or
    /// the zero tangent (forward layer), a captured closure translated the same way.
    /// A closure of a code without a translation here (one that cannot be translated
    /// ahead of time, or the top of a tower of translations, `resolve::drop_unfinished`)
    /// hands the run to the interpreter (`fx_miss`): never a wrong answer.
    fn chad_of_body(&mut self, i: usize, fty: &Type, d: i64) -> String {
        let m = self.m;
        let choices = self.translations_of(fty, d);
        let sp = "s0, s1, s2";
        let mut s = format!(
            "static fx_clo *fx_of_{i}(fx_clo *f, uint32_t s0, uint32_t s1, uint32_t s2) {{\n"
        );
        for (c, t) in choices {
            let (c, t) = (c.0, t.0);
            let _ = write!(
                s,
                "  if (f->code == (void*)fn_{c}) {{\n    env_{t} *n = (env_{t}*)fx_alloc(sizeof(env_{t}), {sp}); n->h.code = (void*)fn_{t}; n->h.drop = drop_{t};\n"
            );
            let captures = m.code(CodeId(c)).captures.clone();
            let translated = m.code(CodeId(t)).captures.clone();
            for (j, (cv, tv)) in captures.iter().zip(&translated).enumerate() {
                let (cty, tty) = (m.var_ty(*cv).clone(), m.var_ty(*tv).clone());
                let old = format!("((env_{c}*)f)->c{j}");
                let field = format!("n->c{j}");
                let value = match (d, &cty) {
                    (2 | 3, Type::Fn(..)) => {
                        let h = self.chad_of_helper(&cty, d);
                        format!("{h}({old}, {sp})")
                    }
                    (2, _) => crate::delta_c::rebuild(
                        &mut self.types,
                        crate::types::Helper2::DeltaLift,
                        &cty,
                        &tty,
                        &old,
                        sp,
                    ),
                    (3, _) => crate::delta_c::rebuild(
                        &mut self.types,
                        crate::types::Helper2::FwdLift,
                        &cty,
                        &tty,
                        &old,
                        sp,
                    ),
                    _ => {
                        let inc = self.types.inc(&cty, &field);
                        format!("{old}; {inc}")
                    }
                };
                let _ = writeln!(s, "    {field} = {value};");
            }
            s.push_str("    return (fx_clo*)n;\n  }\n");
        }
        s.push_str("  fx_miss(s0, s1, s2);\n}\n");
        s
    }

    /// `%chad_of(f, d)`'s choices for a closure of type `fty`: (code, its translation),
    /// for the codes some closure of this program is made of.
    pub(crate) fn translations_of(&mut self, fty: &Type, direction: i64) -> Vec<(CodeId, CodeId)> {
        let mut out: Vec<(CodeId, CodeId)> = self
            .translations
            .codes
            .iter()
            .filter(|((c, d), _)| {
                *d == direction && self.closures.contains(c) && self.m.code_ty(*c) == *fty
            })
            .map(|((c, _), t)| (*c, *t))
            .collect();
        out.sort();
        out
    }
}

/// Whether running `body` may enter code: a call, or a primitive given a function (a
/// higher-order built-in's loop, an operator). A body that does not is the end of any
/// chain of calls, so no recursion runs through it.
fn enters_code(m: &Module, body: &Body) -> bool {
    let mut enters = false;
    fluxion_core::visit::for_each_binding(body, &mut |b| {
        enters |= match &b.rhs {
            Rhs::Call(..) | Rhs::CallDirect(..) => true,
            Rhs::Prim(_, args) => args.iter().any(|a| matches!(m.atom_ty(a), Type::Fn(..))),
            _ => false,
        };
    });
    enters
}
