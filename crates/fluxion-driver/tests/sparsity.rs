//! `sparsity(f, x)` and `sparse_jacobian(f, x)` (docs/language.md §5; [CHAD] §11.3, the
//! Boolean semiring). The oracle is the dense `jacobian` at the same point in every
//! mode: the pattern holds every nonzero of it, and equals its nonzeros where nothing
//! cancels; `sparse_jacobian`'s values are its entries at the pattern. Patterns the
//! contract fixes (a product with a zero constant, branches, `floor`, `min`/`max`)
//! are written out by hand.

#[path = "common/chad_deps.rs"]
mod chad_deps;

use fluxion_driver::gradcheck::eval_literal;
use fluxion_driver::{AdMode, Backend, RunOptions, compile, with_big_stack};

/// `(offsets, cols)` of `sparsity(f, x)`, or with values for `sparse_jacobian`.
fn parse_csr(text: &str) -> Vec<Vec<f64>> {
    // The printed tuple's arrays, in order.
    text.split('[')
        .skip(1)
        .map(|part| {
            let inner = part.split(']').next().unwrap_or("");
            inner
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().parse::<f64>().expect("a number"))
                .collect()
        })
        .collect()
}

fn run(src: &str, expr: &str, options: impl Into<RunOptions>) -> String {
    eval_literal(src, expr, options).unwrap_or_else(|e| panic!("{expr}: {e}"))
}

/// Row-major dense Jacobian, parsed from `jacobian(f, x)`'s `[[…], …]`.
fn dense(src: &str, x: &str, mode: AdMode) -> Vec<Vec<f64>> {
    let text = run(src, &format!("jacobian(f, {x})"), mode);
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    inner
        .split("], [")
        .map(|row| {
            row.trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().parse::<f64>().expect("a number"))
                .collect()
        })
        .collect()
}

/// A tridiagonal function, n inputs and outputs.
const BANDED: &str = "fn f(x: [Real]) -> [Real] {
    let n = length(x);
    build(n, |i| if i == 0 { x[0] * x[1] } else { if i == n - 1 { sin(x[i]) * x[i - 1] } else { x[i - 1] * x[i] + exp(x[i + 1]) } })
}";

/// Programs `f: [Real] -> [Real]` with their points; `exact`: no entry of the
/// Jacobian vanishes by cancellation at the point, so the pattern is its nonzeros.
const PROGRAMS: &[(&str, &str, &str, bool)] = &[
    (
        "banded",
        BANDED,
        "[0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]",
        true,
    ),
    (
        // More outputs than `sparsity` takes by reverse passes (fluxion-ad's
        // `deps::REVERSE_OUTPUTS`): the forward layer's rows.
        "banded, eleven outputs",
        BANDED,
        "[0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5]",
        true,
    ),
    (
        // Ten dense rows, each a sum over every input: the forward layer's unions by
        // halves (fluxion-ad's `deps::union_all_code`).
        "dense sums, ten outputs",
        "fn f(x: [Real]) -> [Real] { build(10, |i| sum(map(|t| t * to_real(i + 1), x)) + x[i]) }",
        "[0.3, -0.7, 1.1, 0.4, -1.3, 0.9, 2.0, -0.2, 0.6, 1.5]",
        true,
    ),
    (
        "block-sparse with closures and enums",
        "enum Op { Scale(Real), Shift(Real) }
         fn apply(o: Op, t: Real) -> Real { match o { Scale(c) => c * t * t, Shift(c) => exp(t + c) } }
         fn block(x: [Real], s: Int) -> [Real] {
             let g = |t: Real| apply(Scale(x[s]), t) + apply(Shift(0.5), x[s + 1]);
             [g(x[s + 1]), x[s] / (1.0 + x[s + 1] * x[s + 1])]
         }
         fn f(x: [Real]) -> [Real] { concat(concat(block(x, 0), block(x, 2)), block(x, 4)) }",
        "[0.3, -0.7, 1.1, 0.4, -1.3, 0.9]",
        true,
    ),
    (
        "recursion and a fold",
        "fn prod(x: [Real], i: Int) -> Real { if i == 0 { x[0] } else { x[i] * prod(x, i - 1) } }
         fn f(x: [Real]) -> [Real] { [prod(x, 2), fold(|a, t| a * 0.5 + t * t, 0.0, slice(x, 2, 3)), x[4] * x[0]] }",
        "[1.2, 0.8, -0.6, 1.4, 0.7]",
        true,
    ),
    (
        "branches, floor, min and a zero constant",
        "fn f(x: [Real]) -> [Real] {
             [ if x[0] > 0.0 { x[1] * x[1] } else { x[2] },
               0.0 * x[0] + x[3],
               floor(x[1]) * x[2],
               max(x[0], x[3]) + min(x[1], x[2]) ]
         }",
        "[0.5, 1.5, 2.5, -1.0]",
        false,
    ),
];

