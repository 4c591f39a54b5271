//! KAI Scheduler's workloads as its pod grouper sees them, and KAI's documented topology
//! example placed as its README describes.

use formats::jobs::read_job;
use formats::placement::PlacementFile;

use crate::{fails, ok, railyard, temp_dir};

#[test]
fn kais_documented_zone_and_rack_example_is_placed_as_kai_describes() {
    // docs/topology/README.md: zone A has 5 free GPUs, zone B 6, no rack holds 3: zone A is
    // chosen (fewer free GPUs: bin-packing), then rack A1 (2 GPUs, the most) is filled before a
    // one-GPU rack takes the third pod. The doc names rack A2 for it; KAI's code (node_scoring.go
    // at d5bc503a) scores the racks A2, A3, A4 (tied at one free GPU, in name order) 1, 2 and 4
    // of 10 and A1 5, so the third pod goes to A4, as railyard's KAI rules place it.
    let out = ok(&[
        "place",
        "--cluster",
        "tests/fixtures/kai/zone-rack-nodes.json",
        "--levels",
        "topology.kubernetes.io/zone,topology.kubernetes.io/rack,kubernetes.io/hostname",
        "--job",
        "tests/fixtures/kai/topology-example-job.yaml",
        "--output",
        "json",
    ]);
    let p: PlacementFile = serde_json::from_str(&out).unwrap();
    let nodes: Vec<&str> = p.pods.iter().map(|q| q.node.as_str()).collect();
    assert_eq!(nodes, vec!["a1-1", "a1-2", "a4-1"]);
}

#[test]
fn podgroup_sub_groups_keep_their_racks_inside_the_groups_zone() {
    // Zone A has one rack with 2 free GPUs (a1), zone B three (b1, b2, b3): each sub-group
    // needs a rack of 2 and both one zone, so KAI's rules go to zone B.
    let args = |scheduler: &'static str| {
        vec![
            "place",
            "--cluster",
            "tests/fixtures/kai/zone-rack-nodes.json",
            "--levels",
            "topology.kubernetes.io/zone,topology.kubernetes.io/rack,kubernetes.io/hostname",
            "--job",
            "tests/fixtures/kai/subgroups-podgroup.yaml",
            "--scheduler",
            scheduler,
            "--output",
            "json",
        ]
    };
    let nodes = |out: String| {
        let p: PlacementFile = serde_json::from_str(&out).unwrap();
        p.pods.iter().map(|q| q.node.clone()).collect::<Vec<_>>()
    };
    assert_eq!(
        nodes(ok(&args("kai"))),
        vec!["b1-1", "b1-2", "b2-1", "b2-2"]
    );
    // Kueue's rules know no sub-groups: each pod set takes its tightest rack, zone A's a1 first.
    assert_eq!(nodes(ok(&args("kueue")))[..2], ["a1-1", "a1-2"]);
    // A bad flag value is a usage error (exit 2), in one line.
    let r = railyard(&[
        "place",
        "--cluster",
        "tests/fixtures/kai/zone-rack-nodes.json",
        "--levels",
        "topology.kubernetes.io/zone,topology.kubernetes.io/rack,kubernetes.io/hostname",
        "--job",
        "tests/fixtures/kai/subgroups-podgroup.yaml",
        "--kai-placement",
        "tight",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let e = r.stderr;
    assert!(
        e.contains("--kai-placement") && e.contains("\"tight\""),
        "{e}"
    );
}

fn read(name: &str, yaml: &str) -> formats::jobs::JobDoc {
    read_job(name, yaml).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn the_pod_grouper_makes_one_gang_per_workload() {
    // A Job: all its pods, gang minimum 1 (KAI's job grouper) unless batch-min-member says.
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {kai.scheduler/queue: team-a}\nspec:\n  parallelism: 4\n  template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]}}\n";
    let d = read("job.yaml", job);
    assert_eq!(d.format, formats::jobs::JobFormat::Kai);
    assert_eq!(d.queue, "team-a");
    assert_eq!((d.pod_sets[0].count, d.pod_sets[0].min_count), (4, Some(1)));
    let pinned = job.replace(
        "labels: {kai.scheduler/queue: team-a}",
        "labels: {kai.scheduler/queue: team-a}\n  annotations: {kai.scheduler/batch-min-member: \"4\"}",
    );
    assert_eq!(read("job.yaml", &pinned).pod_sets[0].min_count, Some(4));
    // A PyTorchJob: master and workers in one gang of all pods; no queue label: default-queue.
    let pt = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: p\n  annotations: {kai.scheduler/topology-required-placement: rack}\nspec:\n  pytorchReplicaSpecs:\n    Master: {replicas: 1, template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]}}}\n    Worker: {replicas: 3, template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]}}}\n";
    let d = read("pt.yaml", pt);
    assert_eq!(d.queue, "default-queue");
    let sets: Vec<(String, u32, Option<u32>)> = d
        .pod_sets
        .iter()
        .map(|s| (s.name.clone(), s.count, s.min_count))
        .collect();
    assert_eq!(
        sets,
        vec![
            ("master".to_owned(), 1, Some(1)),
            ("worker".to_owned(), 3, Some(3))
        ]
    );
    assert_eq!(
        d.pod_sets[1]
            .topology
            .required
            .as_ref()
            .map(|l| l.label.as_str()),
        Some("rack")
    );
}

