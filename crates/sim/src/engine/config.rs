//! What a run is asked to do: the policy (order, topology mode, `+network`), the communication
//! profiles of jobs whose trace row gives none, and every other parameter ([`SimConfig`]).
//! Plain data; it knows nothing of the simulated state.

use serde::Serialize;

use crate::failures::{Checkpointing, FailureConfig};
use crate::queues::QueueConfig;
use crate::runtime::CommProfile;
use crate::time::SimTime;

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
    /// model predicts best (`sched::place_network_aware`, scored by [`Network::probe`](crate::engine::net_model::Network::probe)).
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
    /// Check every invariant after every event (`engine::invariants::check_state`); a violation stops the run
    /// with [`SimError::Invariant`](crate::engine::error::SimError::Invariant). Costs O(GPUs + running pods) per event.
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
    /// started since runs at the network's quick estimate ([`Network::provisional`](crate::engine::net_model::Network::provisional); its ideal
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
