//! Fair share and quota admission, in two dialects ([`Dialect`]).
//!
//! Per resource and per set of siblings, starting with the top-level queues sharing the
//! capacity, [`divide`] splits an amount; a parent's share is then divided among its children
//! the same way.
//!
//! railyard's rules ([`Dialect::Kueue`]): (1) each queue gets min(quota, demand) — when even
//! that does not fit, higher priority first and, within a priority, in proportion to those
//! amounts; (2) the remainder is water-filled by priority (highest first) and, within a
//! priority, in proportion to over-quota weight, each queue capped by min(demand, limit). A
//! queue's demand is its own (leaves) or its children's sum, each capped by its limit.
//!
//! KAI's rules ([`Dialect::Kai`], after `resource_division.go` of KAI Scheduler at commit
//! d5bc503a): (1) each queue gets min(quota, min(demand, limit)) — even when the sum is above
//! the amount (the remainder is then zero, nothing is scaled down); quota `-1` = the whole
//! amount; (2) per priority, highest first, rounds: each queue not yet satisfied gets
//! `round amount × weight / Σ weights` if that covers what it still requests, else the whole
//! units of it (the fraction is remembered); another round runs while some queue was satisfied
//! with less than its part; (3) what the rounds left goes, one unit (or the last fraction) each,
//! to the remembered fractions, largest first, ties by earlier creation time, then smaller UID
//! (the name when none is given); one pass per priority, highest first. A queue of weight 0
//! gets nothing over quota. A parent's demand is its children's sum (not capped by their
//! limits). KAI's usage-based factor (`kValue` with historical usage) is not modelled: with no
//! recorded usage it does not change the division.

use crate::dialect::Dialect;
use crate::job::{Resource, Resources};
use crate::queue::{QueueId, QueueTree, UNLIMITED};

/// Amounts below this are treated as zero (floating-point slack in water-filling).
const EPS: f64 = 1e-9;

/// One queue among siblings, for one resource, as [`divide`] sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ShareInput {
    /// Deserved amount; `-1` = unlimited.
    pub quota: f64,
    /// Most the queue may get; `-1` = unlimited.
    pub limit: f64,
    /// Share of the over-quota remainder among siblings of equal priority.
    pub over_quota_weight: f64,
    /// What the queue asks for (its own demand, or its children's).
    pub request: f64,
    /// Higher priorities get the over-quota remainder first.
    pub priority: i32,
    /// KAI's first tie-break for leftover units: earlier first, unknown first of all.
    pub creation_time: Option<i64>,
    /// KAI's second tie-break for leftover units: smaller first.
    pub uid: String,
}

/// What [`divide`] gives each sibling, in input order, and what is left over.
#[derive(Clone, Debug, PartialEq)]
pub struct Division {
    /// Each sibling's share, in input order.
    pub shares: Vec<f64>,
    /// The amount nobody took (0 when KAI's quotas alone exceed the amount).
    pub remaining: f64,
}

/// Each queue's fair share, by [`QueueId`] order, under railyard's rules ([`Dialect::Kueue`]);
/// see [`fair_share_in`].
pub fn fair_share(tree: &QueueTree, demand: &[Resources], capacity: &Resources) -> Vec<Resources> {
    fair_share_in(tree, demand, capacity, Dialect::Kueue)
}

/// Each queue's fair share, by [`QueueId`] order, under `dialect`'s rules. `demand[q]` is the
/// demand of leaf queue `q` (ignored for parents); `capacity` is what the top-level queues share
/// (infinite = no bound).
pub fn fair_share_in(
    tree: &QueueTree,
    demand: &[Resources],
    capacity: &Resources,
    dialect: Dialect,
) -> Vec<Resources> {
    let n = tree.queues.len();
    let mut share = vec![Resources::default(); n];
    for r in Resource::ALL {
        let mut request = vec![0.0; n];
        for &root in &tree.roots {
            tree_request(tree, demand, r, root, dialect, &mut request);
        }
        let mut out = vec![0.0; n];
        divide_tree(
            tree,
            r,
            &tree.roots,
            capacity.get(r),
            &request,
            dialect,
            &mut out,
        );
        for (q, v) in out.into_iter().enumerate() {
            share[q].set(r, v);
        }
    }
    share
}

/// A queue's request for `r`: a leaf's demand, a parent's children's sum — railyard caps every
/// queue's request by its limit, KAI sums the children's raw requests.
fn tree_request(
    tree: &QueueTree,
    demand: &[Resources],
    r: Resource,
    q: QueueId,
    dialect: Dialect,
    out: &mut [f64],
) -> f64 {
    let own = if tree.is_leaf(q) {
        demand.get(q.index()).map_or(0.0, |d| d.get(r).max(0.0))
    } else {
        tree.children[q.index()]
            .iter()
            .map(|&c| tree_request(tree, demand, r, c, dialect, out))
            .sum()
    };
    out[q.index()] = own;
    match dialect {
        Dialect::Kueue => own.min(bound(tree.queues[q.index()].quota(r).limit)),
        Dialect::Kai => own,
    }
}

