//! Network-aware placement on `oci-h100-16k` (2,048 hosts, `topology::examples::oci_h100`) with
//! 200 running multi-node jobs (2–16 hosts each, seeded, placed by the label rules and started
//! on a `fabric::FabricState` under ECMP): a 128-host gang preferring one network block, placed
//! by the label rules alone and by `sched::place_network_aware` with the fabric-backed score
//! (issue 15 target: p50 < 20 ms), and the parts of the cost: candidate placements only
//! (constant scorer) and one `fabric::probe` of a 128-host candidate.
//!
//! Run: `CARGO_TARGET_DIR=… cargo bench -p sim --bench netaware`.

use fabric::{probe, Collective, FabricState, JobTraffic, JobWeight, Rank, RoutingConfig};
use sched::{
    commit, place, place_network_aware, place_with, GpuRequest, Job, NetworkAware, Occupancy,
    PlaceInput, Placement, PlacementScorer, PodSet, TopologyRequest, MAX_CANDIDATES,
};
use topology::{build_from_spec, Cluster, NodeId};

fn main() {
    let s = setup();
    let n = candidates_only(&s, &new_gang(&s.cluster));
    println!("candidates of the 128-host gang: {n}");
    let n = candidates_only(&s, &required_16_node_gang(&s.cluster));
    println!("candidates of the 16-host gang: {n}");
    divan::main();
}

const NETWORK_BLOCK: &str = "oci.oraclecloud.com/rdma.network_block_id";

fn gang(name: &str, nodes: u32, topology: TopologyRequest) -> Job {
    Job {
        name: name.into(),
        queue: "q".into(),
        priority: 0,
        preemptible: false,
        pod_sets: vec![PodSet {
            name: "workers".into(),
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

/// A ring AllReduce over every GPU of `pods` (host, GPU IDs), in order.
fn all_reduce<'p>(pods: impl Iterator<Item = (NodeId, &'p [u32])>) -> JobTraffic {
    JobTraffic {
        ranks: pods
            .flat_map(|(node, gpus)| gpus.iter().map(move |&gpu| Rank { node, gpu }))
            .collect(),
        collective: Collective::AllReduce,
    }
}

fn traffic(p: &Placement) -> JobTraffic {
    all_reduce(p.pods.iter().map(|x| (x.node, &x.gpu_ids[..])))
}

/// The cluster, its occupancy with 200 running multi-node jobs, and their fabric state.
struct Setup {
    cluster: Cluster,
    occupancy: Occupancy,
    running: Vec<u64>,
}

fn setup() -> Setup {
    let cluster = build_from_spec(&topology::examples::oci_h100(2048)).expect("valid preset");
    let mut occupancy = Occupancy::with_node_tracking(&cluster);
    let mut rng = fastrand::Rng::with_seed(15);
    let mut running = Vec::new();
    for id in 0..200u64 {
        let nodes = [2, 4, 8, 16][rng.usize(0..4)];
        let job = gang(&format!("r{id:03}"), nodes, TopologyRequest::default());
        let p = place(&cluster, &occupancy, &job).expect("room for the background");
        commit(&mut occupancy, &job, &p).expect("fresh placement");
        running.push(id);
    }
    Setup {
        cluster,
        occupancy,
        running,
    }
}

fn state<'c>(s: &'c Setup) -> FabricState<'c> {
    let mut state = FabricState::new(&s.cluster, RoutingConfig::default());
    for (id, a) in s.occupancy.jobs().values().enumerate() {
        let t = all_reduce(a.pods.iter().map(|x| (x.node, &x.gpu_ids[..])));
        state.start(id as u64, &t).expect("valid job");
    }
    state.solve();
    state
}

/// `nodes` hosts in one network block: preferred, or `required`.
fn block_gang(c: &Cluster, nodes: u32, required: bool) -> Job {
    let nb = Some(c.level_by_label(NETWORK_BLOCK).expect("level"));
    let (preferred, required) = if required { (None, nb) } else { (nb, None) };
    gang(
        "new",
        nodes,
        TopologyRequest {
            preferred,
            required,
            ..TopologyRequest::default()
        },
    )
}

