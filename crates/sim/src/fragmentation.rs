//! GPU fragmentation as the GPU-sharing literature defines it: Weng et al., "Beware of
//! Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent"
//! (USENIX ATC '23, §3): the expected unallocated GPU capacity that a target workload's tasks
//! cannot use.
//!
//! For one task type `m` (GPUs per pod `d`, or a share `d` < 1 of one GPU; CPU; memory; GPU
//! models) and a node `n` with free share `f_g` on each GPU `g`:
//! - when `m` cannot run on `n` at all (a model it does not accept, too little CPU or memory,
//!   not enough GPU capacity) or asks no GPU, every unallocated GPU share is a fragment:
//!   `F_n(m) = Σ_g f_g`;
//! - otherwise the GPUs whose free share is too small for it are:
//!   `F_n(m) = Σ_g f_g · [f_g < min(d, 1)]` (for whole-GPU tasks, every partly used GPU).
//!
//! A workload `M` is the task types with their popularity `p_m` (shares of the trace's jobs,
//! summing to 1); `F_n(M) = Σ_m p_m F_n(m)` and the cluster's `F(M) = Σ_n F_n(M)`. The
//! simulator takes the trace's own job mix as `M` and reports `F(M)` over all GPUs, averaged
//! over time (`Summary::weng_fragmentation`).

use std::collections::BTreeMap;

use crate::trace::TraceJob;

/// One task type of a workload, per pod.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskType {
    /// Whole GPUs per pod (0 for a CPU-only pod, 1 for a share of one GPU).
    pub gpus: u32,
    /// Share of each GPU, thousandths (1000 for whole GPUs).
    pub milli: u32,
    /// CPU per pod, millicores.
    pub cpu_milli: u64,
    /// Memory per pod, MiB.
    pub memory_mib: u64,
    /// Accepted GPU models (empty: any).
    pub gpu_models: Vec<String>,
    /// Popularity: the share of the workload's tasks of this type.
    pub weight: f64,
}

/// The target workload: task types with popularities summing to 1.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workload {
    /// Task types, in a fixed order.
    pub types: Vec<TaskType>,
}

impl Workload {
    /// A trace's job mix, one pod per job (jobs larger than a node count as pods of
    /// `node_gpus` GPUs).
    pub fn of(trace: &[TraceJob], node_gpus: u32) -> Self {
        let mut count: BTreeMap<(u32, u32, u64, u64, Vec<String>), u64> = BTreeMap::new();
        for t in trace {
            let gpus = t.gpus.min(node_gpus.max(1));
            let milli = t.pod.gpu_milli.unwrap_or(1000);
            *count
                .entry((
                    gpus,
                    milli,
                    t.pod.cpu_milli,
                    t.pod.memory_mib,
                    t.pod.gpu_models.clone(),
                ))
                .or_insert(0) += 1;
        }
        let total = trace.len().max(1) as f64;
        Workload {
            types: count
                .into_iter()
                .map(
                    |((gpus, milli, cpu_milli, memory_mib, gpu_models), c)| TaskType {
                        gpus,
                        milli,
                        cpu_milli,
                        memory_mib,
                        gpu_models,
                        weight: c as f64 / total,
                    },
                )
                .collect(),
        }
    }
}

/// What one node has free for the measure.
#[derive(Clone, Copy, Debug)]
pub struct NodeView<'a> {
    /// Free share of each GPU, thousandths.
    pub free_milli: &'a [u32],
    /// Free CPU, millicores (`u64::MAX`: not limited).
    pub free_cpu_milli: u64,
    /// Free memory, MiB (`u64::MAX`: not limited).
    pub free_memory_mib: u64,
    /// The node's GPU model, when known.
    pub model: Option<&'a str>,
    /// Takes new pods at all (Ready, not cordoned, untainted).
    pub schedulable: bool,
}

