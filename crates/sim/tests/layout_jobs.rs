//! Layout jobs in the simulator: inside one host a layout job runs at its trace duration; with
//! its data-parallel groups across an oversubscribed uplink it runs slower than on the same
//! cluster without oversubscription; the same inputs give the same run.

mod common;

use common::{clos, host, tier};
use fabric::RoutingConfig;
use sim::engine::{simulate, Order, SimConfig, SimResult};
use sim::network::fabric_network;
use sim::TraceJob;
use topology::{Cluster, TierSpec};

/// A non-preemptible job of `gpus` GPUs training `model` with `layout`.
fn layout_job(name: &str, submit: f64, gpus: u32, model: &str, layout: &str) -> TraceJob {
    TraceJob {
        preemptible: false,
        training: Some(layout::Training::new(
            layout::preset(model).unwrap(),
            layout::Layout::parse(layout).unwrap(),
        )),
        ..common::job(name, submit, 1000.0, gpus, "q")
    }
}

/// Two racks of two 8-GPU hosts (one 100 Gb/s NIC each) under one top switch, the rack uplinks
/// `oversubscription`:1.
fn two_racks(oversubscription: Option<f64>) -> Cluster {
    let t = |label: &str, n: u32, o: Option<f64>| TierSpec {
        switches_per_domain: Some(1),
        oversubscription: o,
        ..tier(label, n, 1.0 + f64::from(n))
    };
    clos(
        "two-racks",
        host(8, 100.0),
        4,
        vec![t("rack", 2, None), t("top", 4, oversubscription)],
    )
}

/// Fillers hold the hosts so that `a` gets n0 + n2 and `b` n1 + n3 (both across the racks):
/// each job's DP pairs a GPU of one rack with one of the other.
fn crossing_trace() -> Vec<TraceJob> {
    let filler = |name: &str, d: f64| TraceJob {
        preemptible: false,
        ..common::job(name, 0.0, d, 8, "q")
    };
    vec![
        filler("f0", 10.0),
        filler("f1", 20.0),
        filler("f2", 10.0),
        filler("f3", 20.0),
        layout_job("a", 5.0, 16, "llama3-8b", "tp=8,dp=2"),
        layout_job("b", 5.0, 16, "llama3-8b", "tp=8,dp=2"),
    ]
}

fn run(cluster: &Cluster, trace: &[TraceJob]) -> SimResult {
    let cfg = SimConfig {
        timeline_points: 10,
        ..common::config(Order::Fifo)
    };
    let mut net = fabric_network(cluster, RoutingConfig::default());
    simulate(cluster, trace, &cfg, &mut net, &mut |_| {}).unwrap()
}

#[test]
fn a_layout_job_inside_one_host_runs_at_its_trace_duration() {
    let cluster = two_racks(Some(4.0));
    let trace = vec![
        layout_job("solo", 0.0, 8, "llama3-8b", "tp=8"),
        layout_job("pair", 0.0, 8, "llama3-8b", "tp=4,dp=2"),
    ];
    let r = run(&cluster, &trace);
    for name in ["solo", "pair"] {
        let j = common::record(&r, name);
        assert_eq!(j.end_s.unwrap() - j.start_s.unwrap(), 1000.0, "{j:?}");
    }
}

#[test]
fn dp_across_an_oversubscribed_uplink_runs_slower_than_without() {
    let trace = crossing_trace();
    let over = run(&two_racks(Some(2.0)), &trace);
    let flat = run(&two_racks(None), &trace);
    for name in ["a", "b"] {
        let (o, f) = (common::record(&over, name), common::record(&flat, name));
        assert_eq!(o.highest_tier, Some(1), "{o:?}");
        let (so, sf) = (o.network_slowdown.unwrap(), f.network_slowdown.unwrap());
        assert!(so > sf * 1.01, "{name}: 2:1 {so} vs non-blocking {sf}");
        assert!(sf >= 1.0, "{name}: {sf}");
    }
}

#[test]
fn layout_runs_are_deterministic() {
    let cluster = two_racks(Some(2.0));
    let trace = crossing_trace();
    let a = run(&cluster, &trace);
    let b = run(&cluster, &trace);
    assert_eq!(format!("{:?}", a.jobs), format!("{:?}", b.jobs));
    assert_eq!(format!("{:?}", a.summary), format!("{:?}", b.summary));
}
