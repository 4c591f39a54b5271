//! railyard's operator tools as library functions returning data: `doctor` (read a node's
//! `/sys`, `/proc`, `/etc` into facts, then judge them), `lint` (manifest checks), `launch` (a
//! placement into torchrun/NCCL launch plans and their renderers), `cables` (a cable plan),
//! `cluster` (the cluster a `--cluster` name and its import options ask for), `nccl_settings`
//! (`--nccl` and `--qps` as one NCCL configuration), `place` (a placement decided from job,
//! state and queue files), `queues` (queue files checked as a whole) and `simulate`
//! (`simulate`'s flags as the simulator's runs, and their outputs), `parallel` (runs on a pool
//! the caller sizes) and `sweep` (grids of simulations, locally or as a Slurm array). No argument parsing, no
//! printing: the CLI renders what these return.

pub mod cables;
pub mod cables_report;
pub mod cluster;
pub mod collective_report;
pub mod doctor;
pub mod doctor_report;
pub mod kueue_admit;
pub mod launch;
pub mod launch_layout;
pub mod lint;
pub mod nccl_settings;
pub mod nccl_shapes;
pub mod parallel;
pub mod place;
pub mod place_layout;
pub mod queues;
pub mod ranks;
pub mod sim_failures;
pub mod sim_queues;
pub mod simulate;
pub mod sweep;
pub mod sweep_merge;
pub mod sweep_run;
pub mod synth;

use serde::Serialize;

/// How serious a finding is, in every command's JSON (doctor, lint) and doctor's Prometheus
/// labels: one vocabulary, `skipped` (doctor only), `info`, `warning`, `error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The check did not run: what it looks at is not there (no GPU on a CPU node); the finding
    /// says why. Never "passed".
    Skipped,
    /// As it should be, or a suggestion.
    Info,
    /// Works, but slower than it should, or likely fragile.
    Warning,
    /// Broken: will fail or not work as intended.
    Error,
}

impl Severity {
    /// The severity as one word: info, warning, error.
    pub fn word(self) -> &'static str {
        match self {
            Severity::Skipped => "skipped",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}
