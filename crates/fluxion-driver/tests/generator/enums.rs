//! Enums: their types (user enums and the recursive list enum `Lst`), constructors,
//! `match` on them (with nested patterns for `Lst`), and the list functions `lst_from`,
//! `lst_map` and `lst_fold`.

use super::*;

impl Gen {
    /// An enum type: an existing one, the list enum, or a new one.
    pub(super) fn enum_ty(&mut self, level: u32) -> Ty {
        if self.rng.chance(0.3) {
            return Enum(self.list_enum());
        }
        if !self.enums.is_empty() && (self.rng.chance(0.6) || self.n_user_enums() >= MAX_ENUMS) {
            let users: Vec<usize> = (0..self.enums.len())
                .filter(|k| self.list.as_ref().is_none_or(|l| l.id != *k))
                .collect();
            if !users.is_empty() {
                return Enum(*self.rng.pick(&users));
            }
        }
        if self.n_user_enums() >= MAX_ENUMS {
            return Enum(self.list_enum());
        }
        let n = self.rng.range(2, 3);
        let mut fields = Vec::new();
        for v in 0..n {
            let nf = if v == 0 { 0 } else { self.rng.range(1, 2) };
            fields.push(
                (0..nf)
                    .map(|_| self.rand_ty(level.saturating_sub(1).min(1)))
                    .collect::<Vec<Ty>>(),
            );
        }
        // Field types may have created enums meanwhile: number this one after them.
        let id = self.enums.len();
        let variants = fields
            .into_iter()
            .enumerate()
            .map(|(v, fs)| (format!("{}{id}", ["A", "B", "C"][v]), fs))
            .collect();
        self.enums.push(EnumDef {
            name: format!("E{id}"),
            variants,
        });
        Enum(id)
    }

    fn n_user_enums(&self) -> usize {
        self.enums.len() - usize::from(self.list.is_some())
    }

    /// The recursive list enum `Lst { Nil, Cons(elem, Lst) }`, created on first use.
    fn list_enum(&mut self) -> usize {
        if let Some(l) = &self.list {
            return l.id;
        }
        let elem = match self.rng.below(4) {
            0 | 1 => Real,
            2 => Tuple(vec![Int, Real]),
            _ => func(vec![Real], Real),
        };
        let id = self.enums.len();
        self.enums.push(EnumDef {
            name: "Lst".into(),
            variants: vec![
                ("Nil".into(), vec![]),
                ("Cons".into(), vec![elem.clone(), Enum(id)]),
            ],
        });
        self.list = Some(ListInfo {
            id,
            elem,
            from: false,
            map: false,
            fold: false,
        });
        id
    }

    pub(super) fn is_list(&self, k: usize) -> bool {
        self.list.as_ref().is_some_and(|l| l.id == k)
    }

    pub(super) fn ctor(
        &mut self,
        name: &str,
        fields: &[Ty],
        env: &mut Env,
        depth: u32,
    ) -> (String, B) {
        if fields.is_empty() {
            return (name.to_string(), B::ZERO);
        }
        let parts: Vec<String> = fields
            .iter()
            .map(|t| self.nexpr(t, env, depth.saturating_sub(1)).0)
            .collect();
        (format!("{name}({})", parts.join(", ")), NORMAL)
    }

