//! Exact max-min fair rates by progressive filling.
//!
//! Each flow crosses a set of resources (a link direction, a GPU's NVLink port) with a weight:
//! the fraction of the flow that crosses it (1 for a single path; 1/k on each of k sprayed
//! paths). Each flow also has a fairness weight φ ≥ 0 (1 for one connection; the number of
//! connections when several identical ones are merged into one flow). All unfrozen flows grow
//! together, flow `f` at rate φ_f·t; when a resource fills, every flow crossing it is frozen at
//! its current rate. The result is the weighted max-min fair allocation: every flow has a
//! saturated resource on which no other flow has a larger rate per unit of φ.
//!
//! Levels only rise as flows freeze, so a lazy queue of resource levels finds the next
//! bottleneck: the first levels sorted once, a heap for the levels put back
//! ([`crate::level_queue`]); the whole solve is O((F·L + R) log R) for F flows of L resources.
//! It ends when the last flow freezes.
//!
//! Only *binding* resources take part: a resource whose flows, each at the most it could ever
//! get (its lowest capacity over coefficient, alone), still leave it below capacity can never
//! fill, so it never freezes a flow and is left out of the filling and of the components; every
//! flow's lowest resource is binding, so every flow keeps one.
//!
//! Connected components of the flow–resource graph over binding resources are independent in
//! max-min fairness, and the solver keeps them independent in its arithmetic too: the only state
//! shared between resources, the last level reached (which guards against rounding pulling a
//! level below it), is kept per component. So solving one component alone ([`SparseSolver`],
//! with its resources renumbered in the same order) gives the same bits as solving it among
//! others.

use crate::level_queue::{key_level, level_key, LevelQueue};

/// Flows as compressed rows: for each flow, the resources it crosses and the fraction of the
/// flow on each, plus its fairness weight.
#[derive(Clone, Debug, Default)]
pub struct FlowPaths {
    offsets: Vec<u32>,
    resources: Vec<u32>,
    fractions: Vec<f64>,
    fairness: Vec<f64>,
}

impl FlowPaths {
    /// No flows.
    pub fn new() -> Self {
        Self {
            offsets: vec![0],
            ..Self::default()
        }
    }

    /// Add a flow crossing `(resource, fraction)` pairs, with fairness weight `phi`; returns its
    /// index. A resource listed twice counts twice.
    pub fn push(&mut self, path: &[(u32, f64)], phi: f64) -> usize {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.resources.extend(path.iter().map(|&(r, _)| r));
        self.fractions.extend(path.iter().map(|&(_, w)| w));
        self.offsets
            .push(u32::try_from(self.resources.len()).expect("fewer than 2^32 path entries"));
        self.fairness.push(phi);
        self.fairness.len() - 1
    }

    /// Remove every flow, keeping the memory.
    pub fn clear(&mut self) {
        self.offsets.clear();
        self.offsets.push(0);
        self.resources.clear();
        self.fractions.clear();
        self.fairness.clear();
    }

    /// Number of flows.
    pub fn len(&self) -> usize {
        self.fairness.len()
    }

    /// Whether there are no flows.
    pub fn is_empty(&self) -> bool {
        self.fairness.is_empty()
    }

    /// The `(resource, fraction)` pairs of flow `f`.
    pub fn path(&self, f: usize) -> impl Iterator<Item = (u32, f64)> + '_ {
        let (a, b) = (self.offsets[f] as usize, self.offsets[f + 1] as usize);
        self.resources[a..b]
            .iter()
            .copied()
            .zip(self.fractions[a..b].iter().copied())
    }

    /// The fairness weight φ of flow `f`.
    pub fn fairness(&self, f: usize) -> f64 {
        self.fairness[f]
    }

    /// Append all flows of `other`.
    pub fn extend(&mut self, other: &FlowPaths) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let base = *self.offsets.last().expect("offsets start with 0");
        self.offsets
            .extend(other.offsets.iter().skip(1).map(|&o| base + o));
        self.resources.extend_from_slice(&other.resources);
        self.fractions.extend_from_slice(&other.fractions);
        self.fairness.extend_from_slice(&other.fairness);
    }

    /// Load each resource carries when flow `f` runs at `rates[f]`.
    pub fn loads(&self, n_resources: usize, rates: &[f64]) -> Vec<f64> {
        let mut load = vec![0.0; n_resources];
        for (f, &r) in rates.iter().enumerate() {
            for (e, w) in self.path(f) {
                load[e as usize] += w * r;
            }
        }
        load
    }
}