/// 128 hosts preferring one network block.
fn new_gang(c: &Cluster) -> Job {
    block_gang(c, 128, false)
}

/// 16 hosts required in one network block.
fn required_16_node_gang(c: &Cluster) -> Job {
    block_gang(c, 16, true)
}

const W: JobWeight = JobWeight {
    gpus: 1024.0,
    comm_share: 0.4,
};

/// `job`'s network-aware placement, each candidate scored by `scorer`.
fn aware(s: &Setup, job: &Job, scorer: &mut dyn PlacementScorer) -> NetworkAware {
    place_network_aware(
        &s.cluster,
        &s.occupancy,
        job,
        &PlaceInput::default(),
        scorer,
        MAX_CANDIDATES,
    )
    .expect("fits")
}

/// How many candidates `job` has (a constant scorer).
fn candidates_only(s: &Setup, job: &Job) -> usize {
    aware(s, job, &mut |_: &Job, _: &Placement| 0.0)
        .candidates
        .len()
}

/// `job`'s network-aware placement scored by a `fabric::probe` against the running jobs (each
/// weighted as 64 GPUs spending 30% in communication).
fn fabric_scored(s: &Setup, st: &mut FabricState<'_>, job: &Job) -> NetworkAware {
    let mut scorer = |_: &Job, p: &Placement| {
        let pr = probe(st, 1000, &traffic(p), &s.running).expect("valid");
        pr.score(W, &mut |_| JobWeight {
            gpus: 64.0,
            comm_share: 0.3,
        })
    };
    aware(s, job, &mut scorer)
}

#[divan::bench(sample_count = 10)]
fn label_only_128_node_gang(bencher: divan::Bencher) {
    let s = setup();
    let job = new_gang(&s.cluster);
    let input = PlaceInput::default();
    bencher.bench(|| place_with(&s.cluster, &s.occupancy, &job, &input).expect("fits"));
}

#[divan::bench(sample_count = 10)]
fn network_aware_128_node_gang(bencher: divan::Bencher) {
    let s = setup();
    let mut st = state(&s);
    let job = new_gang(&s.cluster);
    bencher.bench_local(|| fabric_scored(&s, &mut st, &job));
}

/// A 16-host gang required in one network block: more candidates (local blocks with room,
/// then network blocks), up to the cap of 16.
#[divan::bench(sample_count = 10)]
fn network_aware_16_node_gang_required_network_block(bencher: divan::Bencher) {
    let s = setup();
    let mut st = state(&s);
    let job = required_16_node_gang(&s.cluster);
    bencher.bench_local(|| fabric_scored(&s, &mut st, &job).candidates.len());
}

/// The candidate placements alone: a constant scorer.
#[divan::bench(sample_count = 10)]
fn candidates_only_128_node_gang(bencher: divan::Bencher) {
    let s = setup();
    let job = new_gang(&s.cluster);
    bencher.bench(|| candidates_only(&s, &job));
}

/// A 128-host candidate (the label rules' placement) in a fresh fabric state.
fn label_candidate(s: &Setup) -> (FabricState<'_>, JobTraffic) {
    let job = new_gang(&s.cluster);
    let p = place_with(&s.cluster, &s.occupancy, &job, &PlaceInput::default()).expect("fits");
    (state(s), traffic(&p))
}

/// One what-if of a 128-host candidate against the 200 running jobs.
#[divan::bench(sample_count = 10)]
fn probe_one_128_node_candidate(bencher: divan::Bencher) {
    let s = setup();
    let (mut st, t) = label_candidate(&s);
    bencher.bench_local(|| probe(&mut st, 1000, &t, &s.running).expect("valid"));
}

/// Routing a 128-host candidate into the state and taking it out again, without solving.
#[divan::bench(sample_count = 10)]
fn start_end_one_128_node_candidate(bencher: divan::Bencher) {
    let s = setup();
    let (mut st, t) = label_candidate(&s);
    bencher.bench_local(|| {
        st.start(1000, &t).expect("valid");
        st.end(1000);
    });
    st.solve();
}
