//! `simulate --queues` inputs: queue files with Kueue's preemption and lending limits, the
//! queue map in YAML and CSV, and trace queues mapped to leaf queues (unmapped names are one
//! error listing them).

use std::collections::BTreeMap;
use std::path::PathBuf;

use ops::sim_queues::{load, map_trace, read_queue_map};
use sched::kueue::fair_preempt::Strategy;
use sched::kueue::preempt::Policy;
use sched::Dialect;
use sim::queues::{ReclaimWithinCohort, WithinClusterQueue};
use sim::TraceJob;

/// Write `text` to a fresh file named `name` in a directory of this test's own.
fn file(test: &str, name: &str, text: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("railyard-sim-queues-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const KAI: &str = "\
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: dept}
spec:
  resources: {gpu: {quota: 16, limit: -1, overQuotaWeight: 1}}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a}
spec:
  parentQueue: dept
  resources: {gpu: {quota: 8, limit: -1, overQuotaWeight: 1}}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-b}
spec:
  parentQueue: dept
  resources: {gpu: {quota: 8, limit: -1, overQuotaWeight: 1}}
";

const KUEUE: &str = "\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq-a}
spec:
  cohortName: all
  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8, lendingLimit: 2}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq-b}
spec:
  cohortName: all
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team-b-queue, namespace: team-b}
spec: {clusterQueue: cq-b}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
spec: {nodeLabels: {gpu: h100}}
";

fn job(name: &str, queue: &str) -> TraceJob {
    TraceJob {
        queue: queue.into(),
        ..TraceJob::new(name, 1, 1.0)
    }
}

#[test]
fn kueue_preemption_and_lending_limits_are_read() {
    let queues = load(&[file("kueue", "cq.yaml", KUEUE)]).unwrap();
    let (config, warnings) = queues.config(None).unwrap();
    assert_eq!(config.dialect, Dialect::Kueue);
    assert!(warnings.is_empty());
    let a = config.kueue_preemption["cq-a"];
    assert_eq!(a.within_cluster_queue, WithinClusterQueue::LowerPriority);
    assert_eq!(a.reclaim_within_cohort, ReclaimWithinCohort::Any);
    // Kueue's defaults where `preemption` is left out.
    let b = config.kueue_preemption["cq-b"];
    assert_eq!(b.within_cluster_queue, WithinClusterQueue::Never);
    assert_eq!(b.reclaim_within_cohort, ReclaimWithinCohort::Never);
    // cq-a keeps 8 − 2 = 6 of its GPUs; cq-b lends everything.
    assert_eq!(config.kept["cq-a"].gpu, 6.0);
    assert!(!config.kept.contains_key("cq-b"));
    assert_eq!(queues.leaves(), ["cq-a", "cq-b"]);
    // The objects `sched::kueue` admits with: flavors, preemption and lending limits as read.
    let k = config.kueue.expect("Kueue's objects");
    assert!(!k.fair_sharing);
    assert_eq!(k.flavors.len(), 1);
    assert_eq!(k.flavors[0].node_labels["gpu"], "h100");
    let cq_a = &k.cluster_queues[0];
    assert_eq!(cq_a.preemption.reclaim_within_cohort, Policy::Any);
    assert_eq!(
        cq_a.groups[0].flavors[0].1["nvidia.com/gpu"].lending_limit,
        Some(2)
    );
    // Under KAI's rules the objects are not used.
    let (kai, _) = queues.config(Some(Dialect::Kai)).unwrap();
    assert!(kai.kueue.is_none());
}

#[test]
fn a_flavor_without_a_resource_flavor_is_a_warning() {
    let text = KUEUE
        .split("---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor")
        .next()
        .unwrap();
    let queues = load(&[file("no-flavor", "cq.yaml", text)]).unwrap();
    let (config, warnings) = queues.config(None).unwrap();
    assert_eq!(
        warnings,
        ["--queues: flavor `h100` has no ResourceFlavor; simulated as one with no node labels or taints (Kueue keeps such Workloads pending)"]
    );
    assert!(config.kueue.unwrap().flavors[0].undeclared);
}

