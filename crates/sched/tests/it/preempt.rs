//! Preemption and reclaim: free one whole rack rather than scattered nodes, stop as little as
//! possible, stop nobody when nothing helps, respect priorities, preemptibility and fair share.

use std::collections::BTreeMap;

use sched::{place_with_preemption, Occupancy, PodAllocation, PreemptionPolicy, RunningJob};
use topology::{Cluster, NodeId};

use crate::*;

fn run(
    c: &Cluster,
    occ: &mut Occupancy,
    name: &str,
    queue: &str,
    prio: i32,
    preemptible: bool,
    nodes: &[usize],
) {
    let pods = nodes
        .iter()
        .map(|&n| PodAllocation {
            node: NodeId::from_index(n),
            gpu_ids: (0..c.nodes[n].gpus).collect(),
            milli: 1000,
            memory_mib: 80 * 1024,
        })
        .collect();
    occ.allocate(
        RunningJob {
            name: name.into(),
            queue: queue.into(),
            priority: prio,
            preemptible,
        },
        pods,
    )
    .expect("valid state");
}

/// Four racks of four nodes. Rack 0: one 3-node job. Racks 1–3: three 1-node jobs each. Every
/// rack has one free node; the preemptor needs a whole rack.
fn scattered() -> (Cluster, Occupancy) {
    let c = cluster(&[&[4, 4, 4, 4]], 8);
    let mut occ = Occupancy::new(&c);
    run(&c, &mut occ, "rack0-job", "q", 0, true, &[0, 1, 2]);
    for r in 1..4 {
        for k in 0..3 {
            let n = r * 4 + k;
            run(&c, &mut occ, &format!("small-{n:02}"), "q", 0, true, &[n]);
        }
    }
    (c, occ)
}

#[test]
fn freeing_one_rack_beats_freeing_scattered_nodes() {
    let (c, occ) = scattered();
    let mut j = job("big", 4, 8, required(&c, RACK));
    j.priority = 10;
    let d = place_with_preemption(&c, &occ, &j, &PreemptionPolicy::default()).expect("fits");
    assert_eq!(d.victims, vec!["rack0-job".to_owned()]);
    assert_eq!(pods_per_rack(&c, &d.placement), vec![("b0/r0".into(), 4)]);
    // The decision is real: applying it makes the job fit.
    let mut after = occ.clone();
    for v in &d.victims {
        after.release(v);
    }
    assert!(sched::place(&c, &after, &j).is_ok());
    // And minimal: keeping any victim makes it not fit.
    assert!(sched::place(&c, &occ, &j).is_err());
}

#[test]
fn preempts_as_little_as_possible_within_the_domain() {
    let (c, mut occ) = scattered();
    // Rack 3 gets its free node filled by a tiny job: still, freeing rack 0 is cheapest.
    run(&c, &mut occ, "extra", "q", 0, true, &[15]);
    let mut j = job("half", 2, 8, required(&c, RACK));
    j.priority = 10;
    let d = place_with_preemption(&c, &occ, &j, &PreemptionPolicy::default()).expect("fits");
    // One 1-node victim next to a free node is enough.
    assert_eq!(d.victims.len(), 1);
    assert!(d.victims[0].starts_with("small-"), "{:?}", d.victims);
}

#[test]
fn nothing_is_preempted_when_nothing_makes_it_fit() {
    let (c, occ) = scattered();
    let mut j = job("huge", 5, 8, required(&c, RACK));
    j.priority = 10;
    let e = place_with_preemption(&c, &occ, &j, &PreemptionPolicy::default());
    assert!(e.is_err());
    // Equal priority in the same queue: no preemption.
    let j = job("peer", 4, 8, required(&c, RACK));
    assert!(place_with_preemption(&c, &occ, &j, &PreemptionPolicy::default()).is_err());
}

#[test]
fn non_preemptible_work_is_never_stopped() {
    let c = cluster(&[&[2]], 8);
    let mut occ = Occupancy::new(&c);
    run(&c, &mut occ, "keep", "q", 0, false, &[0]);
    run(&c, &mut occ, "lose", "q", 0, true, &[1]);
    let mut j = job("j", 2, 8, preferred(&c, RACK));
    j.priority = 5;
    assert!(place_with_preemption(&c, &occ, &j, &PreemptionPolicy::default()).is_err());
    let mut one = job("j", 1, 8, preferred(&c, RACK));
    one.priority = 5;
    let d = place_with_preemption(&c, &occ, &one, &PreemptionPolicy::default()).expect("fits");
    assert_eq!(d.victims, vec!["lose".to_owned()]);
}

