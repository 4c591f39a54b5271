//! The free-capacity counts [`Occupancy`] keeps on allocate, release and node changes, against
//! a recount from scratch; and placement from those counts against the full algorithm (the
//! same `place` on an occupancy that does not track node state, which never takes the counted
//! path), after random churn of jobs and nodes.

use proptest::prelude::*;
use sched::{
    commit, place, place_with, GpuRequest, Occupancy, PlaceInput, PlaceOptions, SliceLayer,
    Toleration, TopologyRequest, UnconstrainedMode,
};
use topology::{Cluster, NodeId, Taint, TaintEffect};

use crate::*;

/// 1–3 blocks × 1–3 racks × 1–4 nodes of 1–8 GPUs; a few not ready or tainted.
fn arb_cluster() -> impl Strategy<Value = Cluster> {
    let node = (1u32..=8, prop::bool::weighted(0.9), 0u8..=5);
    prop::collection::vec(
        prop::collection::vec(prop::collection::vec(node, 1..=4), 1..=3),
        1..=3,
    )
    .prop_map(|blocks| {
        let mut nodes = Vec::new();
        for (b, racks) in blocks.iter().enumerate() {
            for (r, ns) in racks.iter().enumerate() {
                for &(gpus, ready, taint) in ns {
                    let effect = match taint {
                        0 => Some(TaintEffect::NoSchedule),
                        1 => Some(TaintEffect::PreferNoSchedule),
                        _ => None,
                    };
                    nodes.push(N {
                        block: b,
                        rack: r,
                        gpus,
                        ready,
                        taints: effect.into_iter().map(taint_of).collect(),
                    });
                }
            }
        }
        cluster_of(&nodes)
    })
}

fn taint_of(effect: TaintEffect) -> Taint {
    Taint {
        key: "maintenance".into(),
        value: String::new(),
        effect,
    }
}

#[derive(Clone, Debug)]
struct Spec {
    count: u32,
    gpu: GpuRequest,
    /// 0–2 none, 3 required rack, 4 required block, 5 required host, 6 preferred rack,
    /// 7 preferred block.
    topo: u8,
    slice: bool,
    tolerates: bool,
}

fn arb_spec() -> impl Strategy<Value = Spec> {
    (
        1u32..=6,
        prop_oneof![
            6 => (1u32..=8).prop_map(GpuRequest::Whole),
            1 => (1u32..=9).prop_map(|t| GpuRequest::fraction(t * 100)),
            1 => (1u32..=8).prop_map(|g| GpuRequest::memory_mib(g * 10 * 1024)),
        ],
        0u8..=7,
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(count, gpu, topo, slice, tolerates)| Spec {
            count,
            gpu,
            topo,
            slice,
            tolerates,
        })
}

fn job_of(c: &Cluster, name: &str, s: &Spec) -> sched::Job {
    let level = |l| Some(lv(c, l));
    let (required, preferred) = match s.topo {
        3 => (level(RACK), None),
        4 => (level(BLOCK), None),
        5 => (level(HOST), None),
        6 => (None, level(RACK)),
        7 => (None, level(BLOCK)),
        _ => (None, None),
    };
    let slices = if s.slice && s.count % 2 == 0 {
        vec![SliceLayer {
            level: lv(c, RACK),
            size: 2,
        }]
    } else {
        Vec::new()
    };
    let mut job = job_with(
        name,
        s.count,
        s.gpu,
        TopologyRequest {
            required,
            preferred,
            slices,
        },
    );
    if s.tolerates {
        job.tolerations.push(Toleration {
            key: Some("maintenance".into()),
            value: None,
            effect: None,
        });
    }
    job
}

