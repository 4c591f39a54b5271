//! KAI Scheduler workloads: a Pod, a PodGroup with its Pod (and its sub-groups), and every kind
//! of [`workloads::KINDS`] as KAI's pod grouper sees it; KAI's GPU shares, priority classes and
//! preemptibility.

use serde_json::{json, Value};

use super::doc::{JobDoc, JobFormat, LevelRef, PodSetDoc, SubGroupDoc, TopologyDoc};
use super::pod_template::{
    check_gpus_per_pod, fraction, k8s_tolerations, kind, map_str, name_of, parse_cpu_millis,
    parse_memory_mib, path, pod_requests, str_at, GPU_RESOURCE,
};
use crate::error::FormatError;
use crate::k8s::parse_count;
use crate::workloads::{self, MAX_PODS_PER_JOB};

/// KAI: queue label.
pub const KAI_QUEUE_LABEL: &str = "kai.scheduler/queue";
/// KAI: the queue label of Run:ai, which KAI still reads.
pub const KAI_LEGACY_QUEUE_LABEL: &str = "runai/queue";
/// KAI: required placement annotation.
pub const KAI_REQUIRED: &str = "kai.scheduler/topology-required-placement";
/// KAI: preferred placement annotation.
pub const KAI_PREFERRED: &str = "kai.scheduler/topology-preferred-placement";
/// KAI: GPU fraction annotation.
pub const KAI_GPU_FRACTION: &str = "gpu-fraction";
/// KAI: GPU memory annotation (MiB).
pub const KAI_GPU_MEMORY: &str = "gpu-memory";
/// KAI: how many GPUs of one node a `gpu-fraction` or `gpu-memory` share is taken of.
pub const KAI_GPU_NUM_DEVICES: &str = "gpu-fraction-num-devices";

/// KAI's `gpu-fraction-num-devices` annotation (`None`: absent): devices a share is taken of,
/// an integer from 1 to the most GPUs a node may have; only with a share (`shared`).
pub(crate) fn kai_num_devices(value: Option<&str>, shared: bool) -> Result<u32, String> {
    let Some(v) = value else { return Ok(1) };
    let field = format!("metadata.annotations[{KAI_GPU_NUM_DEVICES}]");
    if !shared {
        return Err(format!(
            "{field}: applies only with {KAI_GPU_FRACTION} or {KAI_GPU_MEMORY}"
        ));
    }
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=topology::MAX_GPUS_PER_NODE).contains(n))
        .ok_or_else(|| {
            format!(
                "{field}: expected an integer from 1 to {}, got \"{}\"",
                topology::MAX_GPUS_PER_NODE,
                crate::error::excerpt(v)
            )
        })
}

/// KAI's predefined PriorityClasses and their values (KAI docs/priority/README.md, "Priority
/// Classes", and deployments/kai-scheduler/templates/priorityclasses/*.yaml at commit d5bc503a).
pub const KAI_PRIORITY_CLASSES: [(&str, i32); 4] = [
    ("train", 50),
    ("build-preemptible", 75),
    ("build", 100),
    ("inference", 125),
];

/// The class KAI gives a Pod or PodGroup without one ("Train as the general default").
pub const KAI_DEFAULT_PRIORITY_CLASS: &str = "train";

/// From this priority on, a KAI job without an explicit preemptibility is non-preemptible
/// (KAI's pkg/common/podgroup/preemptible.go).
pub const KAI_NON_PREEMPTIBLE_PRIORITY: i32 = 100;

