//! The model and parallel layout a synthetic training job runs, from its class and GPU count:
//! pretraining follows Megatron-LM's weak-scaling table, fine-tuning shards an 8B model over
//! one node. Sources in `docs/pending/h-synth.md` ("Layouts of synthetic jobs").

use layout::{Layout, Training};

/// How a job class picks its model and layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutRule {
    /// No layout: the job keeps the class's communication profile.
    None,
    /// Pretraining: the row of Narayanan et al., SC '21 (arXiv 2104.04473), Table 1 with the
    /// most GPUs not above the job's, its model, TP and PP; DP takes the rest.
    MegatronTable1,
    /// Fine-tuning the preset named here: TP over the job's GPUs up to one node (a model too
    /// big for one GPU's memory with Adam state), DP across nodes, no PP.
    FineTune(&'static str),
}

/// Narayanan et al., SC '21, Table 1 (weak scaling): (preset, TP, PP, GPUs of the row).
pub const MEGATRON_TABLE_1: &[(&str, u32, u32, u32)] = &[
    ("megatron-1.7b", 1, 1, 32),
    ("megatron-3.6b", 2, 1, 64),
    ("megatron-7.5b", 4, 1, 128),
    ("megatron-18b", 8, 1, 256),
    ("megatron-39b", 8, 2, 512),
    ("megatron-76b", 8, 4, 1024),
    ("megatron-145b", 8, 8, 1536),
    ("megatron-310b", 8, 16, 1920),
    ("megatron-530b", 8, 35, 2520),
    ("megatron-1t", 8, 64, 3072),
];

/// The model preset and layout of a job of `gpus` GPUs under `rule` on nodes of
/// `gpus_per_node` GPUs; `None` for [`LayoutRule::None`] and for one-GPU jobs (nothing to
/// communicate). TP is capped at the largest power of two not above `gpus_per_node`, so a
/// tensor-parallel group fits in a node; the layout's GPUs are always `gpus`.
pub fn layout_for(
    rule: LayoutRule,
    gpus: u32,
    gpus_per_node: u32,
) -> Option<(&'static str, Layout)> {
    if gpus < 2 {
        return None;
    }
    let node_tp = 1u32 << gpus_per_node.max(1).ilog2();
    let (model, tp, pp) = match rule {
        LayoutRule::None => return None,
        LayoutRule::MegatronTable1 => {
            let &(model, tp, pp, _) = MEGATRON_TABLE_1
                .iter()
                .rev()
                .find(|row| row.3 <= gpus)
                .unwrap_or(&MEGATRON_TABLE_1[0]);
            (model, tp, pp)
        }
        LayoutRule::FineTune(model) => (model, gpus, 1),
    };
    // Shrink TP, then PP, until both divide the job (GPU counts are powers of two, so halving
    // reaches a divisor; PP of 35 does not occur below 2,520 GPUs).
    let mut tp = tp.min(node_tp).max(1);
    while gpus % tp != 0 {
        tp /= 2;
    }
    let mut pp = pp.max(1);
    while (gpus / tp) % pp != 0 {
        pp -= 1;
    }
    Some((
        model,
        Layout {
            tp,
            pp,
            dp: gpus / (tp * pp),
            ..Layout::default()
        },
    ))
}

/// [`layout_for`] as a [`Training`] with Megatron's defaults (`Training::new`, as a native
/// trace row's `model`/`layout` columns give), checked against the job's GPUs.
pub fn training_for(rule: LayoutRule, gpus: u32, gpus_per_node: u32) -> Option<Training> {
    let (model, l) = layout_for(rule, gpus, gpus_per_node)?;
    let model = layout::preset(model).ok()?;
    let t = Training::new(model, l);
    t.validate(u64::from(gpus)).ok()?;
    Some(t)
}
