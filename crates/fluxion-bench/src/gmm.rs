//! GradBench's GMM problem for `fluxion-bench gmm`: deterministic data, and the
//! objective in plain Rust, written independently of the Fluxion version
//! ([`crate::programs::GMM`]) to check its value (and, by finite differences, the
//! gradients of every AD mode).

use fluxion_driver::interp::Value;

use crate::harness::{real_rows, reals};

/// One GMM problem: the parameters (the gradient's inputs) and the data.
#[derive(Clone, Debug)]
pub struct Gmm {
    pub d: usize,
    pub k: usize,
    pub n: usize,
    pub alphas: Vec<f64>,
    pub means: Vec<Vec<f64>>,
    /// Per component: d log-diagonal entries, then the strict lower triangle of Q
    /// column by column (d(d+1)/2 entries).
    pub icf: Vec<Vec<f64>>,
    pub x: Vec<Vec<f64>>,
    pub gamma: f64,
    pub m: i64,
}

/// splitmix64: a small deterministic generator (the data need only be fixed).
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

impl Gmm {
    /// Data distributed as GradBench generates them (its generator, not its numbers):
    /// alphas, icf and x standard normal, means uniform in (0, 1), γ = 1, m = 0.
    pub fn generate(d: usize, k: usize, n: usize, seed: u64) -> Gmm {
        let mut rng = Rng(seed);
        let icf_len = d * (d + 1) / 2;
        let alphas = (0..k).map(|_| rng.normal()).collect();
        let means = (0..k)
            .map(|_| (0..d).map(|_| rng.uniform()).collect())
            .collect();
        let icf = (0..k)
            .map(|_| (0..icf_len).map(|_| rng.normal()).collect())
            .collect();
        let x = (0..n)
            .map(|_| (0..d).map(|_| rng.normal()).collect())
            .collect();
        Gmm {
            d,
            k,
            n,
            alphas,
            means,
            icf,
            x,
            gamma: 1.0,
            m: 0,
        }
    }

    /// The number of parameters: k + kd + k·d(d+1)/2.
    pub fn parameters(&self) -> usize {
        self.k + self.k * self.d + self.k * self.d * (self.d + 1) / 2
    }

    /// The arguments of the entries `primal` and `gradient` of [`crate::programs::GMM`].
    pub fn args(&self) -> Vec<Value> {
        vec![
            reals(&self.alphas),
            real_rows(&self.means),
            real_rows(&self.icf),
            real_rows(&self.x),
            Value::Real(self.gamma),
            Value::Int(self.m),
        ]
    }

    /// The arguments of the entry `tangent`: [`Gmm::args`] and the direction, given
    /// flat in the gradient's order (alphas, then means row by row, then icf).
    pub fn tangent_args(&self, direction: &[f64]) -> Vec<Value> {
        assert_eq!(direction.len(), self.parameters());
        let (da, rest) = direction.split_at(self.k);
        let (dmu, dq) = rest.split_at(self.k * self.d);
        let rows = |flat: &[f64], width: usize| -> Vec<Vec<f64>> {
            flat.chunks(width).map(<[f64]>::to_vec).collect()
        };
        let mut args = self.args();
        args.push(reals(da));
        args.push(real_rows(&rows(dmu, self.d)));
        args.push(real_rows(&rows(dq, self.d * (self.d + 1) / 2)));
        args
    }

    /// The parameters flat, in the gradient's order.
    pub fn flat_parameters(&self) -> Vec<f64> {
        let mut p = self.alphas.clone();
        self.means.iter().for_each(|r| p.extend(r));
        self.icf.iter().for_each(|r| p.extend(r));
        p
    }

    /// The same problem with the parameters replaced by `flat` (the gradient's order).
    pub fn with_parameters(&self, flat: &[f64]) -> Gmm {
        let mut g = self.clone();
        let mut it = flat.iter().copied();
        let mut take = |row: &mut Vec<f64>| row.iter_mut().for_each(|v| *v = it.next().unwrap());
        take(&mut g.alphas);
        g.means.iter_mut().for_each(&mut take);
        g.icf.iter_mut().for_each(&mut take);
        g
    }

