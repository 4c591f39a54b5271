//! `railyard fabric …`: figures from DESIGN.md and the cross-pod example, and bad input.

use std::path::{Path, PathBuf};

use railyard::cluster_arg::ClusterArgs;
use railyard::commands::fabric::{collective_report, ecmp, CollectiveArgs, EcmpArgs};
use railyard::output::OutputFormat;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/placements")
        .join(name)
}

fn args(cluster: &str, placement: PathBuf, routing: &str, qps: u32) -> CollectiveArgs {
    CollectiveArgs {
        cluster: ClusterArgs {
            cluster: cluster.to_owned(),
            ..ClusterArgs::default()
        },
        placement: Some(placement),
        job: None,
        state: Vec::new(),
        collective: "allreduce".to_owned(),
        routing: routing.to_owned(),
        qps,
        size: "1G".to_owned(),
        seed: 0,
        hash: "crc32".to_owned(),
        same_seed: false,
        top: 5,
        output: OutputFormat::Json,
    }
}

/// The command fails with exit 1 and one `error:` line naming `needle`.
fn check_error(args: &[&str], needle: &str) {
    crate::assert_one_line_error(&crate::railyard(args), needle);
}

/// Run the CLI: exit code, stdout, stderr.
fn railyard(args: &[&str]) -> (i32, String, String) {
    let r = crate::railyard(args);
    (r.code, r.stdout, r.stderr)
}

#[test]
fn cross_pod_ring_on_fat_tree_k8_ecmp_qps_and_adaptive() {
    let p = example("fat-tree-k8-cross-pod.json");
    let eff = |routing, qps| {
        collective_report(&args("preset:fat-tree-k8", p.clone(), routing, qps)).expect("valid")
    };
    let e1 = eff("ecmp", 1);
    let e4 = eff("ecmp", 4);
    let e16 = eff("ecmp", 16);
    let ad = eff("adaptive", 1);
    assert_eq!(e1.ranks, 1024);
    assert_eq!(e1.nodes, 128);
    // One 400G NIC per host: a ring across whole nodes is NIC-bound at NCCL's 48 GB/s.
    assert!((ad.ideal_busbw_gb_s - 48.0).abs() < 1e-9);
    assert!(e1.efficiency < 0.6, "1 QP: {}", e1.efficiency);
    assert!(
        e4.efficiency > e1.efficiency,
        "{} {}",
        e1.efficiency,
        e4.efficiency
    );
    assert!(
        e16.efficiency > e4.efficiency,
        "{} {}",
        e4.efficiency,
        e16.efficiency
    );
    assert!(ad.efficiency > 0.999, "adaptive: {}", ad.efficiency);
    // The hottest links of ECMP are switch-to-switch links, saturated.
    assert!(e1.hot_links[0].tier >= 1);
    assert!((e1.max_link_utilization - 1.0).abs() < 1e-9);
    assert!((e1.latency_us - 3.0).abs() < 1e-12);
}

