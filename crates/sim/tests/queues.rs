//! The user's queues in the simulator (`SimConfig::queues`): small scenarios whose outcomes are
//! worked out by hand in the comments, one per rule, each run with `check_invariants` on.

mod common;

use std::collections::BTreeMap;

use common::{fixed_network, job, one_rack as cluster, record};
use sched::kueue::preempt::{Policy, PreemptionPolicy as KueuePolicy};
use sched::kueue::{ClusterQueueSpec, Quota, ResourceGroup};
use sched::{Dialect, QueueSpec, ResourceQuota, Resources, UNLIMITED};
use sim::engine::{simulate, Order, Outcome, SimConfig, SimError, SimResult};
use sim::queues::kueue::{KueueFlavor, KueueModel, KueueRun};
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
        kueue: None,
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

// Kueue's objects (`QueueConfig::kueue`): admission, flavors and quota preemption are
// `sched::kueue`'s, the model `place --queues` uses.

/// A ClusterQueue covering `nvidia.com/gpu` with these flavors in order: (name, nominal,
/// borrowingLimit, lendingLimit).
fn cq(
    name: &str,
    cohort: Option<&str>,
    flavors: &[(&str, i64, Option<i64>, Option<i64>)],
    preemption: KueuePolicy,
) -> ClusterQueueSpec {
    ClusterQueueSpec {
        name: name.into(),
        cohort: cohort.map(Into::into),
        groups: vec![ResourceGroup {
            covered: vec![GPU.into()],
            flavors: flavors
                .iter()
                .map(|&(f, nominal, borrowing_limit, lending_limit)| {
                    let q = Quota {
                        nominal,
                        borrowing_limit,
                        lending_limit,
                    };
                    (f.to_owned(), BTreeMap::from([(GPU.to_owned(), q)]))
                })
                .collect(),
        }],
        preemption,
        namespace_selector: Some(vec![]),
        fair_weight_milli: 1000,
        ..ClusterQueueSpec::default()
    }
}

const GPU: &str = "nvidia.com/gpu";

/// Queues for a run under Kueue's objects: the tree `formats` would read (ClusterQueues as
/// leaves of their cohort) and the objects; `labels` are each flavor's node labels.
fn kueue_objects(cqs: Vec<ClusterQueueSpec>, labels: &[(&str, &str, &str)]) -> QueueConfig {
    let mut specs = Vec::new();
    let mut cohorts: Vec<String> = Vec::new();
    for q in &cqs {
        if let Some(c) = &q.cohort {
            if !cohorts.contains(c) {
                cohorts.push(c.clone());
                let mut all = queue(c, None, UNLIMITED, UNLIMITED, 1.0);
                all.resources = [all.resources[0]; 3];
                specs.push(all);
            }
        }
        let nominal: i64 = q.groups[0].flavors.iter().map(|f| f.1[GPU].nominal).sum();
        specs.push(queue(
            &q.name,
            q.cohort.as_deref(),
            nominal as f64,
            UNLIMITED,
            1.0,
        ));
    }
    let mut flavors: Vec<KueueFlavor> = Vec::new();
    for q in &cqs {
        for (f, _) in &q.groups[0].flavors {
            if flavors.iter().all(|x| &x.name != f) {
                flavors.push(KueueFlavor {
                    name: f.clone(),
                    node_labels: labels
                        .iter()
                        .filter(|l| l.0 == f)
                        .map(|l| (l.1.to_owned(), l.2.to_owned()))
                        .collect(),
                    ..KueueFlavor::default()
                });
            }
        }
    }
    QueueConfig {
        specs,
        dialect: Dialect::Kueue,
        kueue: Some(KueueModel {
            cluster_queues: cqs,
            cohorts: Vec::new(),
            flavors,
            gpu_resource: GPU.into(),
            fair_sharing: false,
            fair_strategies: Vec::new(),
        }),
        ..QueueConfig::default()
    }
}

/// `nodes` hosts of 8 GPUs, host k labelled `pool=<pools[k]>`.
fn labelled(pools: &[&str]) -> Cluster {
    let mut c = cluster(pools.len() as u32);
    for (n, p) in c.nodes.iter_mut().zip(pools) {
        n.labels.insert("pool".into(), (*p).into());
    }
    c
}

