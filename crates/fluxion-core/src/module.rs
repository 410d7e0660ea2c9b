//! A whole Core program: enums, codes, variables.

use std::collections::HashMap;

use crate::term::*;
use crate::ty::{EnumDef, EnumId, EnumOrigin, FN_COTANGENT, Type, TypeMap, VariantDef, map_type};

#[derive(Clone, Debug, Default)]
pub struct Module {
    pub enums: Vec<EnumDef>,
    /// Derived enums by origin (see [`EnumOrigin`]).
    pub derived_enums: HashMap<EnumOrigin, EnumId>,
    pub codes: Vec<Code>,
    pub vars: Vec<VarInfo>,
    /// Top-level functions by name (user functions and the prelude).
    pub functions: HashMap<String, CodeId>,
    /// Codes derived by transformations and generated helpers, memoised by a key
    /// naming the transformation and its input (e.g. `fwd#12`, `tdim#[Real]`).
    pub derived_codes: HashMap<String, CodeId>,
    /// A code a structure-preserving layer derived → the code it translates (on its
    /// own or inline). Delta-translated code reads it to apply another layer to the
    /// original of a closure it holds (`%delta_jvp`).
    pub translated_from: HashMap<CodeId, CodeId>,
    /// A translation specialised to captures passed as primals (fluxion-ad's
    /// `PrimalInputs`) → their positions: its closures hold those captures as the
    /// original's values, not translated ones. The interpreter reads it to translate
    /// such a delta closure's original by another layer (`delta_of_layer`).
    pub primal_captures: HashMap<CodeId, Vec<usize>>,
    /// The enum of function cotangents ([`FN_COTANGENT`]), once something needs it.
    pub fn_cotangent: Option<EnumId>,
    /// What `%chad_of(f, d)` chooses among at run time: (the code of a closure `f`,
    /// direction `d`) → the code of its translation, made ahead of time (fluxion-ad's
    /// `ahead`). A closure of a code not listed hands the run over.
    pub chad_of: HashMap<(CodeId, i64), CodeId>,
    /// The bodies of the codes whose operators fluxion-ad's `ahead` resolved, as they
    /// were before: a translation made later (a forward layer over a code applying an
    /// operator) translates these ([`Module::swap_unresolved`]).
    pub unresolved: HashMap<CodeId, Body>,
    /// The functions `f` of reverse operators `%delta_vjp(f, …)` whose every closure
    /// that the flow analysis sees flow there has its delta translation translated
    /// again made ahead of time (`chad_of` direction 4): inside a delta translation,
    /// the operator is a tape of tapes of the closure chosen at run time (fluxion-ad's
    /// `delta_twice.rs`). A closure it missed hands the run to the module as written,
    /// which clears this.
    pub twice: std::collections::HashSet<VarId>,
    /// The calls of prelude functions the optimiser inlined, which spans of the copied
    /// code name (`inline_site.rs`).
    pub inline_sites: Vec<crate::InlineSite>,
}

impl Module {
    pub fn code(&self, id: CodeId) -> &Code {
        &self.codes[id.0 as usize]
    }

    /// The name of the source function `id` was made from: a translation's original's
    /// (`dot`, not `dot_chad`), as messages to the user name it.
    pub fn source_name(&self, mut id: CodeId) -> &str {
        let mut steps = 0;
        while let Some(&from) = self.translated_from.get(&id) {
            steps += 1;
            if from == id || steps > self.codes.len() {
                break;
            }
            id = from;
        }
        &self.code(id).name
    }

    pub fn var(&self, id: VarId) -> &VarInfo {
        &self.vars[id.0 as usize]
    }

    pub fn var_ty(&self, id: VarId) -> &Type {
        &self.vars[id.0 as usize].ty
    }

    /// A new variable, bound nowhere yet.
    pub fn fresh_var(&mut self, name: impl Into<String>, ty: Type) -> VarId {
        let id = VarId(self.vars.len() as u32);
        self.vars.push(VarInfo {
            name: name.into(),
            ty,
        });
        id
    }

    pub fn add_code(&mut self, code: Code) -> CodeId {
        let id = CodeId(self.codes.len() as u32);
        self.codes.push(code);
        id
    }

    pub fn atom_ty(&self, atom: &Atom) -> Type {
        match atom {
            Atom::Var(v) => self.var_ty(*v).clone(),
            Atom::Lit(l) => l.ty(),
        }
    }

