//! `railyard launch`: a 4-node placement rendered in every format and parsed back (ranks,
//! nnodes, rendezvous endpoint), addresses from the NodeList or a file, bad input, and `place`
//! → `launch` end to end on the same NodeList; `--model`/`--layout`: Megatron-LM's flags and
//! each communicator's highest tier in every format, and the layouts refused
//! (`fixtures/launch/layouts.yaml`, hand-derived).

use std::collections::BTreeMap;

use formats::placement::PlacementFile;

use crate::{assert_one_line_error, railyard, scratch};

const NODES: &str = "tests/fixtures/launch/nodes.json";
const PLACEMENT_4: &str = "tests/fixtures/launch/placement-4.json";

fn launch(extra: &[&str]) -> String {
    let mut args = vec!["launch", "--cluster", NODES];
    args.extend_from_slice(extra);
    let run = railyard(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout
}

/// Split a line into shell words (bare words and single-quoted strings, as `shell_quote`
/// writes them).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            ' ' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// One parsed command line: environment assignments and torchrun flags.
#[derive(Debug)]
struct Parsed {
    env: BTreeMap<String, String>,
    flags: BTreeMap<String, String>,
    script: String,
}

fn parse_shell(text: &str) -> Vec<Parsed> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|line| {
            let words = shell_words(line);
            let at = words
                .iter()
                .position(|w| w == "torchrun")
                .expect("torchrun");
            let env = words[..at]
                .iter()
                .map(|w| {
                    let (k, v) = w.split_once('=').expect("VAR=value");
                    (k.to_owned(), v.to_owned())
                })
                .collect();
            let rest = &words[at + 1..];
            let mut flags = BTreeMap::new();
            let mut i = 0;
            while i + 1 < rest.len() && rest[i].starts_with("--") {
                flags.insert(rest[i].clone(), rest[i + 1].clone());
                i += 2;
            }
            Parsed {
                env,
                flags,
                script: rest[i..].join(" "),
            }
        })
        .collect()
}

