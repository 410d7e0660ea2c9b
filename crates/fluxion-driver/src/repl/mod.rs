//! A REPL session as a library (`fluxion repl` is a shell over it): each input is
//! compiled and evaluated once, and the values of its `let`s stay in memory.
//!
//! Design (docs/internals.md, "The REPL session"): the session owns one interpreter and
//! its Core module, which only grows. Definitions (`fn`, `enum`) form a generation:
//! when they change, prelude and definitions are elaborated together and linked into
//! the session module as new codes (`link.rs`). An input is elaborated as a function of
//! the earlier bindings it mentions (`wrap.rs`), linked on its own against the current
//! generation, and called with the stored values. Old codes are never changed or
//! removed, so a closure made earlier keeps its code after a redefinition.

mod link;
mod wrap;

use fluxion_core::{EnumId, Module, Prim, Type};
use fluxion_interp::{Interp, Value};
use fluxion_syntax::ast::{self, Item};
use fluxion_syntax::{ReplInput, Span};

use crate::{
    AdMode, Diagnostic, PRELUDE, PRELUDE_SOURCE, Phase, Program, SourceFile, check_core_from,
    elaborate, render,
};

/// What an input printed: its value (stdout) and notes about the session (stderr).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    pub output: String,
    pub notes: String,
}

/// A binding made by a `let` input: its value, evaluated once.
struct Bound {
    name: String,
    value: Value,
    /// In the session module's enums.
    ty: Type,
}

pub struct Session {
    prelude: ast::Module,
    /// Every text the session has read, indexed by source id (spans point into them).
    sources: Vec<SourceFile>,
    /// The current definitions, with the file each came from (`None`: typed).
    items: ast::Module,
    origins: Vec<Option<String>>,
    /// Prelude and current definitions, elaborated (what `:show` prints from).
    definitions: Module,
    /// Where the current definitions live in the session module.
    names: link::Names,
    interp: Interp,
    bindings: Vec<Bound>,
    inputs: usize,
    evaluations: u64,
    /// Bytes one input's evaluation may add (`None`: [`crate::default_memory_limit`]).
    memory_limit: Option<usize>,
}

/// Whether `text` holds nothing but white space and `//` comments (an input that says
/// nothing, as an empty line).
fn only_comments(text: &str) -> bool {
    text.lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with("//"))
}

/// The REPL's commands and keywords, besides names (for completion).
const KEYWORDS: &[&str] = &["let", "fn", "enum", "match", "if", "else", "true", "false"];

impl Session {
    /// Sets the memory one input's evaluation may add to what the session holds.
    pub fn set_memory_limit(&mut self, bytes: usize) {
        self.memory_limit = Some(bytes);
    }

    /// A session with the prelude loaded.
    pub fn new() -> Result<Session, String> {
        let sources = vec![SourceFile {
            name: "<prelude>".into(),
            text: PRELUDE.into(),
        }];
        let prelude = fluxion_syntax::parse_module(PRELUDE, PRELUDE_SOURCE).module;
        let items = ast::Module::default();
        let definitions = elaborate(&[&prelude, &items], None).map_err(|d| render(&d, &sources))?;
        let mut module = Module::default();
        let names = link::link_definitions(&definitions, &mut module);
        let mut session = Session {
            prelude,
            sources,
            items,
            origins: Vec::new(),
            definitions,
            names,
            interp: Interp::with_mode(Module::default(), AdMode::default()),
            bindings: Vec::new(),
            inputs: 0,
            evaluations: 0,
            memory_limit: None,
        };
        if let Err(d) = finish_link(&mut module, 0) {
            return Err(session.render(vec![d]));
        }
        session.interp = Interp::with_mode(module, AdMode::default());
        session.interp.set_library_source(PRELUDE_SOURCE);
        Ok(session)
    }

    /// How many inputs have been evaluated (each exactly once).
    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// The names of the bindings in scope, oldest first.
    pub fn binding_names(&self) -> Vec<String> {
        self.bindings.iter().map(|b| b.name.clone()).collect()
    }

