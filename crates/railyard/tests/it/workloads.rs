//! Workload kinds Kueue integrates, read into pod sets and placed: JobSet, PyTorchJob, MPIJob,
//! TrainJob, LeaderWorkerSet, RayJob and plain-pod groups (fixtures after the Kueue project's
//! documented examples, with GPUs), and the errors for kinds and versions railyard cannot read.

use std::collections::BTreeMap;

use formats::jobs::read_jobs;
use formats::placement::PlacementFile;

use crate::{fails, fixture, ok};

/// A pod set as (name, pods, GPUs per pod).
type SetShape = (String, u32, sched::GpuRequest);

/// Every job of a fixture as (name, its pod sets).
fn shape(rel: &str) -> Vec<(String, Vec<SetShape>)> {
    let path = fixture(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    read_jobs(rel, &text)
        .unwrap()
        .into_iter()
        .map(|j| {
            let sets = j
                .pod_sets
                .iter()
                .map(|s| (s.name.clone(), s.count, s.gpu))
                .collect();
            (j.name, sets)
        })
        .collect()
}

fn set(name: &str, count: u32, gpus: u32) -> SetShape {
    (name.to_owned(), count, sched::GpuRequest::Whole(gpus))
}

#[test]
fn each_kind_becomes_the_pod_sets_kueue_makes_of_it() {
    let cases = [
        (
            "workloads/kueue-jobset.yaml",
            "jobset-tas",
            vec![set("workers", 4, 4)],
        ),
        (
            "workloads/kueue-pytorchjob.yaml",
            "pytorch-ddp",
            vec![set("master", 1, 8), set("worker", 3, 8)],
        ),
        (
            "workloads/kueue-leaderworkerset.yaml",
            "vllm",
            vec![set("leader", 1, 8), set("worker", 1, 8)],
        ),
        (
            "workloads/kueue-pod-group.yaml",
            "sample-group",
            vec![set("main", 2, 8)],
        ),
        (
            "workloads/kueue-trainjob.yaml",
            "llama-sft",
            vec![set("node", 3, 8)],
        ),
        (
            "workloads/kueue-mpijob.yaml",
            "nccl-tests",
            vec![set("launcher", 1, 0), set("worker", 2, 8)],
        ),
        (
            "workloads/kueue-rayjob.yaml",
            "ray-train",
            vec![
                set("head", 1, 0),
                set("gpu-workers", 2, 8),
                set("submitter", 1, 0),
            ],
        ),
    ];
    for (file, name, sets) in cases {
        assert_eq!(shape(file), vec![(name.to_owned(), sets)], "{file}");
    }
}

fn place(job: &str) -> PlacementFile {
    let out = ok(&[
        "place",
        "--cluster",
        "tests/fixtures/nodes/kind-workers.yaml",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
        "--job",
        job,
        "--output",
        "json",
    ]);
    serde_json::from_str(&out).unwrap()
}

/// kind-worker..kind-worker8: racks of two nodes, r1..r4 (see the fixture).
fn rack_of(node: &str) -> usize {
    let n: usize = node.trim_start_matches("kind-worker").parse().unwrap_or(1);
    (n - 1) / 2
}

#[test]
fn gpu_workloads_of_every_kind_are_placed_with_their_topology_request() {
    // Required rack: every pod in one rack.
    for job in [
        "tests/fixtures/workloads/kueue-jobset.yaml",
        "tests/fixtures/workloads/kueue-leaderworkerset.yaml",
        "tests/fixtures/workloads/kueue-pod-group.yaml",
    ] {
        let p = place(job);
        assert!(p.placed, "{job}: {:?}", p.reason);
        let racks: BTreeMap<usize, usize> = p.pods.iter().fold(BTreeMap::new(), |mut m, q| {
            *m.entry(rack_of(&q.node)).or_default() += 1;
            m
        });
        assert_eq!(racks.len(), 1, "{job}: {:?}", p.pods);
    }
    let p = place("tests/fixtures/workloads/kueue-jobset.yaml");
    assert_eq!(p.pods.len(), 4);
    assert!(p.pods.iter().all(|q| q.gpus == 4.0));
    // Preferred block: 4 whole nodes fit in one block of 4 nodes.
    let p = place("tests/fixtures/workloads/kueue-pytorchjob.yaml");
    assert_eq!(p.pods.len(), 4);
    let blocks: Vec<usize> = p.pods.iter().map(|q| rack_of(&q.node) / 2).collect();
    assert!(blocks.iter().all(|b| *b == blocks[0]), "{:?}", p.pods);
    let p = place("tests/fixtures/workloads/kueue-trainjob.yaml");
    assert_eq!(p.pods.len(), 3);
    // Pod sets without GPUs (an MPI launcher, a Ray head and submitter) are placed by their
    // other requests; the GPU workers keep their topology request.
    let p = place("tests/fixtures/workloads/kueue-mpijob.yaml");
    assert_eq!(p.pods.len(), 3);
    assert_eq!(p.pods.iter().filter(|q| q.gpus == 8.0).count(), 2);
    let workers: Vec<usize> = p
        .pods
        .iter()
        .filter(|q| q.gpus == 8.0)
        .map(|q| rack_of(&q.node))
        .collect();
    assert_eq!(
        workers[0], workers[1],
        "workers required in one rack: {:?}",
        p.pods
    );
    let p = place("tests/fixtures/workloads/kueue-rayjob.yaml");
    assert_eq!(p.pods.len(), 4);
    assert_eq!(p.pods.iter().filter(|q| q.gpus == 8.0).count(), 2);
}

#[test]
fn kinds_and_versions_railyard_cannot_read_are_errors_that_name_them() {
    let dir = crate::temp_dir("workload-kinds");
    let cases = [
        (
            "cronjob.yaml",
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\n",
            "no job found; expected a railyard job spec, a KAI PodGroup, or one of Job (batch/v1), JobSet",
        ),
        (
            "job-v2.yaml",
            "apiVersion: batch/v2\nkind: Job\nmetadata: {name: j}\n",
            "document 1 (Job): apiVersion: expected batch/v1 for kind Job, got \"batch/v2\"",
        ),
        (
            "mpi-v1.yaml",
            "apiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata: {name: m}\n",
            "kubeflow.org/v1 MPIJob (the training operator's) is not supported",
        ),
        (
            "both.yaml",
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {kueue.x-k8s.io/queue-name: q, kai.scheduler/queue: q}\nspec: {template: {spec: {}}}\n",
            "document 1 (Job j): carries both Kueue (kueue.x-k8s.io/queue-name) and KAI",
        ),
        (
            "no-queue.yaml",
            "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\nspec: {replicatedJobs: []}\n",
            "document 1 (JobSet js): names no queue",
        ),
        (
            "bad-replicas.yaml",
            "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: p\n  labels: {kueue.x-k8s.io/queue-name: q}\nspec:\n  pytorchReplicaSpecs:\n    Chief: {replicas: 1, template: {spec: {}}}\n",
            "spec.pytorchReplicaSpecs.Chief: unknown replica type; expected Master or Worker",
        ),
        (
            "group-total.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/pod-group-name: g}\n  annotations: {kueue.x-k8s.io/pod-group-total-count: \"zero\"}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}\n",
            "(pod group g): metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: expected 1..=1000000, got \"zero\"",
        ),
        (
            "bad-annotation.yaml",
            "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: js\n  labels: {kueue.x-k8s.io/queue-name: q}\nspec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        template:\n          metadata:\n            annotations: {kueue.x-k8s.io/podset-unconstrained-topology: \"maybe\"}\n          spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}\n",
            "spec.replicatedJobs[0].template.spec.template.metadata.annotations[kueue.x-k8s.io/podset-unconstrained-topology]: expected \"true\" or \"false\", got \"maybe\"",
        ),
    ];
    for (name, text, expected) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let line = fails(&[
            "place",
            "--cluster",
            "preset:fat-tree-k8",
            "--job",
            path.to_str().unwrap(),
        ]);
        assert!(line.contains(expected), "{name}: {line}");
        assert!(line.contains(name), "{name}: names the file: {line}");
    }
}

