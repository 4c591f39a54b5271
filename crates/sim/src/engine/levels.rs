//! Ranked orders and preemption by level: each job's level under Tiresias, SRTF and SJF (the
//! formulas are `crate::policies`), the pending jobs in that order, Tiresias' demotion and
//! starvation wake-ups, and the running jobs a blocked job may stop for a lower level.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::engine::config::Order;
use crate::engine::state::{job_input, next_run_work_s, State};
use crate::policies;
use crate::shares;
use crate::time::SimTime;

/// Job `i`'s level under a ranked order ([`crate::policies`]; lower runs first): Tiresias'
/// queue by attained GPU-seconds (the current run included), SRTF's remaining ideal work
/// (ms; a pending job's next run as `lifecycle::start` would count it: the restart after a stop, then
/// the work left after its last checkpoint), SJF's ideal duration (ms).
fn level(st: &State<'_>, i: usize, now: SimTime) -> u64 {
    match &st.config.policy.order {
        Order::Tiresias(t) => {
            let running = st.running.get(&i).map_or(0.0, |r| {
                f64::from(st.records[i].gpus) * now.secs_since(r.start)
            });
            policies::tiresias_queue(st.tiresias[i].attained_gpu_s + running, &t.thresholds_gpu_s)
        }
        Order::Srtf => policies::millis_level(st.running.get(&i).map_or_else(
            || next_run_work_s(st, i).1,
            |r| {
                if r.slowdown.is_finite() {
                    r.remaining_s - now.secs_since(r.last_update) / r.slowdown
                } else {
                    r.remaining_s
                }
            },
        )),
        Order::Sjf => policies::millis_level(st.durations[i]),
        Order::Fifo | Order::BestEffortFifo | Order::FairShare => 0,
    }
}

/// Pending jobs by `(level, submission, trace order)`.
pub(super) fn ranked_order(st: &State<'_>, now: SimTime) -> Vec<usize> {
    let mut v: Vec<(u64, SimTime, usize)> = st
        .pending
        .keys()
        .map(|&(t, i)| (level(st, i, now), t, i))
        .collect();
    v.sort_unstable();
    v.into_iter().map(|(_, _, i)| i).collect()
}

/// Tiresias' starvation guard: a pending job that has waited PROMOTEKNOB × its last run since it
/// was preempted goes back to queue 0 (its attained service forgotten).
pub(super) fn promote_starved(st: &mut State<'_>, now: SimTime) {
    let Order::Tiresias(t) = &st.config.policy.order else {
        return;
    };
    let knob = t.promote_knob;
    let starved: Vec<usize> = st
        .pending
        .keys()
        .map(|&(_, i)| i)
        .filter(|&i| {
            let j = &st.tiresias[i];
            policies::starved(now.secs_since(j.preempted_at), j.last_run_s, knob)
        })
        .collect();
    for i in starved {
        let j = &mut st.tiresias[i];
        j.attained_gpu_s = 0.0;
        j.last_run_s = 0.0;
        j.promoted = true;
    }
}

/// After job `i` started: under Tiresias, a wake-up when it reaches its next queue threshold, if
/// that comes before its ideal end.
pub(super) fn ask_demotion_wake(st: &mut State<'_>, i: usize, now: SimTime) {
    let Order::Tiresias(t) = &st.config.policy.order else {
        return;
    };
    let j = &mut st.tiresias[i];
    j.wake_stamp += 1;
    let gpus = st.records[i].gpus;
    if let Some(s) = policies::seconds_to_demotion(j.attained_gpu_s, gpus, &t.thresholds_gpu_s) {
        if s < st.durations[i] {
            st.timers.push((now.plus_secs(s), i, j.wake_stamp));
        }
    }
}

/// After job `i` was preempted at `now` after a run of `run_s`: its attained service grows, and
/// under Tiresias with the starvation guard on, a wake-up when it would starve.
pub(super) fn note_preempted(st: &mut State<'_>, i: usize, run_s: f64, now: SimTime) {
    let Order::Tiresias(t) = &st.config.policy.order else {
        return;
    };
    let j = &mut st.tiresias[i];
    j.wake_stamp += 1;
    j.attained_gpu_s += f64::from(st.records[i].gpus) * run_s;
    j.last_run_s = run_s;
    j.preempted_at = now;
    j.promoted = false;
    if t.promote_knob > 0 && run_s > 0.0 {
        let at = now.plus_secs(f64::from(t.promote_knob) * run_s);
        st.timers.push((at, i, j.wake_stamp));
    }
}

