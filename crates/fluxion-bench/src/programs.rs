//! Generated Fluxion programs of a chosen size, for measuring how compile time grows.
//!
//! Two shapes stress different things: many top-level functions (a mix of the
//! language's constructs, so that each pass sees realistic code), and one function
//! with very many `let`s (one long scope, where a name lookup that scans the scope
//! shows up as quadratic time).

use std::fmt::Write;

/// Lines of one generated function in [`many_functions`] (with its blank line).
const LINES_PER_FUNCTION: usize = 12;

/// A program of about `lines` lines: an enum and a chain of functions,
/// each using `let` patterns, a lambda, a `match`, an `if`, a differential operator
/// and a call of the previous function, and a `main` calling the last one.
pub fn many_functions(lines: usize) -> String {
    let count = lines.div_ceil(LINES_PER_FUNCTION).max(1);
    let mut src = String::from("enum Shape { Circle(Real), Rect(Real, Real) }\n\n");
    src.push_str("fn f0(x: Real, v: [Real]) -> Real { x + sum(v) }\n\n");
    for i in 1..count {
        write_function(&mut src, i);
    }
    let _ = writeln!(
        src,
        "fn main() -> Real {{ f{}(1.5, [1.0, 2.0, 3.0]) }}",
        count - 1
    );
    src
}

fn write_function(src: &mut String, i: usize) {
    let prev = i - 1;
    let _ = write!(
        src,
        "fn f{i}(x: Real, v: [Real]) -> Real {{
    let a = x * 0.5 + {i}.25;
    let (p, q) = (a, x - 1.0);
    let s = sum(map(|y| y * p + q, v));
    let m = match if a > 0.0 {{ Circle(a) }} else {{ Rect(a, q) }} {{
        Circle(r) => r * r,
        Rect(w, h) => w * h,
    }};
    let d = diff(|z| z * z * a, x);
    if s > m {{ f{prev}(x - 1.0, v) + d }} else {{ s - m }}
}}

"
    );
}

/// One function of `lets` `let`s, each using the previous variable, one bound far
/// earlier and a built-in (so names are looked up across the whole scope).
pub fn many_lets(lets: usize) -> String {
    let mut src = String::from("fn main() -> Real {\n    let x0 = 1.0;\n");
    for i in 1..lets.max(1) {
        let _ = writeln!(src, "    let x{i} = x{} * 0.5 + sin(x{});", i - 1, i / 2);
    }
    let _ = writeln!(src, "    x{}\n}}", lets.max(1) - 1);
    src
}
