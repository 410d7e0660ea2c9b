//! Functions: lambdas (also as function-typed arguments of built-ins), function values
//! and their application, top-level helper functions (plain and recursive), and the deep
//! recursion `deep`.

use super::*;

impl Gen {
    /// A function-typed argument of a built-in: often a lambda, whose parameter
    /// annotations may then be left to inference.
    pub(super) fn fn_arg(&mut self, ty: &Ty, env: &mut Env, depth: u32) -> (String, B) {
        if self.rng.chance(0.6) {
            let annotate = self.rng.chance(0.5);
            self.lambda(ty, env, depth, annotate, None)
        } else {
            self.expr(ty, env, depth)
        }
    }

    /// `|p: P, ...| body` of function type `ty`. `index`: the first parameter is an
    /// index known to be in `0..n` (for `build`).
    pub(super) fn lambda(
        &mut self,
        ty: &Ty,
        env: &mut Env,
        depth: u32,
        annotate: bool,
        index: Option<usize>,
    ) -> (String, B) {
        let Ty::Fn(ps, r) = ty else { unreachable!() };
        let mark = env.len();
        let mut params = Vec::new();
        for (j, p) in ps.iter().enumerate() {
            let range = if j == 0 { index } else { None };
            let b = match range {
                Some(n) => B::int(n as f64),
                None => NORMAL,
            };
            let pat = self.bind_pattern(p, b, range, env);
            if annotate {
                params.push(format!("{pat}: {}", self.render_ty(p)));
            } else {
                params.push(pat);
            }
        }
        // The body should use a parameter (else derivatives and folds are trivial):
        // retry a few times, dropping what a try defined.
        let names: Vec<String> = env[mark..].iter().map(|v| v.name.clone()).collect();
        let saved = self.snapshot();
        let mut tries = 0;
        let (body, b) = loop {
            let (body, b) = self.expr(r, env, depth.saturating_sub(1));
            tries += 1;
            if tries == 3 || names.is_empty() || names.iter().any(|n| mentions(&body, n)) {
                break (body, b);
            }
            self.restore(&saved);
        };
        env.truncate(mark);
        (format!("|{}| {body}", params.join(", ")), b)
    }

    pub(super) fn apply_closures(
        &mut self,
        p: P,
        ty: &Ty,
        env: &mut Env,
        depth: u32,
    ) -> Option<(String, B)> {
        let d = depth - 1;
        Some(match p {
            P::CallClosure => {
                let n = self.rng.range(1, 2);
                let ps: Vec<Ty> = (0..n).map(|_| self.rand_ty(1)).collect();
                let (fe, fb) = self.expr(&func(ps.clone(), ty.clone()), env, d);
                let args: Vec<String> = ps.iter().map(|t| self.nexpr(t, env, d).0).collect();
                (format!("{}({})", paren(&fe), args.join(", ")), fb)
            }
            P::CallHelper => {
                let (name, params, b) = self.helper_returning(ty, d)?;
                let args: Vec<String> = params.iter().map(|t| self.nexpr(t, env, d).0).collect();
                (format!("{name}({})", args.join(", ")), b)
            }
            P::CallRec => {
                if self.helpers.len() >= MAX_HELPERS {
                    return None;
                }
                let (name, params) = self.rec_helper(ty, d);
                let n = self.rng.range(0, 4);
                let args: Vec<String> = params.iter().map(|t| self.nexpr(t, env, d).0).collect();
                (format!("{name}({n}, {})", args.join(", ")), NORMAL)
            }
            P::Lambda => {
                let annotate = true;
                self.lambda(ty, env, depth, annotate, None)
            }
            P::HelperRef => {
                let Ty::Fn(ps, r) = ty else { unreachable!() };
                if let Some(h) = self
                    .helpers
                    .iter()
                    .find(|h| h.callable && h.params == *ps && h.ret == **r)
                {
                    return Some((h.name.clone(), h.b));
                }
                if self.helpers.len() >= MAX_HELPERS {
                    return None;
                }
                let (name, b) = self.new_helper(ps.clone(), r, d);
                (name, b)
            }
            P::CallDeep => {
                // Deep (non-tail) recursion: a contraction iterated hundreds of times.
                // Rare, as it is slow.
                if !self.rng.chance(0.15) {
                    return None;
                }
                if !self.deep {
                    self.deep = true;
                    let mut env = vec![Var {
                        name: "y".into(),
                        ty: Real,
                        b: NORMAL,
                        range: None,
                    }];
                    let saved = self.ad_depth;
                    self.ad_depth = MAX_AD_DEPTH;
                    let (step, _) = self.nexpr(&Real, &mut env, 2);
                    self.ad_depth = saved;
                    self.fns.push(format!(
                        "fn deep(n: Int, y: Real) -> Real {{\n    if n <= 0 {{ y }} else {{ 0.999 * deep(n - 1, y) + 0.001 * {step} }}\n}}"
                    ));
                }
                let n = *self.rng.pick(&[200, 1000]);
                let (a, _) = self.nexpr(&Real, env, d);
                (format!("deep({n}, {a})"), NORMAL)
            }
            _ => unreachable!(),
        })
    }

