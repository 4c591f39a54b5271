//! Benchmarks for building clusters from specs (DESIGN.md target: 131,072 GPUs in < 1 s).

use topology::{build_from_spec, ClusterSpec, FabricSpec, FatTreeSpec, NodeSpec};

fn main() {
    divan::main();
}

#[divan::bench(sample_count = 10)]
fn build_oci_h100_131k(bencher: divan::Bencher) {
    let spec = topology::examples::oci_h100(16_384);
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
            ..topology::examples::oci_h100(16_384).node
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
