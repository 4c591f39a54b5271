//! Topology-aware gang placement with Kueue TAS semantics.
//!
//! Design note (2026-11-30). [`place_with`] (and [`place`], with no extras) is the single place a
//! placement is decided; `tas.rs` holds the algorithm, a port of the rules of Kueue's
//! `tas_flavor_snapshot.go` at commit ff69552e (checked case by case against Kueue's own unit
//! tests, `tests/kueue/*.yaml`). Per pod set, or per pod-set group (a one-pod leader placed with
//! its workers):
//!
//! 1. Node capacity: the pods that fit on each eligible node (Ready, not cordoned, taints
//!    tolerated, node selector and required affinity matched), the minimum over GPUs and every
//!    requested resource including one `pods` each; with a leader, whether it fits and the
//!    workers that fit beside it.
//! 2. Counts up the tree: pods and whole slices per domain (inner slice layers round each child
//!    down to their size first), with and without the leader.
//! 3. Fit level: from the required level, else the preferred level, else the top level (slices
//!    only) or the node level (unconstrained), sort the domains there (leader room first; most
//!    slices first — least first for unconstrained pod sets under
//!    [`crate::UnconstrainedMode::LeastFreeCapacity`], the default as in Kueue —; then fewest
//!    pods; then label values) and
//!    take the tightest single domain that holds everything (BestFit: the fewest slices that
//!    suffice, first in sort order). Required: none fits, no placement. Preferred: climb one
//!    level and retry; at the top (or for unconstrained pod sets) spread greedily over the
//!    sorted domains, the last piece going to the tightest domain that holds it.
//! 4. Descent: above the outer slice level, the children of all chosen domains are sorted and
//!    filled together by the same greedy rule; at and below it, each chosen domain splits its
//!    own pods among its sorted children, in slices of the inner layer's size there (single pods
//!    below the innermost layer).
//!
//! Ties are broken by label values (domain values top first, then host names), as in Kueue,
//! never by input order. Cost per pod set: O(nodes + domains · log) — counts are one pass up the
//! tree; each level sorts only the children of the domains chosen above it (the node level of
//! an unconstrained pod set sorts all nodes, as Kueue does).
//!
//! Kept counts (2026-11-30). On an occupancy that tracks node state
//! ([`Occupancy::with_node_tracking`], the simulator's), a one-pod-set job of whole GPUs without
//! slices, extras, scope or gang minimum skips the node walk: `from_counts` refuses it from
//! the per-domain counts of schedulable nodes by untouched GPUs, with the reason the full
//! algorithm gives, and places it when unconstrained (least free first: a k-way walk over the
//! nodes by untouched GPUs, in label order); a required or preferred pod set that fits goes
//! through the full algorithm with node capacities on demand (`tas::Leaves::OnDemand`): the
//! domains just above the nodes take their pods from the counts and only the chosen domains'
//! nodes are read. Same results as the full algorithm, compared on random churn of jobs and
//! nodes (`tests/it/incremental.rs`). Ranks: pods are numbered in domain
//! order (lexicographic by the node's domains, top first), so consecutive ranks share the
//! lowest-level domain. GPUs: whole-GPU pods take untouched GPUs, lowest index first; fractional
//! pods go to the most used GPU that still has room.
//!
//! Balanced placement ([`crate::PlaceOptions::balanced`], Kueue's `TASBalancedPlacement`, off by
//! default; `tas/balanced.rs`): for preferred pod sets, the fewest sibling domains that hold the
//! pods each get an equal share first; when that is impossible, BestFit as above. Preferred node
//! affinity ([`crate::PlaceOptions::preferred_affinity`], Kueue's
//! `TASRespectNodeAffinityPreferred`, off by default): each eligible node scores the weights of
//! the terms it matches, domains sum them, and sorting puts higher scores right after leader
//! room; the tightest-fit step only looks among the top score.

use topology::{Cluster, DomainId, NodeId};

use crate::constraints::{
    count_in, eligible, subtract, PlaceInput, PreferredTerm, ResourceList, UnconstrainedMode,
};
use crate::error::StateError;
use crate::job::{GpuRequest, Job, PodSet, SharedOrder, MILLI_PER_GPU};
use crate::occupancy::{Occupancy, PodAllocation, RunningJob};
use crate::tas::{self, Count, LeafCap, Request, Tree};

/// One placed pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacedPod {
    /// Rank, 0..n−1 over the whole job.
    pub rank: u32,
    /// Index of the pod set in [`Job::pod_sets`].
    pub pod_set: usize,
    /// The node.
    pub node: NodeId,
    /// GPU indices on the node.
    pub gpu_ids: Vec<u32>,
    /// Share of each GPU, thousandths.
    pub milli: u32,
    /// Memory of each GPU, MiB.
    pub memory_mib: u32,
}

