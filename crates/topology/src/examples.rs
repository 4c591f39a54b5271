//! Example specs for benchmarks and tests, kept equal to the CLI's bundled presets (a test in
//! the `railyard` crate parses the preset files and compares).

use crate::spec::{ClosSpec, ClusterSpec, FabricSpec, NodeSpec, TierSpec};
use crate::HOSTNAME_LABEL;

/// OCI BM.GPU.H100.8 hosts (8 GPUs, 16 × 200G RDMA) on OCI's three-tier rail-optimized Clos:
/// blocks of 32 hosts (256 GPUs, 2 µs), 256 hosts (2,048 GPUs, 5 µs), all hosts (8 µs).
/// `nodes` = 2,048 is the `oci-h100-16k` preset, 16,384 is `oci-h100-131k`.
pub fn oci_h100(nodes: u32) -> ClusterSpec {
    let tier = |label: &str, prefix: &str, n: u32, latency_us: f64, switches: u32| TierSpec {
        label: format!("oci.oraclecloud.com/rdma.{label}"),
        value_prefix: prefix.to_owned(),
        nodes_per_domain: n,
        latency_us,
        switches_per_domain: Some(switches),
        oversubscription: None,
        sharp: false,
    };
    let gpus = u64::from(nodes) * 8;
    // Presets are named by thousands of GPUs, rounded down: 16,384 → 16k, 131,072 → 131k.
    let name = if gpus >= 1000 {
        format!("oci-h100-{}k", gpus / 1000)
    } else {
        format!("oci-h100-{gpus}")
    };
    ClusterSpec {
        name,
        node: NodeSpec {
            gpus: 8,
            gpu_memory_gib: 80,
            rails: 8,
            ports_per_rail: 2,
            port_gbps: 200.0,
            nvlink_gbps: 3600.0,
            nvlink_domain_nodes: 1,
            nvlink_domain_label: None,
            shape: Some("BM.GPU.H100.8".to_owned()),
            name_prefix: "gpu-".to_owned(),
        },
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes,
                rail_optimized: true,
                host_label: HOSTNAME_LABEL.to_owned(),
                tiers: vec![
                    tier("local_block_id", "lb-", 32, 2.0, 8),
                    tier("network_block_id", "nb-", 256, 5.0, 32),
                    tier("hpc_island_id", "island-", nodes, 8.0, 64),
                ],
            }),
        },
    }
}

/// A plain host for tests and small examples: `gpus` GPUs of 80 GiB with 3,600 Gb/s NVLink each,
/// `rails` × `ports_per_rail` RDMA ports of `port_gbps`, NVLink inside the host only, names `n…`.
pub fn node(gpus: u32, rails: u32, ports_per_rail: u32, port_gbps: f64) -> NodeSpec {
    NodeSpec {
        gpus,
        gpu_memory_gib: 80,
        rails,
        ports_per_rail,
        port_gbps,
        nvlink_gbps: 3600.0,
        nvlink_domain_nodes: 1,
        nvlink_domain_label: None,
        shape: None,
        name_prefix: "n".to_owned(),
    }
}
