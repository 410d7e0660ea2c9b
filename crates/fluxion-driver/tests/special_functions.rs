//! ψ and ψ′ within a few ulps of independent values, on both backends alike: `digamma`
//! and `trigamma` switched to their asymptotic series at x ≥ 6 with too few terms and
//! lost up to 1e-9 relative (`trigamma(6.0)` was 0.1813229555455457); every Hessian of
//! an `lgamma` model inherited it.

use fluxion_driver::gradcheck::parse_reals;
use fluxion_driver::{AdMode, Backend, RunOptions, compile, with_big_stack};

/// (x, ψ(x), ψ′(x)) by mpmath 1.3 at 200 bits (`mpmath.digamma(x)`,
/// `mpmath.psi(1, x)`), rounded to the nearest double.
const MPMATH: &[(f64, f64, f64)] = &[
    (0.25, -4.2274535333762655, 17.19732915450711),
    (0.5, -1.9635100260214235, 4.934802200544679),
    (1.0, -0.5772156649015329, 1.6449340668482264),
    (2.5, 0.7031566406452432, 0.49035775610023485),
    (5.999, 1.7059363290792255, 0.1813557513843386),
    (6.0, 1.7061176684318005, 0.18132295573711532),
    (9.5, 2.1977378764029494, 0.11099728846909904),
    (10.0, 2.251752589066721, 0.10516633568168575),
    (12.0, 2.442661679975812, 0.08690187287176838),
    (100.0, 4.600161852738087, 0.010050166663333571),
    (-0.5, 0.03648997397857652, 8.934802200544679),
    (-2.5, 1.103156640645243, 9.539246644989124),
];

/// How many ulps of `max(|want|, 1)` (ψ has a root at 1.4616…, where a relative
/// error means nothing) `got` is from `want`.
fn ulps(got: f64, want: f64) -> f64 {
    (got - want).abs() / (want.abs().max(1.0) * f64::EPSILON)
}

fn run(backend: Backend) -> Vec<f64> {
    let src = "fn main(xs: [Real]) -> ([Real], [Real]) {
                   (map(|x| digamma(x), xs), map(|x| trigamma(x), xs))
               }";
    let xs: Vec<String> = MPMATH.iter().map(|(x, _, _)| format!("{x:?}")).collect();
    let args = format!("[[{}]]", xs.join(", "));
    let options = RunOptions {
        mode: AdMode::Delta,
        backend,
        ..RunOptions::default()
    };
    with_big_stack(move || {
        let Ok(program) = compile("psi.flx", src) else {
            panic!("compiles")
        };
        match program.run_with_options("main", Some(&args), options) {
            Ok(out) => {
                assert!(out.notes.is_empty(), "{:?}", out.notes);
                parse_reals(&out.to_literal())
            }
            Err(f) => panic!("{}", f.render()),
        }
    })
}

#[test]
fn digamma_and_trigamma_are_within_a_few_ulps_on_both_backends() {
    let interp = run(Backend::Interp);
    let native = run(Backend::Native);
    assert_eq!(interp, native, "the backends differ");
    let n = MPMATH.len();
    for (i, (x, psi, psi1)) in MPMATH.iter().enumerate() {
        let (d, t) = (interp[i], interp[n + i]);
        // The reflection for x < 0 goes through tan/sin of πx: a few ulps more.
        let bound = if *x < 0.0 { 16.0 } else { 4.0 };
        assert!(
            ulps(d, *psi) <= bound,
            "digamma({x}) = {d:?}, mpmath {psi:?}"
        );
        assert!(
            ulps(t, *psi1) <= bound,
            "trigamma({x}) = {t:?}, mpmath {psi1:?}"
        );
    }
}