/// A KAI job's priority and preemptibility, as KAI derives them: the priority class named by the
/// PodGroup's `spec.priorityClassName`, else a `priorityClassName` label on the PodGroup or the
/// pod, else the pod's `spec.priorityClassName` — one of KAI's predefined classes — else the pod's
/// numeric `spec.priority`, else `train`; preemptible from the `kai.scheduler/preemptibility`
/// label (`preemptible` / `non-preemptible`), else below priority 100. An unknown class or
/// preemptibility is an error naming the field.
pub(crate) fn kai_priority(owner: &Value, pod: &Value) -> Result<(i32, bool), String> {
    let labels = ["metadata", "labels"];
    let class = str_at(owner, &["spec", "priorityClassName"])
        .map(|c| (c.to_owned(), "spec.priorityClassName"))
        .or_else(|| {
            map_str(owner, &labels, "priorityClassName")
                .map(|c| (c, "metadata.labels[priorityClassName]"))
        })
        .or_else(|| {
            map_str(pod, &labels, "priorityClassName")
                .map(|c| (c, "metadata.labels[priorityClassName]"))
        })
        .or_else(|| {
            str_at(pod, &["spec", "priorityClassName"])
                .map(|c| (c.to_owned(), "spec.priorityClassName"))
        });
    let numeric = pod
        .pointer("/spec/priority")
        .and_then(Value::as_i64)
        .and_then(|p| i32::try_from(p).ok());
    let priority = match (class, numeric) {
        (Some((c, field)), _) => KAI_PRIORITY_CLASSES
            .iter()
            .find(|(name, _)| *name == c)
            .map(|&(_, v)| v)
            .ok_or_else(|| {
                let known: Vec<String> = KAI_PRIORITY_CLASSES
                    .iter()
                    .map(|(n, v)| format!("{n} ({v})"))
                    .collect();
                format!(
                    "{field}: unknown priority class `{c}`; KAI's predefined classes are {}",
                    known.join(", ")
                )
            })?,
        (None, Some(p)) => p,
        (None, None) => KAI_PRIORITY_CLASSES
            .iter()
            .find(|(name, _)| *name == KAI_DEFAULT_PRIORITY_CLASS)
            .map_or(0, |&(_, v)| v),
    };
    let label = "kai.scheduler/preemptibility";
    let preemptible = match map_str(owner, &labels, label).or_else(|| map_str(pod, &labels, label))
    {
        None => priority < KAI_NON_PREEMPTIBLE_PRIORITY,
        Some(v) if v == "preemptible" => true,
        Some(v) if v == "non-preemptible" => false,
        Some(v) => {
            return Err(format!(
                "metadata.labels[{label}]: expected preemptible or non-preemptible, got \"{v}\""
            ))
        }
    };
    Ok((priority, preemptible))
}

/// KAI: the annotation that overrides a `batch/v1` Job's pod-group minimum.
pub const KAI_BATCH_MIN_MEMBER: &str = "kai.scheduler/batch-min-member";

