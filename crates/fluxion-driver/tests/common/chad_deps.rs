//! A function's Jacobian pattern by each instance of the dependency analysis alone: by
//! CHAD over the Boolean semiring ([CHAD] §11.3: reverse CHAD's rules with the
//! dependency analysis as the ground interpretation, `chad_deps_code`), one backward
//! pass per output (`sparsity_by_chad_code`), and by the forward dependency layer
//! (`deps_code`), one pass of set unions (`sparsity_forward_code`). `sparsity` runs
//! one or the other by the number of outputs; the sparsity tests and the generator's
//! oracle hold all three equal.

use fluxion_driver::{AdMode, Backend, RunOptions, compile, with_big_stack};

/// The pattern of `entry: [Real] -> [Real]` of `src` at `xs` (a literal), printed as
/// `sparsity` prints it, run on `backend`, with the run's notes (a hand-over to the
/// interpreter would be one).
pub fn pattern_by_chad(
    src: &str,
    entry: &str,
    xs: &str,
    backend: Backend,
) -> Result<(String, Vec<String>), String> {
    pattern_by(src, entry, xs, backend, Instance::Reverse)
}

/// The pattern of `entry` at `xs` by the forward dependency layer alone, as
/// [`pattern_by_chad`].
#[allow(dead_code)]
pub fn pattern_by_forward(
    src: &str,
    entry: &str,
    xs: &str,
    backend: Backend,
) -> Result<(String, Vec<String>), String> {
    pattern_by(src, entry, xs, backend, Instance::Forward)
}

#[derive(Clone, Copy)]
enum Instance {
    Reverse,
    Forward,
}

fn pattern_by(
    src: &str,
    entry: &str,
    xs: &str,
    backend: Backend,
    instance: Instance,
) -> Result<(String, Vec<String>), String> {
    let (src, entry, xs) = (src.to_string(), entry.to_string(), xs.to_string());
    with_big_stack(move || {
        let mut program = compile("chad_deps.flx", &src).map_err(|f| f.render())?;
        let f = *program
            .module
            .functions
            .get(&entry)
            .ok_or_else(|| format!("no function `{entry}`"))?;
        let m = &mut program.module;
        let pattern = match instance {
            Instance::Reverse => {
                let translated = fluxion_driver::ad::chad_deps_code(m, f).map_err(|e| e.0)?;
                fluxion_driver::ad::sparsity_by_chad_code(m, translated)
            }
            Instance::Forward => {
                let translated = fluxion_driver::ad::deps_code(m, f).map_err(|e| e.0)?;
                fluxion_driver::ad::sparsity_forward_code(m, translated)
            }
        };
        program
            .module
            .functions
            .insert("pattern".to_string(), pattern);
        let options = RunOptions {
            mode: AdMode::Chad,
            backend,
            ..RunOptions::default()
        };
        program
            .run_with_options("pattern", Some(&format!("[{xs}]")), options)
            .map(|out| (out.to_literal(), out.notes))
            .map_err(|f| f.render())
    })
}
