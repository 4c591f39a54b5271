//! Behaviour of the fabric model on small built clusters: NIC-bound ideal bandwidth, ECMP
//! collisions and QPs, adaptive routing, sharing between jobs, latency along routed paths.

use fabric::{
    evaluate, Collective, Fabric, FabricError, JobTraffic, Rank, Resource, RoutingConfig,
    RoutingMode,
};
use topology::{
    build_from_spec, ClosSpec, Cluster, ClusterSpec, FabricSpec, FatTreeSpec, NodeId, NodeSpec,
    TierSpec,
};

fn node(rails: u32, ports: u32, gbps: f64) -> NodeSpec {
    topology::examples::node(8, rails, ports, gbps)
}

fn fat_tree_k8() -> Cluster {
    build_from_spec(&ClusterSpec {
        name: "ft8".to_owned(),
        node: node(1, 1, 400.0),
        fabric: FabricSpec {
            clos: None,
            fat_tree: Some(FatTreeSpec {
                k: 8,
                tier_labels: ["e".into(), "p".into(), "c".into()],
                latency_us: [1.0, 2.0, 3.0],
            }),
        },
    })
    .expect("valid")
}

/// A rail-optimized three-tier Clos like oci-h100-16k, smaller, with `ports` × 200G per rail.
fn rail_clos(nodes: u32, ports: u32) -> Cluster {
    let tier = |l: &str, n, lat, s| TierSpec {
        label: l.to_owned(),
        value_prefix: format!("{l}-"),
        nodes_per_domain: n,
        latency_us: lat,
        switches_per_domain: Some(s),
        oversubscription: None,
        sharp: false,
    };
    build_from_spec(&ClusterSpec {
        name: "rail".to_owned(),
        node: node(8, ports, 200.0),
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes,
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![
                    tier("lb", 32, 2.0, 8),
                    tier("nb", 128, 5.0, 32),
                    tier("island", nodes, 8.0, 64),
                ],
            }),
        },
    })
    .expect("valid")
}

fn whole_nodes(cluster: &Cluster, nodes: &[usize]) -> Vec<Rank> {
    nodes
        .iter()
        .flat_map(|&n| {
            (0..cluster.nodes[n].gpus).map(move |gpu| Rank {
                node: NodeId::from_index(n),
                gpu,
            })
        })
        .collect()
}

/// Node order putting every ring neighbour of fat-tree-k8 in a different pod.
fn cross_pod_order() -> Vec<usize> {
    (0..128).map(|i| (i % 8) * 16 + i / 8).collect()
}

fn cfg(mode: RoutingMode, qps: u32) -> RoutingConfig {
    RoutingConfig {
        mode,
        nccl: fabric::NcclConfig {
            qps_per_connection: qps,
            ..fabric::NcclConfig::default()
        },
        ..RoutingConfig::default()
    }
}

fn one(
    cluster: &Cluster,
    ranks: Vec<Rank>,
    c: Collective,
    cfg: &RoutingConfig,
) -> fabric::JobResult {
    evaluate(
        cluster,
        &[JobTraffic {
            ranks,
            collective: c,
        }],
        cfg,
    )
    .expect("valid job")
    .remove(0)
}

#[test]
fn ring_over_whole_1_6_tbps_nodes_is_nic_bound_at_192_gb_s() {
    // 8 rails × 1 × 200G = 1.6 Tb/s per node; NCCL runs a 200G port at 24 GB/s
    // (sm90SpeedArrayInter, src/graph/search.cc): 8 × 24 = 192 GB/s.
    let c = rail_clos(256, 1);
    let ranks = whole_nodes(&c, &(0..64).collect::<Vec<_>>());
    let r = one(&c, ranks, Collective::AllReduce, &cfg(RoutingMode::Ecmp, 1));
    assert!((r.ideal_busbw_gb_s - 192.0).abs() < 1e-9, "{r:?}");
    // Within a rail plane the rings are spread by the striped wiring; ECMP cannot beat ideal.
    assert!(r.busbw_gb_s <= r.ideal_busbw_gb_s * (1.0 + 1e-12));
    // 2 × 200G per rail (3.2 Tb/s, BM.GPU.H100.8): 16 ports × 24 GB/s = 384 GB/s.
    let c2 = rail_clos(256, 2);
    let ranks = whole_nodes(&c2, &(0..64).collect::<Vec<_>>());
    let r2 = one(
        &c2,
        ranks,
        Collective::AllReduce,
        &cfg(RoutingMode::Adaptive, 1),
    );
    assert!((r2.ideal_busbw_gb_s - 384.0).abs() < 1e-9, "{r2:?}");
    assert!((r2.efficiency - 1.0).abs() < 1e-9);
}