    /// The type of a function value made from `code`.
    pub fn code_ty(&self, id: CodeId) -> Type {
        let code = self.code(id);
        Type::func(
            code.params
                .iter()
                .map(|p| self.var_ty(*p).clone())
                .collect(),
            code.ret.clone(),
        )
    }

    /// Looks up an enum constructor by name: (enum, tag).
    pub fn find_ctor(&self, name: &str) -> Option<(crate::EnumId, u32)> {
        self.enums.iter().enumerate().find_map(|(e, def)| {
            def.variants
                .iter()
                .position(|v| v.name == name)
                .map(|tag| (crate::EnumId(e as u32), tag as u32))
        })
    }

    pub fn enum_def(&self, id: crate::EnumId) -> &EnumDef {
        &self.enums[id.0 as usize]
    }

    /// `T(A)` (docs/language.md §5), creating derived enums as needed.
    pub fn tangent_type(&mut self, ty: &Type) -> Type {
        map_type(ty, TypeMap::Tangent, &mut |e, m| self.derived_enum(e, m))
    }

    /// The forward-mode type `Tf(A)`, creating derived enums as needed.
    pub fn fwd_type(&mut self, ty: &Type) -> Type {
        map_type(ty, TypeMap::Fwd, &mut |e, m| self.derived_enum(e, m))
    }

    /// The Taylor-mode type `T_k(A)` of order `k`, creating derived enums as needed.
    pub fn taylor_type(&mut self, ty: &Type, k: u32) -> Type {
        map_type(ty, TypeMap::Taylor(crate::Jet::series(k)), &mut |e, m| {
            self.derived_enum(e, m)
        })
    }

    /// The image of `ty` under `map`, creating derived enums as needed.
    pub fn map_type(&mut self, ty: &Type, map: TypeMap) -> Type {
        map_type(ty, map, &mut |e, m| self.derived_enum(e, m))
    }

    /// `T(A)` using only enums derived already; `None` if one is missing.
    pub fn lookup_tangent_type(&self, ty: &Type) -> Option<Type> {
        self.lookup_map_type(ty, TypeMap::Tangent)
    }

    /// The image of `ty` under `map` using only enums derived already; `None` if one
    /// is missing.
    pub fn lookup_map_type(&self, ty: &Type, map: TypeMap) -> Option<Type> {
        let mut missing = false;
        let t = map_type(ty, map, &mut |e, m| {
            self.lookup_derived_enum(e, m).unwrap_or_else(|| {
                missing = true;
                e
            })
        });
        (!missing).then_some(t)
    }

    fn origin(&self, e: EnumId) -> EnumOrigin {
        self.enum_def(e).origin.clone().unwrap_or(EnumOrigin {
            base: e,
            layers: Vec::new(),
            tangent: false,
        })
    }

    /// The normalised key of `map` applied to enum `e` (identity maps dropped).
    fn derived_key(&self, e: EnumId, map: TypeMap) -> EnumOrigin {
        let key = self.origin(e);
        let mut maps = key.layers;
        if key.tangent {
            maps.push(TypeMap::Tangent);
        }
        maps.push(map);
        self.normalise(key.base, maps)
    }

    /// The enum of function cotangents ([`FN_COTANGENT`]), created empty on first
    /// request; [`Module::fn_cotangent_variant`] adds one constructor per lambda code.
    pub fn fn_cotangent_enum(&mut self) -> EnumId {
        if let Some(e) = self.fn_cotangent {
            return e;
        }
        let id = EnumId(self.enums.len() as u32);
        self.enums.push(EnumDef {
            name: "FnCt".into(),
            variants: Vec::new(),
            origin: None,
        });
        self.fn_cotangent = Some(id);
        id
    }

    /// The constructor of [`Module::fn_cotangent_enum`] for closures of `code`: its
    /// fields are the cotangents of the code's captures, in order. Added on first
    /// request (codes translated at run time add theirs then).
    pub fn fn_cotangent_variant(&mut self, code: CodeId) -> u32 {
        let e = self.fn_cotangent_enum();
        let name = format!("Env{}", code.0);
        if let Some(tag) = self
            .enum_def(e)
            .variants
            .iter()
            .position(|v| v.name == name)
        {
            return tag as u32;
        }
        let captures: Vec<Type> = self
            .code(code)
            .captures
            .iter()
            .map(|c| self.var_ty(*c).clone())
            .collect();
        let fields = captures.iter().map(|t| self.tangent_type(t)).collect();
        let variants = &mut self.enums[e.0 as usize].variants;
        variants.push(VariantDef { name, fields });
        (variants.len() - 1) as u32
    }

