//! Topology-aware gang placement with Kueue TAS BestFit semantics.
//!
//! Design note (2026-11-29). [`place`] is the single place a placement is decided. For one pod
//! set it (1) computes how many pods fit on every schedulable node, (2) sums them up the domain
//! tree in "units" (slices, when the request has slices, so a domain's units are the whole slices
//! it can hold), (3) picks the fit level and domain, and (4) descends, splitting each chosen
//! domain's pods among its children. Cost: O(nodes + domains · log) per pod set; nothing is
//! quadratic in nodes.
//!
//! - `required: L`: the tightest level-L domain that fits (fewest units, then fewest free pods;
//!   among equals the one whose pods can stay lowest in the tree, i.e. cross fewer tiers; then
//!   domain order), or the job waits.
//! - `preferred: P` (optionally bounded by `required: R` above it): the tightest fitting domain
//!   at P, else at the level above, up to R (or the top); then, without R, spread over the
//!   top-level domains.
//! - Neither: spread from the top, tightest (least free) domains first.
//! - Spreading and descending (BestFit): candidates sorted by most units, then fewest free pods,
//!   then domain order; taken greedily; the last piece goes to the tightest candidate that still
//!   fits. Leaf capacities 3, 3, 2, 1 and 7 pods give 3 + 3 + 1.
//! - Ranks: pods are numbered in domain order (lexicographic by the node's domains, top first),
//!   so consecutive ranks fill one lowest-level domain before the next.
//! - GPUs: whole-GPU pods take untouched GPUs, lowest index first; fractional pods go to the most
//!   used GPU that still has room (share and memory), so shared GPUs are packed.

use topology::{Cluster, DomainId, NodeId};

use crate::error::StateError;
use crate::job::{GpuRequest, Job, PodSet, MILLI_PER_GPU};
use crate::occupancy::{Occupancy, PodAllocation, RunningJob};

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
    place_scoped(cluster, occupancy, job, None)
}

/// Place a job with all its pods inside one domain (used to test "free this domain").
pub fn place_within(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    domain: DomainId,
) -> Result<Placement, NotPlaced> {
    place_scoped(cluster, occupancy, job, Some(domain))
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
            .map(|&n| u64::from(node_capacity(occupancy, n, set.gpu)))
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

fn place_scoped(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    scope: Option<DomainId>,
) -> Result<Placement, NotPlaced> {
    let view = View::new(cluster);
    let tolerated =
        |id: NodeId| cluster.is_schedulable(id, |t| job.tolerations.iter().any(|x| x.tolerates(t)));
    let schedulable: Vec<bool> = match scope {
        None => (0..cluster.nodes.len())
            .map(|i| tolerated(NodeId::from_index(i)))
            .collect(),
        Some(d) => {
            let mut v = vec![false; cluster.nodes.len()];
            for &n in &cluster.domain(d).nodes {
                v[n.index()] = tolerated(n);
            }
            v
        }
    };
    let mut pods: Vec<PlacedPod> = Vec::new();
    if job.pod_sets.len() == 1 {
        pods = place_set(&view, occupancy, &schedulable, &job.pod_sets[0], 0, 0)?;
    } else {
        let mut scratch = occupancy.clone();
        for (i, set) in job.pod_sets.iter().enumerate() {
            let placed = place_set(&view, &scratch, &schedulable, set, i, pods.len() as u32)?;
            let tentative = RunningJob {
                name: format!("\u{0}{}#{i}", job.name),
                queue: String::new(),
                priority: 0,
                preemptible: true,
            };
            let allocs = Placement {
                pods: placed.clone(),
                highest_tier: None,
                worst_latency_ns: 0,
            }
            .allocations();
            scratch
                .allocate(tentative, allocs)
                .expect("placement respects GPU capacity");
            pods.extend(placed);
        }
    }
    let nodes: Vec<NodeId> = pods.iter().map(|p| p.node).collect();
    let tier = highest_tier(cluster, &nodes);
    Ok(Placement {
        pods,
        highest_tier: tier,
        worst_latency_ns: tier.map_or(0, |t| cluster.tiers[usize::from(t)].latency_ns),
    })
}

/// The cluster's levels as the placer walks them: non-host levels top first, then nodes.
struct View<'a> {
    cluster: &'a Cluster,
    /// Cluster level index of each placement level (non-host levels, top first).
    levels: Vec<usize>,
}

