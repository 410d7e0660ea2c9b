//! Unit tests of Core on hand-built modules: the type maps `T` and `Tf` with their
//! derived enums, and the verifier.
//!
//! Modules made by elaborating source are tested in `tests/verify_elaborated.rs`: in
//! this crate's own test build, `fluxion_typeck` returns the library's `Module`, a
//! different type from `crate::Module`.

use crate::module::Module;
use crate::prim::Prim;
use crate::term::*;
use crate::ty::{EnumDef, EnumId, EnumOrigin, Type, TypeMap, VariantDef};
use crate::verify::verify_module;

// ---------------------------------------------------------------- helpers

fn tuple(ts: Vec<Type>) -> Type {
    Type::Tuple(ts)
}

fn arr(t: Type) -> Type {
    Type::array(t)
}

/// Adds enum `name` with `variants` (name, fields); fields may refer to enums by id.
fn add_enum(m: &mut Module, name: &str, variants: Vec<(&str, Vec<Type>)>) -> EnumId {
    let id = EnumId(m.enums.len() as u32);
    m.enums.push(EnumDef {
        name: name.into(),
        variants: variants
            .into_iter()
            .map(|(n, fields)| VariantDef {
                name: n.into(),
                fields,
            })
            .collect(),
        origin: None,
    });
    id
}

fn show(m: &Module, t: &Type) -> String {
    t.display(&m.enums).to_string()
}

fn enum_id(t: &Type) -> EnumId {
    match t {
        Type::Enum(e) => *e,
        other => panic!("not an enum: {other:?}"),
    }
}

// ---------------------------------------------------------------- T and Tf on structural types

#[test]
fn tangent_of_scalars() {
    let mut m = Module::default();
    assert_eq!(m.tangent_type(&Type::Real), Type::Real);
    assert_eq!(m.tangent_type(&Type::Int), Type::Unit);
    assert_eq!(m.tangent_type(&Type::Bool), Type::Unit);
    assert_eq!(m.tangent_type(&Type::Unit), Type::Unit);
}

#[test]
fn tangent_of_tuples_and_arrays() {
    let mut m = Module::default();
    // The contract's example: T((Int, [Real])) = ((), [Real]).
    let t = tuple(vec![Type::Int, arr(Type::Real)]);
    assert_eq!(m.tangent_type(&t), tuple(vec![Type::Unit, arr(Type::Real)]));
    let t = arr(tuple(vec![Type::Real, Type::Bool]));
    assert_eq!(m.tangent_type(&t), arr(tuple(vec![Type::Real, Type::Unit])));
    assert_eq!(m.tangent_type(&arr(arr(Type::Int))), arr(arr(Type::Unit)));
    assert!(
        m.enums.is_empty(),
        "no enum is derived for structural types"
    );
}

#[test]
fn fwd_pairs_every_real_and_keeps_the_rest() {
    let mut m = Module::default();
    let dual = tuple(vec![Type::Real, Type::Real]);
    assert_eq!(m.fwd_type(&Type::Real), dual);
    assert_eq!(m.fwd_type(&Type::Int), Type::Int);
    assert_eq!(m.fwd_type(&Type::Bool), Type::Bool);
    assert_eq!(
        m.fwd_type(&tuple(vec![Type::Real, Type::Int])),
        tuple(vec![dual.clone(), Type::Int])
    );
    assert_eq!(m.fwd_type(&arr(Type::Real)), arr(dual.clone()));
    assert_eq!(
        m.fwd_type(&Type::func(vec![Type::Real], Type::Int)),
        Type::func(vec![dual], Type::Int)
    );
}

#[test]
fn tangent_is_idempotent_on_structural_types() {
    let mut m = Module::default();
    let t = tuple(vec![Type::Int, arr(tuple(vec![Type::Real, Type::Bool]))]);
    let once = m.tangent_type(&t);
    assert_eq!(m.tangent_type(&once), once);
}

// ---------------------------------------------------------------- derived enums

