//! What each communicator moves: its collective, the bytes of one call (nccl-tests' size
//! convention: the AllReduce buffer, the AllGather output, the ReduceScatter input, the bytes a
//! rank sends in an AllToAll or a point-to-point send) and the calls per step.
//!
//! Activations and gradients travel in 16-bit (2 bytes an element) whatever the GEMM precision,
//! as Megatron-Core and Llama 3's FP8-free training do.

use fabric::Collective;
use serde::Serialize;

use crate::groups::Kind;
use crate::layout::{Optimizer, Recompute, Training};

/// Bytes of one activation or gradient element.
pub const ELEMENT_BYTES: f64 = 2.0;

/// A collective, or the point-to-point send/receive between pipeline stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// AllReduce.
    AllReduce,
    /// AllGather.
    AllGather,
    /// ReduceScatter.
    ReduceScatter,
    /// AllToAll.
    AllToAll,
    /// Send to the next stage, receive from the previous (and back for gradients).
    SendRecv,
}

impl Op {
    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Op::AllReduce => "allreduce",
            Op::AllGather => "allgather",
            Op::ReduceScatter => "reducescatter",
            Op::AllToAll => "alltoall",
            Op::SendRecv => "sendrecv",
        }
    }

    /// The collective the fabric model prices it as: send/receive between consecutive
    /// stages loads each stage-to-stage hop in one direction, as a ring over the stages does.
    pub fn collective(self) -> Collective {
        match self {
            Op::AllReduce => Collective::AllReduce,
            Op::AllGather | Op::SendRecv => Collective::AllGather,
            Op::ReduceScatter => Collective::ReduceScatter,
            Op::AllToAll => Collective::AllToAll,
        }
    }
}

/// One collective of one communicator kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Traffic {
    /// The communicator kind.
    pub kind: Kind,
    /// The collective.
    pub op: Op,
    /// Bytes of one call (see the module note).
    pub bytes: f64,
    /// Calls per step on each group.
    pub calls: u64,
}