#[test]
fn cross_pod_ring_on_fat_tree_ecmp_improves_with_qps_and_adaptive_is_ideal() {
    let c = fat_tree_k8();
    let ranks = whole_nodes(&c, &cross_pod_order());
    let eff = |mode, qps| one(&c, ranks.clone(), Collective::AllReduce, &cfg(mode, qps));
    let e1 = eff(RoutingMode::Ecmp, 1);
    let e4 = eff(RoutingMode::Ecmp, 4);
    let e16 = eff(RoutingMode::Ecmp, 16);
    let ad = eff(RoutingMode::Adaptive, 1);
    assert!((ad.ideal_busbw_gb_s - 48.0).abs() < 1e-9, "{ad:?}");
    assert!((ad.efficiency - 1.0).abs() < 1e-9, "{ad:?}");
    assert!(e1.efficiency < 0.7, "{e1:?}");
    assert!(e4.efficiency > e1.efficiency, "{e1:?} {e4:?}");
    assert!(e16.efficiency > e4.efficiency, "{e4:?} {e16:?}");
    assert!(e16.efficiency < 1.0 + 1e-12);
}

#[test]
fn a_ring_inside_one_edge_switch_is_not_hurt_by_ecmp() {
    let c = fat_tree_k8();
    let ranks = whole_nodes(&c, &[0, 1, 2, 3]);
    let r = one(&c, ranks, Collective::AllGather, &cfg(RoutingMode::Ecmp, 1));
    assert!((r.efficiency - 1.0).abs() < 1e-12, "{r:?}");
    assert!((r.busbw_gb_s - 48.0).abs() < 1e-9);
    assert!((r.latency_us - 1.0).abs() < 1e-12);
}

#[test]
fn alltoall_inside_a_node_is_nvlink_bound() {
    let c = fat_tree_k8();
    let ranks = whole_nodes(&c, &[5]);
    let r = one(&c, ranks, Collective::AllToAll, &cfg(RoutingMode::Ecmp, 1));
    // Each GPU sends 1/7 of its bus bytes to each of 7 peers over its 3600 Gb/s NVLink port,
    // of which NCCL uses 20.6/25 (SM90_NVLINK_BW, src/graph/topo.h): 370.8 GB/s.
    assert!((r.busbw_gb_s - 370.8).abs() < 1e-9, "{r:?}");
    assert_eq!(r.latency_us, 0.0);
}

#[test]
fn alltoall_across_nodes_is_nic_bound_with_adaptive_routing() {
    let c = fat_tree_k8();
    let ranks = whole_nodes(&c, &[0, 20, 40, 60]);
    let r = one(
        &c,
        ranks,
        Collective::AllToAll,
        &cfg(RoutingMode::Adaptive, 1),
    );
    // 32 ranks; 8 ranks share each 400G NIC (384 Gb/s usable, 48 Gb/s each) and send 24 of
    // their 31 messages through it: busbw = 48 Gb/s · 31/24, in GB/s.
    let expected = 48.0 * 31.0 / 24.0 / 8.0;
    assert!(
        (r.busbw_gb_s - expected).abs() < 1e-9,
        "{r:?} vs {expected}"
    );
    assert!((r.latency_us - 3.0).abs() < 1e-12);
}