#[test]
fn tangent_of_enum_with_int_field_is_a_derived_enum() {
    let mut m = Module::default();
    let e = add_enum(
        &mut m,
        "E",
        vec![("A", vec![Type::Real, Type::Int]), ("B", vec![])],
    );
    let t = m.tangent_type(&Type::Enum(e));
    let te = enum_id(&t);
    assert_ne!(te, e);
    let def = m.enum_def(te).clone();
    assert_eq!(def.name, "ETan");
    assert_eq!(
        def.origin,
        Some(EnumOrigin {
            base: e,
            layers: vec![],
            tangent: true
        })
    );
    // Same constructors and tags; the Int field becomes ().
    assert_eq!(def.variants.len(), 2);
    assert_eq!(def.variants[0].name, "A");
    assert_eq!(def.variants[0].fields, vec![Type::Real, Type::Unit]);
    assert_eq!(def.variants[1].name, "B");
    assert!(def.variants[1].fields.is_empty());
    assert_eq!(show(&m, &t), "ETan");
}

#[test]
fn derived_enum_is_created_once() {
    let mut m = Module::default();
    let e = add_enum(&mut m, "E", vec![("A", vec![Type::Int])]);
    let first = m.tangent_type(&Type::Enum(e));
    let n = m.enums.len();
    let again = m.tangent_type(&tuple(vec![Type::Enum(e), Type::Enum(e)]));
    assert_eq!(again, tuple(vec![first.clone(), first.clone()]));
    assert_eq!(m.enums.len(), n, "no second copy of ETan");
    // T(T(E)) = T(E).
    assert_eq!(m.tangent_type(&first), first);
    assert_eq!(m.enums.len(), n);
}

#[test]
fn tangent_of_enum_with_only_real_fields_is_the_enum_itself() {
    let mut m = Module::default();
    let e = add_enum(
        &mut m,
        "P",
        vec![
            ("Pt", vec![Type::Real, Type::Real]),
            ("Ps", vec![arr(Type::Real)]),
        ],
    );
    assert_eq!(m.tangent_type(&Type::Enum(e)), Type::Enum(e));
    assert_eq!(m.enums.len(), 1, "nothing derived");
    assert_eq!(m.lookup_tangent_type(&Type::Enum(e)), Some(Type::Enum(e)));
}

#[test]
fn fwd_of_enum_without_reals_is_the_enum_itself() {
    let mut m = Module::default();
    let e = add_enum(&mut m, "Tag", vec![("T", vec![Type::Int, Type::Bool])]);
    assert_eq!(m.fwd_type(&Type::Enum(e)), Type::Enum(e));
    assert_eq!(m.enums.len(), 1);
}

#[test]
fn fwd_of_enum_with_a_real_field_pairs_it() {
    let mut m = Module::default();
    let e = add_enum(&mut m, "E", vec![("A", vec![Type::Real, Type::Int])]);
    let f = enum_id(&m.fwd_type(&Type::Enum(e)));
    let def = m.enum_def(f);
    assert_eq!(def.name, "EFwd1");
    assert_eq!(
        def.variants[0].fields,
        vec![tuple(vec![Type::Real, Type::Real]), Type::Int]
    );
}

#[test]
fn tangent_of_fwd_and_fwd_of_tangent_are_the_same_enum() {
    let mut m = Module::default();
    let e = add_enum(&mut m, "E", vec![("A", vec![Type::Real, Type::Int])]);
    let te = m.tangent_type(&Type::Enum(e));
    let fwd_of_t = m.fwd_type(&te);
    let fe = m.fwd_type(&Type::Enum(e));
    let t_of_fwd = m.tangent_type(&fe);
    assert_eq!(fwd_of_t, t_of_fwd);
    let id = enum_id(&t_of_fwd);
    assert_eq!(
        m.enum_def(id).origin,
        Some(EnumOrigin {
            base: e,
            layers: vec![TypeMap::Fwd],
            tangent: true
        })
    );
    // Tf(T(A)) for A = (Real, Int): Tf(Real) = (Real, Real), Tf(()) = ().
    assert_eq!(
        m.enum_def(id).variants[0].fields,
        vec![tuple(vec![Type::Real, Type::Real]), Type::Unit]
    );
    // E, ETan, EFwd1 and EFwd1Tan: four enums, no duplicates.
    assert_eq!(m.enums.len(), 4, "{:?}", m.enums);
}

