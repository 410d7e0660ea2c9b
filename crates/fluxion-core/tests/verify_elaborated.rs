//! The verifier on modules elaborated from source and then broken by hand, and the
//! type maps on enums declared in source.
//!
//! These live in an integration test rather than in `src/tests.rs`: in the crate's
//! own unit-test build, `fluxion_typeck` returns the library's `Module`, which is a
//! different type from the test build's `crate::Module`.

use fluxion_core::verify::verify_module;
use fluxion_core::{Atom, Binding, CodeId, CodeKind, Module, Prim, Rhs, Type};

const PROGRAM: &str = "
enum Shape { Circle(Real), Rect(Real, Real) }

fn area(s: Shape) -> Real {
    match s { Circle(r) => 3.0 * r * r, Rect(w, h) => w * h }
}

fn main(k: Real, xs: [Real]) -> Real {
    let scaled = map(|x| x * k, xs);
    let big = if k > 1.0 { let t = k * 2.0; t } else { k };
    sum(scaled) + big + area(Circle(k))
}
";

fn elaborate(src: &str) -> Module {
    let parse = fluxion_syntax::parse_module(src, 0);
    assert!(parse.errors.is_empty(), "{:?}", parse.errors);
    fluxion_typeck::elaborate_program(&[&parse.module]).unwrap_or_else(|e| panic!("{e:?}"))
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

fn main_id(m: &Module) -> CodeId {
    m.functions["main"]
}

/// The lambda `|x| x * k` of `main`.
fn lambda_id(m: &Module) -> CodeId {
    let i = m
        .codes
        .iter()
        .position(|c| c.kind == CodeKind::Lambda && c.name == "main_lambda1")
        .expect("main's lambda");
    CodeId(i as u32)
}

#[test]
fn elaborated_program_verifies() {
    assert_eq!(messages(&elaborate(PROGRAM)), Vec::<String>::new());
}

#[test]
fn changed_binding_type_is_rejected() {
    let mut m = elaborate(PROGRAM);
    // The first `*` in `area` (3.0 * r) computes a Real; record it as Int.
    let area = m.functions["area"];
    let mut target = None;
    walk(&m.code(area).body, &mut |b| {
        if target.is_none() && matches!(b.rhs, Rhs::Prim(Prim::Mul, _)) {
            target = Some(b.var);
        }
    });
    let v = target.expect("a multiplication in area");
    m.vars[v.0 as usize].ty = Type::Int;
    assert_rejected(&m, "declared Int but its value has type Real");
}

#[test]
fn variable_used_outside_its_if_branch_is_rejected() {
    let mut m = elaborate(PROGRAM);
    let main = main_id(&m);
    // `t` is bound inside the `then` branch of the `if`; return it from main.
    let t = m
        .vars
        .iter()
        .position(|v| v.name == "t")
        .expect("variable t");
    m.codes[main.0 as usize].body.result = Atom::Var(fluxion_core::VarId(t as u32));
    assert_rejected(&m, "used out of scope");
}

#[test]
fn lambda_without_its_capture_is_rejected() {
    let mut m = elaborate(PROGRAM);
    let lam = lambda_id(&m);
    assert_eq!(m.code(lam).captures.len(), 1, "the lambda captures k");
    // Drop the capture from the code and from the closure that makes it.
    m.codes[lam.0 as usize].captures.clear();
    let main = main_id(&m);
    for b in &mut m.codes[main.0 as usize].body.bindings {
        if let Rhs::Closure(c, args) = &mut b.rhs
            && *c == lam
        {
            args.clear();
        }
    }
    assert_rejected(&m, "used out of scope");
}

#[test]
fn closure_with_wrong_capture_types_is_rejected() {
    let mut m = elaborate(PROGRAM);
    let lam = lambda_id(&m);
    let main = main_id(&m);
    // Make the closure capture `xs` ([Real]) where the code captures `k` (Real).
    let xs = m.code(main).params[1];
    for b in &mut m.codes[main.0 as usize].body.bindings {
        if let Rhs::Closure(c, args) = &mut b.rhs
            && *c == lam
        {
            args[0] = Atom::Var(xs);
        }
    }
    assert_rejected(&m, "captures the wrong types");
}

#[test]
fn wrong_return_type_is_rejected() {
    let mut m = elaborate(PROGRAM);
    let area = m.functions["area"];
    m.codes[area.0 as usize].ret = Type::Int;
    assert_rejected(&m, "body has type Real, but the function returns Int");
}

#[test]
fn binding_a_variable_twice_is_rejected() {
    let mut m = elaborate(PROGRAM);
    let main = main_id(&m);
    let body = &mut m.codes[main.0 as usize].body;
    let first: Binding = body.bindings[0].clone();
    let last = body.bindings.len();
    body.bindings.insert(last, first);
    assert_rejected(&m, "bound twice");
}

#[test]
fn constructor_with_wrong_field_types_is_rejected() {
    let mut m = elaborate(PROGRAM);
    // Circle's field becomes an Int; `Circle(k)` passes a Real.
    m.enums[0].variants[0].fields = vec![Type::Int];
    assert_rejected(&m, "bad constructor 0 of Shape");
}

#[test]
fn source_enum_tangent_types() {
    let mut m = elaborate(
        "enum Shape { Circle(Real, Int), Square(Real) }\n\
         enum Pt { P(Real, Real) }\n\
         fn main() -> Int { 1 }",
    );
    let shape = Type::Enum(fluxion_core::EnumId(0));
    let pt = Type::Enum(fluxion_core::EnumId(1));
    let st = m.tangent_type(&shape);
    assert_eq!(st.display(&m.enums).to_string(), "ShapeTan");
    let Type::Enum(st_id) = st else { panic!() };
    assert_eq!(
        m.enum_def(st_id).variants[0].fields,
        vec![Type::Real, Type::Unit]
    );
    // Only reals: its own tangent.
    assert_eq!(m.tangent_type(&pt), pt);
    // T(Tf(Shape)) and Tf(T(Shape)) are one enum.
    let f = m.fwd_type(&shape);
    let a = m.tangent_type(&f);
    let b = m.fwd_type(&st);
    assert_eq!(a, b);
    assert_eq!(messages(&m), Vec::<String>::new());
}

#[test]
fn tangent_enum_named_in_source_is_the_derived_enum() {
    let mut m = elaborate(
        "enum Shape { Circle(Real, Int) }\n\
         fn area(s: Shape) -> Real { match s { Circle(r, n) => r * to_real(n) } }\n\
         fn g(s: Shape) -> ShapeTan { grad(area, s) }",
    );
    let g = m.functions["g"];
    let declared = m.code(g).ret.clone();
    let shape = Type::Enum(fluxion_core::EnumId(0));
    assert_eq!(m.tangent_type(&shape), declared);
    assert_eq!(messages(&m), Vec::<String>::new());
}

/// Calls `f` on every binding of `body`, including those in nested bodies.
fn walk(body: &fluxion_core::Body, f: &mut dyn FnMut(&Binding)) {
    for b in &body.bindings {
        f(b);
        match &b.rhs {
            Rhs::If(_, t, e) => {
                walk(t, f);
                walk(e, f);
            }
            Rhs::Match(_, arms, default) => {
                for arm in arms {
                    walk(&arm.body, f);
                }
                if let Some(d) = default {
                    walk(d, f);
                }
            }
            _ => {}
        }
    }
}
