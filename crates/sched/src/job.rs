//! Jobs as the scheduler sees them: pod sets, GPU requests (whole, fraction, memory), topology
//! requests with slices, tolerations. Levels are indices into [`topology::Cluster::levels`]; the
//! CLI maps label names to indices (and reports unknown labels) before the core sees a job.

use topology::{Cluster, Taint, TaintEffect};

use crate::error::JobError;

/// Most nested slice layers a topology request may have.
pub const MAX_SLICE_LAYERS: usize = 3;

/// Milli-GPU units in one whole GPU: fractional requests are kept in integer thousandths so sums
/// are exact and deterministic.
pub const MILLI_PER_GPU: u32 = 1000;

/// A gang job: one or more pod sets placed all together or not at all.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Unique name.
    pub name: String,
    /// The (leaf) queue the job is submitted to.
    pub queue: String,
    /// Higher runs first and may preempt lower in the same queue.
    pub priority: i32,
    /// Whether the job may be preempted or reclaimed.
    pub preemptible: bool,
    /// Pod sets, in rank order (ranks continue from one set to the next).
    pub pod_sets: Vec<PodSet>,
    /// Taints the job's pods tolerate.
    pub tolerations: Vec<Toleration>,
}

/// `count` identical pods.
#[derive(Clone, Debug, PartialEq)]
pub struct PodSet {
    /// Name, for messages.
    pub name: String,
    /// Pods wanted.
    pub count: u32,
    /// Fewest pods the job accepts (gang minimum); `count` when the gang is all-or-nothing.
    pub min_count: u32,
    /// GPUs per pod.
    pub gpu: GpuRequest,
    /// CPU per pod, millicores (counted against queue quotas; nodes carry no CPU capacity).
    pub cpu_millis: u64,
    /// Memory per pod, MiB (counted against queue quotas).
    pub memory_mib: u64,
    /// Where the pods may go.
    pub topology: TopologyRequest,
}

/// GPUs one pod needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuRequest {
    /// Whole, unshared GPUs; 0 for a pod without GPUs, placed by its other requests
    /// ([`crate::PodSetExtras::requests`]).
    Whole(u32),
    /// A share of one GPU, in thousandths (1..=1000), e.g. KAI `gpu-fraction: "0.5"` = 500.
    Fraction(u32),
    /// GPU memory on one GPU, MiB (KAI `gpu-memory`).
    MemoryMib(u32),
}

/// Where a pod set may go. With neither level the request is unconstrained.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopologyRequest {
    /// All pods within one domain at this level (the outer bound), or the job waits.
    pub required: Option<usize>,
    /// Try one domain at this level, then climb (up to `required`, if given), then spread.
    pub preferred: Option<usize>,
    /// Slice layers, outermost first: every `size` consecutive pods lie in one domain at `level`.
    pub slices: Vec<SliceLayer>,
}

/// One slice layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceLayer {
    /// Level index.
    pub level: usize,
    /// Pods per slice.
    pub size: u32,
}

/// A Kubernetes toleration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toleration {
    /// Taint key; `None` with `Exists` tolerates every taint.
    pub key: Option<String>,
    /// `Some(v)`: operator Equal with value `v`; `None`: operator Exists.
    pub value: Option<String>,
    /// Effect tolerated; `None` tolerates all effects.
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// Whether this toleration accepts the taint (Kubernetes matching rules).
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        match (&self.key, &self.value) {
            (None, _) => true,
            (Some(k), None) => *k == taint.key,
            (Some(k), Some(v)) => *k == taint.key && *v == taint.value,
        }
    }
}

/// Resource amounts: GPUs, CPU millicores, memory MiB.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Resources {
    /// GPUs (fractional for shared GPUs).
    pub gpu: f64,
    /// CPU, millicores.
    pub cpu: f64,
    /// Memory, MiB.
    pub memory: f64,
}

/// One of the three resources queues account for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// GPUs.
    Gpu,
    /// CPU millicores.
    Cpu,
    /// Memory MiB.
    Memory,
}

impl Resource {
    /// All resources, in report order.
    pub const ALL: [Resource; 3] = [Resource::Gpu, Resource::Cpu, Resource::Memory];

    /// Lower-case name (`gpu`, `cpu`, `memory`).
    pub fn name(self) -> &'static str {
        match self {
            Resource::Gpu => "gpu",
            Resource::Cpu => "cpu",
            Resource::Memory => "memory",
        }
    }
}

impl Resources {
    /// The amount of one resource.
    pub fn get(&self, r: Resource) -> f64 {
        match r {
            Resource::Gpu => self.gpu,
            Resource::Cpu => self.cpu,
            Resource::Memory => self.memory,
        }
    }

    /// Set the amount of one resource.
    pub fn set(&mut self, r: Resource, v: f64) {
        match r {
            Resource::Gpu => self.gpu = v,
            Resource::Cpu => self.cpu = v,
            Resource::Memory => self.memory = v,
        }
    }

    /// Element-wise sum.
    pub fn add(&self, o: &Resources) -> Resources {
        Resources {
            gpu: self.gpu + o.gpu,
            cpu: self.cpu + o.cpu,
            memory: self.memory + o.memory,
        }
    }
}

