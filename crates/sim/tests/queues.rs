//! The user's queues in the simulator (`SimConfig::queues`): small scenarios whose outcomes are
//! worked out by hand in the comments, one per rule, each run with `check_invariants` on.

mod common;

use std::collections::BTreeMap;

use common::{fixed_network, job, one_rack as cluster, record};
use sched::{Dialect, QueueSpec, ResourceQuota, Resources, UNLIMITED};
use sim::engine::{simulate, Order, Outcome, SimConfig, SimError, SimResult};
use sim::queues::{
    KueuePreemption, QueueConfig, QueueRules, ReclaimWithinCohort, WithinClusterQueue,
};
use sim::{SimTime, TraceJob};
use topology::Cluster;

/// A queue with a GPU quota, limit and weight (CPU and memory undeclared).
fn queue(name: &str, parent: Option<&str>, quota: f64, limit: f64, weight: f64) -> QueueSpec {
    QueueSpec {
        name: name.into(),
        parent: parent.map(Into::into),
        priority: 0,
        resources: [
            Some(ResourceQuota {
                quota,
                limit,
                over_quota_weight: weight,
            }),
            None,
            None,
        ],
        creation_time: None,
        uid: None,
    }
}

/// A checked best-effort run under these queues.
fn config(queues: QueueConfig) -> SimConfig {
    SimConfig {
        queues: Some(queues),
        ..common::checked()
    }
}

fn run(c: &Cluster, trace: &[TraceJob], cfg: &SimConfig) -> Result<SimResult, SimError> {
    simulate(c, trace, cfg, &mut fixed_network(1.0, 1.0), &mut |_| {})
}

fn kai(specs: Vec<QueueSpec>) -> QueueConfig {
    QueueConfig {
        specs,
        dialect: Dialect::Kai,
        ..QueueConfig::default()
    }
}

#[test]
fn a_limit_blocks_a_start_and_a_job_above_it_fails() {
    // 16 GPUs. team-a: quota 4, limit 8. a1 (8 GPUs, 0–100 s) fills the limit; a2 (4 GPUs)
    // arrives at 1 s with 8 GPUs free but would take team-a to 12 > 8: it starts when a1 ends,
    // 100–110 s. a3 asks 12 GPUs, above the limit on an empty cluster: failed at arrival.
    // Without the queues a2 starts at once.
    let c = cluster(2);
    let specs = vec![
        queue("dept", None, 16.0, UNLIMITED, 1.0),
        queue("team-a", Some("dept"), 4.0, 8.0, 1.0),
        queue("team-b", Some("dept"), 4.0, UNLIMITED, 1.0),
    ];
    let trace = [
        job("a1", 0.0, 100.0, 8, "team-a"),
        job("a2", 1.0, 10.0, 4, "team-a"),
        job("a3", 2.0, 10.0, 12, "team-a"),
    ];
    let r = run(&c, &trace, &config(kai(specs))).unwrap();
    assert_eq!(record(&r, "a1").start_s, Some(0.0));
    assert_eq!(record(&r, "a2").start_s, Some(100.0));
    assert_eq!(record(&r, "a2").end_s, Some(110.0));
    assert_eq!(record(&r, "a3").outcome, Outcome::Failed);
    let mut free = config(QueueConfig::default());
    free.queues = None;
    let r = run(&c, &trace, &free).unwrap();
    assert_eq!(record(&r, "a2").start_s, Some(1.0));
}

/// Kueue: cohort `all` (declares nothing: passes through, as `formats` reads a cohort that is
/// only named), ClusterQueues `cq-a` and `cq-b` with nominal 8 GPUs each and no borrowing limit
/// unless `b_limit` is given.
fn kueue(reclaim: ReclaimWithinCohort, b_limit: f64) -> QueueConfig {
    let mut cohort = queue("all", None, UNLIMITED, UNLIMITED, 1.0);
    cohort.resources = [cohort.resources[0]; 3];
    QueueConfig {
        specs: vec![
            cohort,
            queue("cq-a", Some("all"), 8.0, UNLIMITED, 1.0),
            queue("cq-b", Some("all"), 8.0, b_limit, 1.0),
        ],
        dialect: Dialect::Kueue,
        kept: BTreeMap::new(),
        kueue_preemption: BTreeMap::from([(
            "cq-a".to_owned(),
            KueuePreemption {
                within_cluster_queue: WithinClusterQueue::Never,
                reclaim_within_cohort: reclaim,
            },
        )]),
    }
}

