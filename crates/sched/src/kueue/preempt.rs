//! Kueue's classical quota preemption, flattened: candidates in the ClusterQueue
//! (`withinClusterQueue`) and in borrowing ClusterQueues of the same Cohort tree
//! (`reclaimWithinCohort`), in Kueue's candidate order (`common/ordering.go`
//! `CandidatesOrdering`: other ClusterQueues first, then lower priority, then the most recently
//! admitted), removed one by one until the Workload fits, then those not needed put back in
//! reverse order (`preemption.go` `classicalPreemptions`, `fillBackWorkloads`). Borrowing while
//! preempting follows `borrowWithinCohort` (`IsBorrowingWithinCohortForbidden`,
//! `isAboveBorrowingThreshold`). Kueue's hierarchical-advantage split of the candidates
//! (`collectCandidatesForHierarchicalReclaim`) is not modelled: the README's "Differences from
//! Kueue" says so.

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
fn satisfies(policy: Policy, priority: i32, at: i64, cand_priority: i32, cand_at: i64) -> bool {
    match policy {
        Policy::Never => false,
        Policy::LowerPriority => cand_priority < priority,
        Policy::LowerOrNewerEqualPriority => {
            cand_priority < priority || (cand_priority == priority && cand_at > at)
        }
        Policy::Any => true,
    }
}

/// The Workloads ClusterQueue `cq` would preempt so that `requests` fit, or `None`. `priority`
/// and `created` are the incoming Workload's (`created` orders `LowerOrNewerEqualPriority`).
/// `need` are the (flavor, resource) pairs that need preemption: only Workloads using one of
/// them are candidates.
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
    let has_parent = q.tree.nodes[cq].parent.is_some();
    // (admitted index, same queue, variant reason, may borrow while preempting it)
    let mut cands: Vec<(usize, bool, &'static str, bool)> = Vec::new();
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
                cands.push((i, true, "InClusterQueue", true));
            }
            continue;
        }
        if !has_parent || q.tree.root(wcq) != root {
            continue;
        }
        let borrowing = need
            .iter()
            .any(|fr| q.tree.usage_of(wcq, *fr) > q.tree.nominal(wcq, *fr));
        if !borrowing
            || !satisfies(
                policy.reclaim_within_cohort,
                priority,
                created,
                w.priority,
                w.admitted_at,
            )
        {
            continue;
        }
        let while_borrowing = policy.borrow_within_cohort
            && w.priority < priority
            && policy
                .max_priority_threshold
                .is_none_or(|t| w.priority <= t);
        if while_borrowing {
            cands.push((i, false, "InCohortReclaimWhileBorrowing", true));
        } else {
            cands.push((i, false, "InCohortReclamation", false));
        }
    }
    if cands.is_empty() {
        return None;
    }
    // Other ClusterQueues first, then lower priority, then most recently admitted.
    cands.sort_by(|a, b| {
        let (wa, wb) = (&q.admitted[a.0], &q.admitted[b.0]);
        a.1.cmp(&b.1)
            .then(wa.priority.cmp(&wb.priority))
            .then(wb.admitted_at.cmp(&wa.admitted_at))
            .then(wa.name.cmp(&wb.name))
    });
    // Kueue tries with borrowing allowed first unless borrowWithinCohort forbids it while
    // the queue is at or above nominal.
    let under_nominal = need
        .iter()
        .all(|fr| q.tree.nominal(cq, *fr) > q.tree.usage_of(cq, *fr));
    let attempts: &[bool] = if !policy.borrow_within_cohort && !under_nominal {
        &[true]
    } else {
        &[true, false]
    };
    for &allow_borrowing in attempts {
        let mut removed: Vec<usize> = Vec::new();
        let mut found = None;
        for (k, c) in cands.iter().enumerate() {
            // Without borrowing every candidate may go; with borrowing only those whose
            // variant allows it (same queue or reclaim while borrowing) — Kueue's
            // `candidateIterator.Next(borrowing)`.
            if allow_borrowing && !c.3 && !borrow_ok(q, cq, need) {
                continue;
            }
            remove(q, c.0);
            removed.push(k);
            if fits(q, cq, requests, allow_borrowing) {
                found = Some(());
                break;
            }
        }
        if found.is_some() {
            // Put back what is not needed, last removed first (the last stays).
            let mut keep = removed.clone();
            for j in (0..removed.len().saturating_sub(1)).rev() {
                let idx = cands[removed[j]].0;
                restore(q, idx);
                if fits(q, cq, requests, allow_borrowing) {
                    keep.retain(|&k| k != removed[j]);
                } else {
                    remove(q, idx);
                }
            }
            for &k in &keep {
                restore(q, cands[k].0);
            }
            let mut out: Vec<Target> = keep
                .iter()
                .map(|&k| Target {
                    admitted: cands[k].0,
                    reason: cands[k].2,
                })
                .collect();
            out.sort_by_key(|t| t.admitted);
            return Some(out);
        }
        for &k in &removed {
            restore(q, cands[k].0);
        }
    }
    None
}

/// Whether the ClusterQueue is within nominal for every resource needing preemption, so a
/// reclaim candidate that forbids borrowing still counts.
fn borrow_ok(q: &KueueQueues, cq: usize, need: &[Fr]) -> bool {
    need.iter()
        .all(|fr| q.tree.usage_of(cq, *fr) <= q.tree.nominal(cq, *fr))
}

fn remove(q: &mut KueueQueues, i: usize) {
    let (cq, usage) = q.admitted_usage(i);
    let usage = usage.to_vec();
    for (fr, v) in usage {
        q.tree.remove_usage(cq, fr, v);
    }
}

fn restore(q: &mut KueueQueues, i: usize) {
    let (cq, usage) = q.admitted_usage(i);
    let usage = usage.to_vec();
    for (fr, v) in usage {
        q.tree.add_usage(cq, fr, v);
    }
}

/// `workloadFits`: every request within what is available, and within nominal when borrowing
/// is not allowed.
fn fits(q: &KueueQueues, cq: usize, requests: &[(Fr, i64)], allow_borrowing: bool) -> bool {
    requests.iter().all(|(fr, v)| {
        (allow_borrowing || !q.tree.borrowing_with(cq, *fr, *v))
            && *v <= q.tree.available(cq, *fr).max(0)
    })
}
