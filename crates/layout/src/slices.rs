//! Kueue multi-layer slices derived from a training layout: how many consecutive pods must share
//! a domain at each topology level so that every TP group stays inside one node and the
//! following dimensions of the rank order fall into the following tiers.
//!
//! Design note (2026-12-02). Ranks are numbered pod by pod and, inside a pod, GPU by GPU (the
//! placer's rank order, `sched::netaware` note point 3), so a *block* of the layout's rank grid
//! (the ranks that agree on every dimension after the first `k` of the order) is a run of
//! consecutive ranks, hence of consecutive pods. The blocks grow with `k`: with the order
//! `tp-cp-ep-dp-pp` they are one TP group, TP × CP, TP × CP × EP, TP × CP × EP × DP' (one
//! pipeline stage's DP replicas), the whole job. Kueue's multi-layer slices
//! (`podset-slice-size` + `podset-slice-required-topology`, nested up to three layers, KEP-5034
//! "TAS: multi-layer topology") say "every `size` consecutive pods lie in one domain of `level`",
//! which is exactly "this block lies in one domain". The rule:
//!
//! 1. The TP block (the first dimensions of the order up to and including TP) must fit in one
//!    NVLink domain and not straddle pods: a whole number of TP blocks per pod, or a whole
//!    number of pods per TP block. A TP block larger than an NVLink domain (a node on HGX
//!    hosts, 18 nodes of a GB200 NVL72 rack) is refused.
//! 2. Levels are walked from the host level up. Each level gets the largest block that is a
//!    whole number of pods, more than one pod, less than the whole job, and no larger than the
//!    most pods one domain of the level can hold. When the TP block spans pods, a level whose
//!    every domain lies inside one NVLink domain (the host level; a level of NVLink domains,
//!    such as a rack level on NVL72) must hold it; a TP block wider than a node therefore
//!    needs the cluster to have such a level above the host, else it is refused.
//! 3. A layer whose size a lower level already took is dropped (the inner domain lies inside
//!    the outer one), and when more layers remain than the scheduler nests, the innermost are
//!    kept (TP first). Where the whole job goes is the job's own `required`/`preferred` level,
//!    not a slice.
//!
//! Example: `tp=8,pp=4,dp=16` (512 GPUs, 64 pods of 8 GPUs) on `oci-h100-16k` (local blocks of
//! 32 hosts, network blocks of 256): blocks of 1, 16 and 64 pods; the host holds the TP block
//! (one pod), a local block the 16-pod pipeline stage, a network block nothing smaller than
//! the job beyond that: one layer, 16 pods per local block. On GB200 NVL72 (4-GPU nodes, 18 per
//! NVLink domain) with a level of NVLink domains (72 GPUs, 18 pods of 4) below local blocks of
//! 36 nodes: `tp=16,pp=4,dp=2` has blocks of 4, 8 and 32 pods; the NVLink level takes 8 (TP × DP,
//! holding the TP block), the local block nothing new: one layer, 8 pods per NVLink domain.

use serde::Serialize;

use crate::error::LayoutError;
use crate::layout::{Dim, Layout};

/// One topology level as slices see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelRoom {
    /// Index of the level (the caller's numbering, top first as Kueue orders levels).
    pub level: usize,
    /// Whether it is the host level (one domain per node).
    pub host: bool,
    /// Whether every domain of the level lies inside one NVLink domain (true of a host level;
    /// of a level whose domains are, or lie inside, multi-node NVLink domains).
    pub nvlink: bool,
    /// The most pods of the job one domain of the level can hold.
    pub pods: u64,
}

/// One derived slice layer: every `pods` consecutive pods lie in one domain of `level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Slice {
    /// Index of the level.
    pub level: usize,
    /// Pods per slice.
    pub pods: u32,
}

