//! `railyard simulate`: replay a trace on a cluster under one or several policies.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fabric::{RoutingConfig, RoutingMode};
use serde::Serialize;
use sim::engine::{simulate, CommDefaults, Network, SimConfig, Summary};
use sim::network::{fabric_network, fabric_network_from_scratch};
use sim::SimTime;

use crate::cluster_arg::{load_cluster, ClusterArgs};
use crate::commands::fabric::{NcclArgs, RoutingArg};
use crate::error::CliError;
use crate::output::OutputFormat;
use formats::trace::{read_trace, TraceFormat};
use report::html::{render, ReportContext};

/// Arguments of `simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The trace (CSV: Philly, Helios/Acme or native; see README).
    #[arg(long, value_name = "FILE")]
    pub trace: PathBuf,
    /// Solve the network from scratch on every change instead of incrementally: the reference
    /// the incremental model matches bit for bit (slow on large runs).
    #[arg(long, hide = true)]
    pub from_scratch_network: bool,
    /// Run as if the network cost nothing: every job's communicating share set to 0, so no job
    /// is slowed by its placement (a bound on what any placement can gain in run time)
    #[arg(long)]
    pub no_network: bool,
    /// Trace format.
    #[arg(long, value_enum, default_value = "auto")]
    pub trace_format: TraceFormatArg,
    /// Count unreadable trace rows instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// The policy: ORDER, ORDER+TOPOLOGY, ORDER+network or ORDER+TOPOLOGY+network;
    /// ORDER = fifo | best-effort | fair-share | srtf | sjf | tiresias, tiresias:T1:T2…:promote=N
    /// (thresholds and promote optional; queue thresholds in GPU-seconds, default 3600; PROMOTEKNOB, default 8; see README),
    /// TOPOLOGY = none | preferred:LEVEL |
    /// required:LEVEL (LEVEL: a level label, or tierN for the level of switch tier N); `+network`
    /// picks, among the placements TOPOLOGY allows, the one
    /// the fabric model predicts best (e.g. best-effort+preferred:tier1+network).
    #[arg(long, default_value = "best-effort", value_name = "POLICY")]
    pub policy: String,
    /// Run several policies side by side (comma-separated POLICY values); overrides --policy.
    #[arg(long, value_delimiter = ',', value_name = "POLICY,…")]
    pub compare: Vec<String>,
    /// Whose placement rules place the jobs: `kueue` (TAS BestFit, the default for trace jobs)
    /// or `kai` (KAI Scheduler's topology and node-placement rules); comma-separated to run
    /// each, crossed with every policy, the series labelled `POLICY (SCHEDULER)`.
    #[arg(long, value_delimiter = ',', value_name = "kueue|kai,…")]
    pub scheduler: Vec<String>,
    /// Queue files (KAI Queues, Kueue ClusterQueues/Cohorts/LocalQueues, as `queues validate`
    /// reads them; `-` for stdin): the jobs run under these queues' quotas, limits, borrowing,
    /// weights and preemption, by the rules of `--scheduler` (default: the files' scheduler).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub queues: Vec<PathBuf>,
    /// Trace queue → leaf queue: YAML `trace_queue: leaf_queue` or CSV `trace_queue,leaf_queue`
    /// (default: trace queue names are leaf queue names).
    #[arg(long, value_name = "FILE", requires = "queues")]
    pub queue_map: Option<PathBuf>,
    /// KAI's placement strategy (SchedulingShard `placementStrategy`): `binpack` (default),
    /// `spread`, or `gpu=…,cpu=…`; used by runs with `--scheduler kai`.
    #[arg(long, value_name = "STRATEGY", default_value = "")]
    pub kai_placement: String,
    /// Scheduling passes run at multiples of this many seconds (0 = at every event).
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS", value_parser = parse_cycle_s)]
    pub cycle_s: f64,
    /// Stop the simulation here (seconds after the first arrival).
    #[arg(long, value_name = "SECONDS", value_parser = parse_horizon_s)]
    pub horizon_s: Option<f64>,
    /// Re-solve link sharing at most every this many simulated seconds (network rounds, see
    /// README): fast on large fabrics, approximate; 0 = on every change, exact
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS", value_parser = parse_cycle_s)]
    pub network_round_s: f64,
    /// How the fabric spreads flows over equal-cost paths.
    #[arg(long, value_enum, default_value = "ecmp")]
    pub routing: RoutingArg,
    #[command(flatten)]
    pub nccl: NcclArgs,
    /// Seed for QP numbers, switch hash seeds and `--mtbf-hours` failures.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Node failures: CSV `time_s,node,duration_s` (s after the first arrival, node names).
    #[arg(long, value_name = "FILE")]
    pub failures: Option<PathBuf>,
    /// Mean time between failures of each node, hours (exponential, seeded by `--seed`).
    #[arg(long, value_name = "HOURS")]
    pub mtbf_hours: Option<f64>,
    /// Hours a node failed by `--mtbf-hours` stays down.
    #[arg(long, default_value_t = 1.0, value_name = "HOURS")]
    pub repair_hours: f64,
    /// Seconds of work between checkpoints, for jobs without a `checkpoint_s` (0: none).
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    pub checkpoint_interval: f64,
    /// Seconds a restart costs, for jobs without a `restart_s`.
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    pub restart_cost: f64,
    /// Output format (wide adds p50/p99 JCT, avg/p99 JCT of multi-node jobs, p99 wait,
    /// utilisation over the makespan, fragmentation, lost GPU-hours and multi-node jobs by tier)
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
    /// Check, after every event, that no GPU (share or memory) is oversubscribed, every running
    /// gang is whole, required levels and queue limits hold and every job ends exactly once; stop
    /// with exit 1 at the first violation.
    #[arg(long)]
    pub check_invariants: bool,
    /// Write the HTML report to this file (`--report` is a hidden alias kept for old scripts)
    #[arg(long = "out", alias = "report", value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// The command line as typed (set by `main`; empty when called as a library), recorded in
    /// the JSON and the report so a result says how to reproduce it.
    #[arg(skip)]
    pub command_line: Vec<String>,
}

