//! Job files: the native railyard job spec (YAML, schema in the README), a Kueue-annotated
//! `batch/v1` Job, and a KAI-annotated Pod or PodGroup (+ Pod). Each format is checked with its
//! own rules, then resolved against a cluster's levels into a [`sched::Job`].

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value};
use topology::{Cluster, TaintEffect};

use crate::error::FormatError;
use crate::input::{parse_documents, parse_typed};
use crate::k8s::parse_count;
use crate::workloads;

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
/// The GPU resource name.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

pub use crate::error::FieldProblem;
pub use crate::workloads::MAX_PODS_PER_JOB;

/// Where a job came from; decides which ordering rules apply and how fields are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobFormat {
    /// The native railyard job spec.
    Native,
    /// A Kueue-annotated `batch/v1` Job.
    Kueue,
    /// A KAI-annotated Pod or PodGroup.
    Kai,
}

/// A level named by its label, with the field it came from (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelRef {
    /// The node label.
    pub label: String,
    /// Where in the file.
    pub field: String,
}

/// A pod set as read, before its levels are resolved against a cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct PodSetDoc {
    /// Name.
    pub name: String,
    /// Pods.
    pub count: u32,
    /// Gang minimum.
    pub min_count: Option<u32>,
    /// GPUs per pod.
    pub gpu: sched::GpuRequest,
    /// CPU per pod, millicores.
    pub cpu_millis: u64,
    /// Memory per pod, MiB.
    pub memory_mib: u64,
    /// Topology request, levels not yet resolved.
    pub topology: TopologyDoc,
    /// Where the GPU request is written (for the message when there is none).
    pub gpu_field: String,
    /// The pod spec of a Kubernetes pod template (`Null` for native jobs): node selectors,
    /// affinity and the like, for the checks that read them.
    pub pod_spec: Value,
    /// What placement needs of the template besides GPUs and levels: requests of every
    /// resource, node selector, node affinity, tolerations, pod-set group.
    pub extras: sched::PodSetExtras,
}

/// A pod set's topology request as read: levels by label, not yet resolved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TopologyDoc {
    /// Required level.
    pub required: Option<LevelRef>,
    /// Preferred level.
    pub preferred: Option<LevelRef>,
    /// Slice layers, outermost first: level and size.
    pub slices: Vec<(LevelRef, u32)>,
}

/// A job as read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct JobDoc {
    /// Format.
    pub format: JobFormat,
    /// Name.
    pub name: String,
    /// Queue (for Kueue: the LocalQueue name from the label).
    pub queue: String,
    /// Priority.
    pub priority: i32,
    /// Preemptible.
    pub preemptible: bool,
    /// Tolerations.
    pub tolerations: Vec<sched::Toleration>,
    /// Pod sets.
    pub pod_sets: Vec<PodSetDoc>,
    /// Document number in the file, from 1 (the PodGroup's for a KAI gang).
    pub document: usize,
    /// Where the queue is named, e.g. `metadata.labels[kueue.x-k8s.io/queue-name]`.
    pub queue_field: String,
    /// KAI PodGroup sub-groups that hold other sub-groups (parents first); the sub-groups that
    /// hold pods are the pod sets, each naming its parent in `extras.sub_group`. Empty for
    /// every other format.
    pub sub_groups: Vec<SubGroupDoc>,
}

/// A KAI sub-group above pod sets, before its levels are resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct SubGroupDoc {
    /// Name (`podgroup` for the PodGroup itself).
    pub name: String,
    /// The enclosing sub-group, an earlier index.
    pub parent: Option<usize>,
    /// Its topology constraint.
    pub topology: TopologyDoc,
    /// Direct members it needs placed (KAI's `minSubGroup`); `None`: all.
    pub min_sub_groups: Option<u32>,
}

/// Whether a document is a workload this module reads (any kind of [`workloads::KINDS`], a KAI
/// PodGroup), whatever its API version (an unsupported version is reported when it is read).
pub fn is_job_doc(doc: &Value) -> bool {
    kind(doc) == "PodGroup" || workloads::KINDS.iter().any(|k| k.kind == kind(doc))
}

