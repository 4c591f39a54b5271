//! Queue files: KAI `scheduling.run.ai/v2` Queue, Kueue ClusterQueue / Cohort / LocalQueue,
//! mapped onto one queue tree ([`sched::QueueSpec`]). Jobs in the same files are collected so
//! `queues validate` can check which queue each targets.
//!
//! Units: GPUs; CPU in millicores; memory in MiB. KAI queues give CPU in millicores and memory
//! in megabytes (10^6 bytes), converted to MiB; Kueue quantities (`"100"`, `"500m"`,
//! `"100Gi"`) are converted.
//!
//! KAI defaults, as KAI's scheduler reads a Queue: `spec.priority` 100; an omitted resource or
//! field 0 (quota 0, limit 0 = nothing may be used, over-quota weight 0 = nothing over quota);
//! `-1` = unlimited. A Queue without `spec.resources` is an error (KAI's webhook rejects it).
//! `metadata.creationTimestamp` is kept: KAI's tie-break when leftover units are handed out.
//!
//! Kueue mapping: `quota` = the sum of `nominalQuota` over the flavors; `limit` = quota + the sum
//! of `borrowingLimit` (no `borrowingLimit` on some flavor = unlimited); `over_quota_weight` =
//! `spec.fairSharing.weight` (default 1); the parent is `spec.cohortName` (`spec.cohort` in
//! v1beta1) or a Cohort's `spec.parentName`. A ClusterQueue without a cohort is bounded by its
//! nominal quota; a resource it does not cover is 0. A Cohort's quota is its own plus its
//! children's (Kueue's subtree quota), a root Cohort bounded by it. `lendingLimit` is checked
//! (≥ 0; above `nominalQuota` is allowed, as Kueue's webhook allows it) but does not change
//! the fair-share tree; admission ([`crate::kueue_objects`], `sched::kueue`) models it.
//!
//! Lists as `kubectl get … -o json` prints them (`QueueList`, `List`) stand for their items
//! (counted as documents 1, 2, … in messages); a live KAI Queue's `status` is kept
//! ([`LiveQueueStatus`]) for `queues share`.

use std::collections::BTreeMap;

use sched::{QueueSpec, Resource, ResourceQuota, UNLIMITED};
use serde_json::Value;

use crate::error::{one_line, FormatError};
use crate::input::parse_documents;
use crate::jobs::{self, parse_cpu_millis, parse_memory_mib, FieldProblem};

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
    /// Document number in the file, from 1; `None` for a Kueue cohort that is only named.
    pub document: Option<usize>,
    /// Which object it is (decides the field a problem points at).
    pub flavor: QueueFlavor,
    /// A live KAI Queue's `status` (`kubectl get queues -o json`), when it has one.
    pub status: Option<LiveQueueStatus>,
}

/// What a live KAI Queue's `status` says, for the queue and its child queues together (KAI's
/// queue controller sums the children in): GPUs (fractions), CPU millicores and memory MiB
/// requested by the running and pending jobs, and allocated to the running ones.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LiveQueueStatus {
    /// `status.requested`.
    pub requested: sched::Resources,
    /// `status.allocated`.
    pub allocated: sched::Resources,
}

/// The object a queue was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueFlavor {
    /// KAI `scheduling.run.ai` Queue.
    Kai,
    /// Kueue ClusterQueue.
    ClusterQueue,
    /// Kueue Cohort (declared or only named).
    Cohort,
}

