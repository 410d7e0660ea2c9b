//! `--backend native`: the expanded, optimised module compiled to C and run as machine
//! code (`fluxion-native`). What the backend cannot compile runs in the interpreter
//! with a one-line note; it never fails where the interpreter would not.

use crate::abi::CallValues;
use fluxion_ad::FwdMode;
use fluxion_core::{CodeId, Module};
use fluxion_interp::Value;
use fluxion_native::{NativeError, NativeProgram, Toolchain};

/// Which evaluator runs a program (`--backend`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// The reference interpreter.
    #[default]
    Interp,
    /// C through the system compiler (`fluxion-native`).
    Native,
}

impl Backend {
    pub fn parse(s: &str) -> Option<Backend> {
        match s {
            "interp" => Some(Backend::Interp),
            "native" => Some(Backend::Native),
            _ => None,
        }
    }

    /// The spelling `parse` reads.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Interp => "interp",
            Backend::Native => "native",
        }
    }
}

/// What a native run came to.
pub(crate) enum Native {
    /// It ran: the value or the runtime error.
    Ran(Result<Value, fluxion_native::RuntimeError>),
    /// It could not be compiled; the note says why (the interpreter runs it).
    Fallback(String),
}

/// Compiles `code` of `module` (operators resolved ahead of time on a copy) and runs it
/// on `args`.
pub(crate) fn run(
    module: &Module,
    code: CodeId,
    args: &[Value],
    stack_bytes: usize,
    memory_limit: usize,
    opt: fluxion_opt::OptLevel,
    fwd: FwdMode,
) -> Native {
    match compile(module, code, &Toolchain::default(), opt, fwd) {
        Ok((program, resolved)) => {
            Native::Ran(program.call(&resolved, args, stack_bytes, memory_limit as u64))
        }
        Err(note) => Native::Fallback(note),
    }
}

/// The compiled program and the module it was compiled from, or the note of why not.
/// `module` is prepared ([`crate::Program::prepare`]: its operators resolved ahead of
/// time, for both backends); resolving again here for `code` alone does nothing more
/// unless `code` was not among the functions prepared.
pub fn compile(
    module: &Module,
    code: CodeId,
    toolchain: &Toolchain,
    opt: fluxion_opt::OptLevel,
    fwd: FwdMode,
) -> Result<(NativeProgram, Module), String> {
    let mut resolved = module.clone();
    fluxion_ad::ahead::resolve_operators(&mut resolved, &[code], opt, fwd);
    if std::env::var_os("FLUXION_DUMP_RESOLVED").is_some() {
        eprintln!(
            "{}",
            fluxion_core::print::print_reachable(&resolved, &[code])
        );
    }
    if cfg!(debug_assertions)
        && let Err(errors) = fluxion_core::verify::verify_codes_from(&resolved, 0)
    {
        return Err(format!(
            "note: running in the interpreter: internal error: Core verification failed after resolving operators:\n{}",
            fluxion_core::verify::describe(&errors)
        ));
    }
    match NativeProgram::compile(&resolved, code, toolchain) {
        Ok(p) => Ok((p, resolved)),
        Err(NativeError::Unsupported(why)) => {
            Err(format!("note: running in the interpreter: {why}"))
        }
        Err(NativeError::Toolchain(why)) if !toolchain.available() => Err(format!(
            "note: running in the interpreter: no C compiler (`{}`): {why}",
            toolchain.cc
        )),
        // The cache cannot be written (a read-only or full disk): the environment's
        // problem, not a bug.
        Err(NativeError::Toolchain(why)) if why.starts_with("cannot ") => Err(format!(
            "note: running in the interpreter: {}",
            why.lines().next().unwrap_or("")
        )),
        Err(NativeError::Toolchain(why)) => Err(format!(
            "note: running in the interpreter: the native backend failed (a bug): {}",
            why.lines().next().unwrap_or("")
        )),
    }
}
