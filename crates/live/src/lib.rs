//! railyard's live sources: a Kubernetes cluster (`k8s:`, through kube-rs) and Slurm's live
//! state (`slurm:`, through `sinfo`, `scontrol` and `squeue`), read into the very documents the
//! file readers take. Each document is held in memory under a name (`formats::input::provide`)
//! and, with `--dump DIR`, written there as the file railyard already accepts, so a live answer
//! can be replayed offline. Nothing here writes to a cluster.

#[cfg(feature = "k8s")]
mod k8s;
pub mod slurm;

use std::path::{Path, PathBuf};

use formats::cluster::LoadedCluster;
use formats::k8s::ImportOptions;
use formats::FormatError;

/// A live source's error: one line naming the source (the context, or Slurm's command) and
/// the resource.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source or a flag is wrong (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The source answered, but not as expected, or could not be reached.
    #[error("{0}")]
    Source(String),
    /// A dumped file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

impl From<Error> for FormatError {
    fn from(e: Error) -> Self {
        match e {
            Error::Io { path, source } => FormatError::Io { path, source },
            e => FormatError::Input(e.to_string()),
        }
    }
}

/// What a command asks a live source for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// The nodes and their levels (`--cluster`).
    Cluster,
    /// The running jobs (`--state`).
    State,
    /// The queue objects (`--queues`): Kueue ClusterQueues, Cohorts, LocalQueues and
    /// ResourceFlavors, KAI Queues.
    Queues,
    /// Kueue ResourceFlavors alone (`--flavor`).
    Flavors,
}

/// Where and how to read: kubectl's flags, and `--dump`. The CLI flattens them into its
/// `--cluster` arguments (`clap` feature), so every command that takes a cluster takes them.
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Options {
    /// `k8s:`: the kubeconfig context (default: its current-context).
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME"))]
    pub context: Option<String>,
    /// `k8s:`: the kubeconfig (default: $KUBECONFIG, else ~/.kube/config).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub kubeconfig: Option<PathBuf>,
    /// `k8s:`: the namespace of Pods, Workloads, LocalQueues and PodGroups (default: the
    /// context's).
    #[cfg_attr(feature = "clap", arg(short = 'n', long, value_name = "NAME"))]
    pub namespace: Option<String>,
    /// `k8s:`: Pods, Workloads, LocalQueues and PodGroups of every namespace.
    #[cfg_attr(feature = "clap", arg(short = 'A', long))]
    pub all_namespaces: bool,
    /// Save what `k8s:` or `slurm:` returned in DIR as the files railyard reads, to replay
    /// offline.
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub dump: Option<PathBuf>,
}

/// What a live source returned: the names under which its documents are held (read them as
/// files), the Topology (for the NodeList import) and notes for the log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Read {
    /// Document names, in a fixed order.
    pub files: Vec<String>,
    /// The one Topology object the cluster serves, held under this name.
    pub topology: Option<String>,
    /// What was absent or assumed.
    pub notes: Vec<String>,
}

/// Whether `arg` names a live source (`k8s:`, `k8s:CONTEXT`, `slurm:`).
pub fn is_live(arg: &str) -> bool {
    arg == "k8s:" || arg.starts_with("k8s:") || arg == "slurm:"
}

/// The cluster the live source `source` names, read through the file readers with `import`
/// (the Topology the cluster serves gives the levels when `import` gives none); its notes
/// first.
pub fn load_cluster(
    source: &str,
    import: &ImportOptions,
    options: &Options,
) -> Result<LoadedCluster, FormatError> {
    let read = read(source, Input::Cluster, options)?;
    let mut import = import.clone();
    if import.levels.is_empty() && import.label_preset.is_none() && import.topology.is_none() {
        import.topology = read.topology.map(PathBuf::from);
    }
    let nodes = read.files.first().map_or("", String::as_str);
    let mut loaded = ops::cluster::load(nodes, &import)?;
    loaded.notes.splice(0..0, read.notes);
    Ok(loaded)
}

/// `paths` (`--state`, `--queues`, `--flavor`) with each live source among them (`k8s:`,
/// `slurm:`) replaced by the documents it returned for `input`, the others kept in place; the
/// sources' notes go to the log.
pub fn files(
    paths: &[PathBuf],
    input: Input,
    options: &Options,
) -> Result<Vec<PathBuf>, FormatError> {
    let mut out = Vec::new();
    for p in paths {
        match p.to_str().filter(|s| is_live(s)) {
            None => out.push(p.clone()),
            Some(source) => {
                let read = read(source, input, options)?;
                read.notes.iter().for_each(|n| tracing::info!("{n}"));
                out.extend(read.files.into_iter().map(PathBuf::from));
            }
        }
    }
    Ok(out)
}

/// Read `input` from the live source `source` names.
pub fn read(source: &str, input: Input, options: &Options) -> Result<Read, FormatError> {
    Ok(read_source(source, input, options)?)
}

fn read_source(source: &str, input: Input, options: &Options) -> Result<Read, Error> {
    if source == "slurm:" {
        return slurm::read(input, options);
    }
    if let Some(context) = source.strip_prefix("k8s:") {
        let mut options = options.clone();
        if !context.is_empty() {
            if options.context.as_deref().is_some_and(|c| c != context) {
                return Err(Error::Usage(format!(
                    "{source}: names context `{context}` and --context names `{}`; give one",
                    options.context.as_deref().unwrap_or_default()
                )));
            }
            options.context = Some(context.to_owned());
        }
        return read_k8s(input, &options);
    }
    Err(Error::Usage(format!(
        "`{source}`: expected a live source `k8s:`, `k8s:CONTEXT` or `slurm:`"
    )))
}

#[cfg(feature = "k8s")]
fn read_k8s(input: Input, options: &Options) -> Result<Read, Error> {
    k8s::read(input, options)
}

#[cfg(not(feature = "k8s"))]
fn read_k8s(_: Input, _: &Options) -> Result<Read, Error> {
    Err(Error::Usage(
        "`k8s:`: this railyard was built without the `live` feature (cargo build --features live); save `kubectl get … -o json` to files instead".to_owned(),
    ))
}

/// Hold `text` under `prefix/file` for the file readers and, with `--dump DIR`, write it to
/// `DIR/file`. Returns the name it is held under.
pub(crate) fn keep(
    prefix: &str,
    file: &str,
    text: String,
    dump: Option<&Path>,
) -> Result<String, Error> {
    if let Some(dir) = dump {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.display().to_string(),
            source,
        })?;
        let path = dir.join(file);
        std::fs::write(&path, &text).map_err(|source| Error::Io {
            path: path.display().to_string(),
            source,
        })?;
    }
    let name = format!("{prefix}/{file}");
    formats::input::provide(&name, text);
    Ok(name)
}
