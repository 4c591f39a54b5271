//! The user's queue tree in a simulation (`simulate --queues`): the tree and the rules of the
//! scheduler it runs under ([`Dialect`]), each decision one function with the dialect a
//! parameter — whether a job is admitted now ([`QueueRules::admits`]), whom it may stop
//! ([`QueueRules::preemption_policy`]) and what must hold after every event
//! ([`QueueRules::check`]).
//!
//! Design note (2026-11-30). Trace queue names are already leaf names here (the caller maps
//! them). Usage is per leaf and per resource (GPUs, CPU millicores, memory MiB), summed up the
//! tree where a rule needs it.
//! - KAI: a job is admitted when no queue on its path goes above its limit and, for a
//!   non-preemptible job, no queue's non-preemptible use above its quota (`sched::admit_in`).
//!   Over-quota capacity goes by weight through the fair share (`sched::fair_share_in`); a job
//!   of a queue within its fair share may reclaim from queues above theirs, and within a queue
//!   a job may stop lower-priority ones (`sched::place_with_preemption_input`); non-preemptible
//!   jobs are never stopped.
//! - Kueue: a ClusterQueue (leaf) may use its nominal quota and borrow from its cohort up to
//!   its `borrowingLimit` (the tree's limit); a cohort (the root of its tree) lends no more
//!   than its members' nominal quotas plus its own, less what each member keeps with a
//!   `lendingLimit`: Σ over leaves of max(0, use − kept) ≤ Σ (nominal − kept) + the cohorts'
//!   own nominal quotas. A queue with no cohort is its own root, so it never goes above its
//!   nominal quota. Preemption follows each ClusterQueue's `preemption`: `withinClusterQueue`
//!   (Never by default, as in Kueue) and `reclaimWithinCohort` (Never by default): a job whose
//!   queue stays within its nominal quota may stop borrowing jobs (queues above their nominal
//!   quota) of its own cohort.

pub mod kueue;

use std::collections::BTreeMap;

use sched::{
    admit_in, subtree_usages, AdmissionError, Dialect, PreemptionPolicy, QueueId, QueueSpec,
    QueueTree, QuotaRequest, Resource, Resources, Violation,
};

/// An admission error without the job's own figures: which queue, which quota or limit.
fn refusal_text(e: &AdmissionError) -> String {
    match e {
        AdmissionError::NonPreemptibleOverQuota {
            queue,
            resource,
            quota,
            ..
        } => format!(
            "queue {queue} has {resource} quota {} for non-preemptible jobs",
            amount(resource, *quota)
        ),
        AdmissionError::OverLimit {
            queue,
            resource,
            limit,
            ..
        } => format!(
            "queue {queue} has {resource} limit {}, below the job's request",
            amount(resource, *limit)
        ),
        AdmissionError::UnknownQueue(_) | AdmissionError::NotLeaf(_) => e.to_string(),
    }
}

/// A quota or limit as its queue file gives it: GPUs and CPU millicores as numbers, memory in
/// bytes, at most three decimals.
fn amount(resource: &str, v: f64) -> String {
    let unit = match resource {
        "cpu" => " millicores",
        "memory" => " bytes",
        _ => "",
    };
    let s = format!("{v:.3}");
    format!("{}{unit}", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Slack for railyard's (Kueue's) comparisons, as in `sched::admit_in`.
const EPS: f64 = 1e-9;

/// Kueue's `withinClusterQueue`: whether a job may stop lower-priority jobs of its own queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WithinClusterQueue {
    /// No preemption within the queue (Kueue's default).
    #[default]
    Never,
    /// Jobs of lower priority (`LowerOrNewerEqualPriority` is read as this).
    LowerPriority,
}

/// Kueue's `reclaimWithinCohort`: whether a job within its nominal quota may stop borrowing
/// jobs of other queues of its cohort.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReclaimWithinCohort {
    /// No reclaim (Kueue's default).
    #[default]
    Never,
    /// Only jobs of lower priority.
    LowerPriority,
    /// Any borrowing job.
    Any,
}

