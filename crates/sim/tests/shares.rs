//! Fractional, multi-resource and model-constrained jobs in the simulator, on hand-computed
//! scenarios: GPU shares pack onto one GPU up to 100%, CPU and memory limit a node, a job no node
//! model accepts fails at arrival, and Weng et al.'s fragmentation matches a hand count.

mod common;

use common::{clos, fixed_network, host, record, tier};
use sim::engine::{simulate, Outcome, SimConfig, SimResult};
use sim::shares::GPU_MODEL_LABEL;
use sim::{PodShape, TraceJob};
use topology::Cluster;

/// `nodes` hosts of `gpus` GPUs under one switch, each with 16 CPUs and 64 GiB, GPU model T4.
fn cluster(nodes: u32, gpus: u32) -> Cluster {
    let mut c = clos(
        "shares",
        host(gpus, 100.0),
        nodes,
        vec![tier("rack", nodes, 1.0)],
    );
    for n in &mut c.nodes {
        n.allocatable.insert("cpu".to_owned(), 16_000);
        n.allocatable.insert("memory".to_owned(), 64 << 30);
        n.labels.insert(GPU_MODEL_LABEL.to_owned(), "T4".to_owned());
    }
    c
}

/// A job in queue `q` whose pods ask `pod`.
fn job(name: &str, submit: f64, duration: f64, gpus: u32, pod: PodShape) -> TraceJob {
    TraceJob {
        pod,
        ..common::job(name, submit, duration, gpus, "q")
    }
}

/// Whole GPUs and `cpu_milli` CPU per pod.
fn cpus(cpu_milli: u64) -> PodShape {
    PodShape {
        cpu_milli,
        ..PodShape::default()
    }
}

fn share(milli: u32, cpu_milli: u64) -> PodShape {
    PodShape {
        gpu_milli: Some(milli),
        cpu_milli,
        ..PodShape::default()
    }
}

/// A checked best-effort run (10 timeline points), every job at its ideal bandwidth.
fn run(c: &Cluster, trace: &[TraceJob]) -> SimResult {
    let cfg = SimConfig {
        timeline_points: 10,
        ..common::checked()
    };
    simulate(c, trace, &cfg, &mut fixed_network(1.0, 1.0), &mut |_| {}).unwrap()
}

fn start(r: &SimResult, name: &str) -> Option<f64> {
    record(r, name).start_s
}

#[test]
fn shares_pack_one_gpu_up_to_a_whole() {
    // One node, one GPU: 0.5 + 0.3 + 0.2 run together; a fourth 0.1 waits for the first to end.
    let c = cluster(1, 1);
    let trace = [
        job("a", 0.0, 100.0, 1, share(500, 0)),
        job("b", 0.0, 50.0, 1, share(300, 0)),
        job("c", 0.0, 200.0, 1, share(200, 0)),
        job("d", 1.0, 10.0, 1, share(100, 0)),
    ];
    let r = run(&c, &trace);
    assert_eq!(start(&r, "a"), Some(0.0));
    assert_eq!(start(&r, "b"), Some(0.0));
    assert_eq!(start(&r, "c"), Some(0.0));
    assert_eq!(start(&r, "d"), Some(50.0));
    // GPU-seconds count the share: 0.5·100 + 0.3·50 + 0.2·200 + 0.1·10.
    let used: f64 = r.jobs.iter().map(|j| j.gpu_seconds).sum();
    assert!((used - (50.0 + 15.0 + 40.0 + 1.0)).abs() < 1e-6, "{used}");
}

#[test]
fn cpu_limits_a_node_with_free_gpus() {
    // One node of 4 GPUs and 16 CPUs: two 10-CPU jobs cannot run together.
    let c = cluster(1, 4);
    let trace = [
        job("a", 0.0, 100.0, 1, cpus(10_000)),
        job("b", 0.0, 100.0, 1, cpus(10_000)),
        job("c", 0.0, 100.0, 1, cpus(6_000)),
    ];
    let r = run(&c, &trace);
    assert_eq!(start(&r, "a"), Some(0.0));
    assert_eq!(start(&r, "b"), Some(100.0));
    assert_eq!(start(&r, "c"), Some(0.0));
}

#[test]
fn a_job_no_node_model_accepts_fails_at_arrival_and_a_known_model_runs() {
    let c = cluster(2, 2);
    let models = |m: &[&str]| PodShape {
        gpu_models: m.iter().map(|s| s.to_string()).collect(),
        ..PodShape::default()
    };
    let trace = [
        job("v100", 0.0, 10.0, 1, models(&["V100M16", "V100M32"])),
        job("t4", 0.0, 10.0, 1, models(&["T4", "V100M32"])),
        job("too-big", 0.0, 10.0, 1, share(500, 20_000)),
    ];
    let r = run(&c, &trace);
    let outcome = |n: &str| record(&r, n).outcome;
    assert_eq!(outcome("v100"), Outcome::Failed);
    assert_eq!(outcome("t4"), Outcome::Completed);
    assert_eq!(outcome("too-big"), Outcome::Failed);
}

#[test]
fn weng_fragmentation_matches_a_hand_count() {
    // One node, two GPUs; the trace's mix: half 0.6-GPU jobs, half whole-GPU jobs. "a" (0.6)
    // runs alone for 100 s, then "b" (whole) for 100 s.
    // 0–100 s: free 0.4 and 1.0. A 0.6 task wastes 0.4; a whole task wastes 0.4: F = 0.4.
    // 100–200 s: free 1.0 and 0.0 (b took a whole GPU): F = 0 for both.
    // Average over 200 s and 2 GPUs: 0.4 · 100 / 200 / 2 = 0.1.
    let c = cluster(1, 2);
    let trace = [
        job("a", 0.0, 100.0, 1, share(600, 0)),
        job("b", 100.0, 100.0, 1, PodShape::default()),
    ];
    let r = run(&c, &trace);
    assert!(
        (r.summary.weng_fragmentation - 0.1).abs() < 1e-9,
        "{}",
        r.summary.weng_fragmentation
    );
}

#[test]
fn srtf_stops_a_longer_job_for_its_cpu() {
    // One node of 4 GPUs and 16 CPUs. a (10 CPUs, 100 s) runs from 0; b (10 CPUs, 10 s) arrives
    // at 5 with GPUs free but not CPU: SRTF stops a (95 s left) for it, counting the CPU a gives
    // back. b ends at 15; a starts over (no checkpoints) and ends at 115.
    let c = cluster(1, 4);
    let trace = [
        job("a", 0.0, 100.0, 1, cpus(10_000)),
        job("b", 5.0, 10.0, 1, cpus(10_000)),
    ];
    let cfg = SimConfig {
        timeline_points: 10,
        ..common::config(sim::engine::Order::Srtf)
    };
    let r = simulate(&c, &trace, &cfg, &mut fixed_network(1.0, 1.0), &mut |_| {}).unwrap();
    assert_eq!(start(&r, "b"), Some(5.0));
    assert_eq!(record(&r, "b").end_s, Some(15.0));
    assert_eq!(record(&r, "a").end_s, Some(115.0));
    assert_eq!(record(&r, "a").preemptions, 1);
}
