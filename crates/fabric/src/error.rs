//! The errors of the fabric model: the input names something the cluster does not have.

/// Why a job's traffic could not be modelled.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FabricError {
    /// A rank names a node index outside the cluster.
    #[error("rank {rank}: node index {node} is not in the cluster ({nodes} nodes)")]
    UnknownNode {
        /// The rank.
        rank: usize,
        /// The node index given.
        node: u32,
        /// Nodes in the cluster.
        nodes: usize,
    },
    /// A rank names a GPU the node does not have.
    #[error("rank {rank}: GPU {gpu} does not exist on node \"{node}\" ({gpus} GPUs)")]
    UnknownGpu {
        /// The rank.
        rank: usize,
        /// Node name.
        node: String,
        /// GPU index given.
        gpu: u32,
        /// GPUs on the node.
        gpus: u32,
    },
    /// Two ranks on the same GPU.
    #[error("ranks {first} and {second} are both on GPU {gpu} of node \"{node}\"")]
    SharedGpu {
        /// The earlier rank.
        first: usize,
        /// The later rank.
        second: usize,
        /// Node name.
        node: String,
        /// GPU index.
        gpu: u32,
    },
    /// Fewer than two ranks: there is nothing to communicate.
    #[error("a collective needs at least 2 ranks, got {0}")]
    TooFewRanks(usize),
    /// Zero QPs per connection.
    #[error("qps: expected at least 1 QP per connection, got 0")]
    ZeroQps,
    /// No up/down path joins two NICs (e.g. different rail planes of a rail-optimized fabric).
    #[error("no up/down path from {from} to {to}")]
    NoPath {
        /// Source NIC.
        from: String,
        /// Destination NIC.
        to: String,
    },
    /// The job would need more flows than the model handles.
    #[error("the job needs {0} flows, more than the limit of {MAX_FLOWS}")]
    TooManyFlows(u64),
    /// A what-if probe under the ID of a job that is already running.
    #[error("probe: job {0} is already running; probe under an unused ID")]
    AlreadyRunning(u64),
}

/// Most flows one job may create (about 1.5 GB of path data at the limit).
pub const MAX_FLOWS: u64 = 20_000_000;
