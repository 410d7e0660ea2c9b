//! The optimiser (issue 12; [Knossos], its algebra of linear maps, §2.1.2 and §2.3, and its rewrite rules):
//! a pipeline of Core → Core passes, listed in one place ([`PASSES`]), each one file
//! with a verb-named entry point, each followed by the verifier in debug builds.
//!
//! It runs on the module after the operators are expanded, and on every code a
//! differentiation makes at run time (the interpreter calls [`optimize_codes_from`] on the
//! codes a translation added), so derivative code is optimised wherever it is made.
//! Every rule preserves the value computed, bit for bit: folding evaluates the same
//! IEEE operation the interpreter would, and the AD rules (zero propagation, linear
//! maps of zero, projections of known tuples) are identities of the run-time linear
//! algebra. (A derivative *of* optimised code may differ in rounding: differentiation
//! sums the cotangents of a merged expression's uses before applying its partial.)
//!
//! | pass | file | what |
//! |---|---|---|
//! | `simplify` | `simplify.rs` | copy propagation, projections of known tuples, case of known constructor, `if` of a literal, constant folding, zero propagation through the linear building blocks, elements and lengths of array literals |
//! | `inline` | `inline.rs` | calls of known, non-recursive callees (small, or a lambda used once) replaced by their bodies: beta reduction |
//! | `unroll` | `unroll.rs` | a `build`/`map`/`map2`/`sumbuild`/`sum` of a literal count ≤ 4 becomes an array literal (or sum) of copies of its function's body; with `simplify`'s known literals, small arrays become scalars |
//! | `concat` | `concat.rs` | `concat` of two slices of one array, in order, read by it alone, is one `build` reading the array |
//! | `scan_sum` (late) | `scan_sum.rs` | a `scan` of an inert function read only by a `sumbuild` over its indices is one `fold` carrying the prefix and the sum |
//! | `twins` | `twins.rs` | `map2(f, xs, xs)` is `map(\|x\| f(x, x), xs)` (`dot(r, r)` reads `r` once, so its producer fuses) |
//! | `unzip` | `unzip.rs` | a loop returning tuples whose result is only taken apart becomes one loop per component read (CHAD's value/backpropagator arrays; reverse over forward's dual numbers of pairs); a loop of cotangent constructors whose `%lsum` is only taken apart, one summed loop per field |
//! | `sink` | `sink.rs` | an inert `map` (or a shadowed `build`/`map2`) read only by whole loops in one lambda made here moves into it |
//! | `fuse` | `fuse.rs`, `fuse/one_hot.rs`, `fuse/read.rs` | a `map`/`map2`/`build` read once by the next `map`, `map2`, `fold` or `sum` becomes one loop (`sum` of `map` → `sumbuild`); `length` of a loop's result; `map2` over a `replicate` of the right length is a `map`; the sum of a loop of one-hot cotangents is one dense `build`; `build` read once at `i` is its function at `i` |
//! | `preaccumulate` (late) | `preaccumulate.rs` | in delta code, `%delta_sum` of a `build` whose element calls a function or runs a loop of more than arithmetic is `%delta_sumbuild`: each element's tape swept and dropped as it is made, the sum one entry |
//! | `float` | `float.rs` | inert bindings of a loop's lambda that read only its captures computed once, where the closure is made |
//! | `cse` | `cse.rs` | common subexpressions of pure right-hand sides, in scope |
//! | `dce` | `dce.rs` | dead bindings that cannot fail; captures a lambda no longer reads |
//!
//! A *late* pass runs only at [`Stage::Final`], on code no translation reads again:
//! the module before its operators are resolved and a forward translation that a
//! later round differentiates are optimised at [`Stage::BeforeAd`]; after resolving,
//! the functions a late pass improves are copied and the copies optimised at `Final`
//! for the primal calls ([`finish_primal_code`], `primal_copies.rs`). `scan_sum`'s
//! fold is faster than the scan and the sum, but its carried sum differentiates into a
//! chain, one tape node per term (llsq's gradient took 4.5 ms where the scan and the
//! sum, a loop node, took 3.0).

