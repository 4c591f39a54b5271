//! Cluster occupancy: per GPU the used share (thousandths) and memory, per node the count of
//! untouched GPUs, and which running job holds what; and, kept in step, per domain how many
//! schedulable nodes have each count of untouched GPUs, and the schedulable nodes by free share
//! (KAI's binpack order). Allocate and release cost O(pods × (levels + log nodes)).

use std::collections::{BTreeMap, BTreeSet};

use topology::{Cluster, DomainId, NodeId};

use crate::error::StateError;
use crate::job::MILLI_PER_GPU;

/// What one pod holds on one node: the same share of each listed GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodAllocation {
    /// The node.
    pub node: NodeId,
    /// GPU indices on the node.
    pub gpu_ids: Vec<u32>,
    /// Share of each GPU, thousandths (1000 = whole GPU).
    pub milli: u32,
    /// Memory of each GPU, MiB.
    pub memory_mib: u32,
}

/// A running job's identity for preemption and reclaim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningJob {
    /// Unique name.
    pub name: String,
    /// Queue.
    pub queue: String,
    /// Priority.
    pub priority: i32,
    /// May be preempted or reclaimed.
    pub preemptible: bool,
}

/// A running job and its pods, in rank order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// The job.
    pub job: RunningJob,
    /// Its pods.
    pub pods: Vec<PodAllocation>,
}

impl Allocation {
    /// GPUs held, in thousandths.
    pub fn milli_gpus(&self) -> u64 {
        self.pods
            .iter()
            .map(|p| u64::from(p.milli) * p.gpu_ids.len() as u64)
            .sum()
    }
}

/// Which GPUs are used, by how much, and by whom.
#[derive(Clone, Debug)]
pub struct Occupancy {
    /// `gpu_start[n]..gpu_start[n + 1]` are node `n`'s GPUs in the per-GPU vectors.
    gpu_start: Vec<u32>,
    /// Memory of one GPU per node, MiB.
    gpu_memory_mib: Vec<u32>,
    /// Used share per GPU, thousandths.
    used_milli: Vec<u16>,
    /// Used memory per GPU, MiB.
    used_memory: Vec<u32>,
    /// GPUs with nothing on them, per node.
    free_whole: Vec<u32>,
    /// Unallocated share of the node's GPUs, thousandths, per node.
    free_milli: Vec<u32>,
    /// Running jobs by name.
    jobs: BTreeMap<String, Allocation>,
    /// Free capacity by domain.
    free: FreeIndex,
}

/// Untouched GPUs of the schedulable nodes, by domain, kept in step with every allocation.
///
/// "Schedulable" is what a job without tolerations may use (Ready, not cordoned, no
/// `NoSchedule`/`NoExecute` taint), as of [`Occupancy::new`] or the last
/// [`Occupancy::refresh_node`] of the node.
#[derive(Clone, Debug)]
struct FreeIndex {
    /// Longest histogram: the most GPUs on one node, plus one.
    width: usize,
    /// Per node: schedulable.
    schedulable: Vec<bool>,
    /// Per node: left out only for a taint (a tolerating job might use it).
    taint_only: Vec<bool>,
    /// Nodes left out only for a taint.
    tainted: usize,
    /// Per node: its position in label order ([`Cluster::node_order`]).
    node_order: Vec<u32>,
    /// `domain_start[n]..domain_start[n + 1]` index `domains`: node `n`'s non-host domains.
    domain_start: Vec<u32>,
    domains: Vec<DomainId>,
    /// Per non-host domain: its row in `domain_hist` (`u32::MAX` for host-level domains).
    row: Vec<u32>,
    /// Row `r`, column `k` (`r * width + k`): schedulable nodes of the domain with `k`
    /// untouched GPUs.
    domain_hist: Vec<u32>,
    /// The same over the whole cluster.
    cluster_hist: Vec<u32>,
    /// Per count of untouched GPUs: the schedulable nodes with that many, by label order.
    by_free: Vec<BTreeSet<(u32, NodeId)>>,
    /// The schedulable nodes by unallocated share (thousandths), then index.
    by_free_milli: BTreeSet<(u32, NodeId)>,
    /// The owner reports every change of a node's state ([`Occupancy::with_node_tracking`]).
    tracked: bool,
}

