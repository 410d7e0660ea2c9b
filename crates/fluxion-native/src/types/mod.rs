//! How Core types are represented in C, and the per-type helper functions the
//! generated code calls (reference counting, equality, sums, the tangent algebra, the
//! entry ABI's encoding).
//!
//! `Real` → `double`, `Int` → `int64_t`, `Bool`/`()` → `uint8_t`; a tuple → a C struct
//! held by value (`tup_N`, so a tuple of scalars is never allocated and the C compiler
//! keeps its fields in registers); an array → `fx_arr*` (header, length, elements of
//! the element's C type, contiguous; an array of tuples as a struct of arrays: each
//! leaf of the tuple in a region of its own, `soa_get_N`/`soa_set_N`); an enum →
//! `fx_enum*` (one struct per
//! constructor, nullary constructors static); a function → `fx_clo*` (code pointer,
//! environment drop, captures). Helpers are generated once per type, on request, with
//! prototypes first so that helpers of recursive enums can call each other.

pub(crate) mod delta;

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write;

use fluxion_core::{EnumId, Module, Type, TypeMap};

/// A helper function generated per type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Helper {
    /// Adds a reference to every heap object in a value.
    Inc,
    /// Drops a reference to every heap object in a value (freeing what dies).
    Dec,
    /// Structural equality (`==`).
    Eq,
    /// `+` of `sum`/`sumbuild` (arrays of different lengths are an error).
    Add,
    /// `%tplus`: tangent addition, with NULL/-0.0 as its unit.
    TanPlus,
    /// The symbolic zero of a tangent type.
    Zero,
    /// Reads a value from the entry's argument stream.
    Decode,
    /// Writes a value to the entry's result stream.
    Encode,
    /// The lazy array cotangents of an array type: `onehot_N`, `lembed_N`, `lsum_N`
    /// (O(1) constructors) and what makes them dense (`force_N`, `accum_N`).
    Lazy,
    /// Reads and writes of one element of an array of a tuple type, laid out as a
    /// struct of arrays (`soa_get_N`, `soa_set_N`; see [`Types::get`]).
    Soa,
}

/// A two-type helper: `(point type, tangent type)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Helper2 {
    /// `%tdense(x, t)`.
    Dense,
    /// `%check_tangent(x, t)`: same constructors and lengths.
    Check,
    /// `%check_direction(x, t)`: the same, worded for a direction and its point.
    CheckDirection,
    /// The delta walks of `delta_c.rs`: `A` → `Δ(A)` with zero deltas / fresh inputs,
    /// `Δ(B)` → `B`, seeding `(Δ(B), T(B))`, and `Δ(A)` → `T(A)` from the adjoints.
    DeltaLift,
    DeltaInputs,
    DeltaPrimal,
    DeltaSeed,
    DeltaRead,
    /// The same walks one layer up, for the second tape of reverse over reverse:
    /// `Δₒ(A)` → `Δₒ(Δᵢ(A))` with zero / fresh inner deltas, back, seeding
    /// `(Δₒ(Δᵢ(B)), Δₒ(T(B)))`, and `Δₒ(Δᵢ(A))` → `Δₒ(T(A))` from the adjoints.
    Delta2Lift,
    Delta2Inputs,
    Delta2Primal,
    Delta2Seed,
    Delta2Read,
    /// `A` → `Tf(A)` with the zero tangent on every real (a closure's capture lifted
    /// into the forward layer at run time, `%chad_of(f, 3)`; the same walk).
    FwdLift,
    /// `A` → `D(A)` with every real as `[x, 0, …, 0]` (a jet's C − 1 zeros: a capture
    /// lifted into Taylor mode or a jet layer at run time, `%chad_of(f, CHAD_OF_TAYLOR +
    /// …)`).
    TaylorLift(fluxion_core::Jet),
}

impl Helper2 {
    /// The walk lifting a closure's captures into `layer` where `%chad_of` picks the
    /// closure's translation (delta, dual numbers, Taylor); `None` where the captures
    /// are kept (CHAD's first-order captures are the same values).
    pub(crate) fn lift_into(layer: TypeMap) -> Option<Helper2> {
        match layer {
            TypeMap::Delta => Some(Helper2::DeltaLift),
            TypeMap::Fwd => Some(Helper2::FwdLift),
            TypeMap::Taylor(k) => Some(Helper2::TaylorLift(k)),
            _ => None,
        }
    }

    /// The layer a lifting walk lifts into: the inverse of [`Helper2::lift_into`].
    pub(crate) fn lifted_layer(self) -> Option<TypeMap> {
        match self {
            Helper2::DeltaLift => Some(TypeMap::Delta),
            Helper2::FwdLift => Some(TypeMap::Fwd),
            Helper2::TaylorLift(k) => Some(TypeMap::Taylor(k)),
            _ => None,
        }
    }
}

/// The types and helpers of one translation unit.
pub struct Types<'m> {
    m: &'m Module,
    ids: HashMap<Type, usize>,
    /// Struct definitions, in dependency order.
    pub defs: String,
    /// Prototypes of every helper.
    pub protos: String,
    /// Helper bodies.
    pub bodies: String,
    requested: HashSet<(Helper, Type)>,
    requested2: HashSet<(Helper2, Type, Type)>,
    queue: VecDeque<Request>,
    defined_enums: HashSet<EnumId>,
    /// Tuple types whose struct is in `defs` (by [`Types::id`]).
    defined_tuples: HashSet<usize>,
    /// The `%chad_of` helpers asked for, `fx_of_<index>`: (function type, direction).
    /// The emitter writes their bodies; the lifting walks call them for a function
    /// inside a captured tuple, array or enum.
    pub chad_of: Vec<(Type, i64)>,
}

enum Request {
    One(Helper, Type),
    Two(Helper2, Type, Type),
}

/// Whether values of `ty` hold references.
pub fn has_rc(ty: &Type) -> bool {
    match ty {
        Type::Array(_) | Type::Enum(_) | Type::Fn(..) => true,
        Type::Tuple(ts) => ts.iter().any(has_rc),
        _ => false,
    }
}

/// Whether a sum of `ty` values contains an array (such sums start from their first
/// term, as in the interpreter).
pub fn has_array(ty: &Type) -> bool {
    match ty {
        Type::Array(_) => true,
        Type::Tuple(ts) => ts.iter().any(has_array),
        _ => false,
    }
}

