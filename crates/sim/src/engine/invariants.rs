//! The simulator's invariant checks (`SimConfig::check_invariants`): pure functions of the
//! simulated state, after every event, as a job ends, and when the run stops. They read the
//! state; they never change it.

use sched::Resources;

use crate::engine::results::Outcome;
use crate::engine::running::Running;
use crate::engine::state::{release_ask, State};
use crate::shares;

/// Every invariant of the simulated state, from scratch: the scheduler's (no GPU, share or
/// memory oversubscribed; every running gang whole; required levels hold; see
/// [`sched::check_invariants`]) plus the simulator's own: the occupancy runs exactly the running
/// jobs, on the nodes the network model sees; no running job is pending or has ended; busy GPUs
/// equal the running jobs' GPUs; each queue's kept use equals its running jobs' asks, and with
/// the user's queues their rules hold on every resource (`QueueRules::check`: limits, KAI's
/// non-preemptible quota, Kueue's cohort lending). Pure; O(GPUs + running pods + queues)
/// per call. "Every job ends exactly once" is checked where a job ends
/// ([`check_first_end`]) and over all records when the run stops.
pub(super) fn check_state(st: &State<'_>) -> Result<(), sched::Violation> {
    let violation = |job: &str, invariant: &'static str, detail: String| sched::Violation {
        job: job.to_owned(),
        invariant,
        detail,
    };
    sched::check_occupancy(&st.cluster, &st.occupancy)?;
    if st.occupancy.jobs().len() != st.running.len() {
        return Err(violation(
            "",
            "occupancy and running set differ",
            format!(
                "{} jobs hold GPUs, {} are running",
                st.occupancy.jobs().len(),
                st.running.len()
            ),
        ));
    }
    // Same count, and (below) every job holding GPUs is running: the two sets are equal.
    let mut busy = 0.0;
    let mut used = vec![sched::ResourceList::new(); st.cluster.nodes.len()];
    for (name, alloc) in st.occupancy.jobs() {
        let Some((i, r)) = st
            .name_index
            .get(name.as_str())
            .and_then(|&i| Some((i, st.running.get(&i)?)))
        else {
            return Err(violation(
                name,
                "not running",
                "holds GPUs but is not a running job".to_owned(),
            ));
        };
        sched::check_gang(&st.cluster, &st.jobs[i], alloc)?;
        if alloc
            .pods
            .iter()
            .map(|p| p.node)
            .ne(r.nodes.iter().copied())
        {
            return Err(violation(
                name,
                "nodes disagree",
                "the occupancy and the network model see different nodes".to_owned(),
            ));
        }
        if st.records[i].outcome != Outcome::Unfinished || st.records[i].end_s.is_some() {
            return Err(violation(
                name,
                "ended job running",
                format!("running although {:?}", st.records[i].outcome),
            ));
        }
        if st.pending.contains_key(&(st.submit[i], i)) {
            return Err(violation(
                name,
                "pending and running",
                "in both the pending list and the running set".to_owned(),
            ));
        }
        busy += st.requests[i].gpu;
        check_failures_of(st, i, r)?;
        shares::check_pods(&st.cluster, alloc, &st.trace[i].pod, &mut used)
            .map_err(|(invariant, detail)| violation(name, invariant, detail))?;
    }
    shares::check_room(&st.cluster, &used, &st.input.node_free)
        .map_err(|(invariant, detail)| violation("", invariant, detail))?;
    if (busy - st.busy_gpus).abs() > 1e-6 {
        return Err(violation(
            "",
            "busy GPUs",
            format!(
                "{} GPUs counted busy, the running jobs hold {busy}",
                st.busy_gpus
            ),
        ));
    }
    // Quotas and limits, per resource, from the running jobs: the kept use agrees, and with the
    // user's queues their rules hold; without them no queue has a limit.
    let mut usage = vec![Resources::default(); st.queue_tree.queues.len()];
    let mut non_preemptible = usage.clone();
    for &i in st.running.keys() {
        release_ask(&mut usage, st, i, 1.0);
        if !st.jobs[i].preemptible {
            release_ask(&mut non_preemptible, st, i, 1.0);
        }
    }
    let close = |a: &Resources, b: &Resources| {
        (a.gpu - b.gpu).abs() <= 1e-6
            && (a.cpu - b.cpu).abs() <= 1e-3
            && (a.memory - b.memory).abs() <= 1e-3
    };
    for (q, spec) in st.queue_tree.queues.iter().enumerate() {
        if !close(&usage[q], &st.usage[q]) || !close(&non_preemptible[q], &st.non_preemptible[q]) {
            return Err(violation(
                "",
                "queue use",
                format!(
                    "queue `{}`: {:?} counted in use, the running jobs hold {:?}",
                    spec.name, st.usage[q], usage[q]
                ),
            ));
        }
    }
    match &st.rules {
        Some(rules) => rules.check(&usage, &non_preemptible),
        None => Ok(()),
    }
}

