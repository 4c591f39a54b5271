//! One training step priced on the fabric: every communicator of the job routed and solved
//! together (with the running jobs' traffic), each collective timed by NCCL's tuner at its
//! size, and the step assembled under the overlap rules below.
//!
//! Design note (2026-12-01). [`price_step`] is a pure function of (training job, the GPU of
//! each rank, routing settings, running jobs): placement (which GPUs, in which rank order)
//! stays with the caller, so a placer can call it for every candidate and a simulator when the
//! network changes.
//!
//! Pricing. Every group of every kind is one job of the fabric model (its ranks in rank order,
//! Ring, NCCL's channels), all solved at once by job-level max-min together with the running
//! jobs: the communicators of one job share NICs and links as if all ran at the same time
//! (pessimistic for kinds that alternate, exact for the many groups of one kind that run
//! together). A kind's time is its slowest group's: its shared Ring bandwidth, its Tree scaled
//! by the same contention, NVLS where the hardware has it, into NCCL's tuner at each call's
//! size ([`fabric::sweep`]); a send/receive is latency + bytes / bus bandwidth of the ring
//! over the stages.
//!
//! Cost (2026-12-02). [`price_step_without_hot_links`] skips each kind's hot links (the load
//! per resource they need); every other number is the same bits as [`price_step`].
//!
//! Step time = compute + bubble + exposed communication, with
//! - compute = FLOPs / (GPUs × peak × efficiency) ([`crate::compute`]);
//! - TP exposed in full, or with `overlap_tp` only what exceeds the compute;
//! - CP, EP and PP exposed in full (Llama 3 §3.3.2: the CP all-gather sits on the critical
//!   path; Megatron's send/receive between stages is blocking);
//! - the bubble = (p − 1)/(v·m) × (compute + the exposed TP, CP, EP and PP time), the
//!   micro-batch time including its communication (SC '21, §2.2);
//! - DP exposed in full, or with `overlap_dp` only what exceeds one micro-batch's backward
//!   (gradient AllReduce / ReduceScatter) or forward (parameter AllGather) — the part of the
//!   step it can hide behind; FSDP's per-micro-batch gathers and scatters, what exceeds the
//!   compute.

use fabric::{
    hot_link_groups, Collective, Fabric, FabricError, GpuArch, HotLinkGroup, JobTraffic, Rank,
    RoutedJob, RoutingConfig,
};
use serde::Serialize;

use crate::compute::{bubble_fraction, efficiency, peak_flops, step_flops};
use crate::error::LayoutError;
use crate::groups::{groups, Kind};
use crate::layout::{Optimizer, Recompute, Training};
use crate::traffic::{traffic, Op, Traffic};

/// What to price.
#[derive(Clone, Copy, Debug)]
pub struct StepInput<'a> {
    /// The job.
    pub training: &'a Training,
    /// The GPU of each rank, in rank order (`ranks.len()` = the layout's GPUs).
    pub ranks: &'a [Rank],
    /// Routing and NCCL settings.
    pub cfg: &'a RoutingConfig,
    /// Jobs already on the fabric (routed with IDs below `u64::MAX / 2`).
    pub running: &'a [RoutedJob],
    /// An efficiency to use instead of [`crate::compute::efficiency`] (required where that has
    /// none).
    pub efficiency: Option<f64>,
}

/// One collective of one communicator kind, priced.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PricedComm {
    /// The kind.
    pub kind: Kind,
    /// The collective.
    pub op: Op,
    /// Groups of this kind.
    pub groups: usize,
    /// Ranks per group.
    pub group_size: usize,
    /// The first group's ranks (all groups: [`crate::groups()`]).
    pub example_group: Vec<u32>,
    /// Bytes of one call.
    pub bytes: f64,
    /// Calls per step.
    pub calls: u64,
    /// Bus bandwidth of the slowest group, shared with everything else, GB/s.
    pub busbw_gb_s: f64,
    /// The same group alone with perfect load balance, GB/s.
    pub ideal_busbw_gb_s: f64,
    /// NCCL's algorithm and protocol at this size (`ring/simple`, …; `p2p` for send/receive).
    pub algorithm: String,
    /// Highest tier its groups cross: `nvlink`, or `tier N` (0 = leaf).
    pub tier: String,
    /// The highest tier crossed as a number (`None` inside NVLink).
    pub tier_index: Option<u8>,
    /// Its time per step, s.
    pub time_s: f64,
    /// The part of it on the critical path, s.
    pub exposed_s: f64,
    /// The hottest link groups under this kind's own load.
    pub hot_links: Vec<HotLinkGroup>,
}

