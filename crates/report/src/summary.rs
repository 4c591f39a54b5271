//! The simulation's summary as text: what was run on what, the trace's own waits when it has
//! them, and one row per policy.

use sim::engine::SimResult;

use crate::fmt::{fmt_count, sig3};
use crate::table::Table;

/// What the summary says about the run's inputs.
#[derive(Clone, Copy, Debug)]
pub struct TraceFacts<'a> {
    /// Cluster name.
    pub cluster: &'a str,
    /// GPUs in the cluster.
    pub cluster_gpus: u64,
    /// Trace file as given.
    pub trace: &'a str,
    /// Unreadable rows skipped.
    pub skipped_rows: usize,
    /// Trace jobs left out because they never ran to the end.
    pub not_run: usize,
    /// Waits in the scheduler that ran the trace, seconds (empty when the trace does not say).
    pub observed_waits: &'a [f64],
}

/// The summary: a header line (and the trace's own waits), then the policies' table (`wide`:
/// with p50/p99 JCT, avg/p99 JCT of multi-node jobs, p99 wait, utilisation over the makespan, fragmentation (railyard's and Weng et al.'s), lost GPU-hours
/// and multi-node jobs by highest tier crossed).
pub fn simulation_text(facts: &TraceFacts<'_>, results: &[SimResult], wide: bool) -> String {
    let jobs = results.first().map_or(0, |r| r.summary.jobs);
    let (trace_name, skipped, observed) = (facts.trace, facts.skipped_rows, facts.observed_waits);
    let mut out = format!(
        "{} jobs from {trace_name} on {} ({} GPUs){}{}\n",
        fmt_count(jobs as u64),
        facts.cluster,
        fmt_count(facts.cluster_gpus),
        if skipped > 0 {
            format!("; {} unreadable rows skipped", fmt_count(skipped as u64))
        } else {
            String::new()
        },
        if facts.not_run == 0 {
            String::new()
        } else {
            format!(
                "; {} that never ran to the end left out",
                fmt_count(facts.not_run as u64)
            )
        }
    );
    if !observed.is_empty() {
        let w = sim::WaitStats::of(observed);
        out.push_str(&format!(
            "the trace's own scheduler: avg wait {} h, p50 {} h, p99 {} h over {} jobs\n",
            sig3(w.avg_s / 3600.0),
            sig3(w.p50_s / 3600.0),
            sig3(w.p99_s / 3600.0),
            fmt_count(w.jobs as u64)
        ));
    }
    // Text: the headline per policy; wide adds the distributions, the makespan's utilisation,
    // fragmentation, lost work and where multi-node jobs landed.
    let mut header = vec!["policy", "completed", "failed"];
    if wide {
        header.push("unfinished");
    }
    header.push("avg JCT h");
    if wide {
        header.extend([
            "p50 JCT h",
            "p99 JCT h",
            "multi-node avg JCT h",
            "multi-node p99 JCT h",
        ]);
    }
    header.push("avg wait h");
    if wide {
        header.push("p99 wait h");
    }
    header.push("util (arrivals)");
    if wide {
        header.push("util (makespan)");
    }
    header.extend(["makespan h", "net slowdown"]);
    if wide {
        header.extend(["frag", "GPU frag (Weng)"]);
    }
    header.push("preempted");
    if wide {
        header.extend(["lost GPU-h", "multi-node by tier"]);
    }
    let mut t = Table::new(&header);
    let h = |s: f64| sig3(s / 3600.0);
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    for r in results {
        let s = &r.summary;
        let mut row = vec![
            s.policy.clone(),
            fmt_count(s.completed as u64),
            fmt_count(s.failed as u64),
        ];
        if wide {
            row.push(fmt_count(s.unfinished as u64));
        }
        row.push(h(s.avg_jct_s));
        if wide {
            row.extend([
                h(s.p50_jct_s),
                h(s.p99_jct_s),
                h(s.avg_multi_node_jct_s),
                h(s.p99_multi_node_jct_s),
            ]);
        }
        row.push(h(s.avg_wait_s));
        if wide {
            row.push(h(s.p99_wait_s));
        }
        row.push(pct(s.gpu_utilization_arrivals));
        if wide {
            row.push(pct(s.gpu_utilization));
        }
        row.extend([h(s.makespan_s), format!("{:.3}", s.avg_network_slowdown)]);
        if wide {
            row.push(pct(s.fragmentation));
            row.push(pct(s.weng_fragmentation));
        }
        row.push(fmt_count(s.preemptions));
        if wide {
            row.push(h(s.lost_gpu_seconds));
            row.push(
                s.tier_span
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join("/"),
            );
        }
        t.row(row);
    }
    out.push_str(&t.render());
    if results.iter().any(|r| r.summary.failures.is_some()) {
        out.push('\n');
        out.push_str(&failure_text(results));
    }
    if results.iter().any(|r| r.queues.is_some()) {
        out.push('\n');
        out.push_str(&queue_text(results));
    }
    out
}

/// The failure table of runs with failures or checkpoints: node failures, jobs they stopped and
/// GPU-hours lost by cause.
pub fn failure_text(results: &[SimResult]) -> String {
    let mut t = Table::new(&[
        "policy",
        "node failures",
        "jobs stopped by failures",
        "lost GPU-h (preemption)",
        "lost GPU-h (failure)",
    ]);
    for r in results {
        if let Some(f) = &r.summary.failures {
            t.row(vec![
                r.summary.policy.clone(),
                fmt_count(f.node_failures),
                fmt_count(f.jobs_stopped_by_failures),
                sig3(f.lost_gpu_seconds_preemption / 3600.0),
                sig3(f.lost_gpu_seconds_failure / 3600.0),
            ]);
        }
    }
    t.render()
}

/// The per-queue table of runs with the user's queues: one row per queue that had jobs, per
/// run.
pub fn queue_text(results: &[SimResult]) -> String {
    let mut t = Table::new(&[
        "policy",
        "queue",
        "jobs",
        "completed",
        "GPU-h",
        "avg wait h",
        "avg JCT h",
        "preempted",
    ]);
    let h = |s: f64| sig3(s / 3600.0);
    for r in results.iter().filter(|r| r.queues.is_some()) {
        for q in r.per_queue() {
            t.row(vec![
                r.summary.policy.clone(),
                q.queue.clone(),
                fmt_count(q.jobs as u64),
                fmt_count(q.completed as u64),
                sig3(q.gpu_hours),
                h(q.avg_wait_s),
                h(q.avg_jct_s),
                fmt_count(q.preemptions),
            ]);
        }
    }
    t.render()
}
