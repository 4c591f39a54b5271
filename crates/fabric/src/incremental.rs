//! Incremental evaluation: a persistent set of running jobs on one fabric, each routed once when
//! it starts, whose rates are re-solved only over the jobs a change can affect.
//!
//! Design note (2026-11-30). [`FabricState`] is what a simulator keeps between events. A job
//! that starts ([`FabricState::start`]) is routed once; its flows are folded into one aggregated
//! row (its load per unit pace on each resource, [`SparseSolver::aggregate`]) and its ideal bus
//! bandwidth is solved then, alone; the flows themselves are dropped. A job that ends
//! ([`FabricState::end`]) leaves its row.
//!
//! Each resource knows its users (in ascending job ID) and whether it is *binding*: whether its
//! users, each at the most it could ever get alone, can fill it (the test [`max_min_fair`] makes;
//! a resource that cannot fill never paces anyone). Jobs depend on each other only through
//! binding resources, so [`FabricState::solve`] re-solves the connected components of the
//! job–resource graph over binding resources that contain a started job or a job that shared a
//! binding resource with an ended one; every other job keeps its pace, which max-min fairness
//! guarantees is unchanged. A component is solved by [`SparseSolver`] on its jobs' binding
//! entries, jobs in ascending ID and resources renumbered in ascending order, so the paces are
//! bit-identical to solving every running job from scratch in ascending ID with
//! [`Fabric::solve`] (tested against that on random churn): the bounds are summed in the same
//! order, and every resource left out is one the full solve leaves out too.
//!
//! Jobs live in a slab (slots reused in order), so the component search touches no map; a start
//! or an end costs its row's resources and their users, a solve the touched components. What the
//! solver reads of a job (its reduced row: the entries on resources it shares and can fill,
//! plus its lowest private one) is patched entry by entry as resources change class, not
//! rebuilt from the row: the solver's bits do not depend on the order of a row's entries, so
//! the patched row is kept unordered (the churn test checks it against one built whole).
//!
//! [`max_min_fair`]: crate::max_min_fair

use std::collections::BTreeMap;

use smallvec::SmallVec;

use topology::Cluster;

use crate::collective::{Collective, Rank};
use crate::error::FabricError;
use crate::maxmin::{alone_level, is_binding, FlowPaths, SparseSolver};
use crate::model::{ideal_routing, Fabric, JobResult, JobTraffic, RoutedJob};
use crate::routing::RoutingConfig;

/// The running jobs of one fabric and their rates, kept up to date change by change.
#[derive(Debug)]
pub struct FabricState<'c> {
    fabric: Fabric<'c>,
    cfg: RoutingConfig,
    solver: SparseSolver,
    /// Running job ID → its slot in `jobs`.
    slots: BTreeMap<u64, u32>,
    /// The running jobs; `None` for a free slot.
    jobs: Vec<Option<StateJob>>,
    /// Free slots, reused last-freed first.
    free: Vec<u32>,
    /// Per resource, what a start or an end reads and writes there ([`Res`]).
    res: Vec<Res>,
    /// Per resource, its class ([`PRIVATE`], [`SLACK`] or [`CONTENDED`]): apart from `res`,
    /// so a scan of a row for its reduced row ([`build_reduced`]) reads one byte per entry.
    class: Vec<u8>,
    /// IDs of jobs whose component must be re-solved.
    dirty: Vec<u64>,
    /// Contended resources an ended job left: the components of their users must be re-solved.
    dirty_resources: Vec<u32>,
    /// Per resource, the solve in which it was last reached (component search).
    resource_seen: Vec<u64>,
    /// Per slot, the solve in which its job was last reached (component search).
    job_seen: Vec<u64>,
    /// Current solve number.
    generation: u64,
    /// Ideal paces by [`Fabric::alone_pace_grouped`] (approximate runs).
    grouped_ideal: bool,
    /// Ideal paces already computed, by ranks and collective: under the ideal (adaptive, one
    /// QP) routing a job's route reads no job ID, so its ideal is a function of both (asked
    /// again for a network-aware probe's candidates and for jobs landing on the same GPUs).
    /// Emptied when it holds [`KNOWN_IDEALS`] entries.
    ideals: BTreeMap<(Vec<Rank>, Collective), f64>,
}

/// How many ideal paces a [`FabricState`] keeps before it empties its cache.
const KNOWN_IDEALS: usize = 4096;

