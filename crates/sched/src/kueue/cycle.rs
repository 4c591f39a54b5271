//! Kueue's scheduling cycle (`pkg/scheduler/scheduler.go` at kubernetes-sigs/kueue ff69552,
//! `schedule`, `nominate`, `makeClassicalIterator`, `processEntry`, `fits`,
//! `reserveCapacityForUnreclaimablePreempt`): the head of every ClusterQueue gets its flavors
//! against one snapshot; the entries are ordered (lower borrowing level first, then higher
//! priority, then earlier creation); in that order each is admitted, issues its preemptions,
//! or is skipped, its usage added to the snapshot before the next is looked at.
//!
//! Design note (2026-12-02). [`cycle`] is the one place a cycle is decided, a pure function
//! of the queues (with their admitted Workloads) and the heads: it works on its own copy of
//! the snapshot, as Kueue discards its snapshot after the cycle, and returns one [`Entry`] per
//! head. The caller counts what was admitted. Of Kueue's entry checks it models: NoFit;
//! preemption without candidates (capacity reserved when `reclaimWithinCohort` is not `Any`);
//! preemption targets already taken by an earlier entry (the assignment recomputed with those
//! victims gone, as the default-on `RecomputeAssignmentUponPreemptionTargetsOverlap` does:
//! "will fit after these preemptions complete" or skipped); and "no longer fits after
//! processing another workload" (the usage checked against the snapshot with every victim of
//! the cycle removed). With fair sharing on in the queues (`KueueQueues::fair_sharing`) the
//! entries are looked at in the order of their ClusterQueues' dominant resource shares,
//! computed once per cycle (Kueue re-ranks after each entry, through its tournament over the
//! cohort tree). TAS recomputation and admission checks are not modelled here.

use std::collections::BTreeSet;

use super::assign::{assign, Assignment, FlavorCheck, Mode, PodSetRequest};
use super::fair::{dominant_resource_share, Share};
use super::quota::{sub, Fr};
use super::KueueQueues;
use crate::kueue::preempt::Policy;

/// Kueue's message for an entry whose usage no longer fits.
pub const NO_LONGER_FITS: &str = "Workload no longer fits after processing another workload";
/// Kueue's message for an entry whose targets another entry of the cycle preempts.
pub const OVERLAPPING: &str = "Workload has overlapping preemption targets with another workload";
/// Kueue's message for an entry that fits once another entry's victims are gone.
pub const DEFERRED: &str = "Workload has overlapping preemption targets with another workload, but will fit after these preemptions complete";

/// A ClusterQueue's head Workload for one cycle.
pub struct Head<'a> {
    /// Its ClusterQueue node.
    pub cq: usize,
    /// Its pod sets.
    pub pod_sets: Vec<PodSetRequest>,
    /// Priority.
    pub priority: i32,
    /// Creation order (smaller = earlier), Kueue's FIFO tie-break.
    pub created: i64,
    /// Why a flavor cannot hold a pod set regardless of quota.
    pub check: FlavorCheck<'a>,
}

impl std::fmt::Debug for Head<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Head")
            .field("cq", &self.cq)
            .field("pod_sets", &self.pod_sets)
            .field("priority", &self.priority)
            .field("created", &self.created)
            .finish_non_exhaustive()
    }
}

/// What the cycle did with a head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Quota reserved.
    Admitted,
    /// Its preemptions were issued ([`Entry::victims`]); it waits for them.
    Preempting,
    /// Not admitted in this cycle, with Kueue's message.
    Pending(String),
}

/// One head's result.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its flavor assignment (the recomputed one when targets overlapped).
    pub assignment: Assignment,
    /// Admitted, preempting or pending.
    pub outcome: Outcome,
    /// Names of the Workloads its preemptions stop, sorted.
    pub victims: Vec<String>,
}

