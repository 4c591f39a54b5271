//! Layout jobs in the simulator: inside one host a layout job runs at its trace duration; with
//! its data-parallel groups across an oversubscribed uplink it runs slower than on the same
//! cluster without oversubscription; the same inputs give the same run; `+network` prices a
//! layout job's candidates by its step time beside the running jobs, and with the network off
//! places as its topology mode does.

mod common;

use common::{clos, host, tier};
use fabric::RoutingConfig;
use sim::engine::{simulate, NetJob, NetRate, Network, Order, SimConfig, SimResult};
use sim::network::fabric_network;
use sim::TraceJob;
use topology::{Cluster, NodeId, TierSpec};

/// A non-preemptible job of `gpus` GPUs training `model` with `layout`.
fn layout_job(name: &str, submit: f64, gpus: u32, model: &str, layout: &str) -> TraceJob {
    TraceJob {
        preemptible: false,
        training: Some(Box::new(layout::Training::new(
            layout::preset(model).unwrap(),
            layout::Layout::parse(layout).unwrap(),
        ))),
        ..common::job(name, submit, 1000.0, gpus, "q")
    }
}

/// Two racks of two 8-GPU hosts (one 100 Gb/s NIC each) under one top switch, the rack uplinks
/// `oversubscription`:1.
fn two_racks(oversubscription: Option<f64>) -> Cluster {
    let t = |label: &str, n: u32, o: Option<f64>| TierSpec {
        switches_per_domain: Some(1),
        oversubscription: o,
        ..tier(label, n, 1.0 + f64::from(n))
    };
    clos(
        "two-racks",
        host(8, 100.0),
        4,
        vec![t("rack", 2, None), t("top", 4, oversubscription)],
    )
}

/// Fillers hold the hosts so that `a` gets n0 + n2 and `b` n1 + n3 (both across the racks):
/// each job's DP pairs a GPU of one rack with one of the other.
fn crossing_trace() -> Vec<TraceJob> {
    let filler = |name: &str, d: f64| TraceJob {
        preemptible: false,
        ..common::job(name, 0.0, d, 8, "q")
    };
    vec![
        filler("f0", 10.0),
        filler("f1", 20.0),
        filler("f2", 10.0),
        filler("f3", 20.0),
        layout_job("a", 5.0, 16, "llama3-8b", "tp=8,dp=2"),
        layout_job("b", 5.0, 16, "llama3-8b", "tp=8,dp=2"),
    ]
}

fn run(cluster: &Cluster, trace: &[TraceJob]) -> SimResult {
    let cfg = SimConfig {
        timeline_points: 10,
        ..common::config(Order::Fifo)
    };
    let mut net = fabric_network(cluster, RoutingConfig::default());
    simulate(cluster, trace, &cfg, &mut net, &mut |_| {}).unwrap()
}

#[test]
fn a_layout_job_inside_one_host_runs_at_its_trace_duration() {
    let cluster = two_racks(Some(4.0));
    let trace = vec![
        layout_job("solo", 0.0, 8, "llama3-8b", "tp=8"),
        layout_job("pair", 0.0, 8, "llama3-8b", "tp=4,dp=2"),
    ];
    let r = run(&cluster, &trace);
    for name in ["solo", "pair"] {
        let j = common::record(&r, name);
        assert_eq!(j.end_s.unwrap() - j.start_s.unwrap(), 1000.0, "{j:?}");
    }
}

#[test]
fn dp_across_an_oversubscribed_uplink_runs_slower_than_without() {
    let trace = crossing_trace();
    let over = run(&two_racks(Some(2.0)), &trace);
    let flat = run(&two_racks(None), &trace);
    for name in ["a", "b"] {
        let (o, f) = (common::record(&over, name), common::record(&flat, name));
        assert_eq!(o.highest_tier, Some(1), "{o:?}");
        let (so, sf) = (o.network_slowdown.unwrap(), f.network_slowdown.unwrap());
        assert!(so > sf * 1.01, "{name}: 2:1 {so} vs non-blocking {sf}");
        assert!(sf >= 1.0, "{name}: {sf}");
    }
}

#[test]
fn layout_runs_are_deterministic() {
    let cluster = two_racks(Some(2.0));
    let trace = crossing_trace();
    let a = run(&cluster, &trace);
    let b = run(&cluster, &trace);
    assert_eq!(format!("{:?}", a.jobs), format!("{:?}", b.jobs));
    assert_eq!(format!("{:?}", a.summary), format!("{:?}", b.summary));
}