fn bound(v: f64) -> f64 {
    if v < 0.0 {
        f64::INFINITY
    } else {
        v
    }
}

/// Split `amount` among `siblings`, then recurse into each.
fn divide_tree(
    tree: &QueueTree,
    r: Resource,
    siblings: &[QueueId],
    amount: f64,
    request: &[f64],
    dialect: Dialect,
    out: &mut [f64],
) {
    let inputs: Vec<ShareInput> = siblings
        .iter()
        .map(|&q| {
            let spec = &tree.queues[q.index()];
            let rq = spec.quota(r);
            ShareInput {
                quota: rq.quota,
                limit: rq.limit,
                over_quota_weight: rq.over_quota_weight,
                request: request[q.index()],
                priority: spec.priority,
                creation_time: spec.creation_time,
                uid: spec.uid.clone().unwrap_or_else(|| spec.name.clone()),
            }
        })
        .collect();
    let division = divide(dialect, amount, &inputs);
    for (i, &q) in siblings.iter().enumerate() {
        out[q.index()] = division.shares[i];
        if !tree.is_leaf(q) {
            let children = &tree.children[q.index()];
            divide_tree(tree, r, children, division.shares[i], request, dialect, out);
        }
    }
}

/// Split `amount` of one resource among siblings under `dialect`'s rules: first what each
/// deserves, then the over-quota remainder ([`divide_over_quota`]).
pub fn divide(dialect: Dialect, amount: f64, siblings: &[ShareInput]) -> Division {
    let mut shares = vec![0.0; siblings.len()];
    let amount = if amount.is_nan() {
        0.0
    } else {
        amount.max(0.0)
    };
    let left = match dialect {
        Dialect::Kueue => {
            let mut left = amount;
            for members in by_priority(siblings) {
                let caps: Vec<f64> = members
                    .iter()
                    .map(|&i| bound(siblings[i].quota).min(requestable(&siblings[i])))
                    .collect();
                let got = water_fill(&caps, &caps, left);
                for (k, &i) in members.iter().enumerate() {
                    shares[i] += got[k];
                    left -= got[k];
                }
            }
            left
        }
        Dialect::Kai => {
            let mut left = amount;
            for (i, s) in siblings.iter().enumerate() {
                let deserved = if s.quota == UNLIMITED {
                    amount
                } else {
                    s.quota
                };
                let give = deserved.min(requestable(s)).max(0.0);
                shares[i] += give;
                left -= give;
            }
            left
        }
    };
    if left <= 0.0 {
        return Division {
            shares,
            remaining: 0.0,
        };
    }
    let remaining = divide_over_quota(dialect, left, siblings, &mut shares);
    Division { shares, remaining }
}

/// Split an over-quota `amount` among siblings that already hold `shares` (added to in place);
/// returns what nobody took. railyard: water-filling by priority, then weight, capped by what
/// each still requests (within its limit). KAI: the rounds and leftover units described in the
/// module documentation.
pub fn divide_over_quota(
    dialect: Dialect,
    amount: f64,
    siblings: &[ShareInput],
    shares: &mut [f64],
) -> f64 {
    let mut left = if amount.is_nan() {
        0.0
    } else {
        amount.max(0.0)
    };
    let groups = by_priority(siblings);
    match dialect {
        Dialect::Kueue => {
            for members in groups {
                let caps: Vec<f64> = members
                    .iter()
                    .map(|&i| (requestable(&siblings[i]) - shares[i]).max(0.0))
                    .collect();
                let weights: Vec<f64> = members
                    .iter()
                    .map(|&i| siblings[i].over_quota_weight.max(0.0))
                    .collect();
                let got = water_fill(&weights, &caps, left);
                for (k, &i) in members.iter().enumerate() {
                    shares[i] += got[k];
                    left -= got[k];
                }
            }
            left.max(0.0)
        }
        Dialect::Kai => {
            let mut fractions = Vec::with_capacity(groups.len());
            for members in &groups {
                fractions.push(kai_rounds(&mut left, siblings, members, shares));
            }
            for f in fractions {
                if left <= 0.0 {
                    break;
                }
                kai_leftover(&mut left, siblings, &f, shares);
            }
            left
        }
    }
}

/// What a queue may still be given in all: its request within its limit.
fn requestable(s: &ShareInput) -> f64 {
    let r = s.request.max(0.0);
    if s.limit == UNLIMITED || s.limit < 0.0 {
        r
    } else {
        r.min(s.limit)
    }
}

