//! The optimiser (`fluxion-opt`): it never changes a result (every example and a set of
//! derivative programs, in every AD mode and both forward algorithms, print the same
//! shape and the same reals with `--opt 1` as with `--opt 0`, to 1e-12 relative: a
//! derivative of optimised code may sum in another order), its rules fire (snapshots of `show
//! --stage opt` and of derivative stages with `--opt 1`), and its time grows about
//! linearly with the program.

use std::path::PathBuf;
use std::time::Instant;

use fluxion_driver::gradcheck::{parse_reals, skeleton};
use fluxion_driver::{AdMode, FwdMode, OptLevel, RunOptions, compile, with_big_stack};

fn run(src: &str, options: RunOptions) -> String {
    let src = src.to_string();
    with_big_stack(move || {
        let program = compile("opt.flx", &src).unwrap_or_else(|f| panic!("{}", f.render()));
        match program.run_with_options("main", None, options) {
            Ok(out) => out.to_literal(),
            Err(f) => format!("error: {}", f.render()),
        }
    })
}

fn options(mode: AdMode, fwd: FwdMode, opt: OptLevel) -> RunOptions {
    RunOptions {
        mode,
        fwd,
        opt,
        memory_limit: None,
        backend: fluxion_driver::Backend::Interp,
    }
}

