//! `railyard queues validate` and `railyard queues share`.

use crate::{fails, ok, railyard, usage_fails};

const BAD: &str = "tests/fixtures/sched/queues/bad";

#[test]
fn kai_default_queues_and_kueue_trees_validate() {
    for f in [
        "tests/fixtures/sched/queues/kai-default-queues.yaml",
        "tests/fixtures/sched/queues/kai-teams.yaml",
        "tests/fixtures/sched/queues/kueue-cohort-tree.yaml",
        "tests/fixtures/sched/queues/kueue-sample-queues.yaml",
    ] {
        let out = ok(&["queues", "validate", f]);
        assert!(out.starts_with("ok: "), "{f}: {out}");
    }
    // Jobs with their queues: a Kueue job through its LocalQueue.
    let out = ok(&[
        "queues",
        "validate",
        "tests/fixtures/sched/queues/kueue-cohort-tree.yaml",
        "tests/fixtures/sched/jobs/kueue-gpu-job.yaml",
    ]);
    assert_eq!(out, "ok: 3 queues, 1 job, no problems\n");
}

/// Each defect has its own fixture and exactly one problem line with its exact message.
#[test]
fn each_defect_is_reported_naming_file_and_queue() {
    for name in [
        "missing-parent",
        "cycle",
        "job-on-parent-queue",
        "children-over-parent",
        "limit-below-quota",
        "negative-value",
        "parent-without-resources",
    ] {
        let file = format!("{BAD}/{name}.yaml");
        let line = fails(&["queues", "validate", &file]);
        assert!(
            line.starts_with(&format!("error: {file}: queue `")),
            "{line}"
        );
        insta::assert_snapshot!(name, line);
    }
}

#[test]
fn all_problems_are_reported_at_once() {
    let files: Vec<String> = ["missing-parent", "limit-below-quota", "negative-value"]
        .iter()
        .map(|n| format!("{BAD}/{n}.yaml"))
        .collect();
    let mut args = vec!["queues", "validate"];
    args.extend(files.iter().map(String::as_str));
    let r = railyard(&args);
    assert_eq!(r.code, 1);
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    // Three files, each defining `dept` (reported once as duplicate twice) plus the defects.
    assert!(lines
        .iter()
        .any(|l| l.contains("parent queue `research` does not exist")));
    assert!(lines.iter().any(|l| l.contains("limit 4 is below quota 8")));
    assert!(lines.iter().any(|l| l.contains("-4 is negative")));
    assert!(lines.iter().any(|l| l.contains("defined more than once")));
}

