//! Binding and control constructs: `let` (also of tuple patterns), `if`, `match` on
//! `Int`s and on tuples, tuple literals and projections; and the patterns that bind
//! variables (`bind_pattern`).

use super::*;

impl Gen {
    /// A pattern binding a value of type `ty`: a name, or for tuples sometimes a tuple
    /// pattern (with `_` for some components). Pushes the bound variables.
    pub(super) fn bind_pattern(
        &mut self,
        ty: &Ty,
        b: B,
        range: Option<usize>,
        env: &mut Env,
    ) -> String {
        if let Tuple(ts) = ty
            && self.rng.chance(0.3)
        {
            let parts: Vec<String> = ts
                .iter()
                .map(|t| {
                    if self.rng.chance(0.2) {
                        "_".to_string()
                    } else {
                        self.bind_pattern(t, b, None, env)
                    }
                })
                .collect();
            return format!("({})", parts.join(", "));
        }
        let name = self.fresh("v");
        env.push(Var {
            name: name.clone(),
            ty: ty.clone(),
            b,
            range,
        });
        name
    }

    pub(super) fn apply_control(
        &mut self,
        p: P,
        ty: &Ty,
        env: &mut Env,
        depth: u32,
    ) -> Option<(String, B)> {
        let d = depth - 1;
        Some(match p {
            P::Let => {
                let t = self.rand_ty(2);
                // A function may be an unannotated lambda, whose parameter types are
                // inferred from the uses (or from the `let`'s annotation if unused).
                let bare = matches!(t, Ty::Fn(..)) && self.rng.chance(0.3);
                let (e, b) = if bare {
                    self.lambda(&t, env, d, false, None)
                } else {
                    self.expr(&t, env, d)
                };
                // Sometimes shadow a variable in scope (possibly with another type).
                let name = if !env.is_empty() && self.rng.chance(0.1) {
                    env[self.rng.below(env.len())].name.clone()
                } else {
                    self.fresh("v")
                };
                let annot = if self.rng.chance(0.3) {
                    format!(": {}", self.render_ty(&t))
                } else {
                    String::new()
                };
                let mark = env.len();
                env.push(Var {
                    name: name.clone(),
                    ty: t.clone(),
                    b,
                    range: None,
                });
                let (body, bb) = self.expr(ty, env, d);
                env.truncate(mark);
                let annot = if bare && !mentions(&body, &name) {
                    format!(": {}", self.render_ty(&t))
                } else {
                    annot
                };
                (format!("{{ let {name}{annot} = {e}; {body} }}"), bb)
            }
            P::LetTuple => {
                let n = self.rng.range(2, 3);
                let t = Tuple((0..n).map(|_| self.rand_ty(1)).collect());
                let (e, b) = self.expr(&t, env, d);
                let mark = env.len();
                let mut pat = self.bind_pattern(&t, b, None, env);
                if !pat.starts_with('(') {
                    // Always destructure here.
                    env.truncate(mark);
                    let Tuple(ts) = &t else { unreachable!() };
                    let names: Vec<String> = ts
                        .iter()
                        .map(|c| self.bind_pattern(c, b, None, env))
                        .collect();
                    pat = format!("({})", names.join(", "));
                }
                let (body, bb) = self.expr(ty, env, d);
                env.truncate(mark);
                (format!("{{ let {pat} = {e}; {body} }}"), bb)
            }
            P::If => {
                let (c, _) = self.expr(&Bool, env, d);
                let (a, ab) = self.expr(ty, env, d);
                let (b, bb) = self.expr(ty, env, d);
                let c = paren(&c);
                if self.rng.chance(0.2) {
                    let (c2, _) = self.expr(&Bool, env, d);
                    let (e, eb) = self.expr(ty, env, d);
                    (
                        format!(
                            "if {c} {{ {a} }} else if {} {{ {b} }} else {{ {e} }}",
                            paren(&c2)
                        ),
                        ab.max(bb).max(eb),
                    )
                } else {
                    (format!("if {c} {{ {a} }} else {{ {b} }}"), ab.max(bb))
                }
            }
            P::MatchInt => {
                let (s, _) = self.expr(&Int, env, d);
                let mut arms = Vec::new();
                let mut bb = B::ZERO;
                let mut lits: Vec<i64> = (0..self.rng.range(1, 2))
                    .map(|_| self.rng.range(0, 4) as i64)
                    .collect();
                lits.dedup();
                for l in lits {
                    let (e, b) = self.expr(ty, env, d);
                    bb = bb.max(b);
                    arms.push(format!("{l} => {e}"));
                }
                let mark = env.len();
                let last = if self.rng.chance(0.5) {
                    "_".to_string()
                } else {
                    self.bind_pattern(&Int, B::int(50.0), None, env)
                };
                let (e, b) = self.expr(ty, env, d);
                env.truncate(mark);
                arms.push(format!("{last} => {e}"));
                (
                    format!("match {} {{ {} }}", paren(&s), arms.join(", ")),
                    bb.max(b),
                )
            }
            P::MatchTuple => {
                let (i, ib) = self.expr(&Int, env, d);
                let (c, _) = self.expr(&Bool, env, d);
                let l = self.rng.range(0, 3);
                let (e1, b1) = self.expr(ty, env, d);
                let (e2, b2) = self.expr(ty, env, d);
                let mark = env.len();
                let k = self.bind_pattern(&Int, ib, None, env);
                let bv = self.bind_pattern(&Bool, B::ZERO, None, env);
                let (e3, b3) = self.expr(ty, env, d);
                env.truncate(mark);
                (
                    format!(
                        "match ({i}, {c}) {{ ({l}, true) => {e1}, (_, false) => {e2}, ({k}, {bv}) => {e3} }}"
                    ),
                    b1.max(b2).max(b3),
                )
            }
            P::Proj => {
                let n = self.rng.range(2, 3);
                let k = self.rng.below(n);
                let ts: Vec<Ty> = (0..n)
                    .map(|j| if j == k { ty.clone() } else { self.rand_ty(1) })
                    .collect();
                let (e, b) = self.expr(&Tuple(ts), env, d);
                (format!("{}.{k}", paren(&e)), b)
            }
            P::TupleLit => {
                let Tuple(ts) = ty else { unreachable!() };
                let mut parts = Vec::new();
                let mut b = B::ZERO;
                for t in ts {
                    let (p, pb) = self.expr(t, env, d);
                    parts.push(p);
                    b = b.max(pb);
                }
                (format!("({})", parts.join(", ")), b)
            }
            _ => unreachable!(),
        })
    }
}