fn kind(doc: &Value) -> &str {
    doc.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// Read every job of a file (native: one job; Kubernetes: each Job, and each Pod or PodGroup);
/// the first bad job is the error.
pub fn read_jobs(file: &str, text: &str) -> Result<Vec<JobDoc>, FormatError> {
    let docs = parse_documents(file, text)?;
    jobs_in_documents(file, &docs, Some(text))?
        .into_iter()
        .map(|(_, job)| job)
        .collect()
}

/// A job document's number in its file (from 1) and the job read from it, or why it could not be.
pub type JobRead = (usize, Result<JobDoc, FormatError>);

/// Every job of a file's parsed documents with its document number (from 1), each read on its
/// own so that one bad job does not hide the others (`queues validate` and `lint` report them
/// all). `text`, when given, is parsed again for a native job spec so that its errors carry line
/// numbers. A file without any job is an error.
pub fn jobs_in_documents(
    file: &str,
    docs: &[Value],
    text: Option<&str>,
) -> Result<Vec<JobRead>, FormatError> {
    if docs.is_empty() {
        return Err(FormatError::input(file, "no job in the file"));
    }
    if docs.len() == 1 && docs[0].get("apiVersion").is_none() && docs[0].get("kind").is_none() {
        let native: Result<NativeJob, FormatError> = match text {
            Some(t) => parse_typed(file, t),
            None => {
                serde_json::from_value(docs[0].clone()).map_err(|e| FormatError::input(file, e))
            }
        };
        return Ok(vec![(1, native.and_then(|n| native_job(file, n)))]);
    }
    let mut jobs = Vec::new();
    let groups: Vec<&Value> = docs.iter().filter(|d| kind(d) == "PodGroup").collect();
    let mut kueue_pod_groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, d) in docs.iter().enumerate() {
        let at = format!("document {}", i + 1);
        if kind(d) == "PodGroup" {
            // Every Pod of a PodGroup file must have the first one's shape: the group is
            // `minMember` pods like it.
            let pods: Vec<(usize, &Value)> = docs
                .iter()
                .enumerate()
                .filter(|(_, p)| kind(p) == "Pod")
                .collect();
            if let Some((k, _)) = pods
                .iter()
                .skip(1)
                .find(|(_, p)| p.get("spec") != pods[0].1.get("spec"))
            {
                jobs.push((
                    i + 1,
                    Err(FormatError::input(
                        file,
                        format!(
                            "document {} (Pod): its spec differs from the first Pod's (document {}); a PodGroup file gives one Pod shape for all its members",
                            k + 1,
                            pods[0].0 + 1
                        ),
                    )),
                ));
                continue;
            }
            let job = docs
                .iter()
                .find(|p| kind(p) == "Pod")
                .ok_or_else(|| {
                    FormatError::input(
                        file,
                        format!("{at} (PodGroup): expected a Pod in the same file giving the per-pod resources"),
                    )
                })
                .and_then(|pod| kai_job(file, i + 1, pod, Some(d)));
            jobs.push((i + 1, job));
            continue;
        }
        let wk = match workloads::kind_of(d) {
            Ok(Some(k)) => k,
            Ok(None) => continue,
            Err(m) => {
                jobs.push((
                    i + 1,
                    Err(FormatError::input(file, format!("{at} ({}): {m}", kind(d)))),
                ));
                continue;
            }
        };
        let dialect = match dialect_of(d) {
            Ok(x) => x,
            Err(m) => {
                let name = str_at(d, &["metadata", "name"]).unwrap_or("");
                jobs.push((
                    i + 1,
                    Err(FormatError::input(
                        file,
                        format!("{at} ({} {name}): {m}", wk.kind),
                    )),
                ));
                continue;
            }
        };
        match (dialect, wk.kind) {
            (Some(Dialect::Kueue), "Pod")
                if map_str(d, &["metadata", "labels"], KUEUE_POD_GROUP_LABEL).is_some() =>
            {
                let group =
                    map_str(d, &["metadata", "labels"], KUEUE_POD_GROUP_LABEL).unwrap_or_default();
                kueue_pod_groups.entry(group).or_default().push(i);
            }
            (Some(Dialect::Kueue), _) => match kueue_workload(file, i + 1, d, wk) {
                Ok(list) => jobs.extend(list.into_iter().map(|j| (i + 1, Ok(j)))),
                Err(e) => jobs.push((i + 1, Err(e))),
            },
            (Some(Dialect::Kai) | None, "Pod") if groups.is_empty() => {
                jobs.push((i + 1, kai_job(file, i + 1, d, None)));
            }
            (_, "Pod") => {}
            (Some(Dialect::Kai), _) => jobs.push((i + 1, kai_workload(file, i + 1, d, wk))),
            (None, k) => {
                let name = str_at(d, &["metadata", "name"]).unwrap_or("");
                jobs.push((
                    i + 1,
                    Err(FormatError::input(
                        file,
                        format!("{at} ({k} {name}): names no queue; expected metadata.labels[{KUEUE_QUEUE_LABEL}] (Kueue) or metadata.labels[{KAI_QUEUE_LABEL}] (KAI)"),
                    )),
                ))
            }
        }
    }
    for (group, members) in kueue_pod_groups {
        let first = members[0] + 1;
        jobs.push((first, kueue_pod_group(file, docs, &group, &members)));
    }
    jobs.sort_by_key(|(doc, _)| *doc);
    if jobs.is_empty() {
        return Err(FormatError::input(
            file,
            format!(
                "no job found; expected a railyard job spec, a KAI PodGroup, or one of {}",
                workloads::kinds_list()
            ),
        ));
    }
    Ok(jobs)
}

