//! Error types of the scheduler core. The core mostly decides rather than fails: these cover a
//! job that does not fit the cluster's levels and a state that does not fit the cluster.

use topology::NodeId;

/// A job the core refuses (the CLI validates first; this is the safety net).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("job `{job}` pod set `{pod_set}`: {message}")]
pub struct JobError {
    /// The job.
    pub job: String,
    /// The pod set (empty when the problem is the job as a whole).
    pub pod_set: String,
    /// What was expected.
    pub message: String,
}

/// An allocation that cannot be recorded in an [`crate::Occupancy`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// A job with this name already holds resources.
    #[error("job `{0}` is already running")]
    DuplicateJob(String),
    /// A node index outside the cluster.
    #[error("job `{job}`: node {node:?} is not in the cluster")]
    UnknownNode {
        /// The job.
        job: String,
        /// The node.
        node: NodeId,
    },
    /// A GPU index outside the node.
    #[error("job `{job}`: GPU {gpu} does not exist on node #{} ({gpus} GPUs)", node.0)]
    UnknownGpu {
        /// The job.
        job: String,
        /// The node.
        node: NodeId,
        /// GPU index.
        gpu: u32,
        /// GPUs on the node.
        gpus: u32,
    },
    /// A GPU would be used above its capacity or memory.
    #[error("job `{job}`: GPU {gpu} of node #{} would be used above its capacity or memory", node.0)]
    Oversubscribed {
        /// The job.
        job: String,
        /// The node.
        node: NodeId,
        /// GPU index.
        gpu: u32,
    },
}
