//! KAI Scheduler's placement rules ([`crate::Dialect::Kai`]), reached through
//! [`crate::place_with`] when [`crate::PlaceOptions::dialect`] is KAI.
//!
//! Design note (2026-11-30). The rules follow KAI Scheduler's topology plugin
//! (`pkg/scheduler/plugins/topology/job_filtering.go`, `node_scoring.go`), its node-placement
//! plugin (`nodeplacement/pack.go`, `spread.go`) and its GPU order plugins (`gpupack`,
//! `gpuspread`) at commit d5bc503a, checked against KAI's allocate tests
//! (`tests/kai/allocate_*.yaml`). Per pod set (KAI: per sub-group), in order:
//!
//! 1. Domain order: every domain's free whole GPUs (and CPU/memory when nodes carry free
//!    resources) against the pod set's total request gives a ratio, its dominant resource; the
//!    children of each domain are sorted by that ratio, highest first (the domain that will be
//!    the most packed first), then by label value. Domains of one level are taken in the order
//!    this sorted tree shows them, left to right.
//! 2. Candidates: the domains of the preferred level (else the required level), then of each
//!    level above it up to the required level (or the whole cluster when nothing is required),
//!    lowest level first, keeping those whose nodes have room for every pod (KAI counts every
//!    node of the domain here, eligible or not).
//! 3. The first candidate whose eligible nodes take all pods wins. Inside it pods go one at a
//!    time to the best node: first the topology score of its preferred-level domain
//!    (`floor(10·(i+1)/n)` for the i-th of the n preferred-level domains in sorted order), then
//!    the placement strategy — binpack: fewest free GPUs first (busier node first), spread: the
//!    largest free share first (CPU-only pods compare free CPU) —, then the node name.
//! 4. GPUs inside a node: whole GPUs take untouched GPUs, lowest index first; a shared pod
//!    (fraction or GPU memory) takes the most used GPU with room under binpack (`gpupack`) and
//!    the least used under spread (`gpuspread`); with `gpu-fraction-num-devices` it takes the
//!    first n distinct GPUs of that order (KAI's `GetNodePreferableGpuForSharing`), and a node
//!    fits it when n of its GPUs have room for the share.
//!
//! Without a topology request the candidate is the whole cluster. A pod set that does not fit
//! whole is retried at its gang minimum. Cost: O(domains · log) for the order plus
//! O(pods · nodes) for the node choice under spread (binpack fills one node at a time).
//!
//! Speed (2026-12-02). Node state is read in place: capacity and the strategies' free share
//! come from the occupancy (`State::capacity`, `State::free_share`) and a node is copied
//! (`State::node`) only when a pod goes to it; `fill` keeps each open node's score in one
//! `Vec` beside it and rescores only the node it took from (no map over every open node),
//! and refuses whole-GPU pods at once when the open nodes' room is short of them.
//! On an occupancy that tracks node state, an unconstrained pod set of whole GPUs without
//! extras, resources or scope, not yet touched by this placement (`from_counts`), is refused
//! from the kept whole-GPU room (each node then takes exactly `untouched / g` pods, so an
//! attempt of `c` pods fits exactly when the room is `c` or more) and, under binpack, placed in
//! the occupancy's free-share order (`Occupancy::nodes_by_free_milli`: least free share, then
//! index, as `fill` chooses); the same pods and reasons as the walk, compared on random churn
//! (`tests/it/incremental.rs`). On the README main trace and full Philly (`--compare
//! fifo,best-effort -j 1`, CPU, paired runs) the KAI/Kueue ratio went from 1.95 and 18.0 to
//! 0.89 and 1.10 (network off: 43 and 18.9 to 1.21 and 1.06), the `-o json` bytes unchanged.

use std::collections::BTreeMap;

use topology::{Cluster, DomainId, NodeId};

use crate::constraints::{count_in, eligible, subtract, PlaceInput, ResourceList};
use crate::dialect::PlacementStrategy;
use crate::job::{GpuRequest, Job, PodSet, SharedOrder, MILLI_PER_GPU};
use crate::occupancy::Occupancy;

