//! NCCL's structure, claim by claim, each test naming the NCCL source it follows (NVIDIA/nccl
//! v2.30.7, commit 5067397c): rings enter every node once per channel, channel counts, QPs per
//! connection, physical ports, and job-level sharing.

use fabric::{
    evaluate, Collective, Fabric, JobTraffic, NcclConfig, Rank, Resource, RoutingConfig,
    RoutingMode,
};
use topology::{
    build_from_spec, ClosSpec, Cluster, ClusterSpec, Endpoint, FabricSpec, NodeId, TierSpec,
};

/// A two-tier rail-optimized Clos of `nodes` hosts with `rails` × `ports` × `gbps` NICs.
fn clos(nodes: u32, rails: u32, ports: u32, gbps: f64) -> Cluster {
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
        name: "clos".to_owned(),
        node: topology::examples::node(8, rails, ports, gbps),
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes,
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![
                    tier("lb", 4, 2.0, rails),
                    tier("top", nodes, 5.0, rails * 2),
                ],
            }),
        },
    })
    .expect("valid")
}

fn rank(node: usize, gpu: u32) -> Rank {
    Rank {
        node: NodeId::from_index(node),
        gpu,
    }
}

fn cfg(mode: RoutingMode, qps: u32) -> RoutingConfig {
    RoutingConfig {
        mode,
        nccl: NcclConfig {
            qps_per_connection: qps,
            ..NcclConfig::default()
        },
        ..RoutingConfig::default()
    }
}

fn allreduce(ranks: Vec<Rank>) -> JobTraffic {
    JobTraffic {
        ranks,
        collective: Collective::AllReduce,
    }
}

/// Network flows arriving at each node's NIC ports, counted per node.
fn arrivals_per_node(f: &Fabric, job: &fabric::RoutedJob, n_nodes: usize) -> Vec<usize> {
    let c = f.cluster();
    let mut count = vec![0; n_nodes];
    for i in 0..job.flows.len() {
        let last = job.flows.path(i).last().map(|(r, _)| f.resource(r));
        if let Some(Resource::Link {
            link, up: false, ..
        }) = last
        {
            if let Endpoint::Nic { node, .. } = c.link(link).lower {
                count[node.index()] += 1;
            }
        }
    }
    count
}

/// src/graph/connect.cc (`connectRings`) and src/graph/search.cc (ring pattern
/// `NET n -> GPU a -> … -> GPU x -> NET n`): each channel's ring enters every node once,
/// whatever the rank order. Ranks alternating between two nodes get the same bandwidth as
/// ranks in node order (the 25 or 6.25 GB/s instead of about 50 was rank-order rings).
#[test]
fn ring_enters_each_node_once_per_channel_whatever_the_rank_order() {
    let c = clos(8, 1, 1, 400.0);
    let alternating: Vec<Rank> = (0..8).flat_map(|g| [rank(0, g), rank(4, g)]).collect();
    let in_order: Vec<Rank> = (0..8)
        .map(|g| rank(0, g))
        .chain((0..8).map(|g| rank(4, g)))
        .collect();
    let mut f = Fabric::new(&c);
    let job = f
        .route(
            &allreduce(alternating.clone()),
            &cfg(RoutingMode::Ecmp, 1),
            0,
        )
        .expect("valid");
    // One NIC per node: 4 channels (search 1 at 48 GB/s, ncclTopoDupChannels ×2, postset ×2).
    assert_eq!(job.channels, 4);
    // Every channel crosses into each of the 2 nodes exactly once.
    let arrivals = arrivals_per_node(&f, &job, c.nodes.len());
    assert_eq!((arrivals[0], arrivals[4]), (4, 4), "{arrivals:?}");
    assert_eq!(job.network_flows, 4 * 2);
    let alt = evaluate(&c, &[allreduce(alternating)], &cfg(RoutingMode::Ecmp, 1)).expect("valid");
    let ord = evaluate(&c, &[allreduce(in_order)], &cfg(RoutingMode::Ecmp, 1)).expect("valid");
    assert!((alt[0].busbw_gb_s - 48.0).abs() < 1e-9, "{alt:?}");
    assert!((alt[0].busbw_gb_s - ord[0].busbw_gb_s).abs() < 1e-9);
}

