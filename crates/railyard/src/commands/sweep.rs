//! `railyard sweep`: a grid of simulations run here, written as a Slurm array, or merged from a
//! directory of cell outputs; `ops::sweep_run::dispatch` does each.

/// Arguments of `sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// The grid file (YAML: clusters, traces, policies, schedulers, nccl, seeds; see the manual),
    /// or `merge DIR`: merge DIR's cell outputs into the table and report a local run writes.
    #[arg(num_args = 1..=2, required = true, value_name = "FILE | merge DIR")]
    pub file: Vec<std::path::PathBuf>,
    /// The output directory (cells/, sweep.json, table.txt, report.html, merged.json).
    #[arg(long, visible_alias = "out", default_value = "sweep-out")]
    pub out_dir: std::path::PathBuf,
    /// Run cell K alone (what each Slurm array task runs), without merging.
    #[arg(long, value_name = "K", conflicts_with = "slurm")]
    pub cell: Option<usize>,
    /// Write DIR/sweep.sbatch, an sbatch array of one task per cell, instead of running.
    #[arg(long)]
    pub slurm: bool,
    #[arg(long, requires = "slurm", help = "Submit that script with sbatch")]
    pub submit: bool,
}

/// `sweep`, on at most `threads` cells at once; cells without a result fail after the table.
pub fn sweep(a: &SweepArgs, threads: usize) -> Result<String, crate::error::CliError> {
    match ops::sweep_run::dispatch(&a.file, &a.out_dir, a.cell, a.slurm, a.submit, threads)? {
        (report, Some(summary)) => Err(crate::error::CliError::CheckFailed { report, summary }),
        (text, None) => Ok(text),
    }
}
