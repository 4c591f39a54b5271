//! Kueue's preemption when fair sharing is on (`preemption.go` `fairPreemptions`,
//! `runFirstFsStrategy`, `runSecondFsStrategy`; `fairsharing/ordering.go`, `target.go`,
//! `strategy.go`, `least_common_ancestor.go`, kubernetes-sigs/kueue ff69552): the candidates
//! (the ClusterQueue's own by `withinClusterQueue`, those of borrowing ClusterQueues of the
//! Cohort tree by `reclaimWithinCohort`) in `CandidatesOrdering`, taken one at a time from the
//! ClusterQueue a tournament down the Cohort tree finds with the highest dominant resource
//! share, while a strategy compares the shares of the two "almost lowest common ancestors"
//! (the children of the lowest common Cohort on the preemptor's and the target's side). The
//! incoming Workload's usage counts in every share. `FairSharingPreemptWithinNominal` (on by
//! default) is modelled: a preemptor within nominal in the resources needing preemption
//! reclaims without the strategy.

use std::collections::{BTreeMap, VecDeque};

use super::fair::{dominant_resource_share, Share};
use super::preempt::{
    candidates_ordering, fill_back, fits, remove, restore, satisfies, within_nominal, Policy,
    Target,
};
use super::quota::Fr;
use super::KueueQueues;

/// A `fairSharing.preemptionStrategies` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// `LessThanOrEqualToFinalShare`: the preemptor's new share at most the target's share
    /// after the candidate is gone.
    LessThanOrEqualToFinalShare,
    /// `LessThanInitialShare`: the preemptor's new share below the target's share now.
    LessThanInitialShare,
}

impl Strategy {
    /// Kueue's default list (`parseStrategies` with none configured).
    pub const DEFAULT: [Strategy; 2] = [
        Strategy::LessThanOrEqualToFinalShare,
        Strategy::LessThanInitialShare,
    ];

    fn passes(self, preemptor_new: &Share, target_old: &Share, target_new: &Share) -> bool {
        match self {
            Strategy::LessThanOrEqualToFinalShare => preemptor_new.compare(target_new).is_le(),
            Strategy::LessThanInitialShare => preemptor_new.compare(target_old).is_lt(),
        }
    }
}

/// The share of node `n` as it is now.
fn drs(q: &KueueQueues, n: usize) -> Share {
    dominant_resource_share(q, n, &[], q.fair_weight_milli(n))
}

/// Kueue's `NegativeDRS`: below every real share.
fn negative() -> Share {
    Share {
        ratio: -1.0,
        resource: None,
        weight: 1.0,
        borrowing: false,
    }
}

/// `TargetClusterQueueOrdering`: candidates per ClusterQueue, the preemptor's ancestors, and
/// the ClusterQueues and Cohorts pruned so far.
struct Tournament {
    preemptor: usize,
    ancestors: Vec<usize>,
    per_cq: BTreeMap<usize, VecDeque<usize>>,
    pruned: Vec<bool>,
}

impl Tournament {
    fn new(q: &KueueQueues, preemptor: usize, candidates: &[usize]) -> Tournament {
        let mut ancestors = Vec::new();
        let mut cur = q.tree.nodes[preemptor].parent;
        while let Some(c) = cur {
            ancestors.push(c);
            cur = q.tree.nodes[c].parent;
        }
        let mut per_cq: BTreeMap<usize, VecDeque<usize>> = BTreeMap::new();
        for &i in candidates {
            per_cq
                .entry(q.admitted_usage(i).0)
                .or_default()
                .push_back(i);
        }
        Tournament {
            preemptor,
            ancestors,
            per_cq,
            pruned: vec![false; q.tree.nodes.len()],
        }
    }

    fn has_workload(&self, cq: usize) -> bool {
        self.per_cq.get(&cq).is_some_and(|l| !l.is_empty())
    }

    fn pop(&mut self, cq: usize) -> Option<usize> {
        self.per_cq.get_mut(&cq)?.pop_front()
    }

    /// The next target ClusterQueue (`Iter`), or `None` when the tree is exhausted.
    fn next(&mut self, q: &KueueQueues) -> Option<usize> {
        let Some(&root) = self.ancestors.last() else {
            let p = self.preemptor;
            return (!self.pruned[p] && self.has_workload(p)).then_some(p);
        };
        while !self.pruned[root] {
            if let Some(t) = self.next_in(q, root) {
                return Some(t);
            }
        }
        None
    }