/// src/graph/search.cc (`ncclTopoCompute`, `ncclTopoDupChannels`) and src/graph/connect.cc
/// (`ncclTopoPostset`): at least two channels per NIC port; `NCCL_MAX_NCHANNELS` and
/// `NCCL_MIN_NCHANNELS` bound the count.
#[test]
fn channel_count_is_nccl_default_and_follows_the_limits() {
    // 8 × 400G per node, H100 NVLink: 8 search channels at 48 GB/s, no duplication in the
    // search (SM90, below 50 GB/s, more than 4), doubled by the postset: 16.
    let c = clos(8, 8, 1, 400.0);
    let ranks: Vec<Rank> = (0..4)
        .flat_map(|n| (0..8).map(move |g| rank(n, g)))
        .collect();
    let mut f = Fabric::new(&c);
    let job = f
        .route(&allreduce(ranks.clone()), &cfg(RoutingMode::Adaptive, 1), 0)
        .expect("valid");
    assert_eq!(job.channels, 16);
    assert_eq!(job.network_flows, 16 * 4);
    // 8 × 48 GB/s.
    assert!((job.ideal_busbw_gbps / 8.0 - 384.0).abs() < 1e-9);
    let limited = RoutingConfig {
        nccl: fabric::parse_nccl_env(["NCCL_MAX_NCHANNELS=4"]).expect("valid"),
        ..cfg(RoutingMode::Adaptive, 1)
    };
    let job = f
        .route(&allreduce(ranks.clone()), &limited, 0)
        .expect("valid");
    assert_eq!(job.channels, 4);
    // Four channels use four of the eight NICs: half the bandwidth.
    assert!((job.ideal_busbw_gbps / 8.0 - 192.0).abs() < 1e-9);
    let raised = RoutingConfig {
        nccl: fabric::parse_nccl_env(["NCCL_MIN_NCHANNELS=32"]).expect("valid"),
        ..cfg(RoutingMode::Adaptive, 1)
    };
    assert_eq!(
        f.route(&allreduce(ranks), &raised, 0)
            .expect("valid")
            .channels,
        32
    );
}

/// src/transport/net_ib/connect.cc (`IbQpsPerConn`, `NCCL_IB_QPS_PER_CONNECTION`, default 1):
/// every network connection has that many QPs, each its own flow with its own RoCEv2 source
/// port and an equal part of the connection's bytes.
#[test]
fn qps_per_connection_split_every_connection_into_equal_flows() {
    let c = clos(8, 8, 1, 400.0);
    let ranks: Vec<Rank> = (0..4)
        .flat_map(|n| (0..8).map(move |g| rank(n, g)))
        .collect();
    let mut f = Fabric::new(&c);
    let one = f
        .route_flows(&allreduce(ranks.clone()), &cfg(RoutingMode::Ecmp, 1), 0)
        .expect("valid");
    let four = f
        .route_flows(&allreduce(ranks), &cfg(RoutingMode::Ecmp, 4), 0)
        .expect("valid");
    assert_eq!(one.network_flows, 16 * 4);
    assert_eq!(four.network_flows, 16 * 4 * 4);
    let net_share = |j: &fabric::RoutedJob| -> f64 {
        (0..j.flows.len())
            .filter(|&i| {
                j.flows
                    .path(i)
                    .any(|(r, _)| matches!(f.resource(r), Resource::Link { .. }))
            })
            .map(|i| j.shares[i])
            .sum()
    };
    assert!((net_share(&one) - net_share(&four)).abs() < 1e-9);
}

/// Every port is its own link: a rail of 2 × 200G is two resources of 200G, and a flow uses
/// one of them, so one connection per rail cannot use the rail's second port.
#[test]
fn a_rail_of_two_ports_is_two_links() {
    let c = clos(8, 1, 2, 200.0);
    let f = Fabric::new(&c);
    let nic = c.node(NodeId::from_index(0)).nic_links[0];
    assert_eq!(c.link(nic).ports, 2);
    let r0 = f.ports().resource(nic, 0, true);
    let r1 = f.ports().resource(nic, 1, true);
    assert_ne!(r0, r1);
    // NCCL uses 24 GB/s of a 200G port (sm90SpeedArrayInter, src/graph/search.cc).
    assert_eq!(f.capacity()[r0 as usize], 192.0);
    // Two ports per node, two ring channels each: 2 × 24 GB/s.
    let ranks: Vec<Rank> = (0..8)
        .map(|g| rank(0, g))
        .chain((0..8).map(|g| rank(5, g)))
        .collect();
    let r = evaluate(&c, &[allreduce(ranks)], &cfg(RoutingMode::Adaptive, 1)).expect("valid");
    assert!((r[0].busbw_gb_s - 48.0).abs() < 1e-9, "{r:?}");
}

