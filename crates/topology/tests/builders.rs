//! Builder formulas and invariants: fat-tree counts, Clos tier capacities and latencies, wiring.

use proptest::prelude::*;
use topology::examples::node;
use topology::{
    build_from_spec, ClosSpec, Cluster, ClusterSpec, Endpoint, FabricSpec, FatTreeSpec, NodeId,
    NodeSpec, TierSpec, HOSTNAME_LABEL,
};

fn fat_tree(k: u32) -> Cluster {
    build_from_spec(&ClusterSpec {
        name: format!("ft{k}"),
        node: node(1, 1, 1, 100.0),
        fabric: FabricSpec {
            fat_tree: Some(FatTreeSpec {
                k,
                tier_labels: ["edge".into(), "pod".into(), "core".into()],
                latency_us: [1.0, 2.0, 3.0],
            }),
            clos: None,
        },
    })
    .expect("valid fat-tree")
}

fn tier(label: &str, nodes: u32, latency_us: f64, switches: Option<u32>) -> TierSpec {
    TierSpec {
        label: label.to_owned(),
        value_prefix: format!("{label}-"),
        nodes_per_domain: nodes,
        latency_us,
        switches_per_domain: switches,
        oversubscription: None,
        sharp: false,
    }
}

fn clos(
    nodes: u32,
    node_spec: NodeSpec,
    tiers: Vec<TierSpec>,
    rail_optimized: bool,
) -> ClusterSpec {
    ClusterSpec {
        name: "clos".to_owned(),
        node: node_spec,
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes,
                rail_optimized,
                host_label: HOSTNAME_LABEL.to_owned(),
                tiers,
            }),
        },
    }
}

/// OCI's three tiers for BM.GPU.H100.8 hosts (8 GPUs): 32, 256 and 16,384 nodes per block.
fn oci_131k() -> ClusterSpec {
    clos(
        16_384,
        node(8, 8, 2, 200.0),
        vec![
            tier("lb", 32, 2.0, Some(8)),
            tier("nb", 256, 5.0, Some(32)),
            tier("island", 16_384, 8.0, Some(64)),
        ],
        true,
    )
}

fn pod_of(c: &Cluster, n: NodeId) -> u32 {
    c.tier_group(n, 1)
}

#[test]
fn fat_tree_k8_counts() {
    let c = fat_tree(8);
    // k³/4 hosts, 5k²/4 switches (k²/2 edge + k²/2 aggregation + k²/4 core).
    assert_eq!(c.nodes.len(), 8 * 8 * 8 / 4);
    assert_eq!(c.switches.len(), 5 * 8 * 8 / 4);
    let per_tier: Vec<usize> = (0..3)
        .map(|t| c.switches.iter().filter(|s| s.tier == t).count())
        .collect();
    assert_eq!(per_tier, vec![32, 32, 16]);
    // Every switch uses exactly k ports (core: k down; edge/agg: k/2 down + k/2 up).
    for (i, s) in c.switches.iter().enumerate() {
        let id = topology::SwitchId::from_index(i);
        assert_eq!(
            c.up_links(id).len() + c.down_links(id).len(),
            8,
            "{}",
            s.name
        );
    }
    // (k/2)² shortest paths between hosts in different pods, k/2 within a pod.
    let a = NodeId(0);
    let other_pod = (0..c.nodes.len())
        .map(NodeId::from_index)
        .find(|&n| pod_of(&c, n) != pod_of(&c, a))
        .unwrap();
    assert_eq!(c.paths_between(a, other_pod, 0), 16);
    let same_pod_other_edge = (0..c.nodes.len())
        .map(NodeId::from_index)
        .find(|&n| pod_of(&c, n) == pod_of(&c, a) && c.tier_group(n, 0) != c.tier_group(a, 0))
        .unwrap();
    assert_eq!(c.paths_between(a, same_pod_other_edge, 0), 4);
}

#[test]
fn fat_tree_k64_counts() {
    let c = fat_tree(64);
    assert_eq!(c.nodes.len(), 65_536);
    assert_eq!(c.switches.len(), 5 * 64 * 64 / 4);
    let far = NodeId::from_index(c.nodes.len() - 1);
    assert_eq!(c.paths_between(NodeId(0), far, 0), 32 * 32);
}

