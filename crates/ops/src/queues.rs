//! Queue files checked as a whole: every problem of the files and of the tree they make, each
//! with its file, document and field (`queues validate`, `queues share`, `place --queues`,
//! `lint`), and the tree itself — strictly ([`tree`], `queues validate`) or as the scheduler the
//! files are written for would compute it ([`tree_in`]: under KAI, child quotas above the
//! parent's and limits below quotas are warnings, not refusals).

use std::collections::BTreeMap;
use std::path::PathBuf;

use formats::input::parse_typed;
use formats::input::read_text;
use formats::jobs::{self, parse_cpu_millis, parse_memory_mib};
use formats::queues::{self, JobEntry, QueueEntry, QueueFiles, QueueFinding, QueueFlavor};
use formats::FormatError;
use sched::{fair_share_in, Dialect, QueueProblemKind, QueueTree, Resource, Resources};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Read queue files (KAI Queues, Kueue ClusterQueues, Cohorts and LocalQueues) in order.
pub fn read_files(paths: &[PathBuf]) -> Result<QueueFiles, FormatError> {
    let mut files = Vec::new();
    for p in paths {
        files.push((p.display().to_string(), read_text(p)?));
    }
    Ok(queues::read(&files))
}

/// Every problem of the files and the tree, one line each, naming file and queue.
pub fn problems(read: &QueueFiles) -> Vec<String> {
    findings(read).iter().map(ToString::to_string).collect()
}

/// Every problem of the files and the tree, each with its file and, when known, the document
/// and field it is about: the one check behind `queues validate`, `queues share`, `place
/// --queues` and `lint`. Tree problems ([`sched::validate`]) point at the queue's definition
/// (a duplicate at its second definition) or at the job that names the queue.
pub fn findings(read: &QueueFiles) -> Vec<QueueFinding> {
    classified_findings(read)
        .into_iter()
        .map(|(f, _)| f)
        .collect()
}

/// [`findings`], each with the tree problem it reports (`None` for a problem of the files).
fn classified_findings(read: &QueueFiles) -> Vec<(QueueFinding, Option<QueueProblemKind>)> {
    let specs: Vec<sched::QueueSpec> = read.queues.iter().map(|q| q.spec.clone()).collect();
    let targets: Vec<sched::JobTarget> = read
        .jobs
        .iter()
        .map(|j| sched::JobTarget {
            job: j.job.clone(),
            queue: j.queue.clone(),
        })
        .collect();
    let mut out: Vec<(QueueFinding, Option<QueueProblemKind>)> =
        read.problems.iter().map(|p| (p.clone(), None)).collect();
    // Each queue's definitions in input order (the first is the one the tree keeps).
    let mut definitions: BTreeMap<&str, Vec<&QueueEntry>> = BTreeMap::new();
    for q in &read.queues {
        definitions.entry(q.spec.name.as_str()).or_default().push(q);
    }
    let mut duplicates_seen: BTreeMap<String, usize> = BTreeMap::new();
    let job_entry: BTreeMap<&str, &JobEntry> = read
        .jobs
        .iter()
        .rev()
        .map(|j| (j.job.as_str(), j))
        .collect();
    for p in sched::validate(&specs, &targets) {
        let finding = match &p.kind {
            QueueProblemKind::JobOnNonLeaf(j) | QueueProblemKind::JobOnUnknownQueue(j) => {
                job_entry.get(j.as_str()).map(|e| {
                    QueueFinding::new(
                        &e.file,
                        Some(e.document),
                        Some(e.queue_field.clone()),
                        p.to_string(),
                    )
                })
            }
            kind => {
                let defs = definitions.get(p.queue.as_str());
                let nth = if *kind == QueueProblemKind::Duplicate {
                    let seen = duplicates_seen.entry(p.queue.clone()).or_default();
                    *seen += 1;
                    *seen
                } else {
                    0
                };
                // A duplicate names the definition it repeats.
                let first = match (defs.and_then(|d| d.first()), nth) {
                    (Some(q), 1..) => match q.document {
                        Some(n) => format!(" (first in {}, document {n})", q.file),
                        None => format!(" (first in {})", q.file),
                    },
                    _ => String::new(),
                };
                defs.and_then(|d| d.get(nth).or(d.first())).map(|q| {
                    QueueFinding::new(
                        &q.file,
                        q.document,
                        q.document.map(|_| q.flavor.field_of(kind)),
                        format!("{p}{first}"),
                    )
                })
            }
        };
        let finding = finding.unwrap_or_else(|| QueueFinding::new("-", None, None, p.to_string()));
        out.push((finding, Some(p.kind)));
    }
    out
}