impl<'m> Types<'m> {
    pub fn new(m: &'m Module) -> Types<'m> {
        Types {
            m,
            ids: HashMap::new(),
            defs: String::new(),
            protos: String::new(),
            bodies: String::new(),
            requested: HashSet::new(),
            requested2: HashSet::new(),
            queue: VecDeque::new(),
            defined_enums: HashSet::new(),
            defined_tuples: HashSet::new(),
            chad_of: Vec::new(),
        }
    }

    /// The module whose types these are.
    pub fn module(&self) -> &'m Module {
        self.m
    }

    /// The C type of `ty`, defining its struct (and those it holds) on first use.
    pub fn c(&mut self, ty: &Type) -> String {
        match ty {
            Type::Real => "fx_real".into(),
            Type::Int => "fx_int".into(),
            Type::Bool => "fx_bool".into(),
            Type::Unit => "fx_unit".into(),
            Type::Array(_) => "fx_arr*".into(),
            Type::Fn(..) => "fx_clo*".into(),
            Type::Enum(e) => {
                self.define_enum(*e);
                "fx_enum*".into()
            }
            Type::Tuple(ts) => {
                let id = self.id(ty);
                let name = format!("tup_{id}");
                if !self.defined_tuples.contains(&id) {
                    let fields: Vec<String> = ts.iter().map(|t| self.c(t)).collect();
                    // A field's type may have defined this one (through an enum).
                    if !self.defined_tuples.insert(id) {
                        return name;
                    }
                    let mut def = String::from("typedef struct {");
                    for (i, f) in fields.iter().enumerate() {
                        let _ = write!(def, " {f} f{i};");
                    }
                    let _ = writeln!(def, " }} {name};");
                    self.defs.push_str(&def);
                }
                name
            }
        }
    }

    /// A number naming `ty` in helper names.
    pub fn id(&mut self, ty: &Type) -> usize {
        let n = self.ids.len();
        *self.ids.entry(ty.clone()).or_insert(n)
    }

    /// The name of constructor `tag`'s struct of enum `e`.
    pub fn variant_struct(&mut self, e: EnumId, tag: u32) -> String {
        self.define_enum(e);
        format!("e{}_{}", e.0, tag)
    }

    fn define_enum(&mut self, e: EnumId) {
        if !self.defined_enums.insert(e) {
            return;
        }
        let def = self.m.enum_def(e).clone();
        for (tag, v) in def.variants.iter().enumerate() {
            let fields: Vec<String> = v.fields.iter().map(|t| self.c(t)).collect();
            let mut s = String::from("typedef struct { fx_enum h;");
            for (i, f) in fields.iter().enumerate() {
                let _ = write!(s, " {f} f{i};");
            }
            let _ = writeln!(s, " }} e{}_{tag};", e.0);
            if fields.is_empty() {
                let _ = writeln!(
                    s,
                    "static e{e}_{tag} e{e}_{tag}_unit = {{{{{{-1, 0}}, {tag}}}}};",
                    e = e.0
                );
            }
            self.defs.push_str(&s);
        }
    }

    /// Whether any lazy array cotangent can be made (a `Helper::Lazy` was asked for):
    /// without one, every array is dense and reading one needs no check.
    pub(crate) fn makes_lazy_arrays(&self) -> bool {
        self.requested.iter().any(|(h, _)| *h == Helper::Lazy)
    }

    /// The name of helper `h` at `ty`, generated on first request.
    pub fn helper(&mut self, h: Helper, ty: &Type) -> String {
        let name = format!("{}_{}", helper_name(h), self.id(ty));
        if self.requested.insert((h, ty.clone())) {
            let cty = self.c(ty);
            let proto = match h {
                Helper::Inc | Helper::Dec => format!("static void {name}({cty} x)"),
                Helper::Eq => format!("static int {name}({cty} a, {cty} b)"),
                Helper::Add | Helper::TanPlus => format!(
                    "static {cty} {name}({cty} a, {cty} b, uint32_t s0, uint32_t s1, uint32_t s2)"
                ),
                Helper::Zero => format!("static {cty} {name}(void)"),
                Helper::Decode => format!("static {cty} {name}(fx_reader *r)"),
                Helper::Encode => format!("static void {name}(fx_writer *w, {cty} x)"),
                Helper::Soa => {
                    let id = self.id(ty);
                    format!(
                        "static inline {cty} soa_get_{id}(fx_arr *a, int64_t i);\n\
                         static inline void soa_set_{id}(fx_arr *a, int64_t i, {cty} v)"
                    )
                }
                Helper::Lazy => {
                    let id = self.id(ty);
                    let e = match ty {
                        Type::Array(e) => (**e).clone(),
                        _ => Type::Unit,
                    };
                    let ce = self.c(&e);
                    format!(
                        "typedef struct {{ fx_lazy l; int64_t index; {ce} value; }} oh_{id};\n\
                         static fx_arr *force_{id}(fx_lazy *l);\n\
                         static void accum_{id}(fx_arr *buf, fx_arr *x, int64_t off);\n\
                         static void ldrop_{id}(fx_lazy *l);\n\
                         static fx_arr *onehot_{id}(int64_t n, int64_t i, {ce} w);\n\
                         static fx_arr *lembed_{id}(int64_t n, int64_t s, fx_arr *t);\n\
                         static fx_arr *lsum_{id}(fx_arr *a, fx_arr *b)"
                    )
                }
            };
            let _ = writeln!(self.protos, "{proto};");
            self.queue.push_back(Request::One(h, ty.clone()));
        }
        name
    }