    /// Names worth completing: built-ins, keywords, functions (prelude and session),
    /// constructors and bindings.
    pub fn completion_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Prim::ALL
            .iter()
            .filter(|p| !p.is_internal())
            .map(|p| p.name().to_string())
            .chain(KEYWORDS.iter().map(|k| k.to_string()))
            .chain(self.definitions.functions.keys().cloned())
            .chain(
                self.definitions
                    .enums
                    .iter()
                    .filter(|e| e.origin.is_none())
                    .flat_map(|e| {
                        std::iter::once(e.name.clone())
                            .chain(e.variants.iter().map(|v| v.name.clone()))
                    }),
            )
            .chain(self.binding_names())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Evaluates one input: definitions, a `let`, or an expression (printed).
    /// Errors come back rendered, positions relative to the input (`<input N>`).
    pub fn eval(&mut self, text: &str) -> Result<Reply, String> {
        // What follows the input (its newline) is not part of it: "end of input" is
        // reported where the text ends.
        let text = text.trim_end();
        if only_comments(text) {
            return Ok(Reply::default());
        }
        let source = self.add_input(text);
        let (input, errors) = fluxion_syntax::parse_repl_input(text, source);
        let Some(input) = input else {
            return Err(self.render(syntax_diagnostics(errors)));
        };
        match input {
            ReplInput::Items(items) => self.define(items, None),
            ReplInput::Let { pat, ty, value } => {
                let span = self.whole(source);
                let (body, names) = wrap::let_body(pat, ty, value, span);
                let (value, ty) = self.run(source, body)?;
                self.bind(names, value, ty);
                Ok(Reply::default())
            }
            ReplInput::Expr(e) => {
                let (value, ty) = self.run(source, e)?;
                let mut output = String::new();
                let _ = fluxion_interp::write_value(
                    &mut output,
                    &value,
                    &self.interp.module(),
                    Some(&ty),
                );
                output.push('\n');
                Ok(Reply {
                    output,
                    notes: String::new(),
                })
            }
        }
    }

    /// The type of an expression, without evaluating it.
    pub fn type_of(&mut self, text: &str) -> Result<String, String> {
        let text = text.trim_end();
        let source = self.add_input(text);
        let (input, errors) = fluxion_syntax::parse_repl_input(text, source);
        let e = match input {
            Some(ReplInput::Expr(e)) => e,
            Some(_) => return Err("error: `:type` takes an expression\n".into()),
            None => return Err(self.render(syntax_diagnostics(errors))),
        };
        let (module, _) = self.compile(source, e)?;
        let entry = module.functions[fluxion_typeck::EXPR_ENTRY];
        let ty = match &module.code(entry).ret {
            Type::Fn(_, ret) => ret.display(&module.enums).to_string(),
            other => other.display(&module.enums).to_string(),
        };
        Ok(format!("{ty}\n"))
    }

    /// What `fluxion show --stage STAGE --entry NAME` prints for the session's
    /// current definitions.
    pub fn show(&self, stage: &str, name: &str) -> Result<String, String> {
        if !crate::is_stage(stage) {
            return Err(format!(
                "error: unknown stage `{stage}` (available: {}, taylorK)\n",
                crate::STAGES.join(", ")
            ));
        }
        let program = Program {
            module: self.definitions.clone(),
            sources: self.sources.clone(),
        };
        program
            .show(stage, Some(name))
            .map_err(|m| format!("error: {m}\n"))
    }

    /// Loads a file's definitions (its name is kept for positions); loading the same
    /// name again replaces what it defined before (`:reload`).
    pub fn load(&mut self, name: &str, text: &str) -> Result<Reply, String> {
        let source = self.add_source(name, text);
        let parse = fluxion_syntax::parse_module(text, source);
        if !parse.errors.is_empty() {
            return Err(self.render(syntax_diagnostics(parse.errors)));
        }
        self.define(parse.module.items, Some(name))
    }

    fn add_source(&mut self, name: &str, text: &str) -> u32 {
        self.sources.push(SourceFile {
            name: name.into(),
            text: text.into(),
        });
        (self.sources.len() - 1) as u32
    }

    fn add_input(&mut self, text: &str) -> u32 {
        self.inputs += 1;
        self.add_source(&format!("<input {}>", self.inputs), text)
    }

    /// The span of a source's text without surrounding blanks.
    fn whole(&self, source: u32) -> Span {
        let text = &self.sources[source as usize].text;
        let start = text.len() - text.trim_start().len();
        let end = text.trim_end().len().max(start);
        Span::new(source, start, end)
    }

    fn render(&self, diagnostics: Vec<Diagnostic>) -> String {
        render(&diagnostics, &self.sources)
    }

