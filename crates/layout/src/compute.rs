//! Compute per step: FLOPs from the model (Narayanan et al., SC '21, eq. 3, generalised to
//! grouped-query attention, gated FFNs and experts), the GPU's peak, one efficiency per GPU
//! generation and precision, and the pipeline bubble.

use fabric::GpuArch;

use crate::layout::{Precision, Recompute, Training};

/// FLOPs the GPUs execute in one step (all GPUs together).
///
/// Per token and layer, forward = 2 FLOPs per weight used + 4·s·h for attention scores and
/// values; a training step runs the forward, the backward (twice the forward) and, with full
/// recomputation, the forward again: (3 + r) × forward. The output layer adds 6·h·V per token
/// and is not recomputed. For a GPT (FFN 4h, MHA) with full recomputation this is exactly
/// eq. 3 of Narayanan et al., SC '21: 96·B·s·l·h²·(1 + s/6h + V/16lh).
pub fn step_flops(t: &Training, recompute: Recompute) -> f64 {
    let m = &t.model;
    let passes = match recompute {
        Recompute::None => 3.0,
        Recompute::Full => 4.0,
    };
    let layers: f64 = (0..m.layers).map(|i| m.layer_forward_flops(i)).sum();
    let tokens = f64::from(t.global_batch) * f64::from(m.seq);
    tokens * (passes * layers + 6.0 * f64::from(m.hidden) * f64::from(m.vocab))
}

/// Dense peak of one GPU, FLOP/s (NVIDIA datasheets: A100 312 TFLOP/s BF16/FP16; H100 SXM
/// 989 BF16, 1,979 FP8; B200 2,250 BF16, 4,500 FP8; V100 125 FP16), or `None` for a
/// precision the generation lacks.
pub fn peak_flops(arch: GpuArch, precision: Precision) -> Option<f64> {
    let tflops = match (arch, precision) {
        (GpuArch::Volta, Precision::Fp16) => 125.0,
        (GpuArch::Ampere, Precision::Bf16 | Precision::Fp16) => 312.0,
        (GpuArch::Hopper, Precision::Bf16 | Precision::Fp16) => 989.0,
        (GpuArch::Hopper, Precision::Fp8) => 1979.0,
        (GpuArch::Blackwell, Precision::Bf16 | Precision::Fp16) => 2250.0,
        (GpuArch::Blackwell, Precision::Fp8) => 4500.0,
        _ => return None,
    };
    Some(tflops * 1e12)
}

/// The share of peak the GEMMs reach, one per GPU generation and precision, each set from ONE
/// published row (README, "Training layouts"; recomputed from it by `tests/published.rs`):
///
/// - A100, FP16/BF16: Narayanan et al., SC '21, Table 1, the 145B row (148 TFLOP/s per GPU on
///   1,536 GPUs, TP 8, PP 8).
/// - H100, BF16: Dubey et al. 2024 (Llama 3), Table 4, the 8,192-GPU row (430 TFLOP/s per GPU,
///   TP 8, PP 16, DP 64).
///
/// `None` elsewhere: the caller must give one.
pub fn efficiency(arch: GpuArch, precision: Precision) -> Option<f64> {
    match (arch, precision) {
        (GpuArch::Ampere, Precision::Bf16 | Precision::Fp16) => Some(A100_EFFICIENCY),
        (GpuArch::Hopper, Precision::Bf16) => Some(H100_BF16_EFFICIENCY),
        _ => None,
    }
}

/// A100 FP16/BF16 efficiency (see [`efficiency`]).
pub const A100_EFFICIENCY: f64 = 0.619;

/// H100 BF16 efficiency (see [`efficiency`]).
pub const H100_BF16_EFFICIENCY: f64 = 0.566;

/// The oldest GPU generation among `cluster`'s nodes that has no peak or no published
/// efficiency at `precision` ([`peak_flops`], [`efficiency`]): a layout job there could not be
/// priced without an efficiency given. `None` when every generation can be.
pub fn unpriced_arch(cluster: &topology::Cluster, precision: Precision) -> Option<GpuArch> {
    cluster
        .nodes
        .iter()
        .map(|n| GpuArch::from_nvlink_gbps(n.nvlink_gbps))
        .filter(|&arch| {
            peak_flops(arch, precision).is_none() || efficiency(arch, precision).is_none()
        })
        .min()
}

/// The pipeline bubble as a fraction of the ideal (bubble-free) time: (p − 1)/m for 1F1B,
/// (p − 1)/(v·m) interleaved with v stages per rank (Narayanan et al., SC '21, §2.2.1–2.2.2).
pub fn bubble_fraction(pp: u32, vp: u32, micro_batches: u32) -> f64 {
    if pp <= 1 || micro_batches == 0 {
        return 0.0;
    }
    f64::from(pp - 1) / (f64::from(vp.max(1)) * f64::from(micro_batches))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{Layout, Training};
    use crate::model::preset;

    /// Narayanan et al., SC '21, eq. 3 by hand for the 1T row (B = 3072, s = 2048, l = 128,
    /// h = 25600, V = 51200): 96·B·s·l·h²·(1 + s/6h + V/16lh).
    #[test]
    fn gpt_flops_are_narayanan_eq3() {
        let mut t = Training::new(preset("megatron-1t").unwrap(), Layout::default());
        t.global_batch = 3072;
        let (b, s, l, h, v) = (3072.0, 2048.0, 128.0, 25600.0, 51200.0);
        let eq3 = 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
        let got = step_flops(&t, Recompute::Full);
        assert!((got / eq3 - 1.0).abs() < 1e-3, "{got:e} vs {eq3:e}");
    }

    #[test]
    fn bubble_is_p_minus_1_over_v_m() {
        assert_eq!(bubble_fraction(8, 1, 96), 7.0 / 96.0);
        assert_eq!(bubble_fraction(16, 4, 16), 15.0 / 64.0);
        assert_eq!(bubble_fraction(1, 1, 4), 0.0);
    }
}