#[test]
fn share_gives_quota_then_the_rest_within_limits() {
    let out = ok(&[
        "queues",
        "share",
        "--queues",
        "tests/fixtures/sched/queues/kai-teams.yaml",
        "--demand",
        "tests/fixtures/sched/demand.yaml",
        "--output",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let share = |q: &str| {
        v["queues"]
            .as_array()
            .expect("queues")
            .iter()
            .find(|r| r["queue"] == q)
            .expect("queue row")["gpu"]["fair_share"]
            .as_f64()
            .expect("number")
    };
    // Capacity 40: dept gets it all (demand 12 + 30); team-a 8 + 4 up to its limit 12, team-b
    // 8 + the other 20.
    assert_eq!(share("dept"), 40.0);
    assert_eq!(share("team-a"), 12.0);
    assert_eq!(share("team-b"), 28.0);
    assert_eq!(v["capacity"]["gpu"], 40.0);
    // Inline demand, capacity from a cluster; text output.
    let out = ok(&[
        "queues",
        "share",
        "--queues",
        "tests/fixtures/sched/queues/kai-teams.yaml",
        "--demand",
        "team-a=gpu:2",
        "team-b=gpu:100",
        "--cluster",
        "preset:fat-tree-k8",
    ]);
    assert!(out.starts_with("rules: KAI "), "{out}");
    assert!(out.contains("\ncapacity: gpu 1024,"), "{out}");
    // Demand from job files: the Kueue job's 16 GPUs count for team-a via its LocalQueue.
    let out = ok(&[
        "queues",
        "share",
        "--queues",
        "tests/fixtures/sched/queues/kueue-cohort-tree.yaml",
        "--demand",
        "tests/fixtures/sched/jobs/native-train.yaml",
        "--output",
        "json",
    ]);
    assert!(out.contains("\"demand\": 32.0"), "{out}");
}

#[test]
fn share_rejects_demand_for_unknown_or_parent_queues() {
    let line = usage_fails(&[
        "queues",
        "share",
        "--queues",
        "tests/fixtures/sched/queues/kai-teams.yaml",
        "--demand",
        "dept=gpu:4",
    ]);
    assert_eq!(
        line,
        "error: --demand: queue `dept` has child queues; demand goes to leaf queues"
    );
    let line = usage_fails(&[
        "queues",
        "share",
        "--queues",
        "tests/fixtures/sched/queues/kai-teams.yaml",
        "--demand",
        "nobody=gpu:4",
    ]);
    assert_eq!(
        line,
        "error: --demand: queue `nobody` is not in the queue files"
    );
}

/// KAI warns about child quotas above the parent's and schedules: `queues share` computes what
/// KAI would (each child min(quota, demand), above the parent's share) and prints the problem as
/// a warning, while `queues validate` still refuses the tree.
#[test]
fn share_computes_child_quotas_above_the_parent_with_a_warning() {
    let file = format!("{BAD}/children-over-parent.yaml");
    let args = [
        "queues",
        "share",
        "--queues",
        &file,
        "--demand",
        "team-a=gpu:10",
        "team-b=gpu:10",
        "--capacity",
        "gpu:16",
    ];
    let out = ok(&args);
    insta::assert_snapshot!("share-children-over-parent", out);
    let mut json_args = args.to_vec();
    json_args.extend_from_slice(&["--output", "json"]);
    let v: serde_json::Value = serde_json::from_str(&ok(&json_args)).expect("json");
    assert_eq!(v["rules"], "kai");
    assert_eq!(v["queues"][1]["gpu"]["fair_share"], 10.0);
    assert_eq!(v["queues"][2]["gpu"]["fair_share"], 10.0);
    assert_eq!(
        v["warnings"][0],
        format!("{file}: queue `dept`: gpu: child queues' quotas add up to 20, above this queue's quota 16")
    );
    assert!(fails(&["queues", "validate", &file]).contains("above this queue's quota 16"));
}

/// Live KAI Queues (`kubectl get queues -o json`, a `List`): each leaf's `status.requested` is
/// its demand, so the shares equal those of the same demand given as a file, and
/// `status.allocated` is shown beside them.
#[test]
fn share_reads_demand_and_allocation_from_live_kai_queues() {
    let live = "tests/fixtures/sched/queues/kai-live-queues.json";
    let json =
        |args: &[&str]| -> serde_json::Value { serde_json::from_str(&ok(args)).expect("json") };
    let from_status = json(&[
        "queues",
        "share",
        "--queues",
        live,
        "--capacity",
        "gpu:40",
        "--output",
        "json",
    ]);
    let from_file = json(&[
        "queues",
        "share",
        "--queues",
        "tests/fixtures/sched/queues/kai-teams.yaml",
        "--demand",
        "tests/fixtures/sched/demand.yaml",
        "--output",
        "json",
    ]);
    let gpu = |v: &serde_json::Value, field: &str| -> Vec<serde_json::Value> {
        v["queues"]
            .as_array()
            .expect("queues")
            .iter()
            .map(|q| q["gpu"][field].clone())
            .collect()
    };
    assert_eq!(
        gpu(&from_status, "fair_share"),
        gpu(&from_file, "fair_share")
    );
    assert_eq!(gpu(&from_status, "demand"), gpu(&from_file, "demand"));
    assert_eq!(
        gpu(&from_status, "allocated"),
        [20.5, 12.0, 8.5].map(serde_json::Value::from)
    );
    // 64Gi requested by each team, in MiB.
    assert_eq!(from_status["queues"][1]["memory_mib"]["demand"], 65536.0);
    // A demand given explicitly wins over the status; without either, a usage error.
    let explicit = json(&[
        "queues",
        "share",
        "--queues",
        live,
        "--demand",
        "team-a=gpu:2",
        "--output",
        "json",
    ]);
    assert_eq!(explicit["queues"][1]["gpu"]["demand"], 2.0);
    let r = railyard(&[
        "queues",
        "share",
        "--queues",
        "tests/fixtures/sched/queues/kai-teams.yaml",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--demand: missing"), "{}", r.stderr);
}

/// Issue 30, defect 9: a resource given twice in an inline `--demand` or `--capacity` is
/// refused (the second would silently replace the first), naming the flag: a bad flag value,
/// exit 2 (the corpus's flags.txt holds the same two cases).
#[test]
fn a_resource_twice_in_an_inline_demand_is_refused() {
    let queues = "tests/fixtures/sched/queues/kai-teams.yaml";
    let line = usage_fails(&[
        "queues",
        "share",
        "--queues",
        queues,
        "--demand",
        "team-a=gpu:1,gpu:3",
    ]);
    assert_eq!(
        line,
        "error: --demand: `gpu:1,gpu:3`: resource `gpu` given twice; give each resource once"
    );
    let line = usage_fails(&[
        "queues",
        "share",
        "--queues",
        queues,
        "--demand",
        "team-a=gpu:1",
        "--capacity",
        "gpu:8,cpu:4,gpu:16",
    ]);
    assert!(line.starts_with("error: --capacity: "), "{line}");
    // Each resource once is fine.
    ok(&[
        "queues",
        "share",
        "--queues",
        queues,
        "--demand",
        "team-a=gpu:1,cpu:2",
    ]);
}

/// Issue 30, defect 6: a queue defined more than once names its first definition, file and
/// document, in `queues validate` and `lint` alike.
#[test]
fn a_duplicate_queue_names_its_first_definition() {
    let dir = crate::scratch("duplicate-queue");
    let first = "tests/fixtures/sched/queues/kai-teams.yaml";
    let again = dir.join("again.yaml");
    std::fs::copy(first, &again).unwrap();
    let again = again.display().to_string();
    let run = crate::railyard(&["queues", "validate", first, &again]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(&format!(
            "error: {again}: queue `team-a`: defined more than once (first in {first}, document 2)\n"
        )),
        "{}",
        run.stderr
    );
    let lint = crate::railyard(&["lint", first, &again]);
    assert!(
        lint.stdout.contains(&format!(
            "{again}: document 2: metadata.name: error: queue `team-a`: defined more than once (first in {first}, document 2)\n"
        )),
        "{}",
        lint.stdout
    );
}
