//! The delta tape of reverse mode by dual numbers with deltas ([Delta] §7; issue 9):
//! run-time support the `--ad delta` translation will call.
//!
//! The monadic translation gives every delta a fresh id and appends its definition to
//! a list of bindings, so a dual number holds only `Zero` or `Var id` ([Delta] §7,
//! the classic tape of its §7.3). A definition here is a linear combination of earlier ids,
//! `id = Σ cᵢ·parentᵢ` (each primitive's partials from `fluxion-ad`'s calculus table),
//! or an input. The backward pass visits the ids from the last to the first, adding
//! each one's adjoint, scaled, into its parents': every definition is processed once,
//! so the sweep is linear in the tape (the paper's `eval` of a `Let`-nested delta).
//!
//! Representation: flat arrays (a start offset per node into one array of terms) and a
//! dense adjoint array indexed by id. Nothing is recursive — not the sweep, not `Drop` —
//! so a tape of millions of nodes cannot overflow the stack.

/// A delta's id on its tape. Id 0 is the zero delta (a constant's): it has no node's
/// definition and its adjoint is never read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeltaId(pub u32);

impl DeltaId {
    pub const ZERO: DeltaId = DeltaId(0);
}

/// A growing list of delta definitions, `Σ c·parent`, whose coefficients `c` are
/// reals (the tape of a reverse pass) or outer pairs ([`Tape2`]).
#[derive(Debug)]
pub struct Tape<C = f64> {
    /// Node `i`'s terms are `coefs[k]·parents[k]` for k in `starts[i]..starts[i + 1]`
    /// (two arrays: 12 bytes a real term, where pairs would be padded to 16).
    starts: Vec<u32>,
    coefs: Vec<C>,
    parents: Vec<u32>,
}

/// An outer pair: a value and the id of its delta on the outer tape.
pub type Outer = (f64, DeltaId);

/// The second tape of reverse over reverse (fluxion-ad's `delta_twice.rs`): the
/// inner tape of a `%delta_vjp` in delta-translated code, whose coefficients are
/// outer pairs. Its sweep is the first tape's, on outer pairs, each step recorded on
/// the outer tape.
pub type Tape2 = Tape<Outer>;

impl<C> Default for Tape<C> {
    fn default() -> Tape<C> {
        Tape::new()
    }
}

impl<C> Tape<C> {
    /// A tape holding only the zero delta.
    pub fn new() -> Tape<C> {
        Tape {
            starts: vec![0, 0],
            coefs: Vec::new(),
            parents: Vec::new(),
        }
    }

    /// Number of ids handed out, the zero delta included.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() <= 1
    }

    /// Number of terms (a second tape's sweep makes at most one outer node per term).
    pub fn terms(&self) -> usize {
        self.coefs.len()
    }

    /// A new input: a delta with no definition (its adjoint is a gradient entry).
    pub fn input(&mut self) -> DeltaId {
        let id = DeltaId(self.len() as u32);
        self.starts.push(self.coefs.len() as u32);
        id
    }

    /// A new delta `Σ c·parent`. Terms on the zero delta are left out (they add
    /// nothing); terms with a zero coefficient are kept (the sweep skips them). A
    /// delta left with no term is the zero delta itself: no node (a constant's
    /// arithmetic records nothing, as native code's `fx_tape_node`).
    pub fn push(&mut self, terms: impl IntoIterator<Item = (C, DeltaId)>) -> DeltaId {
        let id = DeltaId(self.len() as u32);
        let before = self.coefs.len();
        for (c, parent) in terms {
            debug_assert!(parent < id, "a delta refers only to earlier ids");
            if parent != DeltaId::ZERO {
                self.coefs.push(c);
                self.parents.push(parent.0);
            }
        }
        if self.coefs.len() == before {
            return DeltaId::ZERO;
        }
        self.starts.push(self.coefs.len() as u32);
        id
    }
}