mod concat;
mod cse;
mod dce;
mod float;
mod fuse;
mod inline;
mod instantiate;
mod lambda;
mod lengths;
mod preaccumulate;
mod primal_copies;
mod pure;
mod scan_sum;
mod simplify;
mod sink;
mod subst;
mod twins;
mod unroll;
mod unzip;
mod uses;

use std::time::{Duration, Instant};

use std::collections::HashSet;

use fluxion_core::{Body, CodeId, Module, VarId};

pub use instantiate::copy_rhs;
pub use primal_copies::finish_primal_code;
pub use uses::count_uses;

/// Removes the dead bindings of `body` that cannot fail (what the AD passes use to
/// drop what their rules left unused).
pub fn eliminate_dead_bindings(m: &mut Module, body: &mut Body) {
    dce::eliminate_dead_bindings(
        &mut Context {
            m,
            captured: &HashSet::new(),
            recursive: &HashSet::new(),
            closure_sites: &std::collections::HashMap::new(),
            known_captures: &std::collections::HashMap::new(),
            references: &std::collections::HashMap::new(),
            loop_counts: &std::collections::HashMap::new(),
            current: None,
            first: usize::MAX,
            changed: false,
            growth: &std::cell::Cell::new(0),
            shadowed: &std::cell::RefCell::new(HashSet::new()),
            lengths: &lengths::Lengths::default(),
        },
        body,
    );
}

/// Whether the optimiser runs (`--opt 1`, the default) or not (`--opt 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum OptLevel {
    Off,
    #[default]
    On,
}

impl OptLevel {
    pub fn parse(s: &str) -> Option<OptLevel> {
        match s {
            "0" => Some(OptLevel::Off),
            "1" => Some(OptLevel::On),
            _ => None,
        }
    }
}

/// One pass: rewrites one code's body in place.
pub struct Pass {
    pub name: &'static str,
    pub run: fn(&mut Context, &mut Body),
    /// Runs only on code no differentiation will read ([`Stage::Final`]): its result
    /// is faster as it is but differentiates into slower code.
    pub late: bool,
}

/// Whether the code being optimised may still be differentiated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Before the operators are resolved (the module's codes, a forward translation a
    /// later round translates again): the passes marked `late` wait.
    BeforeAd,
    /// Code that runs as it is: every pass.
    Final,
}

/// What a pass works with: the module (the code being rewritten taken out of it; new
/// variables are made in it), and the variables some lambda captures. A lambda sees
/// its enclosing scope's variables under their own ids (its code's capture list names
/// them), so a pass never drops the binding of a captured variable: where it would
/// rename it, it keeps `let x = a` instead.
pub struct Context<'a> {
    pub m: &'a mut Module,
    pub captured: &'a HashSet<VarId>,
    /// Codes on a cycle of calls and closures (never inlined).
    pub recursive: &'a HashSet<CodeId>,
    /// How many `Closure`s of each code the module makes.
    pub closure_sites: &'a std::collections::HashMap<CodeId, usize>,
    /// Captures holding a closure of a known code without captures
    /// (`uses::known_capture_closures`).
    pub known_captures: &'a std::collections::HashMap<VarId, CodeId>,
    /// How many calls and closures of each code the optimised codes make
    /// (`uses::code_references`).
    pub references: &'a std::collections::HashMap<CodeId, usize>,
    /// The element functions of `build`/`sumbuild` loops and their counts
    /// (`uses::loop_element_counts`): in such a code, a read at its index of an array
    /// of the count's length cannot fail.
    pub loop_counts: &'a std::collections::HashMap<CodeId, fluxion_core::Atom>,
    /// The code being rewritten, if it is one of the module's.
    pub current: Option<CodeId>,
    /// The first code this run optimises: codes before it (translated, memoised) are
    /// not changed by a rewrite of another code.
    pub first: usize,
    /// Set by a pass that restructured the code (the pipeline runs another round).
    pub changed: bool,
    /// Bindings the passes that copy code may still add in this run.
    pub growth: &'a std::cell::Cell<usize>,
    /// Element functions of loops that `unzip` made after a sibling loop over the same
    /// operands running a copy of the same function: whatever they could fail on, that
    /// sibling failed on first, so they cannot fail where they are called (by their
    /// one loop, which has the sibling's lengths).
    pub shadowed: &'a std::cell::RefCell<HashSet<CodeId>>,
    /// What is known of array lengths (computed before each pass).
    pub lengths: &'a lengths::Lengths,
}

