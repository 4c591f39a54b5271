//! Fair share (KAI semantics) and quota admission.
//!
//! Per resource and per set of siblings, starting with the top-level queues sharing the
//! capacity: (1) each queue gets min(quota, demand) — when even that does not fit, higher
//! priority first and, within a priority, in proportion to those amounts; (2) the remainder is
//! water-filled by priority (highest first) and, within a priority, in proportion to
//! over-quota weight, each queue capped by min(demand, limit). A parent's share is then divided
//! among its children the same way. A queue's demand is its own (leaves) or its children's sum,
//! capped by its limit.

use crate::job::{Resource, Resources};
use crate::queue::{QueueId, QueueTree};

/// Amounts below this are treated as zero (floating-point slack in water-filling).
const EPS: f64 = 1e-9;

/// Each queue's fair share, by [`QueueId`] order. `demand[q]` is the demand of leaf queue `q`
/// (ignored for parents); `capacity` is what the top-level queues share (infinite = no bound).
pub fn fair_share(tree: &QueueTree, demand: &[Resources], capacity: &Resources) -> Vec<Resources> {
    let n = tree.queues.len();
    let mut share = vec![Resources::default(); n];
    for r in Resource::ALL {
        let mut eff = vec![0.0; n];
        for &root in &tree.roots {
            effective_demand(tree, demand, r, root, &mut eff);
        }
        let mut out = vec![0.0; n];
        divide(tree, r, &tree.roots, capacity.get(r), &eff, &mut out);
        for (q, v) in out.into_iter().enumerate() {
            share[q].set(r, v);
        }
    }
    share
}

fn limit_of(tree: &QueueTree, q: QueueId, r: Resource) -> f64 {
    let l = tree.queues[q.index()].quota(r).limit;
    if l < 0.0 {
        f64::INFINITY
    } else {
        l
    }
}

fn quota_of(tree: &QueueTree, q: QueueId, r: Resource) -> f64 {
    let v = tree.queues[q.index()].quota(r).quota;
    if v < 0.0 {
        f64::INFINITY
    } else {
        v
    }
}

fn effective_demand(
    tree: &QueueTree,
    demand: &[Resources],
    r: Resource,
    q: QueueId,
    eff: &mut [f64],
) -> f64 {
    let own = if tree.is_leaf(q) {
        demand.get(q.index()).map_or(0.0, |d| d.get(r).max(0.0))
    } else {
        tree.children[q.index()]
            .iter()
            .map(|&c| effective_demand(tree, demand, r, c, eff))
            .sum()
    };
    let v = own.min(limit_of(tree, q, r));
    eff[q.index()] = v;
    v
}

/// Split `amount` among `siblings`, then recurse into each.
fn divide(
    tree: &QueueTree,
    r: Resource,
    siblings: &[QueueId],
    amount: f64,
    eff: &[f64],
    out: &mut [f64],
) {
    let mut given: Vec<f64> = vec![0.0; siblings.len()];
    let mut left = amount.max(0.0);
    // Siblings grouped by priority, highest first, input order within a priority (one sort,
    // not one scan per priority).
    let mut order: Vec<usize> = (0..siblings.len()).collect();
    order.sort_by_key(|&i| {
        (
            std::cmp::Reverse(tree.queues[siblings[i].index()].priority),
            i,
        )
    });
    let groups: Vec<&[usize]> = order
        .chunk_by(|&a, &b| {
            tree.queues[siblings[a].index()].priority == tree.queues[siblings[b].index()].priority
        })
        .collect();
    // Phase 1: in-quota.
    for &members in &groups {
        let caps: Vec<f64> = members
            .iter()
            .map(|&i| quota_of(tree, siblings[i], r).min(eff[siblings[i].index()]))
            .collect();
        let weights = caps.clone();
        let got = water_fill(&weights, &caps, left);
        for (k, &i) in members.iter().enumerate() {
            given[i] += got[k];
            left -= got[k];
        }
    }
    // Phase 2: over quota, by priority then weight.
    for &members in &groups {
        let caps: Vec<f64> = members
            .iter()
            .map(|&i| (eff[siblings[i].index()] - given[i]).max(0.0))
            .collect();
        let weights: Vec<f64> = members
            .iter()
            .map(|&i| {
                tree.queues[siblings[i].index()]
                    .quota(r)
                    .over_quota_weight
                    .max(0.0)
            })
            .collect();
        let got = water_fill(&weights, &caps, left);
        for (k, &i) in members.iter().enumerate() {
            given[i] += got[k];
            left -= got[k];
        }
    }
    for (i, &q) in siblings.iter().enumerate() {
        out[q.index()] = given[i];
        if !tree.is_leaf(q) {
            divide(tree, r, &tree.children[q.index()], given[i], eff, out);
        }
    }
}