/// Programs whose derivatives go through every AD mode's derived code.
const DERIVATIVE_PROGRAMS: &[&str] = &[
    "fn f(x: [Real]) -> Real { let p = (x[0] * x[1], sin(x[2])); p.0 * p.1 + exp(p.0) }
     fn main() -> ([Real], (Real, Real), [[Real]]) {
        (grad(f, [0.3, 1.2, -0.7]), jvp(f, [0.3, 1.2, -0.7], [1.0, 0.5, 0.25]), hessian(f, [0.3, 1.2, -0.7]))
     }",
    "enum Shape { Circle(Real), Rect(Real, Real) }
     fn area(s: Shape) -> Real { match s { Circle(r) => 3.0 * r * r, Rect(a, b) => a * b } }
     fn f(x: [Real]) -> Real { area(Circle(x[0])) + area(Rect(x[1], x[0])) + fold(|acc, y| acc * 0.5 + y * y, 0.0, x) }
     fn main() -> ([Real], Real) { (grad(f, [0.5, 2.0, 1.5]), diff(|t| f([t, t * t, 1.0]), 0.4)) }",
    "fn adder(k: Real) -> fn(Real) -> Real { |y| k * y + sin(k) }
     fn f(x: [Real]) -> Real { let a = adder(x[0]); sum(map(a, x)) + a(a(x[1])) + sumbuild(length(x), |i| x[i] * to_real(i)) }
     fn main() -> ([Real], [Real]) { let x = [0.7, -0.2, 1.1]; (grad(f, x), vjp(|v: [Real]| map(|z| z * f(v), v), x).1([1.0, 2.0, 3.0])) }",
    // Inlining and every fusion rule, in the primal and in each mode's derived code.
    "fn sq(x: Real) -> Real { x * x }
     fn twice(g: fn(Real) -> Real, x: Real) -> Real { g(g(x)) }
     fn f(x: [Real]) -> Real {
        let a = sum(map(|y| sq(y) + 1.0, map(|z| sin(z), x)));
        let b = fold(|acc, y| acc * 0.5 + y, 0.0, map(|y| y * x[0], x));
        let c = sum(map2(|u, v| u * v, map(|y| exp(y), x), x));
        let d = build(length(x), |i| x[i] * 2.0);
        let e = sum(map(|y| y * y, d));
        twice(|t| t * a + b, c) + e + to_real(length(map(|y| y, x)))
     }
     fn main() -> ([Real], Real) { let x = [0.7, -0.2, 1.1]; (grad(f, x), jvp(f, x, [1.0, 0.5, -2.0]).1) }",
    // Loops of tuples (what `unzip` takes apart) and loops read by a backpropagator
    // (what `sink` moves), in CHAD's output and in the primal.
    "fn f(x: [Real]) -> Real {
        let ps = map(|y| (y * y, sin(y)), x);
        let a = sum(map(|p| p.0 * 2.0, ps)) + sum(map(|p| p.1, ps));
        let qs = build(length(x), |i| (x[i], to_real(i)));
        let b = sum(map2(|q, y| q.0 * q.1 + y, qs, x));
        let c = fold(|acc, y| acc * 0.5 + exp(y), 0.0, map(|y| y * a, x));
        a * b + c + to_real(length(ps))
     }
     fn main() -> ([Real], Real) { let x = [0.3, -1.2, 0.8, 2.0]; (grad(f, x), jvp(f, x, [1.0, -1.0, 0.5, 0.25]).1) }",
    // Forward over reverse of a sum (kmeans' `dir`): the loop of dual numbers of
    // pairs unzipped, its `%delta`s copied into each component's loop.
    "fn f(c: [Real], p: [Real]) -> Real { sumbuild(length(c), |a| { let e = c[a] - p[a]; e * e * p[a] }) }
     fn main() -> ([Real], [Real]) {
        let c = build(9, |i| to_real(i) * 0.3 - 1.0);
        let p = build(9, |i| 0.5 - to_real(i) * 0.1);
        jvp(|c: [Real]| grad(|c2: [Real]| f(c2, p), c), c, replicate(9, 1.0))
     }",
    // Loops of reads `x[i]` (CHAD's backward loops of one-hot cotangents, summed into
    // dense arrays): reads of a prefix (`i < 2` of 4), of the whole array, through the
    // prelude's `dot`, and rows of a matrix.
    "fn f(x: [Real]) -> Real {
        let a = sumbuild(2, |i| x[i] * x[i + 1]);
        let b = sumbuild(length(x), |i| x[i] * to_real(i + 1));
        let m = [x, map(|y| y * y, x)];
        let c = sumbuild(2, |r| dot(m[r], x));
        a * b + c + dot(x, build(length(x), |i| x[length(x) - 1 - i]))
     }
     fn main() -> ([Real], Real) { let x = [0.3, -1.2, 0.8, 2.0]; (grad(f, x), jvp(f, x, [1.0, -1.0, 0.5, 0.25]).1) }",
    // Found by review: `length(x)` and `exp(p)` floated out of loops and merged by CSE
    // leave a lambda capturing two copies of one variable (their translations must
    // stay two captures); a read at a fixed index in a loop that runs zero times (its
    // one-hot must not float out of the backward loop); a `replicate` read in a
    // lambda that captures it but not its element.
    "fn f(x: [Real], p: Real) -> Real {
        let a = sumbuild(length(x), |i| sumbuild(length(x), |j| x[(i * 2) % length(x)]));
        let b = sumbuild(length(x), |j| sumbuild(length(x), |i| x[length(x) - 1 - j]));
        let c = sumbuild(3, |j| sumbuild(2, |i| x[i] * exp(p)) * exp(p) + x[j] * exp(p));
        let r = replicate(length(x), x[0]);
        let d = build(length(x), |i| x[i] * exp(x[i]))[2];
        a * b + c + d + sum(map(|k| sum(map2(|u, v| u * v * k, x, r)), x))
     }
     fn g(x: [Real]) -> Real { sumbuild(length(x), |i| x[1]) }
     fn main() -> (([Real], Real), [Real], Real) {
        let x = [1.0, 2.0, 3.0, 0.5];
        (grad(f, (x, 0.5)), grad(g, []), jvp(|y: [Real]| f(y, 0.5), x, [1.0, 0.0, -1.0, 2.0]).1)
     }",
    // Small arrays (`unroll`, issue 33): literals, `build(3, ..)`, maps over a slice,
    // `map2` of literals and of a literal with an array of unknown length, sums of
    // them, an `if` of two literals, rows of a literal matrix, and a function taking
    // and returning 3-vectors (inlined to be unrolled).
    "fn cross(a: [Real], b: [Real]) -> [Real] {
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
     }
     fn turn(r: [Real], p: [Real]) -> [Real] {
        let t = dot(r, r);
        if t > 1.0 { let w = scale(1.0 / sqrt(t), r); let c = cross(w, p); build(3, |i| p[i] + c[i] * w[i]) }
        else { vadd(p, cross(r, p)) }
     }
     fn f(x: [Real]) -> Real {
        let r = slice(x, 0, 3);
        let p = vsub(x, [0.5, 1.0, 2.0]);
        let q = turn(r, p);
        let m = [[x[0], 1.0, x[1]], q, map(|y| y * y, r)];
        let s = sumbuild(3, |i| m[i][i] * q[i]) + sum(map2(|a, b| a * b, m[1], m[2]));
        s * sum(q) + norm2(turn(map(|y| 0.1 * y, r), q))
     }
     fn main() -> ([Real], Real) { let x = [0.3, -1.2, 0.8]; (grad(f, x), jvp(f, x, [1.0, -1.0, 0.5]).1) }",
    // Concatenated slices (`concat`): the determinant's minors (one `build`), slices
    // that overlap or come in the other order (left as they are), of two arrays.
    "fn minor(a: [Real], r: Int, cols: [Int]) -> Real {
        let m = length(cols);
        if m == 1 { a[r * 3 + cols[0]] } else {
            sumbuild(m, |j| {
                let rest = concat(slice(cols, 0, j), slice(cols, j + 1, m - j - 1));
                (if j % 2 == 0 { 1.0 } else { -1.0 }) * a[r * 3 + cols[j]] * minor(a, r + 1, rest)
            })
        }
     }
     fn f(a: [Real]) -> Real {
        let b = concat(slice(a, 2, 3), slice(a, 0, 4));
        let c = concat(slice(a, 1, 3), slice(a, 3, 2));
        let d = concat(slice(b, 0, 2), slice(a, 2, 1));
        minor(a, 0, [0, 1, 2]) * sum(b) + dot(c, c) + sum(d)
     }
     fn main() -> ([Real], Real) {
        let a = [2.0, 1.0, 0.5, 3.0, 1.5, 2.5, 0.25, 4.0, 1.0];
        (grad(f, a), jvp(f, a, map(|x| x * 0.5 - 1.0, a)).1)
     }",
    // A scan read by a sum over its indices (`scan_sum`: one fold), over a range and
    // over an array; and scans that stay: read twice, read at another index.
    "fn f(x: [Real]) -> Real {
        let t = x[1] * 0.5;
        let m = length(x);
        let powers = scan(|p, _j| p * t, 1.0, range(m - 1));
        let a = x[0] + sumbuild(m - 1, |j| x[j + 1] * powers[j]);
        let c = scan(|p, y| p * 0.5 + y * y, 0.0, x);
        let b = sumbuild(length(x), |j| if j % 2 == 0 { sin(c[j]) } else { x[j] });
        let d = scan(|p, y| p + y, 0.0, x);
        let e = sumbuild(length(x), |j| d[j] * d[j]) + sumbuild(length(x) - 1, |j| d[j + 1] * x[j]);
        a * a + b + e
     }
     fn main() -> ([Real], Real) {
        let x = [0.3, -1.2, 0.8, 2.0, 0.6];
        (grad(f, x), jvp(f, x, [1.0, -1.0, 0.5, 0.25, 2.0]).1)
     }",
    // `dot(r, r)` of a `build` (`twins`: one read, so the `build` fuses), past a read
    // at the loop's index of an array of the loop's length (`read_in_range`).
    "fn f(x: [Real]) -> Real {
        let w = [0.5, 1.5, -1.0, 2.0, 0.25];
        let s = sumbuild(length(w), |c| {
            let r = build(length(x), |i| x[i] * exp(w[(i + c) % 5]));
            let a = w[c];
            a - 0.5 * dot(r, r)
        });
        s + norm2(map(|y| y * y, x))
     }
     fn main() -> ([Real], Real) {
        let x = [0.3, -1.2, 0.8, 2.0, 0.6];
        (grad(f, x), jvp(f, x, [1.0, -1.0, 0.5, 0.25, 2.0]).1)
     }",
];

