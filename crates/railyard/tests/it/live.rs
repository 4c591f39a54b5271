//! `place --state` from the live cluster: `kubectl get pods -A -o json` and `kubectl get
//! workloads -A -o json`, with `kubectl get nodes -o json` as the cluster; and one-line errors
//! for PodLists and Workloads that cannot be true.

use formats::placement::PlacementFile;

use crate::{fails, ok, railyard_stdin, temp_dir};

const CLUSTER: &[&str] = &[
    "--cluster",
    "tests/fixtures/live/nodes.json",
    "--topology",
    "tests/fixtures/nodes/kueue-topology.yaml",
];

fn place(state: &[&str], job: &str) -> PlacementFile {
    let mut args = vec!["place"];
    args.extend_from_slice(CLUSTER);
    for s in state {
        args.extend_from_slice(&["--state", s]);
    }
    args.extend_from_slice(&["--job", job, "--output", "json"]);
    serde_json::from_str(&ok(&args)).unwrap()
}

fn nodes(p: &PlacementFile) -> Vec<&str> {
    let mut n: Vec<&str> = p.pods.iter().map(|q| q.node.as_str()).collect();
    n.dedup();
    n
}

#[test]
fn a_jobset_lands_where_the_live_cluster_has_room() {
    let job = "tests/fixtures/workloads/kueue-jobset.yaml";
    // Idle cluster: the first rack (b1/r1) by Kueue's rules.
    let idle = place(&[], job);
    assert_eq!(nodes(&idle), vec!["kind-worker", "kind-worker2"]);
    // Running pods fill b1/r1 and half of b1/r2: four 4-GPU pods fit only in b2.
    let pods = place(&["tests/fixtures/live/pods.json"], job);
    assert!(
        nodes(&pods).iter().all(|n| [
            "kind-worker5",
            "kind-worker6",
            "kind-worker7",
            "kind-worker8"
        ]
        .contains(n)),
        "{:?}",
        pods.pods
    );
    // The admitted Workload holds b2/r1 (kind-worker5, 6) too: b2/r2 is left.
    let both = place(
        &[
            "tests/fixtures/live/pods.json",
            "tests/fixtures/live/workloads.json",
        ],
        job,
    );
    assert_eq!(nodes(&both), vec!["kind-worker7", "kind-worker8"]);
}

#[test]
fn live_pods_are_grouped_into_jobs_and_finished_or_pending_pods_hold_nothing() {
    let text = std::fs::read_to_string(crate::fixture("live/pods.json")).unwrap();
    let nodes_text = std::fs::read_to_string(crate::fixture("live/nodes.json")).unwrap();
    let docs = formats::input::parse_documents("nodes.json", &nodes_text).unwrap();
    let options = formats::k8s::ImportOptions {
        topology: Some(crate::fixture("nodes/kueue-topology.yaml")),
        ..Default::default()
    };
    let cluster = formats::k8s::import_nodes("nodes.json", &docs, &options)
        .unwrap()
        .cluster;
    let occ = formats::state::read("pods.json", &text, &cluster).unwrap();
    let jobs: Vec<(&str, usize)> = occ
        .jobs()
        .iter()
        .map(|(name, a)| (name.as_str(), a.pods.len()))
        .collect();
    // The JobSet's two pods are one job; the eval Job and the KAI notebook are their own; the
    // finished and pending pods and the GPU-less DaemonSet pod hold no GPUs.
    assert_eq!(
        jobs,
        vec![
            ("team-a/pretrain", 2),
            ("team-b/eval", 1),
            ("team-b/pg-notebook-7f9c4", 1)
        ]
    );
    let worker3 = cluster
        .nodes
        .iter()
        .position(|n| n.name == "kind-worker3")
        .unwrap();
    let id = topology::NodeId::from_index(worker3);
    assert_eq!(occ.free_whole(id), 3, "4 whole GPUs and one shared");
}