impl QueueFlavor {
    /// The field of the queue's document a tree problem is about.
    pub fn field_of(self, kind: &sched::QueueProblemKind) -> String {
        use sched::QueueProblemKind as K;
        let parent = match self {
            QueueFlavor::Kai => "spec.parentQueue",
            QueueFlavor::ClusterQueue => "spec.cohortName",
            QueueFlavor::Cohort => "spec.parentName",
        };
        let resources = |r: Resource, field: &str| match self {
            QueueFlavor::Kai => format!("spec.resources.{}.{field}", r.name()),
            _ => "spec.resourceGroups".to_owned(),
        };
        match kind {
            K::Duplicate => "metadata.name".to_owned(),
            K::MissingParent(_) | K::Cycle(_) => parent.to_owned(),
            K::ChildrenOverQuota { resource, .. } => resources(*resource, "quota"),
            K::LimitBelowQuota { resource, .. } => resources(*resource, "limit"),
            K::Negative {
                resource, field, ..
            }
            | K::TooLarge {
                resource, field, ..
            } => resources(*resource, field),
            K::ParentWithoutResources => match self {
                QueueFlavor::Kai => "spec.resources".to_owned(),
                _ => "spec.resourceGroups".to_owned(),
            },
            K::JobOnNonLeaf(_) | K::JobOnUnknownQueue(_) => "metadata.name".to_owned(),
        }
    }
}

/// A problem found in queue or job files: the file, where in it when known, and the message
/// `queues validate` prints after the file name (it names the queue or job).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueFinding {
    /// File.
    pub file: String,
    /// Document number in the file, from 1, when known.
    pub document: Option<usize>,
    /// Dotted path inside the document, when known.
    pub path: Option<String>,
    /// One line, without the file name.
    pub message: String,
}

impl QueueFinding {
    /// A finding; `message` is collapsed to one line.
    pub fn new(file: &str, document: Option<usize>, path: Option<String>, message: String) -> Self {
        Self {
            file: file.to_owned(),
            document,
            path,
            message: one_line(&message),
        }
    }

    /// A reader's error (`FILE: message`) about a file, at a document when known.
    fn from_error(file: &str, document: Option<usize>, e: &FormatError) -> Self {
        let text = e.to_string();
        let message = text
            .strip_prefix(&format!("{file}: "))
            .unwrap_or(&text)
            .to_owned();
        Self::new(file, document, None, message)
    }
}

impl std::fmt::Display for QueueFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.message)
    }
}

/// A job found in a queue file, and where.
#[derive(Clone, Debug, PartialEq)]
pub struct JobEntry {
    /// Job name.
    pub job: String,
    /// Queue it targets (Kueue LocalQueues already mapped to their ClusterQueue).
    pub queue: String,
    /// File.
    pub file: String,
    /// Document number in the file, from 1.
    pub document: usize,
    /// Where the job names its queue.
    pub queue_field: String,
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
    pub problems: Vec<QueueFinding>,
    /// Kueue LocalQueues: (namespace, name, ClusterQueue), in file order.
    pub local_queues: Vec<(String, String, String)>,
}

impl QueueFiles {
    /// The queue a job's queue name leads to: a LocalQueue of `namespace` (or, when
    /// `namespace` is `None`, of any namespace) gives its ClusterQueue; any other name is
    /// itself.
    pub fn resolve_queue(&self, namespace: Option<&str>, queue: &str) -> String {
        self.local_queues
            .iter()
            .find(|(ns, name, _)| name == queue && namespace.is_none_or(|n| n == ns))
            .map_or_else(|| queue.to_owned(), |(_, _, cq)| cq.clone())
    }
}

/// One parsed input file for [`read_documents`].
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// File name as given.
    pub file: &'a str,
    /// Its text, when at hand (a native job spec is parsed again from it for line numbers).
    pub text: Option<&'a str>,
    /// Its documents, in file order.
    pub docs: &'a [Value],
}

/// Which documents of the files count as jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobSelection {
    /// Every job document (`queues validate JOBS…`: the files were given as jobs).
    All,
    /// Only job documents that name a queue ([`jobs::names_queue`]): `lint`, whose files hold
    /// pods and jobs that no queue scheduler takes.
    NamingAQueue,
}

/// Read queue (and job) files. File-level problems are collected, not returned as errors, so
/// `queues validate` can report them together with the tree's problems.
pub fn read(files: &[(String, String)]) -> QueueFiles {
    let mut parsed = Vec::new();
    let mut unparsable = Vec::new();
    for (file, text) in files {
        match parse_documents(file, text) {
            Ok(docs) => parsed.push((file.as_str(), text.as_str(), list_items(docs))),
            Err(e) => unparsable.push(QueueFinding::from_error(file, None, &e)),
        }
    }
    let sources: Vec<Source<'_>> = parsed
        .iter()
        .map(|(file, text, docs)| Source {
            file,
            text: Some(text),
            docs,
        })
        .collect();
    let mut out = read_documents(&sources, JobSelection::All);
    unparsable.append(&mut out.problems);
    out.problems = unparsable;
    out
}