/// One placed pod: its pod set, node and GPUs (ranks are given by [`crate::place_with`]).
pub(crate) struct KaiPod {
    /// Index of the pod set.
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

/// Why a job does not fit under KAI's rules: the pod set (or sub-group) and the reason.
pub(crate) struct NoRoom {
    /// The pod set or sub-group that did not fit.
    pub pod_set: String,
    /// Why, with the numbers.
    pub reason: String,
}

/// Weight of the topology score over the strategy score (KAI: `scores.Topology`).
const TOPOLOGY_WEIGHT: i64 = 100_000;

/// Ratio given to a resource the domain has none of (KAI: `requiredResourceNotInDomainRatio`).
const MISSING_RATIO: f64 = 1000.0;

/// Place a job with KAI's rules; see the module notes. Pure. Pods come in rank order: by pod
/// set, then by the nodes' domains.
pub(crate) fn place(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    scope: Option<DomainId>,
    input: &PlaceInput,
) -> Result<Vec<KaiPod>, NoRoom> {
    place_steps(cluster, occupancy, job, scope, input, usize::MAX)
}

/// Pods per pod set that KAI's next attempt for the job asks for (`GetTasksToAllocate`), the
/// job's running pods ([`crate::PodSetExtras::running_on`]) counted as placed: the minimum of
/// every required member not yet satisfied, else one more pod of the first satisfied member in
/// KAI's sub-group order. All zeros when nothing is left.
pub fn kai_next_step(job: &Job, input: &PlaceInput) -> Vec<u32> {
    tasks_to_allocate(job, input, &running_counts(job, input))
}

/// Pods of each pod set already running, as KAI counts them towards its minimum.
fn running_counts(job: &Job, input: &PlaceInput) -> Vec<u32> {
    (0..job.pod_sets.len())
        .map(|k| {
            let running = input.extras(k).map_or(0, |e| e.running_on.len());
            (running as u32).min(job.pod_sets[k].count)
        })
        .collect()
}

/// [`place`] with at most `max_steps` of KAI's allocation steps for a job with sub-groups.
pub(crate) fn place_steps(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    scope: Option<DomainId>,
    input: &PlaceInput,
    max_steps: usize,
) -> Result<Vec<KaiPod>, NoRoom> {
    let mut state = State::new(cluster, occupancy, input);
    let in_scope = cluster.node_mask(scope);
    check_sub_groups(job, input)?;
    let mut pods = if input.sub_groups.is_empty() {
        // No sub-groups: each pod set's pods not yet running, whole, else at its largest count
        // down to what its minimum still needs.
        let mut rest = job.clone();
        for (k, set) in rest.pod_sets.iter_mut().enumerate() {
            let running = input.extras(k).map_or(0, |e| e.running_on.len()) as u32;
            set.count = set.count.saturating_sub(running);
            set.min_count = set
                .min_count
                .saturating_sub(running)
                .clamp(1, set.count.max(1));
        }
        place_children(cluster, &mut state, &rest, None, &in_scope, input, None)?
    } else {
        place_gang_then_elastic(cluster, &mut state, job, &in_scope, input, max_steps)?
    };
    pods.sort_by(|a, b| {
        a.pod_set.cmp(&b.pod_set).then_with(|| {
            cluster
                .node(a.node)
                .domains
                .cmp(&cluster.node(b.node).domains)
                .then(a.node.cmp(&b.node))
        })
    });
    Ok(pods)
}

/// KAI's allocation of a PodGroup with sub-groups (`GetTasksToAllocate`, and the allocate
/// action pushing the job back after each step): the gang — every required member's minimum,
/// honouring `minSubGroup` — together or not at all, then one step at a time (one pod of the
/// satisfied member first in KAI's sub-group order, or the minimum of an unsatisfied one) until
/// a step does not fit. Pods already running count as placed, and a required level keeps new
/// pods in the domains that hold the sub-group's pods.
fn place_gang_then_elastic(
    cluster: &Cluster,
    state: &mut State,
    job: &Job,
    in_scope: &[bool],
    input: &PlaceInput,
    max_steps: usize,
) -> Result<Vec<KaiPod>, NoRoom> {
    // Pods already running count as placed (KAI grows a running job from them).
    let mut placed = running_counts(job, input);
    let running: Vec<KaiPod> = (0..job.pod_sets.len())
        .flat_map(|k| {
            input.extras(k).into_iter().flat_map(move |e| {
                e.running_on.iter().map(move |&node| KaiPod {
                    pod_set: k,
                    node,
                    gpu_ids: Vec::new(),
                    milli: 0,
                    memory_mib: 0,
                })
            })
        })
        .collect();
    // The first step (KAI's gang phase while the job is below its gang: every required
    // member's minimum) must fit; then the job is tried again after each allocation, with the
    // pods its sub-group order asks for next (one pod of a satisfied pod set, or the minimum of
    // an unsatisfied member), until a step does not fit.
    let mut pods: Vec<KaiPod> = Vec::new();
    for n in 0..max_steps {
        let step = tasks_to_allocate(job, input, &placed);
        if step.iter().all(|&x| x == 0) {
            break;
        }
        let held: Vec<&KaiPod> = running.iter().chain(&pods).collect();
        let mask = elastic_mask(cluster, job, input, &step, &held, in_scope);
        let mut trial = state.clone();
        match place_children(
            cluster,
            &mut trial,
            &with_counts(job, &step),
            None,
            &mask,
            input,
            None,
        ) {
            Ok(more) => {
                *state = trial;
                pods.extend(more);
                add_counts(&mut placed, &step);
            }
            Err(e) if n == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(pods)
}

/// The job with `counts[k]` pods of pod set `k`, each pod set all-or-nothing (0: not placed).
fn with_counts(job: &Job, counts: &[u32]) -> Job {
    let mut step = job.clone();
    for (set, &n) in step.pod_sets.iter_mut().zip(counts) {
        set.count = n;
        set.min_count = n;
    }
    step
}

fn add_counts(placed: &mut [u32], step: &[u32]) {
    for (p, &n) in placed.iter_mut().zip(step) {
        *p += n;
    }
}

/// A member of a sub-group (KAI's `SubGroupMember`): a sub-group or a pod set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Member {
    Group(usize),
    Set(usize),
}

/// The direct members of sub-group `g` (the job when `None`): sub-groups first, then pod
/// sets, each in order (KAI's `GetMembers`).
fn members(job: &Job, input: &PlaceInput, g: Option<usize>) -> Vec<Member> {
    let groups = (0..input.sub_groups.len())
        .filter(|&i| input.sub_groups[i].parent == g)
        .map(Member::Group);
    let sets = (0..job.pod_sets.len())
        .filter(|&k| parent_of_set(input, k) == g)
        .map(Member::Set);
    groups.chain(sets).collect()
}

/// Members a sub-group needs placed to be satisfied (KAI's `GetMinMembersToSatisfy`): its
/// `min_sub_groups`, else all; the job's own level needs all.
fn threshold(job: &Job, input: &PlaceInput, m: Member) -> u32 {
    match m {
        Member::Set(k) => job.pod_sets[k].min_count,
        Member::Group(g) => input.sub_groups[g]
            .min_sub_groups
            .unwrap_or_else(|| members(job, input, Some(g)).len() as u32),
    }
}

/// What a member has placed as KAI counts it: a pod set its pods, a sub-group its satisfied
/// members.
fn allocated(job: &Job, input: &PlaceInput, placed: &[u32], m: Member) -> u32 {
    match m {
        Member::Set(k) => placed[k],
        Member::Group(g) => members(job, input, Some(g))
            .into_iter()
            .filter(|&c| allocated(job, input, placed, c) >= threshold(job, input, c))
            .count() as u32,
    }
}

/// KAI's sub-group order (`subgrouporder` plugin): unsatisfied members first; among satisfied
/// ones those with a threshold before those without, then the lower ratio of placed to
/// threshold (fewer placed when neither has a threshold); ties keep member order.
fn sorted_members(job: &Job, input: &PlaceInput, placed: &[u32], g: Option<usize>) -> Vec<Member> {
    let mut v = members(job, input, g);
    let key = |m: Member| {
        let (count, min) = (allocated(job, input, placed, m), threshold(job, input, m));
        (count >= min, min == 0, count, min)
    };
    v.sort_by(|&l, &r| {
        let (ls, l0, lc, lm) = key(l);
        let (rs, r0, rc, rm) = key(r);
        ls.cmp(&rs).then_with(|| {
            if !ls {
                return std::cmp::Ordering::Equal;
            }
            l0.cmp(&r0).then_with(|| {
                if l0 {
                    lc.cmp(&rc)
                } else {
                    // lc / lm against rc / rm, exactly.
                    (u64::from(lc) * u64::from(rm)).cmp(&(u64::from(rc) * u64::from(lm)))
                }
            })
        })
    });
    v
}

/// Pods per pod set that KAI tries next for the job (`GetTasksToAllocate`): for the job's level,
/// then recursively — an unsatisfied sub-group takes the minimum of its first `threshold`
/// members in sub-group order (skipping those already satisfied); a satisfied one the first
/// member with something to add (a satisfied pod set adds one pod). All zeros: nothing left.
fn tasks_to_allocate(job: &Job, input: &PlaceInput, placed: &[u32]) -> Vec<u32> {
    let mut out = vec![0u32; job.pod_sets.len()];
    collect_from_group(job, input, placed, None, &mut out);
    out
}

fn collect_from_group(
    job: &Job,
    input: &PlaceInput,
    placed: &[u32],
    g: Option<usize>,
    out: &mut [u32],
) {
    let kids = sorted_members(job, input, placed, g);
    let (count, need) = match g {
        Some(g) => (
            allocated(job, input, placed, Member::Group(g)),
            threshold(job, input, Member::Group(g)),
        ),
        None => {
            let need = kids.len() as u32;
            let count = kids
                .iter()
                .filter(|&&c| allocated(job, input, placed, c) >= threshold(job, input, c))
                .count() as u32;
            (count, need)
        }
    };
    if count < need {
        for &c in kids.iter().take(need as usize) {
            if allocated(job, input, placed, c) >= threshold(job, input, c) {
                continue;
            }
            match c {
                Member::Group(h) => collect_from_group(job, input, placed, Some(h), out),
                Member::Set(k) => out[k] = job.pod_sets[k].min_count - placed[k],
            }
        }
        return;
    }
    for c in kids {
        match c {
            Member::Group(h) => collect_from_group(job, input, placed, Some(h), out),
            Member::Set(k) => {
                let set = &job.pod_sets[k];
                out[k] = if placed[k] >= set.min_count {
                    u32::from(placed[k] < set.count)
                } else {
                    set.min_count - placed[k]
                };
            }
        }
        if out.iter().any(|&n| n > 0) {
            return;
        }
    }
}

/// The nodes an elastic step may use (KAI's `getRelevantDomainsWithAllocatedPods`): for each
/// pod set of the step and each sub-group above it with a required level, only the domains of
/// that level that already hold pods under it.
fn elastic_mask(
    cluster: &Cluster,
    job: &Job,
    input: &PlaceInput,
    step: &[u32],
    pods: &[&KaiPod],
    in_scope: &[bool],
) -> Vec<bool> {
    let mut mask = in_scope.to_vec();
    let mut restrict = |level: usize, under: &dyn Fn(usize) -> bool| {
        let held: Vec<DomainId> = pods
            .iter()
            .filter(|p| under(p.pod_set))
            .filter_map(|p| cluster.node(p.node).domains.get(level).copied())
            .collect();
        if held.is_empty() {
            return;
        }
        for (i, m) in mask.iter_mut().enumerate() {
            let d = cluster.nodes[i].domains.get(level);
            *m = *m && d.is_some_and(|d| held.contains(d));
        }
    };
    for k in (0..job.pod_sets.len()).filter(|&k| step[k] > 0) {
        if let Some(r) = job.pod_sets[k].topology.required {
            restrict(r, &|j| j == k);
        }
        let mut g = parent_of_set(input, k);
        while let Some(i) = g {
            if let Some(r) = input.sub_groups[i].topology.required {
                restrict(r, &|j| under(input, parent_of_set(input, j), i));
            }
            g = input.sub_groups[i].parent;
        }
    }
    mask
}

/// Sub-group indices must point backwards (a parent before its children) and exist.
fn check_sub_groups(job: &Job, input: &PlaceInput) -> Result<(), NoRoom> {
    for (i, g) in input.sub_groups.iter().enumerate() {
        if g.parent.is_some_and(|p| p >= i) {
            return Err(NoRoom {
                pod_set: g.name.clone(),
                reason: "sub-group parent must come before the sub-group".to_owned(),
            });
        }
    }
    for k in 0..job.pod_sets.len() {
        if let Some(g) = input.extras(k).and_then(|e| e.sub_group) {
            if g >= input.sub_groups.len() {
                return Err(NoRoom {
                    pod_set: job.pod_sets[k].name.clone(),
                    reason: format!("sub-group {g} does not exist"),
                });
            }
        }
    }
    Ok(())
}

/// The sub-group of pod set `k` (`None`: directly under the job).
fn parent_of_set(input: &PlaceInput, k: usize) -> Option<usize> {
    input.extras(k).and_then(|e| e.sub_group)
}

/// Whether sub-group `g` is `ancestor` or lies under it.
fn under(input: &PlaceInput, mut g: Option<usize>, ancestor: usize) -> bool {
    while let Some(i) = g {
        if i == ancestor {
            return true;
        }
        g = input.sub_groups[i].parent;
    }
    false
}

/// Place the sub-groups and pod sets directly under `parent` (the job when `None`) on the
/// nodes of `mask`: sub-groups first, in order, then pod sets, in order.
fn place_children(
    cluster: &Cluster,
    state: &mut State,
    job: &Job,
    parent: Option<usize>,
    mask: &[bool],
    input: &PlaceInput,
    scores: Option<&[i64]>,
) -> Result<Vec<KaiPod>, NoRoom> {
    let mut out = Vec::new();
    let has_pods = |i: usize| {
        (0..job.pod_sets.len())
            .any(|k| job.pod_sets[k].count > 0 && under(input, parent_of_set(input, k), i))
    };
    for (i, g) in input.sub_groups.iter().enumerate() {
        if g.parent == parent && has_pods(i) {
            out.extend(place_sub_group(
                cluster, state, job, i, mask, input, scores,
            )?);
        }
    }
    for k in 0..job.pod_sets.len() {
        if parent_of_set(input, k) == parent && job.pod_sets[k].count > 0 {
            out.extend(place_set(cluster, state, job, k, mask, input, scores)?);
        }
    }
    Ok(out)
}

/// Place a sub-group: with a topology constraint, its candidate domains (KAI's order, for all
/// the pods under it) are tried in turn, the first where every child fits winning.
fn place_sub_group(
    cluster: &Cluster,
    state: &mut State,
    job: &Job,
    group: usize,
    mask: &[bool],
    input: &PlaceInput,
    scores: Option<&[i64]>,
) -> Result<Vec<KaiPod>, NoRoom> {
    let g = &input.sub_groups[group];
    let t = &g.topology;
    if t.required.is_none() && t.preferred.is_none() {
        return place_children(cluster, state, job, Some(group), mask, input, scores);
    }
    let sets: Vec<usize> = (0..job.pod_sets.len())
        .filter(|&k| under(input, parent_of_set(input, k), group))
        .collect();
    let empty = ResourceList::new();
    let limit_resources = !state.free.is_empty();
    let mut request = vec![0.0];
    let mut names: ResourceList = ResourceList::new();
    let typical_memory = typical_gpu_memory(cluster);
    for &k in &sets {
        let set = &job.pod_sets[k];
        let requests = input.extras(k).map_or(&empty, |e| &e.requests);
        request[0] += f64::from(set.count) * set.gpu.gpus(typical_memory);
        for (name, &a) in requests {
            *names.entry(name.clone()).or_default() += u64::from(set.count) * a;
        }
    }
    request.extend(names.values().map(|&a| a as f64));
    let sorted = sorted_levels(cluster, state, &request, &names);
    let own_scores = t
        .preferred
        .map(|p| topology_scores(cluster, &sorted[p], mask));
    let scores = own_scores.as_deref().or(scores);
    // Per pod set, the pods each node has room for.
    let caps: Vec<Vec<u64>> = sets
        .iter()
        .map(|&k| {
            let set = &job.pod_sets[k];
            let requests = input.extras(k).map_or(&empty, |e| &e.requests);
            (0..cluster.nodes.len())
                .map(|i| {
                    if mask[i] {
                        state
                            .capacity(NodeId::from_index(i), set.gpu, requests, limit_resources)
                            .min(u64::from(u32::MAX))
                    } else {
                        0
                    }
                })
                .collect()
        })
        .collect();
    let fits = |nodes: &[NodeId]| {
        sets.iter().enumerate().all(|(j, &k)| {
            nodes
                .iter()
                .map(|n| caps[j][n.index()])
                .fold(0u64, u64::saturating_add)
                >= u64::from(job.pod_sets[k].count)
        })
    };
    let all_nodes: Vec<NodeId> = (0..cluster.nodes.len()).map(NodeId::from_index).collect();
    let mut candidates: Vec<&[NodeId]> = Vec::new();
    let low = t.preferred.or(t.required).unwrap_or(0);
    for level in (t.required.unwrap_or(0)..=low).rev() {
        for &d in &sorted[level] {
            let nodes = &cluster.domain(d).nodes;
            if fits(nodes) {
                candidates.push(nodes);
            }
        }
    }
    if t.required.is_none() && fits(&all_nodes) {
        candidates.push(&all_nodes);
    }
    let mut last = None;
    for nodes in candidates {
        let mut inner = vec![false; cluster.nodes.len()];
        for n in nodes {
            inner[n.index()] = mask[n.index()];
        }
        let mut trial = state.clone();
        match place_children(cluster, &mut trial, job, Some(group), &inner, input, scores) {
            Ok(p) => {
                *state = trial;
                return Ok(p);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| NoRoom {
        pod_set: g.name.clone(),
        reason: match t.required {
            Some(r) => format!(
                "sub-group `{}` does not fit in one `{}` domain",
                g.name, cluster.levels[r].label
            ),
            None => format!("sub-group `{}` does not fit", g.name),
        },
    }))
}

/// Topology scores of nodes: the position of their preferred-level domain among those with
/// nodes in `mask`, in sorted order (`floor(10·(i+1)/n)`, weighted above the strategy score).
fn topology_scores(cluster: &Cluster, sorted: &[DomainId], mask: &[bool]) -> Vec<i64> {
    let domains: Vec<DomainId> = sorted
        .iter()
        .copied()
        .filter(|&d| cluster.domain(d).nodes.iter().any(|n| mask[n.index()]))
        .collect();
    let k = domains.len().max(1) as i64;
    let mut out = vec![0i64; cluster.nodes.len()];
    for (i, &d) in domains.iter().enumerate() {
        for &n in &cluster.domain(d).nodes {
            out[n.index()] = (10 * (i as i64 + 1)) / k * TOPOLOGY_WEIGHT;
        }
    }
    out
}

/// The largest GPU memory of a node, MiB (to count a `gpu-memory` request as GPUs).
fn typical_gpu_memory(cluster: &Cluster) -> u32 {
    cluster
        .nodes
        .iter()
        .map(|n| n.gpu_memory_gib.saturating_mul(1024))
        .max()
        .unwrap_or(0)
}

/// Per-node GPU use and free resources, copied from the occupancy only for nodes a placement
/// touches.
#[derive(Clone)]
struct State<'a> {
    occupancy: &'a Occupancy,
    free: &'a [ResourceList],
    touched: BTreeMap<NodeId, NodeUse>,
}

/// A node's GPUs and free resources after the pods placed so far.
#[derive(Clone, Debug)]
struct NodeUse {
    used_milli: Vec<u32>,
    used_memory: Vec<u32>,
    total_memory: u32,
    free: Option<ResourceList>,
}

/// One pod's GPUs: ids, share of each, memory of each.
type PodGpus = (Vec<u32>, u32, u32);

impl<'a> State<'a> {
    fn new(_cluster: &Cluster, occupancy: &'a Occupancy, input: &'a PlaceInput) -> Self {
        Self {
            occupancy,
            free: &input.node_free.0,
            touched: BTreeMap::new(),
        }
    }

    /// A copy of node `n`'s state, to change (only for nodes a pod goes to).
    fn node(&self, n: NodeId) -> NodeUse {
        if let Some(u) = self.touched.get(&n) {
            return u.clone();
        }
        let gpus = self.occupancy.gpus(n);
        NodeUse {
            used_milli: (0..gpus).map(|g| self.occupancy.used_milli(n, g)).collect(),
            used_memory: (0..gpus)
                .map(|g| self.occupancy.used_memory_mib(n, g))
                .collect(),
            total_memory: self.occupancy.gpu_memory_mib(n),
            free: self.free.get(n.index()).cloned(),
        }
    }

    /// Pods of `gpu` (and `requests`) that fit on node `n`, read in place: as
    /// [`NodeUse::capacity`] on [`State::node`], without the copy.
    fn capacity(&self, n: NodeId, gpu: GpuRequest, requests: &ResourceList, limit: bool) -> u64 {
        if let Some(u) = self.touched.get(&n) {
            return u.capacity(gpu, requests, limit);
        }
        let res = match self.free.get(n.index()) {
            Some(f) if limit => count_in(f, requests),
            _ => u64::MAX,
        };
        let gpu_pods = match gpu {
            GpuRequest::Whole(0) => u64::MAX,
            GpuRequest::Whole(g) => u64::from(self.occupancy.free_whole(n) / g),
            GpuRequest::Fraction { .. } | GpuRequest::MemoryMib { .. } => {
                let (milli, memory) = self.occupancy.node_gpus(n);
                gpu.shared_pods(
                    milli
                        .iter()
                        .map(|&m| u32::from(m))
                        .zip(memory.iter().copied()),
                    self.occupancy.gpu_memory_mib(n),
                )
            }
        };
        gpu_pods.min(res)
    }

    /// Node `n`'s free share (thousandths, or its free CPU for a CPU-only pod set) and its
    /// whole (its GPUs' thousandths, or 1): what the placement strategies compare.
    fn free_share(&self, n: NodeId, cpu_only: bool) -> (f64, f64) {
        if let Some(u) = self.touched.get(&n) {
            return u.free_share(cpu_only);
        }
        if cpu_only {
            let cpu = self.free.get(n.index()).and_then(|f| f.get("cpu"));
            return (cpu.map_or(0.0, |&c| c as f64), 1.0);
        }
        let gpus = self.occupancy.gpus(n).max(1);
        (
            f64::from(self.occupancy.free_milli(n)),
            f64::from(gpus * MILLI_PER_GPU),
        )
    }

    /// Whole GPUs nobody uses on node `n`.
    fn idle_gpus(&self, n: NodeId) -> u64 {
        match self.touched.get(&n) {
            Some(u) => u.idle() as u64,
            None => u64::from(self.occupancy.free_whole(n)),
        }
    }
}

impl NodeUse {
    fn idle(&self) -> usize {
        self.used_milli
            .iter()
            .zip(&self.used_memory)
            .filter(|(&m, &e)| m == 0 && e == 0)
            .count()
    }

    /// Unallocated GPUs, thousandths.
    fn free_milli(&self) -> u64 {
        self.used_milli
            .iter()
            .map(|&m| u64::from(MILLI_PER_GPU.saturating_sub(m)))
            .sum()
    }

    /// As [`State::free_share`].
    fn free_share(&self, cpu_only: bool) -> (f64, f64) {
        if cpu_only {
            let cpu = self.free.as_ref().and_then(|f| f.get("cpu"));
            return (cpu.map_or(0.0, |&c| c as f64), 1.0);
        }
        (
            self.free_milli() as f64,
            (self.used_milli.len().max(1) * MILLI_PER_GPU as usize) as f64,
        )
    }

    /// Pods of `gpu` (and `requests`) that fit.
    fn capacity(&self, gpu: GpuRequest, requests: &ResourceList, limit_resources: bool) -> u64 {
        let res = match &self.free {
            Some(f) if limit_resources => count_in(f, requests),
            _ => u64::MAX,
        };
        let gpu_pods = match gpu {
            GpuRequest::Whole(0) => u64::MAX,
            GpuRequest::Whole(g) => (self.idle() / g as usize) as u64,
            GpuRequest::Fraction { .. } | GpuRequest::MemoryMib { .. } => gpu.shared_pods(
                self.used_milli
                    .iter()
                    .copied()
                    .zip(self.used_memory.iter().copied()),
                self.total_memory,
            ),
        };
        gpu_pods.min(res)
    }

    /// Take one pod's GPUs and resources; `None` if it does not fit.
    fn take(
        &mut self,
        gpu: GpuRequest,
        requests: &ResourceList,
        strategy: PlacementStrategy,
    ) -> Option<PodGpus> {
        let (milli, mem) = gpu.per_gpu_share(self.total_memory);
        let ids = match gpu {
            GpuRequest::Whole(0) => Vec::new(),
            GpuRequest::Whole(g) => {
                let ids: Vec<u32> = (0..self.used_milli.len())
                    .filter(|&i| self.used_milli[i] == 0 && self.used_memory[i] == 0)
                    .take(g as usize)
                    .map(|i| i as u32)
                    .collect();
                if ids.len() < g as usize {
                    return None;
                }
                ids
            }
            GpuRequest::Fraction { .. } | GpuRequest::MemoryMib { .. } => {
                let used: Vec<(u32, u32)> = self
                    .used_milli
                    .iter()
                    .copied()
                    .zip(self.used_memory.iter().copied())
                    .collect();
                let order = match strategy {
                    PlacementStrategy::Binpack => SharedOrder::MostUsed,
                    PlacementStrategy::Spread => SharedOrder::LeastUsed,
                };
                gpu.pick_shared(&used, self.total_memory, order)?
            }
        };
        for &g in &ids {
            self.used_milli[g as usize] += milli;
            self.used_memory[g as usize] += mem;
        }
        if let Some(f) = self.free.as_mut() {
            subtract(f, requests, 1);
        }
        Some((ids, milli, mem))
    }
}

/// The pod set's total request per resource, in KAI's order (GPU, then the non-GPU requests).
fn total_request(set: &PodSet, requests: &ResourceList, gpu_memory_mib: u32) -> Vec<f64> {
    let n = f64::from(set.count);
    let mut v = vec![n * set.gpu.gpus(gpu_memory_mib)];
    v.extend(requests.values().map(|&a| n * a as f64));
    v
}

fn place_set(
    cluster: &Cluster,
    state: &mut State,
    job: &Job,
    set_index: usize,
    in_scope: &[bool],
    input: &PlaceInput,
    inherited_scores: Option<&[i64]>,
) -> Result<Vec<KaiPod>, NoRoom> {
    let set = &job.pod_sets[set_index];
    let extras = input.extras(set_index);
    let empty = ResourceList::new();
    let requests = extras.map_or(&empty, |e| &e.requests);
    let limit_resources = !state.free.is_empty();
    let not_placed = |reason: String| NoRoom {
        pod_set: set.name.clone(),
        reason,
    };
    let strategy = if set.gpu == GpuRequest::Whole(0) {
        input.options.strategy.cpu
    } else {
        input.options.strategy.gpu
    };
    if inherited_scores.is_none() {
        if let Some(answer) = from_counts(state, job, set_index, in_scope, input, strategy) {
            return answer;
        }
    }
    // Per-node capacity as KAI's domain filter counts it (every node in scope), and whether the
    // node may take the pods at all.
    let capacity: Vec<u64> = (0..cluster.nodes.len())
        .map(|i| {
            if !in_scope[i] {
                return 0;
            }
            state
                .capacity(NodeId::from_index(i), set.gpu, requests, limit_resources)
                .min(u64::from(u32::MAX))
        })
        .collect();
    let ok: Vec<bool> = (0..cluster.nodes.len())
        .map(|i| in_scope[i] && eligible(cluster, NodeId::from_index(i), job, extras))
        .collect();
    let gpu_strategy = input.options.strategy.shared_gpus;
    let t = &set.topology;
    let constrained = t.required.is_some() || t.preferred.is_some();
    let sorted = if constrained {
        sorted_levels(
            cluster,
            state,
            &total_request(set, requests, typical_gpu_memory(cluster)),
            requests,
        )
    } else {
        Vec::new()
    };
    // Topology scores of nodes: the pod set's own preferred level, else its nearest ancestor's.
    let topology_score = match t.preferred {
        Some(p) => topology_scores(cluster, &sorted[p], in_scope),
        None => inherited_scores.map_or_else(|| vec![0; cluster.nodes.len()], <[i64]>::to_vec),
    };
    let room = |nodes: &[NodeId], count: u64| {
        nodes
            .iter()
            .map(|n| capacity[n.index()])
            .fold(0u64, u64::saturating_add)
            >= count
    };
    let all_nodes: Vec<NodeId> = (0..cluster.nodes.len()).map(NodeId::from_index).collect();
    let attempt = |state: &mut State, count: u64| -> Option<Vec<KaiPod>> {
        let mut candidates: Vec<&[NodeId]> = Vec::new();
        if constrained {
            let low = t.preferred.or(t.required).unwrap_or(0);
            let high = t.required;
            for level in (high.unwrap_or(0)..=low).rev() {
                for &d in &sorted[level] {
                    let nodes = &cluster.domain(d).nodes;
                    if room(nodes, count) {
                        candidates.push(nodes);
                    }
                }
            }
            if high.is_none() && room(&all_nodes, count) {
                candidates.push(&all_nodes);
            }
        } else {
            candidates.push(&all_nodes);
        }
        candidates.into_iter().find_map(|nodes| {
            fill(
                state,
                nodes,
                &ok,
                &topology_score,
                set,
                set_index,
                requests,
                limit_resources,
                (strategy, gpu_strategy),
                count,
            )
        })
    };
    let full = u64::from(set.count);
    if let Some(p) = attempt(state, full) {
        return Ok(p);
    }
    if set.min_count < set.count {
        let g = u64::from(set.outer_granule().max(1));
        let mut count = full / g * g;
        while count >= u64::from(set.min_count) && count > 0 {
            if let Some(p) = attempt(state, count) {
                return Ok(p);
            }
            count -= g;
        }
    }
    let total: u64 = (0..cluster.nodes.len())
        .filter(|&i| ok[i])
        .map(|i| capacity[i])
        .fold(0, u64::saturating_add);
    Err(not_placed(match t.required {
        Some(r) => format!(
            "{} pods do not fit in one `{}` domain under KAI's rules (the schedulable nodes have room for {total})",
            set.count, cluster.levels[r].label
        ),
        None => format!(
            "{} pods do not fit: the schedulable nodes have room for {total}",
            set.count
        ),
    }))
}

/// The pods a failed attempt of `count` could not place, for the reason: the unconstrained case.
fn no_room(set: &PodSet, total: u64) -> NoRoom {
    NoRoom {
        pod_set: set.name.clone(),
        reason: format!(
            "{} pods do not fit: the schedulable nodes have room for {total}",
            set.count
        ),
    }
}

/// [`place_set`] from the occupancy's kept counts, for an unconstrained pod set of whole GPUs
/// without extras, resources or scope, on an occupancy that tracks node state and that this
/// placement has not touched yet: the schedulable nodes are then exactly the eligible ones, a
/// node takes `untouched GPUs / g` pods, so an attempt of `c` pods fits exactly when the
/// cluster's whole-GPU room is at least `c` (refused in O(GPUs per node)), and binpack's order
/// (least free share first, then index) is the occupancy's `nodes_by_free_milli`
/// (placed in O(pods + nodes used · log nodes)). `None`: not that case (or spread, which fits:
/// the walk over the nodes decides).
fn from_counts(
    state: &mut State,
    job: &Job,
    set_index: usize,
    in_scope: &[bool],
    input: &PlaceInput,
    strategy: PlacementStrategy,
) -> Option<Result<Vec<KaiPod>, NoRoom>> {
    let occ = state.occupancy;
    let set = &job.pod_sets[set_index];
    let GpuRequest::Whole(g) = set.gpu else {
        return None;
    };
    if g == 0
        || !occ.tracks_nodes()
        || occ.node_count() != in_scope.len()
        || !state.free.is_empty()
        || !state.touched.is_empty()
        || input.extras(set_index).is_some()
        || (!job.tolerations.is_empty() && occ.tainted_nodes() > 0)
        || set.topology.required.is_some()
        || set.topology.preferred.is_some()
        || in_scope.contains(&false)
    {
        return None;
    }
    let total = occ.whole_gpu_pods(None, g);
    // The counts place_set tries, largest first: the whole set, then down from a multiple of
    // the granule to the minimum; the first the room holds.
    let full = u64::from(set.count);
    let count = if total >= full {
        full
    } else if set.min_count < set.count {
        let granule = u64::from(set.outer_granule().max(1));
        let top = full / granule * granule;
        let steps = top.saturating_sub(total).div_ceil(granule);
        let c = top.saturating_sub(steps * granule);
        if steps * granule > top || c < u64::from(set.min_count) || c == 0 {
            return Some(Err(no_room(set, total)));
        }
        c
    } else {
        return Some(Err(no_room(set, total)));
    };
    if strategy != PlacementStrategy::Binpack {
        return None;
    }
    let mut out = Vec::with_capacity(count as usize);
    let mut used: Vec<(NodeId, NodeUse)> = Vec::new();
    for n in occ.nodes_by_free_milli(g.saturating_mul(MILLI_PER_GPU)) {
        if occ.free_whole(n) < g {
            continue;
        }
        let mut u = state.node(n);
        while (out.len() as u64) < count {
            let Some((gpu_ids, milli, memory_mib)) = u.take(
                set.gpu,
                &ResourceList::new(),
                input.options.strategy.shared_gpus,
            ) else {
                break;
            };
            out.push(KaiPod {
                pod_set: set_index,
                node: n,
                gpu_ids,
                milli,
                memory_mib,
            });
        }
        used.push((n, u));
        if out.len() as u64 == count {
            break;
        }
    }
    state.touched.extend(used);
    Some(Ok(out))
}

/// Domains per level in the order of KAI's sorted tree (children by their ratio of the
/// request to their free resources, highest first, then by value).
fn sorted_levels(
    cluster: &Cluster,
    state: &State,
    request: &[f64],
    requests: &ResourceList,
) -> Vec<Vec<DomainId>> {
    // Free whole GPUs and free non-GPU resources per domain.
    // One row of `1 + names` per domain, one buffer for a node's row.
    let names: Vec<&String> = requests.keys().collect();
    let width = 1 + names.len();
    let mut free = vec![0.0f64; width * cluster.domains.len()];
    let mut f = vec![0.0f64; width];
    for (i, node) in cluster.nodes.iter().enumerate() {
        let n = NodeId::from_index(i);
        f[0] = state.idle_gpus(n) as f64;
        if !names.is_empty() {
            let node_free = state
                .touched
                .get(&n)
                .and_then(|u| u.free.as_ref())
                .or_else(|| state.free.get(i));
            for (k, name) in names.iter().enumerate() {
                f[1 + k] = node_free
                    .and_then(|r| r.get(*name))
                    .map_or(0.0, |&v| v as f64);
            }
        }
        for d in &node.domains {
            let row = &mut free[d.index() * width..(d.index() + 1) * width];
            for (r, v) in row.iter_mut().zip(&f) {
                *r += v;
            }
        }
    }
    let limit_resources = !state.free.is_empty();
    let ratio = |d: DomainId| -> f64 {
        let mut r = 0.0f64;
        for (k, &want) in request.iter().enumerate() {
            if want <= 0.0 || (k > 0 && !limit_resources) {
                continue;
            }
            let have = free[d.index() * width + k];
            r = r.max(if have <= 0.0 {
                MISSING_RATIO
            } else {
                want / have
            });
        }
        r
    };
    let order = |ds: &[DomainId]| {
        let mut v: Vec<(f64, DomainId)> = ds.iter().map(|&d| (ratio(d), d)).collect();
        v.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| cluster.domain(a.1).value.cmp(&cluster.domain(b.1).value))
        });
        v.into_iter().map(|(_, d)| d).collect::<Vec<_>>()
    };
    let mut out: Vec<Vec<DomainId>> = vec![Vec::new(); cluster.levels.len()];
    let top: Vec<DomainId> = cluster
        .levels
        .first()
        .map(|l| l.domains.clone())
        .unwrap_or_default();
    let mut stack: Vec<DomainId> = order(&top);
    stack.reverse();
    while let Some(d) = stack.pop() {
        out[cluster.domain(d).level].push(d);
        let mut kids = order(&cluster.domain(d).children);
        kids.reverse();
        stack.extend(kids);
    }
    out
}

