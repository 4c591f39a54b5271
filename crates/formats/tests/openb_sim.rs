//! The bundled Alibaba GPU-sharing sample (pods and nodes) replayed with every invariant checked
//! after every event (GPU shares within 100%, CPU and memory within each node, accepted GPU
//! models), under each ordering and under Kueue's and KAI's placement (binpack and spread).

use std::path::Path;

use formats::cluster::{build_cluster_file, parse_cluster_file};
use formats::k8s::ImportOptions;
use formats::trace::read_trace;
use formats::trace_model::TraceFormat;
use sched::{Dialect, KaiStrategy, PlaceOptions, PlacementStrategy};
use sim::engine::{simulate, NetJob, NetRate, Order, Outcome, Policy, SimConfig};
use sim::network::FromScratch;

#[test]
fn the_alibaba_sample_runs_with_every_invariant_checked() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
    let nodes_file = dir.join("openb_node_list_gpu_node.head100.csv");
    let text = std::fs::read_to_string(&nodes_file).unwrap();
    let file = nodes_file.display().to_string();
    let parsed = parse_cluster_file(&file, &text).unwrap();
    let cluster = build_cluster_file(&file, &text, parsed, &ImportOptions::default())
        .unwrap()
        .cluster;
    assert_eq!(cluster.gpu_count(), 544);
    let mut trace = read_trace(
        &dir.join("openb_pod_list_default.head300.csv"),
        TraceFormat::Auto,
        false,
    )
    .unwrap()
    .jobs;
    // Squeeze the 150 days of arrivals into one so the pods contend; and one pod no node model
    // accepts, which must fail.
    for t in &mut trace {
        t.submit_s /= 150.0;
    }
    let mut never = trace[1].clone();
    never.name = "no-such-model".to_owned();
    never.pod.gpu_models = vec!["H100".to_owned()];
    trace.push(never);
    let strategies = [
        PlaceOptions::default(),
        PlaceOptions {
            dialect: Dialect::Kai,
            strategy: KaiStrategy::all(PlacementStrategy::Binpack),
            ..PlaceOptions::default()
        },
        PlaceOptions {
            dialect: Dialect::Kai,
            strategy: KaiStrategy::all(PlacementStrategy::Spread),
            ..PlaceOptions::default()
        },
    ];
    for placement in strategies {
        for order in [Order::Fifo, Order::BestEffortFifo, Order::FairShare] {
            let cfg = SimConfig {
                policy: Policy {
                    name: format!("{order:?}"),
                    order: order.clone(),
                    ..SimConfig::default().policy
                },
                timeline_points: 10,
                check_invariants: true,
                placement,
                ..SimConfig::default()
            };
            let mut net = FromScratch::new(|jobs: &[NetJob]| {
                jobs.iter()
                    .map(|_| NetRate {
                        ideal_busbw: 1.0,
                        achieved_busbw: 1.0,
                    })
                    .collect()
            });
            let r = simulate(&cluster, &trace, &cfg, &mut net, &mut |_| {}).unwrap();
            let failed: Vec<&str> = r
                .jobs
                .iter()
                .filter(|j| j.outcome == Outcome::Failed)
                .map(|j| j.name.as_str())
                .collect();
            assert_eq!(failed, ["no-such-model"], "{order:?} {placement:?}");
            assert_eq!(r.summary.completed, trace.len() - 1);
            assert!(r.summary.weng_fragmentation > 0.0 && r.summary.weng_fragmentation < 1.0);
        }
    }
}