impl PricedComm {
    /// The first group's first eight ranks (`0,8,16,…`).
    pub fn group_summary(&self) -> String {
        let head: Vec<String> = self
            .example_group
            .iter()
            .take(8)
            .map(u32::to_string)
            .collect();
        let more = if self.example_group.len() > 8 {
            ",…"
        } else {
            ""
        };
        format!("{}{more}", head.join(","))
    }

    /// The hot link groups in a few words (`tier 1 up 87%; tier 0 up 60%`).
    pub fn hot_summary(&self) -> String {
        let groups: Vec<String> = self
            .hot_links
            .iter()
            .map(|h| {
                let dir = if h.up { "up" } else { "down" };
                format!("tier {} {dir} {:.0}%", h.tier, h.max_utilization * 100.0)
            })
            .collect();
        groups.join("; ")
    }
}

/// A priced step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// GPUs.
    pub gpus: usize,
    /// GPU generation of the ranks (the oldest).
    pub arch: String,
    /// Peak per GPU at the job's precision, TFLOP/s.
    pub peak_tflops: f64,
    /// Efficiency used.
    pub efficiency: f64,
    /// Micro-batches per rank per step.
    pub micro_batches: u32,
    /// FLOPs executed per step (with recomputation).
    pub flops: f64,
    /// Compute time, s.
    pub compute_s: f64,
    /// Pipeline bubble, s.
    pub bubble_s: f64,
    /// Bubble as a fraction of the ideal time.
    pub bubble_fraction: f64,
    /// Communication on the critical path, s.
    pub exposed_s: f64,
    /// Step time, s.
    pub step_s: f64,
    /// Tokens per second.
    pub tokens_per_s: f64,
    /// Executed TFLOP/s per GPU (as Megatron-LM reports them).
    pub tflops_per_gpu: f64,
    /// Model FLOPs utilisation (no recomputation counted).
    pub mfu: f64,
    /// Every collective of every kind, in kind order.
    pub comms: Vec<PricedComm>,
}

/// Price one step of `input.training` on `fabric` (see the module note).
pub fn price_step(fabric: &mut Fabric<'_>, input: StepInput<'_>) -> Result<Step, LayoutError> {
    price(fabric, input, true)
}

/// [`price_step`] without each kind's hot links (left empty): every other field the same bits,
/// and no load per resource of the fabric is made. What a simulator reads ([`crate::Pace`], a
/// candidate's step time).
pub fn price_step_without_hot_links(
    fabric: &mut Fabric<'_>,
    input: StepInput<'_>,
) -> Result<Step, LayoutError> {
    price(fabric, input, false)
}