#[test]
fn four_node_shell_parses_back() {
    let text = launch(&["--placement", PLACEMENT_4]);
    let cmds = parse_shell(&text);
    assert_eq!(cmds.len(), 4);
    let expected_nodes = ["gpu-001", "gpu-002", "gpu-003", "gpu-004"];
    for (i, c) in cmds.iter().enumerate() {
        assert_eq!(c.flags["--node-rank"], i.to_string());
        assert_eq!(c.flags["--nnodes"], "4");
        assert_eq!(c.flags["--nproc-per-node"], "8");
        assert_eq!(c.flags["--rdzv-backend"], "c10d");
        // Always rank 0's InternalIP, never a name.
        assert_eq!(c.flags["--rdzv-endpoint"], "10.0.0.11:29500");
        assert_eq!(c.flags["--rdzv-id"], "llama-4n");
        assert_eq!(c.script, "train.py");
        // BM.GPU.H100.8: OCI's published settings (oci-hpc nccl_run_allreduce_H100.sh): 16
        // RDMA devices without the front-end NICs mlx5_2 and mlx5_11, GID index 3, TC 41.
        let hca = &c.env["NCCL_IB_HCA"];
        assert_eq!(
            hca,
            "=mlx5_0,mlx5_1,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_9,mlx5_10,mlx5_12,mlx5_13,mlx5_14,mlx5_15,mlx5_16,mlx5_17"
        );
        assert_eq!(c.env["NCCL_IB_QPS_PER_CONNECTION"], "16");
        assert_eq!(c.env["NCCL_IB_GID_INDEX"], "3");
        assert_eq!(c.env["NCCL_IB_TC"], "41");
        assert_eq!(c.env["NCCL_IB_TIMEOUT"], "22");
        assert_eq!(c.env["NCCL_SOCKET_IFNAME"], "eth0");
        assert!(!c.env.contains_key("CUDA_VISIBLE_DEVICES"));
        assert!(text.contains(&format!("# rank {i}: run on {}", expected_nodes[i])));
    }
    assert!(text.contains("127.0.1.1"), "the header says why an IP");
    assert!(
        text.contains("# NCCL settings: BM.GPU.H100.8: published settings, oracle-quickstart/oci-hpc samples/gpu/nccl_run_allreduce_H100.sh"),
        "the header says which row it used"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn env_file_carries_torchrun_flags_as_pet_variables() {
    let text = launch(&["--placement", PLACEMENT_4, "--format", "env", "--qps", "8"]);
    let sections: Vec<BTreeMap<&str, &str>> = text
        .split("\n# rank ")
        .skip(1)
        .map(|s| {
            s.lines()
                .skip(1)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(|l| l.split_once('=').expect("KEY=VALUE"))
                .collect()
        })
        .collect();
    assert_eq!(sections.len(), 4);
    for (i, s) in sections.iter().enumerate() {
        assert_eq!(s["PET_NODE_RANK"], i.to_string());
        assert_eq!(s["PET_NNODES"], "4");
        assert_eq!(s["PET_NPROC_PER_NODE"], "8");
        assert_eq!(s["PET_RDZV_ENDPOINT"], "10.0.0.11:29500");
        assert_eq!(s["NCCL_IB_QPS_PER_CONNECTION"], "8");
    }
}

#[test]
fn k8s_patch_parses_as_yaml() {
    use serde::Deserialize;
    let text = launch(&["--placement", PLACEMENT_4, "--format", "k8s-patch"]);
    let docs: Vec<serde_json::Value> = serde_norway::Deserializer::from_str(&text)
        .map(serde_json::Value::deserialize)
        .collect::<Result<_, _>>()
        .expect("YAML");
    let docs: Vec<&serde_json::Value> = docs.iter().filter(|d| !d.is_null()).collect();
    assert_eq!(docs.len(), 4);
    for (i, d) in docs.iter().enumerate() {
        let spec = &d["spec"];
        assert_eq!(spec["hostNetwork"], true);
        assert_eq!(spec["dnsPolicy"], "ClusterFirstWithHostNet");
        assert_eq!(
            spec["nodeSelector"]["kubernetes.io/hostname"],
            format!("gpu-00{}", i + 1)
        );
        let c = &spec["containers"][0];
        assert_eq!(c["name"], "trainer");
        let cmd = crate::strings(&c["command"]);
        assert_eq!(cmd[0], "torchrun");
        let rank_at = cmd.iter().position(|w| *w == "--node-rank").unwrap();
        assert_eq!(cmd[rank_at + 1], i.to_string());
        let ep_at = cmd.iter().position(|w| *w == "--rdzv-endpoint").unwrap();
        assert_eq!(cmd[ep_at + 1], "10.0.0.11:29500");
        assert_eq!(c["env"][0]["name"], "NCCL_IB_HCA");
    }
}

#[test]
fn hostfile_in_rank_order_with_slots() {
    let text = launch(&["--placement", PLACEMENT_4, "--format", "hostfile"]);
    let hosts: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        hosts,
        [
            "10.0.0.11 slots=8",
            "10.0.0.12 slots=8",
            "10.0.1.13 slots=8",
            "10.0.1.14 slots=8"
        ]
    );
}

#[test]
fn pods_sharing_a_node() {
    let p = "tests/fixtures/launch/placement-shared-node.json";
    let cmds = parse_shell(&launch(&["--placement", p]));
    assert_eq!(cmds.len(), 3);
    assert_eq!(cmds[0].env["CUDA_VISIBLE_DEVICES"], "0,1,2,3");
    assert_eq!(cmds[1].env["CUDA_VISIBLE_DEVICES"], "4,5,6,7");
    assert_eq!(cmds[2].env["CUDA_VISIBLE_DEVICES"], "4,5,6,7");
    assert_eq!(cmds[1].flags["--nproc-per-node"], "4");
    assert_eq!(cmds[2].flags["--nnodes"], "3");
    let hostfile = launch(&["--placement", p, "--format", "hostfile"]);
    let hosts: Vec<&str> = hostfile.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(hosts, ["10.0.0.10 slots=8", "10.0.0.11 slots=4"]);
}

#[test]
fn a_pod_patch_leaves_the_devices_to_the_device_plugin() {
    // In a pod limited to `nvidia.com/gpu: 4` the device plugin mounts 4 GPUs and the container
    // sees them as 0..3; CUDA_VISIBLE_DEVICES=4,5,6,7 (the host's indices) would hide them all.
    use serde::Deserialize;
    let p = "tests/fixtures/launch/placement-shared-node.json";
    let text = launch(&["--placement", p, "--format", "k8s-patch"]);
    let docs: Vec<serde_json::Value> = serde_norway::Deserializer::from_str(&text)
        .map(serde_json::Value::deserialize)
        .collect::<Result<_, _>>()
        .expect("YAML");
    let containers: Vec<&serde_json::Value> = docs
        .iter()
        .filter(|d| !d.is_null())
        .map(|d| &d["spec"]["containers"][0])
        .collect();
    assert_eq!(containers.len(), 3);
    for c in containers {
        assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], 4);
        let names: Vec<&str> = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"NCCL_IB_HCA"), "{names:?}");
        assert!(!names.contains(&"CUDA_VISIBLE_DEVICES"), "{names:?}");
    }
}

