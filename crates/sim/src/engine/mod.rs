//! The simulation loop: the single owner of simulated state. Arrivals, scheduling passes,
//! completions and preemptions are events ordered by `(time, seq)`; the scheduler (`sched`)
//! decides placements and victims, a network model decides each multi-node job's bandwidth.
//!
//! Design note (2026-12-01). Who decides what:
//! - [`simulate`] owns the event queue, the occupancy, the pending list and the running jobs.
//! - A scheduling pass runs at the next multiple of `cycle` after any arrival or completion
//!   (same-time events are all applied first). The pass orders pending jobs by the policy and
//!   asks `sched::place` (or `sched::place_with_preemption` under fair share) for each, at most
//!   once per placement class between two changes of state (`PlaceMemo`; a pass in which
//!   only placement can start a job ends once no pending class can). Under a
//!   `+network` policy ([`Policy::network_aware`]) it first tells the network model the jobs
//!   started and ended so far and asks `sched::place_network_aware`, scoring each multi-node
//!   candidate by [`Network::probe`] against every running multi-node job; a job that uses no
//!   network (`comm_share` 0, as every job under `--no-network`) would score every candidate
//!   alike, so it is placed as without `+network`.
//! - Runtime: a running job has `remaining` seconds of ideal work and a slowdown factor from
//!   [`crate::runtime::slowdown`]; whenever the set of running multi-node jobs changes, every
//!   such job's progress is brought up to date, the network model is asked again, and its
//!   completion is rescheduled (older completion events carry an older version and are
//!   ignored). The network model ([`Network`]) is told which jobs started and ended since it
//!   was last asked, so it can keep its own state (routes, rates) between changes.
//! - A preempted job loses its progress since its last checkpoint (all of it without
//!   checkpoints, the default) and goes back to the pending list with its original submission
//!   time; the GPU-seconds since that checkpoint count as lost work. Node failures
//!   ([`SimConfig::failures`], design note in [`crate::failures`]) are events too: the node is
//!   not Ready until its repair, and every job with a pod on it stops the same way.
//! - With the user's queues ([`SimConfig::queues`], design note in [`crate::queues`]) every
//!   policy admits a job only when its queue's rules allow it now (a job they can never admit
//!   fails at arrival), and a blocked job may stop others under those rules under every policy
//!   (up to four attempts per pass): first, when quota blocks it, the eligible jobs cheapest
//!   first until it is admitted (then given back most expensive first while it stays admitted),
//!   then whatever placement needs (`sched::place_with_preemption_input`). Per-queue and
//!   per-resource use is kept as jobs start and stop.
//!
//! Where each part lives: [`simulate`] here is the loop, calling one named step per event;
//! `setup` builds the state and the first events, `arrival` admits or fails an arriving job,
//! `pass` runs a scheduling pass (with `levels` for Tiresias/SRTF preemption and `reclaim` for
//! fair-share and quota preemption), `lifecycle` starts, finishes and stops runs,
//! `node_failures` takes nodes down and up, `network_sync` keeps the network model in step,
//! `invariants` checks the state, and `close` turns the final state into a [`SimResult`]. The
//! state itself and its bookkeeping are `state` (with `running`, `weng`, `place_memo` and
//! `pending_by_size`); the public types are `config`, `results`, `error` and `net_model`.

mod arrival;
mod close;
mod config;
mod error;
mod event;
mod invariants;
mod levels;
mod lifecycle;
mod net_model;
mod network_sync;
mod node_failures;
mod not_run;
mod pass;
mod pending_by_size;
mod place_memo;
mod reclaim;
mod results;
mod running;
mod setup;
mod state;
mod weng;

pub use config::{CommDefaults, Order, Policy, SimConfig, TopologyMode};
pub use error::SimError;
pub use net_model::{NetJob, NetRate, Network};
pub use not_run::NotRunReason;
pub use results::{JobRecord, Outcome, QueueRun, QueueSummary, ReasonCount, SimResult, Summary};

use topology::Cluster;

use crate::engine::arrival::{arrive, Feasibility};
use crate::engine::event::Event;
use crate::engine::lifecycle::finish;
use crate::engine::node_failures::{node_down, node_up};
use crate::engine::pass::{pass, request_pass};
use crate::engine::state::State;
use crate::events::EventQueue;
use crate::time::SimTime;
use crate::trace::TraceJob;