#[test]
fn kueue_no_cohort_queue_stays_within_nominal_quota_per_flavor() {
    // 32 GPUs: host 0 is h100, hosts 1–3 a100. ClusterQueue `solo`, no cohort: flavors h100
    // (nominal 8) then a100 (nominal 16), Kueue's default fungibility. Worked by hand:
    // - j1 (8 GPUs, 0 s, 100 s): h100 fits (0 + 8 ≤ 8) → starts at 0 on host 0.
    // - j2 (8, 1 s, 100 s): h100 8 + 8 > 8, no preemption → NoFit; a100 fits → starts at 1.
    // - j3 (24, 2 s): more than either flavor could ever hold (8, 16) → failed at arrival
    //   (summing the flavors, 24 ≤ 24, would admit it).
    // - j4 (16, 3 s, 100 s): h100 16 > 8 ever; a100 8 + 16 > 16 → waits; j1's end at 100
    //   frees only h100, so it waits for j2's end at 101: a100 0 + 16 → starts at 101.
    // - j5 (8, 4 s, 10 s): h100 8 + 8 > 8 → NoFit; a100 8 + 8 ≤ 16 → starts at 4 (the
    //   best-effort order steps over j4, as Kueue's BestEffortFIFO does) and ends at 14.
    // The invariant check (on) rebuilds Kueue's usage after every event and refuses any
    // flavor above what `solo` may hold.
    let c = labelled(&["h100", "a100", "a100", "a100"]);
    let q = kueue_objects(
        vec![cq(
            "solo",
            None,
            &[("h100", 8, None, None), ("a100", 16, None, None)],
            KueuePolicy::default(),
        )],
        &[("h100", "pool", "h100"), ("a100", "pool", "a100")],
    );
    let trace = [
        job("j1", 0.0, 100.0, 8, "solo"),
        job("j2", 1.0, 100.0, 8, "solo"),
        job("j3", 2.0, 100.0, 24, "solo"),
        job("j4", 3.0, 100.0, 16, "solo"),
        job("j5", 4.0, 10.0, 8, "solo"),
    ];
    let r = run(&c, &trace, &config(q)).unwrap();
    let starts: Vec<Option<f64>> = ["j1", "j2", "j4", "j5"]
        .iter()
        .map(|j| record(&r, j).start_s)
        .collect();
    assert_eq!(starts, [Some(0.0), Some(1.0), Some(101.0), Some(4.0)]);
    assert_eq!(record(&r, "j3").outcome, Outcome::Failed);
    // Never more than the nominal 24 in all: the queue's share of 32 GPUs at every point.
    let share = &r.queues.as_ref().unwrap().gpu_share;
    let share = &share.iter().find(|(q, _)| q == "solo").unwrap().1;
    assert!(
        share.iter().all(|(_, s)| *s <= 24.0 / 32.0 + 1e-9),
        "{share:?}"
    );
}

#[test]
fn kueue_places_pods_on_the_assigned_flavors_nodes() {
    // Flavor h100 (nominal 16) is host 0 only; hosts 1–2 carry no flavor's label. j1 and j2
    // (8 GPUs each) both fit h100's quota, but only host 0 is h100: j2 waits for j1 (100 s)
    // although 16 GPUs are free elsewhere.
    let c = labelled(&["h100", "other", "other"]);
    let q = kueue_objects(
        vec![cq(
            "solo",
            None,
            &[("h100", 16, None, None)],
            KueuePolicy::default(),
        )],
        &[("h100", "pool", "h100")],
    );
    let trace = [
        job("j1", 0.0, 100.0, 8, "solo"),
        job("j2", 1.0, 100.0, 8, "solo"),
    ];
    let r = run(&c, &trace, &config(q)).unwrap();
    assert_eq!(record(&r, "j2").start_s, Some(100.0));
}

/// Cohort `all`: cq-a and cq-b, one flavor `default` of nominal 8 GPUs each; cq-a reclaims
/// with `reclaim`, cq-b may borrow up to `b_borrow` and cq-a lends up to `a_lend`.
fn cohort_ab(reclaim: Policy, b_borrow: Option<i64>, a_lend: Option<i64>) -> QueueConfig {
    let a = KueuePolicy {
        reclaim_within_cohort: reclaim,
        ..KueuePolicy::default()
    };
    kueue_objects(
        vec![
            cq("cq-a", Some("all"), &[("default", 8, None, a_lend)], a),
            cq(
                "cq-b",
                Some("all"),
                &[("default", 8, b_borrow, None)],
                KueuePolicy::default(),
            ),
        ],
        &[],
    )
}

