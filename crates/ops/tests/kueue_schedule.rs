//! Cases of Kueue's TestSchedule as data (`tests/kueue/scheduler_test_*.yaml`): Kueue YAML for
//! the queue objects, Workloads holding quota as `kubectl get workloads -o json` gives them,
//! pending Workloads naming LocalQueues. Each pending Workload goes through
//! `ops::kueue_admit` (LocalQueue in its namespace, then `sched::kueue::assign`); an admitted
//! one then holds its quota. A case marked `difference:` must still differ.

use std::collections::BTreeMap;

use formats::kueue_objects::{admitted_workloads, KueueObjects};
use ops::kueue_admit::{flavor_mismatch, queues, resolve_with_labels, Resolved};
use sched::kueue::assign::assign;
use sched::kueue::cycle::cycle_assigned;
use sched::kueue::{cycle, Head, Outcome, PodSetRequest};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleFile {
    kueue_commit: String,
    file: String,
    test: String,
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
    cases: Vec<Case>,
    /// Kueue's cases that need a feature railyard does not model, with the reason.
    #[serde(default)]
    out_of_scope: Vec<OutOfScope>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutOfScope {
    name: String,
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    #[serde(default)]
    extra_queues: Option<String>,
    #[serde(default)]
    admitted: Option<String>,
    pending: String,
    /// Kueue's PartialAdmission feature gate (on by default); off, `minCount` is not read.
    #[serde(default = "gate_on")]
    partial_admission: bool,
    want: BTreeMap<String, Want>,
    difference: Option<String>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Want {
    /// Pod set → resource → flavor.
    #[serde(default)]
    admitted: Option<BTreeMap<String, BTreeMap<String, String>>>,
    /// Pod set → pods admitted, for the pod sets partial admission reduced.
    #[serde(default)]
    counts: Option<BTreeMap<String, u32>>,
    #[serde(default)]
    preempted: Vec<String>,
    #[serde(default)]
    pending: Option<String>,
    #[serde(default)]
    not_queued: bool,
    /// Queued behind its ClusterQueue's head: not tried in this cycle.
    #[serde(default)]
    left: bool,
}

fn gate_on() -> bool {
    true
}

fn yaml(text: &str) -> Value {
    serde_norway::from_str(text).expect("YAML")
}

fn str_at<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

fn requests(wl: &Value) -> Vec<PodSetRequest> {
    wl.pointer("/spec/podSets")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|ps| PodSetRequest {
            name: str_at(ps, "/name").to_owned(),
            count: ps["count"].as_u64().unwrap() as u32,
            min_count: ps.get("minCount").and_then(Value::as_u64).map(|m| m as u32),
            per_pod: ps["requests"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(r, v)| (r.clone(), formats::kueue_objects::amount(r, v).unwrap()))
                .collect(),
        })
        .collect()
}

fn outcome(case: &Case, file: &ScheduleFile, base: &str) -> BTreeMap<String, Want> {
    let mut objects = KueueObjects::default();
    let mut text = base.to_owned();
    if let Some(extra) = &case.extra_queues {
        text.push_str("\n---\n");
        text.push_str(extra);
    }
    let docs = formats::input::parse_documents(&case.name, &text).unwrap();
    objects.read(&case.name, &docs);
    assert!(
        objects.problems.is_empty(),
        "{}: {:?}",
        case.name,
        objects.problems
    );
    let held = match &case.admitted {
        Some(a) => {
            let list = serde_json::json!({"kind": "List", "items": yaml(a)});
            admitted_workloads(&case.name, &list).unwrap()
        }
        None => Vec::new(),
    };
    let mut out = BTreeMap::new();
    let q = queues(&objects, &held).unwrap();
    let check = |_: usize, f: &str| flavor_mismatch(objects.flavor(f), f, &[], None);
    // (key, ClusterQueue node, pod sets, priority, input order) of the queued Workloads.
    let mut queued = Vec::new();
    for (i, wl) in yaml(&case.pending).as_array().unwrap().iter().enumerate() {
        let ns = str_at(wl, "/metadata/namespace");
        let key = format!("{ns}/{}", str_at(wl, "/metadata/name"));
        let labels = file.namespaces.get(ns).cloned().unwrap_or_default();
        let queue = str_at(wl, "/spec/queueName");
        let cq = match resolve_with_labels(&objects, &q, ns, &labels, queue) {
            None => {
                out.insert(
                    key,
                    Want {
                        not_queued: true,
                        ..Want::default()
                    },
                );
                continue;
            }
            Some(Resolved::Inadmissible(why)) => {
                out.insert(
                    key,
                    Want {
                        pending: Some(why),
                        ..Want::default()
                    },
                );
                continue;
            }
            Some(Resolved::ClusterQueue(cq)) => q.find(&cq).unwrap(),
        };
        let priority = wl
            .pointer("/spec/priority")
            .and_then(Value::as_i64)
            .unwrap_or(0) as i32;
        let mut requests = requests(wl);
        if !case.partial_admission {
            requests.iter_mut().for_each(|r| r.min_count = None);
        }
        let created = str_at(wl, "/metadata/creationTimestamp").to_owned();
        queued.push((key, cq, requests, priority, (created, i)));
    }
    // Creation order: RFC 3339 timestamps of one form sort as the times; then listing order.
    let mut by_time: Vec<_> = queued.iter().map(|w| w.4.clone()).collect();
    by_time.sort();
    let queued: Vec<_> = queued
        .into_iter()
        .map(|(k, cq, r, p, t)| {
            let at = by_time.binary_search(&t).unwrap() as i64;
            (k, cq, r, p, at)
        })
        .collect();
    // Each ClusterQueue's head: highest priority, then first queued; the rest stay queued.
    let mut heads: Vec<Head> = Vec::new();
    let mut head_keys = Vec::new();
    let mut by_cq: BTreeMap<usize, usize> = BTreeMap::new();
    for (k, (_, cq, _, priority, at)) in queued.iter().enumerate() {
        match by_cq.get(cq) {
            Some(&h) if (queued[h].3, -queued[h].4) >= (*priority, -*at) => {}
            _ => {
                by_cq.insert(*cq, k);
            }
        }
    }
    for (k, (key, cq, requests, priority, at)) in queued.iter().enumerate() {
        if by_cq.get(cq) != Some(&k) {
            out.insert(
                key.clone(),
                Want {
                    left: true,
                    ..Want::default()
                },
            );
            continue;
        }
        head_keys.push((key.clone(), requests.clone()));
        heads.push(Head {
            cq: *cq,
            pod_sets: requests.clone(),
            priority: *priority,
            created: *at,
            check: &check,
        });
    }
    let entries = cycle(&q, &heads);
    // `cycle_assigned` (the simulator's entry point: the assignments made by the caller on the
    // tree, the tree copied only for preemption) decides every case the same.
    let mut own = q.clone();
    let assignments = heads
        .iter()
        .map(|h| assign(&mut own, h.cq, &h.pod_sets, h.priority, h.created, h.check))
        .collect();
    for (x, y) in entries
        .iter()
        .zip(cycle_assigned(&own, &heads, assignments))
    {
        assert_eq!((&x.outcome, &x.victims), (&y.outcome, &y.victims));
    }
    for ((key, requests), e) in head_keys.into_iter().zip(entries) {
        let a = &e.assignment;
        let want = match e.outcome {
            Outcome::Admitted => Want {
                admitted: Some(
                    a.pod_sets
                        .iter()
                        .map(|ps| {
                            (
                                ps.name.clone(),
                                ps.flavors
                                    .iter()
                                    .map(|(r, (f, _))| (r.clone(), f.clone()))
                                    .collect(),
                            )
                        })
                        .collect(),
                ),
                counts: Some(
                    a.pod_sets
                        .iter()
                        .zip(&requests)
                        .filter(|(ps, r)| ps.count < r.count)
                        .map(|(ps, _)| (ps.name.clone(), ps.count))
                        .collect(),
                )
                .filter(|c: &BTreeMap<String, u32>| !c.is_empty()),
                ..Want::default()
            },
            Outcome::Preempting => Want {
                pending: Some(a.message()),
                preempted: e.victims.clone(),
                ..Want::default()
            },
            Outcome::Pending(why) => Want {
                pending: Some(why),
                ..Want::default()
            },
        };
        out.insert(key, want);
    }
    out
}

#[test]
fn kueue_test_schedule_cases_give_kueues_outcome() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kueue");
    let base = std::fs::read_to_string(format!("{dir}/scheduler_test_base.yaml")).unwrap();
    let f: ScheduleFile = serde_norway::from_str(
        &std::fs::read_to_string(format!("{dir}/scheduler_test_schedule.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(f.kueue_commit.len(), 40);
    assert_eq!(
        (f.file.as_str(), f.test.as_str()),
        ("pkg/scheduler/scheduler_test.go", "TestSchedule")
    );
    for o in &f.out_of_scope {
        assert!(
            !o.reason.trim().is_empty(),
            "{}: out of scope without a reason",
            o.name
        );
        assert!(
            f.cases.iter().all(|c| c.name != o.name),
            "{}: both ported and out of scope",
            o.name
        );
    }
    let mut names: Vec<&str> = f.cases.iter().map(|c| c.name.as_str()).collect();
    names.extend(f.out_of_scope.iter().map(|o| o.name.as_str()));
    let listed = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), listed, "a Kueue case is listed twice");
    let (mut passed, mut differences) = (0, 0);
    for c in &f.cases {
        let got = outcome(c, &f, &base);
        match &c.difference {
            None => {
                assert_eq!(got, c.want, "{}", c.name);
                passed += 1;
            }
            Some(why) => {
                assert_ne!(
                    got, c.want,
                    "{}: marked as a difference ({why}) but agrees",
                    c.name
                );
                eprintln!("{}: differs ({why}); railyard gives {got:?}", c.name);
                differences += 1;
            }
        }
    }
    eprintln!(
        "TestSchedule: {} cases, {passed} pass, {differences} documented differences, {} out of scope",
        f.cases.len(),
        f.out_of_scope.len()
    );
}