#[test]
fn addresses_file_overrides_and_fills_in() {
    let p = "tests/fixtures/launch/placement-no-address.json";
    let text = launch(&[
        "--placement",
        p,
        "--addresses",
        "tests/fixtures/launch/addresses.hosts",
        "--port",
        "23456",
        "--hca",
        "mlx5_0,mlx5_3",
    ]);
    let cmds = parse_shell(&text);
    assert_eq!(cmds[1].flags["--rdzv-endpoint"], "192.168.7.14:23456");
    assert_eq!(cmds[1].env["NCCL_IB_HCA"], "=mlx5_0,mlx5_3");
}

#[test]
fn node_without_address_is_named() {
    let run = railyard(&[
        "launch",
        "--cluster",
        NODES,
        "--placement",
        "tests/fixtures/launch/placement-no-address.json",
    ]);
    assert_one_line_error(&run, "no address for node \"gpu-005\"");
}

#[test]
fn preset_cluster_has_no_addresses() {
    let dir = scratch("launch-preset");
    let placement = dir.join("p.json");
    std::fs::write(
        &placement,
        r#"{"placed": true, "pods": [{"rank": 0, "node": "host-000", "gpus": 8}]}"#,
    )
    .unwrap();
    let run = railyard(&[
        "launch",
        "--cluster",
        "preset:fat-tree-k8",
        "--placement",
        placement.to_str().unwrap(),
    ]);
    assert_one_line_error(&run, "preset:fat-tree-k8: no address for node \"host-000\"");
}