    /// `nextTarget`: the child ClusterQueue or Cohort of `cohort` with the highest share, a
    /// Cohort winning ties with a ClusterQueue; `None` (and `cohort` pruned) when every child
    /// is pruned.
    fn next_in(&mut self, q: &KueueQueues, cohort: usize) -> Option<usize> {
        let children = q.tree.nodes[cohort].children.clone();
        let (mut best_cq, mut best_cq_drs) = (None, negative());
        let (mut best_cohort, mut best_cohort_drs) = (None, negative());
        for c in children {
            if self.pruned[c] {
                continue;
            }
            let d = drs(q, c);
            if q.cluster_queues[c].is_some() {
                if (!d.borrowing && c != self.preemptor) || !self.has_workload(c) {
                    self.pruned[c] = true;
                    continue;
                }
                match d.compare(&best_cq_drs) {
                    std::cmp::Ordering::Equal => {
                        let head = |cq: usize| self.per_cq[&cq][0];
                        if let Some(b) = best_cq {
                            if candidates_ordering(q, self.preemptor, head(c), head(b)).is_lt() {
                                best_cq = Some(c);
                            }
                        }
                    }
                    std::cmp::Ordering::Greater => {
                        best_cq = Some(c);
                        best_cq_drs = d;
                    }
                    std::cmp::Ordering::Less => {}
                }
            } else if !d.borrowing && !self.ancestors.contains(&c) {
                self.pruned[c] = true;
            } else if d.compare(&best_cohort_drs).is_ge() {
                best_cohort = Some(c);
                best_cohort_drs = d;
            }
        }
        match (best_cohort, best_cq) {
            (None, None) => {
                self.pruned[cohort] = true;
                None
            }
            (Some(h), _) if best_cohort_drs.compare(&best_cq_drs).is_ge() => self.next_in(q, h),
            (_, cq) => cq,
        }
    }

    /// The node below the lowest common Cohort of the preemptor and `target`, on each side
    /// (`getAlmostLCAs`).
    fn almost_lcas(&self, q: &KueueQueues, target: usize) -> (usize, usize) {
        let below = |from: usize, lca: usize| {
            let mut n = from;
            while q.tree.nodes[n].parent != Some(lca) {
                n = q.tree.nodes[n]
                    .parent
                    .expect("the lowest common Cohort is an ancestor");
            }
            n
        };
        let mut cur = q.tree.nodes[target].parent;
        while let Some(c) = cur {
            if self.ancestors.contains(&c) {
                return (below(self.preemptor, c), below(target, c));
            }
            cur = q.tree.nodes[c].parent;
        }
        unreachable!("a target outside the preemptor's Cohort tree")
    }

    /// (preemptor's new share, target's old share) (`ComputeShares`).
    fn shares(&self, q: &KueueQueues, target: usize) -> (Share, Share) {
        let (p, t) = self.almost_lcas(q, target);
        (drs(q, p), drs(q, t))
    }

    /// The target's share with admitted Workload `i` gone (`ComputeTargetShareAfterRemoval`).
    fn share_without(&self, q: &mut KueueQueues, target: usize, i: usize) -> Share {
        remove(q, i);
        let (_, t) = self.almost_lcas(q, target);
        let s = drs(q, t);
        restore(q, i);
        s
    }
}

/// The Workloads ClusterQueue `cq` would preempt under fair sharing so that `requests` fit, or
/// `None` (`fairPreemptions`). `need`, `requests`, `priority` and `created` as in
/// [`super::preempt::targets`]; `strategies` is `fairSharing.preemptionStrategies` (empty:
/// [`Strategy::DEFAULT`]); a second strategy is Kueue's rule S2-b, always
/// `LessThanInitialShare` once per target ClusterQueue, as Kueue's validation allows no other.
/// `q` is as it was on return.
pub fn targets(
    q: &mut KueueQueues,
    cq: usize,
    need: &[Fr],
    requests: &[(Fr, i64)],
    priority: i32,
    created: i64,
    strategies: &[Strategy],
) -> Option<Vec<Target>> {
    let strategies = if strategies.is_empty() {
        &Strategy::DEFAULT[..]
    } else {
        strategies
    };
    let mut candidates = find_candidates(q, cq, need, priority, created);
    if candidates.is_empty() {
        return None;
    }
    candidates.sort_by(|&a, &b| candidates_ordering(q, cq, a, b));
    for &(fr, v) in requests {
        q.tree.add_usage(cq, fr, v);
    }
    let (mut done, mut taken, retry) =
        first_strategy(q, cq, need, requests, &candidates, strategies[0]);
    if !done && strategies.len() > 1 {
        done = second_strategy(q, cq, requests, &retry, &mut taken);
    }
    for &(fr, v) in requests {
        q.tree.remove_usage(cq, fr, v);
    }
    if !done {
        for t in &taken {
            restore(q, t.admitted);
        }
        return None;
    }
    Some(fill_back(q, cq, requests, true, taken))
}

