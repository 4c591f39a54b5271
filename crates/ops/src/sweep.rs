//! `sweep`'s grid file: the axes (clusters × traces × policies × schedulers × NCCL settings ×
//! seeds) and the settings every cell shares, checked whole before anything runs (every problem
//! at once, each naming the file and the field); the cells in their fixed order; and each cell's
//! input hash, which says whether a cell's output on disk is still its output. Running the cells
//! is `sweep_run`'s, merging their outputs `sweep_merge`'s; both read and write the output
//! directory's files as defined here (the manifest, `cells/cell-K.json`).

use std::path::{Path, PathBuf};

use formats::FormatError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Most cells one grid may have (a Slurm array's default `MaxArraySize` is 1001).
pub const MAX_CELLS: usize = 1_000;

/// The grid file as written (YAML or JSON). Unknown fields are refused.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    /// `--cluster` values: `preset:NAME` or a file (relative to the grid file).
    pub clusters: Vec<String>,
    /// Trace files (relative to the grid file), any format `simulate` detects.
    pub traces: Vec<String>,
    /// `--policy` values (default: `best-effort`).
    #[serde(default)]
    pub policies: Vec<String>,
    /// `--scheduler` values, `kueue` or `kai` (default: `kueue`).
    #[serde(default)]
    pub schedulers: Vec<String>,
    /// NCCL settings: each entry a list of `NAME=VALUE` (default: one entry, NCCL's defaults).
    #[serde(default)]
    pub nccl: Vec<Vec<String>>,
    /// `--seed` values (default: 0).
    #[serde(default)]
    pub seeds: Vec<u64>,
    /// `--routing`: `ecmp` (default) or `adaptive`, for every cell.
    #[serde(default)]
    pub routing: Option<String>,
    /// `--cycle-s` for every cell (default 10).
    #[serde(default)]
    pub cycle_s: Option<f64>,
    /// `--horizon-s` for every cell (default: none).
    #[serde(default)]
    pub horizon_s: Option<f64>,
    /// `--no-network` for every cell.
    #[serde(default)]
    pub no_network: bool,
    /// What `--slurm` writes into the sbatch script.
    #[serde(default)]
    pub slurm: SlurmOptions,
}

/// The sbatch options of the array job; each value checked before it is written.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlurmOptions {
    /// `--job-name` (default `railyard-sweep`): letters, digits, `_`, `-`, `.`.
    #[serde(default)]
    pub job_name: Option<String>,
    /// `--partition`: letters, digits, `_`, `-`, `.`.
    #[serde(default)]
    pub partition: Option<String>,
    /// `--time`: Slurm's `[D-]HH:MM:SS`, `MM:SS` or minutes.
    #[serde(default)]
    pub time: Option<String>,
    /// `--cpus-per-task` (1..=4096).
    #[serde(default)]
    pub cpus_per_task: Option<u32>,
    /// The array's `%N`: at most this many cells at once (1..=1000).
    #[serde(default)]
    pub max_running: Option<u32>,
}

/// One cell: a value on every axis, as written in the grid file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellAxes {
    /// `--cluster` as written.
    pub cluster: String,
    /// The trace as written.
    pub trace: String,
    /// `--policy`.
    pub policy: String,
    /// `--scheduler`.
    pub scheduler: String,
    /// NCCL settings (empty: NCCL's defaults).
    pub nccl: Vec<String>,
    /// `--seed`.
    pub seed: u64,
}

impl CellAxes {
    /// The value of axis `axis` ([`AXES`]) as a table shows it.
    pub fn value(&self, axis: &str) -> String {
        match axis {
            "cluster" => self.cluster.clone(),
            "trace" => self.trace.clone(),
            "policy" => self.policy.clone(),
            "scheduler" => self.scheduler.clone(),
            "nccl" if self.nccl.is_empty() => "default".to_owned(),
            "nccl" => self.nccl.join(" "),
            _ => self.seed.to_string(),
        }
    }
}

/// The axes in the order cells vary (the last fastest), as named in tables.
pub const AXES: [&str; 6] = ["cluster", "trace", "policy", "scheduler", "nccl", "seed"];