#[test]
fn tangent_of_fwd_and_fwd_of_tangent_agree_in_either_order_of_creation() {
    // Derive T(Tf(E)) first in one module, Tf(T(E)) first in another: each module
    // then finds the other composite as the enum it already made.
    for tangent_first in [true, false] {
        let mut m = Module::default();
        let e = add_enum(&mut m, "E", vec![("A", vec![Type::Real, Type::Int])]);
        let (a, b) = if tangent_first {
            let te = m.tangent_type(&Type::Enum(e));
            let x = m.fwd_type(&te);
            let fe = m.fwd_type(&Type::Enum(e));
            (x, m.tangent_type(&fe))
        } else {
            let fe = m.fwd_type(&Type::Enum(e));
            let x = m.tangent_type(&fe);
            let te = m.tangent_type(&Type::Enum(e));
            (x, m.fwd_type(&te))
        };
        assert_eq!(a, b, "tangent_first = {tangent_first}");
    }
}

#[test]
fn tangent_of_a_recursive_enum_refers_to_itself() {
    let mut m = Module::default();
    let l = EnumId(0);
    add_enum(
        &mut m,
        "L",
        vec![("Nil", vec![]), ("Cons", vec![Type::Int, Type::Enum(l)])],
    );
    let lt = enum_id(&m.tangent_type(&Type::Enum(l)));
    assert_eq!(m.enum_def(lt).name, "LTan");
    assert_eq!(
        m.enum_def(lt).variants[1].fields,
        vec![Type::Unit, Type::Enum(lt)]
    );
}

#[test]
fn recursive_enum_of_reals_is_its_own_tangent() {
    let mut m = Module::default();
    let l = EnumId(0);
    add_enum(
        &mut m,
        "RL",
        vec![("Nil", vec![]), ("Cons", vec![Type::Real, Type::Enum(l)])],
    );
    assert_eq!(m.tangent_type(&Type::Enum(l)), Type::Enum(l));
    assert_eq!(m.enums.len(), 1);
}

#[test]
fn tangent_of_an_enum_holding_another_enum() {
    let mut m = Module::default();
    let inner = add_enum(&mut m, "Inner", vec![("I", vec![Type::Int])]);
    let outer = add_enum(
        &mut m,
        "Outer",
        vec![("O", vec![Type::Enum(inner), Type::Real])],
    );
    let ot = enum_id(&m.tangent_type(&Type::Enum(outer)));
    let it = enum_id(&m.tangent_type(&Type::Enum(inner)));
    assert_eq!(m.enum_def(ot).name, "OuterTan");
    assert_eq!(
        m.enum_def(ot).variants[0].fields,
        vec![Type::Enum(it), Type::Real]
    );
    assert_eq!(m.enum_def(it).variants[0].fields, vec![Type::Unit]);
}

#[test]
fn lookup_tangent_type_needs_the_enum_derived_first() {
    let mut m = Module::default();
    let e = add_enum(&mut m, "E", vec![("A", vec![Type::Int])]);
    assert_eq!(m.lookup_tangent_type(&Type::Enum(e)), None);
    assert_eq!(
        m.lookup_tangent_type(&tuple(vec![Type::Int, Type::Real])),
        Some(tuple(vec![Type::Unit, Type::Real]))
    );
    let t = m.tangent_type(&Type::Enum(e));
    assert_eq!(m.lookup_tangent_type(&Type::Enum(e)), Some(t));
}

#[test]
fn dtypes_exclude_functions_anywhere_inside() {
    let mut m = Module::default();
    let plain = add_enum(&mut m, "Plain", vec![("P", vec![Type::Real, Type::Int])]);
    let holds_fn = add_enum(
        &mut m,
        "HoldsFn",
        vec![("H", vec![Type::func(vec![Type::Real], Type::Real)])],
    );
    assert!(tuple(vec![Type::Int, arr(Type::Enum(plain))]).is_dtype(&m.enums));
    assert!(!Type::func(vec![], Type::Real).is_dtype(&m.enums));
    assert!(!arr(Type::Enum(holds_fn)).is_dtype(&m.enums));
}

// ---------------------------------------------------------------- verifier

/// A module with one top-level function `main(x: Int) -> ret` whose body `make`
/// builds from the module and the parameter.
fn one_function(ret: Type, make: impl FnOnce(&mut Module, VarId) -> Body) -> Module {
    let mut m = Module::default();
    let x = m.fresh_var("x", Type::Int);
    let body = make(&mut m, x);
    let id = m.add_code(Code {
        name: "main".into(),
        kind: CodeKind::TopLevel,
        captures: vec![],
        params: vec![x],
        ret,
        body,
        span: Span::default(),
    });
    m.functions.insert("main".into(), id);
    m
}