#[test]
fn two_jobs_sharing_nics_each_get_half() {
    let c = fat_tree_k8();
    let nodes = [0usize, 1, 2, 3];
    let half = |lo: u32| -> Vec<Rank> {
        nodes
            .iter()
            .flat_map(|&n| {
                (lo..lo + 4).map(move |gpu| Rank {
                    node: NodeId::from_index(n),
                    gpu,
                })
            })
            .collect()
    };
    let jobs = [
        JobTraffic {
            ranks: half(0),
            collective: Collective::AllReduce,
        },
        JobTraffic {
            ranks: half(4),
            collective: Collective::AllReduce,
        },
    ];
    let r = evaluate(&c, &jobs, &cfg(RoutingMode::Ecmp, 1)).expect("valid");
    for j in &r {
        assert!((j.ideal_busbw_gb_s - 48.0).abs() < 1e-9, "{j:?}");
        assert!((j.busbw_gb_s - 24.0).abs() < 1e-9, "{j:?}");
        assert!((j.efficiency - 0.5).abs() < 1e-9);
    }
}

#[test]
fn routed_paths_add_up_to_the_tier_latency_and_stay_on_their_rail() {
    let c = rail_clos(256, 1);
    let ranks = whole_nodes(&c, &[0, 40, 200, 7]);
    let mut f = Fabric::new(&c);
    let job = f
        .route(
            &JobTraffic {
                ranks,
                collective: Collective::AllReduce,
            },
            &cfg(RoutingMode::Ecmp, 2),
            0,
        )
        .expect("valid");
    // 16 channels (8 search channels, doubled by ncclTopoPostset) × 4 nodes × 2 QPs.
    assert_eq!(job.channels, 16);
    assert_eq!(job.network_flows, 16 * 4 * 2);
    let mut checked = 0;
    for i in 0..job.flows.len() {
        let links: Vec<(topology::LinkId, bool)> = job
            .flows
            .path(i)
            .filter_map(|(r, _)| match f.resource(r) {
                Resource::Link { link, up, .. } => Some((link, up)),
                Resource::Nvlink { .. } => None,
            })
            .collect();
        if links.is_empty() {
            continue;
        }
        let nic = |l: topology::LinkId| match c.link(l).lower {
            topology::Endpoint::Nic { node, rail } => (node, rail),
            topology::Endpoint::Switch(_) => panic!("path ends are NICs"),
        };
        let (a, ra) = nic(links[0].0);
        let (b, rb) = nic(links[links.len() - 1].0);
        assert_eq!(ra, rb, "rail traffic stays on its rail");
        let sum: f64 = links.iter().map(|&(l, _)| c.link(l).latency_ns).sum();
        assert!((sum - c.latency_ns(a, b) as f64).abs() < 1e-9);
        // Every switch on the path serves the same rail plane: leaf index = rail.
        for &(l, _) in &links {
            if c.link(l).tier == 0 {
                let leaf = c.switch(c.link(l).upper);
                assert!(leaf.name.ends_with(&format!("-s{ra}")), "{}", leaf.name);
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 16 * 4 * 2);
}

#[test]
fn bad_jobs_are_refused() {
    let c = fat_tree_k8();
    let job = |ranks| JobTraffic {
        ranks,
        collective: Collective::AllReduce,
    };
    let r = |n: usize, gpu| Rank {
        node: NodeId::from_index(n),
        gpu,
    };
    let err = |j: JobTraffic, cfg: RoutingConfig| evaluate(&c, &[j], &cfg).unwrap_err();
    assert_eq!(
        err(job(vec![r(0, 0), r(1, 0)]), cfg(RoutingMode::Ecmp, 0)),
        FabricError::ZeroQps
    );
    assert!(matches!(
        err(job(vec![r(0, 0), r(1, 8)]), cfg(RoutingMode::Ecmp, 1)),
        FabricError::UnknownGpu {
            rank: 1,
            gpu: 8,
            ..
        }
    ));
    assert!(matches!(
        err(job(vec![r(0, 0), r(999, 0)]), cfg(RoutingMode::Ecmp, 1)),
        FabricError::UnknownNode { rank: 1, .. }
    ));
    assert!(matches!(
        err(job(vec![r(0, 0), r(0, 0)]), cfg(RoutingMode::Ecmp, 1)),
        FabricError::SharedGpu { .. }
    ));
    assert_eq!(
        err(job(vec![r(0, 0)]), cfg(RoutingMode::Ecmp, 1)),
        FabricError::TooFewRanks(1)
    );
}

/// GB200 NVL72-like: 4 GPUs and 4 × 400G per host, 18 hosts per NVLink domain.
fn nvl72(nodes: u32) -> Cluster {
    let tier = |l: &str, n, lat, s| TierSpec {
        label: l.to_owned(),
        value_prefix: format!("{l}-"),
        nodes_per_domain: n,
        latency_us: lat,
        switches_per_domain: Some(s),
        oversubscription: None,
        sharp: false,
    };
    build_from_spec(&ClusterSpec {
        name: "nvl72".to_owned(),
        node: NodeSpec {
            gpus: 4,
            nvlink_gbps: 7_200.0,
            nvlink_domain_nodes: 18,
            nvlink_domain_label: None,
            ..node(4, 1, 400.0)
        },
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes,
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![tier("lb", 36, 2.0, 4), tier("island", nodes, 5.0, 16)],
            }),
        },
    })
    .expect("valid")
}

