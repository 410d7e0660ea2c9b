//! Each eval's program through the protocol on a small input, its outputs checked
//! against values computed independently: closed forms, central finite differences
//! of the primal (through the protocol too), another `--ad` mode, or a simulation
//! written here in Rust.

mod common;

use common::{
    Rng, assert_close, evaluate, evaluate_all, finite_differences, numbers,
    scalar_finite_differences,
};
use fluxion_driver::AdMode;
use fluxion_gradbench::Config;
use serde_json::{Value as Json, json};

/// Finite differences agree with a derivative to about this (h = 1e-6).
const FD_TOL: f64 = 1e-5;

#[test]
fn hello_squares_and_doubles() {
    let out = evaluate_all(
        Config::default(),
        "hello",
        &[("square", json!(1.5)), ("double", json!(-2.25))],
    );
    assert_eq!(out, [json!(2.25), json!(-4.5)]);
}

#[test]
fn lse_gradient_is_the_softmax() {
    let x: [f64; 4] = [1.0, -2.0, 0.5, 3.0];
    let input = json!({"x": x, "min_runs": 1, "min_seconds": 0});
    let out = evaluate_all(
        Config::default(),
        "lse",
        &[("primal", input.clone()), ("gradient", input)],
    );
    let total: f64 = x.iter().map(|v| v.exp()).sum();
    assert_close("lse", &numbers(&out[0]), &[total.ln()], 1e-14);
    let softmax: Vec<f64> = x.iter().map(|v| v.exp() / total).collect();
    assert_close("gradient", &numbers(&out[1]), &softmax, 1e-14);
}

#[test]
fn llsq_gradient_matches_finite_differences_and_the_primal_its_definition() {
    let x = [0.3, -0.2, 0.1, 0.4];
    let n = 7;
    let input = json!({"x": x, "n": n});
    // y(x) = 1/2 Σ (sign(t) - Σ_j x_j t^j)², written out here.
    let expect: f64 = (0..n)
        .map(|i| {
            let t = -1.0 + i as f64 * 2.0 / (n - 1) as f64;
            let poly: f64 = x
                .iter()
                .enumerate()
                .map(|(j, xj)| xj * t.powi(j as i32))
                .sum();
            let r = t.signum() * (t != 0.0) as i32 as f64 - poly;
            r * r / 2.0
        })
        .sum();
    assert_close(
        "primal",
        &numbers(&evaluate("llsq", "primal", input.clone())),
        &[expect],
        1e-14,
    );
    let g = numbers(&evaluate("llsq", "gradient", input.clone()));
    let fd = scalar_finite_differences("llsq", "primal", &input, "/x");
    assert_close("gradient", &g, &fd, FD_TOL);
}

fn gmm_input() -> Json {
    let mut rng = Rng(7);
    let (d, k, n) = (3, 2, 4);
    let centre = |v: Vec<f64>| v.into_iter().map(|x| x - 0.5).collect::<Vec<_>>();
    json!({
        "d": d, "k": k, "n": n, "m": 1, "gamma": 1.5,
        "x": (0..n).map(|_| centre(rng.vec(d))).collect::<Vec<_>>(),
        "alpha": centre(rng.vec(k)),
        "mu": rng.matrix(k, d),
        "q": (0..k).map(|_| centre(rng.vec(d))).collect::<Vec<_>>(),
        "l": (0..k).map(|_| centre(rng.vec(d * (d - 1) / 2))).collect::<Vec<_>>(),
    })
}

#[test]
fn gmm_jacobian_matches_finite_differences_and_forward_mode() {
    let input = gmm_input();
    let jac = evaluate("gmm", "jacobian", input.clone());
    for field in ["alpha", "mu", "q", "l"] {
        let fd = scalar_finite_differences("gmm", "objective", &input, &format!("/{field}"));
        assert_close(field, &numbers(&jac[field]), &fd, FD_TOL);
    }
    let forward = Config {
        ad: AdMode::Fwd,
        ..Config::default()
    };
    let fwd = evaluate_all(forward, "gmm", &[("jacobian", input)]).remove(0);
    for field in ["alpha", "mu", "q", "l"] {
        assert_close(field, &numbers(&jac[field]), &numbers(&fwd[field]), 1e-12);
    }
}

