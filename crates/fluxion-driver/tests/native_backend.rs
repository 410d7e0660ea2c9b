//! `--backend native` (fluxion-native): every program gives what the interpreter
//! gives — the same value (reals to 1e-12 relative; in practice bit-identical: the C is
//! compiled without floating-point contraction) or the same runtime error at the same
//! source location — compiled code frees everything it allocates, sanitizers find
//! nothing, and the cache is used.

// The generator is shared with `generated.rs`, which uses all of it.
#[allow(dead_code)]
mod generator;
#[path = "common/messages.rs"]
mod messages;

use std::path::{Path, PathBuf};

use fluxion_driver::gradcheck::parse_reals;
use fluxion_driver::native_backend::{CallValues, Toolchain};
use fluxion_driver::{
    AdMode, Backend, FwdMode, RunOptions, compile, compile_with_expr, with_big_stack,
};

const MODES: [AdMode; 3] = [AdMode::Chad, AdMode::Fwd, AdMode::Delta];

/// The `--ad` and `--fwd` pairs the tests of whole programs run: `jvp` and `diff`, and
/// the forward passes of `--ad fwd`'s gradients and of `hessian`, follow `--fwd` (dual
/// numbers, the default, or forward CHAD), so `--ad fwd` runs with both.
const SETTINGS: [(AdMode, FwdMode); 4] = [
    (AdMode::Chad, FwdMode::Chad),
    (AdMode::Fwd, FwdMode::Chad),
    (AdMode::Fwd, FwdMode::Dual),
    (AdMode::Delta, FwdMode::Dual),
];

fn options(mode: AdMode, backend: Backend) -> RunOptions {
    options_with((mode, FwdMode::Chad), backend)
}

fn options_with((mode, fwd): (AdMode, FwdMode), backend: Backend) -> RunOptions {
    RunOptions {
        mode,
        fwd,
        backend,
        ..RunOptions::default()
    }
}

/// `--ad MODE --fwd FWD`, as a test names it.
fn setting_name((mode, fwd): (AdMode, FwdMode)) -> String {
    format!("--ad {} --fwd {}", mode.name(), fwd.name())
}

/// A toolchain for tests: its own cache (so tests never read another build's
/// libraries), `-O1` (faster to compile; results are the same).
fn test_toolchain(name: &str) -> Toolchain {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("native-cache-{name}"));
    Toolchain {
        cache_dir: dir,
        opt_level: 1,
        ..Toolchain::default()
    }
}

/// The rendered value or error of `entry` in `src`, and the notes of the run.
fn run(src: &str, mode: AdMode, backend: Backend) -> (Result<String, String>, Vec<String>) {
    run_with(src, (mode, FwdMode::Chad), backend)
}

/// [`run`] with a `--fwd` too.
fn run_with(
    src: &str,
    setting: (AdMode, FwdMode),
    backend: Backend,
) -> (Result<String, String>, Vec<String>) {
    run_entry(src, "main", setting, backend)
}

/// [`run_with`] of another entry than `main`.
fn run_entry(
    src: &str,
    entry: &str,
    setting: (AdMode, FwdMode),
    backend: Backend,
) -> (Result<String, String>, Vec<String>) {
    let (src, entry) = (src.to_string(), entry.to_string());
    with_big_stack(move || {
        let program = match compile("prog.flx", &src) {
            Ok(p) => p,
            Err(f) => return (Err(f.render()), vec![]),
        };
        match program.run_with_options(&entry, None, options_with(setting, backend)) {
            Ok(out) => (Ok(out.to_literal()), out.notes.clone()),
            Err(f) => (Err(f.render()), f.notes.clone()),
        }
    })
}

/// The C of `src`'s `main` under `--ad delta`, the runtime included.
fn delta_c_of_main(src: &str) -> String {
    compile("prog.flx", src)
        .unwrap_or_else(|f| panic!("{}", f.render()))
        .show_with("c", Some("main"), AdMode::Delta)
        .expect("C")
}

/// `src`'s result natively, which must be the interpreter's, reached without falling
/// back to the interpreter.
fn natively_as_interpreted(src: &str, mode: AdMode) -> Result<String, String> {
    let (interp, _) = run(src, mode, Backend::Interp);
    let (native, notes) = run(src, mode, Backend::Native);
    assert!(notes.is_empty(), "fell back: {notes:?}\n{src}");
    assert_eq!(interp, native, "--ad {}: {src}", mode.name());
    native
}

/// The generated programs' seeds a test runs: `FLUXION_NATIVE_GEN_SEED` on (0 unless
/// set), `FLUXION_NATIVE_GEN_CASES` of them (`cases` unless set).
fn generated_seeds(cases: u64) -> (u64, u64) {
    let var = |name: &str| std::env::var(name).ok().and_then(|s| s.parse().ok());
    (
        var("FLUXION_NATIVE_GEN_SEED").unwrap_or(0),
        var("FLUXION_NATIVE_GEN_CASES").unwrap_or(cases),
    )
}

fn close(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits()
        || (a.is_nan() && b.is_nan())
        || (a - b).abs() <= 1e-12 * a.abs().max(b.abs()) + 1e-300
}

/// `xs` as a Fluxion array literal, every real printed exactly.
fn real_array(xs: impl Iterator<Item = f64>) -> String {
    let parts: Vec<String> = xs.map(|v| format!("{v:?}")).collect();
    format!("[{}]", parts.join(", "))
}

fn assert_no_bug(notes: &[String], what: &str) {
    for n in notes {
        assert!(
            !n.contains("a bug") && !n.contains("internal error"),
            "{what}: {n}"
        );
    }
}

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "flx"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_example_gives_the_interpreters_result_in_every_mode() {
    let mut fell_back = Vec::new();
    for path in examples() {
        let src = std::fs::read_to_string(&path).expect("readable");
        for setting in SETTINGS {
            let (interp, _) = run_with(&src, setting, Backend::Interp);
            let (native, notes) = run_with(&src, setting, Backend::Native);
            let what = format!("{} {}", path.display(), setting_name(setting));
            assert_no_bug(&notes, &what);
            if !notes.is_empty() {
                fell_back.push(what.clone());
            }
            match (&interp, &native) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{what}"),
                _ => assert_eq!(interp, native, "{what}"),
            }
        }
    }
    // Every example runs natively in every mode, Halley's method iterated too (a
    // closure of the type of the functions it differentiates: a tower of translations
    // whose top is dropped, resolve.rs's `drop_unfinished`).
    assert!(
        fell_back.is_empty(),
        "ran in the interpreter: {fell_back:?}"
    );
}

/// One rule outside a function's domain for every mode and both backends: a zero
/// tangent or cotangent scaled by an infinite or NaN partial is zero (`%lscale`; the
/// reverse sweeps skip zero adjoints). The expected values are read off the programs:
/// - `sqrt(x * x)` at 0: the tangent of `x * x` is `0·1 + 0·1 = 0`, scaled by
///   `sqrt'(0) = inf`: 0 (dual numbers gave 0·inf = NaN, forward CHAD 0);
/// - `grad(|w| sqrt(x - 5.0), 1.0)` ignores `w`: 0 at every `x`, so its value and its
///   derivative are 0 (the interpreter's delta mode gave the value NaN: the inner JVP
///   scaled `x`'s zero tangent by `sqrt'(-4)`);
/// - `sqrt(c) + w` with `c = -1`: `d/dw = 1` (dual numbers gave NaN);
/// - `grad(|w| log(x - 5.0) * w, 1.0) = log(x - 5)`, whose derivative at 1 is
///   `1 / (1 - 5) = -0.25`;
/// - the Jacobian of `[v0, sqrt'(v1 - 5)]` at `[0.5, 1.0]`: row 0 is `[1, 0]`, row 1 is
///   `[0, sqrt''(-4)] = [0, NaN]` (a NaN of row 1 leaked into row 0 where `wᵀ·J` came
///   from JVPs, as `0·NaN` in a dot product);
/// - `grad` of `sqrt(x * x)` at 0: the partials of `x * x` are `x = 0`, and a zero
///   partial passes nothing on, not even `sqrt'(0) = inf` (delta's sweep gave 0·inf);
/// - `grad(|w| pow(-1.0, v0) * sqrt(w0), [v0, 1.0])[1]` is `d/dw1` of a function of
///   `w0` alone: 0 for every `v0`, so its Hessian is `[[0.0]]` (the interpreter's delta
///   mode gave NaN, native 0);
/// - a pullback of `-0.0`, and `jvp` in the direction `-0.0`: a derivative's zero is
///   `0.0` (natively -0.0 is a real's symbolic zero, which `%tdense` makes 0.0, of a
///   cotangent and of a direction; the interpreter kept -0.0).
#[test]
fn every_mode_and_backend_scale_a_zero_tangent_by_a_nan_partial_to_zero() {
    let src = "fn main() -> ((Real, Real), (Real, Real), (Real, Real, Real), [[Real]]) {
    let c = -1.0;
    ((diff(|x| sqrt(x * x), 0.0), diff(|x| sqrt(x * x), 4.0)),
     value_and_grad(|x: Real| grad(|w: Real| sqrt(x - 5.0), 1.0), 1.0),
     (grad(|w: Real| sqrt(c) + w, 1.0),
      grad(|x: Real| grad(|w: Real| sqrt(x - 5.0), 1.0), 1.0),
      grad(|x: Real| grad(|w: Real| log(x - 5.0) * w, 1.0), 1.0)),
     jacobian(|v: [Real]| [v[0], diff(|t: Real| sqrt(t - 5.0), v[1])], [0.5, 1.0]))
}
fn more() -> (Real, [[Real]], Real, Real) {
    let (_, pb) = vjp(|x: Real| 3.0 * x, 1.0);
    (grad(|x: Real| sqrt(x * x), 0.0),
     hessian(|v: [Real]| grad(|w: [Real]| pow(-1.0, v[0]) * sqrt(w[0]), [v[0], 1.0])[1], [0.0]),
     pb(-0.0), jvp(|x: Real| 3.0 * x, 1.0, -0.0).1)
}";
    let expected = "((0.0, 1.0), (0.0, 0.0), (1.0, 0.0, -0.25), [[1.0, 0.0], [0.0, NaN]])";
    let expected_more = "(0.0, [[0.0]], 0.0, 0.0)";
    for mode in MODES {
        for fwd in [FwdMode::Dual, FwdMode::Chad] {
            for backend in [Backend::Interp, Backend::Native] {
                let (value, notes) = run_with(src, (mode, fwd), backend);
                assert_no_bug(&notes, "the NaN-domain program");
                let how = format!("{} --backend {}", setting_name((mode, fwd)), backend.name());
                assert_eq!(value.as_deref(), Ok(expected), "{how}");
                let (value, notes) = run_entry(src, "more", (mode, fwd), backend);
                assert_no_bug(&notes, "the NaN-domain program");
                assert_eq!(value.as_deref(), Ok(expected_more), "more: {how}");
            }
        }
    }
}

/// The C compiler with the backend's flags builds constant tuples right: GCC 12.2 with
/// AVX-512 did not (`tests/native/constant_tuples.c`, reduced from Halley's example
/// under `--fwd dual`), hence `-mno-avx512f` beside `-march=native`; on a Sapphire
/// Rapids machine it was still wrong with AVX2 under Ice Lake tuning, hence
/// `-fno-tree-slp-vectorize`. By hand: `fn_45`
/// calls `fn_42` with `((1, 1), (0, 0))`, which adds the captured `((1, 0), (1, 0))`:
/// `((2, 1), (1, 0))`, whose transposition is printed.
#[test]
fn the_c_compilers_flags_build_constant_tuples_right() {
    let tc = Toolchain::default();
    if !tc.available() {
        eprintln!("no C compiler: skipped");
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("constant-tuples");
    std::fs::create_dir_all(&dir).expect("dir");
    let exe = dir.join("constant_tuples");
    let flags: Vec<String> = tc
        .flags()
        .into_iter()
        .filter(|f| f != "-shared" && f != "-fPIC")
        .collect();
    let built = std::process::Command::new(&tc.cc)
        .args(&flags)
        .arg("-o")
        .arg(&exe)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native/constant_tuples.c"))
        .output()
        .expect("cc runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = std::process::Command::new(&exe).output().expect("runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "((2, 1), (1, 0))",
        "flags {flags:?}"
    );
}

/// A closure the compiler cannot see, taken from an array, whose code applies an
/// operator itself (so the delta layer and CHAD translate no such code): its gradient
/// is computed natively in every mode, by pushing forward through the forward layer,
/// with no note — as the interpreter computes it, ahead of time too. (A closure that still has no translation hands the run over:
/// `ahead_of_time.rs`, the operator tower of run-time depth.)
#[test]
fn a_closure_applying_an_operator_taken_from_an_array_runs_natively() {
    let lets = "let fs = [|x: Real| x * x * x, |x: Real| grad(|t: Real| t * t * x, x)];";
    let meets =
        format!("fn main() -> (Real, Real) {{ {lets} (grad(fs[0], 2.0), grad(fs[1], 2.0)) }}");
    let misses = format!("fn main() -> Real {{ {lets} grad(fs[0], 2.0) }}");
    for mode in MODES {
        let (value, notes) = run(&meets, mode, Backend::Native);
        // d/dx x³ = 3x², and grad(t ↦ t²·x, x) = 2x·x = 2x², whose derivative is 4x: at 2.
        let reals = parse_reals(&value.clone().expect("runs"));
        assert_eq!(reals.len(), 2);
        assert!(close(reals[0], 12.0) && close(reals[1], 8.0), "{reals:?}");
        assert!(notes.is_empty(), "--ad {}: {notes:?}", mode.name());
        assert_eq!(
            value,
            run(&meets, mode, Backend::Interp).0,
            "--ad {}",
            mode.name()
        );
        let (value, notes) = run(&misses, mode, Backend::Native);
        assert_eq!(value, Ok("12.0".to_string()), "--ad {}", mode.name());
        assert!(notes.is_empty(), "--ad {}: {notes:?}", mode.name());
    }
}

/// Each program runs natively in every mode (no note) and gives the interpreter's value.
fn assert_native_with_the_interpreters_values(programs: &[&str]) {
    for src in programs {
        for setting in SETTINGS {
            let (interp, _) = run_with(src, setting, Backend::Interp);
            let (native, notes) = run_with(src, setting, Backend::Native);
            let what = setting_name(setting);
            assert!(notes.is_empty(), "{what}: fell back: {notes:?}\n{src}");
            let (a, b) = (interp.expect("runs"), native.expect("runs"));
            assert_eq!(a, b, "{what}\n{src}");
        }
    }
}

/// Both backends add array cotangents in one order, so their derivatives agree to the
/// bit (docs/internals.md, "linear building blocks"): two dense arrays at once, element
/// by element (a Hessian under CHAD, whose rows are arrays of pairs: the interpreter
/// added them at once, native code as a lazy sum); an array cotangent added onto a
/// nonzero one into its dense form (rows of a nested array read in a `sumbuild`: the
/// interpreter made a lazy sum of the two). The first two differed in the last bits
/// before; the third reads slices of one array, whose cotangents are embedded (their
/// leaves go straight into the buffer, as natively).
#[test]
fn both_backends_add_array_cotangents_in_one_order() {
    assert_native_with_the_interpreters_values(&[
        "fn main() -> [[Real]] { hessian(|x: [Real]| log(dot(x, matvec([x, x], x))), [0.5, -1.0]) }",
        "fn main() -> [[Real]] {
             let x = build(4, |i| build(3, |j| cos(to_real(2 * i + j)) + 0.5));
             let icf = build(1, |c| build(6, |j| 0.2 * cos(to_real(5 * c + j))));
             grad(|q: [[Real]]| {
                 let lrows = map(|l| build(3, |j| build(j, |t| l[t + j])), q);
                 sumbuild(4, |i| {
                     let xc = x[i];
                     sum(build(1, |c| {
                         let rows = lrows[c];
                         let qx = build(3, |j| xc[j] * sum(rows[j]));
                         dot(qx, qx)
                     }))
                 })
             }, icf)
         }",
        "fn main() -> [Real] {
             let q0 = build(7, |i| 0.3 * cos(to_real(3 * i)) + 0.1);
             grad(|q: [Real]| {
                 let a = slice(q, 0, 4);
                 let b = slice(q, 2, 4);
                 let e = map(exp, slice(q, 1, 5));
                 dot(a, b) * sum(e) + sumbuild(3, |i| a[i] * e[i + 1] * b[3 - i])
             }, q0)
         }",
    ]);
}

