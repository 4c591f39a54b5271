//! The simulation loop: the single owner of simulated state. Arrivals, scheduling passes,
//! completions and preemptions are events ordered by `(time, seq)`; the scheduler (`sched`)
//! decides placements and victims, a network model decides each multi-node job's bandwidth.
//!
//! Design note (2026-12-01). Who decides what:
//! - [`simulate`] owns the event queue, the occupancy, the pending list and the running jobs.
//! - A scheduling pass runs at the next multiple of `cycle` after any arrival or completion
//!   (same-time events are all applied first). The pass orders pending jobs by the policy and
//!   asks `sched::place` (or `sched::place_with_preemption` under fair share) for each, at most
//!   once per placement class between two changes of state (`PlaceMemo`; a pass in which
//!   only placement can start a job ends once no pending class can). Under a
//!   `+network` policy ([`Policy::network_aware`]) it first tells the network model the jobs
//!   started and ended so far and asks `sched::place_network_aware`, scoring each multi-node
//!   candidate by [`Network::probe`] against every running multi-node job.
//! - Runtime: a running job has `remaining` seconds of ideal work and a slowdown factor from
//!   [`crate::runtime::slowdown`]; whenever the set of running multi-node jobs changes, every
//!   such job's progress is brought up to date, the network model is asked again, and its
//!   completion is rescheduled (older completion events carry an older version and are
//!   ignored). The network model ([`Network`]) is told which jobs started and ended since it
//!   was last asked, so it can keep its own state (routes, rates) between changes.
//! - A preempted job loses its progress since its last checkpoint (all of it without
//!   checkpoints, the default) and goes back to the pending list with its original submission
//!   time; the GPU-seconds since that checkpoint count as lost work. Node failures
//!   ([`SimConfig::failures`], design note in [`crate::failures`]) are events too: the node is
//!   not Ready until its repair, and every job with a pod on it stops the same way.
//! - With the user's queues ([`SimConfig::queues`], design note in [`crate::queues`]) every
//!   policy admits a job only when its queue's rules allow it now (a job they can never admit
//!   fails at arrival), and a blocked job may stop others under those rules under every policy
//!   (up to four attempts per pass): first, when quota blocks it, the eligible jobs cheapest
//!   first until it is admitted (then given back most expensive first while it stays admitted),
//!   then whatever placement needs (`sched::place_with_preemption_input`). Per-queue and
//!   per-resource use is kept as jobs start and stop.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::ops::Bound;

use sched::{
    Dialect, GpuRequest, Job, Occupancy, PodSet, PreemptionPolicy, QueueId, QueueSpec, QueueTree,
    Resources, TopologyRequest,
};
use serde::Serialize;
use topology::{Cluster, NodeId};

use crate::events::EventQueue;
use crate::failures::{Checkpointing, FailureConfig, FailureSummary, StopCause};
use crate::fragmentation::{node_fragmentation, NodeView, Workload};
use crate::metrics::{percentile, Cdf};
use crate::policies;
use crate::queues::{QueueConfig, QueueRules};
use crate::runtime::{slowdown, CommProfile};
use crate::shares;
use crate::time::SimTime;
use crate::trace::{TopologyAsk, TraceJob};

/// In which order pending jobs are tried.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Order {
    /// Strict submission order: a blocked head blocks everyone behind it.
    Fifo,
    /// Submission order, but jobs behind a blocked head may start if they fit.
    BestEffortFifo,
    /// Queues furthest below their fair share first; jobs of queues above their fair share may
    /// be reclaimed.
    FairShare,
    /// Tiresias' discretised two-dimensional least-attained-service (Gu et al., NSDI '19):
    /// queues by attained GPU-seconds, FIFO within a queue; preemptive ([`crate::policies`]).
    Tiresias(crate::policies::Tiresias),
    /// Shortest remaining ideal work first; preemptive ([`crate::policies`]).
    Srtf,
    /// Shortest ideal duration first; never preempts ([`crate::policies`]).
    Sjf,
}

/// Where multi-node jobs without their own request are asked to go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum TopologyMode {
    /// Anywhere.
    None,
    /// One domain of this level if possible (level index).
    Preferred(usize),
    /// One domain of this level or wait.
    Required(usize),
}

/// A scheduling policy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Policy {
    /// Name for reports.
    pub name: String,
    /// Ordering.
    pub order: Order,
    /// Topology mode for multi-node jobs.
    pub topology: TopologyMode,
    /// `+network`: among the placements the topology mode allows, take the one the network
    /// model predicts best (`sched::place_network_aware`, scored by [`Network::probe`]).
    pub network_aware: bool,
}

/// Communication profile by job size, for jobs whose trace row gives none.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommDefaults {
    /// `(max nodes, profile)`, ascending; the first entry whose bound holds applies.
    pub by_nodes: Vec<(u32, CommProfile)>,
}

impl Default for CommDefaults {
    /// Data-parallel training with gradient all-reduce that does not fully overlap compute:
    /// single-node jobs use NVLink only (no network share); 2–4 nodes spend 20% of an ideal step
    /// in inter-node collectives, 5–16 nodes 30%, larger jobs 40% (smaller per-GPU batches,
    /// more steps). Each step all-reduces 1 GiB (≈ 500 M fp16 gradients). See README.
    fn default() -> Self {
        let p = |comm_share| CommProfile {
            comm_share,
            bytes_per_step: 1024.0 * 1024.0 * 1024.0,
        };
        Self {
            by_nodes: vec![(1, p(0.0)), (4, p(0.2)), (16, p(0.3)), (u32::MAX, p(0.4))],
        }
    }
}

/// Simulation parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimConfig {
    /// The policy.
    pub policy: Policy,
    /// Scheduling passes run at multiples of this (milliseconds; 0 = at once).
    pub cycle: SimTime,
    /// Stop here; jobs still pending or running are "unfinished".
    pub horizon: Option<SimTime>,
    /// Communication profiles by job size.
    pub comm: CommDefaults,
    /// Points in the utilisation time series.
    pub timeline_points: usize,
    /// Check every invariant after every event (`engine::check_state`); a violation stops the run
    /// with [`SimError::Invariant`]. Costs O(GPUs + running pods) per event.
    pub check_invariants: bool,
    /// Whose placement rules place the jobs (and KAI's strategy): passed to every placement.
    /// The default is Kueue's TAS. Not serialized: a run's label names the scheduler.
    #[serde(skip)]
    pub placement: sched::PlaceOptions,
    /// The user's queue tree and its rules (`simulate --queues`); every trace job's queue must
    /// be one of its leaves. `None`: one top-level queue per trace queue, quota 0, weight 1,
    /// used only by the fair-share order. Not serialized.
    #[serde(skip)]
    pub queues: Option<QueueConfig>,
    /// Node failures (`simulate --failures`, `--mtbf-hours`); the default: none. Not serialized.
    #[serde(skip)]
    pub failures: FailureConfig,
    /// Checkpoint interval and restart cost of jobs whose trace row gives none; the default: no
    /// checkpoints, free restarts. Not serialized.
    #[serde(skip)]
    pub checkpoints: Checkpointing,
    /// Network rounds (`simulate --network-round`): link sharing is re-solved at most once per
    /// this much simulated time, at its multiples, instead of on every change of the running
    /// multi-node set. Between rounds a running job keeps the pace of the last round, a job
    /// started since runs at the network's quick estimate ([`Network::provisional`]; its ideal
    /// pace if the network has none), and capacity a job frees is handed out at the next round.
    /// `None` (or 0): every change, exact. Serialized only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_round: Option<SimTime>,
}

impl Default for SimConfig {
    /// A plain run, so that a caller (a test, a tool) names only what it changes
    /// (`SimConfig { horizon: …, ..SimConfig::default() }`): policy `best-effort` (the CLI's
    /// default `--policy`: best-effort FIFO, no topology mode, not network-aware); a scheduling
    /// pass at every event (`cycle` 0; the CLI's `--cycle-s` default is 10 s); no horizon;
    /// [`CommDefaults::default`]; 400 timeline points (as the CLI); no invariant checks (they
    /// cost O(GPUs + running pods) per event); Kueue's TAS placement; no user queues; no node
    /// failures; no checkpoints, free restarts; no network rounds (link sharing re-solved on
    /// every change).
    fn default() -> Self {
        Self {
            policy: Policy {
                name: "best-effort".to_owned(),
                order: Order::BestEffortFifo,
                topology: TopologyMode::None,
                network_aware: false,
            },
            cycle: SimTime(0),
            horizon: None,
            comm: CommDefaults::default(),
            timeline_points: 400,
            check_invariants: false,
            placement: sched::PlaceOptions::default(),
            queues: None,
            failures: FailureConfig::default(),
            checkpoints: Checkpointing::default(),
            network_round: None,
        }
    }
}

/// A multi-node job as the network model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct NetJob {
    /// The job's index in the trace: stable while it runs (the network model's job ID).
    pub id: usize,
    /// Job name.
    pub name: String,
    /// Nodes in rank order.
    pub nodes: Vec<NodeId>,
    /// GPUs used per node.
    pub gpus_per_node: u32,
    /// Bytes all-reduced per step.
    pub bytes: f64,
}

/// The network model [`simulate`] asks for bandwidth. Whenever the set of running multi-node
/// jobs has changed, the engine calls [`Network::end`] for each job that left it, then
/// [`Network::start`] for each that joined (both in ascending ID), then [`Network::rates`] for
/// all of them. A job that is preempted and restarts ends and starts again.
pub trait Network {
    /// `job` joined the running set.
    fn start(&mut self, job: &NetJob);
    /// Job `id` left the running set.
    fn end(&mut self, id: usize);
    /// The rates of the running jobs `ids` (ascending), in that order.
    fn rates(&mut self, ids: &[usize]) -> Vec<NetRate>;
    /// What starting `job` beside the running jobs would do, for network-aware placement
    /// (`fabric::probe`); the running jobs stay as they were. `None`: this network cannot
    /// tell, and every candidate scores its ideal.
    fn probe(&mut self, job: &NetJob) -> Option<fabric::Probe> {
        let _ = job;
        None
    }
    /// A quick estimate of running job `id`'s rate without re-solving the others, for a job
    /// started between network rounds. `None`: it runs at its ideal rate until the next round.
    fn provisional(&mut self, id: usize) -> Option<NetRate> {
        let _ = id;
        None
    }
}

/// What the network gives one job: ideal and achieved bus bandwidth, GB/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetRate {
    /// Bus bandwidth with the fabric to itself and perfect load balance.
    pub ideal_busbw: f64,
    /// Bus bandwidth it gets now, sharing links with the other jobs.
    pub achieved_busbw: f64,
}

/// How a trace job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Outcome {
    /// Ran to completion.
    Completed,
    /// Can never run on this cluster (too big, or its required level is too small).
    Failed,
    /// Still pending or running at the horizon.
    Unfinished,
}

/// Per-job record.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobRecord {
    /// Name.
    pub name: String,
    /// Queue.
    pub queue: String,
    /// GPUs held while running.
    pub gpus: u32,
    /// Nodes (pods).
    pub nodes: u32,
    /// Outcome.
    pub outcome: Outcome,
    /// Submission, s since the first arrival.
    pub submit_s: f64,
    /// First start, s.
    pub start_s: Option<f64>,
    /// Completion, s.
    pub end_s: Option<f64>,
    /// Run time of the final run over its ideal duration.
    pub network_slowdown: Option<f64>,
    /// Highest switch tier its final placement crosses.
    pub highest_tier: Option<u8>,
    /// Times preempted.
    pub preemptions: u32,
    /// GPU-seconds used, including lost work.
    pub gpu_seconds: f64,
    /// Times stopped by a node failure.
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub failures: u32,
    /// GPU-seconds lost to preemption (included in `gpu_seconds`).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub lost_gpu_seconds_preemption: f64,
    /// GPU-seconds lost to node failures (included in `gpu_seconds`).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub lost_gpu_seconds_failure: f64,
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

/// Headline figures of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Policy name.
    pub policy: String,
    /// Jobs in the trace.
    pub jobs: usize,
    /// Completed jobs.
    pub completed: usize,
    /// Jobs that can never run here.
    pub failed: usize,
    /// Jobs pending or running at the horizon.
    pub unfinished: usize,
    /// Mean job completion time (submit → end) of completed jobs, s.
    pub avg_jct_s: f64,
    /// Median JCT, s.
    pub p50_jct_s: f64,
    /// 99th percentile JCT, s.
    pub p99_jct_s: f64,
    /// Mean wait (submit → first start) of started jobs, s.
    pub avg_wait_s: f64,
    /// 99th percentile wait, s.
    pub p99_wait_s: f64,
    /// GPU-seconds used ÷ (GPUs × makespan).
    pub gpu_utilization: f64,
    /// Busy GPU share over the arrival window (first to last arrival): the load the trace puts
    /// on the cluster while it is arriving, without the drain tail.
    pub gpu_utilization_arrivals: f64,
    /// First arrival → last arrival, s.
    pub arrival_window_s: f64,
    /// First arrival → last completion (or the horizon), s.
    pub makespan_s: f64,
    /// Completed multi-node jobs (jobs that ran on more than one node).
    pub multi_node_completed: usize,
    /// Mean JCT of completed multi-node jobs, s (0 when none).
    pub avg_multi_node_jct_s: f64,
    /// 99th percentile JCT of completed multi-node jobs, s (0 when none).
    pub p99_multi_node_jct_s: f64,
    /// Mean network slowdown of completed multi-node jobs (1 = ideal network).
    pub avg_network_slowdown: f64,
    /// Time-averaged share of GPUs that were free while jobs waited and no waiting job fit.
    pub fragmentation: f64,
    /// Time-averaged GPU fragmentation as Weng et al. (ATC '23) define it: the expected
    /// unallocated GPU capacity the trace's job mix cannot use, as a share of all GPUs
    /// ([`crate::fragmentation`]).
    pub weng_fragmentation: f64,
    /// Preemptions.
    pub preemptions: u64,
    /// GPU-seconds lost to preemption and node failures (work since the last checkpoint, and
    /// restarts).
    pub lost_gpu_seconds: f64,
    /// Multi-node jobs by highest tier crossed (index = tier).
    pub tier_span: Vec<u64>,
    /// Node failures and lost work by cause, when the run had failures or checkpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<FailureSummary>,
}