/// `--trace-format` values (`formats::trace::TraceFormat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormatArg {
    /// Detect from the header.
    Auto,
    /// `timestamp,duration,num_gpus,gpu_time,cluster` (Microsoft Philly).
    Philly,
    /// `job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue` (SenseTime Helios/Acme).
    Helios,
    /// `name,submit_s,duration_s,gpus` plus optional `queue,priority,preemptible,topology,comm_share,bytes_per_step,checkpoint_s,restart_s`.
    Native,
    /// Slurm accounting, `sacct --parsable2` (fields in the README).
    Sacct,
    /// Kueue's Workload list, `kubectl get workloads -A -o json`.
    KueueWorkloads,
    /// Alibaba's GPU-sharing pod list, `openb_pod_list_*.csv`.
    Openb,
}

impl From<TraceFormatArg> for TraceFormat {
    fn from(a: TraceFormatArg) -> Self {
        match a {
            TraceFormatArg::Auto => TraceFormat::Auto,
            TraceFormatArg::Philly => TraceFormat::Philly,
            TraceFormatArg::Helios => TraceFormat::Helios,
            TraceFormatArg::Native => TraceFormat::Native,
            TraceFormatArg::Sacct => TraceFormat::Sacct,
            TraceFormatArg::KueueWorkloads => TraceFormat::KueueWorkloads,
            TraceFormatArg::Openb => TraceFormat::Openb,
        }
    }
}

pub use formats::policy::parse_policy;

#[derive(Serialize)]
struct JsonRun<'a> {
    #[serde(flatten)]
    summary: &'a Summary,
    skipped_rows: usize,
    /// Trace jobs left out because they never ran to the end (Slurm, Kueue traces).
    #[serde(skip_serializing_if = "is_zero")]
    not_run: usize,
    /// Waits in the scheduler that ran the trace (Slurm, Kueue traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    observed_wait: Option<sim::WaitStats>,
    queues: Vec<sim::engine::QueueSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<&'a RunMeta>,
}

#[derive(Serialize)]
struct JsonCompare<'a> {
    run: &'a RunMeta,
    runs: Vec<JsonRun<'a>>,
}