    /// The name of two-type helper `h` at (`x`, `t`).
    pub fn helper2(&mut self, h: Helper2, x: &Type, t: &Type) -> String {
        let taylor;
        let name = format!(
            "{}_{}_{}",
            match h {
                Helper2::Dense => "dense",
                Helper2::Check => "check",
                Helper2::CheckDirection => "checkdir",
                Helper2::DeltaLift => "dlift",
                Helper2::FwdLift => "flift",
                Helper2::TaylorLift(j) if j.dirs == 1 => {
                    taylor = format!("tlift{}", j.order);
                    &taylor
                }
                Helper2::TaylorLift(j) => {
                    taylor = format!("tlift{}x{}", j.dirs, j.order);
                    &taylor
                }
                Helper2::DeltaInputs => "dinputs",
                Helper2::DeltaPrimal => "dprimal",
                Helper2::DeltaSeed => "dseed",
                Helper2::DeltaRead => "dread",
                Helper2::Delta2Lift => "d2lift",
                Helper2::Delta2Inputs => "d2inputs",
                Helper2::Delta2Primal => "d2primal",
                Helper2::Delta2Seed => "d2seed",
                Helper2::Delta2Read => "d2read",
            },
            self.id(x),
            self.id(t)
        );
        if self.requested2.insert((h, x.clone(), t.clone())) {
            let (cx, ct) = (self.c(x), self.c(t));
            let proto = match h {
                Helper2::Dense => format!(
                    "static {ct} {name}({cx} x, {ct} t, uint32_t s0, uint32_t s1, uint32_t s2)"
                ),
                Helper2::Check
                | Helper2::CheckDirection
                | Helper2::DeltaSeed
                | Helper2::Delta2Seed => format!(
                    "static void {name}({cx} x, {ct} t, uint32_t s0, uint32_t s1, uint32_t s2)"
                ),
                Helper2::DeltaLift
                | Helper2::FwdLift
                | Helper2::TaylorLift(_)
                | Helper2::DeltaInputs
                | Helper2::DeltaPrimal
                | Helper2::DeltaRead
                | Helper2::Delta2Lift
                | Helper2::Delta2Inputs
                | Helper2::Delta2Primal
                | Helper2::Delta2Read => {
                    format!("static {ct} {name}({cx} x, uint32_t s0, uint32_t s1, uint32_t s2)")
                }
            };
            let _ = writeln!(self.protos, "{proto};");
            self.queue.push_back(Request::Two(h, x.clone(), t.clone()));
        }
        name
    }

    /// `inc(x)` as a statement, or nothing for a type without references.
    pub fn inc(&mut self, ty: &Type, x: &str) -> String {
        match ty {
            _ if !has_rc(ty) => String::new(),
            Type::Array(_) | Type::Enum(_) | Type::Fn(..) => format!("fx_inc({x});"),
            _ => format!("{}({x});", self.helper(Helper::Inc, ty)),
        }
    }

    /// `dec(x)` as a statement, or nothing for a type without references.
    pub fn dec(&mut self, ty: &Type, x: &str) -> String {
        match ty {
            _ if !has_rc(ty) => String::new(),
            Type::Fn(..) => format!("fx_dec_clo({x});"),
            _ => format!("{}({x});", self.helper(Helper::Dec, ty)),
        }
    }

    /// The bytes an element of an array of `elem` takes: a tuple's leaves one 8-byte
    /// slot each (struct of arrays), anything else its C type's size.
    pub fn elem_size(&mut self, elem: &Type) -> String {
        match elem {
            Type::Tuple(_) => format!("{}", 8 * self.leaves(elem).len().max(1)),
            _ => format!("sizeof({})", self.c(elem)),
        }
    }

    /// Element `i` of array `arr` (of element type `elem`) as a C expression.
    ///
    /// An array of tuples is a struct of arrays: after the header, one region of `len`
    /// 8-byte slots per leaf of the tuple (nested tuples flattened), in field order, so
    /// that a loop over one field reads contiguous memory (a `zip` is two copies, the
    /// delta layer's `(Real, Int)` pairs are a buffer of reals and one of ids). Every
    /// other array holds its elements contiguously.
    pub fn get(&mut self, elem: &Type, arr: &str, i: &str) -> String {
        match elem {
            Type::Tuple(_) => {
                let id = self.id(elem);
                self.helper(Helper::Soa, elem);
                format!("soa_get_{id}((fx_arr*)({arr}), {i})")
            }
            _ => format!("FX_DATA({arr}, {})[{i}]", self.c(elem)),
        }
    }

    /// Sets element `i` of the fresh (dense, uniquely owned) array `arr` to `v`, as a
    /// statement (see [`Types::get`]).
    pub fn set(&mut self, elem: &Type, arr: &str, i: &str, v: &str) -> String {
        match elem {
            Type::Tuple(_) => {
                let id = self.id(elem);
                self.helper(Helper::Soa, elem);
                format!("soa_set_{id}((fx_arr*)({arr}), {i}, {v});")
            }
            _ => format!("FX_DATA({arr}, {})[{i}] = {v};", self.c(elem)),
        }
    }

    /// The leaves of `ty` (itself unless a tuple): their C types and their paths in
    /// the C value (`.f1.f0`).
    fn leaves(&mut self, ty: &Type) -> Vec<(String, String)> {
        fn walk(t: &mut Types<'_>, ty: &Type, path: String, out: &mut Vec<(String, String)>) {
            match ty {
                Type::Tuple(ts) => {
                    for (i, f) in ts.iter().enumerate() {
                        walk(t, f, format!("{path}.f{i}"), out);
                    }
                }
                _ => out.push((t.c(ty), path)),
            }
        }
        let mut out = Vec::new();
        walk(self, ty, String::new(), &mut out);
        out
    }

    /// `soa_get_N`/`soa_set_N` of tuple type `ty`: leaf `k` of element `i` is slot `i`
    /// of region `k`, which starts `k·len` slots after the header.
    fn soa_body(&mut self, ty: &Type) -> String {
        let id = self.id(ty);
        let cty = self.c(ty);
        let leaves = self.leaves(ty);
        let mut get = format!(
            "static inline {cty} soa_get_{id}(fx_arr *a, int64_t i) {{\n  a = fx_dense(a);\n  uint64_t *p = (uint64_t*)(a + 1); int64_t n = a->len; (void)n;\n  {cty} v;\n"
        );
        let mut set = format!(
            "static inline void soa_set_{id}(fx_arr *a, int64_t i, {cty} v) {{\n  uint64_t *p = (uint64_t*)(a + 1); int64_t n = a->len; (void)n;\n"
        );
        for (k, (leaf, path)) in leaves.iter().enumerate() {
            let _ = writeln!(get, "  v{path} = (({leaf}*)(p + {k} * n))[i];");
            let _ = writeln!(set, "  (({leaf}*)(p + {k} * n))[i] = v{path};");
        }
        get.push_str("  return v;\n}\n");
        set.push_str("}\n");
        get + &set
    }

