//! Tiresias, SRTF and SJF on small traces whose order and preemptions are worked out by hand,
//! and SRTF on one machine against a brute-force single-server reference.

mod common;

use common::{config, one_rack as cluster, scaled};
use proptest::prelude::*;
use sim::engine::{simulate, Order, SimResult};
use sim::policies::Tiresias;
use sim::TraceJob;
use topology::Cluster;

/// A job in queue `q`.
fn job(name: &str, submit: f64, duration: f64, gpus: u32) -> TraceJob {
    common::job(name, submit, duration, gpus, "q")
}

fn tiresias(thresholds_gpu_s: &[u64], promote_knob: u32) -> Order {
    Order::Tiresias(Tiresias {
        thresholds_gpu_s: thresholds_gpu_s.to_vec(),
        promote_knob,
    })
}

fn run(c: &Cluster, trace: &[TraceJob], order: Order) -> SimResult {
    let mut ideal = scaled(1.0);
    let cfg = config(order);
    let r = simulate(c, trace, &cfg, &mut ideal, &mut |_| {}).unwrap();
    let again = simulate(c, trace, &cfg, &mut ideal, &mut |_| {}).unwrap();
    assert_eq!(r, again, "same inputs, same result");
    r
}

/// `(first start, end, preemptions)` of each job, in trace order.
fn outcome(r: &SimResult) -> Vec<(f64, f64, u32)> {
    r.jobs
        .iter()
        .map(|j| (j.start_s.unwrap(), j.end_s.unwrap(), j.preemptions))
        .collect()
}

#[test]
fn srtf_preempts_a_longer_job_and_sjf_does_not() {
    // 8 GPUs. a (100 s) runs from 0; b (20 s) arrives at 10 with a 90 s from its end: SRTF stops
    // a (its 10 s lost) and runs b 10–30, then a again 30–130. SJF and best-effort keep a:
    // a 0–100, b 100–120.
    let c = cluster(1);
    let trace = [job("a", 0.0, 100.0, 8), job("b", 10.0, 20.0, 8)];
    let r = run(&c, &trace, Order::Srtf);
    assert_eq!(outcome(&r), [(0.0, 130.0, 1), (10.0, 30.0, 0)]);
    assert_eq!(r.summary.preemptions, 1);
    assert!((r.summary.lost_gpu_seconds - 8.0 * 10.0).abs() < 1e-9);
    for order in [Order::Sjf, Order::BestEffortFifo] {
        let r = run(&c, &trace, order);
        assert_eq!(outcome(&r), [(0.0, 100.0, 0), (100.0, 120.0, 0)]);
    }
}

#[test]
fn srtf_keeps_a_job_closer_to_its_end() {
    // b (20 s) arrives at 90 when a has 10 s left: no preemption; b runs 100–120.
    let c = cluster(1);
    let trace = [job("a", 0.0, 100.0, 8), job("b", 90.0, 20.0, 8)];
    let r = run(&c, &trace, Order::Srtf);
    assert_eq!(outcome(&r), [(0.0, 100.0, 0), (100.0, 120.0, 0)]);
}

#[test]
fn srtf_and_sjf_order_three_jobs() {
    // x (50 s) at 0, y (30 s) at 1, z (10 s) at 2, all 8 GPUs on 8.
    // SRTF: y stops x at 1 (49 s left > 30), z stops y at 2 (29 s left > 10); z 2–12, then the
    // shortest pending first: y 12–42 (restarted whole), x 42–92.
    // SJF: x 0–50, then z 50–60, y 60–90.
    let c = cluster(1);
    let trace = [
        job("x", 0.0, 50.0, 8),
        job("y", 1.0, 30.0, 8),
        job("z", 2.0, 10.0, 8),
    ];
    let r = run(&c, &trace, Order::Srtf);
    assert_eq!(
        outcome(&r),
        [(0.0, 92.0, 1), (1.0, 42.0, 1), (2.0, 12.0, 0)]
    );
    let r = run(&c, &trace, Order::Sjf);
    assert_eq!(
        outcome(&r),
        [(0.0, 50.0, 0), (60.0, 90.0, 0), (50.0, 60.0, 0)]
    );
}

