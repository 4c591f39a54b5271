//! Which pending job a scheduling pass tries next, under a [`Dialect`]'s rules: one decision,
//! taken again after every job placed (the placed job's queue now holds more).
//!
//! - [`Dialect::Kueue`] (railyard's fair-share order): the job whose leaf queue uses the least
//!   of its GPU fair share, then the higher priority, then the earlier job.
//! - [`Dialect::Kai`] (KAI Scheduler's allocate action at d5bc503a,
//!   `actions/utils/job_order_by_queue.go`): down the queue tree, at each level the queue whose
//!   best pending job goes first by `proportion/queue_order/queue_order.go` — a queue not above
//!   its fair share (every resource over) before one above; one that stays within its deserved
//!   quota with its best job before one that does not; the higher queue priority; no use of a
//!   resource it has no allocatable share of; the smaller dominant share with its best job,
//!   then without; the smaller allocatable share; the earlier queue, then the smaller UID
//!   (the name when none) —, and in the leaf the job
//!   by the `priority` plugin (higher first), then by the `elastic` plugin (a job below its gang
//!   minimum, then one at it, then one above it: a job KAI put back after placing its
//!   minimum waits for the other jobs' minimums), then the earlier job (KAI's creation time,
//!   then UID).
//!
//! Jobs are given in creation order: a job's index is its final tie-break. Pure; O(queues ·
//! depth + jobs) per decision.

use std::cmp::Ordering;

use crate::dialect::Dialect;
use crate::job::{Resource, Resources};
use crate::queue::{QueueId, QueueTree, UNLIMITED};

/// A job waiting to be placed.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingJob {
    /// Its leaf queue.
    pub queue: QueueId,
    /// Higher goes first within a queue.
    pub priority: i32,
    /// What the job takes when placed (GPUs, CPU, memory, as queues count them).
    pub request: Resources,
    /// Its running pods against its gang minimum (a job none of whose pods run is below it).
    pub gang: GangStanding,
}

/// A job's running pods against its gang minimum (KAI's `elastic` plugin: every pod set at or
/// above its minimum, and whether one is above).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum GangStanding {
    /// Some pod set runs fewer pods than its minimum (a pending job).
    #[default]
    Below,
    /// Every pod set runs exactly its minimum.
    At,
    /// Every pod set runs at least its minimum, one more.
    Above,
}

/// The queues as the order sees them: the tree with its quotas and limits, each queue's fair
/// share (from [`crate::fair_share_in`]), what each leaf holds now, and the cluster's total.
#[derive(Clone, Copy, Debug)]
pub struct QueueStanding<'a> {
    /// The queue tree (priorities, deserved quotas, limits, creation times).
    pub tree: &'a QueueTree,
    /// Fair share per queue, by [`QueueId`].
    pub fair_share: &'a [Resources],
    /// Held now per queue, by [`QueueId`]; only leaves are read (a parent holds its subtree's).
    pub allocated: &'a [Resources],
    /// The cluster's total, for a share of an unlimited queue.
    pub total: Resources,
}

/// The pending job to try next (an index into `jobs`), `None` when there is none.
pub fn next_pending(
    dialect: Dialect,
    queues: &QueueStanding,
    jobs: &[PendingJob],
) -> Option<usize> {
    match dialect {
        Dialect::Kueue => next_by_fair_share(queues, jobs),
        Dialect::Kai => next_by_kai_queue_order(queues, jobs),
    }
}

/// Railyard's order: (leaf's GPU use ÷ its fair share, quantised; −priority; index).
fn next_by_fair_share(queues: &QueueStanding, jobs: &[PendingJob]) -> Option<usize> {
    let key = |i: usize| {
        let q = jobs[i].queue.index();
        let fair = queues.fair_share.get(q).map_or(0.0, |r| r.gpu);
        let used = queues.allocated.get(q).map_or(0.0, |r| r.gpu);
        let ratio = if fair > 0.0 { used / fair } else { f64::MAX };
        // Quantised so equal ratios compare equal regardless of float noise.
        (
            (ratio * 1e6).min(u64::MAX as f64) as u64,
            -i64::from(jobs[i].priority),
            i,
        )
    };
    (0..jobs.len()).min_by_key(|&i| key(i))
}

/// KAI's order: see the module notes.
fn next_by_kai_queue_order(queues: &QueueStanding, jobs: &[PendingJob]) -> Option<usize> {
    let tree = queues.tree;
    let n = tree.queues.len();
    // Best job per leaf (priority, then creation order).
    let mut best: Vec<Option<usize>> = vec![None; n];
    for (i, j) in jobs.iter().enumerate() {
        let slot = &mut best[j.queue.index()];
        let before = |b: usize| (-jobs[b].priority, jobs[b].gang) > (-j.priority, j.gang);
        if slot.is_none_or(before) {
            *slot = Some(i);
        }
    }
    // Held per queue, parents summed from their leaves.
    let mut held = vec![Resources::default(); n];
    for q in 0..n {
        if tree.children[q].is_empty() {
            let a = queues.allocated.get(q).copied().unwrap_or_default();
            for anc in tree.ancestry(QueueId(q as u32)) {
                held[anc.index()] = held[anc.index()].add(&a);
            }
        }
    }
    let ctx = Kai {
        queues,
        jobs,
        best: &best,
        held: &held,
    };
    let mut level: &[QueueId] = &tree.roots;
    loop {
        let q = level
            .iter()
            .copied()
            .filter_map(|q| ctx.best_under(q).map(|j| (q, j)))
            .min_by(|&(l, lj), &(r, rj)| ctx.compare(l, r, lj, rj))?
            .0;
        if tree.children[q.index()].is_empty() {
            return best[q.index()];
        }
        level = &tree.children[q.index()];
    }
}

