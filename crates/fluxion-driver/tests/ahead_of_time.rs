//! Derivative code made ahead of time, once, for both backends (fluxion-ad's `ahead`,
//! run by `Program::prepare`): the operators it can bound are gone from the prepared
//! module, the interpreter runs the resolved Core, and what it leaves is documented.

use fluxion_driver::core::{Body, Prim, Rhs};
use fluxion_driver::gradcheck::{eval_reals, parse_reals};
use fluxion_driver::{AdMode, Backend, Program, RunOptions, compile};

fn options(mode: AdMode) -> RunOptions {
    RunOptions {
        mode,
        ..RunOptions::default()
    }
}

/// `src` compiled and prepared under `mode`.
fn prepared(src: &str, mode: AdMode) -> Program {
    let Ok(mut program) = compile("prog.flx", src) else {
        panic!("compiles")
    };
    program.prepare(options(mode)).expect("prepares");
    program
}

/// The primitives `body` applies, its nested blocks included.
fn prims_in(body: &Body) -> Vec<Prim> {
    let mut out = Vec::new();
    fluxion_driver::core::visit::for_each_binding(body, &mut |b| {
        if let Rhs::Prim(p, _) = &b.rhs {
            out.push(*p);
        }
    });
    out
}

/// The primitives the codes of a prepared program apply.
fn prims_after_prepare(src: &str, mode: AdMode) -> Vec<Prim> {
    let program = prepared(src, mode);
    program
        .module
        .codes
        .iter()
        .flat_map(|c| prims_in(&c.body))
        .collect()
}

/// Under each reverse mode, a gradient of a known function and of one taken from an
/// array are resolved before the run: no reverse operator is left for run time, and
/// the tape's primitives (delta) or `%chad_of` (a closure the compiler cannot see) are
/// there instead.
#[test]
fn reverse_operators_are_resolved_before_the_run() {
    let src = "fn f(x: [Real]) -> Real { x[0] * sin(x[1]) }
               fn g(x: [Real]) -> Real { exp(x[0]) * x[1] }
               fn main(i: Int) -> ([Real], [Real]) {
                   let fs = [f, g];
                   (grad(f, [1.0, 2.0]), grad(fs[i], [1.0, 2.0]))
               }";
    for (mode, op) in [
        (AdMode::Delta, Prim::DeltaVjp),
        (AdMode::Chad, Prim::ChadVjp),
    ] {
        let prims = prims_after_prepare(src, mode);
        assert!(!prims.contains(&op), "{mode:?}: `{}` left", op.name());
        assert!(prims.contains(&Prim::ChadOf), "{mode:?}: no `%chad_of`");
        if mode == AdMode::Delta {
            for p in [Prim::DeltaOpen, Prim::DeltaInputs, Prim::DeltaGrad] {
                assert!(prims.contains(&p), "delta: no `{}`", p.name());
            }
        }
    }
}