/// What the state keeps of one resource, side by side: all that a start or an end reads and
/// writes there (one memory fetch where four arrays took four).
#[derive(Clone, Debug, Default)]
struct Res {
    /// The running jobs whose rows cross it, in ascending job ID; most resources have one to
    /// three, kept in place (no second memory fetch for them).
    users: SmallVec<[User; 3]>,
    /// The bound its users put on it (each at its most), summed as they come and go: decides
    /// its class unless too close to call ([`FabricState::update_class`]).
    bound: f64,
    /// Its users' loads per unit pace summed as they come and go: where it fills if all of them
    /// run at one pace ([`FabricState::provisional`]).
    load_sum: f64,
    /// Its capacity (the fabric's).
    capacity: f64,
}

/// A user of a resource: a running job's slot and where the resource is in its row (what a
/// change of class reads of each user, without a search of its row).
#[derive(Clone, Copy, Debug, Default)]
struct User {
    slot: u32,
    k: u32,
}

/// A running job: what [`Fabric::job_result`] needs (flows dropped), its row and its pace.
#[derive(Debug)]
struct StateJob {
    id: u64,
    routed: RoutedJob,
    /// Its load per unit pace on each resource it crosses, in resource order.
    row: Vec<(u32, f64)>,
    /// The most its pace could ever be: its lowest level alone ([`alone_level`]).
    most: f64,
    /// Indices into `row` by level alone ascending, then resource: where the lowest private
    /// entry is looked for ([`build_reduced`]).
    by_level: Vec<u32>,
    /// Per entry of `row`: its place in `by_level`.
    rank: Vec<u32>,
    /// What the solver needs of the row ([`build_reduced`]), in no particular order (the
    /// solver's bits do not depend on the order of a row's entries): built whole at the start,
    /// then patched entry by entry as resources change class ([`FabricState::refresh_reduced`]).
    reduced: Vec<(u32, f64)>,
    /// Per entry of `reduced`: its index in `row`.
    reduced_k: Vec<u32>,
    /// Per entry of `row`: its place in `reduced`, or [`ABSENT`].
    in_reduced: Vec<u32>,
    /// The entry of `row` kept as the lowest private one ([`build_reduced`]), if any.
    lowest_private: Option<u32>,
    /// Entries of `row` whose resource changed class since `reduced` was patched.
    changed: Vec<u32>,
    /// The lowest private entry may have changed since `reduced` was patched.
    private_moved: bool,
    /// `reduced` was built (at the job's first refresh).
    built: bool,
    busbw_gbps: f64,
}

/// Not in the reduced row.
const ABSENT: u32 = u32::MAX;

impl<'c> FabricState<'c> {
    /// No jobs running on `cluster`'s fabric, routed under `cfg`.
    pub fn new(cluster: &'c Cluster, cfg: RoutingConfig) -> Self {
        let fabric = Fabric::new(cluster);
        let n_res = fabric.n_resources();
        let res = fabric
            .capacity()
            .iter()
            .map(|&capacity| Res {
                capacity,
                ..Res::default()
            })
            .collect();
        Self {
            fabric,
            cfg,
            solver: SparseSolver::new(n_res),
            slots: BTreeMap::new(),
            jobs: Vec::new(),
            free: Vec::new(),
            res,
            class: vec![PRIVATE; n_res],
            dirty: Vec::new(),
            dirty_resources: Vec::new(),
            resource_seen: vec![0; n_res],
            job_seen: Vec::new(),
            generation: 0,
            grouped_ideal: false,
            ideals: BTreeMap::new(),
        }
    }

    /// Sum each started job's ideal pace with [`Fabric::alone_pace_grouped`] (each leaf pair's
    /// sprayed load once): the same quantity up to rounding, not the same bits; for runs that
    /// approximate anyway (network rounds).
    pub fn with_grouped_ideal(mut self, grouped: bool) -> Self {
        self.grouped_ideal = grouped;
        self.ideals.clear();
        self
    }

    /// Job `id` starts: route it (its QP numbers from `id`, as [`Fabric::route`]) and solve its
    /// ideal bus bandwidth. Its pace is known after the next [`FabricState::solve`]. An `id`
    /// already running is replaced.
    pub fn start(&mut self, id: u64, job: &JobTraffic) -> Result<(), FabricError> {
        let mut routed = self.fabric.route_flows(job, &self.cfg, id)?;
        let row = self.solver.aggregate(&routed.flows, &routed.shares);
        self.fabric.recycle(std::mem::take(&mut routed.flows));
        let ideal_pace = self.ideal_pace(id, job)?;
        self.insert(id, routed, row, ideal_pace)
    }