/// How a result was made: enough to reproduce it.
#[derive(Debug, Serialize)]
struct RunMeta {
    railyard_version: &'static str,
    command: Vec<String>,
    trace: String,
    cluster: String,
    routing: String,
    qps: u32,
    nccl: Vec<String>,
    seed: u64,
    cycle_s: f64,
    horizon_s: Option<f64>,
    /// Queue-tree problems KAI tolerates (`--queues`), as the text output's `warning:` lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

impl RunMeta {
    fn rows(&self) -> Vec<(String, String)> {
        let mut out = vec![
            ("railyard".to_owned(), self.railyard_version.to_owned()),
            ("trace".to_owned(), self.trace.clone()),
            ("cluster".to_owned(), self.cluster.clone()),
            (
                "routing".to_owned(),
                format!(
                    "{}, {} per connection, seed {}{}",
                    self.routing,
                    report::fmt::count_of(self.qps as usize, "QP"),
                    self.seed,
                    self.nccl
                        .iter()
                        .map(|s| format!(", {s}"))
                        .collect::<String>()
                ),
            ),
            ("cycle".to_owned(), format!("{} s", self.cycle_s)),
        ];
        if let Some(h) = self.horizon_s {
            out.push(("horizon".to_owned(), format!("{h} s")));
        }
        if !self.command.is_empty() {
            out.push((
                "command".to_owned(),
                report::fmt::shell_words(&self.command),
            ));
        }
        out
    }
}

/// `simulate`.
pub fn run(args: &SimulateArgs) -> Result<String, CliError> {
    let cluster = load_cluster(&args.cluster)?;
    let specs: Vec<String> = if args.compare.is_empty() {
        vec![args.policy.clone()]
    } else {
        args.compare.clone()
    };
    let flag = if args.compare.is_empty() {
        "--policy"
    } else {
        "--compare"
    };
    let policies = specs
        .iter()
        .map(|s| parse_policy(s, &cluster, flag))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::Usage(e.to_string()))?;
    // Every policy under every scheduler given, labelled by it.
    let placements = ops::place::scheduler_runs(&args.scheduler, &args.kai_placement)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let runs: Vec<(sim::engine::Policy, sched::PlaceOptions)> = policies
        .iter()
        .flat_map(|p| {
            placements.iter().map(move |&(label, options)| {
                let mut p = p.clone();
                if let Some(l) = label {
                    p.name = format!("{} ({l})", p.name);
                }
                (p, options)
            })
        })
        .collect();
    let several = runs.len() > 1;
    if cluster.gpu_count() == 0 {
        return Err(CliError::input(
            &args.cluster.cluster,
            "the cluster has no GPUs (no node allocates nvidia.com/gpu); there is nothing to simulate",
        ));
    }
    if !(args.cycle_s.is_finite() && (0.0..=86_400.0).contains(&args.cycle_s)) {
        return Err(CliError::Usage(
            "--cycle-s: expected seconds in 0..=86400".to_owned(),
        ));
    }
    if let Some(h) = args.horizon_s {
        if !(h.is_finite() && h > 0.0) {
            return Err(CliError::Usage(
                "--horizon-s: expected a positive number of seconds".to_owned(),
            ));
        }
    }
    let routing = RoutingConfig {
        mode: args.routing.into(),
        nccl: args.nccl.config()?,
        seed: args.seed,
        ..RoutingConfig::default()
    };
    let mut trace = read_trace(&args.trace, args.trace_format.into(), args.skip_bad_rows)?;
    let trace_name = args.trace.display().to_string();
    if args.no_network {
        let silent = sim::CommProfile {
            comm_share: 0.0,
            bytes_per_step: 0.0,
        };
        trace.jobs.iter_mut().for_each(|j| j.comm = Some(silent));
    }
    // The user's queues: every run's rules checked and the trace mapped before anything runs.
    let mut queue_configs = Vec::new();
    let mut warnings = Vec::new();
    if !args.queues.is_empty() {
        let queues = ops::sim_queues::load(&args.queues)?;
        let map = match &args.queue_map {
            Some(p) => Some((p.display().to_string(), ops::sim_queues::read_queue_map(p)?)),
            None => None,
        };
        let map = map.as_ref().map(|(f, m)| (f.as_str(), m));
        ops::sim_queues::map_trace(&mut trace.jobs, &queues, map, &trace_name)?;
        for (_, placement) in &runs {
            let rules = (!args.scheduler.is_empty()).then_some(placement.dialect);
            let (config, w) = queues.config(rules)?;
            queue_configs.push(Some(config));
            warnings.extend(w);
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    warnings.retain(|w| seen.insert(w.clone()));
    queue_configs.resize(runs.len(), None);
    let observed: Vec<f64> = trace.observed_wait_s.iter().flatten().copied().collect();
    let (failures, checkpoints) = ops::sim_failures::setup(
        &cluster,
        &ops::sim_failures::FailureOptions {
            file: args.failures.as_deref(),
            mtbf_hours: args.mtbf_hours,
            repair_hours: args.repair_hours,
            seed: args.seed,
            checkpoint_interval_s: args.checkpoint_interval,
            restart_cost_s: args.restart_cost,
        },
    )?;
    let mut results = Vec::with_capacity(runs.len());
    for ((policy, placement), queues) in runs.into_iter().zip(queue_configs) {
        let config = SimConfig {
            policy,
            cycle: SimTime::from_secs_f64(args.cycle_s),
            horizon: args.horizon_s.map(SimTime::from_secs_f64),
            comm: CommDefaults::default(),
            timeline_points: 400,
            check_invariants: args.check_invariants,
            placement,
            queues,
            failures: failures.clone(),
            checkpoints,
            network_round: (args.network_round_s > 0.0)
                .then(|| SimTime::from_secs_f64(args.network_round_s)),
        };
        let mut incremental;
        let mut from_scratch;
        let network: &mut dyn Network = if args.from_scratch_network {
            from_scratch = fabric_network_from_scratch(&cluster, routing);
            &mut from_scratch
        } else {
            incremental = fabric_network(&cluster, routing);
            &mut incremental
        };
        let mut bar = ProgressBar::new(trace.jobs.len(), &config.policy.name);
        let result = simulate(&cluster, &trace.jobs, &config, network, &mut |n| {
            bar.tick(n)
        })
        .map_err(|e| CliError::input(&trace_name, e))?;
        bar.finish();
        results.push(result);
    }
    let meta = RunMeta {
        railyard_version: env!("CARGO_PKG_VERSION"),
        command: args.command_line.clone(),
        trace: trace_name.clone(),
        cluster: args.cluster.cluster.clone(),
        routing: format!("{:?}", args.routing).to_ascii_lowercase(),
        qps: routing.qps(),
        nccl: args.nccl.nccl.clone(),
        seed: args.seed,
        cycle_s: args.cycle_s,
        horizon_s: args.horizon_s,
        warnings: warnings.clone(),
    };
    if let Some(path) = &args.report {
        let ctx = ReportContext {
            cluster: &cluster.name,
            gpus: cluster.gpu_count(),
            trace: &trace_name,
            skipped_rows: trace.skipped.len(),
            tier_names: cluster
                .tiers
                .iter()
                .map(|t| {
                    t.level.map_or_else(
                        || "(whole cluster)".to_owned(),
                        |l| cluster.levels[l].label.clone(),
                    )
                })
                .collect(),
            network: network_description(&routing),
            meta: meta.rows(),
            observed_waits: &observed,
        };
        std::fs::write(path, render(&ctx, &results)).map_err(|source| CliError::Io {
            path: path.display().to_string(),
            source,
        })?;
    }
    Ok(match args.output {
        OutputFormat::Json | OutputFormat::Yaml => {
            let runs: Vec<JsonRun<'_>> = results
                .iter()
                .map(|r| JsonRun {
                    summary: &r.summary,
                    skipped_rows: trace.skipped.len(),
                    not_run: trace.not_run.len(),
                    observed_wait: (!observed.is_empty()).then(|| sim::WaitStats::of(&observed)),
                    queues: r.per_queue(),
                    run: (!several).then_some(&meta),
                })
                .collect();
            if !several {
                args.output.render(&runs[0], |_| String::new())
            } else {
                args.output
                    .render(&JsonCompare { run: &meta, runs }, |_| String::new())
            }
        }
        OutputFormat::Text | OutputFormat::Wide => {
            report::summary::simulation_text(
                &report::summary::TraceFacts {
                    cluster: &cluster.name,
                    cluster_gpus: cluster.gpu_count(),
                    trace: &trace_name,
                    skipped_rows: trace.skipped.len(),
                    not_run: trace.not_run.len(),
                    observed_waits: &observed,
                },
                &results,
                args.output == OutputFormat::Wide,
            ) + &warnings
                .iter()
                .map(|w| format!("warning: {w}\n"))
                .collect::<String>()
        }
    })
}

/// A progress bar on stderr, shown only for runs longer than a second on a terminal.
struct ProgressBar {
    total: u64,
    label: String,
    started: Instant,
    bar: Option<indicatif::ProgressBar>,
}

impl ProgressBar {
    // The CLI may read the clock (the core crates may not): it only decides when to show
    // progress and never reaches the results.
    #[allow(clippy::disallowed_methods)]
    fn new(total: usize, label: &str) -> Self {
        Self {
            total: total as u64,
            label: label.to_owned(),
            started: Instant::now(),
            bar: None,
        }
    }

    fn tick(&mut self, done: usize) {
        if self.bar.is_none() && self.started.elapsed() > Duration::from_secs(1) {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(self.total),
                indicatif::ProgressDrawTarget::stderr(),
            );
            bar.set_message(self.label.clone());
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            b.set_position(done as u64);
        }
    }

    fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}

fn network_description(routing: &RoutingConfig) -> String {
    format!(
        "Network: every running multi-node job runs a Ring AllReduce; rates are max-min fair over all of them together under {} routing with {} per connection (railyard's fabric model).",
        match routing.mode {
            RoutingMode::Ecmp => "ECMP",
            RoutingMode::Adaptive => "adaptive",
        },
        report::fmt::count_of(routing.qps() as usize, "QP")
    )
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `--cycle-s`: seconds in 0..=86400 (a clap value parser: exit 2).
fn parse_cycle_s(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!("expected seconds in 0..=86400, got `{s}`")),
    }
}

/// `--horizon-s`: a positive number of seconds (a clap value parser: exit 2).
fn parse_horizon_s(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a positive number of seconds, got `{s}`")),
    }
}