/// The weighted max-min fair rate of every flow, in the unit of `capacity`.
///
/// A flow that crosses no resource with a positive fraction is unconstrained and gets
/// `f64::INFINITY`; a flow with φ = 0 gets 0. Panics if a resource index is out of range.
pub fn max_min_fair(capacity: &[f64], flows: &FlowPaths) -> Vec<f64> {
    Filling::default().rates(capacity, flows)
}

/// The working arrays of one progressive filling ([`max_min_fair`]), kept between solves by a
/// caller that solves many times ([`SparseSolver`]); each solve sets every entry it reads.
#[derive(Clone, Debug, Default)]
struct Filling {
    /// Per resource: the load its flows put on it, each at the most it could ever get.
    bound: Vec<f64>,
    /// Per resource: whether it can fill.
    binding: Vec<bool>,
    /// Per resource: where its flows start in `members` (one more entry at the end).
    start: Vec<u32>,
    /// Per resource: where its next flow goes in `members`, while they are listed.
    fill: Vec<u32>,
    /// The flows of each binding resource, resource after resource.
    members: Vec<u32>,
    /// Per resource: the sum of fraction · φ over its unfrozen flows.
    active_coef: Vec<f64>,
    /// Per resource: how many of its flows are unfrozen.
    active_n: Vec<u32>,
    /// Per resource: its parent in the union-find of components.
    parent: Vec<u32>,
    /// Per component root: the last level reached.
    t_last: Vec<f64>,
    /// Per resource: the load of its frozen flows.
    frozen_load: Vec<f64>,
    /// The filling order's storage between solves.
    queue: LevelQueue,
}

/// `v` as `n` copies of `value`, keeping its memory.
fn reset<T: Clone>(v: &mut Vec<T>, n: usize, value: T) {
    v.clear();
    v.resize(n, value);
}