#[test]
fn multi_node_nvlink_domains_talk_over_nvlink() {
    let c = nvl72(144);
    // One rack: the ring never leaves NVLink (900 GB/s per GPU and direction, of which NCCL
    // uses 40.1/50: SM100_NVLINK_BW, src/graph/topo.h).
    let nvlink = 900.0 * 40.1 / 50.0;
    let rack = whole_nodes(&c, &(0..18).collect::<Vec<_>>());
    let r = one(&c, rack, Collective::AllReduce, &cfg(RoutingMode::Ecmp, 1));
    assert!((r.busbw_gb_s - nvlink).abs() < 1e-9, "{r:?}");
    assert_eq!(r.latency_us, 0.0);
    // Two racks: each rack is one NCCL node with 72 NIC ports; the rings leave it through 16
    // of them, and NVLink is the bound.
    let two = whole_nodes(&c, &(0..36).collect::<Vec<_>>());
    let r = one(
        &c,
        two,
        Collective::AllReduce,
        &cfg(RoutingMode::Adaptive, 1),
    );
    assert!((r.ideal_busbw_gb_s - nvlink).abs() < 1e-6, "{r:?}");
    assert!((r.latency_us - 2.0).abs() < 1e-12);
}

/// Jobs over two NVL72 racks of `nvl72(36)`, as hosts of the first rack and hosts of the
/// second (from each rack's first): different counts gave the racks 72 and 56 (or 4) NIC
/// ports, and search channel `s mod ports` crossed rail planes, which the rail-optimized
/// leaves and striped spines do not join ("no up/down path").
const UNEVEN_RACKS: &[(usize, usize)] = &[(18, 14), (14, 18), (18, 1), (2, 17)];

#[test]
fn rings_between_racks_of_uneven_host_counts_stay_on_their_rails() {
    let c = nvl72(36);
    for &(first, second) in UNEVEN_RACKS {
        let hosts: Vec<usize> = (0..first).chain(18..18 + second).collect();
        for collective in [
            Collective::AllReduce,
            Collective::AllGather,
            Collective::ReduceScatter,
        ] {
            let r = evaluate(
                &c,
                &[JobTraffic {
                    ranks: whole_nodes(&c, &hosts),
                    collective,
                }],
                &cfg(RoutingMode::Ecmp, 1),
            )
            .unwrap_or_else(|e| panic!("{first}+{second} hosts, {collective:?}: {e}"))
            .remove(0);
            assert!(
                r.busbw_gb_s > 0.0 && r.busbw_gb_s <= r.ideal_busbw_gb_s * (1.0 + 1e-12),
                "{first}+{second} hosts, {collective:?}: {r:?}"
            );
        }
    }
}