#[test]
fn collective_json_has_the_documented_fields() {
    let (code, stdout, stderr) = railyard(&[
        "fabric",
        "collective",
        "--cluster",
        "preset:fat-tree-k8",
        "--placement",
        example("fat-tree-k8-cross-pod.json")
            .to_str()
            .expect("utf-8 path"),
        "--collective",
        "allgather",
        "--qps",
        "4",
        "--output",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    for key in [
        "ranks",
        "algbw_gb_s",
        "busbw_gb_s",
        "ideal_busbw_gb_s",
        "efficiency",
        "max_link_utilization",
        "hot_links",
        "latency_us",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    let hot = &v["hot_links"][0];
    for key in ["from", "to", "tier", "utilization"] {
        assert!(hot.get(key).is_some(), "hot_links lacks {key}");
    }
    // AllGather busbw = algbw × (n−1)/n.
    let (alg, bus) = (
        v["algbw_gb_s"].as_f64().unwrap(),
        v["busbw_gb_s"].as_f64().unwrap(),
    );
    assert!((bus - alg * 1023.0 / 1024.0).abs() < 1e-9);
}

fn ecmp_mean(flows: u32) -> (f64, Option<f64>) {
    let out = ecmp(&EcmpArgs {
        paths: 8,
        flows,
        qps: 1,
        trials: 20_000,
        seed: 1,
        hash: "crc32".to_owned(),
        output: OutputFormat::Json,
    })
    .expect("valid");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    (
        v["mean_max_load"].as_f64().unwrap(),
        v["expected_max_load"].as_f64(),
    )
}

#[test]
fn ecmp_reproduces_balls_into_bins_figures() {
    for (flows, design) in [(8, 2.597), (32, 7.048)] {
        let (sim, exact) = ecmp_mean(flows);
        assert!((sim - design).abs() / design < 0.02, "{flows} flows: {sim}");
        let exact = exact.expect("computed");
        assert!(
            (exact - design).abs() / design < 0.001,
            "{flows} flows: {exact}"
        );
    }
}

#[test]
fn mtu_rule() {
    let (code, stdout, _) =
        railyard(&["fabric", "mtu", "--netdev-mtu", "4200", "--output", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(v["active_mtu"], 4096);
    let (_, stdout, _) = railyard(&["fabric", "mtu", "--netdev-mtu", "4191", "--output", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(v["active_mtu"], 2048);
    check_error(&["fabric", "mtu", "--netdev-mtu", "300"], "--netdev-mtu");
}

#[test]
fn bad_input_is_one_line_and_exit_1() {
    let p = example("fat-tree-k8-cross-pod.json");
    let p = p.to_str().expect("utf-8 path");
    let base = |extra: &[&'static str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "fabric",
            "collective",
            "--cluster",
            "preset:fat-tree-k8",
            "--placement",
            p,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v
    };
    let run = |extra: &[&'static str], needle: &str| {
        let v = base(extra);
        let refs: Vec<&str> = v.iter().map(String::as_str).collect();
        check_error(&refs, needle);
    };
    run(
        &["--collective", "broadcast"],
        "unknown collective `broadcast`",
    );
    run(&["--collective", "allreduce", "--qps", "0"], "--qps");
    run(
        &["--collective", "allreduce", "--routing", "magic"],
        "--routing",
    );

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let bad = dir.join("fabric-unknown-node.json");
    std::fs::write(
        &bad,
        r#"{"placed": true, "pods": [{"rank": 0, "node": "host-000", "gpus": 8},
            {"rank": 1, "node": "host-999", "gpus": 8}]}"#,
    )
    .expect("write temp file");
    check_error(
        &[
            "fabric",
            "collective",
            "--cluster",
            "preset:fat-tree-k8",
            "--placement",
            bad.to_str().expect("utf-8 path"),
            "--collective",
            "allreduce",
        ],
        "node \"host-999\" is not in the cluster",
    );
    check_error(
        &["fabric", "ecmp", "--paths", "0", "--flows", "8"],
        "--paths",
    );
}

/// A placement of whole nodes `gpu-0000…` in order, written to the test's temp dir.
fn whole_node_placement(name: &str, nodes: usize) -> PathBuf {
    let pods: Vec<String> = (0..nodes)
        .map(|i| format!(r#"{{"rank": {i}, "node": "gpu-{i:04}", "gpus": 8}}"#))
        .collect();
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(
        &path,
        format!(r#"{{"placed": true, "pods": [{}]}}"#, pods.join(",")),
    )
    .expect("write temp file");
    path
}

#[test]
fn ring_across_whole_nodes_is_bound_by_the_node_nic_aggregate() {
    let placement = whole_node_placement("fabric-64-nodes.json", 64);
    // oci-h100-16k: 8 rails × 2 × 200G = 3.2 Tb/s per node → 16 × NCCL's 24 GB/s.
    let r = collective_report(&args("preset:oci-h100-16k", placement.clone(), "ecmp", 1))
        .expect("valid");
    assert!((r.ideal_busbw_gb_s - 384.0).abs() < 1e-9, "{r:?}");
    // The same cluster with one 200G port per rail (BM.GPU4.8, 1.6 Tb/s per node) → 192 GB/s.
    let preset = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../formats/presets/oci-h100-16k.yaml"),
    )
    .expect("preset");
    assert!(preset.contains("ports_per_rail: 2"));
    let spec = preset
        .replace("ports_per_rail: 2", "ports_per_rail: 1")
        .replace("shape: BM.GPU.H100.8", "shape: BM.GPU4.8");
    let spec_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fabric-1.6t.yaml");
    std::fs::write(&spec_path, spec).expect("write temp file");
    let r = collective_report(&args(
        spec_path.to_str().expect("utf-8 path"),
        placement,
        "adaptive",
        1,
    ))
    .expect("valid");
    assert!((r.ideal_busbw_gb_s - 192.0).abs() < 1e-9, "{r:?}");
    assert!((r.busbw_gb_s - 192.0).abs() < 1e-9, "{r:?}");
}

const RING_24: &str = "tests/fixtures/sched/jobs/fat-tree-ring-24.yaml";
const FAT_TREE_BUSY: &str = "tests/fixtures/sched/state/fat-tree-busy.yaml";

/// `fabric collective --job` places the job as `place` does: the same report as `place --output
/// json` into a file followed by `fabric collective --placement` that file.
#[test]
fn job_gives_the_figures_of_place_then_placement() {
    let dir = crate::temp_dir("fabric-job");
    for (i, (state, routing, qps)) in [
        (None, "ecmp", "1"),
        (Some(FAT_TREE_BUSY), "ecmp", "4"),
        (None, "adaptive", "1"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut place = vec!["place", "--cluster", "preset:fat-tree-k8", "--job", RING_24];
        place.extend(state.map(|s| ["--state", s]).into_iter().flatten());
        place.extend_from_slice(&["--output", "json"]);
        let placement_json = crate::ok(&place);
        let placement = dir.join(format!("placement-{i}.json"));
        std::fs::write(&placement, &placement_json).expect("write the placement");
        let p: formats::placement::PlacementFile =
            serde_json::from_str(&placement_json).expect("placement JSON");
        assert!(p.placed && p.pods.len() == 24, "{p:?}");
        if state.is_some() {
            // The busy hosts are avoided, so this case differs from the first.
            assert!(p
                .pods
                .iter()
                .all(|q| !["host-000", "host-003", "host-016"].contains(&q.node.as_str())));
        }

        let common = [
            "--cluster",
            "preset:fat-tree-k8",
            "--collective",
            "allreduce",
            "--routing",
            routing,
            "--qps",
            qps,
            "--output",
            "json",
        ];
        let mut by_placement = vec!["fabric", "collective", "--placement"];
        by_placement.push(placement.to_str().expect("UTF-8 path"));
        by_placement.extend_from_slice(&common);
        let mut by_job = vec!["fabric", "collective", "--job", RING_24];
        by_job.extend(state.map(|s| ["--state", s]).into_iter().flatten());
        by_job.extend_from_slice(&common);
        let expected = crate::ok(&by_placement);
        let got = crate::ok(&by_job);
        assert_eq!(got, expected, "case {i}");
        let v: serde_json::Value = serde_json::from_str(&got).expect("JSON");
        assert_eq!(v["ranks"], 192);
        assert_eq!(v["nodes"], 24);
        assert!(v["busbw_gb_s"].as_f64().expect("busbw") > 0.0);
    }
}

#[test]
fn job_that_cannot_be_placed_is_one_line_with_the_schedulers_reason() {
    let dir = crate::temp_dir("fabric-job-too-big");
    // Never fits (129 nodes on a 128-node cluster): the same input error as `place`.
    let too_big = dir.join("too-big.yaml");
    std::fs::write(
        &too_big,
        "name: too-big\npod_sets:\n  - count: 129\n    gpus: 8\n",
    )
    .expect("write");
    let too_big = too_big.to_str().expect("UTF-8 path");
    let place = crate::fails(&["place", "--cluster", "preset:fat-tree-k8", "--job", too_big]);
    let fabric = crate::fails(&[
        "fabric",
        "collective",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        too_big,
        "--collective",
        "allreduce",
    ]);
    assert_eq!(fabric, place);
    assert!(place.contains("can never be placed"), "{place}");
    // Does not fit now (the cluster is busy): `place` answers placed: false with a reason, and
    // `fabric collective --job` turns that reason into its one-line error.
    let all = dir.join("all-nodes.yaml");
    std::fs::write(
        &all,
        "name: all-nodes\npod_sets:\n  - count: 128\n    gpus: 8\n",
    )
    .expect("write");
    let all = all.to_str().expect("UTF-8 path");
    let state = "tests/fixtures/sched/state/fat-tree-busy.yaml";
    let placement: formats::placement::PlacementFile = serde_json::from_str(&crate::ok(&[
        "place",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        all,
        "--state",
        state,
        "--output",
        "json",
    ]))
    .expect("placement JSON");
    assert!(!placement.placed);
    let reason = placement.reason.expect("a reason");
    let line = crate::fails(&[
        "fabric",
        "collective",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        all,
        "--state",
        state,
        "--collective",
        "allreduce",
    ]);
    assert_eq!(
        line,
        format!("error: {all}: job `all-nodes` cannot be placed on fat-tree-k8: {reason}")
    );
}

#[test]
fn bad_job_is_the_error_place_gives_and_placement_or_job_is_required() {
    let job = "tests/fixtures/sched/jobs/bad/native-unknown-level.yaml";
    let place = crate::fails(&["place", "--cluster", "preset:fat-tree-k8", "--job", job]);
    let fabric = crate::fails(&[
        "fabric",
        "collective",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        job,
        "--collective",
        "allreduce",
    ]);
    assert_eq!(fabric, place);
    // Usage errors (exit 2): neither, both, or --state with a placement.
    let p = example("fat-tree-k8-cross-pod.json");
    let p = p.to_str().expect("UTF-8 path");
    for extra in [
        vec![],
        vec!["--placement", p, "--job", RING_24],
        vec!["--placement", p, "--state", FAT_TREE_BUSY],
    ] {
        let mut args = vec![
            "fabric",
            "collective",
            "--cluster",
            "preset:fat-tree-k8",
            "--collective",
            "allreduce",
        ];
        args.extend(extra);
        let run = crate::railyard(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    }
}