#[test]
fn bad_input_is_one_line() {
    let dir = scratch("launch-bad");
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let unknown = write(
        "unknown.json",
        r#"{"placed": true, "pods": [{"rank": 0, "node": "gpu-999", "gpus": 8}]}"#,
    );
    let run = railyard(&["launch", "--cluster", NODES, "--placement", &unknown]);
    assert_one_line_error(&run, "pods[0]: node \"gpu-999\" is not in the cluster");

    let fractional = write(
        "frac.json",
        r#"{"placed": true, "pods": [{"rank": 0, "node": "gpu-001", "gpus": 0.5}]}"#,
    );
    let run = railyard(&["launch", "--cluster", NODES, "--placement", &fractional]);
    assert_one_line_error(
        &run,
        "rank 0: gpus 0.5: torchrun runs one process per whole GPU",
    );

    let loopback = write("hosts", "10.0.0.1 gpu-001\n127.0.1.1 gpu-002\n");
    let run = railyard(&[
        "launch",
        "--cluster",
        NODES,
        "--placement",
        PLACEMENT_4,
        "--addresses",
        &loopback,
    ]);
    assert_one_line_error(&run, "line 2: 127.0.1.1 is not reachable from other nodes");

    let garbage = write("garbage.json", "{ not json");
    let run = railyard(&["launch", "--cluster", NODES, "--placement", &garbage]);
    assert_one_line_error(&run, "garbage.json");

    let run = railyard(&[
        "launch",
        "--cluster",
        NODES,
        "--placement",
        "tests/fixtures/launch/missing.json",
    ]);
    assert_one_line_error(&run, "missing.json");
}

#[test]
fn unsafe_option_values_are_refused() {
    for (flag, value, expected) in [
        (
            "--hca",
            "mlx5_0,,mlx5_1",
            "--hca: expected RDMA device names",
        ),
        (
            "--socket-ifname",
            "eth0 eth1",
            "--socket-ifname: expected interface names",
        ),
        ("--rdzv-id", "job\nX=1", "rendezvous id: expected letters"),
    ] {
        let run = railyard(&[
            "launch",
            "--cluster",
            NODES,
            "--placement",
            PLACEMENT_4,
            flag,
            value,
        ]);
        assert_one_line_error(&run, expected);
    }
}

#[test]
fn one_node_only() {
    let text = launch(&[
        "--placement",
        PLACEMENT_4,
        "--format",
        "env",
        "--node",
        "gpu-003",
    ]);
    assert!(
        text.contains("4 pods, 32 GPUs"),
        "the header describes the whole job"
    );
    assert_eq!(text.matches("PET_NODE_RANK=").count(), 1);
    assert!(text.contains("PET_NODE_RANK=2\n"));
    let run = railyard(&[
        "launch",
        "--cluster",
        NODES,
        "--placement",
        PLACEMENT_4,
        "--node",
        "gpu-000",
    ]);
    assert_one_line_error(
        &run,
        "--node gpu-000: no pod of the placement is on this node",
    );
}

/// The InternalIP of each node of a NodeList, read straight from the JSON.
fn internal_ips(nodelist: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(nodelist).expect("NodeList");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let mut out = BTreeMap::new();
    for n in v["items"].as_array().expect("items") {
        let name = n["metadata"]["name"].as_str().expect("name");
        for a in n["status"]["addresses"].as_array().into_iter().flatten() {
            if a["type"] == "InternalIP" {
                out.insert(
                    name.to_owned(),
                    a["address"].as_str().expect("IP").to_owned(),
                );
            }
        }
    }
    out
}

