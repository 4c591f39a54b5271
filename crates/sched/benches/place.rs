//! Placement on the 16,384-node `oci-h100-131k` cluster at 70% random occupancy (seeded):
//! a 1,024-node gang preferring a Tier-1 block, and 32-node gangs required within one Tier-0
//! block, fitting and not fitting. DESIGN.md target: p50 < 1 ms each.
//!
//! Run: `CARGO_TARGET_DIR=… cargo bench -p sched`.

use sched::{
    place, GpuRequest, Job, Occupancy, PodAllocation, PodSet, RunningJob, TopologyRequest,
};
use topology::{
    build_from_spec, ClosSpec, Cluster, ClusterSpec, FabricSpec, NodeId, NodeSpec, TierSpec,
};

fn main() {
    divan::main();
}

const TIER0: &str = "oci.oraclecloud.com/rdma.local_block_id";
const TIER1: &str = "oci.oraclecloud.com/rdma.network_block_id";
const TIER2: &str = "oci.oraclecloud.com/rdma.hpc_island_id";

/// The same shape as the `oci-h100-131k` preset.
fn oci_131k() -> Cluster {
    let tier = |label: &str, prefix: &str, nodes, latency_us, switches| TierSpec {
        label: format!("oci.oraclecloud.com/rdma.{label}"),
        value_prefix: prefix.to_owned(),
        nodes_per_domain: nodes,
        latency_us,
        switches_per_domain: Some(switches),
        oversubscription: None,
    };
    let spec = ClusterSpec {
        name: "oci-h100-131k".to_owned(),
        node: NodeSpec {
            gpus: 8,
            gpu_memory_gib: 80,
            rails: 8,
            ports_per_rail: 2,
            port_gbps: 200.0,
            nvlink_gbps: 3600.0,
            nvlink_domain_nodes: 1,
            shape: Some("BM.GPU.H100.8".to_owned()),
            name_prefix: "gpu-".to_owned(),
        },
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes: 16_384,
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![
                    tier("local_block_id", "lb-", 32, 2.0, 8),
                    tier("network_block_id", "nb-", 256, 5.0, 32),
                    tier("hpc_island_id", "island-", 16_384, 8.0, 64),
                ],
            }),
        },
    };
    build_from_spec(&spec).expect("valid preset")
}

/// 70% of the nodes busy (whole nodes, seeded), except the Tier-0 blocks listed in `keep_free`.
fn occupied(cluster: &Cluster, keep_free: &[usize]) -> Occupancy {
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let tier0 = cluster.level_by_label(TIER0).expect("level");
    let free_blocks: Vec<_> = keep_free
        .iter()
        .map(|&b| cluster.levels[tier0].domains[b])
        .collect();
    let pods: Vec<PodAllocation> = (0..cluster.nodes.len())
        .map(NodeId::from_index)
        .filter(|&n| rng.f64() < 0.7 && !free_blocks.contains(&cluster.node(n).domains[tier0]))
        .map(|node| PodAllocation {
            node,
            gpu_ids: (0..8).collect(),
            milli: 1000,
            memory_mib: 80 * 1024,
        })
        .collect();
    let mut occ = Occupancy::new(cluster);
    occ.allocate(
        RunningJob {
            name: "background".to_owned(),
            queue: "q".to_owned(),
            priority: 0,
            preemptible: true,
        },
        pods,
    )
    .expect("valid occupancy");
    occ
}

fn gang(nodes: u32, topology: TopologyRequest) -> Job {
    Job {
        name: "gang".to_owned(),
        queue: "q".to_owned(),
        priority: 0,
        preemptible: true,
        pod_sets: vec![PodSet {
            name: "workers".to_owned(),
            count: nodes,
            min_count: nodes,
            gpu: GpuRequest::Whole(8),
            cpu_millis: 0,
            memory_mib: 0,
            topology,
        }],
        tolerations: Vec::new(),
    }
}

#[divan::bench(sample_count = 50)]
fn gang_1024_nodes_preferred_tier1(bencher: divan::Bencher) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[]);
    let job = gang(
        1024,
        TopologyRequest {
            preferred: cluster.level_by_label(TIER1),
            ..TopologyRequest::default()
        },
    );
    assert!(place(&cluster, &occ, &job).is_ok());
    bencher.bench_local(|| place(&cluster, &occ, divan::black_box(&job)));
}

