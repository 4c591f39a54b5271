//! Kueue's fair sharing: a ClusterQueue's dominant resource share (DRS), the order fair
//! sharing admits in (`pkg/cache/scheduler/fair_sharing.go`, kubernetes-sigs/kueue 02c5bf4:
//! `dominantResourceShare`, `calculateLendable`, `CompareDRS`, `roundedWeightedShare`). Per
//! resource, what the queue uses (plus a request) above its subtree quota, summed over
//! flavors, per mille of what its parent could lend of that resource; the largest ratio,
//! divided by the queue's `fairSharing.weight`. A queue with weight 0 that borrows comes last.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::quota::{add, sub, Fr};
use super::KueueQueues;

/// A ClusterQueue's dominant resource share.
#[derive(Clone, Debug, PartialEq)]
pub struct Share {
    /// The largest borrowed ÷ lendable, per mille, before the weight.
    pub ratio: f64,
    /// The resource that gives it (`None` when nothing borrowed is lendable).
    pub resource: Option<String>,
    /// `fairSharing.weight`.
    pub weight: f64,
    /// Whether the queue uses more than its quota of any (flavor, resource).
    pub borrowing: bool,
}

impl Share {
    /// Borrowing with weight 0 (`ZeroWeightBorrows`): comes after every other share.
    pub fn zero_weight_borrows(&self) -> bool {
        self.weight == 0.0 && self.borrowing
    }

    /// The ratio over the weight (`PreciseWeightedShare`); infinite for a zero weight that
    /// borrows.
    pub fn weighted(&self) -> f64 {
        if self.zero_weight_borrows() {
            f64::INFINITY
        } else if self.ratio == 0.0 {
            0.0
        } else {
            self.ratio / self.weight
        }
    }

    /// Kueue's reported value (`roundedWeightedShare`): the weighted share rounded up,
    /// `i64::MAX` for a zero weight that borrows.
    pub fn rounded(&self) -> i64 {
        if self.zero_weight_borrows() {
            i64::MAX
        } else {
            self.weighted().ceil() as i64
        }
    }

    /// `CompareDRS`: lower goes first when admitting.
    pub fn compare(&self, other: &Share) -> Ordering {
        match (self.zero_weight_borrows(), other.zero_weight_borrows()) {
            (true, true) => self.ratio.total_cmp(&other.ratio),
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => self.weighted().total_cmp(&other.weighted()),
        }
    }
}

/// The dominant resource share of ClusterQueue (or Cohort) node `n` with `request` more in
/// use, weighted by `weight_milli` thousandths. A node without a parent has share 0.
pub fn dominant_resource_share(
    q: &KueueQueues,
    n: usize,
    request: &[(Fr, i64)],
    weight_milli: i64,
) -> Share {
    let mut share = Share {
        ratio: 0.0,
        resource: None,
        weight: weight_milli as f64 / 1000.0,
        borrowing: false,
    };
    let node = &q.tree.nodes[n];
    let Some(parent) = node.parent else {
        return share;
    };
    let mut borrowed: BTreeMap<u32, i64> = BTreeMap::new();
    for (&fr, &quota) in &node.subtree {
        let extra = request
            .iter()
            .filter(|(r, _)| *r == fr)
            .map(|(_, v)| *v)
            .sum();
        let over = sub(add(extra, q.tree.usage_of(n, fr)), quota);
        if over > 0 {
            let e = borrowed.entry(fr.1).or_insert(0);
            *e = add(*e, over);
        }
    }
    if borrowed.is_empty() {
        return share;
    }
    share.borrowing = true;
    let root = q.tree.root(parent);
    let mut lendable: BTreeMap<u32, i64> = BTreeMap::new();
    for &fr in q.tree.nodes[root].subtree.keys() {
        let e = lendable.entry(fr.1).or_insert(0);
        *e = add(*e, q.tree.potential_available(parent, fr));
    }
    // Resource names in order, so ties go to the first name, as Kueue's.
    let mut by_name: Vec<(&str, u32)> = borrowed
        .keys()
        .map(|&r| (q.tree.resources[r as usize].as_str(), r))
        .collect();
    by_name.sort();
    for (name, r) in by_name {
        let l = lendable.get(&r).copied().unwrap_or(0);
        if l <= 0 {
            continue;
        }
        let ratio = borrowed[&r] as f64 * 1000.0 / l as f64;
        if ratio > share.ratio {
            share.ratio = ratio;
            share.resource = Some(name.to_owned());
        }
    }
    share
}

