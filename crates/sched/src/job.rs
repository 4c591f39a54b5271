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
    /// The same share of each of `devices` distinct GPUs of one node, in thousandths
    /// (1..=1000), e.g. KAI `gpu-fraction: "0.5"` = 500; `devices` is KAI's
    /// `gpu-fraction-num-devices` (1 without it; Kueue has no such notion).
    Fraction {
        /// Share of each GPU, thousandths.
        milli: u32,
        /// Distinct GPUs of one node, each taking the share (at least 1).
        devices: u32,
    },
    /// The same GPU memory on each of `devices` distinct GPUs of one node, MiB (KAI
    /// `gpu-memory`, with `gpu-fraction-num-devices` for `devices`).
    MemoryMib {
        /// Memory of each GPU, MiB.
        mib: u32,
        /// Distinct GPUs of one node, each taking the memory (at least 1).
        devices: u32,
    },
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
    /// A share of one GPU, thousandths.
    pub const fn fraction(milli: u32) -> Self {
        GpuRequest::Fraction { milli, devices: 1 }
    }

    /// GPU memory on one GPU, MiB.
    pub const fn memory_mib(mib: u32) -> Self {
        GpuRequest::MemoryMib { mib, devices: 1 }
    }

    /// Distinct GPUs one pod touches: the whole GPUs, or the devices a share is taken of.
    pub fn devices(self) -> u32 {
        match self {
            GpuRequest::Whole(g) => g,
            GpuRequest::Fraction { devices, .. } | GpuRequest::MemoryMib { devices, .. } => devices,
        }
    }

    /// Whether the pod shares its GPUs (a fraction or GPU memory, on one or more devices).
    pub fn is_shared(self) -> bool {
        !matches!(self, GpuRequest::Whole(_))
    }

    /// The share (thousandths) and memory (MiB) one pod takes of each GPU it uses, on GPUs of
    /// `gpu_memory_mib`.
    pub(crate) fn per_gpu_share(self, gpu_memory_mib: u32) -> (u32, u32) {
        let mem = u64::from(gpu_memory_mib.max(1));
        match self {
            GpuRequest::Whole(_) => (MILLI_PER_GPU, gpu_memory_mib),
            GpuRequest::Fraction { milli, .. } => {
                (milli, (u64::from(milli) * mem).div_ceil(1000) as u32)
            }
            GpuRequest::MemoryMib { mib, .. } => {
                (((u64::from(mib) * 1000).div_ceil(mem) as u32).max(1), mib)
            }
        }
    }

    /// GPUs one pod counts for, on a node whose GPUs have `gpu_memory_mib` each (a share
    /// counts once per device).
    pub fn gpus(self, gpu_memory_mib: u32) -> f64 {
        match self {
            GpuRequest::Whole(g) => f64::from(g),
            GpuRequest::Fraction { milli, devices } => {
                f64::from(devices) * f64::from(milli) / f64::from(MILLI_PER_GPU)
            }
            GpuRequest::MemoryMib { mib, devices } => {
                f64::from(devices) * f64::from(mib) / f64::from(gpu_memory_mib.max(1))
            }
        }
    }

    /// Pods of this shared request that fit on a node whose GPUs have `used` (thousandths,
    /// MiB) each of `gpu_memory_mib`: GPU `i` takes `k_i` shares, and `P` pods of `n` distinct
    /// devices each fit exactly when `Σ min(k_i, P) ≥ n·P` (a GPU serves a pod at most once;
    /// [`Self::pick_shared`] with [`SharedOrder::MostRoom`] realises every such `P`). 0 for
    /// whole-GPU requests.
    pub(crate) fn shared_pods(
        self,
        used: impl Iterator<Item = (u32, u32)>,
        gpu_memory_mib: u32,
    ) -> u64 {
        if !self.is_shared() {
            return 0;
        }
        let (milli, mem) = self.per_gpu_share(gpu_memory_mib);
        if milli > MILLI_PER_GPU || mem > gpu_memory_mib || mem == 0 {
            return 0;
        }
        let rooms = used.map(|(um, ume)| shares_left(um, ume, milli, mem, gpu_memory_mib));
        let n = u64::from(self.devices().max(1));
        if n == 1 {
            return rooms.sum();
        }
        let rooms: Vec<u64> = rooms.collect();
        let total: u64 = rooms.iter().sum();
        // f(P) = Σ min(k_i, P) − n·P is concave with f(0) = 0: the feasible P are 0..=P*.
        let fits = |p: u64| rooms.iter().map(|&k| k.min(p)).sum::<u64>() >= n * p;
        let (mut lo, mut hi) = (0u64, total / n);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// The GPUs one pod of this shared request takes on a node whose GPUs have `used`
    /// (thousandths, MiB) of `gpu_memory_mib` each: `devices` distinct GPUs with room, in
    /// `order`, then by index; `None` when fewer have room.
    pub(crate) fn pick_shared(
        self,
        used: &[(u32, u32)],
        gpu_memory_mib: u32,
        order: SharedOrder,
    ) -> Option<Vec<u32>> {
        let (milli, mem) = self.per_gpu_share(gpu_memory_mib);
        let mut room: Vec<usize> = (0..used.len())
            .filter(|&i| shares_left(used[i].0, used[i].1, milli, mem, gpu_memory_mib) > 0)
            .collect();
        let n = self.devices().max(1) as usize;
        if room.len() < n {
            return None;
        }
        let left = |i: usize| shares_left(used[i].0, used[i].1, milli, mem, gpu_memory_mib);
        match order {
            SharedOrder::MostUsed => room.sort_by(|&x, &y| used[y].cmp(&used[x]).then(x.cmp(&y))),
            SharedOrder::LeastUsed => room.sort_by(|&x, &y| used[x].cmp(&used[y]).then(x.cmp(&y))),
            SharedOrder::MostRoom => room.sort_by(|&x, &y| {
                left(y)
                    .cmp(&left(x))
                    .then(used[y].cmp(&used[x]))
                    .then(x.cmp(&y))
            }),
        }
        room.truncate(n);
        Some(room.into_iter().map(|i| i as u32).collect())
    }
}