/// A closure the compiler cannot see (returned by a call, taken from an array, passed
/// in) is differentiated natively too: `%chad_of` picks its code's translation, made
/// ahead of time for every code that can flow there, by the closure's code at run time.
#[test]
fn closures_unknown_at_compile_time_are_differentiated_natively() {
    let programs = [
        "fn scale(k: Real) -> fn(Real) -> Real { |x| k * x * x }
         fn shift(k: Real) -> fn(Real) -> Real { |x| sin(x + k) * x }
         fn cube(x: Real) -> Real { x * x * x }
         fn main() -> ([Real], [Real]) {
             let fs = [scale(2.0), shift(1.0), scale(-1.0), cube];
             (map(|f| grad(f, 1.5), fs), map(|f| diff(f, 0.5), fs))
         }",
        "fn loss(data: [(Real, Real)]) -> fn((Real, Real)) -> Real {
             |p: (Real, Real)| sum(map(|(x, y)| { let r = p.0 + p.1 * x - y; r * r }, data))
         }
         fn main() -> (Real, Real) { grad(loss([(0.0, 1.0), (1.0, 3.0), (2.0, 7.0)]), (0.5, 1.0)) }",
        // Closures capturing closures, and a function differentiating its argument
        // (lifted into the forward layer at run time, `%chad_of(f, 3)`).
        "fn compose(f: fn(Real) -> Real, g: fn(Real) -> Real) -> fn(Real) -> Real { |x| f(g(x)) }
         fn main() -> ([Real], [Real]) {
             let fs = [compose(|x| x * x, sin), compose(exp, |x| 2.0 * x),
                       compose(compose(cos, |x| x + 1.0), |x| x * 3.0)];
             (map(|f| grad(f, 0.5), fs), map(|f| diff(f, 0.25), fs))
         }",
        "fn newton(f: fn(Real) -> Real, x: Real) -> Real { x - f(x) / diff(f, x) }
         fn main() -> Real { let k = 3.0; let f = |x: Real| x * x * x - k; iterate(8, |x| newton(f, x), 1.0) }",
        "fn curvature(f: fn([Real]) -> Real, x: [Real]) -> Real { let h = hessian(f, x); h[0][0] + h[1][1] }
         fn main() -> (Real, Real) {
             let a = 2.0;
             (curvature(|v| a * v[0] * v[0] * v[1] + sin(v[1]), [1.0, 2.0]),
              curvature(|v| exp(v[0] + v[1]), [0.1, 0.2]))
         }",
    ];
    assert_native_with_the_interpreters_values(&programs);
}

/// Nested operators (`hessian`, `grad` of `grad`, `vjp` inside a differentiated
/// function, `jacobian` of `grad`, `jvp` of `grad`) and `taylor` run natively in every
/// mode: the forward or Taylor translation of a function that applies an operator is
/// pushed forward, its inner operators resolved in turn (forward-over-reverse).
#[test]
fn nested_operators_and_taylor_run_natively() {
    let programs = [
        "fn main() -> [[Real]] {
             let a = 1.5;
             let w = [0.5, -1.0, 2.0];
             hessian(|x| a * sum(map2(|u, v| u * v * sin(u), x, w)) + exp(x[0] * x[2]), [0.3, 0.7, -0.2])
         }",
        "fn f(x: Real, y: Real) -> Real { x * x * y + sin(x * y) }
         fn g(y: Real) -> Real { grad(|x| f(x, y), 1.3) }
         fn main() -> (Real, Real) { (grad(g, 0.7), diff(|y| grad(g, y), 0.4)) }",
        "fn main() -> ([Real], [[Real]]) {
             taylor(|v| map(|x| exp(x) * cos(x) / (1.0 + x * x), v), [0.1, 0.2, 0.3], [1.0, 0.5, -1.0], 5)
         }",
        "fn h(p: (Real, Real)) -> (Real, Real) { (p.0 * p.1, sqrt(p.0 + p.1 * p.1)) }
         fn main() -> ((Real, Real), [(Real, Real)]) { taylor(h, (1.0, 2.0), (0.5, 0.25), 3) }",
        "fn main() -> Real {
             grad(|x| { let (y, pb) = vjp(|z| z * z * x, 2.0); pb(1.0) * y }, 1.5)
         }",
        "fn loss(x: [Real]) -> Real { log(sum(map(|v| exp(v), x))) }
         fn main() -> [[Real]] { jacobian(|x| grad(loss, x), [0.1, -0.4, 0.9, 0.2]) }",
        "enum L { Nil, Cons(Real, L) }
         fn total(l: L) -> Real { match l { Nil => 0.0, Cons(h, t) => h * h * h + total(t) } }
         fn list(x: [Real], i: Int) -> L { if i >= length(x) { Nil } else { Cons(x[i], list(x, i + 1)) } }
         fn main() -> [[Real]] { hessian(|x| total(list(x, 0)) * x[1], [1.0, 2.0, 3.0]) }",
        "fn main() -> (Real, [Real]) {
             taylor(|x| fold(|acc, i| acc * x + to_real(i), 0.0, range(6)), 0.7, 1.0, 6)
         }",
        "fn f(v: [Real]) -> Real { sum(map(|x| x * x * x, v)) * v[0] }
         fn main() -> ([Real], [Real]) { jvp(|v| grad(f, v), [1.0, 2.0], [0.5, -0.5]) }",
        "fn main() -> (Real, Real) {
             value_and_grad(|y| { let (v, g) = value_and_grad(|x| x * exp(x * y), 0.5); v + g * g }, 0.3)
         }",
        "enum Shape { Circle(Real), Rect(Real, Real) }
         fn area(s: Shape) -> Real { match s { Circle(r) => 3.0 * r * r, Rect(w, h) => w * h } }
         fn main() -> (Shape, [Shape]) { taylor(|s| match s { Circle(r) => Circle(area(s) * r), Rect(w, h) => Rect(h, area(s)) }, Rect(2.0, 3.0), Rect(1.0, 0.5), 2) }",
    ];
    assert_native_with_the_interpreters_values(&programs);
}

/// `--ad delta`: a `%delta_sum` of a loop whose element makes one tape node is fused
/// (`delta_fuse.rs`: the elements' terms go straight into the sum's node, no array):
/// the gradients are bit-identical to the interpreter's, whose tape has a node per
/// element — also where elements share an input (its adjoint's sum keeps its order),
/// where loops nest, for an empty array, where a factor is constant (its terms are on
/// the zero delta), and for a loop that is not fused (two nodes per element); a length mismatch and a too-long loop fail as the array would have.
#[test]
fn fused_delta_sums_give_the_interpreters_bits() {
    let programs = [
        "fn main() -> [Real] { grad(|v: [Real]| sum(map(|x| x * v[0], v)), [1.0, 1.0e17, 1.0, -1.0e17]) }",
        "fn main() -> [Real] { grad(|v: [Real]| dot(v, v) + sum(map2(|a, b| a * b * 1.0, v, map(exp, v))), [0.1, 0.2, 0.3]) }",
        "fn main() -> [Real] { grad(|v: [Real]| sumbuild(length(v), |i| sumbuild(i, |j| v[i] * v[j])), [0.3, 1.1, -0.7, 2.0]) }",
        "fn main() -> [Real] { grad(|v: [Real]| sumbuild(length(v), |i| v[i] * v[0] * 3.0), [0.3, 1.1, -0.7]) }",
        "fn main() -> [Real] { grad(|v: [Real]| sum(map2(|a, b| a * b, v, [1.0, -2.0, 3.0])), [0.3, 1.1, -0.7]) }",
        "fn main() -> (Real, [Real]) { grad(|p: (Real, [Real])| p.0 + sum(map(|x| x * x, p.1)), (2.0, [])) }",
        "fn main() -> Real { grad(|x: Real| sum(map2(|a, b| a * b, [x, x], [1.0])), 1.0) }",
        "fn main() -> Real { grad(|x: Real| sumbuild(100000000000000, |i| x * to_real(i)), 1.0) }",
        "fn main() -> Real { grad(|x: Real| sumbuild(-2, |i| x * to_real(i)), 1.0) }",
        // An index out of range in a fused loop, which runs in two copies
        // (`index_hints`): the checked copy reports it.
        "fn main() -> [Real] { grad(|v: [Real]| sum(build(3, |i| v[i] * v[0])), [1.0, 2.0]) }",
        "fn main() -> [Real] { grad(|v: [Real]| sum(build(2, |i| v[i] * v[0])), [1.0, 2.0]) }",
    ];
    for src in programs {
        let _ = natively_as_interpreted(src, AdMode::Delta);
    }
    // Dot products, whose sum's node holds the two arrays instead of their terms
    // (delta_fuse.rs `dot_or`): the sweep reads the terms back in the same order.
    let dots = [
        "fn main() -> [Real] { grad(|v: [Real]| dot(v, v) * dot(v, [1.0e17, 1.0, -1.0e17]), [0.1, 0.2, 0.3]) }",
        "fn main() -> [Real] { grad(|v: [Real]| sum(map(|x| x * x, v)) + sum(map2(|a, b| a * b, v, reverse(v))), [0.1, 0.2, 0.3]) }",
        // Five terms on one parent: summed last element first, the sum is 1, not 0.
        // (Counts above `unroll::MAX_COUNT` or not known literals: the loops stay.)
        // (The constants are pairs of an array made with `x`: captured from outside,
        // they would stay primals, activity.rs, and make no dot node.)
        "fn main() -> Real { grad(|x: Real| { let s = [x, x, x, x, x]; let w = [1.0, 1.0e17, -1.0e17, 0.0, 0.0, x]; sumbuild(5, |t| s[t] * w[t]) }, 2.0) }",
        "fn main() -> [Real] { grad(|v: [Real]| { let a = slice(v, 1, 2); sumbuild(length(v) - 2, |t| v[t] * a[t]) }, [0.5, 2.0, 7.0]) }",
        "fn main() -> [Real] { grad(|v: [Real]| sumbuild(length(v) - 1, |t| v[t] * v[t]) + v[0], [1.0]) }",
        // An infinite adjoint reaches the dot: a zero partial passes none of it on.
        // (Both operands differentiated: a constant one is passed to `dot` as a
        // primal, activity.rs, and makes no dot node.)
        "fn main() -> ([Real], [Real]) { grad(|p: ([Real], [Real])| sqrt(dot(p.0, p.1)), ([1.0, 0.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0, 0.0])) }",
        "fn main() -> [Real] { grad(|v: [Real]| { let a = slice(v, 2, 2); sqrt(sumbuild(length(v) - 2, |t| v[t] * a[t])) }, [0.0, 1.0, 3.0, 0.0]) }",
        "fn main() -> [Real] { let w = [0.0, 0.0, 0.0, 0.0, 0.0]; grad(|v: [Real]| sqrt(dot(v, w)) + dot(v, v), [1.0, 2.0, 3.0, 4.0, 5.0]) }",
        // Dots on a tape nested in another, and an operand from the outer tape.
        "fn main() -> [Real] { grad(|v: [Real]| dot(grad(|w: [Real]| dot(w, v) * dot(w, w), v), v), [0.5, 1.5]) }",
        "fn main() -> Real { grad(|x: Real| { let v = [x, 2.0 * x, 0.5, x * x, 1.0]; dot(vjp(|w: [Real]| dot(w, v), v).1(1.0), v) }, 0.7) }",
        // A count beyond an operand: the fused loop runs and faults where the
        // interpreter does.
        "fn main() -> [Real] { grad(|v: [Real]| sumbuild(length(v) + 1, |t| v[t] * v[t]), [1.0, 2.0]) }",
    ];
    for src in dots {
        let _ = natively_as_interpreted(src, AdMode::Delta);
        let c = delta_c_of_main(src);
        assert!(c.contains("fx_tape_dot(da, db"), "no dot node:\n{src}");
    }
    let fused = delta_c_of_main(programs[0]);
    assert!(
        fused.contains("fx_tape_fused_close("),
        "the loop was not fused:\n{fused}"
    );
}

/// `--ad chad` sums cotangents as the interpreter does: two dense arrays of reals
/// at once (its unboxed arrays), anything else lazily — so the gradient of
/// `dot(x, c) + dot(x, x)` is `c + (x + x)` on both backends, not `(c + x) + x`
/// (1.7000000000000002; found by a helper, /work/adv12/min). A reverse operator on a
/// closure calling closures it captures translates the captured closures too
/// (`lift.rs`), as the interpreter does at run time: one reverse pass, where native
/// code pushed forward once per input (20,000 inputs: 6 s against 0.3 s).
#[test]
fn chad_gradients_are_the_interpreters_and_take_its_time() {
    let programs = [
        "fn main() -> [Real] { let c = [0.8, -0.1]; grad(|x: [Real]| dot(x, c) + dot(x, x), [0.5, 0.9]) }",
        "fn main() -> [Real] {
    let k = |u: [Real], w: [Real]| dot(u, w);
    grad(|x: [Real]| k(x, x) * k(x, [0.7, -0.3, 0.9]), [0.3, 0.1, -0.25])
}",
        // A cotangent array holding symbolic zeros (`b` unused) added to dense ones:
        // at once on both backends (found by a helper, /work/adv13/min).
        "fn main() -> [Real] { grad(|x: [Real]| dot(x, map2(|a: Real, b: Real| a, matvec([x, x], x), x)), [1.5, 0.1]) }",
        // Closures capturing closures capturing data, two deep.
        "fn main() -> ([Real], Real) {
    let c = [1.5, -2.0];
    let sq = |v: [Real]| dot(v, c) * dot(v, v);
    let twice = |v: [Real]| sq(v) + sq(map(|t| t * 0.5, v));
    (grad(|x: [Real]| twice(x) * sq(x), [0.25, -0.75]), grad(|s: Real| twice([s, s]), 0.3))
}",
    ];
    for src in programs {
        natively_as_interpreted(src, AdMode::Chad).expect("a gradient");
    }
}

/// A dot node holds its two arrays only while they take no more memory than the terms
/// it replaces would (`fx_tape_dot_pays`): a dot over a 16-element prefix of a fresh
/// 100,016-element array, 300 times, writes terms, where holding the arrays would keep
/// 480 MB alive (found by a helper, /work/adv12/min).
#[test]
fn a_dot_node_holds_no_more_memory_than_its_terms() {
    let src = "fn main() -> Real {
    let z = replicate(100000, 0.5);
    grad(|x: [Real]| fold(|acc, k| {
        let a = concat(x, z);
        acc + sumbuild(16, |t| a[t] * a[t])
    }, 0.0, range(300)), replicate(16, 1.0))[0]
}";
    assert!(delta_c_of_main(src).contains("fx_tape_dot_pays(held, n)"));
    for backend in [Backend::Interp, Backend::Native] {
        let (out, notes) = run_in_64_mib(src, backend);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(out, Ok("600.0".to_string()), "{backend:?}");
    }
}

