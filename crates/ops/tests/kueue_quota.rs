//! Kueue's quota tests as data (`tests/kueue/*.yaml`, each citing Kueue's file, test and
//! commit): the case's ClusterQueues and Cohorts read as a user holds them (Kueue YAML, through
//! `formats::kueue_objects`), usage added and removed through `sched::kueue`, every expected
//! number compared. A case marked `difference:` must still differ, so a fixed difference is
//! noticed.

use std::collections::BTreeMap;

use formats::kueue_objects::KueueObjects;
use sched::kueue::KueueQueues;
use serde::Deserialize;

type Amounts = BTreeMap<String, BTreeMap<String, i64>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AvailableFile {
    kueue_commit: String,
    file: String,
    test: String,
    #[allow(dead_code)] // documentation for readers of the data
    units: String,
    cases: Vec<AvailableCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AvailableCase {
    name: String,
    queues: String,
    #[serde(default)]
    usage: Amounts,
    available: Amounts,
    potential: Amounts,
    difference: Option<String>,
}

fn queues_of(case: &str, text: &str) -> KueueQueues {
    let docs = formats::input::parse_documents(case, text).expect("queue YAML");
    let mut objects = KueueObjects::default();
    objects.read(case, &docs);
    assert!(
        objects.problems.is_empty(),
        "{case}: {:?}",
        objects.problems
    );
    KueueQueues::new(&objects.cluster_queues, &objects.cohorts)
        .unwrap_or_else(|p| panic!("{case}: {p:?}"))
}

fn fr(q: &KueueQueues, key: &str) -> sched::kueue::Fr {
    let (f, r) = key.split_once('/').expect("FLAVOR/RESOURCE");
    q.tree.fr(f, r).unwrap_or_else(|| panic!("unknown {key}"))
}

/// (available, potential) of every ClusterQueue and flavor/resource the expectation names.
fn measure(q: &KueueQueues, want: &Amounts) -> (Amounts, Amounts) {
    let mut a = Amounts::new();
    let mut p = Amounts::new();
    for (cq, frs) in want {
        let n = q.find(cq).unwrap_or_else(|| panic!("no ClusterQueue {cq}"));
        for key in frs.keys() {
            let x = fr(q, key);
            a.entry(cq.clone())
                .or_default()
                .insert(key.clone(), q.tree.available(n, x).max(0));
            p.entry(cq.clone())
                .or_default()
                .insert(key.clone(), q.tree.potential_available(n, x));
        }
    }
    (a, p)
}

#[test]
fn kueue_test_available_cases_give_kueues_numbers() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/kueue/resource_test_available.yaml"
    );
    let f: AvailableFile = serde_norway::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(f.kueue_commit.len(), 40);
    assert_eq!(
        (f.file.as_str(), f.test.as_str()),
        ("pkg/cache/scheduler/resource_test.go", "TestAvailable")
    );
    let (mut passed, mut differences) = (0, 0);
    for c in &f.cases {
        let mut q = queues_of(&c.name, &c.queues);
        // No usage: available equals the expected potential.
        let (a0, p0) = measure(&q, &c.potential);
        let add = |q: &mut KueueQueues, sign: i64| {
            for (cq, frs) in &c.usage {
                let n = q.find(cq).unwrap();
                for (key, v) in frs {
                    let x = fr(q, key);
                    if sign > 0 {
                        q.tree.add_usage(n, x, *v);
                    } else {
                        q.tree.remove_usage(n, x, *v);
                    }
                }
            }
        };
        add(&mut q, 1);
        let (a1, p1) = measure(&q, &c.available);
        add(&mut q, -1);
        let (a2, p2) = measure(&q, &c.potential);
        let ok = a0 == c.potential
            && p0 == c.potential
            && a1 == c.available
            && p1 == c.potential
            && a2 == c.potential
            && p2 == c.potential;
        match &c.difference {
            None => {
                assert!(ok, "{}: available {a1:?} potential {p1:?} (empty: {a0:?} {p0:?}; after removal {a2:?} {p2:?})", c.name);
                passed += 1;
            }
            Some(why) => {
                assert!(
                    !ok,
                    "{}: marked as a difference ({why}) but now agrees with Kueue",
                    c.name
                );
                differences += 1;
            }
        }
    }
    assert_eq!(passed + differences, f.cases.len());
    eprintln!(
        "TestAvailable: {} cases, {passed} pass, {differences} documented differences",
        f.cases.len()
    );
}
