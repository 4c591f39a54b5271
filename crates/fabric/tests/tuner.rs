//! NCCL's tuner as NCCL computes it (issue 33), each test naming the NCCL source it follows
//! (NVIDIA/nccl v2.30.7, tag `v2.30.7-1` = commit 73cf1122; `src/` identical at 5067397c): the
//! Tree bandwidth convention, the per-channel caps by the search graph's channel count, and the
//! single-node channel search over NVLink.

use fabric::nccl::{channel_plan, tuner_estimates, GpuArch, TunerInput};
use fabric::{
    parse_nccl_env, tuner_input, Algorithm, Collective, Fabric, JobTraffic, NcclConfig, Protocol,
    Rank, RoutingConfig, RoutingMode,
};
use topology::{build_from_spec, ClosSpec, Cluster, ClusterSpec, FabricSpec, NodeId, TierSpec};

/// DGX H100-like hosts (8 × H100, NVLink 450 GB/s, 8 × 400G, one NIC per GPU) on one
/// rail-optimized leaf.
fn dgx_h100(nodes: u32) -> Cluster {
    build_from_spec(&ClusterSpec {
        name: "dgx-h100".to_owned(),
        node: topology::examples::node(8, 8, 1, 400.0),
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes: nodes.max(2),
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![TierSpec {
                    label: "leaf".to_owned(),
                    value_prefix: "leaf-".to_owned(),
                    nodes_per_domain: nodes.max(2),
                    latency_us: 1.0,
                    switches_per_domain: Some(8),
                    oversubscription: None,
                    sharp: false,
                }],
            }),
        },
    })
    .expect("valid spec")
}

fn allreduce(nodes: usize, gpus: u32) -> JobTraffic {
    JobTraffic {
        ranks: (0..nodes)
            .flat_map(|n| {
                (0..gpus).map(move |gpu| Rank {
                    node: NodeId::from_index(n),
                    gpu,
                })
            })
            .collect(),
        collective: Collective::AllReduce,
    }
}

fn adaptive(nccl: NcclConfig) -> RoutingConfig {
    RoutingConfig {
        mode: RoutingMode::Adaptive,
        nccl,
        ..RoutingConfig::default()
    }
}

fn estimate(input: &TunerInput, cfg: &NcclConfig, a: Algorithm, p: Protocol) -> f64 {
    tuner_estimates(input, cfg)
        .into_iter()
        .find(|e| e.algorithm == a && e.protocol == p)
        .unwrap_or_else(|| panic!("no {a:?}/{p:?} estimate"))
        .algbw_gb_s
}

/// Fix 1. `ncclTopoTuneModel` (src/graph/tuning.cc): Tree's bus figure is `nChannels × bw`,
/// ×0.92 for AllReduce, and turns into algorithm bandwidth by ×0.5 — no (n − 1)/n. The fabric
/// model's tree is given in nccl-tests' convention (algbw × 2(n − 1)/n), so a tree the model
/// moves at algbw A must come out of the tuner at 0.92 × A where no cap binds; before the fix
/// it came out at 0.92 × A × (n − 1)/n (half of it at 2 ranks).
#[test]
fn tree_algbw_is_the_modelled_trees_at_the_tuners_efficiency() {
    let cfg = NcclConfig::default();
    for (n_ranks, n_nodes) in [(2usize, 2usize), (8, 8), (32, 4)] {
        let algbw = 100.0;
        let n = n_ranks as f64;
        let input = TunerInput {
            collective: Collective::AllReduce,
            arch: GpuArch::Hopper,
            n_ranks,
            n_nodes,
            channels: 16,
            // 8 × perChMaxTreeBw (36 to 41.4 GB/s on Hopper) is above 0.92 × 200: no cap.
            graph_channels: 8,
            ring_busbw_gb_s: 384.0,
            tree_busbw_gb_s: algbw * 2.0 * (n - 1.0) / n,
            nvls_tree_busbw_gb_s: 0.0,
            nvls: None,
            collnet: None,
        };
        let tree = estimate(&input, &cfg, Algorithm::Tree, Protocol::Simple);
        assert!(
            (tree - 0.92 * algbw).abs() < 1e-9,
            "{n_ranks} ranks: {tree}"
        );
    }
}

/// Fix 2. `ncclTopoTuneModel` (src/graph/tuning.cc) caps Ring LL128 at `graphs[ring]->nChannels
/// × perChMaxRingLL128Bw` and Tree at `graphs[tree]->nChannels × perChMaxTreeBw`: the search
/// graph's channels (8 on a node with 8 × 400G NICs: 8 × 48 GB/s, no duplication on SM90 below
/// 50 GB/s with more than 4 channels, `ncclTopoDupChannels`, src/graph/search.cc), not the 16 of
/// the communicator after `ncclTopoPostset` (src/graph/connect.cc). On 4 × 8 H100 that is
/// NCCL's own arithmetic: Tree/Simple 8 × 36.0 × 0.5 = 144 GB/s algorithm bandwidth, Ring/LL128
/// 8 × 36.7 × 32/62 = 151.5 (before the fix: 171 and 182).
#[test]
fn per_channel_caps_multiply_the_search_graphs_channels() {
    let c = dgx_h100(4);
    let cfg = adaptive(NcclConfig::default());
    let input = tuner_input(&mut Fabric::new(&c), &allreduce(4, 8), &cfg).expect("valid job");
    assert_eq!((input.graph_channels, input.channels), (8, 16));
    let tree = estimate(&input, &cfg.nccl, Algorithm::Tree, Protocol::Simple);
    assert!((tree - 8.0 * 36.0 * 0.5).abs() < 1e-9, "{tree}");
    let ll128 = estimate(&input, &cfg.nccl, Algorithm::Ring, Protocol::Ll128);
    assert!((ll128 - 8.0 * 36.7 * 32.0 / 62.0).abs() < 1e-9, "{ll128}");
    // Ring Simple is the modelled ring's bandwidth, uncapped: 384 × 32/62.
    let simple = estimate(&input, &cfg.nccl, Algorithm::Ring, Protocol::Simple);
    assert!((simple - 384.0 * 32.0 / 62.0).abs() < 1e-9, "{simple}");
}

