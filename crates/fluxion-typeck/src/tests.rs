//! Unit tests of inference and elaboration: what types are inferred, that the Core
//! produced passes the verifier, and what type errors say.

use fluxion_core::verify::verify_module;
use fluxion_core::{CodeKind, Module, Type};

use crate::elaborate_program;

// ---------------------------------------------------------------- helpers

fn parse(src: &str) -> fluxion_syntax::ast::Module {
    let parse = fluxion_syntax::parse_module(src, 0);
    assert!(parse.errors.is_empty(), "syntax errors: {:?}", parse.errors);
    parse.module
}

/// Elaborates `src`, which must type-check; the result must pass the verifier.
fn elab(src: &str) -> Module {
    let ast = parse(src);
    let module = match elaborate_program(&[&ast]) {
        Ok(m) => m,
        Err(errors) => panic!("type errors: {errors:?}"),
    };
    if let Err(errors) = verify_module(&module) {
        panic!("verifier rejects the elaborated module: {errors:?}");
    }
    module
}

/// The messages of the type errors of `src`, which must not type-check.
fn errors(src: &str) -> Vec<String> {
    let ast = parse(src);
    match elaborate_program(&[&ast]) {
        Ok(_) => panic!("expected type errors for:\n{src}"),
        Err(errors) => errors.into_iter().map(|e| e.message).collect(),
    }
}

fn show(m: &Module, t: &Type) -> String {
    t.display(&m.enums).to_string()
}

/// The type of top-level function `name`, as source would spell it.
fn fn_ty(m: &Module, name: &str) -> String {
    show(m, &m.code_ty(m.functions[name]))
}

/// The type of the lambda code `name` (lambdas are named `<fn>_lambda<n>`).
fn lambda_ty(m: &Module, name: &str) -> String {
    let (i, _) = m
        .codes
        .iter()
        .enumerate()
        .find(|(_, c)| c.kind == CodeKind::Lambda && c.name == name)
        .unwrap_or_else(|| {
            let names: Vec<&str> = m.codes.iter().map(|c| c.name.as_str()).collect();
            panic!("no lambda {name} among {names:?}")
        });
    show(m, &m.code_ty(fluxion_core::CodeId(i as u32)))
}

fn assert_mentions(messages: &[String], needles: &[&str]) {
    assert!(
        messages
            .iter()
            .any(|m| needles.iter().all(|n| m.contains(n))),
        "no message mentions all of {needles:?}: {messages:?}"
    );
}

// ---------------------------------------------------------------- inference

#[test]
fn signature_types_are_recorded_on_top_level_codes() {
    let m = elab("fn f(x: Real, n: Int, xs: [(Bool, ())]) -> [Real] { [x] }");
    assert_eq!(fn_ty(&m, "f"), "fn(Real, Int, [(Bool, ())]) -> [Real]");
}

#[test]
fn lambda_parameter_is_inferred_from_the_array_given_to_map() {
    let m = elab("fn f(xs: [Int]) -> [Int] { map(|x| x * 2, xs) }");
    assert_eq!(lambda_ty(&m, "f_lambda1"), "fn(Int) -> Int");
}

#[test]
fn projection_in_lambda_learns_the_tuple_type_from_map() {
    // `p.0` needs p's type; the lambda is checked after `pairs`, which fixes it.
    let m = elab("fn f(pairs: [(Real, Int)]) -> [Real] { map(|p| p.0, pairs) }");
    assert_eq!(lambda_ty(&m, "f_lambda1"), "fn((Real, Int)) -> Real");
}

#[test]
fn tuple_pattern_lambda_parameter() {
    let m = elab("fn f(pairs: [(Real, Int)]) -> [Real] { map(|(a, n)| a * to_real(n), pairs) }");
    assert_eq!(lambda_ty(&m, "f_lambda1"), "fn((Real, Int)) -> Real");
}

