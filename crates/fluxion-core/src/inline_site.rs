//! Where the optimiser put a prelude function's body into the user's code (fluxion-opt's
//! `inline`, issue 32: flat code differentiates into flat code), as a debugger's
//! inlined-at record: a fault inside the copy is the user's mistake at the call,
//! reported there and naming the function — what a call of the prelude function
//! reports (the interpreter's `attribute_to_caller`, the native runtime's `fx_site`).
//!
//! The copied bindings' spans name their site: their `source` is
//! [`INLINE_SITE_SOURCE`] plus the site's index in [`Module::inline_sites`], their
//! byte range the call's. Every place that turns a runtime fault into a diagnostic
//! passes its span through [`Module::attribute`]. A site names the outermost prelude
//! function inlined at a user's call (a prelude function inlined into another keeps
//! the prelude's own spans until the outer one is inlined), as a call does.

use crate::module::Module;
use crate::term::{CodeId, PRELUDE_SOURCE, Span};

/// The first source id of inline sites (far above any file's id).
pub const INLINE_SITE_SOURCE: u32 = 1 << 31;

/// A call of a prelude function whose body the optimiser copied in its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineSite {
    /// The user's call.
    pub call: Span,
    /// The prelude function called there.
    pub function: String,
}

impl Span {
    /// Whether this span is a place in the prelude (not generated code, which has no
    /// span and shares the prelude's source id).
    pub fn is_prelude(&self) -> bool {
        self.source == PRELUDE_SOURCE && *self != Span::default()
    }

    /// Whether this span names an inline site rather than a place in a source.
    pub fn is_inline_site(&self) -> bool {
        self.source >= INLINE_SITE_SOURCE
    }
}

impl Module {
    /// The span for the bindings of prelude function `code` copied in place of its call
    /// at `call`: `call` itself if it is already a site (a prelude call inside copied
    /// prelude code: the outer function is named), `None` if the call is in the prelude
    /// or generated (no place of the user's: the copy keeps the prelude's spans, as
    /// a call would be attributed further up).
    pub fn inline_site(&mut self, code: CodeId, call: Span) -> Option<Span> {
        if call.is_inline_site() {
            return Some(call);
        }
        if call.source == PRELUDE_SOURCE {
            return None;
        }
        let function = self.function_name(code).to_string();
        let site = InlineSite { call, function };
        // Sites repeat (every copy of one call); look at the last few only.
        let index = match self
            .inline_sites
            .iter()
            .rev()
            .take(8)
            .position(|s| *s == site)
        {
            Some(back) => self.inline_sites.len() - 1 - back,
            None => {
                self.inline_sites.push(site);
                self.inline_sites.len() - 1
            }
        };
        Some(Span {
            source: INLINE_SITE_SOURCE + index as u32,
            start: call.start,
            end: call.end,
        })
    }

    /// The source of the user's place `span` stands for: an inline site's call's, else
    /// its own.
    pub fn user_source(&self, span: Span) -> u32 {
        if !span.is_inline_site() {
            return span.source;
        }
        self.inline_sites
            .get((span.source - INLINE_SITE_SOURCE) as usize)
            .map_or(span.source, |site| site.call.source)
    }

    /// Where a fault at `span` is reported and its message: at the user's call, naming
    /// the prelude function, if `span` is an inline site; as it is otherwise.
    pub fn attribute(&self, span: Span, message: String) -> (Span, String) {
        attribute(&self.inline_sites, span, message)
    }

    /// The top-level function `code` belongs to: its source function's name without a
    /// lambda's `_lambdaN` suffix.
    fn function_name(&self, code: CodeId) -> &str {
        let name = self.source_name(code);
        match name.rfind("_lambda") {
            Some(i) if name[i + 7..].bytes().all(|b| b.is_ascii_digit()) => &name[..i],
            _ => name,
        }
    }
}

/// [`Module::attribute`] with the module's `sites` alone (what a compiled program keeps).
pub fn attribute(sites: &[InlineSite], span: Span, message: String) -> (Span, String) {
    if !span.is_inline_site() {
        return (span, message);
    }
    match sites.get((span.source - INLINE_SITE_SOURCE) as usize) {
        Some(site) => (
            site.call,
            format!("{message} (in `{}`, a prelude function)", site.function),
        ),
        None => (Span::default(), message),
    }
}
