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
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: js\n  labels: {kueue.x-k8s.io/queue-name: q}\nspec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        template:\n          metadata:\n            annotations: {kueue.x-k8s.io/podset-slice-required-topology-constraints: \"x\"}\n          spec:\n            nodeSelector: {pool: a}\n            containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n",
    )
    .unwrap();
    let out = ok(&["lint", path.to_str().unwrap()]);
    assert!(!out.contains("no findings"), "{out}");
    assert!(
        out.contains("spec.replicatedJobs[0].template.spec.template.metadata.annotations[kueue.x-k8s.io/podset-slice-required-topology-constraints]: warning: Kueue acts on this; railyard does not"),
        "{out}"
    );
    assert!(
        out.contains("spec.replicatedJobs[0].template.spec.template.spec.nodeSelector: warning:"),
        "{out}"
    );
}
