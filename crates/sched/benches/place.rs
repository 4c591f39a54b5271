//! Placement on the 16,384-node `oci-h100-131k` cluster at 70% random occupancy (seeded):
//! a 1,024-node gang preferring a Tier-1 block, and 32-node gangs required within one Tier-0
//! block, fitting and not fitting; the simulator's common case, unconstrained jobs of one node
//! and of 64 nodes. DESIGN.md target: p50 < 1 ms each. Each runs on a plain occupancy
//! (`Occupancy::new`: the full algorithm, a walk over every node) and on one that tracks node
//! state (`Occupancy::with_node_tracking`: the kept free-capacity counts where they decide).
//! The `kai_` benches place the same jobs under KAI's rules (`Dialect::Kai`, binpack): on the
//! tracked occupancy an unconstrained pod set of whole GPUs is refused or placed from the kept
//! counts; a required one walks every node.
//!
//! Run: `CARGO_TARGET_DIR=… cargo bench -p sched`.

use sched::{
    place, place_with, Dialect, GpuRequest, Job, Occupancy, PlaceInput, PlaceOptions,
    PodAllocation, PodSet, RunningJob, TopologyRequest,
};
use topology::{build_from_spec, Cluster, NodeId};

fn main() {
    divan::main();
}

/// Which occupancy a bench places on.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `Occupancy::new`.
    Plain,
    /// `Occupancy::with_node_tracking`.
    Tracked,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Plain => "plain",
            Kind::Tracked => "tracked",
        })
    }
}

const KINDS: [Kind; 2] = [Kind::Plain, Kind::Tracked];

fn empty(cluster: &Cluster, kind: Kind) -> Occupancy {
    match kind {
        Kind::Plain => Occupancy::new(cluster),
        Kind::Tracked => Occupancy::with_node_tracking(cluster),
    }
}

const TIER0: &str = "oci.oraclecloud.com/rdma.local_block_id";
const TIER1: &str = "oci.oraclecloud.com/rdma.network_block_id";
const TIER2: &str = "oci.oraclecloud.com/rdma.hpc_island_id";

/// The `oci-h100-131k` preset.
fn oci_131k() -> Cluster {
    build_from_spec(&topology::examples::oci_h100(16_384)).expect("valid preset")
}

/// 70% of the nodes busy (whole nodes, seeded), except the Tier-0 blocks listed in `keep_free`.
fn occupied(cluster: &Cluster, keep_free: &[usize], kind: Kind) -> Occupancy {
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
    let mut occ = empty(cluster, kind);
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

#[divan::bench(sample_count = 50, args = KINDS)]
fn gang_1024_nodes_preferred_tier1(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[], kind);
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

#[divan::bench(sample_count = 50, args = KINDS)]
fn gang_32_nodes_required_tier0_fits(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[17, 300], kind);
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

#[divan::bench(sample_count = 50, args = KINDS)]
fn gang_32_nodes_required_tier0_does_not_fit(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[], kind);
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

#[divan::bench(sample_count = 50, args = KINDS)]
fn gang_1024_nodes_required_tier1_does_not_fit(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[], kind);
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

#[divan::bench(sample_count = 50, args = KINDS)]
fn gang_1024_nodes_required_tier2(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[], kind);
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
#[divan::bench(sample_count = 50, args = KINDS)]
fn place_commit_release_1024(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let mut occ = occupied(&cluster, &[], kind);
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

/// The simulator's common case: an unconstrained job of one node's 4 GPUs, placed.
#[divan::bench(sample_count = 50, args = KINDS)]
fn one_node_4_gpus_unconstrained(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[], kind);
    let mut job = gang(1, TopologyRequest::default());
    job.pod_sets[0].gpu = GpuRequest::Whole(4);
    assert!(place(&cluster, &occ, &job).is_ok());
    bencher.bench_local(|| place(&cluster, &occ, divan::black_box(&job)));
}

/// An unconstrained 64-node gang, placed.
#[divan::bench(sample_count = 50, args = KINDS)]
fn gang_64_nodes_unconstrained(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[], kind);
    let job = gang(64, TopologyRequest::default());
    assert!(place(&cluster, &occ, &job).is_ok());
    bencher.bench_local(|| place(&cluster, &occ, divan::black_box(&job)));
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

/// Placement options for KAI's rules (binpack, the default strategy).
fn kai() -> PlaceInput {
    PlaceInput {
        options: PlaceOptions {
            dialect: Dialect::Kai,
            ..PlaceOptions::default()
        },
        ..PlaceInput::default()
    }
}

/// KAI: the simulator's common case, an unconstrained job of one node's 4 GPUs, placed.
#[divan::bench(sample_count = 50, args = KINDS)]
fn kai_one_node_4_gpus_unconstrained(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[], kind);
    let mut job = gang(1, TopologyRequest::default());
    job.pod_sets[0].gpu = GpuRequest::Whole(4);
    let input = kai();
    assert!(place_with(&cluster, &occ, &job, &input).is_ok());
    bencher.bench_local(|| place_with(&cluster, &occ, divan::black_box(&job), &input));
}

/// KAI: an unconstrained 64-node gang, placed.
#[divan::bench(sample_count = 50, args = KINDS)]
fn kai_gang_64_nodes_unconstrained(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[], kind);
    let job = gang(64, TopologyRequest::default());
    let input = kai();
    assert!(place_with(&cluster, &occ, &job, &input).is_ok());
    bencher.bench_local(|| place_with(&cluster, &occ, divan::black_box(&job), &input));
}

/// KAI: an unconstrained gang larger than the free nodes (the blocked job of a pass), refused.
#[divan::bench(sample_count = 50, args = KINDS)]
fn kai_gang_8192_nodes_does_not_fit(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[], kind);
    let job = gang(8192, TopologyRequest::default());
    let input = kai();
    assert!(place_with(&cluster, &occ, &job, &input).is_err());
    bencher.bench_local(|| place_with(&cluster, &occ, divan::black_box(&job), &input));
}

/// KAI: a 32-node gang required within one Tier-0 block, placed (the walk over every node).
#[divan::bench(sample_count = 20, args = KINDS)]
fn kai_gang_32_nodes_required_tier0_fits(bencher: divan::Bencher, kind: Kind) {
    let cluster = oci_131k();
    let occ = occupied(&cluster, &[17, 300], kind);
    let job = gang(
        32,
        TopologyRequest {
            required: cluster.level_by_label(TIER0),
            ..TopologyRequest::default()
        },
    );
    let input = kai();
    assert!(place_with(&cluster, &occ, &job, &input).is_ok());
    bencher.bench_local(|| place_with(&cluster, &occ, divan::black_box(&job), &input));
}