#[derive(Clone, Debug)]
enum Op {
    /// A job arrives; a best-effort pass follows.
    Arrive(Spec),
    /// The k-th running job (mod running) completes.
    Complete(usize),
    /// Node n (mod nodes) fails: its jobs are released.
    Fail(usize),
    /// Node n is cordoned.
    Cordon(usize),
    /// Node n gets a `NoSchedule` taint, or loses its taints.
    Taint(usize, bool),
    /// Node n is Ready and uncordoned again.
    Recover(usize),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => arb_spec().prop_map(Op::Arrive),
        3 => any::<usize>().prop_map(Op::Complete),
        1 => any::<usize>().prop_map(Op::Fail),
        1 => any::<usize>().prop_map(Op::Cordon),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(n, on)| Op::Taint(n, on)),
        1 => any::<usize>().prop_map(Op::Recover),
    ]
}

/// The counts recomputed from the cluster and the per-GPU occupancy; `Err` names the first
/// difference.
fn recount(c: &Cluster, occ: &Occupancy) -> Result<(), String> {
    let width = c.nodes.iter().map(|n| n.gpus).max().unwrap_or(0) as usize + 1;
    let nodes = (0..c.nodes.len()).map(NodeId::from_index);
    let schedulable: Vec<NodeId> = nodes
        .clone()
        .filter(|&n| c.is_schedulable(n, |_| false))
        .collect();
    let untouched = |n: NodeId| {
        (0..occ.gpus(n))
            .filter(|&g| occ.used_milli(n, g) == 0 && occ.used_memory_mib(n, g) == 0)
            .count()
    };
    let histogram = |members: &[NodeId]| {
        let mut h = vec![0u32; width];
        for &n in members {
            if schedulable.contains(&n) {
                h[untouched(n)] += 1;
            }
        }
        h
    };
    if occ.free_whole_histogram(None) != histogram(&schedulable) {
        return Err(format!(
            "cluster: kept {:?}, recounted {:?}",
            occ.free_whole_histogram(None),
            histogram(&schedulable)
        ));
    }
    for (i, d) in c.domains.iter().enumerate() {
        let id = topology::DomainId::from_index(i);
        let want = if Some(d.level) == c.host_level {
            Vec::new()
        } else {
            histogram(&d.nodes)
        };
        if occ.free_whole_histogram(Some(id)) != want {
            return Err(format!(
                "domain {}: kept {:?}, recounted {want:?}",
                d.value,
                occ.free_whole_histogram(Some(id))
            ));
        }
        for g in 1..width as u32 {
            let pods: u64 = want
                .iter()
                .enumerate()
                .map(|(k, &m)| u64::from(m) * (k as u64 / u64::from(g)))
                .sum();
            if Some(d.level) != c.host_level && occ.whole_gpu_pods(Some(id), g) != pods {
                return Err(format!("domain {}: pods of {g} GPUs", d.value));
            }
        }
    }
    for k in 0..width {
        let mut want: Vec<NodeId> = schedulable
            .iter()
            .copied()
            .filter(|&n| untouched(n) == k)
            .collect();
        want.sort_by_key(|&n| c.node_order(n));
        let kept: Vec<NodeId> = occ.nodes_with_free_whole(k as u32).collect();
        if kept != want {
            return Err(format!(
                "nodes with {k} free: kept {kept:?}, recounted {want:?}"
            ));
        }
    }
    let tainted = nodes
        .filter(|&n| !c.is_schedulable(n, |_| false) && c.is_schedulable(n, |_| true))
        .count();
    if occ.tainted_nodes() != tainted {
        return Err(format!(
            "tainted nodes: kept {}, recounted {tainted}",
            occ.tainted_nodes()
        ));
    }
    Ok(())
}

