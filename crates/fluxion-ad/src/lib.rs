//! Core → Core differentiation (see ARCHITECTURE.md, "fluxion-ad").
//!
//! Shared layers, which know no transformation:
//! - `builder` (emitting Core), `helpers` (generated per-type helper codes);
//! - `calculus` — the one table of primitive calculus: partials and series rules;
//! - `jets` — truncated power-series arithmetic (the series rules);
//! - `tangent` — zero and plus of every tangent type, with a symbolic zero;
//! - `coordinates` — coordinates of tangent spaces (`tdim`, `tbasis`, ...);
//! - `layer` — memo keys and `primal(v)` of translated values;
//! - `structural` — the structure-preserving translation skeleton;
//! - `pullback_by_jvps` — `wᵀ·J` and the Jacobian by one JVP per coordinate;
//! - `push_forward` — the run time's `jvp`/`taylor` steps (lift, combine, take apart)
//!   as Core, for resolving them ahead of time.
//!
//! Transformations, each one module over those layers:
//! - [`forward_code`] (`forward`) — dual numbers; [`taylor_code`] (`taylor`) — jets;
//!   [`delta_code`] (`delta`) — dual numbers with deltas (reverse mode, [Delta]);
//!   [`chad_code`] (`chad`) — reverse CHAD ([CHAD]);
//! - [`expand_module`] (`expand`) — the operators other than `jvp`/`taylor`, by the
//!   chosen [`AdMode`]'s algorithm (`mode`; `fwd_mode` is `--ad fwd`, `delta_mode`
//!   is `--ad delta`, `chad_mode` is `--ad chad`; `pullback_by_jvps` is the pullback
//!   and Jacobian by JVPs, `vjp_primitive` the operators through one run-time vjp
//!   primitive).
//!
//! Invariants: passes read and write Core only; every real primitive's calculus comes
//! from `calculus.rs`; generated code is ordinary Core (it passes the verifier and can
//! itself be transformed).

mod activity;
pub mod ahead;
mod builder;
mod calculus;
mod chad;
mod chad_fwd;
mod chad_mode;
mod chad_sweep;
mod coordinates;
mod delta;
mod delta_mode;
mod delta_twice;
mod deps;
pub mod expand;
mod forward;
mod fwd_mode;
mod helpers;
mod jets;
mod layer;
mod mixed_jets;
mod mode;
mod pullback_by_jvps;
mod push_forward;
mod push_jet;
mod sparse_jacobian;
mod structural;
mod tangent;
mod taylor;
mod vjp_primitive;

pub use chad::{chad_code, chad_deps_code};
pub use chad_fwd::chad_fwd_code;
pub use chad_sweep::unsupported as chad_unsupported;
pub use delta::delta_code;
pub use deps::{deps_code, sparsity_by_chad_code, sparsity_code, sparsity_forward_code};
pub use expand::expand_module;
pub use forward::forward_code;
pub use layer::is_translated;
pub use mode::{AdMode, FwdMode};
pub use pullback_by_jvps::vjp_by_forward;
pub use push_jet::push_jet_code;
pub use taylor::taylor_code;

/// `code`'s translation by the layer `map` (memoised per code and layer): the one
/// dispatch from a layer to its transformation, for the ahead-of-time resolution, the
/// interpreter's run-time translations and `show`.
pub fn translate_code(
    m: &mut fluxion_core::Module,
    code: fluxion_core::CodeId,
    map: fluxion_core::TypeMap,
) -> Result<fluxion_core::CodeId, AdError> {
    use fluxion_core::TypeMap;
    match map {
        TypeMap::Fwd => forward_code(m, code),
        TypeMap::Taylor(jet) => taylor_code(m, code, jet),
        TypeMap::Deps => deps_code(m, code),
        TypeMap::Delta => delta_code(m, code),
        TypeMap::Chad => chad_code(m, code),
        TypeMap::ChadFwd => chad_fwd_code(m, code),
        TypeMap::Tangent => Err(AdError::new(
            "internal error: the tangent map translates no code",
        )),
    }
}