    /// The canonical key of `base` under `maps` applied in order. `T` commutes with
    /// the forward layers and is idempotent, so within each run of maps between two
    /// `Delta`s it is kept once, last (just before the `Delta`, or as `tangent` at
    /// the end); it is dropped where it is the identity (at the front, on an enum
    /// with no `Int`, `Bool` or `()`); the layers are dropped on an enum without reals.
    fn normalise(&self, base: EnumId, mut maps: Vec<TypeMap>) -> EnumOrigin {
        // CHAD's primal map changes only function types, and `T` maps every function
        // type to the one enum of function cotangents: `Chad` is the identity on an
        // enum without functions, and `T∘Chad = Chad∘T = T`. (Delta and CHAD never
        // apply to the same code, so the order against `Delta` does not arise.)
        // The same holds of forward CHAD's `ChadFwd`.
        if self.enum_is_fixed(base, TypeMap::Chad) || maps.contains(&TypeMap::Tangent) {
            maps.retain(|m| !m.is_chad());
        }
        let mut layers = Vec::new();
        let mut pending_t = false;
        for m in maps {
            match m {
                TypeMap::Tangent => pending_t = true,
                TypeMap::Delta => {
                    if std::mem::take(&mut pending_t) {
                        layers.push(TypeMap::Tangent);
                    }
                    layers.push(TypeMap::Delta);
                }
                layer => layers.push(layer),
            }
        }
        if self.enum_is_fixed(base, TypeMap::Fwd) {
            let tangent = pending_t || layers.contains(&TypeMap::Tangent);
            return EnumOrigin {
                base,
                layers: Vec::new(),
                tangent: tangent && !self.enum_is_fixed(base, TypeMap::Tangent),
            };
        }
        if self.enum_is_fixed(base, TypeMap::Tangent) {
            let first_delta = layers.iter().position(|l| *l == TypeMap::Delta);
            match first_delta {
                None => pending_t = false,
                Some(d) => {
                    if let Some(t) = layers[..d].iter().position(|l| *l == TypeMap::Tangent) {
                        layers.remove(t);
                    }
                }
            }
        }
        EnumOrigin {
            base,
            layers,
            tangent: pending_t,
        }
    }

    /// Whether `map` leaves enum `e` (and every enum it contains) unchanged.
    fn enum_is_fixed(&self, e: EnumId, map: TypeMap) -> bool {
        self.is_fixed(&Type::Enum(e), map)
    }

    /// Puts the bodies of [`Module::unresolved`] in place of the resolved ones, or back:
    /// a translation of the program as written runs between two calls.
    pub fn swap_unresolved(&mut self) {
        for (c, body) in self.unresolved.iter_mut() {
            std::mem::swap(&mut self.codes[c.0 as usize].body, body);
        }
    }

    /// Whether a value of `t` can hold a function.
    pub fn can_hold_fn(&self, t: &Type) -> bool {
        self.has_leaf(t, &|t| matches!(t, Type::Fn(..)))
    }

    /// Whether a value of `t` can nest without bound: `t` reaches an enum that reaches
    /// itself (a list), so walking one recurses as deep as the value.
    pub fn can_nest_without_bound(&self, t: &Type) -> bool {
        fn go(m: &Module, t: &Type, path: &mut Vec<EnumId>, acyclic: &mut Vec<EnumId>) -> bool {
            match t {
                Type::Tuple(ts) => ts.iter().any(|t| go(m, t, path, acyclic)),
                Type::Array(t) => go(m, t, path, acyclic),
                Type::Enum(e) if path.contains(e) => true,
                Type::Enum(e) if acyclic.contains(e) => false,
                Type::Enum(e) => {
                    path.push(*e);
                    let nests = m
                        .enum_def(*e)
                        .variants
                        .iter()
                        .any(|v| v.fields.iter().any(|t| go(m, t, path, acyclic)));
                    path.pop();
                    if !nests {
                        acyclic.push(*e);
                    }
                    nests
                }
                _ => false,
            }
        }
        go(self, t, &mut Vec::new(), &mut Vec::new())
    }

