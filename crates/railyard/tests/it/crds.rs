//! `topo export --format kueue|kai` checked field by field against the Topology CRDs they are
//! for: Kueue `kueue.x-k8s.io/v1beta2` (`apis/kueue/v1beta2/topology_types.go`) and KAI
//! `kai.scheduler/v1alpha1` (`pkg/apis/kai/v1alpha1/topology_types.go`). Both define exactly
//! `spec.levels[].nodeLabel`: 1..=16 levels, unique, `kubernetes.io/hostname` only as the lowest,
//! each label 1..=316 characters matching
//! `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`;
//! the objects are cluster-scoped, so `metadata.name` is an RFC 1123 subdomain.

use serde_json::Value;

use crate::{ok, temp_dir};

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`: an RFC 1123 label (length checked by the callers).
fn dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && alnum(&b[0])
        && alnum(&b[b.len() - 1])
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

/// RFC 1123 subdomain: labels of at most 63 joined by `.`, at most 253 in all.
fn dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(|l| l.len() <= 63 && dns_label(l))
}

/// The CRD's `nodeLabel` pattern, written out: an optional subdomain prefix and `/`, then a name
/// of letters, digits, `-`, `_`, `.` that starts and ends alphanumeric. The CRD bounds the whole
/// at 316 characters; Kubernetes label keys also bound the name at 63 (checked too).
fn crd_node_label(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    let prefix_ok = prefix.is_none_or(|p| p.split('.').all(dns_label) && p.len() <= 253);
    let n = name.as_bytes();
    let name_ok = !n.is_empty()
        && n.len() <= 63
        && n[0].is_ascii_alphanumeric()
        && n[n.len() - 1].is_ascii_alphanumeric()
        && n.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    !s.is_empty() && s.len() <= 316 && prefix_ok && name_ok
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Check one exported object; returns its level labels.
fn check_object(text: &str, api_version: &str, what: &str) -> Vec<String> {
    let v: Value = serde_norway::from_str(text).unwrap_or_else(|e| panic!("{what}: YAML: {e}"));
    let mut top = keys(&v);
    top.sort_unstable();
    assert_eq!(top, ["apiVersion", "kind", "metadata", "spec"], "{what}");
    assert_eq!(v["apiVersion"], api_version, "{what}");
    assert_eq!(v["kind"], "Topology", "{what}");
    assert_eq!(keys(&v["metadata"]), ["name"], "{what}: metadata");
    let name = v["metadata"]["name"].as_str().expect("metadata.name");
    assert!(dns_subdomain(name), "{what}: metadata.name `{name}`");
    assert_eq!(keys(&v["spec"]), ["levels"], "{what}: spec");
    let levels = v["spec"]["levels"].as_array().expect("spec.levels");
    assert!(
        (1..=16).contains(&levels.len()),
        "{what}: {} levels",
        levels.len()
    );
    let labels: Vec<String> = levels
        .iter()
        .map(|l| {
            assert_eq!(keys(l), ["nodeLabel"], "{what}: a level");
            let label = l["nodeLabel"].as_str().expect("nodeLabel is a string");
            assert!(crd_node_label(label), "{what}: nodeLabel `{label}`");
            label.to_owned()
        })
        .collect();
    let mut unique = labels.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), labels.len(), "{what}: levels must be unique");
    if let Some(at) = labels.iter().position(|l| l == "kubernetes.io/hostname") {
        assert_eq!(
            at,
            labels.len() - 1,
            "{what}: hostname only as the lowest level"
        );
    }
    labels
}

#[test]
fn kueue_and_kai_exports_have_exactly_the_fields_their_crds_define() {
    let dir = temp_dir("crds");
    // A spec whose name is not a valid object name as it stands.
    let odd = dir.join("odd.yaml");
    std::fs::write(
        &odd,
        "name: \"GPU Cluster_01..Test-\"\nnode: {gpus: 8, gpu_memory_gib: 80, rails: 1, ports_per_rail: 1, port_gbps: 400, nvlink_gbps: 3600}\nfabric:\n  fat_tree: {k: 4, tier_labels: [example.com/edge, example.com/pod, example.com/core], latency_us: [1, 2, 3]}\n",
    )
    .unwrap();
    let odd = odd.display().to_string();
    let clusters: Vec<Vec<&str>> = vec![
        vec!["--cluster", "preset:fat-tree-k8"],
        vec!["--cluster", "preset:oci-h100-16k"],
        vec!["--cluster", "preset:oci-gb200-nvl72-4k"],
        vec!["--cluster", "preset:philly-512"],
        vec![
            "--cluster",
            "tests/fixtures/nodes/kind-workers.yaml",
            "--topology",
            "tests/fixtures/nodes/kueue-topology.yaml",
        ],
        vec!["--cluster", "tests/fixtures/nodes/oci-nodes.json"],
        vec!["--cluster", &odd],
    ];
    for c in &clusters {
        let mut show = vec!["topo", "show", "--output", "json"];
        show.extend_from_slice(c);
        let summary: Value = serde_json::from_str(&ok(&show)).unwrap();
        let expected: Vec<String> = summary["levels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["name"].as_str().unwrap().to_owned())
            .collect();
        for (format, api) in [
            ("kueue", "kueue.x-k8s.io/v1beta2"),
            ("kai", "kai.scheduler/v1alpha1"),
        ] {
            let mut args = vec!["topo", "export", "--format", format];
            args.extend_from_slice(c);
            let what = format!("{format} {c:?}");
            let labels = check_object(&ok(&args), api, &what);
            assert_eq!(labels, expected, "{what}: the cluster's levels, top first");
        }
    }
}

#[test]
fn the_crd_checks_refuse_what_the_api_server_would() {
    assert!(crd_node_label("cloud.provider.com/topology-block"));
    assert!(crd_node_label("kubernetes.io/hostname"));
    assert!(crd_node_label("rack"));
    assert!(!crd_node_label("cloud provider/rack"));
    assert!(!crd_node_label("Example.com/rack"));
    assert!(!crd_node_label("example.com/-rack"));
    assert!(!crd_node_label("example.com/"));
    assert!(!crd_node_label(&"a".repeat(64)));
    assert!(dns_subdomain("oci-h100-16k"));
    assert!(!dns_subdomain("gpu-cluster-01..test"));
    assert!(!dns_subdomain("Cluster"));
    assert!(!dns_subdomain("-a"));
}
