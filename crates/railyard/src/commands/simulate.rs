//! `railyard simulate`: replay a trace on a cluster under one or several policies.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fabric::RoutingConfig;
use ops::simulate::{RunMeta, SimulateOptions, Simulated};

use crate::args::{NcclArgs, RoutingArg};
use crate::cluster_arg::{load_cluster, ClusterArgs};
use crate::error::CliError;
use crate::output::OutputFormat;
use formats::trace::{read_trace, TraceFormat};

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
    /// TOPOLOGY = none | preferred:LEVEL | required:LEVEL (LEVEL: a level label, or tierN for the
    /// level of switch tier N); `+network` picks, among the placements TOPOLOGY allows, the one
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
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS", value_parser = ops::simulate::parse_cycle_s)]
    pub cycle_s: f64,
    /// Stop the simulation here (seconds after the first arrival).
    #[arg(long, value_name = "SECONDS", value_parser = ops::simulate::parse_horizon_s)]
    pub horizon_s: Option<f64>,
    /// Re-solve link sharing at most every this many simulated seconds (network rounds, see
    /// README): faster, approximate; 0 = on every change, exact
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS", value_parser = ops::simulate::parse_cycle_s)]
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

impl SimulateArgs {
    /// The flags `ops::simulate` turns into runs.
    fn options(&self) -> SimulateOptions {
        SimulateOptions {
            compare: !self.compare.is_empty(),
            policies: if self.compare.is_empty() {
                vec![self.policy.clone()]
            } else {
                self.compare.clone()
            },
            schedulers: self.scheduler.clone(),
            kai_placement: self.kai_placement.clone(),
            cycle_s: self.cycle_s,
            horizon_s: self.horizon_s,
            network_round_s: self.network_round_s,
            check_invariants: self.check_invariants,
            no_network: self.no_network,
            queues: self.queues.clone(),
            queue_map: self.queue_map.clone(),
            failures: self.failures.clone(),
            mtbf_hours: self.mtbf_hours,
            repair_hours: self.repair_hours,
            seed: self.seed,
            checkpoint_interval_s: self.checkpoint_interval,
            restart_cost_s: self.restart_cost,
        }
    }
}

/// `simulate`, at most `threads` runs at once (`-j`; none: every core).
pub fn run(args: &SimulateArgs, threads: Option<u16>) -> Result<String, CliError> {
    let cluster = load_cluster(&args.cluster)?;
    let options = args.options();
    let runs = ops::simulate::runs(&cluster, &args.cluster.cluster, &options)?;
    let routing = RoutingConfig {
        mode: args.routing.into(),
        nccl: args.nccl.config()?,
        seed: args.seed,
        ..RoutingConfig::default()
    };
    let mut trace = read_trace(&args.trace, args.trace_format.into(), args.skip_bad_rows)?;
    let trace_name = args.trace.display().to_string();
    let (configs, warnings) =
        ops::simulate::configs(&cluster, &mut trace.jobs, &trace_name, runs, &options)?;
    let bars = indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::stderr());
    let results = ops::simulate::run_all(
        &cluster,
        &trace.jobs,
        &configs,
        routing,
        args.from_scratch_network,
        &trace_name,
        ops::parallel::threads_or_all_cores(threads),
        &|label, total| {
            let mut bar = ProgressBar::new(total, label, bars.clone());
            Box::new(move |n| bar.tick(n))
        },
    )?;
    let bound = args.report.is_some() || !args.output.is_structured();
    let done = Simulated {
        cluster: &cluster,
        trace_name: &trace_name,
        trace: &trace,
        routing,
        results,
        meta: RunMeta {
            command: args.command_line.clone(),
            trace: trace_name.clone(),
            cluster: args.cluster.cluster.clone(),
            routing: format!("{:?}", args.routing).to_ascii_lowercase(),
            nccl: args.nccl.nccl.clone(),
            warnings,
            ..RunMeta::of(&options, &routing)
        },
        bound: None,
    }
    .with_bound(bound, &trace.jobs, &configs, args.from_scratch_network)?;
    let why = done.not_run_lines();
    why.iter().for_each(|l| tracing::debug!("{l}"));
    if let Some(path) = &args.report {
        std::fs::write(path, done.html()).map_err(|source| CliError::Io {
            path: path.display().to_string(),
            source,
        })?;
    }
    Ok(match args.output {
        OutputFormat::Text | OutputFormat::Wide => done.text(args.output == OutputFormat::Wide),
        format => format.render(&done.json(), |_| String::new()),
    })
}

/// A progress bar on stderr (one per run, labelled), shown only for runs longer than a second on a terminal.
struct ProgressBar {
    total: u64,
    label: String,
    started: Instant,
    bars: indicatif::MultiProgress,
    bar: Option<indicatif::ProgressBar>,
}

impl ProgressBar {
    // The CLI may read the clock (the core crates may not): it only decides when to show
    // progress and never reaches the results.
    #[allow(clippy::disallowed_methods)]
    fn new(total: usize, label: &str, bars: indicatif::MultiProgress) -> Self {
        Self {
            total: total as u64,
            label: label.to_owned(),
            started: Instant::now(),
            bars,
            bar: None,
        }
    }

    fn tick(&mut self, done: usize) {
        if self.bar.is_none() && self.started.elapsed() > Duration::from_secs(1) {
            let bar = self.bars.add(indicatif::ProgressBar::new(self.total));
            let style = "{msg:28!} {wide_bar} {pos}/{len} jobs";
            bar.set_style(indicatif::ProgressStyle::with_template(style).expect("valid"));
            bar.set_message(self.label.clone());
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            b.set_position(done as u64);
        }
    }
}

impl Drop for ProgressBar {
    fn drop(&mut self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