impl Tape {
    /// The adjoint of every id, given the adjoints of some (the output cotangent): one
    /// sweep from the last id to the first.
    pub fn backward(&self, seeds: impl IntoIterator<Item = (DeltaId, f64)>) -> Vec<f64> {
        let mut adjoint = vec![0.0; self.len()];
        for (id, a) in seeds {
            if id != DeltaId::ZERO {
                adjoint[id.0 as usize] += a;
            }
        }
        for id in (1..self.len()).rev() {
            let a = adjoint[id];
            // A delta no path from the output reaches contributes nothing — not even
            // 0·∞ = NaN from dead code whose partials overflowed (forward mode never
            // looks at a dead binding's tangent either).
            if a == 0.0 {
                continue;
            }
            let (start, end) = (self.starts[id] as usize, self.starts[id + 1] as usize);
            for (&c, &parent) in self.coefs[start..end].iter().zip(&self.parents[start..end]) {
                // A zero partial passes nothing on, even an infinite adjoint: the rule
                // of every mode (`%lscale`; docs/decisions.md, "AD at non-smooth points").
                if c != 0.0 {
                    adjoint[parent as usize] += c * a;
                }
            }
        }
        adjoint
    }
}

/// The most directions one forward sweep carries ([`Tape::forward`]; native code's
/// `FX_COLUMNS`).
pub const COLUMNS: usize = 32;

impl Tape {
    /// The tangents of every id in `inputs.len()` directions at once, input j moving
    /// in lane j: one sweep from the first id to the last, `w = inputs.len()` lanes per
    /// id (`t[id * w + j]`). A zero partial passes nothing on, and neither does a zero
    /// tangent, even to an infinite partial: [`Tape::backward`]'s rules read forward.
    /// Native code's `fx_tape_columns` adds the same terms in the same order.
    pub fn forward(&self, inputs: &[DeltaId]) -> Vec<f64> {
        let w = inputs.len();
        let mut t = vec![0.0; self.len() * w];
        for (j, id) in inputs.iter().enumerate() {
            if *id != DeltaId::ZERO {
                t[id.0 as usize * w + j] = 1.0;
            }
        }
        for id in 1..self.len() {
            let (start, end) = (self.starts[id] as usize, self.starts[id + 1] as usize);
            let (below, rest) = t.split_at_mut(id * w);
            let ti = &mut rest[..w];
            for (&c, &parent) in self.coefs[start..end].iter().zip(&self.parents[start..end]) {
                let tp = &below[parent as usize * w..][..w];
                if c == 0.0 {
                    continue;
                }
                if c.is_finite() {
                    for (a, &b) in ti.iter_mut().zip(tp) {
                        *a += c * b;
                    }
                } else {
                    for (a, &b) in ti.iter_mut().zip(tp) {
                        if b != 0.0 {
                            *a += c * b;
                        }
                    }
                }
            }
        }
        t
    }
}

/// The coefficients of a preaccumulated sum (`%delta_sumbuild`): for each id below
/// the elements' mark, the sum over the elements of its adjoint in the element's own
/// sweep, by id.
#[derive(Debug, Default)]
pub struct Preaccumulated {
    coefs: std::collections::BTreeMap<u32, f64>,
}

impl Preaccumulated {
    /// `x` more for `id` (the zero delta and a zero `x` add nothing, as native code's
    /// `fx_pre_add`: the terms are the same set there).
    pub fn add(&mut self, id: DeltaId, x: f64) {
        if id == DeltaId::ZERO || x == 0.0 {
            return;
        }
        *self.coefs.entry(id.0).or_insert(0.0) += x;
    }

    /// The node's terms: each id reached with a coefficient other than 0, by
    /// increasing id (native code's `fx_pre_close` walks its bits in that order; a
    /// backward sweep meets each id once, so only a forward sweep's sum, `Tape::forward`,
    /// sees the order).
    pub fn terms(&self) -> impl Iterator<Item = (f64, DeltaId)> + '_ {
        (self.coefs.iter())
            .map(|(p, c)| (*c, DeltaId(*p)))
            .filter(|(c, _)| *c != 0.0)
    }
}

impl Tape {
    /// Drops the ids from `mark` on (an element of a preaccumulated sum, swept).
    pub fn truncate(&mut self, mark: usize) {
        let end = self.starts[mark] as usize;
        self.starts.truncate(mark + 1);
        self.coefs.truncate(end);
        self.parents.truncate(end);
    }