/// Which scheduler a workload is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Kueue: a `kueue.x-k8s.io/queue-name` label.
    Kueue,
    /// KAI Scheduler: a `kai.scheduler/queue` (or `runai/queue`) label, `kai.scheduler/*`
    /// annotations, or `schedulerName: kai-scheduler`.
    Kai,
}

/// The scheduler a workload's markings name, `None` when it has none; both is an error.
pub fn dialect_of(doc: &Value) -> Result<Option<Dialect>, String> {
    let labels = |v: &Value| path(v, &["metadata", "labels"]).cloned();
    let annotations = |v: &Value| path(v, &["metadata", "annotations"]).cloned();
    let has_key = |m: Option<Value>, pred: &dyn Fn(&str) -> bool| {
        m.as_ref()
            .and_then(Value::as_object)
            .is_some_and(|o| o.keys().any(|k| pred(k)))
    };
    let kueue = map_str(doc, &["metadata", "labels"], KUEUE_QUEUE_LABEL).is_some();
    let kai = has_key(labels(doc), &|k| {
        k == KAI_QUEUE_LABEL || k == KAI_LEGACY_QUEUE_LABEL
    }) || has_key(annotations(doc), &|k| k.starts_with("kai.scheduler/"))
        || str_at(doc, &["spec", "schedulerName"]) == Some("kai-scheduler")
        || str_at(doc, &["spec", "template", "spec", "schedulerName"]) == Some("kai-scheduler");
    match (kueue, kai) {
        (true, true) => Err(format!(
            "carries both Kueue ({KUEUE_QUEUE_LABEL}) and KAI (kai.scheduler/…) markings; a workload goes to one scheduler, remove one"
        )),
        (true, false) => Ok(Some(Dialect::Kueue)),
        (false, true) => Ok(Some(Dialect::Kai)),
        (false, false) => Ok(None),
    }
}

/// Whether a Kubernetes job document names the queue it goes to (Kueue's queue-name label, KAI's
/// queue label, a PodGroup's `spec.queue`): the documents a queue scheduler would take.
pub fn names_queue(doc: &Value) -> bool {
    let label = |k: &str| map_str(doc, &["metadata", "labels"], k).is_some();
    label(KUEUE_QUEUE_LABEL)
        || label(KAI_QUEUE_LABEL)
        || label(KAI_LEGACY_QUEUE_LABEL)
        || (kind(doc) == "PodGroup" && str_at(doc, &["spec", "queue"]).is_some())
}

/// Read exactly one job.
pub fn read_job(file: &str, text: &str) -> Result<JobDoc, FormatError> {
    let mut jobs = read_jobs(file, text)?;
    if jobs.len() > 1 {
        return Err(FormatError::input(
            file,
            format!("expected one job, found {}", jobs.len()),
        ));
    }
    Ok(jobs.remove(0))
}

// ---- native ----

/// The JSON Schema of the native job spec, for editors.
pub fn native_job_schema() -> schemars::Schema {
    schemars::schema_for!(NativeJob)
}

/// The native job spec (documented in the README, "Scheduling").
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NativeJob {
    name: String,
    #[serde(default = "default_queue")]
    queue: String,
    #[serde(default)]
    priority: i32,
    #[serde(default = "yes")]
    preemptible: bool,
    #[serde(default)]
    tolerations: Vec<NativeToleration>,
    pod_sets: Vec<NativePodSet>,
}

