//! Network rounds (`SimConfig::network_round`) on a hand-computed scenario: between rounds a
//! job keeps its last pace and a new job runs at its ideal pace; a round of 0 is the exact model.

mod common;

use std::collections::BTreeSet;

use common::{checked, job, racks, record};
use sim::engine::{simulate, NetJob, NetRate, Network, SimConfig, SimResult};
use sim::network::FromScratch;
use sim::{CommProfile, SimTime};

/// Every running multi-node job gets 1/n of its ideal bandwidth when n of them run.
fn shared_equally() -> FromScratch<impl FnMut(&[NetJob]) -> Vec<NetRate>> {
    FromScratch::new(|jobs: &[NetJob]| {
        let n = jobs.len() as f64;
        jobs.iter()
            .map(|_| NetRate {
                ideal_busbw: 100.0,
                achieved_busbw: 100.0 / n,
            })
            .collect()
    })
}

/// Two 2-node jobs of 1,000 ideal seconds, half of it communication, arriving at 0 and 30 s.
fn two_jobs(round: Option<SimTime>) -> SimResult {
    let c = racks(4, 2);
    let trace: Vec<_> = [("a", 0.0), ("b", 30.0)]
        .into_iter()
        .map(|(name, at)| {
            let mut j = job(name, at, 1000.0, 16, "q");
            j.comm = Some(CommProfile {
                comm_share: 0.5,
                bytes_per_step: 1e9,
            });
            j
        })
        .collect();
    let cfg = SimConfig {
        network_round: round,
        ..checked()
    };
    simulate(&c, &trace, &cfg, &mut shared_equally(), &mut |_| {}).unwrap()
}

fn end(r: &SimResult, name: &str) -> f64 {
    record(r, name).end_s.unwrap()
}

#[test]
fn exact_model_re_paces_at_every_change() {
    // Alone a runs at pace 1; from 30 s both run at 0.5 + 0.5 · 2 = 1.5: a's 970 s left end at
    // 30 + 1455 = 1485; b has done 1455 / 1.5 = 970 s by then, its last 30 s alone: 1515.
    let r = two_jobs(None);
    assert_eq!((end(&r, "a"), end(&r, "b")), (1485.0, 1515.0));
    assert_eq!(r.summary.makespan_s, 1515.0);
    // A round of 0 is the exact model.
    assert_eq!(two_jobs(Some(SimTime(0))), r);
}

#[test]
fn rounds_re_pace_only_at_multiples_of_the_round() {
    // Round 100 s: both start at their ideal pace and are re-paced at 100 s (a has 900 s left,
    // b 930 s, both at 1.5): a ends at 100 + 1350 = 1450. The next round would be at 1500, so b
    // keeps 1.5 and ends at 100 + 1395 = 1495; the round after it changes nothing and must not
    // stretch the makespan.
    let r = two_jobs(Some(SimTime::from_secs_f64(100.0)));
    assert_eq!((end(&r, "a"), end(&r, "b")), (1450.0, 1495.0));
    assert_eq!(r.summary.makespan_s, 1495.0);
}

/// Every job gets half its ideal bandwidth, and says so when asked for a quick estimate.
#[derive(Default)]
struct Halved {
    running: BTreeSet<usize>,
}

impl Network for Halved {
    fn start(&mut self, job: &NetJob) {
        self.running.insert(job.id);
    }

    fn end(&mut self, id: usize) {
        self.running.remove(&id);
    }

    fn rates(&mut self, ids: &[usize]) -> Vec<NetRate> {
        ids.iter().map(|_| half()).collect()
    }

    fn provisional(&mut self, id: usize) -> Option<NetRate> {
        self.running.contains(&id).then(half)
    }
}

fn half() -> NetRate {
    NetRate {
        ideal_busbw: 100.0,
        achieved_busbw: 50.0,
    }
}

#[test]
fn a_job_started_between_rounds_runs_at_the_estimate_under_every_policy() {
    // Two 2-node jobs started in one pass, half communication, at half bandwidth:
    // 0.5 + 0.5 · 2 = 1.5, so 1,500 s each, though the first round (10,000 s) comes after they
    // end. Placing b, a `+network` policy first tells the network that a started; a must be
    // paced all the same.
    let c = racks(4, 2);
    let trace: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let mut j = job(name, 0.0, 1000.0, 16, "q");
            j.comm = Some(CommProfile {
                comm_share: 0.5,
                bytes_per_step: 1e9,
            });
            j
        })
        .collect();
    for network_aware in [false, true] {
        let mut cfg = SimConfig {
            network_round: Some(SimTime::from_secs_f64(10_000.0)),
            ..checked()
        };
        cfg.policy.network_aware = network_aware;
        let r = simulate(&c, &trace, &cfg, &mut Halved::default(), &mut |_| {}).unwrap();
        assert_eq!(
            (end(&r, "a"), end(&r, "b")),
            (1500.0, 1500.0),
            "network-aware: {network_aware}"
        );
    }
}