/// Fusion interleaves two loops' calls: where both could fail, the first failure must
/// be the same (the error's message and location) with and without the optimiser.
const FAILING_PROGRAMS: &[&str] = &[
    // The producer fails (index out of range) before the consumer would.
    "fn main() -> Real { let x = [1.0, 2.0]; sum(map(|i| x[i] * 2.0, [0, 1, 5])) }",
    // Both fail: the producer at its third element, the consumer at its first.
    "fn main() -> [Int] { let x = [1, 2]; map(|k| 10 / (k - 10), map(|i| x[i], [0, 1, 5])) }",
    // A failing binding between producer and consumer.
    "fn main() -> Int { let x = [1, 2]; let ys = map(|i| x[i], [0, 7]); let z = x[9]; fold(|a, b| a + b + z, 0, ys) }",
    // map2's length check comes before the producer's failure.
    "fn main() -> [Int] { let x = [1, 2]; map2(|a, b| a + b, map(|i| x[i], [0, 3]), [1, 2, 3]) }",
    // A loop over a pending array's length between it and its consumer: the array's
    // negative length is reported first, at its own line (found by a helper).
    "fn main() -> Real { let n = 1 - 3; let a = build(n, |i| 3.0);\n let b = build(length(a), |i| 0.0);\n sum(a) + sum(b) }",
    "fn main() -> Real { let n = 1 - 3; let a = build(n, |i| 3.0);\n let b = build(length(a), |i| 0.0);\n let c = build(length(b), |i| 1.0);\n sum(map(|y| y * 2.0, a)) + sum(b) + sum(c) }",
    // A negative build length, fused with a map after it.
    "fn main() -> [Real] { let n = 2 - 5; map(|y| y + 1.0, build(n, |i| to_real(i))) }",
    // `sum` of `build` and of `map2` run fused under the producer's own check.
    "fn main() -> Real { let n = 1 - 4; sum(build(n, |i| to_real(i))) }",
    "fn main() -> Real { sum(build(300000000, |i| to_real(i))) }",
    "fn main() -> Real { sum(map2(|a, b| a * b, [1.0], [2.0, 3.0])) }",
    "fn main() -> Real { let x = [1.0]; sum(build(3, |i| x[i])) }",
    // A `build` or `map2` can fail on its own, even with an inert function: it may not
    // move past a binding that fails (found by review).
    "fn main() -> [Real] { let xs = [1.0, 2.0]; let a = map2(|x, z| x + z, xs, [1.0]); let k = xs[5]; map(|y| y * k, a) }",
    "fn main() -> Real { let xs = [1.0, 2.0]; let a = build(0 - 1, |i| to_real(i)); let k = xs[5]; sum(map(|y| y * k, a)) }",
    "fn main() -> [Real] { let xs = [1.0, 2.0]; let a = map(|x| x + xs[3], xs); let b = map2(|x, z| x * z, xs, [1.0]); map(|y| y * 2.0, a) }",
    "fn main() -> ([Real], [Real]) { let xs = [1.0, 2.0]; let a = map(|x| x + xs[3], xs); let b = map2(|x, z| x * z, xs, [1.0]); (map(|y| y * 2.0, a), b) }",
    // A recursive function passed to a loop in its own body is not copied into it.
    "fn g(n: Int) -> Real { let k = 10 / n; let ys = map(g, build(n, |i| i)); let h = |i: Int| sum(ys); sumbuild(0, h) }
     fn main() -> Real { g(1) }",
    // Prelude functions used as loop functions keep their faults' attribution.
    "fn main() -> Real { sum(map2(dot, [[1.0, 2.0]], [[1.0]])) }",
    "fn main() -> [Real] { let ms = [[[1.0, 2.0], [3.0]]]; let ts = map(transpose, ms); map(|t| 1.0, ts) }",
    // `build` then index: a read out of range, below zero, and of a `build` whose
    // function would fail at another index.
    "fn main() -> Real { let x = [1.0, 2.0]; build(length(x), |i| x[i] * 2.0)[5] }",
    "fn main() -> Real { let x = [1.0, 2.0]; let k = 1 - 3; build(length(x), |i| x[i] * 2.0)[k] }",
    "fn main() -> Real { let x = [1.0, 2.0]; build(length(x), |i| x[i + 1])[0] }",
    // A backward loop of reads summed densely: its reads fail in the primal first.
    "fn main() -> [Real] { grad(|x: [Real]| sumbuild(3, |i| x[i] * x[i]), [1.0, 2.0]) }",
    // A prelude function inlined would point into the prelude.
    "fn main() -> Real { dot([1.0, 2.0], [1.0]) }",
    // Small loops unrolled: the fault at the element that fails, after those before
    // it; a literal read out of range; a slice out of range; lengths that differ.
    "fn main() -> [Int] { map(|i| 10 / (i - 2), [0, 1, 2, 3]) }",
    "fn main() -> Real { let x = [1.0, 2.0]; sumbuild(3, |i| x[2 - i] * 2.0) }",
    "fn main() -> Real { let x = [1.0, 2.0, 3.0]; x[3] + x[0] }",
    "fn main() -> Real { let x = [1.0, 2.0]; let s = slice(x, 0, 3); s[0] }",
    "fn main() -> Real { dot([1.0, 2.0, 3.0], slice([1.0, 2.0, 3.0], 1, 2)) }",
    "fn main() -> [Real] { let x = [1.0, 2.0, 3.0, 4.0]; vsub(x, [1.0, 2.0, 3.0]) }",
    // Concatenated slices: the second slice out of range, then the first.
    "fn main() -> [Int] { let c = [1, 2, 3]; let j = 2; concat(slice(c, 0, j), slice(c, j + 1, 3 - j)) }",
    "fn main() -> [Int] { let c = [1, 2, 3]; let j = 4; concat(slice(c, 0, j), slice(c, j + 1, 0)) }",
    // A scan fused into its sum: the sum's term fails at its third index, after a
    // failing read between them; a scan whose function can fail is not fused.
    "fn main() -> Real { let x = [1.0, 2.0, 3.0, 4.0, 5.0]; let k = [1, 2, 0, 4, 5]; let p = scan(|a, y| a * y, 1.0, x); sumbuild(5, |j| p[j] / to_real(10 / k[j])) }",
    "fn main() -> Real { let x = [1.0, 2.0, 3.0, 4.0, 5.0]; let p = scan(|a, y| a * y, 1.0, x); let z = x[7]; sumbuild(5, |j| p[j]) + z }",
    "fn main() -> Real { let k = [1, 2, 0, 4, 5]; let p = scan(|a, i| a + to_real(10 / i), 1.0, k); sumbuild(5, |j| p[j] * to_real(k[4 - j] - 3)) }",
    // A `build` squared by `dot` fails at its last element; a read at the loop's
    // index between them, in range (the loop's own array) or not (a shorter one).
    "fn main() -> Real { let x = [1.0, 2.0, 3.0, 4.0, 5.0]; let w = [1.0, 2.0, 3.0, 4.0, 5.0]; sumbuild(length(w), |c| { let r = build(4, |i| x[i + c]); let a = w[c]; dot(r, r) * a }) }",
    "fn main() -> Real { let x = [1.0, 2.0, 3.0, 4.0, 5.0]; let v = [1.0]; sumbuild(length(x), |c| { let r = build(5 - c, |i| x[i + c]); let a = v[c]; dot(r, r) * a }) }",
];

