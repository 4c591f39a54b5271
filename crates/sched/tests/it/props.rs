//! Property tests on random small clusters and job mixes, and exhaustive comparisons on tiny
//! clusters. Case counts are modest so the whole file runs in seconds in debug builds.

use proptest::prelude::*;
use sched::{
    admit, commit, fair_share, place, GpuRequest, Occupancy, QueueSpec, QueueTree, ResourceQuota,
    Resources, SliceLayer, TopologyRequest, UNLIMITED,
};
use topology::{Cluster, NodeId};

use crate::*;

/// A random cluster: 1–3 blocks × 1–3 racks × 1–3 nodes, 1–4 GPUs per node, some not ready.
fn arb_cluster() -> impl Strategy<Value = Cluster> {
    prop::collection::vec(
        prop::collection::vec(
            prop::collection::vec((1u32..=4, prop::bool::weighted(0.9)), 1..=3),
            1..=3,
        ),
        1..=3,
    )
    .prop_map(|blocks| {
        let mut nodes = Vec::new();
        for (b, racks) in blocks.iter().enumerate() {
            for (r, ns) in racks.iter().enumerate() {
                for &(gpus, ready) in ns {
                    nodes.push(N {
                        block: b,
                        rack: r,
                        gpus,
                        ready,
                        taints: Vec::new(),
                    });
                }
            }
        }
        cluster_of(&nodes)
    })
}

#[derive(Clone, Debug)]
struct JobSpec {
    count: u32,
    gpu: GpuRequest,
    /// 0 none, 1 required rack, 2 required block, 3 required host, 4 preferred rack,
    /// 5 preferred block, 6 required block + preferred rack.
    topo: u8,
    slice: bool,
}

fn arb_job() -> impl Strategy<Value = JobSpec> {
    (
        1u32..=6,
        prop_oneof![
            (1u32..=3).prop_map(GpuRequest::Whole),
            (1u32..=10).prop_map(|t| GpuRequest::fraction(t * 100)),
            (1u32..=8).prop_map(|g| GpuRequest::memory_mib(g * 10 * 1024)),
            (1u32..=10, 2u32..=3).prop_map(|(t, devices)| GpuRequest::Fraction {
                milli: t * 100,
                devices
            }),
            (1u32..=8, 2u32..=3).prop_map(|(g, devices)| GpuRequest::MemoryMib {
                mib: g * 10 * 1024,
                devices
            }),
        ],
        0u8..=6,
        any::<bool>(),
    )
        .prop_map(|(count, gpu, topo, slice)| JobSpec {
            count,
            gpu,
            topo,
            slice,
        })
}

fn topology_of(c: &Cluster, s: &JobSpec) -> TopologyRequest {
    let (required, preferred) = match s.topo {
        1 => (Some(RACK), None),
        2 => (Some(BLOCK), None),
        3 => (Some(HOST), None),
        4 => (None, Some(RACK)),
        5 => (None, Some(BLOCK)),
        6 => (Some(BLOCK), Some(RACK)),
        _ => (None, None),
    };
    let slices = if s.slice && s.count % 2 == 0 && s.topo != 3 {
        vec![SliceLayer {
            level: lv(c, RACK),
            size: 2,
        }]
    } else {
        Vec::new()
    };
    TopologyRequest {
        required: required.map(|l| lv(c, l)),
        preferred: preferred.map(|l| lv(c, l)),
        slices,
    }
}

/// Reference model: pods of `gpu` that fit on a node, by brute force over its GPUs.
fn node_room(c: &Cluster, occ: &Occupancy, n: NodeId, gpu: GpuRequest) -> u64 {
    if !c.node(n).ready {
        return 0;
    }
    let gpus = occ.gpus(n);
    let mem = occ.gpu_memory_mib(n);
    let free = |g: u32| (1000 - occ.used_milli(n, g), mem - occ.used_memory_mib(n, g));
    match gpu {
        GpuRequest::Whole(k) => {
            u64::from((0..gpus).filter(|&g| free(g) == (1000, mem)).count() as u32 / k)
        }
        GpuRequest::Fraction { milli, devices } => {
            let need_mem = (u64::from(milli) * u64::from(mem)).div_ceil(1000) as u32;
            let shares: Vec<u64> = (0..gpus)
                .map(|g| u64::from((free(g).0 / milli).min(free(g).1 / need_mem)))
                .collect();
            pods_on_devices(&shares, devices)
        }
        GpuRequest::MemoryMib { mib, devices } => {
            let milli = (u64::from(mib) * 1000).div_ceil(u64::from(mem)) as u32;
            let shares: Vec<u64> = (0..gpus)
                .map(|g| u64::from((free(g).0 / milli).min(free(g).1 / mib)))
                .collect();
            pods_on_devices(&shares, devices)
        }
    }
}