#[test]
fn kueue_borrowing_then_reclaim_preempts_the_borrower() {
    // 24 GPUs, so quota, not room, decides. b1 and b2 (8 GPUs, 1000 s each) start at 0 and 1:
    // cq-b uses 16, borrowing cq-a's unused 8. a1 (8 GPUs) arrives at 10 s: the cohort lends
    // only 16, so a1 waits unless cq-a may reclaim. With `reclaimWithinCohort: Any` cq-a (0 + 8
    // within its nominal 8) stops the cheaper borrower, b1 (ties by name), and starts at 10 s;
    // b1 comes back when a1 ends (110 s) and runs 110–1110 s.
    let c = cluster(3);
    let trace = [
        job("b1", 0.0, 1000.0, 8, "cq-b"),
        job("b2", 1.0, 1000.0, 8, "cq-b"),
        job("a1", 10.0, 100.0, 8, "cq-a"),
    ];
    let r = run(
        &c,
        &trace,
        &config(kueue(ReclaimWithinCohort::Any, UNLIMITED)),
    )
    .unwrap();
    assert_eq!(record(&r, "a1").start_s, Some(10.0));
    assert_eq!(record(&r, "b1").preemptions, 1);
    assert_eq!(record(&r, "b1").end_s, Some(1110.0));
    assert_eq!(record(&r, "b2").preemptions, 0);
    assert_eq!(r.summary.preemptions, 1);
    // Kueue's default (`Never`): a1 waits for a borrower to end, at 1000 s (b1).
    let r = run(
        &c,
        &trace,
        &config(kueue(ReclaimWithinCohort::Never, UNLIMITED)),
    )
    .unwrap();
    assert_eq!(record(&r, "a1").start_s, Some(1000.0));
    assert_eq!(r.summary.preemptions, 0);
    // A borrowing limit of 0 (limit = nominal 8): b2 never borrows and waits for b1.
    let r = run(&c, &trace, &config(kueue(ReclaimWithinCohort::Any, 8.0))).unwrap();
    assert_eq!(record(&r, "b2").start_s, Some(1000.0));
    assert_eq!(record(&r, "a1").start_s, Some(10.0));
    assert_eq!(r.summary.preemptions, 0);
}

#[test]
fn kueue_lending_limit_keeps_part_of_the_quota() {
    // As above, but cq-a lends only 4 of its 8 (keeps 4): cq-b may borrow 4, so b2 (8 GPUs)
    // cannot start until b1 ends at 1000 s; b3 (4 GPUs) can, at 2 s.
    let c = cluster(3);
    let mut q = kueue(ReclaimWithinCohort::Never, UNLIMITED);
    q.kept.insert(
        "cq-a".to_owned(),
        Resources {
            gpu: 4.0,
            ..Resources::default()
        },
    );
    let trace = [
        job("b1", 0.0, 1000.0, 8, "cq-b"),
        job("b2", 1.0, 1000.0, 8, "cq-b"),
        job("b3", 2.0, 10.0, 4, "cq-b"),
    ];
    let r = run(&c, &trace, &config(q)).unwrap();
    assert_eq!(record(&r, "b3").start_s, Some(2.0));
    assert_eq!(record(&r, "b2").start_s, Some(1000.0));
}

#[test]
fn kai_splits_the_over_quota_remainder_by_weight() {
    // 16 GPUs; top-level queues a (weight 1) and b (weight 3), quota 0, no limits. a's 16
    // one-GPU jobs fill the cluster at 0 s. b's one-GPU jobs arrive one a second from 10 s;
    // with k of them, b's fair share is min(k, 12) (KAI: parts 16·1/4 = 4 and 16·3/4 = 12),
    // a's the rest, so b_k (k ≤ 12) reclaims one of a's GPUs (the fair-share order tries b,
    // below its share, before a's preempted jobs). b13 finds b at its share of 12: it waits. At
    // the horizon a holds 4 GPUs and b 12: the weights' 1:3.
    let c = cluster(2);
    let mut trace: Vec<TraceJob> = (0..16)
        .map(|k| job(&format!("a{k:02}"), 0.0, 10_000.0, 1, "a"))
        .collect();
    trace.extend((1..=13).map(|k| job(&format!("b{k:02}"), 9.0 + k as f64, 10_000.0, 1, "b")));
    let mut cfg = config(kai(vec![
        queue("a", None, 0.0, UNLIMITED, 1.0),
        queue("b", None, 0.0, UNLIMITED, 3.0),
    ]));
    cfg.horizon = Some(SimTime::from_secs_f64(100.0));
    cfg.policy.order = Order::FairShare;
    let r = run(&c, &trace, &cfg).unwrap();
    for k in 1..=12 {
        assert_eq!(
            record(&r, &format!("b{k:02}")).start_s,
            Some(9.0 + k as f64),
            "b{k:02}"
        );
    }
    assert_eq!(record(&r, "b13").start_s, None);
    let a_preempted: u32 = r
        .jobs
        .iter()
        .filter(|j| j.queue == "a")
        .map(|j| j.preemptions)
        .sum();
    assert_eq!(a_preempted, 12);
    let share = &r.queues.as_ref().unwrap().gpu_share;
    let last = |q: &str| {
        share
            .iter()
            .find(|(n, _)| n == q)
            .unwrap()
            .1
            .last()
            .unwrap()
            .1
    };
    assert!((last("a") - 4.0 / 16.0).abs() < 1e-9, "{}", last("a"));
    assert!((last("b") - 12.0 / 16.0).abs() < 1e-9, "{}", last("b"));
    let per = r.per_queue();
    assert_eq!(
        per.iter().map(|q| q.preemptions).collect::<Vec<_>>(),
        [12, 0]
    );
}