/// The queue tree of queue files, or every problem of the files and the tree (jobs in the files
/// are not checked: `share` and `place` take their demand elsewhere).
pub fn tree(read: &QueueFiles) -> Result<QueueTree, FormatError> {
    let problems = problems(&QueueFiles {
        jobs: Vec::new(),
        ..read.clone()
    });
    if !problems.is_empty() {
        return Err(FormatError::Problems(problems));
    }
    QueueTree::new(read.queues.iter().map(|q| q.spec.clone()).collect())
        .map_err(|ps| FormatError::Problems(ps.iter().map(ToString::to_string).collect()))
}

/// Whose rules the queue files are written for: KAI's when every queue is a KAI Queue, else
/// railyard's own (Kueue ClusterQueues and Cohorts, or a mix).
pub fn dialect(read: &QueueFiles) -> Dialect {
    if !read.queues.is_empty() && read.queues.iter().all(|q| q.flavor == QueueFlavor::Kai) {
        Dialect::Kai
    } else {
        Dialect::Kueue
    }
}

/// The queue tree as `dialect`'s scheduler would compute with it, and the problems that are
/// only warnings there (each naming file and queue); every problem when one refuses the tree
/// (jobs in the files are not checked).
pub fn tree_in(
    read: &QueueFiles,
    dialect: Dialect,
) -> Result<(QueueTree, Vec<QueueFinding>), FormatError> {
    let all = classified_findings(&QueueFiles {
        jobs: Vec::new(),
        ..read.clone()
    });
    let refuses =
        |k: &Option<QueueProblemKind>| k.as_ref().is_none_or(|k| !k.is_warning_in(dialect));
    if all.iter().any(|(_, k)| refuses(k)) {
        return Err(FormatError::Problems(
            all.iter().map(|(f, _)| f.to_string()).collect(),
        ));
    }
    let (tree, _) = QueueTree::new_in(
        read.queues.iter().map(|q| q.spec.clone()).collect(),
        dialect,
    )
    .map_err(|ps| FormatError::Problems(ps.iter().map(ToString::to_string).collect()))?;
    Ok((tree, all.into_iter().map(|(f, _)| f).collect()))
}

/// What live KAI Queues (`kubectl get queues -o json`) say, by queue of `tree`: each leaf
/// queue's demand (its `status.requested`) and each queue's `status.allocated`; `None` when no
/// queue of the files has a status.
pub fn live_status(read: &QueueFiles, tree: &QueueTree) -> Option<LiveShareInput> {
    if read.queues.iter().all(|q| q.status.is_none()) {
        return None;
    }
    let mut demand = vec![Resources::default(); tree.queues.len()];
    let mut allocated = vec![None; tree.queues.len()];
    for q in &read.queues {
        let (Some(status), Some(id)) = (q.status, tree.find(&q.spec.name)) else {
            continue;
        };
        if tree.is_leaf(id) {
            demand[id.index()] = status.requested;
        }
        allocated[id.index()] = Some(status.allocated);
    }
    Some(LiveShareInput { demand, allocated })
}

/// Demand and allocation read from live queues ([`live_status`]), indexed by queue.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveShareInput {
    /// Each leaf queue's `status.requested` (zero for other queues).
    pub demand: Vec<Resources>,
    /// Each queue's `status.allocated`, when it has a status.
    pub allocated: Vec<Option<Resources>>,
}

// ---- `queues share` ----

/// One queue's row of [`ShareReport`].
#[derive(Debug, Serialize)]
pub struct ShareRow {
    pub queue: String,
    pub parent: Option<String>,
    pub priority: i32,
    pub gpu: ResourceRow,
    pub cpu: ResourceRow,
    pub memory_mib: ResourceRow,
}

/// One resource of a [`ShareRow`].
#[derive(Debug, Serialize)]
pub struct ResourceRow {
    pub quota: f64,
    pub limit: f64,
    pub over_quota_weight: f64,
    pub demand: f64,
    pub fair_share: f64,
    /// What the queue holds now (a live KAI Queue's `status.allocated`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocated: Option<f64>,
}

/// What `queues share` reports.
#[derive(Debug, Serialize)]
pub struct ShareReport {
    /// Whose rules decided: `kai` (every queue a KAI Queue) or `kueue` (railyard's own).
    pub rules: &'static str,
    pub capacity: BTreeMap<&'static str, Option<f64>>,
    pub queues: Vec<ShareRow>,
    /// Problems the scheduler accepts (KAI: child quotas above the parent's, limits below
    /// quotas), one line each naming file and queue.
    pub warnings: Vec<String>,
}

/// Whether any queue of the files is a live KAI Queue with a status (`queues share` takes its
/// demand from there when none is given).
pub fn has_live_status(read: &QueueFiles) -> bool {
    read.queues.iter().any(|q| q.status.is_some())
}

