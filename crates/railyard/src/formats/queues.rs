//! Queue files: KAI `scheduling.run.ai/v2` Queue, Kueue ClusterQueue / Cohort / LocalQueue,
//! mapped onto one queue tree ([`sched::QueueSpec`]). Jobs in the same files are collected so
//! `queues validate` can check which queue each targets.
//!
//! Units: GPUs; CPU in millicores; memory in MiB. KAI queues give CPU in millicores and memory
//! in MiB already; Kueue quantities (`"100"`, `"500m"`, `"100Gi"`) are converted.
//!
//! Kueue mapping: `quota` = the sum of `nominalQuota` over the flavors; `limit` = quota + the sum
//! of `borrowingLimit` (no `borrowingLimit` on some flavor = unlimited); `over_quota_weight` =
//! `spec.fairSharing.weight` (default 1); the parent is `spec.cohortName` (`spec.cohort` in
//! v1beta1) or a Cohort's `spec.parentName`. A cohort that is only named, or declares no
//! resources, passes everything through (quota and limit unlimited), as in Kueue.
//! `lendingLimit` is checked (0 ≤ lendingLimit ≤ nominalQuota) but does not change the tree.

use std::collections::BTreeMap;

use sched::{QueueSpec, Resource, ResourceQuota, UNLIMITED};
use serde_json::Value;

use crate::formats::jobs::{self, parse_cpu_millis, parse_memory_mib};
use crate::input::parse_documents;

/// Most queues (KAI Queues, Kueue ClusterQueues, Cohorts and LocalQueues together) the queue
/// files may declare. Real trees have hundreds; the tree checks walk ancestries, so a bound keeps
/// them fast.
pub const MAX_QUEUES: usize = 10_000;

/// A queue and the file it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueEntry {
    /// The queue.
    pub spec: QueueSpec,
    /// File.
    pub file: String,
}

/// A job found in a queue file, and its file.
#[derive(Clone, Debug, PartialEq)]
pub struct JobEntry {
    /// Job name.
    pub job: String,
    /// Queue it targets (Kueue LocalQueues already mapped to their ClusterQueue).
    pub queue: String,
    /// File.
    pub file: String,
    /// GPUs, CPU millicores, memory MiB requested.
    pub request: sched::Resources,
}

/// Everything read from queue files.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueFiles {
    /// Queues in file order.
    pub queues: Vec<QueueEntry>,
    /// Jobs in file order.
    pub jobs: Vec<JobEntry>,
    /// Problems in the files themselves (one line each, naming file and queue).
    pub problems: Vec<String>,
}

