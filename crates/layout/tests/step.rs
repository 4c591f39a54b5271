//! Pricing behaviours: a layout whose every group stays inside one host costs no network, the
//! step is the sum of its parts, crossing hosts with TP costs, and bad placements are refused
//! with the field named.

mod common;

use fabric::{Fabric, Rank, RoutingConfig};
use layout::{preset, price_step, Kind, Layout, Pace, StepInput, Training};
use topology::NodeId;

fn job(model: &str, layout: &str, batch: u32) -> Training {
    Training {
        global_batch: batch,
        ..Training::new(preset(model).unwrap(), Layout::parse(layout).unwrap())
    }
}

/// TP 4 × DP 2 on the 8 GPUs of one DGX: every communicator is NVLink only, so no switch port
/// carries anything and no kind reports a tier or a hot link.
#[test]
fn every_group_inside_one_node_costs_no_network() {
    let selene = common::selene();
    let step = common::price(&selene, &job("megatron-7.5b", "tp=4,dp=2", 16), None);
    assert_eq!(step.comms.len(), 2, "{:?}", step.comms);
    for c in &step.comms {
        assert_eq!(c.tier, "nvlink", "{c:?}");
        assert!(c.hot_links.is_empty(), "{c:?}");
        assert!(c.busbw_gb_s > 100.0, "NVLink speeds: {c:?}");
    }
    // The same layout over 8 hosts (one GPU each): DP and TP now cross the leaf.
    let ranks: Vec<Rank> = (0..8)
        .map(|n| Rank {
            node: NodeId(n),
            gpu: 0,
        })
        .collect();
    let mut fabric = Fabric::new(&selene);
    let spread = price_step(
        &mut fabric,
        StepInput {
            training: &job("megatron-7.5b", "tp=4,dp=2", 16),
            ranks: &ranks,
            cfg: &RoutingConfig::default(),
            running: &[],
            efficiency: None,
        },
    )
    .unwrap();
    assert!(spread
        .comms
        .iter()
        .all(|c| c.tier == "tier 0" && !c.hot_links.is_empty()));
    assert!(
        spread.step_s > step.step_s * 1.5,
        "{} vs {}",
        spread.step_s,
        step.step_s
    );
}

/// The step is compute + bubble + exposed communication, and tokens/s and TFLOP/s follow.
#[test]
fn step_is_compute_plus_bubble_plus_exposed() {
    let step = common::price(
        &common::selene(),
        &job("llama3-8b", "tp=8,pp=2,dp=2", 16),
        Some(0.5),
    );
    let sum = step.compute_s + step.bubble_s + step.exposed_s;
    assert!((step.step_s - sum).abs() < 1e-12 * sum);
    assert!((step.tokens_per_s - 16.0 * 8192.0 / step.step_s).abs() < 1e-6);
    assert!(
        (step.bubble_fraction - 1.0 / 8.0).abs() < 1e-12,
        "pp 2, m = 8"
    );
    let exposed: f64 = step.comms.iter().map(|c| c.exposed_s).sum();
    assert!((exposed - step.exposed_s).abs() < 1e-12);
    assert!(step.comms.iter().any(|c| c.kind == Kind::Pp));
}

/// Overlap only ever hides time: turning both switches on never lengthens the step, and DP
/// overlap hides at most one micro-batch's backward.
#[test]
fn overlap_hides_time() {
    let selene = common::selene();
    let off = job("megatron-18b", "tp=8,dp=4", 32);
    let on = Training {
        overlap_dp: true,
        overlap_tp: true,
        ..off.clone()
    };
    let (a, b) = (
        common::price(&selene, &off, None),
        common::price(&selene, &on, None),
    );
    assert!(b.step_s < a.step_s);
    assert!((a.compute_s - b.compute_s).abs() < 1e-12);
    let dp = |s: &layout::Step| s.comms.iter().find(|c| c.kind == Kind::Dp).unwrap().clone();
    assert!(dp(&b).exposed_s >= dp(&b).time_s - b.compute_s / f64::from(b.micro_batches));
}

