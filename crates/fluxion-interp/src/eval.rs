//! The evaluator: walks slot-resolved code ([`crate::compile`]) over frames of values.
//!
//! Deep recursion: the evaluator recurses on the Rust stack, so the driver runs it on a
//! thread with a large stack and sets [`Interp::set_stack_limit`]; every call checks
//! how much stack is used and stops with "stack depth exceeded" before it runs out.

use std::cell::RefCell;
use std::rc::Rc;

use fluxion_ad::{AdMode, FwdMode};
use fluxion_core::{CodeId, Module, Prim, Span, Type};

use crate::compile::{CAtom, CBody, CCode, CRhs, compile_code};
use crate::memory::{MemoryBudget, OverBudget};
use crate::prims::{arith, order, real_arith};
use crate::value::{Closure, Value};

/// A runtime fault in the program: where and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeError {
    pub span: Span,
    pub message: String,
}

pub type EvalResult<T> = Result<T, RuntimeError>;

pub(crate) fn fail<T>(span: Span, message: impl Into<String>) -> EvalResult<T> {
    Err(RuntimeError {
        span,
        message: message.into(),
    })
}

#[cold]
fn over_budget(e: OverBudget, span: Span) -> RuntimeError {
    RuntimeError { span, message: e.0 }
}

/// Stores a binding's value. A slot is written once per call and starts as `Unit`:
/// testing that inline skips a call of the drop glue per binding.
#[inline(always)]
fn store(slot: &mut Value, v: Value) {
    if matches!(slot, Value::Unit) {
        std::mem::forget(std::mem::replace(slot, v));
    } else {
        *slot = v;
    }
}

