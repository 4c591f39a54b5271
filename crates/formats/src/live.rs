//! The cluster's live state as `kubectl` prints it: a PodList (`kubectl get pods -A -o json`)
//! and a Kueue Workload list (`kubectl get workloads.kueue.x-k8s.io -A -o json`), read into the
//! running jobs `place --state` starts from.
//!
//! Pods: every pod bound to a node (`spec.nodeName`) and not finished (`status.phase` other than
//! Succeeded or Failed) counts, with its GPUs (container requests of `nvidia.com/gpu`, or KAI's
//! `gpu-fraction` / `gpu-memory` annotations). Pods are grouped into jobs by the first of: KAI's
//! `pod-group-name` annotation, Kueue's `kueue.x-k8s.io/pod-group-name` label, the JobSet,
//! LeaderWorkerSet (with its group index), Kubeflow, Ray or `batch/v1` Job name labels, the
//! controller owner; else the pod is its own job. Job names are `NAMESPACE/NAME`.
//!
//! KAI PodGroups (`kubectl get podgroups.scheduling.run.ai -A -o json`), given with the PodList:
//! the pods that name a PodGroup (KAI's `pod-group-name` annotation) are one job with the
//! PodGroup's queue (`spec.queue`), priority (`spec.priorityClassName`, one of KAI's classes, else
//! the rules of [`crate::jobs`]) and preemptibility (`spec.preemptibility`, else from the
//! priority). A PodGroup without running pods holds nothing.
//!
//! Workloads: every admitted, unfinished Workload with a `topologyAssignment` down to the host
//! level (Kueue's v1beta1 `domains` or v1beta2 `slices` encoding) counts, its pods' GPUs from
//! the pod set's template; a Workload whose owner already has pods in a PodList given with it is
//! skipped, so that running jobs are not counted twice.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use topology::{Cluster, NodeId, HOSTNAME_LABEL};

use crate::error::FormatError;
use crate::jobs::{
    container_amounts, kai_num_devices, AmountError, GPU_RESOURCE, KAI_GPU_FRACTION,
    KAI_GPU_MEMORY, KAI_GPU_NUM_DEVICES, KAI_LEGACY_QUEUE_LABEL, KAI_QUEUE_LABEL,
    KUEUE_POD_GROUP_LABEL, KUEUE_QUEUE_LABEL,
};
use crate::k8s::parse_count;

/// GPUs one running pod holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GpuUse {
    /// Whole GPUs.
    Whole(u32),
    /// A share of each of `devices` GPUs, thousandths.
    Fraction {
        /// Share of each GPU, thousandths.
        milli: u32,
        /// Distinct GPUs of the node (KAI's `gpu-fraction-num-devices`, else 1).
        devices: u32,
    },
    /// GPU memory of each of `devices` GPUs, MiB.
    MemoryMib {
        /// Memory of each GPU, MiB.
        mib: u32,
        /// Distinct GPUs of the node (KAI's `gpu-fraction-num-devices`, else 1).
        devices: u32,
    },
}

/// One running pod.
#[derive(Clone, Debug, PartialEq)]
pub struct LivePod {
    /// `NAMESPACE/NAME` (for messages).
    pub name: String,
    /// The node it is bound to.
    pub node: NodeId,
    /// Its GPUs; `None` for a pod without GPUs.
    pub gpu: Option<GpuUse>,
    /// Its other requests (and one `pods`), in Kueue's units.
    pub requests: BTreeMap<String, u64>,
}

/// A running job made of live pods.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveJob {
    /// `NAMESPACE/NAME`.
    pub name: String,
    /// Queue: a Workload's admitting ClusterQueue (`status.admission.clusterQueue`), else the
    /// Kueue or KAI queue label, else `default`.
    pub queue: String,
    /// Priority (the pods' `spec.priority`).
    pub priority: i32,
    /// Preemptible (KAI's `kai.scheduler/preemptibility: non-preemptible` says no).
    pub preemptible: bool,
    /// Its pods, in input order.
    pub pods: Vec<LivePod>,
    /// Owner name (for matching Workloads to pods).
    pub owner: String,
    /// `NAMESPACE/NAME` of the KAI PodGroup its pods name (`pod-group-name`), if any.
    pub pod_group: Option<String>,
}