/// `place --output json` into a file, then `launch --placement` that file on the same NodeList;
/// returns the placement and the shell text.
fn place_then_launch(name: &str, state: Option<&str>) -> (PlacementFile, String) {
    let dir = scratch(name);
    let placement = dir.join("placement.json");
    let mut args = vec![
        "place",
        "--cluster",
        NODES,
        "--job",
        "tests/fixtures/launch/job-4n.yaml",
        "--output",
        "json",
    ];
    if let Some(s) = state {
        args.extend_from_slice(&["--state", s]);
    }
    let run = railyard(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    std::fs::write(&placement, &run.stdout).expect("write the placement");
    let p: PlacementFile = serde_json::from_str(&run.stdout).expect("placement JSON");
    assert!(p.placed, "{:?}", p.reason);
    let text = launch(&[
        "--placement",
        placement.to_str().expect("UTF-8 path"),
        "--format",
        "shell",
    ]);
    (p, text)
}

/// Each command against the placement it came from: rank, node, nnodes, GPUs, and the
/// rendezvous endpoint at the rank-0 node's InternalIP.
fn check_launch_matches_placement(p: &PlacementFile, text: &str) {
    let ips = internal_ips(NODES);
    let cmds = parse_shell(text);
    assert_eq!(cmds.len(), p.pods.len());
    let mut pods = p.pods.clone();
    pods.sort_by_key(|q| q.rank);
    let rank0_ip = &ips[&pods[0].node];
    for (i, (c, pod)) in cmds.iter().zip(&pods).enumerate() {
        assert_eq!(pod.rank as usize, i);
        assert!(
            text.contains(&format!(
                "# rank {i}: run on {} ({})",
                pod.node, ips[&pod.node]
            )),
            "rank {i} should run on {}:\n{text}",
            pod.node
        );
        assert_eq!(c.flags["--node-rank"], i.to_string());
        assert_eq!(c.flags["--nnodes"], pods.len().to_string());
        assert_eq!(c.flags["--nproc-per-node"], format!("{}", pod.gpus));
        assert_eq!(c.flags["--rdzv-endpoint"], format!("{rank0_ip}:29500"));
        assert_eq!(c.flags["--rdzv-id"], p.job.clone().expect("job name"));
    }
}

#[test]
fn place_output_launches_on_the_same_node_list() {
    let (p, text) = place_then_launch("place-launch", None);
    assert_eq!(p.pods.len(), 4);
    check_launch_matches_placement(&p, &text);

    // With running jobs on gpu-000 and gpu-005 the gang moves; rank 0 and the endpoint follow.
    let state = "tests/fixtures/launch/state-busy.yaml";
    let (busy, text) = place_then_launch("place-launch-busy", Some(state));
    let nodes: Vec<&str> = busy.pods.iter().map(|q| q.node.as_str()).collect();
    assert!(
        !nodes.contains(&"gpu-000") && !nodes.contains(&"gpu-005"),
        "{nodes:?}"
    );
    assert_ne!(busy.pods, p.pods);
    check_launch_matches_placement(&busy, &text);
}

#[test]
fn flags_override_the_published_row_and_unknown_shapes_say_they_are_generic() {
    // Explicit flags win over the shape's row.
    let text = launch(&[
        "--placement",
        PLACEMENT_4,
        "--hca-prefix",
        "mlx5_",
        "--qps",
        "2",
        "--socket-ifname",
        "ens3",
    ]);
    let c = &parse_shell(&text)[0];
    assert!(c.env["NCCL_IB_HCA"].starts_with("=mlx5_0,mlx5_1,mlx5_2,"));
    assert_eq!(c.env["NCCL_IB_QPS_PER_CONNECTION"], "2");
    assert_eq!(c.env["NCCL_SOCKET_IFNAME"], "ens3");
    assert_eq!(
        c.env["NCCL_IB_GID_INDEX"], "3",
        "the rest of the row still applies"
    );
    // A preset without instance types: generic settings, and the header says so.
    let dir = crate::temp_dir("launch-generic");
    let placement = dir.join("p.json");
    std::fs::write(
        &placement,
        r#"{"job":"j","placed":true,"pods":[{"rank":0,"node":"host-000","gpus":8,"gpu_ids":[0,1,2,3,4,5,6,7]}]}"#,
    )
    .unwrap();
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "10.1.0.1 host-000\n").unwrap();
    let text = crate::ok(&[
        "launch",
        "--cluster",
        "preset:fat-tree-k8",
        "--placement",
        placement.to_str().unwrap(),
        "--addresses",
        hosts.to_str().unwrap(),
    ]);
    assert!(
        text.contains(
            "# NCCL settings: node \"host-000\" has no node.kubernetes.io/instance-type; generic"
        ),
        "{text}"
    );
    assert!(text.contains("NCCL_IB_QPS_PER_CONNECTION=4"), "{text}");
}