/// A checked grid: the cells in order and the settings they share.
#[derive(Clone, Debug)]
pub struct Grid {
    /// The grid file as given.
    pub file: PathBuf,
    /// The directory relative names are read from (the grid file's).
    pub base: PathBuf,
    /// Every cell, in order: index K is Slurm array task K.
    pub cells: Vec<CellAxes>,
    /// The axes with more than one value, in [`AXES`] order.
    pub swept: Vec<&'static str>,
    /// The settings every cell shares.
    pub shared: Shared,
    /// The sbatch options.
    pub slurm: SlurmOptions,
}

/// The settings every cell shares, as recorded in each cell's hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shared {
    /// `ecmp` or `adaptive`.
    pub routing: String,
    /// `--cycle-s`.
    pub cycle_s: f64,
    /// `--horizon-s`.
    pub horizon_s: Option<f64>,
    /// `--no-network`.
    pub no_network: bool,
}

impl Grid {
    /// Where a cell's cluster or trace value points on disk (`None`: a preset).
    pub fn path_of(&self, value: &str) -> Option<PathBuf> {
        (!value.starts_with("preset:")).then(|| self.base.join(value))
    }

    /// The input hash of cell `k` ([`Grid::input_hashes`]), reading only its own files.
    pub fn input_hash(&self, k: usize) -> Result<String, FormatError> {
        self.hash_with(k, &mut std::collections::BTreeMap::new())
    }

    /// Every cell's input hash: SHA-256 (hex) of railyard's version, the cell's axes and the
    /// shared settings as JSON, then the SHA-256 of its cluster file (none for a preset) and of
    /// its trace file. Each file is read once. A file that cannot be read is an error naming it.
    pub fn input_hashes(&self) -> Result<Vec<String>, FormatError> {
        let mut files = std::collections::BTreeMap::new();
        (0..self.cells.len())
            .map(|k| self.hash_with(k, &mut files))
            .collect()
    }

