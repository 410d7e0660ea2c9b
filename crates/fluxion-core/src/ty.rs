//! Core types (docs/language.md §2) and the tangent type map `T(A)` (§5).

use std::fmt;

/// Index of an enum definition in [`crate::Module::enums`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EnumId(pub u32);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Real,
    Int,
    Bool,
    Unit,
    /// Two or more components.
    Tuple(Vec<Type>),
    Array(Box<Type>),
    Fn(Vec<Type>, Box<Type>),
    Enum(EnumId),
}

/// One constructor of a user enum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariantDef {
    pub name: String,
    pub fields: Vec<Type>,
}

/// A user enum (sum type), possibly recursive through `Type::Enum`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnumDef {
    pub name: String,
    pub variants: Vec<VariantDef>,
    /// For an enum the compiler derived (a tangent or forward type), where it comes
    /// from; its constructors keep the base enum's names and tags.
    pub origin: Option<EnumOrigin>,
}

/// A derived enum is `base` with the translation `layers` applied in order, then `T`
/// if `tangent`. `T` commutes with the forward layers ([`TypeMap::Fwd`],
/// [`TypeMap::Taylor`]) and is idempotent, so it is kept last; a [`TypeMap::Delta`]
/// applied after `T` does not commute with it, so that `T` is kept in `layers`, in
/// order, before the `Delta`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EnumOrigin {
    pub base: EnumId,
    pub layers: Vec<TypeMap>,
    pub tangent: bool,
}

/// A type map with a derived-enum case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeMap {
    /// `T(A)` of docs/language.md §5: `Int`, `Bool`, `()` leaves become `()`.
    Tangent,
    /// The forward-mode translation `Tf`: `Real` becomes `(Real, Real)` (primal,
    /// tangent); every other constructor maps to itself ([Delta] §4, [Taylor] §3).
    Fwd,
    /// The jet translation `D_(k,R)` ([Taylor] §2.2 and §3.2): `Real` becomes `[Real]`, its
    /// [`Jet::coefficients`] Taylor coefficients (each partial divided by α!) in graded order;
    /// everything else maps to itself. One direction is Taylor mode of order R.
    Taylor(Jet),
    /// The dependency translation of `sparsity` ([CHAD] §11.3's Boolean semiring,
    /// forward): `Real` becomes `(Real, [Int])`, its value and the ascending set of the
    /// inputs a chain of real operations carried to it; everything else maps to itself.
    Deps,
    /// The reverse-mode translation by dual numbers with deltas ([Delta] §7): `Real`
    /// becomes `(Real, Int)` (primal, the id of its delta on the current tape);
    /// everything else maps to itself. Unlike the forward layers it does not commute
    /// with `T`: `Delta(T(A))` carries ids where `T(Delta(A))` has `()`.
    Delta,
    /// The primal types of reverse CHAD ([CHAD] §7.5, `Dr(A)1`): every type to
    /// itself but a function type, whose values return their result paired with its
    /// backpropagator: `Dr(A -> B)1 = Dr(A)1 -> (Dr(B)1, fn(T(B)) -> (T(A), FnCt))`
    /// (see [`chad_backprop_result`]). First-order types are fixed.
    Chad,
    /// The primal types of forward CHAD ([CHAD] §7.5, `Df(A)1`): every type to
    /// itself but a function type, whose values return their result paired with its
    /// pushforward, the linear map from the tangents of the arguments and of the
    /// captures to the result's tangent:
    /// `Df(A -> B)1 = Df(A)1 -> (Df(B)1, fn(T(A), FnCt) -> T(B))`. The dual of
    /// [`TypeMap::Chad`]; first-order types are fixed.
    ChadFwd,
}