/// Sibling indices grouped by priority, highest first, input order within a group.
fn by_priority(siblings: &[ShareInput]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..siblings.len()).collect();
    order.sort_by(|&a, &b| {
        siblings[b]
            .priority
            .cmp(&siblings[a].priority)
            .then(a.cmp(&b))
    });
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match groups.last_mut() {
            Some(g) if siblings[g[0]].priority == siblings[i].priority => g.push(i),
            _ => groups.push(vec![i]),
        }
    }
    groups
}

/// KAI: a queue is satisfied once its share covers its request or reaches its limit.
fn kai_satisfied(s: &ShareInput, share: f64) -> bool {
    s.request <= share || (s.limit != UNLIMITED && s.limit <= share)
}

/// KAI: what a queue still requests (within its limit).
fn kai_still_requested(s: &ShareInput, share: f64) -> f64 {
    (requestable(s) - share).max(0.0)
}

/// KAI's rounds for one priority: returns the remembered fractions as (sibling, fraction), in
/// no particular order ([`kai_leftover`] sorts them).
fn kai_rounds(
    left: &mut f64,
    siblings: &[ShareInput],
    members: &[usize],
    shares: &mut [f64],
) -> Vec<(usize, f64)> {
    // Members in a canonical order (creation time, then UID), so that every sum below adds the
    // same numbers in the same order however the siblings were listed: KAI walks them in Go's
    // random map order, so its division cannot depend on the listing, and railyard's neither
    // (two members of equal weight get bit-equal parts and fractions).
    let mut members = members.to_vec();
    members.sort_by(|&a, &b| {
        siblings[a]
            .creation_time
            .cmp(&siblings[b].creation_time)
            .then_with(|| siblings[a].uid.cmp(&siblings[b].uid))
            .then(a.cmp(&b))
    });
    let members = members.as_slice();
    // The fraction each member last had left over, by position in `members`.
    let mut fraction: Vec<Option<f64>> = vec![None; members.len()];
    // Every round that asks for another satisfies a queue; the bound only guards against
    // floating-point slack keeping a queue a hair short of its request.
    // Only proportions of weights matter: when their sum would overflow they are scaled by the
    // largest (otherwise used as given, so KAI's exact fractions stay exact).
    let sum: f64 = members.iter().map(|&i| siblings[i].over_quota_weight).sum();
    let scale = if sum.is_finite() {
        1.0
    } else {
        members
            .iter()
            .map(|&i| siblings[i].over_quota_weight)
            .filter(|w| w.is_finite())
            .fold(0.0, f64::max)
    };
    let weight = |i: usize| {
        let w = siblings[i].over_quota_weight;
        if scale > 0.0 && w.is_finite() && w > 0.0 {
            w / scale
        } else {
            0.0
        }
    };
    for _ in 0..(4 * members.len() + 8) {
        let round_amount = *left;
        let total_weight: f64 = members
            .iter()
            .filter(|&&i| kai_still_requested(&siblings[i], shares[i]) > 0.0)
            .map(|&i| weight(i))
            .sum();
        if total_weight <= 0.0 || !total_weight.is_finite() {
            break;
        }
        let weights: Vec<(usize, f64)> = members
            .iter()
            .enumerate()
            .filter(|&(_, &i)| !kai_satisfied(&siblings[i], shares[i]))
            .map(|(k, &i)| (k, weight(i) / total_weight))
            .collect();
        let weight_sum: f64 = weights.iter().map(|w| w.1).sum();
        if weight_sum <= 0.0 {
            break;
        }
        let mut another = false;
        for &(k, w) in &weights {
            let i = members[k];
            if *left == 0.0 {
                break;
            }
            if w == 0.0 {
                continue;
            }
            let requested = kai_still_requested(&siblings[i], shares[i]);
            let part = round_amount * w / weight_sum;
            let give = if requested <= part {
                fraction[k] = None;
                requested
            } else {
                let whole = part.floor().max(0.0);
                if part - whole > 0.0 {
                    fraction[k] = Some(part - whole);
                }
                whole
            };
            if give == 0.0 {
                continue;
            }
            shares[i] += give;
            *left -= give;
            another |= requested < part;
        }
        if !another || *left == 0.0 {
            break;
        }
    }
    members
        .iter()
        .zip(fraction)
        .filter_map(|(&i, f)| f.map(|f| (i, f)))
        .collect()
}

