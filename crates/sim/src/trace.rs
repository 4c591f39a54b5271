//! Trace jobs as the simulator sees them, whatever file they came from.

use serde::Serialize;

use crate::runtime::CommProfile;

/// Where a job asks to be placed, by level label.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub enum TopologyAsk {
    /// Anywhere.
    #[default]
    None,
    /// Try one domain of this level, then climb.
    Preferred(String),
    /// One domain of this level or wait.
    Required(String),
}

/// One job of a trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceJob {
    /// Name (unique within the trace).
    pub name: String,
    /// Line of the trace file it came from (1-based, header = line 1).
    pub line: u64,
    /// Submission time, seconds since the trace's epoch (any origin; the simulator shifts it).
    pub submit_s: f64,
    /// Run time on an ideal network, seconds.
    pub duration_s: f64,
    /// GPUs requested.
    pub gpus: u32,
    /// Queue (virtual cluster).
    pub queue: String,
    /// Priority; higher runs first.
    pub priority: i32,
    /// May be preempted.
    pub preemptible: bool,
    /// Placement request.
    pub topology: TopologyAsk,
    /// Communication profile, when the trace gives one.
    pub comm: Option<CommProfile>,
    /// The model and parallel layout it trains, when the trace gives them (native columns
    /// `model`, `layout`): paced by its priced step (the `network` module's layout note) instead of `comm`.
    /// Boxed: most jobs have none, and a trace of a million jobs holds this field a million times.
    pub training: Option<Box<layout::Training>>,
    /// Checkpoint interval and restart cost, when the trace gives them (else the run's defaults,
    /// [`crate::failures::Checkpointing`]).
    pub checkpoint: CheckpointAsk,
    /// What each pod asks besides whole GPUs: a share of one GPU, CPU, memory, GPU models
    /// (Alibaba's GPU-sharing traces); the default asks nothing more.
    pub pod: PodShape,
}

impl TraceJob {
    /// A job named `name` asking `gpus` whole GPUs for `duration_s` seconds on an ideal network,
    /// with a native trace row's defaults for everything else: submitted at 0 s, line 0, queue
    /// `default`, priority 0, preemptible, no placement request, the run's communication
    /// profile and checkpointing, no layout, nothing asked besides GPUs. Other fields by struct update:
    /// `TraceJob { submit_s: 5.0, ..TraceJob::new("a", 8, 100.0) }`.
    pub fn new(name: impl Into<String>, gpus: u32, duration_s: f64) -> Self {
        Self {
            name: name.into(),
            line: 0,
            submit_s: 0.0,
            duration_s,
            gpus,
            queue: "default".to_owned(),
            priority: 0,
            preemptible: true,
            topology: TopologyAsk::None,
            comm: None,
            training: None,
            checkpoint: CheckpointAsk::default(),
            pod: PodShape::default(),
        }
    }
}

/// A trace job's own checkpointing (native columns `checkpoint_s`, `restart_s`); `None` takes the
/// run's default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CheckpointAsk {
    /// Seconds of ideal-network work between checkpoints (0: none).
    pub interval_s: Option<f64>,
    /// Seconds a restart costs before work resumes.
    pub restart_s: Option<f64>,
}

/// What one pod of a job asks besides whole GPUs (placed as the `shares` module says).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PodShape {
    /// Share of one GPU, thousandths (1..=999), for a job that takes part of a GPU (its
    /// `gpus` is then 1); `None`: whole GPUs.
    pub gpu_milli: Option<u32>,
    /// CPU per pod, millicores (0: none asked).
    pub cpu_milli: u64,
    /// Memory per pod, MiB (0: none asked).
    pub memory_mib: u64,
    /// GPU models the pod accepts (a node's `nvidia.com/gpu.product` label), sorted; empty:
    /// any.
    pub gpu_models: Vec<String>,
}
