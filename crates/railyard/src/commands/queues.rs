//! `railyard queues validate` (every problem of a queue tree at once, one line each, naming
//! the file and the queue; strict) and `railyard queues share` (each queue's fair share by the
//! rules of the scheduler the files are written for — KAI's for KAI Queues — with the problems
//! that scheduler accepts printed as warnings).

use std::path::PathBuf;

use sched::Dialect;
use serde::Serialize;

use ops::queues::{has_live_status, problems, read_files, share_report, ShareReport};

use crate::cluster_arg::load_named;
use crate::error::CliError;
use crate::output::OutputFormat;
use report::fmt::{plural, quota_amount as amount, trim_float};
use report::table::Table;

/// Arguments of `queues validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Queue files (KAI Queue, Kueue ClusterQueue/Cohort/LocalQueue) and job files whose
    /// target queues should be checked.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format (JSON/YAML: counts and every problem with its severity; wide: as text)
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
    /// files (each job's full request counts for its queue), or inline `QUEUE=gpu:8,cpu:4`
    /// (default: the `status.requested` of live KAI Queues, `kubectl get queues -o json`).
    #[arg(long, num_args = 1.., value_name = "FILE|QUEUE=gpu:N")]
    pub demand: Vec<String>,
    /// What the top-level queues share, e.g. `gpu:64,cpu:512,memory:2Ti` (default: the demand
    /// file's `capacity`, else the cluster's GPUs with `--cluster`, else unbounded).
    #[arg(long, value_name = "gpu:N,…")]
    pub capacity: Option<String>,
    /// A cluster whose GPUs are the GPU capacity.
    #[arg(long, value_name = "preset:NAME|FILE")]
    pub cluster: Option<String>,
    /// Output format (wide adds each queue's priority, GPU quota, limit and weight)
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
    let (q, j) = (read.queues.len(), read.jobs.len());
    Ok(format!(
        "ok: {q} queue{}, {j} job{}, no problems\n",
        plural(q),
        plural(j)
    ))
}

/// `queues share`.
pub fn share(args: &ShareArgs) -> Result<String, CliError> {
    let queues = live::files(&args.queues, live::Input::Queues, &Default::default())?;
    let read = read_files(&queues)?;
    if args.demand.is_empty() && !has_live_status(&read) {
        return Err(CliError::Usage(
            "--demand: missing; give a demand, or live KAI Queues (kubectl get queues -o json) whose status says what each queue requests".to_owned(),
        ));
    }
    let cluster_gpus = args.cluster.as_deref().map(load_named).transpose()?;
    let cluster_gpus = cluster_gpus.map(|c| c.gpu_count() as f64);
    let report = share_report(&read, &args.demand, args.capacity.as_deref(), cluster_gpus)
        .map_err(CliError::usage_if_flag)?;
    Ok(args
        .output
        .render(&report, |wide| share_text(&report, wide)))
}

fn share_text(r: &ShareReport, wide: bool) -> String {
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
    // Live queues: what each holds now, beside its share.
    let live = r.queues.iter().any(|q| q.gpu.allocated.is_some());
    // Text: demand beside the share; wide adds priority, quota, limit and weight.
    let mut headers = vec!["queue", "parent"];
    if wide {
        headers.extend(["prio", "gpu quota", "gpu limit", "weight"]);
    }
    headers.extend(["gpu demand", "gpu share"]);
    if live {
        headers.push("gpu allocated");
    }
    headers.extend(["cpu share", "memory share MiB"]);
    let mut t = Table::new(&headers);
    for q in &r.queues {
        let mut row = vec![q.queue.clone(), q.parent.clone().unwrap_or("(top)".into())];
        if wide {
            row.extend([
                q.priority.to_string(),
                amount(q.gpu.quota),
                amount(q.gpu.limit),
                trim_float(q.gpu.over_quota_weight),
            ]);
        }
        row.extend([trim_float(q.gpu.demand), trim_float(q.gpu.fair_share)]);
        if live {
            row.push(q.gpu.allocated.map_or("-".to_owned(), trim_float));
        }
        row.extend([
            trim_float(q.cpu.fair_share),
            trim_float(q.memory_mib.fair_share),
        ]);
        t.row(row);
    }
    out.push_str(&t.render());
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