#[test]
fn two_tier_clos_of_radix_k_has_k_squared_over_two_ports() {
    // A non-blocking two-tier Clos of radix-64 switches: 64 leaves with 32 hosts each.
    let spec = clos(
        2_048,
        node(1, 1, 1, 400.0),
        vec![
            tier("leaf", 32, 1.0, Some(1)),
            tier("spine", 2_048, 2.0, Some(32)),
        ],
        false,
    );
    let c = build_from_spec(&spec).unwrap();
    assert_eq!(c.nodes.len(), 64 * 64 / 2);
    for (i, s) in c.switches.iter().enumerate() {
        let id = topology::SwitchId::from_index(i);
        assert_eq!(
            c.up_links(id).len() + c.down_links(id).len(),
            64,
            "{}",
            s.name
        );
    }
}

#[test]
fn oci_tiers_hold_256_2048_131072_gpus_at_2_5_8_us() {
    let c = build_from_spec(&oci_131k()).unwrap();
    assert_eq!(c.gpu_count(), 131_072);
    let gpus: Vec<u64> = c.tiers.iter().map(|t| t.gpus_max).collect();
    assert_eq!(gpus, vec![256, 2_048, 131_072]);
    let lat: Vec<u64> = c.tiers.iter().map(|t| t.latency_ns).collect();
    assert_eq!(lat, vec![2_000, 5_000, 8_000]);
    // 131,072 × 400 Gb/s ≈ 52.4 Pb/s of injection bandwidth, non-blocking at every tier.
    let s = c.summary();
    assert!((s.injection_gbps - 52_428_800.0).abs() < 1e-6);
    for t in &s.tiers {
        assert!(
            (t.uplink_gbps - s.injection_gbps).abs() < 1e-3,
            "tier {}",
            t.tier
        );
    }
    assert_eq!(c.latency_ns(NodeId(0), NodeId(1)), 2_000);
    assert_eq!(c.latency_ns(NodeId(0), NodeId(32)), 5_000);
    assert_eq!(c.latency_ns(NodeId(0), NodeId(16_383)), 8_000);
    assert_eq!(c.latency_ns(NodeId(5), NodeId(5)), 0);
}

/// Walk straight up from a NIC, always taking the first up-link, summing hop latencies until
/// reaching `tier`; twice that (up and down) is the path latency.
fn up_latency(c: &Cluster, n: NodeId, tier: u8) -> f64 {
    let first = c.link(c.node(n).nic_links[0]);
    let mut total = first.latency_ns;
    let mut s = first.upper;
    while c.switch(s).tier < tier {
        let l = c.link(c.up_links(s)[0]);
        total += l.latency_ns;
        s = l.upper;
    }
    total
}

#[test]
fn link_latencies_add_up_to_tier_latency() {
    let c = build_from_spec(&oci_131k()).unwrap();
    for (t, tier) in c.tiers.iter().enumerate() {
        let sum = 2.0 * up_latency(&c, NodeId(0), t as u8);
        assert!(
            (sum - tier.latency_ns as f64).abs() < 1e-9,
            "tier {t}: {sum}"
        );
    }
}

#[test]
fn rail_optimized_leaves_keep_each_rail_on_its_own_leaf() {
    let c = build_from_spec(&oci_131k()).unwrap();
    for n in [NodeId(0), NodeId(7), NodeId(31)] {
        let leaves: Vec<_> = c
            .node(n)
            .nic_links
            .iter()
            .map(|&l| c.link(l).upper)
            .collect();
        let mut dedup = leaves.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), 8, "8 rails on 8 different leaves");
        // Rail r of every host in the block lands on the same leaf.
        for (r, &leaf) in leaves.iter().enumerate() {
            assert_eq!(c.link(c.node(NodeId(3)).nic_links[r]).upper, leaf);
        }
    }
}

