//! `simulate`: determinism of JSON and HTML, bad rows, policies, bad input.

use serde_json::Value;

use crate::{fails, ok, temp_dir};

const SMALL: &str = "tests/fixtures/traces/small.csv";

#[test]
fn same_inputs_give_byte_identical_json_and_html() {
    let dir = temp_dir("sim-determinism");
    // The same command twice (the report path is part of the recorded command line).
    let run = |_tag: &str| {
        let report = dir.join("report.html");
        let json = ok(&[
            "simulate",
            "--cluster",
            "preset:philly-512",
            "--trace",
            SMALL,
            "--compare",
            "fifo,best-effort,fair-share,best-effort+required:tier0",
            "--output",
            "json",
            "--report",
            report.to_str().unwrap(),
        ]);
        (json, std::fs::read(report).unwrap())
    };
    let (j1, h1) = run("a");
    let (j2, h2) = run("b");
    assert_eq!(j1, j2);
    assert_eq!(h1, h2);
    let html = String::from_utf8(h1).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("<svg") && !html.contains("<script")
    );
    let v: Value = serde_json::from_str(&j1).unwrap();
    // How to reproduce it: the version and the command line, in the JSON and the page.
    assert_eq!(v["run"]["railyard_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["run"]["command"][0], "railyard");
    assert_eq!(v["run"]["command"][1], "simulate");
    assert!(html.contains("<dt>command</dt><dd>railyard simulate --cluster preset:philly-512"));
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    // Per-queue figures add up to the run's jobs.
    for r in runs {
        let queued: u64 = r["queues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["jobs"].as_u64().unwrap())
            .sum();
        assert_eq!(queued, r["jobs"].as_u64().unwrap());
        let u = r["gpu_utilization_arrivals"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&u), "{u}");
    }
    for r in runs {
        for f in [
            "jobs",
            "completed",
            "avg_jct_s",
            "p50_jct_s",
            "p99_jct_s",
            "avg_wait_s",
            "gpu_utilization",
            "makespan_s",
            "avg_network_slowdown",
            "multi_node_completed",
            "avg_multi_node_jct_s",
            "p99_multi_node_jct_s",
        ] {
            assert!(r.get(f).is_some(), "missing {f}");
        }
        assert_eq!(r["jobs"], 8);
        assert_eq!(r["completed"], 8);
    }
}

#[test]
fn bad_rows_stop_the_run_unless_skipped() {
    let line = fails(&[
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        "tests/fixtures/traces/bad-row.csv",
    ]);
    assert_eq!(
        line,
        "error: tests/fixtures/traces/bad-row.csv: line 3: num_gpus: expected a non-negative number, got \"many\" (pass --skip-bad-rows to count and skip such rows)"
    );
    let v: Value = serde_json::from_str(&ok(&[
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        "tests/fixtures/traces/bad-row.csv",
        "--skip-bad-rows",
        "--output",
        "json",
    ]))
    .unwrap();
    assert_eq!(v["skipped_rows"], 1);
    assert_eq!(v["jobs"], 2);
}

#[test]
fn bad_policies_and_levels_are_rejected() {
    let base = [
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        SMALL,
    ];
    // A bad policy is a bad flag value: a usage error (exit 2).
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        crate::usage_fails(&a)
    };
    assert!(with(&["--policy", "lifo"]).contains("unknown order `lifo`"));
    assert!(with(&["--policy", "fifo+required:tier7"]).contains("tier 7 has no level"));
    assert!(with(&["--policy", "fifo+required:rack"]).contains("unknown level `rack`"));
    assert!(with(&["--policy", "fifo+network+network"]).contains("optionally followed by +network"));
    assert!(with(&["--policy", "fifo+networked"]).contains("expected none, preferred:LEVEL"));
    assert!(with(&["--cycle-s=-1"]).contains("--cycle-s"));
    // Bad NCCL settings are usage errors (exit 2) naming the flag.
    for (extra, needle) in [
        (["--qps", "0"], "--qps"),
        (
            ["--nccl", "NCCL_FOO=1"],
            "--nccl: `NCCL_FOO=1`: unknown variable NCCL_FOO",
        ),
    ] {
        let mut a = base.to_vec();
        a.extend_from_slice(&extra);
        let r = crate::railyard(&a);
        assert_eq!(r.code, 2, "{extra:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{extra:?}: {}", r.stderr);
    }
}

#[test]
fn text_output_is_a_table_per_policy() {
    let text = ok(&[
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        SMALL,
        "--compare",
        "fifo,fair-share",
    ]);
    assert!(
        text.starts_with("8 jobs from tests/fixtures/traces/small.csv on philly-512 (512 GPUs)"),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("fifo") || l.starts_with("fair-share"))
            .count(),
        2
    );
}

