//! KAI Scheduler's tests of how a Queue is read and admitted, kept as data in `tests/kai/*.yaml`
//! (facts only, each case tagged with KAI's file, test and case name), run against
//! `formats::queues::read` and `sched::QueueTree::new_in` in the KAI dialect. A case passes, or
//! carries a one-line `difference:` that this test checks still holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use formats::queues::{kai_megabytes_to_mib, read};
use sched::{Dialect, QueueTree, Resource};
use serde::Deserialize;
use serde_json::{json, Value};

const TOLERANCE: f64 = 1e-9;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    file: String,
    cases: Vec<Case>,
    #[serde(default)]
    not_ported: Vec<NotPorted>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NotPorted {
    test: String,
    reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    test: String,
    case: String,
    queue: QueueDoc,
    expect: Expect,
    #[serde(default)]
    difference: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueDoc {
    name: String,
    spec: Value,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    // What KAI's scheduler reads (queue_info_test.go).
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default)]
    priority: Option<i32>,
    #[serde(default)]
    resources: Option<BTreeMap<String, Amounts>>,
    // What KAI's webhook answers (queue_validator_test.go).
    #[serde(default)]
    accepted: Option<bool>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    warnings: Option<usize>,
}

#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct Amounts {
    quota: f64,
    limit: f64,
    weight: f64,
}