/// The queue a job names when it names none (native job and state files).
pub(crate) fn default_queue() -> String {
    "default".to_owned()
}

/// `true`, for serde defaults (`preemptible`).
pub(crate) fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NativeToleration {
    key: Option<String>,
    #[serde(default)]
    operator: Option<String>,
    value: Option<String>,
    effect: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NativePodSet {
    #[serde(default)]
    name: Option<String>,
    count: u32,
    min_count: Option<u32>,
    gpus: Option<u32>,
    gpu_fraction: Option<f64>,
    gpu_memory_mib: Option<u32>,
    cpu: Option<Value>,
    memory: Option<Value>,
    #[serde(default)]
    topology: NativeTopology,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NativeTopology {
    required: Option<String>,
    preferred: Option<String>,
    #[serde(default)]
    slices: Vec<NativeSlice>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NativeSlice {
    level: String,
    size: u32,
}

fn native_job(file: &str, j: NativeJob) -> Result<JobDoc, FormatError> {
    let err = |field: String, m: String| FormatError::input(file, format!("{field}: {m}"));
    if j.name.trim().is_empty() {
        return Err(err("name".into(), "must not be empty".into()));
    }
    if j.pod_sets.is_empty() {
        return Err(err(
            "pod_sets".into(),
            "expected at least one pod set".into(),
        ));
    }
    let mut tolerations = Vec::new();
    for (i, t) in j.tolerations.iter().enumerate() {
        tolerations.push(
            toleration(
                t.key.as_deref(),
                t.operator.as_deref(),
                t.value.as_deref(),
                t.effect.as_deref(),
            )
            .map_err(|m| err(format!("tolerations[{i}]"), m))?,
        );
    }
    let mut pod_sets = Vec::new();
    let mut total_pods = 0u64;
    for (i, s) in j.pod_sets.into_iter().enumerate() {
        let at = |f: &str| format!("pod_sets[{i}].{f}");
        let gpu = match (s.gpus, s.gpu_fraction, s.gpu_memory_mib) {
            (Some(g), None, None) if (1..=topology::MAX_GPUS_PER_NODE).contains(&g) => {
                sched::GpuRequest::Whole(g)
            }
            (Some(g), None, None) => {
                return Err(err(
                    at("gpus"),
                    format!(
                        "expected 1..={} GPUs per pod (a pod runs on one node), got {g}",
                        topology::MAX_GPUS_PER_NODE
                    ),
                ))
            }
            (None, Some(f), None) => fraction(f).map_err(|m| err(at("gpu_fraction"), m))?,
            (None, None, Some(m)) if m >= 1 => sched::GpuRequest::memory_mib(m),
            (None, None, Some(_)) => {
                return Err(err(at("gpu_memory_mib"), "expected at least 1 MiB".into()))
            }
            _ => {
                return Err(err(
                    format!("pod_sets[{i}]"),
                    "expected exactly one of `gpus`, `gpu_fraction`, `gpu_memory_mib`".into(),
                ))
            }
        };
        if s.count == 0 || s.count > MAX_PODS_PER_JOB {
            return Err(err(
                at("count"),
                format!("expected 1..={MAX_PODS_PER_JOB} pods, got {}", s.count),
            ));
        }
        total_pods += u64::from(s.count);
        if total_pods > u64::from(MAX_PODS_PER_JOB) {
            return Err(err(
                at("count"),
                format!("the pod sets ask for {total_pods} pods, more than the limit of {MAX_PODS_PER_JOB} per job"),
            ));
        }
        if let Some(m) = s.min_count {
            if m == 0 || m > s.count {
                return Err(err(
                    at("min_count"),
                    format!("expected 1..={} (the count), got {m}", s.count),
                ));
            }
        }
        if s.topology.slices.len() > sched::MAX_SLICE_LAYERS {
            return Err(err(
                at("topology.slices"),
                format!(
                    "expected at most {} slice layers, got {}",
                    sched::MAX_SLICE_LAYERS,
                    s.topology.slices.len()
                ),
            ));
        }
        let cpu_millis = match &s.cpu {
            Some(v) => parse_cpu_millis(v).ok_or_else(|| {
                err(
                    at("cpu"),
                    format!("expected cores like 4 or \"500m\", got {v}"),
                )
            })?,
            None => 0,
        };
        let memory_mib = match &s.memory {
            Some(v) => parse_memory_mib(v).ok_or_else(|| {
                err(
                    at("memory"),
                    format!("expected a quantity like \"256Gi\", got {v}"),
                )
            })?,
            None => 0,
        };
        let lref = |label: String, f: &str| LevelRef {
            label,
            field: at(f),
        };
        let name = s.name.unwrap_or_else(|| format!("pod-set-{i}"));
        if let Some(k) = pod_sets.iter().position(|p: &PodSetDoc| p.name == name) {
            return Err(err(
                at("name"),
                format!(
                    "`{name}` is already the name of pod_sets[{k}]; pod set names must be unique"
                ),
            ));
        }
        pod_sets.push(PodSetDoc {
            name,
            count: s.count,
            min_count: s.min_count,
            gpu,
            cpu_millis,
            memory_mib,
            topology: TopologyDoc {
                required: s.topology.required.map(|l| lref(l, "topology.required")),
                preferred: s.topology.preferred.map(|l| lref(l, "topology.preferred")),
                slices: s
                    .topology
                    .slices
                    .into_iter()
                    .enumerate()
                    .map(|(k, sl)| {
                        (
                            lref(sl.level, &format!("topology.slices[{k}].level")),
                            sl.size,
                        )
                    })
                    .collect(),
            },
            gpu_field: at("gpus"),
            pod_spec: Value::Null,
            extras: sched::PodSetExtras::default(),
        });
    }
    Ok(JobDoc {
        sub_groups: Vec::new(),
        format: JobFormat::Native,
        document: 1,
        queue_field: "queue".to_owned(),
        name: j.name,
        queue: j.queue,
        priority: j.priority,
        preemptible: j.preemptible,
        tolerations,
        pod_sets,
    })
}

// ---- Kubernetes helpers ----

fn path<'v>(v: &'v Value, keys: &[&str]) -> Option<&'v Value> {
    keys.iter().try_fold(v, |v, k| v.get(k))
}

fn str_at<'v>(v: &'v Value, keys: &[&str]) -> Option<&'v str> {
    path(v, keys).and_then(Value::as_str)
}