#[test]
fn the_same_hash_seed_on_every_switch_polarises_ecmp() {
    let c = fat_tree_k8();
    let ranks = whole_nodes(&c, &cross_pod_order());
    let mean = |seeds| {
        (0..4)
            .map(|seed| {
                let cfg = RoutingConfig {
                    seeds,
                    seed,
                    ..cfg(RoutingMode::Ecmp, 16)
                };
                one(&c, ranks.clone(), Collective::AllReduce, &cfg).efficiency
            })
            .sum::<f64>()
            / 4.0
    };
    let per_switch = mean(fabric::SwitchSeeds::PerSwitch);
    let same = mean(fabric::SwitchSeeds::Same);
    assert!(
        same < 0.75 * per_switch,
        "same {same} per-switch {per_switch}"
    );
}

#[test]
fn a_simulator_can_route_once_and_resolve_when_jobs_change() {
    let c = fat_tree_k8();
    let mut f = Fabric::new(&c);
    let job = |nodes: &[usize]| JobTraffic {
        ranks: whole_nodes(&c, nodes),
        collective: Collective::AllReduce,
    };
    let cfg = cfg(RoutingMode::Ecmp, 4);
    let a = f.route(&job(&[0, 16, 32, 48]), &cfg, 1).expect("valid");
    let b = f.route(&job(&[1, 17, 33, 49]), &cfg, 2).expect("valid");
    let alone = f.solve(&[&a]).busbw_gbps[0];
    let both = f.solve(&[&a, &b]);
    assert!(both.busbw_gbps[0] <= alone * (1.0 + 1e-12));
    let ra = f.job_result(&a, both.busbw_gbps[0]);
    assert!(ra.efficiency <= 1.0 + 1e-12 && ra.efficiency > 0.0);
    // Loads never exceed capacity at the achieved pace.
    for (l, cap) in both.load_gbps.iter().zip(f.capacity()) {
        assert!(*l <= cap * (1.0 + 1e-9));
    }
}

#[test]
fn fewer_parents_than_children_merge_rail_planes_and_routes_still_reach_the_leaf() {
    // 4 rails, 4 leaves per block but only 2 spine switches per group: leaf i goes to spine
    // i mod 2, so the descent has a choice only where the wiring allows and must end at the
    // destination's rail leaf.
    let tier = |l: &str, n, lat, s| TierSpec {
        label: l.to_owned(),
        value_prefix: format!("{l}-"),
        nodes_per_domain: n,
        latency_us: lat,
        switches_per_domain: Some(s),
        oversubscription: None,
        sharp: false,
    };
    let c = build_from_spec(&ClusterSpec {
        name: "merge".to_owned(),
        node: NodeSpec {
            gpus: 4,
            ..node(4, 1, 400.0)
        },
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes: 32,
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![tier("lb", 8, 1.0, 4), tier("top", 32, 3.0, 2)],
            }),
        },
    })
    .expect("valid");
    let ranks = whole_nodes(&c, &[0, 9, 17, 25, 3]);
    for mode in [RoutingMode::Ecmp, RoutingMode::Adaptive] {
        for coll in [Collective::AllReduce, Collective::AllToAll] {
            let r = one(&c, ranks.clone(), coll, &cfg(mode, 2));
            assert!(r.busbw_gb_s > 0.0 && r.efficiency <= 1.0 + 1e-12, "{r:?}");
            assert!((r.latency_us - 3.0).abs() < 1e-12);
        }
    }
}

