//! `simulate`'s flags as the simulator's runs: every policy crossed with every scheduler, each
//! with its `SimConfig` (cycle, horizon, invariant checks, the user's queues, node failures,
//! checkpoints), every bad value refused as the CLI reports it (a bad flag value apart from a
//! bad file); one run on the fabric model; and what a finished simulation renders: its JSON,
//! its text tables, its HTML report and the record of how it was made ([`RunMeta`]). No
//! argument parsing, no printing: the CLI turns its flags into [`SimulateOptions`].

use std::path::PathBuf;

use fabric::{RoutingConfig, RoutingMode};
use formats::trace_model::Trace;
use formats::FormatError;
use sched::PlaceOptions;
use serde::Serialize;
use sim::engine::{simulate, Network, Policy, QueueSummary, SimConfig, SimResult, Summary};
use sim::lazy_network::Lazy;
use sim::network::{fabric_network, fabric_network_from_scratch};
use sim::{SimTime, TraceJob};
use topology::Cluster;

use crate::sim_failures::FailureOptions;

/// Why `simulate`'s flags make no runs.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// A bad flag value (`--policy`, `--scheduler`, `--cycle-s`, …), one line naming the flag;
    /// the CLI's usage error (exit 2).
    #[error("{0}")]
    Flag(String),
    /// A file the runs cannot use (the cluster, the trace, queue or failure files) or an
    /// option checked against one, one line naming it.
    #[error(transparent)]
    Input(#[from] FormatError),
}

/// What `simulate` asks for besides the cluster, the trace and the network, as given on the
/// command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimulateOptions {
    /// `--policy`, or the `--compare` values when given.
    pub policies: Vec<String>,
    /// The policies came from `--compare` (errors name that flag).
    pub compare: bool,
    /// `--scheduler` values (none: one run with Kueue's rules).
    pub schedulers: Vec<String>,
    /// `--kai-placement`.
    pub kai_placement: String,
    /// `--cycle-s`.
    pub cycle_s: f64,
    /// `--horizon-s`.
    pub horizon_s: Option<f64>,
    /// `--network-round-s` (0: link sharing re-solved on every change).
    pub network_round_s: f64,
    /// `--check-invariants`.
    pub check_invariants: bool,
    /// `--no-network`: every job's communicating share set to 0.
    pub no_network: bool,
    /// `--queues` files.
    pub queues: Vec<PathBuf>,
    /// `--queue-map`.
    pub queue_map: Option<PathBuf>,
    /// `--failures`.
    pub failures: Option<PathBuf>,
    /// `--mtbf-hours`.
    pub mtbf_hours: Option<f64>,
    /// `--repair-hours`.
    pub repair_hours: f64,
    /// `--seed`.
    pub seed: u64,
    /// `--checkpoint-interval` (seconds).
    pub checkpoint_interval_s: f64,
    /// `--restart-cost` (seconds).
    pub restart_cost_s: f64,
}

/// One run: a policy (named `POLICY (SCHEDULER)` when several schedulers are given) and the
/// placement rules it runs under.
pub type Run = (Policy, PlaceOptions);

