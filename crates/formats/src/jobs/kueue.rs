//! Kueue workloads: every kind of [`workloads::KINDS`] marked with a `kueue.x-k8s.io/queue-name`
//! label, Kueue pod groups of plain Pods, and the TAS annotations of a pod template
//! ([`kueue_topology`]), with what Kueue reads and railyard does not ([`kueue_unread`]).

use serde_json::{json, Value};

use super::doc::{JobDoc, JobFormat, LevelRef, PodSetDoc, TopologyDoc};
use super::pod_template::{
    check_gpus_per_pod, kind, map_str, name_of, parse_cpu_millis, parse_memory_mib, path,
    pod_requests, template_extras, GPU_RESOURCE, KUEUE_PODSET_GROUP,
};
use crate::error::{FieldProblem, FormatError};
use crate::k8s::parse_count;
use crate::workloads::{self, MAX_PODS_PER_JOB};

/// Kueue: the queue label on a Job.
pub const KUEUE_QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// Kueue pod-template annotations.
pub const KUEUE_REQUIRED: &str = "kueue.x-k8s.io/podset-required-topology";
/// Kueue: preferred topology annotation.
pub const KUEUE_PREFERRED: &str = "kueue.x-k8s.io/podset-preferred-topology";
/// Kueue: unconstrained topology annotation.
pub const KUEUE_UNCONSTRAINED: &str = "kueue.x-k8s.io/podset-unconstrained-topology";
/// Kueue: slice level annotation.
pub const KUEUE_SLICE_REQUIRED: &str = "kueue.x-k8s.io/podset-slice-required-topology";
/// Kueue: slice size annotation.
pub const KUEUE_SLICE_SIZE: &str = "kueue.x-k8s.io/podset-slice-size";
/// Kueue: partial admission (gang minimum) annotation on the Job.
pub const KUEUE_MIN_PARALLELISM: &str = "kueue.x-k8s.io/job-min-parallelism";

/// How a pod set's count is named in messages: `4 pods of pod set `main``.
pub fn count_source(set: &workloads::PodTemplateSet) -> String {
    format!("{} pods of pod set `{}`", set.count, set.name)
}

/// The prefix of a pod set's template fields (`spec.template.`; empty for a bare Pod).
pub fn template_base(set: &workloads::PodTemplateSet) -> String {
    if set.field.is_empty() {
        String::new()
    } else {
        format!("{}.", set.field)
    }
}

/// The Kueue TAS annotations of a pod set's template, read and checked with
/// [`kueue_topology`] against the set's count: the one call `place` and `lint` both make.
pub fn set_topology(set: &workloads::PodTemplateSet) -> (TopologyDoc, Vec<FieldProblem>) {
    kueue_topology(
        path(&set.template, &["metadata", "annotations"]),
        &format!("{}metadata.annotations", template_base(set)),
        Some((set.count, &count_source(set))),
    )
}

/// The Kueue annotations railyard reads on a pod template.
const KUEUE_TEMPLATE_ANNOTATIONS_READ: [&str; 7] = [
    KUEUE_REQUIRED,
    KUEUE_PREFERRED,
    KUEUE_UNCONSTRAINED,
    KUEUE_SLICE_REQUIRED,
    KUEUE_SLICE_SIZE,
    KUEUE_SLICE_CONSTRAINTS,
    KUEUE_PODSET_GROUP,
];

/// Kueue: the multi-layer slice annotation, a JSON array of `{"topology": LABEL, "size": N}`,
/// outermost first, at most three (Kueue's `TASMultiLayerTopology`).
pub const KUEUE_SLICE_CONSTRAINTS: &str =
    "kueue.x-k8s.io/podset-slice-required-topology-constraints";

/// The Kueue labels and annotations railyard reads on a workload object.
const KUEUE_OBJECT_KEYS_READ: [&str; 4] = [
    KUEUE_QUEUE_LABEL,
    KUEUE_MIN_PARALLELISM,
    KUEUE_POD_GROUP_LABEL,
    KUEUE_POD_GROUP_TOTAL,
];