#[test]
fn reclaim_takes_only_from_queues_above_their_fair_share() {
    let c = cluster(&[&[4]], 8);
    let mut occ = Occupancy::new(&c);
    // Queue a uses 24 GPUs with a fair share of 16; queue b uses 8 of 16.
    run(&c, &mut occ, "a1", "a", 0, true, &[0]);
    run(&c, &mut occ, "a2", "a", 0, true, &[1]);
    run(&c, &mut occ, "a3", "a", 0, true, &[2]);
    run(&c, &mut occ, "b1", "b", 0, true, &[3]);
    let policy = PreemptionPolicy {
        fair_share_gpus: BTreeMap::from([("a".to_owned(), 16.0), ("b".to_owned(), 16.0)]),
        ..PreemptionPolicy::default()
    };
    let mut jb = job("jb", 1, 8, TopologyRequest::default());
    jb.queue = "b".into();
    let d = place_with_preemption(&c, &occ, &jb, &policy).expect("b reclaims from a");
    assert_eq!(d.victims.len(), 1);
    assert!(d.victims[0].starts_with('a'));
    // a is above its share: it may not reclaim from b.
    let mut ja = job("ja", 1, 8, TopologyRequest::default());
    ja.queue = "a".into();
    assert!(place_with_preemption(&c, &occ, &ja, &policy).is_err());
    // Without fair shares there is no reclaim at all.
    assert!(place_with_preemption(&c, &occ, &jb, &PreemptionPolicy::default()).is_err());
}

#[test]
fn kueue_policy_flags_narrow_who_may_be_stopped() {
    let c = cluster(&[&[2]], 8);
    let mut occ = Occupancy::new(&c);
    run(&c, &mut occ, "low", "q", 0, true, &[0]);
    run(&c, &mut occ, "other", "p", 5, true, &[1]);
    let mut j = job("j", 1, 8, TopologyRequest::default());
    j.priority = 5;
    // Within the queue: allowed by default, refused by `withinClusterQueue: Never`.
    let within = PreemptionPolicy::default();
    assert_eq!(
        place_with_preemption(&c, &occ, &j, &within)
            .expect("fits")
            .victims,
        vec!["low".to_owned()]
    );
    let never = PreemptionPolicy {
        no_preemption_within_queue: true,
        ..PreemptionPolicy::default()
    };
    assert!(place_with_preemption(&c, &occ, &j, &never).is_err());
    // Reclaim from `p` (above its share of 0): any priority by default, only lower priority
    // with `reclaimWithinCohort: LowerPriority` (`other` has the job's own priority).
    let reclaim = PreemptionPolicy {
        fair_share_gpus: BTreeMap::from([("q".to_owned(), 16.0), ("p".to_owned(), 0.0)]),
        no_preemption_within_queue: true,
        ..PreemptionPolicy::default()
    };
    assert_eq!(
        place_with_preemption(&c, &occ, &j, &reclaim)
            .expect("fits")
            .victims,
        vec!["other".to_owned()]
    );
    let lower_only = PreemptionPolicy {
        reclaim_lower_priority_only: true,
        ..reclaim
    };
    assert!(place_with_preemption(&c, &occ, &j, &lower_only).is_err());
}

use sched::TopologyRequest;

mod props {
    use proptest::prelude::*;
    use sched::{place, place_with_preemption, Occupancy, PreemptionPolicy};

    use crate::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Victims are eligible, stopping them makes the job fit, and when no decision is
        /// returned even stopping every eligible job would not help.
        #[test]
        fn decisions_are_valid_and_nothing_is_stopped_in_vain(
            racks in prop::collection::vec(1usize..=3, 1..=4),
            running in prop::collection::vec((0usize..12, 1u32..=8, 0i32..4, any::<bool>()), 0..10),
            count in 1u32..=6,
            topo in 0u8..=2,
            prio in 0i32..5,
        ) {
            let c = cluster(&[racks.as_slice()], 8);
            let mut occ = Occupancy::new(&c);
            for (i, &(node, gpus, p, preemptible)) in running.iter().enumerate() {
                let node = node % c.nodes.len();
                let used: u32 = (0..8).filter(|&g| occ.used_milli(topology::NodeId::from_index(node), g) > 0).count() as u32;
                let gpus = gpus.min(8 - used);
                if gpus == 0 { continue; }
                let free: Vec<u32> = (0..8).filter(|&g| occ.used_milli(topology::NodeId::from_index(node), g) == 0).take(gpus as usize).collect();
                occ.allocate(
                    sched::RunningJob { name: format!("r{i}"), queue: "q".into(), priority: p, preemptible },
                    vec![sched::PodAllocation { node: topology::NodeId::from_index(node), gpu_ids: free, milli: 1000, memory_mib: 80 * 1024 }],
                ).expect("valid");
            }
            let t = match topo { 0 => TopologyRequest::default(), 1 => required(&c, RACK), _ => preferred(&c, RACK) };
            let mut j = job("p", count, 4, t);
            j.priority = prio;
            let d = place_with_preemption(&c, &occ, &j, &PreemptionPolicy::default());
            prop_assert_eq!(&d, &place_with_preemption(&c, &occ, &j, &PreemptionPolicy::default()));
            let eligible: Vec<String> = occ.jobs().values().filter(|a| a.job.preemptible && a.job.priority < prio).map(|a| a.job.name.clone()).collect();
            match d {
                Ok(d) => {
                    let mut after = occ.clone();
                    for v in &d.victims {
                        prop_assert!(eligible.contains(v), "{} is not eligible", v);
                        after.release(v);
                    }
                    prop_assert!(place(&c, &after, &j).is_ok());
                    if place(&c, &occ, &j).is_ok() { prop_assert!(d.victims.is_empty()); }
                }
                Err(_) => {
                    let mut all = occ.clone();
                    for v in &eligible { all.release(v); }
                    prop_assert!(place(&c, &all, &j).is_err(), "stopping every eligible job would have made it fit");
                }
            }
        }
    }
}