fn bind(var: VarId, rhs: Rhs) -> Binding {
    Binding {
        var,
        rhs,
        span: Span::default(),
    }
}

fn int(i: i64) -> Atom {
    Atom::Lit(Lit::Int(i))
}

fn messages(m: &Module) -> Vec<String> {
    match verify_module(m) {
        Ok(()) => vec![],
        Err(errors) => errors.into_iter().map(|e| e.message).collect(),
    }
}

fn assert_rejected(m: &Module, needle: &str) {
    let msgs = messages(m);
    assert!(
        msgs.iter().any(|msg| msg.contains(needle)),
        "expected a complaint containing {needle:?}, got {msgs:?}"
    );
}

/// `main(x) = { let s = x + 1; s }`, well formed.
fn add_one(sum_ty: Type) -> Module {
    one_function(Type::Int, |m, x| {
        let s = m.fresh_var("s", sum_ty);
        Body {
            bindings: vec![bind(s, Rhs::Prim(Prim::Add, vec![Atom::Var(x), int(1)]))],
            result: Atom::Var(s),
        }
    })
}

#[test]
fn verifier_accepts_a_well_formed_module() {
    assert_eq!(messages(&add_one(Type::Int)), Vec::<String>::new());
}

#[test]
fn verifier_rejects_a_binding_whose_type_differs_from_its_value() {
    let m = add_one(Type::Real);
    assert_rejected(&m, "declared Real but its value has type Int");
}

#[test]
fn verifier_rejects_a_body_of_the_wrong_type() {
    let m = one_function(Type::Real, |_, x| Body {
        bindings: vec![],
        result: Atom::Var(x),
    });
    assert_rejected(&m, "body has type Int, but the function returns Real");
}

#[test]
fn verifier_rejects_a_variable_used_outside_its_branch() {
    // let r = if true { let y = 1 + 1; y } else { 0 }; y   -- y is out of scope.
    let m = one_function(Type::Int, |m, _| {
        let y = m.fresh_var("y", Type::Int);
        let r = m.fresh_var("r", Type::Int);
        let then = Body {
            bindings: vec![bind(y, Rhs::Prim(Prim::Add, vec![int(1), int(1)]))],
            result: Atom::Var(y),
        };
        let els = Body {
            bindings: vec![],
            result: int(0),
        };
        Body {
            bindings: vec![bind(
                r,
                Rhs::If(Atom::Lit(Lit::Bool(true)), Box::new(then), Box::new(els)),
            )],
            result: Atom::Var(y),
        }
    });
    assert_rejected(&m, "used out of scope");
}

#[test]
fn verifier_rejects_a_match_field_used_after_its_arm() {
    // main(s: E) = { let r = match s { A(f) => f }; f }   -- f is the arm's only.
    let mut m = Module::default();
    let e = add_enum(&mut m, "E", vec![("A", vec![Type::Int])]);
    let s = m.fresh_var("s", Type::Enum(e));
    let f = m.fresh_var("f", Type::Int);
    let r = m.fresh_var("r", Type::Int);
    let arm = Arm {
        tag: 0,
        fields: vec![f],
        body: Body {
            bindings: vec![],
            result: Atom::Var(f),
        },
    };
    let main = m.add_code(Code {
        name: "main".into(),
        kind: CodeKind::TopLevel,
        captures: vec![],
        params: vec![s],
        ret: Type::Int,
        body: Body {
            bindings: vec![bind(r, Rhs::Match(Atom::Var(s), vec![arm], None))],
            result: Atom::Var(r),
        },
        span: Span::default(),
    });
    m.functions.insert("main".into(), main);
    assert_eq!(messages(&m), Vec::<String>::new());
    m.codes[main.0 as usize].body.result = Atom::Var(f);
    assert_rejected(&m, "used out of scope");
}