impl PlacedPod {
    /// GPUs of the pod (fractional for shared GPUs).
    pub fn gpus(&self) -> f64 {
        f64::from(self.milli) * self.gpu_ids.len() as f64 / f64::from(MILLI_PER_GPU)
    }
}

/// A placement of a whole job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Pods in rank order.
    pub pods: Vec<PlacedPod>,
    /// Highest switch tier two of the job's nodes must cross (0 = one leaf); `None` on one node.
    pub highest_tier: Option<u8>,
    /// Worst GPU-to-GPU latency between two of the job's nodes, ns (0 on one node).
    pub worst_latency_ns: u64,
}

impl Placement {
    /// The pods as allocations for [`Occupancy::allocate`].
    pub fn allocations(&self) -> Vec<PodAllocation> {
        self.pods
            .iter()
            .map(|p| PodAllocation {
                node: p.node,
                gpu_ids: p.gpu_ids.clone(),
                milli: p.milli,
                memory_mib: p.memory_mib,
            })
            .collect()
    }
}

/// Why a job could not be placed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("pod set `{pod_set}`: {reason}")]
pub struct NotPlaced {
    /// The pod set that did not fit.
    pub pod_set: String,
    /// Why, with the numbers.
    pub reason: String,
}

/// Place a job on the cluster as it is now. Pure: `occupancy` is not changed; call [`commit`]
/// to record the result. The job should have passed [`Job::check`].
pub fn place(cluster: &Cluster, occupancy: &Occupancy, job: &Job) -> Result<Placement, NotPlaced> {
    place_scoped(cluster, occupancy, job, None, &PlaceInput::default())
}

/// What one attempt of KAI's allocate action places for a job under KAI's rules (KAI puts the
/// job back in its queue while pods are left): for a PodGroup with sub-groups the next step
/// only — the gang while the job is below it, else the pods [`crate::kai_next_step`] names —,
/// counting [`crate::PodSetExtras::running_on`] as placed; without sub-groups the whole job, as
/// [`place_with`] places it. Pure.
pub fn place_kai_step(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    input: &PlaceInput,
) -> Result<Placement, NotPlaced> {
    crate::kai_place::place_steps(cluster, occupancy, job, None, input, 1)
        .map(|pods| kai_placement(cluster, pods))
        .map_err(|e| NotPlaced {
            pod_set: e.pod_set,
            reason: e.reason,
        })
}

/// KAI's placement as a [`Placement`]: ranks in pod order, the highest tier crossed.
fn kai_placement(cluster: &Cluster, pods: Vec<crate::kai_place::KaiPod>) -> Placement {
    let nodes: Vec<NodeId> = pods.iter().map(|p| p.node).collect();
    let tier = highest_tier(cluster, &nodes);
    Placement {
        pods: (0u32..)
            .zip(pods)
            .map(|(rank, p)| PlacedPod {
                rank,
                pod_set: p.pod_set,
                node: p.node,
                gpu_ids: p.gpu_ids,
                milli: p.milli,
                memory_mib: p.memory_mib,
            })
            .collect(),
        highest_tier: tier,
        worst_latency_ns: tier.map_or(0, |t| cluster.tiers[usize::from(t)].latency_ns),
    }
}

/// Place a job with per-node free resources, per-pod-set requests, node constraints and groups,
/// and placement options. Pure, like [`place`].
pub fn place_with(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    input: &PlaceInput,
) -> Result<Placement, NotPlaced> {
    place_scoped(cluster, occupancy, job, None, input)
}

/// Place a job with all its pods inside one domain (used to test "free this domain").
pub fn place_within(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    domain: DomainId,
) -> Result<Placement, NotPlaced> {
    place_scoped(
        cluster,
        occupancy,
        job,
        Some(domain),
        &PlaceInput::default(),
    )
}

/// [`place_within`] with constraints and options.
pub fn place_within_with(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    domain: DomainId,
    input: &PlaceInput,
) -> Result<Placement, NotPlaced> {
    place_scoped(cluster, occupancy, job, Some(domain), input)
}

/// Record a placement as the running job `job`.
pub fn commit(
    occupancy: &mut Occupancy,
    job: &Job,
    placement: &Placement,
) -> Result<(), StateError> {
    occupancy.allocate(running_job(job), placement.allocations())
}

/// The running-job identity of a job.
pub fn running_job(job: &Job) -> RunningJob {
    RunningJob {
        name: job.name.clone(),
        queue: job.queue.clone(),
        priority: job.priority,
        preemptible: job.preemptible,
    }
}