/// A KAI PodGroup: how KAI schedules the job its pods make up.
#[derive(Clone, Debug, PartialEq)]
pub struct LivePodGroup {
    /// `spec.queue`, when set.
    pub queue: Option<String>,
    /// Priority, from `spec.priorityClassName` (KAI's classes) or KAI's default class.
    pub priority: i32,
    /// `spec.preemptibility`, else KAI's rule (below priority 100).
    pub preemptible: bool,
}

/// Whether a document is a list of `kind` items (`PodList`, a `List` of Pods, …).
pub fn is_list_of(doc: &Value, item_kind: &str) -> bool {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind == format!("{item_kind}List") {
        return true;
    }
    kind == "List"
        && doc
            .get("items")
            .and_then(Value::as_array)
            .is_some_and(|items| {
                !items.is_empty()
                    && items
                        .iter()
                        .all(|i| i.get("kind").and_then(Value::as_str) == Some(item_kind))
            })
}

fn str_at<'v>(v: &'v Value, p: &str) -> Option<&'v str> {
    v.pointer(p).and_then(Value::as_str)
}

fn label<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.pointer("/metadata/labels")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
}

fn annotation<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.pointer("/metadata/annotations")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
}

/// Node names to IDs.
fn node_index(cluster: &Cluster) -> BTreeMap<&str, NodeId> {
    cluster
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), NodeId::from_index(i)))
        .collect()
}

/// The job a pod belongs to (see the module doc) and its owner name.
fn job_key(pod: &Value) -> (String, String) {
    let owner = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|refs| {
            refs.iter()
                .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
                .or(refs.first())
        })
        .and_then(|r| r.get("name").and_then(Value::as_str));
    let pod_name = str_at(pod, "/metadata/name").unwrap_or("");
    let key = annotation(pod, "pod-group-name")
        .or_else(|| label(pod, KUEUE_POD_GROUP_LABEL))
        .map(str::to_owned)
        .or_else(|| label(pod, "jobset.sigs.k8s.io/jobset-name").map(str::to_owned))
        .or_else(|| {
            label(pod, "leaderworkerset.sigs.k8s.io/name").map(|n| {
                match label(pod, "leaderworkerset.sigs.k8s.io/group-index") {
                    Some(g) => format!("{n}-{g}"),
                    None => n.to_owned(),
                }
            })
        })
        .or_else(|| label(pod, "training.kubeflow.org/job-name").map(str::to_owned))
        .or_else(|| label(pod, "ray.io/cluster").map(str::to_owned))
        .or_else(|| label(pod, "batch.kubernetes.io/job-name").map(str::to_owned))
        .or_else(|| label(pod, "job-name").map(str::to_owned))
        .or_else(|| owner.map(str::to_owned))
        .unwrap_or_else(|| pod_name.to_owned());
    let owner = label(pod, "jobset.sigs.k8s.io/jobset-name")
        .or_else(|| label(pod, "leaderworkerset.sigs.k8s.io/name"))
        .or_else(|| label(pod, "training.kubeflow.org/job-name"))
        .or_else(|| label(pod, "ray.io/cluster"))
        .or(owner)
        .unwrap_or(pod_name)
        .to_owned();
    (key, owner)
}

/// What a pod spec requests besides GPUs ([`crate::jobs::requests_of`]), plus one `pods`.
fn other_requests(spec: &Value) -> Result<BTreeMap<String, u64>, String> {
    let mut out = crate::jobs::requests_of(spec)
        .map_err(|(field, v)| format!("{field}: expected a Kubernetes quantity, got {v}"))?;
    out.insert("pods".to_owned(), 1);
    Ok(out)
}