impl<'a> View<'a> {
    fn new(cluster: &'a Cluster) -> Self {
        let levels = (0..cluster.levels.len())
            .filter(|&l| Some(l) != cluster.host_level)
            .collect();
        Self { cluster, levels }
    }

    /// Placement level of a cluster level (the host level is the node level, `levels.len()`).
    fn pos(&self, level: usize) -> usize {
        self.levels
            .iter()
            .position(|&l| l == level)
            .unwrap_or(self.levels.len())
    }

    fn node_level(&self) -> usize {
        self.levels.len()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Entry {
    Root,
    Dom(DomainId),
    Node(NodeId),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    BestFit,
    Tightest,
}

struct Cand {
    entry: Entry,
    units: u64,
    pods: u64,
}

/// Capacities of one pod set on every node and domain.
struct Caps {
    node_pods: Vec<u32>,
    dom_pods: Vec<u64>,
    dom_units: Vec<u64>,
    root_pods: u64,
    root_units: u64,
    /// Pods per unit at each placement level (last = node level).
    unit: Vec<u64>,
}

impl Caps {
    fn units(&self, e: Entry) -> u64 {
        match e {
            Entry::Root => self.root_units,
            Entry::Dom(d) => self.dom_units[d.index()],
            Entry::Node(n) => u64::from(self.node_pods[n.index()]) / self.unit[self.unit.len() - 1],
        }
    }

    fn pods(&self, e: Entry) -> u64 {
        match e {
            Entry::Root => self.root_pods,
            Entry::Dom(d) => self.dom_pods[d.index()],
            Entry::Node(n) => u64::from(self.node_pods[n.index()]),
        }
    }
}

/// The share (thousandths) and memory (MiB) one pod takes of each GPU it uses.
fn share(req: GpuRequest, gpu_memory_mib: u32) -> (u32, u32) {
    let mem = u64::from(gpu_memory_mib.max(1));
    match req {
        GpuRequest::Whole(_) => (MILLI_PER_GPU, gpu_memory_mib),
        GpuRequest::Fraction(m) => (m, (u64::from(m) * mem).div_ceil(1000) as u32),
        GpuRequest::MemoryMib(m) => (((u64::from(m) * 1000).div_ceil(mem) as u32).max(1), m),
    }
}

fn node_capacity(occ: &Occupancy, node: NodeId, req: GpuRequest) -> u32 {
    match req {
        GpuRequest::Whole(g) => occ.free_whole(node) / g.max(1),
        GpuRequest::Fraction(_) | GpuRequest::MemoryMib(_) => {
            let total_mem = occ.gpu_memory_mib(node);
            let (milli, mem) = share(req, total_mem);
            if milli > MILLI_PER_GPU || mem > total_mem || mem == 0 {
                return 0;
            }
            let (used_milli, used_mem) = occ.node_gpus(node);
            used_milli
                .iter()
                .zip(used_mem)
                .map(|(&um, &ume)| {
                    ((MILLI_PER_GPU - u32::from(um)) / milli).min((total_mem - ume) / mem)
                })
                .sum()
        }
    }
}

fn capacities(view: &View, occ: &Occupancy, schedulable: &[bool], set: &PodSet) -> Caps {
    let cluster = view.cluster;
    let n_lv = view.levels.len();
    let mut slice_at: Vec<u64> = vec![0; n_lv + 1];
    for s in &set.topology.slices {
        let p = view.pos(s.level);
        slice_at[p] = slice_at[p].max(u64::from(s.size));
    }
    let mut unit = vec![1u64; n_lv + 1];
    unit[n_lv] = slice_at[n_lv].max(1);
    for a in (0..n_lv).rev() {
        unit[a] = slice_at[a].max(unit[a + 1]);
    }
    let node_pods: Vec<u32> = (0..cluster.nodes.len())
        .map(|i| {
            if schedulable[i] {
                node_capacity(occ, NodeId::from_index(i), set.gpu)
            } else {
                0
            }
        })
        .collect();
    let mut dom_pods = vec![0u64; cluster.domains.len()];
    let mut dom_units = vec![0u64; cluster.domains.len()];
    for a in (0..n_lv).rev() {
        let ratio = unit[a] / unit[a + 1];
        for &d in &cluster.levels[view.levels[a]].domains {
            let dom = cluster.domain(d);
            let (pods, child_units) = if a + 1 == n_lv {
                dom.nodes.iter().fold((0u64, 0u64), |(p, u), n| {
                    let np = u64::from(node_pods[n.index()]);
                    (p + np, u + np / unit[n_lv])
                })
            } else {
                dom.children.iter().fold((0u64, 0u64), |(p, u), c| {
                    (p + dom_pods[c.index()], u + dom_units[c.index()])
                })
            };
            dom_pods[d.index()] = pods;
            dom_units[d.index()] = child_units / ratio;
        }
    }
    let (root_pods, root_units) = if n_lv > 0 {
        cluster.levels[view.levels[0]]
            .domains
            .iter()
            .fold((0, 0), |(p, u), d| {
                (p + dom_pods[d.index()], u + dom_units[d.index()])
            })
    } else {
        node_pods.iter().fold((0, 0), |(p, u), &np| {
            (p + u64::from(np), u + u64::from(np) / unit[0])
        })
    };
    Caps {
        node_pods,
        dom_pods,
        dom_units,
        root_pods,
        root_units,
        unit,
    }
}

/// Entries at a placement level.
fn level_entries<'v>(view: &'v View, a: usize) -> Box<dyn Iterator<Item = Entry> + 'v> {
    if a == view.node_level() {
        Box::new((0..view.cluster.nodes.len()).map(|i| Entry::Node(NodeId::from_index(i))))
    } else {
        Box::new(
            view.cluster.levels[view.levels[a]]
                .domains
                .iter()
                .map(|&d| Entry::Dom(d)),
        )
    }
}