#[test]
fn srtf_stops_only_what_placement_needs() {
    // 16 GPUs. a (4 GPUs, 500 s) and b (4 GPUs, 300 s) on one node, c (8 GPUs, 400 s) on the
    // other, all from 0. d (4 GPUs, 10 s) arrives at 5: a (495 s left) is the longest and is
    // enough, so only a stops; d runs 5–15, a 15–515.
    let c = cluster(2);
    let trace = [
        job("a", 0.0, 500.0, 4),
        job("b", 0.0, 300.0, 4),
        job("c", 0.0, 400.0, 8),
        job("d", 5.0, 10.0, 4),
    ];
    let r = run(&c, &trace, Order::Srtf);
    assert_eq!(
        outcome(&r),
        [
            (0.0, 515.0, 1),
            (0.0, 300.0, 0),
            (0.0, 400.0, 0),
            (5.0, 15.0, 0)
        ]
    );
}

#[test]
fn tiresias_demotes_at_its_threshold() {
    // 8 GPUs. a (8 GPUs, 1,000 s) from 0; b (8 GPUs, 30 s) at 50. Both start in queue 0, so b
    // waits (FIFO within a queue, no preemption). With a threshold at 800 GPU-s, a reaches it
    // at 100 s, drops to queue 1 and b stops it: b 100–130, a again 130–1,130. With the
    // threshold at 3,600 GPU-s (the default) a drops at 450: b 450–480, a 480–1,480.
    let c = cluster(1);
    let trace = [job("a", 0.0, 1000.0, 8), job("b", 50.0, 30.0, 8)];
    let r = run(&c, &trace, tiresias(&[800], 0));
    assert_eq!(outcome(&r), [(0.0, 1130.0, 1), (100.0, 130.0, 0)]);
    let r = run(&c, &trace, Order::Tiresias(Tiresias::default()));
    assert_eq!(outcome(&r), [(0.0, 1480.0, 1), (450.0, 480.0, 0)]);
    // Past the last threshold nothing changes: one queue never preempts.
    let r = run(&c, &trace, tiresias(&[], 0));
    assert_eq!(outcome(&r), [(0.0, 1000.0, 0), (1000.0, 1030.0, 0)]);
}

#[test]
fn tiresias_starvation_guard_promotes_a_waiting_job() {
    // Threshold 800 GPU-s, 8 GPUs. a (1,000 s) from 0, b (30 s) at 50, c (500 s, not
    // preemptible) at 120, d (50 s) at 400. At 100 a drops to queue 1 and b stops it (a ran
    // 100 s): b 100–130. At 130 c (queue 0) goes before a (queue 1): c 130–630.
    // Without the guard, at 630 d (queue 0) goes first: d 630–680, a 680–1,680.
    // PROMOTEKNOB 2: a starves at 100 + 2 × 100 = 300 and is back in queue 0, before d (FIFO):
    // a 630–; it reaches 800 GPU-s again at 730 and d stops it: d 730–780, a 780–1,780.
    let c = cluster(1);
    let mut long = job("c", 120.0, 500.0, 8);
    long.preemptible = false;
    let trace = [
        job("a", 0.0, 1000.0, 8),
        job("b", 50.0, 30.0, 8),
        long,
        job("d", 400.0, 50.0, 8),
    ];
    let r = run(&c, &trace, tiresias(&[800], 0));
    assert_eq!(
        outcome(&r),
        [
            (0.0, 1680.0, 1),
            (100.0, 130.0, 0),
            (130.0, 630.0, 0),
            (630.0, 680.0, 0)
        ]
    );
    let r = run(&c, &trace, tiresias(&[800], 2));
    assert_eq!(
        outcome(&r),
        [
            (0.0, 1780.0, 2),
            (100.0, 130.0, 0),
            (130.0, 630.0, 0),
            (730.0, 780.0, 0)
        ]
    );
}

