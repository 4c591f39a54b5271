//! Kueue's classical quota preemption: candidates in the ClusterQueue
//! (`withinClusterQueue`) and in borrowing ClusterQueues of the same Cohort tree
//! (`reclaimWithinCohort`), in Kueue's candidate order (`common/ordering.go`
//! `CandidatesOrdering`: other ClusterQueues first, then lower priority, then the most recently
//! admitted), removed one by one until the Workload fits, then those not needed put back in
//! reverse order (`preemption.go` `classicalPreemptions`, `fillBackWorkloads`,
//! `candidate_generator.go`). Borrowing while preempting follows `borrowWithinCohort`
//! (`IsBorrowingWithinCohortForbidden`, `isAboveBorrowingThreshold`); candidates of other
//! ClusterQueues are split by hierarchical advantage (`collectCandidatesForHierarchicalReclaim`),
//! a Cohort whose subtree is within nominal not skipped as a whole (only its ClusterQueues).

use std::cmp::Ordering;

use super::quota::Fr;
use super::KueueQueues;

/// A ClusterQueue `preemption` policy value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// `Never`.
    #[default]
    Never,
    /// `LowerPriority`.
    LowerPriority,
    /// `LowerOrNewerEqualPriority`.
    LowerOrNewerEqualPriority,
    /// `Any`.
    Any,
}

/// A ClusterQueue's `spec.preemption`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreemptionPolicy {
    /// `withinClusterQueue`.
    pub within_cluster_queue: Policy,
    /// `reclaimWithinCohort`.
    pub reclaim_within_cohort: Policy,
    /// `borrowWithinCohort.policy` is `LowerPriority`.
    pub borrow_within_cohort: bool,
    /// `borrowWithinCohort.maxPriorityThreshold`.
    pub max_priority_threshold: Option<i32>,
}

/// A Workload to preempt and why (Kueue's preemption reasons).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Index into [`KueueQueues::admitted`].
    pub admitted: usize,
    /// `InClusterQueue`, `InCohortReclamation` or `InCohortReclaimWhileBorrowing`.
    pub reason: &'static str,
}

/// Whether `policy` lets a Workload of `priority`, admitted at `at`, preempt one of
/// `cand_priority` admitted at `cand_at` (`SatisfiesPreemptionPolicy`).
pub(super) fn satisfies(
    policy: Policy,
    priority: i32,
    at: i64,
    cand_priority: i32,
    cand_at: i64,
) -> bool {
    match policy {
        Policy::Never => false,
        Policy::LowerPriority => cand_priority < priority,
        Policy::LowerOrNewerEqualPriority => {
            cand_priority < priority || (cand_priority == priority && cand_at > at)
        }
        Policy::Any => true,
    }
}

/// What kind of candidate a Workload is (`classical/hierarchical_preemption.go`
/// `preemptionVariant`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    WithinCq,
    Hierarchical,
    ReclaimWithoutBorrowing,
    ReclaimWhileBorrowing,
}

impl Variant {
    fn reason(self) -> &'static str {
        match self {
            Variant::WithinCq => "InClusterQueue",
            Variant::Hierarchical | Variant::ReclaimWithoutBorrowing => "InCohortReclamation",
            Variant::ReclaimWhileBorrowing => "InCohortReclaimWhileBorrowing",
        }
    }
}

