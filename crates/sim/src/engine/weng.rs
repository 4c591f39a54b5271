//! Weng et al.'s GPU fragmentation kept per node over a run ([`Weng`]): each node's value
//! against the trace's job mix (`crate::fragmentation`), their sum and its time integral,
//! refreshed on the nodes a start or a stop touches. It reads the occupancy and the nodes' free
//! room; it knows nothing of jobs or policies.

use sched::Occupancy;
use topology::{Cluster, NodeId};

use crate::fragmentation::{node_fragmentation, NodeView, Workload};
use crate::shares;
use crate::time::SimTime;

/// Weng et al.'s fragmentation kept per node ([`crate::fragmentation`]).
pub(super) struct Weng {
    pub(super) workload: Workload,
    /// When the workload asks whole GPUs alone: `F_n(M)` of a node by its free GPUs and
    /// whether it is schedulable (a node's value depends on nothing else then).
    pub(super) whole_gpu: Option<Vec<[f64; 2]>>,
    pub(super) per_node: Vec<f64>,
    pub(super) level: f64,
    pub(super) integral: f64,
    pub(super) since: SimTime,
}

impl Weng {
    /// Recompute Weng et al.'s fragmentation of `nodes` after a change at `now`.
    pub(super) fn refresh(
        &mut self,
        cluster: &Cluster,
        occupancy: &Occupancy,
        node_free: &sched::NodeFree,
        nodes: &[NodeId],
        now: SimTime,
    ) {
        self.integral += self.level * now.secs_since(self.since);
        self.since = now;
        let mut free = Vec::new();
        for &n in nodes {
            if let Some(value) = self.whole_gpu_fragmentation(occupancy, n) {
                let old = std::mem::replace(&mut self.per_node[n.index()], value);
                self.level += value - old;
                continue;
            }
            free.clear();
            free.extend(
                (0..occupancy.gpus(n)).map(|g| sched::MILLI_PER_GPU - occupancy.used_milli(n, g)),
            );
            let room = node_free.0.get(n.index());
            let amount =
                |k: &str, unit: u64| room.and_then(|r| r.get(k)).map_or(u64::MAX, |&v| v / unit);
            let view = NodeView {
                free_milli: &free,
                free_cpu_milli: amount("cpu", 1),
                free_memory_mib: amount("memory", 1024 * 1024),
                model: cluster
                    .node(n)
                    .labels
                    .get(shares::GPU_MODEL_LABEL)
                    .map(String::as_str),
                schedulable: occupancy.is_schedulable(n),
            };
            let value = node_fragmentation(&self.workload, &view);
            let old = std::mem::replace(&mut self.per_node[n.index()], value);
            self.level += value - old;
        }
    }

    /// `F_n(M)` of node `n` from [`Weng::whole_gpu`] when the workload asks whole GPUs alone and
    /// every GPU of `n` is free or fully used (`None` otherwise): the same value, bit for bit, as
    /// [`node_fragmentation`] on the node's view, which then depends only on its free GPUs and
    /// whether it is schedulable.
    fn whole_gpu_fragmentation(&self, occupancy: &Occupancy, n: NodeId) -> Option<f64> {
        let table = self.whole_gpu.as_ref()?;
        let mut free_gpus = 0;
        for g in 0..occupancy.gpus(n) {
            match occupancy.used_milli(n, g) {
                0 => free_gpus += 1,
                sched::MILLI_PER_GPU => {}
                _ => return None,
            }
        }
        let schedulable = occupancy.is_schedulable(n);
        table.get(free_gpus).map(|by| by[usize::from(schedulable)])
    }
}

/// [`Weng::whole_gpu`] for `workload` on nodes of at most `node_gpus` GPUs, when every task
/// type asks whole GPUs and nothing else and nodes have no room limits.
pub(super) fn whole_gpu_table(
    workload: &Workload,
    node_gpus: u32,
    room: &sched::NodeFree,
) -> Option<Vec<[f64; 2]>> {
    let simple = room.0.is_empty()
        && workload.types.iter().all(|m| {
            m.milli == sched::MILLI_PER_GPU
                && m.cpu_milli == 0
                && m.memory_mib == 0
                && m.gpu_models.is_empty()
        });
    if !simple {
        return None;
    }
    let view = |free: &[u32], schedulable: bool| {
        node_fragmentation(
            workload,
            &NodeView {
                free_milli: free,
                free_cpu_milli: u64::MAX,
                free_memory_mib: u64::MAX,
                model: None,
                schedulable,
            },
        )
    };
    Some(
        (0..=node_gpus as usize)
            .map(|k| {
                let free = vec![sched::MILLI_PER_GPU; k];
                [view(&free, false), view(&free, true)]
            })
            .collect(),
    )
}
