//! The fabric model: what a placement gets from the network.
//!
//! Collectives become flows ([`Collective`], NCCL-style rings with one ring per rail, AllToAll
//! with PXN), flows are routed over the up/down switch fabric ([`RoutingMode::Ecmp`] hashing the
//! RoCEv2 5-tuple at every switch, or [`RoutingMode::Adaptive`] spraying evenly over all shortest
//! paths), and rates are the exact max-min fair allocation over every flow of every running job
//! ([`max_min_fair`]), honouring NIC, switch-link and NVLink capacities. From the rates come each
//! job's algorithm and bus bandwidth (nccl-tests conventions), the ideal bus bandwidth with
//! perfect load balance, the hottest links, and latency.
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
pub mod ecmp;
mod error;
pub mod hash;
mod maxmin;
mod model;
pub mod nccl;
mod routing;
pub mod sport;

pub use collective::{busbw_from_algbw, validate_ranks, Collective, NicPort, Rank};
pub use error::{FabricError, MAX_FLOWS};
pub use hash::{HashFn, SwitchSeeds};
pub use maxmin::{aggregate_jobs, job_max_min, max_min_fair, FlowPaths};
pub use model::{
    evaluate, nic_ip, pair_latency_ns, Allocation, Fabric, JobResult, JobTraffic, LinkLoad,
    Resource, RoutedJob,
};
pub use nccl::{parse_nccl_env, Algorithm, GpuArch, NcclConfig, NcclEnvError, Protocol};
pub use routing::{PortIndex, RoutingConfig, RoutingMode};
pub use sport::udp_source_port;

/// Ranks for whole GPUs of a list of `(node, gpu indices)` in rank order: each GPU is one rank.
pub fn ranks_of(pods: &[(topology::NodeId, Vec<u32>)]) -> Vec<Rank> {
    pods.iter()
        .flat_map(|(node, gpus)| gpus.iter().map(move |&gpu| Rank { node: *node, gpu }))
        .collect()
}