/// The runs the flags ask for on `cluster` (read from `cluster_file`), before the trace is read:
/// each policy under each scheduler, in that order. Checks, in this order, the policies, the
/// schedulers, that the cluster has GPUs, the cycle and the horizon.
pub fn runs(
    cluster: &Cluster,
    cluster_file: &str,
    o: &SimulateOptions,
) -> Result<Vec<Run>, SimulateError> {
    let flag = if o.compare { "--compare" } else { "--policy" };
    let usage = |e: FormatError| SimulateError::Flag(e.to_string());
    let policies = o
        .policies
        .iter()
        .map(|s| formats::policy::parse_policy(s, cluster, flag))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    // The same mode twice would be two identical rows (and two series drawn on one another).
    for (i, p) in policies.iter().enumerate() {
        if let Some(j) = policies[..i].iter().position(|q| q.name == p.name) {
            return Err(SimulateError::Flag(format!(
                "{flag}: `{}` and `{}` are the same mode, `{}`; give each mode once",
                formats::excerpt(&o.policies[j]),
                formats::excerpt(&o.policies[i]),
                p.name
            )));
        }
    }
    let placements =
        crate::place::scheduler_runs(&o.schedulers, &o.kai_placement).map_err(usage)?;
    let runs = policies
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
    if cluster.gpu_count() == 0 {
        return Err(FormatError::input(
            cluster_file,
            "the cluster has no GPUs (no node allocates nvidia.com/gpu); there is nothing to simulate",
        )
        .into());
    }
    if !(o.cycle_s.is_finite() && (0.0..=86_400.0).contains(&o.cycle_s)) {
        return Err(SimulateError::Flag(
            "--cycle-s: expected seconds in 0..=86400".to_owned(),
        ));
    }
    if !(o.network_round_s.is_finite() && (0.0..=86_400.0).contains(&o.network_round_s)) {
        return Err(SimulateError::Flag(
            "--network-round-s: expected seconds in 0..=86400".to_owned(),
        ));
    }
    if o.horizon_s.is_some_and(|h| !(h.is_finite() && h > 0.0)) {
        return Err(SimulateError::Flag(
            "--horizon-s: expected a positive number of seconds".to_owned(),
        ));
    }
    Ok(runs)
}

/// `--cycle-s`: seconds in 0..=86400 (the CLI's value parser: a usage error).
pub fn parse_cycle_s(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!("expected seconds in 0..=86400, got `{s}`")),
    }
}

/// `--horizon-s`: a positive number of seconds (the CLI's value parser: a usage error).
pub fn parse_horizon_s(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a positive number of seconds, got `{s}`")),
    }
}