/// Replay `trace` on `cluster` under `config`. `network` gives the bandwidth of running
/// multi-node jobs (called whenever their set changes); `progress` is told how many jobs have
/// ended so far.
pub fn simulate(
    cluster: &Cluster,
    trace: &[TraceJob],
    config: &SimConfig,
    network: &mut dyn Network,
    progress: &mut dyn FnMut(usize),
) -> Result<SimResult, SimError> {
    let setup::Prepared {
        mut st,
        failures,
        empty_room,
    } = setup::prepare(cluster, trace, config)?;
    let mut events = setup::first_events(&st, &failures);
    let mut feasibility = Feasibility::new(cluster, empty_room, &st);
    let mut now = SimTime::ZERO;
    let mut checked_changes = None;
    while let Some(ev) = events.pop() {
        if config.horizon.is_some_and(|h| ev.time > h) {
            break;
        }
        if is_stale(&st, ev.event) {
            continue;
        }
        now = ev.time;
        apply(
            &mut st,
            &mut events,
            &mut feasibility,
            ev.event,
            now,
            network,
            progress,
        )?;
        for (at, job, stamp) in std::mem::take(&mut st.timers) {
            events.push(at, Event::Wake { job, stamp });
        }
        if events.peek_time() != Some(now) {
            network_sync::settle(&mut st, &mut events, now, network);
        }
        // After every event; an event that started, ended and preempted nothing (an arrival, a
        // pass that placed nobody) leaves the checked state as it was.
        if config.check_invariants && checked_changes != Some(st.changes) {
            invariants::check_state(&st).map_err(|v| invariant_at(now, v))?;
            checked_changes = Some(st.changes);
        }
    }
    if config.check_invariants {
        invariants::check_run_end(&st, config.horizon.is_none())
            .map_err(|v| invariant_at(now, v))?;
    }
    let end = config.horizon.map_or(now, |h| h.max(now));
    Ok(close::finish_run(st, end))
}

/// Whether `event` is no event at all: a stale wake-up (its job started, stopped or ended
/// since), a stale completion (its job was re-paced, stopped or ended since: it must not move
/// the clock, or it would stretch the makespan past the last real event), or a failure, repair
/// or network round after every job has ended (they change nothing and must not stretch the
/// makespan).
fn is_stale(st: &State<'_>, event: Event) -> bool {
    match event {
        Event::Wake { job, stamp } => st.tiresias.get(job).is_none_or(|t| t.wake_stamp != stamp),
        Event::Completion { job, version } => {
            st.running.get(&job).is_none_or(|r| r.version != version)
        }
        Event::NodeDown { .. } | Event::NodeUp(_) | Event::NetworkRound => {
            st.ended == st.records.len()
        }
        Event::Arrival(_) | Event::Pass => false,
    }
}

/// Apply `event` at `now`: one named step per kind.
fn apply(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    feasibility: &mut Feasibility<'_>,
    event: Event,
    now: SimTime,
    network: &mut dyn Network,
    progress: &mut dyn FnMut(usize),
) -> Result<(), SimError> {
    match event {
        Event::Arrival(i) => arrive(st, events, feasibility, i, now, progress)?,
        Event::Completion { job, .. } => complete(st, events, job, now, progress)?,
        Event::Pass => {
            st.pass_scheduled = None;
            pass(st, events, now, network);
        }
        Event::Wake { .. } => request_pass(st, events, now),
        Event::NodeDown { node, down } => {
            node_down(st, node, now);
            events.push(SimTime(now.0.saturating_add(down)), Event::NodeUp(node));
            request_pass(st, events, now);
        }
        Event::NodeUp(node) => {
            node_up(st, node);
            request_pass(st, events, now);
        }
        Event::NetworkRound => {
            st.network_round_at = None;
            st.network_round_now = true;
        }
    }
    Ok(())
}

/// Running job `job` completes at `now`: its run ends, `progress` is told, and a pass is asked
/// for.
fn complete(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    job: usize,
    now: SimTime,
    progress: &mut dyn FnMut(usize),
) -> Result<(), SimError> {
    if st.config.check_invariants {
        invariants::check_first_end(st, job).map_err(|v| invariant_at(now, v))?;
    }
    finish(st, job, now);
    st.jobs.retire(job);
    st.ended += 1;
    progress(st.ended);
    request_pass(st, events, now);
    Ok(())
}

/// A broken invariant as the run's error, at simulated time `now`.
fn invariant_at(now: SimTime, violation: sched::Violation) -> SimError {
    SimError::Invariant {
        at_ms: now.0,
        violation,
    }
}
