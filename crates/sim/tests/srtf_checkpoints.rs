//! SRTF after a checkpoint: a preempted job's remaining work is its restart plus the work left
//! after its last checkpoint, not its whole duration; worked out by hand on one 8-GPU node.

mod common;

use common::{config, one_rack, run};
use sim::engine::{Order, SimResult};
use sim::{CheckpointAsk, TraceJob};

/// An 8-GPU job; `checkpoint` = `(interval, restart)` seconds.
fn job(name: &str, submit: f64, duration: f64, checkpoint: Option<(f64, f64)>) -> TraceJob {
    TraceJob {
        submit_s: submit,
        queue: "q".into(),
        checkpoint: checkpoint.map_or_else(CheckpointAsk::default, |(interval, restart)| {
            CheckpointAsk {
                interval_s: Some(interval),
                restart_s: Some(restart),
            }
        }),
        ..TraceJob::new(name, 8, duration)
    }
}

/// `trace` under SRTF on one 8-GPU host, every invariant checked.
fn run_srtf(trace: &[TraceJob]) -> SimResult {
    run(&one_rack(1), trace, &config(Order::Srtf))
}

/// `(first start, end, preemptions)` of each job, in trace order.
fn outcome(r: &SimResult) -> Vec<(f64, f64, u32)> {
    r.jobs
        .iter()
        .map(|j| (j.start_s.unwrap(), j.end_s.unwrap(), j.preemptions))
        .collect()
}

/// a (100 s) runs from 0; b (20 s) arrives at 35 and stops it (a has 65 s left); c (80 s)
/// arrives at 36 and waits (b has 19 s left). At 55 b ends, and a and c are pending.
fn trace(a_checkpoint: Option<(f64, f64)>) -> [TraceJob; 3] {
    [
        job("a", 0.0, 100.0, a_checkpoint),
        job("b", 35.0, 20.0, None),
        job("c", 36.0, 80.0, None),
    ]
}

#[test]
fn a_checkpointed_job_is_ranked_by_the_work_it_has_left() {
    // a checkpoints every 10 s and restarts in 5 s: stopped at 35 it keeps 30 s, so its next
    // run is 5 + 70 = 75 s < c's 80 s. a runs 55–130 (restart to 60), c 130–210.
    let r = run_srtf(&trace(Some((10.0, 5.0))));
    assert_eq!(
        outcome(&r),
        [(0.0, 130.0, 1), (35.0, 55.0, 0), (130.0, 210.0, 0)]
    );
    // Lost: 8 GPUs × (35 − 30) s of work after the checkpoint + 8 × 5 s of restart.
    assert!((r.summary.lost_gpu_seconds - 80.0).abs() < 1e-6);
}

#[test]
fn without_a_checkpoint_the_whole_duration_is_left() {
    // No checkpoint: a's next run is its whole 100 s > c's 80 s; c runs 55–135, a 135–235.
    let r = run_srtf(&trace(None));
    assert_eq!(
        outcome(&r),
        [(0.0, 235.0, 1), (35.0, 55.0, 0), (55.0, 135.0, 0)]
    );
    assert!((r.summary.lost_gpu_seconds - 8.0 * 35.0).abs() < 1e-6);
}

#[test]
fn the_restart_cost_counts_in_the_remaining_work() {
    // Checkpoint every 10 s but a 15 s restart: 15 + 70 = 85 s > 80 s, so c goes first
    // (55–135) and a restarts after it: 135–220.
    let r = run_srtf(&trace(Some((10.0, 15.0))));
    assert_eq!(
        outcome(&r),
        [(0.0, 220.0, 1), (35.0, 55.0, 0), (55.0, 135.0, 0)]
    );
}