/// An annotation or label value as a string (numbers and booleans are accepted as written).
fn map_str(v: &Value, keys: &[&str], key: &str) -> Option<String> {
    match path(v, keys)?.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

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

fn fraction(f: f64) -> Result<sched::GpuRequest, String> {
    if !(f.is_finite() && f > 0.0 && f <= 1.0) {
        return Err(format!("expected a fraction in (0, 1], got {f}"));
    }
    let milli = (f * 1000.0).round() as u32;
    if milli == 0 {
        return Err(format!("{f} is below the smallest share, 0.001"));
    }
    Ok(sched::GpuRequest::fraction(milli))
}

/// CPU as Kubernetes writes it (`2`, `0.5`, `"500m"`), in millicores.
pub fn parse_cpu_millis(v: &Value) -> Option<u64> {
    crate::k8s::quantity("cpu", v)
}

/// Memory as Kubernetes writes it (`"200Mi"`, `"100Gi"`, `"1G"`, bytes), in MiB (rounded up).
pub fn parse_memory_mib(v: &Value) -> Option<u64> {
    crate::k8s::quantity("memory", v).map(|b| b.div_ceil(1_048_576))
}

fn toleration(
    key: Option<&str>,
    operator: Option<&str>,
    value: Option<&str>,
    effect: Option<&str>,
) -> Result<sched::Toleration, String> {
    let effect = match effect {
        None | Some("") => None,
        Some("NoSchedule") => Some(TaintEffect::NoSchedule),
        Some("PreferNoSchedule") => Some(TaintEffect::PreferNoSchedule),
        Some("NoExecute") => Some(TaintEffect::NoExecute),
        Some(e) => {
            return Err(format!(
                "effect: expected NoSchedule, PreferNoSchedule or NoExecute, got \"{e}\""
            ))
        }
    };
    let key = key.filter(|k| !k.is_empty()).map(str::to_owned);
    let value = match operator.unwrap_or("Equal") {
        "Exists" => None,
        "Equal" => Some(value.unwrap_or("").to_owned()),
        o => return Err(format!("operator: expected Exists or Equal, got \"{o}\"")),
    };
    if key.is_none() && value.is_some() {
        return Err("key: an Equal toleration needs a key".to_owned());
    }
    Ok(sched::Toleration { key, value, effect })
}

/// The tolerations of an object's `spec` (a pod spec, a ResourceFlavor's spec), each checked.
pub fn tolerations_of(
    file: &str,
    at: &str,
    spec: &Value,
    field: &str,
) -> Result<Vec<sched::Toleration>, FormatError> {
    k8s_tolerations(file, at, spec, field)
}

fn k8s_tolerations(
    file: &str,
    at: &str,
    spec: &Value,
    field: &str,
) -> Result<Vec<sched::Toleration>, FormatError> {
    let Some(list) = spec.get("tolerations") else {
        return Ok(Vec::new());
    };
    let Some(list) = list.as_array() else {
        return Err(FormatError::input(
            file,
            format!("{at}: {field}.tolerations: expected a list"),
        ));
    };
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            toleration(
                t.get("key").and_then(Value::as_str),
                t.get("operator").and_then(Value::as_str),
                t.get("value").and_then(Value::as_str),
                t.get("effect").and_then(Value::as_str),
            )
            .map_err(|m| FormatError::input(file, format!("{at}: {field}.tolerations[{i}].{m}")))
        })
        .collect()
}