#[divan::bench(sample_count = 50)]
fn gang_32_nodes_required_tier0_fits(bencher: divan::Bencher) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[17, 300]);
    let job = gang(
        32,
        TopologyRequest {
            required: cluster.level_by_label(TIER0),
            ..TopologyRequest::default()
        },
    );
    assert!(place(&cluster, &occ, &job).is_ok());
    bencher.bench_local(|| place(&cluster, &occ, divan::black_box(&job)));
}

#[divan::bench(sample_count = 50)]
fn gang_32_nodes_required_tier0_does_not_fit(bencher: divan::Bencher) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[]);
    let job = gang(
        32,
        TopologyRequest {
            required: cluster.level_by_label(TIER0),
            ..TopologyRequest::default()
        },
    );
    assert!(place(&cluster, &occ, &job).is_err());
    bencher.bench_local(|| place(&cluster, &occ, divan::black_box(&job)));
}

#[divan::bench(sample_count = 50)]
fn gang_1024_nodes_required_tier1_does_not_fit(bencher: divan::Bencher) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[]);
    let job = gang(
        1024,
        TopologyRequest {
            required: cluster.level_by_label(TIER1),
            ..TopologyRequest::default()
        },
    );
    assert!(place(&cluster, &occ, &job).is_err());
    bencher.bench_local(|| place(&cluster, &occ, divan::black_box(&job)));
}

#[divan::bench(sample_count = 50)]
fn gang_1024_nodes_required_tier2(bencher: divan::Bencher) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[]);
    let job = gang(
        1024,
        TopologyRequest {
            required: cluster.level_by_label(TIER2),
            preferred: cluster.level_by_label(TIER1),
            ..TopologyRequest::default()
        },
    );
    assert!(place(&cluster, &occ, &job).is_ok());
    bencher.bench_local(|| place(&cluster, &occ, divan::black_box(&job)));
}

/// What a simulator step costs: place, commit and release a 1,024-node gang.
#[divan::bench(sample_count = 50)]
fn place_commit_release_1024(bencher: divan::Bencher) {
    let cluster = oci_131k();
    let mut occ = occupied(&cluster, &[]);
    let job = gang(
        1024,
        TopologyRequest {
            preferred: cluster.level_by_label(TIER1),
            ..TopologyRequest::default()
        },
    );
    bencher.bench_local(|| {
        let p = place(&cluster, &occ, &job).expect("fits");
        sched::commit(&mut occ, &job, &p).expect("commit");
        occ.release("gang")
    });
}

/// 70% of the nodes run one-node jobs (priority 0); a priority-1 gang of 32 nodes required in
/// one Tier-0 block must preempt a whole block's worth of them.
#[divan::bench(sample_count = 10)]
fn preempt_for_32_nodes_required_tier0(bencher: divan::Bencher) {
    let cluster = oci_131k();
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let mut occ = Occupancy::new(&cluster);
    for n in 0..cluster.nodes.len() {
        if rng.f64() < 0.7 {
            occ.allocate(
                RunningJob {
                    name: format!("bg-{n:05}"),
                    queue: "q".to_owned(),
                    priority: 0,
                    preemptible: true,
                },
                vec![PodAllocation {
                    node: NodeId::from_index(n),
                    gpu_ids: (0..8).collect(),
                    milli: 1000,
                    memory_mib: 80 * 1024,
                }],
            )
            .expect("valid occupancy");
        }
    }
    let mut job = gang(
        32,
        TopologyRequest {
            required: cluster.level_by_label(TIER0),
            ..TopologyRequest::default()
        },
    );
    job.priority = 1;
    let policy = sched::PreemptionPolicy::default();
    let d = sched::place_with_preemption(&cluster, &occ, &job, &policy).expect("preemption helps");
    assert!(!d.victims.is_empty());
    bencher.bench_local(|| {
        sched::place_with_preemption(&cluster, &occ, divan::black_box(&job), &policy)
    });
}
