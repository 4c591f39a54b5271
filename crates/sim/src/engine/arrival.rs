//! A job's arrival: it joins the pending list if it could ever run here (it places on the
//! empty cluster, and the user's queues, all idle, admit it), else it fails at once.

use sched::{Occupancy, QueueId, Resources};
use topology::Cluster;

use crate::engine::error::SimError;
use crate::engine::event::Event;
use crate::engine::invariants::check_first_end;
use crate::engine::pass::request_pass;
use crate::engine::results::Outcome;
use crate::engine::state::{queue_pending, State};
use crate::events::EventQueue;
use crate::time::SimTime;

/// Whether a job could ever run: its class's placement on the empty cluster (asked once per
/// class), and its queue's admission with every queue idle.
pub(super) struct Feasibility<'a> {
    cluster: &'a Cluster,
    /// The cluster with nothing running.
    empty: Occupancy,
    /// The nodes' free room with nothing running.
    empty_room: sched::NodeFree,
    /// Per class, whether it places on the empty cluster (`None`: not asked yet).
    feasible: Vec<Option<bool>>,
    /// Every queue's use when idle.
    no_use: Vec<Resources>,
}

impl<'a> Feasibility<'a> {
    /// Nothing asked yet, for `st`'s classes and queues.
    pub(super) fn new(cluster: &'a Cluster, empty_room: sched::NodeFree, st: &State<'_>) -> Self {
        Feasibility {
            cluster,
            empty: Occupancy::with_node_tracking(cluster),
            empty_room,
            feasible: vec![None; st.class_extras.len()],
            no_use: vec![Resources::default(); st.queue_tree.queues.len()],
        }
    }

    /// Whether job `i` could ever run.
    fn can_ever_run(&mut self, st: &State<'_>, i: usize) -> bool {
        let c = st.class[i] as usize;
        let (cluster, empty, empty_room) = (self.cluster, &self.empty, &self.empty_room);
        *self.feasible[c].get_or_insert_with(|| {
            let input = sched::PlaceInput {
                options: st.config.placement,
                node_free: empty_room.clone(),
                pod_sets: st.class_extras[c].clone(),
                ..sched::PlaceInput::default()
            };
            sched::place_with(cluster, empty, &st.jobs[i], &input).is_ok()
        }) && st.rules.as_ref().is_none_or(|r| match &r.kueue {
            Some(k) => k.cluster_queue(&st.jobs[i].queue).is_some_and(|cq| {
                k.could_ever_admit(cq, &st.jobs[i], &st.class_extras[st.class[i] as usize])
            }),
            None => r.admits(
                &self.no_use,
                &self.no_use,
                QueueId(st.queue_of[i] as u32),
                &st.requests[i],
                st.jobs[i].preemptible,
            ),
        })
    }
}

/// Job `i` arrives at `now`: pending (and a pass asked for) if it could ever run, else failed
/// (and `progress` told).
pub(super) fn arrive(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    feasibility: &mut Feasibility<'_>,
    i: usize,
    now: SimTime,
    progress: &mut dyn FnMut(usize),
) -> Result<(), SimError> {
    if feasibility.can_ever_run(st, i) {
        queue_pending(st, i);
        request_pass(st, events, now);
    } else {
        if st.config.check_invariants {
            check_first_end(st, i).map_err(|violation| SimError::Invariant {
                at_ms: now.0,
                violation,
            })?;
        }
        st.records[i].outcome = Outcome::Failed;
        st.ended += 1;
        progress(st.ended);
    }
    Ok(())
}