    pub(super) fn apply_enums(
        &mut self,
        p: P,
        ty: &Ty,
        env: &mut Env,
        depth: u32,
    ) -> Option<(String, B)> {
        let d = depth - 1;
        Some(match p {
            P::MatchEnum => {
                let et = self.enum_ty(1);
                let Enum(k) = et else { unreachable!() };
                let (s, _) = self.expr(&et, env, d);
                let variants = self.enums[k].variants.clone();
                let mut arms = Vec::new();
                let mut bb = B::ZERO;
                let nested = self.is_list(k) && self.rng.chance(0.4);
                if nested {
                    // Nested patterns on the list: two heads, one head, empty.
                    let elem = self.list.as_ref().unwrap().elem.clone();
                    let mark = env.len();
                    let h1 = self.bind_pattern(&elem, NORMAL, None, env);
                    let h2 = self.bind_pattern(&elem, NORMAL, None, env);
                    let (e1, b1) = self.expr(ty, env, d);
                    env.truncate(mark);
                    arms.push(format!("Cons({h1}, Cons({h2}, _)) => {e1}"));
                    let h = self.bind_pattern(&elem, NORMAL, None, env);
                    let (e2, b2) = self.expr(ty, env, d);
                    env.truncate(mark);
                    arms.push(format!("Cons({h}, _) => {e2}"));
                    let (e3, b3) = self.expr(ty, env, d);
                    arms.push(format!("Nil => {e3}"));
                    bb = b1.max(b2).max(b3);
                } else {
                    let wildcard_from = if self.rng.chance(0.3) && variants.len() > 1 {
                        self.rng.range(1, variants.len() - 1)
                    } else {
                        variants.len()
                    };
                    for (name, fields) in variants.iter().take(wildcard_from) {
                        let mark = env.len();
                        let pat = if fields.is_empty() {
                            name.clone()
                        } else {
                            let ps: Vec<String> = fields
                                .iter()
                                .map(|t| {
                                    if self.rng.chance(0.15) {
                                        "_".to_string()
                                    } else {
                                        self.bind_pattern(t, NORMAL, None, env)
                                    }
                                })
                                .collect();
                            format!("{name}({})", ps.join(", "))
                        };
                        let (e, b) = self.expr(ty, env, d);
                        env.truncate(mark);
                        bb = bb.max(b);
                        arms.push(format!("{pat} => {e}"));
                    }
                    if wildcard_from < variants.len() {
                        let (e, b) = self.expr(ty, env, d);
                        bb = bb.max(b);
                        arms.push(format!("_ => {e}"));
                    }
                }
                (format!("match {} {{ {} }}", paren(&s), arms.join(", ")), bb)
            }
            P::ListFold => {
                if self.in_list_fold {
                    // Inside lst_fold's own step: calling it there need not terminate.
                    return None;
                }
                let id = self.list_enum();
                let name = self.list_fold(d);
                let (l, _) = self.expr(&Enum(id), env, d);
                let (init, _) = self.nexpr(&Real, env, d);
                let _ = id;
                (format!("{name}({l}, {init})"), NORMAL)
            }
            P::EnumCtor => {
                let Enum(k) = ty else { unreachable!() };
                let variants = self.enums[*k].variants.clone();
                let (name, fields) = self.rng.pick(&variants).clone();
                self.ctor(&name, &fields, env, depth)
            }
            P::ListFrom => {
                let elem = self.list.as_ref().unwrap().elem.clone();
                let name = self.list_from();
                let n = self.rng.range(1, 4);
                let (a, _) = self.nexpr(&arr(elem, n), env, d);
                (format!("{name}({a}, 0)"), NORMAL)
            }
            P::ListMap => {
                let elem = self.list.as_ref().unwrap().elem.clone();
                let name = self.list_map();
                let Enum(k) = ty else { unreachable!() };
                let (l, _) = self.expr(&Enum(*k), env, d);
                let ft = func(vec![elem.clone()], elem);
                let (fe, fb) = self.fn_arg(&ft, env, d);
                let (fe, _) = self.norm(fe, fb, &ft);
                (format!("{name}({l}, {fe})"), NORMAL)
            }
            _ => unreachable!(),
        })
    }

    /// `lst_from(a, i)`: the list of `a[i..]`.
    fn list_from(&mut self) -> String {
        let l = self.list.as_mut().unwrap();
        if !l.from {
            l.from = true;
            let elem = l.elem.clone();
            let e = self.render_ty(&elem);
            self.fns.push(format!(
                "fn lst_from(a: [{e}], i: Int) -> Lst {{\n    if i >= length(a) {{ Nil }} else {{ Cons(a[i], lst_from(a, i + 1)) }}\n}}"
            ));
        }
        "lst_from".into()
    }

    /// `lst_map(l, g)`.
    fn list_map(&mut self) -> String {
        let l = self.list.as_mut().unwrap();
        if !l.map {
            l.map = true;
            let elem = l.elem.clone();
            let e = self.render_ty(&elem);
            self.fns.push(format!(
                "fn lst_map(l: Lst, g: fn({e}) -> {e}) -> Lst {{\n    match l {{ Nil => Nil, Cons(h, t) => Cons(g(h), lst_map(t, g)) }}\n}}"
            ));
        }
        "lst_map".into()
    }

    /// `lst_fold(l, acc)`: a recursive fold with a generated step.
    fn list_fold(&mut self, depth: u32) -> String {
        let l = self.list.as_mut().unwrap();
        if !l.fold {
            l.fold = true;
            let elem = l.elem.clone();
            let e = self.render_ty(&elem);
            let mut env = vec![
                Var {
                    name: "acc".into(),
                    ty: Real,
                    b: NORMAL,
                    range: None,
                },
                Var {
                    name: "hd".into(),
                    ty: elem,
                    b: NORMAL,
                    range: None,
                },
            ];
            let saved = self.ad_depth;
            self.ad_depth = 0;
            self.in_list_fold = true;
            let (step, _) = self.nexpr(&Real, &mut env, depth);
            self.in_list_fold = false;
            self.ad_depth = saved;
            self.fns.push(format!(
                "fn lst_fold(l: Lst, acc: Real) -> Real {{\n    match l {{ Nil => acc, Cons(hd, tl) => lst_fold(tl, {step}) }}\n}}"
            ));
            let _ = e;
        }
        "lst_fold".into()
    }
}
