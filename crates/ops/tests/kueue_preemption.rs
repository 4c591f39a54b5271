//! Kueue's TestPreemption as data (`tests/kueue/preemption_test*.yaml`): the shared
//! ClusterQueues as Kueue YAML (read through `formats::kueue_objects`), the admitted Workloads'
//! usage, the incoming Workload's flavor assignment as Kueue's test hands it to the preemptor;
//! `sched::kueue::preempt::targets` must pick the Workloads Kueue preempts. A case marked
//! `difference:` must still differ; cases not ported are listed with their reason.

use std::collections::BTreeMap;

use formats::kueue_objects::{amount, KueueObjects};
use sched::kueue::{preempt, Admitted, KueueQueues};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PreemptionFile {
    kueue_commit: String,
    file: String,
    test: String,
    #[allow(dead_code)] // documentation for readers of the data
    units: String,
    cases: Vec<Case>,
    not_ported: Vec<NotPorted>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NotPorted {
    name: String,
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    admitted: Vec<AdmittedDoc>,
    incoming: Incoming,
    cluster_queue: String,
    assignment: BTreeMap<String, FlavorMode>,
    preempted: Vec<String>,
    difference: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdmittedDoc {
    name: String,
    cq: String,
    priority: i32,
    reserved_at: i64,
    /// `FLAVOR/RESOURCE` → quantities (one per pod set assignment).
    usage: BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Incoming {
    priority: i32,
    requests: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FlavorMode {
    flavor: String,
    mode: String,
}

fn q(resource: &str, v: &str) -> i64 {
    amount(resource, &serde_json::Value::String(v.to_owned())).expect("quantity")
}

fn targets(c: &Case, queues_text: &str) -> Vec<String> {
    let docs = formats::input::parse_documents("queues", queues_text).unwrap();
    let mut objects = KueueObjects::default();
    objects.read("queues", &docs);
    assert!(objects.problems.is_empty(), "{:?}", objects.problems);
    let mut kq = KueueQueues::new(&objects.cluster_queues, &objects.cohorts).unwrap();
    for w in &c.admitted {
        let usage = w
            .usage
            .iter()
            .flat_map(|(key, vs)| {
                let (f, r) = key.split_once('/').unwrap();
                vs.iter()
                    .map(move |v| (f.to_owned(), r.to_owned(), q(r, v)))
            })
            .collect();
        kq.admit_existing(Admitted {
            name: w.name.clone(),
            cluster_queue: w.cq.clone(),
            priority: w.priority,
            admitted_at: w.reserved_at,
            usage,
        })
        .unwrap();
    }
    let cq = kq.find(&c.cluster_queue).unwrap();
    let mut need = Vec::new();
    let mut requests = Vec::new();
    for (r, fm) in &c.assignment {
        let fr = (kq.tree.flavor_id(&fm.flavor), kq.tree.resource_id(r));
        let v = c.incoming.requests.get(r).map_or(0, |v| q(r, v));
        requests.push((fr, v));
        if fm.mode == "Preempt" {
            need.push(fr);
        }
    }
    let mut out: Vec<String> =
        preempt::targets(&mut kq, cq, &need, &requests, c.incoming.priority, i64::MAX)
            .unwrap_or_default()
            .iter()
            .map(|t| kq.admitted[t.admitted].name.clone())
            .collect();
    out.sort();
    out
}

#[test]
fn kueue_test_preemption_cases_pick_kueues_targets() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kueue");
    let queues = std::fs::read_to_string(format!("{dir}/preemption_test_queues.yaml")).unwrap();
    let f: PreemptionFile = serde_norway::from_str(
        &std::fs::read_to_string(format!("{dir}/preemption_test.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(f.kueue_commit.len(), 40);
    assert_eq!(
        (f.file.as_str(), f.test.as_str()),
        (
            "pkg/scheduler/preemption/preemption_test.go",
            "TestPreemption"
        )
    );
    let (mut passed, mut differences) = (0, 0);
    let mut failures = Vec::new();
    for c in &f.cases {
        let got = targets(c, &queues);
        match &c.difference {
            None if got == c.preempted => passed += 1,
            None => failures.push(format!("{}: got {got:?}, Kueue {:?}", c.name, c.preempted)),
            Some(why) => {
                assert_ne!(got, c.preempted, "{}: marked ({why}) but agrees", c.name);
                differences += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(f
        .not_ported
        .iter()
        .all(|n| !n.reason.is_empty() && !n.name.is_empty()));
    eprintln!(
        "TestPreemption: {} ported, {passed} pass, {differences} documented differences, {} not ported",
        f.cases.len(),
        f.not_ported.len()
    );
}