/// Recursive functions passed to loops in their own bodies (the code being optimised
/// must never be copied into itself), and a chain of functions whose lambdas call the
/// previous one twice (copies of copies: the growth budget keeps the optimiser linear;
/// without it the code doubled per level and 12 levels took gigabytes).
#[test]
fn recursion_and_copy_chains_are_optimised_safely() {
    let recursive = [
        "fn g(xs: [Real]) -> Real { if length(xs) <= 1 { sum(xs) } else { let halves = [slice(xs, 0, 1), slice(xs, 1, length(xs) - 1)]; sum(map(g, halves)) } }
         fn main() -> Real { g([1.0, 2.0, 3.0]) }",
        "fn g(p: (Real, Int)) -> Real { if p.1 == 0 { p.0 } else { let ys = map(|x| (x + 1.0, p.1 - 1), [p.0, p.0]); fold(|a, y| a + y, 0.0, map(g, ys)) } }
         fn main() -> Real { g((1.0, 3)) }",
    ];
    for src in recursive {
        let on = run(src, options(AdMode::Delta, FwdMode::Dual, OptLevel::On));
        let off = run(src, options(AdMode::Delta, FwdMode::Dual, OptLevel::Off));
        assert!(!on.starts_with("error"), "{src}: {on}");
        assert_eq!(on, off, "{src}");
    }
    let mut chain = String::from("fn f0(a: Real) -> Real { a * a }\n");
    for j in 1..=14 {
        chain.push_str(&format!(
            "fn f{j}(a: Real) -> Real {{ sum(map(|x| if x > 100.0 {{ f{i}(x) }} else {{ f{i}(x * a) }}, [a])) }}\n",
            i = j - 1
        ));
    }
    chain.push_str("fn main() -> Real { f14(1.0) }\n");
    let start = Instant::now();
    let on = run(&chain, options(AdMode::Delta, FwdMode::Dual, OptLevel::On));
    assert_eq!(
        on,
        run(&chain, options(AdMode::Delta, FwdMode::Dual, OptLevel::Off))
    );
    // Generous (debug build, loaded machine): the blow-up took minutes.
    assert!(start.elapsed().as_secs() < 60, "{:?}", start.elapsed());
}

