//! Communicators as rank groups: which ranks talk in each dimension of the layout, by
//! Megatron-Core's rank-order rule.
//!
//! Ranks form a grid whose dimensions are taken in the layout's order, fastest-varying first
//! (`RankGenerator` in `megatron/core/parallel_state.py`): with order `tp-cp-ep-dp-pp`, rank
//! `r = tp + TP·(cp + CP·(ep + EP·(dp + DP'·pp)))`. A communicator over a set of dimensions
//! joins the ranks that agree on every other coordinate; its members come in rank order, and
//! the groups in order of their first rank.
//!
//! The expert kinds (EP, expert DP) are drawn from a second grid, as Megatron-Core draws them
//! from its "expert" `RankGenerator` (`initialize_model_parallel`, NVIDIA/Megatron-LM commit
//! d98e8a6): the same order with no CP dimension, expert TP = TP, EP, and an expert data
//! parallel of what is left, DP·CP/EP. With `tp-cp-ep-dp-pp`, `r = tp + TP·(ep + EP·(edp +
//! EDP·pp))`. With CP = 1 the two grids are one; with CP > 1 and EP > 1 an EP group is TP
//! apart, not TP·CP apart (its members are other CP ranks as well). With EP = 1 railyard keeps
//! the one grid: the expert weights are reduced over the DP × CP groups, which are Megatron's
//! expert-DP groups wherever it runs the layout in one of the two orders its training script
//! can be told (`tp-cp-ep-pp-dp` with PP > 1 needs CP = EP there).

use serde::Serialize;

use crate::layout::{Dim, Layout};

/// What a communicator is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Tensor parallel: activations every layer.
    Tp,
    /// Context parallel: keys and values every layer.
    Cp,
    /// Expert parallel: tokens to and from experts every MoE layer.
    Ep,
    /// Pipeline: activations and gradients between neighbouring stages.
    Pp,
    /// Data parallel over the dense weights (with CP: DP × CP, as Megatron reduces them).
    Dp,
    /// Data parallel over the expert weights (DP·CP / EP, in the expert grid).
    ExpertDp,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 6] = [
        Kind::Tp,
        Kind::Cp,
        Kind::Ep,
        Kind::Pp,
        Kind::Dp,
        Kind::ExpertDp,
    ];

    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tp => "tp",
            Kind::Cp => "cp",
            Kind::Ep => "ep",
            Kind::Pp => "pp",
            Kind::Dp => "dp",
            Kind::ExpertDp => "expert-dp",
        }
    }

    /// The grid dimensions the communicator spans.
    pub fn dims(self) -> &'static [Dim] {
        match self {
            Kind::Tp => &[Dim::Tp],
            Kind::Cp => &[Dim::Cp],
            Kind::Ep => &[Dim::Ep],
            Kind::Pp => &[Dim::Pp],
            Kind::Dp => &[Dim::Cp, Dim::Ep, Dim::Dp],
            Kind::ExpertDp => &[Dim::Cp, Dim::Dp],
        }
    }
}

/// The groups of one kind: every rank in exactly one, each in rank order (PP groups are then in
/// stage order), groups in order of their first rank. One group of one rank when the
/// dimensions have size 1. With EP > 1, EP and expert-DP groups come from the expert grid
/// (module note); with EP = 1 the expert weights are reduced over the DP × CP groups.
pub fn groups(layout: &Layout, kind: Kind) -> Vec<Vec<u32>> {
    let sizes: Vec<u64> = layout
        .order
        .iter()
        .map(|&d| match kind {
            Kind::Ep | Kind::ExpertDp if layout.ep > 1 => expert_grid_size(layout, d),
            _ => u64::from(layout.size(d)),
        })
        .collect();
    let inside: Vec<bool> = layout
        .order
        .iter()
        .map(|d| kind.dims().contains(d))
        .collect();
    let n: u64 = sizes.iter().product();
    let members: u64 = sizes
        .iter()
        .zip(&inside)
        .filter(|(_, &i)| i)
        .map(|(s, _)| *s)
        .product();
    let mut out: Vec<Vec<u32>> = (0..n / members)
        .map(|_| Vec::with_capacity(members as usize))
        .collect();
    for r in 0..n {
        // The group index is the mixed-radix number of the coordinates outside the kind.
        let (mut rest, mut index, mut radix) = (r, 0u64, 1u64);
        for (s, &i) in sizes.iter().zip(&inside) {
            let c = rest % s;
            rest /= s;
            if !i {
                index += c * radix;
                radix *= s;
            }
        }
        out[index as usize].push(r as u32);
    }
    out
}

