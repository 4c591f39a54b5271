//! Cluster occupancy: per GPU the used share (thousandths) and memory, per node the count of
//! untouched GPUs, and which running job holds what. Allocate and release cost O(pods).

use std::collections::BTreeMap;

use topology::{Cluster, NodeId};

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
    /// Running jobs by name.
    jobs: BTreeMap<String, Allocation>,
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
        Self {
            gpu_start,
            gpu_memory_mib: cluster
                .nodes
                .iter()
                .map(|n| n.gpu_memory_gib.saturating_mul(1024))
                .collect(),
            used_milli: vec![0; total as usize],
            used_memory: vec![0; total as usize],
            free_whole: cluster.nodes.iter().map(|n| n.gpus).collect(),
            jobs: BTreeMap::new(),
        }
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
        for &g in &p.gpu_ids {
            let slot = (self.gpu_start[p.node.index()] + g) as usize;
            let was_free = self.used_milli[slot] == 0 && self.used_memory[slot] == 0;
            self.used_milli[slot] += p.milli as u16;
            self.used_memory[slot] += p.memory_mib;
            if was_free && (self.used_milli[slot] > 0 || self.used_memory[slot] > 0) {
                self.free_whole[p.node.index()] -= 1;
            }
        }
    }

    fn unapply(&mut self, p: &PodAllocation) {
        for &g in &p.gpu_ids {
            let slot = (self.gpu_start[p.node.index()] + g) as usize;
            let was_used = self.used_milli[slot] > 0 || self.used_memory[slot] > 0;
            self.used_milli[slot] -= p.milli as u16;
            self.used_memory[slot] -= p.memory_mib;
            if was_used && self.used_milli[slot] == 0 && self.used_memory[slot] == 0 {
                self.free_whole[p.node.index()] += 1;
            }
        }
    }
}