/// Run one case; `Ok` when railyard's answer equals KAI's, `Err` with what differs.
fn run(case: &Case) -> Result<(), String> {
    let doc = json!({
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": case.queue.name},
        "spec": case.queue.spec,
    });
    let text = serde_json::to_string(&doc).expect("json");
    let files = read(&[("queue.yaml".to_owned(), text)]);
    let problems: Vec<String> = files.problems.iter().map(ToString::to_string).collect();
    let e = &case.expect;
    if let Some(accepted) = e.accepted {
        if accepted != problems.is_empty() {
            return Err(format!(
                "accepted {}, KAI {accepted}: {problems:?}",
                problems.is_empty()
            ));
        }
        if let Some(error) = &e.error {
            if !problems.iter().any(|p| p.contains(error.as_str())) {
                return Err(format!("no problem says `{error}`: {problems:?}"));
            }
        }
        if let Some(n) = e.warnings {
            let specs = files.queues.iter().map(|q| q.spec.clone()).collect();
            let warnings = QueueTree::new_in(specs, Dialect::Kai)
                .map(|(_, w)| w.len())
                .map_err(|p| format!("tree refused: {}", p[0]))?;
            if warnings != n {
                return Err(format!("{warnings} warnings, KAI {n}"));
            }
        }
        return Ok(());
    }
    if !problems.is_empty() {
        return Err(format!("refused: {}", problems.join("; ")));
    }
    let spec = &files.queues.first().ok_or("no queue read")?.spec;
    let mut diffs = Vec::new();
    if let Some(uid) = &e.uid {
        if &spec.name != uid {
            diffs.push(format!("name {}, KAI uid {uid}", spec.name));
        }
    }
    if spec.parent != e.parent {
        diffs.push(format!("parent {:?}, KAI {:?}", spec.parent, e.parent));
    }
    if let Some(p) = e.priority {
        if spec.priority != p {
            diffs.push(format!("priority {}, KAI {p}", spec.priority));
        }
    }
    for (name, want) in e.resources.iter().flatten() {
        let r = match name.as_str() {
            "gpu" => Resource::Gpu,
            "cpu" => Resource::Cpu,
            "memory" => Resource::Memory,
            other => panic!("unknown resource `{other}`"),
        };
        let got = spec.quota(r);
        let unit = |v: f64| {
            if r == Resource::Memory && v >= 0.0 {
                kai_megabytes_to_mib(v)
            } else {
                v
            }
        };
        for (field, g, w) in [
            ("quota", got.quota, unit(want.quota)),
            ("limit", got.limit, unit(want.limit)),
            ("overQuotaWeight", got.over_quota_weight, want.weight),
        ] {
            if (g - w).abs() > TOLERANCE {
                diffs.push(format!("{name}.{field} {g}, KAI {w}"));
            }
        }
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

fn data_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kai");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/kai")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn kai_queue_cases_pass_or_differ_as_documented() {
    let mut failures = Vec::new();
    let mut n_cases = 0;
    for path in data_files() {
        let text = std::fs::read_to_string(&path).expect("read");
        let data: CaseFile =
            serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(data.file.starts_with("pkg/"), "{}", path.display());
        for n in &data.not_ported {
            assert!(!n.test.is_empty() && !n.reason.is_empty());
        }
        for case in &data.cases {
            n_cases += 1;
            let at = format!("{} / {} / {}", data.file, case.test, case.case);
            match (run(case), &case.difference) {
                (Ok(()), None) | (Err(_), Some(_)) => {}
                (Err(e), None) => failures.push(format!("{at}: {e}")),
                (Ok(()), Some(d)) => failures.push(format!(
                    "{at}: now agrees with KAI; remove `difference: {d}`"
                )),
            }
        }
    }
    assert!(n_cases >= 8, "only {n_cases} KAI cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What a KAI Queue leaves out reads as KAI's scheduler reads it: priority 100, every omitted
/// resource or field 0 (a limit of 0: nothing may be used), memory megabytes as MiB, the
/// creation time kept for tie-breaks.
#[test]
fn omitted_fields_read_as_kai_reads_them() {
    let text = "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata:\n  name: q\n  creationTimestamp: \"2025-01-02T03:04:05Z\"\nspec:\n  resources:\n    gpu: {quota: 2}\n    memory: {quota: 1048.576, limit: -1}\n";
    let files = read(&[("q.yaml".to_owned(), text.to_owned())]);
    assert!(files.problems.is_empty(), "{:?}", files.problems);
    let spec = &files.queues[0].spec;
    assert_eq!(spec.priority, 100);
    assert_eq!(spec.creation_time, Some(1_735_787_045));
    let gpu = spec.quota(Resource::Gpu);
    assert_eq!(
        (gpu.quota, gpu.limit, gpu.over_quota_weight),
        (2.0, 0.0, 0.0)
    );
    let cpu = spec.quota(Resource::Cpu);
    assert_eq!(
        (cpu.quota, cpu.limit, cpu.over_quota_weight),
        (0.0, 0.0, 0.0)
    );
    let memory = spec.quota(Resource::Memory);
    assert!((memory.quota - 1000.0).abs() < 1e-9, "{memory:?}");
    assert_eq!(memory.limit, -1.0);
}

/// A KAI job's priority comes from its priority class (KAI's predefined classes; `train` when
/// none is named) and its preemptibility from the label, else from priority < 100.
#[test]
fn kai_priority_classes_give_priority_and_preemptibility() {
    let pod = |extra_labels: &str, spec_extra: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    kai.scheduler/queue: q\n{extra_labels}spec:\n  schedulerName: kai-scheduler\n{spec_extra}  containers:\n    - name: main\n      image: x\n      resources:\n        limits:\n          nvidia.com/gpu: 1\n"
        )
    };
    let read_one = |text: String| {
        let jobs = formats::jobs::read_jobs("p.yaml", &text).expect("a job");
        (jobs[0].priority, jobs[0].preemptible)
    };
    assert_eq!(read_one(pod("", "")), (50, true));
    assert_eq!(
        read_one(pod("", "  priorityClassName: build\n")),
        (100, false)
    );
    assert_eq!(
        read_one(pod("", "  priorityClassName: build-preemptible\n")),
        (75, true)
    );
    assert_eq!(
        read_one(pod("    priorityClassName: inference\n", "")),
        (125, false)
    );
    assert_eq!(
        read_one(pod(
            "    kai.scheduler/preemptibility: preemptible\n",
            "  priorityClassName: inference\n"
        )),
        (125, true)
    );
    assert_eq!(read_one(pod("", "  priority: 7\n")), (7, true));
}

/// A running pod of a KAI queue is non-preemptible from priority 100 on (the priority KAI's
/// admission filled in from its class), unless its preemptibility label says otherwise.
#[test]
fn running_kai_pods_follow_kais_preemptibility_rule() {
    let cluster = formats::cluster::preset("--cluster", "fat-tree-k8")
        .expect("preset")
        .cluster;
    let node = cluster.nodes[0].name.clone();
    let pod = |name: &str, priority: i64, labels: &str| {
        format!(
            r#"{{"metadata": {{"name": "{name}", "namespace": "ns", "labels": {{{labels}}}}}, "spec": {{"nodeName": "{node}", "priority": {priority}, "containers": [{{"name": "c", "resources": {{"limits": {{"nvidia.com/gpu": "1"}}}}}}]}}, "status": {{"phase": "Running"}}}}"#
        )
    };
    let kai = r#""kai.scheduler/queue": "q""#;
    let items = [
        pod("build", 100, kai),
        pod("train", 50, kai),
        pod(
            "labelled",
            125,
            &format!(r#"{kai}, "kai.scheduler/preemptibility": "preemptible""#),
        ),
        pod("kueue", 1000, r#""kueue.x-k8s.io/queue-name": "lq""#),
    ];
    let list: serde_json::Value = serde_json::from_str(&format!(
        r#"{{"apiVersion": "v1", "kind": "PodList", "items": [{}]}}"#,
        items.join(", ")
    ))
    .expect("json");
    let jobs = formats::live::read_pods("pods.json", &list, &cluster).expect("pods");
    let preemptible: BTreeMap<String, bool> = jobs
        .iter()
        .map(|j| (j.name.clone(), j.preemptible))
        .collect();
    assert_eq!(
        preemptible,
        BTreeMap::from([
            ("ns/build".to_owned(), false),
            ("ns/kueue".to_owned(), true),
            ("ns/labelled".to_owned(), true),
            ("ns/train".to_owned(), true),
        ])
    );
}

/// KAI PodGroups given with the PodList decide the queue, priority and preemptibility of the
/// job their pods make up; without the PodList they are refused (they do not say where pods run).
#[test]
fn live_pod_groups_give_their_pods_queue_priority_and_preemptibility() {
    let cluster = formats::cluster::preset("--cluster", "fat-tree-k8")
        .expect("preset")
        .cluster;
    let node = cluster.nodes[0].name.clone();
    let pod = |name: &str, group: &str| {
        format!(
            r#"{{"metadata": {{"name": "{name}", "namespace": "ns", "annotations": {{"pod-group-name": "{group}"}}}}, "spec": {{"nodeName": "{node}", "containers": [{{"name": "c", "resources": {{"limits": {{"nvidia.com/gpu": "1"}}}}}}]}}, "status": {{"phase": "Running"}}}}"#
        )
    };
    let pods = format!(
        r#"{{"apiVersion": "v1", "kind": "PodList", "items": [{}, {}, {}]}}"#,
        pod("a-0", "pg-a"),
        pod("a-1", "pg-a"),
        pod("b-0", "pg-b")
    );
    let group = |name: &str, spec: &str| {
        format!(
            r#"{{"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": {{"name": "{name}", "namespace": "ns"}}, "spec": {{{spec}}}}}"#
        )
    };
    let groups = |a: &str, b: &str| {
        format!(
            r#"{{"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroupList", "items": [{}, {}]}}"#,
            group("pg-a", a),
            group("pg-b", b)
        )
    };
    let read = |groups: &str| {
        formats::state::read_all(
            &[
                ("pods.json".to_owned(), pods.clone()),
                ("podgroups.json".to_owned(), groups.to_owned()),
            ],
            &cluster,
        )
        .map(|occ| {
            occ.jobs()
                .values()
                .map(|a| {
                    (
                        a.job.name.clone(),
                        (
                            a.job.queue.clone(),
                            a.job.priority,
                            a.job.preemptible,
                            a.pods.len(),
                        ),
                    )
                })
                .collect::<BTreeMap<_, _>>()
        })
        .map_err(|e| e.to_string())
    };
    let jobs = read(&groups(
        r#""queue": "team-a", "priorityClassName": "build", "minMember": 2"#,
        r#""queue": "team-b", "priorityClassName": "inference", "preemptibility": "preemptible""#,
    ))
    .expect("state");
    assert_eq!(
        jobs,
        BTreeMap::from([
            ("ns/pg-a".to_owned(), ("team-a".to_owned(), 100, false, 2)),
            ("ns/pg-b".to_owned(), ("team-b".to_owned(), 125, true, 1)),
        ])
    );
    // No class: KAI's default class `train` (50), preemptible.
    let jobs = read(&groups(r#""queue": "team-a""#, r#""queue": "team-b""#)).expect("state");
    assert_eq!(jobs["ns/pg-a"], ("team-a".to_owned(), 50, true, 2));

    let err = read(&groups(r#""priorityClassName": "urgent""#, "")).expect_err("bad class");
    assert!(
        err.contains("podgroups.json")
            && err.contains("PodGroup ns/pg-a")
            && err.contains("urgent"),
        "{err}"
    );
    let err = read(&groups(r#""preemptibility": "sometimes""#, "")).expect_err("bad value");
    assert!(err.contains("spec.preemptibility"), "{err}");
    let err = formats::state::read_all(&[("podgroups.json".to_owned(), groups("", ""))], &cluster)
        .expect_err("no PodList");
    assert!(err.to_string().contains("give the PodList"), "{err}");
}