impl Filling {
    /// [`max_min_fair`] in these arrays.
    fn rates(&mut self, capacity: &[f64], flows: &FlowPaths) -> Vec<f64> {
        let n_res = capacity.len();
        let n_flows = flows.len();
        // The most each flow could ever get (per unit of φ), and from that which resources can
        // fill.
        let bound = &mut self.bound;
        reset(bound, n_res, 0.0);
        for f in 0..n_flows {
            let phi = flows.fairness(f);
            if phi <= 0.0 {
                continue;
            }
            let most = flows
                .path(f)
                .filter(|&(_, w)| w > 0.0)
                .map(|(e, w)| alone_level(capacity[e as usize], w * phi))
                .fold(f64::INFINITY, f64::min);
            for (e, w) in flows.path(f) {
                if w > 0.0 {
                    bound[e as usize] += w * phi * most;
                }
            }
        }
        let binding = &mut self.binding;
        binding.clear();
        binding.extend((0..n_res).map(|e| is_binding(bound[e], capacity[e])));
        // Transpose: flows crossing each binding resource, with coefficient fraction·φ.
        let start = &mut self.start;
        reset(start, n_res + 1, 0);
        for f in 0..n_flows {
            if flows.fairness(f) <= 0.0 {
                continue;
            }
            for (e, w) in flows.path(f) {
                if w > 0.0 && binding[e as usize] {
                    start[e as usize + 1] += 1;
                }
            }
        }
        for i in 0..n_res {
            start[i + 1] += start[i];
        }
        let fill = &mut self.fill;
        fill.clear();
        fill.extend_from_slice(start);
        let members = &mut self.members;
        reset(members, start[n_res] as usize, 0);
        let active_coef = &mut self.active_coef;
        reset(active_coef, n_res, 0.0);
        let active_n = &mut self.active_n;
        reset(active_n, n_res, 0);
        // Flows on at least one binding resource: the filling ends when the last of them
        // freezes (every resource left in the queue then has no unfrozen flow).
        let mut unfrozen = 0usize;
        for f in 0..n_flows {
            let phi = flows.fairness(f);
            if phi <= 0.0 {
                continue;
            }
            let mut on_binding = false;
            for (e, w) in flows.path(f) {
                if w > 0.0 && binding[e as usize] {
                    let e = e as usize;
                    members[fill[e] as usize] = f as u32;
                    fill[e] += 1;
                    active_coef[e] += w * phi;
                    active_n[e] += 1;
                    on_binding = true;
                }
            }
            unfrozen += usize::from(on_binding);
        }
        // Components of the flow–resource graph (union-find over resources): each keeps its
        // own last level, so a component's arithmetic does not depend on the others.
        let parent = &mut self.parent;
        parent.clear();
        parent.extend(0..n_res as u32);
        for f in 0..n_flows {
            if flows.fairness(f) <= 0.0 {
                continue;
            }
            let mut first = None;
            for (e, w) in flows.path(f) {
                if w <= 0.0 || !binding[e as usize] {
                    continue;
                }
                let root = find_root(parent, e);
                match first {
                    None => first = Some(root),
                    Some(r) if r != root => parent[root as usize] = r,
                    Some(_) => {}
                }
            }
        }
        let t_last = &mut self.t_last;
        reset(t_last, n_res, 0.0);
        let frozen_load = &mut self.frozen_load;
        reset(frozen_load, n_res, 0.0);
        let mut rate = vec![f64::NAN; n_flows];
        // Resources by level (lazy: a resource's key may be below its level now).
        let queue = &mut self.queue;
        queue.refill(
            (0..n_res)
                .filter(|&e| active_n[e] > 0)
                .map(|e| level_key(capacity[e].max(0.0) / active_coef[e], e as u32)),
        );
        while unfrozen > 0 {
            let Some(key) = queue.pop() else {
                break;
            };
            let (stored, e) = (key_level(key), key as u32);
            let ei = e as usize;
            if active_n[ei] == 0 {
                continue;
            }
            let component = find_root(parent, e) as usize;
            let level = ((capacity[ei] - frozen_load[ei]).max(0.0) / active_coef[ei])
                .max(t_last[component]);
            // Its level rose since it was pushed: back into the queue, unless it would come out
            // first again at once (the same level recomputed from the same state), which skips
            // the push and the pop and changes nothing.
            if level > stored {
                let key = level_key(level, e);
                if queue.peek().is_some_and(|top| top < key) {
                    queue.push(key);
                    continue;
                }
            }
            let t = level;
            t_last[component] = t;
            for i in start[ei]..start[ei + 1] {
                let f = members[i as usize] as usize;
                if !rate[f].is_nan() {
                    continue;
                }
                let phi = flows.fairness(f);
                let r = phi * t;
                rate[f] = r;
                unfrozen -= 1;
                for (e2, w) in flows.path(f) {
                    if w > 0.0 && binding[e2 as usize] {
                        let e2 = e2 as usize;
                        frozen_load[e2] += w * r;
                        active_n[e2] -= 1;
                        if active_n[e2] == 0 {
                            active_coef[e2] = 0.0;
                        } else {
                            active_coef[e2] -= w * phi;
                        }
                    }
                }
            }
        }
        for (f, r) in rate.iter_mut().enumerate() {
            if r.is_nan() {
                *r = if flows.fairness(f) > 0.0 {
                    f64::INFINITY
                } else {
                    0.0
                };
            }
        }
        rate
    }
}

/// The level at which a resource of `capacity` fills with one flow of coefficient `coef` (> 0)
/// alone on it: a bound on that flow's rate per unit of φ.
pub(crate) fn alone_level(capacity: f64, coef: f64) -> f64 {
    capacity.max(0.0) / coef
}

/// Relative margin under which a resource's bound counts as reaching its capacity: far above
/// rounding in the bound's sum, far below any real difference in load.
const BINDING_SLACK: f64 = 1e-9;

/// Whether a resource of `capacity` can fill when the flows on it, each at its own bound, put at
/// most `bound` on it ([`max_min_fair`]'s module note). A resource that cannot fill never
/// freezes a flow, so leaving it out changes no rate.
pub(crate) fn is_binding(bound: f64, capacity: f64) -> bool {
    bound >= capacity.max(0.0) * (1.0 - BINDING_SLACK)
}

/// The root of `e`'s set, halving the path on the way.
fn find_root(parent: &mut [u32], mut e: u32) -> u32 {
    while parent[e as usize] != e {
        let up = parent[parent[e as usize] as usize];
        parent[e as usize] = up;
        e = up;
    }
    e
}