/// Read parsed queue (and job) files: the one reader behind `queues validate`, `queues share`,
/// `place --queues` and `lint`. Every problem is collected with its file, document and field.
pub fn read_documents(files: &[Source<'_>], select: JobSelection) -> QueueFiles {
    let mut out = QueueFiles::default();
    let mut local_queues: BTreeMap<String, String> = BTreeMap::new();
    // Each LocalQueue's ClusterQueue and where it is named: checked once all files are read.
    let mut local_targets: Vec<(String, String, String, usize)> = Vec::new();
    let mut cohorts_named: Vec<(String, String)> = Vec::new();
    let mut pending_jobs: Vec<JobEntry> = Vec::new();
    let mut kueue_names: std::collections::BTreeSet<String> = Default::default();
    let mut n_queues = 0usize;
    for &Source { file, text, docs } in files {
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
            out.problems.push(QueueFinding::new(
                file,
                None,
                None,
                format!("the queue files declare more than the limit of {MAX_QUEUES} queues"),
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
            out.problems.push(QueueFinding::new(
                file,
                None,
                None,
                "no queue or job found; expected KAI Queues, Kueue ClusterQueues/Cohorts/LocalQueues or jobs".to_owned(),
            ));
            continue;
        }
        for (i, d) in docs.iter().enumerate() {
            let document = Some(i + 1);
            let kind = d.get("kind").and_then(Value::as_str).unwrap_or("");
            let api = d.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let name = d
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let kind_is_queue = matches!(kind, "Queue" | "ClusterQueue" | "Cohort" | "LocalQueue");
            if kind_is_queue && name.is_empty() {
                out.problems.push(QueueFinding::new(
                    file,
                    document,
                    Some("metadata.name".to_owned()),
                    format!("document {}: {kind} without metadata.name", i + 1),
                ));
                continue;
            }
            let why = crate::names::never_a_kubernetes_name(&name);
            if let Some(why) = why.filter(|_| kind_is_queue) {
                out.problems.push(QueueFinding::new(
                    file,
                    document,
                    Some("metadata.name".to_owned()),
                    format!(
                        "the {kind} name `{}` {why}; it can never be a Kubernetes name",
                        crate::error::excerpt(&name)
                    ),
                ));
                continue;
            }
            let mut problem = |field: &str, message: String| {
                out.problems.push(QueueFinding::new(
                    file,
                    document,
                    Some(field.to_owned()),
                    format!("queue `{name}`: {message}"),
                ))
            };
            match (api.split('/').next().unwrap_or(""), kind) {
                ("scheduling.run.ai", "Queue") => match kai_queue(d)
                    .and_then(|(spec, refused)| kai_status(d).map(|status| (spec, refused, status)))
                {
                    Ok((spec, refused, status)) => {
                        if let Some(p) = refused {
                            problem(&p.field, p.to_string());
                        }
                        out.queues.push(QueueEntry {
                            spec,
                            file: file.to_owned(),
                            document,
                            flavor: QueueFlavor::Kai,
                            status,
                        })
                    }
                    Err(p) => problem(&p.field, p.to_string()),
                },
                ("kueue.x-k8s.io", "ClusterQueue" | "Cohort") => {
                    let mut problems = Vec::new();
                    let spec = kueue_queue(d, kind, &mut problems);
                    kueue_names.insert(spec.name.clone());
                    for p in problems {
                        problem(&p.field, p.to_string());
                    }
                    if let Some(p) = &spec.parent {
                        cohorts_named.push((p.clone(), file.to_owned()));
                    }
                    out.queues.push(QueueEntry {
                        spec,
                        file: file.to_owned(),
                        document,
                        flavor: if kind == "Cohort" {
                            QueueFlavor::Cohort
                        } else {
                            QueueFlavor::ClusterQueue
                        },
                        status: None,
                    });
                }
                ("kueue.x-k8s.io", "LocalQueue") => {
                    match d.pointer("/spec/clusterQueue").and_then(Value::as_str) {
                        Some(cq) => {
                            out.local_queues.push((
                                d.pointer("/metadata/namespace")
                                    .and_then(Value::as_str)
                                    .unwrap_or("default")
                                    .to_owned(),
                                name.clone(),
                                cq.to_owned(),
                            ));
                            local_queues.insert(name.clone(), cq.to_owned());
                            local_targets.push((
                                name.clone(),
                                cq.to_owned(),
                                file.to_owned(),
                                i + 1,
                            ));
                        }
                        None => problem(
                            "spec.clusterQueue",
                            "LocalQueue: spec.clusterQueue: missing".to_owned(),
                        ),
                    }
                }
                _ => {}
            }
        }
        if !has_jobs {
            continue;
        }
        let found = match jobs::jobs_in_documents(file, docs, text) {
            Ok(found) => found,
            Err(_) if select == JobSelection::NamingAQueue => Vec::new(),
            Err(e) => {
                out.problems.push(QueueFinding::from_error(file, None, &e));
                Vec::new()
            }
        };
        for (document, job) in found {
            if select == JobSelection::NamingAQueue && !jobs::names_queue(&docs[document - 1]) {
                continue;
            }
            match job {
                Ok(j) => pending_jobs.push(JobEntry {
                    request: j.request(),
                    job: j.name.clone(),
                    queue: j.queue.clone(),
                    file: file.to_owned(),
                    document,
                    queue_field: j.queue_field.clone(),
                }),
                Err(e) => out
                    .problems
                    .push(QueueFinding::from_error(file, Some(document), &e)),
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
                document: None,
                flavor: QueueFlavor::Cohort,
                status: None,
            });
        }
    }
    kueue_pools(&mut out.queues);
    let cluster_queues: std::collections::BTreeSet<&str> = out
        .queues
        .iter()
        .filter(|q| q.flavor == QueueFlavor::ClusterQueue)
        .map(|q| q.spec.name.as_str())
        .collect();
    let mut dangling = Vec::new();
    for (lq, cq, file, document) in &local_targets {
        if !cluster_queues.contains(cq.as_str()) {
            dangling.push(QueueFinding::new(
                file,
                Some(*document),
                Some("spec.clusterQueue".to_owned()),
                format!(
                    "LocalQueue `{lq}`: spec.clusterQueue: ClusterQueue `{cq}` is not in the queue files"
                ),
            ));
        }
    }
    out.problems.append(&mut dangling);
    for mut j in pending_jobs {
        if let Some(cq) = local_queues.get(&j.queue) {
            j.queue = cq.clone();
        }
        out.jobs.push(j);
    }
    out
}

/// A Kueue Cohort's pool is its own quota plus what its children lend it (Kueue's
/// `SubtreeQuota`; lending limits are not modelled in the fair-share tree): each Cohort's
/// quota becomes that sum, its limit the sum plus its own borrowing (a root Cohort has nothing
/// above it to borrow from). Children's quotas then never exceed the Cohort's.
fn kueue_pools(queues: &mut [QueueEntry]) {
    let index: BTreeMap<String, usize> = queues
        .iter()
        .enumerate()
        .filter(|(_, q)| q.flavor != QueueFlavor::Kai)
        .map(|(i, q)| (q.spec.name.clone(), i))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); queues.len()];
    for (i, q) in queues.iter().enumerate() {
        if q.flavor == QueueFlavor::Kai {
            continue;
        }
        if let Some(p) = q.spec.parent.as_ref().and_then(|p| index.get(p)) {
            if *p != i {
                children[*p].push(i);
            }
        }
    }
    // 0: not seen, 1: in progress (a cycle, reported by the tree check), 2: done.
    let mut state = vec![0u8; queues.len()];
    fn pool(i: usize, queues: &mut [QueueEntry], children: &[Vec<usize>], state: &mut [u8]) {
        if state[i] != 0 {
            return;
        }
        state[i] = 1;
        for &c in &children[i] {
            pool(c, queues, children, state);
        }
        if queues[i].flavor == QueueFlavor::Cohort {
            let root = queues[i].spec.parent.is_none();
            for r in Resource::ALL {
                let own = queues[i].spec.resources[r as usize].unwrap_or_default();
                let own_quota = if own.quota == UNLIMITED {
                    0.0
                } else {
                    own.quota
                };
                let lent: f64 = children[i]
                    .iter()
                    .map(|&c| queues[c].spec.quota(r).quota)
                    .map(|q| if q == UNLIMITED { 0.0 } else { q })
                    .sum();
                let quota = own_quota + lent;
                let limit = if root || own.limit == UNLIMITED {
                    if root {
                        quota
                    } else {
                        UNLIMITED
                    }
                } else {
                    quota + (own.limit - own_quota).max(0.0)
                };
                queues[i].spec.resources[r as usize] = Some(ResourceQuota {
                    quota,
                    limit,
                    over_quota_weight: own.over_quota_weight,
                });
            }
        }
        state[i] = 2;
    }
    for i in 0..queues.len() {
        if queues[i].flavor != QueueFlavor::Kai {
            pool(i, queues, &children, &mut state);
        }
    }
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
        creation_time: None,
        uid: None,
    }
}