/// Everything one run produces.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimResult {
    /// Headline figures.
    pub summary: Summary,
    /// `(hours since first arrival, busy GPU share)` at regular points.
    pub utilization: Vec<(f64, f64)>,
    /// Per-job records in trace order.
    pub jobs: Vec<JobRecord>,
    /// With the user's queues: whose rules ran them and each leaf queue's share of the GPUs over
    /// time.
    pub queues: Option<QueueRun>,
}

/// What a run with the user's queues adds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueRun {
    /// `kai` or `kueue`.
    pub rules: &'static str,
    /// Per leaf queue in tree order: `(hours since first arrival, share of the cluster's GPUs it
    /// holds)` at the same points as [`SimResult::utilization`].
    pub gpu_share: Vec<(String, Vec<(f64, f64)>)>,
}

/// One queue's jobs in a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueSummary {
    /// Queue name.
    pub queue: String,
    /// Jobs submitted to it.
    pub jobs: usize,
    /// Completed jobs.
    pub completed: usize,
    /// GPU-hours used (including work lost to preemption).
    pub gpu_hours: f64,
    /// Mean wait of its started jobs, s (0 when none started).
    pub avg_wait_s: f64,
    /// Mean JCT of its completed jobs, s (0 when none completed).
    pub avg_jct_s: f64,
    /// Times its jobs were preempted.
    pub preemptions: u64,
}

impl SimResult {
    /// Per-queue figures, queues in name order.
    pub fn per_queue(&self) -> Vec<QueueSummary> {
        #[derive(Default)]
        struct Acc {
            jobs: usize,
            completed: usize,
            gpu_seconds: f64,
            wait: (f64, usize),
            jct: (f64, usize),
            preemptions: u64,
        }
        let mut by: std::collections::BTreeMap<&str, Acc> = std::collections::BTreeMap::new();
        for j in &self.jobs {
            let a = by.entry(j.queue.as_str()).or_default();
            a.jobs += 1;
            a.gpu_seconds += j.gpu_seconds;
            a.preemptions += u64::from(j.preemptions);
            if let Some(s) = j.start_s {
                a.wait.0 += s - j.submit_s;
                a.wait.1 += 1;
            }
            if let Some(e) = j.end_s {
                a.completed += 1;
                a.jct.0 += e - j.submit_s;
                a.jct.1 += 1;
            }
        }
        let mean = |(sum, n): (f64, usize)| if n == 0 { 0.0 } else { sum / n as f64 };
        by.into_iter()
            .map(|(q, a)| QueueSummary {
                queue: q.to_owned(),
                jobs: a.jobs,
                completed: a.completed,
                gpu_hours: a.gpu_seconds / 3600.0,
                avg_wait_s: mean(a.wait),
                avg_jct_s: mean(a.jct),
                preemptions: a.preemptions,
            })
            .collect()
    }

    /// JCT CDF of completed jobs.
    pub fn jct_cdf(&self, points: usize) -> Cdf {
        let v: Vec<f64> = self
            .jobs
            .iter()
            .filter_map(|j| Some(j.end_s? - j.submit_s))
            .collect();
        Cdf::of(&v, points)
    }

    /// Wait CDF of started jobs.
    pub fn wait_cdf(&self, points: usize) -> Cdf {
        let v: Vec<f64> = self
            .jobs
            .iter()
            .filter_map(|j| Some(j.start_s? - j.submit_s))
            .collect();
        Cdf::of(&v, points)
    }

    /// Network slowdown CDF of completed multi-node jobs.
    pub fn slowdown_cdf(&self, points: usize) -> Cdf {
        let v: Vec<f64> = self
            .jobs
            .iter()
            .filter(|j| j.nodes > 1)
            .filter_map(|j| j.network_slowdown)
            .collect();
        Cdf::of(&v, points)
    }
}

/// A problem found before the simulation starts.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// A trace job names a level the cluster does not have.
    #[error(
        "job \"{job}\" (line {line}): unknown level `{level}`; the cluster's levels are {levels}"
    )]
    UnknownLevel {
        /// Job name.
        job: String,
        /// Trace line.
        line: u64,
        /// The label.
        level: String,
        /// The known labels.
        levels: String,
    },
    /// The cluster has no GPUs.
    #[error("the cluster has no GPUs")]
    NoGpus,
    /// An invariant failed during the run (only with [`SimConfig::check_invariants`]).
    #[error("invariant violated at {} s: {violation}", *at_ms as f64 / 1000.0)]
    Invariant {
        /// Simulated time, ms since the first arrival.
        at_ms: u64,
        /// What broke.
        violation: sched::Violation,
    },
    /// The user's queue tree is refused under its rules (every problem, `; `-separated).
    #[error("the queue tree: {0}")]
    Queues(String),
    /// A trace job's queue is not a leaf queue of the user's tree.
    #[error("job \"{job}\" (line {line}): queue `{queue}` is not a leaf queue of the queue files")]
    QueueNotLeaf {
        /// Job name.
        job: String,
        /// Trace line.
        line: u64,
        /// The queue.
        queue: String,
    },
    /// A failure names a node the cluster does not have.
    #[error("failure {index}: node {node} is out of range (the cluster has {nodes} nodes)")]
    UnknownNode {
        /// Index of the failure in the list.
        index: usize,
        /// The node index.
        node: u32,
        /// Nodes in the cluster.
        nodes: usize,
    },
    /// Two trace jobs share a name (the scheduler tracks running jobs by name).
    #[error("job \"{job}\" (line {line}): the name is already used on line {first}")]
    DuplicateName {
        /// Job name.
        job: String,
        /// Trace line of the second use.
        line: u64,
        /// Trace line of the first.
        first: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Arrival(usize),
    Pass,
    Completion {
        job: usize,
        version: u64,
    },
    /// A Tiresias demotion or promotion time: a pass, if job's `wake_stamp` still matches.
    Wake {
        job: usize,
        stamp: u64,
    },
    /// A node fails for `down` (ms).
    NodeDown {
        node: NodeId,
        down: u64,
    },
    /// A failed node is repaired.
    NodeUp(NodeId),
    /// A network round (`SimConfig::network_round`): link sharing is re-solved after this time's
    /// events.
    NetworkRound,
}

struct Running {
    nodes: Vec<NodeId>,
    start: SimTime,
    last_update: SimTime,
    remaining_s: f64,
    slowdown: f64,
    version: u64,
    /// Unique per start over the whole run: tells a restarted job from its earlier run.
    run: u64,
    /// Ideal seconds of this run: its restart, then the work left after its checkpoint.
    work_s: f64,
    /// The job's progress (ideal seconds) when this run started: its last checkpoint.
    base_s: f64,
    /// Ideal seconds of restart at the start of this run (0 on a first start).
    restart_s: f64,
    /// Seconds of ideal work between checkpoints (0: none).
    interval_s: f64,
    /// When the restart ended (`None`: still restarting).
    restart_end: Option<SimTime>,
    /// The last checkpoint reached (progress, ideal s) and when (`base_s` and the restart's end
    /// until one is reached in this run).
    checkpoint_s: f64,
    checkpoint_at: Option<SimTime>,
}

impl Running {
    /// The job's progress in ideal seconds as of `last_update`.
    fn progress_s(&self) -> f64 {
        self.base_s + (self.work_s - self.remaining_s - self.restart_s).max(0.0)
    }
}

/// What a placement of job `i` takes: the run's options and the nodes' free room
/// ([`State::input`]), with its class's extras when it has any (a copy then; without them the
/// scheduler keeps its fast paths). The pass's own tries swap the extras in instead
/// ([`place_memo`]).
fn job_input<'s>(st: &'s State<'_>, i: usize) -> Cow<'s, sched::PlaceInput> {
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

/// What the engine knows about placing each class ([`State::class`]) in the current state, the
/// state being named by [`State::changes`] (every start, stop and node change bumps it): a
/// class whose placement failed, or whose jobs asked more GPUs than were free, fails again
/// until something changes, whatever job of the class asks. Also counts the classes with
/// pending jobs, so a pass knows when no pending job can start.
#[derive(Default)]
struct PlaceMemo {
    /// Per class, `changes + 1` when its placement last failed (0: never).
    failed: Vec<u64>,
    /// Per class, `changes + 1` when its jobs last asked more GPUs than were free.
    short: Vec<u64>,
    /// Per class, its pending jobs.
    pending: Vec<u32>,
    /// Classes with pending jobs.
    live: usize,
    /// Of those, how many are known not to start in state `epoch`.
    known_live: usize,
    epoch: u64,
}

impl PlaceMemo {
    fn new(classes: usize) -> Self {
        PlaceMemo {
            failed: vec![0; classes],
            short: vec![0; classes],
            pending: vec![0; classes],
            ..PlaceMemo::default()
        }
    }

    /// Whether jobs of class `c` are known not to start in state `changes`.
    fn known(&self, c: usize, changes: u64) -> bool {
        self.failed[c] == changes + 1 || self.short[c] == changes + 1
    }

    /// Class `c` did not start in state `changes`: its placement failed (`short` false) or it
    /// asked more GPUs than were free.
    fn note(&mut self, c: usize, changes: u64, short: bool) {
        let was_known = self.known(c, changes);
        if short {
            self.short[c] = changes + 1;
        } else {
            self.failed[c] = changes + 1;
        }
        if !was_known {
            if self.epoch != changes {
                self.epoch = changes;
                self.known_live = 0;
            }
            if self.pending[c] > 0 {
                self.known_live += 1;
            }
        }
    }

    /// A job of class `c` joins (`add`) or leaves the pending list.
    fn pending_change(&mut self, c: usize, changes: u64, add: bool) {
        let counted = self.epoch == changes && self.known(c, changes);
        if add {
            self.pending[c] += 1;
            if self.pending[c] == 1 {
                self.live += 1;
                self.known_live += usize::from(counted);
            }
        } else {
            self.pending[c] -= 1;
            if self.pending[c] == 0 {
                self.live -= 1;
                self.known_live -= usize::from(counted);
            }
        }
    }

    /// Whether every pending job is known not to start in state `changes`.
    fn none_starts(&self, changes: u64) -> bool {
        self.epoch == changes && self.known_live == self.live
    }
}

struct State<'a> {
    /// The cluster; copied on the first node failure, whose nodes then go down and up.
    cluster: Cow<'a, Cluster>,
    config: &'a SimConfig,
    jobs: Vec<Job>,
    comm: Vec<CommProfile>,
    durations: Vec<f64>,
    submit: Vec<SimTime>,
    records: Vec<JobRecord>,
    occupancy: Occupancy,
    pending: BTreeMap<(SimTime, usize), ()>,
    /// Boxed: the map moves its values as it grows and shrinks.
    running: BTreeMap<usize, Box<Running>>,
    queue_tree: QueueTree,
    /// Each job's queue, by index in `queue_tree`.
    queue_of: Vec<usize>,
    /// Each job's ask: GPUs (what it holds while running: a share for a fractional job), CPU
    /// millicores, memory MiB.
    requests: Vec<Resources>,
    /// Per queue (index in `queue_tree`), what its running jobs hold, and its non-preemptible
    /// running jobs.
    usage: Vec<Resources>,
    non_preemptible: Vec<Resources>,
    /// The user's queue rules, when given.
    rules: Option<QueueRules>,
    /// With `rules`: per queue, `(time, GPUs held)` at every change.
    queue_timeline: Vec<Vec<(SimTime, f64)>>,
    total_gpus: f64,
    busy_gpus: f64,
    busy_integral: f64,
    last_busy_change: SimTime,
    timeline: Vec<(SimTime, f64)>,
    frag_integral: f64,
    frag_level: f64,
    frag_since: SimTime,
    pass_scheduled: Option<SimTime>,
    network_dirty: bool,
    /// With network rounds: the next round scheduled, and whether one falls at the current time.
    network_round_at: Option<SimTime>,
    network_round_now: bool,
    /// The jobs the network model was last told are running, with their run number.
    net_running: BTreeMap<usize, u64>,
    /// Between network rounds: jobs the network was told started and that no solve or estimate
    /// has paced yet.
    net_unpaced: Vec<usize>,
    /// Multi-node jobs started or stopped since the network was last told (what
    /// [`sync_network`] looks at).
    net_changed: Vec<usize>,
    lost_gpu_seconds: f64,
    preemptions: u64,
    /// Jobs that have ended (completed or failed), counted as they end.
    ended: usize,
    /// Starts, completions and preemptions so far: the invariant checks skip states whose
    /// allocations they have already checked.
    changes: u64,
    /// Job name → index, for the invariant checks' look-ups (empty when they are off).
    name_index: HashMap<String, usize, BuildFnv>,
    /// Next completion-event version; unique over the whole run so a restarted job never
    /// matches a completion scheduled for an earlier run.
    next_version: u64,
    /// Per job, what Tiresias keeps (empty under every other order).
    tiresias: Vec<TiresiasJob>,
    /// Wake-ups asked for since the last event, `(time, job, stamp)`; the loop queues them.
    timers: Vec<(SimTime, usize, u64)>,
    /// Per job: checkpoint interval and restart cost (ideal s), progress at its last
    /// checkpoint, and why it last stopped.
    checkpointing: Vec<Checkpointing>,
    saved_s: Vec<f64>,
    last_stop: Vec<Option<StopCause>>,
    /// Per node: failures it is down for (0 = up); empty without failures.
    down: Vec<u32>,
    node_failures: u64,
    failure_stops: u64,
    /// GPU-seconds lost by cause: preemption, failure.
    lost_by_cause: [f64; 2],
    /// The trace (each job's pod shape is its row's).
    trace: &'a [TraceJob],
    /// Per job, its placement class: jobs of one class ask the scheduler the same (pod set and
    /// extras), so they place alike.
    class: Vec<u32>,
    /// Per class, the scheduler extras of its pod set (empty: GPUs only).
    class_extras: Vec<Vec<sched::PodSetExtras>>,
    /// What the pass knows about placing each class now.
    memo: PlaceMemo,
    /// The pending jobs by size group, for the fragmentation check; each job's group.
    pending_by_size: PendingBySize,
    size_group: Vec<u32>,
    /// Jobs that went back to the pending list during the current pass (it does not try them).
    requeued: Vec<usize>,
    /// The placement options and, as `node_free`, the free CPU, memory and pods per node, kept
    /// in step with the running pods (empty when no job asks CPU or memory: nodes are then
    /// limited by GPUs alone); `pod_sets` is empty between placements.
    input: sched::PlaceInput,
    /// Weng et al.'s fragmentation: the workload, each node's `F_n(M)` (GPUs), their sum and
    /// its time integral.
    weng: Weng,
}