#[test]
fn two_parameter_lambda_in_fold() {
    // fold: fn(A, B) -> A, A, [B]; A = (Real, Int) from the initial value, B = Real
    // from xs.
    let m = elab(
        "fn f(xs: [Real]) -> (Real, Int) { fold(|acc, x| (acc.0 + x, acc.1 + 1), (0.0, 0), xs) }",
    );
    assert_eq!(
        lambda_ty(&m, "f_lambda1"),
        "fn((Real, Int), Real) -> (Real, Int)"
    );
}

#[test]
fn two_parameter_lambda_in_map2_and_scan() {
    let m = elab(
        "fn f(xs: [Real], ns: [Int]) -> [Real] { map2(|x, n| x * to_real(n), xs, ns) }\n\
         fn g(ns: [Int]) -> [Int] { scan(|a, b| a + b, 0, ns) }",
    );
    assert_eq!(lambda_ty(&m, "f_lambda1"), "fn(Real, Int) -> Real");
    assert_eq!(lambda_ty(&m, "g_lambda1"), "fn(Int, Int) -> Int");
}

#[test]
fn builtin_as_a_value_is_eta_expanded() {
    let m = elab("fn f(xs: [Real]) -> [Real] { map(sqrt, xs) }");
    // `sqrt` becomes a lambda `|x| sqrt(x)` of type fn(Real) -> Real.
    assert_eq!(lambda_ty(&m, "f_lambda1"), "fn(Real) -> Real");
}

#[test]
fn polymorphic_builtin_as_a_value_is_instantiated_by_its_use() {
    let m = elab("fn f() -> Int { let m = max; m(1, 2) }");
    assert_eq!(lambda_ty(&m, "f_lambda1"), "fn(Int, Int) -> Int");
    let m = elab("fn g(xs: [Int], ys: [Int]) -> [Int] { map2(min, xs, ys) }");
    assert_eq!(lambda_ty(&m, "g_lambda1"), "fn(Int, Int) -> Int");
}

#[test]
fn top_level_function_as_a_value() {
    let m = elab(
        "fn sq(x: Real) -> Real { x * x }\n\
         fn f(xs: [Real]) -> [Real] { map(sq, xs) }",
    );
    assert_eq!(fn_ty(&m, "f"), "fn([Real]) -> [Real]");
}

#[test]
fn constructors_as_values() {
    let m = elab(
        "enum Shape { Circle(Real), Rect(Real, Real), Dot }\n\
         fn f(rs: [Real]) -> [Shape] { map(Circle, rs) }\n\
         fn g(ws: [Real], hs: [Real]) -> [Shape] { map2(Rect, ws, hs) }\n\
         fn h(n: Int) -> [Shape] { replicate(n, Dot) }",
    );
    assert_eq!(lambda_ty(&m, "f_lambda1"), "fn(Real) -> Shape");
    assert_eq!(lambda_ty(&m, "g_lambda1"), "fn(Real, Real) -> Shape");
    // A constructor without fields is a value of the enum, not a function.
    assert!(
        !m.codes
            .iter()
            .any(|c| c.kind == CodeKind::Lambda && c.name.starts_with("h_"))
    );
}

#[test]
fn sum_is_polymorphic_over_tuples_and_arrays() {
    let m = elab(
        "fn f(ps: [(Real, Int)]) -> (Real, Int) { sum(ps) }\n\
         fn g(rows: [[Real]]) -> [Real] { sum(rows) }\n\
         fn h(xs: [(Real, [Real])]) -> (Real, [Real]) { sum(xs) }\n\
         fn k(ns: [Int]) -> Int { sum(ns) }",
    );
    assert_eq!(fn_ty(&m, "f"), "fn([(Real, Int)]) -> (Real, Int)");
    assert_eq!(fn_ty(&m, "h"), "fn([(Real, [Real])]) -> (Real, [Real])");
}

