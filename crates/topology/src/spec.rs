//! The railyard cluster spec: serde types for a fat-tree or multi-tier Clos (the YAML schema is in
//! the README). Unknown fields are rejected.

use serde::Deserialize;

/// A cluster described by its hardware and fabric shape.
#[derive(Clone, Debug, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// A name for reports.
    pub name: String,
    /// The hardware of every node.
    pub node: NodeSpec,
    /// The switch fabric.
    pub fabric: FabricSpec,
}

/// The hardware of one node.
#[derive(Clone, Debug, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// GPUs per node.
    pub gpus: u32,
    /// Memory per GPU, GiB.
    pub gpu_memory_gib: u32,
    /// RDMA rails per node.
    pub rails: u32,
    /// NIC ports per rail.
    pub ports_per_rail: u32,
    /// Speed of one port, Gb/s.
    pub port_gbps: f64,
    /// NVLink bandwidth per GPU, Gb/s one direction.
    pub nvlink_gbps: f64,
    /// Consecutive nodes sharing one NVLink domain (1 = NVLink inside the node only).
    #[serde(default = "one")]
    pub nvlink_domain_nodes: u32,
    /// A node label naming each node's NVLink domain (value `nvl-N`, the domain's name), made a
    /// topology level between the host and the leaf tier, e.g. `nvidia.com/gpu.clique` (set by
    /// NVIDIA's GPU feature discovery on GB200 NVL72). A locality level only: it has no switch
    /// tier, so traffic between its hosts still crosses the leaf. Needs `nvlink_domain_nodes` > 1
    /// dividing the leaf tier's block. Default: none (the NVLink domains are no level).
    #[serde(default)]
    pub nvlink_domain_label: Option<String>,
    /// Instance type written to `node.kubernetes.io/instance-type`, e.g. `BM.GPU.H100.8`.
    #[serde(default)]
    pub shape: Option<String>,
    /// Node names are this prefix followed by a zero-padded index.
    #[serde(default = "default_prefix")]
    pub name_prefix: String,
}

fn one() -> u32 {
    1
}

fn default_prefix() -> String {
    "node-".to_owned()
}

/// The switch fabric: exactly one of the shapes must be given.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FabricSpec {
    /// A k-ary three-tier fat-tree.
    #[serde(default)]
    pub fat_tree: Option<FatTreeSpec>,
    /// A multi-tier Clos with block sizes.
    #[serde(default)]
    pub clos: Option<ClosSpec>,
}

/// A k-ary three-tier fat-tree (Al-Fares et al.): k pods of k/2 edge and k/2 aggregation
/// switches, (k/2)² core switches, k³/4 hosts.
#[derive(Clone, Debug, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FatTreeSpec {
    /// Switch radix; even.
    pub k: u32,
    /// Node labels of the edge, pod and core tiers (leaf first).
    pub tier_labels: [String; 3],
    /// Worst-case latency within an edge, a pod, and across the core, µs.
    pub latency_us: [f64; 3],
}

/// A multi-tier Clos described by the size of each tier's blocks.
#[derive(Clone, Debug, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClosSpec {
    /// Number of nodes; every tier's block size divides it.
    pub nodes: u32,
    /// NIC `r` of every host in a leaf block connects to leaf switch `r`.
    pub rail_optimized: bool,
    /// The host level's label (usually `kubernetes.io/hostname`).
    pub host_label: String,
    /// Tiers, leaf first. The last tier holds all nodes.
    pub tiers: Vec<TierSpec>,
}

/// One switch tier of a Clos.
#[derive(Clone, Debug, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TierSpec {
    /// The node label naming this tier's blocks.
    pub label: String,
    /// Label values are this prefix followed by the block's index.
    pub value_prefix: String,
    /// Nodes in one block of this tier.
    pub nodes_per_domain: u32,
    /// Worst-case GPU-to-GPU latency for hosts whose lowest common tier is this one, µs.
    pub latency_us: f64,
    /// Switches per block (default: the rail count at a rail-optimized leaf tier, else 1 at the
    /// leaf tier, else the same as the tier below).
    #[serde(default)]
    pub switches_per_domain: Option<u32>,
    /// Down-link capacity of the tier below over its up-link capacity to this tier (default 1).
    #[serde(default)]
    pub oversubscription: Option<f64>,
    /// The tier's switches reduce data in the network (InfiniBand SHARP, what NCCL's CollNet
    /// algorithms use); default false. CollNet needs it on every tier a job's traffic crosses.
    #[serde(default)]
    pub sharp: bool,
}
