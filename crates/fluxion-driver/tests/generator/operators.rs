//! Differential operators: `diff`, `grad` (of the whole argument, of a component, of
//! two parameters), `value_and_grad`, `jvp`, `vjp` (also pullbacks as function values),
//! `hessian` and `jacobian`; with the bookkeeping of their nesting (`enter_ad`), the
//! bounds of derivatives, and the extraction of a real from a gradient (`consume_real`).

use super::*;

impl Gen {
    /// An expression extracting one real from `e` of type `ty` (which has one):
    /// projections, indexing, and `match` for enums (0.0 for constructors without a
    /// real field).
    fn consume_real(&mut self, e: String, ty: &Ty) -> String {
        match ty {
            Real => e,
            Tuple(ts) => {
                let ks: Vec<usize> = (0..ts.len()).filter(|k| self.has_real(&ts[*k])).collect();
                let k = *self.rng.pick(&ks);
                self.consume_real(format!("{}.{k}", paren(&e)), &ts[k].clone())
            }
            Arr(t, n) => {
                let k = self.rng.below(*n);
                self.consume_real(format!("{}[{k}]", paren(&e)), t)
            }
            Enum(k) => {
                let variants = self.enums[*k].variants.clone();
                let arms: Vec<String> = variants
                    .iter()
                    .map(|(name, fs)| {
                        let reals: Vec<usize> = (0..fs.len()).filter(|j| fs[*j] == Real).collect();
                        if fs.is_empty() {
                            format!("{name} => 0.0")
                        } else if reals.is_empty() {
                            format!("{name}({}) => 0.0", vec!["_"; fs.len()].join(", "))
                        } else {
                            let j = *self.rng.pick(&reals);
                            let z = self.fresh("z");
                            let pats: Vec<String> = (0..fs.len())
                                .map(|i| if i == j { z.clone() } else { "_".into() })
                                .collect();
                            format!("{name}({}) => {z}", pats.join(", "))
                        }
                    })
                    .collect();
                format!("match {} {{ {} }}", paren(&e), arms.join(", "))
            }
            _ => unreachable!("no real in {ty:?}"),
        }
    }

    fn enter_ad(&mut self) {
        self.ad_depth += 1;
        self.ad_count += 1;
    }

    /// Bound of a derivative of a function with result bound `fb`.
    /// (`fb.g` is its gain for parameters of gain `NORMAL.g`.)
    fn deriv_bound(fb: B) -> B {
        let d = fb.g / NORMAL.g;
        B::real(d + 0.5, fb.g * (d + 1.0) + 0.5)
    }

