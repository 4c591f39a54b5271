//! The network model the simulator uses by default: every running multi-node job runs a Ring
//! AllReduce, and the fabric model (`fabric`) gives each its achieved and ideal bus bandwidth
//! with all of them sharing the links together.

use fabric::{Collective, JobTraffic, Rank, RoutingConfig};
use topology::Cluster;

use crate::engine::{NetJob, NetRate};

/// A network function for [`crate::engine::simulate`] backed by the fabric model.
pub fn fabric_network<'c>(
    cluster: &'c Cluster,
    routing: RoutingConfig,
) -> impl FnMut(&[NetJob]) -> Vec<NetRate> + 'c {
    move |jobs: &[NetJob]| {
        let traffic: Vec<JobTraffic> = jobs
            .iter()
            .map(|j| JobTraffic {
                ranks: j
                    .nodes
                    .iter()
                    .flat_map(|&node| (0..j.gpus_per_node).map(move |gpu| Rank { node, gpu }))
                    .collect(),
                collective: Collective::AllReduce,
            })
            .collect();
        fabric::evaluate(cluster, &traffic, &routing)
            .expect("the scheduler only places jobs on GPUs the cluster has")
            .iter()
            .map(|r| NetRate {
                ideal_busbw: r.ideal_busbw_gb_s,
                achieved_busbw: r.busbw_gb_s,
            })
            .collect()
    }
}
