//! Every function GradBench evaluates compiles natively, in each reverse mode: the
//! tool would otherwise run it in the interpreter without saying so (`Session`
//! evaluates a function natively where `compile_native` succeeds). The nested,
//! higher-order evals (`saddle`, `particle`) are the ones that did not (issue 31).

use fluxion_driver::native_backend::Toolchain;
use fluxion_driver::{AdMode, FwdMode, OptLevel, RunOptions};
use fluxion_gradbench::programs;

/// The functions each eval asks for (GradBench's `evals/<eval>/README.md`).
const FUNCTIONS: &[(&str, &[&str])] = &[
    ("hello", &["square", "double"]),
    ("lse", &["primal", "gradient"]),
    ("llsq", &["primal", "gradient"]),
    ("gmm", &["objective", "jacobian"]),
    ("lstm", &["objective", "jacobian"]),
    ("det", &["primal", "gradient"]),
    ("ode", &["primal", "gradient"]),
    ("kmeans", &["cost", "dir"]),
    ("ba", &["objective", "jacobian"]),
    ("ht", &["objective", "jacobian"]),
    ("saddle", &["ff", "fr", "rf", "rr"]),
    ("particle", &["ff", "fr", "rf", "rr"]),
];

#[test]
fn every_evaluated_function_compiles_natively() {
    let toolchain = Toolchain::default();
    if !toolchain.available() {
        eprintln!("no C compiler: skipped");
        return;
    }
    let mut failed = Vec::new();
    for mode in [AdMode::Delta, AdMode::Chad] {
        for (eval, functions) in FUNCTIONS {
            let (file, text) = programs::source(eval, None).expect("a built-in program");
            let Ok(mut program) = fluxion_driver::compile(&file, &text) else {
                panic!("{eval} compiles")
            };
            let options = RunOptions {
                mode,
                ..RunOptions::default()
            };
            program.prepare(options).expect("prepares");
            let m = &program.module;
            for f in *functions {
                let code = fluxion_gradbench::user_function(m, f)
                    .unwrap_or_else(|| panic!("{eval} has `{f}`"));
                if let Err(e) =
                    fluxion_driver::compile_native(m, code, &toolchain, OptLevel::On, FwdMode::Dual)
                {
                    failed.push(format!("{eval}::{f} under {mode:?}: {e:?}"));
                }
            }
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