/// A module whose `main(x: Int)` has the body `body` builds from `x` and the binding
/// `let f = closure(lambda, [x])`, where the lambda (code 0) captures `x` and returns
/// `x + 1` through its own binding `y`. Returns the module and `y`.
fn closure_module(body: impl FnOnce(&mut Module, VarId, Binding) -> Body) -> (Module, VarId) {
    let mut m = Module::default();
    let x = m.fresh_var("x", Type::Int);
    let y = m.fresh_var("y", Type::Int);
    let lam = m.add_code(Code {
        name: "main_lambda1".into(),
        kind: CodeKind::Lambda,
        captures: vec![x],
        params: vec![],
        ret: Type::Int,
        body: Body {
            bindings: vec![bind(y, Rhs::Prim(Prim::Add, vec![Atom::Var(x), int(1)]))],
            result: Atom::Var(y),
        },
        span: Span::default(),
    });
    let f = m.fresh_var("f", Type::func(vec![], Type::Int));
    let make = bind(f, Rhs::Closure(lam, vec![Atom::Var(x)]));
    let body = body(&mut m, x, make);
    let main = m.add_code(Code {
        name: "main".into(),
        kind: CodeKind::TopLevel,
        captures: vec![],
        params: vec![x],
        ret: Type::Int,
        body,
        span: Span::default(),
    });
    m.functions.insert("main".into(), main);
    (m, y)
}

#[test]
fn verifier_sees_the_enclosing_scope_again_after_a_lambda() {
    // main(x) = { let f = closure(lambda, [x]); let s = x + 1; s }
    let (m, _) = closure_module(|m, x, make| {
        let s = m.fresh_var("s", Type::Int);
        Body {
            bindings: vec![
                make,
                bind(s, Rhs::Prim(Prim::Add, vec![Atom::Var(x), int(1)])),
            ],
            result: Atom::Var(s),
        }
    });
    assert_eq!(messages(&m), Vec::<String>::new());
}

#[test]
fn verifier_rejects_a_lambda_binding_used_after_the_closure() {
    // main(x) = { let f = closure(lambda, [x]); y }   -- y is the lambda's own.
    let (mut m, y) = closure_module(|_, _, make| Body {
        bindings: vec![make],
        result: int(0),
    });
    assert_eq!(messages(&m), Vec::<String>::new());
    let main = m.functions["main"];
    m.codes[main.0 as usize].body.result = Atom::Var(y);
    assert_rejected(&m, "used out of scope");
}

#[test]
fn verifier_rejects_a_capture_not_in_scope_where_the_closure_is_made() {
    // main(x) = { let f = closure(lambda, [x]); let r = 2; r }, well formed; then
    // the lambda captures `r` instead, which is bound only after the closure is made.
    let (mut m, _) = closure_module(|m, _, make| {
        let r = m.fresh_var("r", Type::Int);
        Body {
            bindings: vec![make, bind(r, Rhs::Atom(int(2)))],
            result: Atom::Var(r),
        }
    });
    assert_eq!(messages(&m), Vec::<String>::new());
    let r = VarId(3);
    assert_eq!(m.vars[r.0 as usize].name, "r");
    // (The closure's argument stays `x`, so that only the code's capture is wrong.)
    m.codes[0].captures = vec![r];
    assert_rejected(&m, "captured variable 3 is not in scope");
}

#[test]
fn verifier_rejects_a_variable_bound_twice() {
    let m = one_function(Type::Int, |m, _| {
        let a = m.fresh_var("a", Type::Int);
        Body {
            bindings: vec![bind(a, Rhs::Atom(int(1))), bind(a, Rhs::Atom(int(2)))],
            result: Atom::Var(a),
        }
    });
    assert_rejected(&m, "bound twice");
}

#[test]
fn verifier_rejects_a_variable_missing_from_the_table() {
    let m = one_function(Type::Int, |_, _| Body {
        bindings: vec![bind(VarId(99), Rhs::Atom(int(1)))],
        result: int(1),
    });
    assert_rejected(&m, "no entry in the variable table");
}

#[test]
fn verifier_rejects_a_match_field_missing_from_the_table() {
    let mut m = Module::default();
    let e = add_enum(&mut m, "E", vec![("A", vec![Type::Int])]);
    let s = m.fresh_var("s", Type::Enum(e));
    let r = m.fresh_var("r", Type::Int);
    let arm = Arm {
        tag: 0,
        fields: vec![VarId(99)],
        body: Body {
            bindings: vec![],
            result: int(0),
        },
    };
    let main = m.add_code(Code {
        name: "main".into(),
        kind: CodeKind::TopLevel,
        captures: vec![],
        params: vec![s],
        ret: Type::Int,
        body: Body {
            bindings: vec![bind(r, Rhs::Match(Atom::Var(s), vec![arm], None))],
            result: Atom::Var(r),
        },
        span: Span::default(),
    });
    m.functions.insert("main".into(), main);
    assert_rejected(&m, "no entry in the variable table");
}

