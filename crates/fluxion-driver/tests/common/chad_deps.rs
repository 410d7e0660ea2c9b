//! A function's Jacobian pattern by CHAD over the Boolean semiring ([CHAD] §11.3:
//! reverse CHAD's rules with the dependency analysis as the ground interpretation,
//! `chad_deps_code`), one backward pass per output (`sparsity_by_chad_code`): what the
//! sparsity tests and the generator's oracle hold equal to `sparsity`'s.

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
    let (src, entry, xs) = (src.to_string(), entry.to_string(), xs.to_string());
    with_big_stack(move || {
        let mut program = compile("chad_deps.flx", &src).map_err(|f| f.render())?;
        let f = *program
            .module
            .functions
            .get(&entry)
            .ok_or_else(|| format!("no function `{entry}`"))?;
        let translated =
            fluxion_driver::ad::chad_deps_code(&mut program.module, f).map_err(|e| e.0)?;
        let pattern = fluxion_driver::ad::sparsity_by_chad_code(&mut program.module, translated);
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
