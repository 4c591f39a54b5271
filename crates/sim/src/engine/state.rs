//! The simulated state ([`State`]) and its bookkeeping: busy GPUs and their integral,
//! fragmentation, each queue's use, the nodes' free room, the pending list and its indexes.
//! Every start, stop and node change goes through these functions so the kept counts stay in
//! step; what to start or stop is decided elsewhere (`engine::pass`, `engine::levels`,
//! `engine::reclaim`).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use sched::{Job, Occupancy, QueueTree, Resources};
use topology::{Cluster, NodeId};

use crate::engine::config::SimConfig;
use crate::engine::pending_by_size::PendingBySize;
use crate::engine::place_memo::PlaceMemo;
use crate::engine::results::JobRecord;
use crate::engine::running::Running;
use crate::engine::weng::Weng;
use crate::failures::{Checkpointing, StopCause};
use crate::queues::QueueRules;
use crate::runtime::CommProfile;
use crate::shares;
use crate::time::SimTime;
use crate::trace::TraceJob;

/// Everything a run keeps between events, owned by `simulate`: per job its trace row, ask,
/// record and bookkeeping; the occupancy, pending list and running set; the kept counts and
/// integrals; what the network model was told.
pub(super) struct State<'a> {
    /// The cluster; copied on the first node failure, whose nodes then go down and up.
    pub(super) cluster: Cow<'a, Cluster>,
    pub(super) config: &'a SimConfig,
    /// The scheduler's job of each row between its arrival and its end.
    pub(super) jobs: LiveJobs,
    pub(super) comm: Vec<CommProfile>,
    /// `+network` with some job on the network: only then does placement ask the network model
    /// (with the network off every candidate prices alike, so the mode's own placement is taken).
    pub(super) network_places: bool,
    pub(super) durations: Vec<f64>,
    pub(super) submit: Vec<SimTime>,
    pub(super) records: Vec<JobRecord>,
    pub(super) occupancy: Occupancy,
    pub(super) pending: BTreeMap<(SimTime, usize), ()>,
    /// Boxed: the map moves its values as it grows and shrinks.
    pub(super) running: BTreeMap<usize, Box<Running>>,
    pub(super) queue_tree: QueueTree,
    /// Each job's queue, by index in `queue_tree`.
    pub(super) queue_of: Vec<usize>,
    /// Each job's ask: GPUs (what it holds while running: a share for a fractional job), CPU
    /// millicores, memory MiB.
    pub(super) requests: Vec<Resources>,
    /// Per queue (index in `queue_tree`), what its running jobs hold, and its non-preemptible
    /// running jobs.
    pub(super) usage: Vec<Resources>,
    pub(super) non_preemptible: Vec<Resources>,
    /// The user's queue rules, when given.
    pub(super) rules: Option<QueueRules>,
    /// With `rules`: per queue, `(time, GPUs held)` at every change.
    pub(super) queue_timeline: Vec<Vec<(SimTime, f64)>>,
    pub(super) total_gpus: f64,
    pub(super) busy_gpus: f64,
    pub(super) busy_integral: f64,
    pub(super) last_busy_change: SimTime,
    pub(super) timeline: Vec<(SimTime, f64)>,
    pub(super) frag_integral: f64,
    pub(super) frag_level: f64,
    pub(super) frag_since: SimTime,
    pub(super) pass_scheduled: Option<SimTime>,
    pub(super) network_dirty: bool,
    /// With network rounds: the next round scheduled, and whether one falls at the current time.
    pub(super) network_round_at: Option<SimTime>,
    pub(super) network_round_now: bool,
    /// The jobs the network model was last told are running, with their run number.
    pub(super) net_running: BTreeMap<usize, u64>,
    /// Between network rounds: jobs the network was told started and that no solve or estimate
    /// has paced yet.
    pub(super) net_unpaced: Vec<usize>,
    /// Multi-node jobs started or stopped since the network was last told (what
    /// `network_sync::sync_network` looks at).
    pub(super) net_changed: Vec<usize>,
    pub(super) lost_gpu_seconds: f64,
    pub(super) preemptions: u64,
    /// Jobs that have ended (completed or failed), counted as they end.
    pub(super) ended: usize,
    /// Starts, completions and preemptions so far: the invariant checks skip states whose
    /// allocations they have already checked.
    pub(super) changes: u64,
    /// Job name → index, for the invariant checks' look-ups (empty when they are off).
    pub(super) name_index: HashMap<String, usize, BuildFnv>,
    /// Next completion-event version; unique over the whole run so a restarted job never
    /// matches a completion scheduled for an earlier run.
    pub(super) next_version: u64,
    /// Per job, what Tiresias keeps (empty under every other order).
    pub(super) tiresias: Vec<TiresiasJob>,
    /// Wake-ups asked for since the last event, `(time, job, stamp)`; the loop queues them.
    pub(super) timers: Vec<(SimTime, usize, u64)>,
    /// Per job: checkpoint interval and restart cost (ideal s), progress at its last
    /// checkpoint, and why it last stopped.
    pub(super) checkpointing: Vec<Checkpointing>,
    pub(super) saved_s: Vec<f64>,
    pub(super) last_stop: Vec<Option<StopCause>>,
    /// Per node: failures it is down for (0 = up); empty without failures.
    pub(super) down: Vec<u32>,
    pub(super) node_failures: u64,
    pub(super) failure_stops: u64,
    /// GPU-seconds lost by cause: preemption, failure.
    pub(super) lost_by_cause: [f64; 2],
    /// The trace (each job's pod shape is its row's).
    pub(super) trace: &'a [TraceJob],
    /// Per job, its placement class: jobs of one class ask the scheduler the same (pod set and
    /// extras), so they place alike.
    pub(super) class: Vec<u32>,
    /// Per class, the scheduler extras of its pod set (empty: GPUs only).
    pub(super) class_extras: Vec<Vec<sched::PodSetExtras>>,
    /// What the pass knows about placing each class now.
    pub(super) memo: PlaceMemo,
    /// The pending jobs by size group, for the fragmentation check; each job's group.
    pub(super) pending_by_size: PendingBySize,
    pub(super) size_group: Vec<u32>,
    /// Jobs that went back to the pending list during the current pass (it does not try them).
    pub(super) requeued: Vec<usize>,
    /// The placement options and, as `node_free`, the free CPU, memory and pods per node, kept
    /// in step with the running pods (empty when no job asks CPU or memory: nodes are then
    /// limited by GPUs alone); `pod_sets` is empty between placements.
    pub(super) input: sched::PlaceInput,
    /// Weng et al.'s fragmentation: the workload, each node's `F_n(M)` (GPUs), their sum and
    /// its time integral.
    pub(super) weng: Weng,
}