#[test]
fn verifier_rejects_a_non_bool_condition() {
    let m = one_function(Type::Int, |m, x| {
        let r = m.fresh_var("r", Type::Int);
        let branch = |a: Atom| Body {
            bindings: vec![],
            result: a,
        };
        Body {
            bindings: vec![bind(
                r,
                Rhs::If(
                    Atom::Var(x),
                    Box::new(branch(int(1))),
                    Box::new(branch(int(2))),
                ),
            )],
            result: Atom::Var(r),
        }
    });
    assert_rejected(&m, "condition is not Bool");
}

#[test]
fn verifier_rejects_a_primitive_on_the_wrong_types() {
    let m = one_function(Type::Int, |m, x| {
        let r = m.fresh_var("r", Type::Int);
        Body {
            bindings: vec![bind(
                r,
                Rhs::Prim(Prim::Add, vec![Atom::Var(x), Atom::Lit(Lit::Real(1.0))]),
            )],
            result: Atom::Var(r),
        }
    });
    assert_rejected(&m, "%add applied to (Int, Real)");
}

#[test]
fn verifier_rejects_a_projection_past_the_tuple() {
    let m = one_function(Type::Int, |m, x| {
        let t = m.fresh_var("t", tuple(vec![Type::Int, Type::Int]));
        let p = m.fresh_var("p", Type::Int);
        Body {
            bindings: vec![
                bind(t, Rhs::Tuple(vec![Atom::Var(x), Atom::Var(x)])),
                bind(p, Rhs::Proj(Atom::Var(t), 2)),
            ],
            result: Atom::Var(p),
        }
    });
    assert_rejected(&m, "projection .2 of (Int, Int)");
}

#[test]
fn verifier_rejects_a_direct_call_with_wrong_arguments() {
    // main(x) calls itself with a Real.
    let m = one_function(Type::Int, |m, _| {
        let r = m.fresh_var("r", Type::Int);
        Body {
            bindings: vec![bind(
                r,
                Rhs::CallDirect(CodeId(0), vec![Atom::Lit(Lit::Real(1.0))]),
            )],
            result: Atom::Var(r),
        }
    });
    assert_rejected(&m, "bad direct call of main");
}

#[test]
fn verifier_rejects_a_lambda_using_an_uncaptured_variable() {
    // main(x) = { let f = closure(lambda, []); let r = f(); r } where the lambda's
    // body returns x without capturing it.
    let mut m = Module::default();
    let x = m.fresh_var("x", Type::Int);
    let lam = m.add_code(Code {
        name: "main_lambda1".into(),
        kind: CodeKind::Lambda,
        captures: vec![],
        params: vec![],
        ret: Type::Int,
        body: Body {
            bindings: vec![],
            result: Atom::Var(x),
        },
        span: Span::default(),
    });
    let f = m.fresh_var("f", Type::func(vec![], Type::Int));
    let r = m.fresh_var("r", Type::Int);
    let main = m.add_code(Code {
        name: "main".into(),
        kind: CodeKind::TopLevel,
        captures: vec![],
        params: vec![x],
        ret: Type::Int,
        body: Body {
            bindings: vec![
                bind(f, Rhs::Closure(lam, vec![])),
                bind(r, Rhs::Call(Atom::Var(f), vec![])),
            ],
            result: Atom::Var(r),
        },
        span: Span::default(),
    });
    m.functions.insert("main".into(), main);
    assert_rejected(&m, "used out of scope");
    // Capturing x makes it well formed.
    m.codes[lam.0 as usize].captures = vec![x];
    let Rhs::Closure(_, args) = &mut m.codes[main.0 as usize].body.bindings[0].rhs else {
        unreachable!()
    };
    args.push(Atom::Var(x));
    assert_eq!(messages(&m), Vec::<String>::new());
}