#[test]
fn fusion_and_inlining_keep_the_first_error() {
    for src in FAILING_PROGRAMS {
        let on = run(src, options(AdMode::Delta, FwdMode::Dual, OptLevel::On));
        let off = run(src, options(AdMode::Delta, FwdMode::Dual, OptLevel::Off));
        assert!(on.starts_with("error"), "{src}: {on}");
        assert_eq!(on, off, "{src}");
    }
}

#[test]
fn the_optimiser_never_changes_a_result() {
    for src in DERIVATIVE_PROGRAMS {
        for &mode in AdMode::ALL {
            for &fwd in FwdMode::ALL {
                let on = run(src, options(mode, fwd, OptLevel::On));
                let off = run(src, options(mode, fwd, OptLevel::Off));
                assert!(!on.starts_with("error"), "{mode:?}/{fwd:?}: {on}\n{src}");
                assert_same(&on, &off, &format!("{mode:?}/{fwd:?}:\n{src}"));
            }
        }
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut examples: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "flx"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 10, "{examples:?}");
    for path in examples {
        let src = std::fs::read_to_string(&path).unwrap();
        let on = run(&src, options(AdMode::Delta, FwdMode::Dual, OptLevel::On));
        let off = run(&src, options(AdMode::Delta, FwdMode::Dual, OptLevel::Off));
        assert_same(&on, &off, &path.display().to_string());
    }
}

/// The same shape and the same reals to 1e-12 relative.
fn assert_same(on: &str, off: &str, what: &str) {
    let (a, b) = (parse_reals(on), parse_reals(off));
    let close = a.len() == b.len()
        && a.iter()
            .zip(&b)
            .all(|(p, q)| p.to_bits() == q.to_bits() || (p - q).abs() <= 1e-12 * (1.0 + q.abs()));
    assert!(
        skeleton(on) == skeleton(off) && close,
        "{what}: --opt 1 {on}, --opt 0 {off}"
    );
}

fn shown(src: &str, stage: &str, mode: AdMode) -> String {
    let src = src.to_string();
    let stage = stage.to_string();
    with_big_stack(move || {
        let program = compile("opt.flx", &src).unwrap_or_else(|f| panic!("{}", f.render()));
        program
            .show_optimized(&stage, Some("f"), mode, OptLevel::On)
            .unwrap()
    })
}

