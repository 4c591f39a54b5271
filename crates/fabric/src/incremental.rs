//! Incremental evaluation: a persistent set of running jobs on one fabric, each routed once when
//! it starts, whose rates are re-solved only over the jobs a change can affect.
//!
//! Design note (2026-11-30). [`FabricState`] is what a simulator keeps between events. A job
//! that starts ([`FabricState::start`]) is routed once; its flows are folded into one aggregated
//! row (its load per unit pace on each resource, [`SparseSolver::aggregate`]) and its ideal bus
//! bandwidth is solved then, alone; the flows themselves are dropped. A job that ends
//! ([`FabricState::end`]) leaves its row. [`FabricState::solve`] re-solves the connected
//! components of the job–resource graph (jobs joined when their rows share a resource) that
//! contain a started job or a job that shared a resource with an ended one; every other job
//! keeps its pace, which max-min fairness guarantees is unchanged. Each component is solved by
//! [`SparseSolver`] with its jobs in ascending ID and its resources renumbered in ascending
//! order, so the paces are bit-identical to solving every running job from scratch in ascending
//! ID with [`Fabric::solve`] (tested against that on random churn). Costs: a start routes one
//! job; a solve costs the touched components, with per-resource scratch sized to the fabric once.

use std::cell::Cell;
use std::collections::BTreeMap;

use topology::Cluster;

use crate::error::FabricError;
use crate::maxmin::{FlowPaths, SparseSolver};
use crate::model::{ideal_routing, Fabric, JobResult, JobTraffic, RoutedJob};
use crate::routing::RoutingConfig;

/// The running jobs of one fabric and their rates, kept up to date change by change.
#[derive(Debug)]
pub struct FabricState<'c> {
    fabric: Fabric<'c>,
    cfg: RoutingConfig,
    solver: SparseSolver,
    jobs: BTreeMap<u64, StateJob>,
    /// Per resource, the IDs of the running jobs whose rows cross it.
    users: Vec<Vec<u64>>,
    /// Jobs whose component must be re-solved.
    dirty: Vec<u64>,
    /// Per resource, the solve in which it was last reached (component search).
    resource_seen: Vec<u64>,
    /// Current solve number.
    generation: u64,
}

/// A running job: what [`Fabric::job_result`] needs (flows dropped), its row and its pace.
#[derive(Debug)]
struct StateJob {
    routed: RoutedJob,
    row: Vec<(u32, f64)>,
    /// What the solver needs of the row: the entries on resources other jobs use too, plus the
    /// private entry with the lowest level (see [`reduced_row`]). Rebuilt when `stale`.
    reduced: Vec<(u32, f64)>,
    /// A resource of the row gained or lost a second user since `reduced` was built.
    stale: bool,
    busbw_gbps: f64,
    /// The solve in which it was last reached (component search).
    seen: Cell<u64>,
}

impl<'c> FabricState<'c> {
    /// No jobs running on `cluster`'s fabric, routed under `cfg`.
    pub fn new(cluster: &'c Cluster, cfg: RoutingConfig) -> Self {
        let fabric = Fabric::new(cluster);
        let n_res = fabric.n_resources();
        Self {
            fabric,
            cfg,
            solver: SparseSolver::new(n_res),
            jobs: BTreeMap::new(),
            users: vec![Vec::new(); n_res],
            dirty: Vec::new(),
            resource_seen: vec![0; n_res],
            generation: 0,
        }
    }

    /// Job `id` starts: route it (its QP numbers from `id`, as [`Fabric::route`]) and solve its
    /// ideal bus bandwidth. Its pace is known after the next [`FabricState::solve`]. An `id`
    /// already running is replaced.
    pub fn start(&mut self, id: u64, job: &JobTraffic) -> Result<(), FabricError> {
        let routed = self.fabric.route_flows(job, &self.cfg, id)?;
        let row = self.solver.aggregate(&routed.flows, &routed.shares);
        let ideal_row = match ideal_routing(&self.cfg) {
            None => None,
            Some(ideal_cfg) => {
                let alone = self.fabric.route_flows(job, &ideal_cfg, id)?;
                Some(self.solver.aggregate(&alone.flows, &alone.shares))
            }
        };
        let capacity = self.fabric.capacity();
        let pace = self
            .solver
            .solve(capacity, &[ideal_row.as_deref().unwrap_or(&row)])[0];
        let ideal_busbw_gbps = if pace.is_finite() { pace } else { 0.0 };
        self.end(id);
        for &(e, _) in &row {
            let users = &mut self.users[e as usize];
            users.push(id);
            if users.len() == 2 {
                let other = users[0];
                self.jobs
                    .get_mut(&other)
                    .expect("users are running jobs")
                    .stale = true;
            }
        }
        let reduced = reduced_row(&row, &self.users, self.fabric.capacity());
        self.dirty.push(id);
        self.jobs.insert(
            id,
            StateJob {
                routed: RoutedJob {
                    flows: FlowPaths::new(),
                    shares: Vec::new(),
                    ideal_busbw_gbps,
                    ..routed
                },
                row,
                reduced,
                stale: false,
                busbw_gbps: 0.0,
                seen: Cell::new(0),
            },
        );
        Ok(())
    }