/// Children of an entry at placement level `a` (`None` = root).
fn children(view: &View, e: Entry, a: Option<usize>) -> Vec<Entry> {
    match e {
        Entry::Root => level_entries(view, 0).collect(),
        Entry::Dom(d) => {
            let dom = view.cluster.domain(d);
            if a.map(|a| a + 1) == Some(view.node_level()) {
                dom.nodes.iter().map(|&n| Entry::Node(n)).collect()
            } else {
                dom.children.iter().map(|&c| Entry::Dom(c)).collect()
            }
        }
        Entry::Node(_) => Vec::new(),
    }
}

/// Take `need` units from candidates: greedily in sorted order, the last piece from the
/// tightest candidate that still fits. `None` if they hold fewer than `need`.
fn take(
    view: &View,
    caps: &Caps,
    level: usize,
    cands: &mut [Cand],
    need: u64,
    mode: Mode,
) -> Option<Vec<(Entry, u64)>> {
    match mode {
        Mode::BestFit => cands.sort_by(|x, y| {
            y.units
                .cmp(&x.units)
                .then(x.pods.cmp(&y.pods))
                .then(x.entry.cmp(&y.entry))
        }),
        Mode::Tightest => cands.sort_by(|x, y| x.pods.cmp(&y.pods).then(x.entry.cmp(&y.entry))),
    }
    let mut out = Vec::new();
    let mut rem = need;
    for i in 0..cands.len() {
        if rem == 0 {
            break;
        }
        if cands[i].units >= rem {
            let fitting = cands[i..]
                .iter()
                .filter(|c| c.units >= rem)
                .map(|c| c.entry);
            let best = tightest(view, caps, level, fitting, rem).expect("cands[i] fits");
            out.push((best, rem));
            rem = 0;
            break;
        }
        if cands[i].units > 0 {
            out.push((cands[i].entry, cands[i].units));
            rem -= cands[i].units;
        }
    }
    (rem == 0).then_some(out)
}