impl Context<'_> {
    /// The captures of the code being rewritten that hold a known closure without
    /// captures (`uses::known_capture_closures`), as the closures a pass knows in its
    /// code: called (`inline`) and fused (`fuse`) as that closure.
    pub(crate) fn captured_closures(
        &self,
    ) -> std::collections::HashMap<VarId, (CodeId, Vec<fluxion_core::Atom>)> {
        // A lambda made at more than one site (or in a body kept as written,
        // `Module::unresolved`, counted twice) may capture other values elsewhere.
        let Some(c) = self
            .current
            .filter(|c| self.closure_sites.get(c) == Some(&1))
        else {
            return Default::default();
        };
        self.m
            .code(c)
            .captures
            .iter()
            .filter_map(|v| self.known_captures.get(v).map(|k| (*v, (*k, Vec::new()))))
            .collect()
    }

    /// Takes `size` bindings from the growth budget, if it has them.
    pub(crate) fn spend(&self, size: usize) -> bool {
        let left = self.growth.get();
        let ok = size <= left;
        if ok {
            self.growth.set(left - size);
        }
        ok
    }

    /// Whether lambda `child`, made here by `Closure(child, args)`, may have its
    /// capture list rewritten (`sink` and `unzip` replace captures): made at this one
    /// site, one of the codes this run optimises and not this one, not a derived code,
    /// not a translation (delta mode pairs a translated closure's captures with its
    /// original's by position), and passed its captures as themselves.
    pub(crate) fn may_recapture(&self, child: CodeId, args: &[fluxion_core::Atom]) -> bool {
        let code = self.m.code(child);
        code.kind == fluxion_core::CodeKind::Lambda
            && self.closure_sites.get(&child) == Some(&1)
            && child.0 as usize >= self.first
            && Some(child) != self.current
            && !self.m.derived_codes.values().any(|d| *d == child)
            && !self.m.translated_from.contains_key(&child)
            && code.captures.len() == args.len()
            && code
                .captures
                .iter()
                .zip(args)
                .all(|(c, a)| *a == fluxion_core::Atom::Var(*c))
    }

    /// Whether calling `code` (a loop's function) can neither fail nor have an effect:
    /// its body is inert (`fuse::inert_body`) or a sibling loop ran it first
    /// (`shadowed`). Never a code on a cycle or this one.
    pub(crate) fn inert_code(&self, code: CodeId) -> bool {
        !self.recursive.contains(&code)
            && Some(code) != self.current
            && (self.shadowed.borrow().contains(&code)
                || fuse::inert_body(self.m, &self.m.code(code).body))
    }

    /// Whether `rhs`, in the code being rewritten, reads an array at that code's index
    /// where the code is a loop's element function and the array has the loop's
    /// length (`loop_counts`): such a read cannot fail.
    pub(crate) fn read_in_range(&self, rhs: &fluxion_core::Rhs) -> bool {
        let fluxion_core::Rhs::Prim(fluxion_core::Prim::Index, a) = rhs else {
            return false;
        };
        let Some(code) = self.current else {
            return false;
        };
        let Some(&n) = self.loop_counts.get(&code) else {
            return false;
        };
        let index = self.m.code(code).params.first().copied();
        index.is_some_and(|i| a[1] == fluxion_core::Atom::Var(i))
            && self.lengths.has_length(a[0], n)
    }

    /// Whether the body of `code` may be copied into this code's `span` source: not
    /// a code on a cycle (or this one: it would unfold), and, for code of another
    /// source that can fail, a copy into the user's code (whose faults are reported
    /// at the call: a prelude copy's spans name their inline site,
    /// `fluxion_core::inline_site`) — not user code into the prelude or generated code.
    pub(crate) fn may_copy(&self, code: CodeId, at: fluxion_core::Span) -> bool {
        if self.recursive.contains(&code) || Some(code) == self.current {
            return false;
        }
        let source = self.m.code(code);
        // The user's code into the same file's code, also where that is a prelude
        // function's copy at the user's call (`dot(r, r)` of a user's `build`): the
        // copied bindings keep their spans, so a fault is reported where it was.
        source.span.source == self.m.user_source(at)
            // A prelude function or a copy of one (not generated code: its faults are
            // its operator's), into the user's code.
            || ((source.span.is_prelude() || source.span.is_inline_site())
                && at.source != fluxion_core::PRELUDE_SOURCE)
            || fuse::inert_body(self.m, &source.body)
    }
}

