//! A job's pace alone ([`Fabric::alone_pace`], which may leave out the hops between higher tiers
//! when a bound shows they cannot pace the job) against solving its routed flows alone, on a
//! three-tier fabric whose core is thin enough to pace jobs that cross it.

mod common;

use common::{allreduce as job, clos_100g};
use fabric::{Fabric, JobTraffic, RoutingConfig, RoutingMode};
use proptest::prelude::*;
use topology::Cluster;

/// 32 hosts of 8 GPUs with one 100G port: racks of 4 under one leaf, rows of 8 under 2 spines
/// (1:1), and a core of 2 switches oversubscribed `core`:1.
fn three_tiers(core: f64) -> Cluster {
    clos_100g(
        "thin-core",
        32,
        &[
            ("rack", 4, 1, None),
            ("row", 8, 2, None),
            ("core", 32, 2, Some(core)),
        ],
    )
}

fn adaptive(qps: u32) -> RoutingConfig {
    let mut cfg = RoutingConfig {
        mode: RoutingMode::Adaptive,
        ..RoutingConfig::default()
    };
    cfg.nccl.qps_per_connection = qps;
    cfg
}

/// The reference: route the job's flows and solve them alone.
fn solved_alone(cluster: &Cluster, job: &JobTraffic, cfg: &RoutingConfig) -> f64 {
    let mut fabric = Fabric::new(cluster);
    let routed = fabric.route_flows(job, cfg, 7).expect("valid job");
    fabric.solve(&[&routed]).busbw_gbps[0]
}

#[test]
fn a_thin_core_paces_a_job_that_crosses_it() {
    // Every ring edge goes from one row to the other, through the 8:1 core.
    let ring = [0, 8, 1, 9, 2, 10, 3, 11];
    let cfg = adaptive(1);
    let thin = three_tiers(8.0);
    let reference = solved_alone(&thin, &job(&ring, 8), &cfg);
    let mut fabric = Fabric::new(&thin);
    let pace = fabric
        .alone_pace(&job(&ring, 8), &cfg, 7)
        .expect("valid job");
    assert_eq!(pace.to_bits(), reference.to_bits(), "{pace} vs {reference}");
    let grouped = fabric
        .alone_pace_grouped(&job(&ring, 8), &cfg, 7)
        .expect("valid job");
    assert!(
        (grouped - reference).abs() <= 1e-12 * reference,
        "{grouped}"
    );
    // Under a full core the same job runs faster: the core, an inner hop, paced it.
    let full = three_tiers(1.0);
    let unpaced = Fabric::new(&full)
        .alone_pace(&job(&ring, 8), &cfg, 7)
        .expect("valid job");
    assert!(
        unpaced > pace * 2.0,
        "full core {unpaced}, thin core {pace}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    /// Whether the core paces the job or not, leaving out the hops it cannot pace changes no
    /// bit, and the per-leaf-pair sum stays within rounding.
    #[test]
    fn the_pace_alone_is_the_solved_pace(
        nodes in prop::sample::subsequence((0u32..32).collect::<Vec<_>>(), 2..12)
            .prop_shuffle(),
        gpus in 1u32..=8,
        qps in 1u32..=3,
        core in prop::sample::select(vec![1.0, 2.0, 8.0]),
    ) {
        let cluster = three_tiers(core);
        let cfg = adaptive(qps);
        let reference = solved_alone(&cluster, &job(&nodes, gpus), &cfg);
        let mut fabric = Fabric::new(&cluster);
        let pace = fabric.alone_pace(&job(&nodes, gpus), &cfg, 7).expect("valid job");
        prop_assert_eq!(pace.to_bits(), reference.to_bits(), "{} vs {}", pace, reference);
        let grouped = fabric.alone_pace_grouped(&job(&nodes, gpus), &cfg, 7).expect("valid job");
        prop_assert!((grouped - reference).abs() <= 1e-12 * reference, "{} vs {}", grouped, reference);
    }
}
