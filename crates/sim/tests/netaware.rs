//! Network-aware placement with the fabric-backed scorer: on a tiny oversubscribed cluster the
//! choice is the best placement of all (brute force over every node set, scored from scratch
//! with `Fabric::solve`), the probe's score equals that from-scratch score, and the
//! simulator's `+network` mode keeps a new gang off the uplinks a running job uses.

use fabric::{
    contention, probe, slowdown, Collective, Fabric, FabricState, JobTraffic, JobWeight, Rank,
    RoutingConfig,
};
use sched::{
    commit, place_network_aware, GpuRequest, Job, Occupancy, PlaceInput, Placement, PodSet,
    TopologyRequest, MAX_CANDIDATES,
};
use sim::engine::{simulate, SimConfig};
use sim::network::fabric_network;
use sim::{CommProfile, TraceJob};
use topology::{Cluster, NodeId, TierSpec};

mod common;

use common::{clos, host, tier};

/// Three racks of four 8-GPU hosts with one 100 Gb/s NIC each; above the racks 4:1
/// oversubscribed.
fn racks() -> Cluster {
    let tier = |label: &str, n: u32, o: Option<f64>| TierSpec {
        switches_per_domain: Some(1),
        oversubscription: o,
        ..tier(label, n, 1.0 + f64::from(n))
    };
    clos(
        "three-racks",
        host(8, 100.0),
        12,
        vec![tier("rack", 4, None), tier("top", 12, Some(4.0))],
    )
}

fn gang(name: &str, nodes: u32) -> Job {
    Job {
        name: name.into(),
        queue: "q".into(),
        priority: 0,
        preemptible: false,
        pod_sets: vec![PodSet {
            name: "workers".into(),
            count: nodes,
            min_count: nodes,
            gpu: GpuRequest::Whole(8),
            cpu_millis: 0,
            memory_mib: 0,
            topology: TopologyRequest::default(),
        }],
        tolerations: Vec::new(),
    }
}

fn traffic(nodes: &[NodeId]) -> JobTraffic {
    JobTraffic {
        ranks: nodes
            .iter()
            .flat_map(|&node| (0..8).map(move |gpu| Rank { node, gpu }))
            .collect(),
        collective: Collective::AllReduce,
    }
}

fn nodes_of(p: &Placement) -> Vec<NodeId> {
    let mut v: Vec<NodeId> = p.pods.iter().map(|x| x.node).collect();
    v.dedup();
    v
}

const COMM: f64 = 0.4;

/// The score of starting `new` (ID 1) beside `running` (ID 0), from scratch with
/// `Fabric::solve` (the reference the probe must match).
fn score_from_scratch(c: &Cluster, running: &[NodeId], new: &[NodeId]) -> f64 {
    let cfg = RoutingConfig::default();
    let mut fabric = Fabric::new(c);
    let r = fabric.route(&traffic(running), &cfg, 0).unwrap();
    let n = fabric.route(&traffic(new), &cfg, 1).unwrap();
    let x = contention(&fabric, &n, std::slice::from_ref(&r));
    let rate = |g: f64, ideal: f64, b: f64| g / slowdown(COMM, ideal, b);
    let g_new = 8.0 * new.len() as f64;
    let g_run = 8.0 * running.len() as f64;
    rate(g_new, n.ideal_busbw_gbps, x.new_shared_gbps)
        - (rate(g_run, r.ideal_busbw_gbps, x.before_gbps[0])
            - rate(g_run, r.ideal_busbw_gbps, x.after_gbps[0]))
}

