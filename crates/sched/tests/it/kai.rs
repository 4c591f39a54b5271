//! KAI Scheduler's own fair-share and capacity tests, kept as data in `tests/kai/*.yaml` (facts
//! only, each case tagged with KAI's file, test and case name), run against railyard's
//! functions in [`Dialect::Kai`]. A case passes, or carries a one-line `difference:` that this
//! test checks still holds (so a difference that goes away is noticed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sched::{
    admit_in, divide, divide_over_quota, Dialect, QueueSpec, QueueTree, QuotaRequest, Resource,
    ResourceQuota, Resources, ShareInput, UNLIMITED,
};
use serde::Deserialize;

/// Floating-point slack when comparing with KAI's expected numbers.
const TOLERANCE: f64 = 1e-6;

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
    call: Call,
    #[serde(default)]
    total: BTreeMap<String, f64>,
    #[serde(default)]
    queues: Vec<Queue>,
    #[serde(default)]
    job: Option<JobAsk>,
    expect: Expect,
    #[serde(default)]
    difference: Option<String>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Call {
    /// Deserved, then over quota, per resource in `total`.
    Divide,
    /// Over quota only, on top of each queue's `share`.
    DivideOverQuota,
    /// Admission of `job` to its queue (limits, then the non-preemptible quota rule).
    Admit,
    /// Fair share over the queue tree (leaf requests are the demand).
    FairShare,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Queue {
    uid: String,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default)]
    priority: i32,
    #[serde(default)]
    created: Option<i64>,
    #[serde(default)]
    gpu: Option<Amounts>,
    #[serde(default)]
    cpu: Option<Amounts>,
    #[serde(default)]
    memory: Option<Amounts>,
}