#[cfg(test)]
mod tests {
    //! Kueue's `TestDominantResourceShare` (`pkg/cache/scheduler/fair_sharing_test.go`,
    //! kubernetes-sigs/kueue 02c5bf4) as data: ClusterQueue `cq` and `lending-cq` in
    //! `test-cohort`, `cq`'s usage and the Workload's request; the rounded share of `cq` and its
    //! dominant resource.
    use std::collections::BTreeMap;

    use super::*;
    use crate::kueue::{ClusterQueueSpec, Quota, ResourceGroup};

    /// (flavor, resource, nominal, lendingLimit).
    type Quotas<'a> = &'a [(&'a str, &'a str, i64, Option<i64>)];

    struct Case<'a> {
        name: &'a str,
        cohort: bool,
        cq: (Quotas<'a>, i64),
        lending: (Quotas<'a>, i64),
        usage: &'a [(&'a str, &'a str, i64)],
        request: &'a [(&'a str, &'a str, i64)],
        want: (i64, Option<&'a str>, bool),
    }

    fn spec(name: &str, cohort: bool, quotas: Quotas<'_>, weight_milli: i64) -> ClusterQueueSpec {
        let mut flavors: Vec<(String, BTreeMap<String, Quota>)> = Vec::new();
        for &(f, r, nominal, lending_limit) in quotas {
            if flavors.last().is_none_or(|x| x.0 != f) {
                flavors.push((f.to_owned(), BTreeMap::new()));
            }
            let q = Quota {
                nominal,
                borrowing_limit: None,
                lending_limit,
            };
            flavors.last_mut().unwrap().1.insert(r.to_owned(), q);
        }
        let mut covered: Vec<String> = quotas.iter().map(|q| q.1.to_owned()).collect();
        covered.dedup();
        ClusterQueueSpec {
            name: name.to_owned(),
            cohort: cohort.then(|| "test-cohort".to_owned()),
            groups: vec![ResourceGroup { covered, flavors }],
            namespace_selector: Some(vec![]),
            fair_weight_milli: weight_milli,
            ..ClusterQueueSpec::default()
        }
    }

    const CPU_GPU: Quotas<'static> = &[("default", "cpu", 2000, None), ("default", "gpu", 5, None)];
    const LEND_CPU_GPU: Quotas<'static> =
        &[("default", "cpu", 8000, None), ("default", "gpu", 5, None)];

    const CASES: &[Case<'static>] = &[
        Case {
            name: "no cohort",
            cohort: false,
            cq: (CPU_GPU, 1000),
            lending: (&[], 1000),
            usage: &[("default", "cpu", 1000), ("default", "gpu", 2)],
            request: &[],
            want: (0, None, false),
        },
        Case {
            name: "usage below nominal",
            cohort: true,
            cq: (CPU_GPU, 1000),
            lending: (LEND_CPU_GPU, 1000),
            usage: &[("default", "cpu", 1000), ("default", "gpu", 2)],
            request: &[],
            want: (0, None, false),
        },
        Case {
            name: "usage above nominal",
            cohort: true,
            cq: (CPU_GPU, 1000),
            lending: (LEND_CPU_GPU, 1000),
            usage: &[("default", "cpu", 3000), ("default", "gpu", 7)],
            request: &[],
            want: (200, Some("gpu"), true),
        },
        Case {
            name: "usage slightly above nominal in a cohort with large quotas",
            cohort: true,
            cq: (&[("default", "gpu", 500, None)], 1000),
            lending: (&[("default", "gpu", 1000, None)], 300_000),
            usage: &[("default", "gpu", 501)],
            request: &[],
            want: (1, Some("gpu"), true),
        },
        Case {
            name: "usage way above nominal in a cohort with large quotas and weights",
            cohort: true,
            cq: (&[("default", "gpu", 500, None)], 300_000),
            lending: (&[("default", "gpu", 1000, None)], 300_000),
            usage: &[("default", "gpu", 800)],
            request: &[],
            want: (1, Some("gpu"), true),
        },
        Case {
            name: "one resource above nominal",
            cohort: true,
            cq: (CPU_GPU, 1000),
            lending: (LEND_CPU_GPU, 1000),
            usage: &[("default", "cpu", 3000), ("default", "gpu", 3)],
            request: &[],
            want: (100, Some("cpu"), true),
        },
        Case {
            name: "usage with workload above nominal",
            cohort: true,
            cq: (CPU_GPU, 1000),
            lending: (LEND_CPU_GPU, 1000),
            usage: &[("default", "cpu", 1000), ("default", "gpu", 2)],
            request: &[("default", "cpu", 4000), ("default", "gpu", 4)],
            want: (300, Some("cpu"), true),
        },
        Case {
            name: "A resource with zero lendable",
            cohort: true,
            cq: (
                &[
                    ("default", "cpu", 2000, None),
                    ("default", "gpu", 2, Some(0)),
                ],
                1000,
            ),
            lending: (
                &[
                    ("default", "cpu", 8000, None),
                    ("default", "gpu", 64, Some(0)),
                ],
                1000,
            ),
            usage: &[("default", "cpu", 1000), ("default", "gpu", 1)],
            request: &[("default", "cpu", 4000), ("default", "gpu", 4)],
            want: (300, Some("cpu"), true),
        },
        Case {
            name: "a zero-weight ClusterQueue borrowing only what nobody lends",
            cohort: true,
            cq: (&[("default", "gpu", 2, Some(0))], 0),
            lending: (&[("default", "gpu", 64, Some(0))], 1000),
            usage: &[("default", "gpu", 3)],
            request: &[],
            want: (i64::MAX, None, true),
        },
        Case {
            name: "multiple flavors",
            cohort: true,
            cq: (
                &[
                    ("on-demand", "cpu", 20_000, None),
                    ("spot", "cpu", 80_000, None),
                ],
                1000,
            ),
            lending: (&[("default", "cpu", 100_000, None)], 1000),
            usage: &[("on-demand", "cpu", 15_000), ("spot", "cpu", 5000)],
            request: &[("on-demand", "cpu", 10_000)],
            want: (25, Some("cpu"), true),
        },
    ];

    #[test]
    fn kueue_test_dominant_resource_share() {
        for c in CASES {
            let mut cqs = vec![spec("cq", c.cohort, c.cq.0, c.cq.1)];
            if !c.lending.0.is_empty() {
                cqs.push(spec("lending-cq", c.cohort, c.lending.0, c.lending.1));
            }
            let mut q = KueueQueues::new(&cqs, &[]).unwrap();
            let n = q.find("cq").unwrap();
            let mut fr = |f: &str, r: &str| (q.tree.flavor_id(f), q.tree.resource_id(r));
            let usage: Vec<(Fr, i64)> = c.usage.iter().map(|u| (fr(u.0, u.1), u.2)).collect();
            let request: Vec<(Fr, i64)> = c.request.iter().map(|u| (fr(u.0, u.1), u.2)).collect();
            for (f, v) in usage {
                q.tree.add_usage(n, f, v);
            }
            let s = dominant_resource_share(&q, n, &request, c.cq.1);
            let got = (s.rounded(), s.resource.as_deref(), s.borrowing);
            assert_eq!(got, c.want, "{}", c.name);
        }
    }

    #[test]
    fn a_zero_weight_borrower_comes_after_any_share() {
        let share = |ratio: f64, weight: f64| Share {
            ratio,
            resource: None,
            weight,
            borrowing: true,
        };
        assert_eq!(
            share(1.0, 0.0).compare(&share(900.0, 1.0)),
            Ordering::Greater
        );
        assert_eq!(share(100.0, 2.0).compare(&share(60.0, 1.0)), Ordering::Less);
    }
}
