//! A cluster from its description: a bundled preset, a railyard spec, or a Kubernetes NodeList /
//! Node stream with the levels from a Topology object, level labels or a label vocabulary.

use topology::{build_from_spec, ClusterSpec};

use crate::error::FormatError;
use crate::input::{parse_documents, parse_typed};
pub use crate::k8s::LoadedCluster;
use crate::k8s::{self, ImportOptions};

/// Bundled presets: name and spec text.
pub const PRESETS: &[(&str, &str)] = &[
    ("fat-tree-k8", include_str!("../presets/fat-tree-k8.yaml")),
    ("oci-h100-16k", include_str!("../presets/oci-h100-16k.yaml")),
    (
        "oci-h100-16k-4to1",
        include_str!("../presets/oci-h100-16k-4to1.yaml"),
    ),
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

/// The bundled preset `name`. `shown` names the argument in errors (the CLI passes `--cluster`).
pub fn preset(shown: &str, name: &str) -> Result<LoadedCluster, FormatError> {
    let Some((_, text)) = PRESETS.iter().find(|(n, _)| *n == name) else {
        let known: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
        return Err(FormatError::input(
            shown,
            format!(
                "unknown preset `{name}`; expected one of {}",
                known.join(", ")
            ),
        ));
    };
    let spec: ClusterSpec = parse_typed(&format!("preset:{name}"), text)?;
    let cluster =
        build_from_spec(&spec).map_err(|e| FormatError::input(format!("preset:{name}"), e))?;
    Ok(LoadedCluster {
        cluster,
        notes: Vec::new(),
    })
}

/// What a cluster file holds.
#[derive(Debug)]
pub enum ClusterFile {
    /// Kubernetes Node objects (a NodeList, a List, or a stream of Nodes), as generic values.
    Nodes(Vec<serde_json::Value>),
    /// Not Kubernetes objects: to be read as a railyard cluster spec.
    Spec,
    /// A Slurm topology.conf (topology/tree or topology/block).
    SlurmTopology,
    /// Alibaba's GPU-sharing node list (`openb_node_list_*.csv`, read by the `openb` module).
    OpenbNodes,
}

/// Tell a NodeList from a railyard spec (parsing the Node objects, not yet the spec). `file`
/// names the file in errors.
pub fn parse_cluster_file(file: &str, text: &str) -> Result<ClusterFile, FormatError> {
    if crate::slurm::is_topology_conf(text) {
        return Ok(ClusterFile::SlurmTopology);
    }
    if crate::openb::is_openb_nodes(text) {
        return Ok(ClusterFile::OpenbNodes);
    }
    let docs = parse_documents(file, text)?;
    let kind = docs
        .first()
        .and_then(|d| d.get("kind"))
        .and_then(|k| k.as_str());
    match kind {
        Some("NodeList" | "Node" | "List") => Ok(ClusterFile::Nodes(docs)),
        Some(kind) => Err(FormatError::input(
            file,
            format!("kind {kind}: expected a Kubernetes Node, NodeList or List of Nodes, or a railyard cluster spec"),
        )),
        None => Ok(ClusterFile::Spec),
    }
}

/// Build the cluster a file describes: Node objects with `options`, or the spec in `text`.
pub fn build_cluster_file(
    file: &str,
    text: &str,
    parsed: ClusterFile,
    options: &ImportOptions,
) -> Result<LoadedCluster, FormatError> {
    match parsed {
        ClusterFile::Nodes(docs) => k8s::import_nodes(file, &docs, options),
        ClusterFile::SlurmTopology => slurm_cluster(file, text, options),
        ClusterFile::OpenbNodes => openb_cluster(file, text, options),
        ClusterFile::Spec => {
            let spec: ClusterSpec = parse_typed(file, text)?;
            let cluster = build_from_spec(&spec).map_err(|e| FormatError::input(file, e))?;
            Ok(LoadedCluster {
                cluster,
                notes: Vec::new(),
            })
        }
    }
}

/// An openb node list as a cluster: one flat level, the nodes' hardware from the list (shape
/// options do not apply; an overlay may still set what the list does not say).
fn openb_cluster(
    file: &str,
    text: &str,
    options: &ImportOptions,
) -> Result<LoadedCluster, FormatError> {
    let docs = crate::openb::node_docs(file, text)?;
    let options = ImportOptions {
        levels: vec![crate::openb::LEVEL_LABEL.to_owned()],
        ..options.clone()
    };
    let mut loaded = k8s::import_nodes(file, &docs, &options)?;
    loaded.notes.insert(
        0,
        format!(
            "{file}: read as an Alibaba openb node list: {} nodes in one flat network",
            docs.len()
        ),
    );
    Ok(loaded)
}

/// A Slurm topology.conf as a cluster: its nodes and switch (or block) levels, every node of
/// the `--shape` given (the file has no hardware), through the NodeList import.
fn slurm_cluster(
    file: &str,
    text: &str,
    options: &ImportOptions,
) -> Result<LoadedCluster, FormatError> {
    let given = [
        (options.topology.is_some(), "--topology"),
        (!options.levels.is_empty(), "--levels"),
        (options.label_preset.is_some(), "--label-preset"),
    ];
    if let Some((_, flag)) = given.iter().find(|(g, _)| *g) {
        return Err(FormatError::input(
            file,
            format!("{flag} does not apply to a Slurm topology.conf: its levels are its switches or blocks"),
        ));
    }
    let names: Vec<&str> = topology::SHAPES.iter().map(|s| s.name).collect();
    let Some(shape_name) = &options.shape else {
        return Err(FormatError::input(
            file,
            format!(
                "a Slurm topology.conf names no hardware: give --shape, one of {}",
                names.join(", ")
            ),
        ));
    };
    let shape = topology::known_shape(shape_name).ok_or_else(|| {
        FormatError::input(
            "--shape",
            format!(
                "unknown shape `{shape_name}`; expected one of {}",
                names.join(", ")
            ),
        )
    })?;
    let (docs, levels) = crate::slurm::read_topology_conf(file, text, shape.name, shape.gpus)?;
    let options = ImportOptions {
        levels,
        ..options.clone()
    };
    let mut loaded = k8s::import_nodes(file, &docs, &options)?;
    loaded.notes.insert(
        0,
        format!(
            "{file}: read as a Slurm topology.conf: {} nodes, {} levels; every node a {} (--shape)",
            docs.len(),
            options.levels.len(),
            shape.name
        ),
    );
    Ok(loaded)
}
