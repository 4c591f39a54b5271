//! Invariants of a running cluster, checked from scratch: a pure function over the cluster, the
//! occupancy and the jobs, for simulators and property tests (it recomputes everything, so it
//! costs O(GPUs + pods) per call; nothing calls it on a fast path).
//!
//! Checked: no GPU is above a whole GPU (1000 thousandths) or its memory, recomputed from the
//! running jobs' pods, and the occupancy's own counters agree with that recomputation; every
//! running gang is whole (pods per pod set between its minimum and its count, each pod shaped
//! as its pod set asks: whole GPUs, or the share on as many distinct devices as it asks for);
//! every required level holds (all pods of the pod set in one domain of that level); every pod
//! is on a node of the cluster.

use topology::Cluster;

use crate::job::{GpuRequest, Job, MILLI_PER_GPU};
use crate::occupancy::{Allocation, Occupancy};

/// A broken invariant: which job (when one is to blame) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The job (empty when the occupancy's bookkeeping itself is wrong).
    pub job: String,
    /// The invariant's short name, e.g. `gpu oversubscribed`.
    pub invariant: &'static str,
    /// What was seen.
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.job.is_empty() {
            write!(f, "job \"{}\": ", self.job)?;
        }
        write!(f, "{}: {}", self.invariant, self.detail)
    }
}

impl std::error::Error for Violation {}

/// Check the occupancy against the cluster and the jobs it runs: [`check_occupancy`], then
/// [`check_gang`] for every running job. `job_of` gives the scheduler's job for a running job's
/// name (`None`: the job is unknown, itself a violation).
pub fn check_invariants<'j>(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job_of: &dyn Fn(&str) -> Option<&'j Job>,
) -> Result<(), Violation> {
    for (name, alloc) in occupancy.jobs() {
        let job = job_of(name).ok_or_else(|| Violation {
            job: name.clone(),
            invariant: "unknown job",
            detail: "holds GPUs but is not a job".to_owned(),
        })?;
        check_gang(cluster, job, alloc)?;
    }
    check_occupancy(cluster, occupancy)
}

/// No GPU above a whole GPU or its memory, recomputed from the running jobs' pods, and the
/// occupancy's counters equal to that recomputation. O(GPUs + pods).
pub fn check_occupancy(cluster: &Cluster, occupancy: &Occupancy) -> Result<(), Violation> {
    let violation = |job: &str, invariant: &'static str, detail: String| Violation {
        job: job.to_owned(),
        invariant,
        detail,
    };
    if occupancy.node_count() != cluster.nodes.len() {
        return Err(violation(
            "",
            "occupancy shape",
            format!(
                "{} nodes in the occupancy, {} in the cluster",
                occupancy.node_count(),
                cluster.nodes.len()
            ),
        ));
    }
    // Per GPU: thousandths and MiB recomputed from the running jobs' pods.
    let mut start = Vec::with_capacity(cluster.nodes.len() + 1);
    let mut total = 0usize;
    for n in &cluster.nodes {
        start.push(total);
        total += n.gpus as usize;
    }
    let mut milli = vec![0u64; total];
    let mut memory = vec![0u64; total];
    for (name, alloc) in occupancy.jobs() {
        for p in &alloc.pods {
            let Some(node) = cluster.nodes.get(p.node.index()) else {
                return Err(violation(
                    name,
                    "pod on an unknown node",
                    format!("node #{}", p.node.0),
                ));
            };
            for &g in &p.gpu_ids {
                let slot = start[p.node.index()] + g as usize;
                milli[slot] += u64::from(p.milli);
                memory[slot] += u64::from(p.memory_mib);
                if milli[slot] > u64::from(MILLI_PER_GPU) {
                    return Err(violation(
                        name,
                        "gpu oversubscribed",
                        format!("GPU {g} of node {} used {}/1000", node.name, milli[slot]),
                    ));
                }
                let cap = u64::from(occupancy.gpu_memory_mib(p.node));
                if memory[slot] > cap {
                    return Err(violation(
                        name,
                        "gpu memory oversubscribed",
                        format!(
                            "GPU {g} of node {} holds {} MiB of {cap}",
                            node.name, memory[slot]
                        ),
                    ));
                }
            }
        }
    }
    // The occupancy's counters must agree with the recomputation (what `place` reads).
    for (i, n) in cluster.nodes.iter().enumerate() {
        let id = topology::NodeId(i as u32);
        let mut untouched = 0;
        for g in 0..n.gpus {
            let slot = start[i] + g as usize;
            let (m, mem) = (
                u64::from(occupancy.used_milli(id, g)),
                u64::from(occupancy.used_memory_mib(id, g)),
            );
            if m != milli[slot] || mem != memory[slot] {
                return Err(violation(
                    "",
                    "occupancy bookkeeping",
                    format!(
                        "GPU {g} of node {}: counters say {m}/1000 and {mem} MiB, the running jobs hold {}/1000 and {} MiB",
                        n.name, milli[slot], memory[slot]
                    ),
                ));
            }
            untouched += u32::from(m == 0 && mem == 0);
        }
        if occupancy.free_whole(id) != untouched {
            return Err(violation(
                "",
                "occupancy bookkeeping",
                format!(
                    "node {}: {} untouched GPUs counted, {untouched} in fact",
                    n.name,
                    occupancy.free_whole(id)
                ),
            ));
        }
    }
    Ok(())
}

