//! The policies' figures as columns, shared by the text table and the HTML report: each
//! column's header (a line per word group, units included) and a cell per run, durations in
//! one unit per column with the decimals that tell the runs apart.

use sim::engine::SimResult;

use crate::fmt::{distinct, durations, fmt_count, sig3};

/// One column of the policies' table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The header, lines separated by `\n`.
    pub header: String,
    /// A cell per run.
    pub cells: Vec<String>,
    /// Shown only in the wide table (`-o wide`; the report's second table).
    pub wide: bool,
}

/// GPU-hours used by a run's jobs (lost work included).
pub fn gpu_hours(r: &SimResult) -> f64 {
    r.jobs.iter().map(|j| j.gpu_seconds).sum::<f64>() / 3600.0
}

fn text(header: &str, results: &[SimResult], f: impl Fn(&SimResult) -> String) -> Column {
    Column {
        header: header.to_owned(),
        cells: results.iter().map(f).collect(),
        wide: false,
    }
}

fn time(header: &str, results: &[SimResult], f: impl Fn(&SimResult) -> f64) -> Column {
    let values: Vec<f64> = results.iter().map(f).collect();
    let (unit, cells) = durations(&values);
    Column {
        header: format!("{header} {unit}"),
        cells,
        wide: false,
    }
}

fn number(header: &str, results: &[SimResult], f: impl Fn(&SimResult) -> f64) -> Column {
    let values: Vec<f64> = results.iter().map(f).collect();
    Column {
        header: header.to_owned(),
        cells: distinct(&values),
        wide: false,
    }
}

fn pct(header: &str, results: &[SimResult], f: fn(&SimResult) -> f64) -> Column {
    text(header, results, |r| format!("{:.1}%", f(r) * 100.0))
}

fn count(header: &str, results: &[SimResult], f: fn(&SimResult) -> u64) -> Column {
    text(header, results, |r| fmt_count(f(r)))
}

fn wide(mut c: Column) -> Column {
    c.wide = true;
    c
}

/// Every column, in table order: policy, completed, failed, (unfinished), avg JCT, (p50), p99,
/// multi-node avg and p99 JCT, GPU-hours, network slowdown; wide adds waits, utilisation,
/// makespan, fragmentation (railyard's and Weng et al.'s), preemptions, lost GPU-hours and
/// multi-node jobs by highest tier crossed.
pub fn policy_columns(results: &[SimResult]) -> Vec<Column> {
    vec![
        text("policy", results, |r| r.summary.policy.clone()),
        count("completed", results, |r| r.summary.completed as u64),
        count("failed", results, |r| r.summary.failed as u64),
        wide(count("unfinished", results, |r| {
            r.summary.unfinished as u64
        })),
        time("avg\nJCT", results, |r| r.summary.avg_jct_s),
        wide(time("p50\nJCT", results, |r| r.summary.p50_jct_s)),
        time("p99\nJCT", results, |r| r.summary.p99_jct_s),
        time("multi-node\navg JCT", results, |r| {
            r.summary.avg_multi_node_jct_s
        }),
        time("multi-node\np99 JCT", results, |r| {
            r.summary.p99_multi_node_jct_s
        }),
        number("GPU-h", results, gpu_hours),
        number("network\nslowdown", results, |r| {
            r.summary.avg_network_slowdown
        }),
        wide(time("avg\nwait", results, |r| r.summary.avg_wait_s)),
        wide(time("p99\nwait", results, |r| r.summary.p99_wait_s)),
        wide(pct("util\n(arrivals)", results, |r| {
            r.summary.gpu_utilization_arrivals
        })),
        wide(pct("util\n(makespan)", results, |r| {
            r.summary.gpu_utilization
        })),
        wide(time("makespan", results, |r| r.summary.makespan_s)),
        wide(pct("frag", results, |r| r.summary.fragmentation)),
        wide(pct("GPU frag\n(Weng)", results, |r| {
            r.summary.weng_fragmentation
        })),
        wide(count("preempted", results, |r| r.summary.preemptions)),
        wide(text("lost\nGPU-h", results, |r| {
            sig3(r.summary.lost_gpu_seconds / 3600.0)
        })),
        wide(text("multi-node\nby tier", results, |r| {
            r.summary
                .tier_span
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join("/")
        })),
    ]
}