/// Pods of the job's single pod set that fit on `nodes` (ignoring topology and slices): a
/// necessary condition for the job to fit there. `None` for jobs with several pod sets.
pub(crate) fn room_on(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    nodes: &[NodeId],
) -> Option<u64> {
    let [set] = job.pod_sets.as_slice() else {
        return None;
    };
    Some(
        nodes
            .iter()
            .filter(|&&n| {
                cluster.is_schedulable(n, |t| job.tolerations.iter().any(|x| x.tolerates(t)))
            })
            .map(|&n| gpu_capacity(occupancy, n, set.gpu).min(u64::from(u32::MAX)))
            .sum(),
    )
}

/// The highest switch tier the nodes must cross (`None` for fewer than two distinct nodes).
pub fn highest_tier(cluster: &Cluster, nodes: &[NodeId]) -> Option<u8> {
    let first = *nodes.first()?;
    if nodes.iter().all(|&n| n == first) {
        return None;
    }
    (0..cluster.tiers.len())
        .map(|t| t as u8)
        .find(|&t| {
            let g = cluster.tier_group(first, t);
            nodes.iter().all(|&n| cluster.tier_group(n, t) == g)
        })
        .or(Some((cluster.tiers.len() - 1) as u8))
}

/// No requests.
static EMPTY: ResourceList = ResourceList::new();

/// Pods no node can exceed: keeps sums far from overflow when nothing limits a pod set.
const UNLIMITED_PODS: u64 = 1 << 40;

fn place_scoped(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    scope: Option<DomainId>,
    input: &PlaceInput,
) -> Result<Placement, NotPlaced> {
    if input.options.dialect == crate::Dialect::Kai {
        let pods = crate::kai_place::place(cluster, occupancy, job, scope, input).map_err(|e| {
            NotPlaced {
                pod_set: e.pod_set,
                reason: e.reason,
            }
        })?;
        return Ok(kai_placement(cluster, pods));
    }
    if scope.is_none() {
        if let Some(answer) = from_counts(cluster, occupancy, job, input) {
            return answer;
        }
    }
    let levels: Vec<usize> = (0..cluster.levels.len())
        .filter(|&l| Some(l) != cluster.host_level)
        .collect();
    let tree = Tree::new(cluster, &levels);
    let in_scope = cluster.node_mask(scope);
    let groups = groups(job, input)?;
    // Copies of the occupancy and free resources, made only when a later pod set must see the
    // pods placed before it (copying a busy cluster's occupancy costs more than placing).
    let mut scratch: Option<Occupancy> = None;
    let mut free: Option<Vec<ResourceList>> = None;
    let mut per_set: Vec<Vec<PlacedPod>> = vec![Vec::new(); job.pod_sets.len()];
    let empty = ResourceList::new();
    for (g, (workers, leader)) in groups.iter().enumerate() {
        let ctx = Ctx {
            cluster,
            tree: &tree,
            levels: &levels,
            occ: scratch.as_ref().unwrap_or(occupancy),
            free: free.as_deref().unwrap_or(&input.node_free.0),
            job,
            input,
            in_scope: &in_scope,
            scoped: scope.is_some(),
        };
        let placed = place_group(&ctx, *workers, *leader)?;
        let n_placed = placed.len();
        for (k, (set_index, nodes)) in placed.into_iter().enumerate() {
            let set = &job.pod_sets[set_index];
            let occ_now = scratch.as_ref().unwrap_or(occupancy);
            let mut pods = Vec::new();
            for &(node, count) in &nodes {
                for (gpu_ids, milli, memory_mib) in assign_gpus(occ_now, node, set.gpu, count) {
                    pods.push(PlacedPod {
                        rank: 0,
                        pod_set: set_index,
                        node,
                        gpu_ids,
                        milli,
                        memory_mib,
                    });
                }
            }
            if k + 1 < n_placed || g + 1 < groups.len() {
                let requests = input.extras(set_index).map_or(&empty, |e| &e.requests);
                let f = free.get_or_insert_with(|| input.node_free.0.clone());
                for &(node, count) in &nodes {
                    if let Some(f) = f.get_mut(node.index()) {
                        subtract(f, requests, count);
                    }
                }
                let allocations = Placement {
                    pods: pods.clone(),
                    highest_tier: None,
                    worst_latency_ns: 0,
                }
                .allocations();
                scratch
                    .get_or_insert_with(|| occupancy.clone())
                    .allocate(tentative(job, g, set_index), allocations)
                    .map_err(|e| NotPlaced {
                        pod_set: set.name.clone(),
                        reason: format!("internal: {e}"),
                    })?;
            }
            per_set[set_index] = pods;
        }
    }
    let mut pods: Vec<PlacedPod> = per_set.into_iter().flatten().collect();
    for (rank, p) in pods.iter_mut().enumerate() {
        p.rank = rank as u32;
    }
    let nodes: Vec<NodeId> = pods.iter().map(|p| p.node).collect();
    let tier = highest_tier(cluster, &nodes);
    Ok(Placement {
        pods,
        highest_tier: tier,
        worst_latency_ns: tier.map_or(0, |t| cluster.tiers[usize::from(t)].latency_ns),
    })
}