/// A placement with the wrong number of GPUs names the layout; an unknown GPU names the
/// placement.
#[test]
fn bad_placements_name_the_field() {
    let selene = common::selene();
    let mut fabric = Fabric::new(&selene);
    let t = job("llama3-8b", "tp=8,dp=2", 2);
    let ranks = common::first_gpus(&selene, 8);
    let err = |ranks: &[Rank], fabric: &mut Fabric<'_>| {
        price_step(
            fabric,
            StepInput {
                training: &t,
                ranks,
                cfg: &RoutingConfig::default(),
                running: &[],
                efficiency: None,
            },
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        err(&ranks, &mut fabric),
        "layout: tp × pp × dp × cp = 8 × 1 × 2 × 1 = 16, but the job has 8 GPUs"
    );
    let mut twice = common::first_gpus(&selene, 16);
    twice[9] = twice[8];
    assert!(err(&twice, &mut fabric).starts_with("placement: tp communicator:"));
}

fn spread_ranks(hosts: u32) -> Vec<Rank> {
    (0..hosts)
        .map(|n| Rank {
            node: NodeId(n),
            gpu: 0,
        })
        .collect()
}

/// A pace built from a step keeps it: with each network kind at the ratio the step was priced
/// at (priced busbw ÷ ideal busbw), it gives back `price_step`'s step time; inside one host the
/// network changes nothing and the ideal step is the priced step.
#[test]
fn pace_reassembles_the_priced_step() {
    let selene = common::selene();
    let t = job("megatron-7.5b", "tp=4,dp=2", 16);
    let inside = common::price(&selene, &t, None);
    let pace = Pace::new(&t, &inside);
    assert!(pace.network_kinds().is_empty());
    assert_eq!(pace.ideal_step_s, inside.step_s);
    assert_eq!(pace.step_s(|_| 0.25), inside.step_s);

    let mut fabric = Fabric::new(&selene);
    let spread = price_step(
        &mut fabric,
        StepInput {
            training: &t,
            ranks: &spread_ranks(8),
            cfg: &RoutingConfig::default(),
            running: &[],
            efficiency: None,
        },
    )
    .unwrap();
    let pace = Pace::new(&t, &spread);
    assert_eq!(pace.network_kinds(), vec![Kind::Tp, Kind::Dp]);
    let ratio = |k: Kind| {
        let c = spread.comms.iter().find(|c| c.kind == k).unwrap();
        (c.busbw_gb_s / c.ideal_busbw_gb_s).min(1.0)
    };
    let again = pace.step_s(ratio);
    assert!(
        (again - spread.step_s).abs() <= 1e-9 * spread.step_s,
        "{again} vs {}",
        spread.step_s
    );
    assert!(pace.ideal_step_s <= spread.step_s);
    // Half the bandwidth: the exposed communication doubles, the compute does not.
    let half = pace.step_s(|k| ratio(k) / 2.0);
    let exposed = spread.step_s - spread.compute_s - spread.bubble_s;
    assert!(
        half > spread.step_s + 0.9 * exposed,
        "{half} vs {}",
        spread.step_s
    );
    assert!(pace.step_s(|_| 0.0).is_infinite());
}

/// The distributed optimizer's parameter AllGather hides behind the forward pass, its gradient
/// ReduceScatter behind the backward (Megatron-Core `--overlap-param-gather`,
/// `--overlap-grad-reduce`): the advice for each names the pass it overlaps.
#[test]
fn dp_advice_names_the_pass_each_collective_overlaps() {
    let mut t = job("llama3-8b", "tp=8,dp=8", 64);
    t.optimizer = layout::Optimizer::Distributed;
    let cluster = common::selene();
    let step = common::price(&cluster, &t, Some(0.5));
    let advice = layout::advise(&cluster, &t, &step);
    let change = |cost: &str| {
        advice
            .iter()
            .find(|a| a.cost == cost)
            .unwrap_or_else(|| panic!("no `{cost}` in {advice:?}"))
            .change
            .clone()
    };
    let gather = change("dp allgather");
    assert!(
        gather.contains("forward") && !gather.contains("backward"),
        "{gather}"
    );
    assert!(change("dp reducescatter").contains("backward"));
}