    fn hash_with(
        &self,
        k: usize,
        files: &mut std::collections::BTreeMap<PathBuf, [u8; 32]>,
    ) -> Result<String, FormatError> {
        let cell = &self.cells[k];
        let mut h = Sha256::new();
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update([0]);
        h.update(serde_json::to_vec(&(cell, &self.shared)).expect("plain data serializes"));
        for value in [&cell.cluster, &cell.trace] {
            let Some(path) = self.path_of(value) else {
                continue;
            };
            if !files.contains_key(&path) {
                let bytes = std::fs::read(&path).map_err(|source| FormatError::Io {
                    path: path.display().to_string(),
                    source,
                })?;
                files.insert(path.clone(), Sha256::digest(&bytes).into());
            }
            h.update(files[&path]);
        }
        Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// Read and check the grid file `file`: every problem at once, one line each naming the file
/// and the field (`clusters[1]`, `slurm.time`, …). Clusters are loaded and each policy parsed
/// against each cluster; trace files must exist; nothing runs.
pub fn read_grid(file: &Path) -> Result<Grid, FormatError> {
    let name = file.display().to_string();
    let text = formats::input::read_text(file)?;
    let spec: SweepFile = formats::input::parse_typed(&name, &text)?;
    let base = file
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let base = if base.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        base
    };
    let mut problems = Vec::new();
    let mut problem = |field: String, m: String| problems.push(format!("{name}: {field}: {m}"));
    let or_default = |v: &Vec<String>, d: &str| {
        if v.is_empty() {
            vec![d.to_owned()]
        } else {
            v.clone()
        }
    };
    let policies = or_default(&spec.policies, "best-effort");
    let schedulers = or_default(&spec.schedulers, "kueue");
    let nccl = if spec.nccl.is_empty() {
        vec![Vec::new()]
    } else {
        spec.nccl.clone()
    };
    let seeds = if spec.seeds.is_empty() {
        vec![0]
    } else {
        spec.seeds.clone()
    };
    for (field, n) in [
        ("clusters", spec.clusters.len()),
        ("traces", spec.traces.len()),
    ] {
        if n == 0 {
            problem(field.to_owned(), "expected at least one value".to_owned());
        }
    }
    let mut clusters = Vec::new();
    for (i, c) in spec.clusters.iter().enumerate() {
        let at = base.join(c);
        let shown = if c.starts_with("preset:") {
            c.clone()
        } else {
            at.display().to_string()
        };
        match crate::cluster::load(&shown, &formats::k8s::ImportOptions::default()) {
            Ok(l) => clusters.push(l.cluster),
            Err(e) => problem(format!("clusters[{i}]"), e.to_string()),
        }
    }
    // Cluster and trace values are written into the merged table, its JSON and HTML page: a
    // control character (a newline in a file name) would break the table's lines.
    for (field, values) in [("clusters", &spec.clusters), ("traces", &spec.traces)] {
        for (i, v) in values.iter().enumerate() {
            if v.chars().any(char::is_control) {
                problem(
                    format!("{field}[{i}]"),
                    format!(
                        "`{}` holds a control character; the sweep's tables name every value",
                        formats::excerpt(v)
                    ),
                );
            }
        }
    }
    for (i, t) in spec.traces.iter().enumerate() {
        if !base.join(t).is_file() {
            problem(
                format!("traces[{i}]"),
                format!("`{}` is not a file", formats::excerpt(t)),
            );
        }
    }
    for (i, p) in policies.iter().enumerate() {
        for (c, cluster) in clusters.iter().enumerate() {
            if let Err(e) = formats::policy::parse_policy(p, cluster, "policy") {
                problem(format!("policies[{i}]"), format!("on clusters[{c}]: {e}"));
                break;
            }
        }
    }
    for (i, s) in schedulers.iter().enumerate() {
        if let Err(e) = crate::place::scheduler_runs(std::slice::from_ref(s), "") {
            problem(format!("schedulers[{i}]"), e.to_string());
        }
    }
    for (i, settings) in nccl.iter().enumerate() {
        if let Err(e) = crate::nccl_settings::config(settings, None) {
            problem(format!("nccl[{i}]"), e);
        }
    }
    let routing = spec.routing.clone().unwrap_or_else(|| "ecmp".to_owned());
    if !matches!(routing.as_str(), "ecmp" | "adaptive") {
        problem(
            "routing".to_owned(),
            format!(
                "expected ecmp or adaptive, got `{}`",
                formats::excerpt(&routing)
            ),
        );
    }
    let cycle_s = spec.cycle_s.unwrap_or(10.0);
    if let Err(e) = crate::simulate::parse_cycle_s(&cycle_s.to_string()) {
        problem("cycle_s".to_owned(), e);
    }
    if let Some(h) = spec.horizon_s {
        if let Err(e) = crate::simulate::parse_horizon_s(&h.to_string()) {
            problem("horizon_s".to_owned(), e);
        }
    }
    check_slurm(&spec.slurm, &mut problem);
    let mut seen = std::collections::BTreeSet::new();
    for (field, values) in [
        ("clusters", &spec.clusters),
        ("traces", &spec.traces),
        ("policies", &policies),
        ("schedulers", &schedulers),
    ] {
        seen.clear();
        for (i, v) in values.iter().enumerate() {
            if !seen.insert(v) {
                problem(
                    format!("{field}[{i}]"),
                    format!("`{}` is given twice", formats::excerpt(v)),
                );
            }
        }
    }
    let n_cells = spec.clusters.len()
        * spec.traces.len()
        * policies.len()
        * schedulers.len()
        * nccl.len()
        * seeds.len();
    if n_cells > MAX_CELLS {
        problem(
            "the grid".to_owned(),
            format!("{n_cells} cells; at most {MAX_CELLS} (one Slurm array)"),
        );
    }
    if !problems.is_empty() {
        return Err(if problems.len() == 1 {
            FormatError::Input(problems.remove(0))
        } else {
            FormatError::Problems(problems)
        });
    }
    let mut cells = Vec::with_capacity(n_cells);
    for cluster in &spec.clusters {
        for trace in &spec.traces {
            for policy in &policies {
                for scheduler in &schedulers {
                    for settings in &nccl {
                        for &seed in &seeds {
                            cells.push(CellAxes {
                                cluster: cluster.clone(),
                                trace: trace.clone(),
                                policy: policy.clone(),
                                scheduler: scheduler.clone(),
                                nccl: settings.clone(),
                                seed,
                            });
                        }
                    }
                }
            }
        }
    }
    let counts = [
        spec.clusters.len(),
        spec.traces.len(),
        policies.len(),
        schedulers.len(),
        nccl.len(),
        seeds.len(),
    ];
    Ok(Grid {
        file: file.to_path_buf(),
        base,
        cells,
        swept: AXES
            .iter()
            .zip(counts)
            .filter(|(_, n)| *n > 1)
            .map(|(a, _)| *a)
            .collect(),
        shared: Shared {
            routing,
            cycle_s,
            horizon_s: spec.horizon_s,
            no_network: spec.no_network,
        },
        slurm: spec.slurm,
    })
}

/// Every `slurm` value that would be written into the script, checked against what sbatch
/// takes: names of safe characters only, Slurm's time forms, counts in range.
fn check_slurm(s: &SlurmOptions, problem: &mut impl FnMut(String, String)) {
    let name_ok = |v: &str| {
        !v.is_empty()
            && v.len() <= 64
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    };
    for (field, value) in [("job_name", &s.job_name), ("partition", &s.partition)] {
        if let Some(v) = value.as_deref().filter(|v| !name_ok(v)) {
            problem(
                format!("slurm.{field}"),
                format!(
                    "expected 1 to 64 letters, digits, `_`, `-` or `.`, got `{}`",
                    formats::excerpt(v)
                ),
            );
        }
    }
    if let Some(t) = s.time.as_deref().filter(|t| !slurm_time_ok(t)) {
        problem(
            "slurm.time".to_owned(),
            format!(
                "expected minutes, MM:SS, HH:MM:SS or D-HH[:MM[:SS]], got `{}`",
                formats::excerpt(t)
            ),
        );
    }
    if s.cpus_per_task.is_some_and(|n| !(1..=4096).contains(&n)) {
        problem(
            "slurm.cpus_per_task".to_owned(),
            "expected 1..=4096".to_owned(),
        );
    }
    if s.max_running.is_some_and(|n| !(1..=1000).contains(&n)) {
        problem(
            "slurm.max_running".to_owned(),
            "expected 1..=1000".to_owned(),
        );
    }
}

/// Slurm's `--time` forms: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`, each part digits.
fn slurm_time_ok(t: &str) -> bool {
    let digits = |p: &str| !p.is_empty() && p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit());
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, t),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    days.is_none_or(digits) && parts.iter().all(|p| digits(p)) && parts.len() <= 3
}