#[test]
fn gmm_objective_matches_the_density_written_out() {
    // The log posterior from its definition (a product of mixture densities and of
    // Wishart densities), not the README's simplified form the program uses; d = 2.
    let x = [[0.1, -0.3], [0.4, 0.2], [-0.2, 0.1]];
    let alpha: [f64; 2] = [0.2, -0.1];
    let mu = [[0.0, 0.1], [0.3, -0.2]];
    let q: [[f64; 2]; 2] = [[0.1, -0.2], [0.05, 0.3]];
    let l = [[0.4], [-0.3]];
    let (m, gamma) = (2, 0.8);
    let input = json!({"d": 2, "k": 2, "n": 3, "m": m, "gamma": gamma,
        "x": x, "alpha": alpha, "mu": mu, "q": q, "l": l});
    let pi = std::f64::consts::PI;
    let phi_total: f64 = alpha.iter().map(|a| a.exp()).sum();
    // Precision P_k = Q_kᵀ Q_k for Q_k = [[e^q0, 0], [l, e^q1]].
    let precision = |k: usize| {
        let (a, b, c) = (q[k][0].exp(), l[k][0], q[k][1].exp());
        [[a * a + b * b, b * c], [b * c, c * c]]
    };
    let det2 = |p: [[f64; 2]; 2]| p[0][0] * p[1][1] - p[0][1] * p[1][0];
    let mut log_likelihood = 0.0;
    for xi in x {
        let mut density = 0.0;
        for k in 0..2 {
            let p = precision(k);
            let v = [xi[0] - mu[k][0], xi[1] - mu[k][1]];
            let quad =
                v[0] * (p[0][0] * v[0] + p[0][1] * v[1]) + v[1] * (p[1][0] * v[0] + p[1][1] * v[1]);
            density += alpha[k].exp() / phi_total * (-quad / 2.0).exp()
                / ((2.0 * pi).powi(2) / det2(p)).sqrt();
        }
        log_likelihood += density.ln();
    }
    // Wishart W_2(V = I/γ², n = 2 + m + 1) at P_k; Γ_2(a) = √π Γ(a) Γ(a - 1/2).
    let nu = (2 + m + 1) as f64;
    let gamma_fn = |a: f64| -> f64 {
        // Γ at the half-integers and integers this needs.
        match (2.0 * a).round() as i64 {
            3 => pi.sqrt() / 2.0,
            4 => 1.0,
            5 => 3.0 * pi.sqrt() / 4.0,
            6 => 2.0,
            other => panic!("Γ({}) not tabulated", other as f64 / 2.0),
        }
    };
    let multigamma = pi.sqrt() * gamma_fn(nu / 2.0) * gamma_fn(nu / 2.0 - 0.5);
    let mut log_prior = 0.0;
    for k in 0..2 {
        let p = precision(k);
        let trace = gamma * gamma * (p[0][0] + p[1][1]);
        let det_v = (1.0 / (gamma * gamma)).powi(2);
        let density = det2(p).powf((nu - 3.0) / 2.0) * (-trace / 2.0).exp()
            / (2f64.powf(nu) * det_v.powf(nu / 2.0) * multigamma);
        log_prior += density.ln();
    }
    let out = numbers(&evaluate("gmm", "objective", input));
    assert_close("log posterior", &out, &[log_likelihood + log_prior], 1e-12);
}

#[test]
fn det_and_its_gradient_are_the_determinant_and_the_cofactors() {
    let a = [
        [2.0, -1.0, 0.5, 1.0],
        [0.3, 4.0, 1.0, -2.0],
        [1.0, 0.0, 3.0, 0.7],
        [-1.0, 2.0, 0.2, 1.5],
    ];
    let flat: Vec<f64> = a.iter().flatten().copied().collect();
    let input = json!({"A": flat, "ell": 4});
    let minor = |skip_r: usize, skip_c: usize| -> f64 {
        let rows: Vec<usize> = (0..4).filter(|&r| r != skip_r).collect();
        let cols: Vec<usize> = (0..4).filter(|&c| c != skip_c).collect();
        let m = |i: usize, j: usize| a[rows[i]][cols[j]];
        m(0, 0) * (m(1, 1) * m(2, 2) - m(1, 2) * m(2, 1))
            - m(0, 1) * (m(1, 0) * m(2, 2) - m(1, 2) * m(2, 0))
            + m(0, 2) * (m(1, 0) * m(2, 1) - m(1, 1) * m(2, 0))
    };
    let cofactors: Vec<f64> = (0..16)
        .map(|k| {
            let (r, c) = (k / 4, k % 4);
            if (r + c) % 2 == 0 {
                minor(r, c)
            } else {
                -minor(r, c)
            }
        })
        .collect();
    // Expansion along the last row, with the cofactors.
    let det: f64 = (0..4).map(|c| a[3][c] * cofactors[12 + c]).sum();
    let out = evaluate_all(
        Config::default(),
        "det",
        &[("primal", input.clone()), ("gradient", input)],
    );
    assert_close("det", &numbers(&out[0]), &[det], 1e-13);
    assert_close("gradient", &numbers(&out[1]), &cofactors, 1e-13);
}

