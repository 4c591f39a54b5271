//! The kinds of event the loop orders by `(time, seq)` ([`Event`]).

use topology::NodeId;

/// One event of the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// A trace job (its index) is submitted.
    Arrival(usize),
    /// A scheduling pass.
    Pass,
    /// A running job's ideal end at its current pace, if `version` is still its run's.
    Completion { job: usize, version: u64 },
    /// A Tiresias demotion or promotion time: a pass, if job's `wake_stamp` still matches.
    Wake { job: usize, stamp: u64 },
    /// A node fails for `down` (ms).
    NodeDown { node: NodeId, down: u64 },
    /// A failed node is repaired.
    NodeUp(NodeId),
    /// A network round (`SimConfig::network_round`): link sharing is re-solved after this time's
    /// events.
    NetworkRound,
}