/// What Kueue would act on but railyard does not: `kueue.x-k8s.io/` labels and annotations it
/// does not read, on the object and on each pod template (`sets`). One problem each, for
/// `lint` to report as warnings, so that a manifest is never "no findings" while railyard would
/// place it other than Kueue does.
pub fn kueue_unread(doc: &Value, sets: &[workloads::PodTemplateSet]) -> Vec<FieldProblem> {
    let mut out = Vec::new();
    let keys = |out: &mut Vec<FieldProblem>, v: Option<&Value>, base: &str, read: &[&str]| {
        for k in v
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|o| o.keys())
        {
            if k.starts_with("kueue.x-k8s.io/") && !read.contains(&k.as_str()) {
                out.push(FieldProblem {
                    field: format!("{base}[{k}]"),
                    message: "Kueue acts on this; railyard does not (its placement may differ from Kueue's)".to_owned(),
                });
            }
        }
    };
    for part in ["labels", "annotations"] {
        keys(
            &mut out,
            path(doc, &["metadata", part]),
            &format!("metadata.{part}"),
            &KUEUE_OBJECT_KEYS_READ,
        );
    }
    let pod_doc = kind(doc) == "Pod";
    for set in sets {
        let base = template_base(set);
        if !pod_doc {
            keys(
                &mut out,
                path(&set.template, &["metadata", "annotations"]),
                &format!("{base}metadata.annotations"),
                &KUEUE_TEMPLATE_ANNOTATIONS_READ,
            );
        }
    }
    out
}

/// Kueue: the label naming a plain pod's group.
pub const KUEUE_POD_GROUP_LABEL: &str = "kueue.x-k8s.io/pod-group-name";
/// Kueue: the annotation giving a pod group's total pod count.
pub const KUEUE_POD_GROUP_TOTAL: &str = "kueue.x-k8s.io/pod-group-total-count";

/// One Kueue workload per document (one per replica group for a LeaderWorkerSet, named
/// `NAME-0`, `NAME-1`, …), each pod set read from its template.
pub(super) fn kueue_workload(
    file: &str,
    document: usize,
    d: &Value,
    wk: &workloads::WorkloadKind,
) -> Result<Vec<JobDoc>, FormatError> {
    let at = format!("document {document}");
    let name = name_of(file, &at, d)?;
    let at = format!("{at} ({} {name})", wk.kind);
    let err = |m: String| FormatError::input(file, format!("{at}: {m}"));
    let queue = map_str(d, &["metadata", "labels"], KUEUE_QUEUE_LABEL).ok_or_else(|| {
        err(format!(
            "metadata.labels[{KUEUE_QUEUE_LABEL}]: missing; Kueue only admits workloads that name a LocalQueue"
        ))
    })?;
    let sets = workloads::pod_sets(d, wk).map_err(|p| err(p.to_string()))?;
    let groups = workloads::replica_groups(d, wk).map_err(|p| err(p.to_string()))?;
    let mut pod_sets = Vec::new();
    let mut priority = 0;
    for (k, set) in sets.iter().enumerate() {
        let base = template_base(set);
        let pod_spec = set.template.get("spec").cloned().unwrap_or(Value::Null);
        let spec_field = format!("{base}spec");
        let (topology, problems) = set_topology(set);
        if let Some(p) = problems.first() {
            return Err(err(p.to_string()));
        }
        let gpus = pod_requests(file, &at, &pod_spec, &spec_field, GPU_RESOURCE, parse_count)?;
        check_gpus_per_pod(gpus).map_err(|m| err(format!("{spec_field}.containers: {m}")))?;
        let cpu_millis = pod_requests(file, &at, &pod_spec, &spec_field, "cpu", parse_cpu_millis)?;
        let memory_mib = pod_requests(
            file,
            &at,
            &pod_spec,
            &spec_field,
            "memory",
            parse_memory_mib,
        )?;
        if k == 0 {
            priority = pod_spec
                .get("priority")
                .and_then(Value::as_i64)
                .unwrap_or(0) as i32;
        }
        let extras = template_extras(file, &at, &set.template, &base)?;
        let min_count = if wk.kind == "Job" {
            match map_str(d, &["metadata", "annotations"], KUEUE_MIN_PARALLELISM) {
                None => None,
                Some(s) => Some(
                    s.parse::<u32>()
                        .ok()
                        .filter(|&m| m >= 1 && m <= set.count)
                        .ok_or_else(|| {
                            err(format!(
                                "metadata.annotations[{KUEUE_MIN_PARALLELISM}]: expected 1..={}, got \"{s}\"",
                                set.count
                            ))
                        })?,
                ),
            }
        } else {
            None
        };
        pod_sets.push(PodSetDoc {
            name: set.name.clone(),
            count: set.count,
            min_count,
            gpu: sched::GpuRequest::Whole(u32::try_from(gpus).unwrap_or(u32::MAX)),
            cpu_millis,
            memory_mib,
            topology,
            gpu_field: format!("{at}: {spec_field}.containers: no {GPU_RESOURCE} limit or request"),
            pod_spec,
            extras,
        });
    }
    let job = JobDoc {
        sub_groups: Vec::new(),
        format: JobFormat::Kueue,
        document,
        queue_field: format!("metadata.labels[{KUEUE_QUEUE_LABEL}]"),
        name: name.clone(),
        queue,
        priority,
        preemptible: true,
        tolerations: Vec::new(),
        pod_sets,
    };
    if groups == 1 {
        return Ok(vec![job]);
    }
    Ok((0..groups)
        .map(|g| JobDoc {
            sub_groups: Vec::new(),
            name: format!("{name}-{g}"),
            ..job.clone()
        })
        .collect())
}