/// Forward over reverse of a sum (kmeans' `dir`: `jvp` of a `grad`): the loop of dual
/// numbers of pairs is unzipped into one loop per component, each summed by a loop
/// node computing its elements again, no array of tuples and no node per element;
/// the interpreter's bits. For f = Σ (c − p)²·p, the gradient is 2(c − p)·p and the
/// Hessian times the ones 2p (by hand).
#[test]
fn forward_over_reverse_sums_are_loop_nodes() {
    let src = "fn f(c: [Real], p: [Real]) -> Real { sumbuild(length(c), |a| { let e = c[a] - p[a]; e * e * p[a] }) }
         fn main() -> ([Real], [Real]) {
             let c = build(9, |i| to_real(i) * 0.3 - 1.0);
             let p = build(9, |i| 0.5 - to_real(i) * 0.1);
             jvp(|c: [Real]| grad(|c2: [Real]| f(c2, p), c), c, replicate(9, 1.0))
         }";
    let c = delta_c_of_main(src);
    assert!(
        c.matches("x_->ids = 0").count() >= 2,
        "two sum loop nodes:\n{c}"
    );
    let out = natively_as_interpreted(src, AdMode::Delta).expect("runs");
    let reals: Vec<f64> = out
        .split(|ch: char| !(ch.is_ascii_digit() || ".-e".contains(ch)))
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().expect("a real"))
        .collect();
    assert_eq!(reals.len(), 18, "{out}");
    for i in 0..9 {
        let (ci, pi) = (i as f64 * 0.3 - 1.0, 0.5 - i as f64 * 0.1);
        let (g, h) = (2.0 * (ci - pi) * pi, 2.0 * pi);
        assert!((reals[i] - g).abs() <= 1e-12 * (1.0 + g.abs()), "{out}");
        assert!((reals[9 + i] - h).abs() <= 1e-12 * (1.0 + h.abs()), "{out}");
    }
}

/// A closure captured by a closure that lives on the C stack lives there too when the
/// capturing code only applies it: gmm's row of Q·v, captured by the loop summing its
/// squares (and the array it captures, only read, with it). One returned inside a
/// closure that escapes stays on the heap. Both give the interpreter's results.
#[test]
fn closures_only_applied_by_a_stack_closure_live_on_the_stack() {
    let heap_closures = |src: &str| {
        let c = delta_c_of_main(src);
        let (_, program) = c
            .split_once("/* ---- program ---- */")
            .expect("the program");
        program.matches("(fx_clo*)fx_alloc(").count()
    };
    let rows = "fn qtimes(v: [Real], s: Real) -> [Real] {
            build(length(v), |i| v[i] * s + sumbuild(i, |j| v[j] * v[i]))
        }
        fn main() -> Real {
            sumbuild(30, |c| {
                let v = map2(|a, b| a - b, build(5, |i| to_real(i)), build(5, |i| to_real(c) * 0.25));
                let r = qtimes(v, 2.0);
                dot(r, r)
            })
        }";
    assert_eq!(heap_closures(rows), 0, "{}", delta_c_of_main(rows));
    let _ = natively_as_interpreted(rows, AdMode::Delta);
    // (`mk` recursive, so that it is not inlined and folded away.)
    let escapes = "fn mk(k: Int) -> fn(Int) -> Int {
            let f = |i: Int| i * k;
            if k > 100 { mk(k - 1) } else { |j: Int| f(j) + 1 }
        }
        fn main() -> Int { let fs = build(3, |k| mk(k + 2)); fs[0](4) + fs[2](5) }";
    assert_eq!(heap_closures(escapes), 2, "{}", delta_c_of_main(escapes));
    assert_eq!(
        natively_as_interpreted(escapes, AdMode::Delta).expect("runs"),
        "30"
    );
    // Captured by a stack closure (the fold's lambda) whose code captures it again
    // into the closure it returns, which `mk` returns: the heap (a review found the
    // first version left `f` on `mk`'s stack).
    let recaptured = "fn mk(k: Int) -> fn(Int) -> Int {
            let f = |i: Int| i * k;
            let h = fold(|acc: fn(Int) -> Int, t: Int| |j: Int| f(j) + t, |j: Int| j, range(k));
            if k > 100 { mk(k - 1) } else { h }
        }
        fn main() -> Int { let fs = build(3, |k| mk(k + 2)); fs[0](4) + fs[2](5) }";
    assert_eq!(
        heap_closures(recaptured),
        3,
        "{}",
        delta_c_of_main(recaptured)
    );
    assert_eq!(
        natively_as_interpreted(recaptured, AdMode::Delta).expect("runs"),
        "32"
    );
}

/// `minimum`, `maximum` or `argmax` of a `map` nothing else reads is one loop that
/// keeps the best element (kmeans' nearest centroid), with the pair's values: ties
/// (the first kept), a NaN (never better, so kept only when first), -0.0 against 0.0,
/// `Int`s, and the argmax's index.
#[test]
fn a_reduction_of_a_map_is_one_loop_with_the_pairs_values() {
    let src = "fn main() -> ((Real, Real, Int), (Real, Real, Int), (Real, Int), (Int, Int)) {
            let xs = [3.0, -1.0, 4.0, -1.0, 5.0, 0.0 / 0.0];
            let ns = [0.0 / 0.0, 2.0, 1.0];
            let zs = [0.0, -0.0, 1.0];
            let k = length(xs);
            ((minimum(map(|x| x * 2.0, xs)), maximum(map(|x| x - 1.0, xs)), argmax(map(|x| x * x, xs))),
             (minimum(map(|x| x + 0.0, ns)), maximum(map(|x| -x, zs)), argmax(map(|x| x * 0.0, ns))),
             (minimum(map(|z| z * 1.0, zs)), argmax(map(|i| (i * 7) % k, range(k)))),
             (minimum(map(|i| (i * 5) % k, range(k))), maximum(map(|i| i - k, range(k)))))
        }";
    let c = delta_c_of_main(src);
    let (_, program) = c
        .split_once("/* ---- program ---- */")
        .expect("the program");
    assert!(
        program.matches("best_v = b_ ? t").count() >= 3,
        "fused:\n{program}"
    );
    assert!(!program.contains("\"map\""), "a map made:\n{program}");
    let _ = natively_as_interpreted(src, AdMode::Delta).expect("runs");
}

/// Arrays of scalars a function makes and only reads (indexes, measures, passes to a
/// function that only reads them) live on the C stack when they fit in 256 bytes:
/// det's minors, one array of columns per term. The interpreter's results, from the
/// stack and (past 32 elements) from the heap; no stack array where one escapes (is
/// returned, stored, captured by a closure that escapes) or, in a program that
/// records on a tape, where a loop node may hold it until the sweep (captured by an
/// element function it runs again, a `map`'s operand): det's gradient keeps its
/// minors' columns on the stack; a gradient whose loop node reads a small array made
/// per element does not.
#[test]
fn small_read_only_arrays_live_on_the_stack() {
    // Whether the program's C (after the runtime) makes an array on the stack.
    let on_stack = |src: &str| {
        let c = delta_c_of_main(src);
        let (_, program) = c
            .split_once("/* ---- program ---- */")
            .expect("the program");
        program.contains("fx_stack_arr(")
    };
    let det = "fn minor(a: [Real], ell: Int, r: Int, cols: [Int]) -> Real {
            let m = length(cols);
            if m == 1 { a[r * ell + cols[0]] } else {
                sumbuild(m, |j| {
                    let rest = concat(slice(cols, 0, j), slice(cols, j + 1, m - j - 1));
                    let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
                    sign * a[r * ell + cols[j]] * minor(a, ell, r + 1, rest)
                })
            }
        }";
    let primal = format!(
        "{det} fn main() -> Real {{ minor(build(36, |i| sin(to_real(i * i))), 6, 0, range(6)) }}"
    );
    assert!(on_stack(&primal));
    let _ = natively_as_interpreted(&primal, AdMode::Delta);
    // 40 and 3 elements, read through a function that only reads (and a map).
    let sizes = "fn total(xs: [Real]) -> Real { sum(map(|x| x * x, xs)) + xs[length(xs) - 1] }
        fn main() -> (Real, Real) { (total(build(40, |i| to_real(i) * 0.5)), total(build(3, |i| to_real(i) + 0.25))) }";
    assert!(on_stack(sizes));
    let _ = natively_as_interpreted(sizes, AdMode::Delta);
    // A literal and a slice, each a branch's result read after the `if` (ba's rotated
    // point): their buffers outlive the branch.
    let joined = "fn norm2(p: [Real], c: [Real], t: Real) -> Real {
            let d = if t > 0.0 { [p[0] - c[0], p[1] - c[1]] } else { slice(p, 1, 2) };
            d[0] * d[0] + d[1] * d[1]
        }
        fn main() -> (Real, Real) { (norm2([3.0, 4.0, 5.0], [1.0, 1.5], 1.0), norm2([3.0, 4.0, 5.0], [1.0, 1.5], -1.0)) }";
    assert!(on_stack(joined));
    assert_eq!(
        natively_as_interpreted(joined, AdMode::Delta).expect("runs"),
        "(10.25, 41.0)"
    );
    // Returned, stored in a tuple, captured by a closure that is returned, returned
    // through a branch: the heap.
    for escapes in [
        "fn f(n: Int) -> [Real] { build(n, |i| to_real(i)) } fn main() -> [Real] { f(4) }",
        "fn pick(p: [Real], t: Real) -> [Real] { if t > 0.0 { [p[0], p[1]] } else { slice(p, 1, 2) } } fn main() -> [Real] { pick(replicate(3, 2.0), 1.0) }",
        "fn main() -> ([Int], Int) { let xs = build(3, |i| i * 2); (xs, xs[1]) }",
        "fn g(n: Int) -> fn(Int) -> Int { if n == 0 { |k: Int| k } else { let xs = build(n, |i| i + 1); let h = g(n - 1); |k: Int| xs[0] * k + h(k) } } fn main() -> Int { g(5)(3) }",
    ] {
        assert!(!on_stack(escapes), "{escapes}");
        let _ = natively_as_interpreted(escapes, AdMode::Delta);
    }
    let gradient = format!(
        "{det} fn main() -> [Real] {{ grad(|a: [Real]| minor(a, 4, 0, range(4)), build(16, |i| cos(to_real(i)))) }}"
    );
    assert!(on_stack(&gradient));
    let _ = natively_as_interpreted(&gradient, AdMode::Delta);
    // Σ_i Σ_k x_k·w_ik, w_ik = i·k/2, made per i and read by the inner sum's loop node:
    // ∂/∂x_k = k/2 · Σ_{i<12} i = 33k.
    let held = "fn main() -> [Real] {
        grad(|x: [Real]| sumbuild(12, |i| {
            let w = build(9, |k| to_real(i * k) * 0.5);
            sumbuild(9, |k| x[k] * w[k])
        }), build(9, |k| to_real(k)))
    }";
    // (The primal's copy of `w` may live on the stack; the delta code's, which the
    // loop node holds, on the heap — read from a dead frame at the sweep it would not
    // give the interpreter's bits or the oracle's.)
    let out = natively_as_interpreted(held, AdMode::Delta).expect("runs");
    let expected: Vec<String> = (0..9).map(|k| format!("{:?}", 33.0 * k as f64)).collect();
    assert_eq!(out, format!("[{}]", expected.join(", ")));
    // A `map` making reals is no loop node (its element function records no delta):
    // in k-means' `dir` (a `jvp` of a `grad`, on a tape) the distances to every
    // centroid, made per point and read by the argmax's negation, live on the stack
    // (eleven such arrays were on the heap when every `map` operand counted as held).
    let dir = "fn sqdist(u: [Real], v: [Real]) -> Real {
            sumbuild(length(u), |a| { let e = u[a] - v[a]; e * e })
        }
        fn cost(points: [[Real]], centroids: [[Real]]) -> Real {
            sum(map(|p| minimum(map(|c| sqdist(c, p), centroids)), points))
        }
        fn main() -> [[Real]] {
            let ps = [[0.1, 0.2], [1.0, 1.5], [2.0, -1.0], [0.4, 0.5]];
            let cs = [[0.0, 0.0], [1.0, 1.0], [2.0, -0.5]];
            jvp(|c: [[Real]]| grad(|c2: [[Real]]| cost(ps, c2), c), cs, [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]).1
        }";
    let c = delta_c_of_main(dir);
    let maps_of_reals = c.lines().filter(|l| l.contains("sizeof(fx_real), \"map\""));
    let on_heap = maps_of_reals
        .filter(|l| !l.contains("fx_stack_arr("))
        .count();
    assert!(on_heap <= 3, "{on_heap} maps of reals on the heap:\n{c}");
    // The Hessian's diagonal of the cost, by hand: 2·#{points nearest} (no ties).
    assert_eq!(
        natively_as_interpreted(dir, AdMode::Delta).expect("runs"),
        "[[4.0, 4.0], [2.0, 2.0], [2.0, 2.0]]"
    );
}

/// A map loop node whose elements read only zero ids (data constant at run time
/// inside a gradient — scaled by `floor(x)`, whose derivative is zero; data made from
/// no input or captured from outside stays primal, `activity.rs` — the
/// interpreter's elements are each the zero delta) is not made: the
/// elements take the zero id, so 200 loops of 10^5 elements hold no 16 bytes per
/// element until the sweep (320 MB, past the 64 MiB budget, when they did). The
/// expected gradients are sums of k (19900), of 0.001001·k² (2649.3467), of
/// 10⁻⁶·k² + 0.001·k (22.5467) and of 10⁻⁶·k(k − 1) (2.6268) over k < 200, summed by
/// hand.
#[test]
fn map_loop_nodes_over_constants_take_no_ids() {
    let cases = [
        (
            "fn main() -> [Real] { grad(|x: [Real]| { let h = floor(x[0]) * 0.5; fold(|acc: Real, k: Int| { let c = build(100000, |j| to_real(j + k) * h); acc + c[k] * x[0] }, 0.0, range(200)) }, [1.0]) }",
            19900.0,
        ),
        (
            "fn main() -> [Real] { grad(|x: [Real]| { let c = build(100000, |j| to_real(j) * 0.001 * floor(x[0])); fold(|acc: Real, k: Int| { let d = map(|v| v * to_real(k) + v * v, c); acc + d[k] * x[0] }, 0.0, range(200)) }, [1.0]) }",
            2649.3467,
        ),
        (
            "fn main() -> [Real] { grad(|x: [Real]| { let c = build(100000, |j| to_real(j) * 0.001 * floor(x[0])); fold(|acc: Real, k: Int| { let s = c[k]; let d = build(100000, |j| c[j] * s + s); acc + d[k] * x[0] }, 0.0, range(200)) }, [1.0]) }",
            22.5467,
        ),
        (
            "fn main() -> [Real] { grad(|x: [Real]| { let c = build(100000, |j| to_real(j) * 0.001 * floor(x[0])); fold(|acc: Real, k: Int| { let d = build(100000, |j| c[j] * (if j == 0 { 1.0 } else { c[j - 1] })); acc + d[k] * x[0] }, 0.0, range(200)) }, [1.0]) }",
            2.6268,
        ),
    ];
    for (src, want) in cases {
        assert!(
            delta_c_of_main(src).contains("x_->ids = 1"),
            "no map loop node:\n{src}"
        );
        gradient_fits_64_mib(src, want);
    }
}

