//! The state of the C emission and the services every emitter reads (`emit.rs` for
//! codes and bodies, `prims.rs` and `delta_c.rs` for primitives, `delta_fuse.rs` for
//! fused tape loops): names, signatures, environments, calls, the `%chad_of` helpers.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use fluxion_core::{Atom, CodeId, Lit, Module, Prim, Rhs, Span, Type, VarId};

use crate::types::Types;

/// Why a program cannot be compiled to C (it then runs in the interpreter).
#[derive(Debug, Clone, PartialEq)]
pub struct Unsupported(pub String);

pub(crate) struct Emitter<'m> {
    pub(crate) m: &'m Module,
    pub(crate) types: Types<'m>,
    /// Codes some closure is made of (they need an environment struct).
    pub(crate) closures: HashSet<CodeId>,
    /// Variables bound to a closure of a known code (anywhere in the module).
    pub(crate) known: HashMap<VarId, CodeId>,
    /// Per open block, the variables it owns.
    pub(crate) owned: Vec<Vec<VarId>>,
    /// Closures of the current function whose environment is on the C stack.
    pub(crate) on_stack: HashSet<VarId>,
    /// The closures made in the function being emitted: code and captured atoms (for
    /// [`Emitter::index_hints`]).
    pub(crate) made_here: HashMap<VarId, (CodeId, Vec<Atom>)>,
    /// Calls of prelude functions from the user's code so far (names their saved site).
    pub(crate) sites: usize,
    /// Codes whose terms variant (`delta_fuse.rs`) a fused loop calls.
    pub(crate) terms_variants: Vec<CodeId>,
    /// In a terms variant, the `%delta` whose terms go into the sum's node.
    pub(crate) terms_of: Option<VarId>,
    /// Codes whose primal and apply variants a loop node calls (`delta_loop.rs`).
    pub(crate) loop_variants: Vec<CodeId>,
    /// In a loop node's variant, which one; in an apply variant, the `%delta`s met so
    /// far and their terms.
    pub(crate) loop_variant: Option<LoopVariant>,
    /// The loop nodes' sweep functions emitted so far, and their prototypes.
    pub(crate) loop_sweeps: (String, String),
    /// Whether the function being emitted makes many tape nodes (long straight-line
    /// code): each is then an out-of-line call (`fx_tape_push1/2`), since hundreds of
    /// inlined room checks took GCC minutes at -O3.
    pub(crate) many_pushes: bool,
    /// In the function being emitted, the `range(n)` arrays never made: their variable
    /// holds `n`, and the `fold`s and `scan`s over them count (`analysis::loop_ranges`).
    pub(crate) loop_ranges: HashSet<VarId>,
    /// In the function being emitted, the `slice`s nothing reads: their check only
    /// (`analysis::unread_slices`).
    pub(crate) unread_slices: HashSet<VarId>,
    /// The arrays of scalars their code only reads (`analysis::read_only_inputs`;
    /// `None` in a module that records on a tape).
    pub(crate) read_only: crate::analysis::ReadOnly,
    /// In the function being emitted, the arrays made on the C stack when small
    /// (`analysis::stack_arrays`).
    pub(crate) stack_arrays: crate::analysis::StackArrays,
    /// The tapes a `%delta_rows` sweeps (their `%delta_open`'s variable): opened plain,
    /// no loop node on them, so that `fx_tape_columns` can sweep them forward.
    pub(crate) rows_tapes: HashSet<VarId>,
}

/// Tape nodes a function may make inline (`Emitter::many_pushes`): GMM's functions
/// make a few each.
pub(crate) const MANY_PUSHES: usize = 64;

/// The C name of a terms variant is its code's `fn_N` with this suffix.
pub(crate) const TERMS_SUFFIX: &str = "_t";
/// The suffixes of a loop node's element function's variants (`delta_loop.rs`): the
/// primal one (no tape) and the one that sweeps the element's nodes.
pub(crate) const PRIMAL_SUFFIX: &str = "_p";
pub(crate) const APPLY_SUFFIX: &str = "_a";

/// An element's `%delta`s and inner sums, in order: each one's variable and how its
/// local adjoint is swept.
pub(crate) type Deltas = Vec<(VarId, LocalDelta)>;

