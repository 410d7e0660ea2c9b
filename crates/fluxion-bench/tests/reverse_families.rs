//! The programs of the reverse-mode table (`fluxion-bench delta`) are differentiable
//! as written: in every AD mode built, `grad(f, x)` matches central differences, at
//! a small size (the straight-line family with blocks of 5, so that its fold runs
//! several blocks).

use fluxion_bench::programs::{Family, family_input, straight_line};
use fluxion_driver::AdMode;
use fluxion_driver::gradcheck::check_gradient;

const N: usize = 20;

#[test]
fn every_family_has_the_right_gradient_in_every_mode() {
    let x = family_input(N);
    for family in Family::ALL {
        let src = match family {
            Family::StraightLine => straight_line(5),
            _ => family.source(N),
        };
        for mode in AdMode::implemented() {
            check_gradient(&src, "f", &x, mode)
                .unwrap_or_else(|e| panic!("{} ({mode:?}): {e}", family.name()));
        }
    }
}