#[test]
fn lint_warns_about_what_kueue_reads_and_railyard_does_not() {
    let dir = crate::temp_dir("workload-lint");
    let path = dir.join("jobset.yaml");
    std::fs::write(
        &path,
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: js\n  labels: {kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/priority-class: high}\nspec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        template:\n          spec:\n            nodeSelector: {pool: a}\n            containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n",
    )
    .unwrap();
    let out = ok(&["lint", path.to_str().unwrap()]);
    assert!(!out.contains("no findings"), "{out}");
    assert!(
        out.contains("metadata.labels[kueue.x-k8s.io/priority-class]: warning: Kueue acts on this; railyard does not"),
        "{out}"
    );
    // nodeSelector is acted on now: no warning for it.
    assert!(!out.contains("nodeSelector"), "{out}");
    // The multi-layer slice annotation is read and checked like place checks it.
    std::fs::write(
        &path,
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {kueue.x-k8s.io/queue-name: q}\nspec:\n  parallelism: 8\n  template:\n    metadata:\n      annotations:\n        kueue.x-k8s.io/podset-slice-required-topology-constraints: '[{\"topology\": \"rack\", \"size\": 3}]'\n    spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}\n",
    )
    .unwrap();
    let run = crate::railyard(&["lint", path.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("[kueue.x-k8s.io/podset-slice-required-topology-constraints]: error: [0].size: 3 must divide 8"),
        "{}",
        run.stdout
    );
}

