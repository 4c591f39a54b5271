//! `topo show` / `topo export`: presets, NodeList import, export → import round trips, bad input.

use std::collections::BTreeMap;

use formats::slurm;
use railyard::cluster_arg::{load_cluster_quiet, ClusterArgs};
use serde_json::Value;

use crate::{fails, ok, railyard, temp_dir};

const OCI_NODES: &str = "tests/fixtures/nodes/oci-nodes.json";
const KIND_NODES: &str = "tests/fixtures/nodes/kind-workers.yaml";
const KUEUE_TOPOLOGY: &str = "tests/fixtures/nodes/kueue-topology.yaml";
const KAI_TOPOLOGY: &str = "tests/fixtures/nodes/kai-topology.yaml";

fn show_json(args: &[&str]) -> Value {
    let mut all = vec!["topo", "show", "--output", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(&all)).expect("valid JSON")
}

fn level_domains(v: &Value) -> Vec<(String, u64)> {
    v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap().to_owned(),
                l["domains"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Node → (level label → value): the complete level/domain structure of a cluster.
fn labels_of(args: &[&str]) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut all = vec![
        "topo",
        "export",
        "--format",
        "node-labels",
        "--output",
        "json",
    ];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(&all)).expect("valid JSON")
}

#[test]
fn oci_131k_preset_reports_131072_gpus() {
    let v = show_json(&["--cluster", "preset:oci-h100-131k"]);
    assert_eq!(v["gpus"], 131_072);
    assert_eq!(v["nodes"], 16_384);
    let tiers = v["tiers"].as_array().unwrap();
    let gpus: Vec<u64> = tiers
        .iter()
        .map(|t| t["gpus_max"].as_u64().unwrap())
        .collect();
    let lat: Vec<f64> = tiers
        .iter()
        .map(|t| t["latency_us"].as_f64().unwrap())
        .collect();
    assert_eq!(gpus, vec![256, 2_048, 131_072]);
    assert_eq!(lat, vec![2.0, 5.0, 8.0]);
    assert_eq!(
        v["levels"][0]["name"],
        "oci.oraclecloud.com/rdma.hpc_island_id"
    );
}

#[test]
fn every_preset_builds_and_prints() {
    for p in [
        "fat-tree-k8",
        "oci-h100-16k",
        "oci-h100-131k",
        "oci-gb200-nvl72-4k",
    ] {
        let text = ok(&["topo", "show", "--cluster", &format!("preset:{p}")]);
        assert!(text.starts_with(&format!("cluster {p}:")), "{text}");
        assert!(text.contains("switch tiers (leaf first)"));
    }
    let v = show_json(&["--cluster", "preset:fat-tree-k8"]);
    assert_eq!(
        (v["nodes"].as_u64(), v["switches"].as_u64()),
        (Some(128), Some(80))
    );
}

