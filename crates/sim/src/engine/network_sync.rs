//! Keeping the network model in step with the running multi-node jobs: telling it which
//! started and ended, re-solving link sharing after the last event of an instant or at a network
//! round, pacing jobs by the rates it gives, and `+network` placement scored by its probe (a
//! layout job's candidates by its step time, `Network::step_probe`).

use sched::Job;
use topology::NodeId;

use crate::engine::event::Event;
use crate::engine::net_model::{NetJob, NetRate, Network};
use crate::engine::running::advance;
use crate::engine::state::{job_input, State};
use crate::events::EventQueue;
use crate::runtime::slowdown;
use crate::time::SimTime;

/// After the last event at `now`, if the running multi-node set changed: re-solve link sharing
/// now (without network rounds, or at a round), or else pace the jobs started since by the
/// network's quick estimate and make sure a round is coming.
pub(super) fn settle(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    now: SimTime,
    network: &mut dyn Network,
) {
    // The last event at this time: re-solve now, or at the next round.
    match st.config.network_round.filter(|r| r.0 > 0) {
        _ if !st.network_dirty => {}
        Some(_) if st.network_round_now => refresh_network(st, events, now, network),
        Some(round) => {
            pace_new_jobs(st, events, now, network);
            if st.network_round_at.is_none() {
                let at = SimTime((now.0 / round.0 + 1) * round.0);
                st.network_round_at = Some(at);
                events.push(at, Event::NetworkRound);
            }
        }
        None => refresh_network(st, events, now, network),
    }
    st.network_round_now = false;
}

/// `+network`: place job `i` where the network model predicts best among the placements the
/// topology mode allows. The network is first told of the jobs started and ended since it was
/// last told, so the candidates are priced against every running multi-node job.
pub(super) fn place_network_aware(
    st: &mut State<'_>,
    i: usize,
    network: &mut dyn Network,
) -> Option<sched::Placement> {
    let started = sync_network(st, network);
    st.net_unpaced.extend(started);
    let st: &State<'_> = st;
    let mut scorer = Scorer { st, i, network };
    sched::place_network_aware(
        &st.cluster,
        &st.occupancy,
        &st.jobs[i],
        &job_input(st, i),
        &mut scorer,
        sched::MAX_CANDIDATES,
    )
    .ok()
    .map(sched::NetworkAware::into_placement)
}

/// How `+network` scores job `i`'s candidates: a layout job's by its tokens per second at the
/// step the network model gives it there beside the running jobs (one node included), bounded
/// by its step alone ([`Network::step_bound`]: every candidate not better alone than the best so
/// far beside the others is skipped); the others by their Ring AllReduce's probe.
struct Scorer<'s, 'a, 'n> {
    st: &'s State<'a>,
    i: usize,
    network: &'n mut dyn Network,
}

impl Scorer<'_, '_, '_> {
    /// Job `i` on the nodes of `p`, in rank order.
    fn net_job(&self, p: &sched::Placement, training: Option<layout::Training>) -> NetJob {
        let mut nodes: Vec<NodeId> = p.pods.iter().map(|x| x.node).collect();
        nodes.dedup();
        NetJob {
            id: self.i,
            name: String::new(),
            gpus_per_node: self.st.records[self.i].gpus / nodes.len().max(1) as u32,
            nodes,
            bytes: self.st.comm[self.i].bytes_per_step,
            training,
        }
    }

    /// Tokens per step of job `i`, if it has a layout.
    fn tokens(&self) -> Option<f64> {
        let t = self.st.trace[self.i].training.as_ref()?;
        Some(f64::from(t.global_batch) * f64::from(t.model.seq))
    }
}

impl sched::PlacementScorer for Scorer<'_, '_, '_> {
    fn score(&mut self, _: &Job, p: &sched::Placement) -> f64 {
        let st = self.st;
        let i = self.i;
        let comm_share = st.comm[i].comm_share;
        let new = fabric::JobWeight {
            gpus: f64::from(st.records[i].gpus),
            comm_share,
        };
        if let (Some(t), Some(tokens)) = (st.trace[i].training.as_ref(), self.tokens()) {
            let job = self.net_job(p, Some(layout::Training::clone(t)));
            if let Some(step_s) = self.network.step_probe(&job).filter(|&s| s > 0.0) {
                return tokens / step_s;
            }
        }
        let job = self.net_job(p, None);
        if job.nodes.len() <= 1 || comm_share <= 0.0 {
            return fabric::ideal_score(new);
        }
        match self.network.probe(&job) {
            Some(probe) => probe.score(new, &mut |id| fabric::JobWeight {
                gpus: f64::from(st.records[id as usize].gpus),
                comm_share: st.comm[id as usize].comm_share,
            }),
            None => fabric::ideal_score(new),
        }
    }

    /// A layout job's tokens per second at its step alone, with a margin for the rounding of
    /// ideal ÷ (ideal ÷ step) in the score: its step beside other jobs is never shorter
    /// (`layout::Pace::step_s` with every ratio ≤ 1). `step_probe` fails only for GPUs the
    /// cluster lacks, which a candidate never has.
    fn bound(&mut self, _: &Job, p: &sched::Placement) -> f64 {
        let (Some(t), Some(tokens)) = (self.st.trace[self.i].training.as_ref(), self.tokens())
        else {
            return f64::INFINITY;
        };
        let job = self.net_job(p, Some(layout::Training::clone(t)));
        match self.network.step_bound(&job).filter(|&s| s > 0.0) {
            Some(step_s) => tokens / step_s * (1.0 + 1e-12),
            None => f64::INFINITY,
        }
    }
}

