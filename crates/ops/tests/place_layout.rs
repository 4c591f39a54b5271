//! `place --model --layout` (`ops::place::decide` with a training layout): the slices a layout
//! derives keep TP groups whole on a fragmented cluster, `--network-aware` takes the fastest
//! (placement, rank order) pair as a brute force over every pair finds it, a layout inside one
//! node costs no network, and slice annotations that disagree with the layout are refused.

use std::path::{Path, PathBuf};

use layout::{groups, price_step, Kind, Layout, StepInput, Training};
use ops::place::{decide, PlaceInputs};
use topology::Cluster;

/// A Clos of `nodes` 8-GPU hosts with one 400G NIC, local blocks of 4 hosts and (above 4
/// hosts) network blocks of 16 at 4:1 under one island (the CLI tests' `clos-32-4to1.yaml`).
fn clos(nodes: u32) -> Cluster {
    let upper = if nodes > 4 {
        format!("      - {{label: network-block, value_prefix: nb-, nodes_per_domain: 16, latency_us: 5.0, switches_per_domain: 2, oversubscription: 4.0}}\n      - {{label: island, value_prefix: island-, nodes_per_domain: {nodes}, latency_us: 8.0, switches_per_domain: 2}}\n")
    } else {
        String::new()
    };
    let spec = format!(
        "name: clos-{nodes}
node: {{gpus: 8, gpu_memory_gib: 80, rails: 1, ports_per_rail: 1, port_gbps: 400, nvlink_gbps: 3600, name_prefix: node-}}
fabric:
  clos:
    nodes: {nodes}
    rail_optimized: false
    host_label: kubernetes.io/hostname
    tiers:
      - {{label: local-block, value_prefix: lb-, nodes_per_domain: 4, latency_us: 2.0, switches_per_domain: 1}}
{upper}"
    );
    let spec: topology::ClusterSpec = serde_norway::from_str(&spec).expect("spec");
    topology::build_from_spec(&spec).expect("valid spec")
}

fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ops-place-layout-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (f, text) in files {
        std::fs::write(dir.join(f), text).unwrap();
    }
    dir
}

fn training(model: &str, layout: &str) -> Training {
    Training::from_flags(model, layout).expect("valid flags")
}

fn decide_with(
    cluster: &Cluster,
    job: &Path,
    state: &[PathBuf],
    aware: bool,
    t: Option<&Training>,
) -> Result<formats::placement::PlacementFile, formats::FormatError> {
    decide(
        cluster,
        &PlaceInputs {
            job,
            state,
            queues: &[],
            no_preempt: true,
            flavors: &[],
            options: sched::PlaceOptions::default(),
            scheduler: None,
            network_aware: aware,
            training: t,
        },
    )
}

/// The node of every rank (pods of one GPU each, in rank order).
fn rank_nodes(p: &formats::placement::PlacementFile) -> Vec<String> {
    p.pods
        .iter()
        .flat_map(|pod| std::iter::repeat_n(pod.node.clone(), pod.gpus as usize))
        .collect()
}

/// Four hosts with 2, 2, 4 and 4 GPUs free; a job of eight 1-GPU pods, tp=4, dp=2. The label
/// rules alone (BestFit: least free first) take hosts 0, 1 and 2, so TP group 0 (ranks 0-3)
/// is split over two hosts; with the layout, the host-level slice of 4 pods keeps each TP group
/// on one host.
#[test]
fn layout_slices_keep_tp_groups_whole_on_a_fragmented_cluster() {
    let cluster = clos(4);
    let dir = scratch(
        "fragmented",
        &[
            (
                "job.yaml",
                "name: tp4\npod_sets:\n  - {name: workers, count: 8, gpus: 1}\n",
            ),
            (
                "state.yaml",
                "jobs:\n  - name: busy\n    pods:\n      - {node: node-000, gpus: 6}\n      - {node: node-001, gpus: 6}\n      - {node: node-002, gpus: 4}\n      - {node: node-003, gpus: 4}\n",
            ),
        ],
    );
    let state = vec![dir.join("state.yaml")];
    let t = training("llama3-8b", "tp=4,dp=2");
    let tp = groups(&t.layout, Kind::Tp);
    let whole = |p: &formats::placement::PlacementFile| {
        let nodes = rank_nodes(p);
        assert_eq!(nodes.len(), 8, "{p:?}");
        tp.iter()
            .all(|g| g.iter().all(|&r| nodes[r as usize] == nodes[g[0] as usize]))
    };
    let label = decide_with(&cluster, &dir.join("job.yaml"), &state, false, None).unwrap();
    assert!(label.placed, "{:?}", label.reason);
    assert!(
        !whole(&label),
        "the label rules alone split a TP group: {label:?}"
    );
    for aware in [false, true] {
        let p = decide_with(&cluster, &dir.join("job.yaml"), &state, aware, Some(&t)).unwrap();
        assert!(p.placed, "{:?}", p.reason);
        assert!(whole(&p), "aware {aware}: {:?}", rank_nodes(&p));
    }
}