#[test]
fn kmeans_direction_is_the_newton_step_of_the_assignment() {
    let points = [[0.0, 0.0], [1.0, 0.5], [5.0, 5.0], [4.0, 6.0], [4.5, 4.0]];
    let centroids = [[0.5, 0.2], [4.0, 4.0]];
    let input = json!({"points": points, "centroids": centroids});
    // Each point's nearest centroid; the cost's gradient is 2Σ(c - p) over its points
    // and its Hessian diagonal 2·(their number).
    let dist = |p: [f64; 2], c: [f64; 2]| (p[0] - c[0]).powi(2) + (p[1] - c[1]).powi(2);
    let mut cost = 0.0;
    let mut grad = [[0.0; 2]; 2];
    let mut count = [0.0; 2];
    for p in points {
        let j = if dist(p, centroids[0]) <= dist(p, centroids[1]) {
            0
        } else {
            1
        };
        cost += dist(p, centroids[j]);
        count[j] += 1.0;
        for a in 0..2 {
            grad[j][a] += 2.0 * (centroids[j][a] - p[a]);
        }
    }
    let dir: Vec<f64> = (0..4)
        .map(|k| grad[k / 2][k % 2] / (2.0 * count[k / 2]))
        .collect();
    let out = evaluate_all(
        Config::default(),
        "kmeans",
        &[("cost", input.clone()), ("dir", input)],
    );
    assert_close("cost", &numbers(&out[0]), &[cost], 1e-14);
    assert_close("dir", &numbers(&out[1]), &dir, 1e-14);
}

#[test]
fn ode_solution_is_exact_on_polynomials_and_its_gradient_matches_finite_differences() {
    let x = [0.7, -1.2, 0.9, 1.1];
    let input = json!({"x": x, "s": 3});
    // y_0 = x0 t, y_1 = x0 x1 t²/2, y_2 = x0 x1 x2 t³/6, y_3 = … t⁴/24 at t = 2: RK4
    // integrates polynomials of degree ≤ 4 exactly.
    let mut product = 1.0;
    let exact: Vec<f64> = (0..4)
        .map(|i| {
            product *= x[i];
            let fact: f64 = (1..=i + 1).map(|k| k as f64).product();
            product * 2f64.powi(i as i32 + 1) / fact
        })
        .collect();
    assert_close(
        "primal",
        &numbers(&evaluate("ode", "primal", input.clone())),
        &exact,
        1e-13,
    );
    let g = numbers(&evaluate("ode", "gradient", input.clone()));
    let fd: Vec<f64> = finite_differences("ode", "primal", &input, "/x", |o| vec![numbers(o)[3]])
        .into_iter()
        .map(|d| d[0])
        .collect();
    assert_close("gradient", &g, &fd, FD_TOL);
}

#[test]
fn lstm_jacobian_matches_finite_differences() {
    let mut rng = Rng(11);
    let (layers, b, c) = (2, 3, 4);
    let input = json!({
        "main_params": rng.matrix(2 * layers, 4 * b),
        "extra_params": rng.matrix(3, b),
        "state": rng.matrix(2 * layers, b),
        "sequence": (0..c).map(|_| rng.vec(b).iter().map(|v| v.round()).collect::<Vec<_>>()).collect::<Vec<_>>(),
    });
    let jac = numbers(&evaluate("lstm", "jacobian", input.clone()));
    let mut fd = scalar_finite_differences("lstm", "objective", &input, "/main_params");
    fd.extend(scalar_finite_differences(
        "lstm",
        "objective",
        &input,
        "/extra_params",
    ));
    assert_close("jacobian", &jac, &fd, FD_TOL);
}