/// Reference: pods of `devices` distinct GPUs each that GPUs taking `shares` pods each hold:
/// the largest `P` with `Σ min(shares, P) ≥ devices · P` (counted up, not searched; the rule
/// itself is checked against exhaustive search in `examples.rs`).
fn pods_on_devices(shares: &[u64], devices: u32) -> u64 {
    let n = u64::from(devices);
    let mut p = 0;
    while shares.iter().map(|&k| k.min(p + 1)).sum::<u64>() >= n * (p + 1) {
        p += 1;
    }
    p
}

/// Reference: room in a set of nodes, counting whole slices per rack when `slice` > 1.
fn room(c: &Cluster, occ: &Occupancy, nodes: &[NodeId], gpu: GpuRequest, slice: u64) -> u64 {
    let rack = lv(c, RACK);
    let mut per_rack: std::collections::BTreeMap<topology::DomainId, u64> = Default::default();
    for &n in nodes {
        *per_rack.entry(c.node(n).domains[rack]).or_default() += node_room(c, occ, n, gpu);
    }
    per_rack.values().map(|v| v / slice * slice).sum()
}

/// Recompute per-GPU use from the running jobs and check nothing is above capacity.
fn check_no_oversubscription(c: &Cluster, occ: &Occupancy) {
    let mut milli: std::collections::BTreeMap<(NodeId, u32), u32> = Default::default();
    let mut mem: std::collections::BTreeMap<(NodeId, u32), u32> = Default::default();
    for a in occ.jobs().values() {
        for p in &a.pods {
            for &g in &p.gpu_ids {
                *milli.entry((p.node, g)).or_default() += p.milli;
                *mem.entry((p.node, g)).or_default() += p.memory_mib;
            }
        }
    }
    for (&(n, g), &m) in &milli {
        assert!(g < c.node(n).gpus);
        assert!(m <= 1000, "GPU {g} of node {n:?} at {m}/1000");
        assert!(mem[&(n, g)] <= c.node(n).gpu_memory_gib * 1024);
        assert_eq!(occ.used_milli(n, g), m);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_job_mixes_keep_every_invariant(c in arb_cluster(), specs in prop::collection::vec(arb_job(), 1..10)) {
        let mut occ = Occupancy::new(&c);
        for (i, s) in specs.iter().enumerate() {
            let mut j = job_with(&format!("j{i}"), s.count, s.gpu, topology_of(&c, s));
            j.priority = i as i32;
            prop_assert!(j.check(&c).is_ok(), "{:?}", j.check(&c));
            let first = place(&c, &occ, &j);
            // Determinism: the same input gives the same output.
            prop_assert_eq!(&first, &place(&c, &occ, &j));
            let t = &j.pod_sets[0].topology;
            let slice = t.slices.first().map_or(1, |s| u64::from(s.size));
            let all: Vec<NodeId> = (0..c.nodes.len()).map(NodeId::from_index).collect();
            match first {
                Ok(p) => {
                    // The whole gang, ranks 0..n−1.
                    prop_assert_eq!(p.pods.len(), s.count as usize);
                    for (k, pod) in p.pods.iter().enumerate() {
                        prop_assert_eq!(pod.rank as usize, k);
                        prop_assert!(c.node(pod.node).ready);
                    }
                    // The required level holds.
                    if let Some(r) = t.required {
                        let d0 = c.node(p.pods[0].node).domains[r];
                        prop_assert!(p.pods.iter().all(|q| c.node(q.node).domains[r] == d0));
                    }
                    // Slices: every consecutive pair of ranks shares a rack.
                    if slice > 1 {
                        for pair in p.pods.chunks(2) {
                            let r = lv(&c, RACK);
                            prop_assert_eq!(c.node(pair[0].node).domains[r], c.node(pair[1].node).domains[r]);
                        }
                    }
                    // Fewer tiers: with a preferred/required level, no lower level than the
                    // one used had a single domain with room (reference model).
                    if let Some(tier) = p.highest_tier {
                        for level in [lv(&c, HOST), lv(&c, RACK)] {
                            let lvl_tier = c.tier_of_level(level).map_or(-1, i32::from);
                            let start = t.preferred.or(t.required).unwrap_or(0);
                            if i32::from(tier) > lvl_tier && level <= start.max(lv(&c, RACK)) && t.preferred.or(t.required).is_some_and(|l| l >= level) {
                                for &d in &c.levels[level].domains {
                                    prop_assert!(
                                        room(&c, &occ, &c.domain(d).nodes, s.gpu, slice) < u64::from(s.count),
                                        "a single `{}` domain had room, yet the placement crosses tier {}", c.levels[level].label, tier
                                    );
                                }
                            }
                        }
                    }
                    commit(&mut occ, &j, &p).expect("a placement never oversubscribes");
                    check_no_oversubscription(&c, &occ);
                }
                Err(_) => {
                    // Not placed: the reference model agrees nothing fits.
                    match t.required {
                        Some(r) => for &d in &c.levels[r].domains {
                            prop_assert!(room(&c, &occ, &c.domain(d).nodes, s.gpu, slice) < u64::from(s.count));
                        },
                        None => prop_assert!(room(&c, &occ, &all, s.gpu, slice) < u64::from(s.count)),
                    }
                }
            }
        }
        // Releasing everything gives the empty cluster back.
        let names: Vec<String> = occ.jobs().keys().cloned().collect();
        for n in names {
            occ.release(&n);
        }
        for n in 0..c.nodes.len() {
            let id = NodeId::from_index(n);
            prop_assert_eq!(occ.free_whole(id), c.node(id).gpus);
        }
    }

    /// Tiny clusters: one block of up to five racks. A job preferring a rack uses as few racks as
    /// an exhaustive search over all rack subsets finds.
    #[test]
    fn fewest_racks_matches_exhaustive_search(
        racks in prop::collection::vec(prop::collection::vec(0u32..=4, 1..=3), 1..=5),
        count in 1u32..=12,
    ) {
        let layout: Vec<usize> = racks.iter().map(Vec::len).collect();
        let layout_refs: Vec<&[usize]> = vec![layout.as_slice()];
        let c = cluster(&layout_refs, 4);
        let mut occ = Occupancy::new(&c);
        // Occupy GPUs so node k of rack r has `racks[r][k]` free.
        let mut pods = Vec::new();
        let mut n = 0;
        for rack in &racks {
            for &free in rack {
                for g in free..4 {
                    pods.push(sched::PodAllocation { node: NodeId::from_index(n), gpu_ids: vec![g], milli: 1000, memory_mib: 80 * 1024 });
                }
                n += 1;
            }
        }
        occ.allocate(sched::RunningJob { name: "busy".into(), queue: "q".into(), priority: 0, preemptible: true }, pods).expect("valid");
        let room_per_rack: Vec<u32> = racks.iter().map(|r| r.iter().sum()).collect();
        let best = (1u32..(1 << racks.len()))
            .filter(|m| (0..racks.len()).filter(|i| m & (1 << i) != 0).map(|i| room_per_rack[i]).sum::<u32>() >= count)
            .map(u32::count_ones)
            .min();
        let got = place(&c, &occ, &job("j", count, 1, preferred(&c, RACK)));
        match (best, got) {
            (None, Err(_)) => {}
            (Some(k), Ok(p)) => prop_assert_eq!(pods_per_rack(&c, &p).len() as u32, k),
            (b, g) => prop_assert!(false, "exhaustive {:?} vs placement {:?}", b, g),
        }
    }

    #[test]
    fn fair_share_respects_demand_limits_and_capacity(
        queues in prop::collection::vec((0f64..20.0, prop::option::of(0f64..30.0), 0f64..3.0, 0i32..3, 0f64..40.0), 2..6),
        capacity in 0f64..100.0,
    ) {
        // Two parents, leaves alternate between them.
        let mut specs = vec![
            QueueSpec { name: "p0".into(), parent: None, priority: 0, resources: [Some(ResourceQuota { quota: UNLIMITED, limit: UNLIMITED, over_quota_weight: 1.0 }), None, None], creation_time: None, uid: None },
            QueueSpec { name: "p1".into(), parent: None, priority: 1, resources: [Some(ResourceQuota { quota: 10.0, limit: 60.0, over_quota_weight: 2.0 }), None, None], creation_time: None, uid: None },
        ];
        let mut demand = vec![Resources::default(), Resources::default()];
        let mut p1_quota = 0.0;
        for (i, &(quota, limit, w, prio, d)) in queues.iter().enumerate() {
            let parent = i % 2;
            let quota = if parent == 1 { let q = quota.min(10.0 - p1_quota); p1_quota += q; q } else { quota };
            let limit = limit.map_or(UNLIMITED, |l| l.max(quota));
            specs.push(QueueSpec { name: format!("l{i}"), parent: Some(format!("p{parent}")), priority: prio, resources: [Some(ResourceQuota { quota, limit, over_quota_weight: w }), None, None], creation_time: None, uid: None });
            demand.push(Resources { gpu: d, ..Resources::default() });
        }
        let tree = QueueTree::new(specs.clone()).expect("valid by construction");
        let s = fair_share(&tree, &demand, &Resources { gpu: capacity, cpu: 0.0, memory: 0.0 });
        prop_assert_eq!(&s, &fair_share(&tree, &demand, &Resources { gpu: capacity, cpu: 0.0, memory: 0.0 }));
        let eps = 1e-6;
        let top: f64 = s[0].gpu + s[1].gpu;
        prop_assert!(top <= capacity + eps);
        for (i, spec) in specs.iter().enumerate() {
            let rq = spec.quota(sched::Resource::Gpu);
            prop_assert!(s[i].gpu >= -eps);
            if rq.limit >= 0.0 { prop_assert!(s[i].gpu <= rq.limit + eps, "{} above limit", spec.name); }
            if i >= 2 { prop_assert!(s[i].gpu <= demand[i].gpu + eps, "{} above demand", spec.name); }
        }
        for p in 0..2 {
            let kids: f64 = (2..specs.len()).filter(|i| (i - 2) % 2 == p).map(|i| s[i].gpu).sum();
            prop_assert!(kids <= s[p].gpu + eps);
        }
        // Quotas hold: when the in-quota amounts of a set of siblings fit in what they share,
        // each gets at least min(quota, demand capped by limit).
        let in_quota = |i: usize, eff: f64| {
            let q = specs[i].quota(sched::Resource::Gpu).quota;
            if q < 0.0 { eff } else { q.min(eff) }
        };
        let eff_of = |i: usize| {
            let l = specs[i].quota(sched::Resource::Gpu).limit;
            let d = if i < 2 {
                (2..specs.len()).filter(|k| (k - 2) % 2 == i).map(|k| {
                    let lk = specs[k].quota(sched::Resource::Gpu).limit;
                    if lk < 0.0 { demand[k].gpu } else { demand[k].gpu.min(lk) }
                }).sum()
            } else {
                demand[i].gpu
            };
            if l < 0.0 { d } else { d.min(l) }
        };
        if in_quota(0, eff_of(0)) + in_quota(1, eff_of(1)) <= capacity {
            for (p, share) in s.iter().enumerate().take(2) {
                prop_assert!(share.gpu >= in_quota(p, eff_of(p)) - eps, "p{} below its in-quota share", p);
            }
        }
        for p in 0..2 {
            let kids: Vec<usize> = (2..specs.len()).filter(|i| (i - 2) % 2 == p).collect();
            if kids.iter().map(|&k| in_quota(k, eff_of(k))).sum::<f64>() <= s[p].gpu {
                for &k in &kids {
                    prop_assert!(s[k].gpu >= in_quota(k, eff_of(k)) - eps, "{} below its in-quota share", specs[k].name);
                }
            }
        }
        // Work conserving: when demand (capped by limits) exceeds capacity, capacity is used up.
        let eff = |i: usize| { let l = specs[i].quota(sched::Resource::Gpu).limit; if l < 0.0 { demand[i].gpu } else { demand[i].gpu.min(l) } };
        let p_dem: Vec<f64> = (0..2).map(|p| (2..specs.len()).filter(|i| (i - 2) % 2 == p).map(eff).sum::<f64>().min(if p == 1 { 60.0 } else { f64::INFINITY })).collect();
        let weights_ok = (2..specs.len()).all(|i| specs[i].quota(sched::Resource::Gpu).over_quota_weight > 0.0);
        if weights_ok && p_dem[0] + p_dem[1] >= capacity {
            prop_assert!((top - capacity).abs() < 1e-6, "top {} capacity {}", top, capacity);
        }
    }

    #[test]
    fn admission_keeps_every_queue_within_its_limit(
        reqs in prop::collection::vec((0usize..3, 0f64..10.0), 1..30),
    ) {
        let mk = |name: &str, parent: Option<&str>, quota: f64, limit: f64| QueueSpec { name: name.into(), parent: parent.map(Into::into), priority: 0, resources: [Some(ResourceQuota { quota, limit, over_quota_weight: 1.0 }), None, None], creation_time: None, uid: None };
        let tree = QueueTree::new(vec![
            mk("root", None, 20.0, 30.0),
            mk("a", Some("root"), 10.0, 15.0),
            mk("b", Some("root"), 10.0, UNLIMITED),
            mk("c", Some("root"), 0.0, 5.0),
        ]).expect("valid");
        let mut usage = vec![Resources::default(); 4];
        for (leaf, g) in reqs {
            let q = leaf + 1;
            let r = Resources { gpu: g, ..Resources::default() };
            if admit(&tree, &usage, &tree.queues[q].name, &r).is_ok() {
                usage[q].gpu += g;
            }
            for (i, spec) in tree.queues.iter().enumerate() {
                let l = spec.quota(sched::Resource::Gpu).limit;
                let used = sched::subtree_usage(&tree, &usage, sched::QueueId(i as u32)).gpu;
                prop_assert!(l < 0.0 || used <= l + 1e-9);
            }
        }
    }
}

/// One step of the churn property: the cluster and its jobs change under the scheduler.
#[derive(Clone, Debug)]
enum Op {
    /// A job arrives and waits.
    Arrive(JobSpec),
    /// The k-th running job (mod running) completes.
    Complete(usize),
    /// Node n (mod nodes) fails (NotReady): its jobs lose their pods and are requeued.
    Fail(usize),
    /// Node n is cordoned: running jobs stay, nothing new lands there.
    Cordon(usize),
    /// Node n is back: Ready and uncordoned.
    Recover(usize),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => arb_job().prop_map(Op::Arrive),
        3 => any::<usize>().prop_map(Op::Complete),
        1 => any::<usize>().prop_map(Op::Fail),
        1 => any::<usize>().prop_map(Op::Cordon),
        1 => any::<usize>().prop_map(Op::Recover),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Random arrivals, completions, node failures and cordons. After every step (and a
    /// best-effort scheduling pass over the waiting jobs) every invariant holds
    /// (`sched::check_invariants`: no GPU, share or memory oversubscribed; gangs whole; required
    /// levels kept), no job runs on a failed node, new pods avoid failed and cordoned nodes, and
    /// every job is exactly one of waiting, running or done. A failed node's jobs are requeued
    /// whole (a gang that lost a pod cannot go on) and start again when they fit.
    #[test]
    fn churn_of_jobs_and_nodes_keeps_every_invariant(
        mut c in arb_cluster(),
        ops in prop::collection::vec(arb_op(), 1..40),
    ) {
        let mut occ = Occupancy::new(&c);
        let mut jobs: Vec<sched::Job> = Vec::new();
        let mut waiting: Vec<usize> = Vec::new();
        let mut running: Vec<usize> = Vec::new();
        let mut done: Vec<usize> = Vec::new();
        for op in ops {
            match op {
                Op::Arrive(s) => {
                    let name = format!("j{}", jobs.len());
                    jobs.push(job_with(&name, s.count, s.gpu, topology_of(&c, &s)));
                    waiting.push(jobs.len() - 1);
                }
                Op::Complete(k) if !running.is_empty() => {
                    let i = running.remove(k % running.len());
                    prop_assert!(occ.release(&jobs[i].name).is_some());
                    done.push(i);
                }
                Op::Complete(_) => {}
                Op::Fail(n) => {
                    let n = n % c.nodes.len();
                    c.nodes[n].ready = false;
                    let id = NodeId(n as u32);
                    let hit: Vec<usize> = running
                        .iter()
                        .copied()
                        .filter(|&i| occ.jobs()[&jobs[i].name].pods.iter().any(|p| p.node == id))
                        .collect();
                    for i in hit {
                        occ.release(&jobs[i].name);
                        running.retain(|&r| r != i);
                        waiting.push(i);
                    }
                    waiting.sort_unstable();
                }
                Op::Cordon(n) => {
                    let n = n % c.nodes.len();
                    c.nodes[n].unschedulable = true;
                }
                Op::Recover(n) => {
                    let n = n % c.nodes.len();
                    c.nodes[n].ready = true;
                    c.nodes[n].unschedulable = false;
                }
            }
            // A best-effort pass in arrival order.
            let mut still = Vec::new();
            for i in std::mem::take(&mut waiting) {
                match place(&c, &occ, &jobs[i]) {
                    Ok(p) => {
                        for pod in &p.pods {
                            let node = c.node(pod.node);
                            prop_assert!(node.ready && !node.unschedulable, "{} placed on {}", jobs[i].name, node.name);
                        }
                        commit(&mut occ, &jobs[i], &p).expect("a fresh placement commits");
                        running.push(i);
                    }
                    Err(_) => still.push(i),
                }
            }
            waiting = still;
            let by_name: std::collections::BTreeMap<&str, &sched::Job> =
                running.iter().map(|&i| (jobs[i].name.as_str(), &jobs[i])).collect();
            let checked = sched::check_invariants(&c, &occ, &|n| by_name.get(n).copied());
            prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
            prop_assert_eq!(occ.jobs().len(), running.len());
            for a in occ.jobs().values() {
                for p in &a.pods {
                    prop_assert!(c.node(p.node).ready, "{} runs on failed node {}", a.job.name, c.node(p.node).name);
                }
            }
            let mut all: Vec<usize> = waiting.iter().chain(&running).chain(&done).copied().collect();
            all.sort_unstable();
            prop_assert_eq!(all, (0..jobs.len()).collect::<Vec<_>>());
        }
    }
}

#[test]
fn the_invariant_checks_catch_a_broken_gang_and_a_broken_required_level() {
    let c = cluster(&[&[2, 2]], 4);
    let j = job("pair", 2, 4, required(&c, RACK));
    let pod = |n: u32| sched::PodAllocation {
        node: NodeId(n),
        gpu_ids: vec![0, 1, 2, 3],
        milli: 1000,
        memory_mib: 0,
    };
    let running = sched::running_job(&j);
    let whole = sched::Allocation {
        job: running.clone(),
        pods: vec![pod(0), pod(1)],
    };
    assert!(sched::check_gang(&c, &j, &whole).is_ok());
    let short = sched::Allocation {
        job: running.clone(),
        pods: vec![pod(0)],
    };
    assert_eq!(
        sched::check_gang(&c, &j, &short).unwrap_err().to_string(),
        "job \"pair\": gang not whole: 1 pod running, expected 2..=2"
    );
    let split = sched::Allocation {
        job: running.clone(),
        pods: vec![pod(0), pod(2)],
    };
    assert_eq!(
        sched::check_gang(&c, &j, &split).unwrap_err().to_string(),
        "job \"pair\": required level broken: pod set `workers` spans 2 `rack` domains"
    );
    let half = sched::Allocation {
        job: running,
        pods: vec![
            pod(0),
            sched::PodAllocation {
                gpu_ids: vec![0, 1],
                ..pod(1)
            },
        ],
    };
    assert!(sched::check_gang(&c, &j, &half)
        .unwrap_err()
        .to_string()
        .contains("pod shape"));
    // A job the caller does not know holds GPUs.
    let mut occ = Occupancy::new(&c);
    let p = place(&c, &occ, &j).unwrap();
    commit(&mut occ, &j, &p).unwrap();
    let err = sched::check_invariants(&c, &occ, &|_| None).unwrap_err();
    assert_eq!(err.invariant, "unknown job");
    assert!(sched::check_invariants(&c, &occ, &|_| Some(&j)).is_ok());
}