/// The tightest of `fitting` (entries at placement level `level` that hold `units` units):
/// fewest units, then fewest free pods; among equals, the one whose pods can stay lowest in the
/// tree (fewer tiers crossed), then domain order.
fn tightest(
    view: &View,
    caps: &Caps,
    level: usize,
    fitting: impl Iterator<Item = Entry>,
    units: u64,
) -> Option<Entry> {
    let mut ties: Vec<Entry> = Vec::new();
    let mut key = (u64::MAX, u64::MAX);
    for e in fitting {
        let k = (caps.units(e), caps.pods(e));
        if k < key {
            key = k;
            ties.clear();
        }
        if k == key {
            ties.push(e);
        }
    }
    if ties.len() <= 1 {
        return ties.first().copied();
    }
    ties.into_iter()
        .map(|e| (std::cmp::Reverse(fit_depth(view, caps, e, level, units)), e))
        .min()
        .map(|(_, e)| e)
}

/// How many levels below `e` (at placement level `level`, holding `units` of its units) a
/// single child still holds all the pods: more means fewer tiers crossed.
fn fit_depth(view: &View, caps: &Caps, e: Entry, level: usize, units: u64) -> usize {
    let pods = units * caps.unit[level];
    let mut depth = 0;
    let (mut cur, mut level) = (e, level);
    while level < view.node_level() {
        let child_level = level + 1;
        let need = pods / caps.unit[child_level];
        let next = children(view, cur, Some(level))
            .into_iter()
            .filter(|&c| caps.units(c) >= need)
            .min_by_key(|&c| (caps.units(c), caps.pods(c), c));
        match next {
            Some(c) => {
                depth += 1;
                cur = c;
                level = child_level;
            }
            None => break,
        }
    }
    depth
}

/// Split `units` of entry `e` (at placement level `a`, `None` = root) down to nodes.
fn descend(
    view: &View,
    caps: &Caps,
    e: Entry,
    a: Option<usize>,
    units: u64,
    mode: Mode,
    out: &mut Vec<(NodeId, u64)>,
) {
    let node_level = view.node_level();
    if let Entry::Node(n) = e {
        out.push((n, units * caps.unit[node_level]));
        return;
    }
    let unit_here = match a {
        Some(a) => caps.unit[a],
        None => caps.unit[0],
    };
    let child_level = a.map_or(0, |a| a + 1);
    let need = units * unit_here / caps.unit[child_level];
    let mut cands: Vec<Cand> = children(view, e, a)
        .into_iter()
        .map(|c| Cand {
            entry: c,
            units: caps.units(c),
            pods: caps.pods(c),
        })
        .filter(|c| c.units > 0)
        .collect();
    let picked = take(view, caps, child_level, &mut cands, need, mode)
        .expect("a domain's units fit in its children");
    for (c, u) in picked {
        descend(view, caps, c, Some(child_level), u, mode, out);
    }
}

/// Spread `count` pods from the top of the tree, or say there is no room.
fn from_root(
    view: &View,
    caps: &Caps,
    count: u64,
    mode: Mode,
) -> Result<Vec<(NodeId, u64)>, String> {
    if caps.root_units * caps.unit[0] < count {
        return Err(no_room(caps, count));
    }
    let mut out = Vec::new();
    descend(
        view,
        caps,
        Entry::Root,
        None,
        count / caps.unit[0],
        mode,
        &mut out,
    );
    Ok(out)
}

/// Place `count` pods of a set, or explain why not.
fn try_count(
    view: &View,
    caps: &Caps,
    set: &PodSet,
    count: u64,
) -> Result<Vec<(NodeId, u64)>, String> {
    let t = &set.topology;
    let mut out = Vec::new();
    let pref = t.preferred.or(t.required).map(|l| view.pos(l));
    let Some(pref) = pref else {
        return from_root(view, caps, count, Mode::Tightest);
    };
    let req = t.required.map(|l| view.pos(l));
    for a in (req.unwrap_or(0)..=pref).rev() {
        let need = count / caps.unit[a];
        let fitting = level_entries(view, a).filter(|&e| caps.units(e) >= need);
        if let Some(e) = tightest(view, caps, a, fitting, need) {
            descend(view, caps, e, Some(a), need, Mode::BestFit, &mut out);
            return Ok(out);
        }
    }
    if let Some(r) = req {
        let roomiest = level_entries(view, r)
            .map(|e| caps.units(e) * caps.unit[r])
            .max()
            .unwrap_or(0);
        let label = &view.cluster.levels[t.required.unwrap_or_default()].label;
        return Err(format!(
            "{count} pods do not fit in one `{label}` domain (the roomiest has room for {roomiest}{})",
            slices_note(caps.unit[r])
        ));
    }
    from_root(view, caps, count, Mode::BestFit)
}