/// A workload as KAI's pod grouper sees it (KAI-Scheduler at d5bc503a,
/// `pkg/podgrouper/podgrouper/plugins`): one pod group for the top owner, named after it; the
/// queue from the owner's `kai.scheduler/queue` label, else the pod template's, else KAI's
/// `default-queue`; the topology request from the owner's `kai.scheduler/topology-required-
/// placement` / `-preferred-placement` annotations; the pods of every template, each pod set
/// read as [`kai_job`] reads a Pod. The gang minimum: a `batch/v1` Job's is 1 unless
/// `kai.scheduler/batch-min-member` says otherwise (KAI's job grouper); every other kind's is
/// all its pods.
pub(super) fn kai_workload(
    file: &str,
    document: usize,
    d: &Value,
    wk: &workloads::WorkloadKind,
) -> Result<JobDoc, FormatError> {
    let at = format!("document {document}");
    let name = name_of(file, &at, d)?;
    let err = |m: String| FormatError::input(file, format!("{at} ({} {name}): {m}", wk.kind));
    let sets = workloads::pod_sets(d, wk).map_err(|p| err(p.to_string()))?;
    let owner_ann = |k: &str| map_str(d, &["metadata", "annotations"], k);
    let owner_label = |k: &str| map_str(d, &["metadata", "labels"], k);
    let total: u32 = sets.iter().map(|s| s.count).sum();
    let min = if wk.kind == "Job" {
        match owner_ann(KAI_BATCH_MIN_MEMBER) {
            None => 1,
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|&m| (1..=total).contains(&m))
                .ok_or_else(|| {
                    err(format!(
                        "metadata.annotations[{KAI_BATCH_MIN_MEMBER}]: expected 1..={total}, got \"{v}\""
                    ))
                })?,
        }
    } else {
        total
    };
    let mut out: Option<JobDoc> = None;
    let mut left = min;
    for set in &sets {
        // The set's pods as KAI sees them: the template with the owner's queue label when the
        // template names none, in a pod group carrying the owner's topology annotations.
        let mut pod = set.template.clone();
        let queue = owner_label(KAI_QUEUE_LABEL)
            .or_else(|| map_str(&pod, &["metadata", "labels"], KAI_QUEUE_LABEL))
            .or_else(|| owner_label(KAI_LEGACY_QUEUE_LABEL))
            .unwrap_or_else(|| "default-queue".to_owned());
        if let Some(meta) = pod.as_object_mut() {
            meta.entry("metadata").or_insert_with(|| json!({}));
        }
        let mut constraint = serde_json::Map::new();
        if let Some(r) = owner_ann(KAI_REQUIRED) {
            constraint.insert("requiredTopologyLevel".into(), Value::String(r));
        }
        if let Some(p) = owner_ann(KAI_PREFERRED) {
            constraint.insert("preferredTopologyLevel".into(), Value::String(p));
        }
        let group = json!({
            "kind": wk.kind,
            "metadata": {"name": name, "labels": d.pointer("/metadata/labels").cloned().unwrap_or(Value::Null)},
            "spec": {
                "minMember": set.count,
                "queue": queue,
                "topologyConstraint": Value::Object(constraint),
                "priorityClassName": d.pointer("/spec/priorityClassName").cloned().unwrap_or(Value::Null),
            }
        });
        let mut job = kai_job(file, document, &pod, Some(&group))?;
        let mut ps = job.pod_sets.remove(0);
        ps.name = set.name.clone();
        ps.min_count = Some(left.clamp(1, set.count));
        left = left.saturating_sub(set.count);
        // KAI reads the topology annotations from the owner: name them there in messages.
        if let Some(r) = ps.topology.required.as_mut() {
            r.field = format!("metadata.annotations[{KAI_REQUIRED}]");
        }
        if let Some(p) = ps.topology.preferred.as_mut() {
            p.field = format!("metadata.annotations[{KAI_PREFERRED}]");
        }
        match &mut out {
            None => {
                job.pod_sets = vec![ps];
                job.queue_field = format!("metadata.labels[{KAI_QUEUE_LABEL}]");
                out = Some(job);
            }
            Some(first) => first.pod_sets.push(ps),
        }
    }
    out.ok_or_else(|| err("no pod templates".to_owned()))
}