    /// Job `id` starts as the union of `groups` (each `(route ID, traffic)`, routed as
    /// [`FabricState::start`] routes a job of that ID): one pace for all of them, each group
    /// carrying its whole bus bytes at that pace, so the slowest group's links bound it. Its
    /// ideal is the lowest of the groups' ideals alone. For a job whose step waits for its
    /// slowest communicator group (a layout job's groups of one kind). `groups` must not be
    /// empty.
    pub fn start_union(
        &mut self,
        id: u64,
        groups: &[(u64, JobTraffic)],
    ) -> Result<(), FabricError> {
        let mut flows = FlowPaths::new();
        let mut shares = Vec::new();
        let mut first: Option<RoutedJob> = None;
        let mut ideal: Option<f64> = None;
        for (gid, job) in groups {
            let mut routed = self.fabric.route_flows(job, &self.cfg, *gid)?;
            flows.extend(&routed.flows);
            shares.extend_from_slice(&routed.shares);
            self.fabric.recycle(std::mem::take(&mut routed.flows));
            if let Some(p) = self.ideal_pace(*gid, job)? {
                ideal = Some(ideal.map_or(p, |q: f64| q.min(p)));
            }
            first.get_or_insert(routed);
        }
        let routed = first.expect("a union job has at least one group");
        let row = self.solver.aggregate(&flows, &shares);
        self.insert(id, routed, row, ideal)
    }

    /// Job `job`'s bus bandwidth alone under ideal routing (`None` when the routing is ideal).
    fn ideal_pace(&mut self, id: u64, job: &JobTraffic) -> Result<Option<f64>, FabricError> {
        let Some(ideal_cfg) = ideal_routing(&self.cfg) else {
            return Ok(None);
        };
        debug_assert_eq!(ideal_cfg.mode, crate::routing::RoutingMode::Adaptive);
        let key = (job.ranks.clone(), job.collective);
        if let Some(&pace) = self.ideals.get(&key) {
            return Ok(Some(pace));
        }
        let pace = if self.grouped_ideal {
            self.fabric.alone_pace_grouped(job, &ideal_cfg, id)?
        } else {
            self.fabric.alone_pace(job, &ideal_cfg, id)?
        };
        if self.ideals.len() >= KNOWN_IDEALS {
            self.ideals.clear();
        }
        self.ideals.insert(key, pace);
        Ok(Some(pace))
    }