#[test]
fn node_selectors_affinity_and_cpu_requests_bind_placement() {
    let dir = crate::temp_dir("workload-constraints");
    let job = |name: &str, template_extra: &str, cpu: &str| {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {{kueue.x-k8s.io/queue-name: q}}\nspec:\n  parallelism: 4\n  template:\n    spec:\n{template_extra}      containers: [{{name: c, resources: {{requests: {{cpu: \"{cpu}\"}}, limits: {{nvidia.com/gpu: 1}}}}}}]\n"),
        )
        .unwrap();
        path
    };
    let place_live = |path: &std::path::Path| -> PlacementFile {
        serde_json::from_str(&ok(&[
            "place",
            "--cluster",
            "tests/fixtures/live/nodes.json",
            "--topology",
            "tests/fixtures/nodes/kueue-topology.yaml",
            "--job",
            path.to_str().unwrap(),
            "--output",
            "json",
        ]))
        .unwrap()
    };
    let nodes = |p: &PlacementFile| {
        let mut n: Vec<String> = p.pods.iter().map(|q| q.node.clone()).collect();
        n.sort();
        n.dedup();
        n
    };
    // Unconstrained, 1 CPU: Kueue packs the four 1-GPU pods on the least free host.
    let p = place_live(&job("packed.yaml", "", "1"));
    assert_eq!(nodes(&p).len(), 1, "{:?}", p.pods);
    // 60 of the nodes' 96 CPUs each: one pod per node.
    let p = place_live(&job("cpu.yaml", "", "60"));
    assert_eq!(nodes(&p).len(), 4, "{:?}", p.pods);
    // A node selector on the hostname label: every pod there.
    let p = place_live(&job(
        "selector.yaml",
        "      nodeSelector: {kubernetes.io/hostname: kind-worker6}\n",
        "1",
    ));
    assert_eq!(nodes(&p), vec!["kind-worker6".to_owned()]);
    // Required node affinity: only b2's racks.
    let p = place_live(&job(
        "affinity.yaml",
        "      affinity:\n        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            nodeSelectorTerms:\n            - matchExpressions:\n              - {key: cloud.provider.com/topology-block, operator: In, values: [b2]}\n",
        "60",
    ));
    assert!(
        nodes(&p).iter().all(|n| [
            "kind-worker5",
            "kind-worker6",
            "kind-worker7",
            "kind-worker8"
        ]
        .contains(&n.as_str())),
        "{:?}",
        p.pods
    );
    // A selector no node matches: the job can never be placed, said in one line.
    let line = crate::fails(&[
        "place",
        "--cluster",
        "tests/fixtures/live/nodes.json",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
        "--job",
        job("nowhere.yaml", "      nodeSelector: {pool: none}\n", "1")
            .to_str()
            .unwrap(),
    ]);
    assert!(line.contains("can never be placed"), "{line}");
}

#[test]
fn multi_layer_slices_keep_each_slice_in_its_domain() {
    let dir = crate::temp_dir("workload-slices");
    let path = dir.join("job.yaml");
    std::fs::write(
        &path,
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {kueue.x-k8s.io/queue-name: q}\nspec:\n  parallelism: 8\n  template:\n    metadata:\n      annotations:\n        kueue.x-k8s.io/podset-required-topology: cloud.provider.com/topology-block\n        kueue.x-k8s.io/podset-slice-required-topology-constraints: '[{\"topology\": \"cloud.provider.com/topology-rack\", \"size\": 4}, {\"topology\": \"kubernetes.io/hostname\", \"size\": 2}]'\n    spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]}\n",
    )
    .unwrap();
    let p = place(path.to_str().unwrap());
    assert_eq!(p.pods.len(), 8);
    let mut by_rank = p.pods.clone();
    by_rank.sort_by_key(|q| q.rank);
    for chunk in by_rank.chunks(4) {
        assert!(
            chunk
                .iter()
                .all(|q| rack_of(&q.node) == rack_of(&chunk[0].node)),
            "{by_rank:?}"
        );
    }
    for chunk in by_rank.chunks(2) {
        assert!(chunk.iter().all(|q| q.node == chunk[0].node), "{by_rank:?}");
    }
}

#[test]
fn a_resource_flavor_adds_its_node_labels_and_the_first_flavor_that_fits_wins() {
    let dir = crate::temp_dir("workload-flavors");
    let flavors = dir.join("flavors.yaml");
    std::fs::write(
        &flavors,
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: nowhere}\nspec:\n  nodeLabels: {cloud.provider.com/node-group: other-group}\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: block-b2}\nspec:\n  nodeLabels: {cloud.provider.com/topology-block: b2}\n",
    )
    .unwrap();
    let out = ok(&[
        "place",
        "--cluster",
        "tests/fixtures/nodes/kind-workers.yaml",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
        "--job",
        "tests/fixtures/workloads/kueue-jobset.yaml",
        "--flavor",
        flavors.to_str().unwrap(),
        "--output",
        "json",
    ]);
    let p: PlacementFile = serde_json::from_str(&out).unwrap();
    assert!(p.placed);
    assert!(
        p.pods.iter().all(|q| rack_of(&q.node) >= 2),
        "block b2 only: {:?}",
        p.pods
    );
    // The Topology fixture's own flavor (node-group tas-group: every node) changes nothing.
    let with_topology_flavor: PlacementFile = serde_json::from_str(&ok(&[
        "place",
        "--cluster",
        "tests/fixtures/nodes/kind-workers.yaml",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
        "--job",
        "tests/fixtures/workloads/kueue-jobset.yaml",
        "--flavor",
        "tests/fixtures/nodes/kueue-topology.yaml",
        "--output",
        "json",
    ]))
    .unwrap();
    assert_eq!(
        with_topology_flavor,
        place("tests/fixtures/workloads/kueue-jobset.yaml")
    );
    let line = crate::fails(&[
        "place",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        "tests/fixtures/sched/jobs/native-train.yaml",
        "--flavor",
        "tests/fixtures/workloads/kueue-jobset.yaml",
    ]);
    assert!(
        line.contains("kueue-jobset.yaml: no ResourceFlavor"),
        "{line}"
    );
}

#[test]
fn kueue_feature_gates_switch_balanced_placement_on() {
    // Kueue's "balanced placement; basic" (tas_cache_test.go): two racks of 15 GPUs, 25 pods
    // preferring a rack: BestFit fills one rack (15 + 10); TASBalancedPlacement splits 13 + 12.
    let dir = crate::temp_dir("workload-gates");
    let node = |name: &str, rack: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{name}","labels":{{"block":"b1","rack":"{rack}","kubernetes.io/hostname":"{name}"}}}},"status":{{"allocatable":{{"nvidia.com/gpu":"15"}},"conditions":[{{"type":"Ready","status":"True"}}]}}}}"#
        )
    };
    let nodes = dir.join("nodes.json");
    std::fs::write(
        &nodes,
        format!(
            r#"{{"apiVersion":"v1","kind":"List","items":[{},{}]}}"#,
            node("x1", "r1"),
            node("x2", "r2")
        ),
    )
    .unwrap();
    let job = dir.join("job.yaml");
    std::fs::write(
        &job,
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, labels: {kueue.x-k8s.io/queue-name: q}}\nspec:\n  parallelism: 25\n  template:\n    metadata:\n      annotations: {kueue.x-k8s.io/podset-preferred-topology: rack}\n    spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}\n",
    )
    .unwrap();
    let counts = |gates: &str| {
        let out = ok(&[
            "place",
            "--cluster",
            nodes.to_str().unwrap(),
            "--levels",
            "block,rack,kubernetes.io/hostname",
            "--job",
            job.to_str().unwrap(),
            "--feature-gates",
            gates,
            "--output",
            "json",
        ]);
        let p: PlacementFile = serde_json::from_str(&out).unwrap();
        let mut c: BTreeMap<String, usize> = BTreeMap::new();
        for q in &p.pods {
            *c.entry(q.node.clone()).or_default() += 1;
        }
        let mut v: Vec<usize> = c.into_values().collect();
        v.sort_unstable();
        v
    };
    assert_eq!(counts(""), vec![10, 15]);
    assert_eq!(counts("TASBalancedPlacement=true"), vec![12, 13]);
    let line = crate::usage_fails(&[
        "place",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        job.to_str().unwrap(),
        "--feature-gates",
        "TASBalancedPlacement=yes",
    ]);
    assert!(
        line.contains("--feature-gates: TASBalancedPlacement: expected true or false"),
        "{line}"
    );
}