#[test]
fn oci_nodelist_is_detected_and_domains_are_unique_under_their_parent() {
    let r = railyard(&["topo", "show", "--output", "json", "--cluster", OCI_NODES]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("detected OCI rdma.* labels"),
        "{}",
        r.stderr
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    // lb-a and lb-b appear under both network blocks: four local blocks, not two.
    assert_eq!(
        level_domains(&v),
        vec![
            ("oci.oraclecloud.com/rdma.hpc_island_id".to_owned(), 1),
            ("oci.oraclecloud.com/rdma.network_block_id".to_owned(), 2),
            ("oci.oraclecloud.com/rdma.local_block_id".to_owned(), 4),
            ("kubernetes.io/hostname".to_owned(), 8),
        ]
    );
    assert_eq!(v["gpus"], 64);
    // One NotReady, one cordoned, one with a NoSchedule taint: kept but marked.
    assert_eq!(v["unavailable_nodes"], 3);
    // BM.GPU.H100.8 from the instance-type label: 16 × 200G = 3.2 Tb/s per node.
    assert_eq!(v["injection_gbps"].as_f64(), Some(8.0 * 3200.0));
}

#[test]
fn label_preset_and_levels_flag_give_the_same_cluster() {
    let by_preset = labels_of(&["--cluster", OCI_NODES, "--label-preset", "oci"]);
    let by_levels = labels_of(&[
        "--cluster",
        OCI_NODES,
        "--levels",
        "oci.oraclecloud.com/rdma.hpc_island_id,oci.oraclecloud.com/rdma.network_block_id,oci.oraclecloud.com/rdma.local_block_id,kubernetes.io/hostname",
    ]);
    assert_eq!(by_preset, by_levels);
    assert_eq!(by_preset.len(), 8);
}

#[test]
fn kind_nodes_with_kueue_or_kai_topology() {
    let kueue = show_json(&["--cluster", KIND_NODES, "--topology", KUEUE_TOPOLOGY]);
    let kai = show_json(&["--cluster", KIND_NODES, "--topology", KAI_TOPOLOGY]);
    let expected = vec![
        ("cloud.provider.com/topology-block".to_owned(), 2),
        ("cloud.provider.com/topology-rack".to_owned(), 4),
        ("kubernetes.io/hostname".to_owned(), 8),
    ];
    assert_eq!(level_domains(&kueue), expected);
    assert_eq!(level_domains(&kai), expected);
    // Two blocks at the top: an implicit switch tier joins them.
    let tiers = kueue["tiers"].as_array().unwrap();
    assert_eq!(tiers.len(), 3);
    assert_eq!(tiers[2]["level"], Value::Null);
}

/// Each switch tier as (the level it serves, groups, most GPUs per group), and which levels are
/// NVLink levels (no switch tier): the switch view an import must give back.
fn switch_view(v: &Value) -> (Vec<(Value, Value, Value)>, Vec<String>) {
    let tiers = v["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["level"].clone(),
                t["groups"].clone(),
                t["gpus_max"].clone(),
            )
        })
        .collect();
    let nvlink = v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["nvlink"] == true)
        .map(|l| l["name"].as_str().unwrap().to_owned())
        .collect();
    (tiers, nvlink)
}

/// Export a cluster's NodeList and Topology, import them back, and compare levels, every
/// node's domain path and the switch tiers.
fn round_trip(cluster: &[&str], flavor: &str, dir: &str) {
    let dir = temp_dir(dir);
    let nodes = dir.join("nodes.yaml");
    let topo = dir.join("topology.yaml");
    let (nodes_s, topo_s) = (nodes.to_str().unwrap(), topo.to_str().unwrap());
    let mut a = vec!["topo", "export", "--format", "nodelist", "--out", nodes_s];
    a.extend_from_slice(cluster);
    ok(&a);
    let mut a = vec!["topo", "export", "--format", flavor, "--out", topo_s];
    a.extend_from_slice(cluster);
    ok(&a);
    let exported = std::fs::read_to_string(&topo).unwrap();
    let api = if flavor == "kueue" {
        "kueue.x-k8s.io/"
    } else {
        "kai.scheduler/"
    };
    assert!(exported.contains(api), "{exported}");

    let before_show = show_json(cluster);
    let after_show = show_json(&["--cluster", nodes_s, "--topology", topo_s]);
    assert_eq!(level_domains(&before_show), level_domains(&after_show));
    assert_eq!(switch_view(&before_show), switch_view(&after_show));
    assert_eq!(
        labels_of(cluster),
        labels_of(&["--cluster", nodes_s, "--topology", topo_s])
    );
    assert_eq!(before_show["gpus"], after_show["gpus"]);
}

#[test]
fn export_then_import_round_trips() {
    round_trip(&["--cluster", "preset:fat-tree-k8"], "kueue", "rt-ft");
    round_trip(
        &["--cluster", "preset:oci-gb200-nvl72-4k"],
        "kai",
        "rt-gb200",
    );
    round_trip(
        &["--cluster", "preset:oci-gb200-nvl72-4k"],
        "kueue",
        "rt-gb200-kueue",
    );
    round_trip(&["--cluster", OCI_NODES], "kueue", "rt-oci");
    round_trip(
        &["--cluster", KIND_NODES, "--topology", KUEUE_TOPOLOGY],
        "kai",
        "rt-kind",
    );
}