/// Tell the network which multi-node jobs started and ended since it was last told (ends first,
/// then starts, each in ascending job order), keeping `State::net_running` the set it knows;
/// returns the jobs it was told started.
fn sync_network(st: &mut State<'_>, network: &mut dyn Network) -> Vec<usize> {
    let mut changed = std::mem::take(&mut st.net_changed);
    changed.sort_unstable();
    changed.dedup();
    let wanted = |st: &State<'_>, i: usize| {
        st.running
            .get(&i)
            .filter(|r| r.nodes.len() > 1 && st.comm[i].comm_share > 0.0)
            .map(|r| r.run)
    };
    for &i in &changed {
        if let Some(&run) = st.net_running.get(&i) {
            if wanted(st, i) != Some(run) {
                network.end(i);
                st.net_running.remove(&i);
            }
        }
    }
    let mut started = Vec::new();
    for &i in &changed {
        let Some(run) = wanted(st, i) else { continue };
        if st.net_running.get(&i) != Some(&run) {
            network.start(&NetJob {
                id: i,
                name: st.jobs[i].name.clone(),
                nodes: st.running[&i].nodes.clone(),
                gpus_per_node: st.records[i].gpus / st.records[i].nodes.max(1),
                bytes: st.comm[i].bytes_per_step,
                training: st.trace[i].training.as_deref().cloned(),
            });
            st.net_running.insert(i, run);
            started.push(i);
        }
    }
    changed.clear();
    st.net_changed = changed;
    started
}

/// Re-solve link sharing at `now`: tell the network of the jobs started and ended since it was
/// last told, ask the rates of every running multi-node job it knows, and pace each by its rate.
fn refresh_network(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    now: SimTime,
    network: &mut dyn Network,
) {
    st.network_dirty = false;
    sync_network(st, network);
    let ids: Vec<usize> = st.net_running.keys().copied().collect();
    st.net_unpaced.clear();
    if ids.is_empty() {
        return;
    }
    let rates = network.rates(&ids);
    for (&i, rate) in ids.iter().zip(rates) {
        set_pace(st, events, now, i, rate);
    }
}

/// Between network rounds: tell the network of the jobs started and ended since it was last
/// told, and pace each job started since the last pacing (here or by a `+network` placement's
/// sync) by its quick estimate ([`Network::provisional`]); the others keep their pace until the
/// round.
fn pace_new_jobs(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    now: SimTime,
    network: &mut dyn Network,
) {
    let started = sync_network(st, network);
    st.net_unpaced.extend(started);
    let mut unpaced = std::mem::take(&mut st.net_unpaced);
    unpaced.sort_unstable();
    unpaced.dedup();
    for i in unpaced {
        // A job that ended (or stopped) since is no longer the network's to pace.
        if !st.net_running.contains_key(&i) {
            continue;
        }
        if let Some(rate) = network.provisional(i) {
            set_pace(st, events, now, i, rate);
        }
    }
}

/// Running job `i` gets `rate` from now on: its completion moves if its slowdown changes.
fn set_pace(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    now: SimTime,
    i: usize,
    rate: NetRate,
) {
    let c = st.comm[i].comm_share;
    let version = st.next_version;
    let r = st.running.get_mut(&i).expect("running");
    advance(r, now);
    let s = slowdown(c, rate.ideal_busbw, rate.achieved_busbw);
    if (s - r.slowdown).abs() > 1e-12 {
        r.slowdown = s;
        r.version = version;
        st.next_version += 1;
        if s.is_finite() {
            let at = now.plus_secs(r.remaining_s * s);
            events.push(
                at,
                Event::Completion {
                    job: i,
                    version: r.version,
                },
            );
        }
    }
}
