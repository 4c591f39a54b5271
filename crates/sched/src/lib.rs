//! Pure scheduling decisions for GPU gangs on a [`topology::Cluster`]: the queue tree and its
//! validation, fair share, quota admission, topology-aware placement (Kueue TAS BestFit) with
//! fractional GPUs, and preemption/reclaim.
//!
//! The crate reads no clock, no environment and no files, draws no randomness, and never lets
//! hash-map iteration order reach a result: the same input gives the same decision. A
//! discrete-event simulator calls [`place`] and [`Occupancy::allocate`]/[`Occupancy::release`]
//! in a loop: placement costs O(nodes + domains) per pod set, state updates O(pods).

mod constraints;
mod dialect;
mod error;
mod invariants;
mod job;
mod kai_place;
pub mod kueue;
mod netaware;
mod occupancy;
mod order;
mod place;
mod preempt;
mod queue;
mod share;
mod tas;

pub use constraints::{
    NodeFree, PlaceInput, PlaceOptions, PodSetExtras, PreferredTerm, ResourceList, SelectorOp,
    SelectorRequirement, SubGroup, UnconstrainedMode, PODS,
};
pub use dialect::{Dialect, KaiStrategy, PlacementStrategy};
pub use error::{JobError, StateError};
pub use invariants::{check_gang, check_invariants, check_occupancy, Violation};
pub use job::{
    quota_gpu_memory_mib, GpuRequest, Job, PodSet, Resource, Resources, SliceLayer, Toleration,
    TopologyRequest, MAX_SLICE_LAYERS, MILLI_PER_GPU,
};
pub use kai_place::kai_next_step;
pub use netaware::{
    in_rank_order, place_network_aware, Candidate, NetworkAware, PlacementScorer, MAX_CANDIDATES,
    SCORE_EPSILON,
};
pub use occupancy::{Allocation, Occupancy, PodAllocation, RunningJob};
pub use order::{next_pending, GangStanding, PendingJob, QueueStanding};
pub use place::{
    commit, highest_tier, place, place_kai_step, place_with, place_within, place_within_with,
    running_job, NotPlaced, PlacedPod, Placement,
};
pub use preempt::{
    common_domain, eligible_victims, place_with_preemption, place_with_preemption_input, Decision,
    PreemptionPolicy,
};
pub use queue::{
    validate, JobTarget, QueueId, QueueProblem, QueueProblemKind, QueueSpec, QueueTree,
    ResourceQuota, MAX_AMOUNT, UNLIMITED,
};
pub use share::{
    admit, admit_in, divide, divide_over_quota, fair_share, fair_share_in, subtree_usage,
    subtree_usages, AdmissionError, Division, QuotaRequest, ShareInput,
};