/// A Kueue ClusterQueue's `spec.preemption`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KueuePreemption {
    /// `withinClusterQueue`.
    pub within_cluster_queue: WithinClusterQueue,
    /// `reclaimWithinCohort`.
    pub reclaim_within_cohort: ReclaimWithinCohort,
}

/// The user's queues for a run: the tree as declared and what the tree itself does not carry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueConfig {
    /// The queues, in file order (checked again when the run starts).
    pub specs: Vec<QueueSpec>,
    /// Whose rules admit, share and preempt.
    pub dialect: Dialect,
    /// Kueue: per queue, what it keeps for itself of its nominal quota (nominal quota −
    /// `lendingLimit`, per resource that has one); missing = nothing kept.
    pub kept: BTreeMap<String, Resources>,
    /// Kueue: each ClusterQueue's `preemption`; missing = Kueue's defaults (none).
    pub kueue_preemption: BTreeMap<String, KueuePreemption>,
    /// Kueue's queue objects: when given (under Kueue's rules), admission, flavors and quota
    /// preemption are `sched::kueue`'s ([`kueue::KueueRun`]) and the fields above only
    /// name the tree.
    pub kueue: Option<kueue::KueueModel>,
}

/// The rules of a run, built from a [`QueueConfig`] once.
#[derive(Clone, Debug)]
pub struct QueueRules {
    /// The tree.
    pub tree: QueueTree,
    /// Whose rules.
    pub dialect: Dialect,
    /// Per queue, what it keeps of its nominal quota (Kueue).
    kept: Vec<Resources>,
    /// Per queue, its preemption settings (Kueue).
    preemption: Vec<KueuePreemption>,
    /// Per queue, the root of its tree.
    root: Vec<QueueId>,
    /// Per root, what its cohort lends (Kueue), by [`QueueId`] of the root.
    pool: Vec<Resources>,
    /// Kueue's admission model, live, when the config gives Kueue's objects.
    pub kueue: Option<kueue::KueueRun>,
}

impl QueueRules {
    /// The rules of `config`, or every problem that refuses its tree under its dialect.
    pub fn new(config: &QueueConfig) -> Result<QueueRules, Vec<String>> {
        let (tree, _) = QueueTree::new_in(config.specs.clone(), config.dialect)
            .map_err(|ps| ps.iter().map(ToString::to_string).collect::<Vec<_>>())?;
        let n = tree.queues.len();
        let kept: Vec<Resources> = tree
            .queues
            .iter()
            .map(|q| config.kept.get(&q.name).copied().unwrap_or_default())
            .collect();
        let preemption = tree
            .queues
            .iter()
            .map(|q| {
                config
                    .kueue_preemption
                    .get(&q.name)
                    .copied()
                    .unwrap_or_default()
            })
            .collect();
        let root = (0..n)
            .map(|i| *tree.ancestry(QueueId(i as u32)).last().expect("non-empty"))
            .collect();
        let mut pool = vec![Resources::default(); n];
        for &r in &tree.roots {
            pool[r.index()] = lendable(&tree, &kept, r);
        }
        let kueue = match (&config.kueue, config.dialect) {
            (Some(m), Dialect::Kueue) => Some(kueue::KueueRun::new(m)?),
            _ => None,
        };
        Ok(QueueRules {
            kueue,
            tree,
            dialect: config.dialect,
            kept,
            preemption,
            root,
            pool,
        })
    }

    /// Whether `leaf` admits a job asking `request` now, given each queue's use (leaf use by
    /// [`QueueId`]) and non-preemptible use: `sched::admit_in` under the dialect (limits on the
    /// whole path; KAI's non-preemptible quota), and under Kueue the cohort's lending.
    pub fn admits(
        &self,
        usage: &[Resources],
        non_preemptible: &[Resources],
        leaf: QueueId,
        request: &Resources,
        preemptible: bool,
    ) -> bool {
        let ask = QuotaRequest {
            queue: &self.tree.queues[leaf.index()].name,
            request: *request,
            preemptible,
        };
        if admit_in(&self.tree, usage, non_preemptible, &ask, self.dialect).is_err() {
            return false;
        }
        self.dialect != Dialect::Kueue || self.within_cohort(usage, leaf, request).is_none()
    }