#[test]
fn ba_outputs_match_finite_differences_and_the_sparsity_pattern() {
    let (n, m, p) = (3, 4, 12);
    let input = json!({
        "n": n, "m": m, "p": p,
        "cam": [0.1, -0.2, 0.3, 1.0, -2.0, 30.0, 400.0, 5.0, -8.0, 0.08, 0.003],
        "x": [7.0, 0.5, 3.0], "w": 0.4, "feat": [270.0, 830.0],
    });
    let obj = evaluate("ba", "objective", input.clone());
    assert_eq!(obj["reproj_error"]["repeated"], p);
    assert_eq!(obj["w_err"]["repeated"], p);
    assert_close(
        "w_err",
        &numbers(&obj["w_err"]["element"]),
        &[1.0 - 0.4 * 0.4],
        1e-15,
    );
    let jac = evaluate("ba", "jacobian", input.clone());
    let errors = |o: &Json| numbers(&o["reproj_error"]["elements"]);
    // Observation 0 sees camera 0 and point 0: moving the one camera (point, weight)
    // the input duplicates moves its errors as camera 0's (point 0's, weight 0's).
    let mut columns = finite_differences("ba", "objective", &input, "/cam", errors);
    columns.extend(finite_differences("ba", "objective", &input, "/x", errors));
    columns.extend(finite_differences("ba", "objective", &input, "/w", errors));
    let vals = numbers(&jac["vals"]);
    for row in 0..2 {
        let fd: Vec<f64> = columns.iter().map(|c| c[row]).collect();
        assert_close("block", &vals[15 * row..15 * row + 15], &fd, FD_TOL);
    }
    assert_close("last", &vals[30..], &[-2.0 * 0.4], 1e-15);
    // CSR: rows of 15 entries then rows of one; camera, point, weight columns.
    let all_rows: Vec<i64> = (0..=3 * p)
        .map(|r| {
            if r <= 2 * p {
                15 * r
            } else {
                30 * p + r - 2 * p
            }
        })
        .collect();
    let rows: Vec<i64> = all_rows[..30].iter().copied().chain([31 * p]).collect();
    assert_eq!(jac["rows"], json!(rows));
    let block: Vec<i64> = (0..11)
        .chain(11 * n..11 * n + 3)
        .chain([11 * n + 3 * m])
        .collect();
    let cols: Vec<i64> = block
        .iter()
        .chain(&block)
        .copied()
        .chain([11 * n + 3 * m + p - 1])
        .collect();
    assert_eq!(jac["cols"], json!(cols));
}

/// A hand model with 22 bones (the pose parameters' layout needs them), a few
/// vertices and correspondences; with `us` when `complicated`.
fn ht_input(complicated: bool) -> Json {
    let mut rng = Rng(5);
    let bones = 22;
    let verts = 6;
    let near_identity = |rng: &mut Rng| -> Vec<Vec<f64>> {
        (0..4)
            .map(|i| {
                (0..4)
                    .map(|j| match (i, j) {
                        (3, 3) => 1.0,
                        (3, _) => 0.0,
                        _ if i == j => 1.0 + 0.1 * rng.next(),
                        _ => 0.2 * (rng.next() - 0.5),
                    })
                    .collect()
            })
            .collect()
    };
    let parents: Vec<i64> = (0..bones)
        .map(|b| if b == 0 { -1 } else { (b as i64 - 1) / 2 })
        .collect();
    let base_relatives: Vec<_> = (0..bones).map(|_| near_identity(&mut rng)).collect();
    let inverse_base_absolutes: Vec<_> = (0..bones).map(|_| near_identity(&mut rng)).collect();
    let base_positions: Vec<Vec<f64>> = (0..verts)
        .map(|_| {
            let mut v = rng.vec(3);
            v.push(1.0);
            v
        })
        .collect();
    let weights: Vec<Vec<f64>> = (0..verts).map(|_| rng.vec(bones)).collect();
    let theta: Vec<f64> = (0..26).map(|_| 0.6 * (rng.next() - 0.5)).collect();
    let correspondences = if complicated {
        vec![0, 2, 1, 2]
    } else {
        vec![5, 0, 3, 3]
    };
    let us: Vec<Vec<f64>> = if complicated {
        (0..4).map(|_| rng.vec(2)).collect()
    } else {
        vec![]
    };
    json!({
        "theta": theta,
        "us": us,
        "data": {
            "model": {
                "bone_count": bones,
                "bone_names": (0..bones).map(|b| format!("bone{b}")).collect::<Vec<_>>(),
                "parents": parents,
                "base_relatives": base_relatives,
                "inverse_base_absolutes": inverse_base_absolutes,
                "base_positions": base_positions,
                "weights": weights,
                "triangles": [[0, 1, 2], [3, 4, 5], [1, 3, 5]],
                "is_mirrored": complicated,
            },
            "correspondences": correspondences,
            "points": rng.matrix(4, 3),
        }
    })
}

