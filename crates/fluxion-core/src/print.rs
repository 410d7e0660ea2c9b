//! Prints Core as Fluxion source (`fluxion show --stage core`).
//!
//! The output re-parses and type-checks to the same program: variables print as
//! `hint_id` (ids are unique, so names never clash), every `let` carries its type,
//! lambdas print inline where their closure is made, top-level functions as `fn` items.
//! Internal primitives print with a `%` prefix, which no source program can spell.

use std::fmt::Write;

use crate::module::Module;
use crate::prim::Prim;
use crate::term::*;
use crate::ty::Type;

/// Formats a real the way Fluxion prints values: shortest round trip, always with a
/// `.` or an exponent (`1.0`, `0.1`, `1e-7`, `NaN`, `inf`, `-inf`).
pub fn format_real(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{x:?}")
    }
}

/// Prints the whole module as Fluxion source: enums, then top-level functions.
pub fn print_module(module: &Module) -> String {
    let mut p = Printer {
        module,
        out: String::new(),
    };
    p.enums();
    let mut names: Vec<(&String, &CodeId)> = module.functions.iter().collect();
    names.sort_by_key(|(_, id)| **id);
    for (_, id) in names {
        if !p.out.is_empty() {
            p.out.push('\n');
        }
        p.top_level(*id);
    }
    p.out
}

/// Prints one code as a top-level function (captures become leading parameters).
pub fn print_code(module: &Module, id: CodeId) -> String {
    let mut p = Printer {
        module,
        out: String::new(),
    };
    p.top_level(id);
    p.out
}

struct Printer<'a> {
    module: &'a Module,
    out: String,
}