/// Read queue (and job) files. File-level problems are collected, not returned as errors, so
/// `queues validate` can report them together with the tree's problems; unreadable files are
/// errors.
pub fn read(files: &[(String, String)]) -> QueueFiles {
    let mut out = QueueFiles::default();
    let mut local_queues: BTreeMap<String, String> = BTreeMap::new();
    let mut cohorts_named: Vec<(String, String)> = Vec::new();
    let mut pending_jobs: Vec<JobEntry> = Vec::new();
    let mut kueue_names: std::collections::BTreeSet<String> = Default::default();
    let mut n_queues = 0usize;
    for (file, text) in files {
        let docs = match parse_documents(file, text) {
            Ok(d) => d,
            Err(e) => {
                out.problems.push(e.to_string());
                continue;
            }
        };
        n_queues += docs
            .iter()
            .filter(|d| {
                matches!(
                    d.get("kind").and_then(Value::as_str),
                    Some("Queue" | "ClusterQueue" | "Cohort" | "LocalQueue")
                )
            })
            .count();
        if n_queues > MAX_QUEUES {
            out.problems.push(format!(
                "{file}: the queue files declare more than the limit of {MAX_QUEUES} queues"
            ));
            return out;
        }
        let has_jobs = docs.iter().any(jobs::is_job_doc)
            || (docs.len() == 1 && docs[0].get("pod_sets").is_some());
        let has_queues = docs.iter().any(|d| {
            matches!(
                d.get("kind").and_then(Value::as_str),
                Some("Queue" | "ClusterQueue" | "Cohort" | "LocalQueue")
            )
        });
        if !has_jobs && !has_queues {
            out.problems.push(format!(
                "{file}: no queue or job found; expected KAI Queues, Kueue ClusterQueues/Cohorts/LocalQueues or jobs"
            ));
            continue;
        }
        for (i, d) in docs.iter().enumerate() {
            let kind = d.get("kind").and_then(Value::as_str).unwrap_or("");
            let api = d.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let name = d
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let mut problem = |m: String| {
                out.problems.push(crate::error::one_line(&format!(
                    "{file}: queue `{name}`: {m}"
                )))
            };
            if matches!(kind, "Queue" | "ClusterQueue" | "Cohort" | "LocalQueue") && name.is_empty()
            {
                out.problems.push(format!(
                    "{file}: document {}: {kind} without metadata.name",
                    i + 1
                ));
                continue;
            }
            match (api.split('/').next().unwrap_or(""), kind) {
                ("scheduling.run.ai", "Queue") => match kai_queue(d) {
                    Ok(spec) => out.queues.push(QueueEntry {
                        spec,
                        file: file.clone(),
                    }),
                    Err(m) => problem(m),
                },
                ("kueue.x-k8s.io", "ClusterQueue" | "Cohort") => {
                    let mut problems = Vec::new();
                    let spec = kueue_queue(d, kind, &mut problems);
                    kueue_names.insert(spec.name.clone());
                    for m in problems {
                        problem(m);
                    }
                    if let Some(p) = &spec.parent {
                        cohorts_named.push((p.clone(), file.clone()));
                    }
                    out.queues.push(QueueEntry {
                        spec,
                        file: file.clone(),
                    });
                }
                ("kueue.x-k8s.io", "LocalQueue") => {
                    match d.pointer("/spec/clusterQueue").and_then(Value::as_str) {
                        Some(cq) => {
                            local_queues.insert(name.clone(), cq.to_owned());
                        }
                        None => problem("LocalQueue: spec.clusterQueue: missing".to_owned()),
                    }
                }
                _ => {}
            }
        }
        if has_jobs {
            match jobs::read_jobs(file, text) {
                Ok(js) => {
                    for j in js {
                        pending_jobs.push(JobEntry {
                            request: j.request(),
                            job: j.name.clone(),
                            queue: j.queue.clone(),
                            file: file.clone(),
                        });
                    }
                }
                Err(e) => out.problems.push(e.to_string()),
            }
        }
    }
    // Kueue cohorts named by a ClusterQueue or Cohort but not declared exist implicitly.
    // Sets, not scans: one scan per named cohort would be quadratic in the queues.
    let mut declared: std::collections::BTreeSet<String> =
        out.queues.iter().map(|q| q.spec.name.clone()).collect();
    let kueue_parents: std::collections::BTreeSet<String> = out
        .queues
        .iter()
        .filter(|q| kueue_names.contains(&q.spec.name))
        .filter_map(|q| q.spec.parent.clone())
        .collect();
    for (c, file) in cohorts_named {
        if !declared.contains(&c) && kueue_parents.contains(&c) {
            declared.insert(c.clone());
            out.queues.push(QueueEntry {
                spec: pass_through(&c),
                file,
            });
        }
    }
    for mut j in pending_jobs {
        if let Some(cq) = local_queues.get(&j.queue) {
            j.queue = cq.clone();
        }
        out.jobs.push(j);
    }
    out
}

fn pass_through(name: &str) -> QueueSpec {
    let open = ResourceQuota {
        quota: UNLIMITED,
        limit: UNLIMITED,
        over_quota_weight: 1.0,
    };
    QueueSpec {
        name: name.to_owned(),
        parent: None,
        priority: 0,
        resources: [Some(open), Some(open), Some(open)],
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn kai_queue(d: &Value) -> Result<QueueSpec, String> {
    let name = d
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let parent = match d.pointer("/spec/parentQueue") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if p.is_empty() => None,
        Some(Value::String(p)) => Some(p.clone()),
        Some(v) => return Err(format!("spec.parentQueue: expected a queue name, got {v}")),
    };
    let priority = match d.pointer("/spec/priority") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| format!("spec.priority: expected an integer, got {v}"))?,
    };
    let mut resources = [None; 3];
    if let Some(res) = d.pointer("/spec/resources") {
        let Some(map) = res.as_object() else {
            return Err("spec.resources: expected a map of gpu, cpu, memory".to_owned());
        };
        for (key, v) in map {
            let r = match key.as_str() {
                "gpu" => Resource::Gpu,
                "cpu" => Resource::Cpu,
                "memory" => Resource::Memory,
                other => {
                    return Err(format!(
                        "spec.resources.{other}: expected one of gpu, cpu, memory"
                    ))
                }
            };
            let field = |f: &str, default: f64| -> Result<f64, String> {
                match v.get(f) {
                    None | Some(Value::Null) => Ok(default),
                    Some(x) => number(x).ok_or_else(|| {
                        format!("spec.resources.{key}.{f}: expected a number, got {x}")
                    }),
                }
            };
            if let Some(obj) = v.as_object() {
                if let Some(k) = obj
                    .keys()
                    .find(|k| !matches!(k.as_str(), "quota" | "limit" | "overQuotaWeight"))
                {
                    return Err(format!(
                        "spec.resources.{key}.{k}: expected quota, limit or overQuotaWeight"
                    ));
                }
            } else {
                return Err(format!("spec.resources.{key}: expected a map"));
            }
            resources[r as usize] = Some(ResourceQuota {
                quota: field("quota", 0.0)?,
                limit: field("limit", UNLIMITED)?,
                over_quota_weight: field("overQuotaWeight", 1.0)?,
            });
        }
    }
    Ok(QueueSpec {
        name,
        parent,
        priority,
        resources,
    })
}