#[test]
fn a_kueue_configuration_turns_fair_sharing_on() {
    let cq = file("fair", "cq.yaml", KUEUE);
    let on = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing:\n  enable: true\n";
    let cfg = file("fair", "config.yaml", on);
    let (config, _) = load(&[cq.clone(), cfg]).unwrap().config(None).unwrap();
    assert!(config.kueue.unwrap().fair_sharing);
    let off = file("fair", "off.yaml", &on.replace("true", "false"));
    let (config, _) = load(&[cq.clone(), off]).unwrap().config(None).unwrap();
    assert!(!config.kueue.unwrap().fair_sharing);
    let bad = file("fair", "bad.yaml", &on.replace("true", "\"yes\""));
    let e = load(&[cq, bad.clone()]).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: document 1: fairSharing.enable: expected true or false, got \"yes\"",
            bad.display()
        )
    );
    let mixed = file("fair", "mixed.yaml", &format!("{on}---\n{KUEUE}"));
    let e = load(std::slice::from_ref(&mixed)).unwrap_err().to_string();
    assert!(
        e.contains("a Kueue Configuration must be in a file of its own"),
        "{e}"
    );
}

#[test]
fn a_kueue_configuration_gives_fair_sharings_preemption_strategies() {
    let cq = file("fair-strategies", "cq.yaml", KUEUE);
    let with = |list: &str| {
        let text = format!("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing:\n  enable: true\n{list}");
        file("fair-strategies", "config.yaml", &text)
    };
    let strategies = |list: &str| {
        let (config, _) = load(&[cq.clone(), with(list)])
            .unwrap()
            .config(None)
            .unwrap();
        config.kueue.unwrap().fair_strategies
    };
    assert_eq!(strategies(""), []);
    assert_eq!(
        strategies("  preemptionStrategies: [LessThanInitialShare]\n"),
        [Strategy::LessThanInitialShare]
    );
    assert_eq!(
        strategies("  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]\n"),
        Strategy::DEFAULT
    );
    let bad = with("  preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]\n");
    let e = load(&[cq.clone(), bad.clone()]).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "{}: document 1: fairSharing.preemptionStrategies: expected [LessThanOrEqualToFinalShare], ",
            bad.display()
        )),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn an_unknown_preemption_value_is_an_error_naming_the_field() {
    let bad = KUEUE.replace("reclaimWithinCohort: Any", "reclaimWithinCohort: Always");
    let p = file("bad-preemption", "cq.yaml", &bad);
    let e = load(std::slice::from_ref(&p)).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: document 1: spec.preemption.reclaimWithinCohort: expected Never, LowerPriority or Any, got `Always`",
            p.display()
        )
    );
}

#[test]
fn unmapped_trace_queues_are_one_error_listing_them() {
    let queues = load(&[file("unmapped", "kai.yaml", KAI)]).unwrap();
    // Without a map: identical names only.
    let mut jobs = vec![
        job("j1", "team-a"),
        job("j2", "vc-1"),
        job("j3", "vc-2"),
        job("j4", "dept"),
    ];
    let e = map_trace(&mut jobs, &queues, None, "trace.csv").unwrap_err();
    assert_eq!(
        e.to_string(),
        "trace.csv: trace queues with no leaf queue: dept, vc-1, vc-2; map them with --queue-map FILE (`trace_queue: leaf_queue`)"
    );
    // With a map: mapped names, identical leaf names, and the rest listed against the map file.
    let map = BTreeMap::from([("vc-1".to_owned(), "team-b".to_owned())]);
    let e = map_trace(&mut jobs, &queues, Some(("map.yaml", &map)), "trace.csv").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("map.yaml: trace queues with no leaf queue: dept, vc-2;"),
        "{e}"
    );
    let map = BTreeMap::from([
        ("vc-1".to_owned(), "team-b".to_owned()),
        ("vc-2".to_owned(), "team-a".to_owned()),
        ("dept".to_owned(), "team-a".to_owned()),
    ]);
    map_trace(&mut jobs, &queues, Some(("map.yaml", &map)), "trace.csv").unwrap();
    let mapped: Vec<&str> = jobs.iter().map(|j| j.queue.as_str()).collect();
    assert_eq!(mapped, ["team-a", "team-b", "team-a", "team-a"]);
    // A map onto a queue with children is refused.
    let map = BTreeMap::from([("vc-1".to_owned(), "dept".to_owned())]);
    let e = map_trace(&mut jobs, &queues, Some(("map.yaml", &map)), "t").unwrap_err();
    assert_eq!(
        e.to_string(),
        "map.yaml: vc-1: `dept` is not a leaf queue of the queue files; leaf queues: team-a, team-b"
    );
}