/// Failures and checkpoints of running job `i`: no pod on a failed node; its progress within
/// `[last checkpoint, duration]`; its lost GPU-seconds within what it used.
fn check_failures_of(st: &State<'_>, i: usize, r: &Running) -> Result<(), sched::Violation> {
    let violation = |invariant: &'static str, detail: String| sched::Violation {
        job: st.jobs[i].name.clone(),
        invariant,
        detail,
    };
    if let Some(n) = r.nodes.iter().find(|n| st.down.get(n.index()) > Some(&0)) {
        return Err(violation(
            "pod on a failed node",
            format!(
                "runs on {} while it is down",
                st.cluster.nodes[n.index()].name
            ),
        ));
    }
    let progress = r.progress_s();
    let saved = st.saved_s[i];
    if progress > st.durations[i] + 1e-6 || progress < saved - 1e-6 || r.base_s != saved {
        return Err(violation(
            "progress",
            format!(
                "progress {progress} s outside [last checkpoint {saved} s, duration {} s]",
                st.durations[i]
            ),
        ));
    }
    let rec = &st.records[i];
    let lost = rec.lost_gpu_seconds_preemption + rec.lost_gpu_seconds_failure;
    if lost > rec.gpu_seconds + 1e-6 {
        return Err(violation(
            "lost work",
            format!("{lost} GPU-s lost of {} used", rec.gpu_seconds),
        ));
    }
    Ok(())
}

/// Lost-work accounting at the end of a run: per cause, the jobs' lost GPU-seconds add up to
/// the run's, and a completed job's useful GPU-seconds (used − lost) cover its ideal work
/// (exactly, within the clock's milliseconds, for a job no network slowed).
fn check_lost_work(st: &State<'_>) -> Result<(), sched::Violation> {
    let violation = |job: &str, detail: String| sched::Violation {
        job: job.to_owned(),
        invariant: "lost work",
        detail,
    };
    let by_cause = st.records.iter().fold([0.0; 2], |a, r| {
        [
            a[0] + r.lost_gpu_seconds_preemption,
            a[1] + r.lost_gpu_seconds_failure,
        ]
    });
    for (jobs, run) in by_cause.iter().zip(st.lost_by_cause) {
        if (jobs - run).abs() > 1e-6 * (1.0 + jobs) {
            return Err(violation(
                "",
                format!("jobs lost {jobs} GPU-s, the run counts {run}"),
            ));
        }
    }
    for (i, r) in st.records.iter().enumerate() {
        if r.outcome != Outcome::Completed {
            continue;
        }
        let gpus = st.requests[i].gpu;
        let useful = r.gpu_seconds - r.lost_gpu_seconds_preemption - r.lost_gpu_seconds_failure;
        let ideal = gpus * st.durations[i];
        let stops = f64::from(r.preemptions + r.failures);
        let tolerance = gpus * 0.002 * (1.0 + 2.0 * stops);
        let exact = r.nodes == 1;
        if useful < ideal - tolerance || (exact && useful > ideal + tolerance) {
            return Err(violation(
                &r.name,
                format!(
                    "used {} GPU-s = useful {useful} + lost; its work is {ideal}",
                    r.gpu_seconds
                ),
            ));
        }
    }
    Ok(())
}

/// A job about to end (complete or fail) has not ended before and is neither pending nor (for a
/// failure) running. Pure; O(log jobs).
pub(super) fn check_first_end(st: &State<'_>, i: usize) -> Result<(), sched::Violation> {
    let r = &st.records[i];
    if r.outcome != Outcome::Unfinished || r.end_s.is_some() {
        return Err(sched::Violation {
            job: r.name.clone(),
            invariant: "job ended twice",
            detail: format!("ends again after {:?}", r.outcome),
        });
    }
    if st.pending.contains_key(&(st.submit[i], i)) {
        return Err(sched::Violation {
            job: r.name.clone(),
            invariant: "pending job ended",
            detail: "ends while still in the pending list".to_owned(),
        });
    }
    Ok(())
}

/// When the run stops: every job ended at most once (ended records and end events agree), the
/// lost work adds up ([`check_lost_work`]), and, when the whole trace ran (`whole_trace`: no
/// horizon), every job ended.
pub(super) fn check_run_end(st: &State<'_>, whole_trace: bool) -> Result<(), sched::Violation> {
    let ended = st
        .records
        .iter()
        .filter(|r| r.outcome != Outcome::Unfinished)
        .count();
    if ended != st.ended {
        return Err(sched::Violation {
            job: String::new(),
            invariant: "job ended twice",
            detail: format!("{} end events for {ended} ended jobs", st.ended),
        });
    }
    check_lost_work(st)?;
    if whole_trace {
        if let Some(r) = st.records.iter().find(|r| r.outcome == Outcome::Unfinished) {
            return Err(sched::Violation {
                job: r.name.clone(),
                invariant: "job never ended",
                detail: "the event queue ran dry while it was still pending or running".to_owned(),
            });
        }
    }
    Ok(())
}