    /// Replaces or adds definitions (`origin`: the file they come from, whose earlier
    /// definitions they replace); accepted only if every definition then type-checks.
    fn define(&mut self, new: Vec<Item>, origin: Option<&str>) -> Result<Reply, String> {
        let mut items = self.items.clone();
        let mut origins = self.origins.clone();
        if let Some(file) = origin {
            let keep: Vec<bool> = origins.iter().map(|o| o.as_deref() != Some(file)).collect();
            let mut k = keep.iter();
            items.items.retain(|_| *k.next().unwrap_or(&true));
            origins.retain(|o| o.as_deref() != Some(file));
        }
        let old_enums: Vec<String> = self.items.items.iter().filter_map(enum_name).collect();
        let mut redefined_enums = Vec::new();
        let mut defined_fns = Vec::new();
        let mut replaced = Vec::new();
        for item in new {
            let name = item_name(&item).to_string();
            if let Item::Enum(_) = item
                && old_enums.contains(&name)
            {
                redefined_enums.push(name.clone());
            }
            if let Item::Fn(_) = item {
                defined_fns.push(name.clone());
            }
            let same = items
                .items
                .iter()
                .position(|i| item_name(i) == name && same_kind(i, &item));
            match same {
                Some(i) => {
                    replaced.push(name.clone());
                    items.items[i] = item;
                    origins[i] = origin.map(str::to_string);
                }
                None => {
                    items.items.push(item);
                    origins.push(origin.map(str::to_string));
                }
            }
        }
        let definitions = elaborate(&[&self.prelude, &items], None).map_err(|d| {
            // The error may point at an earlier input that the new definition breaks:
            // say that the new one was not made.
            let mut text = self.render(d);
            for name in &replaced {
                text.push_str(&format!(
                    "note: `{name}` keeps its earlier definition: this one was not made\n"
                ));
            }
            text
        })?;
        let mut module = self.interp.module_mut();
        let mark = link::Mark::of(&module);
        let names = link::link_definitions(&definitions, &mut module);
        if let Err(d) = finish_link(&mut module, mark.first_code()) {
            mark.undo(&mut module);
            drop(module);
            return Err(self.render(vec![d]));
        }
        drop(module);
        self.items = items;
        self.origins = origins;
        self.definitions = definitions;
        self.names = names;
        Ok(Reply {
            output: String::new(),
            notes: self.drop_stale_bindings(&defined_fns, &redefined_enums),
        })
    }

    /// Drops bindings a definition hides (same name as a new `fn`) or invalidates
    /// (their type mentions a redefined enum); says which.
    fn drop_stale_bindings(&mut self, fns: &[String], enums: &[String]) -> String {
        let mut notes = String::new();
        let module = self.interp.module();
        self.bindings.retain(|b| {
            if fns.contains(&b.name) {
                notes.push_str(&format!(
                    "note: binding `{}` removed: `fn {}` now defines the name\n",
                    b.name, b.name
                ));
                return false;
            }
            if let Some(e) = mentions_enum(&b.ty, enums, &module) {
                notes.push_str(&format!(
                    "note: binding `{}` removed: its type mentions enum `{e}`, which was redefined\n",
                    b.name
                ));
                return false;
            }
            true
        });
        notes
    }

    /// Elaborates an input as a function of the bindings it mentions; returns the module
    /// and the indices of those bindings (the function's parameters, in order).
    fn compile(&self, source: u32, body: ast::Expr) -> Result<(Module, Vec<usize>), String> {
        let span = self.whole(source);
        let mentioned = wrap::mentioned_names(&self.sources[source as usize].text, source);
        let module = self.interp.module();
        let used: Vec<usize> = (0..self.bindings.len())
            .filter(|i| mentioned.contains(&self.bindings[*i].name))
            .collect();
        let params = used
            .iter()
            .map(|i| {
                let b = &self.bindings[*i];
                (b.name.clone(), wrap::type_expr(&b.ty, &module.enums, span))
            })
            .collect();
        drop(module);
        let function = wrap::input_function(params, body, span);
        let module = elaborate(&[&self.prelude, &self.items], Some(&function))
            .map_err(|d| self.render(d))?;
        Ok((module, used))
    }