#[test]
fn verifier_rejects_duplicate_match_arms_and_wrong_field_types() {
    let mut m = Module::default();
    let e = add_enum(&mut m, "E", vec![("A", vec![Type::Int]), ("B", vec![])]);
    let s = m.fresh_var("s", Type::Enum(e));
    let f1 = m.fresh_var("f1", Type::Int);
    let f2 = m.fresh_var("f2", Type::Real);
    let r = m.fresh_var("r", Type::Int);
    let arm = |fields: Vec<VarId>| Arm {
        tag: 0,
        fields,
        body: Body {
            bindings: vec![],
            result: int(0),
        },
    };
    let main = m.add_code(Code {
        name: "main".into(),
        kind: CodeKind::TopLevel,
        captures: vec![],
        params: vec![s],
        ret: Type::Int,
        body: Body {
            bindings: vec![bind(
                r,
                Rhs::Match(Atom::Var(s), vec![arm(vec![f1]), arm(vec![f2])], None),
            )],
            result: Atom::Var(r),
        },
        span: Span::default(),
    });
    m.functions.insert("main".into(), main);
    let msgs = messages(&m);
    assert!(
        msgs.iter().any(|x| x.contains("two arms for A")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|x| x.contains("field of A has the wrong type")),
        "{msgs:?}"
    );
}

#[test]
fn verifier_types_differential_operators_by_the_tangent_type() {
    // main(p: (Real, Int)) = grad(f, p) : T((Real, Int)) = (Real, ()), with f a
    // top-level function fn((Real, Int)) -> Real given as a closure.
    let mut m = Module::default();
    let q = m.fresh_var("q", tuple(vec![Type::Real, Type::Int]));
    let q0 = m.fresh_var("q0", Type::Real);
    let f = m.add_code(Code {
        name: "f".into(),
        kind: CodeKind::TopLevel,
        captures: vec![],
        params: vec![q],
        ret: Type::Real,
        body: Body {
            bindings: vec![bind(q0, Rhs::Proj(Atom::Var(q), 0))],
            result: Atom::Var(q0),
        },
        span: Span::default(),
    });
    let p = m.fresh_var("p", tuple(vec![Type::Real, Type::Int]));
    let fv = m.fresh_var("fv", m.code_ty(f));
    let g = m.fresh_var("g", tuple(vec![Type::Real, Type::Unit]));
    m.tangent_type(&tuple(vec![Type::Real, Type::Int]));
    let main = m.add_code(Code {
        name: "main".into(),
        kind: CodeKind::TopLevel,
        captures: vec![],
        params: vec![p],
        ret: tuple(vec![Type::Real, Type::Unit]),
        body: Body {
            bindings: vec![
                bind(fv, Rhs::Closure(f, vec![])),
                bind(g, Rhs::Prim(Prim::Grad, vec![Atom::Var(fv), Atom::Var(p)])),
            ],
            result: Atom::Var(g),
        },
        span: Span::default(),
    });
    m.functions.insert("f".into(), f);
    m.functions.insert("main".into(), main);
    assert_eq!(messages(&m), Vec::<String>::new());
    // Recording the gradient as (Real, Int) is wrong.
    m.vars[g.0 as usize].ty = tuple(vec![Type::Real, Type::Int]);
    m.codes[main.0 as usize].ret = tuple(vec![Type::Real, Type::Int]);
    assert_rejected(&m, "declared (Real, Int) but its value has type (Real, ())");
}

// ---------------------------------------------------------------- derived codes

/// A lambda code derived on its own (registered in `derived_codes`) whose body uses
/// `used` with `captures` as its captures: what a translation that got scoping wrong
/// would emit.
fn derived_lambda(m: &mut Module, captures: Vec<VarId>, used: VarId) -> CodeId {
    let p = m.fresh_var("p", Type::Real);
    let r = m.fresh_var("r", Type::Real);
    let id = m.add_code(Code {
        name: "g_fwd".into(),
        kind: CodeKind::Lambda,
        captures,
        params: vec![p],
        ret: Type::Real,
        body: Body {
            bindings: vec![Binding {
                var: r,
                rhs: Rhs::Prim(Prim::Mul, vec![Atom::Var(p), Atom::Var(used)]),
                span: Span::default(),
            }],
            result: Atom::Var(r),
        },
        span: Span::default(),
    });
    m.derived_codes.insert(format!("fwd#{}", id.0), id);
    id
}

