//! Known host shapes (OCI bare-metal GPU instance types) and their RDMA ports.
//!
//! Source: OCI compute shapes documentation, as summarised in DESIGN.md ("OCI shapes' RDMA
//! ports"). GPU memory and NVLink figures are the vendors' data sheets for the GPU named.

use crate::model::NicSpec;

/// Hardware facts of a known host shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    /// Instance type name, as in `node.kubernetes.io/instance-type`.
    pub name: &'static str,
    /// GPUs per host.
    pub gpus: u32,
    /// Memory per GPU, GiB.
    pub gpu_memory_gib: u32,
    /// RDMA ports.
    pub nics: NicSpec,
    /// NVLink bandwidth per GPU, Gb/s one direction.
    pub nvlink_gbps: f64,
    /// Hosts per NVLink domain (1 = inside the host only).
    pub nvlink_domain_nodes: u32,
}

const fn nics(rails: u32, ports_per_rail: u32, port_gbps: f64) -> NicSpec {
    NicSpec {
        rails,
        ports_per_rail,
        port_gbps,
    }
}

/// The shapes railyard knows.
pub const SHAPES: &[Shape] = &[
    Shape {
        name: "BM.GPU4.8",
        gpus: 8,
        gpu_memory_gib: 40,
        nics: nics(8, 1, 200.0),
        nvlink_gbps: 2400.0,
        nvlink_domain_nodes: 1,
    },
    Shape {
        name: "BM.GPU.A100-v2.8",
        gpus: 8,
        gpu_memory_gib: 80,
        nics: nics(8, 2, 100.0),
        nvlink_gbps: 2400.0,
        nvlink_domain_nodes: 1,
    },
    Shape {
        name: "BM.GPU.H100.8",
        gpus: 8,
        gpu_memory_gib: 80,
        nics: nics(8, 2, 200.0),
        nvlink_gbps: 3600.0,
        nvlink_domain_nodes: 1,
    },
    Shape {
        name: "BM.GPU.H200.8",
        gpus: 8,
        gpu_memory_gib: 141,
        nics: nics(8, 1, 400.0),
        nvlink_gbps: 3600.0,
        nvlink_domain_nodes: 1,
    },
    Shape {
        name: "BM.GPU.B200.8",
        gpus: 8,
        gpu_memory_gib: 180,
        nics: nics(8, 1, 400.0),
        nvlink_gbps: 7200.0,
        nvlink_domain_nodes: 1,
    },
    Shape {
        name: "BM.GPU.GB200.4",
        gpus: 4,
        gpu_memory_gib: 186,
        nics: nics(4, 1, 400.0),
        // NVLink 5: 1.8 TB/s per GPU counting both directions, 900 GB/s = 7,200 Gb/s each way.
        nvlink_gbps: 7200.0,
        nvlink_domain_nodes: 18,
    },
    Shape {
        name: "BM.GPU.GB300.4",
        gpus: 4,
        gpu_memory_gib: 279,
        nics: nics(4, 1, 800.0),
        // NVLink 5, as GB200.
        nvlink_gbps: 7200.0,
        nvlink_domain_nodes: 18,
    },
];

/// The known shape called `name`.
pub fn known_shape(name: &str) -> Option<&'static Shape> {
    SHAPES.iter().find(|s| s.name == name)
}
