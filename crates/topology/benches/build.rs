//! Benchmarks for building clusters from specs (DESIGN.md target: 131,072 GPUs in < 1 s).

use topology::{
    build_from_spec, ClosSpec, ClusterSpec, FabricSpec, FatTreeSpec, NodeSpec, TierSpec,
};

fn main() {
    divan::main();
}

fn h100_node() -> NodeSpec {
    NodeSpec {
        gpus: 8,
        gpu_memory_gib: 80,
        rails: 8,
        ports_per_rail: 2,
        port_gbps: 200.0,
        nvlink_gbps: 3600.0,
        nvlink_domain_nodes: 1,
        shape: Some("BM.GPU.H100.8".to_owned()),
        name_prefix: "gpu-".to_owned(),
    }
}

/// The same shape as the `oci-h100-131k` preset (kept in step with presets/oci-h100-131k.yaml).
fn oci_131k() -> ClusterSpec {
    let tier = |label: &str, prefix: &str, nodes, latency_us, switches| TierSpec {
        label: format!("oci.oraclecloud.com/rdma.{label}"),
        value_prefix: prefix.to_owned(),
        nodes_per_domain: nodes,
        latency_us,
        switches_per_domain: Some(switches),
        oversubscription: None,
    };
    ClusterSpec {
        name: "oci-h100-131k".to_owned(),
        node: h100_node(),
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes: 16_384,
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![
                    tier("local_block_id", "lb-", 32, 2.0, 8),
                    tier("network_block_id", "nb-", 256, 5.0, 32),
                    tier("hpc_island_id", "island-", 16_384, 8.0, 64),
                ],
            }),
        },
    }
}

#[divan::bench(sample_count = 10)]
fn build_oci_h100_131k(bencher: divan::Bencher) {
    let spec = oci_131k();
    bencher.bench(|| build_from_spec(divan::black_box(&spec)).expect("valid preset"));
}

#[divan::bench(sample_count = 10)]
fn build_fat_tree_k64(bencher: divan::Bencher) {
    let spec = ClusterSpec {
        name: "fat-tree-k64".to_owned(),
        node: NodeSpec {
            gpus: 1,
            rails: 1,
            ports_per_rail: 1,
            port_gbps: 400.0,
            ..h100_node()
        },
        fabric: FabricSpec {
            clos: None,
            fat_tree: Some(FatTreeSpec {
                k: 64,
                tier_labels: ["edge".into(), "pod".into(), "core".into()],
                latency_us: [1.0, 2.0, 3.0],
            }),
        },
    };
    bencher.bench(|| build_from_spec(divan::black_box(&spec)).expect("valid spec"));
}