/// The shape of a (k,R)-jet ([Taylor] §2.2): `dirs` = k directions, derivatives up to
/// `order` = R. Its coefficients are indexed by the multi-indices α ∈ ℕ^k with
/// |α| ≤ R, in graded order: by |α|, then the first direction's exponent largest first
/// ((0,0), (1,0), (0,1), (2,0), (1,1), (0,2) for k = R = 2; docs/language.md §5's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Jet {
    pub dirs: u32,
    pub order: u32,
}

impl Jet {
    /// Taylor mode of order `order`: one direction.
    pub fn series(order: u32) -> Jet {
        Jet { dirs: 1, order }
    }

    /// The number of coefficients, C = binom(R + k, k).
    pub fn coefficients(self) -> usize {
        let (k, r) = (self.dirs as usize, self.order as usize);
        (1..=k).fold(1usize, |c, i| c * (r + i) / i)
    }

    /// The multi-indices in graded order (the coefficients' order).
    pub fn multi_indices(self) -> Vec<Vec<u32>> {
        /// Every α ∈ ℕ^k with |α| = d, the first exponent largest first.
        fn of_degree(k: u32, d: u32, out: &mut Vec<Vec<u32>>, prefix: &mut Vec<u32>) {
            if k == 1 {
                prefix.push(d);
                out.push(prefix.clone());
                prefix.pop();
                return;
            }
            for first in (0..=d).rev() {
                prefix.push(first);
                of_degree(k - 1, d - first, out, prefix);
                prefix.pop();
            }
        }
        let mut out = Vec::with_capacity(self.coefficients());
        for d in 0..=self.order {
            of_degree(self.dirs, d, &mut out, &mut Vec::new());
        }
        out
    }
}

impl TypeMap {
    /// The two CHAD maps: they change function types only.
    pub fn is_chad(self) -> bool {
        matches!(self, TypeMap::Chad | TypeMap::ChadFwd)
    }
}

/// Stands, in `map_type`'s `derive` callback, for the one enum of function cotangents
/// (`Module::fn_cotangent_enum`): `T(A -> B)` is that enum, whatever `A` and `B` are.
/// A function value's cotangent is the cotangent of what it captured (CHAD's copower
/// `!A ⊗ T(B)`, folded at each call: [CHAD] §7.5 with the closure-conversion of
/// "Efficient CHAD"); each lambda code is one constructor, whose fields are its
/// captures' cotangents.
pub const FN_COTANGENT: EnumId = EnumId(u32::MAX);

/// What a CHAD backpropagator returns for a function with parameter types `params`:
/// their cotangents and the cotangent of the function's captures (`fn_ct`), as one
/// tuple (just `fn_ct` when there are no parameters).
pub fn chad_backprop_result(params: Vec<Type>, fn_ct: Type) -> Type {
    if params.is_empty() {
        return fn_ct;
    }
    let mut parts = params;
    parts.push(fn_ct);
    Type::Tuple(parts)
}

