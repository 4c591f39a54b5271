//! Resolving a job's levels against a cluster: the level rules of a topology request
//! ([`resolve_levels`]) and [`JobDoc::resolve`], which turns a job as read into a checked
//! [`sched::Job`].

use topology::Cluster;

use super::doc::{JobDoc, LevelRef, TopologyDoc};
use crate::error::{FieldProblem, FormatError};

/// Resolve a pod set's topology request against `levels` (node labels, top first) of `owner`
/// (for messages: `cluster NAME`, `Topology NAME`) and check the level rules: every level is
/// one of `levels`; preferred at or below required; each slice level at or below the level
/// above it (the required, else the preferred, else the previous slice) and each slice size
/// dividing the size above (the pod `count`, then the previous slice). The one implementation
/// of these rules: [`JobDoc::resolve`] calls it with a cluster's levels, `lint` with a Topology
/// object's. The first problem is returned, as `FIELD: message`.
pub fn resolve_levels(
    topology: &TopologyDoc,
    count: u32,
    levels: &[&str],
    owner: &str,
) -> Result<sched::TopologyRequest, FieldProblem> {
    resolve_aliased_levels(topology, count, levels, &[], owner)
}

/// [`resolve_levels`], where a level may also be named by its alias (`aliases[i]` of
/// `levels[i]`; a KAI Topology level's `alias`): KAI resolves an alias to its node label before
/// placing (`TopologyConstraintInfo.ResolveAliases`, pkg/scheduler/api/topology_info at
/// d5bc503a), and a raw label keeps working.
pub fn resolve_aliased_levels(
    topology: &TopologyDoc,
    count: u32,
    levels: &[&str],
    aliases: &[Option<&str>],
    owner: &str,
) -> Result<sched::TopologyRequest, FieldProblem> {
    let alias = |i: usize| aliases.get(i).copied().flatten();
    let level_of = |r: &LevelRef| {
        levels
            .iter()
            .position(|l| *l == r.label)
            .or_else(|| (0..levels.len()).find(|&i| alias(i) == Some(r.label.as_str())))
            .ok_or_else(|| FieldProblem {
                field: r.field.clone(),
                message: format!(
                    "`{}` is not a level of {owner} (levels: {})",
                    r.label,
                    levels
                        .iter()
                        .enumerate()
                        .map(|(i, l)| match alias(i) {
                            Some(a) => format!("{l} (alias {a})"),
                            None => (*l).to_owned(),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    };
    let required = topology.required.as_ref().map(level_of).transpose()?;
    let preferred = topology.preferred.as_ref().map(level_of).transpose()?;
    if let (Some(r), Some(p), Some(pr)) = (required, preferred, &topology.preferred) {
        if p < r {
            return Err(FieldProblem {
                field: pr.field.clone(),
                message: format!(
                    "preferred level `{}` must be at or below the required level `{}`",
                    pr.label, levels[r]
                ),
            });
        }
    }
    let mut slices = Vec::new();
    let mut above = required.or(preferred);
    let mut above_size = count;
    for (lref, size) in &topology.slices {
        let level = level_of(lref)?;
        if let Some(a) = above {
            if level < a {
                return Err(FieldProblem {
                    field: lref.field.clone(),
                    message: format!(
                        "slice level `{}` must be at or below `{}`",
                        lref.label, levels[a]
                    ),
                });
            }
        }
        if *size == 0 || above_size % size != 0 {
            return Err(FieldProblem {
                field: lref.field.clone(),
                message: format!("slice size {size} must divide {above_size}"),
            });
        }
        above = Some(level);
        above_size = *size;
        slices.push(sched::SliceLayer { level, size: *size });
    }
    Ok(sched::TopologyRequest {
        required,
        preferred,
        slices,
    })
}

impl JobDoc {
    /// Whether the job asks for something railyard can place it by, needing no cluster: some
    /// pod set asks for GPUs (KAI jobs excepted), and every pod set asks for GPUs or another
    /// resource. The message (without the file) is the one [`JobDoc::resolve`] refuses with, so
    /// `lint` reports what `place` would refuse.
    pub fn check_requests(&self) -> Result<(), String> {
        // KAI schedules pods that request no GPU, and pods that request nothing at all (a
        // BestEffort pod takes a pod slot and nothing else), in the gang of their workload: its
        // own RayJob and MPIJob examples are such. Kueue and native jobs are GPU jobs.
        if self.format == super::doc::JobFormat::Kai {
            return Ok(());
        }
        let none = sched::GpuRequest::Whole(0);
        if self.pod_sets.iter().all(|s| s.gpu == none) {
            return Err(format!(
                "{}; no pod set of job `{}` asks for GPUs (railyard places GPU jobs)",
                self.pod_sets.first().map_or("", |s| s.gpu_field.as_str()),
                self.name
            ));
        }
        // A pod without GPUs is placed by its other requests (a launcher, a Ray head); one that
        // asks for nothing at all has nothing to place it by.
        match self
            .pod_sets
            .iter()
            .find(|s| s.gpu == none && s.extras.requests.is_empty())
        {
            Some(s) => Err(format!(
                "{}, and no other resource requests; railyard places pods by what they request",
                s.gpu_field
            )),
            None => Ok(()),
        }
    }

    /// Resolve level labels against the cluster, apply the format's ordering rules, and check
    /// the result with [`sched::Job::check`].
    pub fn resolve(&self, file: &str, cluster: &Cluster) -> Result<sched::Job, FormatError> {
        let mut pod_sets = Vec::new();
        self.check_requests()
            .map_err(|m| FormatError::input(file, m))?;
        for s in &self.pod_sets {
            let levels: Vec<&str> = cluster.levels.iter().map(|l| l.label.as_str()).collect();
            let aliases: Vec<Option<&str>> =
                cluster.levels.iter().map(|l| l.alias.as_deref()).collect();
            let topology = resolve_aliased_levels(
                &s.topology,
                s.count,
                &levels,
                &aliases,
                &format!("cluster {}", cluster.name),
            )
            .map_err(|p| FormatError::input(file, p))?;
            pod_sets.push(sched::PodSet {
                name: s.name.clone(),
                count: s.count,
                min_count: s.min_count.unwrap_or(s.count),
                gpu: s.gpu,
                cpu_millis: s.cpu_millis,
                memory_mib: s.memory_mib,
                topology,
            });
        }
        let job = sched::Job {
            name: self.name.clone(),
            queue: self.queue.clone(),
            priority: self.priority,
            preemptible: self.preemptible,
            pod_sets,
            tolerations: self.tolerations.clone(),
        };
        job.check(cluster)
            .map_err(|e| FormatError::input(file, e))?;
        Ok(job)
    }

    /// The KAI sub-groups above the pod sets, their levels resolved against the cluster.
    pub fn resolve_sub_groups(
        &self,
        file: &str,
        cluster: &Cluster,
    ) -> Result<Vec<sched::SubGroup>, FormatError> {
        let levels: Vec<&str> = cluster.levels.iter().map(|l| l.label.as_str()).collect();
        let aliases: Vec<Option<&str>> =
            cluster.levels.iter().map(|l| l.alias.as_deref()).collect();
        self.sub_groups
            .iter()
            .map(|g| {
                let topology = resolve_aliased_levels(
                    &g.topology,
                    1,
                    &levels,
                    &aliases,
                    &format!("cluster {}", cluster.name),
                )
                .map_err(|p| FormatError::input(file, p))?;
                Ok(sched::SubGroup {
                    name: g.name.clone(),
                    parent: g.parent,
                    topology,
                    min_sub_groups: g.min_sub_groups,
                })
            })
            .collect()
    }

    /// The placement constraints of each pod set, in pod-set order ([`sched::PlaceInput`]).
    pub fn extras(&self) -> Vec<sched::PodSetExtras> {
        self.pod_sets.iter().map(|s| s.extras.clone()).collect()
    }

    /// Total request at full size (memory requests counted against 80 GiB GPUs).
    pub fn request(&self) -> sched::Resources {
        let mut r = sched::Resources::default();
        for s in &self.pod_sets {
            let n = f64::from(s.count);
            r.gpu += n * s.gpu.gpus(80 * 1024);
            r.cpu += n * s.cpu_millis as f64;
            r.memory += n * s.memory_mib as f64;
        }
        r
    }
}
