//! Node failures and checkpoints on hand-computed scenarios: exact completion times and lost
//! GPU-seconds, preemption with and without checkpoints, a failure nobody notices, determinism.

mod common;

use common::{job, one_rack as cluster, policy, run};
use sim::engine::{Order, SimConfig, SimResult};
use sim::failures::{Checkpointing, FailureConfig, Mtbf, NodeFailure};
use sim::{CheckpointAsk, TraceJob};
use topology::NodeId;

fn config(order: Order, failures: FailureConfig, checkpoints: Checkpointing) -> SimConfig {
    SimConfig {
        policy: policy(order),
        failures,
        checkpoints,
        ..common::checked()
    }
}

fn fail(at_s: f64, node: u32, duration_s: f64) -> FailureConfig {
    FailureConfig {
        listed: vec![NodeFailure {
            at_s,
            node: NodeId(node),
            duration_s,
        }],
        mtbf: None,
    }
}

#[test]
fn a_failure_rolls_back_to_the_last_checkpoint_and_costs_the_restart() {
    // One node, one job of 100 s checkpointing every 30 s; its node fails at 50 s for 20 s.
    // Run 1: 0–50 s, checkpoint at 30 s, 20 s lost. Down until 70 s. Run 2: 5 s restart, then
    // the 70 s left: ends at 145 s. Lost to the failure: 8 GPUs × (20 + 5) s.
    let c = cluster(1);
    let ckpt = Checkpointing {
        interval_s: 30.0,
        restart_s: 5.0,
    };
    let r = run(
        &c,
        &[job("j", 0.0, 100.0, 8, "q")],
        &config(Order::Fifo, fail(50.0, 0, 20.0), ckpt),
    );
    let j = &r.jobs[0];
    assert_eq!((j.start_s, j.end_s), (Some(0.0), Some(145.0)));
    assert_eq!(j.failures, 1);
    assert_eq!(j.gpu_seconds, 8.0 * 125.0);
    assert_eq!(j.lost_gpu_seconds_failure, 8.0 * 25.0);
    let f = r.summary.failures.as_ref().unwrap();
    assert_eq!((f.node_failures, f.jobs_stopped_by_failures), (1, 1));
    assert_eq!(f.lost_gpu_seconds_failure, 200.0);
    assert_eq!(r.summary.lost_gpu_seconds, 200.0);
    // Without checkpoints it starts over at 70 s: ends at 170 s, the 50 s run lost.
    let none = run(
        &c,
        &[job("j", 0.0, 100.0, 8, "q")],
        &config(Order::Fifo, fail(50.0, 0, 20.0), Checkpointing::default()),
    );
    assert_eq!(none.jobs[0].end_s, Some(170.0));
    assert_eq!(none.jobs[0].lost_gpu_seconds_failure, 400.0);
    // The trace's own columns win over the defaults: checkpoint every 40 s, no restart cost.
    let mut own = job("j", 0.0, 100.0, 8, "q");
    own.checkpoint = CheckpointAsk {
        interval_s: Some(40.0),
        restart_s: Some(0.0),
    };
    let r = run(&c, &[own], &config(Order::Fifo, fail(50.0, 0, 20.0), ckpt));
    assert_eq!(r.jobs[0].end_s, Some(130.0));
    assert_eq!(r.jobs[0].lost_gpu_seconds_failure, 80.0);
}

#[test]
fn preemption_loses_only_the_work_since_the_last_checkpoint() {
    // a1, a2 fill two nodes; b1 (another queue) reclaims one at 10 s and runs 100 s; the victim
    // restarts at 110 s. No checkpoints: 10 s lost, ends at 1110 s. Every 4 s with a 3 s
    // restart: checkpoint at 8 s, 2 s lost, then 3 s of restart: ends at 110 + 3 + 992 s.
    let c = cluster(2);
    let trace = [
        job("a1", 0.0, 1000.0, 8, "a"),
        job("a2", 0.0, 1000.0, 8, "a"),
        job("b1", 10.0, 100.0, 8, "b"),
    ];
    let victim = |r: &SimResult| r.jobs.iter().find(|j| j.preemptions == 1).unwrap().clone();
    let plain = run(
        &c,
        &trace,
        &config(
            Order::FairShare,
            FailureConfig::default(),
            Checkpointing::default(),
        ),
    );
    let v = victim(&plain);
    assert_eq!(v.end_s, Some(1110.0));
    assert_eq!(plain.summary.lost_gpu_seconds, 80.0);
    assert!(plain.summary.failures.is_none());
    let ckpt = Checkpointing {
        interval_s: 4.0,
        restart_s: 3.0,
    };
    let r = run(
        &c,
        &trace,
        &config(Order::FairShare, FailureConfig::default(), ckpt),
    );
    let v = victim(&r);
    assert_eq!(v.end_s, Some(1105.0));
    assert_eq!(v.lost_gpu_seconds_preemption, 8.0 * 5.0);
    let f = r.summary.failures.unwrap();
    assert_eq!(
        (f.lost_gpu_seconds_preemption, f.lost_gpu_seconds_failure),
        (40.0, 0.0)
    );
}

#[test]
fn a_failure_of_a_node_nobody_uses_changes_no_job() {
    let c = cluster(2);
    let trace = [job("j", 0.0, 100.0, 8, "q"), job("k", 500.0, 10.0, 8, "q")];
    let base = run(
        &c,
        &trace,
        &config(
            Order::Fifo,
            FailureConfig::default(),
            Checkpointing::default(),
        ),
    );
    for node in 0..2 {
        // Down from 0 s to 1000 s: j and k run on the other node.
        let r = run(
            &c,
            &trace,
            &config(
                Order::Fifo,
                fail(0.0, node, 1000.0),
                Checkpointing::default(),
            ),
        );
        assert_eq!(r.jobs, base.jobs, "node {node}");
        assert_eq!(r.summary.failures.unwrap().node_failures, 1);
        assert_eq!(r.summary.makespan_s, base.summary.makespan_s);
    }
}

#[test]
fn mtbf_failures_are_seeded_and_checked() {
    let c = cluster(4);
    let trace: Vec<TraceJob> = (0..60)
        .map(|k| {
            job(
                &format!("j{k}"),
                f64::from(k) * 50.0,
                400.0 + f64::from(k % 7) * 100.0,
                [1, 4, 8, 16][k as usize % 4],
                "q",
            )
        })
        .collect();
    let cfg = |seed| {
        config(
            Order::BestEffortFifo,
            FailureConfig {
                listed: Vec::new(),
                mtbf: Some(Mtbf {
                    mtbf_s: 2000.0,
                    repair_s: 300.0,
                    seed,
                }),
            },
            Checkpointing {
                interval_s: 60.0,
                restart_s: 10.0,
            },
        )
    };
    let a = run(&c, &trace, &cfg(1));
    assert_eq!(a, run(&c, &trace, &cfg(1)));
    let f = a.summary.failures.as_ref().unwrap();
    assert!(
        f.node_failures > 0 && f.jobs_stopped_by_failures > 0,
        "{f:?}"
    );
    assert!(f.lost_gpu_seconds_failure > 0.0);
    assert_eq!(a.summary.completed, 60);
    assert_ne!(a.jobs, run(&c, &trace, &cfg(2)).jobs);
}
