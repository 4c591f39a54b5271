//! Inputs beyond railyard's bounds are refused with one line naming the file, the place and
//! the limit, before anything of their size is allocated. Each test makes its big input cheaply
//! (a field set to limit + 1, or many tiny items) and runs in well under a few seconds; the
//! bounds are listed in the README ("Limits").

use std::fmt::Write as _;

use formats::{hostlist, jobs, queues, trace};

use crate::{fails, temp_dir};

/// A Clos spec with `nodes` nodes in one tier, `gpus` GPUs and `rails` rails per node.
fn spec(nodes: u64, gpus: u32, rails: u32, extra_node: &str, tiers: &str) -> String {
    format!(
        "name: big\nnode: {{gpus: {gpus}, gpu_memory_gib: 80, rails: {rails}, ports_per_rail: 1, port_gbps: 400, nvlink_gbps: 3600{extra_node}}}\nfabric:\n  clos:\n    nodes: {nodes}\n    rail_optimized: false\n    host_label: kubernetes.io/hostname\n    tiers:\n{tiers}"
    )
}

fn one_tier(nodes: u64) -> String {
    format!(
        "      - {{label: block, value_prefix: b-, nodes_per_domain: {nodes}, latency_us: 2.0}}\n"
    )
}

/// Write `text` to a fresh file and run `topo show --cluster` on it; returns the error line.
fn topo_show_fails(test: &str, name: &str, text: &str, extra: &[&str]) -> String {
    let path = temp_dir(test).join(name);
    std::fs::write(&path, text).unwrap();
    let mut args = vec!["topo", "show", "--cluster", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    fails(&args)
}

#[test]
fn spec_with_more_than_a_million_nodes_is_refused() {
    let e = topo_show_fails(
        "limit-spec-nodes",
        "big.yaml",
        &spec(1_000_001, 8, 1, "", &one_tier(1_000_001)),
        &[],
    );
    assert!(e.contains("big.yaml"), "{e}");
    assert!(
        e.contains("fabric.clos.nodes: expected 1..=1000000 nodes, got 1000001"),
        "{e}"
    );
}

#[test]
fn fat_tree_radix_beyond_a_million_hosts_is_refused() {
    // k = 160 would be 160³/4 = 1,024,000 hosts.
    let text = "name: ft\nnode: {gpus: 8, gpu_memory_gib: 80, rails: 1, ports_per_rail: 1, port_gbps: 400, nvlink_gbps: 0}\nfabric:\n  fat_tree:\n    k: 160\n    tier_labels: [a, b, c]\n    latency_us: [1, 2, 3]\n";
    let e = topo_show_fails("limit-fat-tree-k", "ft.yaml", text, &[]);
    assert!(
        e.contains("fabric.fat_tree.k: expected an even radix in 2..=158"),
        "{e}"
    );
}

#[test]
fn spec_with_more_than_1024_gpus_per_node_is_refused() {
    let e = topo_show_fails(
        "limit-spec-gpus",
        "gpus.yaml",
        &spec(4, 1025, 1, "", &one_tier(4)),
        &[],
    );
    assert!(e.contains("node.gpus: expected 1..=1024, got 1025"), "{e}");
}

#[test]
fn spec_with_absurd_gpu_memory_is_refused() {
    // 2²² GiB × 1024 MiB/GiB overflowed a u32 where MiB figures are computed.
    let text =
        spec(4, 8, 1, "", &one_tier(4)).replace("gpu_memory_gib: 80", "gpu_memory_gib: 4194304");
    let e = topo_show_fails("limit-spec-memory", "mem.yaml", &text, &[]);
    assert!(
        e.contains("node.gpu_memory_gib: expected 1..=65536 GiB, got 4194304"),
        "{e}"
    );
}

#[test]
fn spec_making_more_than_a_million_switches_is_refused_before_building() {
    // 4,096 one-node leaf blocks × 512 leaf switches = 2,097,152 switches.
    let tiers = "      - {label: leaf, value_prefix: l-, nodes_per_domain: 1, latency_us: 2.0, switches_per_domain: 512}\n      - {label: top, value_prefix: t-, nodes_per_domain: 4096, latency_us: 5.0, switches_per_domain: 512}\n";
    let e = topo_show_fails(
        "limit-spec-switches",
        "switches.yaml",
        &spec(4096, 8, 1, "", tiers),
        &[],
    );
    assert!(
        e.contains("switches: the tiers make 2097664 switches, more than the limit of 1000000"),
        "{e}"
    );
}

#[test]
fn spec_making_more_than_16_million_links_is_refused_before_building() {
    // 300,000 nodes × 64 rails = 19,200,000 NIC links; refused before 300,000 records exist.
    let e = topo_show_fails(
        "limit-spec-links",
        "links.yaml",
        &spec(300_000, 8, 64, "", &one_tier(300_000)),
        &[],
    );
    assert!(e.contains("more than the limit of 16000000"), "{e}");
}

#[test]
fn nodelist_with_more_than_a_million_items_is_refused() {
    // 1,000,001 empty items (3 MB of JSON): refused on the count, before any node record.
    let mut text = String::with_capacity(3_100_000);
    text.push_str(r#"{"apiVersion":"v1","kind":"NodeList","items":["#);
    for i in 0..1_000_001 {
        text.push_str(if i == 0 { "{}" } else { ",{}" });
    }
    text.push_str("]}");
    let e = topo_show_fails("limit-nodelist-items", "nodes.json", &text, &[]);
    assert!(e.contains("nodes.json"), "{e}");
    assert!(
        e.contains("1000001 nodes is more than the limit of 1000000"),
        "{e}"
    );
}

#[test]
fn nodelist_node_with_more_than_1024_gpus_is_refused() {
    let text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: {rack: r1}\nstatus:\n  allocatable: {nvidia.com/gpu: \"1025\"}\n";
    let e = topo_show_fails(
        "limit-nodelist-gpus",
        "nodes.yaml",
        text,
        &["--levels", "rack"],
    );
    assert!(
        e.contains("node \"n1\": status.allocatable[\"nvidia.com/gpu\"]: 1025 GPUs is more than the limit of 1024"),
        "{e}"
    );
}

#[test]
fn overlay_with_absurd_rails_is_refused_before_building() {
    let dir = temp_dir("limit-overlay-rails");
    let overlay = dir.join("overlay.yaml");
    std::fs::write(&overlay, "rails: 4000000000\n").unwrap();
    let text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: {rack: r1}\nstatus:\n  allocatable: {nvidia.com/gpu: 8}\n";
    let nodes = dir.join("nodes.yaml");
    std::fs::write(&nodes, text).unwrap();
    let e = fails(&[
        "topo",
        "show",
        "--cluster",
        nodes.to_str().unwrap(),
        "--levels",
        "rack",
        "--overlay",
        overlay.to_str().unwrap(),
    ]);
    // Blamed on the overlay, once (not on the NodeList, node by node).
    assert!(
        e.starts_with(&format!(
            "error: {}: rails: expected 1..=64, got 4000000000",
            overlay.display()
        )),
        "{e}"
    );
}

#[test]
fn input_file_above_512_mib_is_refused_before_reading() {
    // A sparse file: costs nothing to make, and railyard refuses it on its size alone.
    let path = temp_dir("limit-file-size").join("huge.yaml");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(formats::input::MAX_INPUT_BYTES + 1).unwrap();
    let e = fails(&["topo", "show", "--cluster", path.to_str().unwrap()]);
    assert!(
        e.contains("file is 536870913 bytes, more than the limit of 536870912"),
        "{e}"
    );
}

#[test]
fn trace_with_more_than_ten_million_rows_is_refused_before_parsing() {
    let mut text = String::from("name,submit_s,duration_s,gpus\n");
    text.push_str(&"j,0,1,1\n".repeat(trace::MAX_ROWS + 1));
    let e = trace::parse_trace("big.csv", &text, trace::TraceFormat::Auto, true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "big.csv: 10000001 rows is more than the limit of 10000000; split the trace"
    );
}

#[test]
fn hostlist_beyond_a_million_names_is_refused_before_expanding() {
    let e = hostlist::expand("gpu-[0-1000000]").unwrap_err();
    assert!(e.contains("too many names (at most 1000000 names"), "{e}");
}

#[test]
fn native_job_with_more_than_a_million_pods_is_refused() {
    let text = "name: huge\npod_sets:\n  - {count: 1000001, gpus: 1}\n";
    let e = jobs::read_job("job.yaml", text).unwrap_err().to_string();
    assert_eq!(
        e,
        "job.yaml: pod_sets[0].count: expected 1..=1000000 pods, got 1000001"
    );
    let text =
        "name: huge\npod_sets:\n  - {count: 600000, gpus: 1}\n  - {count: 600000, gpus: 1}\n";
    let e = jobs::read_job("job.yaml", text).unwrap_err().to_string();
    assert!(
        e.contains("pod_sets[1].count: the pod sets ask for 1200000 pods"),
        "{e}"
    );
}

#[test]
fn kueue_and_kai_jobs_with_more_than_a_million_pods_are_refused() {
    let kueue = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {kueue.x-k8s.io/queue-name: q}\nspec:\n  parallelism: 1000001\n";
    let e = jobs::read_job("kueue.yaml", kueue).unwrap_err().to_string();
    assert!(
        e.contains("spec.parallelism: expected 1..=1000000, got 1000001"),
        "{e}"
    );
    let kai = "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: g}\nspec: {minMember: 1000001, queue: q}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n";
    let e = jobs::read_job("kai.yaml", kai).unwrap_err().to_string();
    assert!(
        e.contains("spec.minMember: expected 1..=1000000 pods"),
        "{e}"
    );
}

#[test]
fn more_than_ten_thousand_queues_are_refused() {
    let mut text = String::new();
    for i in 0..=queues::MAX_QUEUES {
        writeln!(
            text,
            "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {{name: q{i}}}\nspec: {{clusterQueue: cq}}"
        )
        .unwrap();
    }
    let read = queues::read(&[("queues.yaml".to_owned(), text)]);
    let problems: Vec<String> = read.problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        ["queues.yaml: the queue files declare more than the limit of 10000 queues"]
    );
    assert!(read.queues.is_empty());
}

#[test]
fn pods_asking_for_more_than_1024_gpus_are_refused() {
    let native = "name: big\npod_sets:\n  - {count: 1, gpus: 1025}\n";
    let e = jobs::read_job("job.yaml", native).unwrap_err().to_string();
    assert_eq!(
        e,
        "job.yaml: pod_sets[0].gpus: expected 1..=1024 GPUs per pod (a pod runs on one node), got 1025"
    );
    let kueue = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {kueue.x-k8s.io/queue-name: q}\nspec:\n  template:\n    spec:\n      containers: [{name: a, resources: {limits: {nvidia.com/gpu: 1025}}}]\n";
    let e = jobs::read_job("kueue.yaml", kueue).unwrap_err().to_string();
    assert!(
        e.contains("1025 nvidia.com/gpu per pod is more than the limit of 1024"),
        "{e}"
    );
}