/// The bindings all copies of one optimiser run may add beyond the program's size.
const GROWTH: usize = 2000;

/// The variables some lambda of `m` from `first` on captures (computed before each
/// pass: passes add lambdas and captures). Older codes cannot capture the variables of
/// the codes being optimised, which are newer.
fn captured_vars(m: &Module, first: usize) -> HashSet<VarId> {
    // Live lambdas only: a copied-from lambda, left behind unreachable, keeps
    // capturing variables whose copies are no longer read by a lambda.
    let live = live_from(m, first);
    m.codes[first..]
        .iter()
        .enumerate()
        .filter(|(i, c)| c.kind == fluxion_core::CodeKind::Lambda && live[first + i])
        .flat_map(|(_, c)| c.captures.iter().copied())
        .collect()
}

/// The pipeline, in order. `simplify` exposes copies and known closures, `inline`
/// puts known callees' bodies in place, `simplify` again removes the copies and
/// projections that leaves, `fuse` merges loops, `float` takes what does not change
/// out of them, `simplify` tidies their copies, `cse` merges what `simplify` made equal, `dce` removes what
/// all of them left unused.
pub const PASSES: &[Pass] = &[
    Pass {
        name: "simplify",
        run: simplify::simplify_body,
        late: false,
    },
    Pass {
        name: "inline",
        run: inline::inline_calls,
        late: false,
    },
    Pass {
        name: "simplify",
        run: simplify::simplify_body,
        late: false,
    },
    Pass {
        name: "unroll",
        run: unroll::unroll_small_loops,
        late: false,
    },
    Pass {
        name: "concat",
        run: concat::build_concats_of_slices,
        late: false,
    },
    Pass {
        name: "scan_sum",
        run: scan_sum::fuse_scans_into_sums,
        late: true,
    },
    Pass {
        name: "twins",
        run: twins::merge_twin_operands,
        late: false,
    },
    Pass {
        name: "unzip",
        run: unzip::unzip_tuple_loops,
        late: false,
    },
    Pass {
        name: "sink",
        run: sink::sink_loops,
        late: false,
    },
    Pass {
        name: "fuse",
        run: fuse::fuse_loops,
        late: false,
    },
    Pass {
        name: "preaccumulate",
        run: preaccumulate::preaccumulate_sums,
        late: true,
    },
    Pass {
        name: "float",
        run: float::float_invariants,
        late: false,
    },
    Pass {
        name: "simplify",
        run: simplify::simplify_body,
        late: false,
    },
    Pass {
        name: "cse",
        run: cse::eliminate_common_subexpressions,
        late: false,
    },
    Pass {
        name: "dce",
        run: dce::eliminate_dead_bindings,
        late: false,
    },
];

