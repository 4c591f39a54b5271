//! The `--cluster` argument, taken the same way by every command: `preset:NAME`, a railyard spec
//! file, or a Kubernetes NodeList / Node stream with the levels from `--topology`, `--levels` or
//! `--label-preset` (detected from the labels when none is given).

use std::path::{Path, PathBuf};

use topology::{build_from_spec, Cluster, ClusterSpec};

use crate::error::CliError;
use crate::formats::k8s::{self, ImportOptions, LabelPreset};
use crate::input::{parse_documents, parse_typed, read_text};

/// Bundled presets: name and spec text.
pub const PRESETS: &[(&str, &str)] = &[
    ("fat-tree-k8", include_str!("../presets/fat-tree-k8.yaml")),
    ("oci-h100-16k", include_str!("../presets/oci-h100-16k.yaml")),
    (
        "oci-h100-131k",
        include_str!("../presets/oci-h100-131k.yaml"),
    ),
    (
        "oci-gb200-nvl72-4k",
        include_str!("../presets/oci-gb200-nvl72-4k.yaml"),
    ),
    ("philly-512", include_str!("../presets/philly-512.yaml")),
    ("philly-2560", include_str!("../presets/philly-2560.yaml")),
];

/// How a command names its cluster.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ClusterArgs {
    /// The cluster: `preset:NAME`, a railyard spec (YAML), or `kubectl get nodes -o json|yaml`.
    #[arg(long, value_name = "preset:NAME|FILE")]
    pub cluster: String,
    /// A Kueue (`kueue.x-k8s.io`) or KAI (`kai.scheduler`) Topology giving the levels of a NodeList.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// The levels of a NodeList as node labels, top first.
    #[arg(long, value_delimiter = ',', value_name = "LABEL,…")]
    pub levels: Vec<String>,
    /// A known label vocabulary giving the levels of a NodeList.
    #[arg(long, value_enum)]
    pub label_preset: Option<LabelPreset>,
    /// Hardware shape for imported nodes without a known `node.kubernetes.io/instance-type`.
    #[arg(long, value_name = "NAME")]
    pub shape: Option<String>,
    /// Hardware and fabric facts for an imported cluster (YAML; schema in the README).
    #[arg(long, value_name = "FILE")]
    pub overlay: Option<PathBuf>,
}

/// A loaded cluster and the notes about facts that had to be inferred.
#[derive(Debug)]
pub struct LoadedCluster {
    /// The cluster.
    pub cluster: Cluster,
    /// What was detected or inferred, for stderr.
    pub notes: Vec<String>,
}

/// Load the cluster the arguments name and print the inference notes on stderr.
pub fn load_cluster(args: &ClusterArgs) -> Result<Cluster, CliError> {
    let loaded = load_cluster_quiet(args)?;
    for n in &loaded.notes {
        eprintln!("note: {n}");
    }
    Ok(loaded.cluster)
}

/// Load the cluster the arguments name, returning the notes instead of printing them.
pub fn load_cluster_quiet(args: &ClusterArgs) -> Result<LoadedCluster, CliError> {
    if let Some(name) = args.cluster.strip_prefix("preset:") {
        let Some((_, text)) = PRESETS.iter().find(|(n, _)| *n == name) else {
            let known: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
            return Err(CliError::input(
                "--cluster",
                format!(
                    "unknown preset `{name}`; expected one of {}",
                    known.join(", ")
                ),
            ));
        };
        reject_import_flags(args, &args.cluster)?;
        let spec: ClusterSpec = parse_typed(&format!("preset:{name}"), text)?;
        let cluster =
            build_from_spec(&spec).map_err(|e| CliError::input(format!("preset:{name}"), e))?;
        return Ok(LoadedCluster {
            cluster,
            notes: Vec::new(),
        });
    }
    let path = Path::new(&args.cluster);
    let file = path.display().to_string();
    let text = read_text(path)?;
    let docs = parse_documents(&file, &text)?;
    let is_k8s = docs
        .first()
        .and_then(|d| d.get("kind"))
        .and_then(|k| k.as_str())
        .is_some_and(|k| matches!(k, "NodeList" | "Node" | "List"));
    let foreign_kind = docs
        .first()
        .and_then(|d| d.get("kind"))
        .and_then(|k| k.as_str())
        .filter(|k| !matches!(*k, "NodeList" | "Node" | "List"));
    if let Some(kind) = foreign_kind {
        return Err(CliError::input(
            &file,
            format!("kind {kind}: expected a Kubernetes Node, NodeList or List of Nodes, or a railyard cluster spec"),
        ));
    }
    if is_k8s {
        let options = ImportOptions {
            topology: args.topology.clone(),
            levels: args.levels.clone(),
            label_preset: args.label_preset,
            shape: args.shape.clone(),
            overlay: args.overlay.clone(),
        };
        return k8s::import_nodes(&file, &docs, &options);
    }
    reject_import_flags(args, &file)?;
    let spec: ClusterSpec = parse_typed(&file, &text)?;
    let cluster = build_from_spec(&spec).map_err(|e| CliError::input(&file, e))?;
    Ok(LoadedCluster {
        cluster,
        notes: Vec::new(),
    })
}

fn reject_import_flags(args: &ClusterArgs, what: &str) -> Result<(), CliError> {
    let given = [
        (args.topology.is_some(), "--topology"),
        (!args.levels.is_empty(), "--levels"),
        (args.label_preset.is_some(), "--label-preset"),
        (args.shape.is_some(), "--shape"),
        (args.overlay.is_some(), "--overlay"),
    ];
    if let Some((_, flag)) = given.iter().find(|(g, _)| *g) {
        return Err(CliError::input(
            what,
            format!(
                "{flag} applies only to a Kubernetes NodeList; this cluster is a railyard spec"
            ),
        ));
    }
    Ok(())
}
