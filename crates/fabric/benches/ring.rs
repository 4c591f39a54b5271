//! Ring AllReduce over all 131,072 GPUs of `oci-h100-131k` with NCCL's default channels (32:
//! two per NIC port) and QPs (1), under ECMP and adaptive routing: flows, routing and exact
//! job-level max-min rates (DESIGN.md target: < 10 s on 2 cores).

use fabric::{evaluate, Collective, Fabric, JobTraffic, Rank, RoutingConfig, RoutingMode};
use topology::{build_from_spec, Cluster, NodeId};

fn main() {
    divan::main();
}

/// The `oci-h100-131k` preset.
fn oci_131k() -> Cluster {
    build_from_spec(&topology::examples::oci_h100(16_384)).expect("valid preset")
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

/// The whole API call under adaptive routing (the ideal reference is the same routing).
#[divan::bench(sample_count = 3)]
fn evaluate_ring_allreduce_131k_adaptive(bencher: divan::Bencher) {
    let c = oci_131k();
    let job = all_gpus(&c);
    let cfg = RoutingConfig {
        mode: RoutingMode::Adaptive,
        ..RoutingConfig::default()
    };
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