/// Three racks of four 8-GPU hosts (one 100 Gb/s NIC each), 4:1 above the racks.
fn three_racks() -> Cluster {
    let t = |label: &str, n: u32, o: Option<f64>| TierSpec {
        switches_per_domain: Some(1),
        oversubscription: o,
        ..tier(label, n, 1.0 + f64::from(n))
    };
    clos(
        "three-racks",
        host(8, 100.0),
        12,
        vec![t("rack", 4, None), t("top", 12, Some(4.0))],
    )
}

fn net_job(id: usize, nodes: &[u32], training: Option<layout::Training>) -> NetJob {
    NetJob {
        id,
        name: format!("j{id}"),
        nodes: nodes.iter().map(|&n| NodeId(n)).collect(),
        gpus_per_node: 8,
        bytes: 1e9,
        training,
    }
}

/// `step_probe` is the step the job would get if it started on the candidate beside the
/// running jobs (its ideal step, `price_step` alone, ÷ the rate the network then gives it), and
/// leaves the running set as it was.
#[test]
fn step_probe_is_the_step_the_job_gets_when_it_starts_there() {
    let c = three_racks();
    let t = layout::Training::from_flags("llama3-8b", "tp=8,dp=4").unwrap();
    let mut net = fabric_network(&c, RoutingConfig::default());
    let probe = |net: &mut sim::network::FabricNetwork<'_>, nodes: &[u32]| {
        net.step_probe(&net_job(9, nodes, Some(t.clone()))).unwrap()
    };
    let idle = probe(&mut net, &[0, 1, 4, 5]);
    // A running Ring over hosts 2, 3, 6, 7 crosses the same 4:1 uplinks.
    net.start(&net_job(0, &[2, 3, 6, 7], None));
    let busy = probe(&mut net, &[0, 1, 4, 5]);
    assert!(busy > idle * 1.01, "busy {busy} vs idle {idle}");
    let ideal_step = {
        let cfg = RoutingConfig::default();
        let mut fab = fabric::Fabric::new(&c);
        let ranks: Vec<fabric::Rank> = [0, 1, 4, 5]
            .iter()
            .flat_map(|&n| {
                (0..8).map(move |gpu| fabric::Rank {
                    node: NodeId(n),
                    gpu,
                })
            })
            .collect();
        let input = layout::StepInput {
            training: &t,
            ranks: &ranks,
            cfg: &cfg,
            running: &[],
            efficiency: None,
        };
        let step = layout::price_step(&mut fab, input).unwrap();
        layout::Pace::new(&t, &step).ideal_step_s
    };
    let mut started = fabric_network(&c, RoutingConfig::default());
    started.start(&net_job(0, &[2, 3, 6, 7], None));
    started.start(&net_job(9, &[0, 1, 4, 5], Some(t.clone())));
    let rate = started.rates(&[0, 9])[1];
    let reference = ideal_step / rate.achieved_busbw;
    assert!(
        (busy - reference).abs() <= 1e-12 * reference,
        "{busy} vs {reference}"
    );
    // Rack 2 (hosts 8-11) is idle and under one leaf.
    let alone = probe(&mut net, &[8, 9, 10, 11]);
    assert!(alone < busy, "{alone} vs {busy}");
    // Probing changed nothing: the running job's rate is what it was.
    let before = net.rates(&[0]);
    probe(&mut net, &[0, 1, 4, 5]);
    assert_eq!(net.rates(&[0]), before);
    // Jobs without a layout are not priced this way.
    assert_eq!(net.step_probe(&net_job(9, &[0, 1], None)), None);
}

/// A [`Network`] that counts `step_probe` calls and otherwise is the fabric network.
struct Counting<'c> {
    inner: sim::network::FabricNetwork<'c>,
    step_probes: usize,
}

impl Network for Counting<'_> {
    fn start(&mut self, job: &NetJob) {
        self.inner.start(job)
    }
    fn end(&mut self, id: usize) {
        self.inner.end(id)
    }
    fn rates(&mut self, ids: &[usize]) -> Vec<NetRate> {
        self.inner.rates(ids)
    }
    fn probe(&mut self, job: &NetJob) -> Option<fabric::Probe> {
        self.inner.probe(job)
    }
    fn step_probe(&mut self, job: &NetJob) -> Option<f64> {
        self.step_probes += 1;
        self.inner.step_probe(job)
    }
    fn provisional(&mut self, id: usize) -> Option<NetRate> {
        self.inner.provisional(id)
    }
}