/// Job-level max-min fair paces. Each job is a set of flows that move together: flow `f` of
/// a job carries `shares[f]` of the job's pace, so the job's pace `b` puts
/// `Σ_f shares[f] · fraction(f, e) · b` on resource `e`. Paces are max-min fair over the
/// jobs (every job's pace rises together; a job stops when a resource it uses fills), so a
/// job paced by one slow resource uses no more of the others than that pace needs and the
/// rest goes to the other jobs. Exact progressive filling; no iteration. Returns each job's
/// pace (infinite when the job crosses no resource).
pub fn job_max_min(capacity: &[f64], jobs: &[(&FlowPaths, &[f64])]) -> Vec<f64> {
    max_min_fair(capacity, &aggregate_jobs(capacity.len(), jobs))
}

/// One flow per job whose fraction on each resource is the job's load there per unit pace.
pub fn aggregate_jobs(n_resources: usize, jobs: &[(&FlowPaths, &[f64])]) -> FlowPaths {
    let mut scratch = vec![0.0f64; n_resources];
    let mut touched: Vec<u32> = Vec::new();
    let mut out = FlowPaths::new();
    let mut entry: Vec<(u32, f64)> = Vec::new();
    for (flows, shares) in jobs {
        aggregate_into(&mut scratch, &mut touched, flows, shares, &mut entry);
        out.push(&entry, 1.0);
    }
    out
}

/// Add one flow's load per unit pace (`share` × its fraction on each resource of `path`) to
/// `sums`, listing in `touched` each resource reached for the first time. The one place a
/// job's load is summed, so every sum of it is the same bits.
pub(crate) fn add_load(
    sums: &mut [f64],
    touched: &mut Vec<u32>,
    path: impl Iterator<Item = (u32, f64)>,
    share: f64,
) {
    for (e, w) in path {
        let a = w * share;
        if a <= 0.0 {
            continue;
        }
        if sums[e as usize] == 0.0 {
            touched.push(e);
        }
        sums[e as usize] += a;
    }
}

/// One job's load per unit pace on each resource it uses, in resource order, into `entry`.
/// `scratch` is all zeros on entry and on return; `touched` is scratch space.
fn aggregate_into(
    scratch: &mut [f64],
    touched: &mut Vec<u32>,
    flows: &FlowPaths,
    shares: &[f64],
    entry: &mut Vec<(u32, f64)>,
) {
    touched.clear();
    for (f, &s) in shares.iter().enumerate() {
        add_load(scratch, touched, flows.path(f), s);
    }
    touched.sort_unstable();
    entry.clear();
    for &e in touched.iter() {
        entry.push((e, scratch[e as usize]));
        scratch[e as usize] = 0.0;
    }
}

/// Sort `ids`, all distinct, ascending. Many IDs in a narrow range (a component's resources)
/// are set as bits of a bitmap over that range and read back in order, which costs the range in
/// words instead of a comparison sort; few or widely spread IDs are sorted. `bits` is scratch.
fn sort_distinct(ids: &mut Vec<u32>, bits: &mut Vec<u64>) {
    const BITMAP_FROM: usize = 64;
    if ids.len() < BITMAP_FROM {
        ids.sort_unstable();
        return;
    }
    let (lo, hi) = ids
        .iter()
        .fold((u32::MAX, 0), |(lo, hi), &e| (lo.min(e), hi.max(e)));
    let (first_word, words) = ((lo / 64) as usize, (hi / 64 - lo / 64) as usize + 1);
    // Reading a word is far cheaper than a comparison sort's log₂ n steps per ID.
    if words > ids.len() * 4 {
        ids.sort_unstable();
        return;
    }
    bits.clear();
    bits.resize(words, 0);
    for &e in ids.iter() {
        bits[e as usize / 64 - first_word] |= 1 << (e % 64);
    }
    let n = ids.len();
    ids.clear();
    for (w, &word) in bits.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            let base = (first_word + w) * 64;
            ids.push((base + rest.trailing_zeros() as usize) as u32);
            rest &= rest - 1;
        }
    }
    debug_assert_eq!(ids.len(), n, "the IDs were distinct");
}

