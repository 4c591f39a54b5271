//! The simulation report: one self-contained HTML page (inline CSS and SVG, no scripts, no
//! network) with the headline table and plots per policy.

use std::fmt::Write;

use sim::engine::SimResult;

use crate::columns::{policy_columns, Column};
use crate::fmt::{count_of, fmt_count, sig3};
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
    /// The best multi-node mode rerun with the network off, for the headline's bound.
    pub bound: Option<&'a SimResult>,
    /// Every run had the network off (`--no-network`).
    pub no_network: bool,
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
    .headline{border-left:4px solid #0072B2;background:#f4f8fb;padding:4px 14px;margin:12px 0;max-width:1100px}.headline p{margin:8px 0;font-size:15px}\
    .scroll{overflow-x:auto}table{border-collapse:collapse;margin:8px 0;font-size:14px}\
    td,th{border:1px solid #ccc;padding:4px 7px;text-align:right}td{white-space:nowrap}\
    th{background:#f0f0f0;font-weight:600;vertical-align:bottom;font-size:13px}td:first-child,th:first-child{text-align:left}\
    .plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(600px,1fr));gap:12px}\
    .plots svg{border:1px solid #eee;width:100%;height:auto}\
    @media (max-width:1000px){table{font-size:12px}td,th{padding:3px 5px}}\
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
        "<h1>railyard simulation</h1><p>Trace <b>{}</b> ({} arriving over {}{}) on cluster <b>{}</b> ({} GPUs). {}</p>",
        esc(ctx.trace),
        count_of(runs.first().map_or(0, |r| r.summary.jobs), "job"),
        hours(window),
        if ctx.skipped_rows > 0 {
            format!(", {} skipped", count_of(ctx.skipped_rows, "unreadable row"))
        } else {
            String::new()
        },
        esc(ctx.cluster),
        fmt_count(ctx.gpus),
        esc(&ctx.network)
    );
    h.push_str("<div class=\"headline\">");
    for line in crate::headline::sentences(runs, ctx.bound, ctx.no_network) {
        let _ = write!(h, "<p>{}</p>", esc(&line));
    }
    h.push_str("</div>\n");
    // The text table's columns first, then the wide ones, each table narrow enough not to
    // scroll at 900 px.
    let columns = policy_columns(runs);
    let (main, more): (Vec<&Column>, Vec<&Column>) = columns.iter().partition(|c| !c.wide);
    let observed = (!ctx.observed_waits.is_empty()).then(|| sim::WaitStats::of(ctx.observed_waits));
    columns_table(&mut h, &main, None);
    // The wide columns in two tables: waits and utilisation, then placement and lost work.
    let split = more
        .iter()
        .position(|c| c.header == "frag")
        .unwrap_or(more.len());
    h.push_str("<h2>Waits and utilisation</h2>\n");
    columns_table(
        &mut h,
        &[&[&columns[0]], &more[..split]].concat(),
        observed.as_ref(),
    );
    h.push_str("<h2>Placement and lost work</h2>\n");
    columns_table(&mut h, &[&[&columns[0]], &more[split..]].concat(), None);
    reasons_table(&mut h, runs);
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
    let (util, _) = chart_series(
        runs.iter()
            .map(|r| (r.summary.policy.clone(), r.utilization.clone(), None))
            .collect(),
        "busy GPUs (share)",
    );
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
        |f: &dyn Fn(&SimResult) -> sim::Cdf, n: &dyn Fn(&SimResult) -> usize| -> Vec<Counted> {
            runs.iter()
                .map(|r| (r.summary.policy.clone(), f(r).points, Some(n(r))))
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
    let (jct, y) = chart_series(
        cdf(&|r| r.jct_cdf(200), &completed),
        "fraction of completed jobs",
    );
    h.push_str(&line_chart(
        "Job completion time (CDF)",
        "JCT, seconds (log)",
        &y,
        &jct,
        true,
        Some((0.0, 1.0)),
        &[],
    ));
    let mut waits = cdf(&|r| r.wait_cdf(200), &started);
    if !ctx.observed_waits.is_empty() {
        waits.push((
            "observed".to_owned(),
            sim::Cdf::of(ctx.observed_waits, 200).points,
            Some(ctx.observed_waits.len()),
        ));
    }
    let (waits, y) = chart_series(waits, "fraction of started jobs");
    h.push_str(&line_chart(
        "Wait before first start (CDF)",
        "wait, seconds (log; zero waits not shown)",
        &y,
        &waits,
        true,
        Some((0.0, 1.0)),
        &[],
    ));
    let (slow, y) = chart_series(
        cdf(&|r| r.slowdown_cdf(200), &multi),
        "fraction of multi-node jobs",
    );
    h.push_str(&line_chart(
        "Network slowdown of multi-node jobs (CDF)",
        "run time ÷ ideal run time",
        &y,
        &slow,
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
    let mut bars: Vec<(String, Vec<f64>)> = Vec::new();
    for r in runs {
        let counts: Vec<f64> = r.summary.tier_span.iter().map(|&n| n as f64).collect();
        match bars.iter_mut().find(|(_, c)| coincide_bars(c, &counts)) {
            Some((label, _)) => *label = format!("{label} = {}", r.summary.policy),
            None => bars.push((r.summary.policy.clone(), counts)),
        }
    }
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

/// A series before drawing: its label, its points and how many jobs it counts (if it does).
type Counted = (String, Vec<(f64, f64)>, Option<usize>);

/// A chart's series: those with identical points (and counts) drawn once, named together
/// (`a = b`); the count of each said once in the axis label when all have the same, else in
/// each legend entry. Returns the series and the axis label.
fn chart_series(series: Vec<Counted>, y_label: &str) -> (Vec<Series>, String) {
    let mut merged: Vec<Counted> = Vec::new();
    for (label, points, n) in series {
        match merged
            .iter_mut()
            .find(|(_, p, m)| *m == n && coincide(p, &points))
        {
            Some((l, _, _)) => *l = format!("{l} = {label}"),
            None => merged.push((label, points, n)),
        }
    }
    let first = merged.first().and_then(|s| s.2);
    let one_n = merged.iter().all(|s| s.2 == first);
    let y = match first {
        Some(n) if one_n => format!("{y_label} (n = {})", fmt_count(n as u64)),
        _ => y_label.to_owned(),
    };
    let series = merged
        .into_iter()
        .map(|(label, points, n)| Series {
            label: match n {
                Some(n) if !one_n => format!("{label} (n = {})", fmt_count(n as u64)),
                _ => label,
            },
            points,
        })
        .collect();
    (series, y)
}

/// Whether two runs' bars would look the same (counts within [`crate::fmt::SAME_WITHIN`]).
fn coincide_bars(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| crate::fmt::same(*x, *y))
}

/// Whether two series would be drawn on one another: the same number of points, each the
/// same within [`crate::fmt::SAME_WITHIN`].
fn coincide(a: &[(f64, f64)], b: &[(f64, f64)]) -> bool {
    let same = crate::fmt::same;
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(p, q)| same(p.0, q.0) && same(p.1, q.1))
}

/// A table of columns, one row per run (a line break between a header's word groups), and an
/// `observed` row under the wait columns when the trace says how long its jobs waited.
fn columns_table(h: &mut String, columns: &[&Column], observed: Option<&sim::WaitStats>) {
    h.push_str("<div class=\"scroll\"><table><tr>");
    for c in columns {
        let _ = write!(h, "<th>{}</th>", esc(&c.header).replace('\n', "<br>"));
    }
    h.push_str("</tr>\n");
    let rows = columns.first().map_or(0, |c| c.cells.len());
    for k in 0..rows {
        h.push_str("<tr>");
        for (i, c) in columns.iter().enumerate() {
            let cell = esc(&c.cells[k]);
            // Policy names break after a `+`, so the first column stays narrow.
            let cell = if i == 0 {
                cell.replace('+', "+<wbr>")
            } else {
                cell
            };
            let _ = write!(h, "<td>{cell}</td>");
        }
        h.push_str("</tr>\n");
    }
    if let Some(w) = observed {
        h.push_str("<tr class=\"observed\"><td>observed (the trace's own scheduler)</td>");
        for c in &columns[1..] {
            let cell = match c.header.split(' ').next() {
                Some("avg\nwait") => hours(w.avg_s),
                Some("p99\nwait") => hours(w.p99_s),
                _ => String::new(),
            };
            let _ = write!(h, "<td>{cell}</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n");
}

/// The jobs that did not complete, by run, outcome and reason (nothing when all completed).
fn reasons_table(h: &mut String, runs: &[SimResult]) {
    if runs.iter().all(|r| r.summary.not_run_reasons.is_empty()) {
        return;
    }
    h.push_str("<h2>Jobs that did not complete, by reason</h2>\n<table class=\"reasons\"><tr><th>policy</th><th>jobs</th><th>outcome</th><th>reason</th></tr>\n");
    for r in runs {
        for c in &r.summary.not_run_reasons {
            let outcome = match c.outcome {
                sim::engine::Outcome::Failed => "failed",
                _ => "unfinished",
            };
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{outcome}</td><td>{}</td></tr>",
                esc(&r.summary.policy).replace('+', "+<wbr>"),
                fmt_count(c.jobs as u64),
                esc(&c.reason)
            );
        }
    }
    h.push_str("</table>\n");
}

/// Per-queue figures, only with more than one queue: a row per queue and run (queue first), so
/// the table grows down, not sideways, with the number of runs.
fn queue_table(h: &mut String, runs: &[SimResult]) {
    let per: Vec<Vec<sim::engine::QueueSummary>> = runs.iter().map(SimResult::per_queue).collect();
    if per.iter().all(|p| p.len() <= 1) {
        return;
    }
    h.push_str("<h2>Queues</h2><table><tr><th>queue</th><th>policy</th><th>jobs</th><th>completed</th><th>GPU-h</th><th>avg wait</th><th>avg JCT</th><th>preempted</th></tr>\n");
    let queues: std::collections::BTreeSet<&str> = per
        .iter()
        .flat_map(|p| p.iter().map(|q| q.queue.as_str()))
        .collect();
    for queue in queues {
        for (r, p) in runs.iter().zip(&per) {
            let Some(q) = p.iter().find(|q| q.queue == queue) else {
                continue;
            };
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(queue),
                esc(&r.summary.policy).replace('+', "+<wbr>"),
                fmt_count(q.jobs as u64),
                fmt_count(q.completed as u64),
                sig3(q.gpu_hours),
                hours(q.avg_wait_s),
                hours(q.avg_jct_s),
                fmt_count(q.preemptions)
            );
        }
    }
    h.push_str("</table>\n");
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
