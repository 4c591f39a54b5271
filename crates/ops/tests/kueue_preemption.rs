//! Kueue's TestPreemption and its fair-sharing preemption tests as data
//! (`tests/kueue/preemption_test*.yaml`, `tests/kueue/preemption_fair_test*`): the
//! ClusterQueues as Kueue YAML (read through `formats::kueue_objects`), the admitted Workloads'
//! usage, the incoming Workload's flavor assignment as Kueue's test hands it to the preemptor;
//! `sched::kueue::preempt::targets` (classical) and `sched::kueue::fair_preempt::targets` (fair
//! sharing, Workloads and reasons) must pick the Workloads Kueue preempts. A case marked
//! `difference:` must still differ; cases not ported are listed with their reason.

use std::collections::BTreeMap;

use formats::kueue_objects::{amount, KueueObjects};
use sched::kueue::fair_preempt::{self, Strategy};
use sched::kueue::{preempt, Admitted, Fr, KueueQueues};
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
    /// `tests/kueue/preemption_test_queues_QUEUES.yaml` instead of the shared queues.
    queues: Option<String>,
    admitted: Vec<AdmittedDoc>,
    incoming: Incoming,
    cluster_queue: String,
    /// Resource → flavor and mode, for an incoming Workload of one pod set.
    #[serde(default)]
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
    /// Creation, in seconds after the test clock (none: after every admitted Workload).
    created: Option<i64>,
    /// Of one pod set with the case's `assignment`.
    #[serde(default)]
    requests: BTreeMap<String, String>,
    /// Several pod sets, each with its own assignment (instead of `requests`).
    #[serde(default)]
    pod_sets: Vec<PodSetDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PodSetDoc {
    #[allow(dead_code)] // documentation for readers of the data
    name: String,
    count: i64,
    /// Per pod.
    requests: BTreeMap<String, String>,
    assignment: BTreeMap<String, FlavorMode>,
}

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlavorMode {
    flavor: String,
    mode: String,
}

fn q(resource: &str, v: &str) -> i64 {
    amount(resource, &serde_json::Value::String(v.to_owned())).expect("quantity")
}

