//! What-if pricing of a job that has not started, against the jobs a [`FabricState`] runs: the
//! network-aware scheduler's score, and the ECMP-collision check behind `place --network-aware`'s
//! NCCL advice.
//!
//! Design note (2026-11-30). [`probe`] goes only through `FabricState`'s public API: start the
//! candidate under the ID it would run with (so its QP numbers, hence its ECMP paths, are the
//! ones it will get), solve, read the candidate and every running job, end it and solve again,
//! which leaves every running job's pace as it was (max-min over the same jobs gives the same
//! bits). Its cost is one route of the candidate (two under ECMP: the ideal is routed
//! adaptively) plus two solves of the components it touches.
//!
//! The score ([`Probe::score`]) is the change in the cluster's rate of useful work, in GPUs: a
//! job with `G` GPUs whose communicating share `c` runs at `achieved` instead of `ideal` bus
//! bandwidth progresses at `G / s` with `s = (1 − c) + c · ideal / achieved` (the simulator's
//! runtime model, [`slowdown`]). The candidate scores
//! `G_new / s_new − Σ_running G_r · (1 / s_r,before − 1 / s_r,after)`: what the new job gets done
//! minus what it takes from the running jobs it slows. A job that fits one node scores its ideal,
//! `G_new` ([`ideal_score`]), without a probe.

use crate::error::FabricError;
use crate::incremental::FabricState;
use crate::model::{Fabric, JobTraffic, Resource};
use crate::routing::RoutingConfig;

/// A running job's bus bandwidth before and after the probed job starts, GB/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunningChange {
    /// The running job's ID in the state.
    pub id: u64,
    /// Before the probed job starts.
    pub before_gb_s: f64,
    /// With the probed job running.
    pub after_gb_s: f64,
    /// Alone with perfect load balance.
    pub ideal_gb_s: f64,
}

/// What starting a job would do.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// The probed job's bus bandwidth with the running jobs' traffic, GB/s.
    pub busbw_gb_s: f64,
    /// Its bus bandwidth alone with perfect load balance, GB/s.
    pub ideal_gb_s: f64,
    /// The running jobs whose bus bandwidth it changes, ascending ID.
    pub changed: Vec<RunningChange>,
}

/// How much a job's progress depends on the network: its GPUs and its communicating share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobWeight {
    /// GPUs of the job.
    pub gpus: f64,
    /// Share of an ideal step spent in collectives that do not overlap compute, 0..=1.
    pub comm_share: f64,
}

/// Slowdown factor of a job whose communicating share runs at `achieved` instead of `ideal`:
/// `(1 − c) + c · ideal / achieved` (1 when it does not communicate, `∞` at zero bandwidth).
pub fn slowdown(comm_share: f64, ideal: f64, achieved: f64) -> f64 {
    let c = comm_share.clamp(0.0, 1.0);
    if c == 0.0 || ideal <= 0.0 {
        return 1.0;
    }
    if achieved <= 0.0 {
        return f64::INFINITY;
    }
    (1.0 - c) + c * ideal / achieved
}

/// The score of a candidate that needs no fabric (one node): its ideal progress, `G`.
pub fn ideal_score(new: JobWeight) -> f64 {
    new.gpus
}

impl Probe {
    /// The network-aware score (module note): `G_new / s_new − Σ G_r · (1/s_before − 1/s_after)`.
    /// `running` gives each running job's weight by ID.
    pub fn score(&self, new: JobWeight, running: &mut dyn FnMut(u64) -> JobWeight) -> f64 {
        let rate = |w: JobWeight, ideal: f64, achieved: f64| {
            w.gpus / slowdown(w.comm_share, ideal, achieved)
        };
        let gained = rate(new, self.ideal_gb_s, self.busbw_gb_s);
        let lost: f64 = self
            .changed
            .iter()
            .map(|c| {
                let w = running(c.id);
                rate(w, c.ideal_gb_s, c.before_gb_s) - rate(w, c.ideal_gb_s, c.after_gb_s)
            })
            .sum();
        gained - lost
    }
}

/// Price `job` as if it started now under `id` beside the running jobs `running` of `state`
/// (see the module note). `id` must not be running. The state is left as it was.
pub fn probe(
    state: &mut FabricState<'_>,
    id: u64,
    job: &JobTraffic,
    running: &[u64],
) -> Result<Probe, FabricError> {
    if state.result(id).is_some() {
        return Err(FabricError::AlreadyRunning(id));
    }
    state.solve();
    let before: Vec<(u64, f64)> = running
        .iter()
        .filter_map(|&r| state.result(r).map(|x| (r, x.busbw_gb_s)))
        .collect();
    state.start(id, job)?;
    state.solve();
    let mine = state.result(id).expect("just started");
    let changed = before
        .iter()
        .filter_map(|&(r, b)| {
            let after = state.result(r).expect("still running");
            (after.busbw_gb_s != b).then_some(RunningChange {
                id: r,
                before_gb_s: b,
                after_gb_s: after.busbw_gb_s,
                ideal_gb_s: after.ideal_busbw_gb_s,
            })
        })
        .collect();
    state.end(id);
    state.solve();
    Ok(Probe {
        busbw_gb_s: mine.busbw_gb_s,
        ideal_gb_s: mine.ideal_busbw_gb_s,
        changed,
    })
}

/// ECMP collisions of one job routed alone: the switch-to-switch ports (and directions) that
/// carry more than one of its network flows. Under adaptive routing there are none by
/// construction. `job_id` fixes the QP numbers as [`Fabric::route`] does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collisions {
    /// Switch-to-switch port directions the job's flows cross.
    pub ports_used: usize,
    /// Of those, the ones more than one of its flows cross.
    pub ports_shared: usize,
    /// Most of its flows on one such port.
    pub worst: usize,
}

/// Count the ECMP collisions of `job` (module [`Collisions`]). Costs one route.
pub fn collisions(
    fabric: &mut Fabric<'_>,
    job: &JobTraffic,
    cfg: &RoutingConfig,
    job_id: u64,
) -> Result<Collisions, FabricError> {
    let routed = fabric.route_flows(job, cfg, job_id)?;
    let cluster = fabric.cluster();
    let mut per_port: std::collections::BTreeMap<u32, usize> = std::collections::BTreeMap::new();
    for f in 0..routed.flows.len() {
        for (r, _) in routed.flows.path(f) {
            if let Resource::Link { link, .. } = fabric.resource(r) {
                if matches!(cluster.link(link).lower, topology::Endpoint::Switch(_)) {
                    *per_port.entry(r).or_default() += 1;
                }
            }
        }
    }
    Ok(Collisions {
        ports_used: per_port.len(),
        ports_shared: per_port.values().filter(|&&n| n > 1).count(),
        worst: per_port.values().copied().max().unwrap_or(0),
    })
}

/// The bus bandwidth (GB/s) `job` gets alone under `cfg`: for comparing QP counts.
pub fn alone_busbw(
    fabric: &mut Fabric<'_>,
    job: &JobTraffic,
    cfg: &RoutingConfig,
    job_id: u64,
) -> Result<f64, FabricError> {
    let routed = fabric.route_flows(job, cfg, job_id)?;
    Ok(fabric.paces(&[&routed])[0] / 8.0)
}