/// The pending jobs per size group (`(GPUs, held GPUs)`, ascending), for the lowest-numbered
/// of each: a min-heap per group whose entries for jobs no longer pending are dropped when they
/// reach its top (so a job joining or leaving allocates nothing), and each group's count.
struct PendingBySize {
    heaps: Vec<BinaryHeap<Reverse<usize>>>,
    count: Vec<u32>,
    is_pending: Vec<bool>,
}

impl PendingBySize {
    fn new(groups: usize, jobs: usize) -> Self {
        PendingBySize {
            heaps: vec![BinaryHeap::new(); groups],
            count: vec![0; groups],
            is_pending: vec![false; jobs],
        }
    }

    /// Job `i` of group `g` joins.
    fn add(&mut self, g: usize, i: usize) {
        self.heaps[g].push(Reverse(i));
        self.count[g] += 1;
        self.is_pending[i] = true;
    }

    /// Job `i` of group `g` leaves.
    fn remove(&mut self, g: usize, i: usize) {
        self.count[g] -= 1;
        self.is_pending[i] = false;
        if self.count[g] == 0 {
            self.heaps[g].clear();
        }
    }

    /// The lowest-numbered pending job of each of the first `n` groups that have one.
    fn smallest(&mut self, n: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(n);
        for (heap, &count) in self.heaps.iter_mut().zip(&self.count) {
            if out.len() == n {
                break;
            }
            if count == 0 {
                continue;
            }
            while let Some(&Reverse(i)) = heap.peek() {
                if self.is_pending[i] {
                    out.push(i);
                    break;
                }
                heap.pop();
            }
        }
        out
    }
}

/// What Tiresias keeps of one job.
#[derive(Clone, Copy, Default)]
struct TiresiasJob {
    /// GPU-seconds run in earlier (preempted) runs: its attained service.
    attained_gpu_s: f64,
    /// The length of its last preempted run and when it was preempted (the starvation guard).
    last_run_s: f64,
    preempted_at: SimTime,
    /// Promoted by the starvation guard since it was last preempted: it does not stop others
    /// (with preempted work lost, promoted jobs stopping each other never end).
    promoted: bool,
    /// Bumped at every start, end and preemption: a [`Event::Wake`] with an older stamp is
    /// stale.
    wake_stamp: u64,
}

/// Weng et al.'s fragmentation kept per node ([`crate::fragmentation`]).
struct Weng {
    workload: Workload,
    /// When the workload asks whole GPUs alone: `F_n(M)` of a node by its free GPUs and
    /// whether it is schedulable (a node's value depends on nothing else then).
    whole_gpu: Option<Vec<[f64; 2]>>,
    per_node: Vec<f64>,
    level: f64,
    integral: f64,
    since: SimTime,
}

/// Replay `trace` on `cluster` under `config`. `network` gives the bandwidth of running
/// multi-node jobs (called whenever their set changes); `progress` is told how many jobs have
/// ended so far.
pub fn simulate(
    cluster: &Cluster,
    trace: &[TraceJob],
    config: &SimConfig,
    network: &mut dyn Network,
    progress: &mut dyn FnMut(usize),
) -> Result<SimResult, SimError> {
    let node_gpus = cluster.nodes.iter().map(|n| n.gpus).max().unwrap_or(0);
    if node_gpus == 0 {
        return Err(SimError::NoGpus);
    }
    let origin = trace
        .iter()
        .map(|j| j.submit_s)
        .fold(f64::INFINITY, f64::min);
    let origin = if origin.is_finite() { origin } else { 0.0 };
    // Look-ups only (nothing iterates it): hashing beats comparing names in a tree.
    let mut names: HashMap<&str, u64, BuildFnv> =
        HashMap::with_capacity_and_hasher(trace.len(), BuildFnv);
    for t in trace {
        match names.entry(&t.name) {
            Entry::Occupied(first) => {
                return Err(SimError::DuplicateName {
                    job: t.name.clone(),
                    line: t.line,
                    first: *first.get(),
                })
            }
            Entry::Vacant(slot) => {
                slot.insert(t.line);
            }
        }
    }
    let mut jobs = Vec::with_capacity(trace.len());
    let mut comm = Vec::with_capacity(trace.len());
    let mut records = Vec::with_capacity(trace.len());
    let mut submit = Vec::with_capacity(trace.len());
    for t in trace {
        let (job, pods, per_pod) = to_sched_job(cluster, t, node_gpus, &config.policy)?;
        let profile = t.comm.unwrap_or_else(|| {
            config
                .comm
                .by_nodes
                .iter()
                .find(|(max, _)| pods <= *max)
                .map_or(
                    CommProfile {
                        comm_share: 0.0,
                        bytes_per_step: 0.0,
                    },
                    |(_, p)| *p,
                )
        });
        comm.push(profile);
        jobs.push(job);
        let s = SimTime::from_secs_f64(t.submit_s - origin);
        submit.push(s);
        records.push(JobRecord {
            name: t.name.clone(),
            queue: t.queue.clone(),
            gpus: pods * per_pod,
            nodes: pods,
            outcome: Outcome::Unfinished,
            submit_s: s.as_secs_f64(),
            start_s: None,
            end_s: None,
            network_slowdown: None,
            highest_tier: None,
            preemptions: 0,
            gpu_seconds: 0.0,
            failures: 0,
            lost_gpu_seconds_preemption: 0.0,
            lost_gpu_seconds_failure: 0.0,
        });
    }
    let rules = match &config.queues {
        Some(q) => Some(QueueRules::new(q).map_err(|ps| SimError::Queues(ps.join("; ")))?),
        None => None,
    };
    let (queue_tree, queue_of) = match &rules {
        Some(r) => {
            let mut of = Vec::with_capacity(trace.len());
            for t in trace {
                match r.tree.find(&t.queue).filter(|&q| r.tree.is_leaf(q)) {
                    Some(q) => of.push(q.index()),
                    None => {
                        return Err(SimError::QueueNotLeaf {
                            job: t.name.clone(),
                            line: t.line,
                            queue: t.queue.clone(),
                        })
                    }
                }
            }
            (r.tree.clone(), of)
        }
        None => trace_queues(trace),
    };
    let gpu_memory_mib = sched::quota_gpu_memory_mib(cluster);
    let requests: Vec<Resources> = jobs.iter().map(|j| j.request(gpu_memory_mib)).collect();
    // Jobs of one class place alike: the same pod set (`shape_key`) and extras.
    let mut class_ids: BTreeMap<(ShapeKey, u64, u64, &[String]), u32> = BTreeMap::new();
    let mut class_extras: Vec<Vec<sched::PodSetExtras>> = Vec::new();
    let mut class = Vec::with_capacity(trace.len());
    for (t, job) in trace.iter().zip(&jobs) {
        let key = (
            shape_key(job),
            t.pod.cpu_milli,
            t.pod.memory_mib,
            t.pod.gpu_models.as_slice(),
        );
        let c = *class_ids.entry(key).or_insert_with(|| {
            class_extras.push(shares::pod_extras(&t.pod).into_iter().collect());
            (class_extras.len() - 1) as u32
        });
        class.push(c);
    }
    let asks_room = trace
        .iter()
        .any(|t| t.pod.cpu_milli > 0 || t.pod.memory_mib > 0);
    let empty_room = if asks_room {
        shares::empty_room(cluster)
    } else {
        sched::NodeFree::default()
    };
    let size_key = |i: usize| (records[i].gpus, requests[i].gpu.to_bits());
    let size_keys: Vec<(u32, u64)> = (0..trace.len())
        .map(size_key)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let size_group: Vec<u32> = (0..trace.len())
        .map(|i| size_keys.partition_point(|&k| k < size_key(i)) as u32)
        .collect();
    let n_queues = queue_tree.queues.len();
    let checkpointing: Vec<Checkpointing> = trace
        .iter()
        .map(|t| Checkpointing {
            interval_s: t
                .checkpoint
                .interval_s
                .unwrap_or(config.checkpoints.interval_s),
            restart_s: t
                .checkpoint
                .restart_s
                .unwrap_or(config.checkpoints.restart_s),
        })
        .collect();
    let failure_list = failure_list(cluster, trace, &config.failures)?;
    let workload = Workload::of(trace, node_gpus);
    let mut st = State {
        cluster: Cow::Borrowed(cluster),
        config,
        durations: trace.iter().map(|t| t.duration_s).collect(),
        jobs,
        comm,
        submit,
        records,
        occupancy: Occupancy::with_node_tracking(cluster),
        pending: BTreeMap::new(),
        running: BTreeMap::new(),
        queue_tree,
        queue_of,
        requests,
        usage: vec![Resources::default(); n_queues],
        non_preemptible: vec![Resources::default(); n_queues],
        queue_timeline: if rules.is_some() {
            vec![vec![(SimTime::ZERO, 0.0)]; n_queues]
        } else {
            Vec::new()
        },
        rules,
        total_gpus: cluster.gpu_count() as f64,
        busy_gpus: 0.0,
        busy_integral: 0.0,
        last_busy_change: SimTime::ZERO,
        timeline: vec![(SimTime::ZERO, 0.0)],
        frag_integral: 0.0,
        frag_level: 0.0,
        frag_since: SimTime::ZERO,
        pass_scheduled: None,
        network_dirty: false,
        network_round_at: None,
        network_round_now: false,
        net_running: BTreeMap::new(),
        net_unpaced: Vec::new(),
        net_changed: Vec::new(),
        lost_gpu_seconds: 0.0,
        preemptions: 0,
        ended: 0,
        changes: 0,
        name_index: if config.check_invariants || config.queues.is_some() {
            trace
                .iter()
                .enumerate()
                .map(|(i, t)| (t.name.clone(), i))
                .collect()
        } else {
            HashMap::default()
        },
        next_version: 0,
        tiresias: if matches!(config.policy.order, Order::Tiresias(_)) {
            vec![TiresiasJob::default(); trace.len()]
        } else {
            Vec::new()
        },
        timers: Vec::new(),
        saved_s: vec![0.0; trace.len()],
        last_stop: vec![None; trace.len()],
        down: if failure_list.is_empty() {
            Vec::new()
        } else {
            vec![0; cluster.nodes.len()]
        },
        node_failures: 0,
        failure_stops: 0,
        lost_by_cause: [0.0; 2],
        checkpointing,
        trace,
        memo: PlaceMemo::new(class_extras.len()),
        class,
        class_extras,
        pending_by_size: PendingBySize::new(size_keys.len(), trace.len()),
        size_group,
        requeued: Vec::new(),
        input: sched::PlaceInput {
            options: config.placement,
            node_free: empty_room.clone(),
            ..sched::PlaceInput::default()
        },
        weng: Weng {
            whole_gpu: whole_gpu_table(&workload, node_gpus, &empty_room),
            workload,
            per_node: vec![0.0; cluster.nodes.len()],
            level: 0.0,
            integral: 0.0,
            since: SimTime::ZERO,
        },
    };
    let all_nodes: Vec<NodeId> = (0..cluster.nodes.len()).map(|n| NodeId(n as u32)).collect();
    refresh_weng(&mut st, &all_nodes, SimTime::ZERO);
    let mut events: EventQueue<Event> = EventQueue::new();
    // Arrivals in (submit time, trace order).
    let mut order: Vec<usize> = (0..trace.len()).collect();
    order.sort_by_key(|&i| (st.submit[i], i));
    for i in order {
        events.push(st.submit[i], Event::Arrival(i));
    }
    for f in &failure_list {
        events.push(
            SimTime::from_secs_f64(f.at_s),
            Event::NodeDown {
                node: f.node,
                down: SimTime::from_secs_f64(f.duration_s).0,
            },
        );
    }
    let mut now = SimTime::ZERO;
    let mut checked_changes = None;
    // Feasibility on an empty cluster, per class.
    let mut feasible: Vec<Option<bool>> = vec![None; st.class_extras.len()];
    let empty = Occupancy::with_node_tracking(cluster);
    // Whether the user's queues could ever admit a job: asked with every queue idle.
    let no_use = vec![Resources::default(); st.queue_tree.queues.len()];
    while let Some(ev) = events.pop() {
        if config.horizon.is_some_and(|h| ev.time > h) {
            break;
        }
        // A stale wake-up (its job started, stopped or ended since) is not an event at all.
        if let Event::Wake { job, stamp } = ev.event {
            if st.tiresias.get(job).is_none_or(|t| t.wake_stamp != stamp) {
                continue;
            }
        }
        // Nor is a stale completion (its job was re-paced, stopped or ended since): it must not
        // move the clock, or it would stretch the makespan past the last real event.
        if let Event::Completion { job, version } = ev.event {
            if st.running.get(&job).is_none_or(|r| r.version != version) {
                continue;
            }
        }
        // Failures and network rounds after every job has ended change nothing and must not
        // stretch the makespan.
        if matches!(
            ev.event,
            Event::NodeDown { .. } | Event::NodeUp(_) | Event::NetworkRound
        ) && st.ended == st.records.len()
        {
            continue;
        }
        now = ev.time;
        match ev.event {
            Event::Arrival(i) => {
                let c = st.class[i] as usize;
                let ok = *feasible[c].get_or_insert_with(|| {
                    let input = sched::PlaceInput {
                        options: config.placement,
                        node_free: empty_room.clone(),
                        pod_sets: st.class_extras[c].clone(),
                        ..sched::PlaceInput::default()
                    };
                    sched::place_with(cluster, &empty, &st.jobs[i], &input).is_ok()
                }) && st.rules.as_ref().is_none_or(|r| {
                    r.admits(
                        &no_use,
                        &no_use,
                        QueueId(st.queue_of[i] as u32),
                        &st.requests[i],
                        st.jobs[i].preemptible,
                    )
                });
                if ok {
                    queue_pending(&mut st, i);
                    request_pass(&mut st, &mut events, now);
                } else {
                    if config.check_invariants {
                        check_first_end(&st, i).map_err(|violation| SimError::Invariant {
                            at_ms: now.0,
                            violation,
                        })?;
                    }
                    st.records[i].outcome = Outcome::Failed;
                    st.ended += 1;
                    progress(st.ended);
                }
            }
            Event::Completion { job, .. } => {
                if config.check_invariants {
                    check_first_end(&st, job).map_err(|violation| SimError::Invariant {
                        at_ms: now.0,
                        violation,
                    })?;
                }
                finish(&mut st, job, now);
                st.ended += 1;
                progress(st.ended);
                request_pass(&mut st, &mut events, now);
            }
            Event::Pass => {
                st.pass_scheduled = None;
                pass(&mut st, &mut events, now, network);
            }
            Event::Wake { .. } => request_pass(&mut st, &mut events, now),
            Event::NodeDown { node, down } => {
                node_down(&mut st, node, now);
                events.push(SimTime(now.0.saturating_add(down)), Event::NodeUp(node));
                request_pass(&mut st, &mut events, now);
            }
            Event::NodeUp(node) => {
                node_up(&mut st, node);
                request_pass(&mut st, &mut events, now);
            }
            Event::NetworkRound => {
                st.network_round_at = None;
                st.network_round_now = true;
            }
        }
        for (at, job, stamp) in std::mem::take(&mut st.timers) {
            events.push(at, Event::Wake { job, stamp });
        }
        if events.peek_time() != Some(now) {
            // The last event at this time: re-solve now, or at the next round.
            match st.config.network_round.filter(|r| r.0 > 0) {
                _ if !st.network_dirty => {}
                Some(_) if st.network_round_now => {
                    refresh_network(&mut st, &mut events, now, network)
                }
                Some(round) => {
                    pace_new_jobs(&mut st, &mut events, now, network);
                    if st.network_round_at.is_none() {
                        let at = SimTime((now.0 / round.0 + 1) * round.0);
                        st.network_round_at = Some(at);
                        events.push(at, Event::NetworkRound);
                    }
                }
                None => refresh_network(&mut st, &mut events, now, network),
            }
            st.network_round_now = false;
        }
        // After every event; an event that started, ended and preempted nothing (an arrival, a
        // pass that placed nobody) leaves the checked state as it was.
        if config.check_invariants && checked_changes != Some(st.changes) {
            check_state(&st).map_err(|violation| SimError::Invariant {
                at_ms: now.0,
                violation,
            })?;
            checked_changes = Some(st.changes);
        }
    }
    if config.check_invariants {
        // Every job ended at most once: ended records and end events agree.
        let ended = st
            .records
            .iter()
            .filter(|r| r.outcome != Outcome::Unfinished)
            .count();
        if ended != st.ended {
            return Err(SimError::Invariant {
                at_ms: now.0,
                violation: sched::Violation {
                    job: String::new(),
                    invariant: "job ended twice",
                    detail: format!("{} end events for {ended} ended jobs", st.ended),
                },
            });
        }
    }
    if config.check_invariants {
        check_lost_work(&st).map_err(|violation| SimError::Invariant {
            at_ms: now.0,
            violation,
        })?;
    }
    if config.check_invariants && config.horizon.is_none() {
        // The whole trace ran: every job ended, exactly once.
        if let Some(r) = st.records.iter().find(|r| r.outcome == Outcome::Unfinished) {
            return Err(SimError::Invariant {
                at_ms: now.0,
                violation: sched::Violation {
                    job: r.name.clone(),
                    invariant: "job never ended",
                    detail: "the event queue ran dry while it was still pending or running"
                        .to_owned(),
                },
            });
        }
    }
    let end = config.horizon.map_or(now, |h| h.max(now));
    Ok(finish_run(st, end))
}