/// The interpreter runs the resolved Core with the values of the reference (`--ad fwd`,
/// which resolves nothing reverse) and of native code, bit for bit with native code.
#[test]
fn resolved_core_runs_in_the_interpreter_as_natively() {
    let src = "enum Op { Scale(Real), Shift(Real) }
               fn apply(o: Op, x: [Real]) -> Real {
                   match o { Scale(c) => c * dot(x, x), Shift(c) => sum(map(|t| exp(t + c), x)) }
               }
               fn pick(i: Int) -> fn([Real]) -> Real {
                   let c = 0.5 * to_real(i);
                   if i == 0 { |x: [Real]| apply(Scale(c), x) } else { |x: [Real]| apply(Shift(c), x) }
               }";
    for i in 0..2 {
        let expr = format!("grad(pick({i}), [0.3, -0.7, 1.1])");
        let reference = eval_reals(src, &expr, AdMode::Fwd).expect("fwd runs");
        for mode in [AdMode::Delta, AdMode::Chad] {
            let interp = eval_reals(src, &expr, options(mode)).expect("interpreter runs");
            let native = eval_reals(
                src,
                &expr,
                RunOptions {
                    backend: Backend::Native,
                    ..options(mode)
                },
            )
            .expect("native runs");
            assert_eq!(
                interp, native,
                "{mode:?} {expr}: interpreter and native differ"
            );
            for (a, b) in interp.iter().zip(&reference) {
                assert!(
                    (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                    "{mode:?} {expr}: {a} vs {b}"
                );
            }
        }
    }
}

/// What resolution leaves to run time: nothing, in a program without operators over
/// lists or with them — `jvp` under dual numbers, the gradient of a function applying
/// `grad` to a `jvp` (pushed forward), and `jvp` of a function of a list (walked by
/// generated Core, one call per cell) are resolved as natively, with the native
/// values bit for bit.
#[test]
fn what_is_left_to_run_time() {
    let without_lists = "fn f(x: [Real]) -> Real { x[0] * x[0] * x[1] }
               fn main() -> Real {
                   let d = jvp(f, [1.0, 2.0], [1.0, 0.0]).1;
                   d + sum(grad(|v: [Real]| sum(grad(|u: [Real]| f(u) * jvp(f, u, u).1, v)), [1.0, 2.0]))
               }";
    let with_a_list = format!(
        "enum L {{ Nil, Cons(Real, L) }}
         fn total(l: L) -> Real {{ match l {{ Nil => 0.0, Cons(h, t) => h * h + total(t) }} }}
         {}",
        without_lists.replace(
            "let d = ",
            "let l = Cons(1.0, Cons(2.0, Nil));\n let d = jvp(total, l, l).1 + "
        )
    );
    let mut values = Vec::new();
    for src in [without_lists, with_a_list.as_str()] {
        let core = reachable_after_prepare(src, AdMode::Delta);
        assert!(!core.contains("= jvp("), "every `jvp` is resolved:\n{core}");
        assert!(
            !core.contains("%delta_vjp("),
            "every gradient is resolved:\n{core}"
        );
        let interp = eval_reals(src, "main()", options(AdMode::Delta)).expect("runs");
        let (native, notes) = native_reals(src, "main()", AdMode::Delta);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(interp, native);
        values.push(native[0]);
    }
    // d/dt total(l + t·l) = Σ 2·hᵢ·hᵢ = 2 + 8 at l = [1, 2]: the first program's value + 10.
    assert!(
        (values[1] - values[0] - 10.0).abs() <= 1e-12 * values[1].abs(),
        "{values:?}"
    );
}

/// A list too deep for the interpreter's walks made ahead of time (one call per cell,
/// with the program's stack budget): the run is handed to the module as written,
/// whose run-time walks take any depth, and gives the same value natively.
#[test]
fn a_list_too_deep_for_generated_walks_is_walked_at_run_time() {
    let src = "enum R { RNil, RCons(Real, R) }
         fn reals(n: Int) -> R { fold(|acc, x| RCons(1.0 + to_real(x), acc), RNil, range(n)) }
         fn hd(l: R) -> Real { match l { RNil => 0.0, RCons(h, _) => h } }
         fn main() -> Real { let l = reals(50000); jvp(|x: Real| x * x * hd(l), 1.0, 1.0).1 + jvp(hd, l, l).1 }";
    // hd(l) = 50 000 (the last cell consed): d/dx x²·hd(l) = 2·50 000 at x = 1, and
    // jvp(hd, l, l) = hd(l).
    let expected = 3.0 * 50000.0;
    // On the test's thread, outside `with_big_stack`: a stack budget of 1 MiB, which a
    // generated walk over 50 000 cells exceeds.
    let Ok(program) = compile("deep.flx", src) else {
        panic!("compiles")
    };
    let out = program
        .run_with_options("main", None, options(AdMode::Delta))
        .unwrap_or_else(|f| panic!("{}", f.render()));
    assert_eq!(parse_reals(&out.to_literal()), vec![expected]);
    let (native, _) = native_reals(src, "main()", AdMode::Delta);
    assert_eq!(native, vec![expected]);
}

/// Where resolved CHAD code meets a closure CHAD cannot translate (a pullback, which
/// applies a reverse operator itself), the run starts again on the module as written,
/// where the interpreter differentiates it by forward mode: the answer of `--ad fwd`.
#[test]
fn a_closure_chad_cannot_translate_hands_the_run_over() {
    let src = "fn f(x: [Real]) -> Real { x[0] * x[0] * x[1] }
               fn pullback_of(x: [Real]) -> fn(Real) -> [Real] { let (y, pb) = vjp(f, x); pb }
               fn main() -> [Real] {
                   let pb = pullback_of([2.0, 3.0]);
                   grad(|z: [Real]| pb(z[0])[0] * z[1], [1.0, 2.0])
               }";
    let reference = eval_reals(src, "main()", AdMode::Fwd).expect("fwd runs");
    let chad = eval_reals(src, "main()", AdMode::Chad).expect("chad runs");
    assert_eq!(chad, reference);
    assert_eq!(chad, vec![24.0, 12.0], "d/dz (12·z0)·z1 at (1, 2) by hand");
}

/// GradBench's nested, higher-order benchmarks (`gradbench/{saddle,particle}`: a
/// gradient operator passed as an argument, applied to closures inside a recursive
/// optimiser): every variant runs natively under every `--ad` mode, with no hand-over
/// to the interpreter, and with the interpreter's values bit for bit — except the two
/// particle variants whose outer `%delta_vjp` the interpreter still computes at run
/// time by its own route (issue 31), which agree to 1e-14.
#[test]
fn saddle_and_particle_run_natively_as_in_the_interpreter() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../gradbench");
    for (name, args) in [("saddle", "[[1.0, 1.0]]"), ("particle", "[0.0]")] {
        let path = format!("{root}/{name}/{name}.flx");
        let src = std::fs::read_to_string(&path).expect("benchmark source");
        for entry in ["ff", "fr", "rf", "rr"] {
            for mode in [AdMode::Fwd, AdMode::Delta, AdMode::Chad] {
                let run = |backend| {
                    let (path, src) = (path.clone(), src.clone());
                    let options = RunOptions {
                        backend,
                        ..options(mode)
                    };
                    fluxion_driver::with_big_stack(move || {
                        let Ok(program) = compile(&path, &src) else {
                            return Err("does not compile".to_string());
                        };
                        let out = program
                            .run_with_options(entry, Some(args), options)
                            .map_err(|f| f.render())?;
                        Ok((out.to_literal(), out.notes))
                    })
                    .unwrap_or_else(|e| panic!("{name} {entry} {mode:?}: {e}"))
                };
                let ((a, _), (b, notes)) = (run(Backend::Interp), run(Backend::Native));
                let what = format!("{name} {entry} {mode:?}");
                assert!(notes.is_empty(), "{what}: {notes:?}");
                let by_own_route =
                    name == "particle" && mode == AdMode::Delta && matches!(entry, "rf" | "rr");
                if by_own_route {
                    let (a, b) = (parse_reals(&a), parse_reals(&b));
                    assert_eq!(a.len(), b.len(), "{what}");
                    for (x, y) in a.iter().zip(&b) {
                        assert!((x - y).abs() <= 1e-14 * x.abs(), "{what}: {x} vs {y}");
                    }
                } else {
                    assert_eq!(a, b, "{what}: interpreter and native differ");
                }
            }
        }
    }
}

