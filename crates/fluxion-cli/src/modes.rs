//! The flags that choose the differentiation algorithms and the optimiser, shared by
//! `run` and `gradbench`.

use fluxion_driver::{AdMode, FwdMode, OptLevel};

#[derive(clap::Args)]
pub struct ModeArgs {
    /// Reverse-mode algorithm for grad, vjp, jacobian and hessian (default: delta,
    /// the fastest measured).
    #[arg(long, value_parser = ["fwd", "chad", "delta"])]
    ad: Option<String>,
    /// Forward-mode algorithm for jvp and diff: dual (dual numbers, the default) or
    /// chad (forward CHAD).
    #[arg(long, value_parser = ["dual", "chad"])]
    fwd: Option<String>,
    /// The optimiser: 1 (on, the default) or 0 (off). Values are the same either
    /// way (derivatives to rounding).
    #[arg(long, value_parser = ["0", "1"])]
    opt: Option<String>,
}

impl ModeArgs {
    /// The `--ad`, `--fwd` and `--opt` chosen (clap has checked the spellings).
    pub fn modes(&self) -> (AdMode, FwdMode, OptLevel) {
        (
            self.ad
                .as_deref()
                .and_then(AdMode::parse)
                .unwrap_or_default(),
            self.fwd
                .as_deref()
                .and_then(FwdMode::parse)
                .unwrap_or_default(),
            self.opt
                .as_deref()
                .and_then(OptLevel::parse)
                .unwrap_or_default(),
        )
    }
}
