//! Starting, finishing and stopping a job: the one place a run begins or ends, keeping the
//! occupancy, the running set, the kept counts, lost work and the job's record in step.
//! Which job starts or stops is decided by its callers (the pass, preemption, node failures).

use sched::Placement;
use topology::NodeId;

use crate::engine::event::Event;
use crate::engine::levels::{ask_demotion_wake, note_preempted};
use crate::engine::results::Outcome;
use crate::engine::running::{advance, Running};
use crate::engine::state::{
    hold, hold_room, next_run_work_s, queue_pending, refresh_weng, set_busy, unqueue_pending, State,
};
use crate::events::EventQueue;
use crate::failures::StopCause;
use crate::time::SimTime;

/// Start job `i` (already off the pending list) at `placement` at `now`: commit it, hold its
/// room, queue use and GPUs, mark the network changed if it communicates across nodes, and
/// queue its completion at its ideal pace (and, under Tiresias, its demotion wake-up).
pub(super) fn start(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    i: usize,
    placement: &Placement,
    now: SimTime,
) {
    sched::commit(&mut st.occupancy, &st.jobs[i], placement).expect("a fresh placement commits");
    if let Some(k) = st.rules.as_mut().and_then(|r| r.kueue.as_mut()) {
        k.admit(i, &st.jobs[i].name, st.jobs[i].priority, now.0);
    }
    st.changes += 1;
    let nodes: Vec<NodeId> = placement.pods.iter().map(|p| p.node).collect();
    let rec = &mut st.records[i];
    if rec.start_s.is_none() {
        rec.start_s = Some(now.as_secs_f64());
    }
    rec.highest_tier = placement.highest_tier;
    let gpus = st.requests[i].gpu;
    let multi = nodes.len() > 1;
    hold_room(st, i, &nodes, true);
    refresh_weng(st, &nodes, now);
    let version = st.next_version;
    st.next_version += 1;
    let ckpt = st.checkpointing[i];
    let (restart_s, work_s) = next_run_work_s(st, i);
    let base_s = st.saved_s[i];
    st.running.insert(
        i,
        Box::new(Running {
            nodes,
            start: now,
            last_update: now,
            remaining_s: work_s,
            slowdown: 1.0,
            version,
            run: st.changes,
            work_s,
            base_s,
            restart_s,
            interval_s: ckpt.interval_s,
            restart_end: (restart_s <= 0.0).then_some(now),
            checkpoint_s: base_s,
            checkpoint_at: None,
        }),
    );
    set_busy(st, now, gpus);
    hold(st, i, now, 1.0);
    if multi && st.comm[i].comm_share > 0.0 {
        st.network_dirty = true;
        st.net_changed.push(i);
    }
    events.push(now.plus_secs(work_s), Event::Completion { job: i, version });
    ask_demotion_wake(st, i, now);
}

/// Running job `i` completes at `now`: its run ends, its record is closed as completed, and
/// what it held is given back.
pub(super) fn finish(st: &mut State<'_>, i: usize, now: SimTime) {
    let mut r = st.running.remove(&i).expect("finishing a running job");
    st.occupancy.release(&st.jobs[i].name);
    if let Some(k) = st.rules.as_mut().and_then(|r| r.kueue.as_mut()) {
        k.release(&st.jobs[i].name);
    }
    st.changes += 1;
    if let Some(t) = st.tiresias.get_mut(i) {
        t.wake_stamp += 1;
    }
    advance(&mut r, now);
    lose_restart(st, i, &r, now);
    hold_room(st, i, &r.nodes, false);
    refresh_weng(st, &r.nodes, now);
    let held = st.requests[i].gpu;
    let rec = &mut st.records[i];
    let run = now.secs_since(r.start);
    rec.gpu_seconds += held * run;
    rec.end_s = Some(now.as_secs_f64());
    rec.outcome = Outcome::Completed;
    rec.network_slowdown = Some(if r.work_s > 0.0 { run / r.work_s } else { 1.0 });
    let gpus = held;
    if r.nodes.len() > 1 && st.comm[i].comm_share > 0.0 {
        st.network_dirty = true;
        st.net_changed.push(i);
    }
    set_busy(st, now, -gpus);
    hold(st, i, now, -1.0);
}

/// Stop `victims` (by name) and start pending job `i` at `placement`.
pub(super) fn stop_and_start(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    i: usize,
    victims: &[String],
    placement: &Placement,
    now: SimTime,
) {
    for v in victims {
        preempt(st, v, now);
    }
    unqueue_pending(st, i);
    start(st, events, i, placement, now);
}

/// Preempt running job `name` at `now` (nothing if it is not running).
fn preempt(st: &mut State<'_>, name: &str, now: SimTime) {
    let Some((&i, _)) = st.running.iter().find(|(&i, _)| st.jobs[i].name == name) else {
        return;
    };
    stop(st, i, now, StopCause::Preemption);
}

/// Add `gpu_seconds` lost to `cause` to job `i` and the run.
fn lose(st: &mut State<'_>, i: usize, cause: StopCause, gpu_seconds: f64) {
    if gpu_seconds <= 0.0 {
        return;
    }
    let rec = &mut st.records[i];
    match cause {
        StopCause::Preemption => rec.lost_gpu_seconds_preemption += gpu_seconds,
        StopCause::Failure => rec.lost_gpu_seconds_failure += gpu_seconds,
    }
    st.lost_by_cause[cause as usize] += gpu_seconds;
    st.lost_gpu_seconds += gpu_seconds;
}

/// A run of job `i` ends at `now` (after `advance`): its restart so far is lost to the cause
/// of the stop that made it necessary.
pub(super) fn lose_restart(st: &mut State<'_>, i: usize, r: &Running, now: SimTime) {
    if let Some(cause) = st.last_stop[i] {
        let restart = r.restart_end.unwrap_or(now).min(now).secs_since(r.start);
        lose(st, i, cause, st.requests[i].gpu * restart);
    }
}

/// Stop running job `i` for `cause`: its work since the last checkpoint (or since its restart
/// ended) is lost, and it goes back to the pending list with its progress at that checkpoint.
pub(super) fn stop(st: &mut State<'_>, i: usize, now: SimTime, cause: StopCause) {
    let mut r = st.running.remove(&i).expect("a stopped job is running");
    st.occupancy.release(&st.jobs[i].name);
    if let Some(k) = st.rules.as_mut().and_then(|r| r.kueue.as_mut()) {
        k.release(&st.jobs[i].name);
    }
    st.changes += 1;
    hold_room(st, i, &r.nodes, false);
    refresh_weng(st, &r.nodes, now);
    advance(&mut r, now);
    lose_restart(st, i, &r, now);
    let gpus = st.requests[i].gpu;
    let kept_until = r.checkpoint_at.or(r.restart_end).unwrap_or(now).min(now);
    lose(st, i, cause, gpus * now.secs_since(kept_until));
    st.saved_s[i] = r.checkpoint_s;
    st.last_stop[i] = Some(cause);
    let rec = &mut st.records[i];
    rec.gpu_seconds += gpus * now.secs_since(r.start);
    match cause {
        StopCause::Preemption => {
            rec.preemptions += 1;
            st.preemptions += 1;
        }
        StopCause::Failure => {
            rec.failures += 1;
            st.failure_stops += 1;
        }
    }
    if r.nodes.len() > 1 {
        st.network_dirty = true;
        st.net_changed.push(i);
    }
    set_busy(st, now, -gpus);
    hold(st, i, now, -1.0);
    queue_pending(st, i);
    st.requeued.push(i);
    note_preempted(st, i, now.secs_since(r.start), now);
}
