//! The run's conclusion in a sentence each, computed from the results: which mode is best for
//! multi-node jobs and for all jobs, by how much (average and p99 JCT, GPU-hours) against the
//! run's first mode (or the runner-up when the first is best), and the bound no placement can
//! beat (the best mode with the network off). Ties are said as ties. Text and HTML both print
//! these sentences.

use sim::engine::SimResult;

use crate::fmt::{distinct, durations, fmt_count};

/// One comparison's figures of a run: average and p99 JCT (s) and GPU-hours.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Figures {
    avg_s: f64,
    p99_s: f64,
    gpu_hours: f64,
}

/// Which jobs a sentence is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Jobs {
    MultiNode,
    All,
}

impl Jobs {
    fn figures(self, r: &SimResult) -> Figures {
        let s = &r.summary;
        let gpu_seconds: f64 = r
            .jobs
            .iter()
            .filter(|j| self == Jobs::All || j.nodes > 1)
            .map(|j| j.gpu_seconds)
            .sum();
        let (avg_s, p99_s) = match self {
            Jobs::MultiNode => (s.avg_multi_node_jct_s, s.p99_multi_node_jct_s),
            Jobs::All => (s.avg_jct_s, s.p99_jct_s),
        };
        Figures {
            avg_s,
            p99_s,
            gpu_hours: gpu_seconds / 3600.0,
        }
    }

    fn completed(self, r: &SimResult) -> usize {
        match self {
            Jobs::MultiNode => r.summary.multi_node_completed,
            Jobs::All => r.summary.completed,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Jobs::MultiNode => "multi-node jobs",
            Jobs::All => "all jobs",
        }
    }
}