/// Job-level max-min over a few jobs of a large fabric, at a cost in the resources they touch
/// rather than in the fabric: jobs are aggregated rows ([`SparseSolver::aggregate`]); a solve
/// renumbers the resources its rows touch in ascending order and runs [`max_min_fair`] on those
/// alone. The per-resource scratch is sized to the fabric once and reused across calls. For a
/// set of rows that is a union of whole components, the paces are bit-identical to
/// [`job_max_min`] over the whole fabric (see the module note).
#[derive(Clone, Debug)]
pub struct SparseSolver {
    /// Per resource: all zeros between calls (aggregation sums here).
    sums: Vec<f64>,
    /// Per resource: its local number in the current solve, or `u32::MAX`.
    local: Vec<u32>,
    touched: Vec<u32>,
    resources: Vec<u32>,
    capacity: Vec<f64>,
    paths: FlowPaths,
    entry: Vec<(u32, f64)>,
    /// Scratch for [`sort_distinct`].
    bits: Vec<u64>,
    filling: Filling,
}

impl SparseSolver {
    /// Scratch space for a fabric of `n_resources` resources.
    pub fn new(n_resources: usize) -> Self {
        Self {
            sums: vec![0.0; n_resources],
            local: vec![u32::MAX; n_resources],
            touched: Vec::new(),
            resources: Vec::new(),
            capacity: Vec::new(),
            paths: FlowPaths::new(),
            entry: Vec::new(),
            bits: Vec::new(),
            filling: Filling::default(),
        }
    }

    /// A job's aggregated row: its load per unit pace on each resource, in resource order (the
    /// row [`aggregate_jobs`] makes for it).
    pub fn aggregate(&mut self, flows: &FlowPaths, shares: &[f64]) -> Vec<(u32, f64)> {
        aggregate_into(
            &mut self.sums,
            &mut self.touched,
            flows,
            shares,
            &mut self.entry,
        );
        self.entry.clone()
    }

