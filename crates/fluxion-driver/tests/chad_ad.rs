//! Reverse CHAD (`--ad chad`, [CHAD]): the reverse-mode suite
//! (`common/reverse_suite.rs`) under CHAD — the paper's worked examples, every
//! construct against `--ad fwd`, finite differences and the transpose identity,
//! nesting, and the linear-time stress programs.

const MODE_UNDER_TEST: fluxion_driver::AdMode = fluxion_driver::AdMode::Chad;

#[path = "common/programs.rs"]
mod programs;

include!("common/reverse_suite.rs");

#[path = "common/code_size.rs"]
mod code_size;

// CHAD's own cases: the paper's worked examples, the copower (function cotangents),
// and the size of the derivative code.

/// Fig. 1(b) ([CHAD] §2.3): `s = sin((x1·x4 + 2·x2)·x3 + x4)`; the paper's gradient,
/// with `w` the argument of `sin`: `(x3·x4·cos w, 2·x3·cos w, (x1·x4 + 2·x2)·cos w,
/// (x1·x3 + 1)·cos w)` — the copy of `x4` becomes the `+` in the last entry.
#[test]
fn paper_figure_1b_straight_line_reverse() {
    let src = "fn s(x1: Real, x2: Real, x3: Real, x4: Real) -> Real {
                   let y = x1 * x4 + 2.0 * x2;
                   let z = y * x3;
                   let w = z + x4;
                   sin(w)
               }";
    let (x1, x2, x3, x4) = (0.3_f64, -1.1_f64, 0.7_f64, 1.9_f64);
    let y = x1 * x4 + 2.0 * x2;
    let w = y * x3 + x4;
    let want = [
        x3 * x4 * w.cos(),
        2.0 * x3 * w.cos(),
        y * w.cos(),
        (x1 * x3 + 1.0) * w.cos(),
    ];
    agree_with(
        src,
        &format!("grad(s, ({x1}, {x2}, {x3}, {x4}))"),
        &want,
        1e-12,
    );
}

/// Fig. 2(b) ([CHAD] §2.7): `f = \x2i. x1·x2i; ys = map f x2; w = sum ys`; the
/// gradient is `(Σᵢ x2ᵢ, (x1, …, x1))`: `x1` reaches `w` only through the closure, so
/// its cotangent is the copower of `f`'s calls folded into `f`'s captures.
#[test]
fn paper_figure_2b_map_of_a_closure() {
    let src = "fn w(x1: Real, x2: [Real]) -> Real {
                   let f = |x2i: Real| x1 * x2i;
                   sum(map(f, x2))
               }";
    let (x1, x2) = (1.5_f64, [0.5_f64, -2.0, 4.25]);
    let mut want = vec![x2.iter().sum::<f64>()];
    want.extend([x1; 3]);
    agree_with(
        src,
        &format!("grad(w, ({x1}, {}))", literal(&x2)),
        &want,
        0.0,
    );
}

/// Function cotangents (the copower): a closure called several times, with equal
/// arguments, stored in tuples and chosen by branches, capturing closures, returned
/// from functions, applied by higher-order built-ins and by recursion — each against
/// finite differences and fwd.
#[test]
fn closures_in_every_position() {
    let programs = [
        "fn f(x: [Real]) -> Real { let g = |z: Real| x[0] * z; g(2.0) + g(2.0) + g(x[1]) * g(x[1]) }",
        "fn f(x: [Real]) -> Real {
             let g = |z: Real| x[0] * z;
             let h = |z: Real| g(z) + g(x[1]) * z;
             h(x[2]) * h(2.0)
         }",
        "fn f(x: [Real]) -> Real {
             let p = if x[0] > 0.0 { (|z: Real| x[1] * z, x[2]) } else { (|z: Real| z, 2.0) };
             p.0(x[2]) * p.1
         }",
        "fn adder(k: Real) -> fn(Real) -> Real { |z| k * z + sin(k) }
         fn f(x: [Real]) -> Real { let a = adder(x[0]); a(x[1]) + a(a(x[2])) }",
        "fn f(x: [Real]) -> Real {
             let gs = [|z: Real| x[0] * z, |z: Real| x[1] + z, |z: Real| z * z];
             fold(|acc, g| g(acc), x[2], gs) + map(|g| g(x[0]), gs)[1]
         }",
        "fn twice(g: fn(Real) -> Real, z: Real) -> Real { g(g(z)) }
         fn f(x: [Real]) -> Real { twice(|z| x[0] * z + x[1], x[2]) }",
        "fn pow_by(g: fn(Real) -> Real, n: Int, z: Real) -> Real {
             if n == 0 { z } else { pow_by(g, n - 1, g(z)) }
         }
         fn f(x: [Real]) -> Real { pow_by(|z| x[0] * sin(z), 5, x[1]) + x[2] }",
        "enum Op { Scale(Real), Apply(fn(Real) -> Real) }
         fn run(op: Op, z: Real) -> Real { match op { Scale(k) => k * z, Apply(g) => g(z) } }
         fn f(x: [Real]) -> Real { run(Scale(x[0]), x[1]) + run(Apply(|z| z * x[2]), x[0]) }",
        "fn f(x: [Real]) -> Real {
             let k = x[0];
             sumbuild(3, |i| x[i] * k) + scan(|a, y| a * y + k, 1.0, x)[2]
                 + iterate(3, |z| z * k, x[1])
         }",
    ];
    let x = [0.8, -0.45, 1.3];
    for src in programs {
        check_gradient(src, "f", &x, AdMode::Chad).unwrap_or_else(|e| panic!("[rev] {src}:\n{e}"));
        agree(src, &format!("grad(f, {})", literal(&x)));
    }
}

