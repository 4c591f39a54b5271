//! `railyard fabric …`: figures from DESIGN.md and the cross-pod example, and bad input.

use std::path::{Path, PathBuf};

use railyard::cluster_arg::ClusterArgs;
use railyard::commands::fabric::{
    collective_report, ecmp, CollectiveArgs, EcmpArgs, HashArg, JobArgs, NcclArgs, RoutingArg,
};
use railyard::output::OutputFormat;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/placements")
        .join(name)
}

fn args(cluster: &str, placement: PathBuf, routing: RoutingArg, qps: u32) -> CollectiveArgs {
    CollectiveArgs {
        job: JobArgs {
            cluster: ClusterArgs {
                cluster: cluster.to_owned(),
                ..ClusterArgs::default()
            },
            placement: Some(placement),
            job: None,
            state: Vec::new(),
            collective: fabric::Collective::AllReduce,
            routing,
            nccl: NcclArgs {
                nccl: Vec::new(),
                qps: Some(qps),
            },
            seed: 0,
            hash: HashArg::Mix,
            same_seed: false,
        },
        size: 1 << 30,
        sizes: None,
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
    let e1 = eff(RoutingArg::Ecmp, 1);
    let e4 = eff(RoutingArg::Ecmp, 4);
    let e16 = eff(RoutingArg::Ecmp, 16);
    let ad = eff(RoutingArg::Adaptive, 1);
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
    // The hottest links of ECMP are switch-to-switch ports, saturated; grouped by tier and
    // direction, hottest first, each group counting its ports at the maximum.
    let hot = &e1.hot_links[0];
    assert!(hot.tier >= 1, "{hot:?}");
    assert!((hot.max_utilization - 1.0).abs() < 1e-9);
    assert!(hot.ports_at_max >= 1 && hot.ports_at_max <= hot.loaded_ports);
    assert!(hot.mean_utilization <= hot.max_utilization);
    assert!(e1.hot_links.len() <= 6, "3 tiers × 2 directions");
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
    for key in [
        "tier",
        "up",
        "loaded_ports",
        "ports_at_max",
        "max_utilization",
        "mean_utilization",
        "example",
    ] {
        assert!(hot.get(key).is_some(), "hot_links lacks {key}");
    }
    // AllGather busbw = algbw × (n−1)/n.
    let (alg, bus) = (
        v["algbw_gb_s"].as_f64().unwrap(),
        v["busbw_gb_s"].as_f64().unwrap(),
    );
    assert!((bus - alg * 1023.0 / 1024.0).abs() < 1e-9);
}

/// Defect 4 of issue 30: the headline's time and bandwidths are one algorithm's (the tuner's
/// pick, named), so size ÷ time is the algorithm bandwidth and × 2(n−1)/n the bus bandwidth;
/// the old headline printed the Ring's bandwidths beside the Tree's time (18.18 GB/s against a
/// time that works out to 21.55 GB/s).
#[test]
fn collective_headline_time_and_bandwidths_are_one_choice() {
    let placement = example("fat-tree-k8-cross-pod.json");
    let (code, stdout, stderr) = railyard(&[
        "fabric",
        "collective",
        "--cluster",
        "preset:fat-tree-k8",
        "--placement",
        placement.to_str().expect("utf-8 path"),
        "--collective",
        "allreduce",
    ]);
    assert_eq!(code, 0, "{stderr}");
    // A row's value: the text after the label and its two-space gap (the old headline called
    // the time row `time (NCCL tuner)`, so labels are matched up to their first space too).
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name}  ")) || l.starts_with(&format!("{name} (")))
            .and_then(|l| l.split_once("  "))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_else(|| panic!("no `{name}` row in\n{stdout}"))
    };
    let words = |v: &str| -> (f64, String) {
        let mut w = v.split(' ');
        (
            w.next().unwrap().parse().unwrap(),
            w.next().unwrap_or("").to_owned(),
        )
    };
    let (time, unit) = words(&row("time"));
    let time_s = time
        * match unit.as_str() {
            "ms" => 1e-3,
            "µs" => 1e-6,
            _ => 1.0,
        };
    let algbw = words(&row("algorithm bandwidth")).0;
    let busbw = words(&row("bus bandwidth")).0;
    let ranks = 1024.0;
    let from_time = f64::from(1u32 << 30) / time_s / 1e9;
    assert!(
        (algbw - from_time).abs() < 0.01,
        "{algbw} against {from_time}\n{stdout}"
    );
    let bus = from_time * 2.0 * (ranks - 1.0) / ranks;
    assert!(
        (busbw - bus).abs() < 0.01,
        "{busbw} against {bus}\n{stdout}"
    );
    assert_eq!(row("NCCL's pick at 1 GiB"), "Tree/Simple", "{stdout}");
    // The fabric model's Ring is named as such, not passed off as the pick.
    assert!(words(&row("Ring bus bandwidth")).0 < busbw, "{stdout}");
}

