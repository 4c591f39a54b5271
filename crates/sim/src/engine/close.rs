//! Closing the books at the end of a run: the running jobs' GPU time, the integrals, and the
//! [`SimResult`] with its summary, utilisation series and per-queue shares.

use sched::QueueId;

use crate::engine::lifecycle::lose_restart;
use crate::engine::not_run::NotRunReason;
use crate::engine::results::{JobRecord, Outcome, QueueRun, ReasonCount, SimResult, Summary};
use crate::engine::running::advance;
use crate::engine::state::State;
use crate::failures::{FailureSummary, StopCause};
use crate::metrics::percentile;
use crate::time::SimTime;

/// The run's result at `end` (the last event, or the horizon): the running jobs stay
/// unfinished but their GPU time counts, and the summary, the utilisation series and, with the
/// user's queues, each leaf queue's share.
pub(super) fn finish_run(mut st: State<'_>, end: SimTime) -> SimResult {
    // Close the books at `end`: running jobs stay unfinished but their GPU time counts.
    let running: Vec<usize> = st.running.keys().copied().collect();
    for i in running {
        let r = &st.running[&i];
        let used = st.requests[i].gpu * end.secs_since(r.start);
        st.records[i].gpu_seconds += used;
        if st.last_stop[i].is_some() {
            let mut r = st.running.remove(&i).expect("running");
            advance(&mut r, end);
            lose_restart(&mut st, i, &r, end);
        }
    }
    st.busy_integral += st.busy_gpus * end.secs_since(st.last_busy_change);
    st.frag_integral += st.frag_level * end.secs_since(st.frag_since);
    st.weng.integral += st.weng.level * end.secs_since(st.weng.since);
    let makespan = end.as_secs_f64();
    let mut jct: Vec<f64> = Vec::new();
    let mut multi_jct: Vec<f64> = Vec::new();
    let mut wait: Vec<f64> = Vec::new();
    let mut slow: Vec<f64> = Vec::new();
    let mut tier_span = vec![0u64; st.cluster.tiers.len()];
    for r in &mut st.records {
        if r.outcome == Outcome::Unfinished {
            r.reason = Some(if r.start_s.is_some() {
                NotRunReason::RunningAtHorizon
            } else {
                NotRunReason::PendingAtHorizon
            });
        }
    }
    let (mut completed, mut failed, mut unfinished) = (0, 0, 0);
    for r in &st.records {
        match r.outcome {
            Outcome::Completed => completed += 1,
            Outcome::Failed => failed += 1,
            Outcome::Unfinished => unfinished += 1,
        }
        if let Some(e) = r.end_s {
            jct.push(e - r.submit_s);
            if r.nodes > 1 {
                multi_jct.push(e - r.submit_s);
                slow.extend(r.network_slowdown);
                if let Some(t) = r.highest_tier {
                    tier_span[usize::from(t)] += 1;
                }
            }
        }
        if let Some(s) = r.start_s {
            wait.push(s - r.submit_s);
        }
    }
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let avg_jct = mean(&jct);
    let avg_wait = mean(&wait);
    let avg_slow = if slow.is_empty() { 1.0 } else { mean(&slow) };
    let avg_multi_jct = mean(&multi_jct);
    jct.sort_by(f64::total_cmp);
    multi_jct.sort_by(f64::total_cmp);
    wait.sort_by(f64::total_cmp);
    let capacity = st.total_gpus * makespan;
    let window = st.records.iter().map(|r| r.submit_s).fold(0.0, f64::max);
    let busy_in_window = busy_integral_until(&st.timeline, window);
    let summary = Summary {
        policy: st.config.policy.name.clone(),
        jobs: st.records.len(),
        completed,
        failed,
        unfinished,
        avg_jct_s: avg_jct,
        p50_jct_s: percentile(&jct, 50.0),
        p99_jct_s: percentile(&jct, 99.0),
        avg_wait_s: avg_wait,
        p99_wait_s: percentile(&wait, 99.0),
        gpu_utilization: if capacity > 0.0 {
            st.busy_integral / capacity
        } else {
            0.0
        },
        gpu_utilization_arrivals: if window > 0.0 && st.total_gpus > 0.0 {
            busy_in_window / (st.total_gpus * window)
        } else {
            0.0
        },
        arrival_window_s: window,
        makespan_s: makespan,
        multi_node_completed: multi_jct.len(),
        avg_multi_node_jct_s: avg_multi_jct,
        p99_multi_node_jct_s: percentile(&multi_jct, 99.0),
        avg_network_slowdown: avg_slow,
        fragmentation: if makespan > 0.0 {
            st.frag_integral / makespan
        } else {
            0.0
        },
        weng_fragmentation: if makespan > 0.0 && st.total_gpus > 0.0 {
            st.weng.integral / makespan / st.total_gpus
        } else {
            0.0
        },
        preemptions: st.preemptions,
        lost_gpu_seconds: st.lost_gpu_seconds,
        tier_span,
        not_run_reasons: count_reasons(&st.records),
        failures: (!st.config.failures.is_empty()
            || st
                .checkpointing
                .iter()
                .any(|c| c.interval_s > 0.0 || c.restart_s > 0.0))
        .then(|| FailureSummary {
            node_failures: st.node_failures,
            jobs_stopped_by_failures: st.failure_stops,
            lost_gpu_seconds_preemption: st.lost_by_cause[StopCause::Preemption as usize],
            lost_gpu_seconds_failure: st.lost_by_cause[StopCause::Failure as usize],
        }),
    };
    let utilization = timeline(&st.timeline, end, st.total_gpus, st.config.timeline_points);
    let queues = st.rules.as_ref().map(|r| QueueRun {
        rules: r.dialect.name(),
        gpu_share: (0..r.tree.queues.len())
            .filter(|&q| r.tree.is_leaf(QueueId(q as u32)))
            .map(|q| {
                (
                    r.tree.queues[q].name.clone(),
                    timeline(
                        &st.queue_timeline[q],
                        end,
                        st.total_gpus,
                        st.config.timeline_points,
                    ),
                )
            })
            .collect(),
    });
    SimResult {
        summary,
        utilization,
        jobs: st.records,
        queues,
    }
}