/// How an element's apply variant sweeps one of its local adjoints (`delta_loop.rs`).
pub(crate) enum LocalDelta {
    /// A `%delta`'s terms: the coefficient as C, the id as an atom.
    Terms(Vec<(String, Atom)>),
    /// An inner sum's elements: C sweeping them from the adjoint named `A`.
    Loop(String),
}

/// Which variant of a loop node's element function is being emitted (`delta_loop.rs`).
pub(crate) enum LoopVariant {
    Primal,
    /// The `%delta`s met so far.
    Apply(Deltas),
}

impl LoopVariant {
    pub(crate) fn of_suffix(suffix: &str) -> Option<LoopVariant> {
        match suffix {
            PRIMAL_SUFFIX => Some(LoopVariant::Primal),
            APPLY_SUFFIX => Some(LoopVariant::Apply(Vec::new())),
            _ => None,
        }
    }

    pub(crate) fn deltas(self) -> Option<Deltas> {
        match self {
            LoopVariant::Apply(d) => Some(d),
            LoopVariant::Primal => None,
        }
    }
}

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

pub(crate) fn atom(a: &Atom) -> String {
    match a {
        Atom::Var(v) => var(*v),
        Atom::Lit(Lit::Real(x)) => real_lit(*x),
        Atom::Lit(Lit::Int(i)) if *i == i64::MIN => "INT64_MIN".into(),
        Atom::Lit(Lit::Int(i)) => format!("INT64_C({i})"),
        Atom::Lit(Lit::Bool(b)) => u8::from(*b).to_string(),
        Atom::Lit(Lit::Unit) => "0".into(),
    }
}

pub(crate) fn lit_int(a: &Atom) -> i64 {
    match a {
        Atom::Lit(Lit::Int(i)) => *i,
        _ => -1,
    }
}