#[test]
fn plus_network_policies_are_labelled_and_deterministic() {
    let run = || {
        ok(&[
            "simulate",
            "--cluster",
            "preset:philly-512",
            "--trace",
            SMALL,
            "--compare",
            "best-effort+network,fifo+required:tier0+network,best-effort+preferred:tier0+network",
            "--check-invariants",
            "--output",
            "json",
        ])
    };
    let json = run();
    assert_eq!(json, run());
    let v: Value = serde_json::from_str(&json).unwrap();
    let names: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "best-effort+network",
            "fifo+required:tier0+network",
            "best-effort+preferred:tier0+network"
        ]
    );
}

#[test]
fn the_full_philly_trace_holds_every_invariant_under_each_policy() {
    // 82,247 jobs on 2,560 GPUs; every event checked (see `--check-invariants`). The four runs
    // go in parallel processes.
    let policies = [
        "fifo",
        "best-effort",
        "fair-share",
        "best-effort+required:tier0",
    ];
    let children: Vec<_> = policies
        .iter()
        .map(|p| {
            std::process::Command::new(env!("CARGO_BIN_EXE_railyard"))
                .args([
                    "simulate",
                    "--cluster",
                    "preset:philly-2560",
                    "--trace",
                    "../../data/philly-jobs.csv",
                    "--policy",
                    p,
                    "--check-invariants",
                    "--output",
                    "json",
                ])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("railyard starts")
        })
        .collect();
    for (p, child) in policies.iter().zip(children) {
        let out = child.wait_with_output().expect("railyard runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{p}: {stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(v["jobs"], 82_247, "{p}");
        let ended = v["completed"].as_u64().unwrap() + v["failed"].as_u64().unwrap();
        assert_eq!(ended, 82_247, "{p}: every job ends");
    }
}

const SIM_KUEUE: &str = "tests/fixtures/queues/sim-kueue.yaml";

#[test]
fn queues_give_a_per_queue_table() {
    // Kueue rules: the cohort lends 72 GPUs. research holds 56 (warmup, ring-16, ring-32) when
    // big-64 arrives at 40 s: 120 > 72, so it waits for ring-32 to end (7,220 s).
    let text = ok(&[
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        SMALL,
        "--queues",
        SIM_KUEUE,
        "--check-invariants",
    ]);
    insta::assert_snapshot!(text);
    let json = ok(&[
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        SMALL,
        "--queues",
        SIM_KUEUE,
        "-o",
        "json",
    ]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let research = &v["queues"][1];
    assert_eq!(research["queue"], "research");
    // big-64 waited from 40 s to 7,220 s; the other three research jobs started at once.
    let wait = research["avg_wait_s"].as_f64().unwrap();
    assert!((wait - (7220.0 - 40.0) / 4.0).abs() < 1e-6, "{wait}");
}

#[test]
fn unmapped_trace_queues_stop_the_run_before_it_starts() {
    let kai = "../../examples/queues/kai-research.yaml";
    let e = fails(&[
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        SMALL,
        "--queues",
        kai,
    ]);
    assert_eq!(
        e,
        "error: tests/fixtures/traces/small.csv: trace queues with no leaf queue: dev, research; map them with --queue-map FILE (`trace_queue: leaf_queue`)"
    );
    // --queue-map needs --queues.
    crate::usage_fails(&[
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        SMALL,
        "--queue-map",
        kai,
    ]);
}

#[test]
fn the_bundled_kai_queues_hold_their_rules_over_the_philly_week() {
    // The README's example: KAI rules, every event checked (limits, the non-preemptible quota
    // rule, per resource), under fair-share and fifo in parallel processes.
    let policies = ["fair-share", "fifo"];
    let children: Vec<_> = policies
        .iter()
        .map(|p| {
            std::process::Command::new(env!("CARGO_BIN_EXE_railyard"))
                .args([
                    "simulate",
                    "--cluster",
                    "preset:philly-512",
                    "--trace",
                    "../../data/philly-week-2017-10-01.csv",
                    "--queues",
                    "../../examples/queues/kai-research.yaml",
                    "--queue-map",
                    "../../examples/queues/philly-queue-map.yaml",
                    "--scheduler",
                    "kai",
                    "--policy",
                    p,
                    "--check-invariants",
                    "--output",
                    "json",
                ])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("railyard starts")
        })
        .collect();
    for (p, child) in policies.iter().zip(children) {
        let out = child.wait_with_output().expect("railyard runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{p}: {stderr}");
        let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(v["completed"], 10_650, "{p}");
        let queues: Vec<&str> = v["queues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["queue"].as_str().unwrap())
            .collect();
        assert_eq!(queues, ["interns", "language", "speech", "vision"], "{p}");
    }
}

#[test]
fn problems_kai_tolerates_are_warnings_unless_the_rules_are_kueue() {
    let over = "tests/fixtures/queues/sim-kai-over.yaml";
    let args = [
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        SMALL,
        "--queues",
        over,
        "--check-invariants",
    ];
    let text = ok(&args);
    assert!(
        text.ends_with("warning: tests/fixtures/queues/sim-kai-over.yaml: queue `lab`: gpu: child queues' quotas add up to 128, above this queue's quota 96\n"),
        "{text}"
    );
    // The same warnings in JSON and YAML, under the run's description.
    let expected = "tests/fixtures/queues/sim-kai-over.yaml: queue `lab`: gpu: child queues' quotas add up to 128, above this queue's quota 96";
    let mut json = args.to_vec();
    json.extend(["-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&ok(&json)).unwrap();
    assert_eq!(v["run"]["warnings"], serde_json::json!([expected]), "{v}");
    let mut yaml = args.to_vec();
    yaml.extend(["-o", "yaml"]);
    let yaml = ok(&yaml);
    assert!(
        yaml.contains("  warnings:\n  - 'tests/fixtures/queues/sim-kai-over.yaml: queue `lab`: gpu: child queues'' quotas add up to 128"),
        "{yaml}"
    );
    let mut kueue = args.to_vec();
    kueue.extend(["--scheduler", "kueue"]);
    let e = fails(&kueue);
    assert!(e.contains("child queues' quotas add up to 128"), "{e}");
}

#[test]
fn no_network_removes_every_slowdown_and_bounds_the_multi_node_jct() {
    // The bound of the gain table, on the main run's 5,000-job trace: with every communicating share 0
    // no job is slowed, so the multi-node jobs finish sooner than with the network priced.
    let run = |extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "--cluster",
            "preset:oci-h100-16k-4to1",
            "--trace",
            "../../data/llm-oci-h100-16k-4to1-load0.8-warm-seed1.csv",
            "--policy",
            "best-effort",
            "--output",
            "json",
        ];
        args.extend_from_slice(extra);
        serde_json::from_str::<Value>(&ok(&args)).unwrap()
    };
    let priced = run(&[]);
    let free = run(&["--no-network"]);
    assert!(priced["avg_network_slowdown"].as_f64().unwrap() > 1.0);
    assert_eq!(free["avg_network_slowdown"].as_f64().unwrap(), 1.0);
    assert_eq!(free["completed"], priced["completed"]);
    let jct = |v: &Value| v["avg_multi_node_jct_s"].as_f64().unwrap();
    assert!(
        jct(&free) < jct(&priced),
        "{} vs {}",
        jct(&free),
        jct(&priced)
    );
}

#[test]
fn the_bundled_llm_traces_are_what_trace_synth_writes() {
    // The README's main run replays the day-long file, the shorter runs (the bound test above,
    // the book's cost tables) the 5,000-job one; their commands must still write them byte for
    // byte.
    for (jobs, file) in [
        ("72000", "llm-oci-h100-16k-4to1-load0.8-warm-day-seed1.csv"),
        ("5000", "llm-oci-h100-16k-4to1-load0.8-warm-seed1.csv"),
    ] {
        let out = crate::temp_dir("llm-main").join(file);
        ok(&[
            "trace",
            "synth",
            "--profile",
            "llm",
            "--jobs",
            jobs,
            "--seed",
            "1",
            "--cluster",
            "preset:oci-h100-16k-4to1",
            "--load",
            "0.8",
            "--warm-start",
            "--out",
            out.to_str().unwrap(),
        ]);
        let bundled = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../data")
            .join(file);
        assert!(
            std::fs::read(&out).unwrap() == std::fs::read(bundled).unwrap(),
            "{file}"
        );
    }
}

#[test]
fn failures_on_the_philly_week_pass_the_invariant_checks_and_repeat_byte_for_byte() {
    // The bundled week with an MTBF of 1,000 h per node and 30-minute checkpoints, and with a
    // small failure file; every event checked (no pod on a failed node, progress within its
    // last checkpoint and its duration, used = useful + lost GPU-seconds).
    let run = |extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "--cluster",
            "preset:philly-512",
            "--trace",
            "../../data/philly-week-2017-10-01.csv",
            "--compare",
            "best-effort,fair-share",
            "--check-invariants",
            "--checkpoint-interval",
            "1800",
            "--restart-cost",
            "120",
            "--output",
            "json",
        ];
        args.extend_from_slice(extra);
        ok(&args)
    };
    let a = run(&["--mtbf-hours", "1000", "--seed", "1"]);
    assert_eq!(a, run(&["--mtbf-hours", "1000", "--seed", "1"]));
    let v: Value = serde_json::from_str(&a).unwrap();
    for r in v["runs"].as_array().unwrap() {
        let f = &r["failures"];
        assert!(f["node_failures"].as_u64().unwrap() > 0, "{f}");
        assert!(f["lost_gpu_seconds_failure"].as_f64().unwrap() > 0.0, "{f}");
        assert_eq!(r["completed"], 10_650);
    }
    let listed = run(&["--failures", "tests/fixtures/failures/philly-512.csv"]);
    let v: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(v["runs"][0]["failures"]["node_failures"], 3);
    // Without failures or checkpoints the JSON has no `failures` section (outputs as before).
    let plain = ok(&[
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        SMALL,
        "--output",
        "json",
    ]);
    assert!(!plain.contains("failures"), "{plain}");
}
