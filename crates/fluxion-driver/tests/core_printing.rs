//! Snapshot tests of `show --stage core` output (the typed ANF Core printed as Fluxion
//! source), plus the round trip: printed Core re-parses, type-checks and computes the
//! same value as the original.

use fluxion_driver::{AdMode, compile, with_big_stack};

fn core_of(src: &str) -> String {
    with_big_stack(|| {
        let program = compile("test.flx", src).unwrap_or_else(|f| panic!("{}", f.render()));
        program.show("core", Some("main")).unwrap()
    })
}

fn run(src: &str) -> String {
    with_big_stack(|| {
        let program = compile("test.flx", src).unwrap_or_else(|f| panic!("{}", f.render()));
        match program.run("main", None) {
            Ok(out) => out.to_literal(),
            Err(f) => f.render(),
        }
    })
}

/// The printed Core of `src` runs to the same result as `src`.
fn assert_round_trip(src: &str) {
    let printed = core_of(src);
    assert_eq!(run(src), run(&printed), "printed Core:\n{printed}");
    // Printing the printed program again gives the same text up to renumbering:
    // compare after erasing variable ids.
    let strip = |s: &str| -> String {
        let mut out = String::new();
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            out.push(c);
            if c == '_' {
                while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                    chars.next();
                }
            }
        }
        out
    };
    assert_eq!(strip(&printed), strip(&core_of(&printed)));
}

const PROGRAMS: &[(&str, &str)] = &[
    (
        "arith",
        "fn main() -> Real { let x = 2.0; x * x + sin(x) / 3.0 - -1.5 }",
    ),
    (
        "short_circuit",
        "fn main() -> Bool { let a = [1, 2]; length(a) > 5 && a[5] == 1 || true }",
    ),
    (
        "closures_capture",
        "fn main() -> Real { let k = 3.0; let f = |x: Real| { let g = |y: Real| x * y + k; g(x) }; f(2.0) }",
    ),
    (
        "nested_patterns",
        "enum L { Nil, Cons(Int, L) }\n\
         fn main() -> Int { match Cons(1, Cons(2, Nil)) { Cons(a, Cons(b, _)) => a + b, Cons(a, Nil) => a, Nil => 0 } }",
    ),
    (
        "literal_patterns",
        "fn main() -> Int { match (2, true) { (0, _) => 0, (2, true) => 1, _ => 3 } }",
    ),
    (
        "tuple_params",
        "fn f((a, b): (Real, Real), c: Real) -> Real { a * b + c }\nfn main() -> Real { f((2.0, 3.0), 1.0) }",
    ),
    (
        "eta_builtins",
        "enum S { C(Real) }\nfn main() -> ([Real], [S]) { (map(sqrt, [4.0, 9.0]), map(C, [1.0])) }",
    ),
    (
        "hofs",
        "fn main() -> (Real, [Real], Int) { (fold(|a, x| a + x, 0.0, [1.0, 2.0]), scan(|a, x| a * x, 1.0, [2.0, 3.0]), iterate(3, |n| n * 2, 1)) }",
    ),
    (
        "special_reals",
        "fn main() -> [Real] { [1.0 / 0.0, -1.0 / 0.0, 1e-300 * 1e-300, 2.5E+4] }",
    ),
    ("min_int", "fn main() -> Int { -9223372036854775808 + 1 }"),
];

#[test]
fn printed_core_round_trips() {
    for (name, src) in PROGRAMS {
        eprintln!("{name}");
        assert_round_trip(src);
    }
}

#[test]
fn core_snapshots() {
    for (name, src) in PROGRAMS {
        insta::assert_snapshot!(*name, core_of(src));
    }
}

/// A stage's print with the operators expanded by `--ad fwd`, which uses no internal
/// primitive a program cannot spell but `%check_tangent` in `vjp` and `%lscale` in
/// tangents (spelt as a source function by `runnable_stage`), so it re-parses.
fn stage_of(src: &str, stage: &str) -> String {
    stage_with(src, stage, AdMode::Fwd)
}

fn stage_with(src: &str, stage: &str, mode: AdMode) -> String {
    with_big_stack(|| {
        let program = compile("test.flx", src).unwrap_or_else(|f| panic!("{}", f.render()));
        program.show_with(stage, None, mode).unwrap()
    })
}

fn fwd_of(src: &str) -> String {
    stage_of(src, "fwd")
}

const AD_PROGRAMS: &[(&str, &str)] = &[
    (
        "fwd_scalar",
        "fn f(x: Real) -> Real { sin(x) * x + exp(x) / 2.0 }",
    ),
    (
        "fwd_closure_and_fold",
        "fn f(x: [Real]) -> Real { let k = x[0]; fold(|acc, y| acc + k * y, 0.0, x) }",
    ),
    (
        "fwd_enum",
        "enum Shape { Circle(Real), Tagged(Int, Real) }\n\
         fn area(s: Shape) -> Real { match s { Circle(r) => r * r, Tagged(n, x) => to_real(n) * x } }",
    ),
    (
        "fwd_nested_operator",
        "fn main() -> Real { grad(|x| diff(|y| x * y * y, x), 2.0) }",
    ),
    // The nearest of the `cs` differentiated alone; the distances to all of them, read
    // by `argmax` only, on primals (fluxion-ad's activity.rs).
    (
        "fwd_nearest",
        "fn f(x: Real, cs: [Real]) -> Real { minimum(map(|c| (c - x) * (c - x), cs)) }",
    ),
];

#[test]
fn forward_mode_snapshots() {
    for (name, src) in AD_PROGRAMS {
        insta::assert_snapshot!(*name, fwd_of(src));
    }
}