/// The Workloads ClusterQueue `cq` would preempt so that `requests` fit, or `None`
/// (`classicalPreemptions`). `need` are the (flavor, resource) pairs that need preemption:
/// only Workloads using one of them are candidates. `priority` and `created` are the incoming
/// Workload's (`created` orders `LowerOrNewerEqualPriority`). Candidates come as Kueue's
/// `candidateIterator` gives them: hierarchical-reclaim candidates, then priority candidates
/// from other ClusterQueues, then the ClusterQueue's own, each group in
/// `CandidatesOrdering` (lower priority first, then the most recently admitted).
pub fn targets(
    q: &mut KueueQueues,
    cq: usize,
    need: &[Fr],
    requests: &[(Fr, i64)],
    priority: i32,
    created: i64,
) -> Option<Vec<Target>> {
    let policy = q.spec(cq).preemption;
    let root = q.tree.root(cq);
    let path: Vec<usize> = {
        let mut p = Vec::new();
        let mut cur = q.tree.nodes[cq].parent;
        while let Some(c) = cur {
            p.push(c);
            cur = q.tree.nodes[c].parent;
        }
        p
    };
    // Hierarchical advantage when reaching each ancestor (`QuantitiesFitInQuota` up the path).
    let mut advantage_at = Vec::with_capacity(path.len());
    let mut adv = requests
        .iter()
        .all(|(fr, v)| q.tree.nominal(cq, *fr) >= super::quota::add(q.tree.usage_of(cq, *fr), *v));
    let mut remaining: Vec<(Fr, i64)> = requests
        .iter()
        .map(|(fr, v)| (*fr, (*v - q.tree.local_available(cq, *fr)).max(0)))
        .collect();
    for &a in &path {
        advantage_at.push(adv);
        let fits = remaining
            .iter()
            .all(|(fr, v)| !q.tree.borrowing_with(a, *fr, *v));
        remaining = remaining
            .iter()
            .map(|(fr, v)| (*fr, (*v - q.tree.local_available(a, *fr)).max(0)))
            .collect();
        adv = adv || fits;
    }
    let forbidden = !policy.borrow_within_cohort;
    let mut same = Vec::new();
    let mut hier = Vec::new();
    let mut prio = Vec::new();
    for i in 0..q.admitted.len() {
        let (wcq, usage) = q.admitted_usage(i);
        if !usage.iter().any(|(fr, v)| *v > 0 && need.contains(fr)) {
            continue;
        }
        let w = &q.admitted[i];
        if wcq == cq {
            if satisfies(
                policy.within_cluster_queue,
                priority,
                created,
                w.priority,
                w.admitted_at,
            ) {
                same.push((i, Variant::WithinCq));
            }
            continue;
        }
        if path.is_empty() || q.tree.root(wcq) != root || within_nominal(q, wcq, need) {
            continue;
        }
        if !satisfies(
            policy.reclaim_within_cohort,
            priority,
            created,
            w.priority,
            w.admitted_at,
        ) {
            continue;
        }
        // The lowest common ancestor: the first of `cq`'s ancestors above `wcq`.
        let mut above = Vec::new();
        let mut cur = q.tree.nodes[wcq].parent;
        while let Some(c) = cur {
            above.push(c);
            cur = q.tree.nodes[c].parent;
        }
        let Some(k) = path.iter().position(|a| above.contains(a)) else {
            continue;
        };
        if advantage_at[k] {
            hier.push((i, Variant::Hierarchical));
        } else {
            let above_threshold = w.priority >= priority
                || policy
                    .max_priority_threshold
                    .is_some_and(|t| w.priority > t);
            let v = if forbidden || above_threshold {
                Variant::ReclaimWithoutBorrowing
            } else {
                Variant::ReclaimWhileBorrowing
            };
            prio.push((i, v));
        }
    }
    let order = |q: &KueueQueues, list: &mut Vec<(usize, Variant)>| {
        list.sort_by(|a, b| candidates_ordering(q, cq, a.0, b.0))
    };
    order(q, &mut hier);
    order(q, &mut prio);
    order(q, &mut same);
    let no_other = hier.is_empty() && prio.is_empty();
    let under_nominal = need
        .iter()
        .all(|fr| q.tree.nominal(cq, *fr) > q.tree.usage_of(cq, *fr));
    let attempts: &[bool] = if no_other || (forbidden && !under_nominal) {
        &[true]
    } else if forbidden && hier.is_empty() {
        &[false, true]
    } else {
        &[true, false]
    };
    let cands: Vec<(usize, Variant)> = hier.into_iter().chain(prio).chain(same).collect();
    if cands.is_empty() {
        return None;
    }
    for &allow_borrowing in attempts {
        let mut removed: Vec<usize> = Vec::new();
        let mut found = false;
        for (k, &(i, variant)) in cands.iter().enumerate() {
            if variant != Variant::WithinCq {
                if allow_borrowing && variant == Variant::ReclaimWithoutBorrowing {
                    continue;
                }
                if within_nominal(q, q.admitted_usage(i).0, need) {
                    continue;
                }
            }
            remove(q, i);
            removed.push(k);
            if fits(q, cq, requests, allow_borrowing) {
                found = true;
                break;
            }
        }
        if found {
            let removed = removed
                .iter()
                .map(|&k| Target {
                    admitted: cands[k].0,
                    reason: cands[k].1.reason(),
                })
                .collect();
            return Some(fill_back(q, cq, requests, allow_borrowing, removed));
        }
        for &k in &removed {
            restore(q, cands[k].0);
        }
    }
    None
}