impl GpuRequest {
    /// The share (thousandths) and memory (MiB) one pod takes of each GPU it uses, on GPUs of
    /// `gpu_memory_mib`.
    pub(crate) fn per_gpu_share(self, gpu_memory_mib: u32) -> (u32, u32) {
        let mem = u64::from(gpu_memory_mib.max(1));
        match self {
            GpuRequest::Whole(_) => (MILLI_PER_GPU, gpu_memory_mib),
            GpuRequest::Fraction(m) => (m, (u64::from(m) * mem).div_ceil(1000) as u32),
            GpuRequest::MemoryMib(m) => (((u64::from(m) * 1000).div_ceil(mem) as u32).max(1), m),
        }
    }

    /// GPUs one pod counts for, on a node whose GPUs have `gpu_memory_mib` each.
    pub fn gpus(self, gpu_memory_mib: u32) -> f64 {
        match self {
            GpuRequest::Whole(g) => f64::from(g),
            GpuRequest::Fraction(m) => f64::from(m) / f64::from(MILLI_PER_GPU),
            GpuRequest::MemoryMib(m) => f64::from(m) / f64::from(gpu_memory_mib.max(1)),
        }
    }
}

impl PodSet {
    /// The unit pods are placed in: the innermost slice size, or 1.
    pub fn granule(&self) -> u32 {
        self.topology.slices.last().map_or(1, |s| s.size)
    }

    /// The outermost slice size, or 1: pod counts placed are multiples of it.
    pub fn outer_granule(&self) -> u32 {
        self.topology.slices.first().map_or(1, |s| s.size)
    }
}

impl Job {
    /// Total resources of the job at full size; a `gpu-memory` request counts as its fraction of
    /// a GPU with `gpu_memory_mib`.
    pub fn request(&self, gpu_memory_mib: u32) -> Resources {
        let mut r = Resources::default();
        for s in &self.pod_sets {
            let n = f64::from(s.count);
            r.gpu += n * s.gpu.gpus(gpu_memory_mib);
            r.cpu += n * s.cpu_millis as f64;
            r.memory += n * s.memory_mib as f64;
        }
        r
    }

    /// Check the job against the cluster's levels: counts, GPU requests, level indices, the
    /// preferred level at or below the required one, slice sizes and levels. The CLI checks each
    /// format's own rules first; this is the core's safety net and reports the first problem.
    pub fn check(&self, cluster: &Cluster) -> Result<(), JobError> {
        let err = |pod_set: &PodSet, message: String| JobError {
            job: self.name.clone(),
            pod_set: pod_set.name.clone(),
            message,
        };
        if self.pod_sets.is_empty() {
            return Err(JobError {
                job: self.name.clone(),
                pod_set: String::new(),
                message: "expected at least one pod set".to_owned(),
            });
        }
        let n_levels = cluster.levels.len();
        for s in &self.pod_sets {
            if s.count == 0 {
                return Err(err(s, "count: expected at least 1 pod".to_owned()));
            }
            if s.min_count == 0 || s.min_count > s.count {
                return Err(err(
                    s,
                    format!("min_count: expected 1..={}, got {}", s.count, s.min_count),
                ));
            }
            match s.gpu {
                GpuRequest::Fraction(m) if m == 0 || m > MILLI_PER_GPU => {
                    return Err(err(
                        s,
                        format!(
                            "gpu fraction: expected (0, 1], got {}",
                            f64::from(m) / 1000.0
                        ),
                    ))
                }
                GpuRequest::MemoryMib(0) => {
                    return Err(err(s, "gpu memory: expected at least 1 MiB".to_owned()))
                }
                _ => {}
            }
            let t = &s.topology;
            for (what, l) in [("required", t.required), ("preferred", t.preferred)] {
                if let Some(l) = l {
                    if l >= n_levels {
                        return Err(err(
                            s,
                            format!("{what}: level {l} does not exist ({n_levels} levels)"),
                        ));
                    }
                }
            }
            if let (Some(r), Some(p)) = (t.required, t.preferred) {
                if p < r {
                    return Err(err(
                        s,
                        format!(
                            "preferred level `{}` must be at or below the required level `{}`",
                            cluster.levels[p].label, cluster.levels[r].label
                        ),
                    ));
                }
            }
            if t.slices.len() > MAX_SLICE_LAYERS {
                return Err(err(
                    s,
                    format!(
                        "expected at most {MAX_SLICE_LAYERS} slice layers, got {}",
                        t.slices.len()
                    ),
                ));
            }
            let mut above_size = s.count;
            let mut above_level = t.required.or(t.preferred).unwrap_or(0);
            for (i, layer) in t.slices.iter().enumerate() {
                if layer.level >= n_levels {
                    return Err(err(
                        s,
                        format!("slices[{i}]: level {} does not exist", layer.level),
                    ));
                }
                if layer.size == 0 || above_size % layer.size != 0 {
                    return Err(err(
                        s,
                        format!("slices[{i}]: size {} must divide {above_size}", layer.size),
                    ));
                }
                if layer.level < above_level {
                    return Err(err(
                        s,
                        format!(
                            "slices[{i}]: level `{}` must be at or below `{}`",
                            cluster.levels[layer.level].label, cluster.levels[above_level].label
                        ),
                    ));
                }
                above_size = layer.size;
                above_level = layer.level;
            }
            if s.min_count % s.outer_granule() != 0 {
                return Err(err(
                    s,
                    format!(
                        "min_count {} must be a multiple of the slice size {}",
                        s.min_count,
                        s.outer_granule()
                    ),
                ));
            }
        }
        Ok(())
    }
}
