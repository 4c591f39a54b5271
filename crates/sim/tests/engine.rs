//! Simulator behaviour on small hand-computed scenarios, and conservation laws on random traces.

mod common;

use common::{config, job, racks as cluster, record, run, scaled};
use proptest::prelude::*;
use sim::engine::{simulate, Order, Outcome, SimResult, TopologyMode};
use sim::{CommProfile, TopologyAsk, TraceJob};

fn times(r: &SimResult, name: &str) -> (f64, f64) {
    let j = record(r, name);
    (j.start_s.unwrap(), j.end_s.unwrap())
}

#[test]
fn fifo_head_blocks_but_best_effort_backfills() {
    let c = cluster(2, 2);
    let trace = [
        job("a", 0.0, 100.0, 8, "q"),
        job("b", 1.0, 10.0, 16, "q"),
        job("c", 2.0, 10.0, 8, "q"),
    ];
    let fifo = run(&c, &trace, &config(Order::Fifo));
    assert_eq!(times(&fifo, "a"), (0.0, 100.0));
    assert_eq!(times(&fifo, "b"), (100.0, 110.0));
    assert_eq!(times(&fifo, "c"), (110.0, 120.0));
    let be = run(&c, &trace, &config(Order::BestEffortFifo));
    assert_eq!(times(&be, "c"), (2.0, 12.0));
    assert_eq!(times(&be, "b"), (100.0, 110.0));
    assert_eq!(be.summary.makespan_s, 110.0);
    // JCT of a: 100; b: 109; c: 10 → mean 73.
    assert!((be.summary.avg_jct_s - 73.0).abs() < 1e-9);
}

#[test]
fn half_bandwidth_stretches_the_communicating_share() {
    let c = cluster(4, 2);
    let mut j = job("big", 0.0, 1000.0, 16, "q");
    j.comm = Some(CommProfile {
        comm_share: 0.25,
        bytes_per_step: 1e9,
    });
    let r = simulate(
        &c,
        &[j],
        &config(Order::Fifo),
        &mut scaled(0.5),
        &mut |_| {},
    )
    .unwrap();
    // (1 − 0.25) + 0.25 · 2 = 1.25.
    assert_eq!(times(&r, "big"), (0.0, 1250.0));
    assert!((r.summary.avg_network_slowdown - 1.25).abs() < 1e-9);
}

#[test]
fn jobs_larger_than_the_cluster_fail_and_required_levels_bind() {
    let c = cluster(4, 2);
    let mut req = job("rack", 0.0, 10.0, 24, "q");
    req.topology = TopologyAsk::Required("rack".into());
    let trace = [
        job("huge", 0.0, 10.0, 64, "q"),
        req,
        job("ok", 0.0, 10.0, 16, "q"),
    ];
    let r = run(&c, &trace, &config(Order::BestEffortFifo));
    let outcome = |n: &str| record(&r, n).outcome;
    assert_eq!(outcome("huge"), Outcome::Failed);
    assert_eq!(outcome("rack"), Outcome::Failed);
    assert_eq!(outcome("ok"), Outcome::Completed);
    let mut bad = job("x", 0.0, 1.0, 16, "q");
    bad.topology = TopologyAsk::Preferred("nope".into());
    let err = simulate(
        &c,
        &[bad],
        &config(Order::Fifo),
        &mut scaled(1.0),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("unknown level `nope`"), "{err}");
}

#[test]
fn fair_share_reclaims_from_a_queue_above_its_share() {
    let c = cluster(2, 2);
    let trace = [
        job("a1", 0.0, 1000.0, 8, "a"),
        job("a2", 0.0, 1000.0, 8, "a"),
        job("b1", 10.0, 100.0, 8, "b"),
    ];
    let r = run(&c, &trace, &config(Order::FairShare));
    assert_eq!(r.summary.preemptions, 1);
    assert_eq!(times(&r, "b1"), (10.0, 110.0));
    assert!(r.summary.lost_gpu_seconds > 0.0);
    assert_eq!(r.summary.completed, 3);
    // Without fair share nobody is preempted and b1 waits for a1.
    let fifo = run(&c, &trace, &config(Order::Fifo));
    assert_eq!(fifo.summary.preemptions, 0);
    assert_eq!(times(&fifo, "b1"), (1000.0, 1100.0));
}

#[test]
fn topology_mode_keeps_gangs_in_one_rack() {
    // Eight single-node jobs fill racks of two nodes; at t=50 one node frees in rack 0 and one
    // in rack 1, at t=100 both nodes of rack 3. A 2-node job arriving at t=1 starts at 50 across
    // racks without a topology mode, and at 100 inside rack 3 with `required: rack`.
    let c = cluster(8, 2);
    let durations = [200.0, 50.0, 50.0, 200.0, 200.0, 200.0, 100.0, 100.0];
    let mut trace: Vec<TraceJob> = durations
        .iter()
        .enumerate()
        .map(|(k, &d)| job(&format!("s{k}"), 0.0, d, 8, "q"))
        .collect();
    trace.push(job("pair", 1.0, 10.0, 16, "q"));
    let pair = |r: &SimResult| {
        let j = record(r, "pair");
        (j.start_s.unwrap(), j.highest_tier)
    };
    let mut cfg = config(Order::BestEffortFifo);
    assert_eq!(pair(&run(&c, &trace, &cfg)), (50.0, Some(1)));
    cfg.policy.topology = TopologyMode::Required(c.level_by_label("rack").unwrap());
    assert_eq!(pair(&run(&c, &trace, &cfg)), (100.0, Some(0)));
}

