//! NVLink SHARP (NVLS, NVLSTree) and network SHARP (CollNet) as NCCL's tuner sees them, claim by
//! claim, each test naming the NCCL source it follows (NVIDIA/nccl v2.30.7, commit 5067397c).

use fabric::nccl::{nvls_plan, NvlsPlan};
use fabric::{
    parse_nccl_env, sweep, tuner_input, Algorithm, Collective, Fabric, GpuArch, JobTraffic,
    NcclConfig, Protocol, Rank, RoutingConfig, RoutingMode,
};
use topology::{build_from_spec, ClosSpec, Cluster, ClusterSpec, FabricSpec, NodeId, TierSpec};

/// Hosts of `gpus` GPUs with `nvlink_gbps` of NVLink, `domain_nodes` hosts per NVLink domain,
/// one 400G NIC per GPU, under a leaf tier of 4 hosts and a top tier; `sharp` marks both tiers.
fn cluster(nodes: u32, gpus: u32, nvlink_gbps: f64, domain_nodes: u32, sharp: bool) -> Cluster {
    let tier = |l: &str, n, lat| TierSpec {
        label: l.to_owned(),
        value_prefix: format!("{l}-"),
        nodes_per_domain: n,
        latency_us: lat,
        switches_per_domain: Some(gpus),
        oversubscription: None,
        sharp,
    };
    let mut node = topology::examples::node(gpus, gpus, 1, 400.0);
    node.nvlink_gbps = nvlink_gbps;
    node.nvlink_domain_nodes = domain_nodes;
    build_from_spec(&ClusterSpec {
        name: "sharp".to_owned(),
        node,
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes,
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![
                    tier("leaf", if nodes % 4 == 0 { 4 } else { 2 }, 2.0),
                    tier("top", nodes, 5.0),
                ],
            }),
        },
    })
    .expect("valid")
}

/// Every GPU of the first `nodes` hosts, in order.
fn ranks(c: &Cluster, nodes: usize) -> Vec<Rank> {
    (0..nodes)
        .flat_map(|n| {
            (0..c.nodes[n].gpus).map(move |gpu| Rank {
                node: NodeId::from_index(n),
                gpu,
            })
        })
        .collect()
}

fn routing(settings: &[&str]) -> RoutingConfig {
    RoutingConfig {
        mode: RoutingMode::Adaptive,
        nccl: parse_nccl_env(settings.iter().copied()).expect("valid settings"),
        ..RoutingConfig::default()
    }
}

/// The tuner's pick and busbw (GB/s) at `size` bytes.
fn pick(
    c: &Cluster,
    nodes: usize,
    collective: Collective,
    settings: &[&str],
    size: u64,
) -> (Algorithm, Protocol, f64) {
    let cfg = routing(settings);
    let job = JobTraffic {
        ranks: ranks(c, nodes),
        collective,
    };
    let mut f = Fabric::new(c);
    let input = tuner_input(&mut f, &job, &cfg).expect("valid job");
    let row = sweep(&input, &cfg, &[size]).remove(0);
    (row.algorithm, row.protocol, row.busbw_gb_s)
}

const GIB8: u64 = 8 << 30;

/// src/graph/search.cc (`ncclTopoCompute`, `ncclTopoSearchTryNvls`, `sm90SpeedArrayIntra`,
/// `sm100SpeedArrayIntra`), src/include/device.h (`NCCL_MAX_NVLS_ARITY` 32): one head per GPU
/// up to 32, the busiest GPU carrying (heads + 1) × the speed over its NVLink, NCCL's usable
/// NVLink per GPU (18 links × `SM90_NVLINK_BW` 20.6 or `SM100_NVLINK_BW` 40.1, src/graph/topo.h).
#[test]
fn nvls_search_finds_one_head_per_gpu_at_the_speed_nvlink_carries() {
    let h100 = 18.0 * 20.6;
    let b200 = 18.0 * 40.1;
    let plan = |arch, gpus, nvl| nvls_plan(arch, gpus, nvl, None);
    // 9 × 40 = 360 ≤ 370.8 < 9 × 50.
    assert_eq!(
        plan(GpuArch::Hopper, 8, h100),
        Some(NvlsPlan {
            heads: 8,
            bw_intra_gb_s: 40.0
        })
    );
    // 9 × 80 = 720 ≤ 721.8.
    assert_eq!(
        plan(GpuArch::Blackwell, 8, b200).map(|p| p.bw_intra_gb_s),
        Some(80.0)
    );
    // An NVL72 rack: 32 heads, 33 × 20 = 660 ≤ 721.8 < 33 × 24.
    assert_eq!(
        plan(GpuArch::Blackwell, 72, b200),
        Some(NvlsPlan {
            heads: 32,
            bw_intra_gb_s: 20.0
        })
    );
    // No NVLS before SM90, or with fewer than two heads (`ncclTopoTuneModel`).
    assert_eq!(plan(GpuArch::Ampere, 8, 240.0), None);
    assert_eq!(plan(GpuArch::Hopper, 1, h100), None);
    // Across nodes: the network speed array, at most the NIC's speed, heads with a NIC only.
    let across = nvls_plan(GpuArch::Hopper, 8, h100, Some((4, 48.0))).expect("plan");
    assert_eq!((across.heads, across.bw_intra_gb_s), (4, 48.0));
    assert_eq!(nvls_plan(GpuArch::Hopper, 8, h100, Some((1, 48.0))), None);
}