/// The GPUs a pod spec asks for: container requests (else limits) of `nvidia.com/gpu`, or KAI's
/// fraction / memory annotations on `meta` (the pod, or a pod template).
pub(crate) fn gpu_use(meta: &Value, spec: &Value) -> Result<Option<GpuUse>, String> {
    // Running pods count their containers' GPUs (init containers have finished); a sum past
    // 64 bits is over the per-pod limit below like any other too-large count.
    let whole = match container_amounts(spec, GPU_RESOURCE, parse_count) {
        Ok((containers, _init)) => containers,
        Err(AmountError::Overflow) => u64::MAX,
        Err(AmountError::Unreadable {
            list,
            index,
            part,
            value,
        }) => {
            return Err(format!(
                "spec.{list}[{index}].resources.{part}[{GPU_RESOURCE}]: expected a whole number, got {value}"
            ))
        }
    };
    if whole > u64::from(topology::MAX_GPUS_PER_NODE) {
        return Err(format!(
            "{whole} {GPU_RESOURCE} is more than the limit of {} per pod",
            topology::MAX_GPUS_PER_NODE
        ));
    }
    let frac = annotation(meta, KAI_GPU_FRACTION);
    let mem = annotation(meta, KAI_GPU_MEMORY);
    let devices = kai_num_devices(
        annotation(meta, KAI_GPU_NUM_DEVICES),
        whole == 0 && (frac.is_some() || mem.is_some()),
    )?;
    match (whole, frac, mem) {
        (0, None, None) => Ok(None),
        (n, None, None) => Ok(Some(GpuUse::Whole(n as u32))),
        (0, Some(f), None) => {
            let v: f64 = f.parse().map_err(|_| {
                format!("metadata.annotations[{KAI_GPU_FRACTION}]: expected a number, got \"{f}\"")
            })?;
            if !(v.is_finite() && v > 0.0 && v <= 1.0) {
                return Err(format!(
                    "metadata.annotations[{KAI_GPU_FRACTION}]: expected a fraction in (0, 1], got {f}"
                ));
            }
            Ok(Some(GpuUse::Fraction {
                milli: ((v * 1000.0).round() as u32).max(1),
                devices,
            }))
        }
        (0, None, Some(m)) => m
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|&v| v >= 1)
            .map(|mib| Some(GpuUse::MemoryMib { mib, devices }))
            .ok_or_else(|| {
                format!("metadata.annotations[{KAI_GPU_MEMORY}]: expected MiB as a positive integer, got \"{m}\"")
            }),
        _ => Err(format!(
            "a pod has one of {GPU_RESOURCE}, {KAI_GPU_FRACTION} and {KAI_GPU_MEMORY}, not several"
        )),
    }
}

fn queue_of(v: &Value) -> String {
    label(v, KUEUE_QUEUE_LABEL)
        .or_else(|| label(v, KAI_QUEUE_LABEL))
        .or_else(|| label(v, KAI_LEGACY_QUEUE_LABEL))
        .unwrap_or("default")
        .to_owned()
}

/// Whether a running pod's job may be preempted: KAI's `kai.scheduler/preemptibility` label
/// when given; else, for a pod of a KAI queue, KAI's rule (priority below 100, the priority
/// admission filled in from its class); else yes.
fn live_preemptible(pod: &Value, spec: &Value) -> bool {
    match label(pod, "kai.scheduler/preemptibility") {
        Some("non-preemptible") => false,
        Some(_) => true,
        None if label(pod, KAI_QUEUE_LABEL)
            .or_else(|| label(pod, KAI_LEGACY_QUEUE_LABEL))
            .is_some() =>
        {
            spec.get("priority")
                .and_then(Value::as_i64)
                .is_none_or(|p| p < i64::from(crate::jobs::KAI_NON_PREEMPTIBLE_PRIORITY))
        }
        None => true,
    }
}