/// Which GPUs a shared pod takes first ([`GpuRequest::pick_shared`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SharedOrder {
    /// The most used (share, then memory): packs GPUs (KAI's `gpupack`).
    MostUsed,
    /// The least used: spreads over GPUs (KAI's `gpuspread`).
    LeastUsed,
    /// The most shares left, then the most used: the order that keeps every count of
    /// [`GpuRequest::shared_pods`] reachable when a pod takes several devices.
    MostRoom,
}

/// Shares of `milli` thousandths and `mem` MiB that still fit on a GPU using `used_milli` and
/// `used_mem` of `gpu_memory_mib`.
fn shares_left(used_milli: u32, used_mem: u32, milli: u32, mem: u32, gpu_memory_mib: u32) -> u64 {
    let by_share = MILLI_PER_GPU.saturating_sub(used_milli) / milli.max(1);
    let by_mem = gpu_memory_mib.saturating_sub(used_mem) / mem.max(1);
    u64::from(by_share.min(by_mem))
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

/// GPU memory, MiB, that a `gpu-memory` request is counted against when a job's total request
/// is taken for quota: the first node's, or 80 GiB on a cluster without nodes.
pub fn quota_gpu_memory_mib(cluster: &Cluster) -> u32 {
    cluster
        .nodes
        .first()
        .map_or(81_920, |n| n.gpu_memory_gib * 1024)
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
                GpuRequest::Fraction { milli, .. } if milli == 0 || milli > MILLI_PER_GPU => {
                    return Err(err(
                        s,
                        format!(
                            "gpu fraction: expected (0, 1], got {}",
                            f64::from(milli) / 1000.0
                        ),
                    ))
                }
                GpuRequest::MemoryMib { mib: 0, .. } => {
                    return Err(err(s, "gpu memory: expected at least 1 MiB".to_owned()))
                }
                GpuRequest::Fraction { devices, .. } | GpuRequest::MemoryMib { devices, .. }
                    if devices == 0 || devices > topology::MAX_GPUS_PER_NODE =>
                {
                    return Err(err(
                        s,
                        format!(
                            "gpu devices: expected 1..={}, got {devices}",
                            topology::MAX_GPUS_PER_NODE
                        ),
                    ))
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
