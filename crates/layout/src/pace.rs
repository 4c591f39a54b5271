//! A layout job's step time as the network around it changes, for a simulator: priced once on
//! an empty fabric, then re-assembled from each communicator kind's bandwidth ratio.
//!
//! Design note (2026-12-01). [`Pace::new`] takes one [`price_step`](crate::price_step) of the
//! job on its placement with nothing else running, and keeps per collective its time at the
//! kind's *ideal* bus bandwidth (the group alone with perfect load balance): the priced time ×
//! priced busbw ÷ ideal busbw, for kinds whose groups leave an NVLink domain (time taken as
//! bandwidth-bound: latency scales with it, a small over-estimate for tiny calls). Kinds inside
//! one NVLink domain keep their priced time whatever the network does. [`Pace::step_s`] then
//! prices the step for any achieved ÷ ideal ratio per kind (the slowest group's, as
//! `price_step` takes a kind's slowest group) under the same overlap rules as `price_step`;
//! [`Pace::ideal_step_s`] is the step with every ratio 1, the step on an ideal network.

use serde::Serialize;

use crate::groups::Kind;
use crate::layout::Training;
use crate::price::{overlap, Step};
use crate::traffic::Op;

/// One collective of a kind, at its ideal bus bandwidth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PaceComm {
    /// The kind.
    pub kind: Kind,
    /// The collective.
    pub op: Op,
    /// Its time per step at the kind's ideal bus bandwidth, s.
    pub ideal_s: f64,
    /// Its groups leave an NVLink domain (the network can slow it).
    pub network: bool,
}

/// What a simulator needs to pace a layout job (module note).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pace {
    /// The job.
    pub training: Training,
    /// Compute time per step, s.
    pub compute_s: f64,
    /// Every collective, in the priced step's order.
    pub comms: Vec<PaceComm>,
    /// The step on an ideal network, s.
    pub ideal_step_s: f64,
}

impl Pace {
    /// The pace of `training` from `step`, its step priced on its placement alone.
    pub fn new(training: &Training, step: &Step) -> Pace {
        let comms: Vec<PaceComm> = step
            .comms
            .iter()
            .map(|c| {
                let network = c.tier_index.is_some();
                let to_ideal = if network && c.ideal_busbw_gb_s > 0.0 {
                    (c.busbw_gb_s / c.ideal_busbw_gb_s).min(1.0)
                } else {
                    1.0
                };
                PaceComm {
                    kind: c.kind,
                    op: c.op,
                    ideal_s: c.time_s * to_ideal,
                    network,
                }
            })
            .collect();
        let mut pace = Pace {
            training: training.clone(),
            compute_s: step.compute_s,
            comms,
            ideal_step_s: 0.0,
        };
        pace.ideal_step_s = pace.step_s(|_| 1.0);
        pace
    }

    /// The kinds whose groups leave an NVLink domain, in order, once each.
    pub fn network_kinds(&self) -> Vec<Kind> {
        let mut kinds: Vec<Kind> = self
            .comms
            .iter()
            .filter(|c| c.network)
            .map(|c| c.kind)
            .collect();
        kinds.dedup();
        kinds
    }

    /// The step, s, when each network kind runs at `ratio(kind)` = achieved ÷ ideal bus
    /// bandwidth (≤ 0: never finishes).
    pub fn step_s(&self, ratio: impl Fn(Kind) -> f64) -> f64 {
        let times: Vec<(Kind, Op, f64)> = self
            .comms
            .iter()
            .map(|c| {
                let t = if c.network {
                    let r = ratio(c.kind);
                    if r > 0.0 {
                        c.ideal_s / r
                    } else {
                        f64::INFINITY
                    }
                } else {
                    c.ideal_s
                };
                (c.kind, c.op, t)
            })
            .collect();
        if times.iter().any(|x| x.2.is_infinite()) {
            return f64::INFINITY;
        }
        let (exposed, bubble, _) = overlap(&self.training, self.compute_s, &times);
        self.compute_s + bubble + exposed.iter().sum::<f64>()
    }
}
