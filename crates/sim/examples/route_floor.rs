//! The least a flow-level network costs a simulation: route each multi-node job of a seeded
//! synthetic trace once on an empty `oci-h100-131k` fabric and remove it again
//! (`FabricState::start` then `end`, never a solve), as a simulator with the network on must
//! at least do once per job. Time it against `simulate` with the network off on a trace of the
//! same size (README "Benchmarks").
//!
//! Usage: `route_floor JOBS SEED` — jobs placed on whole hosts in rank order, each at the next
//! free run of hosts (wrapping), under ECMP with NCCL's defaults.

use fabric::{Collective, FabricState, JobTraffic, Rank, RoutingConfig};
use sim::synthetic::{synthetic_trace, SyntheticSpec};
use topology::{build_from_spec, NodeId};

fn main() {
    let args: Vec<Option<u64>> = std::env::args().skip(1).map(|a| a.parse().ok()).collect();
    let (jobs, seed) = match args[..] {
        [Some(jobs), Some(seed)] => (jobs, seed),
        _ => {
            eprintln!("usage: route_floor JOBS SEED: expected two whole numbers");
            std::process::exit(2)
        }
    };
    let cluster =
        build_from_spec(&topology::examples::oci_h100(16_384)).expect("the preset is valid");
    let hosts = cluster.nodes.len() as u32;
    let trace = synthetic_trace(&SyntheticSpec {
        jobs: jobs as usize,
        cluster_gpus: u64::from(hosts) * 8,
        load: 0.8,
        seed,
        comm: None,
    });
    let mut state = FabricState::new(&cluster, RoutingConfig::default());
    let (mut next, mut routed, mut ranks_routed) = (0u32, 0u64, 0u64);
    for (id, job) in trace.iter().enumerate() {
        if job.gpus <= 8 {
            continue;
        }
        let n = job.gpus.div_ceil(8);
        if next + n > hosts {
            next = 0;
        }
        let ranks: Vec<Rank> = (next..next + n)
            .flat_map(|h| {
                (0..job.gpus / n).map(move |gpu| Rank {
                    node: NodeId::from_index(h as usize),
                    gpu,
                })
            })
            .collect();
        next += n;
        ranks_routed += ranks.len() as u64;
        let traffic = JobTraffic {
            ranks,
            collective: Collective::AllReduce,
        };
        state
            .start(id as u64, &traffic)
            .expect("whole hosts of the cluster");
        state.end(id as u64);
        routed += 1;
    }
    println!(
        "{} jobs, {routed} multi-node routed, {ranks_routed} ranks",
        trace.len()
    );
}