pub(super) fn kai_job(
    file: &str,
    document: usize,
    pod: &Value,
    group: Option<&Value>,
) -> Result<JobDoc, FormatError> {
    let owner = group.unwrap_or(pod);
    let at = format!("document {document}");
    let name = name_of(file, &at, owner)?;
    let at = format!("{at} ({} {name})", kind(owner));
    let err = |m: String| FormatError::input(file, format!("{at}: {m}"));
    let ann = ["metadata", "annotations"];
    let label = |k: &str| {
        map_str(pod, &["metadata", "labels"], k).map(|q| (q, format!("metadata.labels[{k}]")))
    };
    let (queue, queue_field) = match group {
        Some(g) => str_at(g, &["spec", "queue"]).map(|q| (q.to_owned(), "spec.queue".to_owned())),
        None => None,
    }
    .or_else(|| label(KAI_QUEUE_LABEL))
    .or_else(|| label(KAI_LEGACY_QUEUE_LABEL))
    .ok_or_else(|| {
        err(format!(
            "metadata.labels[{KAI_QUEUE_LABEL}]: missing; KAI schedules only pods that name a queue"
        ))
    })?;
    let pod_spec = pod.get("spec").cloned().unwrap_or(Value::Null);
    let whole = pod_requests(file, &at, &pod_spec, "spec", GPU_RESOURCE, parse_count)?;
    check_gpus_per_pod(whole).map_err(|m| err(format!("spec.containers: {m}")))?;
    let frac = map_str(pod, &ann, KAI_GPU_FRACTION);
    let mem = map_str(pod, &ann, KAI_GPU_MEMORY);
    let afield = |k: &str| format!("metadata.annotations[{k}]");
    let gpu = match (frac, mem) {
        (Some(_), Some(_)) => {
            return Err(err(format!(
                "metadata.annotations: {KAI_GPU_FRACTION} and {KAI_GPU_MEMORY} are mutually exclusive"
            )))
        }
        (Some(_), None) | (None, Some(_)) if whole > 0 => {
            return Err(err(format!(
                "spec.containers: a {GPU_RESOURCE} limit cannot be combined with {KAI_GPU_FRACTION} or {KAI_GPU_MEMORY}"
            )))
        }
        (Some(f), None) => {
            let v: f64 = f
                .parse()
                .map_err(|_| err(format!("{}: expected a number, got \"{f}\"", afield(KAI_GPU_FRACTION))))?;
            fraction(v).map_err(|m| err(format!("{}: {m}", afield(KAI_GPU_FRACTION))))?
        }
        (None, Some(m)) => {
            let v: u32 = m
                .parse()
                .ok()
                .filter(|&v| v >= 1)
                .ok_or_else(|| err(format!("{}: expected MiB as a positive integer, got \"{m}\"", afield(KAI_GPU_MEMORY))))?;
            sched::GpuRequest::memory_mib(v)
        }
        (None, None) => sched::GpuRequest::Whole(u32::try_from(whole).unwrap_or(u32::MAX)),
    };
    let devices = kai_num_devices(
        map_str(pod, &ann, KAI_GPU_NUM_DEVICES).as_deref(),
        gpu.is_shared(),
    )
    .map_err(err)?;
    let gpu = match gpu {
        sched::GpuRequest::Fraction { milli, .. } => sched::GpuRequest::Fraction { milli, devices },
        sched::GpuRequest::MemoryMib { mib, .. } => sched::GpuRequest::MemoryMib { mib, devices },
        whole => whole,
    };
    let min_sub_group = group.and_then(|g| path(g, &["spec", "minSubGroup"]));
    let (count, required, preferred) = match group {
        Some(g) => {
            let count = match min_sub_group {
                // KAI's webhook: minMember and minSubGroup are mutually exclusive; with
                // minSubGroup the sub-groups say how many pods.
                Some(_) if path(g, &["spec", "minMember"]).is_some() => {
                    return Err(err(
                        "spec.minSubGroup: minMember and minSubGroup are mutually exclusive"
                            .to_owned(),
                    ))
                }
                Some(_) => 0,
                // The PodGroup CRD types minMember as an integer (scheduling.run.ai_podgroups.yaml
                // at d5bc503a: `type: integer`): the API server refuses "2".
                None if path(g, &["spec", "minMember"]).is_some_and(Value::is_string) => {
                    return Err(err(format!(
                        "spec.minMember: expected a number of pods, got the string {} (the PodGroup CRD types it as an integer)",
                        path(g, &["spec", "minMember"]).map(Value::to_string).unwrap_or_default()
                    )))
                }
                None => path(g, &["spec", "minMember"])
                    .and_then(parse_count)
                    .filter(|&n| (1..=u64::from(MAX_PODS_PER_JOB)).contains(&n))
                    .ok_or_else(|| {
                        err(format!(
                            "spec.minMember: expected 1..={MAX_PODS_PER_JOB} pods"
                        ))
                    })? as u32,
            };
            let tc = ["spec", "topologyConstraint"];
            let r = str_at(g, &[tc[0], tc[1], "requiredTopologyLevel"]).map(|l| LevelRef {
                label: l.to_owned(),
                field: "spec.topologyConstraint.requiredTopologyLevel".to_owned(),
            });
            let p = str_at(g, &[tc[0], tc[1], "preferredTopologyLevel"]).map(|l| LevelRef {
                label: l.to_owned(),
                field: "spec.topologyConstraint.preferredTopologyLevel".to_owned(),
            });
            (count, r, p)
        }
        None => (
            1,
            map_str(pod, &ann, KAI_REQUIRED).map(|l| LevelRef {
                label: l,
                field: afield(KAI_REQUIRED),
            }),
            map_str(pod, &ann, KAI_PREFERRED).map(|l| LevelRef {
                label: l,
                field: afield(KAI_PREFERRED),
            }),
        ),
    };
    let cpu_millis = pod_requests(file, &at, &pod_spec, "spec", "cpu", parse_cpu_millis)?;
    let memory_mib = pod_requests(file, &at, &pod_spec, "spec", "memory", parse_memory_mib)?;
    let (priority, preemptible) = kai_priority(owner, pod).map_err(err)?;
    let tolerations = k8s_tolerations(file, &at, &pod_spec, "spec")?;
    let pod_set = |name: String, count: u32, topology: TopologyDoc, sub_group: Option<usize>| {
        PodSetDoc {
            name,
            count,
            min_count: None,
            gpu,
            cpu_millis,
            memory_mib,
            topology,
            gpu_field: format!(
                "{at}: spec.containers: no {GPU_RESOURCE} limit, {KAI_GPU_FRACTION} or {KAI_GPU_MEMORY}"
            ),
            pod_spec: pod_spec.clone(),
            extras: sched::PodSetExtras {
                sub_group,
                ..sched::PodSetExtras::default()
            },
        }
    };
    // A PodGroup with sub-groups: one pod set per leaf sub-group; else the one pod set.
    let (pod_sets, sub_groups) = match group.and_then(|g| path(g, &["spec", "subGroups"])) {
        Some(list) => {
            let (sub_groups, leaves) =
                kai_sub_groups(list, required, preferred, min_sub_group).map_err(err)?;
            let pod_sets = leaves
                .into_iter()
                .map(|(n, count, topology, parent)| pod_set(n, count, topology, Some(parent)))
                .collect();
            (pod_sets, sub_groups)
        }
        None => {
            if min_sub_group.is_some() {
                return Err(err(
                    "spec.minSubGroup: applies only to a PodGroup with spec.subGroups".to_owned(),
                ));
            }
            let topology = TopologyDoc {
                required,
                preferred,
                slices: Vec::new(),
            };
            (
                vec![pod_set("main".to_owned(), count, topology, None)],
                Vec::new(),
            )
        }
    };
    Ok(JobDoc {
        format: JobFormat::Kai,
        document,
        queue_field,
        name,
        queue,
        priority,
        preemptible,
        tolerations,
        pod_sets,
        sub_groups,
    })
}