/// `queues share`: each queue's fair share by the rules the files are written for, for the
/// demand of `demand_args` (demand files, job files or inline `QUEUE=gpu:N`; none: the live
/// queues' `status.requested`), the capacity `capacity_arg` (else a demand file's, else
/// `cluster_gpus` GPUs, else unbounded).
pub fn share_report(
    read: &QueueFiles,
    demand_args: &[String],
    capacity_arg: Option<&str>,
    cluster_gpus: Option<f64>,
) -> Result<ShareReport, FormatError> {
    let rules = dialect(read);
    let (tree, warnings) = tree_in(read, rules)?;
    let mut demand = vec![Resources::default(); tree.queues.len()];
    let mut capacity: Option<(Resources, [bool; 3])> = None;
    let mut add = |at: &str, queue: &str, r: Resources| -> Result<(), FormatError> {
        // A Kueue LocalQueue stands for its ClusterQueue (`NAMESPACE/NAME` picks the namespace).
        let resolved = match queue.split_once('/') {
            Some((ns, name)) => read.resolve_queue(Some(ns), name),
            None => read.resolve_queue(None, queue),
        };
        let queue = resolved.as_str();
        let q = tree.find(queue).ok_or_else(|| {
            FormatError::input(at, format!("queue `{queue}` is not in the queue files"))
        })?;
        if !tree.is_leaf(q) {
            return Err(FormatError::input(
                at,
                format!("queue `{queue}` has child queues; demand goes to leaf queues"),
            ));
        }
        demand[q.index()] = demand[q.index()].add(&r);
        Ok(())
    };
    for d in demand_args {
        let path = std::path::Path::new(d);
        if !path.exists() {
            if let Some((queue, r)) = inline_demand(d)? {
                add("--demand", &queue, r)?;
                continue;
            }
        }
        let text = read_text(path)?;
        let file = read_demand(d, &text)?;
        if file.capacity.is_some() {
            capacity = file.capacity;
        }
        for (queue, r) in file.demand {
            add(d, &queue, r)?;
        }
    }
    // Without a demand, live KAI Queues say what each leaf requests.
    let live = if demand_args.is_empty() {
        live_status(read, &tree)
    } else {
        None
    };
    if let Some(l) = &live {
        demand.clone_from(&l.demand);
    }
    let mut cap = Resources {
        gpu: f64::INFINITY,
        cpu: f64::INFINITY,
        memory: f64::INFINITY,
    };
    let mut known = [false; 3];
    if let Some(gpus) = cluster_gpus {
        cap.gpu = gpus;
        known[0] = true;
    }
    let explicit = match capacity_arg {
        Some(s) => Some(inline_capacity(s)?),
        None => capacity,
    };
    if let Some((c, given)) = explicit {
        for r in Resource::ALL {
            if given[r as usize] {
                cap.set(r, c.get(r));
                known[r as usize] = true;
            }
        }
    }
    let shares = fair_share_in(&tree, &demand, &cap, rules);
    let subtree = sched::subtree_usages(&tree, &demand);
    let row = |i: usize, r: Resource| {
        let q = tree.queues[i].quota(r);
        let own = if tree.is_leaf(sched::QueueId(i as u32)) {
            demand[i].get(r)
        } else {
            subtree[i].get(r)
        };
        ResourceRow {
            quota: q.quota,
            limit: q.limit,
            over_quota_weight: q.over_quota_weight,
            demand: own,
            fair_share: shares[i].get(r),
            allocated: live.as_ref().and_then(|l| l.allocated[i]).map(|a| a.get(r)),
        }
    };
    Ok(ShareReport {
        rules: rules.name(),
        capacity: Resource::ALL
            .iter()
            .map(|&r| {
                let name = if r == Resource::Memory {
                    "memory_mib"
                } else {
                    r.name()
                };
                (name, known[r as usize].then(|| cap.get(r)))
            })
            .collect(),
        queues: (0..tree.queues.len())
            .map(|i| ShareRow {
                queue: tree.queues[i].name.clone(),
                parent: tree.queues[i].parent.clone(),
                priority: tree.queues[i].priority,
                gpu: row(i, Resource::Gpu),
                cpu: row(i, Resource::Cpu),
                memory_mib: row(i, Resource::Memory),
            })
            .collect(),
        warnings: warnings.iter().map(ToString::to_string).collect(),
    })
}

// ---- demand files (`queues share --demand`) ----

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DemandFile {
    #[serde(default)]
    capacity: Option<BTreeMap<String, Value>>,
    demand: BTreeMap<String, BTreeMap<String, Value>>,
}

fn amounts(
    at: &str,
    map: &BTreeMap<String, Value>,
    inline: bool,
) -> Result<Resources, FormatError> {
    given_amounts(at, map, inline).map(|(r, _)| r)
}

