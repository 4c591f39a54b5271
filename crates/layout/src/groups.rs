//! Communicators as rank groups: which ranks talk in each dimension of the layout, by
//! Megatron-Core's rank-order rule.
//!
//! Ranks form a grid whose dimensions are taken in the layout's order, fastest-varying first
//! (`RankGenerator` in `megatron/core/parallel_state.py`): with order `tp-cp-ep-dp-pp`, rank
//! `r = tp + TP·(cp + CP·(ep + EP·(dp + DP'·pp)))`. A communicator over a set of dimensions
//! joins the ranks that agree on every other coordinate; its members come in rank order, and
//! the groups in order of their first rank.

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
    /// Data parallel over the expert weights (DP / EP × CP).
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
/// dimensions have size 1.
pub fn groups(layout: &Layout, kind: Kind) -> Vec<Vec<u32>> {
    let sizes: Vec<u64> = layout
        .order
        .iter()
        .map(|&d| u64::from(layout.size(d)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{parse_order, Layout};

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

    /// 16 GPUs, TP = 2, CP = 2, DP = 4 with EP = 2 (Megatron-Core's `tp-cp-ep-dp-pp`):
    /// rank = tp + 2·cp + 4·ep + 8·dp'. By hand: CP pairs ranks 2 apart, EP 4 apart, the
    /// dense-gradient group (cp, ep, dp') joins the 8 ranks with the same tp coordinate, the
    /// expert-gradient group (cp, dp') the 4 with the same tp and ep.
    #[test]
    fn context_and_expert_groups_by_hand() {
        let l = layout(2, 1, 4, 2, 2, "tp-cp-ep-dp-pp");
        assert_eq!(groups(&l, Kind::Cp)[0], vec![0, 2]);
        assert_eq!(groups(&l, Kind::Cp)[1], vec![1, 3]);
        assert_eq!(groups(&l, Kind::Ep)[0], vec![0, 4]);
        assert_eq!(groups(&l, Kind::Ep)[2], vec![2, 6]);
        assert_eq!(
            groups(&l, Kind::Dp),
            vec![
                vec![0, 2, 4, 6, 8, 10, 12, 14],
                vec![1, 3, 5, 7, 9, 11, 13, 15]
            ]
        );
        assert_eq!(groups(&l, Kind::ExpertDp)[0], vec![0, 2, 8, 10]);
        assert_eq!(groups(&l, Kind::ExpertDp)[1], vec![1, 3, 9, 11]);
        assert_eq!(groups(&l, Kind::ExpertDp)[2], vec![4, 6, 12, 14]);
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
