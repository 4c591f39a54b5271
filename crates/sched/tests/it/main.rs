//! Tests of the scheduler core through its public API: one binary, one module per area.

mod examples;
mod incremental;
mod kai;
mod kai_allocate;
mod kai_order;
mod kai_props;
mod kueue_cases;
mod multi_device;
mod netaware;
mod preempt;
mod props;
mod queues;

use std::collections::BTreeMap;

use sched::{GpuRequest, Job, PodSet, TopologyRequest};
use topology::{assemble, Cluster, FabricParams, NicSpec, NodeRecord, Taint, TierParams};

/// Level labels of the test clusters, top first.
pub const BLOCK: &str = "block";
pub const RACK: &str = "rack";
pub const HOST: &str = topology::HOSTNAME_LABEL;

/// One node of a test cluster.
#[derive(Clone, Debug)]
pub struct N {
    pub block: usize,
    pub rack: usize,
    pub gpus: u32,
    pub ready: bool,
    pub taints: Vec<Taint>,
}

/// A cluster of blocks → racks → hosts; `layout[b][r]` = nodes in rack r of block b.
pub fn cluster(layout: &[&[usize]], gpus: u32) -> Cluster {
    let mut nodes = Vec::new();
    for (b, racks) in layout.iter().enumerate() {
        for (r, &n) in racks.iter().enumerate() {
            for _ in 0..n {
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
}

/// A cluster from explicit nodes (named `n0`, `n1`, … in order).
pub fn cluster_of(nodes: &[N]) -> Cluster {
    let records = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeRecord {
            name: format!("n{i}"),
            gpus: n.gpus,
            gpu_memory_gib: 80,
            nics: NicSpec {
                rails: 1,
                ports_per_rail: 1,
                port_gbps: 400.0,
            },
            nvlink_gbps: 3600.0,
            nvlink_domain: None,
            labels: BTreeMap::from([
                (BLOCK.to_owned(), format!("b{}", n.block)),
                (RACK.to_owned(), format!("r{}", n.rack)),
                (HOST.to_owned(), format!("n{i}")),
            ]),
            taints: n.taints.clone(),
            ready: n.ready,
            unschedulable: false,
            internal_ip: None,
            allocatable: Default::default(),
        })
        .collect();
    let tier = |us: u64| TierParams {
        latency_ns: us * 1000,
        oversubscription: 1.0,
        switches_per_group: Some(1),
    };
    assemble(
        "test",
        records,
        &FabricParams {
            levels: vec![BLOCK.into(), RACK.into(), HOST.into()],
            host_label: HOST.into(),
            tiers: vec![tier(2), tier(5), tier(8)],
            rail_optimized: false,
        },
    )
    .expect("valid test cluster")
}

/// A one-pod-set job of `count` pods × `gpus` whole GPUs.
pub fn job(name: &str, count: u32, gpus: u32, topology: TopologyRequest) -> Job {
    job_with(name, count, GpuRequest::Whole(gpus), topology)
}

/// A one-pod-set job with any GPU request.
pub fn job_with(name: &str, count: u32, gpu: GpuRequest, topology: TopologyRequest) -> Job {
    Job {
        name: name.to_owned(),
        queue: "q".to_owned(),
        priority: 0,
        preemptible: true,
        pod_sets: vec![PodSet {
            name: "workers".to_owned(),
            count,
            min_count: count,
            gpu,
            cpu_millis: 0,
            memory_mib: 0,
            topology,
        }],
        tolerations: Vec::new(),
    }
}

/// Level index of a label in a test cluster.
pub fn lv(c: &Cluster, label: &str) -> usize {
    c.level_by_label(label).expect("test level")
}

pub fn required(c: &Cluster, label: &str) -> TopologyRequest {
    TopologyRequest {
        required: Some(lv(c, label)),
        ..TopologyRequest::default()
    }
}

pub fn preferred(c: &Cluster, label: &str) -> TopologyRequest {
    TopologyRequest {
        preferred: Some(lv(c, label)),
        ..TopologyRequest::default()
    }
}

/// Pods per rack value (`b0/r1` → count), in rank order of first appearance.
pub fn pods_per_rack(c: &Cluster, p: &sched::Placement) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for pod in &p.pods {
        let n = c.node(pod.node);
        let key = format!("{}/{}", n.labels[BLOCK], n.labels[RACK]);
        match out.last_mut() {
            Some((k, v)) if *k == key => *v += 1,
            _ => out.push((key, 1)),
        }
    }
    out
}