/// A sum loop node or a dot node whose elements read only zero ids is the zero delta
/// and holds nothing until the sweep, as the interpreter records nothing for them: 200
/// sums over 10^5 constants (at run time: scaled by `floor(x)`, see above) each fit a
/// 64 MiB budget on both backends. The gradients are Σ_k (k + 10⁻⁶ Σ_j f(c_j)) for
/// c_j = (j + k)/2, summed here in closed form.
#[test]
fn sum_and_dot_nodes_over_constants_hold_nothing() {
    let (n, big_k) = (100000.0_f64, 200.0_f64);
    let sj = n * (n - 1.0) / 2.0;
    let sj2 = (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
    let (sk, sk2) = (
        big_k * (big_k - 1.0) / 2.0,
        (big_k - 1.0) * big_k * (2.0 * big_k - 1.0) / 6.0,
    );
    // Σ_k Σ_j c and Σ_k Σ_j c².
    let sum_c = (big_k * sj + n * sk) / 2.0;
    let sum_c2 = (big_k * sj2 + 2.0 * sk * sj + n * sk2) / 4.0;
    let cases = [
        (
            "sum(map(|v| v * v * 0.5 + v, c))",
            "x_->ids = 0",
            sk + 1e-6 * (0.5 * sum_c2 + sum_c),
        ),
        (
            "sum(map(|v| v * v, c))",
            "fx_tape_dot(da",
            sk + 1e-6 * sum_c2,
        ),
    ];
    for (sum, node, want) in cases {
        let src = format!(
            "fn main() -> [Real] {{ grad(|x: [Real]| {{ let h = floor(x[0]) * 0.5; fold(|acc: Real, k: Int| {{ let c = build(100000, |j| to_real(j + k) * h); acc + (c[k] + {sum} * 0.000001) * x[0] }}, 0.0, range(200)) }}, [1.0]) }}"
        );
        assert!(delta_c_of_main(&src).contains(node), "no {node}: {src}");
        gradient_fits_64_mib(&src, want);
    }
}

/// `src`'s `main`, a one-element gradient, within a 64 MiB budget: the interpreter's
/// result natively, no note, and `want` to 1e-9 relative.
fn gradient_fits_64_mib(src: &str, want: f64) {
    let (interp, _) = run_in_64_mib(src, Backend::Interp);
    let (native, notes) = run_in_64_mib(src, Backend::Native);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(native, interp, "{src}");
    let got: f64 = native
        .expect("runs")
        .trim_matches(['[', ']'])
        .parse()
        .expect("a real");
    assert!(
        (got - want).abs() <= 1e-9 * want,
        "{got} against {want}: {src}"
    );
}

/// `src`'s `main` under `--ad delta` with a 64 MiB memory budget: its literal result
/// and notes.
fn run_in_64_mib(src: &str, backend: Backend) -> (Result<String, String>, Vec<String>) {
    let options = RunOptions {
        memory_limit: Some(64 << 20),
        ..options(AdMode::Delta, backend)
    };
    let src = src.to_string();
    with_big_stack(move || {
        let program = compile("prog.flx", &src).unwrap_or_else(|f| panic!("{}", f.render()));
        let out = program.run_with_options("main", None, options);
        let notes = out.as_ref().map(|o| o.notes.clone()).unwrap_or_default();
        (out.map(|o| o.to_literal()).map_err(|f| f.render()), notes)
    })
}

/// The C of a program over an array of pairs (after the runtime): a change in the
/// code the backend writes shows up as a snapshot diff to review. The pairs are a
/// struct of arrays (`soa_get_N`/`soa_set_N`: the reals in one region, the ints in the
/// next), and `reverse` and the fused `build` are loops calling the lambdas directly.
#[test]
fn the_c_of_an_array_of_pairs() {
    let src = "fn main() -> [(Real, Int)] {
    let ps = build(5, |i| (to_real(i) * 0.5, i));
    reverse(map(|p: (Real, Int)| (p.0 * p.0, p.1 + 1), ps))
}";
    let c = delta_c_of_main(src);
    let generated = c
        .split_once("/* ---- types ---- */")
        .map(|(_, rest)| rest)
        .expect("the runtime ends where the types start");
    insta::assert_snapshot!(generated);
}

/// A `range` read only by the `fold`s and `scan`s over it is never made natively (the
/// loops count its indices: `analysis::loop_ranges`); one read otherwise still is. The
/// values are the interpreter's, derivatives included.
#[test]
fn folds_and_scans_over_a_range_count_without_the_array() {
    let src = "fn f(x: [Real], m: Int) -> Real {
    let t = x[0];
    let idx = range(m);
    let powers = scan(|p, _j| p * t, 1.0, idx);
    let s = fold(|a, j| a + x[j % length(x)] * powers[j], 0.0, idx);
    s + to_real(length(range(m + 1)))
}
fn main() -> (Real, [Real]) { (f([0.5, -1.5], 5), grad(|x: [Real]| f(x, 5), [0.5, -1.5])) }";
    let c = delta_c_of_main(src);
    let lines = |made: &str| {
        c.lines()
            .filter(|l| l.contains(made) && l.contains("\"range\", "))
            .count()
    };
    assert!(lines("fx_arr_check(") >= 1, "no range counted:\n{c}");
    assert!(lines("fx_arr_new(") >= 1, "no range made:\n{c}");
    assert_native_with_the_interpreters_values(&[src]);
}

/// Each runtime fault of the interpreter is the same error, at the same place, natively.
/// The first line of a rendered runtime error: `prog.flx:LINE:COL: runtime error: …`.
fn first_line(result: Result<String, String>) -> String {
    let err = result.expect_err("a runtime error");
    err.lines().next().unwrap_or_default().to_string()
}

#[test]
fn a_fault_inside_a_derivative_is_reported_where_the_primal_reports_it() {
    // Most faults sit in a `match` or `if` whose arms bind first: translating the arms
    // moved the place a failing match was reported to its last arm's last binding
    // (found by hand: `grad` of a non-exhaustive match blamed `2.0 * v`).
    let functions = "enum S { A(Real), B(Real), C }
fn pick(s: S, x: Real) -> Real {
    match s {
        A(v) => v * x,
        B(v) => { let w = 2.0 * v; w * x },
    }
}
fn guarded(xs: [Real], x: Real) -> Real {
    if x > 0.0 { let y = x * x; y + xs[5] } else { let z = x + 1.0; z * xs[0] }
}
fn divided(n: Int, x: Real) -> Real {
    let m = match C { A(v) => 1, B(v) => 2, C => { let k = n + 1; 7 / (k - k) } };
    x * to_real(m)
}
fn summed(v: [Real], x: Real) -> Real { sum(sum([[x], v])) }
fn counted(n: Int, x: Real) -> Real { sumbuild(n, |i| x * to_real(i)) }
fn iterated(n: Int, x: Real) -> Real { iterate(n, |y: Real| y * x, 1.0) }
";
    let calls = [
        ("pick(C, 1.5)", "Real", "grad(|x: Real| pick(C, x), 1.5)"),
        (
            "guarded([1.0], 1.5)",
            "Real",
            "grad(|x: Real| guarded([1.0], x), 1.5)",
        ),
        (
            "divided(3, 1.5)",
            "Real",
            "grad(|x: Real| divided(3, x), 1.5)",
        ),
        (
            "pick(C, 1.5)",
            "Real",
            "jvp(|x: Real| pick(C, x), 1.5, 1.0).1",
        ),
        (
            "pick(C, 1.5)",
            "[Real]",
            "taylor(|x: Real| pick(C, x), 1.5, 1.0, 2).1",
        ),
        (
            "guarded([1.0], 1.5)",
            "Real",
            "vjp(|x: Real| guarded([1.0], x), 1.5).1(1.0)",
        ),
        // Derivative code sums arrays by `map2` and runs `sumbuild` as `build`: the
        // error still names the built-in the source calls (`named_as_called`).
        (
            "summed([1.0, 2.0], 1.5)",
            "Real",
            "grad(|x: Real| summed([1.0, 2.0], x), 1.5)",
        ),
        (
            "counted(0 - 2, 1.5)",
            "Real",
            "grad(|x: Real| counted(0 - 2, x), 1.5)",
        ),
        // CHAD runs `iterate` over `range`: "negative length" was `range`'s word.
        (
            "iterated(0 - 2, 1.5)",
            "Real",
            "grad(|x: Real| iterated(0 - 2, x), 1.5)",
        ),
    ];
    for (primal, ty, derivative) in calls {
        let primal_src = format!("{functions}fn main() -> Real {{ {primal} }}");
        let expected = first_line(run(&primal_src, AdMode::Chad, Backend::Interp).0);
        assert!(expected.contains("runtime error"), "{expected}");
        let src = format!("{functions}fn main() -> {ty} {{ {derivative} }}");
        for setting in SETTINGS {
            for backend in [Backend::Interp, Backend::Native] {
                let (result, notes) = run_with(&src, setting, backend);
                assert!(notes.is_empty(), "{src}: {notes:?}");
                assert_eq!(
                    first_line(result),
                    expected,
                    "{} {backend:?}: {derivative}",
                    setting_name(setting)
                );
            }
        }
    }
}

#[test]
fn runtime_errors_are_the_interpreters() {
    let programs = [
        "fn main() -> Real { let a = [1.0, 2.0]; a[length(a) + 3] }",
        "fn main() -> Int { let z = length([1.0]) - 1; 7 / z }",
        "fn main() -> Int { let z = length([1.0]) - 1; 7 % z }",
        "fn main() -> [Real] { map2(|a, b| a + b, [1.0], [1.0, 2.0]) }",
        "fn main() -> Int { length(build(100000000000000, |i| to_real(i))) }",
        "fn main() -> Int { length(replicate(0 - length([1]), 1.0)) }",
        "fn main() -> Int { 9223372036854775807 + length([1]) }",
        "fn main() -> Int { to_int(1e300 * to_real(length([1]))) }",
        "fn main() -> Real { maximum(slice([1.0], 1, 0)) }",
        "fn main() -> [Real] { slice([1.0, 2.0], 1, 5) }",
        "fn main() -> [(Real, Real)] { zip([1.0], [1.0, 2.0]) }",
        // Not a loop in disguise (GCC turns `sin(f(n - 1)) + 1.0` into one).
        "fn f(n: Int) -> Real { if n == 0 { 0.0 } else { let a = f(n - 1); a * a * 0.5 + sin(to_real(n)) } }\n\
         fn main() -> Real { f(100000000) }",
        "enum E { A, B(Real) }\nfn main() -> Real { let e = if length([1]) > 0 { A } else { B(1.0) }; \
         match e { B(x) => x } }",
        // Loops indexing captured arrays by the loop's index run in two copies (emit.rs
        // `index_hints`): where an array is too short, the copy that checks runs, and
        // the first index out of range is the one reported.
        "fn main() -> [Real] { let xs = [1.0, 2.0, 3.0]; let ys = [1.0, 2.0]; build(3, |i| xs[i] * ys[i]) }",
        "fn main() -> Real { let xs = [1.0, 2.0, 3.0]; let ys = [1.0, 2.0, 3.0, 4.0]; sumbuild(4, |i| ys[i] + xs[i]) }",
        "fn main() -> Real { let xs = [1.0, 2.0]; sumbuild(3, |j| sumbuild(j + 1, |t| xs[t] * xs[j])) }",
        // A runaway tail call: the C compiler must not make it a loop (it would hang).
        "fn spin(n: Int) -> Int { spin(n) }\nfn main() -> Int { spin(0) }",
        // A range a fold counts through is never made, but is refused as `range` is.
        "fn main() -> Real { fold(|a, j| a + to_real(j), 0.0, range(0 - length([1]))) }",
        "fn main() -> Real { fold(|a, j| a + to_real(j), 0.0, range(100000000000000)) }",
        // A reduction of a map runs as one loop (emit.rs `reduction_of_map`): the
        // empty array's error, and a fault in the third element, are the pair's.
        "fn main() -> Real { minimum(map(|x| x * 2.0, slice([1.0], 1, 0))) }",
        "fn main() -> Int { let xs = [3, 1, 0, 2]; argmax(map(|d| 6 / d, xs)) }",
    ];
    for src in programs {
        let result = natively_as_interpreted(src, AdMode::Chad);
        assert!(result.is_err(), "{src}: the interpreter gave {result:?}");
    }
    // A direction or cotangent of the wrong shape, in every mode: the interpreter's
    // words and place (found by hand: natively a direction was called a cotangent, and
    // a fault in a generated helper was blamed on "a prelude function").
    let shapes = [
        "fn f(v: [Real]) -> Real { sum(map(|x| x * x * x, v)) * v[0] }
         fn main() -> Real { jvp(f, [1.0, 2.0], [0.5]).1 }",
        "fn f(v: [Real]) -> Real { sum(map(|x| x * x * x, v)) * v[0] }
         fn main() -> [Real] { jvp(|v| grad(f, v), [1.0, 2.0], [0.5]).1 }",
        "fn main() -> [[Real]] { taylor(|v| map(exp, v), [1.0, 2.0], [1.0], 2).1 }",
        "enum Shape { Circle(Real), Rect(Real, Real) }
         fn area(s: Shape) -> Real { match s { Circle(r) => 3.0 * r * r, Rect(w, h) => w * h } }
         fn main() -> Real { jvp(area, Circle(1.0), Rect(1.0, 2.0)).1 }",
        "fn main() -> [Real] { vjp(|v| map(exp, v), [1.0, 2.0]).1([1.0]) }",
    ];
    for src in shapes {
        for mode in MODES {
            let err = natively_as_interpreted(src, mode).expect_err("a shape error");
            assert!(!err.contains("prelude"), "{err}");
        }
    }
    // Mutual runaway recursion stops too (at whichever call reaches the limit: the
    // depths differ between the backends, so the place may be either call).
    let src =
        "fn a(n: Int) -> Int { b(n) }\nfn b(n: Int) -> Int { a(n) }\nfn main() -> Int { a(0) }";
    let (native, _) = run(src, AdMode::Chad, Backend::Native);
    let err = native.expect_err("a runaway recursion is an error");
    assert!(err.contains("stack depth exceeded"), "{err}");
}

/// A fault inside a prelude function is reported at the user's call, naming the
/// function (not its translation: `dot`, not `dot_chad`), in every mode natively as in
/// the interpreter — in the primal, inside a differentiated function, and in its
/// backward pass.
#[test]
fn faults_in_prelude_functions_are_reported_at_the_users_call_natively() {
    let programs = [
        "fn main() -> Real { dot([1.0, 2.0], [1.0]) }",
        "fn main() -> [Real] { matvec([[1.0]], [1.0, 5.0]) }",
        "fn f(x: [Real]) -> Real { dot(x, [1.0]) * logsumexp(x) }
fn main() -> [Real] { grad(f, [1.0, 2.0]) }",
        "fn f(x: [Real]) -> Real { logsumexp(slice(x, 0, 0)) + x[0] }
fn main() -> [Real] { grad(f, [1.0]) }",
        // Inlined (issue 32): the copy's faults are the call's.
        "fn f(x: [Real]) -> Real { let y = vsub(x, [1.0]); dot(y, y) }
fn main() -> Real { f([1.0, 2.0]) }",
        "fn f(x: [Real]) -> Real { let y = vsub(x, [1.0]); dot(y, y) }
fn main() -> [Real] { grad(f, [1.0, 2.0]) }",
    ];
    for src in programs {
        for mode in MODES {
            let (interp, _) = run(src, mode, Backend::Interp);
            let (native, notes) = run(src, mode, Backend::Native);
            let what = format!("--ad {}: {src}", mode.name());
            assert!(notes.is_empty(), "{what}: {notes:?}");
            let err = interp.clone().expect_err(&what);
            assert_eq!(
                messages::on_the_first_line(&err, "a prelude function"),
                1,
                "{what}: {err}"
            );
            assert!(
                !err.contains("_chad") && !err.contains("_delta"),
                "{what}: {err}"
            );
            assert_eq!(interp, native, "{what}");
        }
    }
}

