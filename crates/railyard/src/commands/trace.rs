//! `trace synth`: write a seeded synthetic trace (`sim::synth`) as railyard's native CSV.

use std::path::PathBuf;

use sim::synth::{profile, synth_trace, to_csv, Arrivals, SynthSpec, PROFILES};

use crate::cluster_arg::{load_cluster, ClusterArgs};
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
    /// Offered load, a share of the cluster's GPUs (needs --cluster).
    #[arg(long)]
    pub load: Option<f64>,
    /// Arrival rate, jobs per hour, instead of --cluster/--load.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Write the CSV here (default: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Generate the trace; returns the CSV, or nothing when written to `--out`.
pub fn synth(args: &SynthArgs) -> Result<String, CliError> {
    let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
    let Some(profile) = profile(&args.profile) else {
        return Err(CliError::Usage(format!(
            "--profile: unknown profile \"{}\", expected one of {}",
            args.profile,
            names.join(", ")
        )));
    };
    if args.jobs == 0 {
        return Err(CliError::Usage("--jobs: expected at least 1 job".into()));
    }
    if args.load.is_some() && args.cluster.is_none() {
        return Err(CliError::Usage(
            "--load: needs --cluster (the GPUs the load is a share of)".into(),
        ));
    }
    let arrivals = match (&args.cluster, args.rate) {
        (Some(cluster), None) => {
            let load = args.load.unwrap_or(0.8);
            if !(load > 0.0 && load.is_finite()) {
                return Err(CliError::Usage(format!(
                    "--load: expected a positive share, got {load}"
                )));
            }
            let cluster = load_cluster(&ClusterArgs {
                cluster: cluster.clone(),
                ..ClusterArgs::default()
            })?;
            Arrivals::Load {
                cluster_gpus: cluster.gpu_count(),
                load,
            }
        }
        (None, Some(rate)) if rate > 0.0 && rate.is_finite() => Arrivals::PerHour(rate),
        (None, Some(rate)) => {
            return Err(CliError::Usage(format!(
                "--rate: expected a positive number of jobs per hour, got {rate}"
            )))
        }
        _ => {
            return Err(CliError::Usage(
                "trace synth: give either --cluster (with --load, default 0.8) or --rate".into(),
            ))
        }
    };
    let csv = to_csv(&synth_trace(&SynthSpec {
        profile,
        jobs: args.jobs,
        seed: args.seed,
        arrivals,
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
