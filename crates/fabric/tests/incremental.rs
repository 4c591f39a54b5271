//! The incremental fabric state against the from-scratch model on random job churn: after every
//! batch of starts and ends, every running job's achieved and ideal bus bandwidth are the same
//! f64 bits as routing all running jobs again and solving them together.

mod common;

use common::{allreduce, clos_100g};
use fabric::{Fabric, FabricState, JobTraffic, RoutedJob, RoutingConfig, RoutingMode};
use proptest::prelude::*;
use std::collections::BTreeMap;
use topology::{build_from_spec, Cluster, ClusterSpec, FabricSpec, FatTreeSpec};

/// 32 hosts of 8 GPUs with one 100G port, racks of 4 under one leaf, rows of 16 under 4 spines
/// at 2:1, a core tier of 4 switches at 2:1: several paths, oversubscribed, so jobs contend.
fn oversubscribed() -> Cluster {
    clos_100g(
        "over",
        32,
        &[
            ("rack", 4, 1, None),
            ("row", 16, 4, Some(2.0)),
            ("core", 32, 4, Some(2.0)),
        ],
    )
}

/// A k = 4 fat-tree of 16 hosts with two rails of 200G.
fn fat_tree() -> Cluster {
    build_from_spec(&ClusterSpec {
        name: "ft4".to_owned(),
        node: topology::examples::node(8, 2, 1, 200.0),
        fabric: FabricSpec {
            clos: None,
            fat_tree: Some(FatTreeSpec {
                k: 4,
                tier_labels: ["e".into(), "p".into(), "c".into()],
                latency_us: [1.0, 2.0, 3.0],
            }),
        },
    })
    .expect("valid")
}

/// One step of churn: start a job on these node indices (mod the cluster's nodes, duplicates
/// dropped, at least two) with this many GPUs per node, or end the running job at this position (mod).
#[derive(Clone, Debug)]
enum Step {
    Start(Vec<u32>, u32),
    End(usize),
}

fn steps() -> impl Strategy<Value = Vec<Vec<Step>>> {
    let step = prop_oneof![
        3 => (prop::collection::vec(0u32..64, 1..7), 1u32..=8).prop_map(|(n, g)| Step::Start(n, g)),
        2 => (0usize..64).prop_map(Step::End),
    ];
    prop::collection::vec(prop::collection::vec(step, 1..4), 1..25)
}

fn traffic(cluster: &Cluster, nodes: &[u32], gpus: u32) -> JobTraffic {
    let mut seen = Vec::new();
    for &n in nodes {
        let n = n % cluster.nodes.len() as u32;
        if !seen.contains(&n) {
            seen.push(n);
        }
    }
    if seen.len() == 1 {
        seen.push((seen[0] + 1) % cluster.nodes.len() as u32);
    }
    allreduce(&seen, gpus)
}

/// (achieved, ideal) bus bandwidth bits per running job, from scratch.
fn from_scratch(
    cluster: &Cluster,
    cfg: &RoutingConfig,
    running: &BTreeMap<u64, JobTraffic>,
) -> Vec<(u64, u64)> {
    let mut fabric = Fabric::new(cluster);
    let routed: Vec<RoutedJob> = running
        .iter()
        .map(|(&id, t)| fabric.route(t, cfg, id).expect("valid job"))
        .collect();
    let refs: Vec<&RoutedJob> = routed.iter().collect();
    let alloc = fabric.solve(&refs);
    routed
        .iter()
        .zip(&alloc.busbw_gbps)
        .map(|(j, &b)| {
            let r = fabric.job_result(j, b);
            (r.busbw_gb_s.to_bits(), r.ideal_busbw_gb_s.to_bits())
        })
        .collect()
}

