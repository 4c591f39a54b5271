//! One run of a job ([`Running`]): where it runs, its ideal work left, its slowdown, and when its
//! restart ended and its last checkpoint was reached, brought up to date by [`advance`].
//! Pure arithmetic on one run; it knows nothing of the other jobs.

use topology::NodeId;

use crate::time::SimTime;

/// One run of a job, from its start to its completion or stop.
pub(super) struct Running {
    pub(super) nodes: Vec<NodeId>,
    pub(super) start: SimTime,
    pub(super) last_update: SimTime,
    pub(super) remaining_s: f64,
    pub(super) slowdown: f64,
    pub(super) version: u64,
    /// Unique per start over the whole run: tells a restarted job from its earlier run.
    pub(super) run: u64,
    /// Ideal seconds of this run: its restart, then the work left after its checkpoint.
    pub(super) work_s: f64,
    /// The job's progress (ideal seconds) when this run started: its last checkpoint.
    pub(super) base_s: f64,
    /// Ideal seconds of restart at the start of this run (0 on a first start).
    pub(super) restart_s: f64,
    /// Seconds of ideal work between checkpoints (0: none).
    pub(super) interval_s: f64,
    /// When the restart ended (`None`: still restarting).
    pub(super) restart_end: Option<SimTime>,
    /// The last checkpoint reached (progress, ideal s) and when (`base_s` and the restart's end
    /// until one is reached in this run).
    pub(super) checkpoint_s: f64,
    pub(super) checkpoint_at: Option<SimTime>,
}

impl Running {
    /// The job's progress in ideal seconds as of `last_update`.
    pub(super) fn progress_s(&self) -> f64 {
        self.base_s + (self.work_s - self.remaining_s - self.restart_s).max(0.0)
    }
}

/// Bring a running job's progress up to `now` at its current slowdown.
pub(super) fn advance(r: &mut Running, now: SimTime) {
    let elapsed = now.secs_since(r.last_update);
    let (since, done_before) = (r.last_update, r.work_s - r.remaining_s);
    if r.slowdown.is_finite() {
        r.remaining_s = (r.remaining_s - elapsed / r.slowdown).max(0.0);
    }
    r.last_update = now;
    note_milestones(r, since, done_before);
}

/// After `advance` from `since` (when the run had done `done_before` ideal seconds): when the
/// restart ended and the last checkpoint reached, if in this stretch (constant slowdown).
fn note_milestones(r: &mut Running, since: SimTime, done_before: f64) {
    let done = r.work_s - r.remaining_s;
    let (slowdown, until) = (r.slowdown, r.last_update);
    let at = |target: f64| {
        since
            .plus_secs((target - done_before).max(0.0) * slowdown)
            .min(until)
    };
    if r.restart_end.is_none() && done >= r.restart_s {
        r.restart_end = Some(at(r.restart_s));
    }
    if r.interval_s > 0.0 && r.restart_end.is_some() {
        let reached = (r.progress_s() / r.interval_s).floor() * r.interval_s;
        if reached > r.checkpoint_s {
            r.checkpoint_s = reached;
            r.checkpoint_at = Some(at(r.restart_s + reached - r.base_s));
        }
    }
}