/// One scheduling cycle over `heads`, in head order: Kueue's classical order, or fair
/// sharing's when `q` has it on ([`KueueQueues::fair_sharing`]). `q` is not changed.
pub fn cycle(q: &KueueQueues, heads: &[Head<'_>]) -> Vec<Entry> {
    let mut snap = q.clone();
    let assignments: Vec<Assignment> = heads
        .iter()
        .map(|h| assign(&mut snap, h.cq, &h.pod_sets, h.priority, h.created, h.check))
        .collect();
    decide(snap, heads, assignments)
}

/// [`cycle`] with each head's assignment already made on `q` (by [`assign`], in head
/// order, nothing admitted in between), as a caller that has them does: `q` is copied only
/// when an assignment needs preemption; otherwise only its quota tree is (the cycle then
/// adds usage and nothing else).
pub fn cycle_assigned(
    q: &KueueQueues,
    heads: &[Head<'_>],
    assignments: Vec<Assignment>,
) -> Vec<Entry> {
    if assignments.iter().any(|a| a.mode() == Mode::Preempt) {
        return decide(q.clone(), heads, assignments);
    }
    // What `decide` does when nobody is preempted: an entry that is blocked or does not fit
    // waits; one that fits is admitted if its usage is still available.
    let mut entries = pending_entries(q, assignments);
    let mut tree = q.tree.clone();
    for i in processing_order(q, heads, &entries) {
        let e = &mut entries[i];
        let a = &e.assignment;
        e.outcome = if let Some(why) = &a.blocked {
            Outcome::Pending(why.clone())
        } else if a.mode() == Mode::NoFit {
            Outcome::Pending(a.message())
        } else {
            let usage: Option<Vec<(Fr, i64)>> = a
                .usage
                .iter()
                .map(|(f, r, v)| Some((q.tree.fr(f, r)?, *v)))
                .collect();
            let cq = heads[i].cq;
            match usage {
                Some(u) if u.iter().all(|&(fr, v)| tree.available(cq, fr) >= v) => {
                    for (fr, v) in u {
                        tree.add_usage(cq, fr, v);
                    }
                    Outcome::Admitted
                }
                _ => Outcome::Pending(NO_LONGER_FITS.to_owned()),
            }
        };
    }
    entries
}

fn pending_entries(q: &KueueQueues, assignments: Vec<Assignment>) -> Vec<Entry> {
    assignments
        .into_iter()
        .map(|assignment| Entry {
            victims: names(q, &assignment),
            assignment,
            outcome: Outcome::Pending(String::new()),
        })
        .collect()
}

/// The cycle's loop on its snapshot `snap`, the heads' assignments made on it.
fn decide(mut snap: KueueQueues, heads: &[Head<'_>], assignments: Vec<Assignment>) -> Vec<Entry> {
    let mut entries = pending_entries(&snap, assignments);
    let order = processing_order(&snap, heads, &entries);
    let mut preempted: BTreeSet<String> = BTreeSet::new();
    for i in order {
        let h = &heads[i];
        let e = &mut entries[i];
        let overlap = e.victims.iter().any(|v| preempted.contains(v));
        let mut deferred = false;
        if overlap {
            // Recompute with the other preemptions' victims gone.
            let mut without = snap.clone();
            for v in &preempted {
                without.release(v);
            }
            let a = assign(
                &mut without,
                h.cq,
                &h.pod_sets,
                h.priority,
                h.created,
                h.check,
            );
            let mut a = a;
            e.victims = names(&without, &a);
            // Targets as indices of the snapshot's admitted list (`without` lacks the victims).
            let named = targets_named(&without, &a.targets);
            for (t, name) in a.targets.iter_mut().zip(named) {
                t.admitted = snap
                    .admitted
                    .iter()
                    .position(|w| w.name == name)
                    .expect("a Workload of the snapshot");
            }
            deferred = a.mode() == Mode::Fit && a.blocked.is_none();
            e.assignment = a;
        }
        let a = &e.assignment;
        if let Some(why) = &a.blocked {
            e.outcome = Outcome::Pending(why.clone());
            continue;
        }
        match a.mode() {
            Mode::NoFit => {
                e.outcome = Outcome::Pending(a.message());
                continue;
            }
            Mode::Preempt if a.targets.is_empty() => {
                e.outcome = Outcome::Pending(a.message());
                if snap.spec(h.cq).preemption.reclaim_within_cohort != Policy::Any {
                    for (fr, v) in reserve(&snap, h.cq, a) {
                        snap.tree.add_usage(h.cq, fr, v);
                    }
                }
                continue;
            }
            _ => {}
        }
        let usage = interned(&mut snap, a);
        if deferred {
            e.outcome = Outcome::Pending(DEFERRED.to_owned());
            for &(fr, v) in &usage {
                snap.tree.add_usage(h.cq, fr, v);
            }
            continue;
        }
        if e.victims.iter().any(|v| preempted.contains(v)) {
            e.outcome = Outcome::Pending(OVERLAPPING.to_owned());
            continue;
        }
        if !fits(&snap, h.cq, &usage, preempted.iter().chain(&e.victims)) {
            e.outcome = Outcome::Pending(NO_LONGER_FITS.to_owned());
            continue;
        }
        preempted.extend(e.victims.iter().cloned());
        for &(fr, v) in &usage {
            snap.tree.add_usage(h.cq, fr, v);
        }
        e.outcome = if a.mode() == Mode::Preempt {
            Outcome::Preempting
        } else {
            Outcome::Admitted
        };
    }
    entries
}

/// The order a cycle looks at its heads in, by whether `q` has fair sharing on. Classical
/// (`entryOrdering`): lower borrowing level first, then higher priority, then earlier
/// creation, then head order. Fair sharing (`fair_sharing_iterator.go`, simplified): lower
/// dominant resource share of the head's ClusterQueue with the head's usage added
/// (`CompareDRS`) first, then priority, creation and head order; the shares are those of `q`,
/// not recomputed after each entry as Kueue's tournament does. `entries` are the heads'
/// assignments. Callers applying a cycle's entries use it too.
pub fn processing_order(q: &KueueQueues, heads: &[Head<'_>], entries: &[Entry]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..heads.len()).collect();
    let rest = |i: usize| (std::cmp::Reverse(heads[i].priority), heads[i].created, i);
    if q.fair_sharing.is_some() {
        let shares: Vec<Share> = heads
            .iter()
            .zip(entries)
            .map(|(h, e)| {
                let usage: Vec<(Fr, i64)> = e
                    .assignment
                    .usage
                    .iter()
                    .filter_map(|(f, r, v)| Some((q.tree.fr(f, r)?, *v)))
                    .collect();
                dominant_resource_share(q, h.cq, &usage, q.spec(h.cq).fair_weight_milli)
            })
            .collect();
        order.sort_by(|&a, &b| shares[a].compare(&shares[b]).then(rest(a).cmp(&rest(b))));
    } else {
        order.sort_by_key(|&i| (entries[i].assignment.borrowing, rest(i)));
    }
    order
}

fn names(q: &KueueQueues, a: &Assignment) -> Vec<String> {
    let mut v: Vec<String> = a
        .targets
        .iter()
        .map(|t| q.admitted[t.admitted].name.clone())
        .collect();
    v.sort();
    v
}

fn targets_named(q: &KueueQueues, targets: &[super::Target]) -> Vec<String> {
    targets
        .iter()
        .map(|t| q.admitted[t.admitted].name.clone())
        .collect()
}

fn interned(q: &mut KueueQueues, a: &Assignment) -> Vec<(Fr, i64)> {
    a.usage
        .iter()
        .map(|(f, r, v)| ((q.tree.flavor_id(f), q.tree.resource_id(r)), *v))
        .collect()
}

/// `fits`: the usage within what is available with `victims` gone (`SimulateWorkloadUsageRemoval`
/// then `ClusterQueueSnapshot.Fits`).
fn fits<'a>(
    q: &KueueQueues,
    cq: usize,
    usage: &[(Fr, i64)],
    victims: impl Iterator<Item = &'a String>,
) -> bool {
    let victims: BTreeSet<&String> = victims.collect();
    if victims.is_empty() {
        return usage.iter().all(|&(fr, v)| q.tree.available(cq, fr) >= v);
    }
    let mut without = q.clone();
    for v in victims {
        without.release(v);
    }
    usage
        .iter()
        .all(|&(fr, v)| without.tree.available(cq, fr) >= v)
}

/// `quotaResourcesToReserve` for an entry that needs preemption but has no candidates: up to
/// its borrowing limit when it borrows, else up to its nominal quota.
fn reserve(q: &KueueQueues, cq: usize, a: &Assignment) -> Vec<(Fr, i64)> {
    a.usage
        .iter()
        .filter_map(|(f, r, v)| {
            let fr = q.tree.fr(f, r)?;
            let quota = q.tree.nodes[cq]
                .quotas
                .get(&fr)
                .copied()
                .unwrap_or_default();
            let used = q.tree.usage_of(cq, fr);
            let keep = if a.borrowing > 0 {
                match quota.borrowing_limit {
                    None => *v,
                    Some(b) => (*v).min(sub(quota.nominal.saturating_add(b), used)),
                }
            } else {
                (*v).min(sub(quota.nominal, used))
            };
            Some((fr, keep.max(0)))
        })
        .collect()
}
