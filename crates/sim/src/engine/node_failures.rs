//! Node failures in a run: the failures to replay (listed, or drawn from an MTBF; the
//! configuration and the draw are `crate::failures`), and what a failure and a repair do to the
//! simulated state: the node leaves and rejoins the Ready set, and every job on it stops.

use topology::{Cluster, NodeId};

use crate::engine::error::SimError;
use crate::engine::lifecycle::stop;
use crate::engine::state::State;
use crate::failures::{draw_failures, FailureConfig, NodeFailure, StopCause};
use crate::time::SimTime;
use crate::trace::TraceJob;

/// The failures of a run in time order: the listed ones, then, with an MTBF, failures drawn
/// until every job could have run one after another (last arrival + every duration and
/// restart), so a run always ends.
pub(super) fn failure_list(
    cluster: &Cluster,
    trace: &[TraceJob],
    failures: &FailureConfig,
) -> Result<Vec<NodeFailure>, SimError> {
    let mut out = failures.listed.clone();
    for (index, f) in out.iter().enumerate() {
        if f.node.index() >= cluster.nodes.len() {
            return Err(SimError::UnknownNode {
                index,
                node: f.node.0,
                nodes: cluster.nodes.len(),
            });
        }
    }
    if let Some(m) = &failures.mtbf {
        let first = trace
            .iter()
            .map(|t| t.submit_s)
            .fold(f64::INFINITY, f64::min);
        let last = trace.iter().map(|t| t.submit_s).fold(0.0, f64::max);
        let span = if first.is_finite() { last - first } else { 0.0 };
        let work: f64 = trace.iter().map(|t| t.duration_s).sum::<f64>()
            + trace.len() as f64 * m.repair_s.max(0.0);
        out.extend(draw_failures(cluster.nodes.len(), m, span + work));
    }
    out.sort_by(|a, b| a.at_s.total_cmp(&b.at_s).then(a.node.cmp(&b.node)));
    Ok(out)
}

/// Node `node` fails: it is no longer Ready, and every job with a pod on it stops.
pub(super) fn node_down(st: &mut State<'_>, node: NodeId, now: SimTime) {
    st.down[node.index()] += 1;
    if st.down[node.index()] == 1 {
        st.node_failures += 1;
        st.cluster.to_mut().nodes[node.index()].ready = false;
        st.occupancy.refresh_node(&st.cluster, node);
        st.changes += 1;
    }
    let hit: Vec<usize> = st
        .running
        .iter()
        .filter(|(_, r)| r.nodes.contains(&node))
        .map(|(&i, _)| i)
        .collect();
    for i in hit {
        stop(st, i, now, StopCause::Failure);
    }
}

/// Node `node` is repaired from one failure; Ready again when no other failure holds it.
pub(super) fn node_up(st: &mut State<'_>, node: NodeId) {
    st.down[node.index()] -= 1;
    if st.down[node.index()] == 0 {
        st.cluster.to_mut().nodes[node.index()].ready = true;
        st.occupancy.refresh_node(&st.cluster, node);
        st.changes += 1;
    }
}