/// Share `amount` in proportion to `weights`, nobody above their cap; returns the amounts.
fn water_fill(weights: &[f64], caps: &[f64], amount: f64) -> Vec<f64> {
    let mut got = vec![0.0; weights.len()];
    let mut left = amount;
    let mut active: Vec<usize> = (0..weights.len())
        .filter(|&i| weights[i] > 0.0 && caps[i] > EPS)
        .collect();
    // Only proportions matter: weights whose sum would overflow are scaled down first, so the
    // arithmetic stays finite (validation bounds them; this keeps `fair_share` total).
    let max_w = weights.iter().copied().fold(0.0, f64::max);
    let scaled: Vec<f64>;
    let weights = if weights.iter().sum::<f64>().is_finite() {
        weights
    } else {
        scaled = weights.iter().map(|w| w / max_w).collect();
        &scaled
    };
    if !amount.is_finite() && !caps.iter().all(|c| c.is_finite()) {
        // Unbounded capacity and an unbounded cap: each gets its cap (infinite ones included).
        return caps
            .iter()
            .zip(weights)
            .map(|(&c, &w)| if w > 0.0 { c } else { 0.0 })
            .collect();
    }
    while left > EPS && !active.is_empty() {
        let total_w: f64 = active.iter().map(|&i| weights[i]).sum();
        // The level at which the first member saturates.
        let t = active
            .iter()
            .map(|&i| (caps[i] - got[i]) / weights[i])
            .fold(f64::INFINITY, f64::min);
        if left / total_w <= t {
            for &i in &active {
                got[i] += left * weights[i] / total_w;
            }
            break;
        }
        for &i in &active {
            got[i] = (got[i] + t * weights[i]).min(caps[i]);
        }
        left -= t * total_w;
        active.retain(|&i| caps[i] - got[i] > EPS);
    }
    got
}

/// Why a job is refused by its queue.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AdmissionError {
    /// The queue does not exist.
    #[error("queue `{0}` does not exist")]
    UnknownQueue(String),
    /// Jobs go to leaf queues.
    #[error("queue `{0}` has child queues; jobs go to leaf queues")]
    NotLeaf(String),
    /// The job would take a queue (or an ancestor) above its limit.
    #[error("queue `{queue}`: {resource} use {would_use} would exceed its limit {limit}")]
    OverLimit {
        /// The queue whose limit would break.
        queue: String,
        /// Resource.
        resource: &'static str,
        /// Use after admission.
        would_use: f64,
        /// The limit.
        limit: f64,
    },
}

/// Admit a job's `request` to `queue` given each queue's current `usage` (leaf use; parents'
/// use is summed here): the queue must be a leaf, and no queue on its path may go above its limit.
pub fn admit(
    tree: &QueueTree,
    usage: &[Resources],
    queue: &str,
    request: &Resources,
) -> Result<(), AdmissionError> {
    let q = tree
        .find(queue)
        .ok_or_else(|| AdmissionError::UnknownQueue(queue.to_owned()))?;
    if !tree.is_leaf(q) {
        return Err(AdmissionError::NotLeaf(queue.to_owned()));
    }
    for a in tree.ancestry(q) {
        let used = subtree_usage(tree, usage, a);
        for r in Resource::ALL {
            let limit = limit_of(tree, a, r);
            let would = used.get(r) + request.get(r);
            if would > limit + EPS {
                return Err(AdmissionError::OverLimit {
                    queue: tree.queues[a.index()].name.clone(),
                    resource: r.name(),
                    would_use: would,
                    limit,
                });
            }
        }
    }
    Ok(())
}

/// Use of every queue and everything below it, by [`QueueId`] order: one pass from the leaves
/// up (the same sums as [`subtree_usage`] on each queue, in linear instead of quadratic time).
pub fn subtree_usages(tree: &QueueTree, usage: &[Resources]) -> Vec<Resources> {
    // Breadth-first from the roots: every queue comes after its parent.
    let mut order: Vec<QueueId> = tree.roots.clone();
    let mut k = 0;
    while k < order.len() {
        let q = order[k];
        order.extend_from_slice(&tree.children[q.index()]);
        k += 1;
    }
    let mut out = vec![Resources::default(); tree.queues.len()];
    for &q in order.iter().rev() {
        let own = usage.get(q.index()).copied().unwrap_or_default();
        out[q.index()] = tree.children[q.index()]
            .iter()
            .fold(own, |acc, &c| acc.add(&out[c.index()]));
    }
    out
}

/// Use of a queue and everything below it.
pub fn subtree_usage(tree: &QueueTree, usage: &[Resources], q: QueueId) -> Resources {
    let own = usage.get(q.index()).copied().unwrap_or_default();
    tree.children[q.index()]
        .iter()
        .fold(own, |acc, &c| acc.add(&subtree_usage(tree, usage, c)))
}
