//! Running a sweep's cells: one cell as one `simulate` run, its outcome written as
//! `cells/cell-K.json` (summary or error, with the cell's input hash); every cell locally on a
//! pool of `-j` threads, skipping cells whose output is already there for the same inputs; and
//! the same grid as an sbatch array script (one task per cell, each running `sweep --cell K`)
//! with every value in it checked or shell-quoted (submitting it is the front end's). The output directory's layout:
//! `sweep.json` (the manifest: every cell's axes and hash), `cells/`, `logs/` (Slurm),
//! `sweep.sbatch`, and what [`crate::sweep_merge`] writes.

use std::path::{Path, PathBuf};

use fabric::{RoutingConfig, RoutingMode};
use formats::trace::{read_trace, TraceFormat};
use formats::FormatError;

use crate::simulate::SimulateOptions;
use crate::sweep::{
    cell_path, read_cell, CellAxes, CellOutput, Grid, Manifest, ManifestCell, MANIFEST,
};

/// The sbatch script's file name in the output directory.
pub const SCRIPT: &str = "sweep.sbatch";

/// How a local sweep went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LocalRun {
    /// Cells run now.
    pub ran: usize,
    /// Cells whose output was already there for the same inputs.
    pub reused: usize,
    /// Cells that failed (index, error), in cell order.
    pub failed: Vec<(usize, String)>,
}

/// The manifest of `grid` with its `hashes`.
pub fn manifest(grid: &Grid, hashes: &[String]) -> Manifest {
    Manifest {
        railyard_version: env!("CARGO_PKG_VERSION").to_owned(),
        swept: grid.swept.iter().map(|s| (*s).to_owned()).collect(),
        cells: grid
            .cells
            .iter()
            .zip(hashes)
            .enumerate()
            .map(|(cell, (axes, h))| ManifestCell {
                cell,
                axes: axes.clone(),
                input_hash: h.clone(),
            })
            .collect(),
    }
}

/// Every cell of `grid` into `dir` on at most `threads` threads (in cell order whatever ends
/// first), after writing the manifest; a cell whose output holds a summary for the same input
/// hash is not run again. A failing cell is recorded with its error and the others go on; an
/// error here is one that stops the sweep (a file that cannot be read or written).
pub fn run_local(grid: &Grid, dir: &Path, threads: usize) -> Result<LocalRun, FormatError> {
    let hashes = grid.input_hashes()?;
    prepare(dir, &manifest(grid, &hashes), true, "local")?;
    let outcomes = crate::parallel::map_in_order(threads, &hashes, |k, hash| {
        if read_cell(dir, k).is_some_and(|c| &c.input_hash == hash && c.summary.is_some()) {
            return Ok(None);
        }
        let out = run_cell(grid, k, hash.clone());
        write_cell(dir, &out)?;
        Ok(Some(out.error))
    });
    let mut run = LocalRun::default();
    for (k, outcome) in outcomes.into_iter().enumerate() {
        match outcome? {
            None => run.reused += 1,
            Some(None) => run.ran += 1,
            Some(Some(e)) => {
                run.ran += 1;
                run.failed.push((k, e));
            }
        }
    }
    Ok(run)
}

/// What a sweep command did: the text to print, the one-line failure that follows it when a
/// merge has cells without a result, and the sbatch script written with `--slurm` (the CLI
/// submits it with `--submit`: running programs is the front end's).
pub type Done = (String, Option<String>, Option<PathBuf>);

/// What `railyard sweep WORDS… --out-dir OUT [--cell K] [--slurm]` asks, on at most `threads`
/// cells at once (none: every core): `merge DIR` merges that directory and runs nothing; `FILE` with `cell` runs
/// that cell; with `slurm` writes the Slurm script; else runs every cell here and merges.
pub fn dispatch(
    words: &[PathBuf],
    out: &Path,
    cell: Option<usize>,
    slurm: bool,
    threads: Option<u16>,
) -> Result<Done, FormatError> {
    let file = match words {
        [merge, dir] if merge.as_os_str() == "merge" => {
            let (text, failed) = crate::sweep_merge::merge_and_write(dir, "")?;
            return Ok((text, failed, None));
        }
        [file] => file,
        _ => {
            return Err(FormatError::input(
                "sweep",
                "expected a grid FILE, or `merge DIR`",
            ))
        }
    };
    let grid = crate::sweep::read_grid(file)?;
    match cell {
        Some(k) => Ok((run_one(&grid, out, k)?, None, None)),
        None if slurm => {
            let (text, script) = self::slurm(&grid, out, None)?;
            Ok((text, None, Some(script)))
        }
        None => {
            let threads = crate::parallel::threads_or_all_cores(threads);
            let (text, failed) = local(&grid, out, threads)?;
            Ok((text, failed, None))
        }
    }
}