/// What a pod asks of a resource, as Kubernetes and Kueue count it: each container's request
/// (its limit when no request is given), summed over the containers, and at least the largest
/// init container's (init containers run one at a time, before the others).
fn pod_requests(
    file: &str,
    at: &str,
    pod_spec: &Value,
    field: &str,
    resource: &str,
    parse: fn(&Value) -> Option<u64>,
) -> Result<u64, FormatError> {
    match container_amounts(pod_spec, resource, parse) {
        Ok((containers, init)) => Ok(containers.max(init)),
        Err(AmountError::Unreadable { list, index, part, value }) => Err(FormatError::input(
            file,
            format!("{at}: {field}.{list}[{index}].resources.{part}[{resource}]: expected a Kubernetes quantity (e.g. 8, \"500m\", \"64Gi\"), got {value}"),
        )),
        Err(AmountError::Overflow) => Err(FormatError::input(
            file,
            format!(
                "{at}: {field}.containers: the {resource} requests add up past {}",
                u64::MAX
            ),
        )),
    }
}

/// Why [`container_amounts`] could not count a resource.
#[derive(Debug)]
pub(crate) enum AmountError {
    /// A container's value does not parse: which list, which container, `requests` or `limits`.
    Unreadable {
        /// `containers` or `initContainers`.
        list: &'static str,
        /// The container's index in the list.
        index: usize,
        /// `requests` or `limits`.
        part: &'static str,
        /// The value as written.
        value: Value,
    },
    /// The containers' amounts add up past `u64::MAX`.
    Overflow,
}

/// How much of `resource` a pod spec's containers ask for, as Kubernetes counts it: each
/// container's request, else its limit; the containers' sum and, apart, the largest init
/// container's. The one walk over containers behind [`pod_requests`] and the live pods' GPUs.
pub(crate) fn container_amounts(
    pod_spec: &Value,
    resource: &str,
    parse: fn(&Value) -> Option<u64>,
) -> Result<(u64, u64), AmountError> {
    let one = |c: &Value, index: usize, list: &'static str| -> Result<u64, AmountError> {
        for part in ["requests", "limits"] {
            if let Some(v) = path(c, &["resources", part, resource]) {
                return parse(v).ok_or_else(|| AmountError::Unreadable {
                    list,
                    index,
                    part,
                    value: v.clone(),
                });
            }
        }
        Ok(0)
    };
    let list = |key: &str| {
        pod_spec
            .get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let mut total: u64 = 0;
    for (i, c) in list("containers").iter().enumerate() {
        total = total
            .checked_add(one(c, i, "containers")?)
            .ok_or(AmountError::Overflow)?;
    }
    let mut init = 0;
    for (i, c) in list("initContainers").iter().enumerate() {
        init = init.max(one(c, i, "initContainers")?);
    }
    Ok((total, init))
}