/// The running jobs of a PodList (see the module doc). Pods bound to nodes the cluster does
/// not have, and a pod listed twice, are errors naming the pod.
pub fn read_pods(file: &str, doc: &Value, cluster: &Cluster) -> Result<Vec<LiveJob>, FormatError> {
    let nodes = node_index(cluster);
    let items = doc
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut jobs: BTreeMap<String, LiveJob> = BTreeMap::new();
    for (i, pod) in items.iter().enumerate() {
        let ns = str_at(pod, "/metadata/namespace").unwrap_or("default");
        let name = str_at(pod, "/metadata/name").unwrap_or("");
        let full = format!("{ns}/{name}");
        let err = |m: String| FormatError::input(file, format!("items[{i}] (Pod {full}): {m}"));
        if pod
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k != "Pod")
        {
            return Err(err("kind: expected Pod".to_owned()));
        }
        if name.is_empty() {
            return Err(err("metadata.name: missing".to_owned()));
        }
        let Some(node_name) = str_at(pod, "/spec/nodeName") else {
            continue; // pending: holds nothing yet
        };
        if matches!(str_at(pod, "/status/phase"), Some("Succeeded" | "Failed")) {
            continue;
        }
        if !seen.insert(full.clone()) {
            return Err(err("listed twice".to_owned()));
        }
        let node = *nodes.get(node_name).ok_or_else(|| {
            err(format!(
                "spec.nodeName: \"{node_name}\" is not a node of cluster {}",
                cluster.name
            ))
        })?;
        let spec = pod.get("spec").cloned().unwrap_or(Value::Null);
        let gpu = gpu_use(pod, &spec).map_err(err)?;
        let (key, owner) = job_key(pod);
        let job = jobs
            .entry(format!("{ns}/{key}"))
            .or_insert_with(|| LiveJob {
                name: format!("{ns}/{key}"),
                queue: queue_of(pod),
                priority: spec.get("priority").and_then(Value::as_i64).unwrap_or(0) as i32,
                preemptible: live_preemptible(pod, &spec),
                pods: Vec::new(),
                owner: format!("{ns}/{owner}"),
                pod_group: annotation(pod, "pod-group-name").map(|g| format!("{ns}/{g}")),
            });
        let requests = other_requests(&spec).map_err(err)?;
        job.pods.push(LivePod {
            name: full,
            node,
            gpu,
            requests,
        });
    }
    Ok(jobs.into_values().collect())
}

/// The PodGroups of a KAI PodGroup list, by `NAMESPACE/NAME`. A PodGroup listed twice, an
/// unknown priority class or preemptibility is an error naming the PodGroup and the field.
pub fn read_pod_groups(
    file: &str,
    doc: &Value,
) -> Result<BTreeMap<String, LivePodGroup>, FormatError> {
    let items = doc
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    for (i, pg) in items.iter().enumerate() {
        let ns = str_at(pg, "/metadata/namespace").unwrap_or("default");
        let name = str_at(pg, "/metadata/name").unwrap_or("");
        let full = format!("{ns}/{name}");
        let err =
            |m: String| FormatError::input(file, format!("items[{i}] (PodGroup {full}): {m}"));
        let api = str_at(pg, "/apiVersion").unwrap_or("");
        if str_at(pg, "/kind") != Some("PodGroup") || !api.starts_with("scheduling.run.ai/") {
            return Err(err(format!(
                "expected a KAI PodGroup (scheduling.run.ai), got {} {api}",
                str_at(pg, "/kind").unwrap_or("an object without kind")
            )));
        }
        if name.is_empty() {
            return Err(err("metadata.name: missing".to_owned()));
        }
        let (priority, derived_preemptible) =
            crate::jobs::kai_priority(pg, &Value::Null).map_err(err)?;
        let preemptible = match str_at(pg, "/spec/preemptibility") {
            None | Some("") => derived_preemptible,
            Some("preemptible") => true,
            Some("non-preemptible") => false,
            Some(v) => {
                return Err(err(format!(
                    "spec.preemptibility: expected preemptible or non-preemptible, got \"{}\"",
                    crate::error::excerpt(v)
                )))
            }
        };
        let group = LivePodGroup {
            queue: str_at(pg, "/spec/queue")
                .filter(|q| !q.is_empty())
                .map(str::to_owned),
            priority,
            preemptible,
        };
        if out.insert(full.clone(), group).is_some() {
            return Err(err("listed twice".to_owned()));
        }
    }
    Ok(out)
}

/// Give the jobs whose pods name a listed PodGroup that PodGroup's queue, priority and
/// preemptibility (see the module doc).
pub fn apply_pod_groups(jobs: &mut [LiveJob], groups: &BTreeMap<String, LivePodGroup>) {
    for job in jobs {
        let Some(g) = job.pod_group.as_ref().and_then(|n| groups.get(n)) else {
            continue;
        };
        if let Some(q) = &g.queue {
            job.queue.clone_from(q);
        }
        job.priority = g.priority;
        job.preemptible = g.preemptible;
    }
}