    /// Why `leaf` refuses a job that [`QueueRules::admits`] refuses (the same checks, in the
    /// same order), in words that say nothing of the job (so jobs refused alike count
    /// together); `None` when it admits it.
    pub fn refusal(
        &self,
        usage: &[Resources],
        non_preemptible: &[Resources],
        leaf: QueueId,
        request: &Resources,
        preemptible: bool,
    ) -> Option<String> {
        let name = &self.tree.queues[leaf.index()].name;
        let ask = QuotaRequest {
            queue: name,
            request: *request,
            preemptible,
        };
        if let Err(e) = admit_in(&self.tree, usage, non_preemptible, &ask, self.dialect) {
            return Some(refusal_text(&e));
        }
        if self.dialect != Dialect::Kueue {
            return None;
        }
        self.within_cohort(usage, leaf, request)
            .map(|(r, _, pool)| {
                format!(
                    "the cohort of queue {name} can lend {} {} in all, less than the job borrows",
                    r.name(),
                    amount(r.name(), pool)
                )
            })
    }

    /// Kueue: the resource (and borrowed amount and pool) of `leaf`'s cohort that would lend
    /// more than it has if `leaf` used `extra` more; `None` when it holds.
    fn within_cohort(
        &self,
        usage: &[Resources],
        leaf: QueueId,
        extra: &Resources,
    ) -> Option<(Resource, f64, f64)> {
        let root = self.root[leaf.index()];
        let pool = self.pool[root.index()];
        let mut borrowed = Resources::default();
        let mut stack = vec![root];
        while let Some(q) = stack.pop() {
            if self.tree.is_leaf(q) {
                let mut used = usage.get(q.index()).copied().unwrap_or_default();
                if q == leaf {
                    used = used.add(extra);
                }
                for r in Resource::ALL {
                    let over = (used.get(r) - self.kept[q.index()].get(r)).max(0.0);
                    borrowed.set(r, borrowed.get(r) + over);
                }
            }
            stack.extend(self.tree.children[q.index()].iter().rev());
        }
        Resource::ALL.into_iter().find_map(|r| {
            (borrowed.get(r) > pool.get(r) + EPS).then(|| (r, borrowed.get(r), pool.get(r)))
        })
    }

    /// Whom a job of `leaf` may stop: KAI reclaims by `fair_share_gpus` (each leaf's fair share)
    /// and preempts lower priorities within the queue; Kueue by the queue's `preemption`, with
    /// the nominal quotas of its cohort's queues as the shares reclaim compares with.
    pub fn preemption_policy(
        &self,
        leaf: QueueId,
        fair_share_gpus: Option<&BTreeMap<String, f64>>,
    ) -> PreemptionPolicy {
        match self.dialect {
            Dialect::Kai => PreemptionPolicy {
                fair_share_gpus: fair_share_gpus.cloned().unwrap_or_default(),
                ..PreemptionPolicy::default()
            },
            Dialect::Kueue => {
                let p = self.preemption[leaf.index()];
                let root = self.root[leaf.index()];
                let fair_share_gpus = match p.reclaim_within_cohort {
                    ReclaimWithinCohort::Never => BTreeMap::new(),
                    _ => (0..self.tree.queues.len())
                        .filter(|&i| self.root[i] == root && self.tree.is_leaf(QueueId(i as u32)))
                        .map(|i| {
                            let q = &self.tree.queues[i];
                            (q.name.clone(), bound(q.quota(Resource::Gpu).quota))
                        })
                        .collect(),
                };
                PreemptionPolicy {
                    fair_share_gpus,
                    no_preemption_within_queue: p.within_cluster_queue == WithinClusterQueue::Never,
                    reclaim_lower_priority_only: p.reclaim_within_cohort
                        == ReclaimWithinCohort::LowerPriority,
                }
            }
        }
    }

