//! Snapshot tests (insta) of rendered diagnostics: syntax errors (with recovery),
//! name and type errors. A changed message shows up as a snapshot diff to review.

use fluxion_driver::compile;

fn diagnostics(src: &str) -> String {
    match fluxion_driver::with_big_stack(|| compile("test.flx", src).err().map(|f| f.render())) {
        Some(text) => text,
        None => "(no errors)".into(),
    }
}

macro_rules! snapshot_errors {
    ($($name:ident: $src:expr;)*) => {
        $(
            #[test]
            fn $name() {
                insta::assert_snapshot!(diagnostics($src));
            }
        )*
    };
}

snapshot_errors! {
    syntax_missing_operand: "fn main() -> Real {\n    let z = 1.0 * ;\n    z\n}\n";
    syntax_several_errors_reported_at_once: "fn f() -> Int {\n    let a = ;\n    let b = 2 +;\n    a\n}\nfn g( -> Int { 1 }\nfn main() -> Int { 1 }\n";
    syntax_unexpected_character: "fn main() -> Int { 1 $ 2 }\n";
    syntax_chained_comparison: "fn main() -> Bool { 1 < 2 < 3 }\n";
    syntax_missing_else: "fn main() -> Int { if true { 1 } }\n";
    syntax_block_without_result: "fn main() -> Int { let x = 1; }\n";
    syntax_int_literal_too_large: "fn main() -> Int { 99999999999999999999 }\n";
    syntax_real_literal_too_large: "fn main() -> Real { 1e400 }\n";
    type_int_plus_real: "fn main() -> Real {\n    let n = 1;\n    n + 2.5\n}\n";
    type_wrong_result: "fn main() -> Int { 1.5 }\n";
    type_enum_named_as_a_tangent_type: "enum P { P(Real, Int) }\nenum PTan { Z }\nfn g(p: P) -> Real { match p { P(x, n) => x * to_real(n) } }\nfn main() -> PTan { grad(g, P(1.0, 2)) }\n";
    type_unknown_variable: "fn main() -> Int { y + 1 }\n";
    type_unknown_function_type_name: "fn f(x: Shape) -> Int { 1 }\nfn main() -> Int { 1 }\n";
    type_wrong_arity: "fn f(x: Int, y: Int) -> Int { x + y }\nfn main() -> Int { f(1) }\n";
    type_if_branches_differ: "fn main() -> Int { if true { 1 } else { 2.0 } }\n";
    type_condition_not_bool: "fn main() -> Int { if 1 { 1 } else { 2 } }\n";
    type_projection_out_of_range: "fn main() -> Int { let t = (1, 2); t.2 }\n";
    type_index_with_real: "fn main() -> Real { [1.0, 2.0][1.0] }\n";
    type_call_non_function: "fn main() -> Int { let x = 1; x(2) }\n";
    type_builtin_redefined: "fn sin(x: Real) -> Real { x }\nfn main() -> Real { sin(1.0) }\n";
    type_ctor_arity: "enum S { C(Real) }\nfn main() -> S { C(1.0, 2.0) }\n";
    type_pattern_of_other_enum: "enum A { X }\nenum B { Y }\nfn main() -> Int { match X { Y => 1, _ => 2 } }\n";
    type_grad_of_non_real_result: "fn main() -> [Real] { grad(|x: [Real]| x, [1.0]) }\n";
    type_grad_of_function_argument: "fn main() -> Real { grad(|f: fn(Real) -> Real| f(1.0), |x: Real| x) }\n";
    type_taylor_order_not_literal: "fn main() -> Real { let k = 2; taylor(|x: Real| x, 1.0, 1.0, k).0 }\n";
    type_function_defined_twice: "fn f() -> Int { 1 }\nfn f() -> Int { 2 }\nfn main() -> Int { f() }\n";
    type_sum_of_bools: "fn main() -> Bool { sum([true]) }\n";
    type_parameter_bound_twice: "fn f(x: Int, x: Int) -> Int { x }\nfn main() -> Int { f(1, 2) }\n";
    type_name_bound_twice_in_a_pattern: "enum P { P(Int, Int) }\nfn main() -> Int {\n    let (a, a) = (1, 2);\n    let g = |b: Int, b: Int| b;\n    match P(a, 3) { P(c, c) => c }\n}\n";
    type_constructor_defined_in_two_enums: "enum E { A }\nenum G { A }\nfn main() -> Int { 1 }\n";
}