/// The traffic of every communicator kind whose groups have more than one rank, in
/// [`Kind::ALL`] order. `m` micro-batches of `b` sequences per rank; `L = ⌈layers / pp⌉` layers
/// on the busiest rank; `r` = 1 with full recomputation. Sources:
///
/// - TP (Shoeybi et al. 2019, §3; Narayanan et al., SC '21, §3.3): two AllReduces of the
///   b·s·h activations per layer in the forward pass and two in the backward; recomputation
///   repeats the forward's: m·L·(4 + 2r) calls of b·(s/cp)·h elements.
/// - PP (SC '21, §4.1, scatter/gather): each micro-batch sends b·s·h/tp elements per rank to
///   the next stage and its gradient back, once per virtual stage: 2·m·v sends.
/// - DP: the rank's b16 gradients, P / (tp·pp) weights: one AllReduce (plain DP); a
///   ReduceScatter and an AllGather of the weights (distributed optimizer, Rajbhandari et al.,
///   ZeRO, §5); per micro-batch an AllGather in forward and backward and a ReduceScatter (FSDP).
/// - CP (Dubey et al. 2024, §3.3.2, all-gather context parallelism): per layer an AllGather of
///   K and V for the whole sequence (b·s·2·kv_heads/tp·d elements) in forward (and
///   recomputation) and a ReduceScatter of their gradients in backward.
/// - EP (Lepikhin et al., GShard; Megatron-Core's all-to-all dispatcher): per MoE layer a
///   dispatch and a combine AllToAll of the rank's b·s/(cp·tp) tokens × top-k × h in forward,
///   two in backward, two more with recomputation.
pub fn traffic(t: &Training) -> Vec<Traffic> {
    let (m, l) = (&t.model, &t.layout);
    let mb = u64::from(t.micro_batches());
    let r = u64::from(t.recompute == Recompute::Full);
    let b = f64::from(t.micro_batch);
    let h = f64::from(m.hidden);
    let local_layers = u64::from(m.layers.div_ceil(l.pp));
    let local_moe = u64::from(m.moe_layers().div_ceil(l.pp));
    let tokens = b * f64::from(m.seq) / f64::from(l.cp);
    let size = |k: Kind| -> u32 { k.dims().iter().map(|&d| l.size(d)).product() };
    let mut out = Vec::new();
    let mut push = |kind: Kind, op: Op, bytes: f64, calls: u64| {
        if size(kind) > 1 && calls > 0 && bytes > 0.0 {
            out.push(Traffic {
                kind,
                op,
                bytes,
                calls,
            });
        }
    };
    push(
        Kind::Tp,
        Op::AllReduce,
        tokens * h * ELEMENT_BYTES,
        mb * local_layers * (4 + 2 * r),
    );
    let kv = f64::from(m.kv_heads / l.tp.min(m.kv_heads)) * m.head_dim() as f64;
    let kv_bytes = b * f64::from(m.seq) * 2.0 * kv * ELEMENT_BYTES;
    push(
        Kind::Cp,
        Op::AllGather,
        kv_bytes,
        mb * local_layers * (1 + r),
    );
    push(Kind::Cp, Op::ReduceScatter, kv_bytes, mb * local_layers);
    let routed = tokens / f64::from(l.tp) * f64::from(m.top_k) * h * ELEMENT_BYTES;
    push(Kind::Ep, Op::AllToAll, routed, mb * local_moe * (4 + 2 * r));
    push(
        Kind::Pp,
        Op::SendRecv,
        tokens * h / f64::from(l.tp) * ELEMENT_BYTES,
        2 * mb * u64::from(l.vp),
    );
    let model_parallel = f64::from(l.tp) * f64::from(l.pp);
    for (kind, params) in [
        (Kind::Dp, m.dense_params() as f64 / model_parallel),
        (
            Kind::ExpertDp,
            m.expert_params() as f64 / (model_parallel * f64::from(l.ep)),
        ),
    ] {
        let bytes = params * ELEMENT_BYTES;
        match t.optimizer {
            Optimizer::Dp => push(kind, Op::AllReduce, bytes, 1),
            Optimizer::Distributed => {
                push(kind, Op::ReduceScatter, bytes, 1);
                push(kind, Op::AllGather, bytes, 1);
            }
            Optimizer::Fsdp => {
                push(kind, Op::AllGather, bytes, 2 * mb);
                push(kind, Op::ReduceScatter, bytes, mb);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{Layout, Training};
    use crate::model::preset;

    fn find(t: &[Traffic], kind: Kind, op: Op) -> &Traffic {
        t.iter().find(|x| x.kind == kind && x.op == op).unwrap()
    }

    /// Megatron SC '21's 145B row by hand: h = 12288, s = 2048, b = 1, TP 8, PP 8, DP 24,
    /// B = 2304 → m = 96, 10 layers a rank, full recomputation.
    /// TP: b·s·h·2 = 50,331,648 bytes, 96·10·6 = 5,760 calls (§3.3: 2 + 2 AllReduces per
    /// layer, + 2 recomputed). PP: b·s·h/t·2 = 6,291,456 bytes (§4.1), 2·96 = 192 sends.
    /// DP: 12·l·h²/(t·p)·2 bytes of weights (≈ 145B / 64 ranks × 2 B ≈ 4.5 GB).
    #[test]
    fn megatron_145b_bytes_by_hand() {
        let mut t = Training::new(
            preset("megatron-145b").unwrap(),
            Layout::parse("tp=8,pp=8,dp=24").unwrap(),
        );
        t.global_batch = 2304;
        t.recompute = Recompute::Full;
        let x = traffic(&t);
        let tp = find(&x, Kind::Tp, Op::AllReduce);
        assert_eq!((tp.bytes, tp.calls), (50_331_648.0, 5_760));
        let pp = find(&x, Kind::Pp, Op::SendRecv);
        assert_eq!((pp.bytes, pp.calls), (6_291_456.0, 192));
        let dp = find(&x, Kind::Dp, Op::AllReduce);
        let by_hand = (12.0 * 80.0 * 12288.0f64.powi(2) + 51200.0 * 12288.0) / 64.0 * 2.0;
        assert!(
            (dp.bytes / by_hand - 1.0).abs() < 1e-9,
            "{} vs {by_hand}",
            dp.bytes
        );
        assert_eq!(dp.calls, 1);
        assert!(x.iter().all(|t| t.kind != Kind::Cp && t.kind != Kind::Ep));
    }

    /// Llama 3 405B with CP 16 at 131,072 tokens (Dubey et al., Table 4, last row), by hand:
    /// K and V of 8 KV heads / TP 8 = 1 head of 128 → 131072·2·128·2 = 67,108,864 bytes per
    /// layer AllGather, ⌈126/16⌉ = 8 layers on the busiest rank, m = 16.
    #[test]
    fn llama3_context_parallel_bytes_by_hand() {
        let mut m = preset("llama3-405b").unwrap();
        m.seq = 131_072;
        let mut t = Training::new(m, Layout::parse("tp=8,cp=16,pp=16,dp=8").unwrap());
        t.global_batch = 128;
        let x = traffic(&t);
        let cp = find(&x, Kind::Cp, Op::AllGather);
        assert_eq!((cp.bytes, cp.calls), (67_108_864.0, 16 * 8));
        // TP moves this rank's 131072/16 tokens.
        assert_eq!(
            find(&x, Kind::Tp, Op::AllReduce).bytes,
            8192.0 * 16384.0 * 2.0
        );
    }

    /// Mixtral 8×7B with EP 8 (TP 1): every MoE layer sends b·s tokens × top-2 × h × 2 bytes.
    #[test]
    fn expert_all_to_all_bytes_by_hand() {
        let t = Training {
            global_batch: 8,
            optimizer: Optimizer::Distributed,
            ..Training::new(
                preset("mixtral-8x7b").unwrap(),
                Layout::parse("dp=8,ep=8").unwrap(),
            )
        };
        let x = traffic(&t);
        let ep = find(&x, Kind::Ep, Op::AllToAll);
        assert_eq!(ep.bytes, 32768.0 * 2.0 * 4096.0 * 2.0);
        assert_eq!(ep.calls, 32 * 4);
        // ep = dp: one rank per expert-DP group, so no expert gradient traffic; the dense
        // weights (all but the 32 × 8 experts' 3·h·ffn) are reduce-scattered over the 8.
        assert!(x.iter().all(|t| t.kind != Kind::ExpertDp));
        let rs = find(&x, Kind::Dp, Op::ReduceScatter);
        let m = &t.model;
        assert_eq!(
            rs.bytes,
            (m.params() - 32 * 8 * 3 * 4096 * 14336) as f64 * 2.0
        );
    }
}