/// [`price_step`], with each kind's hot links if `hot`.
fn price(fabric: &mut Fabric<'_>, input: StepInput<'_>, hot: bool) -> Result<Step, LayoutError> {
    let t = input.training;
    t.validate(input.ranks.len() as u64)?;
    let cluster = fabric.cluster();
    let arch = input
        .ranks
        .iter()
        .map(|r| GpuArch::from_nvlink_gbps(cluster.node(r.node).nvlink_gbps))
        .min()
        .unwrap_or(GpuArch::Volta);
    let peak = peak_flops(arch, t.precision).ok_or_else(|| {
        LayoutError::new(
            "precision",
            format!(
                "{arch:?} GPUs have no {} peak in railyard",
                t.precision.name()
            ),
        )
    })?;
    let eff = match input.efficiency.or_else(|| efficiency(arch, t.precision)) {
        Some(e) if e > 0.0 && e <= 1.0 => e,
        Some(e) => {
            return Err(LayoutError::new(
                "efficiency",
                format!("expected 0 < e ≤ 1, got {e}"),
            ))
        }
        None => {
            return Err(LayoutError::new(
                "efficiency",
                format!(
                    "no published row sets an efficiency for {arch:?} at {}; give one",
                    t.precision.name()
                ),
            ))
        }
    };
    let n = input.ranks.len() as f64;
    let flops = step_flops(t, t.recompute);
    let compute = flops / (n * peak * eff);
    let m = t.micro_batches();
    let traffic = traffic(t);

    // Route every group of every kind that has traffic.
    let mut kinds: Vec<Kind> = traffic.iter().map(|x| x.kind).collect();
    kinds.dedup();
    let mut routed: Vec<RoutedJob> = Vec::new();
    let mut spans: Vec<(Kind, std::ops::Range<usize>, Vec<Vec<u32>>)> = Vec::new();
    let base = input.running.len() as u64 + 1;
    for &kind in &kinds {
        let gs = groups(&t.layout, kind);
        let start = routed.len();
        for g in &gs {
            let job = group_traffic(input.ranks, g, kind_collective(&traffic, kind));
            let r = fabric
                .route_flows(&job, input.cfg, base + routed.len() as u64)
                .map_err(|e| fabric_error(kind, e))?;
            routed.push(r);
        }
        spans.push((kind, start..routed.len(), gs));
    }
    let mut all: Vec<&RoutedJob> = routed.iter().collect();
    all.extend(input.running);
    // Rates per flow only for the hot links; the paces are the same bits either way.
    let alloc = if hot {
        let alloc = fabric.solve(&all);
        (alloc.busbw_gbps, alloc.rates)
    } else {
        (fabric.paces(&all), Vec::new())
    };

    let mut comms = Vec::new();
    for (kind, range, gs) in &spans {
        let busbw: Vec<f64> = alloc.0[range.clone()].to_vec();
        let (slow, shared) =
            busbw.iter().enumerate().fold(
                (0, f64::INFINITY),
                |acc, (i, &b)| if b < acc.1 { (i, b) } else { acc },
            );
        let rep = &routed[range.start + slow];
        let rep_job = group_traffic(input.ranks, &gs[slow], rep.collective);
        let alone =
            fabric::tuner_input(fabric, &rep_job, input.cfg).map_err(|e| fabric_error(*kind, e))?;
        let ideal = fabric
            .ideal_busbw(&rep_job, fabric::Algorithm::Ring, input.cfg, 0)
            .map_err(|e| fabric_error(*kind, e))?
            / 8.0;
        let shared_gb_s = shared / 8.0;
        let scale = if alone.ring_busbw_gb_s > 0.0 {
            (shared_gb_s / alone.ring_busbw_gb_s).min(1.0)
        } else {
            1.0
        };
        let hot = if hot {
            let mut load = vec![0.0; fabric.n_resources()];
            for j in range.clone() {
                for (f, rate) in alloc.1[j].iter().enumerate() {
                    for (res, w) in routed[j].flows.path(f) {
                        load[res as usize] += w * rate;
                    }
                }
            }
            let mut hot = hot_link_groups(fabric, &load);
            hot.truncate(2);
            hot
        } else {
            Vec::new()
        };
        let tier_index = groups_highest_tier(fabric.cluster(), input.ranks, gs);
        for x in traffic.iter().filter(|x| x.kind == *kind) {
            let (per_call, algorithm) = if x.op == Op::SendRecv {
                let t_us = rep.latency_ns / 1000.0 + x.bytes / (shared_gb_s * 1e3);
                (t_us, "p2p".to_owned())
            } else {
                let mut ti = alone;
                ti.collective = x.op.collective();
                ti.ring_busbw_gb_s = shared_gb_s;
                ti.tree_busbw_gb_s *= scale;
                if x.op.collective() != Collective::AllReduce {
                    ti.tree_busbw_gb_s = 0.0;
                }
                let row = fabric::sweep(&ti, input.cfg, &[x.bytes.round().max(1.0) as u64]);
                match row.first() {
                    Some(r) => (
                        r.time_us,
                        format!("{:?}/{:?}", r.algorithm, r.protocol).to_ascii_lowercase(),
                    ),
                    None => (f64::INFINITY, "none".to_owned()),
                }
            };
            let time = per_call * 1e-6 * x.calls as f64;
            comms.push(PricedComm {
                kind: *kind,
                op: x.op,
                groups: gs.len(),
                group_size: gs[0].len(),
                example_group: gs[0].clone(),
                bytes: x.bytes,
                calls: x.calls,
                busbw_gb_s: shared_gb_s,
                ideal_busbw_gb_s: ideal,
                algorithm,
                tier: tier_index.map_or("nvlink".to_owned(), |t| format!("tier {t}")),
                tier_index,
                time_s: time,
                exposed_s: 0.0,
                hot_links: hot.clone(),
            });
        }
    }

    // Overlap rules (module note).
    let times: Vec<(Kind, Op, f64)> = comms.iter().map(|c| (c.kind, c.op, c.time_s)).collect();
    let (exposed_each, bubble, frac) = overlap(t, compute, &times);
    for (c, e) in comms.iter_mut().zip(exposed_each) {
        c.exposed_s = e;
    }
    let exposed: f64 = comms.iter().map(|c| c.exposed_s).sum();
    let step = compute + bubble + exposed;
    let tokens = f64::from(t.global_batch) * f64::from(t.model.seq);
    let model_flops = step_flops(t, Recompute::None);
    Ok(Step {
        gpus: input.ranks.len(),
        arch: format!("{arch:?}"),
        peak_tflops: peak / 1e12,
        efficiency: eff,
        micro_batches: m,
        flops,
        compute_s: compute,
        bubble_s: bubble,
        bubble_fraction: frac,
        exposed_s: exposed,
        step_s: step,
        tokens_per_s: tokens / step,
        tflops_per_gpu: flops / (step * n) / 1e12,
        mfu: model_flops / (step * n * peak),
        comms,
    })
}