    /// The symbolic zero of tangent type `ty` as a C expression.
    pub fn zero(&mut self, ty: &Type) -> String {
        match ty {
            Type::Real => "(-0.0)".into(),
            Type::Int | Type::Bool | Type::Unit => "0".into(),
            Type::Array(_) | Type::Enum(_) | Type::Fn(..) => "NULL".into(),
            Type::Tuple(_) => format!("{}()", self.helper(Helper::Zero, ty)),
        }
    }

    /// The C function that is `%chad_of(f, d)` for closures of type `fty`.
    pub fn chad_of_helper(&mut self, fty: &Type, d: i64) -> String {
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

    /// Generates every requested helper (which may request more).
    pub fn flush(&mut self) {
        while let Some(r) = self.queue.pop_front() {
            let body = match r {
                Request::One(h, ty) => self.body(h, &ty),
                Request::Two(h, x, t) => self.body2(h, &x, &t),
            };
            self.bodies.push_str(&body);
        }
    }

    fn body(&mut self, h: Helper, ty: &Type) -> String {
        let name = format!("{}_{}", helper_name(h), self.id(ty));
        let cty = self.c(ty);
        let mut s = String::new();
        match h {
            Helper::Inc => {
                let _ = writeln!(s, "static void {name}({cty} x) {{");
                if let Type::Tuple(ts) = ty {
                    for (i, t) in ts.iter().enumerate() {
                        let _ = writeln!(s, "  {}", self.inc(t, &format!("x.f{i}")));
                    }
                } else {
                    let _ = writeln!(s, "  fx_inc(x);");
                }
            }
            Helper::Dec => {
                let _ = writeln!(s, "static void {name}({cty} x) {{");
                match ty {
                    Type::Tuple(ts) => {
                        for (i, t) in ts.iter().enumerate() {
                            let _ = writeln!(s, "  {}", self.dec(t, &format!("x.f{i}")));
                        }
                    }
                    Type::Array(e) => {
                        let _ = writeln!(s, "  FX_DEC_LATER(x, {name});");
                        let _ = writeln!(s, "  if (!fx_dec_last(x)) return;");
                        let _ = writeln!(
                            s,
                            "  if (x->kind != FX_DENSE) {{ fx_lazy *l = (fx_lazy*)x; l->drop(l); if (l->cache) {name}(l->cache); fx_release(x); return; }}"
                        );
                        if has_rc(e) {
                            let elem = self.get(e, "x", "i");
                            let d = self.dec(e, &elem);
                            let _ = writeln!(
                                s,
                                "  for (int64_t i = 0; i < ((fx_arr*)x)->len; i++) {{ {d} }}"
                            );
                        }
                        let _ = writeln!(s, "  fx_release(x);\n  FX_DEC_DRAIN();");
                    }
                    Type::Enum(e) => {
                        let _ = writeln!(s, "  FX_DEC_LATER(x, {name});");
                        let _ = writeln!(s, "  if (!fx_dec_last(x)) return;");
                        let _ = writeln!(s, "  switch (x->tag) {{");
                        let def = self.m.enum_def(*e).clone();
                        for (tag, v) in def.variants.iter().enumerate() {
                            let vs = self.variant_struct(*e, tag as u32);
                            let _ = write!(s, "  case {tag}: {{ {vs} *v = ({vs}*)x; (void)v;");
                            for (j, f) in v.fields.iter().enumerate() {
                                let _ = write!(s, " {}", self.dec(f, &format!("v->f{j}")));
                            }
                            let _ = writeln!(s, " break; }}");
                        }
                        let _ = writeln!(s, "  }}\n  fx_release(x);\n  FX_DEC_DRAIN();");
                    }
                    _ => {}
                }
            }
            Helper::Eq => {
                let _ = writeln!(s, "static int {name}({cty} a, {cty} b) {{");
                let _ = writeln!(s, "  {}", self.eq_body(ty));
            }
            Helper::Add | Helper::TanPlus => {
                let _ = writeln!(
                    s,
                    "static {cty} {name}({cty} a, {cty} b, uint32_t s0, uint32_t s1, uint32_t s2) {{"
                );
                let _ = writeln!(s, "{}", self.plus_body(h, ty));
            }
            Helper::Zero => {
                let _ = writeln!(s, "static {cty} {name}(void) {{");
                let Type::Tuple(ts) = ty else {
                    unreachable!("only tuples have a zero helper")
                };
                let fields: Vec<String> = ts.iter().map(|t| self.zero(t)).collect();
                let _ = writeln!(s, "  {cty} z = {{{}}}; return z;", fields.join(", "));
            }
            Helper::Decode => {
                let _ = writeln!(s, "static {cty} {name}(fx_reader *r) {{");
                let _ = writeln!(s, "{}", self.decode_body(ty));
            }
            Helper::Encode => {
                let _ = writeln!(s, "static void {name}(fx_writer *w, {cty} x) {{");
                let _ = writeln!(s, "{}", self.encode_body(ty));
            }
            Helper::Lazy => return self.lazy_body(ty),
            Helper::Soa => return self.soa_body(ty),
        }
        s.push_str("}\n");
        s
    }

    /// The lazy array cotangents of array type `ty` (see `runtime.c`).
    fn lazy_body(&mut self, ty: &Type) -> String {
        let id = self.id(ty);
        let e = match ty {
            Type::Array(e) => (**e).clone(),
            _ => Type::Unit,
        };
        let ce = self.c(&e);
        let zero = self.zero(&e);
        let dec_a = self.helper(Helper::Dec, ty);
        let inc_w = self.inc(&e, "w");
        let dec_value = self
            .dec(&e, "((oh_{id}*)l)->value")
            .replace("{id}", &id.to_string());
        // Adding into a slot of the (uniquely owned) buffer: for array elements, in
        // place — the slot made a dense array of its own once, then each term added
        // where it is nonzero — so repeated one-hot rows cost O(their size), not a
        // lazy node each.
        // `slot` is an index into `buf`.
        let slot_add = |t: &mut Types<'m>, slot: &str, v: &str| -> String {
            let old = t.get(&e, "buf", slot);
            if let Type::Array(_) = &e {
                let inner = t.helper(Helper::Lazy, &e);
                let inner_id = inner.trim_start_matches("lazy_").to_string();
                let ce = t.c(&e);
                let ee = match &e {
                    Type::Array(x) => (**x).clone(),
                    _ => Type::Unit,
                };
                let size = t.elem_size(&ee);
                let zero = t.zero(&ee);
                let fill = t.set(&ee, "fresh", "j", &zero);
                let dec_old = t.dec(&e, "old");
                let (put_v, put_old) = (t.set(&e, "buf", slot, v), t.set(&e, "buf", slot, "old"));
                format!(
                    "{{ {ce} old = {old}; if (!{v}) {{}} else if (!old) {{ {put_v} fx_inc({v}); }} else {{ if (!(old->kind == FX_DENSE && old->h.rc == 1)) {{ fx_arr *fresh = fx_arr_new(old->len, {size}, \"a cotangent\", 0, 0, 0); for (int64_t j = 0; j < old->len; j++) {fill} accum_{inner_id}(fresh, old, 0); {dec_old} old = fresh; }} if ({v}->len != old->len) fx_fail(0, 0, 0, \"tangents of arrays of different lengths (%lld and %lld)\", (long long)old->len, (long long){v}->len); accum_{inner_id}(old, {v}, 0); {put_old} }} }}"
                )
            } else {
                let ce = t.c(&e);
                let add = t.plus_expr(Helper::TanPlus, &e, "old", v, "0, 0, 0");
                let dec_old = t.dec(&e, "old");
                let put = t.set(&e, "buf", slot, &add);
                format!("{{ {ce} old = {old}; {put} {dec_old} }}")
            }
        };
        let src = self.get(&e, "x", "i");
        let add_dense = slot_add(self, "off + i", &src);
        let add_one = slot_add(self, "off + o->index", "o->value");
        let size = self.elem_size(&e);
        let fill = self.set(&e, "buf", "i", &zero);
        let node = |kind: &str| {
            format!(
                "n->l.a.len = len; n->l.a.kind = {kind}; n->l.force = force_{id}; n->l.cache = NULL; n->l.drop = ldrop_{id};"
            )
        };
        let mut s = String::new();
        let _ = writeln!(
            s,
            "static void ldrop_{id}(fx_lazy *l) {{\n  switch (l->a.kind) {{\n  case FX_ONEHOT: {{ {dec_value} break; }}\n  case FX_SUM: {dec_a}(((fx_lazy_sum*)l)->left); {dec_a}(((fx_lazy_sum*)l)->right); break;\n  case FX_EMBED: {dec_a}(((fx_lazy_embed*)l)->t); break;\n  }}\n}}"
        );
        let _ = writeln!(
            s,
            "static fx_arr *force_{id}(fx_lazy *l) {{\n  fx_arr *buf = fx_arr_new(l->a.len, {size}, \"a cotangent\", 0, 0, 0);\n  for (int64_t i = 0; i < l->a.len; i++) {fill}\n  accum_{id}(buf, (fx_arr*)l, 0);\n  return buf;\n}}"
        );
        let _ = writeln!(
            s,
            "static void accum_{id}(fx_arr *buf, fx_arr *x, int64_t off) {{\n  while (x) {{\n    if (x->kind != FX_DENSE && ((fx_lazy*)x)->cache) x = ((fx_lazy*)x)->cache;\n    switch (x->kind) {{\n    case FX_DENSE: {{ for (int64_t i = 0; i < x->len; i++) {add_dense} return; }}\n    case FX_ONEHOT: {{ oh_{id} *o = (oh_{id}*)x; {add_one} return; }}\n    case FX_EMBED: {{ fx_lazy_embed *em = (fx_lazy_embed*)x; accum_{id}(buf, em->t, off + em->start); return; }}\n    case FX_SUM: {{ fx_lazy_sum *sm = (fx_lazy_sum*)x; accum_{id}(buf, sm->right, off); x = sm->left; continue; }}\n    }}\n    return;\n  }}\n}}"
        );
        let _ = writeln!(
            s,
            "static fx_arr *onehot_{id}(int64_t len, int64_t i, {ce} w) {{\n  oh_{id} *n = (oh_{id}*)fx_alloc(sizeof(oh_{id}), 0, 0, 0);\n  {}\n  n->index = i; n->value = w; {inc_w}\n  return (fx_arr*)n;\n}}",
            node("FX_ONEHOT")
        );
        let _ = writeln!(
            s,
            "static fx_arr *lembed_{id}(int64_t len, int64_t start, fx_arr *t) {{\n  fx_lazy_embed *n = (fx_lazy_embed*)fx_alloc(sizeof(fx_lazy_embed), 0, 0, 0);\n  {}\n  n->start = start; n->t = t; fx_inc(t);\n  return (fx_arr*)n;\n}}",
            node("FX_EMBED")
        );
        let _ = writeln!(
            s,
            "static fx_arr *lsum_{id}(fx_arr *a, fx_arr *b) {{\n  int64_t len = a->len;\n  fx_lazy_sum *n = (fx_lazy_sum*)fx_alloc(sizeof(fx_lazy_sum), 0, 0, 0);\n  {}\n  n->left = a; n->right = b; fx_inc(a); fx_inc(b);\n  return (fx_arr*)n;\n}}",
            node("FX_SUM")
        );
        s
    }