/// `launch --network-aware` writes the QPs `place --network-aware` advised (unless --qps is
/// given), and refuses a placement without advice or with advice it does not know.
#[test]
fn network_aware_launch_takes_the_placements_nccl_advice() {
    let dir = scratch("launch-network-aware");
    let cluster = "tests/fixtures/sched/clos-32-4to1.yaml";
    let run = railyard(&[
        "place",
        "--cluster",
        cluster,
        "--job",
        "tests/fixtures/sched/jobs/six-unconstrained.yaml",
        "--state",
        "tests/fixtures/sched/state/clos-32-cross-block.yaml",
        "--network-aware",
        "--output",
        "json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let placement: PlacementFile = serde_json::from_str(&run.stdout).unwrap();
    let advised = placement.network.as_ref().unwrap().nccl_advice[0]
        .value
        .clone();
    let file = dir.join("placement.json");
    std::fs::write(&file, &run.stdout).unwrap();
    let addresses = dir.join("addresses.hosts");
    let hosts: String = (0..32)
        .map(|i| format!("10.0.0.{} node-{i:03}\n", i + 1))
        .collect();
    std::fs::write(&addresses, hosts).unwrap();
    let (file_s, addr_s) = (file.to_str().unwrap(), addresses.to_str().unwrap());
    let base = [
        "--cluster",
        cluster,
        "--placement",
        file_s,
        "--addresses",
        addr_s,
    ];
    let launch_with = |extra: &[&str]| {
        let mut args = vec!["launch"];
        args.extend_from_slice(&base);
        args.extend_from_slice(extra);
        let run = railyard(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout
    };
    let qps = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| !l.starts_with('#'))
            .flat_map(str::split_whitespace)
            .filter_map(|w| w.strip_prefix("NCCL_IB_QPS_PER_CONNECTION="))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(qps(&launch_with(&[])), vec!["4"; 6]);
    assert_eq!(qps(&launch_with(&["--network-aware"])), vec![advised; 6]);
    assert_eq!(
        qps(&launch_with(&["--network-aware", "--qps", "2"])),
        vec!["2"; 6]
    );
    // Advice it does not know, or a value out of range: one line naming the file and field.
    let bad = run
        .stdout
        .replace("\"NCCL_IB_QPS_PER_CONNECTION\"", "\"LD_PRELOAD\"");
    std::fs::write(&file, bad).unwrap();
    let mut args = vec!["launch"];
    args.extend_from_slice(&base);
    args.push("--network-aware");
    let err = railyard(&args);
    assert_one_line_error(&err, "network.nccl_advice[0]: name");
}

/// One case of `fixtures/launch/layouts.yaml`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LayoutCase {
    name: String,
    placement: String,
    model: String,
    layout: String,
    /// Megatron-LM's flags, as one line (launched cases).
    #[serde(default)]
    args: Option<String>,
    /// Per communicator kind, the highest tier (launched cases).
    #[serde(default)]
    tiers: BTreeMap<String, String>,
    /// A part of the one-line error (refused cases).
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LayoutCases {
    ok: Vec<LayoutCase>,
    refused: Vec<LayoutCase>,
}

fn layout_cases() -> LayoutCases {
    let text = std::fs::read_to_string("tests/fixtures/launch/layouts.yaml").unwrap();
    serde_norway::from_str(&text).expect("layouts.yaml")
}

fn launch_layout(case: &LayoutCase, format: &str) -> crate::Run {
    let placement = format!("tests/fixtures/launch/{}", case.placement);
    railyard(&[
        "launch",
        "--cluster",
        NODES,
        "--placement",
        &placement,
        "--model",
        &case.model,
        "--layout",
        &case.layout,
        "--format",
        format,
    ])
}

/// The header's `#   KIND: TIER` lines after "Highest tier each communicator crosses:".
fn header_tiers(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .skip_while(|l| !l.contains("Highest tier each communicator crosses:"))
        .skip(1)
        .map_while(|l| l.strip_prefix("#   "))
        .map(|l| {
            let (k, t) = l.split_once(": ").expect("KIND: TIER");
            (k.to_owned(), t.to_owned())
        })
        .collect()
}

#[test]
fn layouts_write_megatron_flags_and_tiers() {
    use serde::Deserialize;
    let cases = layout_cases();
    assert!(cases.ok.len() >= 5);
    for case in &cases.ok {
        let name = &case.name;
        let args = case.args.as_deref().expect("args");
        let words: Vec<&str> = args.split(' ').collect();
        // Shell: the variable in every line's environment, the flags after the script.
        let run = launch_layout(case, "shell");
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        assert_eq!(header_tiers(&run.stdout), case.tiers, "{name}: tiers");
        let lines: Vec<&str> = run
            .stdout
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        assert_eq!(lines.len(), 2, "{name}");
        for line in lines {
            let w = shell_words(line);
            let var = w
                .iter()
                .find_map(|x| x.strip_prefix("MEGATRON_PARALLEL_ARGS="))
                .unwrap_or_else(|| panic!("{name}: no MEGATRON_PARALLEL_ARGS in {line}"));
            assert_eq!(var, args, "{name}");
            let script = w.iter().position(|x| x == "train.py").expect("script");
            assert_eq!(w[script + 1..], words[..], "{name}: flags after the script");
        }
        // Env file: the variable in every pod's section, unquoted like its other values.
        let run = launch_layout(case, "env");
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let line = format!("MEGATRON_PARALLEL_ARGS={args}");
        assert_eq!(
            run.stdout.lines().filter(|l| *l == line).count(),
            2,
            "{name}"
        );
        assert!(run
            .stdout
            .contains("torchrun train.py $MEGATRON_PARALLEL_ARGS"));
        // Kubernetes patch: the flags at the end of the command, the variable in the env.
        let run = launch_layout(case, "k8s-patch");
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let docs: Vec<serde_json::Value> = serde_norway::Deserializer::from_str(&run.stdout)
            .map(serde_json::Value::deserialize)
            .collect::<Result<_, _>>()
            .expect("YAML");
        let docs: Vec<&serde_json::Value> = docs.iter().filter(|d| !d.is_null()).collect();
        assert_eq!(docs.len(), 2, "{name}");
        for d in docs {
            let c = &d["spec"]["containers"][0];
            let cmd = crate::strings(&c["command"]);
            assert_eq!(cmd[cmd.len() - words.len()..], words[..], "{name}");
            let env = c["env"].as_array().unwrap();
            let var = env
                .iter()
                .find(|e| e["name"] == "MEGATRON_PARALLEL_ARGS")
                .unwrap_or_else(|| panic!("{name}: no MEGATRON_PARALLEL_ARGS"));
            assert_eq!(var["value"], args, "{name}");
        }
    }
}

/// tp = 4, dp = 2, pp = 2 on two nodes, the whole script.
#[test]
fn layout_shell_script() {
    let cases = layout_cases();
    let case = cases.ok.iter().find(|c| c.name == "tp4-dp2-pp2").unwrap();
    let run = launch_layout(case, "shell");
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn bad_layouts_are_refused() {
    let cases = layout_cases();
    assert!(cases.refused.len() >= 4);
    for case in &cases.refused {
        for format in ["shell", "env", "k8s-patch", "hostfile"] {
            let run = launch_layout(case, format);
            assert!(run.stdout.is_empty(), "{}: nothing written", case.name);
            assert_one_line_error(&run, case.error.as_deref().expect("error"));
        }
    }
}

/// `--model` and `--layout` come together, as in `place`.
#[test]
fn model_and_layout_come_together() {
    let run = railyard(&[
        "launch",
        "--cluster",
        NODES,
        "--placement",
        PLACEMENT_4,
        "--model",
        "llama3-8b",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--layout"), "{}", run.stderr);
}
