//! A job's arrival: it joins the pending list if it could ever run here (it places on the
//! empty cluster, and the user's queues, all idle, admit it), else it fails at once.

use sched::{Occupancy, QueueId, Resources};
use topology::Cluster;

use crate::engine::error::SimError;
use crate::engine::event::Event;
use crate::engine::invariants::check_first_end;
use crate::engine::not_run::NotRunReason;
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
    /// Per class, whether it places on the empty cluster, or why not (`None`: not asked yet).
    feasible: Vec<Option<Result<(), String>>>,
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

    /// Why job `i` could never run (`None`: it could): the one place a job is found unable
    /// to run, and its reason named.
    fn why_never_runs(&mut self, st: &State<'_>, i: usize) -> Option<NotRunReason> {
        let c = st.class[i] as usize;
        let (cluster, empty, empty_room) = (self.cluster, &self.empty, &self.empty_room);
        let placed = self.feasible[c].get_or_insert_with(|| {
            let input = sched::PlaceInput {
                options: st.config.placement,
                node_free: empty_room.clone(),
                pod_sets: st.class_extras[c].clone(),
                ..sched::PlaceInput::default()
            };
            sched::place_with(cluster, empty, &st.jobs[i], &input)
                .map(|_| ())
                .map_err(|e| e.reason)
        });
        if let Err(why) = placed {
            return Some(NotRunReason::DoesNotFit(why.clone()));
        }
        let rules = st.rules.as_ref()?;
        if let Some(k) = &rules.kueue {
            let job = &st.jobs[i];
            return match k.cluster_queue(&job.queue) {
                None => Some(NotRunReason::QueueRefuses(format!(
                    "queue `{}` is no Kueue ClusterQueue or LocalQueue",
                    job.queue
                ))),
                Some(cq) if !k.could_ever_admit(cq, job, &st.class_extras[c]) => {
                    Some(NotRunReason::QueueRefuses(format!(
                        "no flavor of ClusterQueue `{}` could ever hold it, even with every queue idle",
                        job.queue
                    )))
                }
                Some(_) => None,
            };
        }
        let (queue, request) = (QueueId(st.queue_of[i] as u32), &st.requests[i]);
        let preemptible = st.jobs[i].preemptible;
        if rules.admits(&self.no_use, &self.no_use, queue, request, preemptible) {
            return None;
        }
        let why = rules.refusal(&self.no_use, &self.no_use, queue, request, preemptible);
        Some(NotRunReason::QueueRefuses(why.unwrap_or_else(|| {
            "its queue refuses it even when every queue is idle".to_owned()
        })))
    }
}

/// Job `i` arrives at `now`: pending (and a pass asked for) if it could ever run, else failed
/// with its reason (and `progress` told).
pub(super) fn arrive(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    feasibility: &mut Feasibility<'_>,
    i: usize,
    now: SimTime,
    progress: &mut dyn FnMut(usize),
) -> Result<(), SimError> {
    crate::engine::setup::arrive_job(st, i);
    if let Some(reason) = feasibility.why_never_runs(st, i) {
        if st.config.check_invariants {
            check_first_end(st, i).map_err(|violation| SimError::Invariant {
                at_ms: now.0,
                violation,
            })?;
        }
        st.records[i].outcome = Outcome::Failed;
        st.records[i].reason = Some(reason);
        st.jobs.retire(i);
        st.ended += 1;
        progress(st.ended);
    } else {
        queue_pending(st, i);
        request_pass(st, events, now);
    }
    Ok(())
}
