//! `trace synth`: write a seeded synthetic trace (`sim::synth`) as railyard's native CSV.

use std::path::PathBuf;

use sim::synth::{synth_trace, to_csv, SynthSpec};

use crate::cluster_arg::load_named;
use crate::error::CliError;

/// Arguments of `trace synth`.
#[derive(Debug, clap::Args)]
pub struct SynthArgs {
    /// Workload profile (`llm`: Acme Seren, Hu et al. NSDI '24).
    #[arg(long)]
    pub profile: String,
    /// Number of jobs.
    #[arg(long)]
    pub jobs: usize,
    /// Seed; the same arguments give the same file.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The cluster the load is offered to (`preset:NAME` or a spec file).
    #[arg(long, value_name = "preset:NAME|FILE")]
    pub cluster: Option<String>,
    /// Offered load, held exactly: the arriving jobs' GPU-time ÷ (cluster GPUs × arrival window,
    /// first to last arrival); default 0.8 (needs --cluster).
    #[arg(long)]
    pub load: Option<f64>,
    /// Begin with the jobs already running at 0 (the arrivals' steady occupancy; not counted
    /// in --jobs or --load).
    #[arg(long)]
    pub warm_start: bool,
    /// Arrival rate, jobs per hour, instead of --cluster/--load.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Write the CSV here (default: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Generate the trace; returns the CSV, or nothing when written to `--out`.
pub fn synth(args: &SynthArgs) -> Result<String, CliError> {
    let cluster = args.cluster.as_deref().map(load_named).transpose()?;
    let (profile, arrivals, gpus_per_node) = ops::synth::check_options(
        &args.profile,
        args.jobs,
        cluster.as_ref(),
        args.load,
        args.rate,
    )
    .map_err(CliError::Usage)?;
    let csv = to_csv(&synth_trace(&SynthSpec {
        profile,
        jobs: args.jobs,
        seed: args.seed,
        arrivals,
        gpus_per_node,
        warm_start: args.warm_start,
    }));
    match &args.out {
        Some(path) => {
            std::fs::write(path, csv).map_err(|source| CliError::Io {
                path: path.display().to_string(),
                source,
            })?;
            Ok(String::new())
        }
        None => Ok(csv),
    }
}
