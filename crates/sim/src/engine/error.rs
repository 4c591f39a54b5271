//! What stops a run: a problem with its inputs found before it starts, or a broken invariant
//! found during it ([`SimError`]).

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
    #[error("job \"{job}\" (line {line}): {message}")]
    /// A layout job the cluster cannot price (its layout against its GPUs, or a GPU generation
    /// with no published efficiency at its precision).
    Layout {
        /// The job.
        job: String,
        /// Its trace line.
        line: u64,
        /// What is wrong, naming the field.
        message: String,
    },
    #[error("the cluster has no GPUs")]
    NoGpus,
    /// An invariant failed during the run (only with `SimConfig::check_invariants`).
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
