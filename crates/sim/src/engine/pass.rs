//! The scheduling pass: when it runs, the order it walks the pending jobs in, and for each
//! whether it starts (placement, with the place memo), stops lower-level work (`levels`) or
//! reclaims (`reclaim`); after it, the fragmentation measure.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;

use sched::kueue::cycle::{DEFERRED, NO_LONGER_FITS, OVERLAPPING};
use sched::kueue::preempt::Policy;
use sched::kueue::{Assignment, Outcome};
use sched::{Dialect, PreemptionPolicy, QueueId};

use crate::engine::config::Order;
use crate::engine::event::Event;
use crate::engine::levels::{promote_starved, ranked_order, room_by_level, victims_by_level};
use crate::engine::lifecycle::stop_and_start;
use crate::engine::net_model::Network;
use crate::engine::network_sync::place_network_aware;
use crate::engine::reclaim::{admits, fair_order, fair_shares, kueue_fair_order, make_room};
use crate::engine::state::{placed_by_network, set_fragmentation, State};
use crate::events::EventQueue;
use crate::queues::kueue::KueueRun;
use crate::time::SimTime;

/// Ask for a scheduling pass at the first multiple of `SimConfig::cycle` at or after `now`
/// (at `now` when the cycle is 0), unless one is already due by then.
pub(super) fn request_pass(st: &mut State<'_>, events: &mut EventQueue<Event>, now: SimTime) {
    let cycle = st.config.cycle.0;
    let at = if cycle == 0 {
        now
    } else {
        SimTime(now.0.div_ceil(cycle) * cycle)
    };
    if st.pass_scheduled.is_none_or(|t| t > at) {
        st.pass_scheduled = Some(at);
        events.push(at, Event::Pass);
    }
}

/// What a pass learns about its jobs and keeps until it starts one (a start changes every
/// answer): whether a job of this queue, preemptibility and ask is admitted; whether one of this
/// queue, priority and size has anyone it may stop; the running jobs by level (Tiresias, SRTF).
#[derive(Default)]
struct PassKnown {
    admit: BTreeMap<(usize, bool, [u64; 3]), bool>,
    hopeless: BTreeMap<(usize, i32, u64), bool>,
    victims: Option<Vec<(u64, usize, f64)>>,
}

impl PassKnown {
    /// A job started: nothing known still holds.
    fn forget(&mut self) {
        self.admit.clear();
        self.hopeless.clear();
        self.victims = None;
    }
}