/// Amounts and which resources were given.
fn given_amounts(
    at: &str,
    map: &BTreeMap<String, Value>,
    inline: bool,
) -> Result<(Resources, [bool; 3]), FormatError> {
    let mut r = Resources::default();
    let mut given = [false; 3];
    for (k, v) in map {
        let (res, val) = match k.as_str() {
            // A file gives GPUs as a number (`"8"` is refused); inline amounts are all text.
            "gpu" => (
                Resource::Gpu,
                v.as_f64()
                    .or_else(|| inline.then(|| v.as_str()?.parse().ok()).flatten()),
            ),
            "cpu" => (Resource::Cpu, parse_cpu_millis(v).map(|m| m as f64)),
            "memory" => (Resource::Memory, parse_memory_mib(v).map(|m| m as f64)),
            other => {
                return Err(FormatError::input(
                    at,
                    format!("{other}: expected gpu, cpu (cores) or memory (e.g. 64Gi)"),
                ))
            }
        };
        let val = val
            .filter(|x| x.is_finite() && (0.0..=sched::MAX_AMOUNT).contains(x))
            .ok_or_else(|| {
                FormatError::input(
                    at,
                    format!("{k}: expected a non-negative amount up to 1e15, got {v}"),
                )
            })?;
        r.set(res, val);
        given[res as usize] = true;
    }
    Ok((r, given))
}

/// What a `--demand` file says: the capacity (with which resources it gives) and each queue's
/// demand, in file order.
#[derive(Debug, Default)]
pub struct DemandRead {
    /// `capacity`, and which of gpu, cpu, memory it gives.
    pub capacity: Option<(Resources, [bool; 3])>,
    /// (queue, demand) in file order.
    pub demand: Vec<(String, Resources)>,
}

/// Read a `--demand` file (`file` names it in errors): a demand file (`demand:`, optional
/// `capacity:`) or job files, whose jobs' full requests count for their queues. Every amount
/// is finite, non-negative and at most [`sched::MAX_AMOUNT`].
pub fn read_demand(file: &str, text: &str) -> Result<DemandRead, FormatError> {
    let docs = formats::input::parse_documents(file, text)?;
    let is_demand = docs.len() == 1 && docs[0].get("demand").is_some();
    let mut out = DemandRead::default();
    if is_demand {
        let f: DemandFile = parse_typed(file, text)?;
        if let Some(c) = &f.capacity {
            out.capacity = Some(given_amounts(&format!("{file}: capacity"), c, false)?);
        }
        for (queue, m) in &f.demand {
            let r = amounts(&format!("{file}: demand.{queue}"), m, false)?;
            out.demand.push((queue.clone(), r));
        }
    } else {
        let docs: Vec<Value> = docs;
        for j in jobs::read_jobs(file, text)? {
            // The job's namespace goes with its queue name, so a LocalQueue resolves there.
            let queue = match docs
                .get(j.document.saturating_sub(1))
                .and_then(|d| d.pointer("/metadata/namespace"))
                .and_then(Value::as_str)
            {
                Some(ns) if j.format == jobs::JobFormat::Kueue => format!("{ns}/{}", j.queue),
                _ => j.queue.clone(),
            };
            out.demand.push((queue, j.request()));
        }
    }
    Ok(out)
}

/// An inline `--demand QUEUE=gpu:N,cpu:N,memory:64Gi`; `None` when `spec` has no `=`.
pub fn inline_demand(spec: &str) -> Result<Option<(String, Resources)>, FormatError> {
    let Some((queue, amounts_text)) = spec.split_once('=') else {
        return Ok(None);
    };
    let r = amounts("--demand", &inline_map("--demand", amounts_text)?, true)?;
    Ok(Some((queue.to_owned(), r)))
}

/// An inline `--capacity gpu:N,cpu:N,memory:64Gi`, and which resources it gives.
pub fn inline_capacity(spec: &str) -> Result<(Resources, [bool; 3]), FormatError> {
    given_amounts("--capacity", &inline_map("--capacity", spec)?, true)
}

/// `gpu:8,cpu:4,memory:64Gi` as a map.
fn inline_map(at: &str, s: &str) -> Result<BTreeMap<String, Value>, FormatError> {
    let mut m = BTreeMap::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once(':')
            .ok_or_else(|| FormatError::input(at, format!("`{part}`: expected RESOURCE:AMOUNT")))?;
        if m.insert(k.trim().to_owned(), Value::String(v.trim().to_owned()))
            .is_some()
        {
            return Err(FormatError::input(
                at,
                format!(
                    "`{s}`: resource `{}` given twice; give each resource once",
                    k.trim()
                ),
            ));
        }
    }
    Ok(m)
}