    /// The objective, in plain Rust (the loops of the formula, nothing shared with the
    /// Fluxion source).
    // The formula's subscripts, as written: index loops read closest to it.
    #[allow(clippy::needless_range_loop)]
    pub fn objective(&self) -> f64 {
        let (d, k, n) = (self.d, self.k, self.n);
        let mut sum_qs = vec![0.0; k];
        let mut qdiags = vec![vec![0.0; d]; k];
        for c in 0..k {
            for j in 0..d {
                sum_qs[c] += self.icf[c][j];
                qdiags[c][j] = self.icf[c][j].exp();
            }
        }
        let mut slse = 0.0;
        let mut terms = vec![0.0; k];
        let mut xc = vec![0.0; d];
        let mut qx = vec![0.0; d];
        for xi in &self.x {
            for c in 0..k {
                for j in 0..d {
                    xc[j] = xi[j] - self.means[c][j];
                    qx[j] = qdiags[c][j] * xc[j];
                }
                // The strict lower triangle, column by column.
                let mut idx = d;
                for col in 0..d {
                    for row in col + 1..d {
                        qx[row] += self.icf[c][idx] * xc[col];
                        idx += 1;
                    }
                }
                let sq: f64 = qx.iter().map(|v| v * v).sum();
                terms[c] = self.alphas[c] + sum_qs[c] - 0.5 * sq;
            }
            slse += logsumexp(&terms);
        }
        let pi = std::f64::consts::PI;
        let n_w = d as i64 + self.m + 1;
        let mut prior = 0.0;
        for c in 0..k {
            let frob: f64 = qdiags[c].iter().map(|q| q * q).sum::<f64>()
                + self.icf[c][d..].iter().map(|l| l * l).sum::<f64>();
            prior += 0.5 * self.gamma * self.gamma * frob - self.m as f64 * sum_qs[c];
        }
        let p = d as f64;
        let log_gamma_d = 0.25 * p * (p - 1.0) * pi.ln()
            + (1..=d)
                .map(|j| lgamma(0.5 * n_w as f64 + 0.5 * (1.0 - j as f64)))
                .sum::<f64>();
        let c_w = (n_w as f64) * p * (self.gamma.ln() - 0.5 * 2f64.ln()) - log_gamma_d;
        let constant = -(n as f64) * p * 0.5 * (2.0 * pi).ln();
        constant + slse - n as f64 * logsumexp(&self.alphas) + prior - k as f64 * c_w
    }
}

fn logsumexp(v: &[f64]) -> f64 {
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// log Γ(x) for x > 0: Lanczos (g = 7, 9 terms), accurate to about 1e-15 relative;
/// the prior needs it only at half-integers ≥ 1/2.
fn lgamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - lgamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Bench, flatten_reals};
    use crate::programs::GMM;
    use fluxion_driver::{AdMode, with_big_stack};

    #[test]
    fn lgamma_matches_known_values() {
        let sqrt_pi = std::f64::consts::PI.sqrt();
        for (x, expected) in [
            (0.5, sqrt_pi.ln()),
            (1.0, 0.0),
            (2.0, 0.0),
            (5.5, (52.342_777_784_553_52f64).ln()),
            (6.0, 120f64.ln()),
        ] {
            assert!((lgamma(x) - expected).abs() < 1e-13, "lgamma({x})");
        }
    }

    /// The Fluxion objective against the plain-Rust one, at GradBench's d and k (few
    /// points, for a debug build) and at a small odd shape.
    #[test]
    fn fluxion_objective_matches_plain_rust() {
        for (d, k, n) in [(10, 25, 12), (3, 4, 30), (1, 2, 5)] {
            let g = Gmm::generate(d, k, n, 7);
            let expected = g.objective();
            let got = with_big_stack(move || {
                let bench = Bench::new(GMM, AdMode::Fwd).unwrap();
                match bench.call("primal", &g.args()).unwrap() {
                    Value::Real(v) => v,
                    other => panic!("not a real: {other:?}"),
                }
            });
            let rel = (got - expected).abs() / expected.abs().max(1.0);
            assert!(
                rel < 1e-12,
                "d={d} k={k} n={n}: Fluxion {got}, Rust {expected}"
            );
        }
    }

    /// Every AD mode built: the gradient against central differences of the plain-Rust
    /// objective, and `tangent` (one forward pass) against the gradient.
    #[test]
    fn gradients_match_finite_differences_of_plain_rust() {
        let g = Gmm::generate(3, 2, 6, 11);
        let p = g.flat_parameters();
        let fd: Vec<f64> = (0..p.len())
            .map(|j| {
                let h = 1e-5 * p[j].abs().max(1.0);
                let (mut plus, mut minus) = (p.clone(), p.clone());
                plus[j] += h;
                minus[j] -= h;
                (g.with_parameters(&plus).objective() - g.with_parameters(&minus).objective())
                    / (2.0 * h)
            })
            .collect();
        let direction: Vec<f64> = (0..p.len()).map(|j| ((j * 7 % 5) as f64) - 2.0).collect();
        let along: f64 = fd.iter().zip(&direction).map(|(a, b)| a * b).sum();
        for mode in AdMode::implemented() {
            let (g, direction) = (g.clone(), direction.clone());
            let (grad, tangent) = with_big_stack(move || {
                let bench = Bench::new(GMM, mode).unwrap();
                let grad = flatten_reals(&bench.call("gradient", &g.args()).unwrap());
                let tangent =
                    flatten_reals(&bench.call("tangent", &g.tangent_args(&direction)).unwrap());
                (grad, tangent)
            });
            assert_eq!(grad.len(), fd.len(), "{mode:?}");
            for (j, (a, b)) in grad.iter().zip(&fd).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                    "{mode:?}: d/dp{j}: AD {a}, finite differences {b}"
                );
            }
            assert!(
                (tangent[0] - along).abs() <= 1e-5 * (1.0 + along.abs()),
                "{mode:?}: jvp {}, finite differences {along}",
                tangent[0]
            );
        }
    }
}