/// Set by [`interrupt`]: every call then stops the evaluation with a runtime error.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Stops every evaluation under way at its next call ("evaluation interrupted"): the
/// REPL's Ctrl-C. One atomic store, so a signal handler may call it.
pub fn interrupt() {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Forgets an [`interrupt`] no evaluation has met yet (before a new one starts).
pub fn clear_interrupt() {
    INTERRUPTED.store(false, std::sync::atomic::Ordering::Relaxed);
}

/// Evaluates Core code. Holds the module (which AD may grow at run time) and the
/// slot-compiled form of each code, made on first call.
pub struct Interp {
    module: RefCell<Module>,
    /// The `--ad` mode: which algorithm the reverse-mode operators use.
    mode: AdMode,
    /// The `--fwd` mode: which algorithm `jvp` uses.
    fwd: FwdMode,
    /// Whether codes derived at run time are optimised (`--opt`).
    opt: fluxion_opt::OptLevel,
    /// Source id of library code (the prelude), whose faults are reported at the call
    /// from the user's code.
    library_source: Option<u32>,
    compiled: RefCell<Vec<Option<Rc<CCode>>>>,
    stack_base: usize,
    stack_budget: usize,
    memory: MemoryBudget,
    /// The tapes of the reverse passes under way (`--ad delta`), innermost last.
    pub(crate) tapes: RefCell<Vec<crate::tape::Tape>>,
    /// The second tapes of reverse over reverse (`%delta2_open`), innermost last.
    pub(crate) tapes2: RefCell<Vec<crate::tape::Tape2>>,
    /// Whether a `%delta_sumbuild` is preaccumulating (its elements' own ones do not).
    pub(crate) preaccumulating: std::cell::Cell<bool>,
    /// Set where code made ahead of time cannot go on (`resolved.rs`, or a walk too
    /// deep for the stack): the run is made again on the module as written
    /// ([`Interp::run_code`]).
    pub(crate) handed_over: std::cell::Cell<bool>,
}

/// Address of a local: how deep the Rust stack currently is.
#[inline(always)]
fn stack_position() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

impl Interp {
    /// An interpreter for a module expanded with the default mode.
    pub fn new(module: Module) -> Interp {
        Interp::with_mode(module, AdMode::default())
    }

    /// An interpreter for a module whose operators were expanded with `mode`.
    pub fn with_mode(module: Module, mode: AdMode) -> Interp {
        Interp {
            module: RefCell::new(module),
            mode,
            fwd: FwdMode::default(),
            opt: fluxion_opt::OptLevel::default(),
            library_source: None,
            compiled: RefCell::new(Vec::new()),
            stack_base: stack_position(),
            stack_budget: 0,
            memory: MemoryBudget::UNLIMITED,
            tapes: RefCell::new(Vec::new()),
            tapes2: RefCell::new(Vec::new()),
            preaccumulating: std::cell::Cell::new(false),
            handed_over: std::cell::Cell::new(false),
        }
    }

    /// Allows the evaluator to use `bytes` of stack below the current position; deeper
    /// recursion is a clean runtime error. Without a limit, depth is unchecked.
    pub fn set_stack_limit(&mut self, bytes: usize) {
        self.stack_base = stack_position();
        self.stack_budget = bytes;
    }

    /// Allows the evaluation to hold `bytes` of heap on top of what this thread holds
    /// now; more is a clean runtime error ("memory budget of … exceeded"). Counting
    /// needs [`crate::CountingAlloc`] as the global allocator; without it only single
    /// large requests are checked. Without a limit, memory is unchecked.
    pub fn set_memory_limit(&mut self, bytes: usize) {
        self.memory = MemoryBudget::starting_now(bytes);
    }

    /// The memory budget in bytes (`usize::MAX` when there is none).
    pub fn memory_limit(&self) -> usize {
        self.memory.limit()
    }

    pub(crate) fn memory(&self) -> &MemoryBudget {
        &self.memory
    }

    /// Fails unless `bytes` more fit in the memory budget: called with its size
    /// before an array whose length the program chose is allocated.
    pub(crate) fn reserve(&self, bytes: usize, span: Span) -> EvalResult<()> {
        self.memory.reserve(bytes).map_err(|e| over_budget(e, span))
    }

    pub fn ad_mode(&self) -> AdMode {
        self.mode
    }

    /// Chooses the algorithm of `jvp` (dual numbers unless set).
    pub fn set_fwd_mode(&mut self, fwd: FwdMode) {
        self.fwd = fwd;
    }

    pub fn fwd_mode(&self) -> FwdMode {
        self.fwd
    }

    /// Whether the codes differentiation derives at run time are optimised (on unless
    /// set).
    pub fn set_opt_level(&mut self, opt: fluxion_opt::OptLevel) {
        self.opt = opt;
    }

    pub fn opt_level(&self) -> fluxion_opt::OptLevel {
        self.opt
    }

    pub fn module(&self) -> std::cell::Ref<'_, Module> {
        self.module.borrow()
    }

    pub fn module_mut(&self) -> std::cell::RefMut<'_, Module> {
        self.module.borrow_mut()
    }

    fn compiled(&self, id: CodeId) -> Rc<CCode> {
        let i = id.0 as usize;
        if let Some(Some(c)) = self.compiled.borrow().get(i) {
            return c.clone();
        }
        let c = Rc::new(compile_code(&self.module.borrow(), id));
        let mut table = self.compiled.borrow_mut();
        if table.len() <= i {
            table.resize(i + 1, None);
        }
        table[i] = Some(c.clone());
        c
    }

    /// The checks every call makes: stack depth and the memory budget. Every loop a
    /// program can write runs through calls (recursion, or a closure applied by a
    /// built-in), so a program cannot allocate without bound between two checks.
    #[inline]
    pub(crate) fn check_limits(&self, span: Span) -> EvalResult<()> {
        if INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
            clear_interrupt();
            return fail(span, "evaluation interrupted (Ctrl-C)");
        }
        if self.stack_budget > 0
            && self.stack_base.saturating_sub(stack_position()) > self.stack_budget
        {
            self.stack_exceeded();
            return fail(span, "stack depth exceeded (recursion too deep)");
        }
        self.memory.check().map_err(|e| over_budget(e, span))
    }

    /// Code made ahead of time walks a value once per level of its nesting (a list's
    /// cells), with the program's stack: where that runs out, the run is made again
    /// on the module as written, whose run-time walks take any depth, as native code
    /// hands over a value too deep for its own walks. (A program's own recursion too
    /// deep fails there again, with the same error.)
    #[cold]
    fn stack_exceeded(&self) {
        if self
            .module
            .try_borrow()
            .is_ok_and(|m| !m.unresolved.is_empty())
        {
            self.handed_over.set(true);
        }
    }

    /// [`Interp::call_code`] of a top-level function, run again on the module as
    /// written (its operators translated at run time) where the derivative code made
    /// ahead of time hands the run over: what native code does when `fx_entry` returns
    /// 2. Programs have no effects, so running again from the start is the same run.
    pub fn run_code(&self, id: CodeId, args: Vec<Value>, span: Span) -> EvalResult<Value> {
        let first = self.call_code(id, &[], args.clone(), span);
        if first.is_ok() || !self.handed_over.take() {
            return first;
        }
        {
            let mut m = self.module_mut();
            m.swap_unresolved();
            m.unresolved.clear();
            // No tape of tapes of a closure chosen at run time: its translations were
            // made for the resolved module (one missing is why the run is here), and
            // the translations that choose one are made again without.
            m.twice.clear();
            forget_tapes_of_tapes_of_unknown_closures(&mut m);
        }
        self.compiled.borrow_mut().clear();
        self.tapes.borrow_mut().clear();
        self.tapes2.borrow_mut().clear();
        self.preaccumulating.set(false);
        self.call_code(id, &[], args, span)
    }

    /// Calls a top-level function or lambda code with captured values and arguments
    /// (any exact-size collection: the interpreter passes arrays and iterators, so a
    /// call allocates nothing but its frame).
    pub fn call_code(
        &self,
        id: CodeId,
        env: &[Value],
        args: impl IntoIterator<Item = Value, IntoIter: ExactSizeIterator>,
        span: Span,
    ) -> EvalResult<Value> {
        self.check_limits(span)?;
        let code = self.compiled(id);
        let args = args.into_iter();
        if env.len() != code.n_captures || args.len() != code.n_params {
            return fail(
                span,
                "internal error: call with the wrong number of arguments",
            );
        }
        let mut frame: Vec<Value> = Vec::with_capacity(code.n_slots);
        frame.extend_from_slice(env);
        frame.extend(args);
        frame.resize_with(code.n_slots, || Value::Unit);
        self.body(&mut frame, &code.body)
            .map_err(|e| self.attribute_to_caller(e, id, span))
    }

    /// Code of the library source (the prelude) is not the user's: a fault inside it,
    /// reached from the user's code, is reported at the user's call, naming the
    /// library function. Nested library calls keep the fault's span until the
    /// outermost one.
    #[cold]
    fn attribute_to_caller(&self, e: RuntimeError, id: CodeId, call: Span) -> RuntimeError {
        // A fault in a prelude function's inlined copy in this code: at its call.
        if e.span.is_inline_site() {
            let (span, message) = self.module().attribute(e.span, e.message);
            return RuntimeError { span, message };
        }
        match self.library_source {
            // Derivative code the compiler made (a push forward's helpers) has no
            // place of its own: its fault is the operator's, at the user's call.
            Some(lib) if e.span == Span::default() && call.source != lib => RuntimeError {
                span: call,
                message: e.message,
            },
            // A call inside a prelude function's inlined copy: the copy's site names
            // the function (`Module::attribute`).
            Some(lib) if e.span.source == lib && call.is_inline_site() => RuntimeError {
                span: call,
                message: e.message,
            },
            Some(lib) if e.span.source == lib && call.source != lib => {
                let name = self.module().source_name(id).to_string();
                RuntimeError {
                    span: call,
                    message: format!("{} (in `{name}`, a prelude function)", e.message),
                }
            }
            _ => e,
        }
    }

    /// Faults in code from `source` (the prelude) are reported at the call that
    /// reached them from other code.
    pub fn set_library_source(&mut self, source: u32) {
        self.library_source = Some(source);
    }

    /// Applies a function value.
    pub fn apply(
        &self,
        f: &Value,
        args: impl IntoIterator<Item = Value, IntoIter: ExactSizeIterator>,
        span: Span,
    ) -> EvalResult<Value> {
        match f {
            Value::Closure(c) => self.call_code(c.code, &c.env, args, span),
            _ => fail(span, "internal error: call of a non-function"),
        }
    }

    fn atom(frame: &[Value], a: &CAtom) -> Value {
        match a {
            CAtom::Slot(s) => frame[*s as usize].clone(),
            CAtom::Const(v) => v.clone(),
        }
    }

    /// An atom's value, borrowed (no reference count changes).
    #[inline]
    fn atom_ref<'a>(frame: &'a [Value], a: &'a CAtom) -> &'a Value {
        match a {
            CAtom::Slot(s) => &frame[*s as usize],
            CAtom::Const(v) => v,
        }
    }

    /// `%delta(c₁, id₁, …)` on borrowed operands (no argument vector).
    fn delta_on_atoms(&self, frame: &[Value], args: &[CAtom], span: Span) -> EvalResult<i64> {
        let terms = args
            .chunks(2)
            .map(|t| (Self::atom_ref(frame, &t[0]), Self::atom_ref(frame, &t[1])));
        self.push_delta(terms, span)
    }

    fn atoms(frame: &[Value], atoms: &[CAtom]) -> Vec<Value> {
        atoms.iter().map(|a| Self::atom(frame, a)).collect()
    }

    /// Evaluates a body. Nested `if`/`match` bodies are entered without Rust
    /// recursion (an explicit stack of pending bodies), so that only function calls
    /// deepen the Rust stack: deep recursion in programs gets further on the same
    /// stack.
    fn body(&self, frame: &mut [Value], body: &CBody) -> EvalResult<Value> {
        // (body, next binding, slot awaiting the body's result)
        let mut pending: Vec<(&CBody, usize, u32)> = Vec::new();
        let (mut current, mut next) = (body, 0);
        loop {
            if let Some(b) = current.binds.get(next) {
                next += 1;
                let slot = b.slot as usize;
                match &b.rhs {
                    CRhs::If(..) | CRhs::Match(..) => {
                        let nested = self.branch(frame, &b.rhs, b.span)?;
                        // A branch whose value is the body's result needs no return point.
                        let tail = next == current.binds.len()
                            && matches!(current.result, CAtom::Slot(s) if s == b.slot);
                        if !tail {
                            pending.push((current, next, b.slot));
                        }
                        (current, next) = (nested, 0);
                        continue;
                    }
                    // Fast paths for most of a forward-mode translation: real arithmetic,
                    // projections of dual numbers, pairs of reals. Each stores its value
                    // straight into the slot: no call, and no copy of a freshly built
                    // value through a temporary (which stalls the store buffer).
                    CRhs::Arith(p, x, y) => {
                        if let (Value::Real(x), Value::Real(y)) =
                            (Self::atom_ref(frame, x), Self::atom_ref(frame, y))
                        {
                            let r = real_arith(*p, *x, *y);
                            store(&mut frame[slot], Value::Real(r));
                            continue;
                        }
                    }
                    CRhs::Delta(args) => {
                        let id = self.delta_on_atoms(frame, args, b.span)?;
                        store(&mut frame[slot], Value::Int(id));
                        continue;
                    }
                    CRhs::Proj(a, i @ (0 | 1)) => match Self::atom_ref(frame, a) {
                        Value::Dual(p, t) => {
                            let r = if *i == 0 { *p } else { *t };
                            store(&mut frame[slot], Value::Real(r));
                            continue;
                        }
                        Value::RealInt(p, id) => {
                            let r = if *i == 0 {
                                Value::Real(*p)
                            } else {
                                Value::Int(*id)
                            };
                            store(&mut frame[slot], r);
                            continue;
                        }
                        _ => {}
                    },
                    CRhs::Tuple(args) => {
                        if let [x, y] = &args[..]
                            && let (Value::Real(p), Value::Real(t)) =
                                (Self::atom_ref(frame, x), Self::atom_ref(frame, y))
                        {
                            let d = Value::Dual(*p, *t);
                            store(&mut frame[slot], d);
                            continue;
                        }
                        if let [x, y] = &args[..]
                            && let (Value::Real(p), Value::Int(i)) =
                                (Self::atom_ref(frame, x), Self::atom_ref(frame, y))
                        {
                            let d = Value::RealInt(*p, *i);
                            store(&mut frame[slot], d);
                            continue;
                        }
                    }
                    _ => {}
                }
                let v = self.rhs(frame, &b.rhs, b.span)?;
                store(&mut frame[slot], v);
                continue;
            }
            let result = Self::atom(frame, &current.result);
            match pending.pop() {
                None => return Ok(result),
                Some((parent, resume, slot)) => {
                    frame[slot as usize] = result;
                    (current, next) = (parent, resume);
                }
            }
        }
    }

    /// For `if` and `match`, the body to run (binding a match's fields).
    fn branch<'b>(&self, frame: &mut [Value], rhs: &'b CRhs, span: Span) -> EvalResult<&'b CBody> {
        Ok(match rhs {
            CRhs::If(c, t, e) => match Self::atom(frame, c) {
                Value::Bool(true) => t,
                Value::Bool(false) => e,
                _ => return fail(span, "internal error: `if` on a non-boolean"),
            },
            CRhs::Match(s, arms, default, names) => {
                let scrutinee = Self::atom(frame, s);
                let Value::Enum(tag, fields) = &scrutinee else {
                    return fail(span, "internal error: `match` on a non-enum");
                };
                let tag = *tag;
                match arms.get(tag as usize) {
                    Some(Some((slots, body))) => {
                        for (slot, v) in slots.iter().zip(fields.iter()) {
                            frame[*slot as usize] = v.clone();
                        }
                        body
                    }
                    _ => match default {
                        Some(d) => d,
                        None => {
                            let name = names.get(tag as usize).map_or("?", |n| n.as_str());
                            return fail(
                                span,
                                format!("non-exhaustive match: no arm matches `{name}`"),
                            );
                        }
                    },
                }
            }
            _ => return fail(span, "internal error: not a branch"),
        })
    }

    /// A primitive applied to atoms; up to three arguments are passed from the stack.
    fn prim_on_atoms(
        &self,
        frame: &[Value],
        p: Prim,
        args: &[CAtom],
        ty: &Type,
        span: Span,
    ) -> EvalResult<Value> {
        let at = |a| Self::atom(frame, a);
        match args {
            [] => self.prim(p, &[], ty, span),
            [x] => self.prim(p, &[at(x)], ty, span),
            [x, y] => self.prim(p, &[at(x), at(y)], ty, span),
            [x, y, z] => self.prim(p, &[at(x), at(y), at(z)], ty, span),
            _ => self.prim(p, &Self::atoms(frame, args), ty, span),
        }
    }

    fn proj(t: &Value, i: usize, span: Span) -> EvalResult<Value> {
        match t.tuple_get(i) {
            Some(v) => Ok(v),
            None => fail(span, "internal error: projection of a non-tuple"),
        }
    }

    /// The value of a right-hand side other than a branch.
    #[inline(never)]
    fn rhs(&self, frame: &[Value], rhs: &CRhs, span: Span) -> EvalResult<Value> {
        Ok(match rhs {
            CRhs::Atom(a) => Self::atom(frame, a),
            CRhs::Delta(args) => Value::Int(self.delta_on_atoms(frame, args, span)?),
            CRhs::Arith(p, x, y) => {
                return arith(*p, Self::atom_ref(frame, x), Self::atom_ref(frame, y), span);
            }
            CRhs::Compare(p, x, y) => order(*p, Self::atom_ref(frame, x), Self::atom_ref(frame, y)),
            CRhs::Prim(p, args, ty) => return self.prim_on_atoms(frame, *p, args, ty, span),
            CRhs::Call(f, args) => {
                let f = Self::atom_ref(frame, f);
                return self.apply(f, args.iter().map(|a| Self::atom(frame, a)), span);
            }
            CRhs::CallDirect(c, args) => {
                let args = args.iter().map(|a| Self::atom(frame, a));
                return self.call_code(*c, &[], args, span);
            }
            CRhs::Closure(c, args) => Value::Closure(Rc::new(Closure {
                code: *c,
                env: Self::atoms(frame, args),
            })),
            CRhs::Tuple(args) => Value::tuple(Self::atoms(frame, args)),
            CRhs::Proj(a, i) => return Self::proj(Self::atom_ref(frame, a), *i, span),
            CRhs::Array(args) => Value::array_from(args.iter().map(|a| Self::atom(frame, a))),
            CRhs::Ctor(tag, args) => Value::Enum(*tag, Self::atoms(frame, args).into()),
            CRhs::If(..) | CRhs::Match(..) => {
                return fail(span, "internal error: branch evaluated as a value");
            }
        })
    }
}

/// Drops from the memo of derived codes every translation that applies, or calls code
/// that applies, `%chad_of(f, 4)` (a tape of tapes of a closure chosen at run time), so
/// that the module as written translates those operators again by its own rules.
fn forget_tapes_of_tapes_of_unknown_closures(m: &mut fluxion_core::Module) {
    use fluxion_core::visit::{for_each_binding, for_each_code_ref};
    let n = m.codes.len();
    let mut chooses = vec![false; n];
    let mut work = Vec::new();
    // Who calls or makes a closure of each code, to walk the reach backwards once.
    let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, c) in m.codes.iter().enumerate() {
        for_each_binding(&c.body, &mut |b| {
            if let fluxion_core::Rhs::Prim(p, args) = &b.rhs
                && fluxion_core::prim::is_chad_of_twice(*p, args)
                && !chooses[i]
            {
                chooses[i] = true;
                work.push(i);
            }
        });
        for_each_code_ref(&c.body, &mut |d| callers[d.0 as usize].push(i));
    }
    while let Some(d) = work.pop() {
        for &i in &callers[d] {
            if !chooses[i] {
                chooses[i] = true;
                work.push(i);
            }
        }
    }
    m.derived_codes.retain(|_, c| !chooses[c.0 as usize]);
}