/// The identity under which a group's pods are held while the next groups are placed.
fn tentative(job: &Job, group: usize, set: usize) -> RunningJob {
    RunningJob {
        name: format!("\u{0}{}#{group}#{set}", job.name),
        queue: String::new(),
        priority: 0,
        preemptible: true,
    }
}

/// Pod-set groups in order of first appearance: (workers, leader). A pod set without a group
/// is its own group; a group is one pod set, or a one-pod leader and its workers.
fn groups(job: &Job, input: &PlaceInput) -> Result<Vec<(usize, Option<usize>)>, NotPlaced> {
    let mut order: Vec<(Option<&str>, Vec<usize>)> = Vec::new();
    for i in 0..job.pod_sets.len() {
        let name = input.extras(i).and_then(|e| e.group.as_deref());
        match order.iter_mut().find(|(g, _)| name.is_some() && *g == name) {
            Some((_, members)) => members.push(i),
            None => order.push((name, vec![i])),
        }
    }
    order
        .into_iter()
        .map(|(name, members)| match members.as_slice() {
            [one] => Ok((*one, None)),
            [a, b] => {
                let (workers, leader) = if job.pod_sets[*b].count > job.pod_sets[*a].count {
                    (*b, *a)
                } else {
                    (*a, *b)
                };
                if job.pod_sets[leader].count != 1 {
                    return Err(NotPlaced {
                        pod_set: job.pod_sets[leader].name.clone(),
                        reason: format!(
                            "group `{}`: the leader pod set must have one pod",
                            name.unwrap_or_default()
                        ),
                    });
                }
                Ok((workers, Some(leader)))
            }
            _ => Err(NotPlaced {
                pod_set: job.pod_sets[members[0]].name.clone(),
                reason: format!(
                    "group `{}`: expected at most two pod sets (a leader and its workers), got {}",
                    name.unwrap_or_default(),
                    members.len()
                ),
            }),
        })
        .collect()
}

/// What placing one group needs to see.
struct Ctx<'a> {
    cluster: &'a Cluster,
    tree: &'a Tree<'a>,
    levels: &'a [usize],
    occ: &'a Occupancy,
    free: &'a [ResourceList],
    job: &'a Job,
    input: &'a PlaceInput,
    in_scope: &'a [bool],
    /// Placement is limited to one domain.
    scoped: bool,
}