    /// Put routed job `id` with its aggregated `row` on the fabric.
    fn insert(
        &mut self,
        id: u64,
        routed: RoutedJob,
        row: Vec<(u32, f64)>,
        ideal_pace: Option<f64>,
    ) -> Result<(), FabricError> {
        let levels: Vec<f64> = row
            .iter()
            .map(|&(e, w)| alone_level(self.res[e as usize].capacity, w * 1.0))
            .collect();
        // One job alone is paced by its lowest level: what the solver returns for it alone.
        let most = levels.iter().copied().fold(f64::INFINITY, f64::min);
        let pace = ideal_pace.unwrap_or(most);
        let ideal_busbw_gbps = if pace.is_finite() { pace } else { 0.0 };
        // The row moves into the job; its entries are still needed below.
        let entries = row.clone();
        // Sorted on the keys themselves, not through the indices (the same order: levels are
        // never negative nor NaN, so their bits order as they do).
        let mut keyed: Vec<(u64, u32, u32)> = levels
            .iter()
            .zip(&row)
            .enumerate()
            .map(|(k, (&level, &(e, _)))| {
                debug_assert!(level >= 0.0, "a level alone is never negative nor NaN");
                (level.to_bits(), e, k as u32)
            })
            .collect();
        keyed.sort_unstable();
        let by_level: Vec<u32> = keyed.into_iter().map(|(_, _, k)| k).collect();
        let mut rank = vec![0u32; row.len()];
        for (i, &k) in by_level.iter().enumerate() {
            rank[k as usize] = i as u32;
        }
        self.end(id);
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.jobs.push(None);
                self.job_seen.push(0);
                u32::try_from(self.jobs.len() - 1).expect("fewer than 2^32 running jobs")
            }
        };
        self.jobs[slot as usize] = Some(StateJob {
            id,
            routed: RoutedJob {
                flows: FlowPaths::new(),
                shares: Vec::new(),
                ideal_busbw_gbps,
                ..routed
            },
            in_reduced: vec![ABSENT; row.len()],
            row,
            most,
            by_level,
            rank,
            reduced: Vec::new(),
            reduced_k: Vec::new(),
            lowest_private: None,
            changed: Vec::new(),
            private_moved: false,
            built: false,
            busbw_gbps: 0.0,
        });
        self.job_seen[slot as usize] = 0;
        self.slots.insert(id, slot);
        for (k, (e, w)) in entries.into_iter().enumerate() {
            let r = &mut self.res[e as usize];
            r.bound += w * 1.0 * most;
            r.load_sum += w;
            let users = &mut r.users;
            let at = users
                .binary_search_by_key(&id, |u| job_of(&self.jobs, u.slot).id)
                .unwrap_err();
            users.insert(at, User { slot, k: k as u32 });
            self.update_class(e);
        }
        self.dirty.push(id);
        Ok(())
    }

    /// Job `id` ends (nothing happens if it is not running); the jobs it shared a binding
    /// resource with are re-solved at the next [`FabricState::solve`].
    pub fn end(&mut self, id: u64) {
        let Some(slot) = self.slots.remove(&id) else {
            return;
        };
        let job = self.jobs[slot as usize]
            .take()
            .expect("a slot of a running job");
        self.free.push(slot);
        for &(e, w) in &job.row {
            let ei = e as usize;
            let r = &mut self.res[ei];
            r.bound -= w * 1.0 * job.most;
            r.load_sum -= w;
            r.users.retain(|u| u.slot != slot);
            if self.class[ei] == CONTENDED && !r.users.is_empty() {
                self.dirty_resources.push(e);
            }
            self.update_class(e);
        }
    }

    /// Bring every running job's pace up to date: re-solve the components of the jobs that
    /// started, or shared a binding resource with a job that ended, since the last call.
    pub fn solve(&mut self) {
        let mut dirty = std::mem::take(&mut self.dirty);
        // The users of a resource an ended job left, now: any that ended since are gone, any
        // that started since are seeds anyway.
        self.dirty_resources.sort_unstable();
        self.dirty_resources.dedup();
        for &e in &self.dirty_resources {
            for u in &self.res[e as usize].users {
                dirty.push(job_of(&self.jobs, u.slot).id);
            }
        }
        self.dirty_resources.clear();
        dirty.sort_unstable();
        dirty.dedup();
        self.generation += 1;
        let generation = self.generation;
        let mut component: Vec<u32> = Vec::new();
        let mut stack: Vec<u32> = Vec::new();
        for &seed in &dirty {
            let Some(&slot) = self.slots.get(&seed) else {
                continue; // ended since
            };
            if self.job_seen[slot as usize] == generation {
                continue; // in a component solved this round
            }
            self.job_seen[slot as usize] = generation;
            component.clear();
            stack.push(slot);
            while let Some(s) = stack.pop() {
                component.push(s);
                self.refresh_reduced(s);
                let job = job_of(&self.jobs, s);
                for &(e, _) in &job.reduced {
                    let ei = e as usize;
                    if self.resource_seen[ei] == generation {
                        continue;
                    }
                    self.resource_seen[ei] = generation;
                    for u in &self.res[ei].users {
                        if self.job_seen[u.slot as usize] != generation {
                            self.job_seen[u.slot as usize] = generation;
                            stack.push(u.slot);
                        }
                    }
                }
            }
            component.sort_unstable_by_key(|&s| job_of(&self.jobs, s).id);
            let rows: Vec<&[(u32, f64)]> = component
                .iter()
                .map(|&s| job_of(&self.jobs, s).reduced.as_slice())
                .collect();
            let paces = self.solver.solve(self.fabric.capacity(), &rows);
            for (&s, pace) in component.iter().zip(paces) {
                let job = self.job_mut(s);
                job.busbw_gbps = if pace.is_finite() { pace } else { 0.0 };
            }
        }
        dirty.clear();
        self.dirty = dirty;
    }

    /// What running job `id` gets at its current pace ([`Fabric::job_result`]), or `None` if
    /// it is not running. Call [`FabricState::solve`] after changes first.
    pub fn result(&self, id: u64) -> Option<JobResult> {
        let job = job_of(&self.jobs, *self.slots.get(&id)?);
        Some(self.fabric.job_result(&job.routed, job.busbw_gbps))
    }

    /// A quick estimate of what running job `id` gets, without solving: its pace is the lowest
    /// level at which a resource of its row fills with all its users at one pace. Max-min
    /// fairness never gives it less (a job freezes where a resource fills, each user frozen
    /// before at a lower pace), so the estimate is a lower bound, exact when the job's
    /// bottleneck fills first. For jobs started between network rounds. `None` if not running.
    pub fn provisional(&self, id: u64) -> Option<JobResult> {
        let job = job_of(&self.jobs, *self.slots.get(&id)?);
        let pace = job
            .row
            .iter()
            .map(|&(e, w)| {
                let r = &self.res[e as usize];
                alone_level(r.capacity, r.load_sum.max(w))
            })
            .fold(job.most, f64::min);
        let busbw = if pace.is_finite() { pace } else { 0.0 };
        Some(self.fabric.job_result(&job.routed, busbw))
    }

    /// Whether every running job's reduced row, patched change by change, holds the entries
    /// one built whole now would (for tests: the patching is what they check).
    #[doc(hidden)]
    pub fn reduced_rows_are_whole(&mut self) -> bool {
        let slots: Vec<u32> = self.slots.values().copied().collect();
        slots.into_iter().all(|slot| {
            self.refresh_reduced(slot);
            let job = job_of(&self.jobs, slot);
            let mut patched = job.reduced.clone();
            patched.sort_unstable_by_key(|&(e, _)| e);
            let private = lowest_private(job, &self.class);
            let whole: Vec<(u32, f64)> = job
                .row
                .iter()
                .enumerate()
                .filter(|&(k, &(e, _))| in_reduced_row(&self.class, e, k as u32, private))
                .map(|(_, &entry)| entry)
                .collect();
            patched == whole && job.lowest_private == private
        })
    }

    /// Number of running jobs.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no job is running.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn job_mut(&mut self, slot: u32) -> &mut StateJob {
        self.jobs[slot as usize]
            .as_mut()
            .expect("a slot of a running job")
    }

    /// Recompute resource `e`'s class after its users changed; if it changed, each user notes
    /// the entry (when it became or stopped being contended) or that its lowest private entry
    /// may have moved, for [`FabricState::refresh_reduced`]. Whether a shared resource can
    /// fill is decided as [`crate::max_min_fair`] decides it, on the bound summed over its
    /// users in ascending ID, so both decide alike to the bit; the running sum kept as users
    /// come and go stands in for it when it is too far from the threshold for rounding to
    /// matter (debug builds check both agree).
    fn update_class(&mut self, e: u32) {
        let ei = e as usize;
        let r = &mut self.res[ei];
        let capacity = r.capacity;
        let class = if r.users.len() < 2 {
            if r.users.is_empty() {
                r.bound = 0.0; // no drift carried over
                r.load_sum = 0.0;
            }
            PRIVATE
        } else {
            // The running sum differs from the ordered one by rounding only (far below
            // CLOSE_CALL); near the threshold, the ordered sum decides.
            let threshold = capacity.max(0.0);
            let bound = r.bound;
            let close = !bound.is_finite()
                || (bound - threshold).abs() <= CLOSE_CALL * bound.abs().max(threshold);
            let binding = if close || cfg!(debug_assertions) {
                let exact = self.ordered_bound(e);
                debug_assert!(
                    close || is_binding(exact, capacity) == is_binding(bound, capacity),
                    "the running bound decides as the ordered one"
                );
                self.res[ei].bound = exact;
                is_binding(exact, capacity)
            } else {
                is_binding(bound, capacity)
            };
            if binding {
                CONTENDED
            } else {
                SLACK
            }
        };
        let old = self.class[ei];
        if class != old {
            self.class[ei] = class;
            for i in 0..self.res[ei].users.len() {
                let User { slot, k } = self.res[ei].users[i];
                let job = self.job_mut(slot);
                if old == CONTENDED || class == CONTENDED {
                    job.changed.push(k);
                }
                // The lowest private entry moves if it stops being private, or if one below it
                // becomes private.
                let at = job
                    .lowest_private
                    .map_or(u32::MAX, |p| job.rank[p as usize]);
                if (old == PRIVATE && job.lowest_private == Some(k))
                    || (class == PRIVATE && job.rank[k as usize] < at)
                {
                    job.private_moved = true;
                }
            }
        }
    }

    /// Resource `e`'s bound summed over its users in ascending ID.
    fn ordered_bound(&self, e: u32) -> f64 {
        let mut bound = 0.0f64;
        for u in &self.res[e as usize].users {
            let job = job_of(&self.jobs, u.slot);
            let (r, w) = job.row[u.k as usize];
            debug_assert_eq!(r, e, "a user's row crosses the resource there");
            bound += w * 1.0 * job.most;
        }
        bound
    }

    /// Bring a job's reduced row up to date: entries whose resource became or stopped being
    /// [`CONTENDED`] added or removed, and the lowest private entry found again if it may have
    /// moved. The cost is the changes, not the row.
    fn refresh_reduced(&mut self, slot: u32) {
        let class = &self.class;
        let job = self.jobs[slot as usize]
            .as_mut()
            .expect("a slot of a running job");
        if !job.built {
            job.built = true;
            build_reduced(job, class);
            return;
        }
        if job.private_moved {
            job.private_moved = false;
            let lowest = lowest_private(job, class);
            if lowest != job.lowest_private {
                job.changed.extend(job.lowest_private);
                job.changed.extend(lowest);
                job.lowest_private = lowest;
            }
        }
        let mut changed = std::mem::take(&mut job.changed);
        for &k in &changed {
            let e = job.row[k as usize].0;
            let wanted = in_reduced_row(class, e, k, job.lowest_private);
            let at = job.in_reduced[k as usize];
            if wanted && at == ABSENT {
                job.add_reduced(k);
            } else if !wanted && at != ABSENT {
                job.reduced.swap_remove(at as usize);
                job.reduced_k.swap_remove(at as usize);
                if let Some(&moved) = job.reduced_k.get(at as usize) {
                    job.in_reduced[moved as usize] = at;
                }
                job.in_reduced[k as usize] = ABSENT;
            }
        }
        changed.clear();
        job.changed = changed;
    }
}