/// The jobs that did not complete, counted by outcome and reason: failed before unfinished,
/// then the most jobs first, then by reason (no hash order reaches the output).
fn count_reasons(records: &[JobRecord]) -> Vec<ReasonCount> {
    let mut by: std::collections::BTreeMap<(bool, &NotRunReason), usize> = Default::default();
    for r in records {
        if let Some(reason) = &r.reason {
            *by.entry((r.outcome == Outcome::Unfinished, reason))
                .or_default() += 1;
        }
    }
    let mut out: Vec<ReasonCount> = by
        .into_iter()
        .map(|((unfinished, reason), jobs)| ReasonCount {
            outcome: if unfinished {
                Outcome::Unfinished
            } else {
                Outcome::Failed
            },
            reason: reason.to_string(),
            jobs,
        })
        .collect();
    out.sort_by(|a, b| {
        (a.outcome == Outcome::Unfinished)
            .cmp(&(b.outcome == Outcome::Unfinished))
            .then(b.jobs.cmp(&a.jobs))
            .then_with(|| a.reason.cmp(&b.reason))
    });
    out
}

/// Busy GPU-seconds over [0, until] from the step function of `(time, busy GPUs)` changes.
fn busy_integral_until(changes: &[(SimTime, f64)], until: f64) -> f64 {
    let mut area = 0.0;
    for (k, &(t, level)) in changes.iter().enumerate() {
        let t0 = t.as_secs_f64();
        if t0 >= until {
            break;
        }
        let t1 = changes
            .get(k + 1)
            .map_or(until, |(n, _)| n.as_secs_f64().min(until));
        area += level * (t1 - t0).max(0.0);
    }
    area
}

/// Busy-GPU share averaged over `points` equal buckets of [0, end].
fn timeline(
    changes: &[(SimTime, f64)],
    end: SimTime,
    total: f64,
    points: usize,
) -> Vec<(f64, f64)> {
    let points = points.max(1);
    let end_s = end.as_secs_f64().max(1e-9);
    let width = end_s / points as f64;
    let mut out = Vec::with_capacity(points);
    let mut k = 0;
    let mut level = 0.0;
    for b in 0..points {
        let (lo, hi) = (width * b as f64, width * (b + 1) as f64);
        let mut t = lo;
        let mut area = 0.0;
        while k < changes.len() && changes[k].0.as_secs_f64() <= hi {
            let ct = changes[k].0.as_secs_f64().max(lo);
            area += level * (ct - t).max(0.0);
            t = ct.max(t);
            level = changes[k].1;
            k += 1;
        }
        area += level * (hi - t).max(0.0);
        out.push(((lo + hi) / 2.0 / 3600.0, area / width / total));
    }
    out
}