#[test]
fn kai_non_preemptible_jobs_stay_within_quota() {
    // Queue q: quota 4, no limit, 16 GPUs. np1 (non-preemptible, 4 GPUs) runs at 0 s; np2
    // (non-preemptible, 1 GPU) would take q's non-preemptible use to 5 > 4: it waits for np1
    // (100 s); p1 (preemptible, 1 GPU) starts at once. np3 (8 GPUs) can never fit the quota.
    let c = cluster(2);
    let np = |name: &str, at: f64, gpus: u32| TraceJob {
        preemptible: false,
        ..job(name, at, 100.0, gpus, "q")
    };
    let trace = [
        np("np1", 0.0, 4),
        np("np2", 1.0, 1),
        job("p1", 2.0, 100.0, 1, "q"),
        np("np3", 3.0, 8),
    ];
    let cfg = config(kai(vec![queue("q", None, 4.0, UNLIMITED, 1.0)]));
    let r = run(&c, &trace, &cfg).unwrap();
    assert_eq!(record(&r, "np2").start_s, Some(100.0));
    assert_eq!(record(&r, "p1").start_s, Some(2.0));
    assert_eq!(record(&r, "np3").outcome, Outcome::Failed);
}

#[test]
fn a_trace_queue_that_is_not_a_leaf_is_an_error() {
    let c = cluster(1);
    let cfg = config(kai(vec![
        queue("dept", None, 8.0, UNLIMITED, 1.0),
        queue("team", Some("dept"), 8.0, UNLIMITED, 1.0),
    ]));
    let e = run(&c, &[job("j", 0.0, 1.0, 1, "dept")], &cfg).unwrap_err();
    assert_eq!(
        e.to_string(),
        "job \"j\" (line 0): queue `dept` is not a leaf queue of the queue files"
    );
}

#[test]
fn the_rules_check_finds_use_the_dialect_does_not_allow() {
    let use_of = |gpus: &[f64]| -> Vec<Resources> {
        gpus.iter()
            .map(|&gpu| Resources {
                gpu,
                ..Resources::default()
            })
            .collect()
    };
    // KAI: team-a above its limit of 8; non-preemptible use above quota 4.
    let rules = QueueRules::new(&kai(vec![
        queue("dept", None, 16.0, UNLIMITED, 1.0),
        queue("team-a", Some("dept"), 4.0, 8.0, 1.0),
    ]))
    .unwrap();
    let none = use_of(&[0.0, 0.0]);
    assert!(rules.check(&use_of(&[0.0, 8.0]), &none).is_ok());
    let e = rules.check(&use_of(&[0.0, 9.0]), &none).unwrap_err();
    assert_eq!(e.invariant, "queue limit exceeded");
    let e = rules
        .check(&use_of(&[0.0, 5.0]), &use_of(&[0.0, 5.0]))
        .unwrap_err();
    assert_eq!(e.invariant, "non-preemptible use above quota");
    // Kueue: the cohort lends 16; 17 in use is borrowing beyond it.
    let rules = QueueRules::new(&kueue(ReclaimWithinCohort::Never, UNLIMITED)).unwrap();
    let none = use_of(&[0.0, 0.0, 0.0]);
    assert!(rules.check(&use_of(&[0.0, 0.0, 16.0]), &none).is_ok());
    let e = rules.check(&use_of(&[0.0, 1.0, 16.0]), &none).unwrap_err();
    assert_eq!(e.invariant, "borrowing beyond the cohort");
}