/// Place `count` pods on `nodes` one at a time (see the module notes); `None` if they do not
/// all fit. Commits nothing to `state` unless they do.
#[allow(clippy::too_many_arguments)]
fn fill(
    state: &mut State,
    nodes: &[NodeId],
    ok: &[bool],
    topology_score: &[i64],
    set: &PodSet,
    set_index: usize,
    requests: &ResourceList,
    limit_resources: bool,
    (strategy, gpu_strategy): (PlacementStrategy, PlacementStrategy),
    count: u64,
) -> Option<Vec<KaiPod>> {
    // The nodes with room, each with its score (topology, then strategy); only the nodes pods
    // go to are copied (`local`), and only their scores change.
    let cpu_only = set.gpu == GpuRequest::Whole(0);
    let key = |n: NodeId, (free, total): (f64, f64)| -> (i64, f64) {
        let s = match strategy {
            PlacementStrategy::Binpack => -free,
            PlacementStrategy::Spread => free / total,
        };
        (topology_score[n.index()], s)
    };
    let mut room = 0u64;
    let mut open: Vec<(NodeId, (i64, f64))> = nodes
        .iter()
        .copied()
        .filter(|n| ok[n.index()])
        .filter(|&n| {
            let c = state.capacity(n, set.gpu, requests, limit_resources);
            room = room.saturating_add(c);
            c > 0
        })
        .map(|n| (n, key(n, state.free_share(n, cpu_only))))
        .collect();
    // Whole GPUs: every pod takes exactly one of a node's capacity, so the pods fit exactly when
    // the room holds them (a shared pod's capacity is an estimate: the walk decides).
    if matches!(set.gpu, GpuRequest::Whole(_)) && room < count {
        return None;
    }
    let mut local: Vec<(NodeId, NodeUse)> = Vec::new();
    let mut out = Vec::with_capacity(count as usize);
    while (out.len() as u64) < count {
        // The first of the highest keys, as KAI's node order takes it.
        let mut best: Option<(usize, (i64, f64))> = None;
        for (i, &(_, k)) in open.iter().enumerate() {
            let better = match &best {
                None => true,
                Some((_, b)) => k.0 > b.0 || (k.0 == b.0 && k.1 > b.1),
            };
            if better {
                best = Some((i, k));
            }
        }
        let (i, _) = best?;
        let n = open[i].0;
        let slot = match local.iter().position(|(m, _)| *m == n) {
            Some(j) => j,
            None => {
                local.push((n, state.node(n)));
                local.len() - 1
            }
        };
        let u = &mut local[slot].1;
        let take = match strategy {
            PlacementStrategy::Binpack => count - out.len() as u64,
            PlacementStrategy::Spread => 1,
        };
        for _ in 0..take {
            let Some((gpu_ids, milli, memory_mib)) = u.take(set.gpu, requests, gpu_strategy) else {
                break;
            };
            out.push(KaiPod {
                pod_set: set_index,
                node: n,
                gpu_ids,
                milli,
                memory_mib,
            });
            if limit_resources && u.free.as_ref().is_some_and(|f| count_in(f, requests) == 0) {
                break;
            }
        }
        if u.capacity(set.gpu, requests, limit_resources) == 0 {
            open.remove(i);
        } else {
            open[i].1 = key(n, u.free_share(cpu_only));
        }
    }
    state.touched.extend(local);
    Some(out)
}