/// `F_n(M)` of one node, in GPUs.
pub fn node_fragmentation(workload: &Workload, node: &NodeView<'_>) -> f64 {
    let unallocated: u64 = node.free_milli.iter().map(|&f| u64::from(f)).sum();
    if unallocated == 0 {
        return 0.0;
    }
    let mut expected = 0.0;
    for m in &workload.types {
        expected += m.weight * task_fragment_milli(m, node, unallocated) as f64;
    }
    expected / 1000.0
}

/// `F_n(m)` in thousandths of a GPU (see the module doc).
fn task_fragment_milli(m: &TaskType, node: &NodeView<'_>, unallocated: u64) -> u64 {
    let model_ok = m.gpu_models.is_empty()
        || node
            .model
            .is_some_and(|x| m.gpu_models.iter().any(|a| a == x));
    let gpu_ok = if m.milli < 1000 {
        node.free_milli.iter().any(|&f| f >= m.milli)
    } else {
        node.free_milli.iter().filter(|&&f| f >= 1000).count() as u64 >= u64::from(m.gpus)
    };
    let fits = m.gpus > 0
        && node.schedulable
        && model_ok
        && gpu_ok
        && m.cpu_milli <= node.free_cpu_milli
        && m.memory_mib <= node.free_memory_mib;
    if !fits {
        return unallocated;
    }
    let need = m.milli.min(1000);
    node.free_milli
        .iter()
        .filter(|&&f| f < need)
        .map(|&f| u64::from(f))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(gpus: u32, milli: u32, weight: f64) -> TaskType {
        TaskType {
            gpus,
            milli,
            cpu_milli: 0,
            memory_mib: 0,
            gpu_models: Vec::new(),
            weight,
        }
    }

    fn node(free: &[u32]) -> NodeView<'_> {
        NodeView {
            free_milli: free,
            free_cpu_milli: u64::MAX,
            free_memory_mib: u64::MAX,
            model: Some("T4"),
            schedulable: true,
        }
    }

    #[test]
    fn the_three_cases_by_hand() {
        // A node with GPUs free 1.0, 0.5 and 0.2 (1.7 unallocated).
        let free = [1000, 500, 200];
        // A half-GPU task can use the first two: the 0.2 is a fragment.
        let half = Workload {
            types: vec![task(1, 500, 1.0)],
        };
        assert!((node_fragmentation(&half, &node(&free)) - 0.2).abs() < 1e-12);
        // A whole-GPU task can use only the first: 0.5 + 0.2.
        let whole = Workload {
            types: vec![task(1, 1000, 1.0)],
        };
        assert!((node_fragmentation(&whole, &node(&free)) - 0.7).abs() < 1e-12);
        // A two-GPU task cannot run here: everything free is a fragment; so for a CPU-only task.
        for w in [task(2, 1000, 1.0), task(0, 1000, 1.0)] {
            let wl = Workload { types: vec![w] };
            assert!((node_fragmentation(&wl, &node(&free)) - 1.7).abs() < 1e-12);
        }
        // A mix weighs by popularity: 0.25 · 0.2 + 0.75 · 0.7.
        let mix = Workload {
            types: vec![task(1, 500, 0.25), task(1, 1000, 0.75)],
        };
        let want = 0.25 * 0.2 + 0.75 * 0.7;
        assert!((node_fragmentation(&mix, &node(&free)) - want).abs() < 1e-12);
    }

    #[test]
    fn a_model_or_cpu_the_node_lacks_makes_all_of_it_fragments() {
        let free = [1000, 300];
        let mut t = task(1, 500, 1.0);
        t.gpu_models = vec!["V100M32".to_owned()];
        let wl = Workload { types: vec![t] };
        assert!((node_fragmentation(&wl, &node(&free)) - 1.3).abs() < 1e-12);
        let mut t = task(1, 500, 1.0);
        t.cpu_milli = 8000;
        let wl = Workload { types: vec![t] };
        let mut n = node(&free);
        n.free_cpu_milli = 4000;
        assert!((node_fragmentation(&wl, &n) - 1.3).abs() < 1e-12);
        // A full node has no fragments.
        assert_eq!(node_fragmentation(&wl, &node(&[0, 0])), 0.0);
    }
}