/// One churn step other than an arrival, applied to both occupancies alike: a completion (one
/// of `running`), a node failing (its jobs back to `waiting`), cordoned, tainted or recovered.
/// Returns the node whose state changed.
fn churn(
    op: Op,
    c: &mut Cluster,
    tracked: &mut Occupancy,
    plain: &mut Occupancy,
    jobs: &[sched::Job],
    running: &mut Vec<usize>,
    waiting: &mut Vec<usize>,
) -> Result<Option<usize>, TestCaseError> {
    match op {
        Op::Complete(k) if !running.is_empty() => {
            let i = running.remove(k % running.len());
            prop_assert!(tracked.release(&jobs[i].name).is_some());
            prop_assert!(plain.release(&jobs[i].name).is_some());
        }
        Op::Complete(_) => {}
        Op::Fail(n) => {
            let n = n % c.nodes.len();
            c.nodes[n].ready = false;
            let id = NodeId::from_index(n);
            let hit: Vec<usize> = running
                .iter()
                .copied()
                .filter(|&i| {
                    tracked.jobs()[&jobs[i].name]
                        .pods
                        .iter()
                        .any(|p| p.node == id)
                })
                .collect();
            for i in hit {
                tracked.release(&jobs[i].name);
                plain.release(&jobs[i].name);
                running.retain(|&r| r != i);
                waiting.push(i);
            }
            waiting.sort_unstable();
            return Ok(Some(n));
        }
        Op::Cordon(n) => {
            let n = n % c.nodes.len();
            c.nodes[n].unschedulable = true;
            return Ok(Some(n));
        }
        Op::Taint(n, on) => {
            let n = n % c.nodes.len();
            c.nodes[n].taints = if on {
                vec![taint_of(TaintEffect::NoSchedule)]
            } else {
                Vec::new()
            };
            return Ok(Some(n));
        }
        Op::Recover(n) => {
            let n = n % c.nodes.len();
            c.nodes[n].ready = true;
            c.nodes[n].unschedulable = false;
            return Ok(Some(n));
        }
        Op::Arrive(_) => {}
    }
    Ok(None)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// After every allocation, release and node change, the kept counts equal a recount, and
    /// `place` from the counts (node-tracking occupancy) gives exactly what the full algorithm
    /// gives (plain occupancy, same allocations): the same pods, GPUs and ranks, or the same
    /// refusal and reason. Also under the BestFit unconstrained mode.
    #[test]
    fn kept_counts_and_counted_placement_match_recount_and_full_algorithm(
        mut c in arb_cluster(),
        ops in prop::collection::vec(arb_op(), 1..40),
        best_fit in prop::bool::weighted(0.2),
    ) {
        let mut tracked = Occupancy::with_node_tracking(&c);
        let mut plain = Occupancy::new(&c);
        let input = PlaceInput {
            options: PlaceOptions {
                unconstrained: if best_fit {
                    UnconstrainedMode::BestFit
                } else {
                    UnconstrainedMode::LeastFreeCapacity
                },
                ..PlaceOptions::default()
            },
            ..PlaceInput::default()
        };
        let mut jobs: Vec<sched::Job> = Vec::new();
        let mut waiting: Vec<usize> = Vec::new();
        let mut running: Vec<usize> = Vec::new();
        for op in ops {
            let mut touched = None;
            match op {
                Op::Arrive(s) => {
                    let name = format!("j{}", jobs.len());
                    jobs.push(job_of(&c, &name, &s));
                    waiting.push(jobs.len() - 1);
                }
                other => {
                    touched = churn(other, &mut c, &mut tracked, &mut plain, &jobs, &mut running, &mut waiting)?;
                }
            }
            if let Some(n) = touched {
                tracked.refresh_node(&c, NodeId::from_index(n));
            }
            let mut still = Vec::new();
            for i in std::mem::take(&mut waiting) {
                let counted = place_with(&c, &tracked, &jobs[i], &input);
                let full = place_with(&c, &plain, &jobs[i], &input);
                prop_assert_eq!(&counted, &full, "job {:?}", &jobs[i]);
                prop_assert_eq!(place(&c, &tracked, &jobs[i]), place(&c, &plain, &jobs[i]));
                match counted {
                    Ok(p) => {
                        commit(&mut tracked, &jobs[i], &p).expect("a fresh placement commits");
                        commit(&mut plain, &jobs[i], &p).expect("a fresh placement commits");
                        running.push(i);
                    }
                    Err(_) => still.push(i),
                }
            }
            waiting = still;
            let kept = recount(&c, &tracked);
            prop_assert!(kept.is_ok(), "{}", kept.unwrap_err());
        }
    }
}

