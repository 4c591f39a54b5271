//! The entry points: read a file's jobs, telling the formats apart (a native job spec, a
//! Kueue-marked workload, a KAI Pod, PodGroup or workload) and handing each document to its
//! reader.

use std::collections::BTreeMap;

use serde_json::Value;

use super::doc::JobDoc;
use super::doc::JobFormat;
use super::kai::{kai_job, kai_workload, KAI_LEGACY_QUEUE_LABEL, KAI_QUEUE_LABEL};
use super::kueue::{kueue_pod_group, kueue_workload, KUEUE_POD_GROUP_LABEL, KUEUE_QUEUE_LABEL};
use super::native::{native_job, NativeJob};
use super::pod_template::{kind, map_str, path, str_at};
use crate::error::FormatError;
use crate::input::{parse_documents, parse_typed};
use crate::workloads;

/// Whether a document is a workload this module reads (any kind of [`workloads::KINDS`], a KAI
/// PodGroup), whatever its API version (an unsupported version is reported when it is read).
pub fn is_job_doc(doc: &Value) -> bool {
    kind(doc) == "PodGroup" || workloads::KINDS.iter().any(|k| k.kind == kind(doc))
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
        return Ok(vec![(
            1,
            native
                .and_then(|n| native_job(file, n))
                .and_then(|j| check_names(file, j)),
        )]);
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
    let jobs: Vec<JobRead> = jobs
        .into_iter()
        .map(|(d, job)| (d, job.and_then(|j| check_names(file, j))))
        .collect();
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

/// Refuse a job or queue name that can never be a Kubernetes name, whatever the format: empty,
/// over 253 characters (a DNS subdomain's limit, the longest object name there is) or holding a
/// control character. The stricter per-kind rules are the peers' to apply; these no object can
/// pass, and they would reach placements, manifests and reports.
fn check_names(file: &str, job: JobDoc) -> Result<JobDoc, FormatError> {
    let (name_field, at) = match job.format {
        JobFormat::Native => ("name", String::new()),
        _ => ("metadata.name", format!("document {}: ", job.document)),
    };
    for (what, field, value) in [
        ("job name", name_field, job.name.as_str()),
        ("queue name", job.queue_field.as_str(), job.queue.as_str()),
    ] {
        if let Err(m) = crate::names::check_kubernetes_name(what, value) {
            return Err(FormatError::input(file, format!("{at}{field}: {m}")));
        }
    }
    Ok(job)
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
