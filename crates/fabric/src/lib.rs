//! The fabric model: what a placement gets from the network.
//!
//! Collectives become flows the way NCCL builds them ([`Collective`]: one ring per channel that
//! enters every node once, NCCL's channel count and QPs per connection ([`nccl`]), the double
//! binary tree, AllToAll with PXN), flows are routed over the up/down switch fabric port by port
//! ([`RoutingMode::Ecmp`] hashing the RoCEv2 5-tuple at every switch with its own seed, or
//! [`RoutingMode::Adaptive`] spraying evenly over all shortest paths), and jobs share the fabric
//! max-min fairly as jobs ([`job_max_min`]), honouring NIC, switch-port and NVLink capacities at
//! what NCCL can use of them. From the rates come each job's algorithm and bus bandwidth
//! (nccl-tests conventions), the ideal bus bandwidth with perfect load balance, the hottest
//! links ([`hot_link_groups`]), latency, and NCCL's tuner choice per message size ([`sweep`]).
//!
//! This crate is pure: no I/O, no clock, no unseeded randomness; output never depends on hash
//! iteration order. It knows nothing about queues or file formats.
//!
//! ```
//! # use fabric::*;
//! // nccl-tests' bus bandwidth conversion (DESIGN.md): n = 16, algbw 100 GB/s.
//! assert_eq!(busbw_from_algbw(Collective::AllReduce, 16, 100.0), 187.5);
//! assert_eq!(udp_source_port(0x1234, 0x5678), 49178);
//! ```

mod collective;
mod contention;
pub mod ecmp;
mod error;
pub mod hash;
mod hot;
mod incremental;
mod level_queue;
mod maxmin;
mod model;
pub mod nccl;
mod nccl_tests;
mod predict;
mod probe;
mod routing;
pub mod sport;

pub use collective::{busbw_from_algbw, validate_ranks, Collective, NicPort, Rank};
pub use contention::{contention, Contention};
pub use error::{FabricError, MAX_FLOWS};
pub use hash::{HashFn, SwitchSeeds};
pub use hot::{hot_link_groups, HotLinkGroup};
pub use incremental::FabricState;
pub use maxmin::{aggregate_jobs, job_max_min, max_min_fair, FlowPaths, SparseSolver};
pub use model::{
    evaluate, nic_ip, pair_latency_ns, Allocation, Fabric, JobResult, JobTraffic, LinkLoad,
    Resource, RoutedJob,
};
pub use nccl::{parse_nccl_env, Algorithm, GpuArch, NcclConfig, NcclEnvError, Protocol};
pub use nccl_tests::{Measured, Timing};
pub use predict::{
    compare, doubling_sizes, input_for, parse_bytes, sweep, tuner_input, tuner_input_with,
    Comparison, SweepRow,
};
pub use probe::{
    alone_busbw, collisions, ideal_score, probe, slowdown, Collisions, JobWeight, Probe,
    RunningChange,
};
pub use routing::{PortIndex, RoutingConfig, RoutingMode};
pub use sport::udp_source_port;

/// Ranks for whole GPUs of a list of `(node, gpu indices)` in rank order: each GPU is one rank.
pub fn ranks_of(pods: &[(topology::NodeId, Vec<u32>)]) -> Vec<Rank> {
    pods.iter()
        .flat_map(|(node, gpus)| gpus.iter().map(move |&gpu| Rank { node: *node, gpu }))
        .collect()
}

/// Most flows a single collective may make (about 200 bytes each, and seconds per million to
/// solve): callers check [`check_flow_budget`] before any flow is made.
pub const MAX_COLLECTIVE_FLOWS: u64 = 4_000_000;

/// Refuse a collective whose flows would exceed [`MAX_COLLECTIVE_FLOWS`], from its nodes (with
/// the GPUs used on each) alone: AllToAll connects every ordered pair of nodes (PXN), a ring each
/// node to the next on every NIC port with at least two channels per port (NCCL's minimum);
/// each connection has `qps` flows, and every rank adds its NVLink traffic. The message says
/// what to change.
pub fn check_flow_budget(
    cluster: &topology::Cluster,
    nodes_gpus: &[(topology::NodeId, usize)],
    collective: Collective,
    qps: u32,
) -> Result<(), String> {
    let mut nodes: Vec<topology::NodeId> = nodes_gpus.iter().map(|(n, _)| *n).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let n = nodes.len() as u64;
    let ports = nodes
        .iter()
        .map(|&i| {
            let nic = cluster.node(i).nics;
            u64::from(nic.rails) * u64::from(nic.ports_per_rail)
        })
        .max()
        .unwrap_or(1);
    let connections = match collective {
        Collective::AllToAll => n * n.saturating_sub(1),
        _ => n * ports * 2,
    };
    let ranks: u64 = nodes_gpus.iter().map(|(_, g)| *g as u64).sum();
    let flows = connections
        .saturating_mul(u64::from(qps))
        .saturating_add(ranks);
    if flows > MAX_COLLECTIVE_FLOWS {
        return Err(format!(
            "{} over {ranks} ranks on {n} nodes with {qps} QPs per connection makes about {flows} flows, more than the limit of {MAX_COLLECTIVE_FLOWS}; use fewer QPs",
            collective.name()
        ));
    }
    Ok(())
}