/// `main` of `source` run natively: its printed value and the run's notes (a
/// hand-over to the interpreter would be one).
fn native_main(source: String) -> (String, Vec<String>) {
    with_big_stack(move || {
        let Ok(program) = compile("native.flx", &source) else {
            panic!("does not compile")
        };
        let options = RunOptions {
            backend: Backend::Native,
            ..RunOptions::default()
        };
        let out = program
            .run_with_options("main", None, options)
            .unwrap_or_else(|f| panic!("{}", f.render()));
        (out.to_literal(), out.notes)
    })
}

fn modes() -> [AdMode; 3] {
    [AdMode::Delta, AdMode::Chad, AdMode::Fwd]
}

#[test]
fn the_pattern_holds_every_nonzero_of_the_jacobian() {
    for (name, src, x, exact) in PROGRAMS {
        let pattern = parse_csr(&run(src, &format!("sparsity(f, {x})"), AdMode::Delta));
        let (offsets, cols) = (&pattern[0], &pattern[1]);
        let jac = dense(src, x, AdMode::Fwd);
        assert_eq!(offsets.len(), jac.len() + 1, "{name}");
        for (i, row) in jac.iter().enumerate() {
            let (s, e) = (offsets[i] as usize, offsets[i + 1] as usize);
            let in_row: Vec<usize> = cols[s..e].iter().map(|c| *c as usize).collect();
            assert!(
                in_row.windows(2).all(|w| w[0] < w[1]),
                "{name}: row {i} not ascending: {in_row:?}"
            );
            let nonzeros: Vec<usize> = (0..row.len()).filter(|j| row[*j] != 0.0).collect();
            for j in &nonzeros {
                assert!(in_row.contains(j), "{name}: ({i}, {j}) missing: {in_row:?}");
            }
            if *exact {
                assert_eq!(in_row, nonzeros, "{name}: row {i}");
            }
        }
    }
}

#[test]
fn the_contracts_cases_by_hand() {
    // Row 0: the branch taken (x0 > 0) reads x1 only. Row 1: 0.0 * x0 still depends on
    // x0 (structural). Row 2: floor carries nothing. Row 3: max follows x0 (0.5 >= -1),
    // min follows x1 (1.5 <= 2.5).
    let src = PROGRAMS[5].1;
    let text = run(src, "sparsity(f, [0.5, 1.5, 2.5, -1.0])", AdMode::Delta);
    assert_eq!(text, "([0, 1, 3, 4, 6], [1, 0, 3, 2, 0, 1])");
    // The other branch and the other choices at another point.
    let text = run(src, "sparsity(f, [-0.5, 3.5, 2.5, 1.0])", AdMode::Delta);
    assert_eq!(text, "([0, 1, 3, 4, 6], [2, 0, 3, 2, 2, 3])");
}

