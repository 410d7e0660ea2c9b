//! The run time's side of `jet(f, x, vs, r)` as Core (docs/language.md §5; [Taylor] §3.2's
//! seeding): every real leaf x of the point becomes the jet of the curve
//! t ↦ x + Σⱼ tⱼ·vⱼ — `[x, v₀, …, v_{k−1}, 0, …, 0]`, the degree-1 coefficients being
//! the k directions' leaves in order — the translated closure is called, and each
//! coefficient α past the primal of the result, times α!, is the mixed partial
//! ∂^α/∂t^α f(x + Σⱼ tⱼ·vⱼ) at t = 0. As `push_forward.rs` does for `taylor`, the
//! walks over the types are generated helper codes, one per type and jet shape.

use fluxion_core::verify::differentiated_argument;
use fluxion_core::{Arm, Atom, CodeId, Jet, Module, Prim, Rhs, Span, Type, TypeMap};

use crate::builder::{Builder, int, real};
use crate::helpers::{call, enum_match, helper, var_of, variant_fields};
use crate::layer::{layer_name, primal_of};
use crate::mode::call_at;
use crate::push_forward::{Read, coefficient_read};

/// A code `(D(A -> B), A, [T(A)]) -> (B, [T(B)])` for functions of type `fty`, `D` the
/// translation of shape `jet` (its `dirs` the number of directions): `jet`'s value.
pub fn push_jet_code(m: &mut Module, jet: Jet, fty: &Type) -> CodeId {
    let mut b = Builder::new(m, Span::default());
    let b = &mut b;
    let Type::Fn(params, ret) = fty else {
        unreachable!("a jet of a non-function")
    };
    let layer = TypeMap::Taylor(jet);
    let a = differentiated_argument(params);
    let ret = (**ret).clone();
    let lfty = b.m.map_type(fty, layer);
    let lret = b.m.map_type(&ret, layer);
    let (ta, tb) = (b.m.tangent_type(&a), b.m.tangent_type(&ret));
    let result = Type::Tuple(vec![ret.clone(), Type::array(tb.clone())]);
    let n_params = params.len();
    let name = format!("push_{}", layer_name(layer));
    let directions = Type::array(ta.clone());
    helper(
        b,
        &name,
        fty,
        vec![lfty, a.clone(), directions.clone()],
        result,
        |b, ps| {
            let (g, x, vs) = (ps[0], ps[1], ps[2]);
            // The k directions (the caller knows their number: `jet.dirs`), each of the
            // point's shape (constructors, lengths), made dense.
            let xv = var_of(b, x);
            let dense = b.closure("direction", vec![ta.clone()], |b, v| {
                b.prim(Prim::CheckDirection, &[Atom::Var(xv), v[0]], Type::Unit);
                b.prim(Prim::TanDense, &[Atom::Var(xv), v[0]], ta.clone())
            });
            let vs = b.prim(Prim::Map, &[dense, vs], directions.clone());
            let point = combine(b, jet, &a, x, vs);
            let r = call_at(b, g, point, n_params, lret);
            let y = primal_of(b, layer, &ret, r);
            let rv = var_of(b, r);
            let coef = b.lambda("partial", &[rv], vec![Type::Int], |b, j| {
                let j = b.arith(Prim::Add, &[j[0], int(1)]);
                let read = Read::Partial(jet);
                coefficient_read(b, layer, &ret, Atom::Var(rv), j, read)
            });
            let count = int(jet.coefficients() as i64 - 1);
            let rest = b.prim(Prim::Build, &[count, coef], Type::array(tb));
            b.tuple("jet", vec![y, rest])
        },
    )
}