/// A prelude function passed to a built-in's loop from the user's code, not inlined
/// (`--opt 0`): a fault inside it is reported at the built-in's call, naming it,
/// natively as in the interpreter (found by a helper: natively it was reported at
/// the prelude's own line).
#[test]
fn faults_in_prelude_functions_passed_to_loops_are_reported_at_the_call() {
    let programs = [
        "fn main() -> Real { sum(map2(dot, [[1.0, 2.0]], [[1.0]])) }",
        "fn main() -> [[Real]] { map(|r| vsub(r, [1.0]), [[1.0, 2.0]]) }",
        "fn main() -> Real { sumbuild(1, |i| logsumexp(slice([1.0], 0, i))) }",
    ];
    for src in programs {
        for opt in [fluxion_driver::OptLevel::Off, fluxion_driver::OptLevel::On] {
            let outcome = |backend| {
                let src = src.to_string();
                with_big_stack(move || {
                    let program =
                        compile("prog.flx", &src).unwrap_or_else(|f| panic!("{}", f.render()));
                    let options = RunOptions {
                        opt,
                        backend,
                        ..RunOptions::default()
                    };
                    match program.run_with_options("main", None, options) {
                        Ok(out) => (Ok(out.to_literal()), out.notes.clone()),
                        Err(f) => (Err(f.render()), f.notes.clone()),
                    }
                })
            };
            let (interp, _) = outcome(Backend::Interp);
            let (native, notes) = outcome(Backend::Native);
            let what = format!("{opt:?}: {src}");
            assert!(notes.is_empty(), "{what}: {notes:?}");
            let err = interp.clone().expect_err(&what);
            assert!(err.contains("prog.flx:1:"), "{what}: {err}");
            assert_eq!(
                messages::on_the_first_line(&err, "a prelude function"),
                1,
                "{what}: {err}"
            );
            assert_eq!(interp, native, "{what}");
        }
    }
}

/// A generated helper (a push forward of a prelude function: no span of its own) is
/// not inlined into the user's code as prelude code is: its fault stays the operator's,
/// at the user's line, never a `<prelude>` location (it was, natively, when it was).
#[test]
fn a_generated_helpers_fault_is_reported_at_the_operator() {
    let src =
        "fn main() -> [Real] {\n  grad(|x: [Real]| jvp(logsumexp, x, x).1, slice([1.0], 0, 0))\n}";
    for mode in MODES {
        for backend in [Backend::Interp, Backend::Native] {
            let (result, _) = run(src, mode, backend);
            let err = first_line(result);
            assert!(
                err.starts_with("prog.flx:2:"),
                "--ad {}: {err}",
                mode.name()
            );
            assert!(err.contains("maximum of an empty array"), "{err}");
        }
    }
}