    /// The sweep of the ids from `mark` on, seeded with 1 at `seed` (≥ `mark`): what
    /// reaches an id below the mark goes into `acc` instead (the element's row of the
    /// sum's Jacobian). The updates are [`Tape::backward`]'s, in its order.
    pub fn sweep_into(&self, mark: usize, seed: DeltaId, acc: &mut Preaccumulated) {
        let mut adjoint = vec![0.0; self.len() - mark];
        adjoint[seed.0 as usize - mark] = 1.0;
        for id in (mark..self.len()).rev() {
            let a = adjoint[id - mark];
            if a == 0.0 {
                continue;
            }
            let (start, end) = (self.starts[id] as usize, self.starts[id + 1] as usize);
            for (&c, &parent) in self.coefs[start..end].iter().zip(&self.parents[start..end]) {
                if c != 0.0 {
                    match (parent as usize).checked_sub(mark) {
                        Some(local) => adjoint[local] += c * a,
                        None => acc.add(DeltaId(parent), c * a),
                    }
                }
            }
        }
    }
}

impl Tape2 {
    /// The adjoint of every id as an outer pair, given the seeds: one sweep from the
    /// last id to the first, `adj[p] += c·a` per term, an outer node where `c` or `a`
    /// has an outer delta.
    pub fn backward(
        &self,
        seeds: impl IntoIterator<Item = (DeltaId, Outer)>,
        outer: &mut Tape,
    ) -> Vec<Outer> {
        let mut adjoint = vec![(0.0, DeltaId::ZERO); self.len()];
        for (id, w) in seeds {
            if id != DeltaId::ZERO {
                let a = adjoint[id.0 as usize];
                adjoint[id.0 as usize] = add(outer, a, w);
            }
        }
        for id in (1..self.len()).rev() {
            let (a, aid) = adjoint[id];
            // As the first tape's sweep: nothing from a delta no path reaches.
            if a == 0.0 && aid == DeltaId::ZERO {
                continue;
            }
            let (start, end) = (self.starts[id] as usize, self.starts[id + 1] as usize);
            for k in start..end {
                let ((c, cid), p) = (self.coefs[k], self.parents[k] as usize);
                let (pv, pid) = adjoint[p];
                // The value's step is the first tape's (a zero partial or a zero
                // adjoint passes nothing on); its delta is d(c·a) = a·dc + c·da.
                let v = if c != 0.0 && a != 0.0 { pv + c * a } else { pv };
                let d = if cid == DeltaId::ZERO && aid == DeltaId::ZERO {
                    pid
                } else {
                    outer.push([(1.0, pid), (a, cid), (c, aid)])
                };
                adjoint[p] = (v, d);
            }
        }
        adjoint
    }
}