impl Ctx<'_> {
    /// Placement level of a cluster level (the host level is the node level).
    fn pos(&self, level: usize) -> usize {
        self.levels
            .iter()
            .position(|&l| l == level)
            .unwrap_or(self.levels.len())
    }

    /// Pods of pod set `set` that fit on node `n`, optionally after `leader`'s pod.
    fn node_pods(&self, n: NodeId, set: usize, after: Option<usize>) -> (u64, bool) {
        let gpu = self.job.pod_sets[set].gpu;
        let requests = self.input.extras(set).map(|e| &e.requests);
        let empty = &EMPTY;
        let mut free = self.free.get(n.index()).cloned();
        let mut gpu_pods = gpu_capacity(self.occ, n, gpu);
        let mut leader_fits = true;
        if let Some(l) = after {
            let (l_pods, _) = self.node_pods(n, l, None);
            leader_fits = l_pods > 0;
            if leader_fits {
                let l_gpu = self.job.pod_sets[l].gpu;
                gpu_pods = gpu_capacity_after(self.occ, n, gpu, l_gpu);
                if let Some(f) = free.as_mut() {
                    let l_req = self.input.extras(l).map(|e| &e.requests);
                    subtract(f, l_req.unwrap_or(empty), 1);
                }
            }
        }
        let res_pods = match &free {
            Some(f) if !self.free.is_empty() => count_in(f, requests.unwrap_or(empty)),
            _ => UNLIMITED_PODS,
        };
        (gpu_pods.min(res_pods).min(UNLIMITED_PODS), leader_fits)
    }

    fn leaves(&self, workers: usize, leader: Option<usize>) -> Vec<LeafCap> {
        let extras = |i: usize| self.input.extras(i);
        if leader.is_none() && self.free.is_empty() && extras(workers).is_none() {
            // The common case, kept tight: GPUs and the job's tolerations only.
            let gpu = self.job.pod_sets[workers].gpu;
            let n_nodes = self.cluster.nodes.len();
            let tolerated =
                |t: &topology::Taint| self.job.tolerations.iter().any(|x| x.tolerates(t));
            return (0..self.cluster.nodes.len())
                .map(|i| {
                    let n = NodeId::from_index(i);
                    let pods = if self.in_scope[i] && self.cluster.is_schedulable(n, tolerated) {
                        gpu_capacity(self.occ, n, gpu)
                    } else {
                        0
                    };
                    tas::leaf(pods, false, pods, n_nodes)
                })
                .collect();
        }
        (0..self.cluster.nodes.len())
            .map(|i| {
                let n = NodeId::from_index(i);
                let ok = |set: usize| {
                    self.in_scope[i] && eligible(self.cluster, n, self.job, extras(set))
                };
                if !ok(workers) {
                    return LeafCap::default();
                }
                let n_nodes = self.cluster.nodes.len();
                let (pods, _) = self.node_pods(n, workers, None);
                match leader {
                    Some(l) if ok(l) => {
                        let (with, fits) = self.node_pods(n, workers, Some(l));
                        tas::leaf(pods, fits, if fits { with } else { pods }, n_nodes)
                    }
                    _ => tas::leaf(pods, false, pods, n_nodes),
                }
            })
            .collect()
    }

    /// GPUs per pod when the pod set's node capacities may come from the occupancy's kept
    /// counts, on demand ([`tas::Leaves::OnDemand`]): whole GPUs, no leader, slices, extras,
    /// scope or balanced placement, a required or preferred level above the nodes, on an
    /// occupancy that tracks node state.
    fn counted_gpus(&self, workers: usize, leader: Option<usize>) -> Option<u32> {
        let set = &self.job.pod_sets[workers];
        let t = &set.topology;
        let GpuRequest::Whole(g) = set.gpu else {
            return None;
        };
        let cap = Count::MAX as u64 / (self.cluster.nodes.len() as u64 + 1);
        let most = self.occ.free_whole_histogram(None).len().saturating_sub(1) as u64;
        let level = t.preferred.or(t.required)?;
        let usable = g > 0
            && leader.is_none()
            && !self.scoped
            && t.slices.is_empty()
            && most <= cap
            && self.occ.tracks_nodes()
            && self.occ.node_count() == self.cluster.nodes.len()
            && self.free.is_empty()
            && self.input.extras(workers).is_none()
            && !self.input.options.balanced
            && (self.job.tolerations.is_empty() || self.occ.tainted_nodes() == 0)
            && self.pos(level) < self.levels.len()
            && t.required.is_none_or(|r| self.pos(r) < self.levels.len());
        usable.then_some(g)
    }

    /// Preferred-affinity scores of the eligible nodes (empty when not used).
    fn scores(&self, workers: usize, leaves: &[LeafCap]) -> Vec<i64> {
        let terms = match self.input.extras(workers) {
            Some(e) if self.input.options.preferred_affinity && !e.preferred.is_empty() => {
                &e.preferred
            }
            _ => return Vec::new(),
        };
        (0..self.cluster.nodes.len())
            .map(|i| {
                let n = NodeId::from_index(i);
                let eligible = self.in_scope[i]
                    && eligible(self.cluster, n, self.job, self.input.extras(workers));
                if eligible && leaves.get(i).is_some() {
                    PreferredTerm::score(terms, &self.cluster.node(n).labels)
                } else {
                    0
                }
            })
            .collect()
    }

    fn request(&self, set: &PodSet, count: u64, leader: bool) -> Request {
        let t = &set.topology;
        let node_level = self.levels.len();
        let (slice_level, slice_size) = t.slices.first().map_or((node_level, 1), |s| {
            (
                self.pos(s.level),
                Count::try_from(s.size.max(1)).unwrap_or(Count::MAX),
            )
        });
        let mut size_at = std::collections::BTreeMap::new();
        let mut prev = slice_level;
        for s in t.slices.iter().skip(1) {
            let p = self.pos(s.level);
            for l in prev + 1..=p {
                size_at.insert(l, Count::try_from(s.size.max(1)).unwrap_or(Count::MAX));
            }
            prev = p;
        }
        let unconstrained = t.required.is_none() && t.preferred.is_none();
        let search_level = match t.preferred.or(t.required) {
            Some(l) => self.pos(l),
            None if !t.slices.is_empty() => 0,
            None => node_level,
        };
        Request {
            count: Count::try_from(count).unwrap_or(Count::MAX),
            leader_count: Count::from(leader),
            slice_size,
            slice_level,
            size_at,
            search_level,
            required: t.required.map(|l| self.pos(l)),
            unconstrained,
            least_free: unconstrained
                && self.input.options.unconstrained == UnconstrainedMode::LeastFreeCapacity,
            balanced: self.input.options.balanced,
        }
    }
}

