//! `--model`/`--layout` in `railyard launch`: the layout checked against the placement's ranks
//! (world size, a rank order Megatron-LM can be told, every TP group inside one node) and the
//! Megatron-LM arguments that run it, with the highest tier each communicator kind crosses.
//!
//! Global ranks are torchrun's: pod by pod in rank order, `node_rank × nproc_per_node + local
//! rank` (a prefix sum of the pods' GPUs), local rank `i` on the pod's `i`-th GPU, as
//! `fabric step --placement` numbers them. The groups are `layout::groups`'.
//!
//! Megatron-LM's side, read at github.com/NVIDIA/Megatron-LM commit
//! [`MEGATRON_COMMIT`] (2026-08-22):
//! - `--tensor-model-parallel-size`, `--pipeline-model-parallel-size`, `--context-parallel-size`,
//!   `--expert-model-parallel-size`: fields of `ModelParallelConfig`
//!   (`megatron/core/model_parallel_config.py`) that `megatron/training/arguments.py` turns into
//!   flags through `ArgumentGroupFactory(TransformerConfig)`
//!   (`megatron/training/argument_utils.py`); the data-parallel size is what the world size
//!   leaves, so it has no flag.
//! - `--num-virtual-stages-per-pipeline-rank` (`arguments.py`, `_add_distributed_args`): virtual
//!   stages per pipeline rank (`virtual_pipeline_model_parallel_size` itself has no flag).
//! - The rank order: `initialize_model_parallel(order=…)` (`megatron/core/parallel_state.py`,
//!   `RankGenerator`) takes any order, but the training script passes only `tp-cp-ep-dp-pp`, or
//!   `tp-cp-ep-pp-dp` with `--use-tp-pp-dp-mapping` (`megatron/training/initialize.py`; the flag
//!   is `DistributedInitConfig.use_tp_pp_dp_mapping`, `megatron/training/config/common_config.py`).
//! - Two rank grids in that order: the dense one without EP (`RankGenerator(ep=1, dp=DP)`) for
//!   TP, CP, PP and DP × CP, and the expert one without CP (`RankGenerator(cp=1, ep=EP,
//!   dp=DP·CP/EP)`) for EP and expert DP, as `layout::groups` draws them. A layout is launched
//!   only if one of the two orders gives, in those grids, the very groups railyard priced.

use fabric::Rank;
use formats::placement::ResolvedPod;
use formats::FormatError;
use layout::layout::{order_label, MEGATRON_ORDER, PP_INNER_ORDER};
use layout::{groups, groups_highest_tier, Dim, Kind, Layout, Training};
use topology::{Cluster, NodeId};

/// The Megatron-LM commit the flag names and rank orders were read at.
pub const MEGATRON_COMMIT: &str = "d98e8a64ddf34856e74b24714e3bedb2f5a39553";

/// The flag that selects Megatron-LM's only other rank order, `tp-cp-ep-pp-dp`.
const PP_INNER_FLAG: &str = "--use-tp-pp-dp-mapping";

/// A layout checked against a placement, as Megatron-LM is told it.
#[derive(Clone, Debug, PartialEq)]
pub struct MegatronLayout {
    /// The model preset.
    pub model: String,
    /// The layout (`tp=8,pp=2`).
    pub layout: String,
    /// Megatron-LM's parallelism arguments, in order.
    pub args: Vec<String>,
    /// Per communicator kind that moves data, in `Kind::ALL` order: its name and the highest
    /// tier any of its groups crosses (`nvlink`, `tier 1 (rack)`).
    pub tiers: Vec<(String, String)>,
}

