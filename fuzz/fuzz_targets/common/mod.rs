//! Shared by the fuzz targets: a small cluster to resolve jobs, states, placements and layouts
//! against, and the input as text.
#![allow(dead_code)]

use std::sync::OnceLock;

use topology::{build_from_spec, Cluster, ClusterSpec};

/// 16 nodes `gpu-000`..`gpu-015` × 8 GPUs, two rails, OCI level labels: local blocks of 4,
/// one network block of 16. The seeds name these nodes and levels.
pub const SMALL_SPEC: &str = "
name: fuzz
node: {gpus: 8, gpu_memory_gib: 80, rails: 2, ports_per_rail: 1, port_gbps: 200, nvlink_gbps: 3600, name_prefix: gpu-}
fabric:
  clos:
    nodes: 16
    rail_optimized: true
    host_label: kubernetes.io/hostname
    tiers:
      - {label: oci.oraclecloud.com/rdma.local_block_id, value_prefix: lb-, nodes_per_domain: 4, latency_us: 2.0}
      - {label: oci.oraclecloud.com/rdma.network_block_id, value_prefix: nb-, nodes_per_domain: 16, latency_us: 5.0}
";

/// The small cluster, built once.
pub fn small_cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let spec: ClusterSpec = formats::input::parse_typed("fuzz", SMALL_SPEC).expect("spec");
        build_from_spec(&spec).expect("cluster")
    })
}

/// The input as text; libFuzzer's non-UTF-8 inputs are what `read_text` refuses anyway.
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}