#[test]
fn let_annotation_and_tuple_let_pattern() {
    let m = elab(
        "fn f(t: (Int, (Real, Bool))) -> Real { let (n, (x, _)): (Int, (Real, Bool)) = t; x * to_real(n) }",
    );
    assert_eq!(fn_ty(&m, "f"), "fn((Int, (Real, Bool))) -> Real");
}

#[test]
fn lambda_called_through_a_variable() {
    let m = elab("fn f(a: Int) -> Int { let add = |x, y| x + y + a; add(1, 2) }");
    assert_eq!(lambda_ty(&m, "f_lambda1"), "fn(Int, Int) -> Int");
    // It captures `a`.
    let lam = m.codes.iter().find(|c| c.name == "f_lambda1").unwrap();
    assert_eq!(lam.captures.len(), 1);
}

#[test]
fn a_later_let_shadows_an_earlier_one() {
    elab("fn f() -> Real { let x = 1; let x = to_real(x) * 2.0; x }");
}

#[test]
fn inner_block_bindings_end_with_the_block() {
    // The inner `x` (Real) shadows the outer one (Int) only inside the block.
    elab("fn f() -> Int { let x = 1; let y = { let x = 2.0; x * 2.0 }; x }");
    assert_mentions(
        &errors("fn f() -> Real { let y = { let z = 1.0; z }; z }"),
        &["unknown variable `z`"],
    );
}

#[test]
fn lambda_parameters_shadow_only_inside_the_lambda() {
    let m = elab("fn f(x: Int) -> Int { let g = |x: Real| x * 2.0; let r = g(1.0); x }");
    let lam = m.codes.iter().find(|c| c.name == "f_lambda1").unwrap();
    assert!(lam.captures.is_empty(), "the parameter is not a capture");
}

#[test]
fn match_arm_fields_are_scoped_to_their_arm() {
    let enum_e = "enum E { A(Real), B }\n";
    elab(&format!(
        "{enum_e}fn f(x: Int, e: E) -> Int {{ let r = match e {{ A(x) => x, B => 0.0 }}; x }}"
    ));
    assert_mentions(
        &errors(&format!(
            "{enum_e}fn f(e: E) -> Real {{ let r = match e {{ A(v) => v, B => 0.0 }}; v }}"
        )),
        &["unknown variable `v`"],
    );
}

#[test]
fn a_lambda_lists_each_captured_variable_once_in_order_of_first_use() {
    let m = elab("fn f(a: Int, b: Int) -> Int { let g = |x: Int| b + a + b * a + x; g(1) }");
    let lam = m.codes.iter().find(|c| c.name == "f_lambda1").unwrap();
    let names: Vec<&str> = lam
        .captures
        .iter()
        .map(|v| m.vars[v.0 as usize].name.as_str())
        .collect();
    assert_eq!(names, ["b", "a"]);
}

#[test]
fn unconstrained_type_defaults_to_real() {
    // Nothing says what `[]` holds: its element type defaults to Real.
    let m = elab("fn f() -> Int { length([]) }");
    let arr = m
        .vars
        .iter()
        .find(|v| matches!(v.ty, Type::Array(_)))
        .expect("the empty array is bound to a variable");
    assert_eq!(arr.ty, Type::array(Type::Real));
}

#[test]
fn nested_match_patterns_elaborate_and_verify() {
    let m = elab(
        "enum L { Nil, Cons(Int, L) }\n\
         fn second(l: L) -> Int { match l { Cons(_, Cons(x, _)) => x, Cons(0, Nil) => -1, _ => 0 } }",
    );
    assert_eq!(fn_ty(&m, "second"), "fn(L) -> Int");
}

#[test]
fn gradient_type_is_the_tangent_type() {
    // T((Real, Int)) = (Real, ()).
    let m = elab("fn f(p: (Real, Int)) -> (Real, ()) { grad(|q| q.0 * to_real(q.1), p) }");
    assert_eq!(fn_ty(&m, "f"), "fn((Real, Int)) -> (Real, ())");
}