fn ecmp_mean(flows: u32) -> (f64, Option<f64>) {
    let out = ecmp(&EcmpArgs {
        paths: 8,
        flows,
        qps: 1,
        trials: 20_000,
        seed: 1,
        hash: HashArg::Crc32,
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
    // Efficiency is the mean over trials of ideal ÷ max, which exceeds ideal ÷ mean(max)
    // (Jensen) unless every trial has the same maximum.
    let v: serde_json::Value = serde_json::from_str(&crate::ok(&[
        "fabric", "ecmp", "--paths", "8", "--flows", "32", "--trials", "2000", "--output", "json",
    ]))
    .expect("JSON");
    let (eff, ideal, mean) = (
        v["efficiency"].as_f64().expect("efficiency"),
        v["ideal_load"].as_f64().expect("ideal"),
        v["mean_max_load"].as_f64().expect("mean"),
    );
    assert!(eff > ideal / mean && eff < 1.0, "{eff} {ideal} {mean}");
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
    let e = crate::usage_fails(&["fabric", "mtu", "--netdev-mtu", "300"]);
    assert!(e.contains("--netdev-mtu"), "{e}");
}

#[test]
fn bad_input_is_one_line_and_exit_1() {
    let p = example("fat-tree-k8-cross-pod.json");
    let p = p.to_str().expect("utf-8 path");
    let base = |extra: &[&str]| -> Vec<String> {
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
    // Bad flag values are usage errors: exit 2, naming the flag.
    for (extra, needle) in [
        (
            vec!["--collective", "broadcast"],
            "unknown collective `broadcast`",
        ),
        (vec!["--collective", "allreduce", "--qps", "0"], "--qps"),
        (
            vec!["--collective", "allreduce", "--routing", "magic"],
            "--routing",
        ),
        (vec!["--collective", "allreduce", "--hash", "md5"], "--hash"),
        (
            vec!["--collective", "allreduce", "--sizes", "8G:8"],
            "--sizes",
        ),
    ] {
        let v = base(&extra);
        let refs: Vec<&str> = v.iter().map(String::as_str).collect();
        let r = crate::railyard(&refs);
        assert_eq!(r.code, 2, "{extra:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{extra:?}: {}", r.stderr);
    }

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
    let e = crate::usage_fails(&["fabric", "ecmp", "--paths", "0", "--flows", "8"]);
    assert!(e.contains("--paths"), "{e}");
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
    let r = collective_report(&args(
        "preset:oci-h100-16k",
        placement.clone(),
        RoutingArg::Ecmp,
        1,
    ))
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
        RoutingArg::Adaptive,
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
        let expected: serde_json::Value =
            serde_json::from_str(&crate::ok(&by_placement)).expect("JSON");
        let mut v: serde_json::Value = serde_json::from_str(&crate::ok(&by_job)).expect("JSON");
        assert_eq!(v["ranks"], 192);
        assert_eq!(v["nodes"], 24);
        assert!(v["busbw_gb_s"].as_f64().expect("busbw") > 0.0);
        if state.is_some() {
            // The running multi-node jobs run beside it (each on its own hosts, sharing no
            // port at the maximum here, so nobody slows); the new job's own figures are those
            // of the placement alone.
            let names: Vec<&str> = v["running"]
                .as_array()
                .expect("running")
                .iter()
                .map(|j| j["name"].as_str().expect("name"))
                .collect();
            assert_eq!(names, ["edge-0-job", "pod-1-pair"]);
            for key in ["running", "hot_links"] {
                v[key] = expected[key].clone();
            }
        }
        v["command"] = expected["command"].clone(); // the command lines differ, not the figures
        assert_eq!(v, expected, "case {i}");
    }
}

/// Job A runs on two hosts under each leaf of a 4:1 oversubscribed two-leaf fabric; job B gets
/// the other four. Each ring crosses each leaf's single 400G uplink once per direction. Alone,
/// each job is NIC-bound at NCCL's 48 GB/s (384 Gb/s < 400); together they split the uplink,
/// 200 Gb/s = 25 GB/s each, so A slows by 48/25 = 1.92.
#[test]
fn running_jobs_share_an_oversubscribed_uplink() {
    let f = "tests/fixtures/fabric/";
    let (cluster, job, state) = (
        format!("{f}two-leaves-4to1.yaml"),
        format!("{f}job-b.yaml"),
        format!("{f}job-a-state.yaml"),
    );
    let out = crate::ok(&[
        "fabric",
        "collective",
        "--cluster",
        &cluster,
        "--job",
        &job,
        "--state",
        &state,
        "--collective",
        "allreduce",
        "--output",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let close = |key: &serde_json::Value, want: f64| {
        let got = key.as_f64().expect("number");
        assert!((got - want).abs() < 1e-9, "{got} vs {want}: {out}");
    };
    close(&v["busbw_alone_gb_s"], 48.0);
    close(&v["busbw_gb_s"], 25.0);
    close(&v["efficiency"], 25.0 / 48.0);
    let a = &v["running"][0];
    assert_eq!(a["name"], "job-a");
    assert_eq!(a["ranks"], 32);
    close(&a["busbw_before_gb_s"], 48.0);
    close(&a["busbw_after_gb_s"], 25.0);
    close(&a["slowdown"], 48.0 / 25.0);
    // The saturated ports are the uplinks (tier 1), both directions, two ports each.
    let hot = &v["hot_links"][0];
    assert_eq!(
        (hot["tier"].as_u64(), hot["ports_at_max"].as_u64()),
        (Some(1), Some(2))
    );
    close(&hot["max_utilization"], 1.0);
    // Without the state the same hosts give job B its alone figure and no running jobs.
    let text = crate::ok(&[
        "fabric",
        "collective",
        "--cluster",
        &cluster,
        "--job",
        &job,
        "--state",
        &state,
        "--collective",
        "allreduce",
    ]);
    assert!(
        text.contains("job-a     32    48.00 GB/s   25.00 GB/s     1.92×"),
        "{text}"
    );
    // The running job given as a placement file (`place --output json`) instead of a native
    // state: the same figures.
    let dir = crate::temp_dir("fabric-running-placement");
    let placed = dir.join("job-a-placement.json");
    std::fs::write(
        &placed,
        r#"{"job": "job-a", "placed": true, "pods": [{"rank": 0, "node": "n-000", "gpus": 8},
            {"rank": 1, "node": "n-001", "gpus": 8}, {"rank": 2, "node": "n-004", "gpus": 8},
            {"rank": 3, "node": "n-005", "gpus": 8}]}"#,
    )
    .expect("write");
    let by_placement = crate::ok(&[
        "fabric",
        "collective",
        "--cluster",
        &cluster,
        "--job",
        &job,
        "--state",
        placed.to_str().expect("UTF-8 path"),
        "--collective",
        "allreduce",
        "--output",
        "json",
    ]);
    // The same figures; only the recorded command lines differ.
    let figures = |s: &str| {
        let mut v: serde_json::Value = serde_json::from_str(s).expect("JSON");
        v["command"] = serde_json::Value::Null;
        v
    };
    assert_eq!(figures(&by_placement), figures(&out));
}

/// `simulate --nccl` reads the same settings: `--qps 4` and the variable give the same run, and
/// NCCL's settings are recorded in the run's metadata.
#[test]
fn simulate_takes_nccl_settings() {
    let run = |extra: &[&str]| {
        let mut a = vec![
            "simulate",
            "--cluster",
            "preset:philly-512",
            "--trace",
            "tests/fixtures/traces/small.csv",
            "--output",
            "json",
        ];
        a.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(&crate::ok(&a)).expect("JSON");
        v
    };
    let mut by_var = run(&["--nccl", "NCCL_IB_QPS_PER_CONNECTION=4"]);
    let mut by_qps = run(&["--qps", "4"]);
    assert_eq!(by_var["run"]["qps"], 4);
    assert_eq!(
        by_var["run"]["nccl"],
        serde_json::json!(["NCCL_IB_QPS_PER_CONNECTION=4"])
    );
    for v in [&mut by_var, &mut by_qps] {
        v["run"]["nccl"] = serde_json::Value::Null;
        v["run"]["command"] = serde_json::Value::Null;
    }
    assert_eq!(by_var, by_qps);
    assert_eq!(run(&[])["run"]["qps"], 1, "NCCL's default");
}

fn cross_pod(extra: &[&str]) -> crate::Run {
    let p = example("fat-tree-k8-cross-pod.json");
    let mut args = vec![
        "fabric",
        "collective",
        "--cluster",
        "preset:fat-tree-k8",
        "--placement",
        p.to_str().expect("UTF-8 path"),
        "--collective",
        "allreduce",
    ];
    args.extend_from_slice(extra);
    crate::railyard(&args)
}

fn json_of(run: &crate::Run) -> serde_json::Value {
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("JSON")
}

#[test]
fn nccl_settings_qps_shorthand_and_defaults() {
    let default = json_of(&cross_pod(&["--output", "json"]));
    // NCCL's defaults: 1 QP per connection, NCCL's own channel count (2 per 400G NIC port ×
    // NCCL's doublings: 4 on one NIC).
    assert_eq!(default["qps"], 1);
    assert_eq!(default["channels"], 4);
    let by_nccl = cross_pod(&["--nccl", "NCCL_IB_QPS_PER_CONNECTION=4", "--output", "json"]);
    let by_qps = cross_pod(&["--qps", "4", "--output", "json"]);
    let both = cross_pod(&[
        "--qps",
        "4",
        "--nccl",
        "NCCL_IB_QPS_PER_CONNECTION=4",
        "--output",
        "json",
    ]);
    let (a, b, c) = (json_of(&by_nccl), json_of(&by_qps), json_of(&both));
    assert_eq!(a["qps"], 4);
    assert_eq!(a["busbw_gb_s"], b["busbw_gb_s"]);
    assert_eq!(b["busbw_gb_s"], c["busbw_gb_s"]);
    assert_ne!(a["network_flows"], default["network_flows"]);
    let capped = json_of(&cross_pod(&[
        "--nccl",
        "NCCL_MAX_NCHANNELS=2",
        "--output",
        "json",
    ]));
    assert_eq!(capped["channels"], 2);
    let ring = json_of(&cross_pod(&[
        "--nccl",
        "NCCL_ALGO=Ring",
        "--nccl",
        "NCCL_PROTO=Simple",
        "--sizes",
        "8:1M",
        "--output",
        "json",
    ]));
    let picks: std::collections::BTreeSet<String> = ring["sweep"]
        .as_array()
        .expect("sweep")
        .iter()
        .map(|r| format!("{}/{}", r["algorithm"], r["protocol"]))
        .collect();
    assert_eq!(
        picks.into_iter().collect::<Vec<_>>(),
        ["\"Ring\"/\"Simple\""]
    );

    // Every bad setting in one line naming --nccl; exit 2.
    let bad = cross_pod(&[
        "--nccl",
        "NCCL_IB_QPS=4",
        "--nccl",
        "NCCL_MIN_NCHANNELS=0",
        "--nccl",
        "NCCL_ALGO=Ring",
    ]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert_eq!(bad.stderr.lines().count(), 1, "{}", bad.stderr);
    for needle in ["--nccl", "NCCL_IB_QPS", "NCCL_MIN_NCHANNELS"] {
        assert!(bad.stderr.contains(needle), "{needle}: {}", bad.stderr);
    }
    let disagree = cross_pod(&["--qps", "2", "--nccl", "NCCL_IB_QPS_PER_CONNECTION=4"]);
    assert_eq!(disagree.code, 2, "{}", disagree.stderr);
    assert!(
        disagree.stderr.contains("disagrees with --qps 2"),
        "{}",
        disagree.stderr
    );
}

/// `--sizes 8:8G` prints nccl-tests' columns (size, count, type, then the tuner's algorithm and
/// protocol, time, algbw, busbw), one doubling size per row, and the same rows in JSON.
#[test]
fn sizes_sweep_is_laid_out_like_nccl_tests() {
    let text = cross_pod(&["--sizes", "8:8G", "--routing", "adaptive"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let table = &text.stdout[text.stdout.find("#       size").expect("sweep header")..];
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 31, "8 B to 8 GiB doubling");
    let mut size = 8u64;
    for r in &rows {
        assert_eq!(r.len(), 8, "{r:?}");
        assert_eq!(r[0].parse::<u64>().expect("size"), size);
        assert_eq!(r[1].parse::<u64>().expect("count"), size / 4);
        assert_eq!(r[2], "float");
        assert!(["Ring", "Tree"].contains(&r[3]) && ["LL", "LL128", "Simple"].contains(&r[4]));
        size *= 2;
    }
    // Small messages are latency-bound (LL); large ones approach the modelled Ring busbw
    // (adaptive routing, where Ring wins at 8 GiB).
    assert_eq!(rows[0][4], "LL");
    assert_eq!(rows[30][3], "Ring");
    let v = json_of(&cross_pod(&[
        "--sizes",
        "8:8G",
        "--routing",
        "adaptive",
        "--output",
        "json",
    ]));
    let sweep = v["sweep"].as_array().expect("sweep");
    assert_eq!(sweep.len(), 31);
    let last = sweep[30]["busbw_gb_s"].as_f64().expect("busbw");
    let modelled = v["busbw_gb_s"].as_f64().expect("busbw");
    assert!(
        last <= modelled && last > 0.95 * modelled,
        "{last} vs {modelled}"
    );
    assert_eq!(rows[30][7], format!("{last:.2}"));
}

const DGX: &str = "tests/fixtures/fabric/dgx-h100-2n.yaml";
const DGX_PLACEMENT: &str = "tests/fixtures/fabric/dgx-h100-2n-placement.json";
const DGX_LOG: &str = "tests/fixtures/fabric/dgx-h100-2n-ring.log";

fn compare(log: &str, extra: &[&str]) -> crate::Run {
    let mut args = vec![
        "fabric",
        "compare",
        log,
        "--cluster",
        DGX,
        "--placement",
        DGX_PLACEMENT,
        "--collective",
        "allreduce",
        "--nccl",
        "NCCL_ALGO=Ring",
    ];
    args.extend_from_slice(extra);
    crate::railyard(&args)
}

/// The published 2 × 8 H100 Ring figure (376 GB/s) against railyard's 8 × 48 GB/s less NCCL's
/// tuner overheads: the same +1.7% as the calibration table.
#[test]
fn compare_lays_a_measured_run_beside_the_prediction() {
    let v = json_of(&compare(DGX_LOG, &["--output", "json"]));
    assert_eq!(v["ranks"], 16);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["line"], 15);
    assert_eq!(rows[0]["measured_busbw_gb_s"], 376.0);
    let err = rows[0]["relative_error"].as_f64().expect("error");
    assert!((0.0..0.03).contains(&err), "{err}");
    assert_eq!(rows[0]["algorithm"], "Ring");
    let text = compare(DGX_LOG, &[]);
    assert!(
        text.stdout.contains("+1.7%  Ring/Simple"),
        "{}",
        text.stdout
    );

    let dir = crate::temp_dir("fabric-compare");
    let bad = dir.join("short-row.log");
    std::fs::write(&bad, "# header\n8 2 float sum -1 30.1 0.00\n").expect("write");
    let bad = bad.to_str().expect("UTF-8 path");
    crate::assert_one_line_error(
        &compare(bad, &[]),
        &format!("{bad}: line 2: a result row has 7 fields"),
    );
    let empty = dir.join("empty.log");
    std::fs::write(&empty, "# nothing\n").expect("write");
    let empty = empty.to_str().expect("UTF-8 path");
    crate::assert_one_line_error(&compare(empty, &[]), "no nccl-tests result rows found");
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

/// The placements of the README's ECMP experiment on fat-tree-k8 (128 hosts: 8 pods of 4 edge
/// switches of 4 hosts), host indices in rank order: `in-order` (consecutive hosts), `random`
/// (hosts drawn and ordered by a seeded shuffle) and `pod-interleaved` (ring neighbours in
/// different pods: rank i on host (i mod 8)·16 + i / 8).
fn experiment_hosts(order: &str, n: usize) -> Vec<usize> {
    match order {
        "in-order" => (0..n).collect(),
        "random" => {
            // Fisher–Yates with SplitMix64 (seed 13), so the file never changes.
            let mut hosts: Vec<usize> = (0..128).collect();
            let mut state = 13u64;
            for i in (1..hosts.len()).rev() {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let j = (fabric::sport::mix64(state) % (i as u64 + 1)) as usize;
                hosts.swap(i, j);
            }
            hosts.truncate(n);
            hosts
        }
        "pod-interleaved" => (0..n).map(|i| (i % 8) * 16 + i / 8).collect(),
        other => panic!("unknown order {other}"),
    }
}

/// `crates/railyard/examples/placements/fat-tree-k8-ORDER-N.json`, written from
/// [`experiment_hosts`] with `RAILYARD_BLESS=1`, otherwise checked to be what it would write.
fn experiment_placement(order: &str, n: usize) -> PathBuf {
    let hosts = experiment_hosts(order, n);
    let mut distinct = hosts.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), n, "{order}: hosts repeat");
    let file = formats::placement::PlacementFile {
        job: Some(format!("allreduce-{order}-{n}")),
        placed: true,
        reason: None,
        pods: hosts
            .iter()
            .enumerate()
            .map(|(rank, h)| formats::placement::PlacedPod {
                rank: rank as u32,
                node: format!("host-{h:03}"),
                gpus: 8.0,
                gpu_ids: Vec::new(),
                gpu_memory_mib: None,
            })
            .collect(),
        highest_tier: None,
        worst_latency_us: None,
        preempted: Vec::new(),
        warnings: Vec::new(),
        network: None,
    };
    let text = serde_json::to_string_pretty(&file).expect("JSON") + "\n";
    let path = example(&format!("fat-tree-k8-{order}-{n}.json"));
    if std::env::var_os("RAILYARD_BLESS").is_some() {
        std::fs::write(&path, &text).expect("write the placement");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        committed,
        text,
        "{}: rerun with RAILYARD_BLESS=1",
        path.display()
    );
    path
}

/// README "ECMP on a fat-tree, by placement": AllReduce on fat-tree-k8 with NCCL's defaults (1
/// QP per connection, NCCL's 4 channels on one 400G NIC), ECMP with the `mix` hash (8 routing
/// seeds) and adaptive routing, for three placements of 64 and 128 hosts; and ECMP with 4 QPs
/// per connection beside them.
/// `cargo test -p railyard --test it ecmp_by_placement -- --nocapture` prints the table.
#[test]
fn ecmp_by_placement_on_fat_tree_k8() {
    const SEEDS: u64 = 8;
    // NCCL's usable figure for one 400G port (48 GB/s) and the port's line rate (50 GB/s).
    const IDEAL: f64 = 48.0;
    const LINE: f64 = 50.0;
    let mut table = String::from(
        "| placement | hosts | routing | busbw GB/s (mean; min–max over seeds) | efficiency (÷ ideal 48) | ÷ line rate 50 |\n|---|---|---|---|---|---|\n",
    );
    let mut ecmp_mean = std::collections::BTreeMap::new();
    for n in [64, 128] {
        for order in ["in-order", "random", "pod-interleaved"] {
            let placement = experiment_placement(order, n);
            // (routing, QPs per connection): NCCL's default of 1, and 4 beside it for ECMP.
            for (routing, qps) in [
                (RoutingArg::Ecmp, 1),
                (RoutingArg::Adaptive, 1),
                (RoutingArg::Ecmp, 4),
            ] {
                let seeds = if routing == RoutingArg::Ecmp {
                    SEEDS
                } else {
                    1
                };
                let busbw: Vec<f64> = (0..seeds)
                    .map(|seed| {
                        let mut a = args("preset:fat-tree-k8", placement.clone(), routing, qps);
                        if qps == 1 {
                            a.job.nccl.qps = None; // NCCL's default, not a setting
                        }
                        a.job.seed = seed;
                        let r = collective_report(&a).expect("valid");
                        assert!((r.ideal_busbw_gb_s - IDEAL).abs() < 1e-9, "{r:?}");
                        assert_eq!((r.qps, r.channels), (qps, 4));
                        r.busbw_gb_s
                    })
                    .collect();
                let mean = busbw.iter().sum::<f64>() / busbw.len() as f64;
                let (lo, hi) = busbw
                    .iter()
                    .fold((f64::MAX, 0.0f64), |(l, h), &b| (l.min(b), h.max(b)));
                let mut name = format!("{routing:?}").to_ascii_lowercase();
                if qps > 1 {
                    name.push_str(&format!(", NCCL_IB_QPS_PER_CONNECTION={qps}"));
                }
                table.push_str(&format!(
                    "| {order} | {n} | {name} | {mean:.1}; {lo:.1}–{hi:.1} | {:.0}% | {:.0}% |\n",
                    100.0 * mean / IDEAL,
                    100.0 * mean / LINE
                ));
                if routing == RoutingArg::Adaptive {
                    // A full-bisection fat-tree with perfect spreading loses nothing.
                    assert!((mean - IDEAL).abs() < 1e-9, "{order} {n}: {mean}");
                } else {
                    ecmp_mean.insert((order, n, qps), mean / IDEAL);
                }
            }
        }
    }
    println!("{table}");
    for n in [64, 128] {
        let e = |o| ecmp_mean[&(o, n, 1)];
        // Consecutive hosts: only one ring hop leaves each edge switch (host 4j+3 → 4j+4), and
        // its 4 channels carry one NIC's 384 Gb/s, under one 400G uplink even if all 4 flows
        // hash onto it. Nothing is lost whatever the hash.
        assert!((e("in-order") - 1.0).abs() < 1e-9, "{n}: {ecmp_mean:?}");
        // Random and pod-interleaved rings cross the core on most hops with one flow per
        // channel: collisions cost about half.
        for o in ["random", "pod-interleaved"] {
            assert!(e(o) > 0.3 && e(o) < 0.7, "{o} {n}: {}", e(o));
            // Four QPs per connection: four times the flows to hash, fewer collisions.
            assert!(ecmp_mean[&(o, n, 4)] > e(o), "{o} {n}: {ecmp_mean:?}");
        }
    }
}

/// The sweep names the algorithm NCCL's tuner picks per size, NVLS and NVLSTree included:
/// one DGX H100 node runs large AllReduces on NVLink SHARP (~476 GB/s, NVIDIA quotes ~480),
/// two nodes on NVLSTree; `--nccl NCCL_NVLS_ENABLE=0` takes both away.
#[test]
fn sweep_shows_nvls_where_the_tuner_picks_it() {
    let sweep = |placement: &str, extra: &[&str]| {
        let mut args = vec![
            "fabric",
            "collective",
            "--cluster",
            DGX,
            "--placement",
            placement,
            "--collective",
            "allreduce",
            "--sizes",
            "1K:8G",
            "--output",
            "json",
        ];
        args.extend_from_slice(extra);
        let v = json_of(&crate::railyard(&args));
        v["sweep"].as_array().expect("sweep").clone()
    };
    let one = "tests/fixtures/fabric/dgx-h100-1n-placement.json";
    let rows = sweep(one, &[]);
    assert_eq!(
        rows[0]["algorithm"], "Ring",
        "small messages: {:?}",
        rows[0]
    );
    let last = rows.last().expect("8 GiB");
    assert_eq!(
        (last["algorithm"].as_str(), last["protocol"].as_str()),
        (Some("NVLS"), Some("Simple"))
    );
    let busbw = last["busbw_gb_s"].as_f64().expect("busbw");
    assert!((470.0..480.0).contains(&busbw), "{busbw}");
    let two = sweep(DGX_PLACEMENT, &[]);
    assert_eq!(two.last().expect("8 GiB")["algorithm"], "NVLSTree");
    for placement in [one, DGX_PLACEMENT] {
        let off = sweep(placement, &["--nccl", "NCCL_NVLS_ENABLE=0"]);
        assert!(
            off.iter()
                .all(|r| r["algorithm"] == "Ring" || r["algorithm"] == "Tree"),
            "{off:?}"
        );
    }
    // The text table keeps its columns with the longer names.
    let text = crate::railyard(&[
        "fabric",
        "collective",
        "--cluster",
        DGX,
        "--placement",
        one,
        "--collective",
        "allreduce",
        "--sizes",
        "8G:8G",
    ]);
    assert!(
        text.stdout.contains("float          NVLS Simple"),
        "{}",
        text.stdout
    );
}

/// GB200 NVL72 racks are rail-optimized with each rail its own plane up to the top tier. The
/// TP16 job lands on 18 hosts of one rack and 14 of the next: each rack is one NCCL node with
/// its hosts' NIC ports (72 and 56), and every ring channel must leave and enter on one rail
/// (before, `s mod ports` picked rail 0 in one rack and rail 1 in the other: "no up/down
/// path from gb200-0014/rail0 to gb200-0018/rail1").
#[test]
fn rings_between_gb200_racks_of_uneven_host_counts_route() {
    let out = crate::ok(&[
        "fabric",
        "collective",
        "--cluster",
        "preset:oci-gb200-nvl72-4k",
        "--collective",
        "allreduce",
        "--job",
        "tests/fixtures/sched/jobs/kueue-gb200-tp16.yaml",
        "--output",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        (v["ranks"].as_u64(), v["nodes"].as_u64()),
        (Some(128), Some(32))
    );
    let busbw = v["busbw_gb_s"].as_f64().expect("busbw_gb_s");
    let ideal = v["ideal_busbw_gb_s"].as_f64().expect("ideal_busbw_gb_s");
    assert!(busbw > 0.0 && busbw <= ideal * (1.0 + 1e-12), "{out}");
}
