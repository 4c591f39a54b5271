//! Set-ups the simulator's integration tests share: small Clos clusters, a test run's config
//! (every invariant checked after every event), trace jobs, and a network that gives every job
//! a fixed bandwidth. New `SimConfig` or `TraceJob` fields take their defaults here, so adding
//! one touches no test.

// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

use sim::engine::{simulate, JobRecord, NetJob, NetRate, Order, Policy, SimConfig, SimResult};
use sim::network::FromScratch;
use sim::TraceJob;
use topology::{
    build_from_spec, ClosSpec, Cluster, ClusterSpec, FabricSpec, NodeSpec, TierSpec, HOSTNAME_LABEL,
};

/// A tier of `nodes_per_domain` hosts labelled `label` (values `label-0`, …), one switch per
/// domain, no oversubscription, no SHARP.
pub fn tier(label: &str, nodes_per_domain: u32, latency_us: f64) -> TierSpec {
    TierSpec {
        label: label.to_owned(),
        value_prefix: format!("{label}-"),
        nodes_per_domain,
        latency_us,
        switches_per_domain: None,
        oversubscription: None,
        sharp: false,
    }
}

/// A Clos cluster of `nodes` hosts shaped `node`, not rail-optimized, with these tiers.
pub fn clos(name: &str, node: NodeSpec, nodes: u32, tiers: Vec<TierSpec>) -> Cluster {
    build_from_spec(&ClusterSpec {
        name: name.into(),
        node,
        fabric: FabricSpec {
            fat_tree: None,
            clos: Some(ClosSpec {
                nodes,
                rail_optimized: false,
                host_label: HOSTNAME_LABEL.into(),
                tiers,
            }),
        },
    })
    .unwrap()
}

/// A host of `gpus` GPUs with one NIC port of `port_gbps`.
pub fn host(gpus: u32, port_gbps: f64) -> NodeSpec {
    topology::examples::node(gpus, 1, 1, port_gbps)
}

/// `nodes` hosts of 8 GPUs (one 400G port each) in one rack.
pub fn one_rack(nodes: u32) -> Cluster {
    clos(
        "small",
        host(8, 400.0),
        nodes,
        vec![tier("rack", nodes, 1.0)],
    )
}

/// `nodes` hosts of 8 GPUs (one 400G port each), racks of `rack` hosts, one top tier.
pub fn racks(nodes: u32, rack: u32) -> Cluster {
    clos(
        "small",
        host(8, 400.0),
        nodes,
        vec![tier("rack", rack, 1.0), tier("top", nodes, 2.0)],
    )
}

/// A job of `gpus` whole GPUs submitted at `submit` for `duration` seconds in `queue`
/// (otherwise [`TraceJob::new`]: preemptible, no placement request, the run's defaults).
pub fn job(name: &str, submit: f64, duration: f64, gpus: u32, queue: &str) -> TraceJob {
    TraceJob {
        submit_s: submit,
        queue: queue.into(),
        ..TraceJob::new(name, gpus, duration)
    }
}

/// `order`, named by its `Debug` form, with no topology mode, not network-aware.
pub fn policy(order: Order) -> Policy {
    Policy {
        name: format!("{order:?}"),
        order,
        ..SimConfig::default().policy
    }
}

/// A test run: [`SimConfig::default`] (best-effort, a pass at every event) with every
/// invariant checked after every event and 20 timeline points.
pub fn checked() -> SimConfig {
    SimConfig {
        check_invariants: true,
        timeline_points: 20,
        ..SimConfig::default()
    }
}

/// A checked run ([`checked`]) under `order`.
pub fn config(order: Order) -> SimConfig {
    SimConfig {
        policy: policy(order),
        ..checked()
    }
}

/// A network where every job gets `achieved_busbw` of an ideal `ideal_busbw` (GB/s).
pub fn fixed_network(
    ideal_busbw: f64,
    achieved_busbw: f64,
) -> FromScratch<impl FnMut(&[NetJob]) -> Vec<NetRate>> {
    FromScratch::new(move |jobs: &[NetJob]| {
        jobs.iter()
            .map(|_| NetRate {
                ideal_busbw,
                achieved_busbw,
            })
            .collect()
    })
}

/// A network where every job gets `factor` of an ideal 100 GB/s.
pub fn scaled(factor: f64) -> FromScratch<impl FnMut(&[NetJob]) -> Vec<NetRate>> {
    fixed_network(100.0, 100.0 * factor)
}

/// `trace` on `c` under `cfg` with every job at its ideal bandwidth; panics on an error.
pub fn run(c: &Cluster, trace: &[TraceJob], cfg: &SimConfig) -> SimResult {
    simulate(c, trace, cfg, &mut scaled(1.0), &mut |_| {}).unwrap()
}

/// The record of the job named `name`.
pub fn record<'r>(r: &'r SimResult, name: &str) -> &'r JobRecord {
    r.jobs.iter().find(|j| j.name == name).unwrap()
}