#[test]
fn forward_mode_output_reparses_and_type_checks() {
    for (name, src) in AD_PROGRAMS.iter().chain(PROGRAMS) {
        let Some(printed) = fluxion_driver::gradcheck::runnable_stage(&fwd_of(src)) else {
            assert_eq!(*name, "fwd_nested_operator", "only it differentiates again");
            continue;
        };
        with_big_stack(|| {
            if let Err(f) = compile("fwd.flx", &printed) {
                panic!(
                    "{name}: printed forward mode does not check:\n{}\n{printed}",
                    f.render()
                );
            }
        });
    }
}

/// The delta translation ([Delta] §7) of the same programs, and forward-over-delta:
/// the forward translation of a gradient under `--ad delta` (`hessian`'s inner part).
#[test]
fn delta_mode_snapshots() {
    for (name, src) in AD_PROGRAMS {
        let name = name.replace("fwd_", "delta_");
        insta::assert_snapshot!(name, stage_with(src, "delta", AdMode::Delta));
    }
    insta::assert_snapshot!(
        "fwd_over_delta",
        stage_with(
            "fn g(x: [Real]) -> [Real] { grad(|y: [Real]| y[0] * y[1], x) }",
            "fwd",
            AdMode::Delta
        )
    );
    // Reverse over reverse: the inner `grad` as a tape of tapes (`delta_twice.rs`).
    insta::assert_snapshot!(
        "delta_over_delta",
        stage_with(
            "fn g(s: Real) -> Real { sum(grad(|v: [Real]| s * v[0] * v[1], [1.0, 2.0])) }",
            "delta",
            AdMode::Delta
        )
    );
}

/// The CHAD translation ([CHAD] §7.5) of the same programs (not the one that applies
/// an operator itself, which CHAD leaves to forward mode), the paper's Fig. 2(b) with
/// its copower, and forward-over-CHAD (`hessian`'s inner part under `--ad chad`).
#[test]
fn chad_mode_snapshots() {
    for (name, src) in &AD_PROGRAMS[..3] {
        let name = name.replace("fwd_", "chad_");
        insta::assert_snapshot!(name, stage_with(src, "chad", AdMode::Chad));
    }
    insta::assert_snapshot!(
        "chad_paper_figure_2b",
        stage_with(
            "fn w(x1: Real, x2: [Real]) -> Real { let f = |x2i: Real| x1 * x2i; sum(map(f, x2)) }",
            "chad",
            AdMode::Chad
        )
    );
    insta::assert_snapshot!(
        "fwd_over_chad",
        stage_with(
            "fn g(x: [Real]) -> [Real] { grad(|y: [Real]| y[0] * y[1], x) }",
            "fwd",
            AdMode::Chad
        )
    );
}

/// The forward-CHAD translation ([CHAD] §7.4) of the same programs: each value with
/// its pushforward (`%lscale`, `%lindex`, `%lfield` by name), and the paper's Fig. 2
/// program, whose lambda's pushforward reads its capture's tangent from its `FnCt`.
#[test]
fn chad_fwd_snapshots() {
    for (name, src) in &AD_PROGRAMS[..3] {
        let name = name.replace("fwd_", "chad_fwd_");
        insta::assert_snapshot!(name, stage_with(src, "chad-fwd", AdMode::Chad));
    }
    insta::assert_snapshot!(
        "chad_fwd_paper_figure_2",
        stage_with(
            "fn w(x1: Real, x2: [Real]) -> Real { let f = |x2i: Real| x1 * x2i; sum(map(f, x2)) }",
            "chad-fwd",
            AdMode::Chad
        )
    );
}

#[test]
fn taylor_mode_snapshot() {
    insta::assert_snapshot!("taylor2_scalar", stage_of(AD_PROGRAMS[0].1, "taylor2"));
}

#[test]
fn jet_snapshot() {
    // Two directions of order 2 ([Taylor]'s (2,2) case): products by the table of pairs,
    // `sin` composed with its univariate series.
    insta::assert_snapshot!("jet2x2_scalar", stage_of(AD_PROGRAMS[0].1, "jet"));
}

#[test]
fn deps_snapshot() {
    // `sparsity`'s layer: each real with its set of inputs; `floor` carries none, `max`
    // the argument it follows.
    insta::assert_snapshot!(
        "deps_vector",
        stage_of(
            "fn f(x: [Real]) -> [Real] { [x[0] * sin(x[1]), floor(x[2]) + max(x[0], x[2])] }",
            "deps"
        )
    );
}

#[test]
fn chad_deps_snapshot() {
    // CHAD over the Boolean semiring, the same function: the backpropagator passes `w`
    // unscaled to `x[0]` and `x[1]` through the product and `sin`, nothing through
    // `floor`, and `max`'s 0/1 to the argument it follows.
    insta::assert_snapshot!(
        "chad_deps_vector",
        stage_of(
            "fn f(x: [Real]) -> [Real] { [x[0] * sin(x[1]), floor(x[2]) + max(x[0], x[2])] }",
            "chad-deps"
        )
    );
}

#[test]
fn taylor_mode_output_reparses_and_type_checks() {
    for (name, src) in AD_PROGRAMS.iter().chain(PROGRAMS) {
        for stage in ["taylor1", "taylor3", "jet2x2", "jet3x1"] {
            // `%lscale` (a series' zero coefficients stay zero) printed as a source
            // function, as for forward mode.
            let Some(printed) = fluxion_driver::gradcheck::runnable_stage(&stage_of(src, stage))
            else {
                assert_eq!(*name, "fwd_nested_operator", "only it differentiates again");
                continue;
            };
            with_big_stack(|| {
                if let Err(f) = compile("taylor.flx", &printed) {
                    panic!(
                        "{name} ({stage}): printed Taylor mode does not check:\n{}\n{printed}",
                        f.render()
                    );
                }
            });
        }
    }
}