/// What a pod spec requests of every resource except GPUs, per pod, in
/// [`crate::k8s::quantity`] units: each container's request (its limit when it gives no
/// request), summed over the containers, and at least the largest init container's. An
/// unreadable quantity is `Err((field under the spec, value))`.
pub fn requests_of(spec: &Value) -> Result<sched::ResourceList, (String, Value)> {
    let mut requests = sched::ResourceList::new();
    let one = |c: &Value, i: usize, key: &str| -> Result<sched::ResourceList, (String, Value)> {
        let mut out = sched::ResourceList::new();
        for part in ["limits", "requests"] {
            for (r, v) in c
                .pointer(&format!("/resources/{part}"))
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if r == GPU_RESOURCE {
                    continue;
                }
                let q = crate::k8s::quantity(r, v)
                    .ok_or_else(|| (format!("spec.{key}[{i}].resources.{part}[{r}]"), v.clone()))?;
                // Requests win over limits (a limit alone is also the request).
                out.insert(r.clone(), q);
            }
        }
        Ok(out)
    };
    let list = |key: &str| {
        spec.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for (i, c) in list("containers").iter().enumerate() {
        for (r, q) in one(c, i, "containers")? {
            let e = requests.entry(r).or_insert(0);
            *e = e.saturating_add(q);
        }
    }
    for (i, c) in list("initContainers").iter().enumerate() {
        for (r, q) in one(c, i, "initContainers")? {
            let e = requests.entry(r).or_insert(0);
            *e = (*e).max(q);
        }
    }
    Ok(requests)
}

/// Kueue: the pod-set group annotation (leader and workers placed together).
pub const KUEUE_PODSET_GROUP: &str = "kueue.x-k8s.io/podset-group-name";

