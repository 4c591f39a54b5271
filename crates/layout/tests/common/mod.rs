//! Shared set-ups of the layout tests: the clusters the papers ran on, and a job priced on the
//! first GPUs in cluster order.

#![allow(dead_code)]

use fabric::{Fabric, RoutingConfig};
use layout::{price_step, Step, StepInput, Training};
use topology::{build_from_spec, Cluster};
use topology::{ClosSpec, ClusterSpec, FabricSpec, NodeSpec, TierSpec};

fn tier(label: &str, nodes: u32, latency_us: f64, switches: u32, over: Option<f64>) -> TierSpec {
    TierSpec {
        label: label.to_owned(),
        value_prefix: format!("{label}-"),
        nodes_per_domain: nodes,
        latency_us,
        switches_per_domain: Some(switches),
        oversubscription: over,
        sharp: false,
    }
}

fn node(rails: u32, port_gbps: f64, nvlink_gbps: f64) -> NodeSpec {
    NodeSpec {
        gpus: 8,
        gpu_memory_gib: 80,
        rails,
        ports_per_rail: 1,
        port_gbps,
        nvlink_gbps,
        nvlink_domain_nodes: 1,
        nvlink_domain_label: None,
        shape: None,
        name_prefix: "n".to_owned(),
    }
}

/// Selene as Narayanan et al., SC '21 §5 describe it: DGX A100 80 GB hosts (8 A100s, NVLink 3
/// at 600 GB/s per GPU both ways = 2,400 Gb/s each way), 8 × 200 Gb/s HDR InfiniBand per host,
/// one per GPU; a non-blocking rail-optimized fat-tree of DGX SuperPOD scalable units (20
/// hosts under 8 leaf switches, NVIDIA's SuperPOD reference architecture). No railyard preset
/// has A100s, so this is built here as data. 560 hosts (4,480 GPUs) hold Table 1's largest run.
pub fn selene() -> Cluster {
    let spec = ClusterSpec {
        name: "selene".to_owned(),
        node: node(8, 200.0, 2400.0),
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes: 560,
                rail_optimized: true,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![
                    tier("su", 20, 1.5, 8, None),
                    tier("spine", 560, 3.0, 160, None),
                ],
            }),
        },
    };
    build_from_spec(&spec).expect("valid spec")
}

/// Meta's Llama 3 RoCE cluster as Dubey et al. 2024 §3.3.1 describe it: Grand Teton hosts of 8
/// H100s with one 400 Gb/s NIC each; racks of 2 hosts under one ToR; pods of 192 racks (3,072
/// GPUs) with full bisection; 8 pods joined by aggregation switches at 1:7 oversubscription.
pub fn meta_roce() -> Cluster {
    let spec = ClusterSpec {
        name: "meta-roce-24k".to_owned(),
        node: node(8, 400.0, 3600.0),
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes: 3072,
                rail_optimized: false,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: vec![
                    tier("rack", 2, 1.0, 1, None),
                    tier("pod", 384, 3.0, 16, None),
                    tier("cluster", 3072, 6.0, 64, Some(7.0)),
                ],
            }),
        },
    };
    build_from_spec(&spec).expect("valid spec")
}

pub use layout::first_gpus;

/// `t` priced alone on `cluster`'s first GPUs with railyard's default routing (ECMP, NCCL's
/// defaults).
pub fn price(cluster: &Cluster, t: &Training, efficiency: Option<f64>) -> Step {
    price_with(cluster, t, efficiency, &RoutingConfig::default())
}

/// [`price`] under `cfg`.
pub fn price_with(
    cluster: &Cluster,
    t: &Training,
    efficiency: Option<f64>,
    cfg: &RoutingConfig,
) -> Step {
    let ranks = first_gpus(cluster, t.layout.gpus() as usize);
    let mut fabric = Fabric::new(cluster);
    price_step(
        &mut fabric,
        StepInput {
            training: t,
            ranks: &ranks,
            cfg,
            running: &[],
            efficiency,
        },
    )
    .expect("valid job")
}

/// The efficiency at which `t` reaches `tflops` per GPU (bisection; the step time falls
/// monotonically as the efficiency rises).
pub fn calibrate(cluster: &Cluster, t: &Training, cfg: &RoutingConfig, tflops: f64) -> f64 {
    let (mut lo, mut hi) = (0.05, 1.0);
    for _ in 0..30 {
        let mid = (lo + hi) / 2.0;
        if price_with(cluster, t, Some(mid), cfg).tflops_per_gpu < tflops {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}