#[test]
fn spec_errors_name_the_field() {
    let mut bad = oci_131k();
    if let Some(c) = bad.fabric.clos.as_mut() {
        c.tiers[1].nodes_per_domain = 100;
        c.tiers[2].latency_us = 1.0;
    }
    let err = build_from_spec(&bad).unwrap_err().to_string();
    assert!(
        err.contains("fabric.clos.tiers[1].nodes_per_domain"),
        "{err}"
    );
    assert!(err.contains("fabric.clos.tiers[2].latency_us"), "{err}");
    assert!(!err.contains('\n'));

    let mut odd = ClusterSpec {
        name: "x".into(),
        node: node(8, 1, 1, 100.0),
        fabric: FabricSpec::default(),
    };
    let err = build_from_spec(&odd).unwrap_err().to_string();
    assert!(err.contains("exactly one of `fat_tree` or `clos`"), "{err}");
    odd.fabric.fat_tree = Some(FatTreeSpec {
        k: 7,
        tier_labels: ["a".into(), "b".into(), "c".into()],
        latency_us: [1.0, 2.0, 3.0],
    });
    let err = build_from_spec(&odd).unwrap_err().to_string();
    assert!(
        err.starts_with("fabric.fat_tree.k: expected an even radix"),
        "{err}"
    );
}