/// What placement needs of a pod template besides GPUs and levels (`base` is the template's
/// path in the document, ending in `.` or empty): every resource request per pod except GPUs
/// (in Kueue's units: millicores, bytes, counts), `nodeSelector`, required and preferred node
/// affinity (`matchExpressions`), tolerations, and the pod-set group.
fn template_extras(
    file: &str,
    at: &str,
    template: &Value,
    base: &str,
) -> Result<sched::PodSetExtras, FormatError> {
    let err =
        |field: String, m: String| FormatError::input(file, format!("{at}: {base}{field}: {m}"));
    let spec = template.get("spec").cloned().unwrap_or(Value::Null);
    let requests = requests_of(&spec)
        .map_err(|(field, v)| err(field, format!("expected a Kubernetes quantity, got {v}")))?;
    let mut node_selector = std::collections::BTreeMap::new();
    if let Some(sel) = spec.get("nodeSelector").filter(|v| !v.is_null()) {
        let sel = sel.as_object().ok_or_else(|| {
            err(
                "spec.nodeSelector".into(),
                "expected a map of labels".into(),
            )
        })?;
        for (k, v) in sel {
            let v = v.as_str().ok_or_else(|| {
                err(
                    format!("spec.nodeSelector[{k}]"),
                    format!("expected a string, got {v}"),
                )
            })?;
            node_selector.insert(k.clone(), v.to_owned());
        }
    }
    let requirements = |v: &Value,
                        field: &str|
     -> Result<Vec<sched::SelectorRequirement>, FormatError> {
        if v.get("matchFields").is_some_and(|m| !m.is_null()) {
            return Err(err(
                format!("{field}.matchFields"),
                "node fields are not modelled; use matchExpressions on labels".into(),
            ));
        }
        let exprs = v
            .get("matchExpressions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        exprs
            .iter()
            .enumerate()
            .map(|(k, e)| {
                let f = format!("{field}.matchExpressions[{k}]");
                let key = e
                    .get("key")
                    .and_then(Value::as_str)
                    .ok_or_else(|| err(format!("{f}.key"), "missing".into()))?;
                let op = match e.get("operator").and_then(Value::as_str) {
                    Some("In") => sched::SelectorOp::In,
                    Some("NotIn") => sched::SelectorOp::NotIn,
                    Some("Exists") => sched::SelectorOp::Exists,
                    Some("DoesNotExist") => sched::SelectorOp::DoesNotExist,
                    Some("Gt") => sched::SelectorOp::Gt,
                    Some("Lt") => sched::SelectorOp::Lt,
                    other => {
                        return Err(err(
                            format!("{f}.operator"),
                            format!(
                                "expected In, NotIn, Exists, DoesNotExist, Gt or Lt, got {}",
                                other.map_or_else(|| "nothing".to_owned(), |o| format!("\"{o}\""))
                            ),
                        ))
                    }
                };
                let values = e
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|vs| {
                        vs.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(sched::SelectorRequirement {
                    key: key.to_owned(),
                    op,
                    values,
                })
            })
            .collect()
    };
    let na = "spec.affinity.nodeAffinity";
    let mut affinity = Vec::new();
    if let Some(terms) = spec
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
    {
        for (k, t) in terms.iter().enumerate() {
            affinity.push(requirements(
                t,
                &format!("{na}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{k}]"),
            )?);
        }
    }
    let mut preferred = Vec::new();
    if let Some(terms) = spec
        .pointer("/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution")
        .and_then(Value::as_array)
    {
        for (k, t) in terms.iter().enumerate() {
            let f = format!("{na}.preferredDuringSchedulingIgnoredDuringExecution[{k}]");
            let weight = t
                .get("weight")
                .and_then(Value::as_i64)
                .filter(|w| (1..=100).contains(w))
                .ok_or_else(|| err(format!("{f}.weight"), "expected 1..=100".into()))?
                as i32;
            preferred.push(sched::PreferredTerm {
                weight,
                requirements: requirements(
                    t.get("preference").unwrap_or(&Value::Null),
                    &format!("{f}.preference"),
                )?,
            });
        }
    }
    let tolerations = k8s_tolerations(file, at, &spec, &format!("{base}spec"))?;
    let group = path(template, &["metadata", "annotations"])
        .and_then(|a| map_str(a, &[], KUEUE_PODSET_GROUP));
    Ok(sched::PodSetExtras {
        requests,
        node_selector,
        affinity,
        preferred,
        tolerations,
        group,
        sub_group: None,
        running_on: Vec::new(),
    })
}

/// A pod runs on one node, so it can use at most [`topology::MAX_GPUS_PER_NODE`] whole GPUs.
fn check_gpus_per_pod(gpus: u64) -> Result<(), String> {
    let max = topology::MAX_GPUS_PER_NODE;
    if gpus > u64::from(max) {
        return Err(format!(
            "{gpus} {GPU_RESOURCE} per pod is more than the limit of {max} (a pod runs on one node)"
        ));
    }
    Ok(())
}

fn name_of(file: &str, at: &str, d: &Value) -> Result<String, FormatError> {
    str_at(d, &["metadata", "name"])
        .map(str::to_owned)
        .or_else(|| {
            str_at(d, &["metadata", "generateName"]).map(|g| g.trim_end_matches('-').to_owned())
        })
        .filter(|n| !n.is_empty())
        .ok_or_else(|| FormatError::input(file, format!("{at}: metadata.name: missing")))
}

// ---- Kueue ----

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
fn kueue_workload(
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
fn kueue_pod_group(
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
/// valid) and every problem; the level rules need the levels, see [`resolve_levels`]. This is
/// the one implementation `place` (through [`read_jobs`]) and `lint` use.
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

// ---- KAI ----

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
fn kai_workload(
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

fn kai_job(
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

// ---- resolving against a cluster ----

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
    let level_of = |r: &LevelRef| {
        levels
            .iter()
            .position(|l| *l == r.label)
            .ok_or_else(|| FieldProblem {
                field: r.field.clone(),
                message: format!(
                    "`{}` is not a level of {owner} (levels: {})",
                    r.label,
                    levels.join(", ")
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
    /// Resolve level labels against the cluster, apply the format's ordering rules, and check
    /// the result with [`sched::Job::check`].
    pub fn resolve(&self, file: &str, cluster: &Cluster) -> Result<sched::Job, FormatError> {
        let mut pod_sets = Vec::new();
        if self
            .pod_sets
            .iter()
            .all(|s| s.gpu == sched::GpuRequest::Whole(0))
        {
            return Err(FormatError::input(
                file,
                format!(
                    "{}; no pod set of job `{}` asks for GPUs (railyard places GPU jobs)",
                    self.pod_sets[0].gpu_field, self.name
                ),
            ));
        }

        for s in &self.pod_sets {
            // A pod without GPUs is placed by its other requests (a launcher, a Ray head); one
            // that asks for nothing at all has nothing to place it by.
            if s.gpu == sched::GpuRequest::Whole(0) && s.extras.requests.is_empty() {
                return Err(FormatError::input(
                    file,
                    format!(
                        "{}, and no other resource requests; railyard places pods by what they request",
                        s.gpu_field
                    ),
                ));
            }
            let levels: Vec<&str> = cluster.levels.iter().map(|l| l.label.as_str()).collect();
            let topology = resolve_levels(
                &s.topology,
                s.count,
                &levels,
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
        self.sub_groups
            .iter()
            .map(|g| {
                let topology = resolve_levels(
                    &g.topology,
                    1,
                    &levels,
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