/// A number given as a number (KAI Queue fields are numbers in the CRD; `"8"` is refused).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
    .filter(|x: &f64| x.is_finite())
}

/// A Kueue GPU amount: a number or a quantity string of digits (`8`, `"8"`).
fn gpu_quantity(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|x: &f64| x.is_finite())
}

fn problem(field: &str, message: String) -> FieldProblem {
    FieldProblem {
        field: field.to_owned(),
        message,
    }
}

/// KAI's priority for a Queue without `spec.priority` (`DefaultQueuePriority` in KAI's
/// `pkg/common/constants/constants.go`; the CRD: "When not set, default is 100").
pub const KAI_DEFAULT_QUEUE_PRIORITY: i32 = 100;

/// What KAI reads for an omitted resource or field of a Queue: Go's zero values (the CRD sets
/// no defaults). KAI's docs/queues/README.md: quota "0 or unset: no guaranteed resources",
/// limit "0 or unset: no additional resources allowed"; an over-quota weight of 0 gets nothing
/// over quota.
pub const KAI_OMITTED: ResourceQuota = ResourceQuota {
    quota: 0.0,
    limit: 0.0,
    over_quota_weight: 0.0,
};

/// KAI Queue memory is in megabytes (10^6 bytes; the CRD: "1 = 10^6 (1000*1000) bytes");
/// railyard's queues count MiB.
pub fn kai_megabytes_to_mib(mb: f64) -> f64 {
    mb * 1e6 / 1_048_576.0
}