/// [`run_local`], then the merge ([`crate::sweep_merge::merge_and_write`]): the table with a
/// line of counts, and the one-line failure when cells have no result.
pub fn local(
    grid: &Grid,
    dir: &Path,
    threads: usize,
) -> Result<(String, Option<String>), FormatError> {
    let r = run_local(grid, dir, threads)?;
    let counts = format!(
        "{}: {} run, {} reused, {} failed\n",
        formats::names::comment_text(&dir.display().to_string()),
        r.ran,
        r.reused,
        r.failed.len()
    );
    crate::sweep_merge::merge_and_write(dir, &counts)
}

/// Cell `k` alone into `dir` (a Slurm array task): the manifest written if absent, the cell
/// run unless its output is there for the same inputs. The cell's own failure is recorded in
/// its file and is the error (`cell K: …`), so the task fails.
pub fn run_one(grid: &Grid, dir: &Path, k: usize) -> Result<String, FormatError> {
    match run_one_cell(grid, dir, k)? {
        None => Ok(String::new()),
        Some(e) => Err(FormatError::input(format!("cell {k}"), e)),
    }
}

fn run_one_cell(grid: &Grid, dir: &Path, k: usize) -> Result<Option<String>, FormatError> {
    let n = grid.cells.len();
    if k >= n {
        return Err(FormatError::input(
            "--cell",
            format!("expected 0..={} (the grid has {n} cells), got {k}", n - 1),
        ));
    }
    let writer = format!("cell-{k}");
    if !dir.join(MANIFEST).is_file() {
        prepare(dir, &manifest(grid, &grid.input_hashes()?), true, &writer)?;
    } else {
        prepare(dir, &manifest(grid, &[]), false, &writer)?;
    }
    let hash = grid.input_hash(k)?;
    if read_cell(dir, k).is_some_and(|c| c.input_hash == hash && c.summary.is_some()) {
        return Ok(None);
    }
    let out = run_cell(grid, k, hash);
    write_cell(dir, &out)?;
    Ok(out.error)
}

/// `grid` as an sbatch array script in `dir` (returned with its path): one task per cell, each
/// running `exe sweep GRID --cell $SLURM_ARRAY_TASK_ID --out-dir DIR` with its output in
/// `logs/cell-K.log`. Paths are made absolute and shell-quoted; the `#SBATCH` values were
/// checked with the grid; a path that is not UTF-8 is refused.
pub fn write_slurm(grid: &Grid, dir: &Path, exe: &Path) -> Result<(PathBuf, String), FormatError> {
    prepare(dir, &manifest(grid, &grid.input_hashes()?), true, "slurm")?;
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(|source| io(&logs, source))?;
    let word = |p: &Path, what: &str| -> Result<String, FormatError> {
        let abs = std::path::absolute(p).map_err(|source| io(p, source))?;
        abs.to_str()
            .map(formats::names::shell_quote)
            .ok_or_else(|| {
                FormatError::input(
                    p.display(),
                    format!("{what}: the path is not UTF-8; sbatch scripts here are UTF-8"),
                )
            })
    };
    let (exe_w, grid_w, dir_w) = (
        word(exe, "railyard")?,
        word(&grid.file, "the grid file")?,
        word(dir, "--out")?,
    );
    let log_prefix = word(&logs.join("cell-"), "--out")?;
    let n = grid.cells.len();
    let s = &grid.slurm;
    let mut script = format!(
        "#!/bin/sh\n# railyard {} sweep of {}: {n} cells, one array task each; merge with `railyard sweep merge`.\n",
        env!("CARGO_PKG_VERSION"),
        formats::names::comment_text(&grid.file.display().to_string()),
    );
    let job_name = s.job_name.as_deref().unwrap_or("railyard-sweep");
    script += &format!("#SBATCH --job-name={job_name}\n");
    let limit = s.max_running.map(|m| format!("%{m}")).unwrap_or_default();
    script += &format!("#SBATCH --array=0-{}{limit}\n", n - 1);
    script += "#SBATCH --output=/dev/null\n";
    if let Some(p) = &s.partition {
        script += &format!("#SBATCH --partition={p}\n");
    }
    if let Some(t) = &s.time {
        script += &format!("#SBATCH --time={t}\n");
    }
    if let Some(c) = s.cpus_per_task {
        script += &format!("#SBATCH --cpus-per-task={c}\n");
    }
    script += &format!(
        "exec {exe_w} sweep {grid_w} --cell \"$SLURM_ARRAY_TASK_ID\" --out-dir {dir_w} >{log_prefix}\"$SLURM_ARRAY_TASK_ID\".log 2>&1\n"
    );
    let path = dir.join(SCRIPT);
    std::fs::write(&path, &script).map_err(|source| io(&path, source))?;
    Ok((path, script))
}

