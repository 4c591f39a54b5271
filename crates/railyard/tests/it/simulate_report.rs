//! `simulate`'s report says its conclusion: the headline and the 120-column table (snapshots),
//! the reasons jobs did not run (issue 30, defect 1), and the HTML page's series, legends and
//! headers.

use serde_json::Value;

use crate::{ok, railyard, temp_dir};

/// 300 `llm` jobs offered to fat-tree-k8 at load 0.9 (`trace synth --profile llm --jobs 300
/// --seed 3 --cluster preset:fat-tree-k8 --load 0.9`).
const LLM_300: &str = "tests/fixtures/traces/llm-fat-tree-k8-300.csv";
const MODES: &str = "fifo,fifo+preferred:tier0,best-effort,best-effort+preferred:tier0+network";

fn compare(extra: &[&str]) -> String {
    let mut args = vec![
        "simulate",
        "--cluster",
        "preset:fat-tree-k8",
        "--trace",
        LLM_300,
        "--compare",
        MODES,
    ];
    args.extend(extra);
    ok(&args)
}

#[test]
fn the_headline_and_the_table_fit_120_columns() {
    let text = compare(&[]);
    for line in text.lines() {
        assert!(
            line.chars().count() <= 120,
            "{} wide: {line}",
            line.chars().count()
        );
    }
    insta::assert_snapshot!(text);
}

#[test]
fn wide_adds_the_rest() {
    let text = compare(&["-o", "wide"]);
    for header in ["unfinished", "p50", "wait", "makespan", "(Weng)", "by tier"] {
        assert!(text.contains(header), "{header} missing:\n{text}");
    }
    insta::assert_snapshot!(text);
}

/// Defect 1 of issue 30: KAI's default queues (`default-queue`, quota 0) over a `trace synth`
/// trace, whose jobs are all non-preemptible, fail every job; the reason is in the text, the
/// JSON and `-v`, counted.
#[test]
fn kai_default_queues_fail_every_job_with_its_reason() {
    let trace = temp_dir("kai-default-queues").join("trace.csv");
    let trace = trace.to_str().unwrap();
    ok(&[
        "trace",
        "synth",
        "--profile",
        "llm",
        "--jobs",
        "2000",
        "--rate",
        "500",
        "--out",
        trace,
    ]);
    let args = [
        "simulate",
        "--cluster",
        "preset:fat-tree-k8",
        "--trace",
        trace,
        "--queues",
        "tests/fixtures/kai/default-queues.yaml",
        "--queue-map",
        "tests/fixtures/kai/default-queue-map.yaml",
    ];
    let reason = "queue default-queue has gpu quota 0 for non-preemptible jobs";
    let text = ok(&args);
    assert!(
        text.contains(&format!("best-effort: 2,000 failed: {reason} (2,000)\n")),
        "{text}"
    );
    let json: Value = serde_json::from_str(&ok(&[&args[..], &["-o", "json"]].concat())).unwrap();
    assert_eq!(json["failed"], 2000);
    assert_eq!(json["not_run_reasons"][0]["reason"], reason);
    assert_eq!(json["not_run_reasons"][0]["jobs"], 2000);
    assert_eq!(json["not_run_reasons"][0]["outcome"], "Failed");
    let verbose = railyard(&[&["-v"], &args[..]].concat());
    let lines = verbose
        .stderr
        .lines()
        .filter(|l| {
            l.starts_with("debug: best-effort: job ") && l.ends_with(&format!("failed: {reason}"))
        })
        .count();
    assert_eq!(lines, 2000, "{}", verbose.stderr);
    let html = temp_dir("kai-default-queues-html").join("report.html");
    ok(&[&args[..], &["--out", html.to_str().unwrap()]].concat());
    let html = std::fs::read_to_string(html).unwrap();
    assert!(
        html.contains(&format!("<td>2,000</td><td>failed</td><td>{reason}</td>")),
        "no reason row"
    );
}

#[test]
fn the_page_states_its_conclusion_and_draws_coinciding_series_once() {
    let out = temp_dir("report-headline").join("report.html");
    compare(&["--out", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out).unwrap();
    let headline = html
        .find("<div class=\"headline\"><p>For multi-node jobs")
        .expect("headline");
    assert!(
        headline < html.find("<table").unwrap(),
        "the headline comes first"
    );
    // No soft hyphens in headers, n said once per chart, no per-queue table for one queue.
    assert!(!html.contains("&shy;"));
    assert_eq!(
        html.matches("n = 300").count(),
        2,
        "once in each of two charts of all jobs"
    );
    assert!(!html.contains("<h2>Queues</h2>"));
    // fifo and best-effort place this trace alike: one line, named together.
    assert!(
        html.contains("fifo = best-effort"),
        "coinciding series drawn once"
    );
}

/// Issue 30, defect 8: a count of one takes the singular ("1 jobs from …" before), in the text
/// header and the page's, and so does a skipped row.
#[test]
fn one_job_and_one_skipped_row_are_singular() {
    let dir = temp_dir("one-job");
    let trace = dir.join("one.csv");
    std::fs::write(
        &trace,
        "name,submit_s,duration_s,gpus\nj,0,60,8\nbad,0,60,eight\n",
    )
    .unwrap();
    let html = dir.join("report.html");
    let args = [
        "simulate",
        "--cluster",
        "preset:fat-tree-k8",
        "--skip-bad-rows",
        "--trace",
        trace.to_str().unwrap(),
    ];
    let text = ok(&args);
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("1 job from ") && first.ends_with("; 1 unreadable row skipped"),
        "{first}"
    );
    ok(&[&args[..], &["--out", html.to_str().unwrap()]].concat());
    let page = std::fs::read_to_string(html).unwrap();
    assert!(
        page.contains("(1 job arriving over "),
        "no singular in the page"
    );
    assert!(
        page.contains(", 1 unreadable row skipped)"),
        "no singular in the page"
    );
}
