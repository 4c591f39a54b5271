//! Worked examples: Kueue's 3/3/2/1 BestFit example, required/preferred/unconstrained, rank
//! order, fractional packing, unschedulable nodes, slices, multi pod sets.

use sched::{commit, place, GpuRequest, Job, Occupancy, PodSet, SliceLayer, TopologyRequest};
use topology::{Taint, TaintEffect};

use crate::*;

/// Occupy `busy` GPUs on each listed node with single-GPU pods of one job.
fn occupy(c: &topology::Cluster, occ: &mut Occupancy, name: &str, busy: &[(usize, u32)]) {
    let pods = busy
        .iter()
        .flat_map(|&(n, g)| {
            (0..g).map(move |i| sched::PodAllocation {
                node: topology::NodeId::from_index(n),
                gpu_ids: vec![i],
                milli: 1000,
                memory_mib: c.nodes[n].gpu_memory_gib * 1024,
            })
        })
        .collect();
    occ.allocate(
        sched::RunningJob {
            name: name.into(),
            queue: "q".into(),
            priority: 0,
            preemptible: true,
        },
        pods,
    )
    .expect("valid occupation");
}

#[test]
fn kueue_best_fit_3_3_2_1_takes_3_3_1() {
    // One block, four racks of one 8-GPU node each; pods of 1 GPU; free GPUs 3, 3, 2, 1.
    let c = cluster(&[&[1, 1, 1, 1]], 8);
    let mut occ = Occupancy::new(&c);
    occupy(&c, &mut occ, "busy", &[(0, 5), (1, 5), (2, 6), (3, 7)]);
    let p = place(&c, &occ, &job("j", 7, 1, preferred(&c, RACK))).expect("fits");
    assert_eq!(
        pods_per_rack(&c, &p),
        vec![
            ("b0/r0".into(), 3),
            ("b0/r1".into(), 3),
            ("b0/r3".into(), 1)
        ]
    );
    assert_eq!(p.highest_tier, Some(1));
    assert_eq!(p.worst_latency_ns, 5000);
}

#[test]
fn required_level_fits_the_tightest_domain_or_waits() {
    let c = cluster(&[&[4, 2], &[3]], 8);
    let occ = Occupancy::new(&c);
    let p = place(&c, &occ, &job("j", 3, 8, required(&c, RACK))).expect("fits");
    // Racks have room for 4, 2, 3 pods: the tightest that fits 3 is b1/r0.
    assert_eq!(pods_per_rack(&c, &p), vec![("b1/r0".into(), 3)]);
    assert_eq!(p.highest_tier, Some(0));
    let e = place(&c, &occ, &job("j", 5, 8, required(&c, RACK))).expect_err("no rack has 5");
    assert_eq!(
        e.to_string(),
        "pod set `workers`: 5 pods do not fit in one `rack` domain (the roomiest has room for 4)"
    );
}

#[test]
fn preferred_climbs_then_spreads() {
    let c = cluster(&[&[2, 2], &[2, 1]], 8);
    let occ = Occupancy::new(&c);
    // 4 pods: no rack holds them, block b0 does.
    let p = place(&c, &occ, &job("j", 4, 8, preferred(&c, RACK))).expect("fits");
    assert_eq!(
        pods_per_rack(&c, &p),
        vec![("b0/r0".into(), 2), ("b0/r1".into(), 2)]
    );
    assert_eq!(p.highest_tier, Some(1));
    // 6 pods: no block holds them; spread over both, the fuller block first.
    let p = place(&c, &occ, &job("j", 6, 8, preferred(&c, RACK))).expect("fits");
    assert_eq!(p.pods.len(), 6);
    assert_eq!(p.highest_tier, Some(2));
    // A required block bound stops the climb.
    let t = TopologyRequest {
        required: Some(lv(&c, BLOCK)),
        preferred: Some(lv(&c, RACK)),
        slices: Vec::new(),
    };
    assert!(place(&c, &occ, &job("j", 5, 8, t)).is_err());
}

#[test]
fn ranks_fill_one_rack_before_the_next_in_domain_order() {
    let c = cluster(&[&[2, 2, 2]], 8);
    let occ = Occupancy::new(&c);
    let p = place(&c, &occ, &job("j", 12, 4, preferred(&c, RACK))).expect("fits");
    let ranks: Vec<u32> = p.pods.iter().map(|p| p.rank).collect();
    assert_eq!(ranks, (0..12).collect::<Vec<_>>());
    let nodes: Vec<usize> = p.pods.iter().map(|p| p.node.index()).collect();
    // Two pods per node, node order within each rack, racks in order.
    let mut sorted = nodes.clone();
    sorted.sort();
    assert_eq!(nodes, sorted);
    assert_eq!(p.pods[0].gpu_ids, vec![0, 1, 2, 3]);
    assert_eq!(p.pods[1].gpu_ids, vec![4, 5, 6, 7]);
}

