//! `railyard sweep`: `ops::sweep_run::dispatch`'s grids; `submit` runs sbatch (`ops` runs no program).

/// Run a grid of simulations (clusters × traces × policies × …) here or as a Slurm array.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// The grid file (YAML; see the manual), or `merge DIR`: DIR's cell outputs merged as a local run.
    #[arg(num_args = 1..=2, required = true, value_name = "FILE | merge DIR")]
    pub file: Vec<std::path::PathBuf>,
    /// The output directory (cells/, sweep.json, table.txt, report.html, merged.json).
    #[arg(long, visible_alias = "out", default_value = "sweep-out")]
    pub out_dir: std::path::PathBuf,
    #[arg(long, value_name = "K", help = "Run cell K alone (a Slurm array task)")]
    pub cell: Option<usize>,
    #[arg(long, help = "An sbatch array script (a task per cell) into DIR")]
    pub slurm: bool,
    #[arg(long, requires = "slurm", help = "Submit that script with sbatch")]
    pub submit: bool,
}

/// `sweep`, on `-j` cells at once; cells without a result fail after the table.
pub fn sweep(a: &SweepArgs, j: Option<u16>) -> Result<String, crate::error::CliError> {
    let (report, bad, sh) = ops::sweep_run::dispatch(&a.file, &a.out_dir, a.cell, a.slurm, j)?;
    match (bad, sh.filter(|_| a.submit)) {
        (Some(summary), _) => Err(crate::error::CliError::CheckFailed { report, summary }),
        (None, Some(script)) => Ok(report + &submit(&script)?),
        (None, None) => Ok(report),
    }
}

fn submit(script: &std::path::Path) -> Result<String, crate::error::CliError> {
    let mut sbatch = std::process::Command::new("sbatch");
    let out = sbatch.arg("--parsable").arg(script).output();
    let out = out.map_err(|e| crate::error::CliError::input("sbatch", e))?;
    let said = ops::sweep_run::submitted(out.status.success(), &out.stdout, &out.stderr);
    Ok(said?)
}