impl FreeIndex {
    fn new(cluster: &Cluster, free_whole: &[u32], free_milli: &[u32]) -> Self {
        let width = cluster.nodes.iter().map(|n| n.gpus).max().unwrap_or(0) as usize + 1;
        let mut row = vec![u32::MAX; cluster.domains.len()];
        let mut rows = 0u32;
        for (i, d) in cluster.domains.iter().enumerate() {
            if Some(d.level) != cluster.host_level {
                row[i] = rows;
                rows += 1;
            }
        }
        let mut domain_start = Vec::with_capacity(cluster.nodes.len() + 1);
        let mut domains = Vec::new();
        for n in &cluster.nodes {
            domain_start.push(domains.len() as u32);
            domains.extend(n.domains.iter().filter(|d| row[d.index()] != u32::MAX));
        }
        domain_start.push(domains.len() as u32);
        let mut index = Self {
            width,
            schedulable: vec![false; cluster.nodes.len()],
            taint_only: vec![false; cluster.nodes.len()],
            tainted: 0,
            node_order: (0..cluster.nodes.len())
                .map(|i| cluster.node_order(NodeId::from_index(i)))
                .collect(),
            domain_start,
            domains,
            row,
            domain_hist: vec![0; rows as usize * width],
            cluster_hist: vec![0; width],
            by_free: vec![BTreeSet::new(); width],
            by_free_milli: BTreeSet::new(),
            tracked: false,
        };
        for (i, (&free, &milli)) in free_whole.iter().zip(free_milli).enumerate() {
            index.refresh(cluster, NodeId::from_index(i), free, milli);
        }
        index
    }

    /// Take the node's schedulability from the cluster.
    fn refresh(&mut self, cluster: &Cluster, node: NodeId, free_whole: u32, free_milli: u32) {
        let i = node.index();
        let plain = cluster.is_schedulable(node, |_| false);
        let taint_only = !plain && cluster.is_schedulable(node, |_| true);
        if taint_only != self.taint_only[i] {
            self.taint_only[i] = taint_only;
            if taint_only {
                self.tainted += 1;
            } else {
                self.tainted -= 1;
            }
        }
        if plain != self.schedulable[i] {
            self.count(node, free_whole, plain);
            if plain {
                self.by_free_milli.insert((free_milli, node));
            } else {
                self.by_free_milli.remove(&(free_milli, node));
            }
            self.schedulable[i] = plain;
        }
    }

    /// Add (`add`) or remove a node with `free` untouched GPUs from the counts.
    fn count(&mut self, node: NodeId, free: u32, add: bool) {
        let k = free as usize;
        let a = self.domain_start[node.index()] as usize;
        let b = self.domain_start[node.index() + 1] as usize;
        for &d in &self.domains[a..b] {
            let slot = self.row[d.index()] as usize * self.width + k;
            if add {
                self.domain_hist[slot] += 1;
            } else {
                self.domain_hist[slot] -= 1;
            }
        }
        let key = (self.node_order[node.index()], node);
        if add {
            self.cluster_hist[k] += 1;
            self.by_free[k].insert(key);
        } else {
            self.cluster_hist[k] -= 1;
            self.by_free[k].remove(&key);
        }
    }

    /// A node's untouched GPUs went from `from` to `to`, its free share from `milli.0` to
    /// `milli.1`.
    fn moved(&mut self, node: NodeId, from: u32, to: u32, milli: (u32, u32)) {
        if !self.schedulable[node.index()] {
            return;
        }
        if from != to {
            self.count(node, from, false);
            self.count(node, to, true);
        }
        if milli.0 != milli.1 {
            self.by_free_milli.remove(&(milli.0, node));
            self.by_free_milli.insert((milli.1, node));
        }
    }
}

impl Occupancy {
    /// An empty cluster.
    pub fn new(cluster: &Cluster) -> Self {
        let mut gpu_start = Vec::with_capacity(cluster.nodes.len() + 1);
        let mut total = 0u32;
        for n in &cluster.nodes {
            gpu_start.push(total);
            total += n.gpus;
        }
        gpu_start.push(total);
        let free_whole: Vec<u32> = cluster.nodes.iter().map(|n| n.gpus).collect();
        let free_milli: Vec<u32> = free_whole.iter().map(|&g| g * MILLI_PER_GPU).collect();
        Self {
            free: FreeIndex::new(cluster, &free_whole, &free_milli),
            gpu_start,
            gpu_memory_mib: cluster
                .nodes
                .iter()
                .map(|n| n.gpu_memory_gib.saturating_mul(1024))
                .collect(),
            used_milli: vec![0; total as usize],
            used_memory: vec![0; total as usize],
            free_whole,
            free_milli,
            jobs: BTreeMap::new(),
        }
    }

    /// An empty cluster whose owner reports every change of a node's Ready, cordon or taints
    /// through [`Occupancy::refresh_node`]. Placement then trusts the kept free-capacity counts
    /// instead of reading every node (placement costs O(domains + pods) in the common
    /// case rather than O(nodes)). With [`Occupancy::new`] the counts are kept too but
    /// placement reads the nodes' state from the cluster on every call.
    pub fn with_node_tracking(cluster: &Cluster) -> Self {
        let mut occ = Self::new(cluster);
        occ.free.tracked = true;
        occ
    }