/// The running jobs that may be stopped (preemptible), as `(level, job, GPUs)` in the order to
/// stop them ([`policies::victim_order`]).
pub(super) fn victims_by_level(st: &State<'_>, now: SimTime) -> Vec<(u64, usize, f64)> {
    let candidates: Vec<policies::Candidate> = st
        .running
        .keys()
        .map(|&v| policies::Candidate {
            level: level(st, v, now),
            submit_ms: st.submit[v].0,
            job: v,
            preemptible: st.jobs[v].preemptible,
        })
        .collect();
    // Level 0 is nobody's victim: the order for a job below every level lists them all.
    let level_of: BTreeMap<usize, u64> = candidates.iter().map(|c| (c.job, c.level)).collect();
    policies::victim_order(0, &candidates)
        .into_iter()
        .map(|v| (level_of[&v], v, f64::from(st.records[v].gpus)))
        .collect()
}

/// The running jobs of a higher level job `i` stops to start, and its placement: victims worst
/// first until it places, then those given back (best first) while it still places. `known` is
/// [`victims_by_level`]; `attempts` counts the placements tried for real (not when even every
/// lower-level job's GPUs would not be enough).
pub(super) fn room_by_level(
    st: &State<'_>,
    i: usize,
    now: SimTime,
    known: &[(u64, usize, f64)],
    attempts: &mut usize,
) -> Option<(Vec<String>, sched::Placement)> {
    let mine = level(st, i, now);
    let eligible: Vec<(usize, f64)> = known
        .iter()
        .take_while(|&&(l, _, _)| l > mine)
        .map(|&(_, v, g)| (v, g))
        .collect();
    let want = st.requests[i].gpu;
    let mut free = st.total_gpus - st.busy_gpus;
    if free + eligible.iter().map(|&(_, g)| g).sum::<f64>() + 1e-9 < want {
        return None;
    }
    *attempts += 1;
    let input = job_input(st, i);
    // What job i may use with `stopped` stopped: their GPUs, and their CPU and memory where the
    // nodes' room is tracked.
    let input_without = |stopped: &[usize]| -> Cow<'_, sched::PlaceInput> {
        if st.input.node_free.0.is_empty() || stopped.is_empty() {
            return Cow::Borrowed(&*input);
        }
        let mut freed = (*input).clone();
        for &v in stopped {
            let requests = shares::requests(&st.trace[v].pod);
            for n in &st.running[&v].nodes {
                shares::hold(&mut freed.node_free, n.index(), &requests, false);
            }
        }
        Cow::Owned(freed)
    };
    let places = |stopped: &[usize]| {
        let mut occ = st.occupancy.clone();
        for &v in stopped {
            occ.release(&st.jobs[v].name);
        }
        sched::place_with(&st.cluster, &occ, &st.jobs[i], &input_without(stopped)).ok()
    };
    let mut occ = st.occupancy.clone();
    let mut chosen = Vec::new();
    let mut placed = false;
    for &(v, g) in &eligible {
        occ.release(&st.jobs[v].name);
        chosen.push(v);
        free += g;
        if free + 1e-9 >= want
            && sched::place_with(&st.cluster, &occ, &st.jobs[i], &input_without(&chosen)).is_ok()
        {
            placed = true;
            break;
        }
    }
    if !placed {
        return None;
    }
    // Give back what was not needed, the best-level victims first.
    let mut k = chosen.len();
    while k > 0 {
        k -= 1;
        let without: Vec<usize> = chosen
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != k)
            .map(|(_, &v)| v)
            .collect();
        if places(&without).is_some() {
            chosen = without;
        }
    }
    let placement = places(&chosen)?;
    let mut names: Vec<String> = chosen.iter().map(|&v| st.jobs[v].name.clone()).collect();
    names.sort();
    Some((names, placement))
}