/// One scheduling pass at `now`: the pending jobs in the policy's order, each started where it
/// places, by stopping lower-level work (Tiresias, SRTF) or by reclaim and quota preemption (fair
/// share, the user's queues), a few such attempts per pass; FIFO stops at the first blocked job.
/// Then the fragmentation level until the next pass.
pub(super) fn pass(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    now: SimTime,
    network: &mut dyn Network,
) {
    let fair_order_on = matches!(st.config.policy.order, Order::FairShare);
    // Fair shares order the fair-share policy and decide KAI's reclaim under every policy.
    let kai_rules = st.rules.as_ref().is_some_and(|r| r.dialect == Dialect::Kai);
    let share = (fair_order_on || kai_rules).then(|| fair_shares(st));
    let ranked = matches!(
        st.config.policy.order,
        Order::Tiresias(_) | Order::Srtf | Order::Sjf
    );
    if ranked {
        promote_starved(st, now);
    }
    if st.rules.as_ref().is_some_and(|r| r.kueue.is_some()) {
        let fair = share.as_ref().filter(|_| fair_order_on);
        st.requeued.clear();
        kueue_pass(st, events, now, network, fair, ranked);
        note_fragmentation(st, now);
        return;
    }
    // Submission order is walked on the live pending list (no copy of it per pass).
    let kueue_fair = kueue_fair_order(st);
    let mut listed = match &share {
        _ if kueue_fair.is_some() => kueue_fair.map(Vec::into_iter),
        Some(fair) if fair_order_on => Some(fair_order(st, fair).into_iter()),
        _ if ranked => Some(ranked_order(st, now).into_iter()),
        _ => None,
    };
    let mut cursor: Option<(SimTime, usize)> = None;
    st.requeued.clear();
    // Tiresias and SRTF: a few blocked jobs per pass may stop running jobs of a higher level.
    let by_level = matches!(st.config.policy.order, Order::Tiresias(_) | Order::Srtf);
    let mut level_attempts = 0;
    let may_preempt = fair_order_on || st.rules.is_some();
    let mut reclaim_attempts = 0;
    let mut known = PassKnown::default();
    let mut policies: BTreeMap<usize, PreemptionPolicy> = BTreeMap::new();
    let network_aware = st.network_places;
    // When only placement can start a job (nobody is stopped for another), the pass is over
    // once every pending job's class is known not to place in the current state.
    let only_placement = !by_level && !may_preempt && !network_aware;
    // Then a job whose class is known not to place does nothing, and unless FIFO stops at it,
    // the walk may step over it.
    let skip_known = only_placement && st.config.policy.order != Order::Fifo;
    loop {
        if only_placement && st.memo.none_starts(st.changes) {
            break;
        }
        let next = match &mut listed {
            Some(order) => order.next(),
            None => next_submitted(st, &mut cursor, skip_known),
        };
        let Some(i) = next else {
            break;
        };
        let free = st.total_gpus - st.busy_gpus;
        let want = st.requests[i].gpu;
        let enough_gpus = want <= free + 1e-9;
        if !enough_gpus {
            st.memo.note(st.class[i] as usize, st.changes, true);
        }
        // Admission depends on the queues' use, which changes only when a job starts.
        let ask = &st.requests[i];
        let admitted = st.rules.is_none()
            || *known
                .admit
                .entry((
                    st.queue_of[i],
                    st.jobs[i].preemptible,
                    [ask.gpu, ask.cpu, ask.memory].map(f64::to_bits),
                ))
                .or_insert_with(|| admits(st, i, &st.usage));
        let placed = if admitted && enough_gpus && placed_by_network(st, i) {
            place_network_aware(st, i, network)
        } else if admitted && enough_gpus {
            place_memo(st, i)
        } else {
            None
        };
        if let Some(p) = placed {
            stop_and_start(st, events, i, &[], &p, now);
            known.forget();
            continue;
        }
        let promoted = st.tiresias.get(i).is_some_and(|t| t.promoted);
        if by_level && admitted && !promoted && level_attempts < 4 {
            let by_level = known
                .victims
                .get_or_insert_with(|| victims_by_level(st, now));
            if let Some((victims, placement)) =
                room_by_level(st, i, now, by_level, &mut level_attempts)
            {
                stop_and_start(st, events, i, &victims, &placement, now);
                known.forget();
                continue;
            }
        }
        // Reclaim and preemption: a few blocked jobs per pass may displace other work.
        if may_preempt && reclaim_attempts < 4 {
            // One policy per queue and pass (the fair shares are the pass's).
            let q = st.queue_of[i];
            let policy = match &st.rules {
                Some(r) => &*policies
                    .entry(q)
                    .or_insert_with(|| r.preemption_policy(QueueId(q as u32), share.as_ref())),
                None => &PreemptionPolicy {
                    fair_share_gpus: share.clone().unwrap_or_default(),
                    ..PreemptionPolicy::default()
                },
            };
            // With the user's queues, a job nobody may be stopped for does not use an attempt
            // (known per queue, priority and size until the next start).
            let hopeless = st.rules.is_some()
                && *known
                    .hopeless
                    .entry((
                        st.queue_of[i],
                        st.jobs[i].priority,
                        (st.requests[i].gpu * 1000.0) as u64,
                    ))
                    .or_insert_with(|| {
                        sched::eligible_victims(&st.cluster, &st.occupancy, &st.jobs[i], policy)
                            .is_empty()
                    });
            reclaim_attempts += usize::from(!hopeless);
            let room = if hopeless {
                None
            } else {
                make_room(st, i, policy, admitted)
            };
            if let Some((victims, placement)) = room {
                stop_and_start(st, events, i, &victims, &placement, now);
                known.forget();
                continue;
            }
        }
        if st.config.policy.order == Order::Fifo {
            break;
        }
    }
    note_fragmentation(st, now);
}