// The output directory's files, shared by the runner and the merge.

/// The manifest's file name in the output directory.
pub const MANIFEST: &str = "sweep.json";

/// What a sweep's output directory says of its grid: enough to merge without the grid file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The railyard that wrote it.
    pub railyard_version: String,
    /// The axes with more than one value.
    pub swept: Vec<String>,
    /// Every cell, in order.
    pub cells: Vec<ManifestCell>,
}

/// One cell of the manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestCell {
    /// Its index (the Slurm array task).
    pub cell: usize,
    /// Its value on every axis.
    pub axes: CellAxes,
    /// Its input hash ([`Grid::input_hashes`]).
    pub input_hash: String,
}

/// One cell's outcome, `cells/cell-K.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellOutput {
    /// Its index.
    pub cell: usize,
    /// The hash of the inputs it ran on.
    pub input_hash: String,
    /// Its value on every axis.
    pub axes: CellAxes,
    /// The run's summary (as `simulate -o json` writes it), when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<serde_json::Value>,
    /// Why it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where cell `k`'s outcome is written under `dir`.
pub fn cell_path(dir: &Path, k: usize) -> PathBuf {
    dir.join("cells").join(format!("cell-{k:04}.json"))
}

/// Cell `k`'s recorded outcome, if its file is there and reads.
pub fn read_cell(dir: &Path, k: usize) -> Option<CellOutput> {
    let text = std::fs::read_to_string(cell_path(dir, k)).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_times_are_slurms_forms() {
        for ok in ["30", "10:00", "01:00:00", "2-00", "2-12:30", "1-00:00:00"] {
            assert!(slurm_time_ok(ok), "{ok}");
        }
        for bad in [
            "",
            "1h",
            "1:2:3:4",
            "-1",
            "1-",
            "10:00\n#SBATCH x",
            "1 0",
            "a:b",
        ] {
            assert!(!slurm_time_ok(bad), "{bad:?}");
        }
    }
}