#[test]
fn a_derived_code_using_a_variable_out_of_its_scope_fails_verification() {
    let mut m = Module::default();
    let c = m.fresh_var("c", Type::Real);
    derived_lambda(&mut m, vec![c], c);
    assert!(verify_module(&m).is_ok(), "a root binds its own captures");
    let stray = m.fresh_var("stray", Type::Real);
    let first = m.codes.len();
    let d = m.fresh_var("d", Type::Real);
    derived_lambda(&mut m, vec![d], stray);
    let errors = crate::verify::verify_codes_from(&m, first).expect_err("stray is bound nowhere");
    assert!(errors[0].message.contains("out of scope"), "{errors:?}");
    // Only codes from `first` on are checked; the whole module reports the same error.
    assert!(crate::verify::verify_codes_from(&m, m.codes.len()).is_ok());
    assert!(verify_module(&m).is_err());
}

/// `Δ` does not commute with `T`: `Δ(T(E))` keeps an id beside each real (`(Real,
/// Int)`) where `T(Δ(E))` has `(Real, ())`; `Δ(T(E))` and `Δ(Tf(T(E)))`-style
/// composites are each one enum however they are reached.
#[test]
fn delta_after_tangent_is_its_own_enum() {
    let mut m = Module::default();
    let e = add_enum(&mut m, "E", vec![("A", vec![Type::Real, Type::Int])]);
    let te = m.tangent_type(&Type::Enum(e));
    let delta_of_t = m.map_type(&te, TypeMap::Delta);
    let de = m.map_type(&Type::Enum(e), TypeMap::Delta);
    let t_of_delta = m.tangent_type(&de);
    assert_ne!(delta_of_t, t_of_delta);
    let pair = tuple(vec![Type::Real, Type::Int]);
    assert_eq!(
        m.enum_def(enum_id(&delta_of_t)).variants[0].fields,
        vec![pair.clone(), Type::Unit]
    );
    assert_eq!(
        m.enum_def(enum_id(&t_of_delta)).variants[0].fields,
        vec![tuple(vec![Type::Real, Type::Unit]), Type::Unit]
    );
    assert_eq!(
        m.enum_def(enum_id(&de)).variants[0].fields,
        vec![pair, Type::Int]
    );
    // Reached again, through the commuting forward layer: Δ(T(Tf(E))) = Δ(Tf(T(E))).
    let fe = m.fwd_type(&Type::Enum(e));
    let t_fe = m.tangent_type(&fe);
    let a = m.map_type(&t_fe, TypeMap::Delta);
    let f_te = m.fwd_type(&te);
    let b = m.map_type(&f_te, TypeMap::Delta);
    assert_eq!(a, b);
    // On an enum without `Int`, `Bool` or `()`, `T` is the identity: Δ(T(F)) = Δ(F).
    let f = add_enum(&mut m, "F", vec![("B", vec![Type::Real])]);
    let tf = m.tangent_type(&Type::Enum(f));
    assert_eq!(
        m.map_type(&tf, TypeMap::Delta),
        m.map_type(&Type::Enum(f), TypeMap::Delta)
    );
}

#[test]
fn only_types_reaching_a_recursive_enum_can_nest_without_bound() {
    let mut m = Module::default();
    let list = add_enum(
        &mut m,
        "L",
        vec![
            ("Nil", vec![]),
            ("Cons", vec![Type::Real, Type::Enum(EnumId(0))]),
        ],
    );
    // A and B refer to each other; C holds a list; D holds neither.
    let (a, b) = (EnumId(1), EnumId(2));
    add_enum(
        &mut m,
        "A",
        vec![("A0", vec![]), ("A1", vec![Type::Enum(b)])],
    );
    add_enum(&mut m, "B", vec![("B1", vec![Type::Enum(a)])]);
    let c = add_enum(
        &mut m,
        "C",
        vec![("C1", vec![Type::Array(Box::new(Type::Enum(list)))])],
    );
    let d = add_enum(&mut m, "D", vec![("D1", vec![Type::Real]), ("D2", vec![])]);
    for (t, nests) in [
        (Type::Enum(list), true),
        (Type::Enum(a), true),
        (Type::Enum(b), true),
        (Type::Enum(c), true),
        (Type::Tuple(vec![Type::Real, Type::Enum(c)]), true),
        (Type::Enum(d), false),
        (
            Type::Array(Box::new(Type::Array(Box::new(Type::Enum(d))))),
            false,
        ),
        (Type::Tuple(vec![Type::Real, Type::Int]), false),
    ] {
        assert_eq!(m.can_nest_without_bound(&t), nests, "{t:?}");
    }
}