    fn eq_body(&mut self, ty: &Type) -> String {
        match ty {
            Type::Real | Type::Int | Type::Bool | Type::Unit => "return a == b;".into(),
            Type::Tuple(ts) => {
                let parts: Vec<String> = ts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| self.eq_expr(t, &format!("a.f{i}"), &format!("b.f{i}")))
                    .collect();
                format!("return {};", parts.join(" && "))
            }
            Type::Array(e) => {
                let (x, y) = (self.get(e, "a", "i"), self.get(e, "b", "i"));
                let el = self.eq_expr(e, &x, &y);
                format!(
                    "if (FX_LEN(a) != FX_LEN(b)) return 0;\n  for (int64_t i = 0; i < FX_LEN(a); i++) if (!({el})) return 0;\n  return 1;"
                )
            }
            Type::Enum(e) => {
                let def = self.m.enum_def(*e).clone();
                let mut s = String::from(
                    "FX_DEEP_CHECK(\"==\");\n  if (a->tag != b->tag) return 0;\n  switch (a->tag) {\n",
                );
                for (tag, v) in def.variants.iter().enumerate() {
                    let vs = self.variant_struct(*e, tag as u32);
                    let parts: Vec<String> = v
                        .fields
                        .iter()
                        .enumerate()
                        .map(|(j, f)| {
                            self.eq_expr(
                                f,
                                &format!("(({vs}*)a)->f{j}"),
                                &format!("(({vs}*)b)->f{j}"),
                            )
                        })
                        .collect();
                    let cond = if parts.is_empty() {
                        "1".into()
                    } else {
                        parts.join(" && ")
                    };
                    let _ = writeln!(s, "  case {tag}: return {cond};");
                }
                s.push_str("  }\n  return 1;");
                s
            }
            Type::Fn(..) => "return a == b;".into(),
        }
    }

    /// `a == b` at `ty` as a C expression.
    pub fn eq_expr(&mut self, ty: &Type, a: &str, b: &str) -> String {
        match ty {
            Type::Real | Type::Int | Type::Bool | Type::Unit => format!("({a} == {b})"),
            _ => format!("{}({a}, {b})", self.helper(Helper::Eq, ty)),
        }
    }

    /// `a + b` (`Add`) or `%tplus(a, b)` (`TanPlus`) at `ty` as a C expression.
    pub fn plus_expr(&mut self, h: Helper, ty: &Type, a: &str, b: &str, span: &str) -> String {
        match (h, ty) {
            (_, Type::Real) => format!("({a} + {b})"),
            (Helper::Add, Type::Int) => format!("fx_iadd({a}, {b}, {span})"),
            (_, Type::Int | Type::Bool | Type::Unit) => "0".into(),
            _ => format!("{}({a}, {b}, {span})", self.helper(h, ty)),
        }
    }

    fn plus_body(&mut self, h: Helper, ty: &Type) -> String {
        let cty = self.c(ty);
        let sp = "s0, s1, s2";
        match ty {
            Type::Tuple(ts) => {
                let parts: Vec<String> = ts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| self.plus_expr(h, t, &format!("a.f{i}"), &format!("b.f{i}"), sp))
                    .collect();
                format!("  {cty} r = {{{}}}; return r;", parts.join(", "))
            }
            // Tangents: a lazy sum, O(1) (`runtime.c`), with NULL as the zero — except
            // two dense arrays, added at once element by element, as the interpreter
            // adds them (fluxion-interp's `tangent::plus`): the sums are then associated
            // alike and give the interpreter's bits (a lazy sum is forced right to left).
            Type::Array(e) if h == Helper::TanPlus => {
                let lazy = self.helper(Helper::Lazy, ty);
                let id = lazy.trim_start_matches("lazy_").to_string();
                let (x, y) = (self.get(e, "a", "i"), self.get(e, "b", "i"));
                let el = self.plus_expr(h, e, &x, &y, sp);
                let size = self.elem_size(e);
                let put = self.set(e, "r", "i", &el);
                format!(
                    "  if (!a) {{ fx_inc(b); return b; }}\n  if (!b) {{ fx_inc(a); return a; }}\n  if (a->len != b->len) fx_fail({sp}, \"tangents of arrays of different lengths (%lld and %lld)\", (long long)a->len, (long long)b->len);\n  if (a->kind == FX_DENSE && b->kind == FX_DENSE) {{\n    fx_arr *r = fx_arr_new(a->len, {size}, \"a cotangent\", {sp});\n    for (int64_t i = 0; i < a->len; i++) {put}\n    return r;\n  }}\n  return lsum_{id}(a, b);"
                )
            }
            Type::Array(e) => {
                let (x, y) = (self.get(e, "a", "i"), self.get(e, "b", "i"));
                let el = self.plus_expr(h, e, &x, &y, sp);
                let size = self.elem_size(e);
                let put = self.set(e, "r", "i", &el);
                format!(
                    "  int64_t n = FX_LEN(a), m = FX_LEN(b);\n  if (n != m) fx_fail({sp}, \"sum: arrays of different lengths (%lld and %lld)\", (long long)n, (long long)m);\n  fx_arr *r = fx_arr_new(n, {size}, \"sum\", {sp});\n  for (int64_t i = 0; i < n; i++) {put}\n  return r;"
                )
            }
            Type::Enum(e) => {
                let def = self.m.enum_def(*e).clone();
                let mut s = String::from(
                    "  if (!a) { fx_inc(b); return b; }\n  if (!b) { fx_inc(a); return a; }\n  if (a->tag != b->tag) fx_fail(s0, s1, s2, \"tangents of an enum with different constructors\");\n  switch (a->tag) {\n",
                );
                for (tag, v) in def.variants.iter().enumerate() {
                    let vs = self.variant_struct(*e, tag as u32);
                    if v.fields.is_empty() {
                        let _ = writeln!(s, "  case {tag}: return a;");
                        continue;
                    }
                    let _ = writeln!(
                        s,
                        "  case {tag}: {{ {vs} *r = ({vs}*)fx_alloc(sizeof({vs}), {sp}); r->h.tag = {tag};"
                    );
                    for (j, f) in v.fields.iter().enumerate() {
                        let ex = self.plus_expr(
                            h,
                            f,
                            &format!("(({vs}*)a)->f{j}"),
                            &format!("(({vs}*)b)->f{j}"),
                            sp,
                        );
                        let _ = writeln!(s, "    r->f{j} = {ex};");
                    }
                    let _ = writeln!(s, "    return (fx_enum*)r; }}");
                }
                s.push_str("  }\n  return NULL;");
                s
            }
            // The tangent of a function is its captures' (an enum); a function value
            // is never added.
            _ => "  (void)a; (void)b; return 0;".into(),
        }
    }

    fn decode_body(&mut self, ty: &Type) -> String {
        let cty = self.c(ty);
        match ty {
            Type::Real => "  return fx_read_real(r);".into(),
            Type::Int => "  return (int64_t)fx_read(r);".into(),
            Type::Bool => "  return fx_read(r) != 0;".into(),
            Type::Unit => "  return 0;".into(),
            Type::Tuple(ts) => {
                let mut s = format!("  {cty} x;\n");
                for (i, t) in ts.iter().enumerate() {
                    let d = self.helper(Helper::Decode, t);
                    let _ = writeln!(s, "  x.f{i} = {d}(r);");
                }
                s + "  return x;"
            }
            Type::Array(e) if matches!(**e, Type::Real | Type::Int) => {
                "  return fx_read_numbers(r);".into()
            }
            Type::Array(e) => {
                let d = self.helper(Helper::Decode, e);
                let size = self.elem_size(e);
                let put = self.set(e, "a", "i", &format!("{d}(r)"));
                format!(
                    "  int64_t n = (int64_t)fx_read(r);\n  fx_arr *a = fx_arr_new(n, {size}, \"an argument\", 0, 0, 0);\n  for (int64_t i = 0; i < n; i++) {put}\n  return a;"
                )
            }
            Type::Enum(e) => {
                let def = self.m.enum_def(*e).clone();
                let mut s = String::from(
                    "  FX_DEEP_CHECK(\"arguments\");\n  uint64_t tag = fx_read(r);\n  switch (tag) {\n",
                );
                for (tag, v) in def.variants.iter().enumerate() {
                    let vs = self.variant_struct(*e, tag as u32);
                    if v.fields.is_empty() {
                        let _ = writeln!(s, "  case {tag}: return (fx_enum*)&{vs}_unit;");
                        continue;
                    }
                    let _ = writeln!(
                        s,
                        "  case {tag}: {{ {vs} *v = ({vs}*)fx_alloc(sizeof({vs}), 0, 0, 0); v->h.tag = {tag};"
                    );
                    for (j, f) in v.fields.iter().enumerate() {
                        let d = self.helper(Helper::Decode, f);
                        let _ = writeln!(s, "    v->f{j} = {d}(r);");
                    }
                    let _ = writeln!(s, "    return (fx_enum*)v; }}");
                }
                s + "  }\n  fx_fail(0, 0, 0, \"internal error: a bad constructor in the argument stream\");"
            }
            Type::Fn(..) => "  fx_fail(0, 0, 0, \"internal error: a function argument\");".into(),
        }
    }

    fn encode_body(&mut self, ty: &Type) -> String {
        match ty {
            Type::Real => "  fx_write_real(w, x);".into(),
            Type::Int => "  fx_write(w, (uint64_t)x);".into(),
            Type::Bool => "  fx_write(w, x ? 1 : 0);".into(),
            Type::Unit => "  (void)w; (void)x;".into(),
            Type::Tuple(ts) => {
                let mut s = String::new();
                for (i, t) in ts.iter().enumerate() {
                    let e = self.helper(Helper::Encode, t);
                    let _ = writeln!(s, "  {e}(w, x.f{i});");
                }
                s
            }
            Type::Array(e) if matches!(**e, Type::Real | Type::Int) => {
                "  fx_write_numbers(w, (fx_arr *)x);".into()
            }
            Type::Array(e) => {
                let enc = self.helper(Helper::Encode, e);
                let x = self.get(e, "x", "i");
                format!(
                    "  fx_write(w, (uint64_t)FX_LEN(x));\n  for (int64_t i = 0; i < FX_LEN(x); i++) {enc}(w, {x});"
                )
            }
            Type::Enum(e) => {
                let def = self.m.enum_def(*e).clone();
                // A symbolic zero (NULL) never reaches a result: `%tdense` removes it.
                let mut s = String::from(
                    "  FX_DEEP_CHECK(\"result\");\n  if (!x) fx_fail(0, 0, 0, \"internal error: a symbolic zero in a result\");\n  fx_write(w, x->tag);\n  switch (x->tag) {\n",
                );
                for (tag, v) in def.variants.iter().enumerate() {
                    let vs = self.variant_struct(*e, tag as u32);
                    let _ = write!(s, "  case {tag}:");
                    for (j, f) in v.fields.iter().enumerate() {
                        let enc = self.helper(Helper::Encode, f);
                        let _ = write!(s, " {enc}(w, (({vs}*)x)->f{j});");
                    }
                    let _ = writeln!(s, " break;");
                }
                s + "  }"
            }
            Type::Fn(..) => "  fx_fail(0, 0, 0, \"internal error: a function result\");".into(),
        }
    }

    fn body2(&mut self, h: Helper2, x: &Type, t: &Type) -> String {
        let name = self.helper2(h, x, t);
        let (cx, ct) = (self.c(x), self.c(t));
        let sp = "s0, s1, s2";
        let mut s = String::new();
        match h {
            Helper2::DeltaLift
            | Helper2::FwdLift
            | Helper2::TaylorLift(_)
            | Helper2::DeltaInputs
            | Helper2::DeltaPrimal
            | Helper2::DeltaSeed
            | Helper2::DeltaRead
            | Helper2::Delta2Lift
            | Helper2::Delta2Inputs
            | Helper2::Delta2Primal
            | Helper2::Delta2Seed
            | Helper2::Delta2Read => return delta::body(self, h, x, t, &name),
            Helper2::Dense => {
                let _ = writeln!(
                    s,
                    "static {ct} {name}({cx} x, {ct} t, uint32_t s0, uint32_t s1, uint32_t s2) {{"
                );
                match (x, t) {
                    (Type::Real, Type::Real) => s.push_str("  (void)x; return t + 0.0;\n"),
                    (Type::Tuple(xs), Type::Tuple(ts)) => {
                        let parts: Vec<String> = xs
                            .iter()
                            .zip(ts)
                            .enumerate()
                            .map(|(i, (xi, ti))| {
                                self.dense_expr(xi, ti, &format!("x.f{i}"), &format!("t.f{i}"), sp)
                            })
                            .collect();
                        let _ = writeln!(s, "  {ct} r = {{{}}}; return r;", parts.join(", "));
                    }
                    (Type::Array(xe), Type::Array(te)) => {
                        let z = self.zero(te);
                        let (xi, ti) = (self.get(xe, "x", "i"), self.get(te, "t", "i"));
                        let el = self.dense_expr(xe, te, &xi, &format!("(t ? {ti} : {z})"), sp);
                        let size = self.elem_size(te);
                        let put = self.set(te, "r", "i", &el);
                        let _ = writeln!(
                            s,
                            "  int64_t n = FX_LEN(x);\n  if (t && FX_LEN(t) != n) fx_fail({sp}, \"a tangent of length %lld at a point of length %lld\", (long long)FX_LEN(t), (long long)n);\n  fx_arr *r = fx_arr_new(n, {size}, \"a tangent\", {sp});\n  for (int64_t i = 0; i < n; i++) {put}\n  return r;"
                        );
                    }
                    (Type::Enum(xe), Type::Enum(te)) => {
                        let def = self.m.enum_def(*xe).clone();
                        let tdef = self.m.enum_def(*te).clone();
                        s.push_str("  if (t && t->tag != x->tag) fx_fail(s0, s1, s2, \"a tangent with another constructor than its point\");\n  switch (x->tag) {\n");
                        for (tag, v) in def.variants.iter().enumerate() {
                            let xs = self.variant_struct(*xe, tag as u32);
                            let ts = self.variant_struct(*te, tag as u32);
                            if v.fields.is_empty() {
                                let _ = writeln!(s, "  case {tag}: return (fx_enum*)&{ts}_unit;");
                                continue;
                            }
                            let _ = writeln!(
                                s,
                                "  case {tag}: {{ {ts} *r = ({ts}*)fx_alloc(sizeof({ts}), {sp}); r->h.tag = {tag};"
                            );
                            for (j, (fx, ft)) in
                                v.fields.iter().zip(&tdef.variants[tag].fields).enumerate()
                            {
                                let z = self.zero(ft);
                                let ex = self.dense_expr(
                                    fx,
                                    ft,
                                    &format!("(({xs}*)x)->f{j}"),
                                    &format!("(t ? (({ts}*)t)->f{j} : {z})"),
                                    sp,
                                );
                                let _ = writeln!(s, "    r->f{j} = {ex};");
                            }
                            let _ = writeln!(s, "    return (fx_enum*)r; }}");
                        }
                        s.push_str("  }\n  return NULL;\n");
                    }
                    // Leaves without a tangent (`()`), and functions (whose tangent,
                    // their captures', stays symbolic as in the interpreter).
                    _ => {
                        let inc = self.inc(t, "t");
                        let _ = writeln!(s, "  (void)x; {inc} return t;");
                    }
                }
            }
            Helper2::Check | Helper2::CheckDirection => {
                let direction = h == Helper2::CheckDirection;
                let _ = writeln!(
                    s,
                    "static void {name}({cx} x, {ct} t, uint32_t s0, uint32_t s1, uint32_t s2) {{"
                );
                s.push_str("  (void)x; (void)t;\n");
                match (x, t) {
                    (Type::Tuple(xs), Type::Tuple(ts)) => {
                        for (i, (xi, ti)) in xs.iter().zip(ts).enumerate() {
                            if let Some(c) = self.check_stmt(
                                h,
                                xi,
                                ti,
                                &format!("x.f{i}"),
                                &format!("t.f{i}"),
                                sp,
                            ) {
                                let _ = writeln!(s, "  {c}");
                            }
                        }
                    }
                    (Type::Array(xe), Type::Array(te)) => {
                        let (xi, ti) = (self.get(xe, "x", "i"), self.get(te, "t", "i"));
                        let words = if direction {
                            "the direction has length %lld but the point has length %lld"
                        } else {
                            "the cotangent does not have the shape of the function's result: an array of length %lld where the result has %lld"
                        };
                        let _ = writeln!(
                            s,
                            "  if (!t) return;\n  if (FX_LEN(t) != FX_LEN(x)) fx_fail({sp}, \"{words}\", (long long)FX_LEN(t), (long long)FX_LEN(x));"
                        );
                        if let Some(c) = self.check_stmt(h, xe, te, &xi, &ti, sp) {
                            let _ =
                                writeln!(s, "  for (int64_t i = 0; i < FX_LEN(x); i++) {{ {c} }}");
                        }
                    }
                    (Type::Enum(xe), Type::Enum(te)) => {
                        let def = self.m.enum_def(*xe).clone();
                        let tdef = self.m.enum_def(*te).clone();
                        let words = if direction {
                            "the direction of an enum value must have the same constructor"
                        } else {
                            "the cotangent does not have the shape of the function's result: another constructor"
                        };
                        let _ = writeln!(
                            s,
                            "  if (!t) return;\n  if (t->tag != x->tag) fx_fail(s0, s1, s2, \"{words}\");\n  switch (x->tag) {{"
                        );
                        for (tag, v) in def.variants.iter().enumerate() {
                            let xs = self.variant_struct(*xe, tag as u32);
                            let ts = self.variant_struct(*te, tag as u32);
                            let _ = write!(s, "  case {tag}:");
                            for (j, (fx, ft)) in
                                v.fields.iter().zip(&tdef.variants[tag].fields).enumerate()
                            {
                                if let Some(c) = self.check_stmt(
                                    h,
                                    fx,
                                    ft,
                                    &format!("(({xs}*)x)->f{j}"),
                                    &format!("(({ts}*)t)->f{j}"),
                                    sp,
                                ) {
                                    let _ = write!(s, " {c}");
                                }
                            }
                            let _ = writeln!(s, " break;");
                        }
                        s.push_str("  }\n");
                    }
                    _ => {}
                }
            }
        }
        s.push_str("}\n");
        s
    }

    /// `%tdense(x, t)` as a C expression (an owned value).
    pub fn dense_expr(&mut self, x: &Type, t: &Type, xe: &str, te: &str, span: &str) -> String {
        match (x, t) {
            (Type::Real, Type::Real) => format!("({te} + 0.0)"),
            (_, Type::Unit) => "0".into(),
            _ => format!("{}({xe}, {te}, {span})", self.helper2(Helper2::Dense, x, t)),
        }
    }

    /// `%check_tangent(x, t)` (`h` = `Check`) or `%check_direction(x, t)`
    /// (`CheckDirection`) as a statement, if anything can differ.
    pub fn check_stmt(
        &mut self,
        h: Helper2,
        x: &Type,
        t: &Type,
        xe: &str,
        te: &str,
        span: &str,
    ) -> Option<String> {
        fn shaped(ty: &Type) -> bool {
            match ty {
                Type::Array(_) | Type::Enum(_) => true,
                Type::Tuple(ts) => ts.iter().any(shaped),
                _ => false,
            }
        }
        if !shaped(x) || !shaped(t) {
            return None;
        }
        Some(format!("{}({xe}, {te}, {span});", self.helper2(h, x, t)))
    }
}

fn helper_name(h: Helper) -> &'static str {
    match h {
        Helper::Inc => "inc",
        Helper::Dec => "dec",
        Helper::Eq => "eq",
        Helper::Add => "add",
        Helper::TanPlus => "tplus",
        Helper::Zero => "zero",
        Helper::Decode => "decode",
        Helper::Encode => "encode",
        Helper::Lazy => "lazy",
        Helper::Soa => "soa",
    }
}