#[test]
fn unconstrained_fills_the_fullest_nodes_first() {
    let c = cluster(&[&[1], &[1]], 8);
    let mut occ = Occupancy::new(&c);
    occupy(&c, &mut occ, "busy", &[(1, 6)]);
    let p = place(&c, &occ, &job("j", 2, 1, TopologyRequest::default())).expect("fits");
    assert!(p.pods.iter().all(|p| p.node.index() == 1));
    assert_eq!(p.highest_tier, None);
    assert_eq!(p.worst_latency_ns, 0);
}

#[test]
fn fractional_pods_pack_onto_partly_used_gpus() {
    let c = cluster(&[&[1]], 2);
    let mut occ = Occupancy::new(&c);
    let half = job_with(
        "a",
        1,
        GpuRequest::fraction(500),
        TopologyRequest::default(),
    );
    let p = place(&c, &occ, &half).expect("fits");
    commit(&mut occ, &half, &p).expect("commit");
    // The next half goes onto the same GPU, not onto the free one.
    let half2 = job_with(
        "b",
        1,
        GpuRequest::fraction(500),
        TopologyRequest::default(),
    );
    let p2 = place(&c, &occ, &half2).expect("fits");
    assert_eq!(p2.pods[0].gpu_ids, p.pods[0].gpu_ids);
    commit(&mut occ, &half2, &p2).expect("commit");
    // 0.6 does not fit on the full GPU: it takes the other; a third 0.6 does not fit at all.
    let big = job_with(
        "c",
        1,
        GpuRequest::fraction(600),
        TopologyRequest::default(),
    );
    let p3 = place(&c, &occ, &big).expect("fits");
    assert_ne!(p3.pods[0].gpu_ids, p.pods[0].gpu_ids);
    commit(&mut occ, &big, &p3).expect("commit");
    assert!(place(
        &c,
        &occ,
        &job_with(
            "d",
            1,
            GpuRequest::fraction(600),
            TopologyRequest::default()
        )
    )
    .is_err());
    // GPU memory: 80 GiB per GPU; 32 GiB fits next to the 0.6 share (which holds 48 GiB).
    let mem = job_with(
        "e",
        1,
        GpuRequest::memory_mib(32 * 1024),
        TopologyRequest::default(),
    );
    let p4 = place(&c, &occ, &mem).expect("fits");
    assert_eq!(p4.pods[0].gpu_ids, p3.pods[0].gpu_ids);
    commit(&mut occ, &mem, &p4).expect("commit");
    assert_eq!(occ.used_milli(p3.pods[0].node, p3.pods[0].gpu_ids[0]), 1000);
    // Release gives everything back.
    for n in ["a", "b", "c", "e"] {
        occ.release(n).expect("running");
    }
    assert_eq!(occ.free_whole(topology::NodeId(0)), 2);
}

#[test]
fn not_ready_and_tainted_nodes_are_skipped_unless_tolerated() {
    let mut nodes: Vec<N> = (0..3)
        .map(|_| N {
            block: 0,
            rack: 0,
            gpus: 8,
            ready: true,
            taints: Vec::new(),
        })
        .collect();
    nodes[0].ready = false;
    nodes[1].taints.push(Taint {
        key: "nvidia.com/gpu".into(),
        value: String::new(),
        effect: TaintEffect::NoSchedule,
    });
    let c = cluster_of(&nodes);
    let occ = Occupancy::new(&c);
    let p = place(&c, &occ, &job("j", 1, 8, TopologyRequest::default())).expect("fits");
    assert_eq!(p.pods[0].node.index(), 2);
    assert!(place(&c, &occ, &job("j", 2, 8, TopologyRequest::default())).is_err());
    let mut tolerant = job("j", 2, 8, TopologyRequest::default());
    tolerant.tolerations.push(sched::Toleration {
        key: Some("nvidia.com/gpu".into()),
        value: None,
        effect: Some(TaintEffect::NoSchedule),
    });
    let p = place(&c, &occ, &tolerant).expect("fits with toleration");
    let mut nodes: Vec<usize> = p.pods.iter().map(|p| p.node.index()).collect();
    nodes.sort();
    assert_eq!(nodes, vec![1, 2]);
}