/// A running job's pods against its pod sets: whole gangs, pod shapes, required levels, nodes.
/// The gang is the job's pod sets' minimums; a KAI PodGroup whose `minSubGroup` leaves some of its
/// sub-groups out (placed only through [`crate::PlaceInput::sub_groups`], which the simulator does
/// not use) is not a gang of that shape.
pub fn check_gang(cluster: &Cluster, job: &Job, alloc: &Allocation) -> Result<(), Violation> {
    let violation = |invariant: &'static str, detail: String| Violation {
        job: job.name.clone(),
        invariant,
        detail,
    };
    if let Some(p) = alloc
        .pods
        .iter()
        .find(|p| p.node.index() >= cluster.nodes.len())
    {
        return Err(violation(
            "pod on an unknown node",
            format!("node #{}", p.node.0),
        ));
    }
    let min: u64 = job.pod_sets.iter().map(|s| u64::from(s.min_count)).sum();
    let max: u64 = job.pod_sets.iter().map(|s| u64::from(s.count)).sum();
    let pods = alloc.pods.len() as u64;
    if pods < min || pods > max {
        return Err(violation(
            "gang not whole",
            format!(
                "{pods} pod{} running, expected {min}..={max}",
                if pods == 1 { "" } else { "s" }
            ),
        ));
    }
    // Pods are in rank order, pod set after pod set. With several pod sets that may run short
    // the split is ambiguous; then only the total is checked.
    let exact = job.pod_sets.len() == 1 || job.pod_sets.iter().all(|s| s.min_count == s.count);
    if !exact {
        return Ok(());
    }
    let mut offset = 0usize;
    for set in &job.pod_sets {
        let n = if job.pod_sets.len() == 1 {
            alloc.pods.len()
        } else {
            set.count as usize
        };
        let pods = &alloc.pods[offset..offset + n];
        offset += n;
        for (k, p) in pods.iter().enumerate() {
            let ok = match set.gpu {
                GpuRequest::Whole(g) => p.gpu_ids.len() == g as usize && p.milli == MILLI_PER_GPU,
                GpuRequest::Fraction { milli, devices } => {
                    p.gpu_ids.len() == devices as usize && p.milli == milli
                }
                GpuRequest::MemoryMib { mib, devices } => {
                    p.gpu_ids.len() == devices as usize && p.memory_mib == mib
                }
            };
            let mut ids = p.gpu_ids.clone();
            ids.sort_unstable();
            ids.dedup();
            if !ok || ids.len() != p.gpu_ids.len() {
                return Err(violation(
                    "pod shape",
                    format!(
                        "pod set `{}` pod {k}: {} GPU(s) at {}/1000 and {} MiB, asked for {:?}",
                        set.name,
                        p.gpu_ids.len(),
                        p.milli,
                        p.memory_mib,
                        set.gpu
                    ),
                ));
            }
        }
        if let Some(level) = set.topology.required {
            let mut domains: Vec<topology::DomainId> = pods
                .iter()
                .filter_map(|p| cluster.nodes[p.node.index()].domains.get(level).copied())
                .collect();
            domains.sort_by_key(|d| d.0);
            domains.dedup();
            if domains.len() > 1 {
                let label = cluster.levels.get(level).map_or("?", |l| l.label.as_str());
                return Err(violation(
                    "required level broken",
                    format!(
                        "pod set `{}` spans {} `{label}` domains",
                        set.name,
                        domains.len()
                    ),
                ));
            }
        }
    }
    Ok(())
}