    /// Job `id` ends (nothing happens if it is not running); the jobs it shared a resource with
    /// are re-solved at the next [`FabricState::solve`].
    pub fn end(&mut self, id: u64) {
        let Some(job) = self.jobs.remove(&id) else {
            return;
        };
        for &(e, _) in &job.row {
            let users = &mut self.users[e as usize];
            users.retain(|&u| u != id);
            self.dirty.extend_from_slice(users);
            if users.len() == 1 {
                let other = users[0];
                self.jobs
                    .get_mut(&other)
                    .expect("users are running jobs")
                    .stale = true;
            }
        }
    }

    /// Bring every running job's pace up to date: re-solve the components of the jobs that
    /// started, or shared a resource with a job that ended, since the last call.
    pub fn solve(&mut self) {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        dirty.dedup();
        self.generation += 1;
        let generation = self.generation;
        let mut component: Vec<u64> = Vec::new();
        let mut stack: Vec<u64> = Vec::new();
        for &seed in &dirty {
            match self.jobs.get(&seed) {
                Some(j) if j.seen.get() != generation => j.seen.set(generation),
                _ => continue, // ended, or in a component solved this round
            }
            component.clear();
            stack.push(seed);
            while let Some(id) = stack.pop() {
                component.push(id);
                let job = self.jobs.get_mut(&id).expect("running");
                if job.stale {
                    job.reduced = reduced_row(&job.row, &self.users, self.fabric.capacity());
                    job.stale = false;
                }
                for &(e, _) in &self.jobs[&id].reduced {
                    if self.resource_seen[e as usize] == generation {
                        continue;
                    }
                    self.resource_seen[e as usize] = generation;
                    for &u in &self.users[e as usize] {
                        let other = &self.jobs[&u];
                        if other.seen.get() != generation {
                            other.seen.set(generation);
                            stack.push(u);
                        }
                    }
                }
            }
            component.sort_unstable();
            let rows: Vec<&[(u32, f64)]> = component
                .iter()
                .map(|id| self.jobs[id].reduced.as_slice())
                .collect();
            let paces = self.solver.solve(self.fabric.capacity(), &rows);
            for (id, pace) in component.iter().zip(paces) {
                let job = self.jobs.get_mut(id).expect("component of running jobs");
                job.busbw_gbps = if pace.is_finite() { pace } else { 0.0 };
            }
        }
        dirty.clear();
        self.dirty = dirty;
    }

    /// What running job `id` gets at its current pace ([`Fabric::job_result`]), or `None` if
    /// it is not running. Call [`FabricState::solve`] after changes first.
    pub fn result(&self, id: u64) -> Option<JobResult> {
        let job = self.jobs.get(&id)?;
        Some(self.fabric.job_result(&job.routed, job.busbw_gbps))
    }

    /// Number of running jobs.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether no job is running.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

/// The part of a job's row the job-level max-min needs: every entry on a resource another job
/// also uses, and of the entries on resources only this job uses, the one with the lowest level
/// (capacity over the job's coefficient, lowest resource on ties). In progressive filling a
/// private resource's level stays at that value until the job freezes, so the lowest one
/// freezes the job at exactly the level (and in the order) the full row would, and the others
/// are never reached while the job is unfrozen: the paces are the same bits, and the solve costs
/// the shared resources plus one per job.
fn reduced_row(row: &[(u32, f64)], users: &[Vec<u64>], capacity: &[f64]) -> Vec<(u32, f64)> {
    let mut out = Vec::new();
    let mut private: Option<(f64, u32, f64)> = None;
    for &(e, w) in row {
        if users[e as usize].len() > 1 {
            out.push((e, w));
            continue;
        }
        let level = capacity[e as usize].max(0.0) / w;
        if private.is_none_or(|(l, r, _)| level.total_cmp(&l).then(e.cmp(&r)).is_lt()) {
            private = Some((level, e, w));
        }
    }
    if let Some((_, e, w)) = private {
        out.push((e, w));
    }
    out
}
