//! The queue tree (KAI semantics: per resource `{quota, limit, over_quota_weight}`, `-1` =
//! unlimited, a priority, a parent) and its validation, which reports every problem at once.

use std::collections::BTreeMap;
use std::fmt;

use crate::dialect::Dialect;
use crate::job::Resource;

/// `-1`: no bound.
pub const UNLIMITED: f64 = -1.0;

/// Largest quota, limit, weight or demand railyard takes (10¹⁵: a million times the largest
/// cluster's memory in MiB). Larger values are refused, so sums over 10,000 queues stay finite.
pub const MAX_AMOUNT: f64 = 1e15;

/// How many queue names a cycle message lists before it says how long the cycle is.
const CYCLE_NAMES_SHOWN: usize = 6;

/// One resource of a queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResourceQuota {
    /// Deserved amount; `-1` = unlimited.
    pub quota: f64,
    /// Most the queue may use; `-1` = unlimited.
    pub limit: f64,
    /// Share of the over-quota remainder, relative to siblings of equal priority.
    pub over_quota_weight: f64,
}

impl Default for ResourceQuota {
    /// No quota, no limit, weight 1 (what KAI assumes for a resource a queue leaves out).
    fn default() -> Self {
        Self {
            quota: 0.0,
            limit: UNLIMITED,
            over_quota_weight: 1.0,
        }
    }
}

/// A queue as declared.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueSpec {
    /// Unique name.
    pub name: String,
    /// Parent queue name; `None` for a top-level queue.
    pub parent: Option<String>,
    /// Higher priority queues get the over-quota remainder first.
    pub priority: i32,
    /// Per resource (gpu, cpu, memory); `None` for a resource the queue does not mention.
    /// All `None`: the queue declares no resources.
    pub resources: [Option<ResourceQuota>; 3],
    /// Creation time (seconds since the Unix epoch), when known: KAI's first tie-break when
    /// whole units left over are handed out (earlier first; unknown before any known time).
    pub creation_time: Option<i64>,
    /// KAI's second tie-break (smaller first); the name when `None`, as KAI's scheduler uses
    /// the Queue's name as its ID.
    pub uid: Option<String>,
}

impl QueueSpec {
    /// The queue's bounds for a resource (defaults when not declared).
    pub fn quota(&self, r: Resource) -> ResourceQuota {
        self.resources[r as usize].unwrap_or_default()
    }

    /// Whether the queue declares any resource.
    pub fn has_resources(&self) -> bool {
        self.resources.iter().any(Option::is_some)
    }
}

/// A job's claim on a queue, for validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobTarget {
    /// Job name.
    pub job: String,
    /// Queue name.
    pub queue: String,
}

/// Index of a queue in [`QueueTree::queues`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueId(pub u32);

impl QueueId {
    /// Position in the vector.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A validated queue tree.
#[derive(Clone, Debug)]
pub struct QueueTree {
    /// Queues in input order.
    pub queues: Vec<QueueSpec>,
    /// Parent of each queue.
    pub parent: Vec<Option<QueueId>>,
    /// Children of each queue, in input order.
    pub children: Vec<Vec<QueueId>>,
    /// Top-level queues, in input order.
    pub roots: Vec<QueueId>,
    /// Queues by name.
    index: BTreeMap<String, QueueId>,
}

/// One problem with a queue tree; always names a queue.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueProblem {
    /// The queue the problem is about.
    pub queue: String,
    /// What is wrong.
    pub kind: QueueProblemKind,
}