/// Two jobs share node 0's and node 1's NICs; job A also crosses a 16:1 oversubscribed uplink
/// that paces it at 12.5 GB/s. Job-level sharing gives job B the rest of the NICs (35.5 GB/s);
/// per-flow max-min with every job at its slowest flow left B at half a NIC (24 GB/s).
#[test]
fn a_job_paced_elsewhere_hands_back_its_share_of_a_shared_nic() {
    let tier = |l: &str, n, lat, s, o| TierSpec {
        label: l.to_owned(),
        value_prefix: format!("{l}-"),
        nodes_per_domain: n,
        latency_us: lat,
        switches_per_domain: Some(s),
        oversubscription: o,
        sharp: false,
    };
    let c = build_from_spec(&ClusterSpec {
        name: "oversubscribed".to_owned(),
        node: topology::examples::node(8, 1, 1, 400.0),
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes: 8,
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![
                    tier("lb", 4, 2.0, 1, None),
                    tier("top", 8, 5.0, 2, Some(16.0)),
                ],
            }),
        },
    })
    .expect("valid");
    let a: Vec<Rank> = [0, 1, 4]
        .iter()
        .flat_map(|&n| (0..4).map(move |g| rank(n, g)))
        .collect();
    let b: Vec<Rank> = [0, 1]
        .iter()
        .flat_map(|&n| (4..8).map(move |g| rank(n, g)))
        .collect();
    let r = evaluate(
        &c,
        &[allreduce(a), allreduce(b)],
        &cfg(RoutingMode::Adaptive, 1),
    )
    .expect("valid");
    assert!((r[0].busbw_gb_s - 12.5).abs() < 1e-9, "{r:?}");
    assert!((r[1].busbw_gb_s - 35.5).abs() < 1e-9, "{r:?}");
}

/// src/graph/trees.cc (`ncclGetDtree`) and src/graph/connect.cc (`connectTrees`): Tree
/// AllReduce runs NCCL's double binary tree over nodes. Every node but a root has one parent
/// per tree, each tree edge carries its channels' data up and down, and over two nodes the tree
/// moves each byte across the network once each way instead of the ring's twice: busbw above
/// the NIC aggregate (the "tree effect", NVIDIA/nccl-tests#196).
#[test]
fn tree_allreduce_is_a_double_binary_tree_over_nodes() {
    let c = clos(8, 8, 1, 400.0);
    let job = |nodes: usize| {
        allreduce(
            (0..nodes)
                .flat_map(|n| (0..8).map(move |g| rank(n, g)))
                .collect(),
        )
    };
    let mut f = Fabric::new(&c);
    let cfg = cfg(RoutingMode::Adaptive, 1);
    for nodes in [2usize, 5, 8] {
        let t = f
            .route_flows_algorithm(&job(nodes), fabric::Algorithm::Tree, &cfg, 0)
            .expect("valid");
        // channels × (nodes − 1) edges per tree × 2 directions.
        assert_eq!(
            t.network_flows,
            t.channels as usize * (nodes - 1) * 2,
            "{nodes} nodes"
        );
        let arrivals = arrivals_per_node(&f, &t, c.nodes.len());
        // Each node is reached by its parent and children of both trees: at least one per channel.
        for (n, &a) in arrivals.iter().enumerate().take(nodes) {
            assert!(a >= t.channels as usize, "node {n}: {a}");
        }
    }
    // The tree effect needs NVLink well above the NIC: one 100G NIC per 8-GPU node.
    let slow = clos(8, 1, 1, 100.0);
    let mut f = Fabric::new(&slow);
    let two = allreduce(
        (0..2)
            .flat_map(|n| (0..8).map(move |g| rank(n, g)))
            .collect(),
    );
    let ring = f.route(&two, &cfg, 0).expect("valid");
    let tree = f
        .route_algorithm(&two, fabric::Algorithm::Tree, &cfg, 0)
        .expect("valid");
    // NCCL's 12 GB/s of a 100G port.
    assert!((ring.ideal_busbw_gbps / 8.0 - 12.0).abs() < 1e-9);
    let tree_busbw = tree.ideal_busbw_gbps / 8.0;
    assert!(
        (tree_busbw - 12.0 * 30.0 / 16.0).abs() < 1e-9,
        "{tree_busbw}"
    );
}