/// A dimension's size in Megatron-Core's expert grid: expert TP = TP, no CP, EP, expert DP =
/// DP·CP/EP (`expert_data_parallel_size`: the world size over expert TP × EP × PP), PP.
fn expert_grid_size(layout: &Layout, d: Dim) -> u64 {
    match d {
        Dim::Tp => u64::from(layout.tp),
        Dim::Cp => 1,
        Dim::Ep => u64::from(layout.ep),
        Dim::Dp => u64::from(layout.dp) * u64::from(layout.cp) / u64::from(layout.ep.max(1)),
        Dim::Pp => u64::from(layout.pp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{parse_order, Dim, Layout};

    fn layout(tp: u32, pp: u32, dp: u32, cp: u32, ep: u32, order: &str) -> Layout {
        Layout {
            tp,
            pp,
            dp,
            cp,
            ep,
            vp: 1,
            order: parse_order(order).unwrap(),
        }
    }

    /// The worked example in Megatron-LM's `initialize_model_parallel` docstring
    /// (`megatron/core/parallel_state.py`): 16 GPUs, TP = 2, PP = 4, hence DP = 2, enumerated
    /// there by hand.
    #[test]
    fn megatron_docstring_example_16_gpus_tp2_pp4() {
        let l = layout(2, 4, 2, 1, 1, "tp-cp-ep-dp-pp");
        assert_eq!(
            groups(&l, Kind::Tp),
            vec![
                vec![0, 1],
                vec![2, 3],
                vec![4, 5],
                vec![6, 7],
                vec![8, 9],
                vec![10, 11],
                vec![12, 13],
                vec![14, 15]
            ]
        );
        assert_eq!(
            groups(&l, Kind::Dp),
            vec![
                vec![0, 2],
                vec![1, 3],
                vec![4, 6],
                vec![5, 7],
                vec![8, 10],
                vec![9, 11],
                vec![12, 14],
                vec![13, 15]
            ]
        );
        assert_eq!(
            groups(&l, Kind::Pp),
            vec![
                vec![0, 4, 8, 12],
                vec![1, 5, 9, 13],
                vec![2, 6, 10, 14],
                vec![3, 7, 11, 15]
            ]
        );
    }

    /// The same 16 GPUs with the pipeline inside data parallel (`tp-cp-ep-pp-dp`), enumerated
    /// by hand: stages are neighbours, DP replicas 8 ranks apart.
    #[test]
    fn pp_inner_order_puts_stages_next_to_each_other() {
        let l = layout(2, 4, 2, 1, 1, "tp-cp-ep-pp-dp");
        assert_eq!(
            groups(&l, Kind::Pp),
            vec![
                vec![0, 2, 4, 6],
                vec![1, 3, 5, 7],
                vec![8, 10, 12, 14],
                vec![9, 11, 13, 15]
            ]
        );
        assert_eq!(groups(&l, Kind::Dp)[0], vec![0, 8]);
        assert_eq!(groups(&l, Kind::Tp)[7], vec![14, 15]);
    }

    /// 16 GPUs, TP = 2, CP = 2, DP = 4 with EP = 2 (Megatron-Core's `tp-cp-ep-dp-pp`), by hand.
    /// Dense grid, rank = tp + 2·cp + 4·ep + 8·dp': CP pairs ranks 2 apart, the dense-gradient
    /// group (cp, ep, dp') joins the 8 ranks with the same tp coordinate. Expert grid
    /// (`megatron/core/parallel_state.py` at NVIDIA/Megatron-LM d98e8a6,
    /// `initialize_model_parallel`: `RankGenerator(tp, ep, dp = world / (tp·ep·pp), cp = 1)`),
    /// rank = tp + 2·ep + 4·edp with EDP = 4: EP pairs ranks 2 apart, expert DP joins the 4
    /// with the same tp and ep, 4 apart.
    #[test]
    fn context_and_expert_groups_by_hand() {
        let l = layout(2, 1, 4, 2, 2, "tp-cp-ep-dp-pp");
        assert_eq!(groups(&l, Kind::Cp)[0], vec![0, 2]);
        assert_eq!(groups(&l, Kind::Cp)[1], vec![1, 3]);
        assert_eq!(
            groups(&l, Kind::Dp),
            vec![
                vec![0, 2, 4, 6, 8, 10, 12, 14],
                vec![1, 3, 5, 7, 9, 11, 13, 15]
            ]
        );
        check_expert(
            &l,
            &[
                &[0, 2],
                &[1, 3],
                &[4, 6],
                &[5, 7],
                &[8, 10],
                &[9, 11],
                &[12, 14],
                &[13, 15],
            ],
            &[
                &[0, 4, 8, 12],
                &[1, 5, 9, 13],
                &[2, 6, 10, 14],
                &[3, 7, 11, 15],
            ],
        );
    }

    /// Megatron-Core's expert grid with CP > 1 and EP > 1, written out by hand from its rule
    /// (`megatron/core/parallel_state.py` at NVIDIA/Megatron-LM d98e8a6: the expert
    /// `RankGenerator` takes the same order with cp = 1, expert TP = TP and expert DP = world
    /// / (TP·EP·PP)): per layout, its EP groups and its expert-DP groups.
    #[test]
    fn expert_grid_with_context_parallel_by_hand() {
        // 16 GPUs, tp = 2, cp = 2, ep = 2, dp = 2, pp = 2: EDP = 16 / (2·2·2) = 2,
        // rank = tp + 2·ep + 4·edp + 8·pp. (The dense grid's PP groups, 8 apart, are the
        // expert grid's, as Megatron asserts.)
        check_expert(
            &layout(2, 2, 2, 2, 2, "tp-cp-ep-dp-pp"),
            &[
                &[0, 2],
                &[1, 3],
                &[4, 6],
                &[5, 7],
                &[8, 10],
                &[9, 11],
                &[12, 14],
                &[13, 15],
            ],
            &[
                &[0, 4],
                &[1, 5],
                &[2, 6],
                &[3, 7],
                &[8, 12],
                &[9, 13],
                &[10, 14],
                &[11, 15],
            ],
        );
        // The same with the pipeline inside data parallel (cp = ep, as Megatron needs when
        // pp > 1): rank = tp + 2·ep + 4·pp + 8·edp.
        check_expert(
            &layout(2, 2, 2, 2, 2, "tp-cp-ep-pp-dp"),
            &[
                &[0, 2],
                &[1, 3],
                &[4, 6],
                &[5, 7],
                &[8, 10],
                &[9, 11],
                &[12, 14],
                &[13, 15],
            ],
            &[
                &[0, 8],
                &[1, 9],
                &[2, 10],
                &[3, 11],
                &[4, 12],
                &[5, 13],
                &[6, 14],
                &[7, 15],
            ],
        );
        // 8 GPUs in an order Megatron's training script cannot be told, cp-ep-tp-dp-pp,
        // tp = cp = ep = 2, dp = 2: EDP = 2, rank = ep + 2·tp + 4·edp.
        check_expert(
            &layout(2, 1, 2, 2, 2, "cp-ep-tp-dp-pp"),
            &[&[0, 1], &[2, 3], &[4, 5], &[6, 7]],
            &[&[0, 4], &[1, 5], &[2, 6], &[3, 7]],
        );
        // 6 GPUs, tp = 1, cp = 3, ep = 2, dp = 2: EDP = 3, rank = ep + 2·edp.
        check_expert(
            &layout(1, 1, 2, 3, 2, "tp-cp-ep-dp-pp"),
            &[&[0, 1], &[2, 3], &[4, 5]],
            &[&[0, 2, 4], &[1, 3, 5]],
        );
    }

    /// `l`'s EP and expert-DP groups are `ep` and `expert_dp`.
    fn check_expert(l: &Layout, ep: &[&[u32]], expert_dp: &[&[u32]]) {
        let owned = |g: &[&[u32]]| g.iter().map(|m| m.to_vec()).collect::<Vec<_>>();
        assert_eq!(groups(l, Kind::Ep), owned(ep), "{} ep", l.label());
        assert_eq!(
            groups(l, Kind::ExpertDp),
            owned(expert_dp),
            "{} expert-dp",
            l.label()
        );
    }

    /// Every order of the five dimensions.
    fn all_orders() -> Vec<[Dim; 5]> {
        let mut out = Vec::new();
        let mut dims = [Dim::Tp, Dim::Cp, Dim::Ep, Dim::Dp, Dim::Pp];
        permute(&mut dims, 0, &mut out);
        out
    }

    fn permute(dims: &mut [Dim; 5], k: usize, out: &mut Vec<[Dim; 5]>) {
        if k == dims.len() {
            out.push(*dims);
            return;
        }
        for i in k..dims.len() {
            dims.swap(k, i);
            permute(dims, k + 1, out);
            dims.swap(k, i);
        }
    }

    /// The one-grid rule (every kind on the dense grid), restated as a reference: a rank's
    /// coordinates outside the kind are its group's key; groups sorted by first rank.
    fn one_grid_reference(l: &Layout, kind: Kind) -> Vec<Vec<u32>> {
        let sizes: Vec<u32> = l.order.iter().map(|&d| l.size(d)).collect();
        let mut by_key: std::collections::BTreeMap<Vec<u32>, Vec<u32>> = Default::default();
        for r in 0..sizes.iter().product::<u32>() {
            let mut rest = r;
            let mut key = Vec::new();
            for (d, s) in l.order.iter().zip(&sizes) {
                if !kind.dims().contains(d) {
                    key.push(rest % s);
                }
                rest /= s;
            }
            by_key.entry(key).or_default().push(r);
        }
        let mut out: Vec<Vec<u32>> = by_key.into_values().collect();
        out.sort();
        out
    }

    /// With CP = 1 or EP = 1 every kind's groups are the one-grid rule's (as before the
    /// expert grid), in all 120 orders.
    #[test]
    fn without_context_and_expert_parallel_together_one_grid_holds() {
        let orders = all_orders();
        assert_eq!(orders.len(), 120);
        let mut compared = 0;
        for order in orders {
            for (tp, pp, dp, cp, ep) in [
                (2, 2, 2, 2, 1),
                (2, 2, 6, 3, 1),
                (2, 3, 4, 1, 2),
                (1, 2, 6, 1, 3),
                (2, 1, 8, 1, 4),
            ] {
                let mut l = layout(tp, pp, dp, cp, ep, "tp-cp-ep-dp-pp");
                l.order = order;
                for kind in Kind::ALL {
                    assert_eq!(
                        groups(&l, kind),
                        one_grid_reference(&l, kind),
                        "{} {kind:?}",
                        l.label()
                    );
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 120 * 5 * 6);
    }

    /// With CP > 1 and EP > 1 the expert kinds leave the one grid, the dense kinds stay.
    #[test]
    fn with_context_and_expert_parallel_only_the_expert_kinds_change() {
        let l = layout(2, 2, 2, 2, 2, "tp-cp-ep-dp-pp");
        for kind in Kind::ALL {
            let same = groups(&l, kind) == one_grid_reference(&l, kind);
            assert_eq!(same, !matches!(kind, Kind::Ep | Kind::ExpertDp), "{kind:?}");
        }
    }

    /// Every kind partitions the ranks (brute force over small layouts and all orders).
    #[test]
    fn groups_partition_the_ranks() {
        let orders = [
            "tp-cp-ep-dp-pp",
            "tp-cp-ep-pp-dp",
            "pp-dp-ep-cp-tp",
            "dp-tp-pp-cp-ep",
        ];
        for order in orders {
            for (tp, pp, dp, cp, ep) in [(2, 2, 2, 1, 1), (2, 3, 4, 2, 2), (1, 2, 6, 1, 3)] {
                let l = layout(tp, pp, dp, cp, ep, order);
                for kind in Kind::ALL {
                    let g = groups(&l, kind);
                    let mut all: Vec<u32> = g.iter().flatten().copied().collect();
                    all.sort_unstable();
                    assert_eq!(
                        all,
                        (0..l.gpus() as u32).collect::<Vec<_>>(),
                        "{order} {kind:?}"
                    );
                    let size: u32 = kind.dims().iter().map(|&d| l.size(d)).product();
                    assert!(g.iter().all(|m| m.len() == size as usize));
                }
            }
        }
    }
}