/// The rules firing: a projection of a tuple built here, `if` of a literal, a match on
/// a constructor built here, folding, a repeated expression; inlining (a small
/// function, a lambda used once), each fusion rule and let-floating; then derivative
/// code —
/// forward mode's pairs taken apart where they are made, and CHAD's zeros.
#[test]
fn snapshots_show_the_rules_firing() {
    insta::assert_snapshot!(
        "opt_primal_rules",
        shown(
            "enum Op { Scale(Real), Shift(Real) }
             fn f(x: Real) -> Real {
                let p = (x * 2.0, x + 1.0);
                let op = Scale(p.1);
                let y = match op { Scale(k) => k * p.0, Shift(s) => s + p.0 };
                let z = if 2 > 1 { y * (3.0 * 4.0) } else { y };
                z + x * 2.0
             }",
            "opt",
            AdMode::Delta
        )
    );
    insta::assert_snapshot!(
        "opt_inline_fuse",
        shown(
            "fn sq(x: Real) -> Real { x * x }
             fn f(xs: [Real], ys: [Real]) -> Real {
                let scale = |y: Real| y * xs[0];
                let a = sum(map(|x| sq(x) + 1.0, map(|x| sin(x), xs)));
                let b = fold(|acc, y| acc + y, 0.0, map(scale, ys));
                let c = map2(|u, v| u * v, map(|x| exp(x), xs), ys);
                let d = map(|y| y * 2.0, build(length(c), |i| to_real(i)));
                a + b + c[0] + d[1] + to_real(length(map(|y| y, ys)))
             }",
            "opt",
            AdMode::Delta
        )
    );
    // Let-floating: what a loop's lambda computes from its captures alone (here forward
    // mode's `sin`/`cos` of `s` and their tangents) is computed once, before the loop.
    insta::assert_snapshot!(
        "opt_float",
        shown(
            "fn f(xs: [Real], s: Real) -> [Real] { map(|x| x * (s * 2.0) + sin(s), xs) }",
            "fwd",
            AdMode::Delta
        )
    );
    // CHAD's map: the (value, backpropagator) array unzipped, the backpropagators'
    // array sunk into the backward pass and fused with its loop, their bodies inlined:
    // one loop of plain arithmetic, no closure per element.
    insta::assert_snapshot!(
        "opt_chad_map",
        shown(
            "fn f(xs: [Real]) -> Real { sum(map(|x| x * x, xs)) }",
            "chad",
            AdMode::Chad
        )
    );
    // CHAD's loop of reads: the backpropagators' array sunk and fused with the loop
    // that applies them, the sum of their constructors split per field (`unzip`), each
    // a sum of one-hot arrays made one dense `build` (with `i < length(ys)` where the
    // lengths are not known equal): no closure, constructor or one-hot per element.
    insta::assert_snapshot!(
        "opt_chad_reads",
        shown(
            "fn f(xs: [Real], ys: [Real]) -> Real { sumbuild(length(ys), |i| xs[i] * ys[i]) }",
            "chad",
            AdMode::Chad
        )
    );
    // `build` then index: the array is never made where the index is in range.
    insta::assert_snapshot!(
        "opt_build_index",
        shown(
            "fn f(x: [Real], k: Int) -> Real { build(length(x), |i| x[i] * 2.0)[k] }",
            "opt",
            AdMode::Delta
        )
    );
    // Small arrays: the 3-vectors of a cross product and a `build(3, ..)` become
    // scalars; the slice read at constant indices is its check only.
    insta::assert_snapshot!(
        "opt_small_arrays",
        shown(
            "fn cross(a: [Real], b: [Real]) -> [Real] {
                [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
             }
             fn f(x: [Real], p: [Real]) -> Real {
                let w = scale(2.0, slice(x, 0, 3));
                let c = cross(w, p);
                dot(build(3, |i| p[i] + c[i] * w[i]), c)
             }",
            "opt",
            AdMode::Delta
        )
    );
    // Two slices of one array in order, read by their `concat` alone: one `build`
    // reading the array, the slices their checks only.
    insta::assert_snapshot!(
        "opt_concat_of_slices",
        shown(
            "fn f(cols: [Int], j: Int) -> [Int] {
                concat(slice(cols, 0, j), slice(cols, j + 1, length(cols) - j - 1))
             }",
            "opt",
            AdMode::Delta
        )
    );
    // A scan read only by a sum over its indices: one fold of the prefix and the sum.
    insta::assert_snapshot!(
        "opt_scan_sum",
        shown(
            "fn f(x: [Real], t: Real) -> Real {
                let powers = scan(|p, _j| p * t, 1.0, range(length(x)));
                sumbuild(length(x), |j| x[j] * powers[j])
             }",
            "opt",
            AdMode::Delta
        )
    );
    let derivative =
        "fn f(x: Real, y: Real) -> Real { let p = (x * y, sin(x)); p.0 * p.1 + x * y }";
    insta::assert_snapshot!("opt_fwd", shown(derivative, "fwd", AdMode::Delta));
    insta::assert_snapshot!("opt_chad", shown(derivative, "chad", AdMode::Chad));
    insta::assert_snapshot!("opt_chad_fwd", shown(derivative, "chad-fwd", AdMode::Chad));
    // Each stage is smaller optimised than as its rules made it.
    for stage in ["fwd", "chad", "chad-fwd", "delta"] {
        let count = |opt| {
            let program =
                compile("opt.flx", derivative).unwrap_or_else(|f| panic!("{}", f.render()));
            program
                .show_optimized(stage, Some("f"), AdMode::Chad, opt)
                .unwrap()
                .matches("let ")
                .count()
        };
        let (off, on) = (count(OptLevel::Off), count(OptLevel::On));
        assert!(on < off, "{stage}: {on} bindings optimised, {off} not");
    }
}