/// Each run's configuration for the trace `jobs` (read from `trace_name`), with the queue-tree
/// problems KAI tolerates as warnings (each once): `--no-network` applied to the jobs, the user's
/// queues read and the trace's queues mapped onto them, the failures and checkpoint defaults.
pub fn configs(
    cluster: &Cluster,
    jobs: &mut [TraceJob],
    trace_name: &str,
    runs: Vec<Run>,
    o: &SimulateOptions,
) -> Result<(Vec<SimConfig>, Vec<String>), SimulateError> {
    if o.no_network {
        network_off(jobs);
    }
    // The user's queues: every run's rules checked and the trace mapped before anything runs.
    let mut queue_configs = Vec::new();
    let mut warnings = Vec::new();
    if !o.queues.is_empty() {
        let queues = crate::sim_queues::load(&o.queues)?;
        let map = match &o.queue_map {
            Some(p) => Some((
                p.display().to_string(),
                crate::sim_queues::read_queue_map(p)?,
            )),
            None => None,
        };
        let map = map.as_ref().map(|(f, m)| (f.as_str(), m));
        crate::sim_queues::map_trace(jobs, &queues, map, trace_name)?;
        for (_, placement) in &runs {
            let rules = (!o.schedulers.is_empty()).then_some(placement.dialect);
            let (config, w) = queues.config(rules)?;
            queue_configs.push(Some(config));
            warnings.extend(w);
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    warnings.retain(|w| seen.insert(w.clone()));
    queue_configs.resize(runs.len(), None);
    let (failures, checkpoints) = crate::sim_failures::setup(
        cluster,
        &FailureOptions {
            file: o.failures.as_deref(),
            mtbf_hours: o.mtbf_hours,
            repair_hours: o.repair_hours,
            seed: o.seed,
            checkpoint_interval_s: o.checkpoint_interval_s,
            restart_cost_s: o.restart_cost_s,
        },
    )?;
    let configs = runs
        .into_iter()
        .zip(queue_configs)
        .map(|((policy, placement), queues)| SimConfig {
            policy,
            cycle: SimTime::from_secs_f64(o.cycle_s),
            horizon: o.horizon_s.map(SimTime::from_secs_f64),
            timeline_points: 400,
            check_invariants: o.check_invariants,
            placement,
            queues,
            failures: failures.clone(),
            checkpoints,
            network_round: (o.network_round_s > 0.0)
                .then(|| SimTime::from_secs_f64(o.network_round_s)),
            ..SimConfig::default()
        })
        .collect();
    Ok((configs, warnings))
}

/// `--no-network` on `jobs`: every job's communicating share set to 0.
pub fn network_off(jobs: &mut [TraceJob]) {
    let silent = sim::CommProfile {
        comm_share: 0.0,
        bytes_per_step: 0.0,
    };
    jobs.iter_mut().for_each(|j| j.comm = Some(silent));
}

/// A progress counter for one run: told how many of its jobs are done; dropped when it ends.
pub type Progress<'p> = Box<dyn FnMut(usize) + Send + 'p>;

/// Every run of `jobs` on the fabric model of `cluster` (solved incrementally and made at its
/// first use, [`Lazy`], or from scratch on every change when `from_scratch`), at most `threads`
/// at once ([`crate::parallel`]: so at most that many networks and states held), the results in
/// the order of `configs` whatever finishes first; `progress` makes each run's counter from its policy's name and the number
/// of jobs. An error names `trace_name` (the first failing run's, in the order of `configs`).
#[allow(clippy::too_many_arguments)]
pub fn run_all<'p>(
    cluster: &Cluster,
    jobs: &[TraceJob],
    configs: &[SimConfig],
    routing: RoutingConfig,
    from_scratch: bool,
    trace_name: &str,
    threads: usize,
    progress: &(dyn Fn(&str, usize) -> Progress<'p> + Sync),
) -> Result<Vec<SimResult>, FormatError> {
    crate::parallel::map_in_order(threads, configs, |_, config| {
        let mut incremental;
        let mut scratch;
        let network: &mut dyn Network = if from_scratch {
            scratch = fabric_network_from_scratch(cluster, routing);
            &mut scratch
        } else {
            // Network rounds approximate anyway: the ideal paces may be summed per leaf pair.
            // Made at its first use: a run whose jobs never touch the network never builds it.
            let grouped = config.network_round.is_some_and(|r| r.0 > 0);
            incremental =
                Lazy::new(move || fabric_network(cluster, routing).with_grouped_ideal(grouped));
            &mut incremental
        };
        let mut tick = progress(&config.policy.name, jobs.len());
        simulate(cluster, jobs, config, network, &mut tick)
            .map_err(|e| FormatError::input(trace_name, e))
    })
    .into_iter()
    .collect()
}

/// How a result was made: enough to reproduce it.
#[derive(Debug, Serialize)]
pub struct RunMeta {
    /// railyard's version.
    pub railyard_version: &'static str,
    /// The command line as typed (empty when called as a library).
    pub command: Vec<String>,
    /// The trace file as given.
    pub trace: String,
    /// `--cluster` as given.
    pub cluster: String,
    /// The routing mode's name.
    pub routing: String,
    /// QPs per connection.
    pub qps: u32,
    /// `--nccl` settings as given.
    pub nccl: Vec<String>,
    /// `--seed`.
    pub seed: u64,
    /// `--cycle-s`.
    pub cycle_s: f64,
    /// `--horizon-s`.
    pub horizon_s: Option<f64>,
    /// `--network-round-s` (absent: 0, link sharing re-solved on every change).
    #[serde(skip_serializing_if = "is_zero_s")]
    pub network_round_s: f64,
    /// `--no-network`: every job's communicating share was 0 (absent: the network was on).
    #[serde(skip_serializing_if = "is_false")]
    pub no_network: bool,
    /// Queue-tree problems KAI tolerates (`--queues`), as the text output's `warning:` lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl RunMeta {
    /// What the options and the routing say of a run (this railyard's version), the rest
    /// empty for the caller to fill in.
    pub fn of(o: &SimulateOptions, routing: &RoutingConfig) -> Self {
        Self {
            railyard_version: env!("CARGO_PKG_VERSION"),
            command: Vec::new(),
            trace: String::new(),
            cluster: String::new(),
            routing: String::new(),
            qps: routing.qps(),
            nccl: Vec::new(),
            seed: o.seed,
            cycle_s: o.cycle_s,
            horizon_s: o.horizon_s,
            network_round_s: o.network_round_s,
            no_network: o.no_network,
            warnings: Vec::new(),
        }
    }

    /// The report's foot: (what, value).
    pub fn rows(&self) -> Vec<(String, String)> {
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
        if self.network_round_s > 0.0 {
            out.push((
                "network round".to_owned(),
                format!("{} s", self.network_round_s),
            ));
        }
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

/// One run in the JSON output.
#[derive(Debug, Serialize)]
pub struct JsonRun<'a> {
    #[serde(flatten)]
    summary: &'a Summary,
    skipped_rows: usize,
    /// Trace jobs left out because they never ran to the end (Slurm, Kueue traces).
    #[serde(skip_serializing_if = "is_zero")]
    not_run: usize,
    /// Waits in the scheduler that ran the trace (Slurm, Kueue traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    observed_wait: Option<sim::WaitStats>,
    queues: Vec<QueueSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<&'a RunMeta>,
}

/// Several runs side by side in the JSON output.
#[derive(Debug, Serialize)]
pub struct JsonCompare<'a> {
    run: &'a RunMeta,
    runs: Vec<JsonRun<'a>>,
}

/// The JSON output of a simulation: serialised as the run, or as the runs side by side.
#[derive(Debug)]
pub enum SimulateJson<'a> {
    /// One run, with how it was made.
    One(JsonRun<'a>),
    /// Several runs side by side.
    Several(JsonCompare<'a>),
}

impl Serialize for SimulateJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SimulateJson::One(run) => run.serialize(serializer),
            SimulateJson::Several(runs) => runs.serialize(serializer),
        }
    }
}