/// Kueue's `CandidatesOrdering` of admitted Workloads `a` and `b` for a preemptor in
/// ClusterQueue `cq`: other ClusterQueues' first, then lower priority, then the most recently
/// admitted, then by name (Kueue's test sets the UID to the name).
pub(super) fn candidates_ordering(q: &KueueQueues, cq: usize, a: usize, b: usize) -> Ordering {
    let (wa, wb) = (&q.admitted[a], &q.admitted[b]);
    let same = |i: usize| q.admitted_usage(i).0 == cq;
    same(a)
        .cmp(&same(b))
        .then(wa.priority.cmp(&wb.priority))
        .then(wb.admitted_at.cmp(&wa.admitted_at))
        .then(wa.name.cmp(&wb.name))
}

/// `fillBackWorkloads`, then the snapshot restored: `removed` (in the order they were taken
/// out, all still out of `q`) are put back from the second last down, each kept out only if
/// the Workload no longer fits without it. Every usage is back in `q` on return; the targets
/// come sorted by admitted index.
pub(super) fn fill_back(
    q: &mut KueueQueues,
    cq: usize,
    requests: &[(Fr, i64)],
    allow_borrowing: bool,
    removed: Vec<Target>,
) -> Vec<Target> {
    let mut keep = vec![true; removed.len()];
    for j in (0..removed.len().saturating_sub(1)).rev() {
        let idx = removed[j].admitted;
        restore(q, idx);
        if fits(q, cq, requests, allow_borrowing) {
            keep[j] = false;
        } else {
            remove(q, idx);
        }
    }
    let mut out: Vec<Target> = removed
        .into_iter()
        .zip(keep)
        .filter_map(|(t, k)| k.then_some(t))
        .collect();
    for t in &out {
        restore(q, t.admitted);
    }
    out.sort_by_key(|t| t.admitted);
    out
}

/// Whether ClusterQueue `n` uses at most its nominal quota of every pair in `need`
/// (`IsWithinNominalInResources`).
pub(super) fn within_nominal(q: &KueueQueues, n: usize, need: &[Fr]) -> bool {
    need.iter()
        .all(|fr| q.tree.usage_of(n, *fr) <= q.tree.nominal(n, *fr))
}

pub(super) fn remove(q: &mut KueueQueues, i: usize) {
    let (cq, usage) = q.admitted_usage(i);
    let usage = usage.to_vec();
    for (fr, v) in usage {
        q.tree.remove_usage(cq, fr, v);
    }
}

pub(super) fn restore(q: &mut KueueQueues, i: usize) {
    let (cq, usage) = q.admitted_usage(i);
    let usage = usage.to_vec();
    for (fr, v) in usage {
        q.tree.add_usage(cq, fr, v);
    }
}

/// `workloadFits`: every request within what is available, and within nominal when borrowing
/// is not allowed.
pub(super) fn fits(
    q: &KueueQueues,
    cq: usize,
    requests: &[(Fr, i64)],
    allow_borrowing: bool,
) -> bool {
    requests.iter().all(|(fr, v)| {
        (allow_borrowing || !q.tree.borrowing_with(cq, *fr, *v))
            && *v <= q.tree.available(cq, *fr).max(0)
    })
}