/// The scheduler's job of each trace row from its arrival to its end, indexed like the trace
/// (`st.jobs[i]`): made by `setup::arrive_job` when the row arrives, dropped by
/// [`LiveJobs::retire`] when it completes or fails, so a run holds only its pending and running
/// jobs' (design note in `setup`).
pub(super) struct LiveJobs {
    live: Vec<Option<Box<Job>>>,
    /// GPUs of the cluster's largest node, which cut a job into pods.
    pub(super) node_gpus: u32,
}

impl LiveJobs {
    /// `rows` rows, none arrived yet, on nodes of at most `node_gpus` GPUs.
    pub(super) fn new(rows: usize, node_gpus: u32) -> Self {
        Self {
            live: (0..rows).map(|_| None).collect(),
            node_gpus,
        }
    }

    /// Row `i` has arrived as `job`.
    pub(super) fn arrive(&mut self, i: usize, job: Job) {
        self.live[i] = Some(Box::new(job));
    }

    /// Row `i` has ended for good (completed or failed): nothing asks for its job again.
    pub(super) fn retire(&mut self, i: usize) {
        self.live[i] = None;
    }
}

impl std::ops::Index<usize> for LiveJobs {
    type Output = Job;

    fn index(&self, i: usize) -> &Job {
        self.live[i]
            .as_deref()
            .expect("a job is looked at only between its arrival and its end")
    }
}

/// What Tiresias keeps of one job.
#[derive(Clone, Copy, Default)]
pub(super) struct TiresiasJob {
    /// GPU-seconds run in earlier (preempted) runs: its attained service.
    pub(super) attained_gpu_s: f64,
    /// The length of its last preempted run and when it was preempted (the starvation guard).
    pub(super) last_run_s: f64,
    pub(super) preempted_at: SimTime,
    /// Promoted by the starvation guard since it was last preempted: it does not stop others
    /// (with preempted work lost, promoted jobs stopping each other never end).
    pub(super) promoted: bool,
    /// Bumped at every start, end and preemption: a `Event::Wake` with an older stamp is
    /// stale.
    pub(super) wake_stamp: u64,
}

/// FNV-1a: the invariant checks look every running job up by name after every event, and
/// SipHash dominated their cost. Look-ups only; nothing iterates this map.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BuildFnv;

/// FNV-1a state.
#[derive(Debug)]
pub(super) struct Fnv(u64);