impl Printer<'_> {
    fn enums(&mut self) {
        let module = self.module;
        let p = self;
        for (e, def) in module.enums.iter().enumerate() {
            // Tangent enums are not declared: source names `T(E)` as `ETan`, where `E`
            // is the (printed) enum it is the tangent of.
            if def
                .origin
                .as_ref()
                .is_some_and(|o| o.layers.is_empty() || o.tangent)
            {
                continue;
            }
            if def.variants.is_empty() {
                // Only the enum of function cotangents is made empty (constructors are
                // added per closure code that needs one): source has no empty enums.
                let _ = writeln!(
                    p.out,
                    "// enum {}: no constructors (no closure's cotangent is needed)",
                    def.name
                );
                continue;
            }
            p.out.push_str("enum ");
            p.out.push_str(&def.name);
            p.out.push_str(" { ");
            for (i, v) in def.variants.iter().enumerate() {
                if i > 0 {
                    p.out.push_str(", ");
                }
                let name = p.ctor_name(crate::EnumId(e as u32), i as u32);
                p.out.push_str(&name);
                if !v.fields.is_empty() {
                    p.out.push('(');
                    for (j, f) in v.fields.iter().enumerate() {
                        if j > 0 {
                            p.out.push_str(", ");
                        }
                        let _ = write!(p.out, "{}", f.display(&module.enums));
                    }
                    p.out.push(')');
                }
            }
            p.out.push_str(" }\n");
        }
    }

    fn ty(&self, ty: &Type) -> String {
        ty.display(&self.module.enums).to_string()
    }

    /// A constructor's name in source: a translated enum's constructors carry the
    /// enum's suffix (`CircleFwd1`), so that printed programs declare each name once.
    /// A tangent enum `ETan` is not declared (source names it through `E`), and its
    /// constructors keep E's names, resolved by the expected type.
    fn ctor_name(&self, e: crate::EnumId, tag: u32) -> String {
        let def = self.module.enum_def(e);
        let name = &def.variants[tag as usize].name;
        match &def.origin {
            Some(origin) if !origin.layers.is_empty() => {
                // The translated enum's suffix, without a final `Tan`: a tangent enum
                // shares its constructors' names with the enum it is the tangent of.
                let base = &self.module.enum_def(origin.base).name;
                let suffix = def.name.strip_prefix(base.as_str()).unwrap_or("");
                let suffix = if origin.tangent {
                    suffix.strip_suffix("Tan").unwrap_or(suffix)
                } else {
                    suffix
                };
                format!("{name}{suffix}")
            }
            _ => name.clone(),
        }
    }

    fn var(&self, v: VarId) -> String {
        let hint = &self.module.var(v).name;
        let hint: String = hint
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // A hint that already ends in `_<digits>` (from printed Core read back) loses
        // that suffix, so printing is stable up to renumbering.
        let hint = match hint.rsplit_once('_') {
            Some((stem, digits))
                if !stem.is_empty()
                    && !digits.is_empty()
                    && digits.bytes().all(|b| b.is_ascii_digit()) =>
            {
                stem.to_string()
            }
            _ => hint,
        };
        let hint = match hint.chars().next() {
            Some(c) if c.is_ascii_lowercase() || c == '_' => hint,
            _ => format!("v{}", hint.to_ascii_lowercase()),
        };
        format!("{hint}_{}", v.0)
    }

    fn atom(&self, a: &Atom) -> String {
        match a {
            Atom::Var(v) => self.var(*v),
            Atom::Lit(Lit::Real(x)) if x.is_nan() => "(0.0 / 0.0)".into(),
            Atom::Lit(Lit::Real(x)) if x.is_infinite() => if *x > 0.0 {
                "(1.0 / 0.0)"
            } else {
                "(-1.0 / 0.0)"
            }
            .into(),
            Atom::Lit(Lit::Real(x)) => format_real(*x),
            Atom::Lit(Lit::Int(i)) => i.to_string(),
            Atom::Lit(Lit::Bool(b)) => b.to_string(),
            Atom::Lit(Lit::Unit) => "()".into(),
        }
    }

    fn atoms(&self, atoms: &[Atom]) -> String {
        atoms
            .iter()
            .map(|a| self.atom(a))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("    ");
        }
    }

    fn top_level(&mut self, id: CodeId) {
        let code = self.module.code(id);
        let params: Vec<String> = code
            .captures
            .iter()
            .chain(&code.params)
            .map(|p| format!("{}: {}", self.var(*p), self.ty(self.module.var_ty(*p))))
            .collect();
        let _ = write!(
            self.out,
            "fn {}({}) -> {} ",
            code.name,
            params.join(", "),
            self.ty(&code.ret)
        );
        self.body(&code.body, 0);
        self.out.push('\n');
    }

    /// Prints `{ bindings; result }` starting at the current position.
    fn body(&mut self, body: &Body, depth: usize) {
        if body.bindings.is_empty() {
            let _ = write!(self.out, "{{ {} }}", self.atom(&body.result));
            return;
        }
        self.out.push_str("{\n");
        for b in &body.bindings {
            self.indent(depth + 1);
            let _ = write!(
                self.out,
                "let {}: {} = ",
                self.var(b.var),
                self.ty(self.module.var_ty(b.var))
            );
            self.rhs(&b.rhs, depth + 1);
            self.out.push_str(";\n");
        }
        self.indent(depth + 1);
        self.out.push_str(&self.atom(&body.result));
        self.out.push('\n');
        self.indent(depth);
        self.out.push('}');
    }

    fn rhs(&mut self, rhs: &Rhs, depth: usize) {
        match rhs {
            Rhs::Atom(a) => self.out.push_str(&self.atom(a)),
            Rhs::Prim(prim, args) => self.prim(*prim, args),
            Rhs::Call(f, args) => {
                let _ = write!(self.out, "{}({})", self.atom(f), self.atoms(args));
            }
            Rhs::CallDirect(code, args) => {
                let _ = write!(
                    self.out,
                    "{}({})",
                    self.module.code(*code).name,
                    self.atoms(args)
                );
            }
            Rhs::Closure(id, args) => self.closure(*id, args, depth),
            Rhs::Tuple(args) => {
                let _ = write!(self.out, "({})", self.atoms(args));
            }
            Rhs::Proj(a, i) => {
                let _ = write!(self.out, "{}.{}", self.atom(a), i);
            }
            Rhs::Array(args) => {
                let _ = write!(self.out, "[{}]", self.atoms(args));
            }
            Rhs::Ctor(e, tag, args) => {
                let name = &self.ctor_name(*e, *tag);
                if args.is_empty() {
                    self.out.push_str(name);
                } else {
                    let _ = write!(self.out, "{name}({})", self.atoms(args));
                }
            }
            Rhs::If(c, t, e) => {
                let _ = write!(self.out, "if {} ", self.atom(c));
                self.body(t, depth);
                self.out.push_str(" else ");
                self.body(e, depth);
            }
            Rhs::Match(s, arms, default) => {
                let _ = writeln!(self.out, "match {} {{", self.atom(s));
                let Type::Enum(eid) = self.module.atom_ty(s) else {
                    self.out.push_str("/* scrutinee is not an enum */ }");
                    return;
                };
                for arm in arms {
                    self.indent(depth + 1);
                    let name = &self.ctor_name(eid, arm.tag);
                    self.out.push_str(name);
                    if !arm.fields.is_empty() {
                        let fields: Vec<String> = arm.fields.iter().map(|f| self.var(*f)).collect();
                        let _ = write!(self.out, "({})", fields.join(", "));
                    }
                    self.out.push_str(" => ");
                    self.body(&arm.body, depth + 1);
                    self.out.push_str(",\n");
                }
                if let Some(d) = default {
                    self.indent(depth + 1);
                    self.out.push_str("_ => ");
                    self.body(d, depth + 1);
                    self.out.push_str(",\n");
                }
                self.indent(depth);
                self.out.push('}');
            }
        }
    }

    fn prim(&mut self, prim: Prim, args: &[Atom]) {
        match (prim.operator_symbol(), args) {
            (Some(op), [a]) => {
                let _ = write!(self.out, "{op}{}", self.atom(a));
            }
            (Some(op), [a, b]) => {
                let _ = write!(self.out, "{} {op} {}", self.atom(a), self.atom(b));
            }
            _ if prim == Prim::Index && args.len() == 2 => {
                let _ = write!(self.out, "{}[{}]", self.atom(&args[0]), self.atom(&args[1]));
            }
            _ => {
                let _ = write!(self.out, "{}({})", prim.name(), self.atoms(args));
            }
        }
    }

    fn closure(&mut self, id: CodeId, args: &[Atom], depth: usize) {
        let code = self.module.code(id);
        if code.kind == CodeKind::TopLevel && args.is_empty() {
            self.out.push_str(&code.name);
            return;
        }
        let inline = code.captures.len() == args.len()
            && code
                .captures
                .iter()
                .zip(args)
                .all(|(c, a)| *a == Atom::Var(*c));
        if !inline {
            // A closure whose captures are not the variables in scope: spell it as a
            // partial application of the code printed as a top-level function.
            let _ = write!(self.out, "%closure({}, [{}])", code.name, self.atoms(args));
            return;
        }
        let params: Vec<String> = code
            .params
            .iter()
            .map(|p| format!("{}: {}", self.var(*p), self.ty(self.module.var_ty(*p))))
            .collect();
        let _ = write!(self.out, "|{}| ", params.join(", "));
        self.body(&code.body, depth);
    }
}

/// Prints the enums and every top-level function reachable from `roots` (through
/// direct calls and function values), in code order.
pub fn print_reachable(module: &Module, roots: &[CodeId]) -> String {
    let mut seen = std::collections::BTreeSet::new();
    let mut work: Vec<CodeId> = roots.to_vec();
    while let Some(id) = work.pop() {
        if !seen.insert(id) {
            continue;
        }
        crate::visit::for_each_code_ref(&module.code(id).body, &mut |c| {
            if !seen.contains(&c) {
                work.push(c);
            }
        });
    }
    let mut p = Printer {
        module,
        out: String::new(),
    };
    p.enums();
    for id in seen {
        if module.code(id).kind == CodeKind::TopLevel {
            if !p.out.is_empty() {
                p.out.push('\n');
            }
            p.top_level(id);
        }
    }
    p.out
}