/// A pod set (by index) and its pods per node, in rank order.
type SetNodes = (usize, Vec<(NodeId, u64)>);

/// Place one group: per pod set, the nodes and pod counts.
fn place_group(
    ctx: &Ctx,
    workers: usize,
    leader: Option<usize>,
) -> Result<Vec<SetNodes>, NotPlaced> {
    let set = &ctx.job.pod_sets[workers];
    let not_placed = |reason: String| NotPlaced {
        pod_set: set.name.clone(),
        reason,
    };
    let counted = ctx.counted_gpus(workers, leader);
    let all = match counted {
        Some(_) => Vec::new(),
        None => ctx.leaves(workers, leader),
    };
    let scores = ctx.scores(workers, &all);
    let (occ, n_nodes) = (ctx.occ, ctx.cluster.nodes.len());
    let g = counted.unwrap_or(1);
    let node = |n: NodeId| {
        let pods = if occ.is_schedulable(n) {
            u64::from(occ.free_whole(n) / g)
        } else {
            0
        };
        tas::leaf(pods, false, pods, n_nodes)
    };
    let domain_pods = |d: DomainId| occ.whole_gpu_pods(Some(d), g) as Count;
    let leaves = match counted {
        Some(_) => tas::Leaves::OnDemand {
            node: &node,
            domain_pods: &domain_pods,
        },
        None => tas::Leaves::All(&all),
    };
    let attempt = |count: u64| {
        let req = ctx.request(set, count, leader.is_some());
        let placed =
            tas::assign(ctx.tree, &leaves, &scores, &req).map_err(|room| (req.clone(), room))?;
        let (w, l): (u64, u64) = placed
            .iter()
            .fold((0, 0), |(w, l), &(_, pw, pl)| (w + pw, l + pl));
        if w != count || l != u64::from(leader.is_some()) {
            return Err((req, tas::NoFit::default()));
        }
        Ok(placed)
    };
    let placed = match attempt(u64::from(set.count)) {
        Ok(p) => p,
        Err((req, room)) => {
            let reason = no_fit_reason(ctx, &req, room, set, leader);
            if set.min_count >= set.count {
                return Err(not_placed(reason));
            }
            // Gang minimum: the largest multiple of the outer slice size in [min, count) that fits.
            let g = u64::from(set.outer_granule().max(1));
            let (mut lo, mut hi) = (u64::from(set.min_count) / g, u64::from(set.count) / g);
            let mut best = attempt(lo * g).map_err(|_| not_placed(reason))?;
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                match attempt(mid * g) {
                    Ok(p) => {
                        lo = mid;
                        best = p;
                    }
                    Err(_) => hi = mid,
                }
            }
            best
        }
    };
    let in_rank_order = |v| in_rank_order(ctx.cluster, v);
    let mut out = Vec::new();
    if let Some(l) = leader {
        let nodes = placed
            .iter()
            .filter(|p| p.2 > 0)
            .map(|p| (p.0, p.2))
            .collect();
        out.push((l, in_rank_order(nodes)));
    }
    let nodes = placed
        .iter()
        .filter(|p| p.1 > 0)
        .map(|p| (p.0, p.1))
        .collect();
    out.push((workers, in_rank_order(nodes)));
    Ok(out)
}

/// Nodes in rank order: by their domains, top first, then by id.
fn in_rank_order(cluster: &Cluster, mut v: Vec<(NodeId, u64)>) -> Vec<(NodeId, u64)> {
    v.sort_by(|(x, _), (y, _)| {
        cluster
            .node(*x)
            .domains
            .cmp(&cluster.node(*y).domains)
            .then(x.cmp(y))
    });
    v
}