/// A finished simulation and what it ran on: what the outputs render.
#[derive(Debug)]
pub struct Simulated<'a> {
    /// The cluster.
    pub cluster: &'a Cluster,
    /// The trace file as given.
    pub trace_name: &'a str,
    /// The trace as read.
    pub trace: &'a Trace,
    /// The routing every run used.
    pub routing: RoutingConfig,
    /// One result per run.
    pub results: Vec<SimResult>,
    /// How it was made.
    pub meta: RunMeta,
    /// The headline's bound: the best multi-node mode rerun with the network off (none when
    /// every run already had it off; see [`Simulated::with_bound`]).
    pub bound: Option<SimResult>,
}

impl Simulated<'_> {
    /// With the headline's bound when `wanted`: unless every run had the network off, the best mode
    /// for multi-node jobs (`report::headline`) run once more on `jobs` with the network off
    /// (one extra run, the same configuration otherwise).
    pub fn with_bound(
        mut self,
        wanted: bool,
        jobs: &[TraceJob],
        configs: &[SimConfig],
        from_scratch: bool,
    ) -> Result<Self, FormatError> {
        let best = report::headline::best_multi_node(&self.results);
        let completed = self.results.iter().any(|r| r.summary.completed > 0);
        let (Some(&best), true, false) = (best.first(), wanted && completed, self.meta.no_network)
        else {
            return Ok(self);
        };
        let mut silent = jobs.to_vec();
        network_off(&mut silent);
        let mut config = configs[best].clone();
        config.policy.name = format!("{} (network off)", config.policy.name);
        let quiet = |_: &str, _: usize| -> Progress<'_> { Box::new(|_| {}) };
        let bound = run_all(
            self.cluster,
            &silent,
            std::slice::from_ref(&config),
            self.routing,
            from_scratch,
            self.trace_name,
            1,
            &quiet,
        )?;
        self.bound = bound.into_iter().next();
        Ok(self)
    }

    /// One line per job that did not complete, with its reason (`-v`): `POLICY: job NAME
    /// failed: REASON`.
    pub fn not_run_lines(&self) -> Vec<String> {
        self.results
            .iter()
            .flat_map(|r| {
                r.jobs.iter().filter_map(move |j| {
                    let reason = j.reason.as_ref()?;
                    let outcome = match j.outcome {
                        sim::engine::Outcome::Failed => "failed",
                        _ => "did not finish",
                    };
                    Some(format!(
                        "{}: job {} {outcome}: {reason}",
                        r.summary.policy, j.name
                    ))
                })
            })
            .collect()
    }

    /// The waits in the scheduler that ran the trace (empty unless it says).
    fn observed(&self) -> Vec<f64> {
        self.trace
            .observed_wait_s
            .iter()
            .flatten()
            .copied()
            .collect()
    }

    /// The JSON (or YAML) output: one run with its [`RunMeta`], or several side by side.
    pub fn json(&self) -> SimulateJson<'_> {
        let observed = self.observed();
        let several = self.results.len() > 1;
        let mut runs: Vec<JsonRun<'_>> = self
            .results
            .iter()
            .map(|r| JsonRun {
                summary: &r.summary,
                skipped_rows: self.trace.skipped.len(),
                not_run: self.trace.not_run.len(),
                observed_wait: (!observed.is_empty()).then(|| sim::WaitStats::of(&observed)),
                queues: r.per_queue(),
                run: (!several).then_some(&self.meta),
            })
            .collect();
        if several {
            SimulateJson::Several(JsonCompare {
                run: &self.meta,
                runs,
            })
        } else {
            SimulateJson::One(runs.remove(0))
        }
    }

    /// The text output: the tables (`wide`: more columns), then the `warning:` lines.
    pub fn text(&self, wide: bool) -> String {
        report::summary::simulation_text(
            &report::summary::TraceFacts {
                cluster: &self.cluster.name,
                cluster_gpus: self.cluster.gpu_count(),
                trace: self.trace_name,
                skipped_rows: self.trace.skipped.len(),
                not_run: self.trace.not_run.len(),
                observed_waits: &self.observed(),
                bound: self.bound.as_ref(),
                no_network: self.meta.no_network,
            },
            &self.results,
            wide,
        ) + &self
            .meta
            .warnings
            .iter()
            .map(|w| format!("warning: {w}\n"))
            .collect::<String>()
    }

    /// The HTML report.
    pub fn html(&self) -> String {
        let c = self.cluster;
        let ctx = report::html::ReportContext {
            cluster: &c.name,
            gpus: c.gpu_count(),
            trace: self.trace_name,
            skipped_rows: self.trace.skipped.len(),
            tier_names: c
                .tiers
                .iter()
                .map(|t| {
                    t.level.map_or_else(
                        || "(whole cluster)".to_owned(),
                        |l| c.levels[l].label.clone(),
                    )
                })
                .collect(),
            network: network_description(&self.routing),
            meta: self.meta.rows(),
            observed_waits: &self.observed(),
            bound: self.bound.as_ref(),
            no_network: self.meta.no_network,
        };
        report::html::render(&ctx, &self.results)
    }
}

/// The report's sentence on how the network was modelled.
fn network_description(routing: &RoutingConfig) -> String {
    format!(
        "Network: every running multi-node job runs a Ring AllReduce, or, with a model and layout, its communicators' collectives; rates are max-min fair over all of them together under {} routing with {} per connection (railyard's fabric model).",
        match routing.mode {
            RoutingMode::Ecmp => "ECMP",
            RoutingMode::Adaptive => "adaptive",
        },
        report::fmt::count_of(routing.qps() as usize, "QP")
    )
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Whether a number of seconds is 0 (serde: leave out a setting at its default).
fn is_zero_s(x: &f64) -> bool {
    *x == 0.0
}