/// Check `training`'s layout against the placed `pods` (rank order, whole GPUs) and say how
/// Megatron-LM runs it. `placement_file` names the placement in errors; `--layout` names the
/// layout.
pub fn megatron_layout(
    cluster: &Cluster,
    pods: &[ResolvedPod],
    training: &Training,
    placement_file: &str,
) -> Result<MegatronLayout, FormatError> {
    let l = &training.layout;
    let field = format!("--layout {}", l.label());
    let ranks = torchrun_ranks(pods);
    let n_gpus = ranks.len() as u64;
    if l.gpus() != n_gpus {
        return Err(FormatError::input(
            &field,
            format!(
                "tp × pp × dp × cp = {} × {} × {} × {} = {} GPUs, but the placement {placement_file} \
                 has {n_gpus} ({} pods); change dp (or the placement) so that they match",
                l.tp,
                l.pp,
                l.dp,
                l.cp,
                l.gpus(),
                pods.len()
            ),
        ));
    }
    training
        .validate(n_gpus)
        .map_err(|e| FormatError::input(&e.field, &e.message))?;
    let traffic = layout::traffic(training);
    let kinds: Vec<Kind> = Kind::ALL
        .into_iter()
        .filter(|k| traffic.iter().any(|x| x.kind == *k))
        .collect();
    let order_flag = megatron_order(l, &kinds).map_err(|m| FormatError::input(&field, m))?;
    check_tp_in_nodes(cluster, pods, l, &ranks).map_err(|m| FormatError::input(&field, m))?;
    let mut args: Vec<String> = [
        ("--tensor-model-parallel-size", l.tp),
        ("--pipeline-model-parallel-size", l.pp),
        ("--context-parallel-size", l.cp),
        ("--expert-model-parallel-size", l.ep),
    ]
    .iter()
    .flat_map(|(flag, v)| [(*flag).to_owned(), v.to_string()])
    .collect();
    if l.vp > 1 {
        args.push("--num-virtual-stages-per-pipeline-rank".to_owned());
        args.push(l.vp.to_string());
    }
    args.extend(order_flag.map(str::to_owned));
    let tiers = kinds
        .iter()
        .map(|&k| {
            let tier = groups_highest_tier(cluster, &ranks, &groups(l, k));
            (k.name().to_owned(), tier_text(cluster, tier))
        })
        .collect();
    Ok(MegatronLayout {
        model: training.model.name.clone(),
        layout: l.label(),
        args,
        tiers,
    })
}

/// Rank `r`'s GPU: pods in rank order, each pod's GPUs in order (its first `gpus` indices).
fn torchrun_ranks(pods: &[ResolvedPod]) -> Vec<Rank> {
    pods.iter()
        .flat_map(|p| {
            let nproc = p.gpus as u32;
            (0..nproc).map(move |local| Rank {
                node: p.node,
                gpu: p.gpu_ids.get(local as usize).copied().unwrap_or(local),
            })
        })
        .collect()
}

/// Megatron-LM's two rank grids when told `order`: the dense one (no EP; TP, CP, PP, DP × CP)
/// and the expert one (no CP, data parallel DP·CP/EP; EP, expert DP).
fn megatron_grids(l: &Layout, order: [Dim; 5]) -> (Layout, Layout) {
    let dense = Layout {
        ep: 1,
        order,
        ..l.clone()
    };
    let expert = Layout {
        cp: 1,
        dp: l.dp.saturating_mul(l.cp),
        order,
        ..l.clone()
    };
    (dense, expert)
}

/// The groups Megatron-LM builds for `kind` when told `order`.
fn megatron_groups(l: &Layout, order: [Dim; 5], kind: Kind) -> Vec<Vec<u32>> {
    let (dense, expert) = megatron_grids(l, order);
    match kind {
        Kind::Ep | Kind::ExpertDp => groups(&expert, kind),
        Kind::Tp | Kind::Cp | Kind::Pp | Kind::Dp => groups(&dense, kind),
    }
}

/// Why Megatron-LM told one order does not run a layout.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Miss {
    /// It builds other groups of this kind.
    Groups(Kind),
    /// Its dense and expert grids would have different PP groups, which
    /// `initialize_model_parallel` refuses (it asserts they are the same).
    PpGrids,
}

/// Why Megatron-LM told `order` would not run `l` (the kinds `kinds` compared), if it would not.
/// Megatron-LM's own refusal comes first.
fn miss(l: &Layout, order: [Dim; 5], kinds: &[Kind]) -> Option<Miss> {
    let (dense, expert) = megatron_grids(l, order);
    if groups(&dense, Kind::Pp) != groups(&expert, Kind::Pp) {
        return Some(Miss::PpGrids);
    }
    kinds
        .iter()
        .copied()
        .find(|&k| groups(l, k) != megatron_groups(l, order, k))
        .map(Miss::Groups)
}