#[test]
fn hot_links_are_grouped_by_tier_and_direction_and_ranked() {
    let c = fat_tree_k8();
    let mut f = Fabric::new(&c);
    let job = f
        .route(
            &JobTraffic {
                ranks: whole_nodes(&c, &cross_pod_order()),
                collective: Collective::AllReduce,
            },
            &cfg(RoutingMode::Ecmp, 1),
            0,
        )
        .expect("valid");
    let alloc = f.solve(&[&job]);
    let groups = fabric::hot_link_groups(&f, &alloc.load_gbps);
    // NIC, edge-to-aggregation and aggregation-to-core ports, up and down: six groups at most,
    // each (tier, direction) once, hottest first.
    assert!(groups.len() <= 6 && groups.len() >= 4, "{groups:?}");
    let mut keys: Vec<(u8, bool)> = groups.iter().map(|g| (g.tier, g.up)).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), groups.len());
    for w in groups.windows(2) {
        assert!(w[0].max_utilization >= w[1].max_utilization);
    }
    // The job is paced by its hottest port: 100%, and ECMP leaves most ports of that group
    // below it.
    assert!((groups[0].max_utilization - 1.0).abs() < 1e-9, "{groups:?}");
    assert!(groups[0].tier >= 1);
    assert!(groups[0].mean_utilization < groups[0].max_utilization);
    assert!(groups[0].ports_at_max >= 1 && groups[0].ports_at_max <= groups[0].loaded_ports);
    assert!(groups[0].example.contains(" -> "));
}

#[test]
fn the_crc_hash_correlates_tiers_and_an_independent_hash_does_better() {
    // CRC-32 is linear: a per-switch seed only XORs a constant into it, so successive tiers'
    // choices stay correlated. The default (a keyed mixer per switch) is independent.
    let c = fat_tree_k8();
    let ranks = whole_nodes(&c, &cross_pod_order());
    let mean = |hash| {
        (0..6)
            .map(|seed| {
                let cfg = RoutingConfig {
                    hash,
                    seed,
                    ..cfg(RoutingMode::Ecmp, 1)
                };
                one(&c, ranks.clone(), Collective::AllReduce, &cfg).efficiency
            })
            .sum::<f64>()
            / 6.0
    };
    let crc = mean(fabric::HashFn::Crc32);
    let mix = mean(fabric::HashFn::Mix);
    assert_eq!(RoutingConfig::default().hash, fabric::HashFn::Mix);
    assert!(mix > crc, "mix {mix} crc {crc}");
}

/// Two leaves of four 400G hosts with one 400G uplink each (4:1), one spine.
fn two_leaves_4to1() -> Cluster {
    let tier = |l: &str, n, lat, over| TierSpec {
        label: l.to_owned(),
        value_prefix: format!("{l}-"),
        nodes_per_domain: n,
        latency_us: lat,
        switches_per_domain: Some(1),
        oversubscription: over,
        sharp: false,
    };
    build_from_spec(&ClusterSpec {
        name: "two-leaves".to_owned(),
        node: node(1, 1, 400.0),
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes: 8,
                rail_optimized: false,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![tier("leaf", 4, 1.0, None), tier("spine", 8, 2.0, Some(4.0))],
            }),
        },
    })
    .expect("valid")
}

/// A new job priced against a running one: both rings cross the same 400G uplinks once per
/// direction. Alone each is NIC-bound at 384 Gb/s (NCCL's 48 GB/s); together the uplink splits,
/// 200 Gb/s each; a job on hosts of one leaf only would not touch the uplink and slow nobody.
#[test]
fn contention_prices_a_new_job_beside_the_running_ones() {
    let c = two_leaves_4to1();
    let mut f = Fabric::new(&c);
    let cfg = cfg(RoutingMode::Ecmp, 1);
    let route = |f: &mut Fabric<'_>, hosts: &[usize], id| {
        let job = JobTraffic {
            ranks: whole_nodes(&c, hosts),
            collective: Collective::AllReduce,
        };
        f.route(&job, &cfg, id).expect("valid")
    };
    let running = vec![route(&mut f, &[0, 1, 4, 5], 1)];
    let crossing = route(&mut f, &[2, 3, 6, 7], 0);
    let k = fabric::contention(&f, &crossing, &running);
    assert!((k.new_alone_gbps - 384.0).abs() < 1e-9, "{k:?}");
    assert!((k.new_shared_gbps - 200.0).abs() < 1e-9, "{k:?}");
    assert_eq!(k.before_gbps.len(), 1);
    assert!((k.before_gbps[0] - 384.0).abs() < 1e-9, "{k:?}");
    assert!((k.after_gbps[0] - 200.0).abs() < 1e-9, "{k:?}");
    assert_eq!(k.shared.busbw_gbps.len(), 2);
    let local = route(&mut f, &[2, 3], 0);
    let k = fabric::contention(&f, &local, &running);
    assert!((k.after_gbps[0] - k.before_gbps[0]).abs() < 1e-9, "{k:?}");
    // Nothing running: alone and shared agree, no before/after.
    let k = fabric::contention(&f, &crossing, &[]);
    assert_eq!(k.new_alone_gbps, k.new_shared_gbps);
    assert!(k.before_gbps.is_empty() && k.after_gbps.is_empty());
}