/// A live KAI Queue's `status.requested` and `status.allocated` (Kubernetes resource lists:
/// `nvidia.com/gpu`, `cpu`, `memory` quantities; other resources are not what queues share), or
/// `None` for a Queue without a status (a file the user wrote).
fn kai_status(d: &Value) -> Result<Option<LiveQueueStatus>, FieldProblem> {
    let Some(status) = d.get("status").filter(|s| !s.is_null()) else {
        return Ok(None);
    };
    let list = |key: &str| -> Result<sched::Resources, FieldProblem> {
        let mut r = sched::Resources::default();
        let Some(v) = status.get(key).filter(|v| !v.is_null()) else {
            return Ok(r);
        };
        let map = v.as_object().ok_or_else(|| {
            problem(
                &format!("status.{key}"),
                "expected a resource list (nvidia.com/gpu, cpu, memory)".to_owned(),
            )
        })?;
        for (name, q) in map {
            let field = format!("status.{key}[{name}]");
            let bad = |what: &str| {
                problem(
                    &field,
                    format!(
                        "expected {what}, got {}",
                        crate::error::excerpt(&q.to_string())
                    ),
                )
            };
            match name.as_str() {
                jobs::GPU_RESOURCE => {
                    r.gpu = jobs::parse_cpu_millis(q)
                        .ok_or_else(|| bad("a GPU quantity (`2`, `500m`)"))?
                        as f64
                        / 1000.0;
                }
                "cpu" => {
                    r.cpu = jobs::parse_cpu_millis(q)
                        .ok_or_else(|| bad("a CPU quantity (`4`, `500m`)"))?
                        as f64;
                }
                "memory" => {
                    r.memory = jobs::parse_memory_mib(q)
                        .ok_or_else(|| bad("a memory quantity (`64Gi`)"))?
                        as f64;
                }
                _ => {}
            }
        }
        Ok(r)
    };
    Ok(Some(LiveQueueStatus {
        requested: list("requested")?,
        allocated: list("allocated")?,
    }))
}