/// One top-level queue per trace queue (first-use order), quota 0, weight 1, and each job's.
fn trace_queues(trace: &[TraceJob]) -> (QueueTree, Vec<usize>) {
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut specs = Vec::new();
    let mut of = Vec::with_capacity(trace.len());
    for t in trace {
        let q = *index.entry(t.queue.as_str()).or_insert_with(|| {
            specs.push(QueueSpec {
                name: t.queue.clone(),
                parent: None,
                priority: 0,
                resources: [None, None, None],
                creation_time: None,
                uid: None,
            });
            specs.len() - 1
        });
        of.push(q);
    }
    let tree = QueueTree::new(specs).expect("distinct top-level queues are a valid tree");
    (tree, of)
}

/// Every invariant of the simulated state, from scratch: the scheduler's (no GPU, share or
/// memory oversubscribed; every running gang whole; required levels hold; see
/// [`sched::check_invariants`]) plus the simulator's own: the occupancy runs exactly the running
/// jobs, on the nodes the network model sees; no running job is pending or has ended; busy GPUs
/// equal the running jobs' GPUs; each queue's kept use equals its running jobs' asks, and with
/// the user's queues their rules hold on every resource ([`QueueRules::check`]: limits, KAI's
/// non-preemptible quota, Kueue's cohort lending). Pure; O(GPUs + running pods + queues)
/// per call. "Every job ends exactly once" is checked where a job ends
/// ([`check_first_end`]) and over all records when the run stops.
fn check_state(st: &State<'_>) -> Result<(), sched::Violation> {
    let violation = |job: &str, invariant: &'static str, detail: String| sched::Violation {
        job: job.to_owned(),
        invariant,
        detail,
    };
    sched::check_occupancy(&st.cluster, &st.occupancy)?;
    if st.occupancy.jobs().len() != st.running.len() {
        return Err(violation(
            "",
            "occupancy and running set differ",
            format!(
                "{} jobs hold GPUs, {} are running",
                st.occupancy.jobs().len(),
                st.running.len()
            ),
        ));
    }
    // Same count, and (below) every job holding GPUs is running: the two sets are equal.
    let mut busy = 0.0;
    let mut used = vec![sched::ResourceList::new(); st.cluster.nodes.len()];
    for (name, alloc) in st.occupancy.jobs() {
        let Some((i, r)) = st
            .name_index
            .get(name.as_str())
            .and_then(|&i| Some((i, st.running.get(&i)?)))
        else {
            return Err(violation(
                name,
                "not running",
                "holds GPUs but is not a running job".to_owned(),
            ));
        };
        sched::check_gang(&st.cluster, &st.jobs[i], alloc)?;
        if alloc
            .pods
            .iter()
            .map(|p| p.node)
            .ne(r.nodes.iter().copied())
        {
            return Err(violation(
                name,
                "nodes disagree",
                "the occupancy and the network model see different nodes".to_owned(),
            ));
        }
        if st.records[i].outcome != Outcome::Unfinished || st.records[i].end_s.is_some() {
            return Err(violation(
                name,
                "ended job running",
                format!("running although {:?}", st.records[i].outcome),
            ));
        }
        if st.pending.contains_key(&(st.submit[i], i)) {
            return Err(violation(
                name,
                "pending and running",
                "in both the pending list and the running set".to_owned(),
            ));
        }
        busy += st.requests[i].gpu;
        check_failures_of(st, i, r)?;
        shares::check_pods(&st.cluster, alloc, &st.trace[i].pod, &mut used)
            .map_err(|(invariant, detail)| violation(name, invariant, detail))?;
    }
    shares::check_room(&st.cluster, &used, &st.input.node_free)
        .map_err(|(invariant, detail)| violation("", invariant, detail))?;
    if (busy - st.busy_gpus).abs() > 1e-6 {
        return Err(violation(
            "",
            "busy GPUs",
            format!(
                "{} GPUs counted busy, the running jobs hold {busy}",
                st.busy_gpus
            ),
        ));
    }
    // Quotas and limits, per resource, from the running jobs: the kept use agrees, and with the
    // user's queues their rules hold; without them no queue has a limit.
    let mut usage = vec![Resources::default(); st.queue_tree.queues.len()];
    let mut non_preemptible = usage.clone();
    for &i in st.running.keys() {
        release_ask(&mut usage, st, i, 1.0);
        if !st.jobs[i].preemptible {
            release_ask(&mut non_preemptible, st, i, 1.0);
        }
    }
    let close = |a: &Resources, b: &Resources| {
        (a.gpu - b.gpu).abs() <= 1e-6
            && (a.cpu - b.cpu).abs() <= 1e-3
            && (a.memory - b.memory).abs() <= 1e-3
    };
    for (q, spec) in st.queue_tree.queues.iter().enumerate() {
        if !close(&usage[q], &st.usage[q]) || !close(&non_preemptible[q], &st.non_preemptible[q]) {
            return Err(violation(
                "",
                "queue use",
                format!(
                    "queue `{}`: {:?} counted in use, the running jobs hold {:?}",
                    spec.name, st.usage[q], usage[q]
                ),
            ));
        }
    }
    match &st.rules {
        Some(rules) => rules.check(&usage, &non_preemptible),
        None => Ok(()),
    }
}

/// Failures and checkpoints of running job `i`: no pod on a failed node; its progress within
/// `[last checkpoint, duration]`; its lost GPU-seconds within what it used.
fn check_failures_of(st: &State<'_>, i: usize, r: &Running) -> Result<(), sched::Violation> {
    let violation = |invariant: &'static str, detail: String| sched::Violation {
        job: st.jobs[i].name.clone(),
        invariant,
        detail,
    };
    if let Some(n) = r.nodes.iter().find(|n| st.down.get(n.index()) > Some(&0)) {
        return Err(violation(
            "pod on a failed node",
            format!(
                "runs on {} while it is down",
                st.cluster.nodes[n.index()].name
            ),
        ));
    }
    let progress = r.progress_s();
    let saved = st.saved_s[i];
    if progress > st.durations[i] + 1e-6 || progress < saved - 1e-6 || r.base_s != saved {
        return Err(violation(
            "progress",
            format!(
                "progress {progress} s outside [last checkpoint {saved} s, duration {} s]",
                st.durations[i]
            ),
        ));
    }
    let rec = &st.records[i];
    let lost = rec.lost_gpu_seconds_preemption + rec.lost_gpu_seconds_failure;
    if lost > rec.gpu_seconds + 1e-6 {
        return Err(violation(
            "lost work",
            format!("{lost} GPU-s lost of {} used", rec.gpu_seconds),
        ));
    }
    Ok(())
}

/// Lost-work accounting at the end of a run: per cause, the jobs' lost GPU-seconds add up to
/// the run's, and a completed job's useful GPU-seconds (used − lost) cover its ideal work
/// (exactly, within the clock's milliseconds, for a job no network slowed).
fn check_lost_work(st: &State<'_>) -> Result<(), sched::Violation> {
    let violation = |job: &str, detail: String| sched::Violation {
        job: job.to_owned(),
        invariant: "lost work",
        detail,
    };
    let by_cause = st.records.iter().fold([0.0; 2], |a, r| {
        [
            a[0] + r.lost_gpu_seconds_preemption,
            a[1] + r.lost_gpu_seconds_failure,
        ]
    });
    for (jobs, run) in by_cause.iter().zip(st.lost_by_cause) {
        if (jobs - run).abs() > 1e-6 * (1.0 + jobs) {
            return Err(violation(
                "",
                format!("jobs lost {jobs} GPU-s, the run counts {run}"),
            ));
        }
    }
    for (i, r) in st.records.iter().enumerate() {
        if r.outcome != Outcome::Completed {
            continue;
        }
        let gpus = st.requests[i].gpu;
        let useful = r.gpu_seconds - r.lost_gpu_seconds_preemption - r.lost_gpu_seconds_failure;
        let ideal = gpus * st.durations[i];
        let stops = f64::from(r.preemptions + r.failures);
        let tolerance = gpus * 0.002 * (1.0 + 2.0 * stops);
        let exact = r.nodes == 1;
        if useful < ideal - tolerance || (exact && useful > ideal + tolerance) {
            return Err(violation(
                &r.name,
                format!(
                    "used {} GPU-s = useful {useful} + lost; its work is {ideal}",
                    r.gpu_seconds
                ),
            ));
        }
    }
    Ok(())
}