/// The candidates `%chad_of` chooses among are the closures that can flow to the
/// operator, not every code of the type: a second closure of the same type that never
/// reaches `grad` gets no translation.
#[test]
fn only_closures_that_reach_an_operator_are_translated() {
    let src = "fn descend(f: fn([Real]) -> Real, x: [Real], n: Int) -> [Real] {
                   if n == 0 { x } else { descend(f, vsub(x, scale(0.1, grad(f, x))), n - 1) }
               }
               fn at(g: fn([Real]) -> Real, x: [Real], n: Int) -> Real {
                   if n == 0 { g(x) } else { at(g, x, n - 1) }
               }
               fn main(c: Real) -> Real {
                   let bowl = |x: [Real]| c * dot(x, x);
                   let other = |x: [Real]| c * sum(x);
                   at(other, descend(bowl, [1.0, 2.0], 3), 2)
               }";
    for mode in [AdMode::Delta, AdMode::Chad] {
        let program = prepared(src, mode);
        let m = &program.module;
        let translated: Vec<&str> = m
            .chad_of
            .keys()
            .map(|(code, _)| m.code(*code).name.as_str())
            .collect();
        assert!(
            !translated.is_empty(),
            "{mode:?}: `grad(f, x)` not resolved"
        );
        assert!(
            translated.iter().all(|n| n.starts_with("main_lambda1")),
            "{mode:?}: {translated:?}"
        );
    }
}

/// Under `--ad chad`, `grad` of a closure that applies an operator to a closure it
/// captures (or taken from an array whose functions apply one) is pushed forward ahead
/// of time, as the interpreter's CHAD differentiates such a closure by forward mode
/// (judged on the code as written, before its operators were resolved: it was judged
/// on the resolved code, which applies none, so the operator was left to the
/// interpreter and native code handed over — a new-user trial). By hand: d = 3x², so
/// grad(grad(d)) = 6; y² and 2y² have slopes 1.4 and 2.8 at 0.7.
#[test]
fn chad_of_a_closure_applying_an_operator_to_a_capture_runs_natively() {
    let src = "fn sq(x: Real) -> Real { x * x }
               fn main() -> (Real, [Real]) {
                   let f = |x: Real| x * x * x;
                   let d = |x: Real| diff(f, x);
                   let fs = [sq, |x: Real| grad(sq, x) * x];
                   (grad(|y: Real| grad(d, y), 0.3), build(2, |k| grad(|y: Real| fs[k](y), 0.7)))
               }";
    let interp = eval_reals(src, "main()", options(AdMode::Chad)).expect("interpreter runs");
    let (native, notes) = native_reals(src, "main()", AdMode::Chad);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(interp, native);
    for (got, want) in native.iter().zip([6.0, 1.4, 2.8]) {
        assert!((got - want).abs() <= 1e-12, "{native:?}");
    }
}

/// `taylor` of a closure the compiler cannot see — taken from an array, captured by the
/// differentiated lambda inside an enum, or met by a layer over Taylor (`diff` of a
/// Taylor coefficient) — runs natively: `%chad_of(f, CHAD_OF_TAYLOR + k)` picks the
/// code's Taylor translation of order k at run time, its reals lifted to constant
/// series (found handed to the interpreter by a new-user trial). Values by hand: the
/// series of eˣ at ½ along 1 is e^½·[1, 1, ½]; d/dx of y³'s c₂ = 3x is 3; sin's
/// c₁ at ½ is cos ½.
#[test]
fn taylor_of_a_closure_chosen_at_run_time_runs_natively() {
    let src = "enum Op { Apply(fn(Real) -> Real) }
               fn run_op(o: Op, x: Real) -> Real { match o { Apply(f) => f(x) } }
               fn main() -> ((Real, [Real]), (Real, [Real]), Real, Real) {
                   let fs = [|x: Real| sin(x), |x: Real| exp(x)];
                   let op = Apply(|y: Real| exp(y));
                   let f = |y: Real| y * y * y;
                   (taylor(fs[1], 0.5, 1.0, 2),
                    taylor(|x: Real| run_op(op, x), 0.5, 1.0, 2),
                    diff(|x: Real| taylor(f, x, 1.0, 2).1[1], 0.4),
                    build(2, |k| taylor(fs[k], 0.5, 1.0, 1).1[0])[0])
               }";
    let e = 0.5f64.exp();
    let want = [e, e, e / 2.0, e, e, e / 2.0, 3.0, 0.5f64.cos()];
    for mode in [AdMode::Delta, AdMode::Chad, AdMode::Fwd] {
        let interp = eval_reals(src, "main()", options(mode)).expect("interpreter runs");
        let (native, notes) = native_reals(src, "main()", mode);
        assert!(notes.is_empty(), "{mode:?}: {notes:?}");
        assert_eq!(interp, native, "{mode:?}");
        for (got, w) in native.iter().zip(want) {
            assert!((got - w).abs() <= 1e-14 * w.abs(), "{mode:?}: {native:?}");
        }
    }
}