/// Kueue's objects decide the pass (`sched::kueue::cycle`): scheduling cycles until one
/// changes nothing. A cycle takes every ClusterQueue's head, the first of its pending jobs in
/// the policy's order not yet tried in this pass (`fair`: the fair-share policy's shares;
/// `ranked`: Tiresias, SRTF, SJF; under Kueue's fair sharing its own order), and applies the
/// entries in the order the cycle looked at them: an admitted or preempting entry starts where
/// it places on its flavors' nodes (its targets stopped first); one that no longer fits after
/// another entry, or whose targets another entry took, is a head again in the next cycle; any
/// other stays pending until the next pass (Kueue's inadmissible list, requeued when something
/// changes). Under FIFO (Kueue's `StrictFIFO`) a ClusterQueue whose head stays pending offers no
/// other head in the pass.
fn kueue_pass(
    st: &mut State<'_>,
    events: &mut EventQueue<Event>,
    now: SimTime,
    network: &mut dyn Network,
    fair: Option<&BTreeMap<String, f64>>,
    ranked: bool,
) {
    let strict = st.config.policy.order == Order::Fifo;
    let reorder = st
        .rules
        .as_ref()
        .and_then(|r| r.kueue.as_ref())
        .is_some_and(KueueRun::fair_sharing);
    // Jobs that were heads and stay pending in this pass.
    let mut tried: BTreeSet<usize> = BTreeSet::new();
    // Decisions known not to start until the next start (`kueue_key`).
    let mut blocked: BTreeSet<(usize, i32, u32, i64)> = BTreeSet::new();
    let mut queues = kueue_queues(st, now, fair, ranked, &tried);
    loop {
        let mut heads: Vec<(usize, usize)> = Vec::new();
        for (&cq, q) in &mut queues {
            while let Some(&i) = q.front() {
                if kueue_key(st, i).is_some_and(|k| blocked.contains(&k)) {
                    q.pop_front();
                    tried.insert(i);
                    if strict {
                        q.clear();
                    }
                    continue;
                }
                heads.push((cq, i));
                break;
            }
        }
        if heads.is_empty() {
            break;
        }
        let entries = {
            let Some(k) = st.rules.as_mut().and_then(|r| r.kueue.as_mut()) else {
                return;
            };
            let args: Vec<(usize, &sched::Job, &[sched::PodSetExtras], i64)> = heads
                .iter()
                .map(|&(cq, i)| {
                    let extras = &st.class_extras[st.class[i] as usize];
                    (cq, &st.jobs[i], extras.as_slice(), st.submit[i].0 as i64)
                })
                .collect();
            k.cycle(&args)
        };
        let mut started = false;
        let mut changed = false;
        for (h, e) in entries {
            let (cq, i) = heads[h];
            let again = match &e.outcome {
                Outcome::Pending(why) => {
                    [NO_LONGER_FITS, OVERLAPPING, DEFERRED].contains(&why.as_str())
                }
                Outcome::Admitted | Outcome::Preempting => false,
            };
            if again {
                continue;
            }
            changed = true;
            let q = queues.get_mut(&cq).expect("a head's ClusterQueue");
            q.pop_front();
            let room = match e.outcome {
                Outcome::Pending(_) => None,
                Outcome::Admitted | Outcome::Preempting => {
                    kueue_start(st, i, cq, &e.assignment, network)
                }
            };
            if let Some((victims, placement)) = room {
                stop_and_start(st, events, i, &victims, &placement, now);
                started = true;
                continue;
            }
            tried.insert(i);
            blocked.extend(kueue_key(st, i));
            if strict {
                q.clear();
            }
        }
        if started {
            blocked.clear();
            if reorder {
                queues = kueue_queues(st, now, fair, ranked, &tried);
            }
        } else if !changed {
            break;
        }
    }
}

/// Per ClusterQueue node, its pending jobs in the policy's order, without `tried` and the
/// jobs stopped in this pass.
fn kueue_queues(
    st: &State<'_>,
    now: SimTime,
    fair: Option<&BTreeMap<String, f64>>,
    ranked: bool,
    tried: &BTreeSet<usize>,
) -> BTreeMap<usize, VecDeque<usize>> {
    let order = match (kueue_fair_order(st), fair) {
        (Some(v), _) => v,
        (None, Some(fair)) => fair_order(st, fair),
        (None, None) if ranked => ranked_order(st, now),
        (None, None) => st.pending.keys().map(|&(_, i)| i).collect(),
    };
    let mut queues: BTreeMap<usize, VecDeque<usize>> = BTreeMap::new();
    for i in order {
        if tried.contains(&i) || st.requeued.contains(&i) {
            continue;
        }
        if let Some((cq, ..)) = kueue_key(st, i) {
            queues.entry(cq).or_default().push_back(i);
        }
    }
    queues
}

/// What a Kueue decision for job `i` depends on besides the state: its ClusterQueue, priority
/// and placement class, and its creation when its ClusterQueue's policy compares it
/// (`LowerOrNewerEqualPriority`); `None` when its queue is no ClusterQueue.
fn kueue_key(st: &State<'_>, i: usize) -> Option<(usize, i32, u32, i64)> {
    let k = st.rules.as_ref()?.kueue.as_ref()?;
    let cq = k.cluster_queue(&st.jobs[i].queue)?;
    let p = k.queues().spec(cq).preemption;
    let newer = Policy::LowerOrNewerEqualPriority;
    let created = if p.within_cluster_queue == newer || p.reclaim_within_cohort == newer {
        st.submit[i].0 as i64
    } else {
        0
    };
    Some((cq, st.jobs[i].priority, st.class[i], created))
}