/// Applies `map` to `ty`; `derive` gives the image of an enum.
pub fn map_type(
    ty: &Type,
    map: TypeMap,
    derive: &mut dyn FnMut(EnumId, TypeMap) -> EnumId,
) -> Type {
    match ty {
        Type::Real => match map {
            TypeMap::Tangent => Type::Real,
            TypeMap::Fwd => Type::Tuple(vec![Type::Real, Type::Real]),
            TypeMap::Taylor(_) => Type::array(Type::Real),
            TypeMap::Deps => Type::Tuple(vec![Type::Real, Type::array(Type::Int)]),
            TypeMap::Delta => Type::Tuple(vec![Type::Real, Type::Int]),
            TypeMap::Chad | TypeMap::ChadFwd => Type::Real,
        },
        Type::Int | Type::Bool | Type::Unit => match map {
            TypeMap::Tangent => Type::Unit,
            _ => ty.clone(),
        },
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| map_type(t, map, derive)).collect()),
        Type::Array(t) => Type::array(map_type(t, map, derive)),
        Type::Fn(..) if map == TypeMap::Tangent => Type::Enum(derive(FN_COTANGENT, map)),
        Type::Fn(ps, r) if map == TypeMap::Chad => {
            let tangent = |t: &Type, derive: &mut dyn FnMut(EnumId, TypeMap) -> EnumId| {
                map_type(t, TypeMap::Tangent, derive)
            };
            let fn_ct = Type::Enum(derive(FN_COTANGENT, TypeMap::Tangent));
            let cts = ps.iter().map(|p| tangent(p, derive)).collect();
            let backprop = Type::func(vec![tangent(r, derive)], chad_backprop_result(cts, fn_ct));
            Type::func(
                ps.iter().map(|t| map_type(t, map, derive)).collect(),
                Type::Tuple(vec![map_type(r, map, derive), backprop]),
            )
        }
        Type::Fn(ps, r) if map == TypeMap::ChadFwd => {
            let mut inputs: Vec<Type> = ps
                .iter()
                .map(|p| map_type(p, TypeMap::Tangent, derive))
                .collect();
            inputs.push(Type::Enum(derive(FN_COTANGENT, TypeMap::Tangent)));
            let pushforward = Type::func(inputs, map_type(r, TypeMap::Tangent, derive));
            Type::func(
                ps.iter().map(|t| map_type(t, map, derive)).collect(),
                Type::Tuple(vec![map_type(r, map, derive), pushforward]),
            )
        }
        Type::Fn(ps, r) => Type::func(
            ps.iter().map(|t| map_type(t, map, derive)).collect(),
            map_type(r, map, derive),
        ),
        Type::Enum(e) => Type::Enum(derive(*e, map)),
    }
}

impl Type {
    pub fn array(elem: Type) -> Type {
        Type::Array(Box::new(elem))
    }

    pub fn func(params: Vec<Type>, ret: Type) -> Type {
        Type::Fn(params, Box::new(ret))
    }

    /// Whether values of this type are differentiable data (a D-type, §5): no functions.
    pub fn is_dtype(&self, enums: &[EnumDef]) -> bool {
        fn go(t: &Type, enums: &[EnumDef], seen: &mut Vec<EnumId>) -> bool {
            match t {
                Type::Real | Type::Int | Type::Bool | Type::Unit => true,
                Type::Tuple(ts) => ts.iter().all(|t| go(t, enums, seen)),
                Type::Array(t) => go(t, enums, seen),
                Type::Fn(..) => false,
                Type::Enum(id) => {
                    if seen.contains(id) {
                        return true;
                    }
                    seen.push(*id);
                    enums[id.0 as usize]
                        .variants
                        .iter()
                        .all(|v| v.fields.iter().all(|f| go(f, enums, seen)))
                }
            }
        }
        go(self, enums, &mut Vec::new())
    }

    /// Displays the type with enum names resolved.
    pub fn display<'a>(&'a self, enums: &'a [EnumDef]) -> TypeDisplay<'a> {
        TypeDisplay { ty: self, enums }
    }
}

pub struct TypeDisplay<'a> {
    ty: &'a Type,
    enums: &'a [EnumDef],
}

impl fmt::Display for TypeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let enums = self.enums;
        match self.ty {
            Type::Real => write!(f, "Real"),
            Type::Int => write!(f, "Int"),
            Type::Bool => write!(f, "Bool"),
            Type::Unit => write!(f, "()"),
            Type::Tuple(ts) => {
                write!(f, "(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", t.display(enums))?;
                }
                write!(f, ")")
            }
            Type::Array(t) => write!(f, "[{}]", t.display(enums)),
            Type::Fn(ps, r) => {
                write!(f, "fn(")?;
                for (i, t) in ps.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", t.display(enums))?;
                }
                write!(f, ") -> {}", r.display(enums))
            }
            Type::Enum(id) => match enums.get(id.0 as usize) {
                Some(def) => write!(f, "{}", def.name),
                None => write!(f, "Enum#{}", id.0),
            },
        }
    }
}