/// Fix 3. On one node `ncclTopoTrimSystem` (src/graph/paths.cc) marks the system intra-node
/// (`inter = 0`: every rank is local) and `ncclTopoCompute` (src/graph/search.cc) searches with
/// the intra-node speed array: 8 × H100 (18 NVLinks × 20.6 = 370.8 GB/s) fits 6 channels at
/// `sm90SpeedArrayIntra`'s 60 GB/s; `ncclTopoDupChannels` doubles them to 12 at 30 (60 is not
/// below 50); `ncclTopoPostset` (src/graph/connect.cc) doubles again to 24 — the 24 channels
/// NCCL logs on one 8-GPU node (e.g. "Channel 23/24" on an HGX A100 in NVIDIA/nccl-tests#100:
/// 12 × 20 GB/s NVLinks = 240 fits 6 × 40 of `speedArrayIntra`, 12 after duplication). NICs do
/// not count: one or sixteen give the same plan.
#[test]
fn one_node_searches_nvlink_with_the_intra_node_speeds() {
    let d = NcclConfig::default();
    let h100 = 450.0 * GpuArch::Hopper.nvlink_efficiency();
    for nics in [1, 8, 16] {
        let p = channel_plan(GpuArch::Hopper, 1, nics, 50.0, 8, h100, &d);
        assert_eq!(
            (
                p.search_channels,
                p.speed_gb_s,
                p.graph_channels,
                p.channels
            ),
            (6, 60.0, 12, 24),
            "{nics} NICs: {p:?}"
        );
    }
    let a100 = 300.0 * GpuArch::Ampere.nvlink_efficiency();
    let p = channel_plan(GpuArch::Ampere, 1, 8, 25.0, 8, a100, &d);
    assert_eq!(
        (
            p.search_channels,
            p.speed_gb_s,
            p.graph_channels,
            p.channels
        ),
        (6, 40.0, 12, 24)
    );
    // 8 × H800 (8 NVLinks: 164.8 GB/s): 4 × 40 (ties with 8 × 20 go to the faster speed, tried
    // first), duplicated (4 channels are not more than 4) to 8, then 16 — the "16 coll
    // channels" NCCL logged on one 8 × H800 node in NVIDIA/nccl#892.
    let h800 = 8.0 * GpuArch::Hopper.nvlink_link_gb_s();
    let p = channel_plan(GpuArch::Hopper, 1, 8, 50.0, 8, h800, &d);
    assert_eq!(
        (
            p.search_channels,
            p.speed_gb_s,
            p.graph_channels,
            p.channels
        ),
        (4, 40.0, 8, 16)
    );
    // Across nodes the network search is unchanged: 8 × 48, 16 channels.
    let p = channel_plan(GpuArch::Hopper, 2, 8, 50.0, 8, h100, &d);
    assert_eq!(
        (p.search_channels, p.graph_channels, p.channels),
        (8, 8, 16)
    );
    // Through the fabric model: one DGX H100 node's job plans 24 channels, 12 in the graph.
    let c = dgx_h100(1);
    let cfg = adaptive(parse_nccl_env(["NCCL_ALGO=Ring"]).expect("valid"));
    let input = tuner_input(&mut Fabric::new(&c), &allreduce(1, 8), &cfg).expect("valid job");
    assert_eq!((input.graph_channels, input.channels), (12, 24));
}

/// Found on the way (the 2 × H100 sweep of NVIDIA/nccl-tests#309 reaches 468 GB/s at 8 GiB):
/// NVLSTree's per-channel bandwidth is the least of NVLink SHARP's, the network's (`bwInter`,
/// doubled on two nodes) and `perChMaxNVLSTreeBw` (`ncclTopoTuneModel`, src/graph/tuning.cc);
/// NVLink SHARP reduces inside the node, so the Tree algorithm's NVLink chains are not on its
/// path. On 2 × 8 H100 the chains bind the modelled Tree at about 397 GB/s, while the tree
/// between nodes alone is far above NCCL's cap, which then binds: 8 heads × 57.7 (Hopper, 2
/// nodes) = 461.6 GB/s bus bandwidth, NCCL's own figure.
#[test]
fn nvls_tree_is_bounded_by_the_tree_between_nodes_not_its_nvlink_chains() {
    let c = dgx_h100(2);
    let cfg = adaptive(NcclConfig::default());
    let input = tuner_input(&mut Fabric::new(&c), &allreduce(2, 8), &cfg).expect("valid job");
    assert!(input.tree_busbw_gb_s < 400.0, "{input:?}");
    assert!(input.nvls_tree_busbw_gb_s > 8.0 * 57.7, "{input:?}");
    let nvls_tree = estimate(&input, &cfg.nccl, Algorithm::NvlsTree, Protocol::Simple);
    let want = 8.0 * 57.7 * 16.0 / 30.0;
    assert!((nvls_tree - want).abs() < 1e-9, "{nvls_tree} vs {want}");
}