/// The part of a job's row the job-level max-min needs, into its `reduced`: every entry on a
/// binding resource another job also uses (a [`CONTENDED`] one), and of the entries on
/// resources only this job uses, the one with the lowest level alone (lowest resource on ties;
/// the first private one in `by_level`). A resource only this job uses keeps its level until
/// the job freezes, so the lowest one freezes the job at exactly the level (and in the order)
/// the full row would, and the job's other private resources are never reached while it is
/// unfrozen; resources that are not binding never freeze anyone. So the paces are the same bits,
/// and a solve costs the contended resources plus one per job.
///
/// Built whole here at the job's first refresh; after that, patched change by change
/// ([`FabricState::refresh_reduced`]).
fn build_reduced(job: &mut StateJob, class: &[u8]) {
    job.lowest_private = lowest_private(job, class);
    job.changed.clear();
    job.private_moved = false;
    job.reduced.clear();
    job.reduced_k.clear();
    job.in_reduced.fill(ABSENT);
    for k in 0..job.row.len() as u32 {
        if in_reduced_row(class, job.row[k as usize].0, k, job.lowest_private) {
            job.add_reduced(k);
        }
    }
}

impl StateJob {
    /// Add entry `k` of the row, not in the reduced row, to it.
    fn add_reduced(&mut self, k: u32) {
        self.in_reduced[k as usize] = self.reduced.len() as u32;
        self.reduced.push(self.row[k as usize]);
        self.reduced_k.push(k);
    }
}