/// A PodGroup's `spec.subGroups`: the sub-groups with children (the PodGroup itself first, as
/// `podgroup`, with its own constraint), and the leaves as (name, minMember, constraint, parent
/// index), with `minSubGroup` of the PodGroup (`root_min`) and of the sub-groups with children.
/// Errors name the field: a missing or duplicate name, an unknown or cyclic parent, a leaf
/// without `minMember`, a `minSubGroup` on a leaf or above its direct sub-groups.
type Leaf = (String, u32, TopologyDoc, usize);
fn kai_sub_groups(
    list: &Value,
    required: Option<LevelRef>,
    preferred: Option<LevelRef>,
    root_min: Option<&Value>,
) -> Result<(Vec<SubGroupDoc>, Vec<Leaf>), String> {
    let items = list
        .as_array()
        .ok_or("spec.subGroups: expected a list of sub-groups")?;
    if items.is_empty() {
        return Err("spec.subGroups: expected at least one sub-group".to_owned());
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, g) in items.iter().enumerate() {
        let n = str_at(g, &["name"])
            .filter(|n| !n.is_empty())
            .ok_or_else(|| format!("spec.subGroups[{i}].name: expected a name"))?;
        if names.contains(&n) {
            return Err(format!("spec.subGroups[{i}].name: `{n}` appears twice"));
        }
        names.push(n);
    }
    let mut parent: Vec<Option<usize>> = Vec::new();
    for (i, g) in items.iter().enumerate() {
        parent.push(match str_at(g, &["parent"]) {
            None => None,
            Some(p) => Some(names.iter().position(|n| *n == p).ok_or_else(|| {
                format!(
                    "spec.subGroups[{i}].parent: `{p}` is not a sub-group of this PodGroup (sub-groups: {})",
                    names.join(", ")
                )
            })?),
        });
    }
    // Depth of each sub-group; a chain longer than the list is a cycle.
    let mut depth = vec![0usize; items.len()];
    for (i, d) in depth.iter_mut().enumerate() {
        let mut at = parent[i];
        while let Some(p) = at {
            *d += 1;
            if *d > items.len() {
                return Err(format!(
                    "spec.subGroups[{i}].parent: the parents of `{}` form a cycle",
                    names[i]
                ));
            }
            at = parent[p];
        }
    }
    let constraint = |i: usize| {
        let tc = |k: &str| {
            str_at(&items[i], &["topologyConstraint", k]).map(|l| LevelRef {
                label: l.to_owned(),
                field: format!("spec.subGroups[{i}].topologyConstraint.{k}"),
            })
        };
        TopologyDoc {
            required: tc("requiredTopologyLevel"),
            preferred: tc("preferredTopologyLevel"),
            slices: Vec::new(),
        }
    };
    let has_children: Vec<bool> = (0..items.len())
        .map(|i| parent.contains(&Some(i)))
        .collect();
    // Inner sub-groups, parents first (by depth, then list order); index 0 is the PodGroup.
    let mut inner: Vec<usize> = (0..items.len()).filter(|&i| has_children[i]).collect();
    inner.sort_by_key(|&i| (depth[i], i));
    // KAI's minSubGroup: 1 up to the direct sub-groups (its webhook's bound).
    let min_of = |v: Option<&Value>, field: String, children: usize| match v {
        None => Ok(None),
        Some(v) => parse_count(v)
            .filter(|&n| n >= 1 && n <= children as u64)
            .map(|n| Some(n as u32))
            .ok_or_else(|| format!("{field}: expected 1..={children} (its direct sub-groups)")),
    };
    let children_of = |p: Option<usize>| parent.iter().filter(|&&q| q == p).count();
    let mut groups = vec![SubGroupDoc {
        name: "podgroup".to_owned(),
        parent: None,
        topology: TopologyDoc {
            required,
            preferred,
            slices: Vec::new(),
        },
        min_sub_groups: min_of(root_min, "spec.minSubGroup".to_owned(), children_of(None))?,
    }];
    for (i, item) in items.iter().enumerate() {
        if !has_children[i] && path(item, &["minSubGroup"]).is_some() {
            return Err(format!(
                "spec.subGroups[{i}].minSubGroup: applies only to a sub-group with sub-groups under it (`{}` holds pods)",
                names[i]
            ));
        }
    }
    let index_of = |i: Option<usize>| match i {
        None => 0,
        Some(p) => 1 + inner.iter().position(|&x| x == p).unwrap_or(0),
    };
    for &i in &inner {
        groups.push(SubGroupDoc {
            name: names[i].to_owned(),
            parent: Some(index_of(parent[i])),
            topology: constraint(i),
            min_sub_groups: min_of(
                path(&items[i], &["minSubGroup"]),
                format!("spec.subGroups[{i}].minSubGroup"),
                children_of(Some(i)),
            )?,
        });
    }
    let mut leaves = Vec::new();
    for i in (0..items.len()).filter(|&i| !has_children[i]) {
        let count = path(&items[i], &["minMember"])
            .and_then(parse_count)
            .filter(|&n| (1..=u64::from(MAX_PODS_PER_JOB)).contains(&n))
            .ok_or_else(|| {
                format!(
                    "spec.subGroups[{i}].minMember: expected 1..={MAX_PODS_PER_JOB} pods (sub-group `{}` holds pods)",
                    names[i]
                )
            })? as u32;
        leaves.push((
            names[i].to_owned(),
            count,
            constraint(i),
            index_of(parent[i]),
        ));
    }
    Ok((groups, leaves))
}
