//! KAI Scheduler's pending-job order tests (its queue order and its allocate action's job
//! order), kept as data in `tests/kai/order/job_order.yaml` (facts only, each case tagged with KAI's
//! file and test name), run against [`sched::next_pending`] in [`Dialect::Kai`]: the jobs must
//! come out in KAI's order. Also the order's Kueue dialect (railyard's fair-share order) on a
//! hand-made case.

use std::path::Path;

use sched::{
    next_pending, Dialect, GangStanding, GpuRequest, PendingJob, QueueSpec, QueueStanding,
    QueueTree, ResourceQuota, Resources,
};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    files: Vec<String>,
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
    queues: Vec<Queue>,
    jobs: Vec<JobSpec>,
    #[serde(default)]
    total: Amounts,
    #[serde(default)]
    min_node_gpu_memory_mib: Option<u32>,
    expect: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Queue {
    name: String,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default)]
    priority: i32,
    #[serde(default)]
    gpu: Share,
    #[serde(default)]
    cpu: Share,
    #[serde(default)]
    memory: Share,
}

/// One resource of a queue; absent fields are 0, as in KAI's zero `ResourceShare`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Share {
    #[serde(default)]
    deserved: f64,
    #[serde(default)]
    fair_share: f64,
    #[serde(default)]
    max_allowed: f64,
    #[serde(default)]
    allocated: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Amounts {
    #[serde(default)]
    gpu: f64,
    #[serde(default)]
    cpu: f64,
    #[serde(default)]
    memory: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobSpec {
    name: String,
    queue: String,
    #[serde(default)]
    priority: i32,
    #[serde(default)]
    gpus: f64,
    #[serde(default)]
    gpu_memory_mib: Option<u32>,
    #[serde(default)]
    devices: Option<u32>,
}

fn quota(s: &Share) -> ResourceQuota {
    ResourceQuota {
        quota: s.deserved,
        limit: s.max_allowed,
        over_quota_weight: 1.0,
    }
}

fn amounts(gpu: f64, cpu: f64, memory: f64) -> Resources {
    Resources { gpu, cpu, memory }
}

/// The order KAI pops the case's jobs in, by railyard's rules.
fn pop_order(case: &Case) -> Result<Vec<String>, String> {
    let specs: Vec<QueueSpec> = case
        .queues
        .iter()
        .map(|q| QueueSpec {
            name: q.name.clone(),
            parent: q.parent.clone(),
            priority: q.priority,
            resources: [
                Some(quota(&q.gpu)),
                Some(quota(&q.cpu)),
                Some(quota(&q.memory)),
            ],
            creation_time: None,
            uid: None,
        })
        .collect();
    let (tree, _) =
        QueueTree::new_in(specs, Dialect::Kai).map_err(|p| format!("queue tree: {p:?}"))?;
    let fair: Vec<Resources> = case
        .queues
        .iter()
        .map(|q| amounts(q.gpu.fair_share, q.cpu.fair_share, q.memory.fair_share))
        .collect();
    let allocated: Vec<Resources> = case
        .queues
        .iter()
        .map(|q| amounts(q.gpu.allocated, q.cpu.allocated, q.memory.allocated))
        .collect();
    let mut jobs: Vec<(String, PendingJob)> = Vec::new();
    for j in &case.jobs {
        let queue = tree
            .find(&j.queue)
            .ok_or_else(|| format!("unknown queue {}", j.queue))?;
        let gpus = match j.gpu_memory_mib {
            // KAI counts GPU memory against the smallest GPU memory of a node.
            Some(mib) => GpuRequest::MemoryMib {
                mib,
                devices: j.devices.unwrap_or(1),
            }
            .gpus(
                case.min_node_gpu_memory_mib
                    .ok_or("no min node GPU memory")?,
            ),
            None => j.gpus,
        };
        jobs.push((
            j.name.clone(),
            PendingJob {
                queue,
                priority: j.priority,
                request: amounts(gpus, 0.0, 0.0),
                gang: GangStanding::Below,
            },
        ));
    }
    let standing = QueueStanding {
        tree: &tree,
        fair_share: &fair,
        allocated: &allocated,
        total: amounts(case.total.gpu, case.total.cpu, case.total.memory),
    };
    let mut out = Vec::new();
    loop {
        let pending: Vec<PendingJob> = jobs.iter().map(|(_, p)| p.clone()).collect();
        let Some(k) = next_pending(Dialect::Kai, &standing, &pending) else {
            break;
        };
        out.push(jobs.remove(k).0);
    }
    Ok(out)
}

#[test]
fn kais_job_order_tests_pop_in_kais_order() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kai/order/job_order.yaml");
    let text = std::fs::read_to_string(&path).expect("job_order.yaml");
    let file: CaseFile = serde_norway::from_str(&text).expect("job_order.yaml parses");
    assert_eq!(file.files.len(), 2);
    let mut failures = Vec::new();
    for case in &file.cases {
        match pop_order(case) {
            Ok(got) if got == case.expect => {}
            Ok(got) => failures.push(format!(
                "{}: popped {got:?}, KAI {:?}",
                case.test, case.expect
            )),
            Err(e) => failures.push(format!("{}: {e}", case.test)),
        }
    }
    for n in &file.not_ported {
        assert!(!n.reason.is_empty(), "{}: reason", n.test);
    }
    eprintln!("KAI job-order cases: {}", file.cases.len());
    assert!(file.cases.len() >= 20, "only {} cases", file.cases.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn kueue_dialect_orders_by_use_over_fair_share_then_priority_then_age() {
    // Two leaves with fair shares 4 and 2 GPUs: `a` holds 2 (ratio 0.5), `b` 0 (ratio 0); `b`'s
    // jobs go first, the higher priority first; once `b` holds 2 (ratio 1), `a` goes first.
    let leaf = |name: &str| QueueSpec {
        name: name.to_owned(),
        parent: None,
        priority: 0,
        resources: [Some(ResourceQuota::default()), None, None],
        creation_time: None,
        uid: None,
    };
    let tree = QueueTree::new(vec![leaf("a"), leaf("b")]).expect("tree");
    let fair = [amounts(4.0, 0.0, 0.0), amounts(2.0, 0.0, 0.0)];
    let job = |q: u32, priority: i32| PendingJob {
        queue: sched::QueueId(q),
        priority,
        request: amounts(1.0, 0.0, 0.0),
        gang: GangStanding::Below,
    };
    let jobs = [job(0, 9), job(1, 1), job(1, 5), job(0, 0)];
    let mut allocated = [amounts(2.0, 0.0, 0.0), amounts(0.0, 0.0, 0.0)];
    let standing = |allocated: &[Resources; 2]| {
        next_pending(
            Dialect::Kueue,
            &QueueStanding {
                tree: &tree,
                fair_share: &fair,
                allocated,
                total: amounts(8.0, 0.0, 0.0),
            },
            &jobs,
        )
    };
    assert_eq!(standing(&allocated), Some(2));
    allocated[1].gpu = 2.0;
    assert_eq!(standing(&allocated), Some(0));
    assert_eq!(
        next_pending(
            Dialect::Kueue,
            &QueueStanding {
                tree: &tree,
                fair_share: &fair,
                allocated: &allocated,
                total: amounts(8.0, 0.0, 0.0),
            },
            &[],
        ),
        None
    );
}

#[test]
fn kai_puts_a_job_at_its_gang_after_a_job_below_it() {
    // KAI's `elastic` job order: of two jobs of one queue and priority, the one whose minimum
    // already runs (put back for its extra pods) waits for the other's minimum, even though it
    // is older; one above its minimum comes after one at it.
    let leaf = QueueSpec {
        name: "q".to_owned(),
        parent: None,
        priority: 0,
        resources: [Some(ResourceQuota::default()), None, None],
        creation_time: None,
        uid: None,
    };
    let tree = QueueTree::new(vec![leaf]).expect("tree");
    let zero = [amounts(0.0, 0.0, 0.0)];
    let job = |gang| PendingJob {
        queue: sched::QueueId(0),
        priority: 50,
        request: amounts(1.0, 0.0, 0.0),
        gang,
    };
    let standing = QueueStanding {
        tree: &tree,
        fair_share: &zero,
        allocated: &zero,
        total: amounts(8.0, 0.0, 0.0),
    };
    let next = |jobs: &[PendingJob]| next_pending(Dialect::Kai, &standing, jobs);
    assert_eq!(
        next(&[job(GangStanding::At), job(GangStanding::Below)]),
        Some(1)
    );
    assert_eq!(
        next(&[job(GangStanding::Above), job(GangStanding::At)]),
        Some(1)
    );
    assert_eq!(
        next(&[job(GangStanding::Below), job(GangStanding::Below)]),
        Some(0)
    );
}