/// Whether entry `k` of a job's row, on resource `e`, belongs in its reduced row
/// ([`build_reduced`]): its resource is contended, or it is the job's lowest private entry.
fn in_reduced_row(class: &[u8], e: u32, k: u32, lowest_private: Option<u32>) -> bool {
    class[e as usize] == CONTENDED || lowest_private == Some(k)
}

/// The entry of `job`'s row with the lowest level alone among those on a [`PRIVATE`] resource
/// (the first in `by_level`), if any.
fn lowest_private(job: &StateJob, class: &[u8]) -> Option<u32> {
    job.by_level
        .iter()
        .copied()
        .find(|&k| class[job.row[k as usize].0 as usize] == PRIVATE)
}

/// Relative distance from the binding threshold under which a resource's running bound is
/// recomputed in order: rounding in the running sum is many orders of magnitude smaller.
const CLOSE_CALL: f64 = 1e-6;

/// A resource with at most one user (its class byte).
const PRIVATE: u8 = 0;
/// A resource with several users that cannot fill it.
const SLACK: u8 = 1;
/// A resource with several users that can fill it: the only kind that ties jobs together.
const CONTENDED: u8 = 2;

/// The running job in `slot`.
fn job_of(jobs: &[Option<StateJob>], slot: u32) -> &StateJob {
    jobs[slot as usize]
        .as_ref()
        .expect("a slot of a running job")
}