/// The objects of parsed documents, a Kubernetes list (`QueueList`, `List`, as `kubectl get …
/// -o json` prints it) standing for its items.
pub fn list_items(docs: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::with_capacity(docs.len());
    for d in docs {
        let is_list = d
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with("List"))
            && d.get("items").is_some_and(Value::is_array);
        match d {
            Value::Object(mut m) if is_list => {
                if let Some(Value::Array(items)) = m.remove("items") {
                    out.extend(items);
                }
            }
            d => out.push(d),
        }
    }
    out
}

/// A KAI Queue as KAI's scheduler reads it, and the webhook's refusal when it has no
/// `spec.resources` (the queue is still returned, with KAI's zeros, so its children are not
/// reported as orphans too).
fn kai_queue(d: &Value) -> Result<(QueueSpec, Option<FieldProblem>), FieldProblem> {
    let name = d
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    // A misspelt field (`parentqueue`) would silently change the tree: refuse what the KAI
    // Queue CRD (scheduling.run.ai/v2) does not define.
    const KAI_SPEC_FIELDS: [&str; 6] = [
        "displayName",
        "parentQueue",
        "priority",
        "resources",
        "preemptMinRuntime",
        "reclaimMinRuntime",
    ];
    if let Some(spec) = d.get("spec").and_then(Value::as_object) {
        if let Some(k) = spec.keys().find(|k| !KAI_SPEC_FIELDS.contains(&k.as_str())) {
            return Err(problem(
                &format!("spec.{k}"),
                format!(
                    "unknown field; a KAI Queue's spec has {}",
                    KAI_SPEC_FIELDS.join(", ")
                ),
            ));
        }
    }
    let parent = match d.pointer("/spec/parentQueue") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if p.is_empty() => None,
        Some(Value::String(p)) => Some(p.clone()),
        Some(v) => {
            return Err(problem(
                "spec.parentQueue",
                format!("expected a queue name, got {v}"),
            ))
        }
    };
    let priority = match d.pointer("/spec/priority") {
        None | Some(Value::Null) => KAI_DEFAULT_QUEUE_PRIORITY,
        Some(v) => v
            .as_i64()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| problem("spec.priority", format!("expected an integer, got {v}")))?,
    };
    // KAI's admission webhook refuses a Queue without resources ("resources must be
    // specified"); its scheduler reads every omitted resource and field as 0.
    let res = d.pointer("/spec/resources").filter(|r| !r.is_null());
    let refused = res.is_none().then(|| {
        problem(
            "spec.resources",
            "missing; KAI's admission webhook rejects a Queue without resources (\"resources must be specified\")".to_owned(),
        )
    });
    let mut resources = [Some(KAI_OMITTED); 3];
    if let Some(res) = res {
        let Some(map) = res.as_object() else {
            return Err(problem(
                "spec.resources",
                "expected a map of gpu, cpu, memory".to_owned(),
            ));
        };
        for (key, v) in map {
            let r = match key.as_str() {
                "gpu" => Resource::Gpu,
                "cpu" => Resource::Cpu,
                "memory" => Resource::Memory,
                other => {
                    return Err(problem(
                        &format!("spec.resources.{other}"),
                        "expected one of gpu, cpu, memory".to_owned(),
                    ))
                }
            };
            let field = |f: &str, default: f64| -> Result<f64, FieldProblem> {
                match v.get(f) {
                    None | Some(Value::Null) => Ok(default),
                    Some(x) => number(x).ok_or_else(|| {
                        problem(
                            &format!("spec.resources.{key}.{f}"),
                            format!("expected a number, got {x}"),
                        )
                    }),
                }
            };
            if let Some(obj) = v.as_object() {
                if let Some(k) = obj
                    .keys()
                    .find(|k| !matches!(k.as_str(), "quota" | "limit" | "overQuotaWeight"))
                {
                    return Err(problem(
                        &format!("spec.resources.{key}.{k}"),
                        "expected quota, limit or overQuotaWeight".to_owned(),
                    ));
                }
            } else {
                return Err(problem(
                    &format!("spec.resources.{key}"),
                    "expected a map".to_owned(),
                ));
            }
            let unit = |v: f64| {
                if r == Resource::Memory && v != UNLIMITED {
                    kai_megabytes_to_mib(v)
                } else {
                    v
                }
            };
            resources[r as usize] = Some(ResourceQuota {
                quota: unit(field("quota", KAI_OMITTED.quota)?),
                limit: unit(field("limit", KAI_OMITTED.limit)?),
                over_quota_weight: field("overQuotaWeight", KAI_OMITTED.over_quota_weight)?,
            });
        }
    }
    let creation_time = match d.pointer("/metadata/creationTimestamp") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(
            crate::trace::parse_datetime(t)
                .map(|s| s.floor() as i64)
                .map_err(|e| problem("metadata.creationTimestamp", e))?,
        ),
        Some(v) => {
            return Err(problem(
                "metadata.creationTimestamp",
                format!("expected a time such as 2025-01-31T12:00:00Z, got {v}"),
            ))
        }
    };
    let spec = QueueSpec {
        name,
        parent,
        priority,
        resources,
        creation_time,
        uid: None,
    };
    Ok((spec, refused))
}