#[test]
fn a_bad_batch_min_member_is_one_line_naming_the_job() {
    let dir = temp_dir("kai-min-member");
    let path = dir.join("job.yaml");
    std::fs::write(
        &path,
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {kai.scheduler/queue: q}\n  annotations: {kai.scheduler/batch-min-member: \"9\"}\nspec:\n  parallelism: 4\n  template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}\n",
    )
    .unwrap();
    let line = fails(&[
        "place",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        path.to_str().unwrap(),
    ]);
    assert!(
        line.contains("document 1 (Job j): metadata.annotations[kai.scheduler/batch-min-member]: expected 1..=4, got \"9\""),
        "{line}"
    );
}

#[test]
fn a_share_on_several_devices_takes_that_many_gpus_of_one_node() {
    // KAI's gpu-fraction-num-devices: half of each of two GPUs (a Pod), and the same read by
    // the pod grouper from a Job's pod template (three pods).
    let dir = temp_dir("kai-num-devices");
    let pod = dir.join("pod.yaml");
    std::fs::write(
        &pod,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: halves\n  labels: {kai.scheduler/queue: team-a}\n  annotations: {gpu-fraction: \"0.5\", gpu-fraction-num-devices: \"2\"}\nspec:\n  schedulerName: kai-scheduler\n  containers: [{name: c, image: trainer}]\n",
    )
    .unwrap();
    let out = ok(&[
        "place",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        pod.to_str().unwrap(),
        "--output",
        "json",
    ]);
    let p: PlacementFile = serde_json::from_str(&out).unwrap();
    assert_eq!(p.pods.len(), 1);
    assert_eq!(p.pods[0].gpu_ids.len(), 2, "{:?}", p.pods[0]);
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {kai.scheduler/queue: team-a}\nspec:\n  parallelism: 3\n  template:\n    metadata: {annotations: {gpu-memory: \"20000\", gpu-fraction-num-devices: \"3\"}}\n    spec: {containers: [{name: c}]}\n";
    let d = read("job.yaml", job);
    assert_eq!(
        d.pod_sets[0].gpu,
        sched::GpuRequest::MemoryMib {
            mib: 20000,
            devices: 3
        }
    );
    // A running pod with the annotation holds its share on two GPUs of its node.
    let nodes_text = std::fs::read_to_string(crate::fixture("live/nodes.json")).unwrap();
    let docs = formats::input::parse_documents("nodes.json", &nodes_text).unwrap();
    let options = formats::k8s::ImportOptions {
        topology: Some(crate::fixture("nodes/kueue-topology.yaml")),
        ..Default::default()
    };
    let cluster = formats::k8s::import_nodes("nodes.json", &docs, &options)
        .unwrap()
        .cluster;
    let pods = r#"{"apiVersion":"v1","kind":"List","items":[{"kind":"Pod","metadata":{"name":"a","namespace":"ns","labels":{"kai.scheduler/queue":"team-a"},"annotations":{"gpu-fraction":"0.25","gpu-fraction-num-devices":"2"}},"spec":{"nodeName":"kind-worker","containers":[{"name":"c"}]},"status":{"phase":"Running"}}]}"#;
    let occ = formats::state::read("pods.json", pods, &cluster).unwrap();
    let alloc = &occ.jobs()["ns/a"];
    assert_eq!(alloc.pods[0].gpu_ids, vec![0, 1]);
    assert_eq!(alloc.pods[0].milli, 250);
}

#[test]
fn min_sub_group_places_the_required_sub_groups_first_and_the_rest_if_they_fit() {
    // Four sub-groups of 2 pods × 1 GPU, all in one zone, each in one rack. Zone B has three
    // racks of 2 free GPUs, zone A one: the four never fit one zone. With `minSubGroup: 3` the
    // first three are the gang (zone B's racks) and the fourth is tried afterwards, inside the
    // zone that holds the others (KAI: a required level keeps new pods with the placed ones), and
    // does not fit; without it the PodGroup can never run.
    let group = |min_sub_group: &str| {
        let mut y = format!(
            "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata:\n  name: four\nspec:\n{min_sub_group}  queue: team-a\n  topologyConstraint: {{topology: t, requiredTopologyLevel: topology.kubernetes.io/zone}}\n  subGroups:\n"
        );
        for name in ["g1", "g2", "g3", "g4"] {
            y.push_str(&format!("    - {{name: {name}, minMember: 2, topologyConstraint: {{topology: t, requiredTopologyLevel: topology.kubernetes.io/rack}}}}\n"));
        }
        y.push_str("---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: four-0\n  labels: {kai.scheduler/queue: team-a}\n  annotations: {pod-group-name: four}\nspec:\n  schedulerName: kai-scheduler\n  containers: [{name: w, resources: {limits: {nvidia.com/gpu: 1}}}]\n");
        y
    };
    let dir = temp_dir("kai-min-sub-group");
    let place = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let out = ok(&[
            "place",
            "--cluster",
            "tests/fixtures/kai/zone-rack-nodes.json",
            "--levels",
            "topology.kubernetes.io/zone,topology.kubernetes.io/rack,kubernetes.io/hostname",
            "--job",
            path.to_str().unwrap(),
            "--output",
            "json",
        ]);
        serde_json::from_str::<PlacementFile>(&out).unwrap()
    };
    let p = place("min3.yaml", group("  minSubGroup: 3\n"));
    let nodes: Vec<&str> = p.pods.iter().map(|q| q.node.as_str()).collect();
    assert_eq!(nodes, vec!["b1-1", "b1-2", "b2-1", "b2-2", "b3-1", "b3-2"]);
    // Every sub-group required: the PodGroup can never run on this cluster.
    let path = dir.join("all.yaml");
    std::fs::write(&path, group("  minMember: 8\n")).unwrap();
    let line = fails(&[
        "place",
        "--cluster",
        "tests/fixtures/kai/zone-rack-nodes.json",
        "--levels",
        "topology.kubernetes.io/zone,topology.kubernetes.io/rack,kubernetes.io/hostname",
        "--job",
        path.to_str().unwrap(),
    ]);
    assert!(line.contains("can never be placed"), "{line}");
}

/// `place --output json` on the zone/rack nodes with the levels of KAI's alias example; the
/// nodes of the pods.
fn place_with_aliases(job: &str) -> (Vec<String>, f64) {
    let out = ok(&[
        "place",
        "--cluster",
        "tests/fixtures/kai/zone-rack-nodes.json",
        "--topology",
        "tests/fixtures/kai/topology-aliases.yaml",
        "--job",
        job,
        "--output",
        "json",
    ]);
    let p: PlacementFile = serde_json::from_str(&out).unwrap();
    assert!(p.placed, "{out}");
    (
        p.pods.iter().map(|q| q.node.clone()).collect(),
        p.pods.iter().map(|q| q.gpus).sum(),
    )
}

#[test]
fn a_level_named_by_its_kai_alias_is_the_level() {
    // KAI v0.17 resolves an alias to its node label before placing: the documented example
    // with `zone` and `rack` for the labels is placed exactly as with the labels.
    let (aliased, _) = place_with_aliases("tests/fixtures/kai/topology-example-job-aliases.yaml");
    let (raw, _) = place_with_aliases("tests/fixtures/kai/topology-example-job.yaml");
    assert_eq!(aliased, vec!["a1-1", "a1-2", "a4-1"]);
    assert_eq!(aliased, raw);
    // A name that is neither a label nor an alias lists both.
    let dir = crate::temp_dir("kai-alias");
    let job = dir.join("job.yaml");
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/kai/topology-example-job-aliases.yaml"),
    )
    .unwrap()
    .replace("\"zone\"", "\"region\"");
    std::fs::write(&job, text).unwrap();
    let line = fails(&[
        "place",
        "--cluster",
        "tests/fixtures/kai/zone-rack-nodes.json",
        "--topology",
        "tests/fixtures/kai/topology-aliases.yaml",
        "--job",
        job.to_str().unwrap(),
    ]);
    assert!(
        line.contains("`region` is not a level")
            && line.contains("topology.kubernetes.io/zone (alias zone)"),
        "{line}"
    );
}

#[test]
fn kais_ray_and_mpi_examples_whose_pods_request_nothing_are_placed() {
    // examples/ray/ray-job.yaml: head and two workers of one GPU each, and KubeRay's submitter
    // (CPU and memory only), one gang of 4 pods.
    let (nodes, gpus) = place_with_aliases("tests/fixtures/kai/ray-job.yaml");
    assert_eq!((nodes.len(), gpus), (4, 3.0));
    // The e2e MPIJob: a launcher and a worker that request nothing; KAI schedules both.
    let (nodes, gpus) = place_with_aliases("tests/fixtures/kai/mpijob-requests-nothing.yaml");
    assert_eq!((nodes.len(), gpus), (2, 0.0));
    // A Kueue job is still a GPU job.
    let line = fails(&[
        "place",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        "tests/corpus/jobs/kueue-no-gpu-limit.yaml",
    ]);
    assert!(line.contains("GPU"), "{line}");
}