#[test]
fn non_preemptible_jobs_are_never_stopped() {
    let c = cluster(1);
    let mut a = job("a", 0.0, 100.0, 8);
    a.preemptible = false;
    let trace = [a, job("b", 10.0, 20.0, 8)];
    for order in [Order::Srtf, tiresias(&[80], 0)] {
        let r = run(&c, &trace, order);
        assert_eq!(outcome(&r), [(0.0, 100.0, 0), (100.0, 120.0, 0)]);
    }
}

/// SRTF on one server running one job at a time, preempted work lost: at every arrival and
/// completion the job with the least remaining work runs; a running job is kept on ties.
/// Returns each job's end.
fn single_server_srtf(jobs: &[(u32, u32)]) -> Vec<f64> {
    let n = jobs.len();
    let mut end = vec![f64::NAN; n];
    let mut remaining: Vec<f64> = jobs.iter().map(|&(_, d)| f64::from(d)).collect();
    let mut arrived = vec![false; n];
    let mut running: Option<(usize, f64)> = None; // (job, since)
    let mut now;
    loop {
        // Next event: the running job's end or the next arrival.
        let next_arrival = (0..n)
            .filter(|&i| !arrived[i])
            .map(|i| (f64::from(jobs[i].0), i))
            .min_by(|a, b| a.partial_cmp(b).unwrap());
        let finish = running.map(|(j, since)| since + remaining[j]);
        match (finish, next_arrival) {
            (None, None) => break,
            (Some(f), a) if a.is_none_or(|(t, _)| f <= t) => {
                let (j, _) = running.take().unwrap();
                now = f;
                end[j] = f;
                remaining[j] = 0.0;
            }
            (_, Some((t, i))) => {
                now = t;
                arrived[i] = true;
            }
            (Some(_), None) => unreachable!(),
        }
        // Let every arrival at `now` in before deciding.
        if (0..n).any(|i| !arrived[i] && f64::from(jobs[i].0) <= now) {
            continue;
        }
        let left = |j: usize| match running {
            Some((r, since)) if r == j => remaining[j] - (now - since),
            _ => remaining[j],
        };
        let best = (0..n)
            .filter(|&i| arrived[i] && end[i].is_nan())
            .min_by(|&a, &b| {
                left(a)
                    .partial_cmp(&left(b))
                    .unwrap()
                    .then(jobs[a].0.cmp(&jobs[b].0))
                    .then(a.cmp(&b))
            });
        match (running, best) {
            (Some((r, since)), Some(b)) if b != r && left(b) < left(r) => {
                // Preempt: the work done is lost.
                remaining[r] = f64::from(jobs[r].1);
                let _ = since;
                running = Some((b, now));
            }
            (None, Some(b)) => running = Some((b, now)),
            _ => {}
        }
    }
    end
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn srtf_on_one_machine_matches_the_single_server_reference(
        jobs in proptest::collection::vec((0u32..200, 1u32..120), 1..8)
    ) {
        let c = cluster(1);
        let trace: Vec<TraceJob> = jobs
            .iter()
            .enumerate()
            .map(|(i, &(t, d))| job(&format!("j{i}"), f64::from(t), f64::from(d), 8))
            .collect();
        let r = run(&c, &trace, Order::Srtf);
        // The engine counts time from the first arrival.
        let origin = f64::from(jobs.iter().map(|j| j.0).min().unwrap());
        let want = single_server_srtf(&jobs);
        for (rec, w) in r.jobs.iter().zip(&want) {
            prop_assert!((rec.end_s.unwrap() - (w - origin)).abs() < 1e-3, "{} ended {:?}, reference {}", rec.name, rec.end_s, w - origin);
        }
    }
}