/// Four times the program takes about four times the time: the bound (12×, median of
/// three) leaves room for noise while catching a quadratic pass (16×).
#[test]
fn the_optimiser_is_linear_in_program_size() {
    let program = |n: usize| {
        let mut src = String::from("fn f(x: Real) -> Real {\n    let a0 = x;\n");
        for i in 0..n {
            let j = i + 1;
            src.push_str(&format!(
                "    let p{j} = (a{i} * 1.5, a{i} + 2.0);\n    let q{j} = if a{i} > 0.0 {{ p{j}.0 }} else {{ p{j}.1 * (2.0 * 3.0) }};\n    let a{j} = q{j} + p{j}.0 * 1.5;\n"
            ));
        }
        src.push_str(&format!("    a{n}\n}}\n"));
        src
    };
    let time = |n: usize| {
        let src = program(n);
        with_big_stack(move || {
            let mut times: Vec<f64> = (0..3)
                .map(|_| {
                    let mut p =
                        compile("grow.flx", &src).unwrap_or_else(|f| panic!("{}", f.render()));
                    p.expand(AdMode::Delta).unwrap();
                    let start = Instant::now();
                    p.optimize(OptLevel::On).unwrap();
                    start.elapsed().as_secs_f64()
                })
                .collect();
            times.sort_by(f64::total_cmp);
            times[1]
        })
    };
    let (small, large) = (time(500), time(2000));
    assert!(
        large <= 12.0 * small.max(1e-4),
        "optimising 4x the program took {:.1}x the time ({small:.4} s, {large:.4} s)",
        large / small
    );
}

/// `%lscale(1.0, w)` is `w` (the unit partials of `+`, `-` and copies): a new user saw
/// it survive `--opt 1` in `show` output.
#[test]
fn unit_scalings_are_removed() {
    let src = "fn f(x: Real, y: Real) -> Real { x * y + sin(x) - y }";
    for (stage, mode) in [("chad", AdMode::Chad), ("delta", AdMode::Delta)] {
        let text = shown(src, stage, mode);
        assert!(!text.contains("%lscale(1.0,"), "{stage}:\n{text}");
    }
    // The values are the same: ∂/∂x = y + cos(x), ∂/∂y = x - 1.
    let (x, y) = (0.7_f64, -1.3_f64);
    for mode in [AdMode::Chad, AdMode::Delta] {
        let got = fluxion_driver::gradcheck::eval_reals(src, &format!("grad(f, ({x}, {y}))"), mode)
            .expect("runs");
        assert_eq!(got, vec![y + x.cos(), x - 1.0], "{mode:?}");
    }
}