/// One resource of a queue, KAI's `ResourceShare` fields that decide.
#[derive(Debug, Deserialize, Clone, Copy, Default)]
#[serde(deny_unknown_fields)]
struct Amounts {
    #[serde(default)]
    quota: f64,
    #[serde(default)]
    share: f64,
    #[serde(default)]
    weight: f64,
    #[serde(default)]
    limit: f64,
    #[serde(default)]
    request: f64,
    #[serde(default)]
    allocated: f64,
    #[serde(default)]
    allocated_non_preemptible: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobAsk {
    queue: String,
    preemptible: bool,
    request: BTreeMap<String, f64>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[serde(default)]
    remaining: BTreeMap<String, f64>,
    #[serde(default)]
    shares: BTreeMap<String, BTreeMap<String, f64>>,
    /// For `admit`: `ok`, or the refusal (`over_limit` / `non_preemptible_over_quota`).
    #[serde(default)]
    admit: Option<String>,
    /// For `admit`: the queue named by the refusal.
    #[serde(default)]
    queue: Option<String>,
    /// For `admit`: the resource named by the refusal.
    #[serde(default)]
    resource: Option<String>,
}

fn resource(name: &str) -> Resource {
    match name {
        "gpu" => Resource::Gpu,
        "cpu" => Resource::Cpu,
        "memory" => Resource::Memory,
        other => panic!("unknown resource `{other}` in the KAI data"),
    }
}

impl Queue {
    fn amounts(&self, r: Resource) -> Amounts {
        match r {
            Resource::Gpu => self.gpu,
            Resource::Cpu => self.cpu,
            Resource::Memory => self.memory,
        }
        .unwrap_or_default()
    }
}

/// Run one case; `Ok` when railyard's answer equals KAI's, `Err` with what differs.
fn run(case: &Case) -> Result<(), String> {
    match case.call {
        Call::Divide | Call::DivideOverQuota => run_division(case),
        Call::Admit => run_admit(case),
        Call::FairShare => run_fair_share(case),
    }
}

/// The tree of a case's queues (KAI's dialect: child quotas above the parent's are warnings).
fn tree_of(case: &Case) -> Result<QueueTree, String> {
    let specs: Vec<QueueSpec> = case
        .queues
        .iter()
        .map(|q| {
            let rq = |r: Resource| {
                let a = q.amounts(r);
                Some(ResourceQuota {
                    quota: a.quota,
                    limit: a.limit,
                    over_quota_weight: a.weight,
                })
            };
            QueueSpec {
                name: q.uid.clone(),
                parent: q.parent.clone(),
                priority: q.priority,
                resources: [rq(Resource::Gpu), rq(Resource::Cpu), rq(Resource::Memory)],
                creation_time: q.created,
                uid: None,
            }
        })
        .collect();
    QueueTree::new_in(specs, Dialect::Kai)
        .map(|(tree, _warnings)| tree)
        .map_err(|p| format!("tree refused: {}", p[0]))
}

fn run_fair_share(case: &Case) -> Result<(), String> {
    let tree = tree_of(case)?;
    let mut demand = vec![Resources::default(); tree.queues.len()];
    let mut capacity = Resources::default();
    for (name, &v) in &case.total {
        capacity.set(resource(name), v);
    }
    let mut problems = Vec::new();
    for (i, q) in case.queues.iter().enumerate() {
        for r in Resource::ALL {
            let own = q.amounts(r).request;
            if tree.children[i].is_empty() {
                demand[i].set(r, own);
            } else {
                let sum: f64 = tree.children[i]
                    .iter()
                    .map(|c| case.queues[c.index()].amounts(r).request)
                    .sum();
                if (sum - own).abs() > TOLERANCE {
                    problems.push(format!(
                        "{} request {own} is not its children's sum {sum}",
                        q.uid
                    ));
                }
            }
        }
    }
    let shares = sched::fair_share_in(&tree, &demand, &capacity, Dialect::Kai);
    for (uid, want) in &case.expect.shares {
        let Some(q) = tree.find(uid) else {
            problems.push(format!("no queue `{uid}`"));
            continue;
        };
        for (name, &want) in want {
            let got = shares[q.index()].get(resource(name));
            if (got - want).abs() > TOLERANCE {
                problems.push(format!("{name} share of `{uid}` {got}, KAI {want}"));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn run_division(case: &Case) -> Result<(), String> {
    let mut problems = Vec::new();
    for (name, &amount) in &case.total {
        let r = resource(name);
        let inputs: Vec<ShareInput> = case
            .queues
            .iter()
            .map(|q| {
                let a = q.amounts(r);
                ShareInput {
                    quota: a.quota,
                    limit: a.limit,
                    over_quota_weight: a.weight,
                    request: a.request,
                    priority: q.priority,
                    creation_time: q.created,
                    uid: q.uid.clone(),
                }
            })
            .collect();
        let (shares, remaining) = if case.call == Call::Divide {
            let d = divide(Dialect::Kai, amount, &inputs);
            (d.shares, d.remaining)
        } else {
            let mut shares: Vec<f64> = case.queues.iter().map(|q| q.amounts(r).share).collect();
            let remaining = divide_over_quota(Dialect::Kai, amount, &inputs, &mut shares);
            (shares, remaining)
        };
        if let Some(&want) = case.expect.remaining.get(name) {
            if (remaining - want).abs() > TOLERANCE {
                problems.push(format!("{name} remaining {remaining}, KAI {want}"));
            }
        }
        for (uid, want) in &case.expect.shares {
            let Some(&want) = want.get(name) else {
                continue;
            };
            let i = case
                .queues
                .iter()
                .position(|q| &q.uid == uid)
                .unwrap_or_else(|| panic!("{}: no queue `{uid}`", case.case));
            if (shares[i] - want).abs() > TOLERANCE {
                problems.push(format!("{name} share of `{uid}` {}, KAI {want}", shares[i]));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn run_admit(case: &Case) -> Result<(), String> {
    let tree = tree_of(case)?;
    // KAI's `allocated` is a queue's own subtree total: give it to the queue itself and take
    // its children's totals off, so railyard's sums over the subtree come back to it.
    let own = |pick: fn(&Amounts) -> f64| -> Vec<Resources> {
        let mut out = vec![Resources::default(); tree.queues.len()];
        for (i, q) in case.queues.iter().enumerate() {
            for r in Resource::ALL {
                let mut v = pick(&q.amounts(r));
                for c in &tree.children[i] {
                    v -= pick(&case.queues[c.index()].amounts(r));
                }
                out[i].set(r, v);
            }
        }
        out
    };
    let usage = own(|a| a.allocated);
    let non_preemptible = own(|a| a.allocated_non_preemptible);
    let job = case.job.as_ref().expect("an admit case has a job");
    let mut request = Resources::default();
    for (k, &v) in &job.request {
        request.set(resource(k), v);
    }
    let ask = QuotaRequest {
        queue: &job.queue,
        request,
        preemptible: job.preemptible,
    };
    let got = match admit_in(&tree, &usage, &non_preemptible, &ask, Dialect::Kai) {
        Ok(()) => ("ok".to_owned(), None, None),
        Err(sched::AdmissionError::OverLimit {
            queue, resource, ..
        }) => (
            "over_limit".to_owned(),
            Some(queue),
            Some(resource.to_owned()),
        ),
        Err(sched::AdmissionError::NonPreemptibleOverQuota {
            queue, resource, ..
        }) => (
            "non_preemptible_over_quota".to_owned(),
            Some(queue),
            Some(resource.to_owned()),
        ),
        Err(e) => (format!("error: {e}"), None, None),
    };
    let want = (
        case.expect.admit.clone().unwrap_or_default(),
        case.expect.queue.clone(),
        case.expect.resource.clone(),
    );
    let matches = got.0 == want.0
        && (want.1.is_none() || got.1 == want.1)
        && (want.2.is_none() || got.2 == want.2);
    if matches {
        Ok(())
    } else {
        Err(format!("railyard {got:?}, KAI {want:?}"))
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
fn kai_cases_pass_or_differ_as_documented() {
    let files = data_files();
    assert!(!files.is_empty(), "KAI data files: {files:?}");
    let mut failures = Vec::new();
    let mut n_cases = 0;
    for path in files {
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
    assert!(n_cases >= 100, "only {n_cases} KAI cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

mod props {
    //! KAI iterates its queues in Go's random map order, so its division may not depend on the
    //! order siblings are listed in; railyard's KAI dialect neither.

    use proptest::prelude::*;
    use sched::{divide, Dialect, ShareInput};

    fn input(
        i: usize,
        (quota, limit, weight, request, priority): (i32, i32, u8, u8, i32),
    ) -> ShareInput {
        ShareInput {
            quota: f64::from(quota),
            limit: f64::from(limit),
            over_quota_weight: f64::from(weight),
            request: f64::from(request),
            priority,
            creation_time: Some(i as i64 % 2),
            uid: format!("q{i}"),
        }
    }

    proptest! {
        #[test]
        fn kai_division_does_not_depend_on_sibling_order(
            queues in prop::collection::vec((-1i32..6, -1i32..14, 0u8..4, 0u8..14, 0i32..3), 1..7),
            amount in 0u32..40,
            rotate in 0usize..7,
        ) {
            let inputs: Vec<ShareInput> = queues.iter().enumerate().map(|(i, &q)| input(i, q)).collect();
            let mut moved = inputs.clone();
            moved.reverse();
            let n = moved.len();
            moved.rotate_left(rotate % n);
            let a = divide(Dialect::Kai, f64::from(amount), &inputs);
            let b = divide(Dialect::Kai, f64::from(amount), &moved);
            for (i, q) in inputs.iter().enumerate() {
                let j = moved.iter().position(|m| m.uid == q.uid).expect("same queues");
                prop_assert!((a.shares[i] - b.shares[j]).abs() < 1e-9, "{}: {} vs {}", q.uid, a.shares[i], b.shares[j]);
            }
            prop_assert!((a.remaining - b.remaining).abs() < 1e-9);
            // Over quota, nothing is handed out beyond the amount.
            let deserved: f64 = inputs.iter().map(|q| {
                let quota = if q.quota < 0.0 { f64::from(amount) } else { q.quota };
                let requestable = if q.limit < 0.0 { q.request } else { q.request.min(q.limit) };
                quota.min(requestable)
            }).sum();
            let given: f64 = a.shares.iter().sum();
            prop_assert!(given <= deserved.max(f64::from(amount)) + 1e-9, "given {given}, deserved {deserved}, amount {amount}");
        }
    }
}

/// Weights whose sum overflows still divide in proportion (only their ratios matter).
#[test]
fn kai_division_with_enormous_weights_stays_finite() {
    let q = |uid: &str, weight: f64| ShareInput {
        quota: 0.0,
        limit: UNLIMITED,
        over_quota_weight: weight,
        request: 100.0,
        priority: 0,
        creation_time: None,
        uid: uid.to_owned(),
    };
    let d = divide(
        Dialect::Kai,
        8.0,
        &[q("a", f64::MAX), q("b", f64::MAX / 3.0)],
    );
    assert!(d.shares.iter().all(|s| s.is_finite()), "{d:?}");
    assert_eq!(d.shares, vec![6.0, 2.0]);
}