/// Six 8-GPU pods on 32 hosts beside a running job that crosses nb-0's thin uplinks, for
/// several layouts: every candidate the label rules allow × both rank orders priced by
/// `price_step` with the running job's Ring on the fabric (what `fabric step --placement …
/// --state …` does); `--network-aware` must return the pair with the most tokens/s. Among the
/// layouts, one wins off the label-only placement, and one (tp=8,pp=3,dp=2) on it where the
/// Ring AllReduce score alone picks the idle block.
#[test]
fn network_aware_takes_the_fastest_placement_and_order_by_brute_force() {
    let winners: Vec<usize> = [
        "tp=8,pp=2,dp=3",
        "tp=8,pp=3,dp=2",
        "tp=8,dp=6",
        "tp=4,pp=2,dp=6,order=tp-cp-ep-pp-dp",
    ]
    .iter()
    .map(|l| fastest_pair_is_chosen(l))
    .collect();
    assert!(
        winners.contains(&0) && winners.iter().any(|&w| w > 0),
        "{winners:?}"
    );
}

/// The brute force of [`network_aware_takes_the_fastest_placement_and_order_by_brute_force`]
/// for one layout; the index of the winning candidate.
fn fastest_pair_is_chosen(layout_spec: &str) -> usize {
    let cluster = clos(32);
    let dir = scratch(
        "brute",
        &[
            (
                "job.yaml",
                "name: six\npod_sets:\n  - {name: workers, count: 6, gpus: 8}\n",
            ),
            (
                "state.yaml",
                "jobs:\n  - name: split-4\n    pods:\n      - {node: node-000, gpus: 8}\n      - {node: node-001, gpus: 8}\n      - {node: node-004, gpus: 8}\n      - {node: node-005, gpus: 8}\n  - name: single\n    pods:\n      - {node: node-008, gpus: 8}\n",
            ),
        ],
    );
    let job_path = dir.join("job.yaml");
    let state = vec![dir.join("state.yaml")];
    let t = training("llama3-8b", layout_spec);
    let chosen = decide_with(&cluster, &job_path, &state, true, Some(&t)).unwrap();
    assert!(chosen.placed, "{:?}", chosen.reason);
    let choice = chosen
        .network
        .as_ref()
        .and_then(|n| n.layout.clone())
        .expect("layout section");

    // Brute force: the candidates (scored by a constant, so only enumerated), each priced in
    // each order from scratch.
    let text = std::fs::read_to_string(&job_path).unwrap();
    let doc = formats::jobs::read_job("job.yaml", &text).unwrap();
    let mut job = doc.resolve("job.yaml", &cluster).unwrap();
    ops::place_layout::apply_slices(&cluster, &mut job, &t, "job.yaml").unwrap();
    let files = vec![(
        "state".to_owned(),
        std::fs::read_to_string(&state[0]).unwrap(),
    )];
    let occupancy = formats::state::read_all(&files, &cluster).unwrap();
    let mut constant = |_: &sched::Job, _: &sched::Placement| 0.0;
    let candidates = sched::place_network_aware(
        &cluster,
        &occupancy,
        &job,
        &sched::PlaceInput::default(),
        &mut constant,
        sched::MAX_CANDIDATES,
    )
    .unwrap()
    .candidates;
    assert!(candidates.len() >= 2, "{candidates:?}");
    let cfg = fabric::RoutingConfig {
        nccl: fabric::NcclConfig {
            qps_per_connection: ops::launch::default_qps(&cluster, topology::NodeId(0)),
            ..fabric::NcclConfig::default()
        },
        ..fabric::RoutingConfig::default()
    };
    let mut fab = fabric::Fabric::new(&cluster);
    let split: Vec<(topology::NodeId, Vec<u32>)> = [0, 1, 4, 5]
        .iter()
        .map(|&n| (topology::NodeId(n), (0..8).collect()))
        .collect();
    let ring = fabric::JobTraffic {
        ranks: fabric::ranks_of(&split),
        collective: fabric::Collective::AllReduce,
    };
    let running = vec![fab.route_flows(&ring, &cfg, 1).unwrap()];
    let mut best: Option<(f64, usize, String)> = None;
    let mut all = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        let pods: Vec<_> = c
            .placement
            .pods
            .iter()
            .map(|p| (p.node, p.gpu_ids.clone()))
            .collect();
        let ranks = fabric::ranks_of(&pods);
        for order in [
            t.layout.order,
            layout::layout::PP_INNER_ORDER,
            layout::layout::MEGATRON_ORDER,
        ] {
            let order = layout::layout::order_label(&order);
            if all
                .iter()
                .any(|a: &(usize, String, f64)| a.0 == i && a.1 == order)
            {
                continue;
            }
            let mut tt = t.clone();
            tt.layout = Layout {
                order: layout::layout::parse_order(&order).unwrap(),
                ..t.layout.clone()
            };
            let step = price_step(
                &mut fab,
                StepInput {
                    training: &tt,
                    ranks: &ranks,
                    cfg: &cfg,
                    running: &running,
                    efficiency: None,
                },
            )
            .unwrap();
            if best
                .as_ref()
                .is_none_or(|b| step.tokens_per_s > b.0 * (1.0 + 1e-9))
            {
                best = Some((step.tokens_per_s, i, order.clone()));
            }
            all.push((i, order, step.tokens_per_s));
        }
    }
    let (tokens, i, order) = best.unwrap();
    // The brute force separates the pairs: otherwise the test would prove nothing.
    let worst = all.iter().map(|a| a.2).fold(f64::INFINITY, f64::min);
    assert!(worst < 0.99 * tokens, "{all:?}");
    let nodes = |pods: Vec<String>| pods;
    assert_eq!(
        nodes(chosen.pods.iter().map(|p| p.node.clone()).collect()),
        candidates[i]
            .placement
            .pods
            .iter()
            .map(|p| cluster.node(p.node).name.clone())
            .collect::<Vec<_>>(),
        "{all:?}"
    );
    assert_eq!(choice.order, order, "{all:?}");
    assert!(
        (choice.tokens_per_s - tokens).abs() <= 1e-9 * tokens,
        "{choice:?} vs {all:?}"
    );
    // The label-only step is candidate 0 in the layout's own order.
    let own = layout::layout::order_label(&t.layout.order);
    let label = all.iter().find(|a| a.0 == 0 && a.1 == own).unwrap();
    let label_step = t.global_batch as f64 * t.model.seq as f64 / label.2;
    assert!((choice.label_only_step_s - label_step).abs() <= 1e-9 * label_step);
    // Deterministic: the same inputs, the same bytes.
    let again = decide_with(&cluster, &job_path, &state, true, Some(&t)).unwrap();
    assert_eq!(
        serde_json::to_string(&again).unwrap(),
        serde_json::to_string(&chosen).unwrap()
    );
    i
}