/// `--slurm`: the script written ([`write_slurm`], for `exe`, or for this executable when
/// `None`); what was done, and the script.
pub fn slurm(
    grid: &Grid,
    dir: &Path,
    exe: Option<&Path>,
) -> Result<(String, PathBuf), FormatError> {
    let exe = match exe {
        Some(e) => e.to_path_buf(),
        None => std::env::current_exe().map_err(|source| io(Path::new("railyard"), source))?,
    };
    let (script, _) = write_slurm(grid, dir, &exe)?;
    let out = format!(
        "wrote {} ({} array tasks)\n",
        script.display(),
        grid.cells.len()
    );
    Ok((out, script))
}

/// What `sbatch --parsable` said (`ok`: it exited 0): `submitted batch job ID`, or its error
/// on one line.
pub fn submitted(ok: bool, stdout: &[u8], stderr: &[u8]) -> Result<String, FormatError> {
    let said = |b: &[u8]| formats::one_line(&String::from_utf8_lossy(b));
    if ok {
        Ok(format!("submitted batch job {}\n", said(stdout)))
    } else {
        Err(FormatError::input("sbatch", said(stderr)))
    }
}

/// Cell `k` run now: its summary, or its error.
fn run_cell(grid: &Grid, k: usize, input_hash: String) -> CellOutput {
    let axes = grid.cells[k].clone();
    let (summary, error) = match simulate_cell(grid, &axes) {
        Ok(s) => (Some(s), None),
        Err(e) => (None, Some(e)),
    };
    CellOutput {
        cell: k,
        input_hash,
        axes,
        summary,
        error,
    }
}

/// One cell as `simulate` with one policy and one scheduler would run it.
fn simulate_cell(grid: &Grid, cell: &CellAxes) -> Result<serde_json::Value, String> {
    let s = |e: &dyn std::fmt::Display| e.to_string();
    let cluster_name = grid
        .path_of(&cell.cluster)
        .map_or_else(|| cell.cluster.clone(), |p| p.display().to_string());
    let cluster = crate::cluster::load(&cluster_name, &Default::default())
        .map_err(|e| s(&e))?
        .cluster;
    let shared = &grid.shared;
    let options = SimulateOptions {
        policies: vec![cell.policy.clone()],
        schedulers: vec![cell.scheduler.clone()],
        cycle_s: shared.cycle_s,
        horizon_s: shared.horizon_s,
        no_network: shared.no_network,
        seed: cell.seed,
        repair_hours: 1.0,
        ..SimulateOptions::default()
    };
    let runs = crate::simulate::runs(&cluster, &cluster_name, &options).map_err(|e| s(&e))?;
    let routing = RoutingConfig {
        mode: if shared.routing == "adaptive" {
            RoutingMode::Adaptive
        } else {
            RoutingMode::Ecmp
        },
        nccl: crate::nccl_settings::config(&cell.nccl, None)?,
        seed: cell.seed,
        ..RoutingConfig::default()
    };
    let trace_path = grid.base.join(&cell.trace);
    let trace_name = trace_path.display().to_string();
    let mut trace = read_trace(&trace_path, TraceFormat::Auto, false).map_err(|e| s(&e))?;
    let (configs, _) =
        crate::simulate::configs(&cluster, &mut trace.jobs, &trace_name, runs, &options)
            .map_err(|e| s(&e))?;
    let results = crate::simulate::run_all(
        &cluster,
        &trace.jobs,
        &configs,
        routing,
        false,
        &trace_name,
        1,
        &|_, _| Box::new(|_| {}),
    )
    .map_err(|e| s(&e))?;
    serde_json::to_value(&results[0].summary).map_err(|e| s(&e))
}

/// The directory's `cells/` made, and the manifest written (atomically: array tasks may race)
/// when `write`, by `writer` (`local`, `slurm`, `cell-K`).
fn prepare(dir: &Path, manifest: &Manifest, write: bool, writer: &str) -> Result<(), FormatError> {
    let cells = dir.join("cells");
    std::fs::create_dir_all(&cells).map_err(|source| io(&cells, source))?;
    if write {
        let text = serde_json::to_string_pretty(manifest).expect("plain data serializes") + "\n";
        write_atomically(&dir.join(MANIFEST), &text, writer)?;
    }
    Ok(())
}

fn write_cell(dir: &Path, out: &CellOutput) -> Result<(), FormatError> {
    let text = serde_json::to_string_pretty(out).expect("plain data serializes") + "\n";
    write_atomically(&cell_path(dir, out.cell), &text, "cell")
}

/// Write `text` to `path` through a file beside it (named by `writer`, so writers that may race
/// never share one) renamed into place: a reader, or a killed task, never sees half a file.
fn write_atomically(path: &Path, text: &str, writer: &str) -> Result<(), FormatError> {
    let tmp = path.with_extension(format!("tmp.{writer}"));
    std::fs::write(&tmp, text).map_err(|source| io(&tmp, source))?;
    std::fs::rename(&tmp, path).map_err(|source| io(path, source))
}

fn io(path: &Path, source: std::io::Error) -> FormatError {
    FormatError::Io {
        path: path.display().to_string(),
        source,
    }
}