/// src/graph/tuning.cc (`ncclTopoTuneModel`, `nvlsEfficiency` 0.85 on Hopper): one H100 node's
/// NVLS AllReduce busbw is heads × speed × 0.85 × (heads − 1)/heads × 2 = 8 × 40 × 0.85 × 7/8 × 2
/// = 476 GB/s, bounded by NVLink SHARP and not by the ring's 370.8; NVIDIA quotes ~480
/// (NVIDIA/nccl-tests#212). Halving NVLink lowers it.
#[test]
fn nvls_busbw_is_bounded_by_nvlink_sharp() {
    let c = cluster(2, 8, 3600.0, 1, false);
    let (algo, proto, busbw) = pick(&c, 1, Collective::AllReduce, &[], GIB8);
    assert_eq!((algo, proto), (Algorithm::Nvls, Protocol::Simple));
    assert!((busbw - 476.0).abs() < 1.0, "{busbw}");
    let (ring_algo, _, ring) = pick(&c, 1, Collective::AllReduce, &["NCCL_ALGO=Ring"], GIB8);
    assert_eq!(ring_algo, Algorithm::Ring);
    assert!(ring < busbw, "{ring} vs {busbw}");
    // Hopper with half the NVLink (1,800 Gb/s per GPU would read as Ampere: keep 3,600 and use
    // the plan directly): 9 × 20 ≤ 185.4 gives speed 20, half the busbw.
    let half = nvls_plan(GpuArch::Hopper, 8, 185.4, None).expect("plan");
    assert_eq!(half.bw_intra_gb_s, 20.0);
}

/// src/graph/search.cc: NVLS needs an NVSwitch (`system->nodes[NVS].count`) and SM90; railyard
/// assumes NVSwitches in NVLink domains of at least 8 GPUs. A 4-GPU H100 board and an 8-GPU
/// A100 node get no NVLS.
#[test]
fn nvls_is_chosen_only_on_nvswitch_shapes_from_hopper_on() {
    let board4 = cluster(2, 4, 3600.0, 1, false);
    assert_eq!(
        pick(&board4, 1, Collective::AllReduce, &[], GIB8).0,
        Algorithm::Ring
    );
    let a100 = cluster(2, 8, 2400.0, 1, false);
    assert_eq!(
        pick(&a100, 1, Collective::AllReduce, &[], GIB8).0,
        Algorithm::Ring
    );
    // Forced, NVLS is not there to pick: nothing is left.
    let cfg = routing(&["NCCL_ALGO=NVLS"]);
    let job = JobTraffic {
        ranks: ranks(&a100, 1),
        collective: Collective::AllReduce,
    };
    let input = tuner_input(&mut Fabric::new(&a100), &job, &cfg).expect("valid");
    assert!(sweep(&input, &cfg, &[GIB8]).is_empty());
}

/// src/graph/tuning.cc: NVLS' base latency is its NVLink latency of 25 µs (`hwLatencies`), far
/// above Ring LL's, so small messages stay on the ring and NVLS takes over for large ones.
#[test]
fn the_tuner_prefers_nvls_only_for_large_messages() {
    let c = cluster(2, 8, 3600.0, 1, false);
    let (small, proto, _) = pick(&c, 1, Collective::AllReduce, &[], 8);
    assert_eq!((small, proto), (Algorithm::Ring, Protocol::Ll));
    let (large, _, _) = pick(&c, 1, Collective::AllReduce, &[], 1 << 30);
    assert_eq!(large, Algorithm::Nvls);
}

/// src/transport/nvls.cc (`NCCL_NVLS_ENABLE`): 0 turns NVLS off; `NCCL_ALGO=^NVLS` too.
#[test]
fn nccl_nvls_enable_and_nccl_algo_are_honoured() {
    let c = cluster(2, 8, 3600.0, 1, false);
    for off in [["NCCL_NVLS_ENABLE=0"], ["NCCL_ALGO=^NVLS"]] {
        assert_eq!(
            pick(&c, 1, Collective::AllReduce, &off, GIB8).0,
            Algorithm::Ring
        );
    }
    assert!(parse_nccl_env(["NCCL_NVLS_ENABLE=3"]).is_err());
    assert!(parse_nccl_env(["NCCL_COLLNET_ENABLE=2"]).is_err());
    assert!(NcclConfig::default().nvls_enable && !NcclConfig::default().collnet_enable);
}