/// A topology assignment as (host value, pods) pairs, from either encoding.
fn assignment_hosts(ta: &Value) -> Result<Vec<(String, u32)>, String> {
    let levels: Vec<&str> = ta
        .get("levels")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if levels.last() != Some(&HOSTNAME_LABEL) {
        return Err(format!(
            "topologyAssignment.levels: expected the last level to be {HOSTNAME_LABEL}, got {levels:?}; railyard needs host-level assignments"
        ));
    }
    let last = levels.len() - 1;
    let mut out = Vec::new();
    if let Some(domains) = ta.get("domains").and_then(Value::as_array) {
        for (k, d) in domains.iter().enumerate() {
            let host = d
                .get("values")
                .and_then(Value::as_array)
                .and_then(|v| v.get(last))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    format!(
                        "topologyAssignment.domains[{k}].values: expected {} values",
                        levels.len()
                    )
                })?;
            let n = d
                .get("count")
                .and_then(parse_count)
                .and_then(|n| u32::try_from(n).ok())
                .filter(|&n| n >= 1)
                .ok_or_else(|| {
                    format!("topologyAssignment.domains[{k}].count: expected a positive integer")
                })?;
            out.push((host.to_owned(), n));
        }
        return Ok(out);
    }
    let slices = ta.get("slices").and_then(Value::as_array).ok_or_else(|| {
        "topologyAssignment: expected `domains` (v1beta1) or `slices` (v1beta2)".to_owned()
    })?;
    for (k, s) in slices.iter().enumerate() {
        let at = format!("topologyAssignment.slices[{k}]");
        let n_domains = s
            .get("domainCount")
            .and_then(parse_count)
            .filter(|&n| (1..=100_000).contains(&n))
            .ok_or_else(|| format!("{at}.domainCount: expected 1..=100000"))?
            as usize;
        let host = s
            .get("valuesPerLevel")
            .and_then(Value::as_array)
            .and_then(|v| v.get(last))
            .ok_or_else(|| format!("{at}.valuesPerLevel: expected {} entries", levels.len()))?;
        let hosts: Vec<String> = if let Some(u) = host.get("universal").and_then(Value::as_str) {
            vec![u.to_owned(); n_domains]
        } else {
            let ind = host.get("individual").ok_or_else(|| {
                format!("{at}.valuesPerLevel[{last}]: expected universal or individual")
            })?;
            let prefix = ind.get("prefix").and_then(Value::as_str).unwrap_or("");
            let suffix = ind.get("suffix").and_then(Value::as_str).unwrap_or("");
            let roots: Vec<&str> = ind
                .get("roots")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if roots.len() != n_domains {
                return Err(format!(
                    "{at}.valuesPerLevel[{last}].individual.roots: expected {n_domains} values (domainCount), got {}",
                    roots.len()
                ));
            }
            roots
                .iter()
                .map(|r| format!("{prefix}{r}{suffix}"))
                .collect()
        };
        let counts: Vec<u32> = match s.pointer("/podCounts/universal").and_then(parse_count) {
            Some(u) => vec![
                u32::try_from(u)
                    .map_err(|_| format!("{at}.podCounts.universal: too large"))?;
                n_domains
            ],
            None => s
                .pointer("/podCounts/individual")
                .and_then(Value::as_array)
                .and_then(|l| {
                    l.iter()
                        .map(|c| parse_count(c).and_then(|n| u32::try_from(n).ok()))
                        .collect::<Option<Vec<u32>>>()
                })
                .filter(|l| l.len() == n_domains)
                .ok_or_else(|| {
                    format!("{at}.podCounts: expected universal or {n_domains} individual counts")
                })?,
        };
        out.extend(hosts.into_iter().zip(counts));
    }
    Ok(out)
}