/// A job about to end (complete or fail) has not ended before and is neither pending nor (for a
/// failure) running. Pure; O(log jobs).
fn check_first_end(st: &State<'_>, i: usize) -> Result<(), sched::Violation> {
    let r = &st.records[i];
    if r.outcome != Outcome::Unfinished || r.end_s.is_some() {
        return Err(sched::Violation {
            job: r.name.clone(),
            invariant: "job ended twice",
            detail: format!("ends again after {:?}", r.outcome),
        });
    }
    if st.pending.contains_key(&(st.submit[i], i)) {
        return Err(sched::Violation {
            job: r.name.clone(),
            invariant: "pending job ended",
            detail: "ends while still in the pending list".to_owned(),
        });
    }
    Ok(())
}

/// FNV-1a: the invariant checks look every running job up by name after every event, and
/// SipHash dominated their cost. Look-ups only; nothing iterates this map.
#[derive(Clone, Copy, Debug, Default)]
struct BuildFnv;

/// FNV-1a state.
#[derive(Debug)]
struct Fnv(u64);

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

/// What decides whether a simulated job fits an empty cluster: pods, GPU request (kind, amount,
/// devices) and topology levels (a tuple, not a string: one is built per arrival).
type ShapeKey = (u32, u8, u32, u32, Option<usize>, Option<usize>);

fn shape_key(job: &Job) -> ShapeKey {
    let s = &job.pod_sets[0];
    let (kind, amount) = match s.gpu {
        GpuRequest::Whole(g) => (0, g),
        GpuRequest::Fraction { milli, .. } => (1, milli),
        GpuRequest::MemoryMib { mib, .. } => (2, mib),
    };
    (
        s.count,
        kind,
        amount,
        s.gpu.devices(),
        s.topology.required,
        s.topology.preferred,
    )
}

