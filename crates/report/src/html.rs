//! The simulation report: one self-contained HTML page (inline CSS and SVG, no scripts, no
//! network) with the headline table and plots per policy.

use std::fmt::Write;

use sim::engine::SimResult;

use crate::fmt::{fmt_count, trim_float};
use crate::svg::{bar_chart, esc, line_chart, Series};

/// What the page is about.
#[derive(Debug)]
pub struct ReportContext<'a> {
    /// Cluster name.
    pub cluster: &'a str,
    /// GPUs in the cluster.
    pub gpus: u64,
    /// Trace file as given.
    pub trace: &'a str,
    /// Rows skipped while reading the trace.
    pub skipped_rows: usize,
    /// Names of the switch tiers' levels, leaf first.
    pub tier_names: Vec<String>,
    /// How the network was modelled, in a sentence.
    pub network: String,
}

fn hours(s: f64) -> String {
    if s >= 3600.0 {
        format!("{} h", trim_float(s / 3600.0))
    } else if s >= 60.0 {
        format!("{} min", trim_float(s / 60.0))
    } else {
        format!("{} s", trim_float(s))
    }
}

/// Render the report.
pub fn render(ctx: &ReportContext<'_>, runs: &[SimResult]) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        h,
        "<title>railyard: {} on {}</title>",
        esc(ctx.trace),
        esc(ctx.cluster)
    );
    h.push_str(
        "<style>body{font-family:sans-serif;margin:24px;max-width:1340px;color:#222}\
         table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}\
         th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}\
         .plots{display:flex;flex-wrap:wrap;gap:12px}.plots svg{border:1px solid #eee;width:calc(50% - 8px);min-width:480px;height:auto}\
         p.note{color:#555;font-size:13px;max-width:1000px}</style></head><body>\n",
    );
    let _ = writeln!(
        h,
        "<h1>railyard simulation</h1><p>Trace <b>{}</b> ({} jobs{}) on cluster <b>{}</b> ({} GPUs). {}</p>",
        esc(ctx.trace),
        fmt_count(runs.first().map_or(0, |r| r.summary.jobs) as u64),
        if ctx.skipped_rows > 0 {
            format!(", {} unreadable rows skipped", fmt_count(ctx.skipped_rows as u64))
        } else {
            String::new()
        },
        esc(ctx.cluster),
        fmt_count(ctx.gpus),
        esc(&ctx.network)
    );
    h.push_str("<table><tr><th>policy</th><th>completed</th><th>failed</th><th>unfinished</th><th>avg JCT</th><th>p50 JCT</th><th>p99 JCT</th><th>avg wait</th><th>p99 wait</th><th>GPU util</th><th>makespan</th><th>net slowdown</th><th>fragmentation</th><th>preemptions</th></tr>\n");
    for r in runs {
        let s = &r.summary;
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{}</td><td>{:.3}×</td><td>{:.1}%</td><td>{}</td></tr>",
            esc(&s.policy),
            fmt_count(s.completed as u64),
            fmt_count(s.failed as u64),
            fmt_count(s.unfinished as u64),
            hours(s.avg_jct_s),
            hours(s.p50_jct_s),
            hours(s.p99_jct_s),
            hours(s.avg_wait_s),
            hours(s.p99_wait_s),
            s.gpu_utilization * 100.0,
            hours(s.makespan_s),
            s.avg_network_slowdown,
            s.fragmentation * 100.0,
            fmt_count(s.preemptions)
        );
    }
    h.push_str("</table>\n<div class=\"plots\">\n");
    let util: Vec<Series> = runs
        .iter()
        .map(|r| Series {
            label: r.summary.policy.clone(),
            points: r.utilization.clone(),
        })
        .collect();
    h.push_str(&line_chart(
        "GPU utilisation over time",
        "hours since first arrival",
        "busy GPUs (share)",
        &util,
        false,
        Some((0.0, 1.0)),
    ));
    let cdf = |f: &dyn Fn(&SimResult) -> sim::Cdf| -> Vec<Series> {
        runs.iter()
            .map(|r| Series {
                label: r.summary.policy.clone(),
                points: f(r).points,
            })
            .collect()
    };
    h.push_str(&line_chart(
        "Job completion time (CDF)",
        "JCT, seconds (log)",
        "fraction of jobs",
        &cdf(&|r| r.jct_cdf(200)),
        true,
        Some((0.0, 1.0)),
    ));
    h.push_str(&line_chart(
        "Wait before first start (CDF)",
        "wait, seconds (log; zero waits not shown)",
        "fraction of jobs",
        &cdf(&|r| r.wait_cdf(200)),
        true,
        Some((0.0, 1.0)),
    ));
    h.push_str(&line_chart(
        "Network slowdown of multi-node jobs (CDF)",
        "run time ÷ ideal run time",
        "fraction of multi-node jobs",
        &cdf(&|r| r.slowdown_cdf(200)),
        false,
        Some((0.0, 1.0)),
    ));
    let groups: Vec<String> = ctx
        .tier_names
        .iter()
        .enumerate()
        .map(|(t, _)| format!("tier {t}"))
        .collect();
    let bars: Vec<(String, Vec<f64>)> = runs
        .iter()
        .map(|r| {
            (
                r.summary.policy.clone(),
                r.summary.tier_span.iter().map(|&n| n as f64).collect(),
            )
        })
        .collect();
    h.push_str(&bar_chart(
        "Highest switch tier crossed by multi-node jobs",
        "tier (0 = one leaf)",
        "jobs",
        &groups,
        &bars,
    ));
    h.push_str("</div>\n");
    let _ = writeln!(
        h,
        "<p class=\"note\">Tiers: {}. JCT = completion − submission; wait = first start − submission. \
         Network slowdown = actual run time ÷ trace duration for completed multi-node jobs: the communicating share of each step \
         stretches by ideal ÷ achieved bus bandwidth, recomputed whenever the set of running multi-node jobs changes. \
         Fragmentation = time-averaged share of GPUs that were free while jobs waited and none of the smallest waiting jobs fit.</p>",
        ctx.tier_names
            .iter()
            .enumerate()
            .map(|(t, n)| format!("{t} = {}", esc(n)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    h.push_str("</body></html>\n");
    h
}
