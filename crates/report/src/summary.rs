//! The simulation's summary as text: what was run on what, the trace's own waits when it has
//! them, the headline, one row per policy, and why jobs did not complete.

use sim::engine::SimResult;

use crate::columns::{policy_columns, Column};
use crate::fmt::{count_of, fmt_count, sig3};
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
    /// The best multi-node mode rerun with the network off, for the headline's bound.
    pub bound: Option<&'a SimResult>,
    /// Every run had the network off (`--no-network`).
    pub no_network: bool,
}

/// The summary: a header line (and the trace's own waits), the headline sentences, the
/// policies' table ([`policy_table`]), the jobs that did not complete by reason, and the
/// failure and per-queue tables when the run has them.
pub fn simulation_text(facts: &TraceFacts<'_>, results: &[SimResult], wide: bool) -> String {
    let jobs = results.first().map_or(0, |r| r.summary.jobs);
    let (trace_name, skipped, observed) = (facts.trace, facts.skipped_rows, facts.observed_waits);
    let mut out = format!(
        "{} from {trace_name} on {} ({} GPUs){}{}\n",
        count_of(jobs, "job"),
        facts.cluster,
        fmt_count(facts.cluster_gpus),
        if skipped > 0 {
            format!("; {} skipped", count_of(skipped, "unreadable row"))
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
            "the trace's own scheduler: avg wait {} h, p50 {} h, p99 {} h over {}\n",
            sig3(w.avg_s / 3600.0),
            sig3(w.p50_s / 3600.0),
            sig3(w.p99_s / 3600.0),
            count_of(w.jobs, "job")
        ));
    }
    for line in crate::headline::sentences(results, facts.bound, facts.no_network) {
        out.push_str(&crate::fmt::wrap(&line, 100));
    }
    out.push('\n');
    let t = policy_table(results, wide);
    out.push_str(&t.render());
    if results.iter().any(|r| r.summary.failures.is_some()) {
        out.push('\n');
        out.push_str(&failure_text(results));
    }
    let reasons = reason_text(results);
    if !reasons.is_empty() {
        out.push('\n');
        out.push_str(&reasons);
    }
    if results
        .iter()
        .any(|r| r.queues.is_some() && r.per_queue().len() > 1)
    {
        out.push('\n');
        out.push_str(&queue_text(results));
    }
    out
}

/// The policies' table: text keeps what the headline compares (within 120 columns for the
/// bundled presets' modes); wide adds the rest of [`policy_columns`].
pub fn policy_table(results: &[SimResult], wide: bool) -> Table {
    let columns: Vec<Column> = policy_columns(results)
        .into_iter()
        .filter(|c| wide || !c.wide)
        .collect();
    let headers: Vec<&str> = columns.iter().map(|c| c.header.as_str()).collect();
    let mut t = Table::new(&headers);
    for k in 0..results.len() {
        t.row(columns.iter().map(|c| c.cells[k].clone()).collect());
    }
    t
}

/// The jobs that did not complete, by reason: a line per run (one for all when every run
/// gives the same), e.g. `fifo: 2,000 failed: queue default-queue has gpu quota 0 for
/// non-preemptible jobs (2,000)`. Empty when every job completed.
pub fn reason_text(results: &[SimResult]) -> String {
    let lines: Vec<(String, String)> = results
        .iter()
        .filter(|r| !r.summary.not_run_reasons.is_empty())
        .map(|r| (r.summary.policy.clone(), reasons_of(r)))
        .collect();
    let Some(first) = lines.first() else {
        return String::new();
    };
    if results.len() > 1 && lines.len() == results.len() && lines.iter().all(|l| l.1 == first.1) {
        return format!("every mode: {}\n", first.1);
    }
    lines
        .iter()
        .map(|(policy, text)| format!("{policy}: {text}\n"))
        .collect()
}

/// `2,000 failed: REASON (2,000); 3 unfinished: REASON (2), REASON (1)`.
pub fn reasons_of(r: &SimResult) -> String {
    let mut parts = Vec::new();
    for (outcome, total) in [
        (sim::engine::Outcome::Failed, r.summary.failed),
        (sim::engine::Outcome::Unfinished, r.summary.unfinished),
    ] {
        let of: Vec<String> = r
            .summary
            .not_run_reasons
            .iter()
            .filter(|c| c.outcome == outcome)
            .map(|c| format!("{} ({})", c.reason, fmt_count(c.jobs as u64)))
            .collect();
        if !of.is_empty() {
            let word = if outcome == sim::engine::Outcome::Failed {
                "failed"
            } else {
                "unfinished"
            };
            parts.push(format!(
                "{} {word}: {}",
                fmt_count(total as u64),
                of.join(", ")
            ));
        }
    }
    parts.join("; ")
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
    let rows: Vec<(&SimResult, sim::engine::QueueSummary)> = results
        .iter()
        .filter(|r| r.queues.is_some())
        .flat_map(|r| r.per_queue().into_iter().map(move |q| (r, q)))
        .collect();
    let (wait_unit, waits) =
        crate::fmt::durations(&rows.iter().map(|(_, q)| q.avg_wait_s).collect::<Vec<_>>());
    let (jct_unit, jcts) =
        crate::fmt::durations(&rows.iter().map(|(_, q)| q.avg_jct_s).collect::<Vec<_>>());
    let (wait, jct) = (
        format!("avg wait {wait_unit}"),
        format!("avg JCT {jct_unit}"),
    );
    let mut t = Table::new(&[
        "policy",
        "queue",
        "jobs",
        "completed",
        "GPU-h",
        &wait,
        &jct,
        "preempted",
    ]);
    for (k, (r, q)) in rows.iter().enumerate() {
        t.row(vec![
            r.summary.policy.clone(),
            q.queue.clone(),
            fmt_count(q.jobs as u64),
            fmt_count(q.completed as u64),
            sig3(q.gpu_hours),
            waits[k].clone(),
            jcts[k].clone(),
            fmt_count(q.preemptions),
        ]);
    }
    t.render()
}