/// A cotangent that is zero at run time but not statically: two `map`s whose bodies
/// take a constant branch at every element make arrays of zero cotangents, added
/// lazily, which force to the symbolic zero (no length). The transposes of `concat`
/// (`%lslice`) and of `slice` (`%lembed`, forced when the gradient is made dense) read
/// that zero; they failed with "%lslice out of range" and "an embedded cotangent out
/// of range" (the run-time side of the forward CHAD fix, which `%lindex` needed). With
/// every element positive, f = (k + 2k)·x0 for the k elements mapped: 15·x0 and 6·x0.
#[test]
fn cotangents_that_are_zero_at_run_time_through_concat_and_slice() {
    let programs = [("concat(x, slice(x, 0, 2))", 15.0), ("slice(x, 0, 2)", 6.0)];
    let x = [0.5, 1.0, 2.0];
    for (array, k) in programs {
        let src = format!(
            "fn f(x: [Real]) -> Real {{
                 let c = {array};
                 let u = map(|n: Real| if n > 0.0 {{ 1.0 }} else {{ n }}, c);
                 let v = map(|n: Real| if n > 0.0 {{ 2.0 }} else {{ n }}, c);
                 (sum(u) + sum(v)) * x[0]
             }}"
        );
        check_gradient(&src, "f", &x, AdMode::Chad)
            .unwrap_or_else(|e| panic!("[rev] {array}:\n{e}"));
        agree_with(
            &src,
            &format!("grad(f, {})", literal(&x)),
            &[k, 0.0, 0.0],
            0.0,
        );
    }
}

/// Corollary 7.2 ([CHAD] §7.6): the derivative code grows linearly with the program.
/// A unit using every kind of construct (arithmetic, a tuple, a closure called twice,
/// an `if`, a `map`, indexing) repeated n and 2n times: twice the program, at most a
/// tenth more than twice the derivative code, and at most 40 bindings per source line.
#[test]
fn derivative_code_grows_linearly() {
    let size = |n: usize| code_size::derivative_bindings("chad", AdMode::Chad, n);
    let (small, large) = (size(50), size(100));
    assert!(
        (large as f64) <= 2.1 * small as f64,
        "derivative code of 2n units is {large} bindings, of n units {small}"
    );
    assert!(
        small <= 40 * 4 * 50,
        "{small} bindings for 200 source lines"
    );
    // And the program still differentiates correctly.
    check_gradient(
        &code_size::units_program(5),
        "f",
        &[0.3, -0.2, 0.9],
        AdMode::Chad,
    )
    .unwrap();
}

/// CHAD has no Jacobian primitive: `jacobian` is one pullback per output, or, with
/// fewer inputs than outputs, one JVP per input (the cheaper direction, as
/// `%delta_jacobian`'s sweeps; ht's errors in its 26 pose parameters took a reverse
/// pass per error, 300 to 2,400 of them). A tall Jacobian is then `--ad fwd`'s, bit
/// for bit (the same JVPs), a wide one the rows of `vjp` (the same pullbacks); both
/// match central differences.
#[test]
fn jacobian_takes_the_direction_with_fewer_passes() {
    let src = "fn tall(x: [Real]) -> [Real] {
                   build(7, |i| sin(x[i % 3] * to_real(i + 1)) * x[(i + 1) % 3] + exp(0.1 * x[2] * to_real(i)))
               }
               fn wide(x: [Real]) -> [Real] {
                   [sum(map(|v| v * v * v, x)), x[0] * x[6] - sin(x[3])]
               }";
    let x3 = "[0.3, -0.7, 1.1]";
    let x7 = "[0.3, -0.7, 1.1, 0.5, -0.2, 0.9, 1.4]";
    let tall = format!("jacobian(tall, {x3})");
    let chad = delta(src, &tall);
    assert_eq!(chad, reference(src, &tall), "a tall Jacobian by JVPs");
    let wide = format!("jacobian(wide, {x7})");
    let rows = format!(
        "build(2, |i| vjp(wide, {x7}).1(build(2, |j| if i == j {{ 1.0 }} else {{ 0.0 }})))"
    );
    assert_eq!(
        delta(src, &wide),
        delta(src, &rows),
        "a wide Jacobian by pullbacks"
    );
    // Central differences of step 6e-6: truncation and rounding near 1e-10 on these
    // values of order one, far inside 1e-6.
    for (f, x, n) in [("tall", x3, 3), ("wide", x7, 7)] {
        let got = parse_reals(&delta(src, &format!("jacobian({f}, {x})")));
        let cols = fd_jacobian(src, f, &parse_reals(x)).expect("differences");
        let m = cols[0].len();
        assert_eq!(got.len(), m * n, "{f}");
        let want: Vec<f64> = (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| cols[j][i])
            .collect();
        assert_reals_close(&got, &want, 1e-6, f);
    }
}
