//! Array constructs: literals, `build`, `map`, `map2`, `scan`, `reverse`, `concat`,
//! `slice`, `replicate`, `range`, `zip`, indexing (also of `zip`), `fold`, `scan(...)[k]`,
//! `iterate`, reductions (`sum`, `sumbuild`, `length`, `dot`, `norm2`, `logsumexp`,
//! `mean`) and the other prelude functions on arrays (`softmax`, `vadd`, `scale`, `vmul`,
//! `matvec`).

use super::*;

impl Gen {
    pub(super) fn apply_arrays(
        &mut self,
        p: P,
        ty: &Ty,
        env: &mut Env,
        depth: u32,
    ) -> Option<(String, B)> {
        let d = depth - 1;
        Some(match p {
            P::Index => {
                let n = self.rng.range(1, 4);
                let (e, b) = self.expr(&arr(ty.clone(), n), env, d);
                let idx: Vec<String> = (0..env.len())
                    .filter(|i| env[*i].range.is_some_and(|r| r <= n) && visible(env, *i))
                    .map(|i| env[i].name.clone())
                    .collect();
                let k = if !idx.is_empty() && self.rng.chance(0.5) {
                    self.rng.pick(&idx).clone()
                } else {
                    self.rng.below(n).to_string()
                };
                (format!("{}[{k}]", paren(&e)), b)
            }
            P::Fold | P::ScanIndex => {
                let e = self.rand_ty(1);
                let n = self.rng.range(1, 4);
                let (fe, fb) = self.fn_arg(&func(vec![ty.clone(), e.clone()], ty.clone()), env, d);
                let (fe, _) = self.norm(fe, fb, &func(vec![ty.clone(), e.clone()], ty.clone()));
                let (init, _) = self.nexpr(ty, env, d);
                let (a, _) = self.nexpr(&arr(e, n), env, d);
                if matches!(p, P::Fold) {
                    (format!("fold({fe}, {init}, {a})"), NORMAL)
                } else {
                    let k = self.rng.below(n);
                    (format!("scan({fe}, {init}, {a})[{k}]"), NORMAL)
                }
            }
            P::Iterate => {
                let n = self.rng.range(0, 4);
                let ft = func(vec![ty.clone()], ty.clone());
                let (fe, fb) = self.fn_arg(&ft, env, d);
                let (fe, _) = self.norm(fe, fb, &ft);
                let (init, _) = self.nexpr(ty, env, d);
                (format!("iterate({n}, {fe}, {init})"), NORMAL)
            }
            P::SumReal => {
                let n = self.rng.range(1, 4);
                let (a, b) = self.expr(&arr(Real, n), env, d);
                let n = n as f64;
                self.limit(format!("sum({a})"), B::real(b.m * n, b.g * n), &Real)
            }
            P::SumBuild => {
                // Now and then at least 8 elements: natively a loop node (and, for a
                // sum inside one, an inner sum: `delta_loop.rs`), whose bits the
                // interpreter's must be.
                let n = if self.rng.below(6) == 0 {
                    self.rng.range(8, 10)
                } else {
                    self.rng.range(1, 4)
                };
                let (l, b) = self.lambda(&func(vec![Int], Real), env, d + 1, false, Some(n));
                let nf = n as f64;
                self.limit(
                    format!("sumbuild({n}, {l})"),
                    B::real(b.m * nf, b.g * nf),
                    &Real,
                )
            }
            P::PreludeReal => {
                let n = self.rng.range(1, 3);
                let (a, ab) = self.nexpr(&arr(Real, n), env, d);
                let nf = n as f64;
                let (e, b) = match self.rng.below(4) {
                    0 => {
                        let (c, _) = self.nexpr(&arr(Real, n), env, d);
                        (format!("dot({a}, {c})"), B::real(16.0 * nf, 32.0 * nf))
                    }
                    1 => (format!("norm2({a})"), B::real(16.0 * nf, 32.0 * nf)),
                    2 => (format!("logsumexp({a})"), B::real(ab.m + nf, ab.g)),
                    _ => (format!("mean({a})"), ab),
                };
                self.limit(e, b, &Real)
            }
            P::IntLength => {
                let t = self.rand_ty(1);
                let n = self.rng.range(1, 4);
                let (a, _) = self.expr(&arr(t, n), env, d);
                (format!("length({a})"), B::int(n as f64))
            }
            P::IntSum => {
                let n = self.rng.range(1, 4);
                let (a, b) = self.expr(&arr(Int, n), env, d);
                self.limit(format!("sum({a})"), B::int(b.i * n as f64), &Int)
            }
            P::ZipIndex => {
                let Tuple(ts) = ty else { unreachable!() };
                let n = self.rng.range(1, 3);
                let (a, ab) = self.expr(&arr(ts[0].clone(), n), env, d);
                let (b, bb) = self.expr(&arr(ts[1].clone(), n), env, d);
                let k = self.rng.below(n);
                (format!("zip({a}, {b})[{k}]"), ab.max(bb))
            }
            P::SumRows => {
                // Elementwise sum of an array of tuples (or arrays) of reals.
                let n = self.rng.range(1, 3);
                let (a, b) = self.expr(&arr(ty.clone(), n), env, d);
                let nf = n as f64;
                self.limit(format!("sum({a})"), B::real(b.m * nf, b.g * nf), ty)
            }
            P::ArrLit => {
                let Arr(t, n) = ty else { unreachable!() };
                let mut parts = Vec::new();
                let mut b = B::ZERO;
                for _ in 0..*n {
                    let (p, pb) = self.expr(t, env, d);
                    parts.push(p);
                    b = b.max(pb);
                }
                (format!("[{}]", parts.join(", ")), b)
            }
            P::Map => {
                let Arr(t, n) = ty else { unreachable!() };
                let s = self.rand_ty(1);
                let (fe, fb) = self.fn_arg(&func(vec![s.clone()], (**t).clone()), env, d);
                let (a, _) = self.nexpr(&arr(s, *n), env, d);
                (format!("map({fe}, {a})"), fb)
            }
            P::Map2 => {
                let Arr(t, n) = ty else { unreachable!() };
                let s1 = self.rand_ty(1);
                let s2 = self.rand_ty(1);
                let (fe, fb) =
                    self.fn_arg(&func(vec![s1.clone(), s2.clone()], (**t).clone()), env, d);
                let (a, _) = self.nexpr(&arr(s1, *n), env, d);
                let (b, _) = self.nexpr(&arr(s2, *n), env, d);
                (format!("map2({fe}, {a}, {b})"), fb)
            }
            P::Build => {
                let Arr(t, n) = ty else { unreachable!() };
                let annotate = self.rng.chance(0.5);
                let (l, b) = self.lambda(
                    &func(vec![Int], (**t).clone()),
                    env,
                    d + 1,
                    annotate,
                    Some(*n),
                );
                if self.rng.chance(0.2) {
                    // The length as an expression.
                    let (a, _) = self.leaf(&arr(Real, *n), env);
                    (format!("build(length({a}), {l})"), b)
                } else {
                    (format!("build({n}, {l})"), b)
                }
            }
            P::Scan => {
                let Arr(t, n) = ty else { unreachable!() };
                let t = (**t).clone();
                let e = self.rand_ty(1);
                let ft = func(vec![t.clone(), e.clone()], t.clone());
                let (fe, fb) = self.fn_arg(&ft, env, d);
                let (fe, _) = self.norm(fe, fb, &ft);
                let (init, _) = self.nexpr(&t, env, d);
                let (a, _) = self.nexpr(&arr(e, *n), env, d);
                (format!("scan({fe}, {init}, {a})"), NORMAL)
            }
            P::Reverse => {
                let (a, b) = self.expr(ty, env, d);
                (format!("reverse({a})"), b)
            }
            P::Concat => {
                let Arr(t, n) = ty else { unreachable!() };
                let k = self.rng.range(1, n - 1);
                let (a, ab) = self.expr(&arr((**t).clone(), k), env, d);
                let (b, bb) = self.expr(&arr((**t).clone(), n - k), env, d);
                (format!("concat({a}, {b})"), ab.max(bb))
            }
            P::Slice => {
                let Arr(t, n) = ty else { unreachable!() };
                let m = n + self.rng.range(0, 2);
                let start = self.rng.range(0, m - n);
                let (a, b) = self.expr(&arr((**t).clone(), m), env, d);
                (format!("slice({a}, {start}, {n})"), b)
            }
            P::Replicate => {
                let Arr(t, n) = ty else { unreachable!() };
                let (a, b) = self.expr(t, env, d);
                (format!("replicate({n}, {a})"), b)
            }
            P::Range => {
                let Arr(_, n) = ty else { unreachable!() };
                (format!("range({n})"), B::int(*n as f64))
            }
            P::Zip => {
                let Arr(t, n) = ty else { unreachable!() };
                let Tuple(ts) = &**t else { unreachable!() };
                let (a, ab) = self.expr(&arr(ts[0].clone(), *n), env, d);
                let (b, bb) = self.expr(&arr(ts[1].clone(), *n), env, d);
                (format!("zip({a}, {b})"), ab.max(bb))
            }
            P::PreludeArr => {
                let Arr(_, n) = ty else { unreachable!() };
                let (a, ab) = self.nexpr(ty, env, d);
                match self.rng.below(5) {
                    0 => (format!("softmax({a})"), B::real(1.0, 2.0 * ab.g)),
                    1 => {
                        let (b, bb) = self.nexpr(ty, env, d);
                        (format!("vadd({a}, {b})"), B::real(8.0, ab.g + bb.g))
                    }
                    2 => {
                        let (s, _) = self.nexpr(&Real, env, d);
                        self.limit(format!("scale({s}, {a})"), B::real(16.0, 32.0), ty)
                    }
                    3 => {
                        let (b, _) = self.nexpr(ty, env, d);
                        self.limit(format!("vmul({a}, {b})"), B::real(16.0, 32.0), ty)
                    }
                    _ => {
                        let k = self.rng.range(1, 3);
                        let (m, _) = self.nexpr(&arr(arr(Real, k), *n), env, d);
                        let (v, _) = self.nexpr(&arr(Real, k), env, d);
                        let kf = k as f64;
                        self.limit(
                            format!("matvec({m}, {v})"),
                            B::real(16.0 * kf, 32.0 * kf),
                            ty,
                        )
                    }
                }
            }
            _ => unreachable!(),
        })
    }
}
