//! A training layout in `place` (`--model`, `--layout`): the Kueue slice layers it implies on
//! the job ([`layout::slice_layers`]), and its step priced on a candidate placement in each rank
//! order beside the running jobs, for `--network-aware` ([`LayoutPricer`]).

use fabric::{Fabric, JobTraffic, RoutedJob, RoutingConfig};
use formats::FormatError;
use layout::{LevelRoom, OrderChoice, Training};
use topology::{Cluster, NodeId};

/// Put the slice layers `training`'s layout implies on `job` (its one pod set of whole GPUs, as
/// many as the layout has). Layers at levels above the pod set's own required or preferred
/// level are implied by it and left out. Slices the job already gives must equal the derived
/// ones, else an error naming both; any other mismatch (pod sets, GPUs) is an error naming
/// `file`.
pub fn apply_slices(
    cluster: &Cluster,
    job: &mut sched::Job,
    training: &Training,
    file: &str,
) -> Result<(), FormatError> {
    let label = training.layout.label();
    let [set] = job.pod_sets.as_mut_slice() else {
        let n = job.pod_sets.len();
        let msg = format!("--layout {label} needs a job of one pod set, got {n}");
        return Err(FormatError::input(file, msg));
    };
    let g = match set.gpu {
        sched::GpuRequest::Whole(g) if g > 0 => g,
        _ => {
            let msg = format!(
                "--layout {label} needs pods of whole GPUs (pod set `{}`)",
                set.name
            );
            return Err(FormatError::input(file, msg));
        }
    };
    let asked = u64::from(set.count) * u64::from(g);
    if asked != training.layout.gpus() {
        let msg = format!(
            "--layout {label} runs on {} GPUs, but pod set `{}` asks for {} pods × {g} = {asked}",
            training.layout.gpus(),
            set.name,
            set.count
        );
        return Err(FormatError::input(file, msg));
    }
    let per_node = cluster.nodes.iter().map(|n| n.gpus).max().unwrap_or(0);
    let per_nvlink_domain = cluster
        .nvlink_domains
        .iter()
        .map(|d| cluster.nvlink_domain_gpus(d))
        .max()
        .unwrap_or(0);
    let rooms = level_rooms(cluster, g);
    let derived = layout::slice_layers(
        &training.layout,
        g,
        per_node,
        per_nvlink_domain,
        &rooms,
        sched::MAX_SLICE_LAYERS,
    )
    .map_err(|e| FormatError::input(&e.field, &e.message))?;
    let top = set
        .topology
        .required
        .or(set.topology.preferred)
        .unwrap_or(0);
    let derived: Vec<sched::SliceLayer> = derived
        .into_iter()
        .filter(|s| s.level >= top)
        .map(|s| sched::SliceLayer {
            level: s.level,
            size: s.pods,
        })
        .collect();
    if !set.topology.slices.is_empty() && set.topology.slices != derived {
        let msg = format!(
            "pod set `{}`: its slices ({}) conflict with those --layout {label} derives ({}); drop them or give the same",
            set.name,
            slices_text(cluster, &set.topology.slices),
            slices_text(cluster, &derived)
        );
        return Err(FormatError::input(file, msg));
    }
    set.topology.slices = derived;
    job.check(cluster)
        .map_err(|e| FormatError::input(file, format!("with the slices of --layout {label}: {e}")))
}

/// Slice layers as `16 pods per <level label>, …`, outermost first (`none` for none).
pub fn slices_text(cluster: &Cluster, slices: &[sched::SliceLayer]) -> String {
    if slices.is_empty() {
        return "none".to_owned();
    }
    let each: Vec<String> = slices
        .iter()
        .map(|s| {
            format!(
                "{} per {}",
                report::fmt::count_of(s.size as usize, "pod"),
                cluster.levels[s.level].label
            )
        })
        .collect();
    each.join(", ")
}

/// Every level of `cluster` with the most pods of `gpus_per_pod` GPUs one of its domains holds,
/// and whether each of its domains lies inside one NVLink domain.
pub fn level_rooms(cluster: &Cluster, gpus_per_pod: u32) -> Vec<LevelRoom> {
    cluster
        .levels
        .iter()
        .enumerate()
        .map(|(i, level)| LevelRoom {
            level: i,
            host: cluster.host_level == Some(i),
            nvlink: level.domains.iter().all(|&d| {
                let nodes = &cluster.domain(d).nodes;
                nodes
                    .iter()
                    .all(|&n| cluster.node(n).nvlink_domain == cluster.node(nodes[0]).nvlink_domain)
            }),
            pods: level
                .domains
                .iter()
                .map(|&d| {
                    let nodes = &cluster.domain(d).nodes;
                    nodes
                        .iter()
                        .map(|&n| u64::from(cluster.node(n).gpus / gpus_per_pod.max(1)))
                        .sum::<u64>()
                })
                .max()
                .unwrap_or(0),
        })
        .collect()
}

/// Prices a layout job's step on candidate placements beside the running jobs, as `fabric step
/// --placement … --state …` would: the running jobs routed once (a Ring AllReduce each, IDs
/// 1.. in the order given), then each candidate priced in every rank order
/// ([`layout::best_order`]).
#[derive(Debug)]
pub struct LayoutPricer<'c> {
    fabric: Fabric<'c>,
    running: Vec<RoutedJob>,
    cfg: RoutingConfig,
    training: Training,
}

impl<'c> LayoutPricer<'c> {
    /// A pricer for `training` on `cluster` under `cfg`, with `running` (name, traffic) on the
    /// fabric.
    pub fn new(
        cluster: &'c Cluster,
        cfg: RoutingConfig,
        training: &Training,
        running: &[(String, JobTraffic)],
    ) -> Result<Self, FormatError> {
        let mut fabric = Fabric::new(cluster);
        let mut routed = Vec::with_capacity(running.len());
        for (i, (name, traffic)) in running.iter().enumerate() {
            let r = fabric
                .route_flows(traffic, &cfg, i as u64 + 1)
                .map_err(|e| FormatError::input("--state", format!("running job `{name}`: {e}")))?;
            routed.push(r);
        }
        Ok(LayoutPricer {
            fabric,
            running: routed,
            cfg,
            training: training.clone(),
        })
    }

    /// The fastest rank order on `pods` (node and GPUs per pod, in rank order) and its step.
    pub fn price(&mut self, pods: &[(NodeId, Vec<u32>)]) -> Result<OrderChoice, FormatError> {
        let ranks = fabric::ranks_of(pods);
        layout::best_order(
            &mut self.fabric,
            layout::StepInput {
                training: &self.training,
                ranks: &ranks,
                cfg: &self.cfg,
                running: &self.running,
                efficiency: None,
            },
        )
        .map_err(|e| FormatError::input(format!("--layout {}", e.field), e.message))
    }
}