/// Fillers hold all 12 hosts (three racks of four): those on hosts 0, 1, 4 and 5 end at 0.5 s,
/// the others at 8 s. `split` (32 GPUs, a Ring AllReduce job) starts at 1 s on hosts 0, 1, 4, 5,
/// across racks 0 and 1; `new`, a 32-GPU layout job, arrives at 10 s, when hosts 2, 3, 6, 7
/// (beside `split`) and the whole of rack 2 are free.
fn split_and_new_trace() -> Vec<TraceJob> {
    let comm = |j: TraceJob| TraceJob {
        preemptible: false,
        comm: Some(sim::CommProfile {
            comm_share: 0.4,
            bytes_per_step: 1e9,
        }),
        ..j
    };
    let mut trace: Vec<TraceJob> = (0..12)
        .map(|i| {
            let end = if [0, 1, 4, 5].contains(&i) { 0.5 } else { 8.0 };
            comm(common::job(&format!("f{i}"), 0.0, end, 8, "q"))
        })
        .collect();
    trace.push(comm(common::job("split", 1.0, 100.0, 32, "q")));
    let mut new = layout_job("new", 10.0, 32, "llama3-8b", "tp=8,dp=4");
    new.duration_s = 100.0;
    trace.push(new);
    trace
}

/// Runs `trace` on `c` (checked config, `+network` when `network_aware`); the result and the
/// number of `step_probe` calls.
fn run_counting(c: &Cluster, trace: &[TraceJob], network_aware: bool) -> (SimResult, usize) {
    let mut config = SimConfig {
        timeline_points: 10,
        ..common::checked()
    };
    config.policy.network_aware = network_aware;
    let mut net = Counting {
        inner: fabric_network(c, RoutingConfig::default()),
        step_probes: 0,
    };
    let r = simulate(c, trace, &config, &mut net, &mut |_| {}).unwrap();
    (r, net.step_probes)
}

/// `+network` on a layout job: its candidates are priced by step time (every candidate once),
/// and it lands in the idle rack, off the uplinks the running split job uses, which then runs at
/// its ideal pace.
#[test]
fn plus_network_prices_a_layout_jobs_candidates_by_step_time() {
    let c = three_racks();
    let trace = split_and_new_trace();
    let (label, none) = run_counting(&c, &trace, false);
    let (aware, probes) = run_counting(&c, &trace, true);
    assert_eq!(none, 0);
    assert!(probes >= 2, "{probes}");
    let slowdown = |r: &SimResult, name: &str| common::record(r, name).network_slowdown.unwrap();
    // Label-only: across racks 0 and 1, beside the split job; +network: the idle rack 2,
    // under one leaf, faster (a layout job's slowdown is against each kind's ideal bus
    // bandwidth alone, which 8 GPUs behind one NIC never reach).
    assert_eq!(common::record(&label, "new").highest_tier, Some(1));
    assert_eq!(common::record(&aware, "new").highest_tier, Some(0));
    assert!(slowdown(&aware, "new") < slowdown(&label, "new"));
    assert!(
        slowdown(&label, "split") > 1.01,
        "{}",
        slowdown(&label, "split")
    );
    assert!((slowdown(&aware, "split") - 1.0).abs() < 1e-9);
    assert_eq!(
        format!("{:?}", run_counting(&c, &trace, true).0.jobs),
        format!("{:?}", aware.jobs)
    );
}

/// With the network off (every job silent, as `--no-network` makes them), `+network` has nothing
/// to price: it asks the network model nothing and places every job as its mode alone does, so
/// `new` lands across racks 0 and 1 as under label-only placement, not in the idle rack.
#[test]
fn plus_network_with_the_network_off_places_as_its_mode() {
    let c = three_racks();
    let mut trace = split_and_new_trace();
    for j in &mut trace {
        j.comm = Some(sim::CommProfile {
            comm_share: 0.0,
            bytes_per_step: 0.0,
        });
    }
    let (label, _) = run_counting(&c, &trace, false);
    let (aware, probes) = run_counting(&c, &trace, true);
    assert_eq!(probes, 0);
    assert_eq!(common::record(&aware, "new").highest_tier, Some(1));
    assert_eq!(format!("{:?}", aware.jobs), format!("{:?}", label.jobs));
}