#[test]
fn ht_jacobian_matches_finite_differences_in_both_variants() {
    for complicated in [false, true] {
        let input = ht_input(complicated);
        let jac: Vec<Vec<f64>> = evaluate("ht", "jacobian", input.clone())
            .as_array()
            .unwrap()
            .iter()
            .map(numbers)
            .collect();
        assert_eq!(jac.len(), 12);
        let offset = if complicated { 2 } else { 0 };
        assert!(jac.iter().all(|row| row.len() == 26 + offset));
        let theta = finite_differences("ht", "objective", &input, "/theta", numbers);
        for (c, column) in theta.iter().enumerate() {
            let ours: Vec<f64> = jac.iter().map(|row| row[offset + c]).collect();
            assert_close(&format!("theta column {c}"), &ours, column, FD_TOL);
        }
        if complicated {
            // Error 3i+j depends on us[i] only: column 0 (1) holds its derivative in
            // us[i][0] (us[i][1]).
            let us = finite_differences("ht", "objective", &input, "/us", numbers);
            for (k, column) in us.iter().enumerate() {
                let (i, c) = (k / 2, k % 2);
                for (r, row) in jac.iter().enumerate() {
                    let expect = if r / 3 == i { column[r] } else { 0.0 };
                    assert!(
                        (column[r] - expect).abs() < 1e-7,
                        "only own u moves row {r}"
                    );
                    if r / 3 == i {
                        assert_close("us column", &[row[c]], &[expect], FD_TOL);
                    }
                }
            }
        }
    }
}

#[test]
fn saddle_variants_agree_on_the_saddle_point() {
    let input = json!({"start": [1.0, 1.0], "min_runs": 1, "min_seconds": 0});
    let calls: Vec<_> = ["ff", "fr", "rf", "rr"]
        .iter()
        .map(|f| (*f, input.clone()))
        .collect();
    let out = evaluate_all(Config::default(), "saddle", &calls);
    let first = numbers(&out[0]);
    // min over p1 of max over p2 of |p1|² - |p2|² is at p1 = p2 = 0; the descents
    // stop within their 1e-5 tolerances of it.
    assert!(
        first.len() == 4 && first.iter().all(|v| v.abs() < 1e-4),
        "{first:?}"
    );
    for o in &out[1..] {
        assert_close("variant", &numbers(o), &first, 1e-10);
    }
}

/// The particle's squared x at its crossing of the x axis, for control w: the same
/// Euler integration, written here with the force -∇p in closed form.
fn crossing_squared(w: f64) -> f64 {
    let charges = [[10.0, 10.0 - w], [10.0, 0.0]];
    let force = |x: [f64; 2]| {
        let mut f = [0.0, 0.0];
        for c in charges {
            let d = [x[0] - c[0], x[1] - c[1]];
            let r3 = (d[0] * d[0] + d[1] * d[1]).powf(1.5);
            // -∇(1/r) = d / r³
            f[0] += d[0] / r3;
            f[1] += d[1] / r3;
        }
        f
    };
    let (mut x, mut v) = ([0.0, 8.0], [0.75, 0.0]);
    loop {
        let a = force(x);
        let next = [x[0] + 0.1 * v[0], x[1] + 0.1 * v[1]];
        if next[1] <= 0.0 {
            break;
        }
        x = next;
        v = [v[0] + 0.1 * a[0], v[1] + 0.1 * a[1]];
    }
    let t = -x[1] / v[1];
    (x[0] + t * v[0]).powi(2)
}

#[test]
fn particle_variants_agree_on_a_minimiser_of_the_miss() {
    let input = json!({"w": 0.0, "min_runs": 1, "min_seconds": 0});
    let calls: Vec<_> = ["ff", "fr", "rf", "rr"]
        .iter()
        .map(|f| (*f, input.clone()))
        .collect();
    let out = evaluate_all(Config::default(), "particle", &calls);
    let w = out[0].as_f64().unwrap();
    for o in &out[1..] {
        assert_close("variant", &[o.as_f64().unwrap()], &[w], 1e-10);
    }
    // The descent stopped near a minimiser of the miss: moving w either way by a
    // little more than its final step does not reduce it by much.
    let at = crossing_squared(w);
    assert!(at < crossing_squared(0.0), "{at}");
    for dw in [-1e-3, 1e-3] {
        assert!(crossing_squared(w + dw) > at - 1e-6, "w = {w}, dw = {dw}");
    }
}
