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
    /// GPU memory the pod asked for on each of its GPUs, MiB, when it asked by memory (KAI's
    /// `gpu-memory`): `gpus` is then that memory's share of the GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_memory_mib: Option<u32>,
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
    /// `place --network-aware`: what the fabric model predicts for the chosen placement, the
    /// candidates it beat, and NCCL settings for `launch --network-aware`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkChoice>,
}

/// Why `place --network-aware` chose its placement.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkChoice {
    /// Predicted bus bandwidth of the chosen placement with the running jobs' traffic, GB/s
    /// (Ring AllReduce; null on one node, where the fabric is not used).
    pub busbw_gb_s: Option<f64>,
    /// Its bus bandwidth alone with perfect load balance, GB/s (null on one node).
    pub ideal_busbw_gb_s: Option<f64>,
    /// Its score: GPUs of useful work gained minus those taken from running jobs.
    pub score: f64,
    /// Candidates the label rules allowed and the model priced (the chosen one included).
    pub candidates: usize,
    /// The best other candidates, highest score first (at most 3).
    #[serde(default)]
    pub runners_up: Vec<RunnerUp>,
    /// Chosen score minus the best runner-up's (null without runners-up).
    pub margin: Option<f64>,
    /// NCCL settings the model predicts help this placement.
    #[serde(default)]
    pub nccl_advice: Vec<NcclAdvice>,
    /// The hottest link ports the job crosses under the label rules' own placement
    /// (`label-only`, when the choice differs) and under the chosen one (`chosen`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hot_links: Vec<HotLink>,
    /// A job placed with a training layout (`--model`, `--layout`): candidates scored by its
    /// step time in each rank order instead of a Ring AllReduce (absent without a layout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutChoice>,
}

/// The step of a layout job on the chosen placement and on the label rules' own.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LayoutChoice {
    /// The layout as given (`tp=8,pp=4,dp=16`).
    pub layout: String,
    /// The slice layers it put on the job, outermost first (`16 pods per <level>`, or `none`).
    pub slices: String,
    /// The rank order chosen (`tp-cp-ep-dp-pp`): Megatron-Core's `order`.
    pub order: String,
    /// The step on the chosen placement in the chosen order, s.
    pub step_s: f64,
    /// Its tokens per second (the score).
    pub tokens_per_s: f64,
    /// The step on the label rules' own placement in the layout's own order, s.
    pub label_only_step_s: f64,
    /// Every order tried on the chosen placement, with its step, s.
    pub orders: Vec<OrderStep>,
}

/// One rank order's step time.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OrderStep {
    /// The order.
    pub order: String,
    /// Its step, s.
    pub step_s: f64,
}

/// A link port the job crosses, as loaded with the running jobs at their achieved pace.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HotLink {
    /// Which placement: `label-only` or `chosen`.
    pub placement: String,
    /// The sending end (`host/railN`, a switch, with `:pN` for port N of a multi-port link).
    pub from: String,
    /// The receiving end.
    pub to: String,
    /// Tier of the link's upper switch (0: NIC to leaf).
    pub tier: u8,
    /// Load over capacity, 0..=1.
    pub utilization: f64,
    /// The jobs with traffic on it, the new one as `(this job)`.
    pub jobs: Vec<String>,
}

/// A candidate placement that lost.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerUp {
    /// The domain it was restricted to (`LABEL=VALUE`), or `label-only` for the placement the
    /// label rules alone choose.
    pub domain: String,
    /// Its predicted bus bandwidth, GB/s (null on one node).
    pub busbw_gb_s: Option<f64>,
    /// Its score.
    pub score: f64,
}

/// One NCCL environment variable to set, and why.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NcclAdvice {
    /// The variable, e.g. `NCCL_IB_QPS_PER_CONNECTION`.
    pub name: String,
    /// Its value.
    pub value: String,
    /// Why, with the model's numbers and the documentation it rests on.
    pub reason: String,
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