#[test]
fn the_fabric_scored_choice_is_the_best_placement_of_all() {
    let c = racks();
    let n = |i: usize| NodeId::from_index(i);
    // A running 4-node job split over racks 0 and 1 (its ring crosses the thin uplinks).
    let running_nodes = [n(0), n(1), n(4), n(5)];
    let mut occ = Occupancy::new(&c);
    let split = gang("split", 4);
    let placement = Placement {
        pods: running_nodes
            .iter()
            .enumerate()
            .map(|(k, &node)| sched::PlacedPod {
                rank: k as u32,
                pod_set: 0,
                node,
                gpu_ids: (0..8).collect(),
                milli: 1000,
                memory_mib: 80 * 1024,
            })
            .collect(),
        highest_tier: Some(1),
        worst_latency_ns: 0,
    };
    commit(&mut occ, &split, &placement).unwrap();
    let mut state = FabricState::new(&c, RoutingConfig::default());
    state.start(0, &traffic(&running_nodes)).unwrap();
    let weight = JobWeight {
        gpus: 32.0,
        comm_share: COMM,
    };
    let mut scorer = |_: &Job, p: &Placement| {
        let pr = probe(&mut state, 1, &traffic(&nodes_of(p)), &[0]).unwrap();
        pr.score(weight, &mut |_| weight)
    };
    let new = gang("new", 4);
    let input = PlaceInput::default();
    let aware = place_network_aware(&c, &occ, &new, &input, &mut scorer, MAX_CANDIDATES).unwrap();
    // The label rules alone take the free hosts of racks 0 and 1, sharing the uplinks.
    let label = nodes_of(&aware.candidates[0].placement);
    assert_eq!(label, [n(2), n(3), n(6), n(7)]);
    // Brute force: every 4 of the 8 free hosts, scored from scratch.
    let free: Vec<NodeId> = (0..12)
        .map(n)
        .filter(|x| !running_nodes.contains(x))
        .collect();
    let mut best = f64::NEG_INFINITY;
    let mut best_set = Vec::new();
    for mask in 0u32..(1 << free.len()) {
        if mask.count_ones() != 4 {
            continue;
        }
        let set: Vec<NodeId> = (0..free.len())
            .filter(|&i| mask & (1 << i) != 0)
            .map(|i| free[i])
            .collect();
        let s = score_from_scratch(&c, &running_nodes, &set);
        if s > best + 1e-9 {
            best = s;
            best_set = set;
        }
    }
    let chosen = nodes_of(aware.placement());
    assert!(
        (aware.best().score - best).abs() < 1e-6 * best.abs().max(1.0),
        "chosen {chosen:?} scores {}, the best of all {best_set:?} {best}",
        aware.best().score
    );
    // The probe agrees with the from-scratch reference on every candidate.
    for cand in &aware.candidates {
        let reference = score_from_scratch(&c, &running_nodes, &nodes_of(&cand.placement));
        assert!((cand.score - reference).abs() < 1e-9 * reference.abs().max(1.0));
    }
    // The rack that is idle: the new job gets its ideal and takes nothing.
    assert_eq!(chosen, [n(8), n(9), n(10), n(11)]);
    assert!(aware.candidates[0].score < aware.best().score);
}

/// A non-preemptible job in queue `q` spending `COMM` of a step all-reducing 1 GB.
fn trace_job(name: &str, submit: f64, duration: f64, gpus: u32) -> TraceJob {
    TraceJob {
        preemptible: false,
        comm: Some(CommProfile {
            comm_share: COMM,
            bytes_per_step: 1e9,
        }),
        ..common::job(name, submit, duration, gpus, "q")
    }
}

#[test]
fn plus_network_keeps_a_new_gang_off_a_running_jobs_uplinks() {
    let c = racks();
    // One-node fillers on all twelve hosts: those on n0, n1, n4, n5 end first, so the split
    // job (at t=1) crosses racks 0 and 1; the rest end at t=8, so at t=10 the new gang may take
    // the free hosts of racks 0 and 1 (the label rules' choice) or the idle rack 2.
    let mut trace: Vec<TraceJob> = (0..12)
        .map(|i| {
            let end = if [0, 1, 4, 5].contains(&i) { 0.5 } else { 8.0 };
            trace_job(&format!("f{i}"), 0.0, end, 8)
        })
        .collect();
    trace.push(trace_job("split", 1.0, 100.0, 32));
    trace.push(trace_job("new", 10.0, 100.0, 32));
    let run = |network_aware: bool| {
        let mut config = SimConfig {
            timeline_points: 10,
            ..common::checked()
        };
        config.policy.network_aware = network_aware;
        let mut net = fabric_network(&c, RoutingConfig::default());
        simulate(&c, &trace, &config, &mut net, &mut |_| {}).unwrap()
    };
    let label = run(false);
    let aware = run(true);
    let slowdown_of = |r: &sim::engine::SimResult, name: &str| {
        r.jobs
            .iter()
            .find(|j| j.name == name)
            .and_then(|j| j.network_slowdown)
            .unwrap()
    };
    // Label-only: the new gang fills the freed hosts next to the split job and both slow down.
    assert!(
        slowdown_of(&label, "new") > 1.05,
        "{}",
        slowdown_of(&label, "new")
    );
    assert!(slowdown_of(&label, "split") > 1.05);
    // +network: the idle rack; neither slows down.
    assert!((slowdown_of(&aware, "new") - 1.0).abs() < 1e-9);
    assert!((slowdown_of(&aware, "split") - 1.0).abs() < 1e-9);
    // Deterministic.
    assert_eq!(format!("{:?}", run(true).jobs), format!("{:?}", aware.jobs));
}