#[test]
fn kueue_cohort_borrowing_and_reclaim_follow_kueues_rules() {
    // 24 GPUs, so quota, not room, decides. Worked by hand:
    // - b1 (8 GPUs, 0 s, 1000 s) fits cq-b's nominal 8: starts at 0. b2 (8, 1 s, 1000 s):
    //   cq-b 8 + 8 > 8, but the cohort (subtree 16, used 8) lends cq-a's idle 8: cq-b
    //   borrows, starts at 1.
    // - a1 (8, 10 s, 100 s): cq-a uses 0 of its nominal 8, the cohort's 16 are used. With
    //   `reclaimWithinCohort: Any`, cq-b (16 > 8, borrowing) is reclaimed from; Kueue's
    //   candidate order takes the most recently admitted first: b2 (admitted at 1 s), not b1.
    //   a1 starts at 10 s; b2 (first started at 1 s) waits until a1 ends at 110 and runs
    //   again 110–1110.
    let c = cluster(3);
    let trace = [
        job("b1", 0.0, 1000.0, 8, "cq-b"),
        job("b2", 1.0, 1000.0, 8, "cq-b"),
        job("a1", 10.0, 100.0, 8, "cq-a"),
    ];
    let r = run(&c, &trace, &config(cohort_ab(Policy::Any, None, None))).unwrap();
    assert_eq!(record(&r, "b2").start_s, Some(1.0));
    assert_eq!(record(&r, "a1").start_s, Some(10.0));
    assert_eq!(record(&r, "b2").preemptions, 1);
    assert_eq!(record(&r, "b2").end_s, Some(1110.0));
    assert_eq!(record(&r, "b1").preemptions, 0);
    assert_eq!(record(&r, "b1").end_s, Some(1000.0));
    // Kueue's default (`Never`): a1 waits for a borrower to end: b1 at 1000 s.
    let r = run(&c, &trace, &config(cohort_ab(Policy::Never, None, None))).unwrap();
    assert_eq!(record(&r, "a1").start_s, Some(1000.0));
    assert_eq!(r.summary.preemptions, 0);
    // `borrowingLimit: 0` on cq-b: b2 never borrows, waits for b1 (1000 s); a1 fits at 10.
    let r = run(&c, &trace, &config(cohort_ab(Policy::Any, Some(0), None))).unwrap();
    assert_eq!(record(&r, "b2").start_s, Some(1000.0));
    assert_eq!(record(&r, "a1").start_s, Some(10.0));
    assert_eq!(r.summary.preemptions, 0);
}

#[test]
fn kueue_lending_limit_bounds_what_the_cohort_lends() {
    // cq-a lends at most 4 of its 8: the cohort holds 8 (cq-b's) + 4 for cq-b. b1 (8) starts
    // at 0; b2 (8) would need 16 > 12: it waits for b1 (1000 s); b3 (4) fits 8 + 4 ≤ 12 at 2 s.
    let c = cluster(3);
    let trace = [
        job("b1", 0.0, 1000.0, 8, "cq-b"),
        job("b2", 1.0, 1000.0, 8, "cq-b"),
        job("b3", 2.0, 10.0, 4, "cq-b"),
    ];
    let mut cfg = config(cohort_ab(Policy::Never, None, Some(4)));
    cfg.policy.order = Order::Sjf;
    let r = run(&c, &trace, &cfg).unwrap();
    assert_eq!(record(&r, "b3").start_s, Some(2.0));
    assert_eq!(record(&r, "b2").start_s, Some(1000.0));
}

#[test]
fn kueue_within_cluster_queue_preempts_lower_priority() {
    // No cohort, nominal 8. low (priority 0, 8 GPUs) runs from 0; high (priority 10) arrives
    // at 5: with `withinClusterQueue: LowerPriority` it preempts low and starts at 5; low
    // restarts at 55. With `Never` high waits until 100.
    let c = cluster(2);
    let mut high = job("high", 5.0, 50.0, 8, "solo");
    high.priority = 10;
    let trace = [job("low", 0.0, 100.0, 8, "solo"), high];
    let objects = |within: Policy| {
        kueue_objects(
            vec![cq(
                "solo",
                None,
                &[("default", 8, None, None)],
                KueuePolicy {
                    within_cluster_queue: within,
                    ..KueuePolicy::default()
                },
            )],
            &[],
        )
    };
    let r = run(&c, &trace, &config(objects(Policy::LowerPriority))).unwrap();
    assert_eq!(record(&r, "high").start_s, Some(5.0));
    assert_eq!(record(&r, "low").preemptions, 1);
    assert_eq!(record(&r, "low").end_s, Some(155.0));
    let r = run(&c, &trace, &config(objects(Policy::Never))).unwrap();
    assert_eq!(record(&r, "high").start_s, Some(100.0));
}