struct Kai<'a> {
    queues: &'a QueueStanding<'a>,
    jobs: &'a [PendingJob],
    best: &'a [Option<usize>],
    held: &'a [Resources],
}

impl Kai<'_> {
    /// The job a queue puts forward: its own best (a leaf) or its best child's.
    fn best_under(&self, q: QueueId) -> Option<usize> {
        let kids = &self.queues.tree.children[q.index()];
        if kids.is_empty() {
            return self.best[q.index()];
        }
        kids.iter()
            .copied()
            .filter_map(|c| self.best_under(c).map(|j| (c, j)))
            .min_by(|&(l, lj), &(r, rj)| self.compare(l, r, lj, rj))
            .map(|(_, j)| j)
    }

    fn deserved(&self, q: QueueId, r: Resource) -> f64 {
        self.queues.tree.queues[q.index()].quota(r).quota
    }

    fn limit(&self, q: QueueId, r: Resource) -> f64 {
        self.queues.tree.queues[q.index()].quota(r).limit
    }

    fn fair(&self, q: QueueId, r: Resource) -> f64 {
        self.queues
            .fair_share
            .get(q.index())
            .map_or(0.0, |f| f.get(r))
    }

    /// KAI's `GetAllocatableShare`: max(deserved, fair share) capped by the limit; the limit
    /// itself when the deserved quota is unlimited.
    fn allocatable(&self, q: QueueId, r: Resource) -> f64 {
        let (deserved, limit) = (self.deserved(q, r), self.limit(q, r));
        if deserved == UNLIMITED {
            return limit;
        }
        let a = deserved.max(self.fair(q, r));
        if limit == UNLIMITED {
            a
        } else {
            a.min(limit)
        }
    }

    /// KAI's `GetDominantResourceShare` of `held` (+ `extra`).
    fn dominant_share(&self, q: QueueId, extra: Option<&Resources>) -> f64 {
        Resource::ALL
            .iter()
            .map(|&r| {
                let held = self.held[q.index()].get(r) + extra.map_or(0.0, |e| e.get(r));
                let mut a = self.allocatable(q, r);
                if a == UNLIMITED {
                    a = self.queues.total.get(r);
                }
                if a == 0.0 {
                    held * 1000.0
                } else {
                    held / a
                }
            })
            .fold(0.0, f64::max)
    }

    /// Whether `l` goes before `r` (KAI's `GetQueueOrderResult`), their best jobs `lj`, `rj`.
    fn compare(&self, l: QueueId, r: QueueId, lj: usize, rj: usize) -> Ordering {
        let (lreq, rreq) = (&self.jobs[lj].request, &self.jobs[rj].request);
        // 1. Not above fair share (above: every resource held beyond its fair share) first.
        let above = |q: QueueId| {
            Resource::ALL
                .iter()
                .all(|&x| self.fair(q, x) < self.held[q.index()].get(x))
        };
        // 2. Within the deserved quota with the best job first.
        let within = |q: QueueId, req: &Resources| {
            Resource::ALL.iter().all(|&x| {
                let d = self.deserved(q, x);
                d == UNLIMITED || self.held[q.index()].get(x) + req.get(x) <= d
            })
        };
        // 4. Using (with the best job) a resource it has no allocatable share of: last.
        let zero_share_use = |q: QueueId, req: &Resources| {
            Resource::ALL.iter().any(|&x| {
                self.allocatable(q, x) == 0.0 && self.held[q.index()].get(x) + req.get(x) > 0.0
            })
        };
        let spec = |q: QueueId| &self.queues.tree.queues[q.index()];
        above(l)
            .cmp(&above(r))
            .then_with(|| within(r, rreq).cmp(&within(l, lreq)))
            .then_with(|| spec(r).priority.cmp(&spec(l).priority))
            .then_with(|| zero_share_use(l, lreq).cmp(&zero_share_use(r, rreq)))
            .then_with(|| {
                self.dominant_share(l, Some(lreq))
                    .total_cmp(&self.dominant_share(r, Some(rreq)))
            })
            .then_with(|| {
                self.dominant_share(l, None)
                    .total_cmp(&self.dominant_share(r, None))
            })
            .then_with(|| self.smaller_allocatable(l, r))
            .then_with(|| {
                // The earlier queue, then the smaller UID (KAI's session fallback).
                let created = |q: QueueId| spec(q).creation_time.unwrap_or(i64::MIN);
                let uid = |q: QueueId| spec(q).uid.as_deref().unwrap_or(&spec(q).name);
                created(l).cmp(&created(r)).then_with(|| uid(l).cmp(uid(r)))
            })
            .then(l.index().cmp(&r.index()))
    }

    /// 7. The queue whose allocatable share is smaller in one resource and larger in none first.
    fn smaller_allocatable(&self, l: QueueId, r: QueueId) -> Ordering {
        let le = |a: QueueId, b: QueueId| {
            Resource::ALL
                .iter()
                .all(|&x| self.allocatable(a, x) <= self.allocatable(b, x))
        };
        let lt_one = |a: QueueId, b: QueueId| {
            Resource::ALL
                .iter()
                .any(|&x| self.allocatable(a, x) < self.allocatable(b, x))
        };
        if le(l, r) && lt_one(l, r) {
            Ordering::Less
        } else if le(r, l) && lt_one(r, l) {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }
}
