//! The simulation report: one self-contained HTML page (inline CSS and SVG, no scripts, no
//! network) with the headline table and plots per policy.

use std::fmt::Write;

use sim::engine::SimResult;

use crate::fmt::{fmt_count, sig3};
use crate::svg::{bar_chart, esc, line_chart, Marker, Series};

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
    /// Run metadata shown at the foot of the page: (what, value), e.g. ("railyard", "0.1.0"),
    /// ("command", …), ("seed", "0").
    pub meta: Vec<(String, String)>,
    /// How long the trace's jobs waited in the scheduler that really ran them (seconds), for
    /// traces that say (Slurm, Kueue); empty otherwise.
    pub observed_waits: &'a [f64],
}

/// A duration with three significant figures and a unit people read (s, min, h).
fn hours(s: f64) -> String {
    if s >= 3600.0 {
        format!("{} h", sig3(s / 3600.0))
    } else if s >= 60.0 {
        format!("{} min", sig3(s / 60.0))
    } else {
        format!("{} s", sig3(s))
    }
}

const STYLE: &str = "<style>body{font-family:sans-serif;margin:24px auto;max-width:1600px;padding:0 16px;color:#222}\
    h1{margin:0 0 8px}h2{font-size:18px;margin:24px 0 6px}\
    .scroll{overflow-x:auto}table{border-collapse:collapse;margin:8px 0;font-size:14px}\
    td,th{border:1px solid #ccc;padding:4px 7px;text-align:right}td{white-space:nowrap}\
    th{background:#f0f0f0;font-weight:600;vertical-align:bottom;font-size:13px}td:first-child,th:first-child{text-align:left}\
    .plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(600px,1fr));gap:12px}\
    .plots svg{border:1px solid #eee;width:100%;height:auto}\
    p.note{color:#555;font-size:13px;max-width:1100px}dl.meta{font-size:13px;color:#444}\
    dl.meta dt{font-weight:600;float:left;clear:left;width:110px}dl.meta dd{margin:0 0 4px 120px;font-family:monospace;word-break:break-all}</style>";

