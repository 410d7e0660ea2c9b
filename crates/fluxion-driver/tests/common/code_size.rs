//! The program family the code-size tests of both CHAD directions grow (Cor. 7.2
//! of [CHAD]: derivative code linear in the program), and how they measure it.

/// `f: [Real] -> Real` of `n` units, each a let, a tuple, a closure, a branch calling
/// it and a map.
pub fn units_program(n: usize) -> String {
    let mut src = String::from("fn f(x: [Real]) -> Real {\n    let a0 = x[0];\n");
    for i in 0..n {
        let j = i + 1;
        src.push_str(&format!(
            "    let p{j} = (a{i} * 1.5, sin(a{i}));
    let g{j} = |z: Real| z * p{j}.1 + a{i};
    let b{j} = if a{i} > 0.0 {{ g{j}(p{j}.0) }} else {{ g{j}(a{i}) * 2.0 }};
    let a{j} = sum(map(|y| y * b{j}, x)) * 0.001 + x[{}];\n",
            i % 3
        ));
    }
    src.push_str(&format!("    a{n}\n}}\n"));
    src
}

/// The bindings `show --stage STAGE --entry f` prints for `units_program(n)`.
pub fn derivative_bindings(stage: &str, mode: fluxion_driver::AdMode, n: usize) -> usize {
    let src = units_program(n);
    let stage = stage.to_string();
    let printed = fluxion_driver::with_big_stack(move || {
        let p =
            fluxion_driver::compile("size.flx", &src).unwrap_or_else(|f| panic!("{}", f.render()));
        p.show_with(&stage, Some("f"), mode).unwrap()
    });
    printed.matches("let ").count()
}