/// The common case decided from the occupancy's free-capacity counts instead of a walk over
/// every node: one pod set of whole GPUs without slices, extras or a gang minimum, on an
/// occupancy that tracks node state ([`Occupancy::with_node_tracking`]). A pod set that cannot
/// fit is refused with the full algorithm's reason, in O(levels' domains · GPUs per node); an
/// unconstrained pod set (least free capacity first, the default) is placed in
/// O(pods · GPUs per node · log nodes). `None`: not that case, or a constrained pod set that
/// fits; the full algorithm decides.
fn from_counts(
    cluster: &Cluster,
    occ: &Occupancy,
    job: &Job,
    input: &PlaceInput,
) -> Option<Result<Placement, NotPlaced>> {
    if !occ.tracks_nodes()
        || occ.node_count() != cluster.nodes.len()
        || job.pod_sets.len() != 1
        || !input.node_free.0.is_empty()
        || input.extras(0).is_some()
        || (!job.tolerations.is_empty() && occ.tainted_nodes() > 0)
    {
        return None;
    }
    let set = &job.pod_sets[0];
    let t = &set.topology;
    let GpuRequest::Whole(g) = set.gpu else {
        return None;
    };
    // Per-node capacities as the full algorithm caps them (never binding on real clusters).
    let cap = Count::MAX as u64 / (cluster.nodes.len() as u64 + 1);
    let most = occ.free_whole_histogram(None).len().saturating_sub(1) as u64;
    if g == 0
        || !t.slices.is_empty()
        || set.min_count < set.count
        || most > cap
        || u64::from(set.count) > Count::MAX as u64
    {
        return None;
    }
    let count = u64::from(set.count);
    let not_placed = |reason: String| {
        Some(Err(NotPlaced {
            pod_set: set.name.clone(),
            reason,
        }))
    };
    if let Some(level) = t.required {
        if Some(level) == cluster.host_level {
            return None;
        }
        let roomiest = cluster.levels[level]
            .domains
            .iter()
            .map(|&d| occ.whole_gpu_pods(Some(d), g))
            .max()
            .unwrap_or(0);
        if roomiest >= count {
            return None;
        }
        let label = &cluster.levels[level].label;
        return not_placed(format!(
            "{count} pods do not fit in one `{label}` domain (the roomiest has room for {roomiest})"
        ));
    }
    let total = occ.whole_gpu_pods(None, g);
    if total < count {
        return not_placed(format!(
            "{count} pods do not fit: the schedulable nodes have room for {total}"
        ));
    }
    if t.preferred.is_some() || input.options.unconstrained != UnconstrainedMode::LeastFreeCapacity
    {
        return None;
    }
    let nodes = least_free_nodes(cluster, occ, g, count);
    let mut pods = Vec::with_capacity(set.count as usize);
    for (node, n) in in_rank_order(cluster, nodes) {
        for (gpu_ids, milli, memory_mib) in assign_gpus(occ, node, set.gpu, n) {
            pods.push(PlacedPod {
                rank: pods.len() as u32,
                pod_set: 0,
                node,
                gpu_ids,
                milli,
                memory_mib,
            });
        }
    }
    let nodes: Vec<NodeId> = pods.iter().map(|p| p.node).collect();
    let tier = highest_tier(cluster, &nodes);
    Some(Ok(Placement {
        pods,
        highest_tier: tier,
        worst_latency_ns: tier.map_or(0, |t| cluster.tiers[usize::from(t)].latency_ns),
    }))
}

/// Kueue's unconstrained placement (least free capacity first) of `count` pods of `g` whole
/// GPUs, which fit: the node with the fewest pods' room that holds them all, else nodes by
/// room (fewest first), each filled, the last in part. Ties by label order.
fn least_free_nodes(cluster: &Cluster, occ: &Occupancy, g: u32, count: u64) -> Vec<(NodeId, u64)> {
    let width = occ.free_whole_histogram(None).len() as u64;
    let g = u64::from(g);
    // Nodes with room for `room` pods, in label order: those with `room·g..(room+1)·g` GPUs free.
    let with_room = |room: u64| {
        let lo = room * g;
        let hi = ((room + 1) * g).min(width);
        let mut lists: Vec<_> = (lo..hi)
            .map(|k| occ.nodes_with_free_whole(k as u32).peekable())
            .collect();
        std::iter::from_fn(move || {
            let best = lists
                .iter_mut()
                .enumerate()
                .filter_map(|(i, l)| l.peek().map(|&n| (cluster.node_order(n), i)))
                .min()?;
            lists[best.1].next()
        })
    };
    let most = (width.saturating_sub(1)) / g;
    if let Some(n) = (count..=most).find_map(|room| with_room(room).next()) {
        return vec![(n, count)];
    }
    let mut out = Vec::new();
    let mut rem = count;
    for room in 1..=most {
        for n in with_room(room) {
            let take = room.min(rem);
            out.push((n, take));
            rem -= take;
            if rem == 0 {
                return out;
            }
        }
    }
    out
}