/// `x: A` as `D(A)`, each real leaf moving along the k directions `vs: [T(A)]`.
fn combine(b: &mut Builder, jet: Jet, ty: &Type, x: Atom, vs: Atom) -> Atom {
    let layer = TypeMap::Taylor(jet);
    match ty {
        Type::Real => return leaf(b, jet, x, vs),
        _ if b.m.is_fixed(ty, layer) => return x,
        _ => {}
    }
    let lty = b.m.map_type(ty, layer);
    let tty = b.m.tangent_type(ty);
    // Not `push_forward.rs`'s "combine" helper (one direction).
    let name = format!("combine_directions_{}", layer_name(layer));
    let code = helper(
        b,
        &name,
        ty,
        vec![ty.clone(), Type::array(tty.clone())],
        lty.clone(),
        |b, ps| {
            let (x, vs) = (ps[0], ps[1]);
            match ty {
                Type::Tuple(ts) => {
                    let parts = ts
                        .iter()
                        .enumerate()
                        .map(|(i, t)| {
                            let xi = b.proj(&x, i);
                            let tt = b.m.tangent_type(t);
                            let pick =
                                b.closure("component", vec![tty.clone()], |b, v| b.proj(&v[0], i));
                            let vi = b.prim(Prim::Map, &[pick, vs], Type::array(tt));
                            combine(b, jet, t, xi, vi)
                        })
                        .collect();
                    b.tuple("combined", parts)
                }
                Type::Array(elem) => {
                    let elem = (**elem).clone();
                    let telem = b.m.tangent_type(&elem);
                    let n = b.prim(Prim::Length, &[x], Type::Int);
                    let each = b.closure("combine_elem", vec![Type::Int], |b, i| {
                        let xi = b.prim(Prim::Index, &[x, i[0]], elem.clone());
                        let pick = b.closure("element", vec![tty.clone()], |b, v| {
                            b.prim(Prim::Index, &[v[0], i[0]], telem.clone())
                        });
                        let vi = b.prim(Prim::Map, &[pick, vs], Type::array(telem.clone()));
                        combine(b, jet, &elem, xi, vi)
                    });
                    b.prim(Prim::Build, &[n, each], lty.clone())
                }
                Type::Enum(e) => {
                    let Type::Enum(le) = lty.clone() else {
                        unreachable!("the translation of an enum")
                    };
                    let Type::Enum(te) = tty.clone() else {
                        unreachable!("the tangent of an enum with reals")
                    };
                    let tfields = variant_fields(b, te);
                    enum_match(b, *e, x, lty.clone(), |b, xs, tys, tag| {
                        // Each direction has `x`'s constructor (checked before).
                        let parts = tys
                            .iter()
                            .zip(xs)
                            .enumerate()
                            .map(|(i, (t, xi))| {
                                let tt = tfields[tag as usize][i].clone();
                                let field = field_of(b, te, tag, i, &tfields[tag as usize]);
                                let pick = b.closure("field", vec![tty.clone()], |b, v| {
                                    b.emit(
                                        "direction_field",
                                        Rhs::CallDirect(field, vec![v[0]]),
                                        tt.clone(),
                                    )
                                });
                                let vi = b.prim(Prim::Map, &[pick, vs], Type::array(tt));
                                combine(b, jet, t, *xi, vi)
                            })
                            .collect();
                        b.emit("combined", Rhs::Ctor(le, tag, parts), lty.clone())
                    })
                }
                _ => x,
            }
        },
    );
    call(b, code, vec![x, vs])
}

/// A code `T(E) -> F`: field `i` of constructor `tag` of the tangent enum `te`.
fn field_of(
    b: &mut Builder,
    te: fluxion_core::EnumId,
    tag: u32,
    i: usize,
    fields: &[Type],
) -> CodeId {
    let fty = fields[i].clone();
    let name = format!("direction_field_{tag}_{i}");
    let fields = fields.to_vec();
    helper(
        b,
        &name,
        &Type::Enum(te),
        vec![Type::Enum(te)],
        fty.clone(),
        |b, ps| {
            let vars: Vec<_> = fields.iter().map(|t| b.fresh("d", t.clone())).collect();
            let picked = Atom::Var(vars[i]);
            let body = b.block(|_| picked);
            let fail = b.block(|b| b.prim(Prim::MatchFail, &[], fty.clone()));
            let arm = Arm {
                tag,
                fields: vars,
                body,
            };
            b.emit(
                "field",
                Rhs::Match(ps[0], vec![arm], Some(Box::new(fail))),
                fty.clone(),
            )
        },
    )
}

/// The jet `[x, v₀, …, v_{k−1}, 0, …, 0]` of a real moving along `vs: [Real]`.
fn leaf(b: &mut Builder, jet: Jet, x: Atom, vs: Atom) -> Atom {
    let k = i64::from(jet.dirs);
    let (xv, vv) = (var_of(b, x), var_of(b, vs));
    let f = b.lambda("coefficient", &[xv, vv], vec![Type::Int], |b, i| {
        let first = b.cmp(Prim::Eq, i[0], int(0));
        b.if_(
            first,
            Type::Real,
            |_| Atom::Var(xv),
            |b| {
                let linear = b.cmp(Prim::Le, i[0], int(k));
                b.if_(
                    linear,
                    Type::Real,
                    |b| {
                        let j = b.sub(i[0], int(1));
                        b.prim(Prim::Index, &[Atom::Var(vv), j], Type::Real)
                    },
                    |_| real(0.0),
                )
            },
        )
    });
    let c = int(jet.coefficients() as i64);
    b.prim(Prim::Build, &[c, f], Type::array(Type::Real))
}