/// The indices of the best runs for `jobs`, best first: the lowest average JCT, then p99, then
/// GPU-hours; runs with the same three figures (within 0.01%) tie (the first group is the best, with ties).
pub fn best_multi_node(runs: &[SimResult]) -> Vec<usize> {
    ranked(runs, Jobs::MultiNode)
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// Runs grouped by equal figures, best group first, each group in run order. Figures are
/// compared in order (average, p99, GPU-hours), each equal within 0.01% before the next decides.
fn ranked(runs: &[SimResult], jobs: Jobs) -> Vec<Vec<usize>> {
    let figures: Vec<Figures> = runs.iter().map(|r| jobs.figures(r)).collect();
    let better = |a: Figures, b: Figures| {
        for (x, y) in [
            (a.avg_s, b.avg_s),
            (a.p99_s, b.p99_s),
            (a.gpu_hours, b.gpu_hours),
        ] {
            if !crate::fmt::same(x, y) {
                return x < y;
            }
        }
        false
    };
    let mut left: Vec<usize> = (0..runs.len()).collect();
    let mut groups = Vec::new();
    while let Some(&first) = left.first() {
        let best =
            left.iter().copied().fold(
                first,
                |b, i| {
                    if better(figures[i], figures[b]) {
                        i
                    } else {
                        b
                    }
                },
            );
        let (group, rest): (Vec<usize>, Vec<usize>) =
            left.iter().partition(|&&i| same(figures[i], figures[best]));
        groups.push(group);
        left = rest;
    }
    groups
}

/// Equal figures, within [`crate::fmt::SAME_WITHIN`].
fn same(a: Figures, b: Figures) -> bool {
    let close = crate::fmt::same;
    close(a.avg_s, b.avg_s) && close(a.p99_s, b.p99_s) && close(a.gpu_hours, b.gpu_hours)
}

/// The headline sentences: the best mode for multi-node jobs (when the trace has any) and for
/// all jobs, and the bound: `bound` is the best multi-node mode rerun with the network off;
/// `no_network` says every run already had it off.
pub fn sentences(runs: &[SimResult], bound: Option<&SimResult>, no_network: bool) -> Vec<String> {
    let mut out = Vec::new();
    if runs.is_empty() {
        return out;
    }
    if runs.iter().all(|r| r.summary.completed == 0) {
        out.push(format!(
            "No job completed under {}; why each did not is counted below.",
            if runs.len() == 1 {
                "this mode"
            } else {
                "any mode"
            }
        ));
        return out;
    }
    let has_multi_node = runs.iter().any(|r| r.summary.multi_node_completed > 0);
    if has_multi_node {
        out.push(best_sentence(runs, Jobs::MultiNode));
    }
    out.push(best_sentence(runs, Jobs::All));
    out.push(bound_sentence(runs, bound, no_network, has_multi_node));
    out
}

/// `a, b and c`.
fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Two durations in one unit, printed apart: `15.6 min against 17.9 min`.
fn two_durations(a: f64, b: f64) -> (String, String) {
    let (unit, cells) = durations(&[a, b]);
    (
        format!("{} {unit}", cells[0]),
        format!("{} {unit}", cells[1]),
    )
}

/// The change from `reference` to `value` in percent, signed: `-12.8%`.
fn change(value: f64, reference: f64) -> String {
    if crate::fmt::same(value, reference) {
        return "the same".to_owned();
    }
    if reference == 0.0 {
        return "n/a".to_owned();
    }
    let pct = (value - reference) / reference * 100.0;
    let decimals = if pct.abs() >= 0.05 || pct == 0.0 {
        1
    } else {
        3
    };
    format!(
        "{}{:.decimals$}%",
        if pct >= 0.0 { "+" } else { "-" },
        pct.abs()
    )
}

fn best_sentence(runs: &[SimResult], jobs: Jobs) -> String {
    let groups = ranked(runs, jobs);
    let best = &groups[0];
    let name = |i: usize| runs[i].summary.policy.as_str();
    let n = jobs.completed(&runs[best[0]]);
    let about = format!("For {} ({} completed)", jobs.name(), fmt_count(n as u64));
    let f = jobs.figures(&runs[best[0]]);
    if groups.len() == 1 {
        let (avg, p99) = two_durations(f.avg_s, f.p99_s);
        let all = if runs.len() == 1 {
            format!("{} gives", name(0))
        } else {
            format!("all {} modes tie", runs.len())
        };
        return format!(
            "{about}, {all}: avg JCT {avg}, p99 JCT {p99}, {} GPU-hours.",
            distinct(&[f.gpu_hours])[0]
        );
    }
    let winners: Vec<&str> = best.iter().map(|&i| name(i)).collect();
    let who = if winners.len() == 1 {
        format!("{} is best", winners[0])
    } else {
        format!("{} tie for best", and_list(&winners))
    };
    // Against the run's first mode, or the runner-up when the first is among the best.
    let reference = if best.contains(&0) { groups[1][0] } else { 0 };
    let r = jobs.figures(&runs[reference]);
    let (avg, avg_ref) = two_durations(f.avg_s, r.avg_s);
    let (p99, p99_ref) = two_durations(f.p99_s, r.p99_s);
    let gpu_h = distinct(&[f.gpu_hours, r.gpu_hours]);
    format!(
        "{about}, {who}: avg JCT {avg} against {avg_ref} under {} ({}), p99 JCT {p99} against {p99_ref} ({}), {} GPU-hours against {} ({}).",
        name(reference),
        change(f.avg_s, r.avg_s),
        change(f.p99_s, r.p99_s),
        gpu_h[0],
        gpu_h[1],
        change(f.gpu_hours, r.gpu_hours),
    )
}

fn bound_sentence(
    runs: &[SimResult],
    bound: Option<&SimResult>,
    no_network: bool,
    multi_node: bool,
) -> String {
    if no_network {
        return "Bound: every run here has the network off (--no-network), so these figures are what no placement can beat.".to_owned();
    }
    let Some(b) = bound else {
        return "Bound: rerun with --no-network for the figures no placement can beat.".to_owned();
    };
    let jobs = if multi_node {
        Jobs::MultiNode
    } else {
        Jobs::All
    };
    let best = ranked(runs, jobs)[0][0];
    let (f, z) = (jobs.figures(&runs[best]), jobs.figures(b));
    let (avg_z, avg) = two_durations(z.avg_s, f.avg_s);
    let (p99_z, p99) = two_durations(z.p99_s, f.p99_s);
    let name = &runs[best].summary.policy;
    let above = if crate::fmt::same(f.avg_s, z.avg_s) && crate::fmt::same(f.p99_s, z.p99_s) {
        format!("with the network, its {avg} and {p99} are the bound's")
    } else {
        format!(
            "with the network, its {avg} and {p99} are {} and {} above the bound",
            change(f.avg_s, z.avg_s).trim_start_matches('+'),
            change(f.p99_s, z.p99_s).trim_start_matches('+'),
        )
    };
    format!(
        "Bound: with the network off (--no-network), {name} gives {} avg JCT {avg_z} and p99 JCT {p99_z}, which no placement can beat; {above}.",
        jobs.name(),
    )
}