/// A differentiated closure that captures closures inside an array, a tuple or an enum runs
/// natively under delta, CHAD and the forward layer (its Hessian too, whose forward
/// translation is picked at run time with the captured array lifted by the C walks): the capture is lifted by a Core walk
/// that picks each element's translation at run time (`%chad_of`), with the
/// interpreter's values bit for bit (the Hessian under CHAD to rounding) and the
/// reference's (`--ad fwd`, interpreted) to rounding.
#[test]
fn closures_captured_in_arrays_are_differentiated_natively() {
    let src = "enum Chain { End, Then(fn(Real) -> Real, Chain) }
               fn run(c: Chain, x: Real) -> Real {
                   match c { End => x, Then(f, rest) => run(rest, f(x)) }
               }
               fn table() -> [fn(Real) -> Real] {
                   [|t: Real| sin(t) * t, |t: Real| t * t * t, |t: Real| exp(0.5 * t)]
               }
               fn main(x: Real) -> (Real, [Real], Real, Real, Real, [[Real]]) {
                   let fs = table();
                   let pair = (fs[1], 2.0);
                   let chain = Then(fs[0], Then(fs[2], End));
                   (grad(|y: Real| fs[2](fs[0](y)), x),
                    grad(|v: [Real]| sumbuild(length(fs), |k| fs[k](v[k])), [0.1, 0.2, x]),
                    grad(|y: Real| fold(|acc: Real, f: fn(Real) -> Real| f(acc) + y, y, fs), x),
                    grad(|y: Real| pair.0(y) * pair.1, x),
                    grad(|y: Real| run(chain, y) * y, x),
                    hessian(|v: [Real]| sumbuild(3, |k| fs[k](v[k] * v[(k + 1) % 3])), [0.5, 1.0, x]))
               }";
    let expr = "main(0.7)";
    let reference = eval_reals(src, expr, AdMode::Fwd).expect("fwd runs");
    for mode in [AdMode::Delta, AdMode::Chad, AdMode::Fwd] {
        let interp = eval_reals(src, expr, options(mode)).expect("interpreter runs");
        let out = {
            let src = src.to_string();
            fluxion_driver::with_big_stack(move || {
                let program =
                    fluxion_driver::compile_with_expr("check.flx", &src, Some(expr)).ok()?;
                let options = RunOptions {
                    backend: Backend::Native,
                    ..options(mode)
                };
                let out = program
                    .run_with_options(fluxion_driver::core_entry_name(), None, options)
                    .ok()?;
                Some((parse_reals(&out.to_literal()), out.notes))
            })
        };
        let (native, notes) = out.expect("native runs");
        assert!(notes.is_empty(), "{mode:?}: {notes:?}");
        // Under CHAD the Hessian (forward over reverse) takes the interpreter's run-time
        // route there and pushes forward natively: equal to rounding (docs/decisions.md,
        // "Differentiation", "CHAD and nested operators"); everything else bit for bit.
        let exact = if mode == AdMode::Chad {
            native.len() - 9
        } else {
            native.len()
        };
        assert_eq!(interp.len(), native.len());
        assert_eq!(
            interp[..exact],
            native[..exact],
            "{mode:?}: interpreter and native differ"
        );
        for (a, b) in native.iter().zip(&interp) {
            assert!(
                (a - b).abs() <= 1e-14 * b.abs().max(1.0),
                "{mode:?}: {a} vs {b}"
            );
        }
        for (a, b) in native.iter().zip(&reference) {
            assert!(
                (a - b).abs() <= 1e-13 * b.abs().max(1.0),
                "{mode:?}: {a} vs {b}"
            );
        }
    }
}

/// A tower of operators whose depth is run-time data (built by recursion) is the case
/// no analysis can bound: translations are made ahead of time to the depth of the
/// resolution's rounds (four), natively a closure deeper than that hands the run to the
/// interpreter when it meets its operator (`… (at run time)`), and both backends give
/// the same answer at every depth — the closed form's, to rounding.
#[test]
fn an_operator_tower_of_run_time_depth_has_one_answer() {
    let src = "fn nth(n: Int, f: fn(Real) -> Real) -> fn(Real) -> Real {
                   if n == 0 { f } else { nth(n - 1, |x: Real| diff(f, x)) }
               }";
    let t: f64 = 0.7;
    for n in 0..=5 {
        // The n-th derivative of t·sin t: n·sin(t + (n-1)π/2) + t·sin(t + nπ/2).
        let half_pi = std::f64::consts::FRAC_PI_2;
        let nf = n as f64;
        let exact = nf * (t + (nf - 1.0) * half_pi).sin() + t * (t + nf * half_pi).sin();
        let expr = format!("nth({n}, |s: Real| sin(s) * s)({t})");
        for mode in [AdMode::Delta, AdMode::Chad] {
            let interp = eval_reals(src, &expr, options(mode)).expect("interpreter runs");
            let (native, notes) = native_reals(src, &expr, mode);
            assert_eq!(interp, native, "n = {n}, {mode:?}");
            assert!(
                (native[0] - exact).abs() <= 1e-12 * exact.abs().max(1.0),
                "n = {n}"
            );
            if n <= 4 {
                assert!(notes.is_empty(), "n = {n}, {mode:?}: {notes:?}");
            } else {
                assert!(
                    notes.len() == 1 && notes[0].ends_with("(at run time)"),
                    "n = {n}, {mode:?}: {notes:?}"
                );
            }
        }
    }
}

/// The Core a prepared program's functions reach, printed.
fn reachable_after_prepare(src: &str, mode: AdMode) -> String {
    let program = prepared(src, mode);
    fluxion_driver::core::print::print_reachable(&program.module, &program.user_functions())
}

/// `expr`'s reals and notes natively.
fn native_reals(src: &str, expr: &str, mode: AdMode) -> (Vec<f64>, Vec<String>) {
    let (src, e) = (src.to_string(), expr.to_string());
    fluxion_driver::with_big_stack(move || {
        let program =
            fluxion_driver::compile_with_expr("t.flx", &src, Some(&e)).map_err(|f| f.render())?;
        let options = RunOptions {
            backend: Backend::Native,
            ..options(mode)
        };
        let out = program
            .run_with_options(fluxion_driver::core_entry_name(), None, options)
            .map_err(|f| f.render())?;
        Ok::<_, String>((parse_reals(&out.to_literal()), out.notes))
    })
    .unwrap_or_else(|e| panic!("{expr}: {e}"))
}