/// The rank-order flag (none for Megatron's default) of the first order Megatron-LM can be told
/// that builds `l`'s groups of every kind in `kinds`; else why not and what to change.
fn megatron_order(l: &Layout, kinds: &[Kind]) -> Result<Option<&'static str>, String> {
    let candidates = [
        (MEGATRON_ORDER, None),
        (PP_INNER_ORDER, Some(PP_INNER_FLAG)),
    ];
    let mut reported: Option<([Dim; 5], Miss)> = None;
    for (order, flag) in candidates {
        match miss(l, order, kinds) {
            None => return Ok(flag),
            // Say why the order the layout asked for fails, else why the default does.
            Some(m) if order == l.order || reported.is_none() => reported = Some((order, m)),
            Some(_) => {}
        }
    }
    let (order, m) = reported.expect("two candidates, each missed");
    let (why, change) = match m {
        Miss::Groups(k) => (
            format!("builds other {} groups than this layout's", k.name()),
            format!(
                "use order={} or order={}",
                order_label(&MEGATRON_ORDER),
                order_label(&PP_INNER_ORDER)
            ),
        ),
        Miss::PpGrids => (
            "needs cp = ep when pp > 1 (its dense and expert grids must share the PP groups)"
                .to_owned(),
            format!("use order={}", order_label(&MEGATRON_ORDER)),
        ),
    };
    Err(format!(
        "Megatron-LM can be told only the rank orders {} (its default) and {} ({PP_INNER_FLAG}); \
         in {} it {why}; {change}",
        order_label(&MEGATRON_ORDER),
        order_label(&PP_INNER_ORDER),
        order_label(&order),
    ))
}

/// Every TP group on one node, else which group spans which nodes and what to change.
fn check_tp_in_nodes(
    cluster: &Cluster,
    pods: &[ResolvedPod],
    l: &Layout,
    ranks: &[Rank],
) -> Result<(), String> {
    for (i, g) in groups(l, Kind::Tp).iter().enumerate() {
        let mut nodes: Vec<NodeId> = Vec::new();
        for &r in g {
            let node = ranks[r as usize].node;
            if !nodes.contains(&node) {
                nodes.push(node);
            }
        }
        if nodes.len() < 2 {
            continue;
        }
        let names: Vec<String> = nodes
            .iter()
            .take(4)
            .map(|&n| format!("\"{}\"", cluster.node(n).name))
            .collect();
        let more = if nodes.len() > 4 {
            format!(" and {} more", nodes.len() - 4)
        } else {
            String::new()
        };
        let mut sizes: Vec<u32> = pods.iter().map(|p| p.gpus as u32).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let most = sizes.last().copied().unwrap_or(0);
        let hint = if l.tp > most {
            format!("use tp ≤ {most} (the most GPUs a pod has) and more dp or pp")
        } else {
            let sizes: Vec<String> = sizes.iter().map(u32::to_string).collect();
            format!(
                "give every pod a multiple of tp = {} GPUs (pods have {}), or use a tp that divides \
                 each pod's GPUs",
                l.tp,
                sizes.join(", ")
            )
        };
        let last = names.len() - 1;
        let names = if more.is_empty() {
            format!("{} and {}", names[..last].join(", "), names[last])
        } else {
            format!("{}{more}", names.join(", "))
        };
        return Err(format!(
            "TP group {i} ({}) spans nodes {names}; every TP group must sit inside one node: {hint}",
            ranks_text(g),
        ));
    }
    Ok(())
}

/// `ranks 8..15` for consecutive ranks, else the first four and a count.
fn ranks_text(g: &[u32]) -> String {
    let consecutive = g.windows(2).all(|w| w[1] == w[0] + 1);
    match (g.first(), g.last()) {
        (Some(a), Some(b)) if consecutive => format!("ranks {a}..{b}"),
        _ => {
            let shown: Vec<String> = g.iter().take(4).map(u32::to_string).collect();
            let more = if g.len() > 4 { ", …" } else { "" };
            format!("ranks {}{more}", shown.join(", "))
        }
    }
}