    /// Whether `t` has a leaf type (a scalar, `()` or a function, reached through
    /// tuples, arrays and enum fields) satisfying `leaf`.
    pub fn has_leaf(&self, t: &Type, leaf: &dyn Fn(&Type) -> bool) -> bool {
        fn go(m: &Module, t: &Type, leaf: &dyn Fn(&Type) -> bool, seen: &mut Vec<EnumId>) -> bool {
            match t {
                Type::Tuple(ts) => ts.iter().any(|t| go(m, t, leaf, seen)),
                Type::Array(t) => go(m, t, leaf, seen),
                Type::Enum(e) => {
                    if seen.contains(e) {
                        return false;
                    }
                    seen.push(*e);
                    m.enum_def(*e)
                        .variants
                        .iter()
                        .any(|v| v.fields.iter().any(|t| go(m, t, leaf, seen)))
                }
                t => leaf(t),
            }
        }
        go(self, t, leaf, &mut Vec::new())
    }

    /// Whether `map` leaves `ty` unchanged (for `Fwd` and `Taylor`: `ty` has no reals
    /// and no functions).
    pub fn is_fixed(&self, ty: &Type, map: TypeMap) -> bool {
        fn fixed(m: &Module, t: &Type, map: TypeMap, seen: &mut Vec<EnumId>) -> bool {
            match t {
                Type::Real => map == TypeMap::Tangent || map.is_chad(),
                Type::Int | Type::Bool | Type::Unit => map != TypeMap::Tangent,
                Type::Tuple(ts) => ts.iter().all(|t| fixed(m, t, map, seen)),
                Type::Array(t) => fixed(m, t, map, seen),
                Type::Fn(..) => false,
                Type::Enum(e) => {
                    if seen.contains(e) {
                        return true;
                    }
                    seen.push(*e);
                    m.enum_def(*e)
                        .variants
                        .iter()
                        .all(|v| v.fields.iter().all(|f| fixed(m, f, map, seen)))
                }
            }
        }
        fixed(self, ty, map, &mut Vec::new())
    }

    fn lookup_derived_enum(&self, e: EnumId, map: TypeMap) -> Option<EnumId> {
        if e == FN_COTANGENT || Some(e) == self.fn_cotangent {
            // Function cotangents are their own tangent and CHAD primal type.
            return self.fn_cotangent;
        }
        let key = self.derived_key(e, map);
        if key.layers.is_empty() && !key.tangent {
            return Some(key.base);
        }
        self.derived_enums.get(&key).copied()
    }

    /// The enum `map(e)`, created on first request.
    pub fn derived_enum(&mut self, e: EnumId, map: TypeMap) -> EnumId {
        if e == FN_COTANGENT {
            return self.fn_cotangent_enum();
        }
        if let Some(id) = self.lookup_derived_enum(e, map) {
            return id;
        }
        let key = self.derived_key(e, map);
        let base = self.enum_def(key.base).clone();
        let id = EnumId(self.enums.len() as u32);
        // Consecutive forward layers count up (`Fwd2`); Taylor layers name their order.
        let mut suffix = String::new();
        let mut fwd_run = 0;
        for layer in key.layers.iter().map(Some).chain([None]) {
            if layer == Some(&TypeMap::Fwd) {
                fwd_run += 1;
                continue;
            }
            if fwd_run > 0 {
                suffix.push_str(&format!("Fwd{fwd_run}"));
                fwd_run = 0;
            }
            match layer {
                Some(TypeMap::Taylor(j)) if j.dirs == 1 => {
                    suffix.push_str(&format!("Taylor{}", j.order))
                }
                Some(TypeMap::Taylor(j)) => suffix.push_str(&format!("Jet{}x{}", j.dirs, j.order)),
                Some(TypeMap::Delta) => suffix.push_str("Delta"),
                Some(TypeMap::Deps) => suffix.push_str("Deps"),
                Some(TypeMap::Chad) => suffix.push_str("Chad"),
                Some(TypeMap::ChadFwd) => suffix.push_str("ChadFwd"),
                Some(TypeMap::Tangent) => suffix.push_str("Tan"),
                _ => {}
            }
        }
        if key.tangent {
            suffix.push_str("Tan");
        }
        self.enums.push(EnumDef {
            name: format!("{}{suffix}", base.name),
            variants: Vec::new(),
            origin: Some(key.clone()),
        });
        self.derived_enums.insert(key.clone(), id);
        let variants = base
            .variants
            .iter()
            .map(|v| VariantDef {
                name: v.name.clone(),
                fields: v
                    .fields
                    .iter()
                    .map(|f| {
                        let mut t = f.clone();
                        for layer in &key.layers {
                            t = self.map_type(&t, *layer);
                        }
                        if key.tangent {
                            t = self.tangent_type(&t);
                        }
                        t
                    })
                    .collect(),
            })
            .collect();
        self.enums[id.0 as usize].variants = variants;
        id
    }
}
