//! Fabrics and jobs shared by the fabric crate's integration tests.

use fabric::{Collective, JobTraffic, Rank};
use topology::{build_from_spec, ClosSpec, Cluster, ClusterSpec, FabricSpec, NodeId, TierSpec};

/// A Clos of `nodes` hosts of 8 GPUs with one 100G port each (not rail-optimized), its tiers
/// leaf first as (label, hosts per domain, switches per domain, oversubscription), 1 µs each.
pub fn clos_100g(name: &str, nodes: u32, tiers: &[(&str, u32, u32, Option<f64>)]) -> Cluster {
    build_from_spec(&ClusterSpec {
        name: name.to_owned(),
        node: topology::examples::node(8, 1, 1, 100.0),
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes,
                rail_optimized: false,
                host_label: topology::HOSTNAME_LABEL.to_owned(),
                tiers: tiers
                    .iter()
                    .map(|&(label, n, s, o)| TierSpec {
                        label: label.to_owned(),
                        value_prefix: format!("{label}-"),
                        nodes_per_domain: n,
                        latency_us: 1.0,
                        switches_per_domain: Some(s),
                        oversubscription: o,
                        sharp: false,
                    })
                    .collect(),
            }),
        },
    })
    .expect("valid")
}

/// All-reduce over GPUs `0..gpus` of each of these hosts, in this ring order.
pub fn allreduce(nodes: &[u32], gpus: u32) -> JobTraffic {
    JobTraffic {
        ranks: nodes
            .iter()
            .flat_map(|&n| {
                (0..gpus).map(move |gpu| Rank {
                    node: NodeId::from_index(n as usize),
                    gpu,
                })
            })
            .collect(),
        collective: Collective::AllReduce,
    }
}