/// A Kueue pod group: the Pods of one `kueue.x-k8s.io/pod-group-name`, which must agree on
/// the queue and the total count. Pods of the same shape form one pod set; when every pod has
/// one shape, the set has `pod-group-total-count` pods (the file may list fewer); otherwise the
/// file must list them all.
pub(super) fn kueue_pod_group(
    file: &str,
    docs: &[Value],
    group: &str,
    members: &[usize],
) -> Result<JobDoc, FormatError> {
    let first = members[0];
    let at = format!("document {} (pod group {group})", first + 1);
    let err = |m: String| FormatError::input(file, format!("{at}: {m}"));
    let total_of = |d: &Value| map_str(d, &["metadata", "annotations"], KUEUE_POD_GROUP_TOTAL);
    let total = total_of(&docs[first]).ok_or_else(|| {
        err(format!("metadata.annotations[{KUEUE_POD_GROUP_TOTAL}]: missing; every pod of a Kueue pod group gives the group's size"))
    })?;
    let total_n = total
        .parse::<u32>()
        .ok()
        .filter(|&n| (1..=MAX_PODS_PER_JOB).contains(&n))
        .ok_or_else(|| {
            err(format!(
                "metadata.annotations[{KUEUE_POD_GROUP_TOTAL}]: expected 1..={MAX_PODS_PER_JOB}, got \"{total}\""
            ))
        })?;
    let queue =
        map_str(&docs[first], &["metadata", "labels"], KUEUE_QUEUE_LABEL).unwrap_or_default();
    let mut shapes: Vec<(Value, Vec<usize>)> = Vec::new();
    for &m in members {
        let d = &docs[m];
        if total_of(d).as_deref() != Some(total.as_str()) {
            return Err(FormatError::input(file, format!(
                "document {} (pod group {group}): metadata.annotations[{KUEUE_POD_GROUP_TOTAL}]: expected \"{total}\" as in document {}",
                m + 1, first + 1
            )));
        }
        if map_str(d, &["metadata", "labels"], KUEUE_QUEUE_LABEL).as_deref() != Some(queue.as_str())
        {
            return Err(FormatError::input(file, format!(
                "document {} (pod group {group}): metadata.labels[{KUEUE_QUEUE_LABEL}]: expected \"{queue}\" as in document {}",
                m + 1, first + 1
            )));
        }
        let shape = json!({"annotations": path(d, &["metadata", "annotations"]).cloned().map(|mut a| {
            if let Some(o) = a.as_object_mut() { o.remove(KUEUE_POD_GROUP_TOTAL); }
            a
        }), "spec": d.get("spec")});
        match shapes.iter_mut().find(|(s, _)| *s == shape) {
            Some((_, list)) => list.push(m),
            None => shapes.push((shape, vec![m])),
        }
    }
    let listed = members.len() as u32;
    if listed > total_n || (shapes.len() > 1 && listed != total_n) {
        return Err(err(format!(
            "the file lists {listed} pods of the group in {} shapes, but {KUEUE_POD_GROUP_TOTAL} is {total_n}; list every pod, or one pod when all have one shape",
            shapes.len()
        )));
    }
    let mut pod_sets = Vec::new();
    let mut priority = 0;
    for (k, (_, list)) in shapes.iter().enumerate() {
        let pod = &docs[list[0]];
        let count = if shapes.len() == 1 {
            total_n
        } else {
            list.len() as u32
        };
        let mut job = kueue_workload(
            file,
            list[0] + 1,
            pod,
            workloads::KINDS
                .iter()
                .find(|k| k.kind == "Pod")
                .expect("Pod is a kind"),
        )?
        .remove(0);
        let mut set = job.pod_sets.remove(0);
        set.name = if shapes.len() == 1 {
            "main".to_owned()
        } else {
            format!("shape-{k}")
        };
        set.count = count;
        let (topology, problems) = kueue_topology(
            path(pod, &["metadata", "annotations"]),
            "metadata.annotations",
            Some((count, &format!("the group's {count} pods"))),
        );
        if let Some(p) = problems.first() {
            return Err(err(p.to_string()));
        }
        set.topology = topology;
        if k == 0 {
            priority = job.priority;
        }
        pod_sets.push(set);
    }
    Ok(JobDoc {
        sub_groups: Vec::new(),
        format: JobFormat::Kueue,
        document: first + 1,
        queue_field: format!("metadata.labels[{KUEUE_QUEUE_LABEL}]"),
        name: group.to_owned(),
        queue,
        priority,
        preemptible: true,
        tolerations: Vec::new(),
        pod_sets,
    })
}