    /// What the dialect allows, checked on a state's use (leaf use and non-preemptible leaf
    /// use, recomputed by the caller from the running jobs): no queue (with its subtree) above
    /// its limit on any resource; KAI: no queue's non-preemptible use above its quota; Kueue:
    /// no cohort lending more than it has; with Kueue's objects, [`kueue::KueueRun::check`] instead.
    /// Pure; O(queues).
    pub fn check(
        &self,
        usage: &[Resources],
        non_preemptible: &[Resources],
    ) -> Result<(), Violation> {
        if let Some(k) = &self.kueue {
            return k.check();
        }
        let violation = |invariant: &'static str, detail: String| Violation {
            job: String::new(),
            invariant,
            detail,
        };
        let used = subtree_usages(&self.tree, usage);
        let np = subtree_usages(&self.tree, non_preemptible);
        for (k, q) in self.tree.queues.iter().enumerate() {
            for r in Resource::ALL {
                let rq = q.quota(r);
                let u = used[k].get(r);
                let over = match self.dialect {
                    Dialect::Kueue => u > bound(rq.limit) + EPS,
                    Dialect::Kai => u > bound(rq.limit),
                };
                if over && u > 0.0 {
                    return Err(violation(
                        "queue limit exceeded",
                        format!(
                            "queue `{}` uses {u} {}, limit {}",
                            q.name,
                            r.name(),
                            rq.limit
                        ),
                    ));
                }
                let n = np[k].get(r);
                if self.dialect == Dialect::Kai && n > 0.0 && n > bound(rq.quota) {
                    return Err(violation(
                        "non-preemptible use above quota",
                        format!(
                            "queue `{}`: non-preemptible jobs use {n} {}, quota {}",
                            q.name,
                            r.name(),
                            rq.quota
                        ),
                    ));
                }
            }
        }
        if self.dialect == Dialect::Kueue {
            for &root in &self.tree.roots {
                let Some(leaf) = first_leaf(&self.tree, root) else {
                    continue;
                };
                if let Some((r, borrowed, pool)) =
                    self.within_cohort(usage, leaf, &Resources::default())
                {
                    return Err(violation(
                        "borrowing beyond the cohort",
                        format!(
                            "cohort `{}`: its queues borrow {borrowed} {}, it has {pool} to lend",
                            self.tree.queues[root.index()].name,
                            r.name()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The first leaf under `q` (itself when it is one).
fn first_leaf(tree: &QueueTree, mut q: QueueId) -> Option<QueueId> {
    loop {
        match tree.children[q.index()].first() {
            None => return Some(q),
            Some(&c) => q = c,
        }
    }
}

/// What a subtree lends its members (Kueue): each leaf its nominal quota less what it keeps,
/// each cohort its own nominal quota (none when it passes through) plus its children's.
/// Kueue semantics: `sched::kueue::quota` (`SubtreeQuota`).
fn lendable(tree: &QueueTree, kept: &[Resources], q: QueueId) -> Resources {
    let spec = &tree.queues[q.index()];
    let mut out = Resources::default();
    for r in Resource::ALL {
        let quota = spec.quota(r).quota;
        let own = if tree.is_leaf(q) {
            (bound(quota) - kept[q.index()].get(r)).max(0.0)
        } else if spec.resources[r as usize].is_some() && quota >= 0.0 {
            // A Kueue Cohort's quota is its pool (its own nominal quota plus its children's,
            // `formats::queues`): its own part is what the children do not bring.
            let children: f64 = tree.children[q.index()]
                .iter()
                .map(|c| bound(tree.queues[c.index()].quota(r).quota))
                .sum();
            (quota - children).max(0.0)
        } else {
            0.0
        };
        out.set(r, own);
    }
    for &c in &tree.children[q.index()] {
        out = out.add(&lendable(tree, kept, c));
    }
    out
}

fn bound(v: f64) -> f64 {
    if v < 0.0 {
        f64::INFINITY
    } else {
        v
    }
}