fn no_fit_reason(
    ctx: &Ctx,
    req: &Request,
    room: tas::NoFit,
    set: &PodSet,
    leader: Option<usize>,
) -> String {
    let count = req.count;
    let note = slices_note(req.slice_size);
    let with_leader = if leader.is_some() {
        " with its leader"
    } else {
        ""
    };
    if req.required.is_some() {
        let roomiest = room.roomiest;
        let label = &ctx.cluster.levels[set.topology.required.unwrap_or_default()].label;
        return format!(
            "{count} pods{with_leader} do not fit in one `{label}` domain (the roomiest has room for {roomiest}{note})"
        );
    }
    let total = room.total;
    format!(
        "{count} pods{with_leader} do not fit: the schedulable nodes have room for {total}{note}"
    )
}

fn slices_note(unit: Count) -> String {
    if unit > 1 {
        format!(" in whole slices of {unit}")
    } else {
        String::new()
    }
}

/// Pods of a GPU request that fit on a node (`UNLIMITED_PODS` for pods without GPUs).
fn gpu_capacity(occ: &Occupancy, node: NodeId, req: GpuRequest) -> u64 {
    match req {
        GpuRequest::Whole(0) => UNLIMITED_PODS,
        GpuRequest::Whole(g) => u64::from(occ.free_whole(node) / g),
        GpuRequest::Fraction { .. } | GpuRequest::MemoryMib { .. } => {
            let (used_milli, used_mem) = occ.node_gpus(node);
            let used = used_milli
                .iter()
                .zip(used_mem)
                .map(|(&m, &e)| (u32::from(m), e));
            req.shared_pods(used, occ.gpu_memory_mib(node))
        }
    }
}

/// Pods of `req` that fit on a node after one pod of `first`, taking the GPUs
/// [`assign_gpus`] would give that pod.
fn gpu_capacity_after(occ: &Occupancy, node: NodeId, req: GpuRequest, first: GpuRequest) -> u64 {
    match (req, first) {
        (GpuRequest::Whole(0), _) => UNLIMITED_PODS,
        (_, GpuRequest::Whole(0)) => gpu_capacity(occ, node, req),
        (GpuRequest::Whole(g), GpuRequest::Whole(f)) => {
            u64::from(occ.free_whole(node).saturating_sub(f) / g)
        }
        _ => {
            let total_mem = occ.gpu_memory_mib(node);
            let mut used = node_use(occ, node);
            if take_gpus(&mut used, total_mem, first).is_none() {
                return 0;
            }
            match req {
                GpuRequest::Whole(g) => {
                    let untouched = used.iter().filter(|&&u| u == (0, 0)).count() as u64;
                    untouched / u64::from(g)
                }
                _ => req.shared_pods(used.into_iter(), total_mem),
            }
        }
    }
}

/// A node's GPUs: used share (thousandths) and memory (MiB) each.
fn node_use(occ: &Occupancy, node: NodeId) -> Vec<(u32, u32)> {
    let (used_milli, used_mem) = occ.node_gpus(node);
    used_milli
        .iter()
        .zip(used_mem)
        .map(|(&m, &e)| (u32::from(m), e))
        .collect()
}

/// Take one pod's GPUs from `used`: whole GPUs the untouched ones, lowest index first; a
/// shared pod on one device the most used GPU with room, on several devices those with the
/// most shares left (so every count [`gpu_capacity`] gives is reached).
fn take_gpus(
    used: &mut [(u32, u32)],
    total_mem: u32,
    req: GpuRequest,
) -> Option<(Vec<u32>, u32, u32)> {
    let (milli, mem) = req.per_gpu_share(total_mem);
    let ids: Vec<u32> = match req {
        GpuRequest::Whole(g) => {
            let ids: Vec<u32> = (0..used.len() as u32)
                .filter(|&i| used[i as usize] == (0, 0))
                .take(g as usize)
                .collect();
            if ids.len() < g as usize {
                return None;
            }
            ids
        }
        _ => {
            let order = if req.devices() > 1 {
                SharedOrder::MostRoom
            } else {
                SharedOrder::MostUsed
            };
            req.pick_shared(used, total_mem, order)?
        }
    };
    for &g in &ids {
        let u = &mut used[g as usize];
        u.0 += milli;
        u.1 += mem;
    }
    Some((ids, milli, mem))
}

/// GPU ids, share and memory for `count` pods on a node that has room for them.
fn assign_gpus(
    occ: &Occupancy,
    node: NodeId,
    req: GpuRequest,
    count: u64,
) -> Vec<(Vec<u32>, u32, u32)> {
    let total_mem = occ.gpu_memory_mib(node);
    let mut used = node_use(occ, node);
    (0..count)
        .map(|_| take_gpus(&mut used, total_mem, req).expect("node capacity counted this pod"))
        .collect()
}