/// The running jobs of a Kueue Workload list (see the module doc). `owners_with_pods` are the
/// `NAMESPACE/OWNER` names that a PodList already accounts for.
pub fn read_workloads(
    file: &str,
    doc: &Value,
    cluster: &Cluster,
    owners_with_pods: &BTreeSet<String>,
) -> Result<Vec<LiveJob>, FormatError> {
    let hosts: BTreeMap<&str, NodeId> = cluster
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            (
                n.labels
                    .get(HOSTNAME_LABEL)
                    .map_or(n.name.as_str(), String::as_str),
                NodeId::from_index(i),
            )
        })
        .collect();
    let items = doc
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, wl) in items.iter().enumerate() {
        let ns = str_at(wl, "/metadata/namespace").unwrap_or("default");
        let name = str_at(wl, "/metadata/name").unwrap_or("");
        let err =
            |m: String| FormatError::input(file, format!("items[{i}] (Workload {ns}/{name}): {m}"));
        let condition = |t: &str| {
            wl.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.get("type").and_then(Value::as_str) == Some(t)
                            && c.get("status").and_then(Value::as_str) == Some("True")
                    })
                })
        };
        if !condition("Admitted") || condition("Finished") {
            continue;
        }
        let owner = wl
            .pointer("/metadata/ownerReferences/0/name")
            .and_then(Value::as_str)
            .unwrap_or(name);
        if owners_with_pods.contains(&format!("{ns}/{owner}")) {
            continue;
        }
        let pod_sets = wl
            .pointer("/spec/podSets")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let assignments = wl
            .pointer("/status/admission/podSetAssignments")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut pods = Vec::new();
        for (k, a) in assignments.iter().enumerate() {
            let set_name = a.get("name").and_then(Value::as_str).unwrap_or("main");
            let Some(ta) = a.get("topologyAssignment") else {
                return Err(err(format!(
                    "status.admission.podSetAssignments[{k}] ({set_name}): no topologyAssignment, so the nodes are unknown; give `kubectl get pods -A -o json` as well"
                )));
            };
            let set = pod_sets
                .iter()
                .find(|s| s.get("name").and_then(Value::as_str).unwrap_or("main") == set_name)
                .ok_or_else(|| err(format!("spec.podSets: no pod set `{set_name}`")))?;
            let template = set.get("template").cloned().unwrap_or(Value::Null);
            let spec = template.get("spec").cloned().unwrap_or(Value::Null);
            let gpu = gpu_use(&template, &spec)
                .map_err(|m| err(format!("spec.podSets[{set_name}].template.{m}")))?;
            let requests = other_requests(&spec)
                .map_err(|m| err(format!("spec.podSets[{set_name}].template.{m}")))?;
            let placed = assignment_hosts(ta)
                .map_err(|m| err(format!("status.admission.podSetAssignments[{k}].{m}")))?;
            for (host, n) in placed {
                let node = *hosts.get(host.as_str()).ok_or_else(|| {
                    err(format!(
                        "status.admission.podSetAssignments[{k}]: host \"{host}\" is not a node of cluster {}",
                        cluster.name
                    ))
                })?;
                for p in 0..n {
                    if pods.len() >= crate::jobs::MAX_PODS_PER_JOB as usize {
                        return Err(err("more pods than the limit per job".to_owned()));
                    }
                    pods.push(LivePod {
                        name: format!("{ns}/{name}/{set_name}-{p}"),
                        node,
                        gpu,
                        requests: requests.clone(),
                    });
                }
            }
        }
        let template0 = pod_sets
            .first()
            .and_then(|s| s.get("template"))
            .cloned()
            .unwrap_or(Value::Null);
        out.push(LiveJob {
            name: format!("{ns}/{owner}"),
            // Quota is held by the ClusterQueue that admitted it, not the LocalQueue named.
            queue: wl
                .pointer("/status/admission/clusterQueue")
                .or_else(|| wl.pointer("/spec/queueName"))
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_owned(),
            priority: wl
                .pointer("/spec/priority")
                .and_then(Value::as_i64)
                .or_else(|| template0.pointer("/spec/priority").and_then(Value::as_i64))
                .unwrap_or(0) as i32,
            preemptible: true,
            pods,
            owner: format!("{ns}/{owner}"),
            pod_group: None,
        });
    }
    Ok(out)
}