/// `nvlink` inside one NVLink domain, else `tier T (LEVEL)` as `place` names it.
fn tier_text(cluster: &Cluster, tier: Option<u8>) -> String {
    match tier {
        None => "nvlink".to_owned(),
        Some(t) => {
            let serves = cluster
                .tiers
                .get(usize::from(t))
                .and_then(|x| x.level)
                .map_or("whole cluster".to_owned(), |l| {
                    cluster.levels[l].label.clone()
                });
            format!("tier {t} ({serves})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds() -> Vec<Kind> {
        Kind::ALL.to_vec()
    }

    /// By hand: with pp = 1 or dp = 1 both orders are the same grid, so the default (no flag)
    /// is taken; the pipeline inside data parallel needs the flag; an order with pp before tp
    /// has TP groups Megatron-LM never builds.
    #[test]
    fn orders_megatron_can_be_told() {
        let l = Layout::parse("tp=2,dp=4,order=tp-cp-ep-pp-dp").unwrap();
        assert_eq!(megatron_order(&l, &kinds()), Ok(None));
        let l = Layout::parse("tp=2,pp=2,dp=2,order=tp-cp-ep-pp-dp").unwrap();
        assert_eq!(megatron_order(&l, &kinds()), Ok(Some(PP_INNER_FLAG)));
        let l = Layout::parse("tp=2,pp=2,dp=2,order=pp-tp-cp-ep-dp").unwrap();
        let e = megatron_order(&l, &kinds()).unwrap_err();
        assert!(
            e.starts_with("Megatron-LM can be told only the rank orders"),
            "{e}"
        );
        assert!(
            e.contains("in tp-cp-ep-dp-pp it builds other tp groups"),
            "{e}"
        );
    }

    /// CP and EP both above 1, by hand (tp = 2, cp = 2, dp = 4, ep = 2): railyard's EP groups
    /// are Megatron-LM's expert grid's (no CP, ranks 0 and 2), its expert DP too (ranks 0, 4, 8,
    /// 12), so the default order runs it without a flag.
    #[test]
    fn context_and_expert_parallel_together_run_in_the_default_order() {
        let l = Layout::parse("tp=2,cp=2,dp=4,ep=2").unwrap();
        assert_eq!(groups(&l, Kind::Ep)[0], vec![0, 2]);
        assert_eq!(groups(&l, Kind::ExpertDp)[0], vec![0, 4, 8, 12]);
        for kind in kinds() {
            assert_eq!(
                groups(&l, kind),
                megatron_groups(&l, MEGATRON_ORDER, kind),
                "{kind:?}"
            );
        }
        assert_eq!(megatron_order(&l, &kinds()), Ok(None));
    }

    /// The pipeline inside data parallel with cp = 2, ep = 1, by hand (tp = 2, pp = 2, dp = 2):
    /// the dense grid's PP groups step over TP × CP (ranks 0 and 4), the expert grid's over TP
    /// only (ranks 0 and 2); `initialize_model_parallel` asserts they are the same.
    #[test]
    fn pp_inner_needs_cp_equal_to_ep() {
        let l = Layout::parse("tp=2,cp=2,pp=2,dp=2,order=tp-cp-ep-pp-dp").unwrap();
        let (dense, expert) = megatron_grids(&l, PP_INNER_ORDER);
        assert_eq!(groups(&dense, Kind::Pp)[0], vec![0, 4]);
        assert_eq!(groups(&expert, Kind::Pp)[0], vec![0, 2]);
        let e = megatron_order(&l, &[Kind::Tp, Kind::Cp, Kind::Pp, Kind::Dp]).unwrap_err();
        assert!(
            e.contains("in tp-cp-ep-pp-dp it needs cp = ep when pp > 1"),
            "{e}"
        );
    }

    #[test]
    fn rank_lists() {
        assert_eq!(ranks_text(&[8, 9, 10, 11]), "ranks 8..11");
        assert_eq!(ranks_text(&[0, 2, 4, 6, 8]), "ranks 0, 2, 4, 6, …");
    }
}