/// The kinds of problem [`validate`] reports.
#[derive(Clone, Debug, PartialEq)]
pub enum QueueProblemKind {
    /// Two queues with the same name.
    Duplicate,
    /// The parent queue does not exist.
    MissingParent(String),
    /// The parent chain comes back to this queue (listed from this queue).
    Cycle(Vec<String>),
    /// A job is submitted to a queue that has children.
    JobOnNonLeaf(String),
    /// A job is submitted to a queue that does not exist.
    JobOnUnknownQueue(String),
    /// The children's quotas of a resource add up to more than this queue's quota.
    ChildrenOverQuota {
        /// Resource.
        resource: Resource,
        /// Sum of the children's quotas (infinite if a child is unlimited).
        children: f64,
        /// This queue's quota.
        quota: f64,
    },
    /// A limit below the quota.
    LimitBelowQuota {
        /// Resource.
        resource: Resource,
        /// Limit.
        limit: f64,
        /// Quota (infinite for `-1`).
        quota: f64,
    },
    /// A value above [`MAX_AMOUNT`].
    TooLarge {
        /// Resource.
        resource: Resource,
        /// `quota`, `limit` or `overQuotaWeight`.
        field: &'static str,
        /// The value.
        value: f64,
    },
    /// A negative value other than `-1`.
    Negative {
        /// Resource.
        resource: Resource,
        /// `quota`, `limit` or `overQuotaWeight`.
        field: &'static str,
        /// The value.
        value: f64,
    },
    /// A queue with children declares no resources.
    ParentWithoutResources,
}

impl fmt::Display for QueueProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "queue `{}`: ", self.queue)?;
        match &self.kind {
            QueueProblemKind::Duplicate => write!(f, "defined more than once"),
            QueueProblemKind::MissingParent(p) => {
                write!(f, "parent queue `{p}` does not exist")
            }
            QueueProblemKind::Cycle(path) if path.len() > CYCLE_NAMES_SHOWN => write!(
                f,
                "parent chain forms a cycle of {} queues: {} → … → {}",
                path.len(),
                path[..CYCLE_NAMES_SHOWN - 1].join(" → "),
                self.queue
            ),
            QueueProblemKind::Cycle(path) => {
                write!(f, "parent chain forms a cycle: {} → {}", path.join(" → "), self.queue)
            }
            QueueProblemKind::JobOnNonLeaf(j) => write!(
                f,
                "job `{j}` is submitted to this queue, but it has child queues; jobs go to leaf queues"
            ),
            QueueProblemKind::JobOnUnknownQueue(j) => {
                write!(f, "job `{j}` is submitted to this queue, which does not exist")
            }
            QueueProblemKind::ChildrenOverQuota {
                resource,
                children,
                quota,
            } => write!(
                f,
                "{}: child queues' quotas add up to {}, above this queue's quota {}",
                resource.name(),
                fmt_amount(*children),
                fmt_amount(*quota)
            ),
            QueueProblemKind::LimitBelowQuota {
                resource,
                limit,
                quota,
            } => write!(
                f,
                "{}: limit {} is below quota {}",
                resource.name(),
                fmt_amount(*limit),
                fmt_amount(*quota)
            ),
            QueueProblemKind::Negative {
                resource,
                field,
                value,
            } => write!(
                f,
                "{}.{field}: {} is negative; expected a value ≥ 0 or -1 for unlimited",
                resource.name(),
                fmt_amount(*value)
            ),
            QueueProblemKind::TooLarge {
                resource,
                field,
                value,
            } => write!(
                f,
                "{}.{field}: {value:e} is above the largest amount railyard takes, 1e15",
                resource.name()
            ),
            QueueProblemKind::ParentWithoutResources => write!(
                f,
                "has child queues but declares no resources; a parent queue needs quotas to divide"
            ),
        }
    }
}