#[test]
fn sparse_jacobian_is_the_jacobian_at_the_pattern_in_every_mode() {
    for (name, src, x, _) in PROGRAMS {
        for mode in modes() {
            let parts = parse_csr(&run(src, &format!("sparse_jacobian(f, {x})"), mode));
            let pattern = parse_csr(&run(src, &format!("sparsity(f, {x})"), mode));
            assert_eq!(parts[..2], pattern[..], "{name} {mode:?}: the pattern");
            let (offsets, cols, values) = (&parts[0], &parts[1], &parts[2]);
            let jac = dense(src, x, mode);
            for i in 0..jac.len() {
                for t in offsets[i] as usize..offsets[i + 1] as usize {
                    let want = jac[i][cols[t] as usize];
                    let got = values[t];
                    assert!(
                        (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
                        "{name} {mode:?}: ({i}, {}) = {got}, jacobian {want}",
                        cols[t]
                    );
                }
            }
        }
    }
}

#[test]
fn a_dense_row_is_taken_by_reverse_passes() {
    // One output reads every input: its columns need n colours, its rows one; the
    // values come from the reverse pass either way.
    let src = "fn f(x: [Real]) -> [Real] { [sum(map(|t| t * t, x)), x[0] * x[2]] }";
    for mode in modes() {
        assert_eq!(
            run(src, "sparse_jacobian(f, [1.0, 2.0, 3.0, 4.0])", mode),
            "([0, 4, 6], [0, 1, 2, 3, 0, 2], [2.0, 4.0, 6.0, 8.0, 3.0, 1.0])"
        );
    }
}

#[test]
fn both_backends_agree_without_handing_over() {
    for (name, src, x, _) in PROGRAMS {
        let expr = format!("(sparsity(f, {x}), sparse_jacobian(f, {x}))");
        let interp = run(src, &expr, AdMode::Delta);
        let source =
            format!("{src}\nfn main() -> (([Int], [Int]), ([Int], [Int], [Real])) {{ {expr} }}");
        let (native, notes) = native_main(source);
        assert!(notes.is_empty(), "{name}: {notes:?}");
        assert_eq!(interp, native, "{name}");
    }
}

#[test]
fn a_closure_capturing_a_real_runs_natively() {
    // Its capture is lifted into the dependency layer by Core (push_forward.rs): once a
    // dual there, which the C compiler refused, and the run was handed over.
    let source = "fn main() -> ([Int], [Int]) { let p = 2.0; sparsity(|x: [Real]| [x[0] * p, x[1]], [1.0, 3.0]) }".to_string();
    let (out, notes) = native_main(source);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(out, "([0, 1, 2], [0, 1])");
}

#[test]
fn inside_a_differentiated_function_it_is_refused_with_a_message() {
    let src = "fn sp(p: Real) -> Real { to_real(sparsity(|x: [Real]| [x[0] * p], [p]).1[0]) * p }";
    for mode in modes() {
        let e = eval_literal(src, "diff(sp, 0.7)", mode).expect_err("refused");
        assert!(
            e.contains("inside a function being differentiated"),
            "{mode:?}: {e}"
        );
    }
}

#[test]
fn bad_uses_are_diagnosed() {
    let e = eval_literal("", "sparsity(|x: Real| x * x, 1.0)", AdMode::Delta)
        .expect_err("a type error");
    assert!(e.contains("[Real]"), "{e}");
    let e = eval_literal(
        "",
        "sparse_jacobian(|x: [Real]| x[0], [1.0])",
        AdMode::Delta,
    )
    .expect_err("a type error");
    assert!(e.contains("type error"), "{e}");
    // A function applying an operator itself is refused with a message, not analysed
    // wrongly.
    let e = eval_literal(
        "",
        "sparsity(|x: [Real]| [grad(|y: [Real]| y[0] * y[0] * x[1], x)[0]], [1.0, 2.0])",
        AdMode::Delta,
    )
    .expect_err("refused");
    assert!(e.contains("applies a differential operator itself"), "{e}");
}

/// `f`'s pattern at `x` by CHAD over the Boolean semiring alone, run on `backend`
/// without handing over to the interpreter.
fn pattern_by_chad(src: &str, x: &str, backend: Backend) -> String {
    let (out, notes) =
        chad_deps::pattern_by_chad(src, "f", x, backend).unwrap_or_else(|e| panic!("{e}"));
    assert!(notes.is_empty(), "ran in the interpreter: {notes:?}");
    out
}

/// `f`'s pattern at `x` by the forward dependency layer alone, as [`pattern_by_chad`].
fn pattern_by_forward(src: &str, x: &str, backend: Backend) -> String {
    let (out, notes) =
        chad_deps::pattern_by_forward(src, "f", x, backend).unwrap_or_else(|e| panic!("{e}"));
    assert!(notes.is_empty(), "ran in the interpreter: {notes:?}");
    out
}

/// CHAD is one transformation over a ground interpretation: its reverse-AD instance
/// makes `vjp` under `--ad chad`, its Boolean instance the pattern, and that pattern is
/// the forward dependency layer's on every program here — closures, enums, recursion,
/// a fold, branches, `floor`, `min`/`max`, a product with a zero constant — at two
/// points for the branching one, on both backends; `sparsity`, which runs one or the
/// other by the number of outputs, gives it too.
#[test]
fn chad_over_the_boolean_semiring_gives_the_same_pattern() {
    let mut cases: Vec<(&str, &str)> = PROGRAMS.iter().map(|(_, src, x, _)| (*src, *x)).collect();
    cases.push((PROGRAMS[5].1, "[-0.5, 3.5, 2.5, 1.0]"));
    for (src, x) in cases {
        let operator = run(src, &format!("sparsity(f, {x})"), AdMode::Delta);
        for backend in [Backend::Interp, Backend::Native] {
            let forward = pattern_by_forward(src, x, backend);
            assert_eq!(forward, operator, "forward, {backend:?} at {x}:\n{src}");
            assert_eq!(
                pattern_by_chad(src, x, backend),
                forward,
                "{backend:?} at {x}:\n{src}"
            );
        }
    }
    // The contract's cases, by hand (the test above derives them).
    assert_eq!(
        pattern_by_chad(PROGRAMS[5].1, "[0.5, 1.5, 2.5, -1.0]", Backend::Interp),
        "([0, 1, 3, 4, 6], [1, 0, 3, 2, 0, 1])"
    );
}
