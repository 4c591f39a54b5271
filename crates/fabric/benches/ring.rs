//! Ring AllReduce over all 131,072 GPUs of `oci-h100-131k` under ECMP: flows, routing and exact
//! max-min fair rates (DESIGN.md target: < 10 s on 2 cores).

use fabric::{evaluate, Collective, Fabric, JobTraffic, Rank, RoutingConfig, RoutingMode};
use topology::{
    build_from_spec, ClosSpec, Cluster, ClusterSpec, FabricSpec, NodeId, NodeSpec, TierSpec,
};

fn main() {
    divan::main();
}

/// The same shape as the `oci-h100-131k` preset (kept in step with presets/oci-h100-131k.yaml).
fn oci_131k() -> Cluster {
    let tier = |label: &str, prefix: &str, nodes, latency_us, switches| TierSpec {
        label: format!("oci.oraclecloud.com/rdma.{label}"),
        value_prefix: prefix.to_owned(),
        nodes_per_domain: nodes,
        latency_us,
        switches_per_domain: Some(switches),
        oversubscription: None,
    };
    build_from_spec(&ClusterSpec {
        name: "oci-h100-131k".to_owned(),
        node: NodeSpec {
            gpus: 8,
            gpu_memory_gib: 80,
            rails: 8,
            ports_per_rail: 2,
            port_gbps: 200.0,
            nvlink_gbps: 3600.0,
            nvlink_domain_nodes: 1,
            shape: Some("BM.GPU.H100.8".to_owned()),
            name_prefix: "gpu-".to_owned(),
        },
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
    })
    .expect("valid preset")
}

fn all_gpus(c: &Cluster) -> JobTraffic {
    let ranks = (0..c.nodes.len())
        .flat_map(|n| {
            (0..c.nodes[n].gpus).map(move |gpu| Rank {
                node: NodeId::from_index(n),
                gpu,
            })
        })
        .collect();
    JobTraffic {
        ranks,
        collective: Collective::AllReduce,
    }
}

/// The whole API call: ECMP flows, routing and rates, plus the ideal (adaptive) reference.
#[divan::bench(sample_count = 3)]
fn evaluate_ring_allreduce_131k_ecmp(bencher: divan::Bencher) {
    let c = oci_131k();
    let job = all_gpus(&c);
    let cfg = RoutingConfig::default();
    bencher
        .bench(|| evaluate(divan::black_box(&c), std::slice::from_ref(&job), &cfg).expect("valid"));
}

/// ECMP flows + routing + max-min rates only (what a simulator pays per routed job and solve).
#[divan::bench(sample_count = 3)]
fn ecmp_flows_routing_rates_131k(bencher: divan::Bencher) {
    let c = oci_131k();
    let job = all_gpus(&c);
    let cfg = RoutingConfig {
        mode: RoutingMode::Ecmp,
        ..RoutingConfig::default()
    };
    bencher.bench(|| {
        let mut f = Fabric::new(&c);
        let routed = f.route_flows(&job, &cfg, 0).expect("valid");
        f.solve(&[&routed]).busbw_gbps[0]
    });
}