/// Results and literals of any size: a two-million-constructor list comes back (the
/// result is read without recursion), a 5,000-element literal compiles in moments (it
/// is static data, not a statement per element).
#[test]
fn deep_results_and_large_literals() {
    let list = "enum L { N, C(Int, L) }\nfn main() -> L { iterate(2000000, |l| C(1, l), N) }";
    let literal = format!(
        "fn main() -> (Real, Int) {{ let a = [{}]; (sum(a), length(a)) }}",
        (0..5000)
            .map(|i| format!("{i}.5"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for src in [list.to_string(), literal] {
        let (interp, _) = run(&src, AdMode::Chad, Backend::Interp);
        let (native, notes) = run(&src, AdMode::Chad, Backend::Native);
        assert!(notes.is_empty(), "{notes:?}");
        let (a, b) = (interp.expect("runs"), native.expect("runs"));
        assert!(
            a == b,
            "the values differ (lengths {} and {})",
            a.len(),
            b.len()
        );
    }
}

/// Compiles `entry` of `src` + `expr` (prepared for `mode`) with `tc`; the program and
/// the module it was compiled from, or the fallback note.
fn compile_expr(
    src: &str,
    expr: &str,
    setting: (AdMode, FwdMode),
    tc: &Toolchain,
) -> Result<
    (
        fluxion_driver::native_backend::NativeProgram,
        fluxion_driver::core::Module,
    ),
    String,
> {
    let mut program = compile_with_expr("prog.flx", src, Some(expr)).map_err(|f| f.render())?;
    program
        .prepare(options_with(setting, Backend::Native))
        .map_err(|d| d.message)?;
    let code = program.module.functions[fluxion_driver::core_entry_name()];
    fluxion_driver::compile_native(
        &program.module,
        code,
        tc,
        fluxion_driver::OptLevel::On,
        setting.1,
    )
}

/// The value natively, printed, and the heap objects left afterwards.
fn native_value(
    src: &str,
    expr: &str,
    setting: (AdMode, FwdMode),
    tc: &Toolchain,
) -> Result<(String, i64), String> {
    let (src, expr, tc) = (src.to_string(), expr.to_string(), tc.clone());
    with_big_stack(move || {
        let (prog, module) = compile_expr(&src, &expr, setting, &tc)?;
        let code = module.functions[fluxion_driver::core_entry_name()];
        let ty = module.code(code).ret.clone();
        let value = prog
            .call(&module, &[], 64 << 20, 1 << 32)
            .map_err(|e| e.message)?;
        let mut s = String::new();
        let _ = fluxion_driver::interp::write_value(&mut s, &value, &module, Some(&ty));
        Ok((s, prog.live_objects()))
    })
}

#[test]
fn compiled_code_frees_everything_it_allocates() {
    let tc = test_toolchain("leaks");
    let mut checked = 0;
    for path in examples() {
        let src = std::fs::read_to_string(&path).expect("readable");
        for mode in MODES {
            if let Ok((_, live)) = native_value(&src, "main()", (mode, FwdMode::Chad), &tc) {
                assert_eq!(
                    live,
                    0,
                    "{} --ad {}: objects left",
                    path.display(),
                    mode.name()
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 40, "only {checked} runs checked");
}

/// A call that fails frees what it held (every live object is on one list, runtime.c's
/// `fx_free_all`): arrays, closures and enum values alive at an index error, deep in a
/// recursion at the stack limit, and in the middle of a delta gradient; the next call
/// of the same library then runs as if none had failed.
#[test]
fn a_failed_call_frees_what_it_held() {
    let tc = test_toolchain("leaks");
    let programs = [
        (
            "enum T { Leaf(Real), Node(T, T) }
             fn main() -> Real {
                 let a = build(1000, |i| to_real(i));
                 let b = map(|x| [x, x], a);
                 let t = Node(Leaf(a[1]), Leaf(b[3][1]));
                 let k = |i: Int| b[i][0] + a[i];
                 match t { Node(_, _) => k(2000), Leaf(x) => x }
             }",
            "index 2000 out of range",
        ),
        (
            "fn f(n: Int) -> Real { let b = [to_real(n), 1.0]; f(n + 1) + b[1] }
             fn main() -> Real { f(0) }",
            "stack depth exceeded",
        ),
        (
            "fn main() -> [Real] {
                 grad(|v| { let w = map(|x| [x, x * x], v); w[0][1] + w[5][0] }, [1.0, 2.0])
             }",
            "index 5 out of range",
        ),
    ];
    for (src, error) in programs {
        let (src, tc) = (src.to_string(), tc.clone());
        let (err, live, again) = with_big_stack(move || {
            let (prog, module) = compile_expr(&src, "main()", (AdMode::Delta, FwdMode::Chad), &tc)
                .expect("compiles");
            let err = prog
                .call(&module, &[], 64 << 20, 1 << 32)
                .expect_err("fails");
            let live = prog.live_objects();
            let again = prog
                .call(&module, &[], 64 << 20, 1 << 32)
                .map(|_| ())
                .map_err(|e| e.message);
            (err.message, live, again)
        });
        assert!(err.contains(error), "{err}");
        assert_eq!(live, 0, "objects left after: {err}");
        assert_eq!(again, Err(err));
    }
}

#[test]
fn a_second_compile_of_the_same_program_comes_from_the_cache() {
    let tc = test_toolchain("cache");
    let _ = std::fs::remove_dir_all(&tc.cache_dir);
    let src = "fn f(x: Real) -> Real { x * x + 1.0 }";
    let first = compile_expr(src, "f(3.0)", (AdMode::Chad, FwdMode::Chad), &tc).expect("compiles");
    assert!(!first.0.cached);
    let second = compile_expr(src, "f(3.0)", (AdMode::Chad, FwdMode::Chad), &tc).expect("compiles");
    assert!(second.0.cached, "the second compile ran the C compiler");
    assert_eq!(first.0.path, second.0.path);
    let other = compile_expr(src, "f(4.0)", (AdMode::Chad, FwdMode::Chad), &tc).expect("compiles");
    assert_ne!(
        other.0.path, first.0.path,
        "another program, another library"
    );
}

#[test]
fn values_deeper_than_the_stack_are_freed_natively() {
    // A list and a chain of closures a million deep, freed on a thread whose stack
    // holds a fraction of one recursion per level (a dec puts objects off when its
    // stack runs low: `FX_DEC_LATER`); nothing is left afterwards.
    let tc = test_toolchain("deep-free");
    let src = "enum L { Nil, Cons(Int, L) }
fn ints(n: Int) -> L { fold(|acc, x| Cons(x, acc), Nil, range(n)) }
fn made_and_dropped(n: Int) -> Int {
    let l = ints(n);
    let f = iterate(n, |g| |x: Int| g(x) + 1, |x: Int| x);
    match l { Nil => 0, Cons(h, _) => h }
}";
    let result = std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(move || {
            let (prog, module) = compile_expr(
                src,
                "made_and_dropped(1000000)",
                (AdMode::Chad, FwdMode::Chad),
                &tc,
            )?;
            let value = prog
                .call(&module, &[], 2 << 20, 1 << 32)
                .map_err(|e| e.message)?;
            let mut s = String::new();
            let _ = fluxion_driver::interp::write_value(&mut s, &value, &module, None);
            Ok::<_, String>((s, prog.live_objects()))
        })
        .expect("a thread")
        .join()
        .expect("no panic");
    assert_eq!(result, Ok(("999999".to_string(), 0)));
}

#[test]
fn a_library_cut_short_in_the_cache_is_built_again() {
    let tc = test_toolchain("cut-short");
    let _ = std::fs::remove_dir_all(&tc.cache_dir);
    let src = "fn f(x: Real) -> Real { x * x + 1.0 }";
    let first = compile_expr(src, "f(3.0)", (AdMode::Chad, FwdMode::Chad), &tc).expect("compiles");
    let path = first.0.path.clone();
    drop(first);
    // A copy interrupted, a full disk: loading it would fault (SIGBUS) when touched.
    let bytes = std::fs::read(&path).expect("the library");
    std::fs::write(&path, &bytes[..1000]).expect("cut short");
    let again = native_value(src, "f(3.0)", (AdMode::Chad, FwdMode::Chad), &tc);
    assert_eq!(again, Ok(("10.0".to_string(), 0)));
    let third = compile_expr(src, "f(3.0)", (AdMode::Chad, FwdMode::Chad), &tc).expect("compiles");
    assert!(third.0.cached, "the rebuilt library is whole");
    // Whole, not the same bytes: the source a build compiles is named after its thread
    // (toolchain.rs), and that name is in the library, so two builds can differ in
    // length by a digit or so.
    let rebuilt = std::fs::read(&path).expect("the library");
    assert!(
        rebuilt.starts_with(b"\x7fELF") && rebuilt.len() + 64 >= bytes.len(),
        "rebuilt {} bytes, first {}",
        rebuilt.len(),
        bytes.len()
    );
}

#[test]
fn builds_of_one_program_at_once_share_the_cache_safely() {
    // Each build writes its source and library under names of its own and renames
    // them into place (found by hand: a second process compiled the source file while
    // the first was writing it, and loaded a library without `fx_entry`).
    let tc = test_toolchain("at-once");
    let _ = std::fs::remove_dir_all(&tc.cache_dir);
    let src = "fn f(x: Real) -> Real { sin(x) * x + 1.0 }";
    let results: Vec<_> = std::thread::scope(|scope| {
        let builds: Vec<_> = (0..6)
            .map(|_| {
                let tc = tc.clone();
                scope.spawn(move || native_value(src, "f(3.0)", (AdMode::Chad, FwdMode::Chad), &tc))
            })
            .collect();
        builds
            .into_iter()
            .map(|b| b.join().expect("no panic"))
            .collect()
    });
    let expected = format!("{:?}", 3.0f64.sin() * 3.0 + 1.0);
    for r in results {
        assert_eq!(r, Ok((expected.clone(), 0)));
    }
}

#[test]
fn the_ends_of_the_int_range_are_the_interpreters() {
    // 2^63 - 1024 (the largest double below 2^63) and -2^63 convert; 2^63 does not.
    let one = "to_real(length([1]))";
    let programs = [
        format!(
            "fn main() -> [Int] {{ [to_int(9223372036854774784.0 * {one}), to_int(-9223372036854775808.0 * {one})] }}"
        ),
        format!("fn main() -> Int {{ to_int(9223372036854775808.0 * {one}) }}"),
    ];
    assert_eq!(
        natively_as_interpreted(&programs[0], AdMode::Delta),
        Ok("[9223372036854774784, -9223372036854775808]".into())
    );
    assert!(natively_as_interpreted(&programs[1], AdMode::Delta).is_err());
}

#[test]
fn a_tower_of_translated_types_stops_ahead_of_time() {
    // `taylor` of a lambda applying `grad(grad(..))`: translations made in the forward
    // layer capture functions of translated types, whose candidates were translated in
    // turn, each level twice the size (found by a generated program: 9 GB, then an
    // abort). The resolution now stops a few types deep; the answer is the same.
    let src = "fn main() -> Real {
    taylor(|x: Real| iterate(1, |y: Real| sum(map(|z| 1.0, [x])), grad(|a: Real| grad(|b: Real| 1.0, 1.0), 1.0)), 0.3, 1.0, 1).0
}";
    for setting in SETTINGS {
        let (interp, _) = run_with(src, setting, Backend::Interp);
        let (native, _) = run_with(src, setting, Backend::Native);
        assert_eq!(interp, Ok("1.0".to_string()));
        assert_eq!(native, interp, "{}", setting_name(setting));
    }
}

#[test]
fn long_straight_line_code_makes_its_tape_nodes_out_of_line() {
    // The gradient of a sum of 3000 terms: 6000 tape nodes in one function, each an
    // inlined room check, took GCC nearly five minutes at -O3 (found by hand); out of
    // line (`fx_tape_push2`) it takes a second. A function of a few nodes inlines them.
    let terms = vec!["x * 1.5 + x * x"; 300].join(" + ");
    let src = format!("fn main() -> Real {{ grad(|x: Real| {terms}, 1.0) }}");
    natively_as_interpreted(&src, AdMode::Delta).expect("a gradient");
    assert!(delta_c_of_main(&src).contains("= fx_tape_push2("));
    let small = delta_c_of_main("fn main() -> Real { grad(|x: Real| x * 1.5 + x * x, 1.0) }");
    assert!(!small.contains("= fx_tape_push") && small.contains("fx_tape_reserve(2"));
}

#[test]
fn lgamma_and_erf_give_the_interpreters_bits() {
    // Both backends call the C library's `lgamma_r` and `erf` (the interpreter used a
    // port of musl's: 98 of these 400 points differed in the last bits), and the C
    // compiler may not fold them, or any function of the C library that is not
    // exactly rounded, for constant arguments (it computes them correctly rounded, with
    // MPFR, where the library is sometimes an ulp off: the constants of the last
    // program were found so, each of its values one ulp from the interpreter's).
    let programs = [
        "fn main() -> [Real] { build(400, |i| { let x = -14.7 + to_real(i) * 0.0735; lgamma(x) }) }",
        "fn main() -> [Real] { build(400, |i| { let x = -14.7 + to_real(i) * 0.0735; erf(x) }) }",
        "fn main() -> [Real] { [lgamma(-2.5), erf(0.1604), lgamma(0.5), erf(-3.25)] }",
        "fn main() -> [Real] { [expm1(1.0), sinh(2.0), cosh(710.0), log1p(2.0),
            tanh(0.4105720352850134), sin(0.16865664562983884), asin(0.2058044565116668),
            cos(0.7), tan(1.3), acos(0.3), atan(2.5), atan2(1.0, 3.0), exp(1.7),
            log(3.3), pow(1.7, 2.9)] }",
    ];
    for src in programs {
        natively_as_interpreted(src, AdMode::Delta).expect("values");
    }
}

/// Builds each example that compiles as a stand-alone executable with AddressSanitizer
/// and UndefinedBehaviorSanitizer (leak checking included) and runs it.
#[test]
fn sanitizers_find_nothing_in_the_examples() {
    let tc = test_toolchain("sanitize");
    let cc = tc.cc.clone();
    if !can_sanitize(&cc) {
        eprintln!("the C compiler cannot build with sanitizers here: skipped");
        return;
    }
    let mut checked = 0;
    let mut sources: Vec<(String, String)> = examples()
        .iter()
        .map(|path| {
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            (stem, std::fs::read_to_string(path).expect("readable"))
        })
        .collect();
    // Arrays on the C stack (det's minors) and from the heap past 32 elements.
    sources.push((
        "stack-arrays".into(),
        "fn minor(a: [Real], ell: Int, r: Int, cols: [Int]) -> Real {
            let m = length(cols);
            if m == 1 { a[r * ell + cols[0]] } else {
                sumbuild(m, |j| {
                    let rest = concat(slice(cols, 0, j), slice(cols, j + 1, m - j - 1));
                    minor(a, ell, r + 1, rest) * a[r * ell + cols[j]] * (if j % 2 == 0 { 1.0 } else { -1.0 })
                })
            }
        }
        fn total(xs: [Real]) -> Real { sum(map(|x| x * x, xs)) }
        fn main() -> Real { minor(build(36, |i| sin(to_real(i))), 6, 0, range(6)) + total(build(40, |i| to_real(i))) }"
            .into(),
    ));
    for (name, src) in sources {
        for setting in SETTINGS {
            let Ok(mut program) = compile("prog.flx", &src) else {
                continue;
            };
            if program
                .prepare(options_with(setting, Backend::Native))
                .is_err()
            {
                continue;
            }
            let code = program.module.functions["main"];
            let mut module = program.module.clone();
            fluxion_driver::ad::ahead::resolve_operators(
                &mut module,
                &[code],
                fluxion_driver::OptLevel::On,
                setting.1,
            );
            let Ok(c) = fluxion_driver::native_backend::c_source(&module, code) else {
                continue;
            };
            let stem = format!("{name}-{}-{}", setting.0.name(), setting.1.name());
            let exe = build_sanitized(&cc, &(c + SANITIZE_MAIN), &stem);
            let out = std::process::Command::new(&exe).output().expect("runs");
            assert!(
                out.status.success(),
                "{stem}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} programs checked");
}

/// Whether `cc` builds with AddressSanitizer and UndefinedBehaviorSanitizer here.
fn can_sanitize(cc: &str) -> bool {
    let probe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("asan-probe");
    std::process::Command::new(cc)
        .args(["-fsanitize=address,undefined", "-x", "c", "-", "-o"])
        .arg(&probe)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .expect("stdin")
                .write_all(b"int main(void){return 0;}")?;
            c.wait()
        })
        .is_ok_and(|s| s.success())
}

/// The C program `c` built with the sanitizers (leak checking included) as `stem`.
fn build_sanitized(cc: &str, c: &str, stem: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sanitize");
    std::fs::create_dir_all(&dir).expect("dir");
    let c_file = dir.join(format!("{stem}.c"));
    let exe = dir.join(stem);
    std::fs::write(&c_file, c).expect("write");
    let built = std::process::Command::new(cc)
        .args([
            "-std=gnu11",
            "-O1",
            "-g",
            "-w",
            "-fsanitize=address,undefined",
        ])
        .args(["-fno-sanitize-recover=all", "-o"])
        .arg(&exe)
        .arg(&c_file)
        .arg("-lm")
        .output()
        .expect("cc runs");
    assert!(
        built.status.success(),
        "{stem}: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    exe
}

/// A result too deep for native code's encoder hands the call over (status 2) part-way
/// through writing it: the stream written so far is freed with the call's objects, and
/// LeakSanitizer finds nothing (issue 33: 1 MiB a call leaked, `fx_write` ← `encode`).
#[test]
fn a_result_handed_over_while_encoding_leaks_nothing() {
    let tc = test_toolchain("sanitize");
    if !can_sanitize(&tc.cc) {
        eprintln!("the C compiler cannot build with sanitizers here: skipped");
        return;
    }
    let src = "enum L { Nil, Cons(Real, L) }
               fn main() -> L { fold(|acc: L, x: Real| Cons(x, acc), Nil, build(200000, |i| to_real(i))) }";
    let Ok(mut program) = compile("prog.flx", src) else {
        panic!("compiles")
    };
    program
        .prepare(options_with(
            (AdMode::Delta, FwdMode::Dual),
            Backend::Native,
        ))
        .expect("prepares");
    let code = program.module.functions["main"];
    let c = fluxion_driver::native_backend::c_source(&program.module, code).expect("compiles to C");
    // 256 KiB of stack for the call: the list is built by a loop (`fold`), but its
    // encoder recurses once per cell and meets the limit part-way.
    let main = r#"
int main(void) {
  uint64_t *out = NULL; size_t n = 0; fx_error err; char here;
  fx_config cfg = {(uintptr_t)&here - (256u << 10), UINT64_MAX};
  int status = fx_entry(NULL, 0, &out, &n, &err, &cfg);
  if (status != 2) { printf("status %d: %s\n", status, err.message); return 1; }
  if (fx_live() != 0) { printf("%lld objects leaked\n", (long long)fx_live()); return 1; }
  return 0;
}
"#;
    let exe = build_sanitized(&tc.cc, &(c + main), "deep-result");
    let out = std::process::Command::new(&exe).output().expect("runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Calls the entry (no arguments) and fails on an error or a leaked object.
const SANITIZE_MAIN: &str = r#"
int main(void) {
  uint64_t *out = NULL; size_t n = 0; fx_error err; fx_config cfg = {0, UINT64_MAX};
  if (fx_entry(NULL, 0, &out, &n, &err, &cfg)) { printf("error: %s\n", err.message); return 1; }
  fx_free_words(out);
  if (fx_live() != 0) { printf("%lld objects leaked\n", (long long)fx_live()); return 1; }
  return 0;
}
"#;

/// The program generator's programs, natively and in the interpreter: value, gradient
/// (reverse CHAD, and delta's tape) and JVP (forward CHAD) agree — at the generated
/// point, and at that point times 1e155, where squares overflow and infinite and NaN
/// partials meet zero tangents and cotangents (the rule of every mode,
/// docs/decisions.md, "AD at non-smooth points", decides those products the same way
/// on both backends).
#[test]
fn generated_programs_agree_with_the_interpreter() {
    let tc = test_toolchain("generated");
    let (start, cases) = generated_seeds(40);
    let mut native = 0;
    let mut loop_nodes = 0;
    for seed in start..start + cases {
        let g = generator::generate_without_operators(seed, generator::Config::DEFAULT);
        let x = real_array(g.x.iter().copied());
        // Whether the gradient's C makes a loop node (`delta_loop.rs`): the generator's
        // long `sumbuild`s must reach them.
        let main = format!("{}\nfn main() -> [Real] {{ grad(f, {x}) }}", g.source);
        let c = compile("prog.flx", &main)
            .ok()
            .and_then(|p| p.show_with("c", Some("main"), AdMode::Delta).ok());
        loop_nodes += c.is_some_and(|c| c.contains("fx_tape_loop(x_")) as usize;
        let far = real_array(g.x.iter().map(|v| v * 1e155));
        // `jvp` of `grad`: forward-over-reverse, pushed through the forward layer.
        let expr = format!(
            "(f({x}), grad(f, {x}), jvp(f, {x}, {x}), jvp(|v| grad(f, v), {x}, {x}), \
             f({far}), grad(f, {far}), jvp(f, {far}, {x}), jvp(|v| grad(f, v), {far}, {x}))"
        );
        // Each reverse mode with one of the forward algorithms (`jvp` follows `--fwd`).
        for setting in [
            (AdMode::Chad, FwdMode::Chad),
            (AdMode::Delta, FwdMode::Dual),
        ] {
            let interp = fluxion_driver::gradcheck::eval_literal(
                &g.source,
                &expr,
                options_with(setting, Backend::Interp),
            );
            match native_value(&g.source, &expr, setting, &tc) {
                Ok((value, live)) => {
                    native += 1;
                    let expected =
                        interp.unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
                    assert_eq!(
                        expected,
                        value,
                        "seed {seed} {}: interpreter, native\n{}",
                        setting_name(setting),
                        g.source
                    );
                    assert_eq!(live, 0, "seed {seed}: objects left\n{}", g.source);
                }
                Err(e) => {
                    eprintln!("seed {seed}: {}", e.lines().next().unwrap_or(""));
                    assert!(
                        !e.contains("a bug") && !e.contains("internal error"),
                        "seed {seed}: {e}\n{}",
                        g.source
                    );
                    if let Ok(i) = &interp {
                        assert!(
                            e.starts_with("note:"),
                            "seed {seed}: native failed ({e}) where the interpreter gave {i}"
                        );
                    }
                }
            }
        }
    }
    assert!(
        native * 10 >= cases * 2 * 8,
        "only {native} of {cases} compiled"
    );
    assert!(loop_nodes > 0, "no generated gradient made a loop node");
}

/// A Jacobian with more outputs than inputs is made by forward sweeps of its tape, one
/// lane per input (`fx_tape_columns`, the interpreter's `delta::columns`): on generated
/// programs, `g(x) = [f(x·s₀), …, f(x·s₂ₙ)]` of `n` inputs and `2n + 1` outputs, native
/// code gives the interpreter's bits (its fused sums and dot nodes add each element's
/// terms first, as the interpreter's element nodes do; the tape is plain: no loop
/// node), and the Jacobian is CHAD's, which computes it by other rules, and satisfies
/// the transpose identity ⟨J·u, w⟩ = ⟨u, Jᵀ·w⟩ with `jvp` and `vjp`.
#[test]
fn jacobians_by_columns_give_the_interpreters_bits() {
    let tc = test_toolchain("columns");
    let (start, cases) = generated_seeds(30);
    let mut checked = 0;
    for seed in start..start + cases {
        let g = generator::generate_without_operators(seed, generator::Config::DEFAULT);
        let n = g.x.len();
        let x = real_array(g.x.iter().copied());
        let u = real_array((0..n).map(|i| 0.5 - 0.25 * i as f64));
        let w = real_array((0..2 * n + 1).map(|i| 1.0 / (1.0 + i as f64)));
        let gfn = "|x: [Real]| build(2 * length(x) + 1, |i| f(map(|v| v * (1.0 + 0.125 * to_real(i)), x)))";
        let expr =
            format!("(jacobian({gfn}, {x}), jvp({gfn}, {x}, {u}).1, vjp({gfn}, {x}).1({w}))");
        let setting = (AdMode::Delta, FwdMode::Dual);
        let interp = fluxion_driver::gradcheck::eval_literal(
            &g.source,
            &expr,
            options_with(setting, Backend::Interp),
        );
        let chad = fluxion_driver::gradcheck::eval_literal(
            &g.source,
            &expr,
            options_with((AdMode::Chad, FwdMode::Chad), Backend::Interp),
        );
        let (Ok(interp), Ok(chad)) = (interp, chad) else {
            continue;
        };
        let (value, live) = native_value(&g.source, &expr, setting, &tc)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", g.source));
        assert_eq!(
            interp, value,
            "seed {seed}: interpreter, native\n{}",
            g.source
        );
        assert_eq!(live, 0, "seed {seed}: objects left\n{}", g.source);
        let (ours, theirs) = (parse_reals(&interp), parse_reals(&chad));
        assert_eq!(ours.len(), theirs.len(), "seed {seed}");
        let all_finite = ours.iter().all(|v| v.is_finite());
        if all_finite {
            // The same real operations added in other orders: a few ulps apart.
            for (a, b) in ours.iter().zip(&theirs) {
                assert!(
                    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs())),
                    "seed {seed}: delta {a}, CHAD {b}\n{}",
                    g.source
                );
            }
            let rows = 2 * n + 1;
            let jac = &ours[..rows * n];
            let (ju, jtw) = (&ours[rows * n..rows * n + rows], &ours[rows * n + rows..]);
            let uv: Vec<f64> = (0..n).map(|i| 0.5 - 0.25 * i as f64).collect();
            let wv: Vec<f64> = (0..rows).map(|i| 1.0 / (1.0 + i as f64)).collect();
            let lhs: f64 = ju.iter().zip(&wv).map(|(a, b)| a * b).sum();
            let rhs: f64 = uv.iter().zip(jtw).map(|(a, b)| a * b).sum();
            let scale: f64 = jac.iter().map(|v| v.abs()).sum::<f64>() + 1.0;
            assert!(
                (lhs - rhs).abs() <= 1e-9 * scale,
                "seed {seed}: {lhs} against {rhs}"
            );
            for (i, row) in jac.chunks(n).enumerate() {
                let dot: f64 = row.iter().zip(&uv).map(|(a, b)| a * b).sum();
                assert!(
                    (dot - ju[i]).abs() <= 1e-9 * scale,
                    "seed {seed}: row {i} · u {dot} against J·u {}",
                    ju[i]
                );
            }
            checked += 1;
        }
    }
    assert!(checked * 2 >= cases, "only {checked} of {cases} checked");
    // Dot products, sums of maps of costly elements (fused sums natively, whose
    // elements' terms are added first) and maps of cheap ones (loop nodes on a tape that
    // is not plain): the same bits.
    let _ = natively_as_interpreted(
        "fn f(x: [Real]) -> [Real] {
             let y = map(|v| v * v * 3.0 - v, x);
             let z = build(40, |i| dot(y, map(|v| sin(v * to_real(i)), x)) + y[i % 3] * x[(i + 1) % 3]);
             let zs = build(9, |k| sum(map(|v| sin(v * to_real(k)) * v, z)));
             concat(concat(z, zs), [sum(map(|v| v * v, z)), sqrt(x[0] * x[0])])
         }
         fn main() -> [[Real]] { jacobian(f, [0.3, -0.2, 0.7]) }",
        AdMode::Delta,
    );
    // Tangents of 32 inputs over a tape of 10⁵ nodes would pass an eighth of a 64 MiB
    // budget: narrower passes, the same bits.
    let long = "fn main() -> [[Real]] {
         jacobian(|x: [Real]| {
             let y = fold(|a: Real, i: Int| a * 1.0000001 + x[i % 32] * 0.001, 0.0, range(100000));
             build(40, |k| y * to_real(k) + x[k % 32] * x[(k + 1) % 32])
         }, build(32, |i| 0.01 * to_real(i) - 0.1))
     }";
    let (interp, _) = run_in_64_mib(long, Backend::Interp);
    let (native, notes) = run_in_64_mib(long, Backend::Native);
    assert!(notes.is_empty(), "fell back: {notes:?}");
    assert_eq!(interp, native);
    assert!(interp.is_ok(), "{interp:?}");
    // The C: the tape opened plain, the rows by columns where there are fewer inputs.
    let c = delta_c_of_main(
        "fn main() -> [[Real]] { jacobian(|x: [Real]| build(7, |i| sum(map(|v| v * v * to_real(i), x))), [0.5, 2.0]) }",
    );
    assert!(
        c.contains("fx_tape_open_plain(") && c.contains("fx_tape_columns("),
        "{c}"
    );
}