/// The resource a Kueue `resources[].name` is (`nvidia.com/gpu`, `cpu`, `memory`), if one of them.
pub fn kueue_resource(name: &str) -> Option<Resource> {
    match name {
        "nvidia.com/gpu" => Some(Resource::Gpu),
        "cpu" => Some(Resource::Cpu),
        "memory" => Some(Resource::Memory),
        _ => None,
    }
}

/// A Kueue quota amount of `r` in railyard's units (GPUs, CPU millicores, memory MiB).
pub fn kueue_amount(r: Resource, v: &Value) -> Option<f64> {
    match r {
        Resource::Gpu => gpu_quantity(v),
        Resource::Cpu => parse_cpu_millis(v).map(|m| m as f64),
        Resource::Memory => parse_memory_mib(v).map(|m| m as f64),
    }
}

/// What Kueue's API server refuses in a ClusterQueue's or Cohort's resource groups: a flavor
/// named twice (in one group or in two: its list is keyed by name, and a flavor belongs to one
/// group), a resource named twice in a flavor, a resource covered twice (in one group or in two).
/// Each repeat is a problem naming where the first one is.
fn kueue_duplicates(groups: &[Value], problems: &mut Vec<FieldProblem>) {
    let name_of = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_owned);
    let mut flavors: BTreeMap<String, String> = BTreeMap::new();
    let mut covered: BTreeMap<String, String> = BTreeMap::new();
    let mut repeat =
        |seen: &mut BTreeMap<String, String>, what: &str, name: String, at: String| match seen
            .get(&name)
        {
            Some(first) => problems.push(problem(
                &at,
                format!("{what} `{name}` is given twice (first at {first}); Kueue refuses it"),
            )),
            None => {
                seen.insert(name, at);
            }
        };
    for (gi, g) in groups.iter().enumerate() {
        let list = |k: &str| {
            g.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        for (ci, c) in list("coveredResources").iter().enumerate() {
            if let Some(c) = c.as_str() {
                let at = format!("spec.resourceGroups[{gi}].coveredResources[{ci}]");
                repeat(&mut covered, "covered resource", c.to_owned(), at);
            }
        }
        for (fi, f) in list("flavors").iter().enumerate() {
            let at = format!("spec.resourceGroups[{gi}].flavors[{fi}]");
            if let Some(n) = name_of(f) {
                repeat(&mut flavors, "flavor", n, format!("{at}.name"));
            }
            let mut resources = BTreeMap::new();
            let rs = f.get("resources").and_then(Value::as_array).cloned();
            for (ri, r) in rs.unwrap_or_default().iter().enumerate() {
                if let Some(n) = name_of(r) {
                    let at = format!("{at}.resources[{ri}].name");
                    repeat(&mut resources, "resource", n, at);
                }
            }
        }
    }
}