fn fmt_amount(v: f64) -> String {
    if v.is_infinite() {
        "unlimited".to_owned()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

fn bound(v: f64) -> f64 {
    if v == UNLIMITED {
        f64::INFINITY
    } else {
        v
    }
}

/// Check a queue tree and the jobs submitted to it; every problem, in input order. Linear in
/// the queues and jobs (up to a logarithmic factor for name look-ups): every parent chain is
/// walked once, each cycle found once.
pub fn validate(specs: &[QueueSpec], jobs: &[JobTarget]) -> Vec<QueueProblem> {
    let mut problems = Vec::new();
    let mut push = |queue: &str, kind| {
        problems.push(QueueProblem {
            queue: queue.to_owned(),
            kind,
        })
    };
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, q) in specs.iter().enumerate() {
        // The first definition is the one the tree keeps.
        if index.contains_key(q.name.as_str()) {
            push(&q.name, QueueProblemKind::Duplicate);
        } else {
            index.insert(q.name.as_str(), i);
        }
    }
    let parent: Vec<Option<usize>> = specs
        .iter()
        .map(|q| q.parent.as_deref().and_then(|p| index.get(p).copied()))
        .collect();
    let mut has_children = vec![false; specs.len()];
    for p in parent.iter().flatten() {
        has_children[*p] = true;
    }
    let cycles = find_cycles(&parent);
    for (i, q) in specs.iter().enumerate() {
        if let Some(p) = &q.parent {
            if !index.contains_key(p.as_str()) {
                push(&q.name, QueueProblemKind::MissingParent(p.clone()));
            }
        }
        if let Some(members) = cycles.get(&i) {
            let path = members.iter().map(|&s| specs[s].name.clone()).collect();
            push(&q.name, QueueProblemKind::Cycle(path));
        }
    }
    // Children's quotas per parent and resource, summed in input order.
    let mut children_quota = vec![[0.0f64; 3]; specs.len()];
    for (c, p) in parent.iter().enumerate() {
        if let Some(p) = *p {
            if p != c {
                for r in Resource::ALL {
                    children_quota[p][r as usize] += bound(specs[c].quota(r).quota).max(0.0);
                }
            }
        }
    }
    for (i, q) in specs.iter().enumerate() {
        for r in Resource::ALL {
            let Some(rq) = q.resources[r as usize] else {
                continue;
            };
            for (field, v) in [
                ("quota", rq.quota),
                ("limit", rq.limit),
                ("overQuotaWeight", rq.over_quota_weight),
            ] {
                if v < 0.0 && v != UNLIMITED || v.is_nan() {
                    push(
                        &q.name,
                        QueueProblemKind::Negative {
                            resource: r,
                            field,
                            value: v,
                        },
                    );
                } else if v > MAX_AMOUNT {
                    push(
                        &q.name,
                        QueueProblemKind::TooLarge {
                            resource: r,
                            field,
                            value: v,
                        },
                    );
                }
            }
            if rq.limit >= 0.0 && bound(rq.limit) < bound(rq.quota) {
                push(
                    &q.name,
                    QueueProblemKind::LimitBelowQuota {
                        resource: r,
                        limit: rq.limit,
                        quota: bound(rq.quota),
                    },
                );
            }
            if has_children[i] && rq.quota >= 0.0 {
                let children = children_quota[i][r as usize];
                if children > rq.quota {
                    push(
                        &q.name,
                        QueueProblemKind::ChildrenOverQuota {
                            resource: r,
                            children,
                            quota: rq.quota,
                        },
                    );
                }
            }
        }
        if has_children[i] && !q.has_resources() {
            push(&q.name, QueueProblemKind::ParentWithoutResources);
        }
    }
    for j in jobs {
        match index.get(j.queue.as_str()) {
            None => push(&j.queue, QueueProblemKind::JobOnUnknownQueue(j.job.clone())),
            Some(&q) if has_children[q] => {
                push(&j.queue, QueueProblemKind::JobOnNonLeaf(j.job.clone()))
            }
            Some(_) => {}
        }
    }
    problems
}

/// Every cycle of the parent pointers, once each: keyed by its member first in input order,
/// the members listed from it along the parent chain. Each queue is visited once.
fn find_cycles(parent: &[Option<usize>]) -> BTreeMap<usize, Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    const DONE: usize = usize::MAX - 1;
    // Per queue: UNSEEN, DONE, or the walk (its starting queue) that is visiting it.
    let mut mark = vec![UNSEEN; parent.len()];
    let mut position = vec![0usize; parent.len()];
    let mut cycles = BTreeMap::new();
    let mut walk = Vec::new();
    for start in 0..parent.len() {
        if mark[start] != UNSEEN {
            continue;
        }
        walk.clear();
        let mut cur = Some(start);
        while let Some(c) = cur {
            if mark[c] != UNSEEN {
                break;
            }
            mark[c] = start;
            position[c] = walk.len();
            walk.push(c);
            cur = parent[c];
        }
        if let Some(c) = cur {
            if mark[c] == start {
                // A new cycle: walk[position[c]..]. Report it at its first queue in input order.
                let members = &walk[position[c]..];
                let first = members
                    .iter()
                    .enumerate()
                    .min_by_key(|&(_, &m)| m)
                    .map_or(0, |(k, _)| k);
                let listed: Vec<usize> = members[first..]
                    .iter()
                    .chain(&members[..first])
                    .copied()
                    .collect();
                cycles.insert(listed[0], listed);
            }
        }
        for &w in &walk {
            mark[w] = DONE;
        }
    }
    cycles
}

