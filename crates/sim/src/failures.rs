//! Node failures and checkpoints: what a run is told about them (a failure list, an MTBF per
//! node, checkpoint defaults) and what it reports (lost GPU-seconds by cause).
//!
//! Design note (2026-12-01). Failures are ordinary simulator events: every failure (from the
//! user's list and, with an MTBF, drawn here before the run) is pushed into the event queue at
//! the start, so a run stays a pure function of its inputs and equal times keep the queue's
//! `(time, seq)` order. A failed node is not Ready for its repair time: every job with a pod on
//! it stops (the whole gang) and goes back to pending with its progress rolled back to its last
//! checkpoint. Progress is ideal-network work: a job checkpoints every `interval_s` seconds of
//! ideal work, so a job slowed by the network checkpoints less often in wall time. A restart
//! costs `restart_s` seconds of ideal work before progress resumes (stretched by the network
//! like the work). The GPU-seconds from a run's last checkpoint (or the end of its restart) to
//! its stop are lost to the stop's cause; a restart's GPU-seconds are lost to the cause of the
//! stop that made it necessary. Used GPU-seconds = useful + lost.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use topology::NodeId;

/// One failure of one node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeFailure {
    /// When it fails, seconds since the first arrival.
    pub at_s: f64,
    /// The node.
    pub node: NodeId,
    /// How long it stays down, seconds.
    pub duration_s: f64,
}

/// Failures drawn per node: exponential times between failures with mean `mtbf_s`, each
/// followed by `repair_s` seconds down.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mtbf {
    /// Mean time between failures of one node, seconds.
    pub mtbf_s: f64,
    /// Time a failed node stays down, seconds.
    pub repair_s: f64,
    /// Seed of the draws (node `n` draws from ChaCha8 stream `n`).
    pub seed: u64,
}

/// The failures of a run. The default: nodes never fail.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FailureConfig {
    /// Failures at given times (a failure file).
    pub listed: Vec<NodeFailure>,
    /// Failures drawn from an MTBF.
    pub mtbf: Option<Mtbf>,
}

impl FailureConfig {
    /// No failures at all.
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty() && self.mtbf.is_none()
    }
}

/// Checkpointing of jobs whose trace row does not say. The default: no checkpoints, free
/// restarts (a stopped job starts over).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Checkpointing {
    /// Seconds of ideal-network work between checkpoints (0: none).
    pub interval_s: f64,
    /// Seconds of ideal work a restart costs.
    pub restart_s: f64,
}

/// Why a running job stopped before its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum StopCause {
    /// The scheduler stopped it for another job.
    Preemption,
    /// A node it ran on failed.
    Failure,
}

/// What failures and checkpoints cost in one run (present when the run had failures or
/// checkpoints).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FailureSummary {
    /// Node failures that happened during the run.
    pub node_failures: u64,
    /// Times a job was stopped by a node failure.
    pub jobs_stopped_by_failures: u64,
    /// GPU-seconds lost to preemption (work since the last checkpoint, and restarts after one).
    pub lost_gpu_seconds_preemption: f64,
    /// GPU-seconds lost to node failures.
    pub lost_gpu_seconds_failure: f64,
}

/// The failures an MTBF gives over `[0, until_s]` on `nodes` nodes, by time then node. Node `n`
/// draws from its own ChaCha8 stream, so adding a node changes no other node's failures.
pub fn draw_failures(nodes: usize, mtbf: &Mtbf, until_s: f64) -> Vec<NodeFailure> {
    let mut out = Vec::new();
    if !(mtbf.mtbf_s > 0.0 && mtbf.mtbf_s.is_finite()) {
        return out;
    }
    for n in 0..nodes {
        let mut rng = ChaCha8Rng::seed_from_u64(mtbf.seed);
        rng.set_stream(n as u64);
        let mut t = 0.0;
        loop {
            t += -(1.0 - rng.random::<f64>()).ln() * mtbf.mtbf_s;
            if t > until_s {
                break;
            }
            out.push(NodeFailure {
                at_s: t,
                node: NodeId(n as u32),
                duration_s: mtbf.repair_s,
            });
            t += mtbf.repair_s;
        }
    }
    out.sort_by(|a, b| a.at_s.total_cmp(&b.at_s).then(a.node.cmp(&b.node)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_seeded_per_node_and_average_the_mtbf() {
        let m = Mtbf {
            mtbf_s: 100.0,
            repair_s: 0.0,
            seed: 7,
        };
        let a = draw_failures(4, &m, 1e6);
        assert_eq!(a, draw_failures(4, &m, 1e6));
        // Node 0's failures do not depend on how many nodes there are.
        let only0 = |v: &[NodeFailure]| {
            v.iter()
                .filter(|f| f.node == NodeId(0))
                .map(|f| f.at_s)
                .collect::<Vec<_>>()
        };
        assert_eq!(only0(&a), only0(&draw_failures(1, &m, 1e6)));
        // 4 nodes × 1e6 s / 100 s ≈ 40,000 failures; the exponential's mean within 3%.
        let n = a.len() as f64;
        assert!((n - 40_000.0).abs() < 1_200.0, "{n}");
        assert!(a.windows(2).all(|w| w[0].at_s <= w[1].at_s));
        let other = draw_failures(4, &Mtbf { seed: 8, ..m }, 1e6);
        assert_ne!(a, other);
    }

    #[test]
    fn a_repair_time_separates_a_nodes_failures() {
        let m = Mtbf {
            mtbf_s: 10.0,
            repair_s: 50.0,
            seed: 1,
        };
        let v = draw_failures(1, &m, 1e5);
        assert!(v.windows(2).all(|w| w[1].at_s - w[0].at_s >= 50.0));
        // Mean cycle 60 s.
        let n = v.len() as f64;
        assert!((n - 1e5 / 60.0).abs() < 100.0, "{n}");
    }
}