#[test]
fn the_kueue_check_finds_usage_kueue_would_not_admit() {
    // Two jobs of 8 staged on a no-cohort queue of nominal 8, bypassing the decision: the
    // check refuses the second.
    let q = kueue_objects(
        vec![cq(
            "solo",
            None,
            &[("default", 8, None, None)],
            KueuePolicy::default(),
        )],
        &[],
    );
    let mut k = KueueRun::new(q.kueue.as_ref().unwrap()).unwrap();
    let cq = k.cluster_queue("solo").unwrap();
    let job = sched::Job {
        name: "j".into(),
        queue: "solo".into(),
        priority: 0,
        preemptible: true,
        pod_sets: vec![sched::PodSet {
            name: "workers".into(),
            count: 1,
            min_count: 1,
            gpu: sched::GpuRequest::Whole(8),
            cpu_millis: 0,
            memory_mib: 0,
            topology: sched::TopologyRequest::default(),
        }],
        tolerations: Vec::new(),
    };
    let mut a = k.decide(cq, &job, &[], 0);
    assert!(a.admitted());
    k.stage(0, cq, &a);
    k.admit(0, "j0", 0, 0);
    assert!(k.check().is_ok());
    a = k.decide(cq, &job, &[], 0);
    assert!(!a.admitted(), "{a:?}");
    a.usage = vec![("default".into(), GPU.into(), 8)];
    k.stage(1, cq, &a);
    k.admit(1, "j1", 0, 1);
    let e = k.check().unwrap_err();
    assert_eq!(e.invariant, "Kueue quota exceeded");
    assert!(e.detail.contains("`solo` uses 16"), "{}", e.detail);
    k.release("j1");
    assert!(k.check().is_ok());
}

#[test]
fn kueue_fair_sharing_admits_the_lowest_dominant_share_first() {
    // One host of 8 GPUs, so room, not quota, decides who of two admitted heads starts. Cohort
    // `all`: cq-a (nominal 4), cq-b (nominal 1), cq-c (nominal 8, idle: lends it). a1 (4) and
    // a2 (2) start at 0: cq-a uses 6, 2 above its nominal; b1 (2, ends at 20) fills the host,
    // cq-b 1 above. a3 (2, submitted 5) and b2 (2, submitted 6) wait. At 20 b1's 2 GPUs free
    // up and both are heads of one cycle; both borrow (cq-a would be 4 above, cq-b 1), so
    // Kueue's classical order (same borrowing level, same priority) takes the earlier a3, and
    // b2, admitted too, has no room: it waits for a3 to end at 120. With fair sharing cq-b's
    // dominant share with b2 (1 above nominal) is below cq-a's with a3 (4 above): b2 runs
    // 20–120, and a3 starts when it ends.
    let c = cluster(1);
    let trace = [
        job("a1", 0.0, 1000.0, 4, "cq-a"),
        job("a2", 0.0, 1000.0, 2, "cq-a"),
        job("b1", 0.0, 20.0, 2, "cq-b"),
        job("a3", 5.0, 100.0, 2, "cq-a"),
        job("b2", 6.0, 100.0, 2, "cq-b"),
    ];
    let queues = |fair: bool| {
        let mut q = kueue_objects(
            [("cq-a", 4), ("cq-b", 1), ("cq-c", 8)]
                .iter()
                .map(|&(n, nominal)| {
                    cq(
                        n,
                        Some("all"),
                        &[("default", nominal, None, None)],
                        KueuePolicy::default(),
                    )
                })
                .collect(),
            &[],
        );
        q.kueue.as_mut().unwrap().fair_sharing = fair;
        q
    };
    let r = run(&c, &trace, &config(queues(false))).unwrap();
    assert_eq!(record(&r, "a3").start_s, Some(20.0));
    assert_eq!(record(&r, "b2").start_s, Some(120.0));
    let r = run(&c, &trace, &config(queues(true))).unwrap();
    assert_eq!(record(&r, "b2").start_s, Some(20.0));
    assert_eq!(record(&r, "a3").start_s, Some(120.0));
}