/// `u + w` of outer pairs: a node only where both have deltas.
fn add(outer: &mut Tape, (u, uid): Outer, (w, wid): Outer) -> Outer {
    let id = if uid == DeltaId::ZERO {
        wid
    } else if wid == DeltaId::ZERO {
        uid
    } else {
        outer.push([(1.0, uid), (1.0, wid)])
    };
    (u + w, id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f(x, y) = (x·y + sin x)·y at (2, 3): ∂f/∂x = (y + cos x)·y = 9 + 3·cos 2,
    /// ∂f/∂y = x·y + (x·y + sin x) = 12 + sin 2 (derived by hand).
    #[test]
    fn a_small_function_gets_its_gradient() {
        let (x, y) = (2.0_f64, 3.0_f64);
        let mut t = Tape::new();
        let (dx, dy) = (t.input(), t.input());
        let p = x * y;
        let dp = t.push([(y, dx), (x, dy)]);
        let s = x.sin();
        let ds = t.push([(x.cos(), dx)]);
        let q = p + s;
        let dq = t.push([(1.0, dp), (1.0, ds)]);
        let df = t.push([(y, dq), (q, dy)]);
        let adj = t.backward([(df, 1.0)]);
        assert!((adj[dx.0 as usize] - (9.0 + 3.0 * 2.0_f64.cos())).abs() < 1e-12);
        assert!((adj[dy.0 as usize] - (12.0 + 2.0_f64.sin())).abs() < 1e-12);
    }

    /// A shared delta (used twice) is processed once, with the sum of its uses'
    /// adjoints: d = 2·x, f = d + 3·d, so ∂f/∂x = 8.
    #[test]
    fn a_shared_delta_collects_every_use_once() {
        let mut t = Tape::new();
        let dx = t.input();
        let d = t.push([(2.0, dx)]);
        let f = t.push([(1.0, d), (3.0, d)]);
        assert_eq!(t.backward([(f, 1.0)])[dx.0 as usize], 8.0);
    }

    /// The forward sweep's columns are the backward sweeps' rows transposed: `J·eⱼ`
    /// and `eᵢᵀ·J` over a tape with a shared delta, a dead one with an infinite
    /// partial (which neither sweep lets through) and an input no output reads.
    #[test]
    fn forward_columns_are_backward_rows_transposed() {
        let mut t = Tape::new();
        let (a, b, c) = (t.input(), t.input(), t.input());
        let ab = t.push([(2.0, a), (-3.0, b)]);
        let dead = t.push([(f64::INFINITY, c)]);
        let y0 = t.push([(0.5, ab), (0.0, dead)]);
        let y1 = t.push([(4.0, ab), (1.0, a)]);
        let inputs = [a, b, c];
        let cols = t.forward(&inputs);
        for y in [y0, y1] {
            let row = t.backward([(y, 1.0)]);
            for (j, x) in inputs.iter().enumerate() {
                let forward = cols[y.0 as usize * inputs.len() + j];
                assert_eq!(forward, row[x.0 as usize], "∂{y:?}/∂{x:?}");
            }
        }
        // By hand: y0 = a - 1.5 b, y1 = 9 a - 12 b.
        assert_eq!(&cols[y0.0 as usize * 3..][..3], &[1.0, -1.5, 0.0]);
        assert_eq!(&cols[y1.0 as usize * 3..][..3], &[9.0, -12.0, 0.0]);
    }

    /// A preaccumulated sum's node lists its ids by increasing id whatever order the
    /// elements reached them in, as native code's `fx_pre_close` walks its bits: a
    /// forward sweep adds its terms in that order (found by review: 2⁵³ + 1 - 2⁵³ is 1
    /// or 0 by the order).
    #[test]
    fn a_preaccumulated_sum_lists_its_ids_in_order() {
        let mut acc = Preaccumulated::default();
        for (id, x) in [(5, 1.0), (3, 2.0), (5, 0.5), (4, -1.0), (3, -2.0)] {
            acc.add(DeltaId(id), x);
        }
        let terms: Vec<(f64, DeltaId)> = acc.terms().collect();
        assert_eq!(terms, vec![(-1.0, DeltaId(4)), (1.5, DeltaId(5))]);
    }

    /// Constants' zero deltas add no terms; seeding the zero delta does nothing.
    #[test]
    fn the_zero_delta_is_never_a_parent() {
        let mut t = Tape::new();
        let dx = t.input();
        let f = t.push([(5.0, DeltaId::ZERO), (2.0, dx)]);
        let adj = t.backward([(f, 1.0), (DeltaId::ZERO, 7.0)]);
        assert_eq!(adj[dx.0 as usize], 2.0);
        assert_eq!(adj[0], 0.0);
    }

    /// A delta whose terms are all on the zero delta (a constant's arithmetic) is the
    /// zero delta: no node, so the tape holds only what depends on an input.
    #[test]
    fn a_delta_of_constants_makes_no_node() {
        let mut t = Tape::new();
        let dx = t.input();
        assert_eq!(t.push([(3.0, DeltaId::ZERO)]), DeltaId::ZERO);
        assert_eq!(t.len(), 2);
        let f = t.push([(2.0, dx)]);
        assert_eq!(t.backward([(f, 1.0)])[dx.0 as usize], 2.0);
    }

    /// A chain of two million deltas: the sweep and the drop are iterative.
    /// x_{k+1} = 1.000001·x_k, so ∂x_n/∂x_0 = 1.000001^n.
    #[test]
    fn a_deep_tape_does_not_overflow_the_stack() {
        let n = 2_000_000;
        let mut t = Tape::new();
        let x0 = t.input();
        let mut last = x0;
        for _ in 0..n {
            last = t.push([(1.000001, last)]);
        }
        let adj = t.backward([(last, 1.0)]);
        let expected = 1.000001_f64.powi(n);
        assert!((adj[x0.0 as usize] / expected - 1.0).abs() < 1e-9);
        drop(t);
    }

    /// A dead delta (not reached from the output) whose partial overflowed adds
    /// nothing to its parents: d = ∞·x is unused, f = 2·x, so ∂f/∂x = 2, not NaN.
    #[test]
    fn a_dead_delta_with_an_infinite_partial_adds_nothing() {
        let mut t = Tape::new();
        let dx = t.input();
        let _dead = t.push([(f64::INFINITY, dx)]);
        let f = t.push([(2.0, dx)]);
        assert_eq!(t.backward([(f, 1.0)])[dx.0 as usize], 2.0);
    }
}