/// `scan_sum` is a late pass (`fluxion_opt::Stage`): the primal runs the fold, while
/// the gradient differentiates the scan and the sum — a sum the native backend records
/// as one loop node, where the fold's carried sum made a chain of tape nodes, one per
/// term. Both backends give the closed form's value and gradient.
#[test]
fn scans_fuse_into_sums_after_differentiating() {
    let src = "fn f(x: [Real], t: Real) -> Real {
                   let powers = scan(|p, _j| p * t, 1.0, range(length(x)));
                   sumbuild(length(x), |j| x[j] * powers[j])
               }
               fn main() -> (Real, [Real]) {
                   let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
                   (f(x, 0.5), grad(|x: [Real]| f(x, 0.5), x))
               }";
    let opts = options(AdMode::Delta, FwdMode::default(), OptLevel::On);
    let (f, main) = with_big_stack(move || {
        let mut program = compile("late.flx", src).unwrap_or_else(|f| panic!("{}", f.render()));
        program.prepare(opts).expect("prepares");
        let m = &program.module;
        let show = |roots: &[fluxion_driver::core::CodeId]| {
            fluxion_driver::core::print::print_reachable(m, roots)
        };
        (show(&[m.functions["f"]]), show(&[m.functions["main"]]))
    });
    assert!(
        f.contains("fold(") && !f.contains("scan("),
        "the primal's fold:\n{f}"
    );
    // `main` (the gradient's translation, and `f` inlined, neither a copy: `main`
    // applies an operator): the scan (in the gradient on primals, its values
    // constants) and the recorded sum, no fold.
    assert!(
        main.contains("scan(") && main.contains("%delta_sum(") && !main.contains("fold("),
        "the gradient's scan and sum:\n{main}"
    );
    // A closed function used as a value keeps its code (operators' tables know it):
    // chosen at run time and differentiated, natively without the interpreter.
    let chosen = "fn poly(x: [Real]) -> Real {
                      let p = scan(|a, _j| a * 0.5, 1.0, range(length(x)));
                      sumbuild(length(x), |j| x[j] * p[j])
                  }
                  fn other(x: [Real]) -> Real { sum(x) }
                  fn main() -> ([Real], Real) {
                      let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
                      let f = if x[0] > 0.0 { poly } else { other };
                      (grad(f, x), poly(x))
                  }";
    for backend in [
        fluxion_driver::Backend::Interp,
        fluxion_driver::Backend::Native,
    ] {
        let out = with_big_stack(move || {
            let program =
                compile("chosen.flx", chosen).unwrap_or_else(|f| panic!("{}", f.render()));
            let out = program
                .run_with_options("main", None, RunOptions { backend, ..opts })
                .unwrap_or_else(|f| panic!("{}", f.render()));
            (out.to_literal(), out.notes)
        });
        assert_eq!(
            out.0, "([0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625], 1.875)",
            "{backend:?}"
        );
        assert!(out.1.is_empty(), "{backend:?}: {:?}", out.1);
    }
    // Σ_j x_j·t^(j+1) at t = 1/2, and its gradient t^(j+1): exact in binary.
    for backend in [
        fluxion_driver::Backend::Interp,
        fluxion_driver::Backend::Native,
    ] {
        let got = run(src, RunOptions { backend, ..opts });
        assert_eq!(
            got, "(1.875, [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625])",
            "{backend:?}"
        );
    }
}

/// A lambda capturing a closure without captures calls it as a known function, so the
/// call is inlined (`uses::known_capture_closures`): local helpers used inside a loop's
/// lambda, and the projections and negations derivative code binds once and captures
/// into its loops. The values are the same with the optimiser off.
#[test]
fn captured_closures_are_inlined() {
    let src = "fn f(xs: [Real], s: Real) -> [Real] {
                   let neg = |y: Real| -y;
                   let twice = |y: Real| neg(neg(y)) * 2.0;
                   map(|x| twice(x) * s + neg(x), xs)
               }
               fn main() -> ([Real], [Real]) {
                   let xs = [1.0, -2.0, 3.5];
                   (f(xs, 1.5), grad(|v: [Real]| sum(f(v, 1.5)), xs))
               }";
    let text = shown(src, "opt", AdMode::Delta);
    // The map's lambda is the one closure left, and it calls nothing.
    assert!(
        !text.contains("call_") && text.matches(": fn(").count() == 1,
        "no call of a captured closure is left:\n{text}"
    );
    for mode in [AdMode::Delta, AdMode::Chad] {
        let on = run(src, options(mode, FwdMode::default(), OptLevel::On));
        let off = run(src, options(mode, FwdMode::default(), OptLevel::Off));
        assert_same(&on, &off, "captured closures");
        // f(x) = 2x·s − x = 2x at s = 1.5; the gradient of its sum, 2 per element.
        assert_eq!(on, "([2.0, -4.0, 7.0], [2.0, 2.0, 2.0])");
    }
    // Loops over captured closures fuse as loops over closures bound in the code do:
    // one `map2` per row, its function both lambdas' bodies.
    let src = "fn f(xss: [[Real]]) -> [[Real]] {
                   let sq = |y: Real| y * y;
                   map(|xs| map2(|a, b| a + b, map(sq, xs), xs), xss)
               }
               fn main() -> [[Real]] { f([[1.0, 2.0], [3.0, -4.0]]) }";
    let text = shown(src, "opt", AdMode::Delta);
    assert!(
        text.matches("map2(").count() == 1 && text.matches("map(").count() == 1,
        "the row's two loops fused:\n{text}"
    );
    let on = run(
        src,
        options(AdMode::Delta, FwdMode::default(), OptLevel::On),
    );
    // x² + x per element.
    assert_eq!(on, "[[2.0, 6.0], [12.0, 12.0]]");
}