#[test]
fn kueue_fair_sharing_preempts_from_the_queue_with_the_highest_share() {
    // Kueue's "reclaim borrowable quota from user using the most" (TestFairPreemptions,
    // pkg/scheduler/preemption/preemption_fair_test.go at kubernetes-sigs/kueue ff69552) in
    // GPUs: two hosts of 16 GPUs, so quota, not room, decides. Cohort `all`: cq-a, cq-b,
    // cq-c, nominal 3 each, `withinClusterQueue: LowerPriority`, `reclaimWithinCohort: Any`.
    // At 0: a1–a3 (cq-a at nominal), b1–b5 (cq-b 2 above), c1: all 9 GPUs of quota in use.
    // a4 (1 GPU, submitted 5) would take cq-a 1 above nominal. Classical preemption
    // (`borrowWithinCohort` unset) may not reclaim while borrowing: a4 waits for c1's end at
    // 50. Fair sharing: cq-a's share with a4 (1 above) is at most cq-b's once one of its
    // Workloads is gone (2 − 1), so `LessThanOrEqualToFinalShare` stops b1 (same priority
    // and start: the first by name) and a4 starts at 5.
    let c = cluster(2);
    let mut trace: Vec<TraceJob> = Vec::new();
    for (q, n) in [("a", 3), ("b", 5)] {
        for i in 1..=n {
            trace.push(job(&format!("{q}{i}"), 0.0, 1000.0, 1, &format!("cq-{q}")));
        }
    }
    trace.push(job("c1", 0.0, 50.0, 1, "cq-c"));
    trace.push(job("a4", 5.0, 100.0, 1, "cq-a"));
    let policy = KueuePolicy {
        within_cluster_queue: Policy::LowerPriority,
        reclaim_within_cohort: Policy::Any,
        ..KueuePolicy::default()
    };
    let queues = |fair: bool| {
        let cqs = ["cq-a", "cq-b", "cq-c"]
            .iter()
            .map(|n| cq(n, Some("all"), &[("default", 3, None, None)], policy))
            .collect();
        let mut q = kueue_objects(cqs, &[]);
        q.kueue.as_mut().unwrap().fair_sharing = fair;
        q
    };
    let r = run(&c, &trace, &config(queues(false))).unwrap();
    assert_eq!(record(&r, "a4").start_s, Some(50.0));
    assert_eq!(r.summary.preemptions, 0);
    let r = run(&c, &trace, &config(queues(true))).unwrap();
    assert_eq!(record(&r, "a4").start_s, Some(5.0));
    assert_eq!(record(&r, "b1").preemptions, 1);
    assert_eq!(r.summary.preemptions, 1);
}

#[test]
fn kueue_cycle_looks_at_the_head_that_does_not_borrow_first() {
    // Kueue's scheduling cycle (`pkg/scheduler/scheduler.go` at kubernetes-sigs/kueue ff69552,
    // `entryOrdering`: an entry that does not borrow goes before one that does, whatever their
    // creation). One host of 8 GPUs; cohort `all` with cq-a and cq-b, nominal 4 each, Kueue's
    // default preemption (`reclaimWithinCohort: Never`); passes every 10 s. z (cq-b, 1 GPU,
    // 0–5 s) only anchors the trace at 0. a1 (cq-a, 8 GPUs, submitted 1 s) and b1 (cq-b, 4
    // GPUs, 2 s) are both heads of the cycle at 10 s. a1
    // borrows cq-b's 4, b1 does not: b1 is looked at first and admitted (cq-b 4 of 4); a1 then
    // no longer fits (8 wanted, 4 left in the cohort), and in the next cycle it does not fit:
    // it waits for b1 to end at 110 and runs 110–210. One job at a time in submission order
    // would have started a1 at 10 (the cohort's 8 idle) and b1 at 110 (with `Never` b1 does
    // not reclaim its nominal quota from the borrower).
    let c = cluster(1);
    let trace = [
        job("z", 0.0, 5.0, 1, "cq-b"),
        job("a1", 1.0, 100.0, 8, "cq-a"),
        job("b1", 2.0, 100.0, 4, "cq-b"),
    ];
    let queues = kueue_objects(
        ["cq-a", "cq-b"]
            .iter()
            .map(|n| {
                cq(
                    n,
                    Some("all"),
                    &[("default", 4, None, None)],
                    KueuePolicy::default(),
                )
            })
            .collect(),
        &[],
    );
    let mut cfg = config(queues);
    cfg.cycle = SimTime(10_000);
    let r = run(&c, &trace, &cfg).unwrap();
    assert_eq!(record(&r, "b1").start_s, Some(10.0));
    assert_eq!(record(&r, "a1").start_s, Some(110.0));
    assert_eq!(record(&r, "a1").end_s, Some(210.0));
    assert_eq!(r.summary.preemptions, 0);
}