fn check_churn(cluster: &Cluster, cfg: &RoutingConfig, batches: &[Vec<Step>]) {
    let mut state = FabricState::new(cluster, *cfg);
    let mut running: BTreeMap<u64, JobTraffic> = BTreeMap::new();
    let mut next_id = 0u64;
    for batch in batches {
        for step in batch {
            match step {
                Step::Start(nodes, gpus) => {
                    let t = traffic(cluster, nodes, *gpus);
                    state.start(next_id, &t).expect("valid job");
                    running.insert(next_id, t);
                    // IDs are sparse, as trace indices of running jobs are.
                    next_id += 1 + next_id % 3;
                }
                Step::End(k) if !running.is_empty() => {
                    let id = *running.keys().nth(k % running.len()).expect("in range");
                    running.remove(&id);
                    state.end(id);
                }
                Step::End(_) => {}
            }
        }
        state.solve();
        assert!(
            state.reduced_rows_are_whole(),
            "a reduced row patched change by change differs from one built whole"
        );
        let expected = from_scratch(cluster, cfg, &running);
        let got: Vec<(u64, u64)> = running
            .keys()
            .map(|&id| {
                let r = state.result(id).expect("running");
                (r.busbw_gb_s.to_bits(), r.ideal_busbw_gb_s.to_bits())
            })
            .collect();
        // The quick estimate for jobs started between network rounds never promises more than
        // max-min gives (a lower bound on every job's solved pace).
        for &id in running.keys() {
            let solved = state.result(id).expect("running").busbw_gb_s;
            let quick = state.provisional(id).expect("running").busbw_gb_s;
            assert!(
                quick <= solved * (1.0 + 1e-9),
                "job {id}: estimate {quick} above the solved {solved}"
            );
        }
        assert_eq!(state.provisional(u64::MAX), None);
        assert_eq!(state.len(), running.len());
        assert_eq!(
            got,
            expected,
            "running {:?}",
            running.keys().collect::<Vec<_>>()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn incremental_equals_from_scratch_on_random_churn(
        batches in steps(),
        adaptive in any::<bool>(),
        qps in 1u32..=2,
        seed in 0u64..4,
        fat in any::<bool>(),
    ) {
        let cluster = if fat { fat_tree() } else { oversubscribed() };
        let mut cfg = RoutingConfig {
            mode: if adaptive { RoutingMode::Adaptive } else { RoutingMode::Ecmp },
            seed,
            ..RoutingConfig::default()
        };
        cfg.nccl.qps_per_connection = qps;
        check_churn(&cluster, &cfg, &batches);
    }
}

#[test]
fn a_job_that_shares_nothing_keeps_its_pace_and_ended_jobs_are_gone() {
    // Two jobs in different racks share no link: each gets its alone rate; ending one leaves
    // the other's result unchanged; a job started twice under one ID is replaced.
    let c = oversubscribed();
    let cfg = RoutingConfig::default();
    let mut state = FabricState::new(&c, cfg);
    let a = traffic(&c, &[0, 1], 8);
    let b = traffic(&c, &[4, 5], 8);
    state.start(1, &a).unwrap();
    state.start(2, &b).unwrap();
    state.solve();
    let before = state.result(1).unwrap();
    assert!(before.busbw_gb_s > 0.0 && before.busbw_gb_s == before.ideal_busbw_gb_s);
    state.end(2);
    state.end(7); // not running: nothing happens
    state.solve();
    assert_eq!(state.result(1), Some(before));
    assert_eq!(state.result(2), None);
    assert_eq!(state.len(), 1);
    state.start(1, &b).unwrap();
    state.solve();
    assert_eq!(state.len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The ideal pace summed once per leaf pair (network rounds) is the per-flow sum up to
    /// rounding.
    #[test]
    fn grouped_ideal_is_the_ideal_up_to_rounding(
        nodes in prop::collection::vec(0u32..64, 1..12),
        gpus in 1u32..=8,
        qps in 1u32..=3,
        fat in any::<bool>(),
    ) {
        let cluster = if fat { fat_tree() } else { oversubscribed() };
        let mut cfg = RoutingConfig {
            mode: RoutingMode::Adaptive,
            ..RoutingConfig::default()
        };
        cfg.nccl.qps_per_connection = qps;
        let job = traffic(&cluster, &nodes, gpus);
        let mut fabric = Fabric::new(&cluster);
        let exact = fabric.alone_pace(&job, &cfg, 7).expect("valid job");
        let grouped = fabric.alone_pace_grouped(&job, &cfg, 7).expect("valid job");
        prop_assert!(
            (exact - grouped).abs() <= 1e-12 * exact.abs(),
            "per flow {exact}, per leaf pair {grouped}"
        );
        // Asked again, the per-flow sum is unchanged (the scratch space was left clean).
        prop_assert_eq!(fabric.alone_pace(&job, &cfg, 7).expect("valid job").to_bits(), exact.to_bits());
    }
}

#[test]
fn grouped_ideal_counts_every_qp_where_the_uplinks_bind() {
    // Ring order alternating between two racks: every edge leaves its rack, so the 2:1 uplinks,
    // not the NICs, pace the job, and the per-leaf-pair sums decide the ideal.
    let cluster = oversubscribed();
    let mut cfg = RoutingConfig {
        mode: RoutingMode::Adaptive,
        ..RoutingConfig::default()
    };
    cfg.nccl.qps_per_connection = 2;
    let job = traffic(&cluster, &[0, 4, 1, 5, 2, 6, 3, 7], 8);
    let mut fabric = Fabric::new(&cluster);
    let exact = fabric.alone_pace(&job, &cfg, 3).expect("valid job");
    let grouped = fabric.alone_pace_grouped(&job, &cfg, 3).expect("valid job");
    assert!(
        (exact - grouped).abs() <= 1e-12 * exact,
        "{exact} vs {grouped}"
    );
}

#[test]
fn a_union_job_of_one_group_is_that_job_and_of_disjoint_groups_runs_at_the_slowest() {
    // A union of one group routed under its own ID is the job itself, bit for bit; a union of
    // two groups that share no link runs at the slower group's alone pace, with the lower ideal.
    let c = oversubscribed();
    let cfg = RoutingConfig::default();
    let a = traffic(&c, &[0, 1], 8);
    let b = traffic(&c, &[4, 5, 6], 2);
    let mut alone = FabricState::new(&c, cfg);
    alone.start(1, &a).unwrap();
    alone.start(2, &b).unwrap();
    alone.solve();
    let (ra, rb) = (alone.result(1).unwrap(), alone.result(2).unwrap());
    let mut one = FabricState::new(&c, cfg);
    one.start_union(9, &[(1, a.clone())]).unwrap();
    one.solve();
    assert_eq!(one.result(9), Some(ra.clone()));
    let mut two = FabricState::new(&c, cfg);
    two.start_union(9, &[(1, a), (2, b)]).unwrap();
    two.solve();
    let r = two.result(9).unwrap();
    assert_eq!(r.busbw_gb_s, ra.busbw_gb_s.min(rb.busbw_gb_s));
    assert_eq!(
        r.ideal_busbw_gb_s,
        ra.ideal_busbw_gb_s.min(rb.ideal_busbw_gb_s)
    );
}

/// Under ECMP a job's routes depend on its ID, its ideal (adaptive routing, one QP) does not:
/// the ideal a state remembers from an earlier job on the same GPUs is the ideal a fresh state
/// computes for the later job.
#[test]
fn an_ideal_remembered_from_the_same_gpus_is_the_ideal_computed_afresh() {
    let c = oversubscribed();
    let cfg = RoutingConfig {
        mode: RoutingMode::Ecmp,
        ..RoutingConfig::default()
    };
    let a = traffic(&c, &[0, 4], 8);
    let mut state = FabricState::new(&c, cfg);
    state.start(3, &a).unwrap();
    state.end(3);
    state.start(11, &a).unwrap();
    state.solve();
    let mut fresh = FabricState::new(&c, cfg);
    fresh.start(11, &a).unwrap();
    fresh.solve();
    assert_eq!(state.result(11), fresh.result(11));
    assert!(fresh.result(11).unwrap().ideal_busbw_gb_s > 0.0);
}