/// `--opt 0` reaches the translations made ahead of time: they are left as the AD
/// rules made them (found by review: they were always optimised).
#[test]
fn opt_0_leaves_ahead_of_time_translations_unoptimised() {
    let src = "fn f(x: [Real]) -> Real { sum(map(|y| y * y, x)) }
               fn main() -> [Real] { grad(f, [1.0, 2.0]) }";
    let Ok(mut program) = compile("prog.flx", src) else {
        panic!("compiles")
    };
    // The steps of `prepare` before the resolution.
    assert!(program.expand(AdMode::Chad).is_ok(), "expands");
    assert!(
        program.optimize(fluxion_driver::OptLevel::On).is_ok(),
        "optimises"
    );
    let size = |opt: fluxion_driver::OptLevel| {
        let mut module = program.module.clone();
        let first_new = module.codes.len();
        let main = module.functions["main"];
        fluxion_driver::ad::ahead::resolve_operators(&mut module, &[main], opt, FwdMode::Chad);
        let live = fluxion_opt::live_codes(&module);
        (first_new..module.codes.len())
            .filter(|c| live[*c])
            .map(|c| fluxion_core::visit::count_bindings(&module.codes[c].body))
            .sum::<usize>()
    };
    let (off, on) = (
        size(fluxion_driver::OptLevel::Off),
        size(fluxion_driver::OptLevel::On),
    );
    assert!(on < off, "translations: {on} bindings optimised, {off} not");
}

/// `--ad delta` runs natively (its tape in the C runtime, `fluxion-native`'s `delta.rs`)
/// with the interpreter's results: points and results that are tuples, enums, arrays
/// of tuples, `Int` fields; captured reals (lifted to the zero delta); a closure the
/// compiler cannot see; `vjp` with an array cotangent; `jacobian` by rows; and a
/// wrong-shaped cotangent is the interpreter's error.
#[test]
fn delta_mode_runs_natively() {
    let programs = [
        "enum Shape { Circle(Real), Rect(Real, Real), Dot }
         fn area(s: Shape) -> Real { match s { Circle(r) => 3.0 * r * r, Rect(w, h) => w * h, Dot => 0.0 } }
         fn total(p: ([Shape], Real, Int)) -> Real {
             let (shapes, k, n) = p;
             sum(map(area, shapes)) * k + to_real(n) * sin(k)
         }
         fn main() -> (([Shape], Real, ()), Real) {
             let p = ([Circle(1.5), Rect(2.0, 3.0), Dot], 0.7, 3);
             let (v, g) = value_and_grad(total, p);
             (g, v)
         }",
        "fn f(xs: [(Real, Real)], c: Real) -> [Real] { map(|(a, b)| a * b + c * a, xs) }
         fn main() -> (([(Real, Real)], Real), [[Real]]) {
             let c = 1.5;
             let (_, pb) = vjp(|p: ([(Real, Real)], Real)| f(p.0, p.1 * c), ([(1.0, 2.0), (3.0, -1.0)], 0.5));
             (pb([1.0, -2.0]), jacobian(|x: [Real]| [x[0] * x[1] * c, exp(x[1])], [0.3, 0.4]))
         }",
        "enum Opt { No, Yes((Real, Int)) }
         fn pick(k: Real) -> fn(Real) -> Opt { |x| if x > 0.0 { Yes((x * k, 2)) } else { No } }
         fn main() -> [Real] {
             let fs = [pick(2.0), pick(-1.0), |x: Real| Yes((sin(x), 1))];
             map(|f| { let (_, pb) = vjp(f, 0.8); pb(Yes((1.5, ()))) }, fs)
         }",
        "fn main() -> [Real] { let (_, pb) = vjp(|x: [Real]| map(|y| y * y, x), [1.0, 2.0]); pb([1.0]) }",
        // Captured closures known at the operator are translated and lifted too: a
        // local one, and one capturing another that captures an array.
        "fn main() -> (Real, Real) {
             let h = |x: Real| x * x;
             let ws = [1.0, 2.0, 3.0];
             let g = |x: Real| sum(map(|w| sin(w * x), ws));
             let k = |x: Real| g(x) * h(x);
             (grad(|x: Real| h(x) + h(x * 2.0), 3.0), grad(k, 0.5))
         }",
    ];
    for src in programs {
        let (interp, _) = run(src, AdMode::Delta, Backend::Interp);
        let (native, notes) = run(src, AdMode::Delta, Backend::Native);
        assert!(notes.is_empty(), "fell back: {notes:?}\n{src}");
        match (&interp, &native) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{src}"),
            _ => assert_eq!(interp, native, "{src}"),
        }
    }
}

/// A runtime error in the middle of a reverse pass leaves the tape open (the entry
/// resets it); the next call of the compiled program gives the gradient a first call
/// gives.
#[test]
fn a_runtime_error_during_a_reverse_pass_does_not_change_the_next_gradient() {
    let src = "fn g(i: Int) -> [Real] { grad(|x: [Real]| x[i] * x[0] * x[1], [2.0, 3.0]) }";
    let tc = test_toolchain("delta-error");
    let Ok(mut prepared) = compile("prog.flx", src) else {
        panic!("compiles")
    };
    prepared
        .prepare(options(AdMode::Delta, Backend::Native))
        .expect("prepares");
    let code = prepared.module.functions["g"];
    let (native, module) = fluxion_driver::compile_native(
        &prepared.module,
        code,
        &tc,
        fluxion_driver::OptLevel::On,
        FwdMode::Chad,
    )
    .expect("compiles natively");
    let call = |i: i64| {
        native.call(
            &module,
            &[fluxion_driver::interp::Value::Int(i)],
            64 << 20,
            1 << 32,
        )
    };
    let first = call(1).expect("runs");
    let err = call(7).expect_err("index 7 is out of range");
    assert!(err.message.contains("out of range"), "{}", err.message);
    let again = call(1).expect("runs");
    // x[1]·x[0]·x[1] at (2, 3): ∂/∂x₀ = x₁² = 9, ∂/∂x₁ = 2·x₀·x₁ = 12.
    let expected = "[9.0, 12.0]";
    for v in [first, again] {
        let mut s = String::new();
        let _ = fluxion_driver::interp::write_value(&mut s, &v, &module, None);
        assert_eq!(s, expected);
    }
}

/// The generator's programs with differential operators inside `f` (nested operators,
/// closures differentiated where the compiler cannot see them): natively, value,
/// gradient and JVP in each reverse mode give the interpreter's values (to rounding:
/// a nested operator may take the interpreter's run-time route there, issue 31), and
/// no program leaves native code — derivative code is made ahead of time for all of
/// them, but for CHAD's documented exception (a pullback).
#[test]
fn generated_programs_with_operators_run_natively() {
    let (start, cases) = generated_seeds(16);
    let mut handed_over = Vec::new();
    let mut with_operators = 0;
    for seed in start..start + cases {
        let g = generator::generate(seed, generator::Config::DEFAULT);
        if !["grad(", "jvp(", "vjp(", "diff(", "hessian(", "jacobian("]
            .iter()
            .any(|op| g.source.contains(op))
        {
            continue;
        }
        with_operators += 1;
        let x = real_array(g.x.iter().copied());
        let main = format!(
            "{}\nfn main() -> (Real, [Real], Real) {{ (f({x}), grad(f, {x}), jvp(f, {x}, {x}).1) }}",
            g.source
        );
        for setting in [
            (AdMode::Chad, FwdMode::Chad),
            (AdMode::Delta, FwdMode::Dual),
        ] {
            let (interp, _) = run_with(&main, setting, Backend::Interp);
            let (native, notes) = run_with(&main, setting, Backend::Native);
            let what = format!("seed {seed} {}", setting_name(setting));
            assert_no_bug(&notes, &what);
            // The documented exception: CHAD does not translate a pullback (it applies
            // a reverse operator itself), so a program making one may leave CHAD's
            // native code (docs/decisions.md, "Differentiation", "CHAD and nested
            // operators").
            let pullback = setting.0 == AdMode::Chad && main.contains("vjp(");
            if !notes.is_empty() && !pullback {
                handed_over.push(format!("{what}: {}\n{main}", notes[0]));
            }
            match (&interp, &native) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{what}\n{main}"),
                _ => assert_eq!(interp, native, "{what}\n{main}"),
            }
        }
    }
    assert!(
        with_operators * 4 >= cases,
        "{with_operators} of {cases} apply operators"
    );
    assert!(
        handed_over.is_empty(),
        "ran in the interpreter: {handed_over:#?}"
    );
}

/// A benchmark's runs natively (`call_repeated`, GradBench's `evaluate`): the function
/// runs on the arguments decoded once, at least `min_runs` times and for `min_time`,
/// never past `max_runs`, each run timed; the last run's value is a single call's, bit
/// for bit, and every run's objects and tape are released (nothing left afterwards) —
/// the tape's kept buffers counted once against the memory budget, not once per run
/// (16 MiB holds one run's tape of 20,000 inputs, not sixty; 4 MiB, of which the tape
/// takes more than a quarter, keeps it between runs, adjoints included: forty runs).
#[test]
fn repeated_runs_decode_once_and_free_everything() {
    use fluxion_driver::native_backend::Repeat;
    let tc = test_toolchain("repeat");
    let src = "fn f(w: [Real]) -> Real { sum(map(|x| sin(x) * x, w)) }";
    let expr = "grad(f, build(20000, |i| to_real(i) / 7.0))";
    let repeat = |min_runs, min_ms, max_runs| Repeat {
        min_runs,
        min_time: std::time::Duration::from_millis(min_ms),
        max_runs,
    };
    for setting in [
        (AdMode::Delta, FwdMode::Dual),
        (AdMode::Chad, FwdMode::Dual),
    ] {
        let (once, _) = native_value(src, expr, setting, &tc).expect("runs");
        let (src, expr, tc) = (src.to_string(), expr.to_string(), tc.clone());
        let runs = with_big_stack(move || {
            let (prog, module) = compile_expr(&src, &expr, setting, &tc).expect("compiles");
            let code = module.functions[fluxion_driver::core_entry_name()];
            let ty = module.code(code).ret.clone();
            let mut out = Vec::new();
            let repeats = [
                repeat(5, 0, 100),
                repeat(10, 0, 3),
                repeat(1, 20, 1 << 20),
                repeat(60, 0, 100),
            ];
            // The last: a budget the tape passes a quarter of, so that its buffers
            // (adjoints included) are kept between runs and must stay charged once.
            let budgets = [16 << 20, 16 << 20, 16 << 20, 16 << 20, 4 << 20];
            for (r, budget) in repeats.into_iter().chain([repeat(40, 0, 100)]).zip(budgets) {
                let (value, times) = prog
                    .call_repeated(&module, &[], 64 << 20, budget, r)
                    .unwrap_or_else(|e| panic!("{r:?}: {}", e.message));
                let mut s = String::new();
                let _ = fluxion_driver::interp::write_value(&mut s, &value, &module, Some(&ty));
                out.push((s, times, prog.live_objects()));
            }
            out
        });
        let counts: Vec<usize> = runs.iter().map(|(_, t, _)| t.len()).collect();
        assert_eq!(
            [counts[0], counts[1], counts[3], counts[4]],
            [5, 3, 60, 40],
            "{setting:?}: runs {counts:?}"
        );
        let total: std::time::Duration = runs[2].1.iter().sum();
        assert!(
            total >= std::time::Duration::from_millis(20),
            "{setting:?}: {total:?}"
        );
        for (value, _, live) in &runs {
            assert_eq!(value, &once, "{setting:?}: a repeated run's value");
            assert_eq!(*live, 0, "{setting:?}: objects left after the runs");
        }
    }
}

/// A result of no words (`()`, a tuple of units) comes back from native code as a null
/// pointer; making a slice of it was undefined behaviour, which debug builds abort on
/// (found by the Python package's tests: `ident_unit(None)`).
#[test]
fn a_result_of_no_words_is_read_natively() {
    for src in [
        "fn main() -> () { () }",
        "fn main() -> ((), ()) { ((), ()) }",
        "fn id(u: ()) -> () { u } fn main() -> () { id(()) }",
    ] {
        for mode in MODES {
            assert!(natively_as_interpreted(src, mode).is_ok(), "{src}");
        }
    }
}

/// Small arrays made scalars, concatenated slices made one array and a scan read by a
/// sum made one fold (the optimiser's `unroll`, `concat` and `scan_sum`): values,
/// derivatives and faults as the interpreter's; a slice read only at constant indices
/// is natively its bounds check, no array.
#[test]
fn small_arrays_joined_slices_and_fused_scans_are_the_interpreters() {
    let programs = [
        "fn cross(a: [Real], b: [Real]) -> [Real] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}
fn f(x: [Real]) -> Real {
    let r = slice(x, 0, 3);
    let p = vsub(x, [0.5, 1.0, 2.0]);
    let w = build(3, |i| p[i] + cross(r, p)[i] * r[i]);
    sumbuild(3, |i| w[i] * w[i]) + sum(map2(|a, b| a * b, w, r))
}
fn main() -> (Real, [Real], Real) {
    let x = [0.3, -1.2, 0.8];
    (f(x), grad(f, x), jvp(f, x, [1.0, -1.0, 0.5]).1)
}",
        "fn minor(a: [Real], r: Int, cols: [Int]) -> Real {
    let m = length(cols);
    if m == 1 { a[r * 3 + cols[0]] } else {
        sumbuild(m, |j| (if j % 2 == 0 { 1.0 } else { -1.0 }) * a[r * 3 + cols[j]]
            * minor(a, r + 1, concat(slice(cols, 0, j), slice(cols, j + 1, m - j - 1))))
    }
}
fn main() -> (Real, [Real]) {
    let a = [2.0, 1.0, 0.5, 3.0, 1.5, 2.5, 0.25, 4.0, 1.0];
    (minor(a, 0, [0, 1, 2]), grad(|a: [Real]| minor(a, 0, [0, 1, 2]), a))
}",
        // Faults: at the third element of an unrolled map, a slice out of range read
        // at a constant index, a vector of the wrong length against a 3-vector, a
        // joined slice out of range.
        "fn main() -> [Int] { map(|i| 10 / (i - 2), [0, 1, 2, 3]) }",
        "fn main() -> Real { let x = [1.0, 2.0]; let s = slice(x, 0, 3); s[0] }",
        "fn main() -> [Real] { grad(|x: [Real]| sum(vsub(x, [1.0, 2.0, 3.0])), [1.0, 2.0, 3.0, 4.0]) }",
        "fn main() -> [Int] { let c = [1, 2, 3]; let j = 2; concat(slice(c, 0, j), slice(c, j + 1, 3 - j)) }",
        // llsq's polynomial: the powers of `t` and the sum in one fold.
        "fn f(x: [Real], t: Real) -> Real {
    let powers = scan(|p, _j| p * t, 1.0, range(length(x) - 1));
    x[0] + sumbuild(length(x) - 1, |j| x[j + 1] * powers[j])
}
fn main() -> (Real, [Real], Real) {
    let x = [0.5, -1.0, 2.0, 0.25, 3.0, 1.5];
    (f(x, 0.7), grad(|x: [Real]| f(x, 0.7), x), grad(|t: Real| f(x, t), 0.7))
}",
        "fn main() -> Real { let x = [1.0, 2.0, 3.0, 4.0, 5.0]; let k = [1, 2, 0, 4, 5]; let p = scan(|a, y| a * y, 1.0, x); sumbuild(5, |j| p[j] / to_real(10 / k[j])) }",
    ];
    for src in programs {
        for mode in [AdMode::Delta, AdMode::Chad] {
            let _ = natively_as_interpreted(src, mode);
        }
    }
    let c = delta_c_of_main(
        "fn main() -> Real { let x = [1.0, 2.0, 3.0, 4.0]; let s = slice(x, 1, 3); s[0] * s[2] }",
    );
    assert!(c.contains("out of range for an array"), "no check:\n{c}");
    assert!(!c.contains("\"slice\""), "the slice was made:\n{c}");
}