#[test]
fn tangent_enum_can_be_named_in_source() {
    // T(Shape) replaces the Int field by (): a derived enum named ShapeTan.
    let m = elab(
        "enum Shape { Circle(Real, Int) }\n\
         fn area(s: Shape) -> Real { match s { Circle(r, n) => r * to_real(n) } }\n\
         fn g(s: Shape) -> ShapeTan { grad(area, s) }",
    );
    assert_eq!(fn_ty(&m, "g"), "fn(Shape) -> ShapeTan");
}

#[test]
fn tangent_constructors_resolve_inside_arrays_and_tuples() {
    // Where `[ItemTan]` or `(ItemTan, Real)` is expected, the elements' constructors
    // build `ItemTan` values (a new user's `jvp` direction was rejected: "field of
    // `Group`: expected [ItemTan], found [Item]").
    let m = elab(
        "enum Item { Weighted(Int, Real), Plain(Real), Group([Item]) }\n\
         fn score(it: Item) -> Real { match it { Weighted(n, w) => to_real(n) * w, Plain(x) => x, Group(xs) => sum(map(score, xs)) } }\n\
         fn d() -> Real { jvp(score, Group([Plain(1.0)]), Group([Plain(1.0)])).1 }\n\
         fn pair(it: (Item, Real)) -> Real { score(it.0) * it.1 }\n\
         fn e() -> Real { jvp(pair, (Plain(1.0), 2.0), (Plain(1.0), 1.0)).1 }\n\
         fn mk() -> [ItemTan] { [Plain(1.0), Weighted((), 2.0)] }",
    );
    assert_eq!(fn_ty(&m, "d"), "fn() -> Real");
    assert_eq!(fn_ty(&m, "mk"), "fn() -> [ItemTan]");
}

#[test]
fn functions_may_be_used_before_their_definition_and_recurse() {
    let m = elab(
        "fn f(n: Int) -> Int { g(n) }\n\
         fn g(n: Int) -> Int { if n <= 0 { 0 } else { f(n - 1) } }",
    );
    assert_eq!(fn_ty(&m, "f"), "fn(Int) -> Int");
}

// ---------------------------------------------------------------- errors

#[test]
fn result_mismatch_mentions_both_types() {
    let msgs = errors("fn f() -> Int { 1.0 }");
    assert_eq!(msgs, ["function result: expected Int, found Real"]);
}

#[test]
fn mixed_arithmetic_mentions_both_types_and_to_real() {
    let msgs = errors("fn f(x: Int) -> Real { x + 1.0 }");
    // One mistake, one error.
    assert_eq!(
        msgs,
        ["`+` needs operands of the same type, found Int and Real (convert with `to_real`)"]
    );
}

#[test]
fn argument_mismatch_mentions_both_types() {
    let msgs = errors(
        "fn g(b: Bool) -> Int { 1 }\n\
         fn f() -> Int { g(1) }",
    );
    assert_eq!(msgs, ["argument of `g`: expected Bool, found Int"]);
}

#[test]
fn annotated_lambda_parameter_mismatch_mentions_both_types() {
    let msgs = errors("fn f(xs: [Real]) -> [Int] { map(|x: Int| x, xs) }");
    assert_mentions(
        &msgs,
        &["argument of `map`", "fn(Real) -> Int", "fn(Int) -> Int"],
    );
}

#[test]
fn if_branch_mismatch_mentions_both_types() {
    let msgs = errors("fn f(c: Bool) -> Int { if c { 1 } else { (1, 2) } }");
    assert_mentions(
        &msgs,
        &["`else` branch", "expected Int", "found (Int, Int)"],
    );
}

#[test]
fn if_condition_must_be_bool() {
    let msgs = errors("fn f() -> Int { if 1 { 1 } else { 2 } }");
    assert_mentions(&msgs, &["`if` condition", "expected Bool", "found Int"]);
}

