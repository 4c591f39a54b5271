//! Reclaim and quota preemption: fair shares and the fair-share order, whether a queue admits a
//! job under the user's rules, and the victims that let a blocked job start (by quota first,
//! then by placement through `sched::place_with_preemption_input`).

use std::collections::BTreeMap;

use sched::kueue::fair::{dominant_resource_share, Share};
use sched::{Dialect, PreemptionPolicy, QueueId, Resources};

use crate::engine::state::{job_input, release_ask, State};
use crate::time::SimTime;

/// Whether job `i`'s queue admits it given each queue's `usage` (always without the user's
/// queues).
pub(super) fn admits(st: &State<'_>, i: usize, usage: &[Resources]) -> bool {
    st.rules.as_ref().is_none_or(|r| {
        r.admits(
            usage,
            &st.non_preemptible,
            QueueId(st.queue_of[i] as u32),
            &st.requests[i],
            st.jobs[i].preemptible,
        )
    })
}

/// The victims and placement that let blocked job `i` start, if any: when its queue does not
/// admit it (`admitted` false), first the eligible jobs (`sched::eligible_victims`, cheapest
/// first) until it does, then those given back most expensive first while it stays admitted;
/// then `sched::place_with_preemption_input` on what is left. Nobody is stopped for nothing.
pub(super) fn make_room(
    st: &State<'_>,
    i: usize,
    policy: &PreemptionPolicy,
    admitted: bool,
) -> Option<(Vec<String>, sched::Placement)> {
    let job = &st.jobs[i];
    let mut for_quota: Vec<String> = Vec::new();
    let scratch;
    let occupancy = if admitted {
        &st.occupancy
    } else {
        let candidates = sched::eligible_victims(&st.cluster, &st.occupancy, job, policy);
        let mut usage = st.usage.clone();
        let mut chosen: Vec<(usize, &str)> = Vec::new();
        let mut ok = false;
        for name in candidates {
            let v = *st.name_index.get(name)?;
            release_ask(&mut usage, st, v, -1.0);
            chosen.push((v, name));
            if admits(st, i, &usage) {
                ok = true;
                break;
            }
        }
        if !ok {
            return None;
        }
        let mut kept_stopped = Vec::new();
        while let Some((v, name)) = chosen.pop() {
            release_ask(&mut usage, st, v, 1.0);
            if !admits(st, i, &usage) {
                release_ask(&mut usage, st, v, -1.0);
                kept_stopped.push(name);
            }
        }
        let mut occ = st.occupancy.clone();
        for name in &kept_stopped {
            occ.release(name);
            for_quota.push((*name).to_owned());
        }
        scratch = occ;
        &scratch
    };
    let d =
        sched::place_with_preemption_input(&st.cluster, occupancy, job, policy, &job_input(st, i))
            .ok()?;
    if admitted && d.victims.is_empty() {
        return None;
    }
    for_quota.extend(d.victims);
    for_quota.sort();
    Some((for_quota, d.placement))
}

/// Under Kueue's fair sharing (`KueueModel::fair_sharing`), the pending jobs in the order
/// Kueue's fair sharing admits: their ClusterQueue's dominant resource share over its weight
/// now (`sched::kueue::fair`, lowest first), then priority (highest first), then submission;
/// `None` when fair sharing is off.
pub(super) fn kueue_fair_order(st: &State<'_>) -> Option<Vec<usize>> {
    let k = st.rules.as_ref()?.kueue.as_ref()?;
    if !k.fair_sharing() {
        return None;
    }
    let q = k.queues();
    let mut shares: BTreeMap<usize, Share> = BTreeMap::new();
    let mut v: Vec<(Share, i32, SimTime, usize)> = st
        .pending
        .keys()
        .map(|&(t, i)| {
            let share = k.cluster_queue(&st.jobs[i].queue).map(|cq| {
                shares
                    .entry(cq)
                    .or_insert_with(|| {
                        dominant_resource_share(q, cq, &[], q.spec(cq).fair_weight_milli)
                    })
                    .clone()
            });
            let none = Share {
                ratio: 0.0,
                resource: None,
                weight: 1.0,
                borrowing: false,
            };
            (share.unwrap_or(none), -st.jobs[i].priority, t, i)
        })
        .collect();
    v.sort_by(|a, b| {
        a.0.compare(&b.0)
            .then((a.1, a.2, a.3).cmp(&(b.1, b.2, b.3)))
    });
    Some(v.into_iter().map(|(_, _, _, i)| i).collect())
}

/// Pending jobs ordered by their queue's use over fair share (lowest first), then priority
/// (highest first), then submission.
pub(super) fn fair_order(st: &State<'_>, fair: &BTreeMap<String, f64>) -> Vec<usize> {
    let mut v: Vec<(u64, i32, SimTime, usize)> = st
        .pending
        .keys()
        .map(|&(t, i)| {
            let q = &st.jobs[i].queue;
            let s = fair.get(q).copied().unwrap_or(0.0);
            let ratio = if s > 0.0 {
                st.usage[st.queue_of[i]].gpu / s
            } else {
                f64::MAX
            };
            // Quantise so equal ratios compare equal regardless of float noise.
            (
                (ratio * 1e6).min(u64::MAX as f64) as u64,
                -st.jobs[i].priority,
                t,
                i,
            )
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, _, _, i)| i).collect()
}

/// Fair share of GPUs per queue, from running plus pending demand, by the queues' rules
/// (railyard's own without the user's queues).
pub(super) fn fair_shares(st: &State<'_>) -> BTreeMap<String, f64> {
    let mut demand = st.usage.clone();
    for &(_, i) in st.pending.keys() {
        let d = &mut demand[st.queue_of[i]];
        let ask = &st.requests[i];
        d.gpu += ask.gpu;
        d.cpu += ask.cpu;
        d.memory += ask.memory;
    }
    let dialect = st.rules.as_ref().map_or(Dialect::Kueue, |r| r.dialect);
    let capacity = Resources {
        gpu: st.total_gpus,
        cpu: f64::INFINITY,
        memory: f64::INFINITY,
    };
    let shares = sched::fair_share_in(&st.queue_tree, &demand, &capacity, dialect);
    st.queue_tree
        .queues
        .iter()
        .zip(shares)
        .map(|(q, s)| (q.name.clone(), s.gpu))
        .collect()
}