    /// Whether the owner reports node state changes ([`Occupancy::with_node_tracking`]).
    pub fn tracks_nodes(&self) -> bool {
        self.free.tracked
    }

    /// Take a node's Ready, cordon and taints from the cluster into the free-capacity counts.
    /// O(levels + log nodes).
    pub fn refresh_node(&mut self, cluster: &Cluster, node: NodeId) {
        let free = self.free_whole[node.index()];
        self.free
            .refresh(cluster, node, free, self.free_milli[node.index()]);
    }

    /// Whether a job without tolerations may use the node (as of the last
    /// [`Occupancy::refresh_node`]).
    pub fn is_schedulable(&self, node: NodeId) -> bool {
        self.free.schedulable[node.index()]
    }

    /// Nodes a job without tolerations may not use only because of a taint.
    pub fn tainted_nodes(&self) -> usize {
        self.free.tainted
    }

    /// Schedulable nodes by untouched GPUs: entry `k` counts the schedulable nodes of the
    /// domain (the whole cluster for `None`) with exactly `k` untouched GPUs. Empty for a
    /// host-level domain. O(1).
    pub fn free_whole_histogram(&self, domain: Option<DomainId>) -> &[u32] {
        match domain {
            None => &self.free.cluster_hist,
            Some(d) => match self.free.row.get(d.index()) {
                Some(&r) if r != u32::MAX => {
                    let a = r as usize * self.free.width;
                    &self.free.domain_hist[a..a + self.free.width]
                }
                _ => &[],
            },
        }
    }

    /// Pods of `gpus_per_pod` whole GPUs that the schedulable nodes of the domain (the whole
    /// cluster for `None`) can take on untouched GPUs. O(GPUs per node).
    pub fn whole_gpu_pods(&self, domain: Option<DomainId>, gpus_per_pod: u32) -> u64 {
        let g = gpus_per_pod.max(1) as usize;
        self.free_whole_histogram(domain)
            .iter()
            .enumerate()
            .map(|(k, &nodes)| u64::from(nodes) * (k / g) as u64)
            .sum()
    }

