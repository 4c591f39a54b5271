//! The native railyard job spec (YAML, documented in the README, "Scheduling"): its serde shape,
//! its JSON Schema, and the checks that turn it into a [`JobDoc`].

use serde::Deserialize;
use serde_json::Value;

use super::doc::{JobDoc, JobFormat, LevelRef, PodSetDoc, TopologyDoc};
use super::pod_template::{fraction, parse_cpu_millis, parse_memory_mib, toleration};
use crate::error::FormatError;
use crate::workloads::MAX_PODS_PER_JOB;

/// The JSON Schema of the native job spec, for editors.
pub fn native_job_schema() -> schemars::Schema {
    schemars::schema_for!(NativeJob)
}

/// The native job spec (documented in the README, "Scheduling").
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NativeJob {
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

pub(super) fn native_job(file: &str, j: NativeJob) -> Result<JobDoc, FormatError> {
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