#[test]
fn queue_maps_read_as_yaml_or_csv() {
    let yaml = read_queue_map(&file("map", "m.yaml", "vc-1: team-a\n\"vc-2\": team-b\n")).unwrap();
    assert_eq!(yaml["vc-1"], "team-a");
    assert_eq!(yaml["vc-2"], "team-b");
    let csv = read_queue_map(&file(
        "map",
        "m.csv",
        "trace_queue,leaf_queue\n# comment\nvc-1,team-a\n\nvc-2, team-b\n",
    ))
    .unwrap();
    assert_eq!(csv, yaml);
    let p = file("map", "bad.csv", "vc-1,team-a\nvc-2\n");
    let e = read_queue_map(&p).unwrap_err().to_string();
    assert_eq!(
        e,
        format!("{}: line 2: expected `trace_queue,leaf_queue`", p.display())
    );
    let p = file("map", "twice.csv", "vc-1,team-a\nvc-1,team-b\n");
    let e = read_queue_map(&p).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: line 2: trace queue `vc-1` is mapped twice",
            p.display()
        )
    );
    let p = file("map", "list.yaml", "- vc-1\n");
    let e = read_queue_map(&p).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: expected one mapping `trace_queue: leaf_queue`",
            p.display()
        )
    );
}

/// A queue map's names follow the trace readers' rule: none that no Kubernetes object could
/// have (empty, over 253 bytes, a control character), in CSV and YAML, on either side.
#[test]
fn queue_map_names_that_can_never_be_kubernetes_names_are_refused() {
    let long = "q".repeat(254);
    for (name, text, want) in [
        (
            "tab.csv",
            "vc-1,team-a\nvc\u{7}2,team-b\n".to_owned(),
            "line 2: the trace queue name `vc\\u{7}2` holds a control character; it can never be a Kubernetes name",
        ),
        (
            "long.csv",
            format!("vc-1,{long}\n"),
            "line 1: `vc-1`: the leaf queue name `qqqq",
        ),
        (
            "empty-key.yaml",
            "\"\": team-a\n".to_owned(),
            "the trace queue name `` is empty; it can never be a Kubernetes name",
        ),
        (
            "long-key.yaml",
            format!("{long}: team-a\n"),
            "the trace queue name `qqqq",
        ),
        (
            "control.yaml",
            "vc-1: \"team\\ta\"\n".to_owned(),
            "`vc-1`: the leaf queue name `team\\ta` holds a control character",
        ),
    ] {
        let p = file("map-names", name, &text);
        let e = read_queue_map(&p).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}: {want}", p.display())),
            "{name}: {e}"
        );
        assert!(!e.contains('\t') && !e.contains('\u{7}') && e.len() < 400, "{e}");
    }
}

#[test]
fn kai_problems_kai_accepts_are_warnings_and_refusals_under_kueue_rules() {
    // team-a's and team-b's quotas add up to 24 > dept's 16: KAI warns, railyard's rules refuse.
    let over = KAI.replace("quota: 8", "quota: 12");
    let queues = load(&[file("warn", "kai.yaml", &over)]).unwrap();
    let (config, warnings) = queues.config(None).unwrap();
    assert_eq!(config.dialect, Dialect::Kai);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("child queues' quotas add up to 24"),
        "{warnings:?}"
    );
    let e = queues.config(Some(Dialect::Kueue)).unwrap_err().to_string();
    assert!(e.contains("child queues' quotas add up to 24"), "{e}");
}

#[test]
fn a_kueue_local_queue_stands_for_its_cluster_queue() {
    let queues = load(&[file("local", "cq.yaml", KUEUE)]).unwrap();
    let mut jobs = vec![job("j1", "team-b-queue"), job("j2", "cq-a")];
    map_trace(&mut jobs, &queues, None, "workloads.json").unwrap();
    let mapped: Vec<&str> = jobs.iter().map(|j| j.queue.as_str()).collect();
    assert_eq!(mapped, ["cq-b", "cq-a"]);
}