/// How often the pipeline runs at most: a second round inlines the calls fusion
/// exposed (a backpropagator's body, once its closure is built inside the fused loop)
/// and fuses what unzipping and sinking made adjacent; a third removes what that left
/// (a sum of zeros). A round that restructures nothing is the last.
pub const ROUNDS: usize = 3;

/// Time and code size after each pass.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// (pass, time spent, bindings in the optimised codes after it), one entry per
    /// place in [`PASSES`] (a pass that runs twice has two).
    pub passes: Vec<(&'static str, Duration, usize)>,
    /// Bindings before the first pass.
    pub before: usize,
}

impl Report {
    /// One line per pass, for `--time-passes`.
    pub fn render(&self) -> String {
        let mut out = format!("optimiser: {} bindings before\n", self.before);
        for (name, time, size) in &self.passes {
            out.push_str(&format!(
                "  {name:<10} {:>9.3} ms  {size} bindings\n",
                time.as_secs_f64() * 1e3
            ));
        }
        out
    }

    fn add(&mut self, index: usize, name: &'static str, time: Duration, size: usize) {
        match self.passes.get_mut(index) {
            Some(entry) => {
                entry.1 += time;
                entry.2 = size;
            }
            None => self.passes.push((name, time, size)),
        }
    }
}

/// Runs the pipeline on the codes of `m` from index `first` on (all of them, or those a
/// translation just added). In debug builds the verifier checks them after every pass;
/// the error names the pass.
pub fn optimize_codes_from(
    m: &mut Module,
    first: usize,
    stage: Stage,
    report: &mut Report,
) -> Result<(), String> {
    let all =
        |m: &Module| -> Vec<CodeId> { (first as u32..m.codes.len() as u32).map(CodeId).collect() };
    let before = live_size_from(m, first);
    report.before += before;
    let recursive = inline::recursive_codes(m, first);
    // What copying (inlining, fusion, unzipping) may add in this run, all codes
    // together: copies of copies cannot grow the program beyond a constant factor.
    let growth = std::cell::Cell::new(before + GROWTH);
    let shadowed = std::cell::RefCell::new(HashSet::new());
    // The code's size after the last pass run (a pass left for later reports it).
    let mut size = before;
    for round in 0..ROUNDS {
        let mut changed = false;
        for (index, pass) in PASSES.iter().enumerate() {
            let place = round * PASSES.len() + index;
            if pass.late && stage == Stage::BeforeAd {
                // In the report as a pass that did nothing (one entry per place).
                report.add(place, pass.name, Duration::ZERO, size);
                continue;
            }
            let start = Instant::now();
            let captured = captured_vars(m, first);
            let closure_sites = uses::closure_sites(m, first);
            let known_captures = uses::known_capture_closures(m, first, &closure_sites);
            let references = uses::code_references(m, first);
            let loop_counts = uses::loop_element_counts(m, first, &closure_sites);
            let lengths = lengths::Lengths::collect(m, first);
            // Codes a pass adds (copies of lambdas an inlined body makes) are optimised
            // by the passes after it.
            for c in all(m) {
                // A copy: the code stays readable while its body is rewritten (a
                // rule may look at the code of a closure it makes of itself).
                let mut body = m.codes[c.0 as usize].body.clone();
                let mut cx = Context {
                    m: &mut *m,
                    captured: &captured,
                    recursive: &recursive,
                    closure_sites: &closure_sites,
                    known_captures: &known_captures,
                    references: &references,
                    loop_counts: &loop_counts,
                    current: Some(c),
                    first,
                    changed: false,
                    growth: &growth,
                    shadowed: &shadowed,
                    lengths: &lengths,
                };
                (pass.run)(&mut cx, &mut body);
                changed |= cx.changed;
                m.codes[c.0 as usize].body = body;
            }
            size = live_size_from(m, first);
            report.add(place, pass.name, start.elapsed(), size);
            if cfg!(debug_assertions) {
                fluxion_core::verify::verify_codes_from(m, first).map_err(|errors| {
                    format!(
                        "internal error: the optimiser's `{}` pass made code that fails \
                         verification:\n{}",
                        pass.name,
                        fluxion_core::verify::describe(&errors)
                    )
                })?;
            }
        }
        // Another round only if this one restructured something (inlined, unzipped,
        // sank, fused or floated): simplification alone reaches its fixed point.
        if !changed {
            break;
        }
    }
    Ok(())
}