/// The queues of `queues_text` with `admitted` holding quota, and the incoming Workload's
/// (flavor, resource) pairs that need preemption and its requests.
fn setup(
    queues_text: &str,
    admitted: &[AdmittedDoc],
    incoming: &Incoming,
    assignment: &BTreeMap<String, FlavorMode>,
) -> (KueueQueues, Vec<Fr>, Vec<(Fr, i64)>) {
    let docs = formats::input::parse_documents("queues", queues_text).unwrap();
    let mut objects = KueueObjects::default();
    objects.read("queues", &docs);
    assert!(objects.problems.is_empty(), "{:?}", objects.problems);
    let mut kq = KueueQueues::new(&objects.cluster_queues, &objects.cohorts).unwrap();
    for w in admitted {
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
    let one = PodSetDoc {
        name: "main".to_owned(),
        count: 1,
        requests: incoming.requests.clone(),
        assignment: assignment.clone(),
    };
    let pod_sets = if incoming.pod_sets.is_empty() {
        std::slice::from_ref(&one)
    } else {
        &incoming.pod_sets[..]
    };
    let mut need = Vec::new();
    let mut total: BTreeMap<Fr, i64> = BTreeMap::new();
    for ps in pod_sets {
        for (r, fm) in &ps.assignment {
            let fr = (kq.tree.flavor_id(&fm.flavor), kq.tree.resource_id(r));
            let v = ps.requests.get(r).map_or(0, |v| q(r, v));
            *total.entry(fr).or_default() += v * ps.count;
            if fm.mode == "Preempt" && !need.contains(&fr) {
                need.push(fr);
            }
        }
    }
    let requests = total.into_iter().collect();
    (kq, need, requests)
}

fn targets(c: &Case, queues_text: &str) -> Vec<String> {
    let (mut kq, need, requests) = setup(queues_text, &c.admitted, &c.incoming, &c.assignment);
    let cq = kq.find(&c.cluster_queue).unwrap();
    let created = c.incoming.created.unwrap_or(i64::MAX);
    let mut out: Vec<String> =
        preempt::targets(&mut kq, cq, &need, &requests, c.incoming.priority, created)
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
    let mut tally = Tally::default();
    for c in &f.cases {
        let own = c.queues.as_ref().map(|n| {
            let path = format!("{dir}/preemption_test_queues_{n}.yaml");
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
        });
        let got = targets(c, own.as_deref().unwrap_or(&queues));
        tally.case(&c.name, c.difference.as_deref(), &got, &c.preempted);
    }
    let (passed, differences) = tally.finish(&f.not_ported);
    eprintln!(
        "TestPreemption: {} ported, {passed} pass, {differences} documented differences, {} not ported",
        f.cases.len(),
        f.not_ported.len()
    );
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FairFile {
    kueue_commit: String,
    file: String,
    #[allow(dead_code)] // documentation for readers of the data
    units: String,
    cases: Vec<FairCase>,
    not_ported: Vec<NotPorted>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FairCase {
    name: String,
    test: String,
    /// `tests/kueue/preemption_fair_test_queues/QUEUES.yaml`.
    queues: String,
    /// `fairSharing.preemptionStrategies`; none: Kueue's default.
    #[serde(default)]
    strategies: Vec<String>,
    admitted: Vec<AdmittedDoc>,
    incoming: Incoming,
    cluster_queue: String,
    assignment: BTreeMap<String, FlavorMode>,
    /// Workload → Kueue's preemption reason.
    preempted: BTreeMap<String, String>,
    difference: Option<String>,
}

fn strategy(name: &str) -> Strategy {
    match name {
        "LessThanOrEqualToFinalShare" => Strategy::LessThanOrEqualToFinalShare,
        "LessThanInitialShare" => Strategy::LessThanInitialShare,
        other => panic!("strategies: `{other}` is not a Kueue preemption strategy"),
    }
}

/// The Workloads `fair_preempt::targets` picks, with their reasons; the queues' usage must be
/// as before.
fn fair_targets(c: &FairCase, queues_text: &str) -> BTreeMap<String, String> {
    let (mut kq, need, requests) = setup(queues_text, &c.admitted, &c.incoming, &c.assignment);
    let cq = kq.find(&c.cluster_queue).unwrap();
    let usage = |kq: &KueueQueues| -> Vec<BTreeMap<Fr, i64>> {
        let nonzero = |u: &BTreeMap<Fr, i64>| {
            u.iter()
                .filter(|e| *e.1 != 0)
                .map(|(k, v)| (*k, *v))
                .collect()
        };
        kq.tree.nodes.iter().map(|n| nonzero(&n.usage)).collect()
    };
    let before = usage(&kq);
    let strategies: Vec<Strategy> = c.strategies.iter().map(|s| strategy(s)).collect();
    let got = fair_preempt::targets(
        &mut kq,
        cq,
        &need,
        &requests,
        c.incoming.priority,
        c.incoming.created.unwrap_or(i64::MAX),
        &strategies,
    )
    .unwrap_or_default();
    assert_eq!(usage(&kq), before, "{}: the queues' usage changed", c.name);
    got.iter()
        .map(|t| (kq.admitted[t.admitted].name.clone(), t.reason.to_owned()))
        .collect()
}

#[test]
fn kueue_fair_preemption_cases_pick_kueues_targets_and_reasons() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kueue");
    let f: FairFile = serde_norway::from_str(
        &std::fs::read_to_string(format!("{dir}/preemption_fair_test.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(f.kueue_commit.len(), 40);
    assert_eq!(f.file, "pkg/scheduler/preemption/preemption_fair_test.go");
    let mut tally = Tally::default();
    let mut per_test: BTreeMap<&str, usize> = BTreeMap::new();
    for c in &f.cases {
        assert!(
            [
                "TestFairPreemptions",
                "TestFairPreemptionSkipsUnsatisfiableTournament"
            ]
            .contains(&c.test.as_str()),
            "{}: test `{}`",
            c.name,
            c.test
        );
        *per_test.entry(c.test.as_str()).or_default() += 1;
        let path = format!("{dir}/preemption_fair_test_queues/{}.yaml", c.queues);
        let queues = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let got = fair_targets(c, &queues);
        tally.case(&c.name, c.difference.as_deref(), &got, &c.preempted);
    }
    let (passed, differences) = tally.finish(&f.not_ported);
    eprintln!(
        "fair preemption: {per_test:?} ported, {passed} pass, {differences} documented differences, {} not ported",
        f.not_ported.len()
    );
}

/// The outcome of a ported suite: cases that agree, documented differences, failures.
#[derive(Default)]
struct Tally {
    passed: usize,
    differences: usize,
    failures: Vec<String>,
}

impl Tally {
    /// One case: it agrees with Kueue, or it is marked as a difference and must still differ.
    fn case<T: PartialEq + std::fmt::Debug>(
        &mut self,
        name: &str,
        difference: Option<&str>,
        got: &T,
        kueue: &T,
    ) {
        match difference {
            None if got == kueue => self.passed += 1,
            None => self
                .failures
                .push(format!("{name}: got {got:?}, Kueue {kueue:?}")),
            Some(why) => {
                assert_ne!(got, kueue, "{name}: marked ({why}) but agrees");
                self.differences += 1;
            }
        }
    }

    /// Fail on any failure or an unexplained case not ported; (passed, differences).
    fn finish(self, not_ported: &[NotPorted]) -> (usize, usize) {
        assert!(self.failures.is_empty(), "{}", self.failures.join("\n"));
        assert!(not_ported
            .iter()
            .all(|n| !n.reason.is_empty() && !n.name.is_empty()));
        (self.passed, self.differences)
    }
}