/// KAI's leftover units: one each (or the last fraction), largest remembered fraction first,
/// ties by earlier creation time, then smaller UID.
fn kai_leftover(
    left: &mut f64,
    siblings: &[ShareInput],
    fractions: &[(usize, f64)],
    shares: &mut [f64],
) {
    let mut order: Vec<(usize, f64)> = fractions.to_vec();
    order.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| {
                siblings[a.0]
                    .creation_time
                    .cmp(&siblings[b.0].creation_time)
            })
            .then_with(|| siblings[a.0].uid.cmp(&siblings[b.0].uid))
            .then_with(|| a.0.cmp(&b.0))
    });
    for (i, _) in order {
        if *left <= 0.0 {
            break;
        }
        let give = left.min(1.0);
        shares[i] += give;
        *left -= give;
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
    #[error(
        "queue `{queue}`: {resource} use {} would exceed its limit {}",
        amount(resource, *would_use),
        amount(resource, *limit)
    )]
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
    /// A non-preemptible job would take a queue's (or an ancestor's) non-preemptible use above
    /// its quota (KAI: non-preemptible jobs stay within quota).
    #[error(
        "queue `{queue}`: non-preemptible {resource} use {} would exceed its quota {}; non-preemptible jobs stay within quota",
        amount(resource, *would_use),
        amount(resource, *quota)
    )]
    NonPreemptibleOverQuota {
        /// The queue whose quota would break.
        queue: String,
        /// Resource.
        resource: &'static str,
        /// Non-preemptible use after admission.
        would_use: f64,
        /// The quota.
        quota: f64,
    },
}

/// An amount of a resource for a message: GPUs bare, CPU in millicores, memory in MiB; at most
/// three decimals.
fn amount(resource: &str, v: f64) -> String {
    let number = if v.is_infinite() {
        "unlimited".to_owned()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    };
    match resource {
        "cpu" if v.is_finite() => format!("{number} millicores"),
        "memory" if v.is_finite() => format!("{number} MiB"),
        _ => number,
    }
}

/// What a job asks of its queue, for [`admit_in`].
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaRequest<'a> {
    /// The (leaf) queue.
    pub queue: &'a str,
    /// GPUs, CPU millicores, memory MiB at the job's full size.
    pub request: Resources,
    /// Whether the job may be preempted (KAI keeps non-preemptible jobs within quota).
    pub preemptible: bool,
}

/// Admit a job's `request` to `queue` under railyard's rules ([`Dialect::Kueue`]): see
/// [`admit_in`].
pub fn admit(
    tree: &QueueTree,
    usage: &[Resources],
    queue: &str,
    request: &Resources,
) -> Result<(), AdmissionError> {
    let ask = QuotaRequest {
        queue,
        request: *request,
        preemptible: true,
    };
    admit_in(tree, usage, &[], &ask, Dialect::Kueue)
}

/// Admit a job to its queue given each queue's current `usage` and `non_preemptible` use (leaf
/// use; parents' use is summed here; a missing entry is no use): the queue must be a leaf, and
/// no queue on its path may go above its limit on any resource. railyard compares with a little
/// slack and checks every resource; KAI compares exactly, skips resources the job does not ask
/// for, checks cpu, memory, gpu in that order, and also keeps a non-preemptible job's queues'
/// non-preemptible use within their quotas (after the limits of the whole path).
pub fn admit_in(
    tree: &QueueTree,
    usage: &[Resources],
    non_preemptible: &[Resources],
    ask: &QuotaRequest<'_>,
    dialect: Dialect,
) -> Result<(), AdmissionError> {
    let q = tree
        .find(ask.queue)
        .ok_or_else(|| AdmissionError::UnknownQueue(ask.queue.to_owned()))?;
    if !tree.is_leaf(q) {
        return Err(AdmissionError::NotLeaf(ask.queue.to_owned()));
    }
    let order: [Resource; 3] = match dialect {
        Dialect::Kueue => Resource::ALL,
        Dialect::Kai => [Resource::Cpu, Resource::Memory, Resource::Gpu],
    };
    let path = tree.ancestry(q);
    for &a in &path {
        let used = subtree_usage(tree, usage, a);
        for r in order {
            let limit = bound(tree.queues[a.index()].quota(r).limit);
            let asked = ask.request.get(r);
            let would = used.get(r) + asked;
            let over = match dialect {
                Dialect::Kueue => would > limit + EPS,
                Dialect::Kai => asked != 0.0 && limit < would,
            };
            if over {
                return Err(AdmissionError::OverLimit {
                    queue: tree.queues[a.index()].name.clone(),
                    resource: r.name(),
                    would_use: would,
                    limit,
                });
            }
        }
    }
    if dialect == Dialect::Kai && !ask.preemptible {
        for &a in &path {
            let used = subtree_usage(tree, non_preemptible, a);
            for r in order {
                let quota = bound(tree.queues[a.index()].quota(r).quota);
                let asked = ask.request.get(r);
                let would = used.get(r) + asked;
                if asked != 0.0 && quota < would {
                    return Err(AdmissionError::NonPreemptibleOverQuota {
                        queue: tree.queues[a.index()].name.clone(),
                        resource: r.name(),
                        would_use: would,
                        quota,
                    });
                }
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
