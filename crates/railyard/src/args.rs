//! Arguments more than one command takes: `--routing`, the NCCL settings (`--nccl`, `--qps`),
//! a job's training layout (`--model`, `--layout`), and the command line as typed, which `simulate` and `fabric collective` record in their
//! results. The dispatcher (`cli`) and the commands use this module; it uses neither.

use fabric::{NcclConfig, RoutingMode};

use crate::error::CliError;

/// `--routing`: how switches spread flows over equal-cost paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RoutingArg {
    /// Per-flow ECMP: every switch hashes the RoCEv2 5-tuple.
    Ecmp,
    /// Adaptive routing: every switch sprays a flow evenly over all shortest next hops.
    Adaptive,
}

impl From<RoutingArg> for RoutingMode {
    fn from(r: RoutingArg) -> Self {
        match r {
            RoutingArg::Ecmp => RoutingMode::Ecmp,
            RoutingArg::Adaptive => RoutingMode::Adaptive,
        }
    }
}

/// A job's training layout, shared by `place` and `launch` (both flags or neither).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct TrainingArgs {
    /// The model the job trains: a preset, as `fabric step --model` takes it (with --layout).
    #[arg(long, value_name = "NAME", requires = "layout")]
    pub model: Option<String>,
    /// Its layout, as `fabric step --layout` takes it. `place` derives the job's slice layers
    /// from it (with --network-aware, placements and rank orders are scored by the step time);
    /// `launch` checks it against the placement (its GPUs, TP groups inside one node, a rank
    /// order Megatron-LM can be told) and writes Megatron-LM's parallelism flags.
    #[arg(long, value_name = "SPEC", requires = "model")]
    pub layout: Option<String>,
}

impl TrainingArgs {
    /// The training the flags name, if given; an error names the field.
    pub fn training(&self) -> Result<Option<layout::Training>, CliError> {
        let (Some(m), Some(l)) = (&self.model, &self.layout) else {
            return Ok(None);
        };
        layout::Training::from_flags(m, l)
            .map(Some)
            .map_err(|e| CliError::input(&e.field, &e.message))
    }
}

/// NCCL settings, shared by `fabric collective`, `fabric compare` and `simulate`.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct NcclArgs {
    /// An NCCL setting NAME=VALUE (repeatable): NCCL_IB_QPS_PER_CONNECTION,
    /// NCCL_IB_SPLIT_DATA_ON_QPS, NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS, NCCL_ALGO, NCCL_PROTO,
    /// NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE. Unset: NCCL's defaults (1 QP per connection,
    /// NCCL's own channel count, NVLS where the hardware has it, CollNet off).
    #[arg(long = "nccl", value_name = "NAME=VALUE")]
    pub nccl: Vec<String>,
    /// Shorthand for --nccl NCCL_IB_QPS_PER_CONNECTION=N (both given must agree).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=128))]
    pub qps: Option<u32>,
}

impl NcclArgs {
    /// The configuration: every bad setting in one line naming `--nccl` (exit 2).
    pub fn config(&self) -> Result<NcclConfig, CliError> {
        ops::nccl_settings::config(&self.nccl, self.qps).map_err(CliError::Usage)
    }
}

/// The command line as typed (set by `main`), recorded in simulate and collective results.
static COMMAND_LINE: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Record the process's command line (`main` calls it once).
pub fn set_command_line(words: impl Iterator<Item = String>) {
    let words = std::iter::once("railyard".to_owned()).chain(words.skip(1));
    let _ = COMMAND_LINE.set(words.collect());
}

/// The command line [`set_command_line`] recorded, or nothing.
pub fn command_line() -> Vec<String> {
    COMMAND_LINE.get().cloned().unwrap_or_default()
}
