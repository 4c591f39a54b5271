//! `railyard queues validate` (every problem of a queue tree at once, one line each, naming
//! the file and the queue; strict) and `railyard queues share` (each queue's fair share by the
//! rules of the scheduler the files are written for — KAI's for KAI Queues — with the problems
//! that scheduler accepts printed as warnings).

use std::collections::BTreeMap;
use std::path::PathBuf;

use sched::{fair_share_in, Dialect, Resource, Resources};
use serde::Serialize;

use ops::queues::{
    dialect, inline_capacity, inline_demand, problems, read_demand, read_files, tree_in,
};

use crate::cluster_arg::{load_cluster, ClusterArgs};
use crate::error::CliError;
use crate::output::OutputFormat;
use crate::table::Table;
use formats::input::read_text;
use report::fmt::{plural, trim_float};

/// Arguments of `queues validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Queue files (KAI Queue, Kueue ClusterQueue/Cohort/LocalQueue) and job files whose
    /// target queues should be checked.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format (JSON/YAML: counts and every problem with its severity).
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// What `queues validate -o json` prints.
#[derive(Debug, Serialize)]
struct ValidateReport {
    queues: usize,
    jobs: usize,
    problems: Vec<ValidateProblem>,
}

#[derive(Debug, Serialize)]
struct ValidateProblem {
    severity: ops::Severity,
    message: String,
}

/// Arguments of `queues share`.
#[derive(Debug, clap::Args)]
pub struct ShareArgs {
    /// Queue files (all KAI Queues: KAI's fair-share rules; otherwise railyard's).
    #[arg(long, required = true, num_args = 1.., value_name = "FILE")]
    pub queues: Vec<PathBuf>,
    /// Demand: a demand file (`demand: {queue: {gpu, cpu, memory}}`, optional `capacity`), job
    /// files (each job's full request counts for its queue), or inline `QUEUE=gpu:8,cpu:4`.
    #[arg(long, required = true, num_args = 1.., value_name = "FILE|QUEUE=gpu:N")]
    pub demand: Vec<String>,
    /// What the top-level queues share, e.g. `gpu:64,cpu:512,memory:2Ti` (default: the demand
    /// file's `capacity`, else the cluster's GPUs with `--cluster`, else unbounded).
    #[arg(long, value_name = "gpu:N,…")]
    pub capacity: Option<String>,
    /// A cluster whose GPUs are the GPU capacity.
    #[arg(long, value_name = "preset:NAME|FILE")]
    pub cluster: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// `queues validate`: the summary on success; every problem (exit 1) otherwise.
pub fn validate(args: &ValidateArgs) -> Result<String, CliError> {
    let read = read_files(&args.files)?;
    let problems = problems(&read);
    if args.output.is_structured() {
        let n = problems.len();
        let report = ValidateReport {
            queues: read.queues.len(),
            jobs: read.jobs.len(),
            problems: problems
                .into_iter()
                .map(|message| ValidateProblem {
                    severity: ops::Severity::Error,
                    message,
                })
                .collect(),
        };
        let text = args.output.render(&report, |_| String::new());
        return match n {
            0 => Ok(text),
            _ => Err(CliError::CheckFailed {
                report: text,
                summary: format!("queues validate: {n} problem{}", plural(n)),
            }),
        };
    }
    if !problems.is_empty() {
        return Err(CliError::Problems(problems));
    }
    Ok(format!(
        "ok: {} queues, {} jobs, no problems\n",
        read.queues.len(),
        read.jobs.len()
    ))
}

#[derive(Debug, Serialize)]
struct ShareRow {
    queue: String,
    parent: Option<String>,
    priority: i32,
    gpu: ResourceRow,
    cpu: ResourceRow,
    memory_mib: ResourceRow,
}

#[derive(Debug, Serialize)]
struct ResourceRow {
    quota: f64,
    limit: f64,
    over_quota_weight: f64,
    demand: f64,
    fair_share: f64,
}

#[derive(Debug, Serialize)]
struct ShareReport {
    /// Whose rules decided: `kai` (every queue a KAI Queue) or `kueue` (railyard's own).
    rules: &'static str,
    capacity: BTreeMap<&'static str, Option<f64>>,
    queues: Vec<ShareRow>,
    /// Problems the scheduler accepts (KAI: child quotas above the parent's, limits below
    /// quotas), one line each naming file and queue.
    warnings: Vec<String>,
}

/// `queues share`.
pub fn share(args: &ShareArgs) -> Result<String, CliError> {
    let read = read_files(&args.queues)?;
    let rules = dialect(&read);
    let (tree, warnings) = tree_in(&read, rules)?;
    let mut demand = vec![Resources::default(); tree.queues.len()];
    let mut capacity: Option<(Resources, [bool; 3])> = None;
    let mut add = |at: &str, queue: &str, r: Resources| -> Result<(), CliError> {
        let q = tree.find(queue).ok_or_else(|| {
            CliError::input(at, format!("queue `{queue}` is not in the queue files"))
        })?;
        if !tree.is_leaf(q) {
            return Err(CliError::input(
                at,
                format!("queue `{queue}` has child queues; demand goes to leaf queues"),
            ));
        }
        demand[q.index()] = demand[q.index()].add(&r);
        Ok(())
    };
    for d in &args.demand {
        let path = std::path::Path::new(d);
        if !path.exists() {
            if let Some((queue, r)) = inline_demand(d)? {
                add("--demand", &queue, r)?;
                continue;
            }
        }
        let text = read_text(path)?;
        let read = read_demand(d, &text)?;
        if read.capacity.is_some() {
            capacity = read.capacity;
        }
        for (queue, r) in read.demand {
            add(d, &queue, r)?;
        }
    }
    let mut cap = Resources {
        gpu: f64::INFINITY,
        cpu: f64::INFINITY,
        memory: f64::INFINITY,
    };
    let mut known = [false; 3];
    if let Some(c) = &args.cluster {
        let cluster = load_cluster(&ClusterArgs {
            cluster: c.clone(),
            ..ClusterArgs::default()
        })?;
        cap.gpu = cluster.gpu_count() as f64;
        known[0] = true;
    }
    let explicit = match &args.capacity {
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
        }
    };
    let report = ShareReport {
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
    };
    Ok(args.output.render(&report, |_| share_text(&report)))
}