/// tp=4, dp=2 on one host beside a running job that loads the fabric: the step is the same as
/// on an idle cluster, since no group leaves the host.
#[test]
fn a_layout_inside_one_node_costs_no_network() {
    let cluster = clos(32);
    let dir = scratch(
        "one-node",
        &[
            ("job.yaml", "name: one\npod_sets:\n  - {name: w, count: 1, gpus: 8}\n"),
            (
                "state.yaml",
                "jobs:\n  - name: split-4\n    pods:\n      - {node: node-000, gpus: 8}\n      - {node: node-001, gpus: 8}\n      - {node: node-004, gpus: 8}\n      - {node: node-005, gpus: 8}\n",
            ),
        ],
    );
    let t = training("llama3-8b", "tp=4,dp=2");
    let step = |state: &[PathBuf]| {
        let p = decide_with(&cluster, &dir.join("job.yaml"), state, true, Some(&t)).unwrap();
        p.network.and_then(|n| n.layout).expect("layout section")
    };
    let busy = step(&[dir.join("state.yaml")]);
    let idle = step(&[]);
    assert_eq!(busy.step_s, idle.step_s);
    // And every communicator of it is NVLink: the same as pricing it with nothing on any port.
    let ranks = layout::first_gpus(&cluster, 8);
    let mut fab = fabric::Fabric::new(&cluster);
    let alone = layout::best_order(
        &mut fab,
        StepInput {
            training: &t,
            ranks: &ranks,
            cfg: &fabric::RoutingConfig::default(),
            running: &[],
            efficiency: None,
        },
    )
    .unwrap();
    assert!(
        alone.step.comms.iter().all(|c| c.tier == "nvlink"),
        "{:?}",
        alone.step.comms
    );
    assert!((alone.step.step_s - busy.step_s).abs() <= 1e-12 * busy.step_s);
}

/// Slices the job gives must be the layout's; the same ones are accepted.
#[test]
fn slices_that_disagree_with_the_layout_are_refused_in_one_line() {
    let cluster = clos(32);
    let job = |size: u32| {
        format!("name: s\npod_sets:\n  - name: w\n    count: 8\n    gpus: 8\n    topology:\n      slices:\n        - {{level: local-block, size: {size}}}\n")
    };
    let dir = scratch("conflict", &[("bad.yaml", &job(2)), ("good.yaml", &job(4))]);
    // tp=8, dp=4, pp=2: a stage is 4 pods, a local block holds 4.
    let t = training("llama3-8b", "tp=8,dp=4,pp=2");
    let e = decide_with(&cluster, &dir.join("bad.yaml"), &[], false, Some(&t))
        .unwrap_err()
        .to_string();
    assert!(!e.contains('\n'), "{e}");
    assert!(
        e.ends_with("pod set `w`: its slices (2 pods per local-block) conflict with those --layout tp=8,pp=2,dp=4 derives (4 pods per local-block); drop them or give the same"),
        "{e}"
    );
    let ok = decide_with(&cluster, &dir.join("good.yaml"), &[], false, Some(&t)).unwrap();
    assert!(ok.placed, "{:?}", ok.reason);
    // A layout of other than the job's GPUs is named too.
    let t = training("llama3-8b", "tp=8,dp=2");
    let e = decide_with(&cluster, &dir.join("good.yaml"), &[], false, Some(&t))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("runs on 16 GPUs, but pod set `w` asks for 8 pods × 8 = 64"),
        "{e}"
    );
}