/// Reverse over reverse under `--ad delta` is one pass each way, a tape of tapes
/// (fluxion-ad's `delta_twice.rs`), and so under `--ad chad` where CHAD does not
/// translate the outer function (it applies `grad` itself) — of a closure the outer
/// function builds, and of one chosen at run time (`chosen`, `picked`: taken from an
/// array, one capturing the outer variable, `%chad_of(f, 4)`): made ahead of time
/// (`%delta2…` in the prepared module), and checked by [`check_nested_gradients`].
#[test]
fn reverse_over_reverse_is_a_tape_of_tapes() {
    let src = "fn f(w: [Real]) -> Real { sum(map(|t| sin(t) * t, w)) }
               fn penalty(w: [Real]) -> Real { let g = grad(f, w); dot(g, g) }
               fn scaled(s: Real) -> Real {
                   sum(grad(|v: [Real]| s * sum(map(|t| t * t * t, v)), [0.5, -1.5, 2.0]))
               }
               fn loss(w: [Real]) -> Real { sum(map(|t| (t - 1.0) * (t - 1.0) * (1.0 + 0.1 * t * t), w)) }
               fn step(lr: Real, w: [Real]) -> [Real] {
                   let g = grad(loss, w);
                   build(length(w), |i| w[i] - lr * g[i])
               }
               fn tuned(lr: Real) -> Real { loss(step(lr, step(lr, step(lr, [0.3, -0.2, 0.9])))) }
               fn pair_arg(p: (Real, [Real])) -> Real { p.0 * exp(p.1[0]) * p.1[1] }
               fn through_pair(a: Real) -> Real {
                   let (d0, d1) = grad(pair_arg, (a, [0.5 * a, 2.0]));
                   d0 * d1[0] + d1[1]
               }
               fn seeded(s: Real) -> Real {
                   let (y, pb) = vjp(|v: [Real]| sum(map(|t| sin(t) * s, v)), [0.3, 0.8]);
                   sum(pb(s * s)) + y
               }
               fn captured(s: Real) -> Real {
                   let c = ([s, 2.0 * s], 3);
                   let g = |v: [Real]| c.0[0] * v[0] * v[1] + c.0[1] * to_real(c.1) * v[1] * v[1];
                   let h = g;
                   sum(grad(h, [1.0, 2.0]))
               }
               fn int_leaf(a: Real) -> Real {
                   grad(|p: (Real, Int)| p.0 * p.0 * to_real(p.1) * a, (a, 3)).0
               }
               enum Shape { Circle(Real), Rect(Real, Real) }
               fn area(a: Real, p: Shape) -> Real {
                   match p { Circle(r) => a * r * r, Rect(w, h) => a * w * h * h }
               }
               fn shaped(a: Real) -> Real {
                   match grad(|p: Shape| area(a, p), Rect(a, 2.0)) {
                       Rect(gw, gh) => gw * gh,
                       Circle(gr) => gr,
                   }
               }
               fn penalty_of(f: fn([Real]) -> Real, w: [Real]) -> Real { let g = grad(f, w); dot(g, g) }
               fn chosen(w: [Real]) -> Real {
                   let fs = [|v: [Real]| sum(map(|t| sin(t) * t, v)), |v: [Real]| v[0] * v[1] * v[1]];
                   penalty_of(fs[length(w) - 3], w)
               }
               fn picked(s: Real) -> Real {
                   let fs = [|v: [Real]| s * sum(map(|t| t * t * t, v)), |v: [Real]| sin(s * v[0]) * v[1]];
                   sum(grad(fs[to_int(s)], [0.5, -1.5]))
               }";
    let cases = [
        ("penalty", "[0.1, -0.4, 0.9, 1.3]"),
        ("scaled", "1.25"),
        ("tuned", "0.1"),
        ("through_pair", "0.7"),
        ("seeded", "0.6"),
        ("captured", "1.5"),
        ("int_leaf", "0.8"),
        ("shaped", "1.1"),
        ("chosen", "[0.1, -0.4, 0.9, 1.3]"),
        ("picked", "1.25"),
    ];
    check_nested_gradients(src, &cases, |expr, mode, core| {
        assert!(
            core.contains("%delta2_grad("),
            "{expr} {mode:?}: no second tape"
        );
    });
}

