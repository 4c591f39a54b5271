//! The fabric's state made only when a run needs it (`sim::lazy_network::Lazy`): a run whose
//! jobs are all silent never makes it and gives the same result as one with it made up front;
//! a run with communicating multi-node jobs makes it, with the same result too.

mod common;

use common::{clos, host, tier};
use fabric::RoutingConfig;
use sim::engine::{simulate, Order, SimConfig, SimResult};
use sim::lazy_network::Lazy;
use sim::network::fabric_network;
use sim::synthetic::{synthetic_trace, SyntheticSpec};
use sim::{CommProfile, SimTime, TraceJob};
use topology::{Cluster, TierSpec};

/// 64 hosts of 8 GPUs, one 100G port each, racks of 8 under one leaf, 4 spines at 2:1 above:
/// multi-node jobs that cross racks contend.
fn cluster() -> Cluster {
    let switched = |label: &str, n: u32, switches: u32, o: Option<f64>| TierSpec {
        switches_per_domain: Some(switches),
        oversubscription: o,
        ..tier(label, n, 1.0)
    };
    clos(
        "lazy-512",
        host(8, 100.0),
        64,
        vec![
            switched("rack", 8, 1, None),
            switched("row", 64, 4, Some(2.0)),
        ],
    )
}

fn trace(cluster: &Cluster, comm: Option<CommProfile>) -> Vec<TraceJob> {
    synthetic_trace(&SyntheticSpec {
        jobs: 200,
        cluster_gpus: cluster.gpu_count(),
        load: 0.8,
        seed: 7,
        comm,
    })
}

/// The run of `trace` under `order` (`+network` when `network_aware`) with the network made
/// up front and with it made lazily: both results and whether the lazy one was made.
fn both(
    cluster: &Cluster,
    trace: &[TraceJob],
    order: Order,
    network_aware: bool,
) -> (SimResult, SimResult, bool) {
    let mut cfg = SimConfig {
        cycle: SimTime::from_secs_f64(10.0),
        timeline_points: 20,
        ..common::config(order)
    };
    cfg.policy.network_aware = network_aware;
    let routing = RoutingConfig::default();
    let mut eager = fabric_network(cluster, routing);
    let a = simulate(cluster, trace, &cfg, &mut eager, &mut |_| {}).unwrap();
    let mut lazy = Lazy::new(|| fabric_network(cluster, routing));
    let b = simulate(cluster, trace, &cfg, &mut lazy, &mut |_| {}).unwrap();
    let built = lazy.is_built();
    (a, b, built)
}

#[test]
fn a_run_of_silent_jobs_never_makes_the_network_and_gives_the_same_result() {
    let cluster = cluster();
    let silent = trace(
        &cluster,
        Some(CommProfile {
            comm_share: 0.0,
            bytes_per_step: 1e9,
        }),
    );
    assert!(silent.iter().any(|j| j.gpus > 8), "no multi-node job");
    for (order, network_aware) in [
        (Order::Fifo, false),
        (Order::BestEffortFifo, true),
        (Order::FairShare, false),
    ] {
        let (eager, lazy, built) = both(&cluster, &silent, order.clone(), network_aware);
        assert!(!built, "{order:?}: the network was made");
        assert_eq!(format!("{eager:?}"), format!("{lazy:?}"), "{order:?}");
    }
}

#[test]
fn a_run_with_communicating_jobs_makes_the_network_and_gives_the_same_result() {
    let cluster = cluster();
    let talking = trace(&cluster, None);
    for (order, network_aware) in [(Order::Fifo, false), (Order::BestEffortFifo, true)] {
        let (eager, lazy, built) = both(&cluster, &talking, order.clone(), network_aware);
        assert!(built, "{order:?}: the network was not made");
        assert!(eager.summary.avg_network_slowdown > 1.0, "no job slowed");
        assert_eq!(format!("{eager:?}"), format!("{lazy:?}"), "{order:?}");
    }
}