/// The tuner's input beside running jobs uses the shared Ring bandwidth.
#[test]
fn tuner_input_with_running_jobs_sees_the_shared_bandwidth() {
    let c = two_leaves_4to1();
    let mut f = Fabric::new(&c);
    let cfg = cfg(RoutingMode::Ecmp, 1);
    let job = |hosts: &[usize]| JobTraffic {
        ranks: whole_nodes(&c, hosts),
        collective: Collective::AllReduce,
    };
    let running = vec![f.route(&job(&[0, 1, 4, 5]), &cfg, 1).expect("valid")];
    let alone = fabric::tuner_input(&mut f, &job(&[2, 3, 6, 7]), &cfg).expect("valid");
    let shared =
        fabric::tuner_input_with(&mut f, &job(&[2, 3, 6, 7]), &cfg, &running).expect("valid");
    assert!((alone.ring_busbw_gb_s - 48.0).abs() < 1e-9, "{alone:?}");
    assert!((shared.ring_busbw_gb_s - 25.0).abs() < 1e-9, "{shared:?}");
    assert!(shared.tree_busbw_gb_s <= alone.tree_busbw_gb_s);
}

/// The sparse solve (resources the jobs touch, renumbered) against the dense reference over
/// every resource of the fabric (`job_max_min`, loads summed from the flows): the same bits.
/// Fails if renumbering changed an order, or a row were summed differently.
#[test]
fn sparse_solve_is_the_dense_solve_bit_for_bit() {
    let c = fat_tree_k8();
    let mut f = Fabric::new(&c);
    let job = |nodes: &[usize]| JobTraffic {
        ranks: whole_nodes(&c, nodes),
        collective: Collective::AllReduce,
    };
    for mode in [RoutingMode::Ecmp, RoutingMode::Adaptive] {
        let cfg = cfg(mode, 4);
        let jobs = [
            f.route_flows(&job(&[0, 16, 32, 48]), &cfg, 1)
                .expect("valid"),
            f.route_flows(&job(&[1, 17, 33, 49, 2]), &cfg, 2)
                .expect("valid"),
            f.route_flows(&job(&[3, 4]), &cfg, 3).expect("valid"),
            f.route_flows(&job(&[5, 60, 61]), &cfg, 4).expect("valid"),
        ];
        let refs: Vec<&fabric::RoutedJob> = jobs.iter().collect();
        let flows: Vec<(&fabric::FlowPaths, &[f64])> = jobs
            .iter()
            .map(|j| (&j.flows, j.shares.as_slice()))
            .collect();
        let dense = fabric::job_max_min(f.capacity(), &flows);
        let alloc = f.solve(&refs);
        assert_eq!(alloc.busbw_gbps, dense, "{mode:?}");
        assert_eq!(f.paces(&refs), dense, "{mode:?}");
        let mut load = vec![0.0; f.n_resources()];
        for (j, rates) in jobs.iter().zip(&alloc.rates) {
            for (flow, rate) in rates.iter().enumerate() {
                for (r, w) in j.flows.path(flow) {
                    load[r as usize] += w * rate;
                }
            }
        }
        for (a, b) in alloc.load_gbps.iter().zip(&load) {
            assert!(
                (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                "{mode:?}: {a} vs {b}"
            );
        }
    }
}