/// The schedulable nodes by unallocated share, recounted: `Err` names the difference.
fn recount_free_milli(c: &Cluster, occ: &Occupancy) -> Result<(), String> {
    let mut want: Vec<(u32, NodeId)> = (0..c.nodes.len())
        .map(NodeId::from_index)
        .filter(|&n| c.is_schedulable(n, |_| false))
        .map(|n| {
            let used: u32 = (0..occ.gpus(n)).map(|g| occ.used_milli(n, g)).sum();
            (occ.gpus(n) * 1000 - used, n)
        })
        .collect();
    want.sort_unstable();
    for &(m, n) in &want {
        if occ.free_milli(n) != m {
            return Err(format!(
                "node {n:?}: kept {} free, recounted {m}",
                occ.free_milli(n)
            ));
        }
    }
    let kept: Vec<NodeId> = occ.nodes_by_free_milli(0).collect();
    let want: Vec<NodeId> = want.into_iter().map(|(_, n)| n).collect();
    if kept != want {
        return Err(format!("by free share: kept {kept:?}, recounted {want:?}"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// KAI's placement from the kept counts (node-tracking occupancy: refusals from the
    /// whole-GPU room, binpack in free-share order) against KAI's walk over every node (plain
    /// occupancy, same allocations), after random churn of jobs and nodes, under binpack and
    /// spread, with gang minimums below the count: the same pods, GPUs and ranks, or the same
    /// refusal and reason; and the free-share order against a recount.
    #[test]
    fn kai_placement_from_kept_counts_matches_the_walk_over_every_node(
        mut c in arb_cluster(),
        ops in prop::collection::vec(arb_op(), 1..40),
        spread in prop::bool::weighted(0.3),
        minimums in prop::collection::vec(0u32..=6, 40),
    ) {
        let mut tracked = Occupancy::with_node_tracking(&c);
        let mut plain = Occupancy::new(&c);
        let strategy = if spread {
            sched::PlacementStrategy::Spread
        } else {
            sched::PlacementStrategy::Binpack
        };
        let input = PlaceInput {
            options: PlaceOptions {
                dialect: sched::Dialect::Kai,
                strategy: sched::KaiStrategy { gpu: strategy, cpu: strategy, shared_gpus: strategy },
                ..PlaceOptions::default()
            },
            ..PlaceInput::default()
        };
        let mut jobs: Vec<sched::Job> = Vec::new();
        let mut waiting: Vec<usize> = Vec::new();
        let mut running: Vec<usize> = Vec::new();
        for op in ops {
            let mut touched = None;
            match op {
                Op::Arrive(s) => {
                    let name = format!("j{}", jobs.len());
                    let mut job = job_of(&c, &name, &s);
                    let min = minimums[jobs.len() % minimums.len()];
                    if min > 0 {
                        job.pod_sets[0].min_count = min.min(job.pod_sets[0].count);
                    }
                    jobs.push(job);
                    waiting.push(jobs.len() - 1);
                }
                other => {
                    touched = churn(other, &mut c, &mut tracked, &mut plain, &jobs, &mut running, &mut waiting)?;
                }
            }
            if let Some(n) = touched {
                tracked.refresh_node(&c, NodeId::from_index(n));
            }
            let mut still = Vec::new();
            for i in std::mem::take(&mut waiting) {
                let counted = place_with(&c, &tracked, &jobs[i], &input);
                let full = place_with(&c, &plain, &jobs[i], &input);
                prop_assert_eq!(&counted, &full, "job {:?}", &jobs[i]);
                match counted {
                    Ok(p) => {
                        commit(&mut tracked, &jobs[i], &p).expect("a fresh placement commits");
                        commit(&mut plain, &jobs[i], &p).expect("a fresh placement commits");
                        running.push(i);
                    }
                    Err(_) => still.push(i),
                }
            }
            waiting = still;
            let kept = recount_free_milli(&c, &tracked);
            prop_assert!(kept.is_ok(), "{}", kept.unwrap_err());
        }
    }
}