    /// Compiles, links and evaluates an input (once); its value and type.
    fn run(&mut self, source: u32, body: ast::Expr) -> Result<(Value, Type), String> {
        let (compiled, used) = self.compile(source, body)?;
        let entry = compiled.functions[fluxion_typeck::EXPR_ENTRY];
        let mut module = self.interp.module_mut();
        let mark = link::Mark::of(&module);
        let entry = link::link_input(&compiled, entry, &mut module, &self.names);
        if let Err(d) = finish_link(&mut module, mark.first_code()) {
            mark.undo(&mut module);
            drop(module);
            return Err(self.render(vec![d]));
        }
        let span = module.code(entry).span;
        let ty = match &module.code(entry).ret {
            Type::Fn(_, ret) => (**ret).clone(),
            _ => unreachable!("an input compiles to a function"),
        };
        drop(module);
        self.evaluations += 1;
        let args: Vec<Value> = used
            .iter()
            .map(|i| self.bindings[*i].value.clone())
            .collect();
        self.interp.set_stack_limit(crate::stack_budget());
        // Counted from what the session already holds: each input gets the budget.
        self.interp.set_memory_limit(
            self.memory_limit
                .unwrap_or_else(crate::default_memory_limit),
        );
        let value = self
            .interp
            .call_code(entry, &[], Vec::new(), span)
            .and_then(|f| self.interp.apply(&f, args, span));
        match value {
            Ok(v) => Ok((v, ty)),
            Err(e) => Err(self.render(vec![Diagnostic::new(
                Phase::Runtime,
                Some(e.span),
                e.message,
            )])),
        }
    }

    /// Stores a `let`'s value under the names its pattern binds (a tuple of them when
    /// there are several), replacing earlier bindings of those names.
    fn bind(&mut self, names: Vec<String>, value: Value, ty: Type) {
        let parts: Vec<(Value, Type)> = match (names.len(), &ty) {
            (0, _) => Vec::new(),
            (1, _) => vec![(value, ty)],
            (_, Type::Tuple(tys)) => {
                let fields = value.tuple_fields().map(|f| f.to_vec()).unwrap_or_default();
                fields.into_iter().zip(tys.iter().cloned()).collect()
            }
            _ => Vec::new(),
        };
        for (name, (value, ty)) in names.into_iter().zip(parts) {
            self.bindings.retain(|b| b.name != name);
            self.bindings.push(Bound { name, value, ty });
        }
    }
}

/// Expands the differential operators of new codes and verifies them (debug builds).
fn finish_link(module: &mut Module, first_code: usize) -> Result<(), Diagnostic> {
    fluxion_ad::expand_module(module, AdMode::default())
        .map_err(|e| Diagnostic::new(Phase::Input, e.1, e.0))?;
    check_core_from(module, first_code, "linking a REPL input")
}

fn syntax_diagnostics(errors: Vec<fluxion_syntax::SyntaxError>) -> Vec<Diagnostic> {
    errors
        .into_iter()
        .map(|e| Diagnostic::new(Phase::Syntax, Some(crate::core_span(e.span)), e.message))
        .collect()
}

fn item_name(item: &Item) -> &str {
    match item {
        Item::Fn(f) => &f.name.name,
        Item::Enum(e) => &e.name.name,
    }
}

fn enum_name(item: &Item) -> Option<String> {
    match item {
        Item::Enum(e) => Some(e.name.name.clone()),
        Item::Fn(_) => None,
    }
}

fn same_kind(a: &Item, b: &Item) -> bool {
    matches!(
        (a, b),
        (Item::Fn(_), Item::Fn(_)) | (Item::Enum(_), Item::Enum(_))
    )
}

/// The first enum named in `names` that `ty` reaches (through enum fields too).
fn mentions_enum(ty: &Type, names: &[String], module: &Module) -> Option<String> {
    fn go(t: &Type, names: &[String], m: &Module, seen: &mut Vec<EnumId>) -> Option<String> {
        match t {
            Type::Real | Type::Int | Type::Bool | Type::Unit => None,
            Type::Tuple(ts) => ts.iter().find_map(|t| go(t, names, m, seen)),
            Type::Array(t) => go(t, names, m, seen),
            Type::Fn(ps, r) => ps
                .iter()
                .chain(std::iter::once(&**r))
                .find_map(|t| go(t, names, m, seen)),
            Type::Enum(e) => {
                if seen.contains(e) {
                    return None;
                }
                seen.push(*e);
                let def = m.enum_def(*e);
                let base = def.origin.as_ref().map_or(*e, |o| o.base);
                let base_name = &m.enum_def(base).name;
                if names.contains(base_name) {
                    return Some(base_name.clone());
                }
                def.variants
                    .iter()
                    .flat_map(|v| &v.fields)
                    .find_map(|t| go(t, names, m, seen))
            }
        }
    }
    go(ty, names, module, &mut Vec::new())
}

#[cfg(test)]
mod tests;