    pub(super) fn apply_operators(
        &mut self,
        p: P,
        ty: &Ty,
        env: &mut Env,
        depth: u32,
    ) -> Option<(String, B)> {
        let d = depth - 1;
        Some(match p {
            P::Diff => {
                // `diff(F, a)`: the derivative of F: Real -> ty at a.
                self.enter_ad();
                let (fe, fb) = self.fn_arg(&func(vec![Real], ty.clone()), env, d);
                self.ad_depth -= 1;
                let (a, _) = self.nexpr(&Real, env, d);
                self.limit(format!("diff({fe}, {a})"), Self::deriv_bound(fb), ty)
            }
            P::GradWhole => {
                self.enter_ad();
                let (fe, fb) = self.fn_arg(&func(vec![ty.clone()], Real), env, d);
                self.ad_depth -= 1;
                let (a, _) = self.nexpr(ty, env, d);
                self.limit(format!("grad({fe}, {a})"), Self::deriv_bound(fb), ty)
            }
            P::GradComp | P::ValueAndGrad => {
                let vg = matches!(p, P::ValueAndGrad);
                let at = self.rand_dtype(vg && GENERATE_TANGENT_ENUMS);
                self.enter_ad();
                let (fe, fb) = self.fn_arg(&func(vec![at.clone()], Real), env, d);
                self.ad_depth -= 1;
                let (a, _) = self.nexpr(&at, env, d);
                match self.tangent(&at) {
                    Some(tt) if !vg => {
                        let e = self.consume_real(format!("grad({fe}, {a})"), &tt);
                        self.limit(e, Self::deriv_bound(fb), ty)
                    }
                    Some(tt) if self.rng.chance(0.5) => {
                        let e = self.consume_real(format!("value_and_grad({fe}, {a}).1"), &tt);
                        self.limit(e, Self::deriv_bound(fb), ty)
                    }
                    _ => (format!("value_and_grad({fe}, {a}).0"), fb),
                }
            }
            P::Jvp => {
                let at = self.rand_dtype(false);
                let bt = self.rand_dtype(false);
                let (Some(ta), Some(tb)) = (self.tangent(&at), self.tangent(&bt)) else {
                    unreachable!("rand_dtype(false) has a tangent type")
                };
                self.enter_ad();
                let (fe, fb) = self.fn_arg(&func(vec![at.clone()], bt.clone()), env, d);
                self.ad_depth -= 1;
                let (a, _) = self.nexpr(&at, env, d);
                // A tangent must have the constructors of the point: for an enum (its
                // own tangent type), the point itself is a tangent.
                let call = if matches!(at, Enum(_)) {
                    let z = self.fresh("z");
                    format!("{{ let {z} = {a}; jvp({fe}, {z}, {z}) }}")
                } else {
                    let (da, _) = self.nexpr(&ta, env, d);
                    format!("jvp({fe}, {a}, {da})")
                };
                if self.rng.chance(0.3) {
                    (self.consume_real(format!("{}.0", paren(&call)), &bt), fb)
                } else {
                    let mut b = Self::deriv_bound(fb);
                    b.m *= 4.0;
                    b.g *= 4.0;
                    let e = self.consume_real(format!("{}.1", paren(&call)), &tb);
                    self.limit(e, b, ty)
                }
            }
            P::Vjp => {
                let at = self.rand_dtype(false);
                let bt = self.rand_dtype(false);
                let (Some(ta), Some(tb)) = (self.tangent(&at), self.tangent(&bt)) else {
                    unreachable!("rand_dtype(false) has a tangent type")
                };
                self.enter_ad();
                let (fe, fb) = self.fn_arg(&func(vec![at.clone()], bt.clone()), env, d);
                self.ad_depth -= 1;
                let (a, _) = self.nexpr(&at, env, d);
                // A cotangent must have the constructors of the result: for an enum
                // (its own tangent type), the result itself is a cotangent.
                let call = if matches!(bt, Enum(_)) {
                    let z = self.fresh("z");
                    format!("{{ let {z} = vjp({fe}, {a}); {z}.1({z}.0) }}")
                } else {
                    let (ct, _) = self.nexpr(&tb, env, d);
                    format!("vjp({fe}, {a}).1({ct})")
                };
                let mut b = Self::deriv_bound(fb);
                b.m *= 4.0;
                b.g *= 4.0;
                let e = self.consume_real(call, &ta);
                self.limit(e, b, ty)
            }
            P::VjpArr => {
                let Arr(_, n) = ty else { unreachable!() };
                let at = arr(Real, *n);
                self.enter_ad();
                let (fe, fb) = self.fn_arg(&func(vec![at.clone()], Real), env, d);
                self.ad_depth -= 1;
                let (a, _) = self.nexpr(&at, env, d);
                let (ct, _) = self.nexpr(&Real, env, d);
                let mut b = Self::deriv_bound(fb);
                b.m *= 4.0;
                b.g *= 4.0;
                self.limit(format!("vjp({fe}, {a}).1({ct})"), b, ty)
            }
            P::Hessian => {
                let n = self.rng.range(1, 3);
                let at = arr(Real, n);
                self.enter_ad();
                let (fe, fb) = self.fn_arg(&func(vec![at.clone()], Real), env, d);
                self.ad_depth -= 1;
                let (a, _) = self.nexpr(&at, env, d);
                let (i, j) = (self.rng.below(n), self.rng.below(n));
                let mut b = Self::deriv_bound(Self::deriv_bound(fb));
                b.m = b.m.min(1e3);
                b.g = b.g.min(1e3);
                self.limit(format!("hessian({fe}, {a})[{i}][{j}]"), b, ty)
            }
            P::Jacobian | P::JacobianRow => {
                let n = self.rng.range(1, 3);
                let m = match ty {
                    Arr(_, m) => *m,
                    _ => self.rng.range(1, 3),
                };
                let at = arr(Real, n);
                self.enter_ad();
                let (fe, fb) = self.fn_arg(&func(vec![at.clone()], arr(Real, m)), env, d);
                self.ad_depth -= 1;
                let (a, _) = self.nexpr(&at, env, d);
                let (i, j) = (self.rng.below(m), self.rng.below(n));
                let b = Self::deriv_bound(fb);
                if matches!(p, P::Jacobian) {
                    self.limit(format!("jacobian({fe}, {a})[{i}][{j}]"), b, ty)
                } else {
                    // Column j: the derivatives of all outputs along input j.
                    self.limit(
                        format!("map(|row: [Real]| row[{j}], jacobian({fe}, {a}))"),
                        b,
                        ty,
                    )
                }
            }
            P::GradMulti => {
                let second = if self.rng.chance(0.7) { Real } else { Int };
                let ft = func(vec![Real, second.clone()], Real);
                self.enter_ad();
                // A lambda, or any function value bound to a name first (an `if`/`match`
                // choosing two-parameter lambdas as the operator's argument once did not
                // type-check: tests/corpus/regressions/grad_of_if_choosing_two_parameter_lambdas.flx).
                let lambda = self.rng.chance(0.6);
                let (fe, fb) = if lambda {
                    let annotate = self.rng.chance(0.5);
                    self.lambda(&ft, env, d, annotate, None)
                } else {
                    self.expr(&ft, env, d)
                };
                self.ad_depth -= 1;
                let (a, _) = self.nexpr(&Real, env, d);
                let (b, _) = self.nexpr(&second, env, d);
                let k = if second == Real { self.rng.below(2) } else { 0 };
                let e = if lambda {
                    format!("grad({fe}, ({a}, {b})).{k}")
                } else {
                    let z = self.fresh("z");
                    format!("{{ let {z} = {fe}; grad({z}, ({a}, {b})).{k} }}")
                };
                self.limit(e, Self::deriv_bound(fb), ty)
            }
            P::Pullback => {
                // `vjp(F, a).1`: a pullback, as a function value.
                let Ty::Fn(ps, r) = ty else { unreachable!() };
                let (at, bt) = ((**r).clone(), ps[0].clone());
                self.enter_ad();
                let (fe, fb) = self.fn_arg(&func(vec![at.clone()], bt), env, d);
                self.ad_depth -= 1;
                let (a, _) = self.nexpr(&at, env, d);
                let mut b = Self::deriv_bound(fb);
                b.m *= 4.0;
                b.g *= 4.0;
                (format!("vjp({fe}, {a}).1"), b)
            }
            _ => unreachable!(),
        })
    }
}