/// Build the scheduler's job for a trace row: jobs that fit one node are one pod; larger ones
/// become gangs of whole nodes. Returns the job, its pod count and GPUs per pod.
fn to_sched_job(
    cluster: &Cluster,
    t: &TraceJob,
    node_gpus: u32,
    policy: &Policy,
) -> Result<(Job, u32, u32), SimError> {
    let (pods, per_pod) = if t.gpus <= node_gpus {
        (1, t.gpus)
    } else {
        (t.gpus.div_ceil(node_gpus), node_gpus)
    };
    let level = |l: &str| {
        cluster
            .level_by_label(l)
            .ok_or_else(|| SimError::UnknownLevel {
                job: t.name.clone(),
                line: t.line,
                level: l.to_owned(),
                levels: cluster
                    .levels
                    .iter()
                    .map(|x| x.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    };
    let topology = match &t.topology {
        TopologyAsk::Required(l) => TopologyRequest {
            required: Some(level(l)?),
            ..TopologyRequest::default()
        },
        TopologyAsk::Preferred(l) => TopologyRequest {
            preferred: Some(level(l)?),
            ..TopologyRequest::default()
        },
        TopologyAsk::None if pods > 1 => match policy.topology {
            TopologyMode::None => TopologyRequest::default(),
            TopologyMode::Preferred(l) => TopologyRequest {
                preferred: Some(l),
                ..TopologyRequest::default()
            },
            TopologyMode::Required(l) => TopologyRequest {
                required: Some(l),
                ..TopologyRequest::default()
            },
        },
        TopologyAsk::None => TopologyRequest::default(),
    };
    let job = Job {
        name: t.name.clone(),
        queue: t.queue.clone(),
        priority: t.priority,
        preemptible: t.preemptible,
        pod_sets: vec![PodSet {
            name: "workers".to_owned(),
            count: pods,
            min_count: pods,
            gpu: match t.pod.gpu_milli {
                Some(milli) if per_pod == 1 => GpuRequest::Fraction { milli, devices: 1 },
                _ => GpuRequest::Whole(per_pod),
            },
            cpu_millis: t.pod.cpu_milli,
            memory_mib: t.pod.memory_mib,
            topology,
        }],
        tolerations: Vec::new(),
    };
    Ok((job, pods, per_pod))
}

fn request_pass(st: &mut State<'_>, events: &mut EventQueue<Event>, now: SimTime) {
    let cycle = st.config.cycle.0;
    let at = if cycle == 0 {
        now
    } else {
        SimTime(now.0.div_ceil(cycle) * cycle)
    };
    if st.pass_scheduled.is_none_or(|t| t > at) {
        st.pass_scheduled = Some(at);
        events.push(at, Event::Pass);
    }
}

fn set_busy(st: &mut State<'_>, now: SimTime, delta: f64) {
    st.busy_integral += st.busy_gpus * now.secs_since(st.last_busy_change);
    st.last_busy_change = now;
    st.busy_gpus += delta;
    st.timeline.push((now, st.busy_gpus));
}

fn set_fragmentation(st: &mut State<'_>, now: SimTime, level: f64) {
    st.frag_integral += st.frag_level * now.secs_since(st.frag_since);
    st.frag_since = now;
    st.frag_level = level;
}

/// Take (`take`) or give back job `i`'s CPU and memory on its pods' nodes.
fn hold_room(st: &mut State<'_>, i: usize, nodes: &[NodeId], take: bool) {
    if st.input.node_free.0.is_empty() {
        return;
    }
    let requests = shares::requests(&st.trace[i].pod);
    for n in nodes {
        shares::hold(&mut st.input.node_free, n.index(), &requests, take);
    }
}

/// Recompute Weng et al.'s fragmentation of `nodes` after a change at `now`.
fn refresh_weng(st: &mut State<'_>, nodes: &[NodeId], now: SimTime) {
    st.weng.integral += st.weng.level * now.secs_since(st.weng.since);
    st.weng.since = now;
    let mut free = Vec::new();
    for &n in nodes {
        if let Some(value) = whole_gpu_fragmentation(st, n) {
            let old = std::mem::replace(&mut st.weng.per_node[n.index()], value);
            st.weng.level += value - old;
            continue;
        }
        free.clear();
        free.extend(
            (0..st.occupancy.gpus(n)).map(|g| sched::MILLI_PER_GPU - st.occupancy.used_milli(n, g)),
        );
        let room = st.input.node_free.0.get(n.index());
        let amount =
            |k: &str, unit: u64| room.and_then(|r| r.get(k)).map_or(u64::MAX, |&v| v / unit);
        let view = NodeView {
            free_milli: &free,
            free_cpu_milli: amount("cpu", 1),
            free_memory_mib: amount("memory", 1024 * 1024),
            model: st
                .cluster
                .node(n)
                .labels
                .get(shares::GPU_MODEL_LABEL)
                .map(String::as_str),
            schedulable: st.occupancy.is_schedulable(n),
        };
        let value = node_fragmentation(&st.weng.workload, &view);
        let old = std::mem::replace(&mut st.weng.per_node[n.index()], value);
        st.weng.level += value - old;
    }
}

/// `F_n(M)` of node `n` from [`Weng::whole_gpu`] when the workload asks whole GPUs alone and
/// every GPU of `n` is free or fully used (`None` otherwise): the same value, bit for bit, as
/// [`node_fragmentation`] on the node's view, which then depends only on its free GPUs and
/// whether it is schedulable.
fn whole_gpu_fragmentation(st: &State<'_>, n: NodeId) -> Option<f64> {
    let table = st.weng.whole_gpu.as_ref()?;
    let mut free_gpus = 0;
    for g in 0..st.occupancy.gpus(n) {
        match st.occupancy.used_milli(n, g) {
            0 => free_gpus += 1,
            sched::MILLI_PER_GPU => {}
            _ => return None,
        }
    }
    let schedulable = st.occupancy.is_schedulable(n);
    table.get(free_gpus).map(|by| by[usize::from(schedulable)])
}

/// [`Weng::whole_gpu`] for `workload` on nodes of at most `node_gpus` GPUs, when every task
/// type asks whole GPUs and nothing else and nodes have no room limits.
fn whole_gpu_table(
    workload: &Workload,
    node_gpus: u32,
    room: &sched::NodeFree,
) -> Option<Vec<[f64; 2]>> {
    let simple = room.0.is_empty()
        && workload.types.iter().all(|m| {
            m.milli == sched::MILLI_PER_GPU
                && m.cpu_milli == 0
                && m.memory_mib == 0
                && m.gpu_models.is_empty()
        });
    if !simple {
        return None;
    }
    let view = |free: &[u32], schedulable: bool| {
        node_fragmentation(
            workload,
            &NodeView {
                free_milli: free,
                free_cpu_milli: u64::MAX,
                free_memory_mib: u64::MAX,
                model: None,
                schedulable,
            },
        )
    };
    Some(
        (0..=node_gpus as usize)
            .map(|k| {
                let free = vec![sched::MILLI_PER_GPU; k];
                [view(&free, false), view(&free, true)]
            })
            .collect(),
    )
}

/// Bring a running job's progress up to `now` at its current slowdown.
fn advance(r: &mut Running, now: SimTime) {
    let elapsed = now.secs_since(r.last_update);
    let (since, done_before) = (r.last_update, r.work_s - r.remaining_s);
    if r.slowdown.is_finite() {
        r.remaining_s = (r.remaining_s - elapsed / r.slowdown).max(0.0);
    }
    r.last_update = now;
    note_milestones(r, since, done_before);
}

/// After `advance` from `since` (when the run had done `done_before` ideal seconds): when the
/// restart ended and the last checkpoint reached, if in this stretch (constant slowdown).
fn note_milestones(r: &mut Running, since: SimTime, done_before: f64) {
    let done = r.work_s - r.remaining_s;
    let (slowdown, until) = (r.slowdown, r.last_update);
    let at = |target: f64| {
        since
            .plus_secs((target - done_before).max(0.0) * slowdown)
            .min(until)
    };
    if r.restart_end.is_none() && done >= r.restart_s {
        r.restart_end = Some(at(r.restart_s));
    }
    if r.interval_s > 0.0 && r.restart_end.is_some() {
        let reached = (r.progress_s() / r.interval_s).floor() * r.interval_s;
        if reached > r.checkpoint_s {
            r.checkpoint_s = reached;
            r.checkpoint_at = Some(at(r.restart_s + reached - r.base_s));
        }
    }
}

/// The failures of a run in time order: the listed ones, then, with an MTBF, failures drawn
/// until every job could have run one after another (last arrival + every duration and
/// restart), so a run always ends.
fn failure_list(
    cluster: &Cluster,
    trace: &[TraceJob],
    failures: &FailureConfig,
) -> Result<Vec<crate::failures::NodeFailure>, SimError> {
    let mut out = failures.listed.clone();
    for (index, f) in out.iter().enumerate() {
        if f.node.index() >= cluster.nodes.len() {
            return Err(SimError::UnknownNode {
                index,
                node: f.node.0,
                nodes: cluster.nodes.len(),
            });
        }
    }
    if let Some(m) = &failures.mtbf {
        let first = trace
            .iter()
            .map(|t| t.submit_s)
            .fold(f64::INFINITY, f64::min);
        let last = trace.iter().map(|t| t.submit_s).fold(0.0, f64::max);
        let span = if first.is_finite() { last - first } else { 0.0 };
        let work: f64 = trace.iter().map(|t| t.duration_s).sum::<f64>()
            + trace.len() as f64 * m.repair_s.max(0.0);
        out.extend(crate::failures::draw_failures(
            cluster.nodes.len(),
            m,
            span + work,
        ));
    }
    out.sort_by(|a, b| a.at_s.total_cmp(&b.at_s).then(a.node.cmp(&b.node)));
    Ok(out)
}

/// Node `node` fails: it is no longer Ready, and every job with a pod on it stops.
fn node_down(st: &mut State<'_>, node: NodeId, now: SimTime) {
    st.down[node.index()] += 1;
    if st.down[node.index()] == 1 {
        st.node_failures += 1;
        st.cluster.to_mut().nodes[node.index()].ready = false;
        st.occupancy.refresh_node(&st.cluster, node);
        st.changes += 1;
    }
    let hit: Vec<usize> = st
        .running
        .iter()
        .filter(|(_, r)| r.nodes.contains(&node))
        .map(|(&i, _)| i)
        .collect();
    for i in hit {
        stop(st, i, now, StopCause::Failure);
    }
}

/// Node `node` is repaired from one failure; Ready again when no other failure holds it.
fn node_up(st: &mut State<'_>, node: NodeId) {
    st.down[node.index()] -= 1;
    if st.down[node.index()] == 0 {
        st.cluster.to_mut().nodes[node.index()].ready = true;
        st.occupancy.refresh_node(&st.cluster, node);
        st.changes += 1;
    }
}

fn start(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    i: usize,
    placement: &sched::Placement,
    now: SimTime,
) {
    sched::commit(&mut st.occupancy, &st.jobs[i], placement).expect("a fresh placement commits");
    st.changes += 1;
    let nodes: Vec<NodeId> = placement.pods.iter().map(|p| p.node).collect();
    let rec = &mut st.records[i];
    if rec.start_s.is_none() {
        rec.start_s = Some(now.as_secs_f64());
    }
    rec.highest_tier = placement.highest_tier;
    let gpus = st.requests[i].gpu;
    let multi = nodes.len() > 1;
    hold_room(st, i, &nodes, true);
    refresh_weng(st, &nodes, now);
    let version = st.next_version;
    st.next_version += 1;
    let ckpt = st.checkpointing[i];
    let (restart_s, work_s) = next_run_work_s(st, i);
    let base_s = st.saved_s[i];
    st.running.insert(
        i,
        Box::new(Running {
            nodes,
            start: now,
            last_update: now,
            remaining_s: work_s,
            slowdown: 1.0,
            version,
            run: st.changes,
            work_s,
            base_s,
            restart_s,
            interval_s: ckpt.interval_s,
            restart_end: (restart_s <= 0.0).then_some(now),
            checkpoint_s: base_s,
            checkpoint_at: None,
        }),
    );
    set_busy(st, now, gpus);
    hold(st, i, now, 1.0);
    if multi && st.comm[i].comm_share > 0.0 {
        st.network_dirty = true;
        st.net_changed.push(i);
    }
    events.push(now.plus_secs(work_s), Event::Completion { job: i, version });
    ask_demotion_wake(st, i, now);
}

/// The ideal seconds job `i`'s next run takes, as `(restart, whole run)`: a restart after a
/// stop (0 on a first start), then the work left after its last checkpoint.
fn next_run_work_s(st: &State<'_>, i: usize) -> (f64, f64) {
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

fn finish(st: &mut State<'_>, i: usize, now: SimTime) {
    let mut r = st.running.remove(&i).expect("finishing a running job");
    st.occupancy.release(&st.jobs[i].name);
    st.changes += 1;
    if let Some(t) = st.tiresias.get_mut(i) {
        t.wake_stamp += 1;
    }
    advance(&mut r, now);
    lose_restart(st, i, &r, now);
    hold_room(st, i, &r.nodes, false);
    refresh_weng(st, &r.nodes, now);
    let held = st.requests[i].gpu;
    let rec = &mut st.records[i];
    let run = now.secs_since(r.start);
    rec.gpu_seconds += held * run;
    rec.end_s = Some(now.as_secs_f64());
    rec.outcome = Outcome::Completed;
    rec.network_slowdown = Some(if r.work_s > 0.0 { run / r.work_s } else { 1.0 });
    let gpus = held;
    if r.nodes.len() > 1 && st.comm[i].comm_share > 0.0 {
        st.network_dirty = true;
        st.net_changed.push(i);
    }
    set_busy(st, now, -gpus);
    hold(st, i, now, -1.0);
}

/// Add (`sign` 1) or take away (-1) job `i`'s ask to its queue's use.
fn hold(st: &mut State<'_>, i: usize, now: SimTime, sign: f64) {
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

/// What a pass learns about its jobs and keeps until it starts one (a start changes every
/// answer): whether a job of this queue, preemptibility and ask is admitted; whether one of this
/// queue, priority and size has anyone it may stop; the running jobs by level (Tiresias, SRTF).
#[derive(Default)]
struct PassKnown {
    admit: BTreeMap<(usize, bool, [u64; 3]), bool>,
    hopeless: BTreeMap<(usize, i32, u64), bool>,
    victims: Option<Vec<(u64, usize, f64)>>,
}

impl PassKnown {
    /// A job started: nothing known still holds.
    fn forget(&mut self) {
        self.admit.clear();
        self.hopeless.clear();
        self.victims = None;
    }
}

/// Stop `victims` (by name) and start pending job `i` at `placement`.
fn stop_and_start(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    i: usize,
    victims: &[String],
    placement: &sched::Placement,
    now: SimTime,
) {
    for v in victims {
        preempt(st, v, now);
    }
    unqueue_pending(st, i);
    start(st, events, i, placement, now);
}

fn preempt(st: &mut State<'_>, name: &str, now: SimTime) {
    let Some((&i, _)) = st.running.iter().find(|(&i, _)| st.jobs[i].name == name) else {
        return;
    };
    stop(st, i, now, StopCause::Preemption);
}

/// Add `gpu_seconds` lost to `cause` to job `i` and the run.
fn lose(st: &mut State<'_>, i: usize, cause: StopCause, gpu_seconds: f64) {
    if gpu_seconds <= 0.0 {
        return;
    }
    let rec = &mut st.records[i];
    match cause {
        StopCause::Preemption => rec.lost_gpu_seconds_preemption += gpu_seconds,
        StopCause::Failure => rec.lost_gpu_seconds_failure += gpu_seconds,
    }
    st.lost_by_cause[cause as usize] += gpu_seconds;
    st.lost_gpu_seconds += gpu_seconds;
}

/// A run of job `i` ends at `now` (after `advance`): its restart so far is lost to the cause
/// of the stop that made it necessary.
fn lose_restart(st: &mut State<'_>, i: usize, r: &Running, now: SimTime) {
    if let Some(cause) = st.last_stop[i] {
        let restart = r.restart_end.unwrap_or(now).min(now).secs_since(r.start);
        lose(st, i, cause, st.requests[i].gpu * restart);
    }
}

/// Stop running job `i` for `cause`: its work since the last checkpoint (or since its restart
/// ended) is lost, and it goes back to the pending list with its progress at that checkpoint.
fn stop(st: &mut State<'_>, i: usize, now: SimTime, cause: StopCause) {
    let mut r = st.running.remove(&i).expect("a stopped job is running");
    st.occupancy.release(&st.jobs[i].name);
    st.changes += 1;
    hold_room(st, i, &r.nodes, false);
    refresh_weng(st, &r.nodes, now);
    advance(&mut r, now);
    lose_restart(st, i, &r, now);
    let gpus = st.requests[i].gpu;
    let kept_until = r.checkpoint_at.or(r.restart_end).unwrap_or(now).min(now);
    lose(st, i, cause, gpus * now.secs_since(kept_until));
    st.saved_s[i] = r.checkpoint_s;
    st.last_stop[i] = Some(cause);
    let rec = &mut st.records[i];
    rec.gpu_seconds += gpus * now.secs_since(r.start);
    match cause {
        StopCause::Preemption => {
            rec.preemptions += 1;
            st.preemptions += 1;
        }
        StopCause::Failure => {
            rec.failures += 1;
            st.failure_stops += 1;
        }
    }
    if r.nodes.len() > 1 {
        st.network_dirty = true;
        st.net_changed.push(i);
    }
    set_busy(st, now, -gpus);
    hold(st, i, now, -1.0);
    queue_pending(st, i);
    st.requeued.push(i);
    note_preempted(st, i, now.secs_since(r.start), now);
}

fn pass(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    now: SimTime,
    network: &mut dyn Network,
) {
    let fair_order_on = matches!(st.config.policy.order, Order::FairShare);
    // Fair shares order the fair-share policy and decide KAI's reclaim under every policy.
    let kai_rules = st.rules.as_ref().is_some_and(|r| r.dialect == Dialect::Kai);
    let share = (fair_order_on || kai_rules).then(|| fair_shares(st));
    let ranked = matches!(
        st.config.policy.order,
        Order::Tiresias(_) | Order::Srtf | Order::Sjf
    );
    if ranked {
        promote_starved(st, now);
    }
    // Submission order is walked on the live pending list (no copy of it per pass).
    let mut listed = match &share {
        Some(fair) if fair_order_on => Some(fair_order(st, fair).into_iter()),
        _ if ranked => Some(ranked_order(st, now).into_iter()),
        _ => None,
    };
    let mut cursor: Option<(SimTime, usize)> = None;
    st.requeued.clear();
    // Tiresias and SRTF: a few blocked jobs per pass may stop running jobs of a higher level.
    let by_level = matches!(st.config.policy.order, Order::Tiresias(_) | Order::Srtf);
    let mut level_attempts = 0;
    let may_preempt = fair_order_on || st.rules.is_some();
    let mut reclaim_attempts = 0;
    let mut known = PassKnown::default();
    let mut policies: BTreeMap<usize, PreemptionPolicy> = BTreeMap::new();
    let network_aware = st.config.policy.network_aware;
    // When only placement can start a job (nobody is stopped for another), the pass is over
    // once every pending job's class is known not to place in the current state.
    let only_placement = !by_level && !may_preempt && !network_aware;
    // Then a job whose class is known not to place does nothing, and unless FIFO stops at it,
    // the walk may step over it.
    let skip_known = only_placement && st.config.policy.order != Order::Fifo;
    loop {
        if only_placement && st.memo.none_starts(st.changes) {
            break;
        }
        let next = match &mut listed {
            Some(order) => order.next(),
            None => next_submitted(st, &mut cursor, skip_known),
        };
        let Some(i) = next else {
            break;
        };
        let free = st.total_gpus - st.busy_gpus;
        let want = st.requests[i].gpu;
        let enough_gpus = want <= free + 1e-9;
        if !enough_gpus {
            st.memo.note(st.class[i] as usize, st.changes, true);
        }
        // Admission depends on the queues' use, which changes only when a job starts.
        let ask = &st.requests[i];
        let admitted = st.rules.is_none()
            || *known
                .admit
                .entry((
                    st.queue_of[i],
                    st.jobs[i].preemptible,
                    [ask.gpu, ask.cpu, ask.memory].map(f64::to_bits),
                ))
                .or_insert_with(|| admits(st, i, &st.usage));
        let placed = if admitted && enough_gpus && network_aware {
            place_network_aware(st, i, network)
        } else if admitted && enough_gpus {
            place_memo(st, i)
        } else {
            None
        };
        if let Some(p) = placed {
            stop_and_start(st, events, i, &[], &p, now);
            known.forget();
            continue;
        }
        let promoted = st.tiresias.get(i).is_some_and(|t| t.promoted);
        if by_level && admitted && !promoted && level_attempts < 4 {
            let by_level = known
                .victims
                .get_or_insert_with(|| victims_by_level(st, now));
            if let Some((victims, placement)) =
                room_by_level(st, i, now, by_level, &mut level_attempts)
            {
                stop_and_start(st, events, i, &victims, &placement, now);
                known.forget();
                continue;
            }
        }
        // Reclaim and preemption: a few blocked jobs per pass may displace other work.
        if may_preempt && reclaim_attempts < 4 {
            // One policy per queue and pass (the fair shares are the pass's).
            let q = st.queue_of[i];
            let policy = match &st.rules {
                Some(r) => &*policies
                    .entry(q)
                    .or_insert_with(|| r.preemption_policy(QueueId(q as u32), share.as_ref())),
                None => &PreemptionPolicy {
                    fair_share_gpus: share.clone().unwrap_or_default(),
                    ..PreemptionPolicy::default()
                },
            };
            // With the user's queues, a job nobody may be stopped for does not use an attempt
            // (known per queue, priority and size until the next start).
            let hopeless = st.rules.is_some()
                && *known
                    .hopeless
                    .entry((
                        st.queue_of[i],
                        st.jobs[i].priority,
                        (st.requests[i].gpu * 1000.0) as u64,
                    ))
                    .or_insert_with(|| {
                        sched::eligible_victims(&st.cluster, &st.occupancy, &st.jobs[i], policy)
                            .is_empty()
                    });
            reclaim_attempts += usize::from(!hopeless);
            let room = if hopeless {
                None
            } else {
                make_room(st, i, policy, admitted)
            };
            if let Some((victims, placement)) = room {
                stop_and_start(st, events, i, &victims, &placement, now);
                known.forget();
                continue;
            }
        }
        if st.config.policy.order == Order::Fifo {
            break;
        }
    }
    // Fragmentation: free GPUs while jobs wait and none of the smallest waiting shapes fits.
    let free = st.total_gpus - st.busy_gpus;
    let level = if st.pending.is_empty() || free <= 0.0 {
        0.0
    } else {
        // Per size (GPUs, held share), smallest first, the lowest-numbered waiting job.
        let smallest = st.pending_by_size.smallest(8);
        let any_fits = smallest.into_iter().any(|i| place_memo(st, i).is_some());
        if any_fits {
            0.0
        } else {
            free / st.total_gpus
        }
    };
    set_fragmentation(st, now, level);
}

/// Put job `i` on the pending list.
fn queue_pending(st: &mut State<'_>, i: usize) {
    st.pending.insert((st.submit[i], i), ());
    st.memo
        .pending_change(st.class[i] as usize, st.changes, true);
    st.pending_by_size.add(st.size_group[i] as usize, i);
}

/// Take job `i` off the pending list.
fn unqueue_pending(st: &mut State<'_>, i: usize) {
    st.pending.remove(&(st.submit[i], i));
    st.memo
        .pending_change(st.class[i] as usize, st.changes, false);
    st.pending_by_size.remove(st.size_group[i] as usize, i);
}

/// The next pending job in submission order after `cursor` (moved to it), skipping jobs that
/// went back to the list during this pass (the pass tries the jobs pending when it began) and,
/// if `skip_known`, jobs whose class is known not to start in the current state: one walk of
/// the list however many it steps over.
fn next_submitted(
    st: &State<'_>,
    cursor: &mut Option<(SimTime, usize)>,
    skip_known: bool,
) -> Option<usize> {
    let from = match *cursor {
        None => Bound::Unbounded,
        Some(after) => Bound::Excluded(after),
    };
    for &(submitted, i) in st.pending.range((from, Bound::Unbounded)).map(|(k, _)| k) {
        *cursor = Some((submitted, i));
        let known = skip_known && st.memo.known(st.class[i] as usize, st.changes);
        if !known && !st.requeued.contains(&i) {
            return Some(i);
        }
    }
    None
}

/// `sched::place_with` for job `i` in the current state, unless its class is known to fail
/// there ([`PlaceMemo`]); a failure is noted. The class's extras are swapped into
/// [`State::input`] for the call (no copy of the nodes' room). Debug builds (the tests) place
/// a known failure anyway and stop if it places.
fn place_memo(st: &mut State<'_>, i: usize) -> Option<sched::Placement> {
    let c = st.class[i] as usize;
    let known_to_fail = st.memo.failed[c] == st.changes + 1;
    if known_to_fail && !cfg!(debug_assertions) {
        return None;
    }
    std::mem::swap(&mut st.input.pod_sets, &mut st.class_extras[c]);
    let placed = sched::place_with(&st.cluster, &st.occupancy, &st.jobs[i], &st.input).ok();
    std::mem::swap(&mut st.input.pod_sets, &mut st.class_extras[c]);
    assert!(
        !(known_to_fail && placed.is_some()),
        "job {i}: its class was known not to place, yet it places"
    );
    if placed.is_none() {
        st.memo.note(c, st.changes, false);
    }
    placed
}

/// Job `i`'s level under a ranked order ([`crate::policies`]; lower runs first): Tiresias'
/// queue by attained GPU-seconds (the current run included), SRTF's remaining ideal work
/// (ms; a pending job's next run as [`start`] would count it: the restart after a stop, then
/// the work left after its last checkpoint), SJF's ideal duration (ms).
fn level(st: &State<'_>, i: usize, now: SimTime) -> u64 {
    match &st.config.policy.order {
        Order::Tiresias(t) => {
            let running = st.running.get(&i).map_or(0.0, |r| {
                f64::from(st.records[i].gpus) * now.secs_since(r.start)
            });
            policies::tiresias_queue(st.tiresias[i].attained_gpu_s + running, &t.thresholds_gpu_s)
        }
        Order::Srtf => policies::millis_level(st.running.get(&i).map_or_else(
            || next_run_work_s(st, i).1,
            |r| {
                if r.slowdown.is_finite() {
                    r.remaining_s - now.secs_since(r.last_update) / r.slowdown
                } else {
                    r.remaining_s
                }
            },
        )),
        Order::Sjf => policies::millis_level(st.durations[i]),
        Order::Fifo | Order::BestEffortFifo | Order::FairShare => 0,
    }
}

/// Pending jobs by `(level, submission, trace order)`.
fn ranked_order(st: &State<'_>, now: SimTime) -> Vec<usize> {
    let mut v: Vec<(u64, SimTime, usize)> = st
        .pending
        .keys()
        .map(|&(t, i)| (level(st, i, now), t, i))
        .collect();
    v.sort_unstable();
    v.into_iter().map(|(_, _, i)| i).collect()
}

/// Tiresias' starvation guard: a pending job that has waited PROMOTEKNOB × its last run since it
/// was preempted goes back to queue 0 (its attained service forgotten).
fn promote_starved(st: &mut State<'_>, now: SimTime) {
    let Order::Tiresias(t) = &st.config.policy.order else {
        return;
    };
    let knob = t.promote_knob;
    let starved: Vec<usize> = st
        .pending
        .keys()
        .map(|&(_, i)| i)
        .filter(|&i| {
            let j = &st.tiresias[i];
            policies::starved(now.secs_since(j.preempted_at), j.last_run_s, knob)
        })
        .collect();
    for i in starved {
        let j = &mut st.tiresias[i];
        j.attained_gpu_s = 0.0;
        j.last_run_s = 0.0;
        j.promoted = true;
    }
}

/// After job `i` started: under Tiresias, a wake-up when it reaches its next queue threshold, if
/// that comes before its ideal end.
fn ask_demotion_wake(st: &mut State<'_>, i: usize, now: SimTime) {
    let Order::Tiresias(t) = &st.config.policy.order else {
        return;
    };
    let j = &mut st.tiresias[i];
    j.wake_stamp += 1;
    let gpus = st.records[i].gpus;
    if let Some(s) = policies::seconds_to_demotion(j.attained_gpu_s, gpus, &t.thresholds_gpu_s) {
        if s < st.durations[i] {
            st.timers.push((now.plus_secs(s), i, j.wake_stamp));
        }
    }
}

/// After job `i` was preempted at `now` after a run of `run_s`: its attained service grows, and
/// under Tiresias with the starvation guard on, a wake-up when it would starve.
fn note_preempted(st: &mut State<'_>, i: usize, run_s: f64, now: SimTime) {
    let Order::Tiresias(t) = &st.config.policy.order else {
        return;
    };
    let j = &mut st.tiresias[i];
    j.wake_stamp += 1;
    j.attained_gpu_s += f64::from(st.records[i].gpus) * run_s;
    j.last_run_s = run_s;
    j.preempted_at = now;
    j.promoted = false;
    if t.promote_knob > 0 && run_s > 0.0 {
        let at = now.plus_secs(f64::from(t.promote_knob) * run_s);
        st.timers.push((at, i, j.wake_stamp));
    }
}

/// The running jobs that may be stopped (preemptible), as `(level, job, GPUs)` in the order to
/// stop them ([`policies::victim_order`]).
fn victims_by_level(st: &State<'_>, now: SimTime) -> Vec<(u64, usize, f64)> {
    let candidates: Vec<policies::Candidate> = st
        .running
        .keys()
        .map(|&v| policies::Candidate {
            level: level(st, v, now),
            submit_ms: st.submit[v].0,
            job: v,
            preemptible: st.jobs[v].preemptible,
        })
        .collect();
    // Level 0 is nobody's victim: the order for a job below every level lists them all.
    let level_of: BTreeMap<usize, u64> = candidates.iter().map(|c| (c.job, c.level)).collect();
    policies::victim_order(0, &candidates)
        .into_iter()
        .map(|v| (level_of[&v], v, f64::from(st.records[v].gpus)))
        .collect()
}

/// The running jobs of a higher level job `i` stops to start, and its placement: victims worst
/// first until it places, then those given back (best first) while it still places. `known` is
/// [`victims_by_level`]; `attempts` counts the placements tried for real (not when even every
/// lower-level job's GPUs would not be enough).
fn room_by_level(
    st: &State<'_>,
    i: usize,
    now: SimTime,
    known: &[(u64, usize, f64)],
    attempts: &mut usize,
) -> Option<(Vec<String>, sched::Placement)> {
    let mine = level(st, i, now);
    let eligible: Vec<(usize, f64)> = known
        .iter()
        .take_while(|&&(l, _, _)| l > mine)
        .map(|&(_, v, g)| (v, g))
        .collect();
    let want = st.requests[i].gpu;
    let mut free = st.total_gpus - st.busy_gpus;
    if free + eligible.iter().map(|&(_, g)| g).sum::<f64>() + 1e-9 < want {
        return None;
    }
    *attempts += 1;
    let input = job_input(st, i);
    // What job i may use with `stopped` stopped: their GPUs, and their CPU and memory where the
    // nodes' room is tracked.
    let input_without = |stopped: &[usize]| -> Cow<'_, sched::PlaceInput> {
        if st.input.node_free.0.is_empty() || stopped.is_empty() {
            return Cow::Borrowed(&*input);
        }
        let mut freed = (*input).clone();
        for &v in stopped {
            let requests = shares::requests(&st.trace[v].pod);
            for n in &st.running[&v].nodes {
                shares::hold(&mut freed.node_free, n.index(), &requests, false);
            }
        }
        Cow::Owned(freed)
    };
    let places = |stopped: &[usize]| {
        let mut occ = st.occupancy.clone();
        for &v in stopped {
            occ.release(&st.jobs[v].name);
        }
        sched::place_with(&st.cluster, &occ, &st.jobs[i], &input_without(stopped)).ok()
    };
    let mut occ = st.occupancy.clone();
    let mut chosen = Vec::new();
    let mut placed = false;
    for &(v, g) in &eligible {
        occ.release(&st.jobs[v].name);
        chosen.push(v);
        free += g;
        if free + 1e-9 >= want
            && sched::place_with(&st.cluster, &occ, &st.jobs[i], &input_without(&chosen)).is_ok()
        {
            placed = true;
            break;
        }
    }
    if !placed {
        return None;
    }
    // Give back what was not needed, the best-level victims first.
    let mut k = chosen.len();
    while k > 0 {
        k -= 1;
        let without: Vec<usize> = chosen
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != k)
            .map(|(_, &v)| v)
            .collect();
        if places(&without).is_some() {
            chosen = without;
        }
    }
    let placement = places(&chosen)?;
    let mut names: Vec<String> = chosen.iter().map(|&v| st.jobs[v].name.clone()).collect();
    names.sort();
    Some((names, placement))
}

/// Whether job `i`'s queue admits it given each queue's `usage` (always without the user's
/// queues).
fn admits(st: &State<'_>, i: usize, usage: &[Resources]) -> bool {
    st.rules.as_ref().is_none_or(|r| {
        r.admits(
            usage,
            &st.non_preemptible,
            QueueId(st.queue_of[i] as u32),
            &st.requests[i],
            st.jobs[i].preemptible,
        )
    })
}

/// The victims and placement that let blocked job `i` start, if any: when its queue does not
/// admit it (`admitted` false), first the eligible jobs (`sched::eligible_victims`, cheapest
/// first) until it does, then those given back most expensive first while it stays admitted;
/// then `sched::place_with_preemption_input` on what is left. Nobody is stopped for nothing.
fn make_room(
    st: &State<'_>,
    i: usize,
    policy: &PreemptionPolicy,
    admitted: bool,
) -> Option<(Vec<String>, sched::Placement)> {
    let job = &st.jobs[i];
    let mut for_quota: Vec<String> = Vec::new();
    let scratch;
    let occupancy = if admitted {
        &st.occupancy
    } else {
        let candidates = sched::eligible_victims(&st.cluster, &st.occupancy, job, policy);
        let mut usage = st.usage.clone();
        let mut chosen: Vec<(usize, &str)> = Vec::new();
        let mut ok = false;
        for name in candidates {
            let v = *st.name_index.get(name)?;
            release_ask(&mut usage, st, v, -1.0);
            chosen.push((v, name));
            if admits(st, i, &usage) {
                ok = true;
                break;
            }
        }
        if !ok {
            return None;
        }
        let mut kept_stopped = Vec::new();
        while let Some((v, name)) = chosen.pop() {
            release_ask(&mut usage, st, v, 1.0);
            if !admits(st, i, &usage) {
                release_ask(&mut usage, st, v, -1.0);
                kept_stopped.push(name);
            }
        }
        let mut occ = st.occupancy.clone();
        for name in &kept_stopped {
            occ.release(name);
            for_quota.push((*name).to_owned());
        }
        scratch = occ;
        &scratch
    };
    let d =
        sched::place_with_preemption_input(&st.cluster, occupancy, job, policy, &job_input(st, i))
            .ok()?;
    if admitted && d.victims.is_empty() {
        return None;
    }
    for_quota.extend(d.victims);
    for_quota.sort();
    Some((for_quota, d.placement))
}

/// Add (`sign` 1) or take away (-1) job `v`'s ask to its queue's entry of `usage`.
fn release_ask(usage: &mut [Resources], st: &State<'_>, v: usize, sign: f64) {
    let u = &mut usage[st.queue_of[v]];
    let ask = &st.requests[v];
    u.gpu += sign * ask.gpu;
    u.cpu += sign * ask.cpu;
    u.memory += sign * ask.memory;
}

/// Pending jobs ordered by their queue's use over fair share (lowest first), then priority
/// (highest first), then submission.
fn fair_order(st: &State<'_>, fair: &BTreeMap<String, f64>) -> Vec<usize> {
    let mut v: Vec<(u64, i32, SimTime, usize)> = st
        .pending
        .keys()
        .map(|&(t, i)| {
            let q = &st.jobs[i].queue;
            let s = fair.get(q).copied().unwrap_or(0.0);
            let ratio = if s > 0.0 {
                st.usage[st.queue_of[i]].gpu / s
            } else {
                f64::MAX
            };
            // Quantise so equal ratios compare equal regardless of float noise.
            (
                (ratio * 1e6).min(u64::MAX as f64) as u64,
                -st.jobs[i].priority,
                t,
                i,
            )
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, _, _, i)| i).collect()
}

/// Fair share of GPUs per queue, from running plus pending demand, by the queues' rules
/// (railyard's own without the user's queues).
fn fair_shares(st: &State<'_>) -> BTreeMap<String, f64> {
    let mut demand = st.usage.clone();
    for &(_, i) in st.pending.keys() {
        let d = &mut demand[st.queue_of[i]];
        let ask = &st.requests[i];
        d.gpu += ask.gpu;
        d.cpu += ask.cpu;
        d.memory += ask.memory;
    }
    let dialect = st.rules.as_ref().map_or(Dialect::Kueue, |r| r.dialect);
    let capacity = Resources {
        gpu: st.total_gpus,
        cpu: f64::INFINITY,
        memory: f64::INFINITY,
    };
    let shares = sched::fair_share_in(&st.queue_tree, &demand, &capacity, dialect);
    st.queue_tree
        .queues
        .iter()
        .zip(shares)
        .map(|(q, s)| (q.name.clone(), s.gpu))
        .collect()
}

/// `+network`: place job `i` where the network model predicts best among the placements the
/// topology mode allows. The network is first told of the jobs started and ended since it was
/// last told, so the candidates are priced against every running multi-node job.
fn place_network_aware(
    st: &mut State<'_>,
    i: usize,
    network: &mut dyn Network,
) -> Option<sched::Placement> {
    let started = sync_network(st, network);
    st.net_unpaced.extend(started);
    let st: &State<'_> = st;
    let gpus = f64::from(st.records[i].gpus);
    let comm_share = st.comm[i].comm_share;
    let bytes = st.comm[i].bytes_per_step;
    let new = fabric::JobWeight { gpus, comm_share };
    let mut scorer = |_: &Job, p: &sched::Placement| {
        let mut nodes: Vec<NodeId> = p.pods.iter().map(|x| x.node).collect();
        nodes.dedup();
        if nodes.len() <= 1 || comm_share <= 0.0 {
            return fabric::ideal_score(new);
        }
        let job = NetJob {
            id: i,
            name: String::new(),
            gpus_per_node: st.records[i].gpus / nodes.len() as u32,
            nodes,
            bytes,
        };
        match network.probe(&job) {
            Some(probe) => probe.score(new, &mut |id| fabric::JobWeight {
                gpus: f64::from(st.records[id as usize].gpus),
                comm_share: st.comm[id as usize].comm_share,
            }),
            None => fabric::ideal_score(new),
        }
    };
    sched::place_network_aware(
        &st.cluster,
        &st.occupancy,
        &st.jobs[i],
        &job_input(st, i),
        &mut scorer,
        sched::MAX_CANDIDATES,
    )
    .ok()
    .map(sched::NetworkAware::into_placement)
}

/// Tell the network which multi-node jobs started and ended since it was last told (ends first,
/// then starts, each in ascending job order), keeping `State::net_running` the set it knows;
/// returns the jobs it was told started.
fn sync_network(st: &mut State<'_>, network: &mut dyn Network) -> Vec<usize> {
    let mut changed = std::mem::take(&mut st.net_changed);
    changed.sort_unstable();
    changed.dedup();
    let wanted = |st: &State<'_>, i: usize| {
        st.running
            .get(&i)
            .filter(|r| r.nodes.len() > 1 && st.comm[i].comm_share > 0.0)
            .map(|r| r.run)
    };
    for &i in &changed {
        if let Some(&run) = st.net_running.get(&i) {
            if wanted(st, i) != Some(run) {
                network.end(i);
                st.net_running.remove(&i);
            }
        }
    }
    let mut started = Vec::new();
    for &i in &changed {
        let Some(run) = wanted(st, i) else { continue };
        if st.net_running.get(&i) != Some(&run) {
            network.start(&NetJob {
                id: i,
                name: st.jobs[i].name.clone(),
                nodes: st.running[&i].nodes.clone(),
                gpus_per_node: st.records[i].gpus / st.records[i].nodes.max(1),
                bytes: st.comm[i].bytes_per_step,
            });
            st.net_running.insert(i, run);
            started.push(i);
        }
    }
    changed.clear();
    st.net_changed = changed;
    started
}

fn refresh_network(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    now: SimTime,
    network: &mut dyn Network,
) {
    st.network_dirty = false;
    sync_network(st, network);
    let ids: Vec<usize> = st.net_running.keys().copied().collect();
    st.net_unpaced.clear();
    if ids.is_empty() {
        return;
    }
    let rates = network.rates(&ids);
    for (&i, rate) in ids.iter().zip(rates) {
        set_pace(st, events, now, i, rate);
    }
}

/// Between network rounds: tell the network of the jobs started and ended since it was last
/// told, and pace each job started since the last pacing (here or by a `+network` placement's
/// sync) by its quick estimate ([`Network::provisional`]); the others keep their pace until the
/// round.
fn pace_new_jobs(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    now: SimTime,
    network: &mut dyn Network,
) {
    let started = sync_network(st, network);
    st.net_unpaced.extend(started);
    let mut unpaced = std::mem::take(&mut st.net_unpaced);
    unpaced.sort_unstable();
    unpaced.dedup();
    for i in unpaced {
        // A job that ended (or stopped) since is no longer the network's to pace.
        if !st.net_running.contains_key(&i) {
            continue;
        }
        if let Some(rate) = network.provisional(i) {
            set_pace(st, events, now, i, rate);
        }
    }
}

/// Running job `i` gets `rate` from now on: its completion moves if its slowdown changes.
fn set_pace(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    now: SimTime,
    i: usize,
    rate: NetRate,
) {
    let c = st.comm[i].comm_share;
    let version = st.next_version;
    let r = st.running.get_mut(&i).expect("running");
    advance(r, now);
    let s = slowdown(c, rate.ideal_busbw, rate.achieved_busbw);
    if (s - r.slowdown).abs() > 1e-12 {
        r.slowdown = s;
        r.version = version;
        st.next_version += 1;
        if s.is_finite() {
            let at = now.plus_secs(r.remaining_s * s);
            events.push(
                at,
                Event::Completion {
                    job: i,
                    version: r.version,
                },
            );
        }
    }
}

fn finish_run(mut st: State<'_>, end: SimTime) -> SimResult {
    // Close the books at `end`: running jobs stay unfinished but their GPU time counts.
    let running: Vec<usize> = st.running.keys().copied().collect();
    for i in running {
        let r = &st.running[&i];
        let used = st.requests[i].gpu * end.secs_since(r.start);
        st.records[i].gpu_seconds += used;
        if st.last_stop[i].is_some() {
            let mut r = st.running.remove(&i).expect("running");
            advance(&mut r, end);
            lose_restart(&mut st, i, &r, end);
        }
    }
    st.busy_integral += st.busy_gpus * end.secs_since(st.last_busy_change);
    st.frag_integral += st.frag_level * end.secs_since(st.frag_since);
    st.weng.integral += st.weng.level * end.secs_since(st.weng.since);
    let makespan = end.as_secs_f64();
    let mut jct: Vec<f64> = Vec::new();
    let mut multi_jct: Vec<f64> = Vec::new();
    let mut wait: Vec<f64> = Vec::new();
    let mut slow: Vec<f64> = Vec::new();
    let mut tier_span = vec![0u64; st.cluster.tiers.len()];
    let (mut completed, mut failed, mut unfinished) = (0, 0, 0);
    for r in &st.records {
        match r.outcome {
            Outcome::Completed => completed += 1,
            Outcome::Failed => failed += 1,
            Outcome::Unfinished => unfinished += 1,
        }
        if let Some(e) = r.end_s {
            jct.push(e - r.submit_s);
            if r.nodes > 1 {
                multi_jct.push(e - r.submit_s);
                slow.extend(r.network_slowdown);
                if let Some(t) = r.highest_tier {
                    tier_span[usize::from(t)] += 1;
                }
            }
        }
        if let Some(s) = r.start_s {
            wait.push(s - r.submit_s);
        }
    }
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let avg_jct = mean(&jct);
    let avg_wait = mean(&wait);
    let avg_slow = if slow.is_empty() { 1.0 } else { mean(&slow) };
    let avg_multi_jct = mean(&multi_jct);
    jct.sort_by(f64::total_cmp);
    multi_jct.sort_by(f64::total_cmp);
    wait.sort_by(f64::total_cmp);
    let capacity = st.total_gpus * makespan;
    let window = st.records.iter().map(|r| r.submit_s).fold(0.0, f64::max);
    let busy_in_window = busy_integral_until(&st.timeline, window);
    let summary = Summary {
        policy: st.config.policy.name.clone(),
        jobs: st.records.len(),
        completed,
        failed,
        unfinished,
        avg_jct_s: avg_jct,
        p50_jct_s: percentile(&jct, 50.0),
        p99_jct_s: percentile(&jct, 99.0),
        avg_wait_s: avg_wait,
        p99_wait_s: percentile(&wait, 99.0),
        gpu_utilization: if capacity > 0.0 {
            st.busy_integral / capacity
        } else {
            0.0
        },
        gpu_utilization_arrivals: if window > 0.0 && st.total_gpus > 0.0 {
            busy_in_window / (st.total_gpus * window)
        } else {
            0.0
        },
        arrival_window_s: window,
        makespan_s: makespan,
        multi_node_completed: multi_jct.len(),
        avg_multi_node_jct_s: avg_multi_jct,
        p99_multi_node_jct_s: percentile(&multi_jct, 99.0),
        avg_network_slowdown: avg_slow,
        fragmentation: if makespan > 0.0 {
            st.frag_integral / makespan
        } else {
            0.0
        },
        weng_fragmentation: if makespan > 0.0 && st.total_gpus > 0.0 {
            st.weng.integral / makespan / st.total_gpus
        } else {
            0.0
        },
        preemptions: st.preemptions,
        lost_gpu_seconds: st.lost_gpu_seconds,
        tier_span,
        failures: (!st.config.failures.is_empty()
            || st
                .checkpointing
                .iter()
                .any(|c| c.interval_s > 0.0 || c.restart_s > 0.0))
        .then(|| FailureSummary {
            node_failures: st.node_failures,
            jobs_stopped_by_failures: st.failure_stops,
            lost_gpu_seconds_preemption: st.lost_by_cause[StopCause::Preemption as usize],
            lost_gpu_seconds_failure: st.lost_by_cause[StopCause::Failure as usize],
        }),
    };
    let utilization = timeline(&st.timeline, end, st.total_gpus, st.config.timeline_points);
    let queues = st.rules.as_ref().map(|r| QueueRun {
        rules: r.dialect.name(),
        gpu_share: (0..r.tree.queues.len())
            .filter(|&q| r.tree.is_leaf(QueueId(q as u32)))
            .map(|q| {
                (
                    r.tree.queues[q].name.clone(),
                    timeline(
                        &st.queue_timeline[q],
                        end,
                        st.total_gpus,
                        st.config.timeline_points,
                    ),
                )
            })
            .collect(),
    });
    SimResult {
        summary,
        utilization,
        jobs: st.records,
        queues,
    }
}

/// Busy GPU-seconds over [0, until] from the step function of `(time, busy GPUs)` changes.
fn busy_integral_until(changes: &[(SimTime, f64)], until: f64) -> f64 {
    let mut area = 0.0;
    for (k, &(t, level)) in changes.iter().enumerate() {
        let t0 = t.as_secs_f64();
        if t0 >= until {
            break;
        }
        let t1 = changes
            .get(k + 1)
            .map_or(until, |(n, _)| n.as_secs_f64().min(until));
        area += level * (t1 - t0).max(0.0);
    }
    area
}

/// Busy-GPU share averaged over `points` equal buckets of [0, end].
fn timeline(
    changes: &[(SimTime, f64)],
    end: SimTime,
    total: f64,
    points: usize,
) -> Vec<(f64, f64)> {
    let points = points.max(1);
    let end_s = end.as_secs_f64().max(1e-9);
    let width = end_s / points as f64;
    let mut out = Vec::with_capacity(points);
    let mut k = 0;
    let mut level = 0.0;
    for b in 0..points {
        let (lo, hi) = (width * b as f64, width * (b + 1) as f64);
        let mut t = lo;
        let mut area = 0.0;
        while k < changes.len() && changes[k].0.as_secs_f64() <= hi {
            let ct = changes[k].0.as_secs_f64().max(lo);
            area += level * (ct - t).max(0.0);
            t = ct.max(t);
            level = changes[k].1;
            k += 1;
        }
        area += level * (hi - t).max(0.0);
        out.push(((lo + hi) / 2.0 / 3600.0, area / width / total));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{PendingBySize, PlaceMemo};

    /// The lowest-numbered pending job of the first groups, against a recount from scratch,
    /// over a seeded mix of jobs joining and leaving (and joining again).
    #[test]
    fn pending_by_size_finds_the_lowest_numbered_job_like_a_scan() {
        let (groups, jobs) = (6, 40);
        let group_of = |i: usize| (i * 7 + i / 3) % groups;
        let mut by_size = PendingBySize::new(groups, jobs);
        let mut pending = vec![false; jobs];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for step in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let i = (seed % jobs as u64) as usize;
            if pending[i] {
                by_size.remove(group_of(i), i);
            } else {
                by_size.add(group_of(i), i);
            }
            pending[i] = !pending[i];
            let n = 1 + step % 4;
            let want: Vec<usize> = (0..groups)
                .filter_map(|g| (0..jobs).find(|&j| pending[j] && group_of(j) == g))
                .take(n)
                .collect();
            assert_eq!(by_size.smallest(n), want, "step {step}");
        }
    }

    /// The memo's count of classes known not to start, against a recount from scratch, over
    /// a seeded mix of failures, GPU shortfalls, jobs joining and leaving and state changes.
    #[test]
    fn place_memo_counts_like_a_recount() {
        let classes = 5;
        let mut memo = PlaceMemo::new(classes);
        let mut pending = vec![0u32; classes];
        let mut changes = 0u64;
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut both_outcomes = [false; 2];
        for _ in 0..20_000 {
            let c = next(classes as u64) as usize;
            match next(5) {
                0 => changes += 1,
                1 => memo.note(c, changes, false),
                2 => memo.note(c, changes, true),
                3 => {
                    pending[c] += 1;
                    memo.pending_change(c, changes, true);
                }
                _ if pending[c] > 0 => {
                    pending[c] -= 1;
                    memo.pending_change(c, changes, false);
                }
                _ => {}
            }
            let live: Vec<usize> = (0..classes).filter(|&k| pending[k] > 0).collect();
            let want = live.iter().all(|&k| memo.known(k, changes))
                && (!live.is_empty() || memo.epoch == changes);
            assert_eq!(memo.none_starts(changes), want, "after {changes} changes");
            both_outcomes[usize::from(want)] = true;
        }
        assert_eq!(both_outcomes, [true, true]);
    }
}
