//! Property tests of KAI's placement of PodGroups with sub-groups on random small clusters:
//! whatever KAI's rules place commits without oversubscription, is the same on a second ask,
//! keeps each sub-group's required rack and the group's required block, gives every pod set
//! nothing or at least its minimum, satisfies at least `minSubGroup` sub-groups, and gives every
//! multi-device share that many distinct GPUs.

use proptest::prelude::*;
use sched::{
    check_gang, check_occupancy, commit, place_with, Dialect, GpuRequest, Job, Occupancy,
    PlaceInput, PlaceOptions, PodSet, PodSetExtras, SubGroup, TopologyRequest,
};
use topology::Cluster;

use crate::*;

/// 1–2 blocks × 1–3 racks × 1–3 nodes of 1–4 GPUs.
fn arb_cluster() -> impl Strategy<Value = Cluster> {
    prop::collection::vec(
        prop::collection::vec(prop::collection::vec(1u32..=4, 1..=3), 1..=3),
        1..=2,
    )
    .prop_map(|blocks| {
        let mut nodes = Vec::new();
        for (b, racks) in blocks.iter().enumerate() {
            for (r, ns) in racks.iter().enumerate() {
                for &gpus in ns {
                    nodes.push(N {
                        block: b,
                        rack: r,
                        gpus,
                        ready: true,
                        taints: Vec::new(),
                    });
                }
            }
        }
        cluster_of(&nodes)
    })
}

/// One sub-group of one pod set: pods, minimum, GPUs, whether it needs one rack.
#[derive(Clone, Debug)]
struct Member {
    count: u32,
    min: u32,
    gpu: GpuRequest,
    one_rack: bool,
}

fn arb_member() -> impl Strategy<Value = Member> {
    (
        1u32..=3,
        prop_oneof![
            (1u32..=2).prop_map(GpuRequest::Whole),
            (prop_oneof![Just(300u32), Just(500)], 1u32..=2)
                .prop_map(|(milli, devices)| GpuRequest::Fraction { milli, devices }),
        ],
        any::<bool>(),
    )
        .prop_flat_map(|(count, gpu, one_rack)| {
            (1..=count).prop_map(move |min| Member {
                count,
                min,
                gpu,
                one_rack,
            })
        })
}

/// A PodGroup (sub-group 0, maybe in one block, maybe with `minSubGroup`) over its members.
fn podgroup(
    c: &Cluster,
    members: &[Member],
    one_block: bool,
    min_sub: Option<u32>,
) -> (Job, PlaceInput) {
    let rack = lv(c, RACK);
    let mut sub_groups = vec![SubGroup {
        name: "podgroup".to_owned(),
        parent: None,
        topology: TopologyRequest {
            required: one_block.then(|| lv(c, BLOCK)),
            ..TopologyRequest::default()
        },
        min_sub_groups: min_sub,
    }];
    let mut pod_sets = Vec::new();
    let mut extras = Vec::new();
    for (i, m) in members.iter().enumerate() {
        sub_groups.push(SubGroup {
            name: format!("g{i}"),
            parent: Some(0),
            topology: TopologyRequest {
                required: m.one_rack.then_some(rack),
                ..TopologyRequest::default()
            },
            min_sub_groups: None,
        });
        pod_sets.push(PodSet {
            name: format!("g{i}"),
            count: m.count,
            min_count: m.min,
            gpu: m.gpu,
            cpu_millis: 0,
            memory_mib: 0,
            topology: TopologyRequest::default(),
        });
        extras.push(PodSetExtras {
            sub_group: Some(i + 1),
            ..PodSetExtras::default()
        });
    }
    let mut job = job_with("pg", 1, GpuRequest::Whole(1), TopologyRequest::default());
    job.pod_sets = pod_sets;
    let input = PlaceInput {
        options: PlaceOptions {
            dialect: Dialect::Kai,
            ..PlaceOptions::default()
        },
        pod_sets: extras,
        sub_groups,
        ..PlaceInput::default()
    };
    (job, input)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn kai_sub_groups_keep_their_gang_levels_and_shapes(
        c in arb_cluster(),
        members in prop::collection::vec(arb_member(), 1..=3),
        one_block in any::<bool>(),
        min_sub in prop::option::of(1u32..=3),
        busy in prop::collection::vec(0u32..=1, 0..6),
    ) {
        let min_sub = min_sub.map(|k| k.min(members.len() as u32));
        let (job, input) = podgroup(&c, &members, one_block, min_sub);
        // Some nodes half used first (a running job of 0.5 GPU on their first GPU).
        let mut occ = Occupancy::new(&c);
        for (i, &b) in busy.iter().enumerate() {
            if b == 1 && i < c.nodes.len() {
                let j = job_with(&format!("busy{i}"), 1, GpuRequest::fraction(500), TopologyRequest::default());
                if let Ok(p) = sched::place_within(&c, &occ, &j, c.node(topology::NodeId::from_index(i)).domains[lv(&c, HOST)]) {
                    commit(&mut occ, &j, &p).expect("busy job commits");
                }
            }
        }
        let first = place_with(&c, &occ, &job, &input);
        prop_assert_eq!(&first, &place_with(&c, &occ, &job, &input));
        let Ok(p) = first else { return Ok(()) };
        let mut after = occ.clone();
        commit(&mut after, &job, &p).expect("KAI's placement commits");
        prop_assert!(check_occupancy(&c, &after).is_ok());
        let mut per_set = vec![Vec::new(); members.len()];
        for pod in &p.pods {
            per_set[pod.pod_set].push(pod);
            let devices = members[pod.pod_set].gpu.devices() as usize;
            prop_assert_eq!(pod.gpu_ids.len(), devices);
        }
        let mut satisfied = 0;
        for (k, m) in members.iter().enumerate() {
            let n = per_set[k].len() as u32;
            prop_assert!(n <= m.count);
            prop_assert!(n == 0 || n >= m.min, "pod set {} holds {} of minimum {}", k, n, m.min);
            satisfied += u32::from(n >= m.min);
            if m.one_rack && n > 0 {
                let r = lv(&c, RACK);
                let d = c.node(per_set[k][0].node).domains[r];
                prop_assert!(per_set[k].iter().all(|q| c.node(q.node).domains[r] == d));
            }
            // Each pod set's pods have the shape it asks for (the gang check per pod set).
            let mut one = job.clone();
            one.pod_sets = vec![PodSet { count: m.count, min_count: 1, ..job.pod_sets[k].clone() }];
            let alloc = sched::Allocation {
                job: sched::running_job(&one),
                pods: p.pods.iter().filter(|q| q.pod_set == k).map(|q| sched::PodAllocation {
                    node: q.node,
                    gpu_ids: q.gpu_ids.clone(),
                    milli: q.milli,
                    memory_mib: q.memory_mib,
                }).collect(),
            };
            if n > 0 {
                prop_assert!(check_gang(&c, &one, &alloc).is_ok(), "{:?}", check_gang(&c, &one, &alloc));
            }
        }
        prop_assert!(satisfied >= min_sub.unwrap_or(members.len() as u32));
        if one_block && !p.pods.is_empty() {
            let b = lv(&c, BLOCK);
            let d = c.node(p.pods[0].node).domains[b];
            prop_assert!(p.pods.iter().all(|q| c.node(q.node).domains[b] == d));
        }
    }
}