/// GB200 nodes as GPU feature discovery labels them: `nvidia.com/gpu.clique` is
/// `<ClusterUUID>.<CliqueID>` (NVIDIA/k8s-device-plugin, internal/lm/fabric.go), and Topograph's
/// `accelerator.topograph.run/domain` names the same racks otherwise. With the clique label as a
/// level, the import reads the NVLink domains from it: the level is an NVLink level, with the
/// preset's switch tiers, not a switch tier of its own.
#[test]
fn an_imported_clique_level_is_an_nvlink_level() {
    let preset = ["--cluster", "preset:oci-gb200-nvl72-4k"];
    let mut list: Value = serde_json::from_str(&ok(&[
        &["topo", "export", "--format", "nodelist", "--output", "json"][..],
        &preset[..],
    ]
    .concat()))
    .unwrap();
    for n in list["items"].as_array_mut().unwrap() {
        let labels = n["metadata"]["labels"].as_object_mut().unwrap();
        let rack = labels["nvidia.com/gpu.clique"].as_str().unwrap();
        let clique = format!(
            "4c1d2b7e-6f0a-4e8b-9d3c-2a5f1e0b7c94.{}",
            rack.trim_start_matches("nvl-")
        );
        labels.insert("nvidia.com/gpu.clique".to_owned(), Value::String(clique));
    }
    let dir = temp_dir("clique-level");
    let nodes = dir.join("nodes.json");
    std::fs::write(&nodes, list.to_string()).unwrap();
    let imported = show_json(&[
        "--cluster",
        nodes.to_str().unwrap(),
        "--levels",
        "oci.oraclecloud.com/rdma.hpc_island_id,oci.oraclecloud.com/rdma.network_block_id,oci.oraclecloud.com/rdma.local_block_id,nvidia.com/gpu.clique,kubernetes.io/hostname",
    ]);
    let original = show_json(&preset);
    assert_eq!(level_domains(&imported), level_domains(&original));
    assert_eq!(switch_view(&imported), switch_view(&original));
    assert_eq!(
        switch_view(&imported).1,
        vec!["nvidia.com/gpu.clique".to_owned()]
    );
}

#[test]
fn node_label_commands_set_every_level_but_the_hostname() {
    let text = ok(&[
        "topo",
        "export",
        "--cluster",
        KIND_NODES,
        "--topology",
        KAI_TOPOLOGY,
        "--format",
        "node-labels",
    ]);
    let first = text.lines().next().unwrap();
    assert_eq!(
        first,
        "kubectl label node kind-worker --overwrite cloud.provider.com/topology-block=b1 cloud.provider.com/topology-rack=r1"
    );
    assert_eq!(text.lines().count(), 8);
}

fn load(cluster: &str) -> topology::Cluster {
    load_cluster_quiet(&ClusterArgs {
        cluster: cluster.to_owned(),
        ..ClusterArgs::default()
    })
    .unwrap()
    .cluster
}

#[test]
fn slurm_tree_matches_the_domain_tree() {
    for preset in ["preset:fat-tree-k8", "preset:oci-h100-16k"] {
        let c = load(preset);
        let text = slurm::export_tree(&c);
        let switches = slurm::parse_tree(&text).unwrap();
        let lowest = c.levels.len() - 2; // the level above the hosts
        let leaf_switches: Vec<_> = switches.iter().filter(|s| !s.nodes.is_empty()).collect();
        assert_eq!(leaf_switches.len(), c.levels[lowest].domains.len());
        for (sw, &d) in leaf_switches.iter().zip(&c.levels[lowest].domains) {
            let names: Vec<String> = c
                .domain(d)
                .nodes
                .iter()
                .map(|&n| c.node(n).name.clone())
                .collect();
            assert_eq!(sw.nodes, names, "{}", sw.name);
        }
        // Every switch but the top one is the child of exactly one other switch.
        let mut parents: BTreeMap<&str, usize> = BTreeMap::new();
        for s in &switches {
            for k in &s.switches {
                *parents.entry(k.as_str()).or_default() += 1;
            }
        }
        let roots: Vec<_> = switches
            .iter()
            .filter(|s| !parents.contains_key(s.name.as_str()))
            .collect();
        assert_eq!(roots.len(), 1, "{preset}");
        assert!(parents.values().all(|&n| n == 1));
        assert_eq!(switches.len(), c.domains.len() - c.nodes.len());
    }
}

