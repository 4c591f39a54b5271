//! The `--cluster` argument, taken the same way by every command: `preset:NAME`, a railyard spec
//! file, or a Kubernetes NodeList / Node stream with the levels from `--topology`, `--levels` or
//! `--label-preset` (detected from the labels when none is given). Reading is `formats::cluster`,
//! which reading a name asks for `ops::cluster`; this module holds the flags.

use std::path::PathBuf;

use formats::cluster::LoadedCluster;
use formats::k8s::{ImportOptions, LabelPreset};
use topology::Cluster;

use crate::error::CliError;

/// How a command names its cluster.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ClusterArgs {
    /// The cluster: `preset:NAME`, a railyard spec (YAML), `kubectl get nodes -o json|yaml`, a Slurm topology.conf (with --shape), or live: `k8s:[CONTEXT]`, `slurm:`
    #[arg(long, value_name = "preset:NAME|FILE|k8s:|slurm:", long_help = cluster_help())]
    pub cluster: String,
    /// A Kueue (`kueue.x-k8s.io`) or KAI (`kai.scheduler`) Topology giving the levels of a NodeList.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// The levels of a NodeList as node labels, top first.
    #[arg(long, value_delimiter = ',', value_name = "LABEL,…")]
    pub levels: Vec<String>,
    /// A known label vocabulary giving the levels of a NodeList.
    #[arg(long, value_enum)]
    pub label_preset: Option<LabelPresetArg>,
    /// Hardware shape for imported nodes without a known `node.kubernetes.io/instance-type`.
    #[arg(long, value_name = "NAME")]
    pub shape: Option<String>,
    /// Hardware and fabric facts for an imported cluster (YAML; schema in the README).
    #[arg(long, value_name = "FILE")]
    pub overlay: Option<PathBuf>,
    #[command(flatten)]
    pub live: live::Options,
}

/// `--cluster --help`: the short help and every preset name.
fn cluster_help() -> String {
    let names: Vec<&str> = formats::cluster::PRESETS.iter().map(|(n, _)| *n).collect();
    format!(
        "The cluster: `preset:NAME`, a railyard spec (YAML), `kubectl get nodes -o json|yaml`, a Slurm topology.conf (with --shape), or live: `k8s:[CONTEXT]` (the kubeconfig's), `slurm:` (sinfo, scontrol)\n\nPresets: {}",
        names.join(", ")
    )
}

/// `--label-preset` values (`formats::k8s::LabelPreset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LabelPresetArg {
    /// `oci.oraclecloud.com/rdma.hpc_island_id` → `network_block_id` → `local_block_id` → hostname.
    Oci,
    /// `fabric.topograph.run/tier-N`, highest N first, then hostname.
    Topograph,
}

impl From<LabelPresetArg> for LabelPreset {
    fn from(a: LabelPresetArg) -> Self {
        match a {
            LabelPresetArg::Oci => LabelPreset::Oci,
            LabelPresetArg::Topograph => LabelPreset::Topograph,
        }
    }
}

/// Load the cluster the arguments name and send the inference notes to the log (stderr at
/// the default verbosity, hidden by `-q`).
pub fn load_cluster(args: &ClusterArgs) -> Result<Cluster, CliError> {
    let loaded = load_cluster_quiet(args)?;
    for n in &loaded.notes {
        tracing::info!("{n}");
    }
    tracing::debug!(
        "cluster {}: {}, {}",
        loaded.cluster.name,
        report::fmt::count_of(loaded.cluster.nodes.len(), "node"),
        report::fmt::count_of(loaded.cluster.gpu_count() as usize, "GPU")
    );
    Ok(loaded.cluster)
}

/// Load the cluster `--cluster NAME` names alone (a preset or a spec file, no import flags),
/// for commands that only need its size.
pub fn load_named(cluster: &str) -> Result<Cluster, CliError> {
    load_cluster(&ClusterArgs {
        cluster: cluster.to_owned(),
        ..ClusterArgs::default()
    })
}

/// Load the cluster the arguments name, returning the notes instead of printing them.
pub fn load_cluster_quiet(args: &ClusterArgs) -> Result<LoadedCluster, CliError> {
    let options = ImportOptions {
        topology: args.topology.clone(),
        levels: args.levels.clone(),
        label_preset: args.label_preset.map(Into::into),
        shape: args.shape.clone(),
        overlay: args.overlay.clone(),
    };
    if live::is_live(&args.cluster) {
        return Ok(live::load_cluster(&args.cluster, &options, &args.live)?);
    }
    // A bad value of a flag itself (`--cluster preset:nope`, `--shape`, `--levels`) is a usage
    // error (exit 2); what a named file holds is an input error (exit 1).
    ops::cluster::load(&args.cluster, &options).map_err(CliError::usage_if_flag)
}
