//! Operators resolved by pushing forward: `taylor`, and `jvp`, `%chad_vjp` and
//! `%delta_vjp` of a function that applies an operator itself (nested operators:
//! `hessian`, `grad` of `grad`), which the reverse layers and forward CHAD do not
//! translate — where neither a tape of tapes (`delta_twice.rs`) nor the delta
//! translation of the code as resolved (`resolve.rs::translate_delta_resolved`: reverse
//! over forward) applies. As the interpreter does at run time (`fluxion-interp/src/ad.rs`):
//!
//! ```text
//! let g = Closure(L(code), lifted captures)  -- forward_code / taylor_code of the code
//!                                            -- as written ([Delta] §4, [Taylor] §3.2)
//! jvp(f, x, dx)       = push_forward_L(g, x, dx)     -- combine, call, take apart
//! taylor(f, x, v, k)  = push_forward_Tk(g, x, v)
//! %…_vjp(f, x, w)     = vjp_by_push_forward(f, g, x, w) -- one push per coordinate
//! ```
//!
//! The translation of an operator inside `code` is the layer's own rule (the forward
//! layer carries `%delta_vjp` through as `%delta_vjp(Tf f, x, swap w)`: forward-over-
//! reverse); the translated code's operators are resolved in the next round. The
//! reverse operators by pushing forward cost one pass per input coordinate, as the
//! interpreter's `%chad_vjp` of such a function does.

use fluxion_core::{Atom, Binding, Jet, Lit, Module, Prim, Rhs, Type, TypeMap, VarId};

use super::lift::Site;
use super::resolve::Emit;

/// The bindings that compute `v = p(args)` by pushing forward, or `None` where the
/// operator stays for the interpreter (a closure that has no translation here, known
/// or chosen at run time by `%chad_of`; a function inside the argument or result; a
/// Taylor order not written as a constant).
pub(crate) fn expand(site: &mut Site, p: Prim, args: &[Atom], v: VarId) -> Option<Vec<Binding>> {
    let layer = match p {
        Prim::Taylor => match args.get(3)? {
            Atom::Lit(Lit::Int(k)) if (1..=64).contains(k) => {
                TypeMap::Taylor(Jet::series(*k as u32))
            }
            _ => return None,
        },
        // The number of directions, known where they are an array literal.
        Prim::Jet => match (args.get(3)?, literal_length(site.m, &args[2])) {
            (Atom::Lit(Lit::Int(r)), Some(k)) if (1..=64).contains(r) && k >= 1 => {
                let jet = Jet {
                    dirs: u32::try_from(k).ok()?,
                    order: *r as u32,
                };
                (jet.coefficients() <= MAX_JET_LEN).then_some(TypeMap::Taylor(jet))?
            }
            _ => return None,
        },
        // A function applying an operator itself is refused at run time (`deps.rs`).
        Prim::Sparsity if super::resolve::applies_operators(site, &args[0]) => return None,
        Prim::Sparsity => TypeMap::Deps,
        Prim::Jvp | Prim::ChadVjp | Prim::DeltaVjp => TypeMap::Fwd,
        _ => return None,
    };
    let fty = site.m.atom_ty(&args[0]);
    let Type::Fn(params, ret) = &fty else {
        return None;
    };
    if params.iter().chain([&**ret]).any(|t| site.m.can_hold_fn(t)) {
        return None;
    }
    let mut lifts = Vec::new();
    // `sparsity` of a closure CHAD translates: by reverse passes too, for few outputs.
    let reverse = match p {
        Prim::Sparsity => super::resolve::chad_deps_closure(site, args[0], &mut lifts),
        _ => None,
    };
    let (make, _, _) = site.closure(args[0], layer, &mut lifts, 0)?;
    let lfty = site.m.map_type(&fty, layer);
    let span = site.span;
    let mut e = Emit {
        m: site.m,
        out: lifts,
        span,
    };
    let g = e.bind("pushed_f", lfty, make);
    let rhs = match p {
        Prim::Jvp | Prim::Taylor => {
            let code = crate::push_forward::push_forward_code(e.m, layer, &fty);
            Rhs::CallDirect(code, vec![g, args[1], args[2]])
        }
        Prim::Sparsity => match reverse {
            Some((make_rev, rev_ty)) => {
                let rev = e.bind("reverse_f", rev_ty.clone(), make_rev);
                let code = crate::deps::sparsity_either_code(e.m, &rev_ty);
                Rhs::CallDirect(code, vec![args[0], g, rev, args[1]])
            }
            None => {
                let code = crate::deps::sparsity_code(e.m);
                Rhs::CallDirect(code, vec![g, args[1]])
            }
        },
        Prim::Jet => {
            let TypeMap::Taylor(jet) = layer else {
                unreachable!("a jet's layer")
            };
            let code = crate::push_jet::push_jet_code(e.m, jet, &fty);
            Rhs::CallDirect(code, vec![g, args[1], args[2]])
        }
        _ => {
            let code = crate::push_forward::vjp_by_push_forward(e.m, &fty);
            Rhs::CallDirect(code, vec![args[0], g, args[1], args[2]])
        }
    };
    e.out.push(Binding { var: v, rhs, span });
    Some(e.out)
}

/// The most coefficients a jet translated ahead of time may have (a larger one stays
/// for the interpreter, which checks it).
const MAX_JET_LEN: usize = 1 << 16;

/// The length of the array `a` where it is an array literal (through copies).
fn literal_length(m: &Module, a: &Atom) -> Option<usize> {
    let &Atom::Var(mut v) = a else { return None };
    for _ in 0..16 {
        let mut found = None;
        for c in &m.codes {
            fluxion_core::visit::for_each_binding(&c.body, &mut |b| {
                if b.var == v {
                    found = Some(b.rhs.clone());
                }
            });
            if found.is_some() {
                break;
            }
        }
        match found? {
            Rhs::Array(elems) => return Some(elems.len()),
            Rhs::Atom(Atom::Var(w)) => v = w,
            _ => return None,
        }
    }
    None
}