impl QueueTree {
    /// Build a tree from specs after [`validate`] (with no jobs) finds nothing.
    pub fn new(specs: Vec<QueueSpec>) -> Result<QueueTree, Vec<QueueProblem>> {
        let problems = validate(&specs, &[]);
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(QueueTree::assemble(specs))
    }

    /// Index a tree whose structure [`validate`] accepted (no duplicates, parents, cycles).
    fn assemble(specs: Vec<QueueSpec>) -> QueueTree {
        let index: BTreeMap<&str, u32> = specs
            .iter()
            .enumerate()
            .map(|(i, q)| (q.name.as_str(), i as u32))
            .collect();
        let parent: Vec<Option<QueueId>> = specs
            .iter()
            .map(|q| q.parent.as_deref().map(|p| QueueId(index[p])))
            .collect();
        let mut children = vec![Vec::new(); specs.len()];
        let mut roots = Vec::new();
        for (i, p) in parent.iter().enumerate() {
            match p {
                Some(p) => children[p.index()].push(QueueId(i as u32)),
                None => roots.push(QueueId(i as u32)),
            }
        }
        let index = specs
            .iter()
            .enumerate()
            .map(|(i, q)| (q.name.clone(), QueueId(i as u32)))
            .collect();
        QueueTree {
            queues: specs,
            parent,
            children,
            roots,
            index,
        }
    }

    /// The queue called `name`.
    pub fn find(&self, name: &str) -> Option<QueueId> {
        self.index.get(name).copied()
    }

    /// Whether the queue has no children.
    pub fn is_leaf(&self, q: QueueId) -> bool {
        self.children[q.index()].is_empty()
    }

    /// The queue and its ancestors, nearest first.
    pub fn ancestry(&self, q: QueueId) -> Vec<QueueId> {
        let mut out = vec![q];
        let mut cur = self.parent[q.index()];
        while let Some(p) = cur {
            out.push(p);
            cur = self.parent[p.index()];
        }
        out
    }
}

impl QueueProblemKind {
    /// Whether the problem still lets a tree be built under `dialect`: KAI's admission webhook
    /// only warns about child quotas above the parent's, and its scheduler divides whatever
    /// limits and quotas it is given; railyard's own rules refuse every problem.
    pub fn is_warning_in(&self, dialect: Dialect) -> bool {
        dialect == Dialect::Kai
            && matches!(
                self,
                QueueProblemKind::ChildrenOverQuota { .. }
                    | QueueProblemKind::LimitBelowQuota { .. }
            )
    }
}

impl QueueTree {
    /// Build a tree under `dialect`'s rules: the tree and the problems that are only warnings
    /// there ([`QueueProblemKind::is_warning_in`]), or every problem when one refuses the tree.
    pub fn new_in(
        specs: Vec<QueueSpec>,
        dialect: Dialect,
    ) -> Result<(QueueTree, Vec<QueueProblem>), Vec<QueueProblem>> {
        let problems = validate(&specs, &[]);
        if problems.iter().any(|p| !p.kind.is_warning_in(dialect)) {
            return Err(problems);
        }
        Ok((QueueTree::assemble(specs), problems))
    }
}