/// `grad(name, x)` for each case under `--ad delta` and `--ad chad`: natively with no
/// hand-over and the interpreter's bits; against `--ad fwd` (forward mode throughout,
/// no tape: 1e-12 relative, the same derivatives summed in another order) and, for a
/// scalar `x`, central differences of the outer function (step 1e-5: the truncation
/// error h²·f'''/6 and the rounding ε·|f|/h are both below 1e-8 for these smooth, O(1)
/// functions; 1e-6 relative leaves room); made ahead of time (no reverse operator left
/// in the prepared module), whose printed Core `route` checks further.
fn check_nested_gradients(src: &str, cases: &[(&str, &str)], route: impl Fn(&str, AdMode, &str)) {
    for ((name, x), mode) in cases
        .iter()
        .copied()
        .flat_map(|c| [(c, AdMode::Delta), (c, AdMode::Chad)])
    {
        let expr = format!("grad({name}, {x})");
        let interp = eval_reals(src, &expr, options(mode)).expect("interpreter runs");
        let (native, notes) = native_reals(src, &expr, mode);
        assert!(notes.is_empty(), "{expr} {mode:?}: {notes:?}");
        assert_eq!(interp, native, "{expr}: interpreter and native differ");
        let reference = eval_reals(src, &expr, AdMode::Fwd).expect("fwd runs");
        assert_eq!(interp.len(), reference.len(), "{expr}");
        for (a, b) in interp.iter().zip(&reference) {
            assert!(
                (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                "{expr}: {a} vs fwd {b}"
            );
        }
        if !x.starts_with('[') {
            let h = 1e-5;
            let at = |d: f64| {
                let e = format!("{name}({x} + {d:e})");
                eval_reals(src, &e, AdMode::Fwd).expect("runs")[0]
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            assert!(
                (interp[0] - fd).abs() <= 1e-6 * fd.abs().max(1.0),
                "{expr}: {} vs central difference {fd}",
                interp[0]
            );
        }
        let total = if x.starts_with('[') {
            format!("sum({expr})")
        } else {
            expr.clone()
        };
        let core =
            reachable_after_prepare(&format!("{src}\nfn main() -> Real {{ {total} }}"), mode);
        assert!(
            !core.contains("%delta_vjp(") && !core.contains("%chad_vjp("),
            "{expr} {mode:?}: a reverse operator left"
        );
        route(&expr, mode, &core);
    }
}

/// At a singularity a tape of tapes follows the first tape's rules: a zero partial or a
/// zero adjoint passes nothing on, so the value of an inner gradient `s·∞·0` at s = 0
/// is 0 as `--ad fwd` says (the review found `NaN` before the zero-adjoint rule); and
/// docs/decisions.md's example ("AD at non-smooth points") of a nested operator at
/// `sqrt(0)` is `NaN` in reverse, `1.0`
/// forwards, the same on both backends.
#[test]
fn a_tape_of_tapes_at_a_singularity_follows_the_first_tapes_rules() {
    let src = "fn inner(s: Real) -> Real { grad(|x: Real| s * sqrt(x), 0.0) }
               fn readme() -> Real { grad(|x: Real| sqrt(x - x) + vjp(|t: Real| t, 0.0).1(x), 1.0) }";
    for mode in [AdMode::Fwd, AdMode::Delta, AdMode::Chad] {
        let expr = "value_and_grad(inner, 0.0).0";
        let interp = eval_reals(src, expr, options(mode)).expect("runs");
        assert_eq!(interp, vec![0.0], "{expr} {mode:?}");
        assert_eq!(native_reals(src, expr, mode).0, interp, "{expr} {mode:?}");
        let interp = eval_reals(src, "readme()", options(mode)).expect("runs");
        let native = native_reals(src, "readme()", mode).0;
        // 1.0 forwards, NaN (of either sign) in reverse.
        let expected = |r: &[f64]| match mode {
            AdMode::Fwd => r == [1.0],
            _ => r.len() == 1 && r[0].is_nan(),
        };
        assert!(
            expected(&interp) && expected(&native),
            "readme() {mode:?}: {interp:?} and natively {native:?}"
        );
    }
}

/// Reverse over forward — `grad` of a function applying `jvp`, `diff` or `taylor` — is
/// one pass each way under both reverse modes (with `--fwd dual`): the inner operator
/// resolved into a push forward of its dual-number (or Taylor) translation, and that
/// resolved code translated by the delta layer, so the forward pass is recorded on the
/// tape (`ahead::translate_delta_resolved`) where pushing the outer gradient forward
/// would take one pass per input. Cases: a direction that depends on the point (its
/// deltas flow through the direction too), `diff` along a scale, a closure capturing
/// the outer variable (its capture lifted into the dual layer, then onto the tape) and
/// `taylor`, and a direction of -0.0 (`%tdense` makes it 0.0, so the tangent is 0.0 and
/// `atan2(0.0, -1.0)` is π: the review found -π where the translation kept -0.0).
/// No per-input push left, a tape there, and checked by [`check_nested_gradients`].
#[test]
fn reverse_over_forward_records_the_forward_pass_on_the_tape() {
    let src = "fn f(w: [Real]) -> Real { sum(map(|t| sin(t) * t, w)) }
               fn direction(w: [Real]) -> Real { jvp(f, w, map(|t| t * t, w)).1 }
               fn along(s: Real) -> Real {
                   diff(|a: Real| sum(map(|t| sin(a * t) * t, [0.5, s, 2.0])), s)
               }
               fn captured(s: Real) -> Real {
                   let g = |v: [Real]| s * sum(map(|t| t * t * t, v));
                   jvp(g, [0.5, s], [1.0, -1.0]).1 + jvp(g, [s, 1.0], [s, 0.5]).0
               }
               fn series(s: Real) -> Real {
                   sum(taylor(|a: Real| exp(s * a) * sin(a), s, 1.0, 3).1)
               }
               fn signed(x: Real) -> Real { x * atan2(jvp(|y: Real| y * 3.0, x, -0.0).1, -1.0) }";
    let cases = [
        ("direction", "[0.1, -0.4, 0.9, 1.3]"),
        ("along", "0.7"),
        ("captured", "1.3"),
        ("series", "0.4"),
        ("signed", "2.0"),
    ];
    check_nested_gradients(src, &cases, |expr, mode, core| {
        assert!(
            !core.contains("vjp_by_push_forward"),
            "{expr} {mode:?}: one push forward per input"
        );
        assert!(core.contains("%delta_grad("), "{expr} {mode:?}: no tape");
    });
}

/// The resolution's rounds take a code after the codes it calls (`callees_first`), so a
/// `grad` of a function calling one that applies `jvp` meets it resolved and records it
/// on the tape, whatever order the functions are written in: here `main` calls `dirder`
/// and `outer`, and `outer` calls `dirder` too (the review found `outer` taken first,
/// and one push forward per input).
#[test]
fn callees_are_resolved_before_their_callers() {
    let src = "fn main() -> Real {
                   let w0 = build(6, |i| to_real(i) / 6.0);
                   dirder(w0, 1) + outer(w0, 1)
               }
               fn outer(w0: [Real], k: Int) -> Real {
                   if k == 0 { 0.0 } else { sum(grad(|w: [Real]| dirder(w, 1), w0)) + outer(w0, k - 1) }
               }
               fn dirder(w: [Real], k: Int) -> Real {
                   if k == 0 { 0.0 } else { jvp(f, w, map(|t| t * t, w)).1 + dirder(w, k - 1) }
               }
               fn f(w: [Real]) -> Real { sum(map(|t| sin(t) * t, w)) }";
    for mode in [AdMode::Delta, AdMode::Chad] {
        let core = reachable_after_prepare(src, mode);
        assert!(
            !core.contains("vjp_by_push_forward") && core.contains("%delta_grad("),
            "{mode:?}: outer's gradient is not on the tape"
        );
    }
}

/// Optimise before differentiating: the resolution optimises the translations each
/// round makes before the next round translates them again, so forward over reverse
/// records what the optimised forward code does. `e * e`'s tangent `e·de + de·e` is one
/// `%lscale` after common subexpressions merge, and its delta translation one tape
/// entry, not two identical ones (kmeans' `dir` recorded each twice).
#[test]
fn forward_over_reverse_records_no_entry_twice() {
    let src = "fn sqdist(u: [Real], v: [Real]) -> Real {
                   sumbuild(length(u), |a| { let e = u[a] - v[a]; e * e })
               }
               fn main() -> [Real] {
                   let p = [0.5, -1.0, 2.0];
                   let g = |c: [Real]| grad(|c2: [Real]| sqdist(c2, p), c);
                   jvp(g, [1.0, 2.0, 3.0], [1.0, 1.0, 1.0]).1
               }";
    for mode in [AdMode::Delta, AdMode::Chad] {
        let program = prepared(src, mode);
        for code in &program.module.codes {
            let mut entries = Vec::new();
            fluxion_driver::core::visit::for_each_binding(&code.body, &mut |b| {
                if let Rhs::Prim(Prim::DeltaPush, args) = &b.rhs {
                    entries.push(args.clone());
                }
            });
            for (i, e) in entries.iter().enumerate() {
                assert!(
                    !entries[..i].contains(e),
                    "{mode:?}: `{}` records %delta{e:?} twice",
                    code.name
                );
            }
        }
    }
}