    /// The schedulable nodes with exactly `free` untouched GPUs, in label order
    /// ([`Cluster::node_order`]). O(log nodes) to start, O(1) per node.
    pub fn nodes_with_free_whole(&self, free: u32) -> impl Iterator<Item = NodeId> + '_ {
        self.free
            .by_free
            .get(free as usize)
            .into_iter()
            .flat_map(|set| set.iter().map(|&(_, n)| n))
    }

    /// The schedulable nodes whose unallocated share is at least `milli` thousandths, least
    /// first, then by index (KAI's binpack order). O(log nodes) to start, O(1) per node.
    pub fn nodes_by_free_milli(&self, milli: u32) -> impl Iterator<Item = NodeId> + '_ {
        self.free
            .by_free_milli
            .range((milli, NodeId::from_index(0))..)
            .map(|&(_, n)| n)
    }

    /// Unallocated share of the node's GPUs, thousandths.
    pub fn free_milli(&self, node: NodeId) -> u32 {
        self.free_milli[node.index()]
    }

    /// Nodes known to this occupancy.
    pub fn node_count(&self) -> usize {
        self.free_whole.len()
    }

    /// GPUs on a node.
    pub fn gpus(&self, node: NodeId) -> u32 {
        self.gpu_start[node.index() + 1] - self.gpu_start[node.index()]
    }

    /// Memory of one GPU of the node, MiB.
    pub fn gpu_memory_mib(&self, node: NodeId) -> u32 {
        self.gpu_memory_mib[node.index()]
    }

    /// GPUs of the node nobody uses at all.
    pub fn free_whole(&self, node: NodeId) -> u32 {
        self.free_whole[node.index()]
    }

    /// Used share of a GPU, thousandths.
    pub fn used_milli(&self, node: NodeId, gpu: u32) -> u32 {
        u32::from(self.used_milli[(self.gpu_start[node.index()] + gpu) as usize])
    }

    /// Used memory of a GPU, MiB.
    pub fn used_memory_mib(&self, node: NodeId, gpu: u32) -> u32 {
        self.used_memory[(self.gpu_start[node.index()] + gpu) as usize]
    }

    /// Per-GPU used shares and memory of a node.
    pub(crate) fn node_gpus(&self, node: NodeId) -> (&[u16], &[u32]) {
        let a = self.gpu_start[node.index()] as usize;
        let b = self.gpu_start[node.index() + 1] as usize;
        (&self.used_milli[a..b], &self.used_memory[a..b])
    }

    /// Running jobs, by name.
    pub fn jobs(&self) -> &BTreeMap<String, Allocation> {
        &self.jobs
    }

    /// Total GPUs used, in thousandths, per queue (by name).
    pub fn usage_milli_by_queue(&self) -> BTreeMap<String, u64> {
        let mut out: BTreeMap<String, u64> = BTreeMap::new();
        for a in self.jobs.values() {
            *out.entry(a.job.queue.clone()).or_default() += a.milli_gpus();
        }
        out
    }

    /// Record a running job. Checks every pod; on error nothing changes. O(pods).
    pub fn allocate(
        &mut self,
        job: RunningJob,
        pods: Vec<PodAllocation>,
    ) -> Result<(), StateError> {
        if self.jobs.contains_key(&job.name) {
            return Err(StateError::DuplicateJob(job.name));
        }
        // Apply pod by pod, checking as we go (pods of one job may share a GPU); on a problem,
        // undo what was applied. O(pods × GPUs per pod).
        for (i, p) in pods.iter().enumerate() {
            if let Err(e) = self.check_pod(&job.name, p) {
                for q in pods[..i].iter().rev() {
                    self.unapply(q);
                }
                return Err(e);
            }
            self.apply(p);
        }
        self.jobs.insert(job.name.clone(), Allocation { job, pods });
        Ok(())
    }

    /// Remove a running job and free what it held; `None` if no such job runs.
    pub fn release(&mut self, name: &str) -> Option<Allocation> {
        let a = self.jobs.remove(name)?;
        for p in &a.pods {
            self.unapply(p);
        }
        Some(a)
    }

    fn check_pod(&self, job: &str, p: &PodAllocation) -> Result<(), StateError> {
        if p.node.index() >= self.node_count() {
            return Err(StateError::UnknownNode {
                job: job.to_owned(),
                node: p.node,
            });
        }
        let gpus = self.gpus(p.node);
        for (k, &g) in p.gpu_ids.iter().enumerate() {
            if g >= gpus {
                return Err(StateError::UnknownGpu {
                    job: job.to_owned(),
                    node: p.node,
                    gpu: g,
                    gpus,
                });
            }
            let slot = (self.gpu_start[p.node.index()] + g) as usize;
            let twice = p.gpu_ids[..k].contains(&g);
            if twice
                || u32::from(self.used_milli[slot]) + p.milli > MILLI_PER_GPU
                || u64::from(self.used_memory[slot]) + u64::from(p.memory_mib)
                    > u64::from(self.gpu_memory_mib[p.node.index()])
            {
                return Err(StateError::Oversubscribed {
                    job: job.to_owned(),
                    node: p.node,
                    gpu: g,
                });
            }
        }
        Ok(())
    }

    fn apply(&mut self, p: &PodAllocation) {
        let before = self.free_whole[p.node.index()];
        let milli_before = self.free_milli[p.node.index()];
        self.free_milli[p.node.index()] -= p.milli * p.gpu_ids.len() as u32;
        for &g in &p.gpu_ids {
            let slot = (self.gpu_start[p.node.index()] + g) as usize;
            let was_free = self.used_milli[slot] == 0 && self.used_memory[slot] == 0;
            self.used_milli[slot] += p.milli as u16;
            self.used_memory[slot] += p.memory_mib;
            if was_free && (self.used_milli[slot] > 0 || self.used_memory[slot] > 0) {
                self.free_whole[p.node.index()] -= 1;
            }
        }
        let i = p.node.index();
        let milli = (milli_before, self.free_milli[i]);
        self.free.moved(p.node, before, self.free_whole[i], milli);
    }

    fn unapply(&mut self, p: &PodAllocation) {
        let before = self.free_whole[p.node.index()];
        let milli_before = self.free_milli[p.node.index()];
        self.free_milli[p.node.index()] += p.milli * p.gpu_ids.len() as u32;
        for &g in &p.gpu_ids {
            let slot = (self.gpu_start[p.node.index()] + g) as usize;
            let was_used = self.used_milli[slot] > 0 || self.used_memory[slot] > 0;
            self.used_milli[slot] -= p.milli as u16;
            self.used_memory[slot] -= p.memory_mib;
            if was_used && self.used_milli[slot] == 0 && self.used_memory[slot] == 0 {
                self.free_whole[p.node.index()] += 1;
            }
        }
        let i = p.node.index();
        let milli = (milli_before, self.free_milli[i]);
        self.free.moved(p.node, before, self.free_whole[i], milli);
    }
}