fn slices_note(unit: u64) -> String {
    if unit > 1 {
        format!(" in whole slices of {unit}")
    } else {
        String::new()
    }
}

fn no_room(caps: &Caps, count: u64) -> String {
    format!(
        "{count} pods do not fit: the schedulable nodes have room for {}{}",
        caps.root_units * caps.unit[0],
        slices_note(caps.unit[0])
    )
}

fn place_set(
    view: &View,
    occ: &Occupancy,
    schedulable: &[bool],
    set: &PodSet,
    set_index: usize,
    first_rank: u32,
) -> Result<Vec<PlacedPod>, NotPlaced> {
    let caps = capacities(view, occ, schedulable, set);
    let not_placed = |reason: String| NotPlaced {
        pod_set: set.name.clone(),
        reason,
    };
    let mut nodes = match try_count(view, &caps, set, u64::from(set.count)) {
        Ok(n) => n,
        Err(reason) if set.min_count < set.count => {
            // Gang minimum: the largest multiple of the outer slice size in [min, count) that fits.
            let g = u64::from(set.outer_granule());
            let (mut lo, mut hi) = (u64::from(set.min_count) / g, u64::from(set.count) / g);
            let mut best = try_count(view, &caps, set, lo * g).map_err(|_| not_placed(reason))?;
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                match try_count(view, &caps, set, mid * g) {
                    Ok(n) => {
                        lo = mid;
                        best = n;
                    }
                    Err(_) => hi = mid,
                }
            }
            best
        }
        Err(reason) => return Err(not_placed(reason)),
    };
    let cluster = view.cluster;
    nodes.sort_by(|(x, _), (y, _)| {
        cluster
            .node(*x)
            .domains
            .cmp(&cluster.node(*y).domains)
            .then(x.cmp(y))
    });
    let mut out = Vec::new();
    let mut rank = first_rank;
    for (node, count) in nodes {
        for (gpu_ids, milli, memory_mib) in assign_gpus(occ, node, set.gpu, count) {
            out.push(PlacedPod {
                rank,
                pod_set: set_index,
                node,
                gpu_ids,
                milli,
                memory_mib,
            });
            rank += 1;
        }
    }
    Ok(out)
}

/// GPU ids, share and memory for `count` pods on a node that has room for them.
fn assign_gpus(
    occ: &Occupancy,
    node: NodeId,
    req: GpuRequest,
    count: u64,
) -> Vec<(Vec<u32>, u32, u32)> {
    let total_mem = occ.gpu_memory_mib(node);
    let (milli, mem) = share(req, total_mem);
    let (used_milli, used_mem) = occ.node_gpus(node);
    let mut out = Vec::with_capacity(count as usize);
    match req {
        GpuRequest::Whole(g) => {
            let mut free = (0..used_milli.len() as u32)
                .filter(|&i| used_milli[i as usize] == 0 && used_mem[i as usize] == 0);
            for _ in 0..count {
                let ids: Vec<u32> = free.by_ref().take(g as usize).collect();
                out.push((ids, milli, mem));
            }
        }
        GpuRequest::Fraction(_) | GpuRequest::MemoryMib(_) => {
            let mut um: Vec<u32> = used_milli.iter().map(|&x| u32::from(x)).collect();
            let mut ume: Vec<u32> = used_mem.to_vec();
            for _ in 0..count {
                let best = (0..um.len())
                    .filter(|&i| um[i] + milli <= MILLI_PER_GPU && ume[i] + mem <= total_mem)
                    .max_by(|&x, &y| um[x].cmp(&um[y]).then(ume[x].cmp(&ume[y])).then(y.cmp(&x)))
                    .expect("node capacity counted this pod");
                um[best] += milli;
                ume[best] += mem;
                out.push((vec![best as u32], milli, mem));
            }
        }
    }
    out
}