/// `findCandidates`: Workloads using a pair in `need`, of `cq` by its `withinClusterQueue`,
/// and of the other borrowing ClusterQueues of its Cohort tree by its `reclaimWithinCohort`.
fn find_candidates(
    q: &KueueQueues,
    cq: usize,
    need: &[Fr],
    priority: i32,
    created: i64,
) -> Vec<usize> {
    let policy = q.spec(cq).preemption;
    let parent = q.tree.nodes[cq].parent;
    let root = q.tree.root(cq);
    let borrowing = |n: usize| {
        q.tree.nodes[n].parent.is_some()
            && need
                .iter()
                .any(|fr| q.tree.usage_of(n, *fr) > q.tree.nominal(n, *fr))
    };
    (0..q.admitted.len())
        .filter(|&i| {
            let (wcq, usage) = q.admitted_usage(i);
            if !usage.iter().any(|(fr, v)| *v > 0 && need.contains(fr)) {
                return false;
            }
            let rule = if wcq == cq {
                policy.within_cluster_queue
            } else if parent.is_some() && q.tree.root(wcq) == root && borrowing(wcq) {
                policy.reclaim_within_cohort
            } else {
                Policy::Never
            };
            let w = &q.admitted[i];
            satisfies(rule, priority, created, w.priority, w.admitted_at)
        })
        .collect()
}

/// Whether the incoming Workload, whose usage is in `q`, fits with it taken out
/// (`workloadFitsForFairSharing`).
fn fits_without_incoming(q: &mut KueueQueues, cq: usize, requests: &[(Fr, i64)]) -> bool {
    for &(fr, v) in requests {
        q.tree.remove_usage(cq, fr, v);
    }
    let ok = fits(q, cq, requests, true);
    for &(fr, v) in requests {
        q.tree.add_usage(cq, fr, v);
    }
    ok
}

/// Take admitted Workload `i` out of `q` as a target for `reason`; whether the incoming
/// Workload now fits.
fn take_out(
    q: &mut KueueQueues,
    cq: usize,
    requests: &[(Fr, i64)],
    taken: &mut Vec<Target>,
    i: usize,
    reason: &'static str,
) -> bool {
    remove(q, i);
    taken.push(Target {
        admitted: i,
        reason,
    });
    fits_without_incoming(q, cq, requests)
}

/// `runFirstFsStrategy`: (fits, the Workloads taken out of `q`, candidates to retry).
fn first_strategy(
    q: &mut KueueQueues,
    cq: usize,
    need: &[Fr],
    requests: &[(Fr, i64)],
    candidates: &[usize],
    strategy: Strategy,
) -> (bool, Vec<Target>, Vec<usize>) {
    let mut t = Tournament::new(q, cq, candidates);
    let mut taken = Vec::new();
    let mut retry = Vec::new();
    let within_nominal = within_nominal(q, cq, need);
    while let Some(target) = t.next(q) {
        if target == cq || within_nominal {
            let i = t.pop(target).expect("a target has a candidate");
            let reason = if target == cq {
                "InClusterQueue"
            } else {
                "InCohortReclamation"
            };
            if take_out(q, cq, requests, &mut taken, i, reason) {
                return (true, taken, retry);
            }
            continue;
        }
        let (preemptor_new, target_old) = t.shares(q, target);
        if preemptor_new.weighted().is_infinite() && !target_old.weighted().is_infinite() {
            // `fsStrategyUnsatisfiable`: no candidate here can pass; keep them for S2-b.
            while let Some(i) = t.pop(target) {
                retry.push(i);
            }
            continue;
        }
        while let Some(i) = t.pop(target) {
            let target_new = t.share_without(q, target, i);
            if strategy.passes(&preemptor_new, &target_old, &target_new) {
                if take_out(q, cq, requests, &mut taken, i, "InCohortFairSharing") {
                    return (true, taken, retry);
                }
                // The shares changed: the tournament may pick another ClusterQueue.
                break;
            }
            retry.push(i);
        }
    }
    (false, taken, retry)
}

/// `runSecondFsStrategy` (rule S2-b): per target ClusterQueue its first retry candidate, taken
/// when the preemptor's share is below the target's; whether the Workload then fits.
fn second_strategy(
    q: &mut KueueQueues,
    cq: usize,
    requests: &[(Fr, i64)],
    retry: &[usize],
    taken: &mut Vec<Target>,
) -> bool {
    let mut t = Tournament::new(q, cq, retry);
    while let Some(target) = t.next(q) {
        let (preemptor_new, target_old) = t.shares(q, target);
        let i = t.pop(target).expect("a target has a candidate");
        if preemptor_new.compare(&target_old).is_lt()
            && take_out(q, cq, requests, taken, i, "InCohortFairSharing")
        {
            return true;
        }
        t.pruned[target] = true;
    }
    false
}