/// The primitives applied by the delta translation of function `name` of `src`, as
/// prepared under `--ad delta`.
fn delta_prims_of(src: &str, name: &str) -> Vec<Prim> {
    let program = prepared(src, AdMode::Delta);
    let translated = format!("{name}_delta");
    let Some(code) = program.module.codes.iter().find(|c| c.name == translated) else {
        let names: Vec<_> = program.module.codes.iter().map(|c| &c.name).collect();
        panic!("no {translated} in {names:?}")
    };
    prims_in(&code.body)
}

/// A real used once, by another real primitive of its own block, makes no tape entry
/// of its own: its combination is handed to that primitive, scaled by its partial
/// ([Delta] §7: only a delta used more than once needs sharing). `chain`'s delta code
/// records two entries — `y`, used twice, and the result — where it recorded one per
/// operation (seven). Gradients, a value used twice and in a branch, and second order
/// (a tape of tapes over the same rule) checked by [`check_nested_gradients`]; a
/// singularity as forward mode has it.
#[test]
fn a_real_used_once_adds_its_terms_to_its_users_entry() {
    let src = "fn chain(x: Real) -> Real { let y = x * x; x + y * (2.0 * sin(x) + 3.0 * y) / 6.0 }
               fn shared(x: Real) -> Real {
                   let s = x * 3.0;
                   let t = s + 1.0;
                   t * t + (if x > 0.0 { s } else { exp(t) })
               }
               fn second(x: Real) -> Real { grad(chain, x) }
               fn at_zero(s: Real) -> Real { grad(|x: Real| s * sqrt(x) + 2.0 * x, 0.0) }";
    let prims = delta_prims_of(src, "chain");
    let entries = prims.iter().filter(|p| **p == Prim::DeltaPush).count();
    assert_eq!(
        entries, 2,
        "chain's delta translation's tape entries: {prims:?}"
    );
    let cases = [
        ("chain", "0.7"),
        ("chain", "-1.3"),
        ("shared", "0.4"),
        ("shared", "-0.4"),
        ("second", "0.7"),
    ];
    check_nested_gradients(src, &cases, |_, _, _| {});
    // A zero partial still stops an infinite one: `s·∞` at s = 0 passes nothing on, as
    // forward mode says (the partials are multiplied by `%lscale`).
    for mode in [AdMode::Fwd, AdMode::Delta] {
        let got = eval_reals(src, "at_zero(0.0)", options(mode)).expect("runs");
        assert_eq!(got, vec![2.0], "{mode:?}");
        assert_eq!(native_reals(src, "at_zero(0.0)", mode).0, got, "{mode:?}");
    }
}

/// A sum of tuples of reals is one `%delta_sum` per real of the tuple — one entry of n
/// terms each, where a fold of translated additions made n entries of two (kmeans'
/// `dir` sums dual numbers) — and starts from zero as the program's sum does: the value
/// of `value_and_grad` at `[-0.0]` is the function's (π; the fold from the first
/// element gave -π).
#[test]
fn a_sum_of_tuples_of_reals_is_one_entry_per_real() {
    let src = "fn f(xs: [Real]) -> Real {
                   let s = sum(map(|x: Real| (x, (2.0 * x, x * x)), xs));
                   atan2(s.0, -1.0) + s.1.0 * s.1.1
               }
               fn use_f() -> [Real] { grad(f, [0.5, -1.5]) }";
    let prims = delta_prims_of(src, "f");
    let sums = prims.iter().filter(|p| **p == Prim::DeltaSum).count();
    assert_eq!(sums, 3, "{prims:?}");
    assert!(!prims.contains(&Prim::Fold), "{prims:?}");
    for mode in [AdMode::Delta, AdMode::Chad] {
        for expr in ["value_and_grad(f, [-0.0]).0", "f([-0.0])"] {
            let got = eval_reals(src, expr, options(mode)).expect("runs");
            assert_eq!(got, vec![std::f64::consts::PI], "{expr} {mode:?}");
            assert_eq!(native_reals(src, expr, mode).0, got, "{expr} {mode:?}");
        }
    }
    check_nested_gradients(src, &[("f", "[0.5, -1.5, 2.0]")], |_, _, _| {});
}