#[test]
fn slices_keep_each_slice_in_one_rack() {
    // Racks with room for 3, 3, 2 pods; slices of 2 pods per rack: the 3s hold one slice each.
    let c = cluster(&[&[3, 3, 2]], 1);
    let occ = Occupancy::new(&c);
    let t = TopologyRequest {
        required: Some(lv(&c, BLOCK)),
        preferred: None,
        slices: vec![SliceLayer {
            level: lv(&c, RACK),
            size: 2,
        }],
    };
    let p = place(&c, &occ, &job("j", 6, 1, t.clone())).expect("fits: 3 slices");
    for chunk in p.pods.chunks(2) {
        let r0 = &c.node(chunk[0].node).labels[RACK];
        assert!(chunk.iter().all(|p| &c.node(p.node).labels[RACK] == r0));
    }
    let e = place(&c, &occ, &job("j", 8, 1, t)).expect_err("8 pods = 4 slices, room for 3");
    assert!(e.reason.contains("in whole slices of 2"), "{e}");
}

#[test]
fn gang_minimum_places_the_largest_count_that_fits() {
    let c = cluster(&[&[2]], 8);
    let occ = Occupancy::new(&c);
    let mut j = job("j", 4, 8, TopologyRequest::default());
    j.pod_sets[0].min_count = 1;
    let p = place(&c, &occ, &j).expect("partial");
    assert_eq!(p.pods.len(), 2);
    j.pod_sets[0].min_count = 3;
    assert!(place(&c, &occ, &j).is_err());
}

#[test]
fn pod_sets_place_together_with_continuing_ranks() {
    let c = cluster(&[&[2]], 8);
    let occ = Occupancy::new(&c);
    let mut j = job("j", 1, 8, TopologyRequest::default());
    j.pod_sets.push(PodSet {
        name: "workers".into(),
        count: 2,
        min_count: 2,
        gpu: GpuRequest::Whole(4),
        cpu_millis: 0,
        memory_mib: 0,
        topology: TopologyRequest::default(),
    });
    let p = place(&c, &occ, &j).expect("fits");
    assert_eq!(
        p.pods.iter().map(|p| p.rank).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert_ne!(p.pods[0].node, p.pods[1].node);
    assert_eq!(p.pods[1].node, p.pods[2].node);
    j.pod_sets[1].count = 3;
    j.pod_sets[1].min_count = 3;
    assert!(place(&c, &occ, &j).is_err(), "the whole gang or nothing");
}

#[test]
fn job_check_rejects_bad_requests() {
    let c = cluster(&[&[1]], 8);
    let mut j: Job = job("j", 4, 8, TopologyRequest::default());
    j.pod_sets[0].topology = TopologyRequest {
        required: Some(lv(&c, RACK)),
        preferred: Some(lv(&c, BLOCK)),
        slices: Vec::new(),
    };
    assert_eq!(
        j.check(&c).expect_err("preferred above required").to_string(),
        "job `j` pod set `workers`: preferred level `block` must be at or below the required level `rack`"
    );
    j.pod_sets[0].topology = TopologyRequest {
        required: None,
        preferred: None,
        slices: vec![SliceLayer {
            level: lv(&c, RACK),
            size: 3,
        }],
    };
    assert!(j
        .check(&c)
        .expect_err("3 does not divide 4")
        .message
        .contains("must divide 4"));
}

#[test]
fn equally_tight_domains_are_taken_in_label_order() {
    // Two racks with room for 4 one-GPU pods each: r0 as 2 + 2 on two nodes, r1 as 4 on one.
    // Kueue breaks the tie by label values (r0 before r1), not by how the pods would spread.
    let c = cluster(&[&[2, 2]], 4);
    let mut occ = Occupancy::new(&c);
    occupy(&c, &mut occ, "busy", &[(0, 2), (1, 2), (3, 4)]);
    let p = place(&c, &occ, &job("j", 4, 1, required(&c, RACK))).expect("fits");
    let nodes: Vec<usize> = p.pods.iter().map(|q| q.node.index()).collect();
    assert_eq!(nodes, [0, 0, 1, 1], "{p:?}");
}

#[test]
fn unconstrained_takes_the_least_free_host_of_all() {
    // Issue 11's example: free 1 and 9 GPUs in b0, 2 and 2 in b1. Kueue ranks all hosts together
    // (least free first) and takes the 1-GPU host, not a host of the least free block.
    let c = cluster(&[&[2], &[2]], 10);
    let mut occ = Occupancy::new(&c);
    occupy(&c, &mut occ, "busy", &[(0, 9), (1, 1), (2, 8), (3, 8)]);
    let p = place(&c, &occ, &job("j", 1, 1, TopologyRequest::default())).expect("fits");
    assert_eq!(p.pods[0].node.index(), 0, "{p:?}");
}
