//! `simulate`'s failure and checkpoint options as the simulator's configuration: the failure
//! file read for the cluster, an MTBF in hours, checkpoint defaults; every bad value refused with
//! the option it came from.

use std::path::Path;

use formats::FormatError;
use sim::failures::{Checkpointing, FailureConfig, Mtbf};
use topology::Cluster;

/// What the options ask for, as given on the command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FailureOptions<'a> {
    /// `--failures FILE`.
    pub file: Option<&'a Path>,
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

/// The failures and checkpoint defaults of a run on `cluster`.
pub fn setup(
    cluster: &Cluster,
    o: &FailureOptions<'_>,
) -> Result<(FailureConfig, Checkpointing), FormatError> {
    let check = |flag: &str, x: f64, positive: bool| {
        if x.is_finite() && (x > 0.0 || (!positive && x == 0.0)) {
            Ok(x)
        } else {
            let what = if positive { "positive" } else { "non-negative" };
            Err(FormatError::input(
                flag,
                format!("expected a {what} number, got {x}"),
            ))
        }
    };
    let checkpoints = Checkpointing {
        interval_s: check("--checkpoint-interval", o.checkpoint_interval_s, false)?,
        restart_s: check("--restart-cost", o.restart_cost_s, false)?,
    };
    let repair_hours = check("--repair-hours", o.repair_hours, false)?;
    let mtbf = match o.mtbf_hours {
        Some(h) => Some(Mtbf {
            mtbf_s: check("--mtbf-hours", h, true)? * 3600.0,
            repair_s: repair_hours * 3600.0,
            seed: o.seed,
        }),
        None => None,
    };
    let listed = match o.file {
        Some(p) => formats::failures::read_failures(p, cluster)?,
        None => Vec::new(),
    };
    Ok((FailureConfig { listed, mtbf }, checkpoints))
}