    // ----- top-level helpers -----

    /// A helper function returning `ret`: an existing one or a new one. Returns its
    /// name, parameter types and result bound.
    fn helper_returning(&mut self, ret: &Ty, depth: u32) -> Option<(String, Vec<Ty>, B)> {
        let existing: Vec<usize> = (0..self.helpers.len())
            .filter(|k| self.helpers[*k].callable && self.helpers[*k].ret == *ret)
            .collect();
        if !existing.is_empty() && (self.rng.chance(0.5) || self.helpers.len() >= MAX_HELPERS) {
            let h = &self.helpers[*self.rng.pick(&existing)];
            return Some((h.name.clone(), h.params.clone(), h.b));
        }
        if self.helpers.len() >= MAX_HELPERS {
            return None;
        }
        let n = self.rng.range(1, 3);
        let params: Vec<Ty> = (0..n).map(|_| self.rand_ty(2)).collect();
        let (name, b) = self.new_helper(params.clone(), ret, depth);
        Some((name, params, b))
    }

    /// Defines `fn hN(params) -> ret` with a generated body.
    fn new_helper(&mut self, params: Vec<Ty>, ret: &Ty, depth: u32) -> (String, B) {
        let name = self.fresh("h");
        // Reserve the slot so that nested helper creation counts it.
        self.helpers.push(Helper {
            name: name.clone(),
            params: vec![],
            ret: Unit,
            b: B::ZERO,
            callable: false,
        });
        let slot = self.helpers.len() - 1;
        let saved = (self.ad_depth, self.ad_count);
        let mut env = Env::new();
        let ps: Vec<String> = params
            .iter()
            .map(|t| {
                let pat = self.bind_pattern(t, NORMAL, None, &mut env);
                format!("{pat}: {}", self.render_ty(t))
            })
            .collect();
        self.ad_depth = 0;
        let (body, b) = self.expr(ret, &mut env, depth);
        self.ad_depth = saved.0;
        let text = format!(
            "fn {name}({}) -> {} {{\n    {body}\n}}",
            ps.join(", "),
            self.render_ty(ret)
        );
        self.fns.push(text);
        self.helpers[slot] = Helper {
            name: name.clone(),
            params,
            ret: ret.clone(),
            b,
            callable: true,
        };
        (name, b)
    }

    /// Defines a recursive `fn rN(n: Int, p: P) -> ret` with a decreasing counter; the
    /// result is normalised (so the recursion keeps the bounds).
    fn rec_helper(&mut self, ret: &Ty, depth: u32) -> (String, Vec<Ty>) {
        let name = self.fresh("r");
        self.helpers.push(Helper {
            name: name.clone(),
            params: vec![],
            ret: Unit,
            b: B::ZERO,
            callable: false,
        });
        let p = self.rand_ty(1);
        let mut env = Env::new();
        let n = self.fresh("n");
        env.push(Var {
            name: n.clone(),
            ty: Int,
            b: B::int(4.0),
            range: None,
        });
        let pat = self.bind_pattern(&p, NORMAL, None, &mut env);
        let saved = self.ad_depth;
        self.ad_depth = 0;
        let (base, _) = self.nexpr(ret, &mut env, depth);
        let (arg, _) = self.nexpr(&p, &mut env, depth);
        let r = self.fresh("v");
        let mark = env.len();
        env.push(Var {
            name: r.clone(),
            ty: ret.clone(),
            b: NORMAL,
            range: None,
        });
        let (step, _) = self.nexpr(ret, &mut env, depth);
        env.truncate(mark);
        self.ad_depth = saved;
        let cond = if self.rng.chance(0.5) {
            format!("{n} <= 0")
        } else {
            format!("{n} < 1")
        };
        let text = format!(
            "fn {name}({n}: Int, {pat}: {}) -> {} {{\n    if {cond} {{ {base} }} else {{ let {r} = {name}({n} - 1, {arg}); {step} }}\n}}",
            self.render_ty(&p),
            self.render_ty(ret),
        );
        self.fns.push(text);
        (name, vec![p])
    }
}