/// [`translate_code`] of a forward layer (forward, Taylor) with the captures at
/// positions `primal` passed as primals, where `code`'s analysis keeps them so
/// (`activity::stays_primal`): the translated code and the positions taken.
pub(crate) fn translate_code_primal_captures(
    m: &mut fluxion_core::Module,
    code: fluxion_core::CodeId,
    map: fluxion_core::TypeMap,
    candidates: &[usize],
) -> Result<(fluxion_core::CodeId, Vec<usize>), AdError> {
    use fluxion_core::TypeMap;
    let memo = activity::Memo::default();
    let captures: Vec<usize> = (candidates.iter().copied())
        .filter(|i| activity::stays_primal(m, map, code, activity::Input::Capture(*i), &memo))
        .collect();
    let primal = structural::PrimalInputs {
        captures,
        params: Vec::new(),
    };
    let t = match map {
        TypeMap::Fwd => structural::translate_code_with(m, code, &forward::Forward, None, &primal)?,
        TypeMap::Taylor(jet) => {
            structural::translate_code_with(m, code, &taylor::Taylor(jet), None, &primal)?
        }
        TypeMap::Delta => structural::translate_code_with(m, code, &delta::Delta, None, &primal)?,
        _ => return Ok((translate_code(m, code, map)?, Vec::new())),
    };
    Ok((t, primal.captures))
}

/// A program the transformation cannot handle (reported as a runtime error where the
/// operator was applied, or at the span given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdError(pub String, pub Option<fluxion_core::Span>);

impl AdError {
    pub fn new(message: impl Into<String>) -> AdError {
        AdError(message.into(), None)
    }

    pub fn at(span: fluxion_core::Span, message: impl Into<String>) -> AdError {
        AdError(message.into(), Some(span))
    }
}

#[cfg(test)]
mod layering {
    /// The transformations and their sources: each depends on the shared layers only,
    /// never on another transformation (so a reverse mode is added without touching
    /// forward or Taylor code).
    const TRANSFORMATIONS: &[(&str, &str)] = &[
        ("forward", include_str!("forward.rs")),
        ("taylor", include_str!("taylor.rs")),
        ("fwd_mode", include_str!("fwd_mode.rs")),
        ("delta", include_str!("delta.rs")),
        ("delta_mode", include_str!("delta_mode.rs")),
        ("chad", include_str!("chad.rs")),
        ("chad_fwd", include_str!("chad_fwd.rs")),
        ("chad_mode", include_str!("chad_mode.rs")),
        ("expand", include_str!("expand.rs")),
    ];

    /// The shared layers, which name no transformation (`mode.rs` names the algorithms
    /// in its registry, one line each, and nothing else of them).
    const SHARED: &[(&str, &str)] = &[
        ("builder", include_str!("builder.rs")),
        ("chad_sweep", include_str!("chad_sweep.rs")),
        ("calculus", include_str!("calculus.rs")),
        ("coordinates", include_str!("coordinates.rs")),
        ("helpers", include_str!("helpers.rs")),
        ("jets", include_str!("jets.rs")),
        ("layer", include_str!("layer.rs")),
        ("pullback_by_jvps", include_str!("pullback_by_jvps.rs")),
        ("push_forward", include_str!("push_forward.rs")),
        ("vjp_primitive", include_str!("vjp_primitive.rs")),
        ("structural", include_str!("structural.rs")),
        ("tangent", include_str!("tangent.rs")),
    ];

    fn uses(src: &str, module: &str) -> bool {
        src.contains(&format!("crate::{module}::")) || src.contains(&format!("crate::{module};"))
    }

    #[test]
    fn transformations_depend_on_shared_layers_only() {
        for (name, src) in TRANSFORMATIONS.iter().chain(SHARED) {
            for (other, _) in TRANSFORMATIONS {
                assert!(
                    name == other || !uses(src, other),
                    "`{name}` depends on the transformation `{other}`"
                );
            }
        }
        let mode = include_str!("mode.rs");
        for (other, _) in TRANSFORMATIONS {
            let mentions = mode.matches(&format!("crate::{other}::")).count();
            assert!(mentions <= 1, "mode.rs names `{other}` {mentions} times");
        }
    }
}
