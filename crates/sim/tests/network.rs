//! The simulator with the real fabric model: jobs sharing an oversubscribed uplink slow each
//! other by the predicted factor.

mod common;

use common::{clos, host, tier};
use fabric::RoutingConfig;
use sim::engine::{simulate, Order, SimConfig};
use sim::network::{fabric_network, fabric_network_from_scratch};
use sim::{CommProfile, SimTime, TraceJob};
use topology::{Cluster, TierSpec};

/// A non-preemptible job in queue `q` spending `comm_share` of a step all-reducing 1 GB.
fn job(name: &str, submit: f64, duration: f64, gpus: u32, comm_share: f64) -> TraceJob {
    TraceJob {
        preemptible: false,
        comm: Some(CommProfile {
            comm_share,
            bytes_per_step: 1e9,
        }),
        ..common::job(name, submit, duration, gpus, "q")
    }
}

/// A tier of `nodes_per_domain` hosts under `switches` switches per domain, oversubscribed
/// `oversubscription`:1 above it.
fn switched(
    label: &str,
    nodes_per_domain: u32,
    latency_us: f64,
    switches: u32,
    oversubscription: Option<f64>,
) -> TierSpec {
    TierSpec {
        switches_per_domain: Some(switches),
        oversubscription,
        ..tier(label, nodes_per_domain, latency_us)
    }
}

#[test]
fn two_jobs_sharing_an_oversubscribed_uplink_slow_by_the_predicted_factor() {
    // Two racks of two 8-GPU hosts, one 100 Gb/s NIC each; each rack's uplink carries half of its
    // hosts' bandwidth (2:1), i.e. 100 Gb/s, one path.
    let tier = |label: &str, n: u32, o: Option<f64>| switched(label, n, 1.0 + f64::from(n), 1, o);
    let cluster = clos(
        "two-racks",
        host(8, 100.0),
        4,
        vec![tier("rack", 2, None), tier("top", 4, Some(2.0))],
    );
    // Fillers on n0..n3; n0 and n2 free at t=10, n1 and n3 at t=20. Job a (waiting since t=5)
    // gets n0 + n2 at 10; job b gets n1 + n3 at 20. Both rings cross the racks: from t=20 they
    // share each rack uplink and each gets half of it.
    let c = 0.5;
    let trace = vec![
        job("f0", 0.0, 10.0, 8, 0.0),
        job("f1", 0.0, 20.0, 8, 0.0),
        job("f2", 0.0, 10.0, 8, 0.0),
        job("f3", 0.0, 20.0, 8, 0.0),
        job("a", 5.0, 1000.0, 16, c),
        job("b", 5.0, 1000.0, 16, c),
    ];
    let cfg = SimConfig {
        timeline_points: 10,
        ..common::config(Order::Fifo)
    };
    let mut net = fabric_network(&cluster, RoutingConfig::default());
    let r = simulate(&cluster, &trace, &cfg, &mut net, &mut |_| {}).unwrap();
    let get = |n: &str| r.jobs.iter().find(|j| j.name == n).unwrap().clone();
    let (a, b) = (get("a"), get("b"));
    assert_eq!((a.start_s, b.start_s), (Some(10.0), Some(20.0)));
    assert_eq!((a.highest_tier, b.highest_tier), (Some(1), Some(1)));
    // Alone, a ring is bound by NCCL's 12 GB/s (96 Gb/s) of a 100 Gb/s NIC
    // (speedArrayInter, NCCL src/graph/search.cc); shared, each job gets half of the 100 Gb/s
    // uplink. The communicating share runs 96/50 times slower: s = (1 − c) + c · 96/50.
    let s = (1.0 - c) + c * 96.0 / 50.0;
    // a: 10 s alone, then 990 s of work at slowdown s → ends at 20 + 990 s.
    let a_end = 20.0 + 990.0 * s;
    assert!(
        (a.end_s.unwrap() - a_end).abs() < 0.01,
        "a ended at {:?}",
        a.end_s
    );
    // b: (a_end − 20) / s of work shared, the rest alone.
    let b_done_shared = (a_end - 20.0) / s;
    let b_end = a_end + (1000.0 - b_done_shared);
    assert!(
        (b.end_s.unwrap() - b_end).abs() < 0.01,
        "b ended at {:?}",
        b.end_s
    );
}

/// 64 hosts of 8 GPUs, one 100G port each, racks of 8 under one leaf, rows of 32 under 4 spines
/// at 2:1, 4 core switches at 2:1: jobs crossing racks contend.
fn oversubscribed_512() -> Cluster {
    clos(
        "over-512",
        host(8, 100.0),
        64,
        vec![
            switched("rack", 8, 1.0, 1, None),
            switched("row", 32, 1.0, 4, Some(2.0)),
            switched("core", 64, 1.0, 4, Some(2.0)),
        ],
    )
}

#[test]
fn incremental_network_replays_a_trace_exactly_as_solving_from_scratch() {
    // A busy synthetic trace (80% offered load, sizes 1–512 GPUs) on an oversubscribed cluster:
    // the incremental model and the from-scratch one give the same result, every f64 alike.
    let cluster = oversubscribed_512();
    let trace = sim::synthetic::synthetic_trace(&sim::synthetic::SyntheticSpec {
        jobs: 300,
        cluster_gpus: cluster.gpu_count(),
        load: 0.8,
        seed: 3,
        comm: None,
    });
    for (mode, order) in [
        (fabric::RoutingMode::Ecmp, Order::BestEffortFifo),
        (fabric::RoutingMode::Adaptive, Order::FairShare),
    ] {
        let cfg = SimConfig {
            cycle: SimTime::from_secs_f64(10.0),
            timeline_points: 50,
            ..common::config(order)
        };
        let routing = RoutingConfig {
            mode,
            ..RoutingConfig::default()
        };
        let mut incremental = fabric_network(&cluster, routing);
        let a = simulate(&cluster, &trace, &cfg, &mut incremental, &mut |_| {}).unwrap();
        let mut scratch = fabric_network_from_scratch(&cluster, routing);
        let b = simulate(&cluster, &trace, &cfg, &mut scratch, &mut |_| {}).unwrap();
        if mode == fabric::RoutingMode::Ecmp {
            assert!(a.summary.avg_network_slowdown > 1.0, "no ECMP collisions");
        }
        multi_node_jct_matches_the_job_records(&a);
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{mode:?}");
    }
}

/// The summary's multi-node JCT figures, recomputed from the per-job records: the mean, and the
/// 99th percentile as the smallest JCT that at least 99% of them do not exceed.
fn multi_node_jct_matches_the_job_records(r: &sim::engine::SimResult) {
    let jct: Vec<f64> = r
        .jobs
        .iter()
        .filter(|j| j.nodes > 1)
        .filter_map(|j| j.end_s.map(|e| e - j.submit_s))
        .collect();
    assert!(jct.len() > 10, "too few multi-node jobs: {}", jct.len());
    let s = &r.summary;
    assert_eq!(s.multi_node_completed, jct.len());
    let avg = jct.iter().sum::<f64>() / jct.len() as f64;
    assert!((s.avg_multi_node_jct_s - avg).abs() < 1e-6 * avg);
    let p99 = jct
        .iter()
        .copied()
        .filter(|&x| jct.iter().filter(|&&y| y <= x).count() * 100 >= 99 * jct.len())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(s.p99_multi_node_jct_s, p99);
    assert!(s.avg_multi_node_jct_s != s.avg_jct_s);
}