fn kueue_queue(d: &Value, kind: &str, problems: &mut Vec<FieldProblem>) -> QueueSpec {
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
    let weight = match d.pointer("/spec/fairSharing/weight") {
        None | Some(Value::Null) => 1.0,
        Some(w) => match kueue_amount(Resource::Cpu, w) {
            Some(m) => m / 1000.0,
            None => {
                problems.push(problem(
                    "spec.fairSharing.weight",
                    format!("expected a non-negative quantity, got {w}"),
                ));
                1.0
            }
        },
    };
    let groups = d.pointer("/spec/resourceGroups").and_then(Value::as_array);
    let Some(groups) = groups.filter(|g| !g.is_empty()) else {
        let mut spec = pass_through(&name);
        spec.parent = parent;
        return spec;
    };
    kueue_duplicates(groups, problems);
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
                    Some((Some(q), v)) if q < 0.0 => {
                        problems.push(problem(
                            &format!("{at}.nominalQuota"),
                            format!("{v} is negative; expected a quantity ≥ 0 (Kueue has no -1 for unlimited: leave borrowingLimit out instead)"),
                        ));
                        continue;
                    }
                    Some((Some(q), _)) => q,
                    Some((None, v)) => {
                        problems.push(problem(
                            &format!("{at}.nominalQuota"),
                            format!("expected a quantity, got {v}"),
                        ));
                        continue;
                    }
                    None => {
                        problems.push(problem(&format!("{at}.nominalQuota"), "missing".to_owned()));
                        continue;
                    }
                };
                let borrow = match read("borrowingLimit") {
                    Some((Some(b), v)) if b < 0.0 => {
                        problems.push(problem(
                            &format!("{at}.borrowingLimit"),
                            format!("{v} is negative; expected a quantity ≥ 0"),
                        ));
                        None
                    }
                    Some((Some(b), _)) => Some(b),
                    Some((None, v)) => {
                        problems.push(problem(
                            &format!("{at}.borrowingLimit"),
                            format!("expected a quantity, got {v}"),
                        ));
                        None
                    }
                    None => None,
                };
                match read("lendingLimit") {
                    Some((Some(l), v)) if l < 0.0 => problems.push(problem(
                        &format!("{at}.lendingLimit"),
                        format!("{v} is negative; expected a quantity ≥ 0"),
                    )),
                    Some((None, v)) => problems.push(problem(
                        &format!("{at}.lendingLimit"),
                        format!("expected a quantity, got {v}"),
                    )),
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
        resources[r as usize] = Some(match acc[r as usize] {
            // Without a parent nothing can be borrowed: the nominal quota is the limit.
            Some((q, _, _)) if parent.is_none() => ResourceQuota {
                quota: q,
                limit: q,
                over_quota_weight: weight,
            },
            Some((q, b, all)) => ResourceQuota {
                quota: q,
                limit: if all { q + b } else { UNLIMITED },
                over_quota_weight: weight,
            },
            // A resource no group covers: Kueue admits none of it ("resource … unavailable
            // in ClusterQueue"). A Cohort adds nothing of it to the pool.
            None if kind == "ClusterQueue" => ResourceQuota {
                quota: 0.0,
                limit: 0.0,
                over_quota_weight: weight,
            },
            None => ResourceQuota {
                quota: 0.0,
                limit: UNLIMITED,
                over_quota_weight: weight,
            },
        });
    }
    QueueSpec {
        name,
        parent,
        priority: 0,
        resources,
        creation_time: None,
        uid: None,
    }
}