    /// Job-level max-min paces of `rows` (in the order given) on a fabric of `capacity`.
    pub fn solve(&mut self, capacity: &[f64], rows: &[&[(u32, f64)]]) -> Vec<f64> {
        self.resources.clear();
        for row in rows {
            for &(e, _) in row.iter() {
                if self.local[e as usize] == u32::MAX {
                    self.local[e as usize] = 0;
                    self.resources.push(e);
                }
            }
        }
        sort_distinct(&mut self.resources, &mut self.bits);
        self.capacity.clear();
        for (i, &e) in self.resources.iter().enumerate() {
            self.local[e as usize] = i as u32;
            self.capacity.push(capacity[e as usize]);
        }
        self.paths.clear();
        for row in rows {
            self.entry.clear();
            self.entry
                .extend(row.iter().map(|&(e, w)| (self.local[e as usize], w)));
            self.paths.push(&self.entry, 1.0);
        }
        for &e in &self.resources {
            self.local[e as usize] = u32::MAX;
        }
        self.filling.rates(&self.capacity, &self.paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn classic_three_flows_two_links() {
        // Link 0 (cap 1): flows A, B. Link 1 (cap 2): flows B, C. A = B = 0.5, C = 1.5.
        let mut p = FlowPaths::new();
        p.push(&[(0, 1.0)], 1.0);
        p.push(&[(0, 1.0), (1, 1.0)], 1.0);
        p.push(&[(1, 1.0)], 1.0);
        let r = max_min_fair(&[1.0, 2.0], &p);
        assert_eq!(r, vec![0.5, 0.5, 1.5]);
    }

    #[test]
    fn sprayed_flow_and_fairness_weights() {
        // Flow 0 is split over resources 0 and 1 (cap 1 each); flow 1 (φ = 2) uses resource 1.
        // Level t: res 1 load 0.5t + 2t = 1 → t = 0.4; flow 0 = 0.4, flow 1 = 0.8;
        // then nothing else can grow.
        let mut p = FlowPaths::new();
        p.push(&[(0, 0.5), (1, 0.5)], 1.0);
        p.push(&[(1, 1.0)], 2.0);
        let r = max_min_fair(&[1.0, 1.0], &p);
        assert!(
            (r[0] - 0.4).abs() < 1e-12 && (r[1] - 0.8).abs() < 1e-12,
            "{r:?}"
        );
    }

    #[test]
    fn extend_appends_paths() {
        let mut a = FlowPaths::new();
        a.push(&[(0, 1.0)], 1.0);
        let mut b = FlowPaths::new();
        b.push(&[(1, 0.5), (2, 0.5)], 2.0);
        b.push(&[(3, 1.0)], 1.0);
        a.extend(&b);
        assert_eq!(a.len(), 3);
        assert_eq!(a.path(1).collect::<Vec<_>>(), vec![(1, 0.5), (2, 0.5)]);
        assert_eq!(a.path(2).collect::<Vec<_>>(), vec![(3, 1.0)]);
        assert_eq!(a.fairness(1), 2.0);
        let mut empty = FlowPaths::default();
        empty.extend(&b);
        assert_eq!(empty.path(0).count(), 2);
    }

    #[test]
    fn unconstrained_flow_is_infinite() {
        let mut p = FlowPaths::new();
        p.push(&[], 1.0);
        assert_eq!(max_min_fair(&[], &p), vec![f64::INFINITY]);
    }

    /// Exact rationals for the reference solver (small numbers only).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Q(i128, i128);

    fn gcd(a: i128, b: i128) -> i128 {
        if b == 0 {
            a.abs()
        } else {
            gcd(b, a % b)
        }
    }

    impl Q {
        fn new(n: i128, d: i128) -> Q {
            assert!(d != 0);
            let g = gcd(n, d).max(1);
            let s = if d < 0 { -1 } else { 1 };
            Q(s * n / g, s * d / g)
        }
        fn add(self, o: Q) -> Q {
            Q::new(self.0 * o.1 + o.0 * self.1, self.1 * o.1)
        }
        fn sub(self, o: Q) -> Q {
            Q::new(self.0 * o.1 - o.0 * self.1, self.1 * o.1)
        }
        fn mul(self, o: Q) -> Q {
            Q::new(self.0 * o.0, self.1 * o.1)
        }
        fn div(self, o: Q) -> Q {
            Q::new(self.0 * o.1, self.1 * o.0)
        }
        fn lt(self, o: Q) -> bool {
            self.0 * o.1 < o.0 * self.1
        }
        fn f(self) -> f64 {
            self.0 as f64 / self.1 as f64
        }
    }

    /// A naive reference: at each round, compute every resource's level exactly, take the
    /// minimum and freeze every unfrozen flow on every resource at that minimum.
    fn reference(cap: &[i64], flows: &[(Vec<(usize, Q)>, Q)]) -> Vec<Q> {
        let mut rate: Vec<Option<Q>> = vec![None; flows.len()];
        loop {
            let mut best: Option<Q> = None;
            let mut levels = vec![None; cap.len()];
            for (e, &c) in cap.iter().enumerate() {
                let mut frozen = Q(0, 1);
                let mut coef = Q(0, 1);
                for (f, (path, phi)) in flows.iter().enumerate() {
                    for &(r, w) in path {
                        if r == e {
                            match rate[f] {
                                Some(x) => frozen = frozen.add(w.mul(x)),
                                None => coef = coef.add(w.mul(*phi)),
                            }
                        }
                    }
                }
                if coef.0 > 0 {
                    let l = Q(i128::from(c), 1).sub(frozen).div(coef);
                    levels[e] = Some(l);
                    if best.is_none_or(|b| l.lt(b)) {
                        best = Some(l);
                    }
                }
            }
            let Some(t) = best else { break };
            for (e, l) in levels.iter().enumerate() {
                if *l == Some(t) {
                    for (f, (path, phi)) in flows.iter().enumerate() {
                        if rate[f].is_none() && path.iter().any(|&(r, _)| r == e) {
                            rate[f] = Some(phi.mul(t));
                        }
                    }
                }
            }
        }
        rate.into_iter()
            .map(|r| r.expect("every flow crosses a resource"))
            .collect()
    }

    /// Capacities, and flows as (resource, k) pairs (fraction 1/k) with a fairness weight.
    type Instance = (Vec<i64>, Vec<(Vec<(usize, i128)>, i128)>);

    fn instance() -> impl Strategy<Value = Instance> {
        (1usize..7).prop_flat_map(|n_res| {
            (
                prop::collection::vec(1i64..20, n_res),
                prop::collection::vec(
                    (
                        prop::collection::btree_map(0..n_res, 1i128..4, 1..=n_res.min(4)),
                        1i128..4,
                    )
                        .prop_map(|(m, phi)| (m.into_iter().collect::<Vec<_>>(), phi)),
                    1..9,
                ),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn matches_exact_reference_and_bottleneck_property((cap, raw) in instance()) {
            // Fractions 1/k (k in 1..4) as sprayed paths produce; φ in 1..4.
            let flows: Vec<(Vec<(usize, Q)>, Q)> = raw
                .iter()
                .map(|(p, phi)| (p.iter().map(|&(r, k)| (r, Q::new(1, k))).collect(), Q(*phi, 1)))
                .collect();
            let expected = reference(&cap, &flows);
            let mut paths = FlowPaths::new();
            for (p, phi) in &flows {
                let v: Vec<(u32, f64)> = p.iter().map(|&(r, w)| (r as u32, w.f())).collect();
                paths.push(&v, phi.f());
            }
            let capf: Vec<f64> = cap.iter().map(|&c| c as f64).collect();
            let got = max_min_fair(&capf, &paths);
            for (g, e) in got.iter().zip(&expected) {
                let e = e.f();
                prop_assert!((g - e).abs() <= 1e-9 * e.abs().max(1e-12), "got {g}, expected {e}");
            }
            // Defining property: feasible, and every flow has a saturated resource on which its
            // rate per unit of φ is the largest.
            let load = paths.loads(capf.len(), &got);
            for (e, l) in load.iter().enumerate() {
                prop_assert!(*l <= capf[e] * (1.0 + 1e-9));
            }
            for f in 0..paths.len() {
                let norm = got[f] / paths.fairness(f);
                let has_bottleneck = paths.path(f).any(|(e, _)| {
                    let e = e as usize;
                    load[e] >= capf[e] * (1.0 - 1e-9)
                        && (0..paths.len()).all(|g| {
                            !paths.path(g).any(|(e2, _)| e2 as usize == e)
                                || got[g] / paths.fairness(g) <= norm * (1.0 + 1e-9)
                        })
                });
                prop_assert!(has_bottleneck, "flow {f} has no bottleneck");
            }
        }
    }

    #[test]
    fn a_paced_job_hands_its_unused_share_back() {
        // Job A: half its bytes on R0, half on R1 (capacity 0.2). Job B: all on R0 (cap 1).
        // Flow-level max-min gives A's R0 flow and B 0.5 each; A can only use 0.2 of R0 (its
        // R1 flow paces it at 0.4), so B gets the remaining 0.8 of R0.
        let mut a = FlowPaths::new();
        a.push(&[(0, 1.0)], 1.0);
        a.push(&[(1, 1.0)], 1.0);
        let mut b = FlowPaths::new();
        b.push(&[(0, 1.0)], 1.0);
        let paces = job_max_min(&[1.0, 0.2], &[(&a, &[0.5, 0.5]), (&b, &[1.0])]);
        assert!((paces[0] - 0.4).abs() < 1e-12, "{paces:?}");
        assert!((paces[1] - 0.8).abs() < 1e-12, "{paces:?}");
        // The per-flow solver alone would leave B at 0.5.
        let mut all = a.clone();
        all.extend(&b);
        assert!((max_min_fair(&[1.0, 0.2], &all)[2] - 0.5).abs() < 1e-12);
    }

    /// Jobs of up to 3 flows each: resource, 1/k fraction, share numerator (shares are n/6).
    type JobInstance = (Vec<i64>, Vec<Vec<(Vec<(usize, i128)>, i128)>>);

    fn job_instance() -> impl Strategy<Value = JobInstance> {
        (1usize..5).prop_flat_map(|n_res| {
            let flow = (
                prop::collection::btree_map(0..n_res, 1i128..3, 1..=n_res.min(3))
                    .prop_map(|m| m.into_iter().collect::<Vec<_>>()),
                1i128..6,
            );
            (
                prop::collection::vec(1i64..12, n_res),
                prop::collection::vec(prop::collection::vec(flow, 1..4), 1..5),
            )
        })
    }

    /// Brute force for two jobs: the smaller pace of the max-min fair pair is the largest
    /// `min(b0, b1)` of any feasible pair; searched on a grid of 400 steps per job.
    fn brute_force_min(cap: &[f64], coef: &[Vec<f64>]) -> (f64, f64) {
        let alone: Vec<f64> = coef
            .iter()
            .map(|c| {
                c.iter()
                    .zip(cap)
                    .filter(|(a, _)| **a > 0.0)
                    .map(|(a, k)| k / a)
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        let (s0, s1) = (alone[0] / 400.0, alone[1] / 400.0);
        let mut best = 0.0f64;
        for i in 0..=400 {
            let b0 = i as f64 * s0;
            // The largest b1 feasible with b0.
            let b1 = (0..cap.len())
                .filter(|&e| coef[1][e] > 0.0)
                .map(|e| (cap[e] - coef[0][e] * b0) / coef[1][e])
                .fold(alone[1], f64::min);
            if b1 < 0.0 || (0..cap.len()).any(|e| coef[0][e] * b0 > cap[e] + 1e-9) {
                continue;
            }
            best = best.max(b0.min(b1));
        }
        (best, s0.max(s1))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn job_paces_match_exact_reference_and_brute_force((cap, jobs) in job_instance()) {
            // Exact: each job as one rational flow with its summed coefficients.
            let mut exact_flows: Vec<(Vec<(usize, Q)>, Q)> = Vec::new();
            let mut coef_f: Vec<Vec<f64>> = Vec::new();
            let mut paths: Vec<FlowPaths> = Vec::new();
            let mut shares: Vec<Vec<f64>> = Vec::new();
            for job in &jobs {
                let mut coef: Vec<Q> = vec![Q(0, 1); cap.len()];
                let mut p = FlowPaths::new();
                let mut sh = Vec::new();
                for (path, num) in job {
                    let share = Q::new(*num, 6);
                    for &(r, k) in path {
                        coef[r] = coef[r].add(share.mul(Q::new(1, k)));
                    }
                    let v: Vec<(u32, f64)> =
                        path.iter().map(|&(r, k)| (r as u32, 1.0 / k as f64)).collect();
                    p.push(&v, 1.0);
                    sh.push(share.f());
                }
                coef_f.push(coef.iter().map(|q| q.f()).collect());
                exact_flows.push((
                    coef.iter().enumerate().filter(|(_, q)| q.0 > 0).map(|(r, q)| (r, *q)).collect(),
                    Q(1, 1),
                ));
                paths.push(p);
                shares.push(sh);
            }
            let expected = reference(&cap, &exact_flows);
            let capf: Vec<f64> = cap.iter().map(|&c| c as f64).collect();
            let refs: Vec<(&FlowPaths, &[f64])> =
                paths.iter().zip(&shares).map(|(p, s)| (p, s.as_slice())).collect();
            let got = job_max_min(&capf, &refs);
            for (g, e) in got.iter().zip(&expected) {
                let e = e.f();
                prop_assert!((g - e).abs() <= 1e-9 * e.abs().max(1e-12), "got {g}, expected {e}");
            }
            if jobs.len() == 2 {
                // The smaller pace is the best worst case any feasible pair achieves.
                let (brute, step) = brute_force_min(&capf, &coef_f);
                let min = got[0].min(got[1]);
                prop_assert!(min >= brute - 1e-9 && min <= brute + step + 1e-9,
                    "got {got:?}, brute-force min {brute}");
            }
            // Defining property: feasible, and every job has a saturated resource on which no
            // other job runs faster.
            let load: Vec<f64> = (0..capf.len())
                .map(|e| coef_f.iter().zip(&got).map(|(c, b)| c[e] * b).sum())
                .collect();
            for (e, l) in load.iter().enumerate() {
                prop_assert!(*l <= capf[e] * (1.0 + 1e-9));
            }
            for j in 0..got.len() {
                let ok = (0..capf.len()).any(|e| {
                    coef_f[j][e] > 0.0
                        && load[e] >= capf[e] * (1.0 - 1e-9)
                        && (0..got.len()).all(|k| coef_f[k][e] == 0.0 || got[k] <= got[j] * (1.0 + 1e-9))
                });
                prop_assert!(ok, "job {j} has no bottleneck");
            }
        }
    }

    proptest! {
        /// Distinct IDs come out ascending whichever way they are sorted: dense ranges take the
        /// bitmap, sparse or short ones the comparison sort.
        #[test]
        fn sort_distinct_sorts(
            ids in proptest::collection::btree_set(0u32..5000, 0..400),
            offset in 0u32..1_000_000,
            shuffle in any::<u64>(),
        ) {
            let mut v: Vec<u32> = ids.iter().map(|&e| e + offset).collect();
            let expected = v.clone();
            // A deterministic shuffle.
            let mut x = shuffle | 1;
            for k in (1..v.len()).rev() {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                v.swap(k, (x % (k as u64 + 1)) as usize);
            }
            let mut bits = vec![u64::MAX; 3]; // stale scratch must not matter
            sort_distinct(&mut v, &mut bits);
            prop_assert_eq!(v, expected);
        }
    }
}