fn kueue_resource(name: &str) -> Option<Resource> {
    match name {
        "nvidia.com/gpu" => Some(Resource::Gpu),
        "cpu" => Some(Resource::Cpu),
        "memory" => Some(Resource::Memory),
        _ => None,
    }
}

fn kueue_amount(r: Resource, v: &Value) -> Option<f64> {
    match r {
        Resource::Gpu => number(v),
        Resource::Cpu => parse_cpu_millis(v).map(|m| m as f64),
        Resource::Memory => parse_memory_mib(v).map(|m| m as f64),
    }
}

fn kueue_queue(d: &Value, kind: &str, problems: &mut Vec<String>) -> QueueSpec {
    let name = d
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let parent = if kind == "Cohort" {
        d.pointer("/spec/parentName").and_then(Value::as_str)
    } else {
        d.pointer("/spec/cohortName")
            .or_else(|| d.pointer("/spec/cohort"))
            .and_then(Value::as_str)
    }
    .filter(|p| !p.is_empty())
    .map(str::to_owned);
    let weight = d
        .pointer("/spec/fairSharing/weight")
        .and_then(|w| kueue_amount(Resource::Cpu, w).map(|m| m / 1000.0))
        .unwrap_or(1.0);
    let groups = d.pointer("/spec/resourceGroups").and_then(Value::as_array);
    let Some(groups) = groups.filter(|g| !g.is_empty()) else {
        let mut spec = pass_through(&name);
        spec.parent = parent;
        return spec;
    };
    // (quota, borrowing sum, every flavor has a borrowingLimit)
    let mut acc: [Option<(f64, f64, bool)>; 3] = [None; 3];
    for (gi, g) in groups.iter().enumerate() {
        let flavors = g
            .get("flavors")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (fi, f) in flavors.iter().enumerate() {
            let res = f
                .get("resources")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for (ri, r) in res.iter().enumerate() {
                let at = format!("spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}]");
                let rname = r.get("name").and_then(Value::as_str).unwrap_or("");
                let Some(kind) = kueue_resource(rname) else {
                    continue;
                };
                let read = |k: &str| r.get(k).map(|v| (kueue_amount(kind, v), v));
                let quota = match read("nominalQuota") {
                    Some((Some(q), _)) => q,
                    Some((None, v)) => {
                        problems.push(format!("{at}.nominalQuota: expected a quantity, got {v}"));
                        continue;
                    }
                    None => {
                        problems.push(format!("{at}.nominalQuota: missing"));
                        continue;
                    }
                };
                let borrow = match read("borrowingLimit") {
                    Some((Some(b), _)) => Some(b),
                    Some((None, v)) => {
                        problems.push(format!("{at}.borrowingLimit: expected a quantity, got {v}"));
                        None
                    }
                    None => None,
                };
                match read("lendingLimit") {
                    Some((Some(l), _)) if l > quota => problems.push(format!(
                        "{at}.lendingLimit: {l} is above nominalQuota {quota}"
                    )),
                    Some((None, v)) => {
                        problems.push(format!("{at}.lendingLimit: expected a quantity, got {v}"))
                    }
                    _ => {}
                }
                let e = acc[kind as usize].get_or_insert((0.0, 0.0, true));
                e.0 += quota;
                e.1 += borrow.unwrap_or(0.0);
                e.2 &= borrow.is_some();
            }
        }
    }
    let mut resources = [None; 3];
    for r in Resource::ALL {
        if let Some((q, b, all)) = acc[r as usize] {
            resources[r as usize] = Some(ResourceQuota {
                quota: q,
                limit: if all { q + b } else { UNLIMITED },
                over_quota_weight: weight,
            });
        }
    }
    QueueSpec {
        name,
        parent,
        priority: 0,
        resources,
    }
}
