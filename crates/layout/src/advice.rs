//! "Why is it slow": the step's costs beyond compute, largest first, each with the change that
//! would cut it. A pure function of the priced step and the job, so every front end says the
//! same.

use serde::Serialize;
use topology::Cluster;

use crate::groups::Kind;
use crate::layout::{Optimizer, Training};
use crate::price::Step;
use crate::traffic::Op;

/// One cost and what to do about it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Advice {
    /// What costs the time (`tp allreduce`, `pipeline bubble`, …).
    pub cost: String,
    /// Seconds per step it adds.
    pub seconds: f64,
    /// Its share of the step.
    pub share: f64,
    /// The change that would cut it.
    pub change: String,
}

/// The exposed costs of `step`, largest first (ties in kind order), each with a change.
pub fn advise(cluster: &Cluster, t: &Training, step: &Step) -> Vec<Advice> {
    let domain_gpus = cluster
        .nvlink_domains
        .first()
        .map_or(0, |d| cluster.nvlink_domain_gpus(d));
    let mut out: Vec<Advice> = Vec::new();
    let l = &t.layout;
    if step.bubble_s > 0.0 {
        let change = if l.vp == 1 {
            format!(
                "interleave the pipeline (vp = 2 halves the bubble), or more micro-batches per rank (now {}): a larger global batch or fewer pipeline stages",
                step.micro_batches
            )
        } else {
            format!(
                "more micro-batches per rank (now {}) or fewer pipeline stages (pp = {})",
                step.micro_batches, l.pp
            )
        };
        out.push(Advice {
            cost: "pipeline bubble".to_owned(),
            seconds: step.bubble_s,
            share: step.bubble_s / step.step_s,
            change,
        });
    }
    for c in step.comms.iter().filter(|c| c.exposed_s > 0.0) {
        // Crossing tier t climbs the links below tiers 1..=t, whose ratios those tiers hold.
        let oversubscribed = c.tier_index.is_some_and(|ti| {
            cluster.tiers[1..=usize::from(ti).min(cluster.tiers.len() - 1)]
                .iter()
                .any(|t| t.oversubscription > 1.0)
        });
        let collisions = c.ideal_busbw_gb_s > 0.0 && c.busbw_gb_s < 0.8 * c.ideal_busbw_gb_s;
        let change = match c.kind {
            Kind::Tp if c.tier_index.is_some() => format!(
                "keep TP inside one NVLink domain: tp = {} spans domains of {domain_gpus} GPUs; use tp ≤ {domain_gpus} and move the rest to pp",
                l.tp
            ),
            Kind::Tp if !t.overlap_tp => "turn on TP communication overlap, or a smaller tp with more pp".to_owned(),
            // The distributed optimizer's parameter AllGather overlaps the next step's first
            // forward (Megatron-Core `--overlap-param-gather`); the gradient collectives the
            // last micro-batch's backward (`--overlap-grad-reduce`).
            Kind::Dp | Kind::ExpertDp if !t.overlap_dp && c.op == Op::AllGather && t.optimizer == Optimizer::Distributed => {
                "turn on DP parameter-gather overlap (it hides behind the first micro-batch's forward)".to_owned()
            }
            Kind::Dp | Kind::ExpertDp if !t.overlap_dp => {
                "turn on DP gradient overlap (it hides behind the last micro-batch's backward)".to_owned()
            }
            Kind::Pp if oversubscribed => format!(
                "pp crosses the oversubscribed {}: keep the job in fewer blocks",
                c.tier
            ),
            _ if oversubscribed => format!(
                "{} crosses the oversubscribed {}: keep the job in fewer blocks, or order ranks so PP takes that tier instead (order=tp-cp-ep-dp-pp puts PP outermost)",
                c.kind.name(),
                c.tier
            ),
            _ if collisions => format!(
                "ECMP collisions: {:.0} of an ideal {:.0} GB/s; more QPs per connection (--qps 4) or adaptive routing",
                c.busbw_gb_s, c.ideal_busbw_gb_s
            ),
            Kind::Pp => "fewer pipeline stages, or keep neighbouring stages under one leaf".to_owned(),
            Kind::Cp => "a smaller cp (shorter sequences per step) or CP inside fewer blocks".to_owned(),
            Kind::Ep => "a smaller ep, or EP inside one NVLink domain".to_owned(),
            _ => "a larger micro-batch or fewer ranks per group".to_owned(),
        };
        out.push(Advice {
            cost: format!("{} {}", c.kind.name(), c.op.name()),
            seconds: c.exposed_s,
            share: c.exposed_s / step.step_s,
            change,
        });
    }
    out.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    out
}