/// Render the report.
pub fn render(ctx: &ReportContext<'_>, runs: &[SimResult]) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    let _ = write!(
        h,
        "<title>railyard: {} on {}</title>",
        esc(ctx.trace),
        esc(ctx.cluster)
    );
    h.push_str(STYLE);
    h.push_str("</head><body>\n");
    let window = runs.first().map_or(0.0, |r| r.summary.arrival_window_s);
    let _ = writeln!(
        h,
        "<h1>railyard simulation</h1><p>Trace <b>{}</b> ({} jobs arriving over {}{}) on cluster <b>{}</b> ({} GPUs). {}</p>",
        esc(ctx.trace),
        fmt_count(runs.first().map_or(0, |r| r.summary.jobs) as u64),
        hours(window),
        if ctx.skipped_rows > 0 {
            format!(", {} unreadable rows skipped", fmt_count(ctx.skipped_rows as u64))
        } else {
            String::new()
        },
        esc(ctx.cluster),
        fmt_count(ctx.gpus),
        esc(&ctx.network)
    );
    h.push_str("<div class=\"scroll\"><table><tr><th>policy</th><th>com&shy;pleted</th><th>failed</th><th>unfin&shy;ished</th><th>avg JCT</th><th>p50 JCT</th><th>p99 JCT</th><th>avg wait</th><th>p99 wait</th><th title=\"busy GPU share from the first to the last arrival\">GPU util, arrivals</th><th title=\"busy GPU share from the first arrival to the last completion\">GPU util, makespan</th><th>make&shy;span</th><th>net slow&shy;down</th><th>frag&shy;men&shy;tation</th><th title=\"Weng et al., ATC 2023: expected unallocated GPU capacity the job mix of the trace cannot use, share of all GPUs, time-averaged\">GPU frag&shy;men&shy;tation (Weng)</th><th>pre&shy;emp&shy;tions</th><th title=\"work since the last checkpoint, and restarts, lost to preemption and node failures\">GPU-h lost</th></tr>\n");
    for r in runs {
        let s = &r.summary;
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{:.1}%</td><td>{}</td><td>{:.3}×</td><td>{:.1}%</td><td>{:.1}%</td><td>{}</td><td>{}</td></tr>",
            esc(&s.policy),
            fmt_count(s.completed as u64),
            fmt_count(s.failed as u64),
            fmt_count(s.unfinished as u64),
            hours(s.avg_jct_s),
            hours(s.p50_jct_s),
            hours(s.p99_jct_s),
            hours(s.avg_wait_s),
            hours(s.p99_wait_s),
            s.gpu_utilization_arrivals * 100.0,
            s.gpu_utilization * 100.0,
            hours(s.makespan_s),
            s.avg_network_slowdown,
            s.fragmentation * 100.0,
            s.weng_fragmentation * 100.0,
            fmt_count(s.preemptions),
            sig3(s.lost_gpu_seconds / 3600.0)
        );
    }
    if !ctx.observed_waits.is_empty() {
        let w = sim::WaitStats::of(ctx.observed_waits);
        let _ = writeln!(
            h,
            "<tr class=\"observed\"><td>observed (the trace's own scheduler)</td><td>{}</td><td></td><td></td><td></td><td></td><td></td><td>{}</td><td>{}</td><td></td><td></td><td></td><td></td><td></td><td></td><td></td><td></td></tr>",
            fmt_count(w.jobs as u64),
            hours(w.avg_s),
            hours(w.p99_s)
        );
    }
    h.push_str("</table></div>\n");
    if runs.iter().any(|r| r.summary.failures.is_some()) {
        h.push_str("<h2>Failures and checkpoints</h2>\n<div class=\"scroll\"><table><tr><th>policy</th><th>node failures</th><th>jobs stopped by failures</th><th>GPU-h lost to preemption</th><th>GPU-h lost to failures</th></tr>\n");
        for r in runs {
            if let Some(f) = &r.summary.failures {
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&r.summary.policy),
                    fmt_count(f.node_failures),
                    fmt_count(f.jobs_stopped_by_failures),
                    sig3(f.lost_gpu_seconds_preemption / 3600.0),
                    sig3(f.lost_gpu_seconds_failure / 3600.0)
                );
            }
        }
        h.push_str("</table></div>\n");
    }
    h.push_str("<div class=\"plots\">\n");
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
        &[Marker {
            x: window / 3600.0,
            label: "last arrival".to_owned(),
        }],
    ));
    let cdf =
        |f: &dyn Fn(&SimResult) -> sim::Cdf, n: &dyn Fn(&SimResult) -> usize| -> Vec<Series> {
            runs.iter()
                .map(|r| Series {
                    label: format!("{} (n={})", r.summary.policy, fmt_count(n(r) as u64)),
                    points: f(r).points,
                })
                .collect()
        };
    let completed = |r: &SimResult| r.jobs.iter().filter(|j| j.end_s.is_some()).count();
    let started = |r: &SimResult| r.jobs.iter().filter(|j| j.start_s.is_some()).count();
    let multi = |r: &SimResult| {
        r.jobs
            .iter()
            .filter(|j| j.nodes > 1 && j.network_slowdown.is_some())
            .count()
    };
    h.push_str(&line_chart(
        "Job completion time (CDF)",
        "JCT, seconds (log)",
        "fraction of completed jobs",
        &cdf(&|r| r.jct_cdf(200), &completed),
        true,
        Some((0.0, 1.0)),
        &[],
    ));
    h.push_str(&line_chart(
        "Wait before first start (CDF)",
        "wait, seconds (log; zero waits not shown)",
        "fraction of started jobs",
        &{
            let mut series = cdf(&|r| r.wait_cdf(200), &started);
            if !ctx.observed_waits.is_empty() {
                series.push(Series {
                    label: format!(
                        "observed (n={})",
                        fmt_count(ctx.observed_waits.len() as u64)
                    ),
                    points: sim::Cdf::of(ctx.observed_waits, 200).points,
                });
            }
            series
        },
        true,
        Some((0.0, 1.0)),
        &[],
    ));
    h.push_str(&line_chart(
        "Network slowdown of multi-node jobs (CDF)",
        "run time ÷ ideal run time",
        "fraction of multi-node jobs",
        &cdf(&|r| r.slowdown_cdf(200), &multi),
        false,
        Some((0.0, 1.0)),
        &[],
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
    queue_table(&mut h, runs);
    if !ctx.meta.is_empty() {
        h.push_str("<h2>Run</h2><dl class=\"meta\">");
        for (k, v) in &ctx.meta {
            let _ = write!(h, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
        }
        h.push_str("</dl>\n");
    }
    h.push_str("</body></html>\n");
    h
}

/// Per-queue figures: jobs and GPU-hours (of the first policy), then average wait and JCT under
/// each policy.
fn queue_table(h: &mut String, runs: &[SimResult]) {
    let Some(first) = runs.first() else {
        return;
    };
    let per: Vec<Vec<sim::engine::QueueSummary>> = runs.iter().map(SimResult::per_queue).collect();
    h.push_str("<h2>Queues</h2><div class=\"scroll\"><table><tr><th>queue</th><th>jobs</th>");
    let _ = write!(h, "<th>GPU-h<br>{}</th>", esc(&first.summary.policy));
    for r in runs {
        let _ = write!(
            h,
            "<th>avg wait<br>{}</th>",
            esc(&r.summary.policy).replace('+', "+<wbr>")
        );
    }
    for r in runs {
        let _ = write!(
            h,
            "<th>avg JCT<br>{}</th>",
            esc(&r.summary.policy).replace('+', "+<wbr>")
        );
    }
    for r in runs {
        let _ = write!(
            h,
            "<th>pre&shy;empted<br>{}</th>",
            esc(&r.summary.policy).replace('+', "+<wbr>")
        );
    }
    h.push_str("</tr>\n");
    for (k, q) in per[0].iter().enumerate() {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td>",
            esc(&q.queue),
            fmt_count(q.jobs as u64),
            sig3(q.gpu_hours)
        );
        for p in &per {
            let _ = write!(
                h,
                "<td>{}</td>",
                p.get(k).map_or_else(String::new, |x| hours(x.avg_wait_s))
            );
        }
        for p in &per {
            let _ = write!(
                h,
                "<td>{}</td>",
                p.get(k).map_or_else(String::new, |x| hours(x.avg_jct_s))
            );
        }
        for p in &per {
            let _ = write!(
                h,
                "<td>{}</td>",
                p.get(k)
                    .map_or_else(String::new, |x| fmt_count(x.preemptions))
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n");
    queue_share_plots(h, runs);
}

/// With the user's queues: each leaf queue's share of the GPUs over time, one chart per run.
fn queue_share_plots(h: &mut String, runs: &[SimResult]) {
    let with_queues: Vec<(&SimResult, &sim::engine::QueueRun)> = runs
        .iter()
        .filter_map(|r| Some((r, r.queues.as_ref()?)))
        .collect();
    if with_queues.is_empty() {
        return;
    }
    h.push_str("<div class=\"plots\">\n");
    for (r, q) in with_queues {
        let series: Vec<Series> = q
            .gpu_share
            .iter()
            .map(|(name, points)| Series {
                label: name.clone(),
                points: points.clone(),
            })
            .collect();
        h.push_str(&line_chart(
            &format!(
                "GPU share by queue: {}, {} queue rules",
                r.summary.policy, q.rules
            ),
            "hours since first arrival",
            "GPUs held (share of the cluster)",
            &series,
            false,
            Some((0.0, 1.0)),
            &[],
        ));
    }
    h.push_str("</div>\n");
}