#[test]
fn slurm_block_lists_leaf_blocks_and_sizes() {
    let text = ok(&[
        "topo",
        "export",
        "--cluster",
        "preset:oci-h100-16k",
        "--format",
        "slurm-block",
    ]);
    let blocks = text.lines().filter(|l| l.starts_with("BlockName=")).count();
    assert_eq!(blocks, 64);
    assert!(
        text.contains("BlockName=island-0_nb-0_lb-0 Nodes=gpu-[0000-0031]\n"),
        "{text}"
    );
    assert!(text.ends_with("BlockSizes=32,256,2048\n"), "{text}");
}

#[test]
fn bad_input_gives_one_line_naming_file_and_place() {
    let cases: &[(&str, &[&str])] = &[
        (
            "missing_level_label",
            &[
                "--cluster",
                "tests/fixtures/bad/missing-level-label.yaml",
                "--topology",
                KUEUE_TOPOLOGY,
            ],
        ),
        (
            "gpu_not_a_number",
            &["--cluster", "tests/fixtures/bad/gpu-not-a-number.json"],
        ),
        (
            "unknown_spec_field",
            &["--cluster", "tests/fixtures/bad/unknown-spec-field.yaml"],
        ),
        (
            "duplicate_node",
            &["--cluster", "tests/fixtures/bad/duplicate-node.yaml"],
        ),
        (
            "tier_does_not_divide",
            &["--cluster", "tests/fixtures/bad/tier-does-not-divide.yaml"],
        ),
        (
            "truncated_spec",
            &["--cluster", "tests/fixtures/bad/truncated-spec.yaml"],
        ),
        (
            "topology_without_levels",
            &[
                "--cluster",
                KIND_NODES,
                "--topology",
                "tests/fixtures/bad/topology-without-levels.yaml",
            ],
        ),
        (
            "node_without_name",
            &[
                "--cluster",
                "tests/fixtures/bad/node-without-name.yaml",
                "--label-preset",
                "oci",
            ],
        ),
        (
            "too_many_gpus",
            &["--cluster", "tests/fixtures/bad/too-many-gpus.yaml"],
        ),
        (
            "not_a_node",
            &["--cluster", "tests/fixtures/bad/pod-list.yaml"],
        ),
        (
            "missing_file",
            &["--cluster", "tests/fixtures/bad/no-such-file.yaml"],
        ),
        ("no_levels", &["--cluster", KIND_NODES]),
        (
            "flags_on_a_preset",
            &["--cluster", "preset:fat-tree-k8", "--levels", "a,b"],
        ),
    ];
    let mut all = String::new();
    for (name, args) in cases {
        let mut a = vec!["topo", "show"];
        a.extend_from_slice(args);
        let line = fails(&a);
        all.push_str(&format!("{name}: {line}\n"));
    }
    insta::assert_snapshot!(all);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(railyard(&["topo", "show"]).code, 2);
    assert_eq!(
        railyard(&[
            "topo",
            "export",
            "--cluster",
            "preset:fat-tree-k8",
            "--format",
            "xml"
        ])
        .code,
        2
    );
}

#[test]
fn oci_presets_equal_the_example_specs_benchmarks_use() {
    for (name, nodes) in [("oci-h100-16k", 2_048), ("oci-h100-131k", 16_384)] {
        let text = formats::cluster::PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1;
        let spec: topology::ClusterSpec = formats::input::parse_typed(name, text).unwrap();
        assert_eq!(spec, topology::examples::oci_h100(nodes), "{name}");
    }
}

#[test]
fn topograph_labels_are_detected_without_flags() {
    let dir = temp_dir("topograph-detect");
    let nodes = dir.join("nodes.yaml");
    let nodes_s = nodes.to_str().unwrap();
    ok(&[
        "topo",
        "export",
        "--cluster",
        "preset:fat-tree-k8",
        "--format",
        "nodelist",
        "--out",
        nodes_s,
    ]);
    let r = railyard(&["topo", "show", "--output", "json", "--cluster", nodes_s]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("detected Topograph tier-N labels"),
        "{}",
        r.stderr
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        level_domains(&v),
        level_domains(&show_json(&["--cluster", "preset:fat-tree-k8"]))
    );
    assert_eq!(
        labels_of(&["--cluster", nodes_s]),
        labels_of(&["--cluster", "preset:fat-tree-k8"])
    );
}