fn arb_trace() -> impl Strategy<Value = Vec<TraceJob>> {
    proptest::collection::vec(
        (
            0u32..500,
            1u32..300,
            prop_oneof![
                Just(1u32),
                Just(2),
                Just(4),
                Just(8),
                Just(16),
                Just(24),
                Just(40)
            ],
            0usize..3,
        ),
        1..40,
    )
    .prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (t, d, g, q))| {
                job(
                    &format!("j{i}"),
                    f64::from(t),
                    f64::from(d),
                    g,
                    ["x", "y", "z"][q],
                )
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn conservation_and_determinism(trace in arb_trace(), order in prop_oneof![Just(Order::Fifo), Just(Order::BestEffortFifo), Just(Order::FairShare), Just(Order::Srtf), Just(Order::Sjf), Just(Order::Tiresias(sim::policies::Tiresias { thresholds_gpu_s: vec![400, 4000], promote_knob: 2 }))], factor in 0.3f64..1.0) {
        let c = cluster(4, 2);
        let cfg = config(order);
        let a = simulate(&c, &trace, &cfg, &mut scaled(factor), &mut |_| {}).unwrap();
        let b = simulate(&c, &trace, &cfg, &mut scaled(factor), &mut |_| {}).unwrap();
        prop_assert_eq!(&a, &b);
        let s = &a.summary;
        // Every job ends exactly once.
        prop_assert_eq!(s.completed + s.failed + s.unfinished, trace.len());
        prop_assert_eq!(s.unfinished, 0);
        // GPU-seconds used add up to utilisation × capacity.
        let used: f64 = a.jobs.iter().map(|j| j.gpu_seconds).sum();
        let capacity = c.gpu_count() as f64 * s.makespan_s;
        prop_assert!((used - s.gpu_utilization * capacity).abs() <= 1e-6 * capacity.max(1.0));
        prop_assert!(s.gpu_utilization <= 1.0 + 1e-9);
        prop_assert!(a.utilization.iter().all(|&(_, u)| (0.0..=1.0 + 1e-9).contains(&u)));
        // Jobs never finish faster than their ideal duration.
        for (j, t) in a.jobs.iter().zip(&trace) {
            if let (Some(st), Some(e)) = (j.start_s, j.end_s) {
                prop_assert!(e - st >= t.duration_s - 1e-3);
                prop_assert!(st >= j.submit_s);
            }
        }
    }
}

#[test]
fn duplicate_job_names_are_an_error_not_a_panic() {
    // Regression: two trace jobs named alike made `commit` fail (the occupancy tracks running
    // jobs by name) and the simulator panicked.
    let c = cluster(2, 2);
    let mut second = job("a", 10.0, 60.0, 8, "q");
    second.line = 3;
    let mut first = job("a", 0.0, 60.0, 8, "q");
    first.line = 2;
    let err = simulate(
        &c,
        &[first, second],
        &config(Order::Fifo),
        &mut scaled(1.0),
        &mut |_| {},
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "job \"a\" (line 3): the name is already used on line 2"
    );
}

#[test]
fn arrival_window_utilisation_and_per_queue_figures_by_hand() {
    // 16 GPUs. a (8 GPUs, q1) runs 0–100; b (16 GPUs, q2) arrives at 1 and runs 100–110 under
    // FIFO; c (8 GPUs, q1) arrives at 2 and runs 110–120. Arrival window [0, 2]: only a runs,
    // 8 of 16 GPUs → 0.5. Over the makespan (120 s): (8·100 + 16·10 + 8·10) / (16·120) = 0.543….
    let c = cluster(2, 2);
    let trace = [
        job("a", 0.0, 100.0, 8, "q1"),
        job("b", 1.0, 10.0, 16, "q2"),
        job("c", 2.0, 10.0, 8, "q1"),
    ];
    let r = run(&c, &trace, &config(Order::Fifo));
    assert_eq!(r.summary.arrival_window_s, 2.0);
    assert!((r.summary.gpu_utilization_arrivals - 0.5).abs() < 1e-12);
    assert!((r.summary.gpu_utilization - 1040.0 / 1920.0).abs() < 1e-12);
    let q = r.per_queue();
    assert_eq!(q.len(), 2);
    assert_eq!(
        (q[0].queue.as_str(), q[0].jobs, q[0].completed),
        ("q1", 2, 2)
    );
    // q1: waits 0 and 108 → 54; JCTs 100 and 118 → 109; GPU-hours (800 + 80) / 3600.
    assert!((q[0].avg_wait_s - 54.0).abs() < 1e-9);
    assert!((q[0].avg_jct_s - 109.0).abs() < 1e-9);
    assert!((q[0].gpu_hours - 880.0 / 3600.0).abs() < 1e-12);
    assert_eq!((q[1].queue.as_str(), q[1].jobs), ("q2", 1));
    assert!((q[1].avg_wait_s - 99.0).abs() < 1e-9);
}