#[test]
fn impossible_live_state_is_one_line_naming_the_pod() {
    let dir = temp_dir("live-bad");
    let pod = |name: &str, node: &str, gpus: u32| {
        format!(
            r#"{{"kind":"Pod","metadata":{{"name":"{name}","namespace":"ns"}},"spec":{{"nodeName":"{node}","containers":[{{"name":"c","resources":{{"limits":{{"nvidia.com/gpu":"{gpus}"}}}}}}]}},"status":{{"phase":"Running"}}}}"#
        )
    };
    let list = |items: &[String]| {
        format!(
            r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
            items.join(",")
        )
    };
    let cases = [
        (
            "unknown-node.json",
            list(&[pod("a", "gpu-99", 8)]),
            "items[0] (Pod ns/a): spec.nodeName: \"gpu-99\" is not a node of cluster",
        ),
        (
            "duplicate.json",
            list(&[pod("a", "kind-worker", 1), pod("a", "kind-worker", 1)]),
            "items[1] (Pod ns/a): listed twice",
        ),
        (
            "overfull.json",
            list(&[pod("a", "kind-worker", 6), pod("b", "kind-worker", 4)]),
            "pod ns/b (job ns/b) asks for 4 whole GPUs: node \"kind-worker\" has no room left for it",
        ),
        (
            "bad-fraction.json",
            list(&[r#"{"kind":"Pod","metadata":{"name":"f","namespace":"ns","annotations":{"gpu-fraction":"1.5"}},"spec":{"nodeName":"kind-worker","containers":[]}}"#.to_owned()]),
            "items[0] (Pod ns/f): metadata.annotations[gpu-fraction]: expected a fraction in (0, 1], got 1.5",
        ),
        (
            "no-assignment.json",
            r#"{"apiVersion":"v1","kind":"List","items":[{"kind":"Workload","metadata":{"name":"w","namespace":"ns"},"spec":{"podSets":[{"name":"main","count":1,"template":{"spec":{}}}]},"status":{"conditions":[{"type":"Admitted","status":"True"}],"admission":{"podSetAssignments":[{"name":"main"}]}}}]}"#.to_owned(),
            "items[0] (Workload ns/w): status.admission.podSetAssignments[0] (main): no topologyAssignment",
        ),
        (
            "bad-slices.json",
            r#"{"apiVersion":"v1","kind":"List","items":[{"kind":"Workload","metadata":{"name":"w","namespace":"ns"},"spec":{"podSets":[{"name":"main","count":1,"template":{"spec":{}}}]},"status":{"conditions":[{"type":"Admitted","status":"True"}],"admission":{"podSetAssignments":[{"name":"main","topologyAssignment":{"levels":["kubernetes.io/hostname"],"slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"roots":["kind-worker"]}}],"podCounts":{"universal":1}}]}}]}}}]}"#.to_owned(),
            "individual.roots: expected 2 values (domainCount), got 1",
        ),
    ];
    for (name, text, expected) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let mut args = vec!["place"];
        args.extend_from_slice(CLUSTER);
        args.extend_from_slice(&[
            "--state",
            path.to_str().unwrap(),
            "--job",
            "tests/fixtures/workloads/kueue-jobset.yaml",
        ]);
        let line = fails(&args);
        assert!(line.contains(expected), "{name}: {line}");
        assert!(line.contains(name), "{name}: names the file: {line}");
    }
}

#[test]
fn a_dash_reads_standard_input_once() {
    let pods = std::fs::read_to_string(crate::fixture("live/pods.json")).unwrap();
    let job = "tests/fixtures/workloads/kueue-jobset.yaml";
    let mut args = vec!["place"];
    args.extend_from_slice(CLUSTER);
    args.extend_from_slice(&["--state", "-", "--job", job, "--output", "json"]);
    let from_stdin = railyard_stdin(&args, &pods);
    assert_eq!(from_stdin.code, 0, "{}", from_stdin.stderr);
    let from_file = place(&["tests/fixtures/live/pods.json"], job);
    let p: PlacementFile = serde_json::from_str(&from_stdin.stdout).unwrap();
    assert_eq!(p, from_file);
    let nodes = std::fs::read_to_string(crate::fixture("live/nodes.json")).unwrap();
    let run = railyard_stdin(
        &[
            "place",
            "--cluster",
            "-",
            "--topology",
            "tests/fixtures/nodes/kueue-topology.yaml",
            "--state",
            "-",
            "--job",
            job,
        ],
        &nodes,
    );
    crate::assert_one_line_error(
        &run,
        "-: standard input was already read for another argument",
    );
}

#[test]
fn allocatable_pods_and_taints_bind_placement_with_the_live_pods() {
    // Two nodes of 8 GPUs in one rack: x1 takes at most 2 pods and already runs 2 (GPU-less
    // DaemonSet pods count too); x2 is tainted. A 1-GPU pod goes to x2 only if it tolerates the
    // taint, else it cannot be placed now.
    let dir = temp_dir("live-pods-taints");
    let nodes = dir.join("nodes.json");
    std::fs::write(
        &nodes,
        r#"{"apiVersion":"v1","kind":"List","items":[
          {"kind":"Node","metadata":{"name":"x1","labels":{"rack":"r1","kubernetes.io/hostname":"x1"}},
           "status":{"allocatable":{"nvidia.com/gpu":"8","pods":"2","cpu":"64"},"conditions":[{"type":"Ready","status":"True"}]}},
          {"kind":"Node","metadata":{"name":"x2","labels":{"rack":"r1","kubernetes.io/hostname":"x2"}},
           "spec":{"taints":[{"key":"dedicated","value":"infer","effect":"NoSchedule"}]},
           "status":{"allocatable":{"nvidia.com/gpu":"8","pods":"110","cpu":"64"},"conditions":[{"type":"Ready","status":"True"}]}}]}"#,
    )
    .unwrap();
    let pods = dir.join("pods.json");
    let daemon = |name: &str| {
        format!(
            r#"{{"kind":"Pod","metadata":{{"name":"{name}","namespace":"kube-system"}},"spec":{{"nodeName":"x1","containers":[{{"name":"c","resources":{{"requests":{{"cpu":"100m"}}}}}}]}},"status":{{"phase":"Running"}}}}"#
        )
    };
    std::fs::write(
        &pods,
        format!(
            r#"{{"apiVersion":"v1","kind":"List","items":[{},{}]}}"#,
            daemon("d1"),
            daemon("d2")
        ),
    )
    .unwrap();
    let job = |name: &str, tolerations: &str| {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!("apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j, labels: {{kueue.x-k8s.io/queue-name: q}}}}\nspec:\n  template:\n    spec:\n{tolerations}      containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]\n"),
        )
        .unwrap();
        path
    };
    let run = |job: &std::path::Path, with_pods: bool| -> PlacementFile {
        let mut args = vec![
            "place",
            "--cluster",
            nodes.to_str().unwrap(),
            "--levels",
            "rack,kubernetes.io/hostname",
            "--job",
            job.to_str().unwrap(),
            "--output",
            "json",
        ];
        if with_pods {
            args.extend_from_slice(&["--state", pods.to_str().unwrap()]);
        }
        serde_json::from_str(&ok(&args)).unwrap()
    };
    let plain = job("plain.yaml", "");
    // Idle: x1 has room for pods; x2's taint is not tolerated.
    let p = run(&plain, false);
    assert_eq!(p.pods[0].node, "x1");
    // x1's two pod slots are taken by the DaemonSet pods: nowhere left.
    let p = run(&plain, true);
    assert!(!p.placed, "{p:?}");
    // Tolerating the taint opens x2.
    let tolerant = job(
        "tolerant.yaml",
        "      tolerations: [{key: dedicated, operator: Equal, value: infer, effect: NoSchedule}]\n",
    );
    let p = run(&tolerant, true);
    assert_eq!(p.pods[0].node, "x2");
}