/// Bindings of the codes from `first` on that are reachable from the roots among
/// them (top-level and derived codes), not counting the codes inlining and fusion
/// copied from and left unreachable.
fn live_size_from(m: &Module, first: usize) -> usize {
    let live = live_from(m, first);
    (first..m.codes.len())
        .filter(|c| live[*c])
        .map(|c| fluxion_core::visit::count_bindings(&m.codes[c].body))
        .sum()
}

/// Which codes from `first` on are live: reachable from the top-level and derived
/// codes among them (what inlining and fusion copied from is not).
fn live_from(m: &Module, first: usize) -> Vec<bool> {
    let roots: Vec<CodeId> = (first..m.codes.len())
        .map(|i| CodeId(i as u32))
        .filter(|c| m.code(*c).kind == fluxion_core::CodeKind::TopLevel)
        .collect();
    reachable_from(m, roots, first)
}

/// Runs the pipeline on every code of `m` at `stage`.
pub fn optimize_module(m: &mut Module, stage: Stage, report: &mut Report) -> Result<(), String> {
    optimize_codes_from(m, 0, stage, report)
}

/// Whether each code of `m` is live: reachable by calls and closures from a root (a
/// top-level function or a code a transformation derived on its own). The codes that
/// inlining and fusion copied from are left in the module, unreachable.
pub fn live_codes(m: &Module) -> Vec<bool> {
    let top_level: Vec<CodeId> = m
        .codes
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind == fluxion_core::CodeKind::TopLevel)
        .map(|(i, _)| CodeId(i as u32))
        .collect();
    reachable_codes(m, &top_level)
}

/// Whether each code of `m` is reachable by calls and closures from `roots` or from a
/// code a transformation derived on its own.
pub fn reachable_codes(m: &Module, roots: &[CodeId]) -> Vec<bool> {
    reachable_from(m, roots.to_vec(), 0)
}

/// The codes from `first` on reachable by calls and closures from `roots` and the
/// derived codes among them (the walk does not enter older codes).
fn reachable_from(m: &Module, mut roots: Vec<CodeId>, first: usize) -> Vec<bool> {
    let mut live = vec![false; m.codes.len()];
    roots.extend(
        m.derived_codes
            .values()
            .copied()
            .filter(|c| c.0 as usize >= first),
    );
    let mut stack = roots;
    while let Some(c) = stack.pop() {
        if std::mem::replace(&mut live[c.0 as usize], true) {
            continue;
        }
        fluxion_core::visit::for_each_code_ref(&m.code(c).body, &mut |d| {
            if d.0 as usize >= first && !live[d.0 as usize] {
                stack.push(d);
            }
        });
    }
    live
}

/// The number of bindings of the codes reachable from `roots` and from the derived
/// codes (see [`reachable_codes`]).
pub fn live_size(m: &Module, roots: &[CodeId]) -> usize {
    let live = reachable_codes(m, roots);
    let codes: Vec<CodeId> = (0..m.codes.len() as u32)
        .map(CodeId)
        .filter(|c| live[c.0 as usize])
        .collect();
    size_of(m, &codes)
}

/// The number of bindings of `codes`, nested ones included.
pub fn size_of(m: &Module, codes: &[CodeId]) -> usize {
    codes
        .iter()
        .map(|c| fluxion_core::visit::count_bindings(&m.code(*c).body))
        .sum()
}