impl std::hash::BuildHasher for BuildFnv {
    type Hasher = Fnv;
    fn build_hasher(&self) -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// What a placement of job `i` takes: the run's options and the nodes' free room
/// ([`State::input`]), with its class's extras when it has any (a copy then; without them the
/// scheduler keeps its fast paths). The pass's own tries swap the extras in instead
/// (`pass::place_memo`).
pub(super) fn job_input<'s>(st: &'s State<'_>, i: usize) -> Cow<'s, sched::PlaceInput> {
    let extras = &st.class_extras[st.class[i] as usize];
    if extras.is_empty() {
        Cow::Borrowed(&st.input)
    } else {
        Cow::Owned(sched::PlaceInput {
            pod_sets: extras.clone(),
            ..st.input.clone()
        })
    }
}

/// Whether job `i` is placed by the network model's scores (`+network`): only a job that uses
/// the network; a silent one (`--no-network`, `comm_share` 0) would price every candidate alike.
pub(super) fn placed_by_network(st: &State<'_>, i: usize) -> bool {
    st.network_places && st.comm[i].comm_share > 0.0
}

/// Busy GPUs change by `delta` at `now`: the busy integral is brought up to `now` and the change
/// noted in the utilisation series.
pub(super) fn set_busy(st: &mut State<'_>, now: SimTime, delta: f64) {
    st.busy_integral += st.busy_gpus * now.secs_since(st.last_busy_change);
    st.last_busy_change = now;
    st.busy_gpus += delta;
    st.timeline.push((now, st.busy_gpus));
}

/// The fragmentation level is `level` from `now`: its integral is brought up to `now`.
pub(super) fn set_fragmentation(st: &mut State<'_>, now: SimTime, level: f64) {
    st.frag_integral += st.frag_level * now.secs_since(st.frag_since);
    st.frag_since = now;
    st.frag_level = level;
}

/// Take (`take`) or give back job `i`'s CPU and memory on its pods' nodes.
pub(super) fn hold_room(st: &mut State<'_>, i: usize, nodes: &[NodeId], take: bool) {
    if st.input.node_free.0.is_empty() {
        return;
    }
    let requests = shares::requests(&st.trace[i].pod);
    for n in nodes {
        shares::hold(&mut st.input.node_free, n.index(), &requests, take);
    }
}

/// Recompute Weng et al.'s fragmentation of `nodes` after a change at `now` ([`Weng::refresh`]).
pub(super) fn refresh_weng(st: &mut State<'_>, nodes: &[NodeId], now: SimTime) {
    st.weng
        .refresh(&st.cluster, &st.occupancy, &st.input.node_free, nodes, now);
}

/// The ideal seconds job `i`'s next run takes, as `(restart, whole run)`: a restart after a
/// stop (0 on a first start), then the work left after its last checkpoint.
pub(super) fn next_run_work_s(st: &State<'_>, i: usize) -> (f64, f64) {
    let restart_s = if st.last_stop[i].is_some() {
        st.checkpointing[i].restart_s
    } else {
        0.0
    };
    (
        restart_s,
        restart_s + (st.durations[i] - st.saved_s[i]).max(0.0),
    )
}

/// Add (`sign` 1) or take away (-1) job `i`'s ask to its queue's use.
pub(super) fn hold(st: &mut State<'_>, i: usize, now: SimTime, sign: f64) {
    let q = st.queue_of[i];
    let ask = st.requests[i];
    let change = |u: &mut Resources| {
        u.gpu += sign * ask.gpu;
        u.cpu += sign * ask.cpu;
        u.memory += sign * ask.memory;
    };
    change(&mut st.usage[q]);
    if !st.jobs[i].preemptible {
        change(&mut st.non_preemptible[q]);
    }
    if let Some(line) = st.queue_timeline.get_mut(q) {
        line.push((now, st.usage[q].gpu));
    }
}

/// Add (`sign` 1) or take away (-1) job `v`'s ask to its queue's entry of `usage`.
pub(super) fn release_ask(usage: &mut [Resources], st: &State<'_>, v: usize, sign: f64) {
    let u = &mut usage[st.queue_of[v]];
    let ask = &st.requests[v];
    u.gpu += sign * ask.gpu;
    u.cpu += sign * ask.cpu;
    u.memory += sign * ask.memory;
}

/// Put job `i` on the pending list.
pub(super) fn queue_pending(st: &mut State<'_>, i: usize) {
    st.pending.insert((st.submit[i], i), ());
    st.memo
        .pending_change(st.class[i] as usize, st.changes, true);
    st.pending_by_size.add(st.size_group[i] as usize, i);
}

/// Take job `i` off the pending list.
pub(super) fn unqueue_pending(st: &mut State<'_>, i: usize) {
    st.pending.remove(&(st.submit[i], i));
    st.memo
        .pending_change(st.class[i] as usize, st.changes, false);
    st.pending_by_size.remove(st.size_group[i] as usize, i);
}