impl<'m> Emitter<'m> {
    /// A new array `v` of `len` elements of `size` bytes, as a C expression: on the C
    /// stack where small and only read (`analysis::stack_arrays`), else from the heap.
    /// The stack buffer's declaration goes into `s` first, unless it is hoisted to the
    /// function's top.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new_array(
        &self,
        s: &mut String,
        pad: &str,
        v: VarId,
        len: &str,
        size: &str,
        what: &str,
        sp: &str,
    ) -> String {
        let heap = format!("fx_arr_new({len}, {size}, \"{what}\", {sp})");
        if !self.stack_arrays.vars.contains(&v) {
            return heap;
        }
        let name = var(v);
        if !self.stack_arrays.hoisted.contains(&v) {
            let _ = writeln!(s, "{pad}uint64_t {name}_stk[FX_STACK_ARR_WORDS];");
        }
        format!(
            "({len}) <= FX_STACK_ARR_BYTES / {size} ? fx_stack_arr({name}_stk, {len}, \"{what}\", {sp}) : {heap}"
        )
    }

    pub(crate) fn signature(&mut self, c: CodeId) -> String {
        self.signature_named(c, "")
    }

    /// The signature of `fn_N` followed by `suffix` (a variant of code `c`).
    pub(crate) fn signature_named(&mut self, c: CodeId, suffix: &str) -> String {
        let code = self.m.code(c);
        let ret = self.types.c(&code.ret);
        // `inline` raises GCC's inlining limit: a loop's element function, with its
        // bounds and overflow checks' failure calls, is otherwise too big to inline
        // at -O3 and stays a call per element (llsq's `sumbuild`: 2.3x the time).
        // Not for a code that refers to itself (GCC would unroll the recursion).
        let mut recursive = false;
        fluxion_core::visit::for_each_code_ref(&code.body, &mut |d| recursive |= d == c);
        // An apply variant is always inlined into its loop node's sweep, which calls it
        // with a constant `pre_` (two loops: the preaccumulating one and the other).
        let inline = if recursive {
            ""
        } else if suffix == APPLY_SUFFIX {
            "inline __attribute__((always_inline)) "
        } else {
            "inline "
        };
        let mut s = format!("static {inline}{ret} fn_{}{suffix}(fx_clo *self_", c.0);
        for p in &code.params {
            let t = self.types.c(self.m.var_ty(*p));
            let _ = write!(s, ", {t} {}", var(*p));
        }
        if suffix == APPLY_SUFFIX {
            s.push_str(", double A_, double *adj_, int64_t mark_, int pre_");
        }
        s.push(')');
        s
    }

    /// The environment struct of `c`'s closures and the function that drops one.
    pub(crate) fn env(&mut self, c: CodeId) -> String {
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

    pub(crate) fn inc_atoms(&mut self, args: &[Atom], s: &mut String, pad: &str) {
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
    pub(crate) fn library_call_site(
        &self,
        callee: Option<CodeId>,
        span: Span,
    ) -> Option<(String, Span)> {
        let callee = callee?;
        let library = fluxion_core::PRELUDE_SOURCE;
        let at = self.m.code(callee).span;
        if span.source == library || at.source != library {
            return None;
        }
        // Generated code has no name to give; nor has a call inside a prelude
        // function's inlined copy, whose site names the function (`Module::attribute`).
        let generated = at == Span::default() || span.is_inline_site();
        let name = if generated {
            String::new()
        } else {
            self.m.source_name(callee).to_string()
        };
        Some((name, span))
    }

    /// `stmt` (a call), with the innermost user call of a prelude function set to this
    /// one around it when `site` names the function.
    pub(crate) fn call_at_site(
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
    pub(crate) fn call(&mut self, f: &Atom, args: &[String]) -> String {
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
        self.types.chad_of_helper(fty, d)
    }

    /// `%chad_of(f, d)` for closures of type `fty`, helper `i`: by `f`'s code, a new
    /// closure of its translation with the captures as the translation needs them —
    /// the same values (CHAD: `Dr(A)1 = A`), every real with the zero delta (delta),
    /// the zero tangent (forward layer) or the constant series (Taylor) or, in direction 4 (a delta translation's
    /// closure translated again), every outer pair with the zero inner delta as
    /// `%delta2_lift` (its candidates capture no functions), a captured closure translated the same way
    /// (inside a tuple, array or enum too: the lifting walks call these helpers).
    /// A closure of a code without a translation here (one that cannot be translated
    /// ahead of time, or the top of a tower of translations: fluxion-ad's `ahead`)
    /// hands the run to the interpreter (`fx_miss`): never a wrong answer.
    pub(crate) fn chad_of_body(&mut self, i: usize, fty: &Type, d: i64) -> String {
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
                // Delta, dual numbers and Taylor lift the captures (a captured closure
                // by its own `%chad_of`); CHAD keeps them; the tape of tapes lifts
                // them to the second tape.
                let lift =
                    fluxion_core::prim::chad_of_layer(d).and_then(crate::types::Helper2::lift_into);
                let value = match (lift, &cty) {
                    (Some(_), Type::Fn(..)) => {
                        let h = self.chad_of_helper(&cty, d);
                        format!("{h}({old}, {sp})")
                    }
                    (Some(h), _) => {
                        crate::types::delta::rebuild(&mut self.types, h, &cty, &tty, &old, sp)
                    }
                    (None, _) if d == fluxion_core::prim::CHAD_OF_TWICE => {
                        crate::types::delta::rebuild(
                            &mut self.types,
                            crate::types::Helper2::Delta2Lift,
                            &cty,
                            &tty,
                            &old,
                            sp,
                        )
                    }
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
            .m
            .chad_of
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

/// The C pieces a primitive's binding `v: ty = p(args)` is written with.
pub(crate) struct Operands {
    /// The C type of `v`.
    pub ct: String,
    /// `v`'s C name.
    pub name: String,
    /// The span as the runtime's three arguments.
    pub sp: String,
    /// The arguments as C expressions.
    pub a: Vec<String>,
}

impl Operands {
    pub(crate) fn of(
        e: &mut Emitter<'_>,
        args: &[Atom],
        v: VarId,
        ty: &Type,
        span: Span,
    ) -> Operands {
        Operands {
            ct: e.types().c(ty),
            name: format!("v{}", v.0),
            sp: span_args(span),
            a: args.iter().map(|x| e.atom(x)).collect(),
        }
    }
}

/// A loop over `i`, from `body(assumptions)`: with [`Emitter::index_hints`], once
/// with the assumptions where their condition holds and once as written elsewhere.
pub(crate) fn versioned(hints: Option<(String, String)>, body: impl Fn(&str) -> String) -> String {
    match hints {
        Some((cond, assume)) => format!(
            "if ({cond}) {{ {} }} else {{ {} }}",
            body(&format!("{assume} ")),
            body("")
        ),
        None => body(""),
    }
}