/// src/graph/tuning.cc (`ncclTopoTuneModel`, `ncclTopoGetAlgoTime`): small messages go LL,
/// large ones Simple; with NCCL_ALGO=Ring the sweep approaches the ring's bandwidth.
#[test]
fn the_sweep_picks_protocols_by_size_like_nccls_tuner() {
    let c = clos(8, 8, 1, 400.0);
    let ranks: Vec<Rank> = (0..4)
        .flat_map(|n| (0..8).map(move |g| rank(n, g)))
        .collect();
    let ring_only = RoutingConfig {
        nccl: fabric::parse_nccl_env(["NCCL_ALGO=Ring"]).expect("valid"),
        ..cfg(RoutingMode::Adaptive, 1)
    };
    let mut f = Fabric::new(&c);
    let input = fabric::tuner_input(&mut f, &allreduce(ranks), &ring_only).expect("valid");
    assert_eq!(input.channels, 16);
    let rows = fabric::sweep(&input, &ring_only, &fabric::doubling_sizes(8, 8 << 30));
    assert_eq!(rows.len(), 31);
    assert_eq!(rows[0].protocol, fabric::Protocol::Ll);
    assert_eq!(rows[30].protocol, fabric::Protocol::Simple);
    assert!(rows.iter().all(|r| r.algorithm == fabric::Algorithm::Ring));
    // Time never falls as the size grows; busbw at 8 GiB is within 1% of the ring's 384 GB/s.
    for w in rows.windows(2) {
        assert!(w[1].time_us >= w[0].time_us);
    }
    assert!(
        (rows[30].busbw_gb_s - 384.0).abs() < 0.01 * 384.0,
        "{:?}",
        rows[30]
    );
    // Small messages are latency-bound: 8 bytes take at least the Ring LL base latency.
    assert!(rows[0].time_us >= fabric::nccl::BASE_LATENCY_US[1][0]);
}

/// ECMP hashes over the member ports of a bundle, not over bundles: flows through one uplink
/// bundle land on several of its ports.
#[test]
fn ecmp_spreads_flows_over_the_ports_of_a_bundle() {
    let c = clos(8, 1, 1, 400.0);
    // Uplinks: 4 hosts × 400G over 2 spines = 800G per link, two 400G ports each.
    let up = c.links.iter().find(|l| l.tier == 1).expect("uplink");
    assert_eq!(up.ports, 2);
    let ranks: Vec<Rank> = [0usize, 4, 1, 5, 2, 6, 3, 7]
        .iter()
        .flat_map(|&n| (0..8).map(move |g| rank(n, g)))
        .collect();
    let mut f = Fabric::new(&c);
    let job = f
        .route_flows(&allreduce(ranks), &cfg(RoutingMode::Ecmp, 4), 0)
        .expect("valid");
    let mut used: Vec<(topology::LinkId, u32)> = Vec::new();
    for i in 0..job.flows.len() {
        for (r, _) in job.flows.path(i) {
            if let Resource::Link { link, port, .. } = f.resource(r) {
                if c.link(link).tier == 1 {
                    used.push((link, port));
                }
            }
        }
    }
    used.sort();
    used.dedup();
    let links_with_both_ports = used
        .windows(2)
        .filter(|w| w[0].0 == w[1].0 && w[0].1 != w[1].1)
        .count();
    assert!(links_with_both_ports > 0, "{used:?}");
}

/// `fabric::compare` pairs measured nccl-tests rows with the prediction at the same size.
#[test]
fn measured_rows_are_compared_size_by_size() {
    let c = clos(8, 8, 1, 400.0);
    let ranks: Vec<Rank> = (0..2)
        .flat_map(|n| (0..8).map(move |g| rank(n, g)))
        .collect();
    let cfg = RoutingConfig {
        nccl: fabric::parse_nccl_env(["NCCL_ALGO=Ring"]).expect("valid"),
        ..cfg(RoutingMode::Adaptive, 1)
    };
    let mut f = Fabric::new(&c);
    let input = fabric::tuner_input(&mut f, &allreduce(ranks), &cfg).expect("valid");
    // Rows as `formats::nccl_tests` reads them from lines 2 and 3 of an nccl-tests log.
    let row = |line, size_bytes, time_us, algbw_gb_s, busbw_gb_s| {
        let t = fabric::Timing {
            time_us,
            algbw_gb_s,
            busbw_gb_s,
        };
        fabric::Measured {
            line,
            size_bytes,
            count: size_bytes / 4,
            dtype: "float".to_owned(),
            out_of_place: t,
            in_place: t,
        }
    };
    let measured = [
        row(2, 8, 40.1, 0.0, 0.0),
        row(3, 8_589_934_592, 47000.0, 182.76, 342.67),
    ];
    let rows = fabric::compare(&input, &cfg, &measured);
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0].line, rows[1].line), (2, 3));
    assert_eq!(rows[0].relative_error, f64::INFINITY);
    // 8 × 48 GB/s predicted against 342.67 measured.
    let expected = (rows[1].predicted_busbw_gb_s - 342.67) / 342.67;
    assert!((rows[1].relative_error - expected).abs() < 1e-12);
    assert!(rows[1].predicted_busbw_gb_s > 380.0 && rows[1].predicted_busbw_gb_s <= 384.0);
}
