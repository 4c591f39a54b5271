//! The GPU cluster fabric as data: nodes, NIC rails, switches by tier, links, and locality domains.
//!
//! This crate is pure: it reads no files, no clock and no environment. Clusters are built either
//! from a [`ClusterSpec`] (a k-ary fat-tree or a multi-tier Clos, optionally rail-optimized) or
//! from labelled node records ([`NodeRecord`], e.g. converted from a Kubernetes NodeList by the
//! CLI) plus an ordered list of level labels. Both paths go through one function,
//! [`assemble`], so a cluster built from a spec and the same cluster re-imported from its labels
//! have the same levels, domains, switches and links.

mod build;
mod error;
pub mod examples;
mod ids;
mod model;
pub mod roce;
mod shapes;
mod spec;
mod summary;

pub use build::{
    assemble, build_from_spec, FabricParams, NodeRecord, TierParams, MIN_LATENCY_US,
    MIN_OVERSUBSCRIPTION,
};
pub use error::{Problem, TopologyError};
pub use ids::{DomainId, LinkId, NodeId, NvlinkDomainId, SwitchId};
pub use model::{
    Cluster, Domain, Endpoint, Level, Link, NicSpec, Node, NvlinkDomain, Switch, Taint,
    TaintEffect, Tier,
};
pub use shapes::{known_shape, Shape, SHAPES};
pub use spec::{ClosSpec, ClusterSpec, FabricSpec, FatTreeSpec, NodeSpec, TierSpec};
pub use summary::{Summary, TierSummary};

/// The node label Kubernetes sets to the node's host name; Kueue expects it as the lowest level.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Largest cluster railyard accepts, in nodes; larger inputs are refused before allocating.
pub const MAX_NODES: usize = 1_000_000;

/// Largest GPU count railyard accepts on one node.
pub const MAX_GPUS_PER_NODE: u32 = 1024;

/// Most memory per GPU, GiB (64 TiB: far above any GPU, and small enough that MiB figures fit
/// a `u32`).
pub const MAX_GPU_MEMORY_GIB: u32 = 65_536;

/// Most RDMA rails per node (a spec's `node.rails`, an overlay's `rails`).
pub const MAX_RAILS: u32 = 64;

/// Most NIC ports per rail.
pub const MAX_PORTS_PER_RAIL: u32 = 16;

/// Most switches a fabric may have (a 1,000,000-node cluster with one switch per 8 nodes at
/// the leaf and the tiers above has about 250,000). Checked from the tier sizes before any
/// switch is made.
pub const MAX_SWITCHES: usize = 1_000_000;

/// Most links (NIC-to-leaf plus switch-to-switch) a fabric may have: 1,000,000 nodes × 16
/// rails. Checked before any link is made.
pub const MAX_LINKS: usize = 16_000_000;