/// `--ad delta`: a `%delta_sum` of a loop of at least eight cheap straight-line
/// elements is one loop node (`delta_loop.rs`): no node per element, the elements run
/// again at the sweep with their own nodes swept in registers. The gradients are the
/// interpreter's bits (whose tape has every element's nodes): elements reading at
/// computed indices (a flat matrix, a lower triangle stored by columns), elements of
/// several nodes, `map` and `map2` elements with `min`, `max`, `abs` and division,
/// constant elements (their terms on the zero delta), an infinite adjoint that zero
/// coefficients stop, loop nodes on a tape nested in another and under forward mode
/// (a Hessian-vector product), and a fault in the ninth element. Where holding the
/// arrays would cost more than the nodes, the elements record their nodes as written
/// (the same bits, within a small memory budget). An element that evaluates a
/// transcendental function keeps its terms on the tape.
/// An element with an inner sum (`delta_loop::inner_sum`) is a loop node whose apply
/// variant sweeps the inner elements itself — GMM's `(Q·v)ᵢ²` — also inside a
/// preaccumulating sum's element: the interpreter's bits; where the inner elements read
/// the element's own delta, no nested node; an inner fault reported as interpreted.
#[test]
fn nested_loop_nodes_give_the_interpreters_bits() {
    let nested = [
        "fn main() -> ([Real], [[Real]], [Real]) {
             let q0 = build(10, |k| 0.3 + 0.05 * to_real(k));
             let ls0 = build(10, |i| build(i, |j| 0.1 * to_real((i * 3 + j) % 7) - 0.2));
             let v0 = build(10, |k| 1.0 - 0.15 * to_real(k));
             grad(|p: ([Real], [[Real]], [Real])| {
                 let (q, ls, v) = p;
                 sumbuild(length(q), |i| { let row = ls[i]; let r = q[i] * v[i] + sumbuild(i, |j| row[j] * v[j]); r * r })
             }, (q0, ls0, v0))
         }",
        "fn qtimes(qd: [Real], rows: [[Real]], v: [Real]) -> [Real] {
             build(length(qd), |i| { let row = rows[i]; qd[i] * v[i] + sumbuild(i, |j| row[j] * v[j]) })
         }
         fn loss(xs: [[Real]], mu: [[Real]], qs: [[Real]], ls: [[[Real]]]) -> Real {
             sumbuild(length(xs), |i| logsumexp(build(length(mu), |c| {
                 let r = qtimes(qs[c], ls[c], vsub(xs[i], mu[c]));
                 -0.5 * dot(r, r)
             })))
         }
         fn main() -> ([[Real]], [[Real]], [[[Real]]]) {
             let xs = build(6, |p| build(9, |k| 0.1 * to_real((p * 5 + k) % 11) - 0.4));
             let mu = build(3, |c| build(9, |k| 0.05 * to_real(c + k) - 0.2));
             let qs = build(3, |c| build(9, |k| 0.8 + 0.02 * to_real(c * k)));
             let ls = build(3, |c| build(9, |i| build(i, |j| 0.03 * to_real((c + i * 2 + j) % 5) - 0.05)));
             grad(|p: ([[Real]], [[Real]], [[[Real]]])| loss(xs, p.0, p.1, p.2), (mu, qs, ls))
         }",
        // The inner closure captures reals the element computed (copied into it).
        "fn main() -> ([Real], [Real]) {
             let a0 = build(10, |k| 0.3 + 0.05 * to_real(k));
             let b0 = build(10, |k| 1.0 - 0.15 * to_real(k));
             grad(|p: ([Real], [Real])| {
                 let (xs, ys) = p;
                 sum(map2(|a, b| { let s = sumbuild(length(ys), |j| ys[j] * a - xs[j] * b); s * s + a * b }, xs, ys))
             }, (a0, b0))
         }",
    ];
    for src in nested {
        let _ = natively_as_interpreted(src, AdMode::Delta);
        let c = delta_c_of_main(src);
        assert!(
            c.contains("for (int64_t i_ = n_v"),
            "no nested loop node:\n{src}"
        );
        assert!(c.contains("fx_pre_open"), "no preaccumulating sum:\n{src}");
        // The inner count is checked where the elements first run, not again in the
        // sweep (against the budget as the tape holds it by then: a failure mid-sweep
        // that the forward run did not meet).
        for f in c.split("_a(fx_clo *self_").skip(1) {
            let f = f.split("\n}\n").next().unwrap_or("");
            assert!(
                !f.contains("fx_arr_check(n_v"),
                "a check in the sweep:\n{f}"
            );
        }
    }
    let own_delta = "fn main() -> [Real] {
        grad(|x: [Real]| sumbuild(9, |i| { let s = x[i] * x[i]; s * sumbuild(9, |j| s * x[j]) }), build(9, |k| 0.1 * to_real(k) - 0.3))
    }";
    let _ = natively_as_interpreted(own_delta, AdMode::Delta);
    assert!(!delta_c_of_main(own_delta).contains("for (int64_t i_ = n_v"));
    let fwd_over_rev = "fn main() -> ([[Real]], [[Real]]) {
        let rows0 = build(9, |i| build(9, |j| 0.1 * to_real((i + 2 * j) % 7) - 0.3));
        let v = build(9, |k| 0.5 - 0.1 * to_real(k));
        jvp(|rows: [[Real]]| grad(|rs: [[Real]]| sumbuild(9, |i| { let r = sum(map2(|a, b| a * b, rs[i], v)); r * r * r }), rows), rows0, map(|r| map(|_x| 1.0, r), rows0))
    }";
    let _ = natively_as_interpreted(fwd_over_rev, AdMode::Delta);
    // The last row is one short: the nested node's primal run reports the read.
    let fault = "fn main() -> [Real] {
        let rows = build(9, |i| build(i, |j| 0.1 * to_real(j)));
        grad(|v: [Real]| sumbuild(9, |i| { let row = rows[i]; let r = v[i] + sumbuild(i + 1, |j| row[j] * v[j]); r * r }), build(9, |k| 0.5 - 0.1 * to_real(k)))
    }";
    assert!(delta_c_of_main(fault).contains("for (int64_t i_ = n_v"));
    let err = natively_as_interpreted(fault, AdMode::Delta).expect_err("faults");
    assert!(
        err.contains("index 0 out of range for an array of length 0"),
        "{err}"
    );
}

#[test]
fn loop_nodes_give_the_interpreters_bits() {
    let nodes = [
        "fn mv(a: [Real], x: [Real]) -> [Real] {
             let n = length(x);
             build(length(a) / n, |i| sumbuild(n, |j| a[i * n + j] * x[j]))
         }
         fn main() -> [Real] {
             let x = build(9, |k| 0.5 - 0.1 * to_real(k));
             grad(|a: [Real]| sum(map(|t| t * t, mv(a, mv(a, x)))), build(81, |k| 0.01 * to_real(k % 7) - 0.02))
         }",
        "fn qtimes(l: [Real], v: [Real]) -> [Real] {
             let d = length(v);
             build(d, |i| v[i] + sumbuild(i, |j| l[j * (d - 1) - j * (j - 1) / 2 + i - j - 1] * v[j]))
         }
         fn main() -> [Real] {
             let v = build(11, |k| 1.0 - 0.15 * to_real(k));
             grad(|l: [Real]| { let r = qtimes(l, v); sum(map2(|a, b| a * b, r, r)) }, build(55, |k| 0.1 * to_real(k % 5) - 0.2))
         }",
        "fn main() -> [Real] {
             let p = build(9, |k| 0.3 * to_real(k));
             grad(|x: [Real]| sumbuild(length(x), |j| { let e = x[j] - p[j]; e * e * x[0] }), build(9, |k| 1.0 / (1.0 + to_real(k))))
         }",
        "fn main() -> ([Real], [Real]) {
             let u = build(10, |k| 0.25 * to_real(k) - 1.0);
             grad(|p: ([Real], [Real])| sum(map2(|a, b| min(a, b) * abs(b) + max(a, 0.3) - a / (1.0 + b * b), p.0, p.1)) + sum(map(|a| a * a * 3.0, p.1)), (u, map(|t| 0.5 - t, u)))
         }",
        "fn main() -> [Real] {
             grad(|x: [Real]| {
                 let c = concat(build(9, |k| to_real(k)), [x[0]]);
                 x[0] * sumbuild(9, |j| c[j] * 2.0 + c[j] * c[0])
             }, build(9, |k| to_real(k)))
         }",
        "fn main() -> [Real] {
             let w = replicate(9, 0.0);
             grad(|x: [Real]| sqrt(sumbuild(9, |j| x[j] * w[j] * 2.0)) + sumbuild(9, |j| x[j] * x[j] * 0.5), build(9, |k| 1.0 + to_real(k)))
         }",
        "fn main() -> [Real] {
             grad(|v: [Real]| { let g = grad(|w: [Real]| sumbuild(9, |j| w[j] * v[j] * v[(j + 1) % 9]), v); sumbuild(9, |j| g[j] * g[j] * v[j]) }, build(9, |k| 0.1 * to_real(k) - 0.3))
         }",
        "fn main() -> ([Real], [Real]) {
             let p = build(9, |k| 0.2 * to_real(k));
             jvp(|c: [Real]| grad(|x: [Real]| sumbuild(9, |j| { let e = x[j] - p[j]; e * e * x[j] }), c), build(9, |k| 1.0 - 0.1 * to_real(k)), replicate(9, 1.0))
         }",
        "fn main() -> [Real] {
             grad(|x: [Real]| sumbuild(9, |j| x[j] * x[(j * 5) % 8] * x[j + j / 8]), build(9, |k| to_real(k)))
         }",
    ];
    for src in nodes {
        let _ = natively_as_interpreted(src, AdMode::Delta);
        let c = delta_c_of_main(src);
        assert!(c.contains("fx_tape_loop(x_"), "no loop node:\n{src}");
    }
    // The ninth element's index is out of range: the loop's own run reports it.
    let fault = "fn main() -> [Real] { grad(|x: [Real]| sumbuild(9, |j| x[j] * x[j + j / 8 * 5]), build(9, |k| to_real(k))) }";
    let err = natively_as_interpreted(fault, AdMode::Delta).expect_err("faults");
    assert!(err.contains("index 13 out of range"), "{err}");
    // A transcendental element keeps its terms.
    let stored = "fn main() -> [Real] { grad(|x: [Real]| sumbuild(9, |j| exp(x[j]) * x[0]), build(9, |k| to_real(k))) }";
    let _ = natively_as_interpreted(stored, AdMode::Delta);
    assert!(!delta_c_of_main(stored).contains("fx_tape_loop(x_"));
    // An element of two nodes reading a fresh 100,009-element array 300 times: holding
    // the arrays would keep 480 MB alive, so the elements record their nodes. Each
    // round adds (x₀ - 1)²·x₀, whose derivative at x₀ = 2 is 2·1·2 + 1² = 5.
    let held = "fn main() -> Real {
    let z = replicate(100000, 0.5);
    grad(|x: [Real]| fold(|acc, k| {
        let a = concat(x, z);
        acc + sumbuild(9, |t| { let e = a[t] - 1.0; e * e * a[t] })
    }, 0.0, range(300)), replicate(9, 2.0))[0]
}";
    assert!(delta_c_of_main(held).contains("fx_tape_loop_pays(held_, terms_)"));
    for backend in [Backend::Interp, Backend::Native] {
        let (out, notes) = run_in_64_mib(held, backend);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(out, Ok("1500.0".to_string()), "{backend:?}");
    }
}

/// Map loop nodes (`delta_loop.rs` `emit_map`): a `build`, `map` or `map2` of cheap
/// straight-line elements (an `if` of no `%delta` included) under `--ad delta` is one
/// tape node with an id per element, whose sweep computes each element again with its
/// own adjoint — the interpreter's bits: chains of such loops, an RK4 step iterated,
/// elements on constant data (ids 0), infinite and NaN partials, a Jacobian sweeping
/// the node once per row, a loop too short for a node, and a fault in an element.
#[test]
fn map_loop_nodes_give_the_interpreters_bits() {
    let nodes = [
        "fn f(x: [Real]) -> Real {
             let y = map(|v| v * v + 0.3 * v, x);
             let z = map2(|u, v| u * v - u / (v + 2.0), y, x);
             let w = build(length(x), |i| z[i] * x[i] + (if i % 3 == 0 { 1.0 } else { x[0] }));
             sum(map(|v| v * v, w)) + w[3] * w[5]
         }
         fn main() -> [Real] { grad(f, build(20, |i| to_real(i) * 0.1 - 0.7)) }",
        "fn rhs(x: [Real], y: [Real]) -> [Real] {
             build(length(x), |i| x[i] * (if i == 0 { 1.0 } else { y[i - 1] }))
         }
         fn axpy(a: Real, u: [Real], v: [Real]) -> [Real] { map2(|ui, vi| vi + a * ui, u, v) }
         fn solve(x: [Real], s: Int) -> [Real] {
             let h = 2.0 / to_real(s);
             iterate(s, |y: [Real]| {
                 let k1 = rhs(x, y);
                 let k2 = rhs(x, axpy(h / 2.0, k1, y));
                 let k3 = rhs(x, axpy(h / 2.0, k2, y));
                 let k4 = rhs(x, axpy(h, k3, y));
                 build(length(y), |i| y[i] + h * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]) / 6.0)
             }, replicate(length(x), 0.0))
         }
         fn main() -> [Real] {
             grad(|x: [Real]| { let y = solve(x, 3); y[length(y) - 1] * y[2] }, build(12, |i| 0.5 + to_real(i) * 0.1))
         }",
        "fn main() -> [Real] {
             grad(|x: [Real]| { let y = map(|v| v * v * 3.0 - v, concat(x, replicate(9, 2.0))); sum(y) + y[12] * y[1] }, build(9, |i| to_real(i) - 4.0))
         }",
        "fn main() -> [Real] {
             grad(|x: [Real]| { let y = map(|v| 1.0 / v + v, x); y[0] * 0.0 + y[4] * y[5] + sum(y) }, build(9, |i| to_real(i) - 4.0))
         }",
        "fn main() -> [[Real]] {
             jacobian(|x: [Real]| { let y = map(|v| v * v * 3.0 - v, x); map2(|a, b| a * b + a, y, x) }, build(9, |i| 0.2 * to_real(i) - 0.5))
         }",
    ];
    for src in nodes {
        let _ = natively_as_interpreted(src, AdMode::Delta);
        let c = delta_c_of_main(src);
        assert!(c.contains("x_->ids = 1"), "no map loop node:\n{src}");
    }
    // Seven elements: no node (the count is checked at run time), the same bits.
    let short = "fn main() -> [Real] { grad(|x: [Real]| sum(map(|v| v * v * v, map(|v| v * 2.0 - 1.0, x))), build(7, |i| to_real(i))) }";
    let _ = natively_as_interpreted(short, AdMode::Delta);
    // The ninth element's read is out of range: the loop's own run reports it.
    let fault = "fn main() -> [Real] { grad(|x: [Real]| { let y = build(9, |j| x[j] * x[j + j / 8 * 5]); sum(map(|v| v * v, y)) }, build(9, |k| to_real(k))) }";
    let err = natively_as_interpreted(fault, AdMode::Delta).expect_err("faults");
    assert!(err.contains("index 13 out of range"), "{err}");
}
