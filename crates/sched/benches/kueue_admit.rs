//! Kueue admission plus placement (issue 29): a 1,024-node gang (8,192 GPUs) of one
//! ClusterQueue among 1,000 in 50 Cohorts (20 each, 1,024 GPUs nominal each, one admitted
//! Workload per ClusterQueue holding 70% of it, 30% in the gang's Cohort), flavor assignment
//! with borrowing through the Cohort (`sched::kueue::assign::assign`), then TAS placement on
//! the 16,384-node `oci-h100-131k` cluster at 70% random occupancy (seeded), as `place
//! --queues` runs them. Target: p50 < 5 ms (issue 29). A second bench adds building the quota
//! tree from the specs and counting the 1,000 Workloads, which `place` does per call. Measured
//! on the shared 2-core machine: 0.49 ms and 3.8 ms median.
//!
//! Run: `CARGO_TARGET_DIR=… cargo bench -p sched --bench kueue_admit`.

use std::collections::BTreeMap;

use sched::kueue::{
    assign, Admitted, ClusterQueueSpec, CohortSpec, KueueQueues, PodSetRequest, Quota,
    ResourceGroup,
};
use sched::{
    place, GpuRequest, Job, Occupancy, PodAllocation, PodSet, RunningJob, TopologyRequest,
};
use topology::{build_from_spec, Cluster, NodeId};

fn main() {
    divan::main();
}

const GPU: &str = "nvidia.com/gpu";
const TIER1: &str = "oci.oraclecloud.com/rdma.network_block_id";
const COHORTS: usize = 50;
const PER_COHORT: usize = 20;
const NOMINAL: i64 = 1024;

fn oci_131k() -> Cluster {
    build_from_spec(&topology::examples::oci_h100(16_384)).expect("valid preset")
}

fn occupied(cluster: &Cluster) -> Occupancy {
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let pods: Vec<PodAllocation> = (0..cluster.nodes.len())
        .map(NodeId::from_index)
        .filter(|_| rng.f64() < 0.7)
        .map(|node| PodAllocation {
            node,
            gpu_ids: (0..8).collect(),
            milli: 1000,
            memory_mib: 80 * 1024,
        })
        .collect();
    let mut occ = Occupancy::with_node_tracking(cluster);
    occ.allocate(
        RunningJob {
            name: "background".to_owned(),
            queue: "cq-0".to_owned(),
            priority: 0,
            preemptible: true,
        },
        pods,
    )
    .expect("valid occupancy");
    occ
}

fn specs() -> (Vec<ClusterQueueSpec>, Vec<CohortSpec>, Vec<Admitted>) {
    let mut cqs = Vec::new();
    let mut admitted = Vec::new();
    for i in 0..COHORTS * PER_COHORT {
        let cohort = i / PER_COHORT;
        cqs.push(ClusterQueueSpec {
            name: format!("cq-{i}"),
            cohort: Some(format!("cohort-{cohort}")),
            groups: vec![ResourceGroup {
                covered: vec![GPU.to_owned()],
                flavors: vec![(
                    "h100".to_owned(),
                    BTreeMap::from([(
                        GPU.to_owned(),
                        Quota {
                            nominal: NOMINAL,
                            ..Quota::default()
                        },
                    )]),
                )],
            }],
            namespace_selector: Some(Vec::new()),
            fair_weight_milli: 1000,
            ..ClusterQueueSpec::default()
        });
        let used = if cohort == 0 {
            NOMINAL * 3 / 10
        } else {
            NOMINAL * 7 / 10
        };
        admitted.push(Admitted {
            name: format!("ns/wl-{i}"),
            cluster_queue: format!("cq-{i}"),
            priority: 0,
            admitted_at: i as i64,
            usage: vec![("h100".to_owned(), GPU.to_owned(), used)],
        });
    }
    let cohorts = (0..COHORTS)
        .map(|c| CohortSpec {
            name: format!("cohort-{c}"),
            fair_weight_milli: 1000,
            ..CohortSpec::default()
        })
        .collect();
    (cqs, cohorts, admitted)
}

fn queues(cqs: &[ClusterQueueSpec], cohorts: &[CohortSpec], admitted: &[Admitted]) -> KueueQueues {
    let mut q = KueueQueues::new(cqs, cohorts).expect("valid queues");
    for w in admitted {
        q.admit_existing(w.clone()).expect("known queue");
    }
    q
}

fn gang(cluster: &Cluster) -> (Job, Vec<PodSetRequest>) {
    let job = Job {
        name: "gang".to_owned(),
        queue: "cq-0".to_owned(),
        priority: 0,
        preemptible: true,
        pod_sets: vec![PodSet {
            name: "workers".to_owned(),
            count: 1024,
            min_count: 1024,
            gpu: GpuRequest::Whole(8),
            cpu_millis: 0,
            memory_mib: 0,
            topology: TopologyRequest {
                preferred: cluster.level_by_label(TIER1),
                ..TopologyRequest::default()
            },
        }],
        tolerations: Vec::new(),
    };
    let req = vec![PodSetRequest {
        name: "workers".to_owned(),
        count: 1024,
        min_count: None,
        per_pod: BTreeMap::from([(GPU.to_owned(), 8)]),
    }];
    (job, req)
}

fn no_mismatch(_: usize, _: &str) -> Option<String> {
    None
}

#[divan::bench(sample_count = 50)]
fn admit_and_place_gang_1024_nodes(bencher: divan::Bencher) {
    let cluster = oci_131k();
    let occ = occupied(&cluster);
    let (cqs, cohorts, admitted) = specs();
    let mut q = queues(&cqs, &cohorts, &admitted);
    let (job, req) = gang(&cluster);
    let cq = q.find("cq-0").expect("cq-0");
    let a = assign::assign(&mut q, cq, &req, 0, 0, &no_mismatch);
    assert!(a.admitted() && a.borrowing > 0, "{}", a.message());
    assert!(place(&cluster, &occ, &job).is_ok());
    bencher.bench_local(|| {
        let a = assign::assign(&mut q, cq, divan::black_box(&req), 0, 0, &no_mismatch);
        assert!(a.admitted());
        place(&cluster, &occ, divan::black_box(&job))
    });
}

#[divan::bench(sample_count = 20)]
fn build_queues_admit_and_place_gang_1024_nodes(bencher: divan::Bencher) {
    let cluster = oci_131k();
    let occ = occupied(&cluster);
    let (job, req) = gang(&cluster);
    let (cqs, cohorts, admitted) = specs();
    bencher.bench_local(|| {
        let mut q = queues(&cqs, &cohorts, &admitted);
        let cq = q.find("cq-0").expect("cq-0");
        let a = assign::assign(&mut q, cq, divan::black_box(&req), 0, 0, &no_mismatch);
        assert!(a.admitted());
        place(&cluster, &occ, divan::black_box(&job))
    });
}