#[test]
fn array_elements_must_agree() {
    let msgs = errors("fn f() -> [Real] { [1.0, 2] }");
    assert_mentions(&msgs, &["array element", "Real", "Int"]);
}

#[test]
fn let_annotation_mismatch() {
    let msgs = errors("fn f() -> Real { let x: Real = 1; x }");
    assert_mentions(&msgs, &["`let` annotation", "expected Real", "found Int"]);
}

#[test]
fn unknown_names_are_reported() {
    assert_mentions(&errors("fn f() -> Int { y }"), &["unknown variable `y`"]);
    assert_mentions(
        &errors("fn f() -> Int { match 1 { _ => Foo(1) } }"),
        &["unknown constructor `Foo`"],
    );
    assert_mentions(
        &errors("fn f(x: Nope) -> Int { 1 }"),
        &["unknown type `Nope`"],
    );
}

#[test]
fn wrong_number_of_arguments() {
    assert_mentions(
        &errors("fn g(a: Int) -> Int { a }\nfn f() -> Int { g(1, 2) }"),
        &["`g` takes 1 argument(s) but 2 were given"],
    );
    assert_mentions(
        &errors("fn f() -> Real { sin(1.0, 2.0) }"),
        &["`sin` takes 1 argument(s) but 2 were given"],
    );
}

#[test]
fn projection_out_of_range() {
    let msgs = errors("fn f(t: (Real, Real)) -> Real { t.2 }");
    assert_mentions(&msgs, &["(Real, Real)", "no field 2"]);
}

#[test]
fn projection_of_unknown_type_asks_for_an_annotation() {
    let msgs = errors("fn f() -> Real { let g = |p| p.0; 1.0 }");
    assert_mentions(&msgs, &["must be known"]);
}

#[test]
fn sum_of_non_summable_elements() {
    let msgs = errors("fn f(bs: [Bool]) -> Bool { sum(bs) }");
    assert_mentions(&msgs, &["`sum`", "found Bool"]);
}

#[test]
fn arithmetic_on_bools_is_rejected() {
    let msgs = errors("fn f(a: Bool, b: Bool) -> Bool { a + b }");
    assert_mentions(&msgs, &["`+`", "Int or Real", "found Bool"]);
}

#[test]
fn equality_on_functions_is_rejected() {
    let msgs = errors("fn f(g: fn(Real) -> Real) -> Bool { g == g }");
    assert_mentions(&msgs, &["`==`", "without functions"]);
}

#[test]
fn builtins_cannot_be_redefined_or_rebound() {
    assert_mentions(
        &errors("fn sin(x: Real) -> Real { x }"),
        &["`sin` is a built-in"],
    );
    assert_mentions(
        &errors("fn f() -> Real { let exp = 1.0; exp }"),
        &["`exp` is a built-in"],
    );
}

#[test]
fn duplicate_definitions() {
    assert_mentions(
        &errors("fn f() -> Int { 1 }\nfn f() -> Int { 2 }"),
        &["function `f` is defined twice"],
    );
    assert_mentions(
        &errors("enum A { X }\nenum B { X }\nfn f() -> Int { 1 }"),
        &["constructor `X` is already defined"],
    );
}

#[test]
fn several_errors_are_all_reported_in_source_order() {
    let src = "fn a() -> Int { 1.0 }\n\
               fn b() -> Bool { 2 }\n\
               fn c() -> Real { zzz }";
    let ast = parse(src);
    let errs = elaborate_program(&[&ast]).expect_err("three type errors");
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert!(
        errs.windows(2).all(|w| w[0].span.start < w[1].span.start),
        "{errs:?}"
    );
}

#[test]
fn differential_operator_needs_real_result() {
    // grad wants fn(A) -> Real; the lambda's body is a pair.
    let msgs = errors("fn f(x: Real) -> Real { grad(|y| (y, y), x) }");
    assert_mentions(&msgs, &["expected Real", "found (Real, Real)"]);
}