/// The overlap rules of the module note: each collective's exposed time (for `times`, one
/// `(kind, op, time per step)` per collective), the bubble and the bubble fraction, for a job
/// whose compute per step is `compute` s.
pub(crate) fn overlap(
    t: &Training,
    compute: f64,
    times: &[(Kind, Op, f64)],
) -> (Vec<f64>, f64, f64) {
    let m = t.micro_batches();
    let r = f64::from(u8::from(t.recompute == Recompute::Full));
    let per_mb = compute / f64::from(m.max(1));
    let mut per_mb_comm = 0.0;
    let mut exposed = Vec::with_capacity(times.len());
    for &(kind, op, time_s) in times {
        let e = match kind {
            Kind::Tp if t.overlap_tp => (time_s - compute).max(0.0),
            Kind::Tp | Kind::Cp | Kind::Ep | Kind::Pp => time_s,
            Kind::Dp | Kind::ExpertDp if !t.overlap_dp => time_s,
            Kind::Dp | Kind::ExpertDp => {
                let hide = match (t.optimizer, op) {
                    (Optimizer::Fsdp, _) => compute,
                    (_, Op::AllGather) => per_mb / (3.0 + r),
                    _ => per_mb * (2.0 + r) / (3.0 + r),
                };
                (time_s - hide).max(0.0)
            }
        };
        if matches!(kind, Kind::Tp | Kind::Cp | Kind::Ep | Kind::Pp) {
            per_mb_comm += e;
        }
        exposed.push(e);
    }
    let frac = bubble_fraction(t.layout.pp, t.layout.vp, m);
    (exposed, frac * (compute + per_mb_comm), frac)
}

/// The first `gpus` GPUs of `cluster` in cluster order (hosts, then GPU index), one rank each:
/// the ranks of a job given no placement.
pub fn first_gpus(cluster: &topology::Cluster, gpus: usize) -> Vec<Rank> {
    (0..cluster.nodes.len())
        .flat_map(|n| {
            (0..cluster.nodes[n].gpus).map(move |gpu| Rank {
                node: topology::NodeId::from_index(n),
                gpu,
            })
        })
        .take(gpus)
        .collect()
}

/// The collective a kind's groups are routed as (its first traffic entry's).
fn kind_collective(traffic: &[Traffic], kind: Kind) -> Collective {
    traffic
        .iter()
        .find(|x| x.kind == kind)
        .map_or(Collective::AllReduce, |x| x.op.collective())
}

fn group_traffic(ranks: &[Rank], group: &[u32], collective: Collective) -> JobTraffic {
    JobTraffic {
        ranks: group.iter().map(|&r| ranks[r as usize]).collect(),
        collective,
    }
}

fn fabric_error(kind: Kind, e: FabricError) -> LayoutError {
    LayoutError::new("placement", format!("{} communicator: {e}", kind.name()))
}

/// The highest switch tier any of the groups `gs` crosses, rank `r` on the GPU `ranks[r]`
/// (`None`: every group inside one NVLink domain). `price_step` reports it per kind; `railyard
/// launch --layout` writes it.
pub fn groups_highest_tier(c: &topology::Cluster, ranks: &[Rank], gs: &[Vec<u32>]) -> Option<u8> {
    let mut top: Option<u8> = None;
    for g in gs {
        let first = ranks[g[0] as usize].node;
        let domain = c.node(first).nvlink_domain;
        for &r in &g[1..] {
            let node = ranks[r as usize].node;
            if c.node(node).nvlink_domain != domain {
                top = top.max(c.common_tier(first, node));
            }
        }
    }
    top
}
