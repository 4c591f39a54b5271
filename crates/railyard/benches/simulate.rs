//! Benchmark: replay all 82,247 Philly jobs on a Philly-sized cluster (2,560 GPUs) with
//! network-aware runtimes (DESIGN.md target: < 10 s on a 2-core machine).

use std::path::Path;

use fabric::RoutingConfig;
use formats::trace::{read_trace, TraceFormat};
use railyard::cluster_arg::{load_cluster_quiet, ClusterArgs};
use sim::engine::{simulate, Order, Policy, SimConfig};
use sim::network::fabric_network;
use sim::SimTime;

fn main() {
    divan::main();
}

#[divan::bench(sample_count = 3, args = ["best-effort", "fair-share"])]
fn philly_full_trace(bencher: divan::Bencher, order: &str) {
    let cluster = load_cluster_quiet(&ClusterArgs {
        cluster: "preset:philly-2560".to_owned(),
        ..ClusterArgs::default()
    })
    .expect("bundled preset")
    .cluster;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/philly-jobs.csv");
    let trace = read_trace(&path, TraceFormat::Auto, false).expect("bundled trace");
    let config = SimConfig {
        policy: Policy {
            name: order.to_owned(),
            order: if order == "fair-share" {
                Order::FairShare
            } else {
                Order::BestEffortFifo
            },
            ..SimConfig::default().policy
        },
        cycle: SimTime::from_secs_f64(10.0),
        ..SimConfig::default()
    };
    bencher.bench(|| {
        let mut net = fabric_network(&cluster, RoutingConfig::default());
        simulate(&cluster, &trace.jobs, &config, &mut net, &mut |_| {}).expect("valid trace")
    });
}