/// A pod count as Kubernetes writes it (`spec.parallelism`, `replicas`): absent is 1; else a
/// positive integer (a number or a numeric string).
pub fn pod_count(v: Option<&Value>) -> Result<u32, String> {
    match v {
        None => Ok(1),
        Some(v) => parse_count(v)
            .filter(|&n| (1..=u64::from(MAX_PODS_PER_JOB)).contains(&n))
            .map(|n| n as u32)
            .ok_or_else(|| format!("expected 1..={MAX_PODS_PER_JOB} pods, got {v}")),
    }
}

/// Read and check the Kueue TAS annotations of one pod template: `annotations` is the
/// template's `metadata.annotations` (at `base`, used in field names); `count` is the pod set's
/// pod count with where it comes from for messages (e.g. `spec.parallelism 4`), `None` when it
/// could not be read.
///
/// The rules that need no cluster: `podset-required-topology`, `-preferred-topology` and
/// `-unconstrained-topology` are mutually exclusive; unconstrained is `"true"` or `"false"`;
/// `podset-slice-required-topology` and `podset-slice-size` come together, and the size is a
/// positive integer dividing the count. Returns what could be read (a slice layer only when
/// valid) and every problem; the level rules need the levels, see
/// [`resolve_levels`](super::levels::resolve_levels). This is the one implementation `place`
/// (through `read_jobs`) and `lint` use.
pub fn kueue_topology(
    annotations: Option<&Value>,
    base: &str,
    count: Option<(u32, &str)>,
) -> (TopologyDoc, Vec<FieldProblem>) {
    let mut problems = Vec::new();
    let field = |k: &str| format!("{base}[{k}]");
    let get = |k: &str| annotations.and_then(|a| map_str(a, &[], k));
    let required = get(KUEUE_REQUIRED);
    let preferred = get(KUEUE_PREFERRED);
    let unconstrained = get(KUEUE_UNCONSTRAINED);
    let given: Vec<&str> = [
        (required.is_some(), KUEUE_REQUIRED),
        (preferred.is_some(), KUEUE_PREFERRED),
        (unconstrained.is_some(), KUEUE_UNCONSTRAINED),
    ]
    .iter()
    .filter(|(g, _)| *g)
    .map(|(_, k)| *k)
    .collect();
    if given.len() > 1 {
        problems.push(FieldProblem {
            field: base.to_owned(),
            message: format!(
                "{} are mutually exclusive; give at most one",
                given.join(" and ")
            ),
        });
    }
    if let Some(u) = &unconstrained {
        if u != "true" && u != "false" {
            problems.push(FieldProblem {
                field: field(KUEUE_UNCONSTRAINED),
                message: format!("expected \"true\" or \"false\", got \"{u}\""),
            });
        }
    }
    let mut slices = Vec::new();
    match (get(KUEUE_SLICE_REQUIRED), get(KUEUE_SLICE_SIZE)) {
        (None, None) => {}
        (Some(_), None) => problems.push(FieldProblem {
            field: field(KUEUE_SLICE_SIZE),
            message: format!("missing; {KUEUE_SLICE_REQUIRED} needs it"),
        }),
        (None, Some(_)) => problems.push(FieldProblem {
            field: field(KUEUE_SLICE_REQUIRED),
            message: format!("missing; {KUEUE_SLICE_SIZE} needs it"),
        }),
        (Some(level), Some(size)) => match size.parse::<u32>().ok().filter(|&n| n >= 1) {
            None => problems.push(FieldProblem {
                field: field(KUEUE_SLICE_SIZE),
                message: format!("expected a positive integer, got \"{size}\""),
            }),
            Some(n) if count.is_some_and(|(c, _)| c % n != 0) => problems.push(FieldProblem {
                field: field(KUEUE_SLICE_SIZE),
                message: format!(
                    "slice size {n} must divide {}",
                    count.map_or("", |(_, source)| source)
                ),
            }),
            Some(n) => slices.push((
                LevelRef {
                    label: level,
                    field: field(KUEUE_SLICE_REQUIRED),
                },
                n,
            )),
        },
    }
    if let Some(json) = get(KUEUE_SLICE_CONSTRAINTS) {
        let f = field(KUEUE_SLICE_CONSTRAINTS);
        let mut push = |message: String| {
            problems.push(FieldProblem {
                field: f.clone(),
                message,
            })
        };
        if get(KUEUE_SLICE_REQUIRED).is_some() || get(KUEUE_SLICE_SIZE).is_some() {
            push(format!(
                "mutually exclusive with {KUEUE_SLICE_REQUIRED} and {KUEUE_SLICE_SIZE}; give one form"
            ));
        } else if get(KUEUE_PODSET_GROUP).is_some() {
            push(format!("may not be combined with {KUEUE_PODSET_GROUP}"));
        } else {
            match serde_json::from_str::<Vec<Value>>(&json) {
                Err(e) => push(format!(
                    "expected a JSON array of {{\"topology\": LABEL, \"size\": N}}: {e}"
                )),
                Ok(list) if list.is_empty() || list.len() > sched::MAX_SLICE_LAYERS => {
                    push(format!(
                        "expected 1..={} layers, got {}",
                        sched::MAX_SLICE_LAYERS,
                        list.len()
                    ))
                }
                Ok(list) => {
                    let mut above = count.map(|(c, _)| c);
                    let mut layers = Vec::new();
                    for (k, entry) in list.iter().enumerate() {
                        let label = entry.get("topology").and_then(Value::as_str);
                        let size = entry
                            .get("size")
                            .and_then(Value::as_u64)
                            .and_then(|n| u32::try_from(n).ok())
                            .filter(|&n| n >= 1);
                        match (label, size) {
                            (Some(l), Some(n)) => {
                                if layers.iter().any(|(x, _): &(LevelRef, u32)| x.label == l) {
                                    push(format!("[{k}].topology: `{l}` appears twice"));
                                    break;
                                }
                                if let Some(a) = above.filter(|a| a % n != 0) {
                                    push(format!("[{k}].size: {n} must divide {a}"));
                                    break;
                                }
                                above = Some(n);
                                layers.push((
                                    LevelRef {
                                        label: l.to_owned(),
                                        field: format!("{f}[{k}].topology"),
                                    },
                                    n,
                                ));
                            }
                            _ => {
                                push(format!("[{k}]: expected {{\"topology\": LABEL, \"size\": N ≥ 1}}, got {entry}"));
                                break;
                            }
                        }
                    }
                    if layers.len() == list.len() {
                        slices = layers;
                    }
                }
            }
        }
    }
    let level = |label: Option<String>, k: &str| {
        label.map(|label| LevelRef {
            label,
            field: field(k),
        })
    };
    let topology = TopologyDoc {
        required: level(required, KUEUE_REQUIRED),
        preferred: level(preferred, KUEUE_PREFERRED),
        slices,
    };
    (topology, problems)
}