/// `jacobian` under `--ad delta` runs its function once, on one tape, and sweeps that
/// tape once per output (`%delta_jacobian`, resolved to `%delta_rows`): the prepared
/// program opens one tape and has no `%delta_vjp` left. Its rows are, bit for bit, the
/// rows one `vjp` per output gives (the same tape, seeded alike), natively too; they
/// agree with forward mode's columns, with central differences, and with `jvp` and
/// `vjp` by the transpose identity ⟨J·u, w⟩ = ⟨u, Jᵀ·w⟩.
#[test]
fn a_delta_jacobian_runs_its_function_once_and_sweeps_per_row() {
    let src = "fn f(x: [Real]) -> [Real] {
                   let s = sum(map(|a| a * a, x));
                   [sin(x[0]) * x[1], s, exp(x[2]) / (1.0 + x[0] * x[0]), x[1] - x[2], s, 2.0]
               }
               fn rows(x: [Real]) -> [[Real]] {
                   let (y, pb) = vjp(f, x);
                   build(length(y), |i| pb(build(length(y), |j| if i == j { 1.0 } else { 0.0 })))
               }
               fn pairing(x: [Real], u: [Real], w: [Real]) -> (Real, Real, Real) {
                   let jm = jacobian(f, x);
                   let ju = jvp(f, x, u).1;
                   let jtw = vjp(f, x).1(w);
                   (sum(map2(|r, wi| wi * sum(map2(|a, b| a * b, r, u)), jm, w)),
                    sum(map2(|a, b| a * b, ju, w)),
                    sum(map2(|a, b| a * b, u, jtw)))
               }
               fn main() -> [[Real]] { jacobian(f, [0.3, -1.2, 0.7]) }";
    let prims = prims_after_prepare(src, AdMode::Delta);
    let count = |p: Prim| prims.iter().filter(|q| **q == p).count();
    assert_eq!(count(Prim::DeltaRows), 2, "main's and pairing's: {prims:?}");
    assert!(!prims.contains(&Prim::DeltaJacobian), "{prims:?}");
    let x = [0.3, -1.2, 0.7];
    let expr = format!("jacobian(f, {x:?})");
    let got = eval_reals(src, &expr, options(AdMode::Delta)).expect("runs");
    let (native, notes) = native_reals(src, &expr, AdMode::Delta);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(native, got, "natively");
    let by_rows = eval_reals(src, &format!("rows({x:?})"), options(AdMode::Delta)).expect("runs");
    assert_eq!(got, by_rows, "one vjp per row");
    let forward = eval_reals(src, &expr, AdMode::Fwd).expect("runs");
    assert_eq!(got.len(), forward.len());
    for (a, b) in got.iter().zip(&forward) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs fwd {b}");
    }
    fluxion_driver::gradcheck::check_jacobian(src, "f", &x, options(AdMode::Delta))
        .unwrap_or_else(|e| panic!("{e}"));
    let pairing = "pairing([0.3, -1.2, 0.7], [1.0, -0.5, 2.0], [0.5, 1.5, -1.0, 2.0, 0.25, 3.0])";
    let p = eval_reals(src, pairing, options(AdMode::Delta)).expect("runs");
    for q in &p[1..] {
        assert!(
            (p[0] - q).abs() <= 1e-12 * q.abs().max(1.0),
            "⟨J·u, w⟩ {p:?}"
        );
    }
    assert_eq!(native_reals(src, pairing, AdMode::Delta).0, p, "natively");
}

/// A `%delta_jacobian` a layer translates or the resolution cannot run directly is
/// the rows of `%delta_vjp` again (`jacobian_by_rows_code`): the gradient and the JVP
/// of a function that takes a Jacobian, the Jacobian of a function that applies
/// `grad`, of a closure chosen at run time, and of a function with no outputs, each
/// natively as interpreted and as forward mode; a fault inside the function is the
/// same error in every mode. The gradient of a function taking a Jacobian is a tape of
/// tapes (one pass each way per row), not forward mode's pullback (one JVP per input
/// per row: 0.35 s against 72 s at 600 inputs).
#[test]
fn a_delta_jacobian_nested_in_other_operators() {
    let src = "fn f(x: [Real]) -> [Real] { [x[0] * x[1], sin(x[1]), x[0], x[0], 2.0] }
               fn g(x: [Real]) -> Real {
                   sum(map(|r| sum(map(|a| a * a, r)), jacobian(f, x))) * x[0]
               }
               fn h(x: [Real]) -> Real {
                   let j = jacobian(|y: [Real]| [grad(|z: [Real]| z[0] * z[0] * y[1], y)[0], y[0] * y[1]], x);
                   j[0][0] + 3.0 * j[1][1] + j[0][1] * x[1]
               }
               fn pick(k: Int) -> fn([Real]) -> [Real] {
                   if k == 0 { |x: [Real]| [x[0] * x[1]] } else { |x: [Real]| [x[1], x[0] / x[1]] }
               }
               fn chosen(k: Int, x: [Real]) -> [[Real]] { jacobian(pick(k), x) }
               fn bad(x: [Real]) -> [[Real]] { jacobian(|v: [Real]| [v[0], v[5]], x) }";
    let x = "[0.4, 1.3]";
    let exprs = [
        format!("grad(g, {x})"),
        format!("jvp(g, {x}, [1.0, 0.5])"),
        format!("grad(h, {x})"),
        format!("chosen(0, {x})"),
        format!("chosen(1, {x})"),
        format!("jacobian(|v: [Real]| slice(v, 0, 0), {x})"),
    ];
    for expr in &exprs {
        let reference = eval_reals(src, expr, AdMode::Fwd).expect("fwd runs");
        for mode in [AdMode::Delta, AdMode::Chad] {
            let interp = eval_reals(src, expr, options(mode)).expect("interpreter runs");
            let (native, notes) = native_reals(src, expr, mode);
            assert!(notes.is_empty(), "{expr} {mode:?}: {notes:?}");
            assert_eq!(
                interp, native,
                "{expr} {mode:?}: interpreter and native differ"
            );
            assert_eq!(interp.len(), reference.len(), "{expr}");
            for (a, b) in interp.iter().zip(&reference) {
                assert!(
                    (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                    "{expr} {mode:?}: {a} vs fwd {b}"
                );
            }
        }
    }
    let outer = format!("{src}\nfn main() -> [Real] {{ grad(g, {x}) }}");
    let prims = prims_after_prepare(&outer, AdMode::Delta);
    assert!(
        prims.contains(&Prim::Delta2Open),
        "no tape of tapes: {prims:?}"
    );
    let first_line = |mode: AdMode| {
        let e = eval_reals(src, &format!("bad({x})"), options(mode)).expect_err("faults");
        e.lines().next().unwrap_or_default().to_string()
    };
    let want = first_line(AdMode::Fwd);
    assert!(want.contains("index 5 out of range"), "{want}");
    for mode in [AdMode::Delta, AdMode::Chad] {
        assert_eq!(first_line(mode), want, "{mode:?}");
    }
}