fn amount(v: f64) -> String {
    if v < 0.0 || v.is_infinite() {
        "unlimited".to_owned()
    } else {
        trim_float(v)
    }
}

fn share_text(r: &ShareReport) -> String {
    let cap = |k: &str| {
        r.capacity
            .get(k)
            .copied()
            .flatten()
            .map_or("unbounded".to_owned(), amount)
    };
    let rules = if r.rules == Dialect::Kai.name() {
        "KAI (min(quota, demand) each, then whole units over quota by priority and weight)"
    } else {
        "railyard (quotas scaled to capacity, then water-filled over quota)"
    };
    let mut out = format!(
        "rules: {rules}\ncapacity: gpu {}, cpu {} millicores, memory {} MiB\n\n",
        cap("gpu"),
        cap("cpu"),
        cap("memory_mib")
    );
    let mut t = Table::new(&[
        "queue",
        "parent",
        "prio",
        "gpu quota",
        "gpu limit",
        "weight",
        "gpu demand",
        "gpu share",
        "cpu share",
        "memory share MiB",
    ]);
    for q in &r.queues {
        t.row(vec![
            q.queue.clone(),
            q.parent.clone().unwrap_or_else(|| "(top)".to_owned()),
            q.priority.to_string(),
            amount(q.gpu.quota),
            amount(q.gpu.limit),
            trim_float(q.gpu.over_quota_weight),
            trim_float(q.gpu.demand),
            trim_float(q.gpu.fair_share),
            trim_float(q.cpu.fair_share),
            trim_float(q.memory_mib.fair_share),
        ]);
    }
    out.push_str(&t.render());
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