/// Structural invariants every built cluster must satisfy.
fn check_invariants(c: &Cluster) {
    // Each level's domains partition the nodes, and children nest inside parents.
    for (li, level) in c.levels.iter().enumerate() {
        let mut count = 0;
        for &d in &level.domains {
            let dom = c.domain(d);
            assert_eq!(dom.level, li);
            count += dom.nodes.len();
            for &n in &dom.nodes {
                assert_eq!(c.node(n).domains[li], d);
            }
            if let Some(p) = dom.parent {
                assert!(c.domain(p).children.contains(&d));
            }
        }
        assert_eq!(count, c.nodes.len());
    }
    // One NIC link per rail, each from that NIC to a tier-0 switch of the node's leaf group.
    for (i, n) in c.nodes.iter().enumerate() {
        let id = NodeId::from_index(i);
        assert_eq!(n.nic_links.len(), n.nics.rails as usize);
        for (r, &l) in n.nic_links.iter().enumerate() {
            let link = c.link(l);
            assert_eq!(
                link.lower,
                Endpoint::Nic {
                    node: id,
                    rail: r as u32
                }
            );
            assert_eq!(c.switch(link.upper).tier, 0);
            assert_eq!(c.switch(link.upper).group, c.tier_group(id, 0));
        }
    }
    // Links go up exactly one tier, to the parent group.
    for l in &c.links {
        if let Endpoint::Switch(s) = l.lower {
            assert_eq!(c.switch(s).tier + 1, c.switch(l.upper).tier);
        }
        assert!(l.gbps > 0.0);
    }
    // common_tier is symmetric and matches the tier groups.
    let n = c.nodes.len().min(40);
    for a in 0..n {
        for b in 0..n {
            let (a, b) = (NodeId::from_index(a), NodeId::from_index(b));
            assert_eq!(c.common_tier(a, b), c.common_tier(b, a));
            if let Some(t) = c.common_tier(a, b) {
                assert_eq!(c.tier_group(a, t), c.tier_group(b, t));
                if t > 0 {
                    assert_ne!(c.tier_group(a, t - 1), c.tier_group(b, t - 1));
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_clos_specs_build_consistent_clusters(
        leaf in 1u32..6,
        mult in proptest::collection::vec(1u32..4, 0..3),
        rails in 1u32..5,
        rail_optimized: bool,
        spines in 1u32..4,
    ) {
        let mut sizes = vec![leaf];
        for m in &mult {
            sizes.push(sizes.last().unwrap() * (m + 1));
        }
        let nodes = *sizes.last().unwrap() * 2;
        sizes.push(nodes);
        let tiers: Vec<TierSpec> = sizes
            .iter()
            .enumerate()
            .map(|(i, &s)| tier(&format!("t{i}"), s, 1.0 + i as f64, if i == 0 { None } else { Some(spines * rails) }))
            .collect();
        let spec = clos(nodes, node(rails * 2, rails, 1, 100.0), tiers, rail_optimized);
        let c = build_from_spec(&spec).unwrap();
        check_invariants(&c);
        prop_assert_eq!(c.nodes.len(), nodes as usize);
        prop_assert_eq!(c.tiers.len(), sizes.len());
        for (t, &s) in sizes.iter().enumerate() {
            prop_assert_eq!(c.tiers[t].gpus_max, u64::from(s * rails * 2));
        }
    }
}

#[test]
fn fat_tree_invariants() {
    check_invariants(&fat_tree(4));
    check_invariants(&fat_tree(8));
}

#[test]
fn links_know_their_physical_ports() {
    // oci-h100-131k's shape at 2,048 nodes: a rail is 2 × 200G; an uplink bundle of 3.2 Tb/s
    // (32 hosts × 3.2 Tb/s over 8 leaves × 4 spines) is 16 ports as fast as the fastest NIC
    // port.
    let c = topology::build_from_spec(&topology::examples::oci_h100(2048)).expect("valid");
    let nic = c.link(c.nodes[0].nic_links[0]);
    assert_eq!((nic.ports, nic.port_gbps()), (2, 200.0));
    let up = c.links.iter().find(|l| l.tier == 1).expect("a tier-1 link");
    assert_eq!((up.gbps, up.ports, up.port_gbps()), (3200.0, 16, 200.0));
}

/// A spec of `nodes` hosts of 4 GPUs (4 rails) in NVLink domains of `nvl` hosts under Clos tiers
/// of `tiers` hosts per block (leaf first, the last all nodes), with the NVLink domains as a
/// level labelled `label` when given.
fn nvl_spec(nodes: u32, nvl: u32, tiers: &[u32], label: Option<&str>) -> ClusterSpec {
    let mut host = node(4, 4, 1, 400.0);
    host.nvlink_gbps = 7200.0;
    host.nvlink_domain_nodes = nvl;
    host.nvlink_domain_label = label.map(str::to_owned);
    let tiers = tiers
        .iter()
        .enumerate()
        .map(|(i, &n)| tier(&format!("t{i}"), n, 2.0 + 3.0 * i as f64, None))
        .collect();
    clos(nodes, host, tiers, true)
}

/// An NVLink level (`node.nvlink_domain_label`) is one more level just above the host whose
/// domains are the NVLink domains, and nothing else: the same switches, links and tiers, the
/// same lowest common tier and latency for every pair of hosts as without it. Cases: (hosts,
/// hosts per NVLink domain, hosts per block of each tier): GB200 NVL72's shape at 2 local
/// blocks of 2 racks, a domain equal to its leaf block, a single-tier cluster.
#[test]
fn an_nvlink_level_adds_a_level_and_no_switch() {
    let label = "nvidia.com/gpu.clique";
    for (nodes, nvl, tiers) in [
        (144, 18, &[36, 72, 144][..]),
        (16, 4, &[4, 16][..]),
        (8, 2, &[8][..]),
    ] {
        let case = format!("{nodes} hosts, {nvl} per NVLink domain, tiers {tiers:?}");
        let plain = build_from_spec(&nvl_spec(nodes, nvl, tiers, None)).expect("valid");
        let with = build_from_spec(&nvl_spec(nodes, nvl, tiers, Some(label))).expect("valid");
        check_invariants(&with);
        // Levels: the plain ones, with the NVLink level inserted just above the host.
        let host = plain.levels.len() - 1;
        let names = |c: &Cluster| -> Vec<(String, usize, bool)> {
            c.levels
                .iter()
                .map(|l| (l.label.clone(), l.domains.len(), l.nvlink))
                .collect()
        };
        let mut expected = names(&plain);
        expected.insert(host, (label.to_owned(), (nodes / nvl) as usize, true));
        assert_eq!(names(&with), expected, "{case}");
        assert_eq!(with.host_level, Some(host + 1), "{case}");
        assert_eq!(with.tier_of_level(host), None, "{case}");
        // Each of its domains is one whole NVLink domain.
        for &d in &with.levels[host].domains {
            let members = &with.domain(d).nodes;
            let nvl_domain = with.node(members[0]).nvlink_domain;
            assert!(
                members
                    .iter()
                    .all(|&n| with.node(n).nvlink_domain == nvl_domain),
                "{case}"
            );
            assert_eq!(
                members.len(),
                with.nvlink_domains[nvl_domain.index()].nodes.len(),
                "{case}"
            );
        }
        // The switch view: identical.
        let switches = |c: &Cluster| format!("{:?}", c.switches);
        let links = |c: &Cluster| format!("{:?}", c.links);
        let tiers = |c: &Cluster| format!("{:?}", c.tiers);
        assert_eq!(switches(&with), switches(&plain), "{case}");
        assert_eq!(links(&with), links(&plain), "{case}");
        assert_eq!(tiers(&with), tiers(&plain), "{case}");
        for a in 0..nodes as usize {
            for b in 0..nodes as usize {
                let (a, b) = (NodeId::from_index(a), NodeId::from_index(b));
                assert_eq!(with.common_tier(a, b), plain.common_tier(a, b), "{case}");
                assert_eq!(with.latency_ns(a, b), plain.latency_ns(a, b), "{case}");
            }
        }
    }
}

/// `node.nvlink_domain_label` that cannot be a level between the host and the leaf tier is
/// refused in one line naming the field. Cases: (hosts per NVLink domain, leaf block, label,
/// what the message says).
#[test]
fn a_misplaced_nvlink_level_is_refused_naming_the_field() {
    for (nvl, leaf, label, says) in [
        (
            1,
            36,
            "nvidia.com/gpu.clique",
            "needs node.nvlink_domain_nodes > 1",
        ),
        (
            18,
            16,
            "nvidia.com/gpu.clique",
            "(18) must divide fabric.clos.tiers[0].nodes_per_domain (16)",
        ),
        (
            18,
            36,
            "t0",
            "`t0` is also the host label or a tier's label",
        ),
        (18, 36, HOSTNAME_LABEL, "is also the host label"),
        (18, 36, " ", "must not be empty"),
    ] {
        let spec = nvl_spec(144, nvl, &[leaf, 144], Some(label));
        let err = build_from_spec(&spec).unwrap_err().to_string();
        assert!(err.starts_with("node.nvlink_domain_label: "), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }
}

/// A level of imported nodes is an NVLink level exactly when every node's value of it is the
/// node's NVLink domain: then it makes no switch tier; one node outside a multi-node domain,
/// or with another value, makes it a switch level as before. Cases: (NVLink domain of node 3,
/// level value of node 3, whether the level is an NVLink level).
#[test]
fn a_level_is_an_nvlink_level_when_its_values_are_the_nodes_nvlink_domains() {
    use std::collections::BTreeMap;
    use topology::{assemble, FabricParams, NicSpec, NodeRecord, TierParams};
    for (domain_of_3, value_of_3, nvlink) in [
        (Some("rack-1"), "rack-1", true),
        (None, "rack-1", false),
        (Some("rack-1"), "rack-9", false),
    ] {
        let records: Vec<NodeRecord> = (0..4)
            .map(|i| {
                let rack = format!("rack-{}", i / 2);
                let (domain, value) = if i == 3 {
                    (domain_of_3.map(str::to_owned), value_of_3.to_owned())
                } else {
                    (Some(rack.clone()), rack)
                };
                NodeRecord {
                    name: format!("n{i}"),
                    gpus: 4,
                    gpu_memory_gib: 186,
                    nics: NicSpec {
                        rails: 1,
                        ports_per_rail: 1,
                        port_gbps: 400.0,
                    },
                    nvlink_gbps: 7200.0,
                    nvlink_domain: domain,
                    labels: BTreeMap::from([
                        ("block".to_owned(), "b0".to_owned()),
                        ("rack".to_owned(), value),
                        (HOSTNAME_LABEL.to_owned(), format!("n{i}")),
                    ]),
                    taints: Vec::new(),
                    ready: true,
                    unschedulable: false,
                    internal_ip: None,
                    allocatable: BTreeMap::new(),
                }
            })
            .collect();
        let tier = |us: u64| TierParams {
            latency_ns: us * 1000,
            oversubscription: 1.0,
            switches_per_group: None,
        };
        let params = FabricParams {
            levels: vec!["block".into(), "rack".into(), HOSTNAME_LABEL.into()],
            host_label: HOSTNAME_LABEL.into(),
            tiers: vec![tier(2), tier(5)],
            rail_optimized: false,
        };
        let c = assemble("racks", records, &params).expect("valid");
        let case = format!("node 3 in NVLink domain {domain_of_3:?}, rack {value_of_3}");
        assert_eq!(c.levels[1].nvlink, nvlink, "{case}");
        let served: Vec<Option<usize>> = c.tiers.iter().map(|t| t.level).collect();
        let expected = if nvlink {
            vec![Some(0)]
        } else {
            vec![Some(1), Some(0)]
        };
        assert_eq!(served, expected, "{case}");
    }
}