/// The slice layers for `layout` run as pods of `gpus_per_pod` GPUs on nodes of `gpus_per_node`
/// in NVLink domains of at most `gpus_per_nvlink_domain` GPUs (`gpus_per_node` where NVLink
/// stays inside the node), given the levels (any order; the host level among them when the cluster has one) and at most
/// `max_layers` layers; outermost (top level) first, as Kueue nests them. See the module note.
pub fn slice_layers(
    layout: &Layout,
    gpus_per_pod: u32,
    gpus_per_node: u32,
    gpus_per_nvlink_domain: u32,
    levels: &[LevelRoom],
    max_layers: usize,
) -> Result<Vec<Slice>, LayoutError> {
    let pod = u64::from(gpus_per_pod.max(1));
    let total = layout.gpus();
    if total % pod != 0 {
        return Err(LayoutError::new(
            "layout",
            format!("{total} GPUs are not a whole number of {pod}-GPU pods"),
        ));
    }
    let mut blocks: Vec<u64> = Vec::with_capacity(5);
    let mut b = 1u64;
    let mut tp_block = 1u64;
    for &d in &layout.order {
        b *= u64::from(layout.size(d));
        blocks.push(b);
        if d == Dim::Tp {
            tp_block = b;
        }
    }
    let node = u64::from(gpus_per_node);
    let nvlink = u64::from(gpus_per_nvlink_domain).max(node);
    if tp_block > nvlink {
        let (within, domain) = if nvlink > node {
            (
                "one NVLink domain",
                format!(
                    "an NVLink domain has {nvlink} GPUs ({} nodes of {gpus_per_node})",
                    nvlink / node.max(1)
                ),
            )
        } else {
            ("one node", format!("a node has {gpus_per_node} GPUs"))
        };
        return Err(LayoutError::new(
            "layout.tp",
            format!(
                "a TP group (with the dimensions before it in the order) is {tp_block} ranks, but {domain}; TP must stay inside {within}: use tp ≤ {nvlink} and move the rest to pp"
            ),
        ));
    }
    if (tp_block <= pod && pod % tp_block != 0) || (tp_block > pod && tp_block % pod != 0) {
        return Err(LayoutError::new(
            "layout.tp",
            format!(
                "a TP group of {tp_block} ranks would straddle {pod}-GPU pods; expected a whole number of TP groups per pod or of pods per TP group"
            ),
        ));
    }
    let mut order: Vec<&LevelRoom> = levels.iter().collect();
    // Host level first, then by room: the walk goes from the smallest domains up.
    order.sort_by_key(|l| (!l.host, l.pods, std::cmp::Reverse(l.level)));
    let mut taken: Vec<Slice> = Vec::new();
    let mut tp_held = tp_block <= pod;
    for l in order {
        let best = blocks
            .iter()
            .filter(|&&b| {
                b >= tp_block && b % pod == 0 && b > pod && b < total && b / pod <= l.pods
            })
            .max()
            .map(|&b| b / pod);
        if l.nvlink && best.is_some_and(|p| p * pod >= tp_block) {
            tp_held = true;
        }
        if let Some(p) = best {
            if !taken.iter().any(|s| u64::from(s.pods) == p) {
                taken.push(Slice {
                    level: l.level,
                    pods: u32::try_from(p).unwrap_or(u32::MAX),
                });
            }
        }
    }
    if !tp_held && tp_block > node {
        return Err(LayoutError::new(
            "layout.tp",
            format!(
                "a TP group (with the dimensions before it in the order) is {tp_block} ranks, more than a node's {gpus_per_node} GPUs, so its {} pods must share an NVLink domain, but no level of the cluster has its domains inside one NVLink domain and holds them: give the cluster a topology level whose domains are its NVLink domains, or use tp ≤ {gpus_per_node} and move the rest to pp",
                tp_block / pod
            ),
        ));
    }
    if !tp_held {
        return Err(LayoutError::new(
            "layout.tp",
            format!(
                "a TP group spans {} pods, which must share a node, but no host level holds them",
                tp_block / pod
            ),
        ));
    }
    taken.truncate(max_layers);
    taken.reverse();
    Ok(taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// oci-h100-16k's levels (island 0, network block 1, local block 2, host 3) in pods of
    /// `gpus_per_pod` GPUs.
    fn oci(gpus_per_pod: u64) -> Vec<LevelRoom> {
        let per_node = 8 / gpus_per_pod;
        [(0, 2048), (1, 256), (2, 32), (3, 1)]
            .into_iter()
            .map(|(level, nodes)| LevelRoom {
                level,
                host: level == 3,
                nvlink: level == 3,
                pods: nodes * per_node,
            })
            .collect()
    }

    fn derive(layout: &str, gpus_per_pod: u32) -> Result<Vec<(usize, u32)>, String> {
        let l = Layout::parse(layout).unwrap();
        slice_layers(&l, gpus_per_pod, 8, 8, &oci(u64::from(gpus_per_pod)), 3)
            .map(|v| v.into_iter().map(|s| (s.level, s.pods)).collect())
            .map_err(|e| e.to_string())
    }

    /// Hand-enumerated cases of the module note's rule.
    #[test]
    fn slice_layers_by_hand() {
        // 64 pods: TP in a pod, a pipeline stage's 16 DP replicas in a local block of 32 hosts.
        assert_eq!(derive("tp=8,pp=4,dp=16", 8), Ok(vec![(2, 16)]));
        // PP inside DP: blocks of 1, 4 (a pipeline) and 64 pods: a pipeline per local block.
        assert_eq!(
            derive("tp=8,pp=4,dp=16,order=tp-cp-ep-pp-dp", 8),
            Ok(vec![(2, 4)])
        );
        // A 2,048-pod job: stages of 128 pods fit a network block (256 hosts), not a local one
        // (32); below the stage, nothing but the TP pod, so the local block takes nothing.
        assert_eq!(derive("tp=8,pp=16,dp=128", 8), Ok(vec![(1, 128)]));
        // tp=4 with 4-GPU pods: TP is a pod; the next block (tp × dp, 4 pods) is the whole
        // job, left to the job's own level: no layer.
        assert_eq!(derive("tp=4,dp=4", 4), Ok(vec![]));
        // tp=4 on 8-GPU pods: two TP groups per pod; 8 pods of DP at a local block.
        assert_eq!(derive("tp=4,dp=16,pp=2", 8), Ok(vec![(2, 8)]));
        // 1-GPU pods, tp=4, dp=2, pp=2: the TP group is 4 pods on one host, and so is TP × DP
        // (8 GPUs): one host-level layer of 8 pods; the local block takes nothing smaller than
        // the job.
        assert_eq!(derive("tp=4,dp=2,pp=2", 1), Ok(vec![(3, 8)]));
        // 1-GPU pods, tp=8, dp=4, pp=2: host 8 (TP), local block 32 (a stage).
        assert_eq!(derive("tp=8,dp=4,pp=2", 1), Ok(vec![(2, 32), (3, 8)]));
    }

    #[test]
    fn tp_beyond_a_node_or_straddling_pods_is_refused() {
        let e = derive("tp=16,pp=4,dp=8", 8).unwrap_err();
        assert!(e.starts_with("layout.tp: a TP group"), "{e}");
        assert!(e.contains("use tp ≤ 8"), "{e}");
        // tp=2 in pods of 3 GPUs: groups straddle pods.
        let l = Layout::parse("tp=2,dp=3").unwrap();
        let e = slice_layers(&l, 3, 6, 6, &[], 3).unwrap_err().to_string();
        assert!(e.contains("straddle 3-GPU pods"), "{e}");
        // 1-GPU pods for tp=8 on a cluster without a host level: nothing keeps TP together.
        let l = Layout::parse("tp=8,dp=2").unwrap();
        let no_host = [LevelRoom {
            level: 0,
            host: false,
            nvlink: false,
            pods: 256,
        }];
        let e = slice_layers(&l, 1, 8, 8, &no_host, 3)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no host level"), "{e}");
    }

    /// The layer cap keeps the innermost layers.
    #[test]
    fn the_cap_keeps_the_innermost_layers() {
        let l = Layout::parse("tp=8,dp=4,pp=2").unwrap();
        let v = slice_layers(&l, 1, 8, 8, &oci(1), 1).unwrap();
        assert_eq!(v, vec![Slice { level: 3, pods: 8 }]);
    }

    /// oci-gb200-nvl72-4k's levels (island 0, network block 1, local block 2 of 36 nodes, host)
    /// in pods of `gpus_per_pod` GPUs, with a level of NVLink domains (18 nodes = 72 GPUs)
    /// between the local block and the host when `nvlink_level` (it is then level 3, the host 4).
    fn gb200(gpus_per_pod: u64, nvlink_level: bool) -> Vec<LevelRoom> {
        let per_node = 4 / gpus_per_pod;
        let mut levels = vec![(0, 1152, false), (1, 288, false), (2, 36, false)];
        if nvlink_level {
            levels.push((3, 18, true));
        }
        levels.push((levels.len(), 1, true));
        let host = levels.len() - 1;
        levels
            .into_iter()
            .map(|(level, nodes, nvlink)| LevelRoom {
                level,
                host: level == host,
                nvlink,
                pods: nodes * per_node,
            })
            .collect()
    }

    fn derive_gb200(
        layout: &str,
        gpus_per_pod: u32,
        nvlink_level: bool,
    ) -> Result<Vec<(usize, u32)>, String> {
        let l = Layout::parse(layout).unwrap();
        let levels = gb200(u64::from(gpus_per_pod), nvlink_level);
        slice_layers(&l, gpus_per_pod, 4, 72, &levels, 3)
            .map(|v| v.into_iter().map(|s| (s.level, s.pods)).collect())
            .map_err(|e| e.to_string())
    }

    /// GB200 NVL72 (4-GPU nodes, 18 per NVLink domain) with a level of NVLink domains: the TP
    /// block may span nodes of one domain, and that level holds it. Hand-enumerated (1 pod per
    /// node unless said; rooms 18 pods per NVLink domain, 36 per local block).
    #[test]
    fn multi_node_tp_lies_in_one_nvlink_domain() {
        // tp=8: TP 2 pods, TP × DP 32 (a stage), the job 64. The NVLink domain holds a TP pair,
        // a local block the stage.
        assert_eq!(
            derive_gb200("tp=8,dp=16,pp=2", 4, true),
            Ok(vec![(2, 32), (3, 2)])
        );
        // tp=16: TP 4 pods, TP × DP 8, the job 32: 8 pods (two TP groups) per NVLink domain;
        // nothing new fits a local block below the whole job.
        assert_eq!(derive_gb200("tp=16,pp=4,dp=2", 4, true), Ok(vec![(3, 8)]));
        // tp=16, dp=8: TP 4 pods per NVLink domain, a 32-pod stage per local block.
        assert_eq!(
            derive_gb200("tp=16,dp=8,pp=2", 4, true),
            Ok(vec![(2, 32), (3, 4)])
        );
        // tp=72 fills an NVLink domain: 18 pods; TP × DP (36 pods) is the whole job.
        assert_eq!(derive_gb200("tp=72,dp=2", 4, true), Ok(vec![(3, 18)]));
        // tp=8 in 2-GPU pods: TP 4 pods over 2 nodes; TP × DP 8 pods (of 36 per NVLink domain).
        assert_eq!(derive_gb200("tp=8,dp=2,pp=2", 2, true), Ok(vec![(3, 8)]));
        // TP inside a node needs no NVLink level: tp=4, TP × DP 8 pods per local block.
        assert_eq!(derive_gb200("tp=4,dp=8,pp=2", 4, false), Ok(vec![(2, 8)]));
    }

    #[test]
    fn multi_node_tp_without_an_nvlink_level_or_beyond_a_domain_is_refused() {
        // 144 ranks are two NVLink domains.
        let e = derive_gb200("tp=144,dp=2", 4, true).unwrap_err();
        assert!(e.starts_with("layout.tp: a TP group"), "{e}");
        assert!(
            e.contains("an NVLink domain has 72 GPUs (18 nodes of 4)"),
            "{e}"
        );
        assert!(e.contains("use tp ≤ 72"), "{e}");
        // The preset's own levels: local blocks (36 nodes) hold two NVLink domains, so no
        // level keeps a 4-node TP group in one.
        let e = derive_gb200("tp=16,pp=4,dp=2", 4, false).unwrap_err();
        assert!(e.starts_with("layout.tp: a TP group"), "{e}");
        assert!(
            e.contains("give the cluster a topology level whose domains are its NVLink domains"),
            "{e}"
        );
        assert!(e.contains("use tp ≤ 4"), "{e}");
    }
}
