//! Queue validation (every problem at once, each naming its queue), fair share and admission.

use sched::{
    admit, fair_share, validate, JobTarget, QueueSpec, QueueTree, ResourceQuota, Resources,
    UNLIMITED,
};

fn q(name: &str, parent: Option<&str>, gpu: Option<(f64, f64, f64)>) -> QueueSpec {
    QueueSpec {
        name: name.into(),
        parent: parent.map(Into::into),
        priority: 0,
        resources: [
            gpu.map(|(quota, limit, w)| ResourceQuota {
                quota,
                limit,
                over_quota_weight: w,
            }),
            None,
            None,
        ],
        creation_time: None,
        uid: None,
    }
}

fn messages(specs: &[QueueSpec], jobs: &[JobTarget]) -> Vec<String> {
    validate(specs, jobs)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_valid_tree_has_no_problems() {
    let specs = vec![
        q("root", None, Some((16.0, UNLIMITED, 1.0))),
        q("a", Some("root"), Some((8.0, 12.0, 1.0))),
        q("b", Some("root"), Some((8.0, UNLIMITED, 2.0))),
    ];
    let jobs = vec![JobTarget {
        job: "j".into(),
        queue: "a".into(),
    }];
    assert!(messages(&specs, &jobs).is_empty());
}

#[test]
fn every_problem_is_reported_at_once() {
    let specs = vec![
        q("root", None, Some((10.0, UNLIMITED, 1.0))),
        q("a", Some("root"), Some((8.0, 4.0, 1.0))),
        q("b", Some("root"), Some((-3.0, UNLIMITED, 1.0))),
        q("c", Some("root"), Some((4.0, UNLIMITED, 1.0))),
        q("orphan", Some("nowhere"), None),
        q("x", Some("y"), None),
        q("y", Some("x"), None),
        q("bare", None, None),
        q("kid", Some("bare"), None),
    ];
    let jobs = vec![JobTarget {
        job: "j".into(),
        queue: "root".into(),
    }];
    let m = messages(&specs, &jobs);
    let expected = [
        "queue `root`: gpu: child queues' quotas add up to 12, above this queue's quota 10",
        "queue `a`: gpu: limit 4 is below quota 8",
        "queue `b`: gpu.quota: -3 is negative; expected a value ≥ 0 or -1 for unlimited",
        "queue `orphan`: parent queue `nowhere` does not exist",
        "queue `x`: parent chain forms a cycle: x → y → x",
        "queue `bare`: has child queues but declares no resources; a parent queue needs quotas to divide",
        "queue `root`: job `j` is submitted to this queue, but it has child queues; jobs go to leaf queues",
    ];
    for e in expected {
        assert!(m.iter().any(|x| x == e), "missing {e:?} in {m:#?}");
    }
    assert_eq!(m.len(), expected.len() + 2, "{m:#?}");
}

fn tree() -> QueueTree {
    QueueTree::new(vec![
        q("root", None, Some((UNLIMITED, UNLIMITED, 1.0))),
        q("a", Some("root"), Some((8.0, UNLIMITED, 1.0))),
        q("b", Some("root"), Some((8.0, 20.0, 3.0))),
        q("c", Some("root"), Some((0.0, UNLIMITED, 1.0))),
    ])
    .expect("valid")
}

fn gpus(v: f64) -> Resources {
    Resources {
        gpu: v,
        ..Resources::default()
    }
}

#[test]
fn fair_share_gives_quota_then_water_fills_by_weight() {
    let t = tree();
    let demand = vec![gpus(0.0), gpus(40.0), gpus(40.0), gpus(2.0)];
    let s = fair_share(&t, &demand, &gpus(32.0));
    // In-quota: a 8, b 8, c 0. The remainder 16 goes by weight 1:3:1; c stops at its demand 2
    // and the other 14 go 1:3 → a 3.5, b 10.5.
    let got: Vec<f64> = s
        .iter()
        .map(|r| (r.gpu * 1000.0).round() / 1000.0)
        .collect();
    assert_eq!(got, vec![32.0, 11.5, 18.5, 2.0]);
}

#[test]
fn fair_share_respects_limits_and_priority() {
    let mut specs = tree().queues;
    specs[1].priority = 1; // a first for the remainder
    let t = QueueTree::new(specs).expect("valid");
    let demand = vec![gpus(0.0), gpus(100.0), gpus(100.0), gpus(0.0)];
    let s = fair_share(&t, &demand, &gpus(64.0));
    assert_eq!(s[1].gpu, 56.0); // 8 quota + all 48 of the remainder
    assert_eq!(s[2].gpu, 8.0);
    let s = fair_share(&t, &demand, &gpus(1000.0));
    assert_eq!(s[2].gpu, 20.0, "b's limit");
}

#[test]
fn admission_checks_limits_up_the_tree() {
    let t = tree();
    let usage = vec![gpus(0.0), gpus(0.0), gpus(15.0), gpus(0.0)];
    assert!(admit(&t, &usage, "b", &gpus(5.0)).is_ok());
    let e = admit(&t, &usage, "b", &gpus(6.0)).expect_err("over b's limit");
    assert_eq!(
        e.to_string(),
        "queue `b`: gpu use 21 would exceed its limit 20"
    );
    assert!(admit(&t, &usage, "root", &gpus(1.0)).is_err());
}

#[test]
fn a_cycle_through_ten_thousand_queues_is_found_once_and_named_briefly() {
    let n = 10_000;
    let specs: Vec<QueueSpec> = (0..n)
        .map(|i| {
            let parent = format!("q{}", (i + n - 1) % n);
            q(&format!("q{i}"), Some(&parent), None)
        })
        .collect();
    let m = messages(&specs, &[]);
    let cycles: Vec<&String> = m.iter().filter(|x| x.contains("cycle")).collect();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(
        cycles[0],
        "queue `q0`: parent chain forms a cycle of 10000 queues: q0 → q9999 → q9998 → q9997 → q9996 → … → q0"
    );
}

#[test]
fn amounts_beyond_1e15_are_refused_and_share_stays_finite() {
    let specs = vec![
        q("a", None, Some((0.0, UNLIMITED, 1e308))),
        q("b", None, Some((0.0, UNLIMITED, 1e308))),
    ];
    let m = messages(&specs, &[]);
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(m[0].contains("overQuotaWeight: 1e308 is above"), "{m:?}");
    // fair_share itself keeps finite arithmetic even on values validation would refuse.
    let mut big = QueueTree::new(vec![
        q("a", None, Some((0.0, UNLIMITED, 1.0))),
        q("b", None, Some((0.0, UNLIMITED, 1.0))),
    ])
    .unwrap();
    for s in &mut big.queues {
        s.resources[0].as_mut().unwrap().over_quota_weight = 1e308;
    }
    let d = Resources {
        gpu: 8.0,
        ..Resources::default()
    };
    let cap = Resources {
        gpu: 10.0,
        cpu: f64::INFINITY,
        memory: f64::INFINITY,
    };
    let share = fair_share(&big, &[d, d], &cap);
    assert!(share.iter().all(|s| s.gpu.is_finite()), "{share:?}");
    assert_eq!(share[0].gpu, 5.0);
}

mod cycles_against_a_reference {
    use super::*;
    use proptest::prelude::*;

    /// The reference: from each queue, walk up to n steps; a queue is on a cycle when it comes
    /// back to itself. Cycles are reported at their smallest member.
    fn reference(parents: &[Option<usize>]) -> Vec<usize> {
        let n = parents.len();
        let mut out = Vec::new();
        for i in 0..n {
            let mut cur = parents[i];
            let mut members = vec![i];
            let mut on_cycle = false;
            for _ in 0..n {
                match cur {
                    Some(c) if c == i => {
                        on_cycle = true;
                        break;
                    }
                    Some(c) => {
                        members.push(c);
                        cur = parents[c];
                    }
                    None => break,
                }
            }
            if on_cycle && members.iter().all(|&m| m >= i) {
                out.push(i);
            }
        }
        out
    }

    proptest! {
        #[test]
        fn every_cycle_is_reported_once_at_its_first_queue(
            raw in proptest::collection::vec(proptest::option::of(0usize..12), 1..12)
        ) {
            let n = raw.len();
            let parents: Vec<Option<usize>> = raw.iter().map(|p| p.map(|p| p % n)).collect();
            let specs: Vec<QueueSpec> = parents
                .iter()
                .enumerate()
                .map(|(i, p)| q(&format!("q{i}"), p.map(|p| format!("q{p}")).as_deref(), None))
                .collect();
            let reported: Vec<usize> = validate(&specs, &[])
                .iter()
                .filter(|p| matches!(p.kind, sched::QueueProblemKind::Cycle(_)))
                .map(|p| p.queue[1..].parse().unwrap())
                .collect();
            prop_assert_eq!(reported, reference(&parents));
        }
    }
}
