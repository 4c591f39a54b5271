//! Network-aware placement (`place_network_aware`): whatever the scorer says, the choice obeys
//! the same rules as the label-only placement; a constant scorer gives the label-only placement
//! exactly; the highest-scoring candidate wins, ties to the earliest; a scorer's bound skips
//! candidates without changing the choice.

use proptest::prelude::*;
use sched::{
    check_gang, commit, in_rank_order, place_network_aware, place_with, Dialect, GpuRequest, Job,
    Occupancy, PlaceInput, PlaceOptions, Placement, PlacementScorer, MAX_CANDIDATES,
};
use topology::Cluster;

use crate::*;

/// A random cluster: 1–3 blocks × 1–3 racks × 1–3 nodes of 2–4 GPUs, all ready.
fn arb_cluster() -> impl Strategy<Value = Cluster> {
    prop::collection::vec(
        prop::collection::vec(prop::collection::vec(2u32..=4, 1..=3), 1..=3),
        1..=3,
    )
    .prop_map(|blocks| {
        let mut nodes = Vec::new();
        for (b, racks) in blocks.iter().enumerate() {
            for (r, ns) in racks.iter().enumerate() {
                for &gpus in ns {
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
    })
}

/// (pods, GPUs per pod, topology: 0 none, 1 required rack, 2 required block, 3 preferred rack,
/// 4 preferred block).
fn arb_job() -> impl Strategy<Value = (u32, u32, u8)> {
    (1u32..=5, 1u32..=2, 0u8..=4)
}

fn make_job(c: &Cluster, name: &str, (count, gpus, topo): (u32, u32, u8)) -> Job {
    let t = match topo {
        1 => required(c, RACK),
        2 => required(c, BLOCK),
        3 => preferred(c, RACK),
        4 => preferred(c, BLOCK),
        _ => Default::default(),
    };
    job_with(name, count, GpuRequest::Whole(gpus), t)
}

/// A scorer that prefers placements by an arbitrary seeded hash of their nodes and GPUs.
fn hashing(seed: u64) -> impl FnMut(&Job, &Placement) -> f64 {
    move |_, p| {
        let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
        for pod in &p.pods {
            h = (h ^ pod.node.index() as u64).wrapping_mul(0x0100_0000_01b3);
            for &g in &pod.gpu_ids {
                h = (h ^ u64::from(g)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        (h >> 11) as f64
    }
}

/// A boxed scoring closure.
type ScoreFn = Box<dyn FnMut(&Job, &Placement) -> f64>;

/// A scorer with an upper bound: the score plus a seeded slack (none for about a third of the
/// candidates: a bound equal to the score), counting the candidates it scores.
struct Bounded {
    score: ScoreFn,
    slack_seed: u64,
    scored: usize,
}

impl PlacementScorer for Bounded {
    fn score(&mut self, job: &Job, candidate: &Placement) -> f64 {
        self.scored += 1;
        (self.score)(job, candidate)
    }

    fn bound(&mut self, job: &Job, candidate: &Placement) -> f64 {
        let s = (self.score)(job, candidate);
        let h = hashing(self.slack_seed)(job, candidate) as u64;
        let slack = match h % 3 {
            0 => 0.0,
            1 => (h % 1000) as f64,
            _ => s,
        };
        s + slack
    }
}

fn input(dialect: Dialect) -> PlaceInput {
    PlaceInput {
        options: PlaceOptions {
            dialect,
            ..PlaceOptions::default()
        },
        ..PlaceInput::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn network_aware_placement_obeys_the_label_rules(
        c in arb_cluster(),
        running in prop::collection::vec(arb_job(), 0..6),
        new in arb_job(),
        seed in any::<u64>(),
        kai in any::<bool>(),
        tracked in any::<bool>(),
    ) {
        let dialect = if kai { Dialect::Kai } else { Dialect::Kueue };
        let input = input(dialect);
        let mut occ = if tracked { Occupancy::with_node_tracking(&c) } else { Occupancy::new(&c) };
        for (i, spec) in running.iter().enumerate() {
            let j = make_job(&c, &format!("r{i}"), *spec);
            if let Ok(p) = place_with(&c, &occ, &j, &input) {
                commit(&mut occ, &j, &p).unwrap();
            }
        }
        let job = make_job(&c, "new", new);
        let label = place_with(&c, &occ, &job, &input);
        let mut scorer = hashing(seed);
        let aware = place_network_aware(&c, &occ, &job, &input, &mut scorer, MAX_CANDIDATES);
        // Fails exactly when the label rules fail.
        prop_assert_eq!(label.is_ok(), aware.is_ok());
        let (Ok(label), Ok(aware)) = (label, aware) else { return Ok(()) };
        prop_assert!(aware.candidates.len() <= MAX_CANDIDATES);
        prop_assert_eq!(aware.candidates[0].domain, None);
        let p = aware.placement();
        // The same gang: as many pods, ranks 0..n−1, the same GPUs in total (same quota use).
        prop_assert_eq!(p.pods.len(), label.pods.len());
        for (k, pod) in p.pods.iter().enumerate() {
            prop_assert_eq!(pod.rank as usize, k);
        }
        let gpus = |p: &Placement| p.pods.iter().map(|x| x.gpu_ids.len()).sum::<usize>();
        prop_assert_eq!(gpus(p), gpus(&label));
        // The same required level.
        if let Some(r) = job.pod_sets[0].topology.required {
            let d0 = c.node(p.pods[0].node).domains[r];
            prop_assert!(p.pods.iter().all(|q| c.node(q.node).domains[r] == d0));
        }
        // Free capacity: it commits, and the scheduler's gang and occupancy checks hold.
        let mut after = occ.clone();
        commit(&mut after, &job, p).unwrap();
        prop_assert!(check_gang(&c, &job, &after.jobs()["new"]).is_ok());
        prop_assert!(sched::check_occupancy(&c, &after).is_ok());
        // The winner has the highest score; every earlier candidate scored strictly less.
        let best = aware.best().score;
        prop_assert!(aware.candidates.iter().all(|x| x.score <= best));
        prop_assert!(aware.candidates[..aware.chosen].iter().all(|x| x.score < best));
        // Consecutive ranks share a rack whenever the rack changes only once per rack.
        let rack = lv(&c, RACK);
        let racks: Vec<_> = p.pods.iter().map(|x| c.node(x.node).domains[rack]).collect();
        let mut seen = Vec::new();
        for (i, r) in racks.iter().enumerate() {
            if i == 0 || racks[i - 1] != *r {
                prop_assert!(!seen.contains(r), "rack {:?} split in the rank order", r);
                seen.push(*r);
            }
        }
        // A constant scorer returns exactly the label-only placement (in rank order; the same
        // as the rules' own numbering under Kueue).
        let mut constant = |_: &Job, _: &Placement| 1.0;
        let same = place_network_aware(&c, &occ, &job, &input, &mut constant, MAX_CANDIDATES).unwrap();
        prop_assert_eq!(same.chosen, 0);
        prop_assert_eq!(same.placement(), &in_rank_order(&c, label.clone()));
        if dialect == Dialect::Kueue {
            prop_assert_eq!(same.placement(), &label);
        }
    }

    #[test]
    fn a_bound_skips_candidates_and_never_changes_the_choice(
        c in arb_cluster(),
        running in prop::collection::vec(arb_job(), 0..6),
        new in arb_job(),
        seed in any::<u64>(),
        slack_seed in any::<u64>(),
    ) {
        let input = input(Dialect::Kueue);
        let mut occ = Occupancy::new(&c);
        for (i, spec) in running.iter().enumerate() {
            let j = make_job(&c, &format!("r{i}"), *spec);
            if let Ok(p) = place_with(&c, &occ, &j, &input) {
                commit(&mut occ, &j, &p).unwrap();
            }
        }
        let job = make_job(&c, "new", new);
        // Scores of the size of the slack, so a wrong skip changes the choice.
        let small = move |j: &Job, p: &Placement| hashing(seed)(j, p) % 1000.0;
        let mut plain = small;
        let Ok(all) = place_network_aware(&c, &occ, &job, &input, &mut plain, MAX_CANDIDATES) else {
            return Ok(());
        };
        let mut bounded = Bounded { score: Box::new(small), slack_seed, scored: 0 };
        let some = place_network_aware(&c, &occ, &job, &input, &mut bounded, MAX_CANDIDATES).unwrap();
        prop_assert_eq!(some.chosen, all.chosen);
        prop_assert_eq!(some.placement(), all.placement());
        prop_assert_eq!(some.candidates.len(), all.candidates.len());
        let skipped = some.candidates.iter().filter(|x| !x.scored).count();
        prop_assert_eq!(bounded.scored + skipped, all.candidates.len());
        // A candidate skipped had a bound no better than the best then, so no better than the
        // chosen score; the scored ones carry their scores.
        for (x, y) in some.candidates.iter().zip(&all.candidates) {
            if x.scored {
                prop_assert_eq!(x.score, y.score);
            } else {
                prop_assert!(x.score <= some.best().score * (1.0 + 1e-9));
            }
        }
    }
}

/// A bound no candidate after the first can beat skips every one of them: one score.
#[test]
fn a_bound_below_the_first_score_scores_only_the_first() {
    let c = cluster(&[&[2, 2], &[2, 2]], 4);
    let occ = Occupancy::new(&c);
    let job = job("j", 2, 4, preferred(&c, RACK));
    let mut low = Bounded {
        score: Box::new(|_: &Job, _: &Placement| 10.0),
        slack_seed: 0,
        scored: 0,
    };
    struct Low<'a>(&'a mut Bounded);
    impl PlacementScorer for Low<'_> {
        fn score(&mut self, job: &Job, p: &Placement) -> f64 {
            self.0.score(job, p)
        }
        fn bound(&mut self, _: &Job, _: &Placement) -> f64 {
            10.0
        }
    }
    let aware = place_network_aware(
        &c,
        &occ,
        &job,
        &PlaceInput::default(),
        &mut Low(&mut low),
        MAX_CANDIDATES,
    )
    .unwrap();
    assert_eq!(aware.candidates.len(), 4);
    assert_eq!(low.scored, 1);
    assert_eq!(aware.chosen, 0);
    assert!(aware.candidates[1..].iter().all(|x| !x.scored));
}

/// Brute force on a tiny cluster: the chosen placement is the best-scoring one among every
/// candidate the rules allow (each rack of a 2-block × 2-rack cluster and the label-only one).
#[test]
fn the_best_scoring_candidate_wins_and_ties_go_to_the_label_rules() {
    let c = cluster(&[&[2, 2], &[2, 2]], 4);
    let occ = Occupancy::new(&c);
    let job = job("j", 2, 4, preferred(&c, RACK));
    let input = PlaceInput::default();
    // Score: the rack's position, so the last rack wins.
    let rack = lv(&c, RACK);
    let mut by_rack = |_: &Job, p: &Placement| {
        f64::from(c.position_in_level(c.node(p.pods[0].node).domains[rack]))
    };
    let aware = place_network_aware(&c, &occ, &job, &input, &mut by_rack, MAX_CANDIDATES).unwrap();
    let scores: Vec<f64> = aware.candidates.iter().map(|x| x.score).collect();
    let top = scores.iter().copied().fold(f64::MIN, f64::max);
    assert_eq!(aware.best().score, top);
    let racks: Vec<_> = aware
        .placement()
        .pods
        .iter()
        .map(|p| c.domain(c.node(p.node).domains[rack]).value.clone())
        .collect();
    assert_eq!(racks, vec!["r1", "r1"], "{:?}", aware.candidates);
    // Four racks: the label-only placement (first rack) and the three others.
    assert_eq!(aware.candidates.len(), 4);
    // A cap of one candidate is the label-only placement.
    let one = place_network_aware(&c, &occ, &job, &input, &mut by_rack, 1).unwrap();
    assert_eq!(one.candidates.len(), 1);
}