/// Kueue's admitted or preempting entry for pending job `i` (ClusterQueue node `cq`, flavors
/// and targets `a`): its placement on the assigned flavors' nodes with the targets gone, and
/// its assignment staged for the start. `None` leaves it pending and stops nobody (also when
/// its targets would free the quota but not the room).
fn kueue_start(
    st: &mut State<'_>,
    i: usize,
    cq: usize,
    a: &Assignment,
    network: &mut dyn Network,
) -> Option<(Vec<String>, sched::Placement)> {
    let c = st.class[i] as usize;
    let enough_gpus = st.requests[i].gpu <= st.total_gpus - st.busy_gpus + 1e-9;
    if !enough_gpus {
        st.memo.note(c, st.changes, true);
    }
    let k = st.rules.as_mut()?.kueue.as_mut()?;
    let victims = k.target_names(a);
    let on_flavors = k.on_flavors(a, &st.class_extras[c], st.jobs[i].pod_sets.len());
    let placement = match on_flavors {
        None if victims.is_empty() && !enough_gpus => None,
        None if victims.is_empty() && placed_by_network(st, i) => {
            place_network_aware(st, i, network)
        }
        None if victims.is_empty() => place_memo(st, i),
        extras => {
            let mut occupancy = Cow::Borrowed(&st.occupancy);
            for v in &victims {
                occupancy.to_mut().release(v);
            }
            let mut extras = extras.unwrap_or_else(|| st.class_extras[c].clone());
            std::mem::swap(&mut st.input.pod_sets, &mut extras);
            let placed = sched::place_with(&st.cluster, &occupancy, &st.jobs[i], &st.input).ok();
            std::mem::swap(&mut st.input.pod_sets, &mut extras);
            placed
        }
    }?;
    st.rules.as_mut()?.kueue.as_mut()?.stage(i, cq, a);
    Some((victims, placement))
}

/// After a pass at `now`, the fragmentation level until the next: the share of GPUs free while
/// jobs wait and none of the smallest waiting shapes fits (0 when nothing waits or nothing is
/// free).
fn note_fragmentation(st: &mut State<'_>, now: SimTime) {
    let free = st.total_gpus - st.busy_gpus;
    let level = if st.pending.is_empty() || free <= 0.0 {
        0.0
    } else {
        // Per size (GPUs, held share), smallest first, the lowest-numbered waiting job.
        let smallest = st.pending_by_size.smallest(8);
        let any_fits = smallest.into_iter().any(|i| place_memo(st, i).is_some());
        if any_fits {
            0.0
        } else {
            free / st.total_gpus
        }
    };
    set_fragmentation(st, now, level);
}

/// The next pending job in submission order after `cursor` (moved to it), skipping jobs that
/// went back to the list during this pass (the pass tries the jobs pending when it began) and,
/// if `skip_known`, jobs whose class is known not to start in the current state: one walk of
/// the list however many it steps over.
fn next_submitted(
    st: &State<'_>,
    cursor: &mut Option<(SimTime, usize)>,
    skip_known: bool,
) -> Option<usize> {
    let from = match *cursor {
        None => Bound::Unbounded,
        Some(after) => Bound::Excluded(after),
    };
    for &(submitted, i) in st.pending.range((from, Bound::Unbounded)).map(|(k, _)| k) {
        *cursor = Some((submitted, i));
        let known = skip_known && st.memo.known(st.class[i] as usize, st.changes);
        if !known && !st.requeued.contains(&i) {
            return Some(i);
        }
    }
    None
}

/// `sched::place_with` for job `i` in the current state, unless its class is known to fail
/// there (`PlaceMemo`); a failure is noted. The class's extras are swapped into
/// [`State::input`] for the call (no copy of the nodes' room). Debug builds (the tests) place
/// a known failure anyway and stop if it places.
fn place_memo(st: &mut State<'_>, i: usize) -> Option<sched::Placement> {
    let c = st.class[i] as usize;
    let known_to_fail = st.memo.failed[c] == st.changes + 1;
    if known_to_fail && !cfg!(debug_assertions) {
        return None;
    }
    std::mem::swap(&mut st.input.pod_sets, &mut st.class_extras[c]);
    let placed = sched::place_with(&st.cluster, &st.occupancy, &st.jobs[i], &st.input).ok();
    std::mem::swap(&mut st.input.pod_sets, &mut st.class_extras[c]);
    assert!(
        !(known_to_fail && placed.is_some()),
        "job {i}: its class was known not to place, yet it places"
    );
    if placed.is_none() {
        st.memo.note(c, st.changes, false);
    }
    placed
}
