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