/// src/enqueue.cc (`updateCollCostTable`): NVLS across nodes needs CollNet, so several H100
/// nodes without SHARP get NVLSTree at most (src/graph/tuning.cc: single node disables it);
/// AllGather and ReduceScatter use NVLS inside one domain of at most 32 ranks only.
#[test]
fn nvls_across_nodes_is_nvlstree_without_collnet() {
    let c = cluster(4, 8, 3600.0, 1, false);
    let (algo, _, busbw) = pick(
        &c,
        2,
        Collective::AllReduce,
        &["NCCL_ALGO=NVLS,NVLSTree"],
        GIB8,
    );
    assert_eq!(algo, Algorithm::NvlsTree);
    // At most 8 heads × perChMaxNVLSTreeBw (Hopper, 2 nodes) 57.7.
    assert!(busbw <= 8.0 * 57.7 + 1e-6, "{busbw}");
    let cfg = routing(&["NCCL_ALGO=NVLS"]);
    let job = JobTraffic {
        ranks: ranks(&c, 2),
        collective: Collective::AllReduce,
    };
    let input = tuner_input(&mut Fabric::new(&c), &job, &cfg).expect("valid");
    assert!(
        sweep(&input, &cfg, &[GIB8]).is_empty(),
        "NVLS across nodes without CollNet"
    );
    // One node: AllGather may use NVLS (8 ranks); an NVL72 rack's 72 ranks may not.
    let gb200 = cluster(18, 4, 7200.0, 18, false);
    let cfg = routing(&["NCCL_ALGO=NVLS"]);
    let job = JobTraffic {
        ranks: ranks(&gb200, 18),
        collective: Collective::AllGather,
    };
    let input = tuner_input(&mut Fabric::new(&gb200), &job, &cfg).expect("valid");
    assert!(sweep(&input, &cfg, &[GIB8]).is_empty());
}

/// src/graph/tuning.cc and src/init.cc (`NCCL_COLLNET_ENABLE`, default 0): CollNet is used only
/// when enabled and, in railyard, only where every tier the job crosses has SHARP switches.
#[test]
fn collnet_needs_sharp_switches_and_nccl_collnet_enable() {
    let cfg_on = [
        "NCCL_COLLNET_ENABLE=1",
        "NCCL_ALGO=CollNetDirect,CollNetChain",
    ];
    // 8 hosts: the job on hosts 0 and 4 crosses the top tier.
    let with = cluster(8, 8, 2400.0, 1, true);
    let without = cluster(8, 8, 2400.0, 1, false);
    let job = |c: &Cluster| JobTraffic {
        ranks: ranks(c, 8),
        collective: Collective::AllReduce,
    };
    let rows = |c: &Cluster, settings: &[&str]| {
        let cfg = routing(settings);
        let input = tuner_input(&mut Fabric::new(c), &job(c), &cfg).expect("valid");
        sweep(&input, &cfg, &[GIB8])
    };
    let sharp = rows(&with, &cfg_on);
    assert_eq!(sharp.len(), 1);
    assert!(matches!(
        sharp[0].algorithm,
        Algorithm::CollNetDirect | Algorithm::CollNetChain
    ));
    assert!(rows(&without, &cfg_on).is_empty(), "no SHARP switches");
    assert!(
        rows(&with, &["NCCL_ALGO=CollNetDirect,CollNetChain"]).is_empty(),
        "NCCL_COLLNET_ENABLE defaults to 0"
    );
    // The OCI presets say nothing of SHARP: CollNet never appears there.
    let oci = build_from_spec(&topology::examples::oci_h100(2048)).expect("preset");
    assert!(oci.tiers.iter().all(|t| !t.sharp));
}

/// src/graph/tuning.cc: CollNetDirect's bandwidth is heads × the NIC's channel speed, divided
/// by the GPU-to-NIC factor and ×0.85 on SM90+, then halved to algorithm bandwidth; NVLS across
/// nodes (with CollNet) is bounded per head by the NIC's channel speed.
#[test]
fn collnet_and_nvls_across_nodes_follow_nccls_formulas() {
    let c = cluster(8, 8, 3600.0, 1, true);
    let cfg = routing(&["NCCL_COLLNET_ENABLE=1"]);
    let job = JobTraffic {
        ranks: ranks(&c, 8),
        collective: Collective::AllReduce,
    };
    let input = tuner_input(&mut Fabric::new(&c), &job, &cfg).expect("valid");
    let collnet = input.collnet.expect("SHARP on every tier");
    assert_eq!((collnet.heads, collnet.bw_gb_s), (8, 48.0));
    let estimates = fabric::nccl::tuner_estimates(&input, &cfg.nccl);
    let algbw = |a| {
        estimates
            .iter()
            .find(|e| e.algorithm == a)
            .map(|e| e.algbw_gb_s)
            .expect("estimate")
    };
    // 8 heads × 48 / (factor 1) × 0.85 × 0.5.
    assert!((algbw(Algorithm::CollNetDirect) - 8.0 * 48.0 * 0.85 * 0.5).abs() < 1e-9);
    assert!((algbw(Algorithm::CollNetChain) - 8.0 * 48.0 * 0.5).abs() < 1e-9);
    // NVLS across nodes: per head min(40 × 0.85 × 7/8 × 2, 48) = 48 → 8 × 48 busbw.
    let n = 64.0;
    assert!((algbw(Algorithm::Nvls) - 8.0 * 48.0 * n / (2.0 * (n - 1.0))).abs() < 1e-9);
}
