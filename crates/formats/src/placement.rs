//! The placement file: what `railyard place --output json` writes and what `fabric collective
//! --placement`, `launch` and `place --state` read. One type, so the three stay in step.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use topology::{Cluster, NodeId};

use crate::error::FormatError;

/// One pod of a placed gang.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PlacedPod {
    /// Rank of the pod, 0..n−1; consecutive ranks share the cheapest links.
    pub rank: u32,
    /// Node name.
    pub node: String,
    /// GPUs of the pod (fractional for shared GPUs).
    pub gpus: f64,
    /// Which GPUs of the node (0-based), when known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_ids: Vec<u32>,
}

/// A placement decision for one job, as JSON.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementFile {
    /// Job name.
    #[serde(default)]
    pub job: Option<String>,
    /// Whether the whole gang was placed.
    pub placed: bool,
    /// Why not, when not placed.
    #[serde(default)]
    pub reason: Option<String>,
    /// Pods in rank order.
    #[serde(default)]
    pub pods: Vec<PlacedPod>,
    /// Highest switch tier any two ranks must cross (0 = one leaf); null for a single node.
    #[serde(default)]
    pub highest_tier: Option<u8>,
    /// Worst GPU-to-GPU latency between two ranks, µs.
    #[serde(default)]
    pub worst_latency_us: Option<f64>,
    /// Jobs preempted to make room.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preempted: Vec<String>,
    /// Problems of the queue files the scheduler they are written for accepts (KAI: child
    /// quotas above the parent's), one line each naming file and queue.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A placement whose pods have been checked against a cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedPod {
    /// Rank.
    pub rank: u32,
    /// Node.
    pub node: NodeId,
    /// GPUs (fractional allowed).
    pub gpus: f64,
    /// GPU indices on the node (given, or 0.. in order of appearance on that node).
    pub gpu_ids: Vec<u32>,
}

/// Check a placement file against a cluster: it must be placed, ranks 0..n−1 each once, nodes
/// known, GPU counts within the node, GPU indices valid and not shared by two pods.
pub fn resolve(
    file: &str,
    placement: &PlacementFile,
    cluster: &Cluster,
) -> Result<Vec<ResolvedPod>, FormatError> {
    if !placement.placed {
        return Err(FormatError::input(
            file,
            format!(
                "the job was not placed{}",
                placement
                    .reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ),
        ));
    }
    if placement.pods.is_empty() {
        return Err(FormatError::input(file, "pods: expected at least one pod"));
    }
    let by_name: std::collections::HashMap<&str, NodeId> = cluster
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), NodeId::from_index(i)))
        .collect();
    let n = placement.pods.len();
    let mut seen_rank = vec![false; n];
    let mut next_gpu: std::collections::HashMap<NodeId, u32> = std::collections::HashMap::new();
    let mut used: BTreeSet<(NodeId, u32)> = BTreeSet::new();
    let mut out: Vec<ResolvedPod> = Vec::with_capacity(n);
    for (i, p) in placement.pods.iter().enumerate() {
        let at = |m: String| FormatError::input(file, format!("pods[{i}]: {m}"));
        let r = p.rank as usize;
        if r >= n || seen_rank[r] {
            return Err(at(format!(
                "rank {}: expected each rank 0..{} exactly once",
                p.rank,
                n - 1
            )));
        }
        seen_rank[r] = true;
        let node = *by_name
            .get(p.node.as_str())
            .ok_or_else(|| at(format!("node \"{}\" is not in the cluster", p.node)))?;
        let node_gpus = cluster.node(node).gpus;
        if !(p.gpus.is_finite() && p.gpus > 0.0 && p.gpus <= f64::from(node_gpus)) {
            return Err(at(format!(
                "gpus: expected a count in (0, {node_gpus}] for node \"{}\", got {}",
                p.node, p.gpus
            )));
        }
        let gpu_ids = if p.gpu_ids.is_empty() {
            let whole = p.gpus.ceil() as u32;
            let start = next_gpu.entry(node).or_insert(0);
            let ids: Vec<u32> = (*start..start.saturating_add(whole)).collect();
            *start = start.saturating_add(whole);
            ids
        } else {
            p.gpu_ids.clone()
        };
        for &g in &gpu_ids {
            if g >= node_gpus {
                return Err(at(format!(
                    "GPU {g} does not exist on node \"{}\" ({node_gpus} GPUs)",
                    p.node
                )));
            }
            if p.gpus >= 1.0 && !used.insert((node, g)) {
                return Err(at(format!(
                    "GPU {g} of node \"{}\" is given to two pods",
                    p.node
                )));
            }
        }
        out.push(ResolvedPod {
            rank: p.rank,
            node,
            gpus: p.gpus,
            gpu_ids,
        });
    }
    out.sort_by_key(|p| p.rank);
    Ok(out)
}

/// Read and check a placement file.
pub fn read(path: &std::path::Path, cluster: &Cluster) -> Result<Vec<ResolvedPod>, FormatError> {
    let file = path.display().to_string();
    let text = crate::input::read_text(path)?;
    let placement: PlacementFile = crate::input::parse_typed(&file, &text)?;
    resolve(&file, &placement, cluster)
}
