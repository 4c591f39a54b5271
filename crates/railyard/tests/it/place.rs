//! `railyard place`: the placement file it writes, state files it reads (its own output
//! included), preemption, each job format, and one-line errors for bad input.

use formats::placement::PlacementFile;

use crate::{fails, ok, railyard, temp_dir};

const KIND: &[&str] = &[
    "--cluster",
    "tests/fixtures/nodes/kind-workers.yaml",
    "--topology",
    "tests/fixtures/nodes/kueue-topology.yaml",
];

fn place(extra: &[&str]) -> PlacementFile {
    let mut args = vec!["place"];
    args.extend_from_slice(KIND);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--output", "json"]);
    serde_json::from_str(&ok(&args)).expect("placement JSON")
}

fn block_of(node: &str) -> &'static str {
    // kind-worker .. kind-worker4 are block b1, kind-worker5 .. 8 block b2.
    match node {
        "kind-worker" | "kind-worker2" | "kind-worker3" | "kind-worker4" => "b1",
        _ => "b2",
    }
}

#[test]
fn json_is_the_placement_file_with_ranks_tiers_and_latency() {
    let p = place(&["--job", "tests/fixtures/sched/jobs/native-train.yaml"]);
    assert!(p.placed);
    assert_eq!(p.job.as_deref(), Some("train-8"));
    assert_eq!(
        p.pods.iter().map(|p| p.rank).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    assert!(p.pods.iter().all(|q| q.gpus == 8.0 && q.gpu_ids.len() == 8));
    // Required block, no rack holds 4 nodes: one block, tier 1 (5 µs).
    let b = block_of(&p.pods[0].node);
    assert!(p.pods.iter().all(|q| block_of(&q.node) == b));
    assert_eq!(p.highest_tier, Some(1));
    assert_eq!(p.worst_latency_us, Some(5.0));
    assert!(p.preempted.is_empty());
}

#[test]
fn previous_output_is_accepted_as_state_single_or_list() {
    let dir = temp_dir("place-state");
    let first = dir.join("first.json");
    let mut args = vec!["place"];
    args.extend_from_slice(KIND);
    args.extend_from_slice(&[
        "--job",
        "tests/fixtures/sched/jobs/native-train.yaml",
        "--output",
        "json",
    ]);
    std::fs::write(&first, ok(&args)).expect("write");
    let second = place(&[
        "--job",
        "tests/fixtures/sched/jobs/kai-podgroup.yaml",
        "--state",
        first.to_str().expect("utf-8"),
    ]);
    assert!(second.placed);
    let first_p: PlacementFile =
        serde_json::from_str(&std::fs::read_to_string(&first).expect("read")).expect("json");
    for pod in &second.pods {
        assert!(
            first_p.pods.iter().all(|f| f.node != pod.node),
            "{} is used twice",
            pod.node
        );
    }
    // Both as a list: 7 of 8 nodes are full, a 2-node job no longer fits (no preemption of
    // equal-priority work).
    let list = dir.join("list.json");
    std::fs::write(
        &list,
        serde_json::to_string(&vec![first_p, second]).expect("json"),
    )
    .expect("write");
    let third = place(&[
        "--job",
        "tests/fixtures/sched/jobs/kueue-gpu-job.yaml",
        "--state",
        list.to_str().expect("utf-8"),
    ]);
    assert!(!third.placed);
    assert!(third.reason.expect("a reason").contains("do not fit"));
}

#[test]
fn preemption_frees_one_block_of_the_cheapest_jobs() {
    let p = place(&[
        "--job",
        "tests/fixtures/sched/jobs/native-train.yaml",
        "--state",
        "tests/fixtures/sched/state/running.yaml",
    ]);
    assert!(p.placed);
    assert_eq!(p.preempted, vec!["low-a".to_owned(), "low-b".to_owned()]);
    assert!(p.pods.iter().all(|q| block_of(&q.node) == "b1"));
    let p = place(&[
        "--job",
        "tests/fixtures/sched/jobs/native-train.yaml",
        "--state",
        "tests/fixtures/sched/state/running.yaml",
        "--no-preempt",
    ]);
    assert!(!p.placed);
    assert!(p.preempted.is_empty());
}

#[test]
fn kueue_and_kai_jobs_place_by_their_annotations() {
    let k = place(&["--job", "tests/fixtures/sched/jobs/kueue-gpu-job.yaml"]);
    // 4 pods × 4 GPUs in one rack, slices of 2 pods per host: 2 hosts, 2 pods each.
    assert_eq!(k.pods.len(), 4);
    assert_eq!(k.highest_tier, Some(0));
    assert_eq!(k.pods[0].node, k.pods[1].node);
    assert_eq!(k.pods[2].node, k.pods[3].node);
    let g = place(&["--job", "tests/fixtures/sched/jobs/kai-podgroup.yaml"]);
    assert_eq!(g.pods.len(), 3);
    let b = block_of(&g.pods[0].node);
    assert!(g.pods.iter().all(|q| block_of(&q.node) == b));
    let s = place(&[
        "--job",
        "tests/fixtures/sched/jobs/kai-gpu-sharing-pod.yaml",
    ]);
    assert_eq!(s.pods[0].gpus, 0.5);
    assert_eq!(s.highest_tier, None);
}

#[test]
fn text_output_summarises_the_placement() {
    let mut args = vec!["place"];
    args.extend_from_slice(KIND);
    args.extend_from_slice(&[
        "--job",
        "tests/fixtures/sched/jobs/native-train.yaml",
        "--state",
        "tests/fixtures/sched/state/running.yaml",
    ]);
    let out = ok(&args);
    assert!(out.starts_with(
        "job train-8: placed 4 pods on 4 nodes (32 GPUs); highest tier 1 (cloud.provider.com/topology-block), worst latency 5 µs\npreempted: low-a, low-b\n"
    ), "{out}");
}

#[test]
fn a_large_preset_places_a_64_node_gang_within_one_tier1_block() {
    let dir = temp_dir("place-oci");
    let job = dir.join("job.yaml");
    std::fs::write(
        &job,
        "name: big\npod_sets:\n  - count: 64\n    gpus: 8\n    topology:\n      required: oci.oraclecloud.com/rdma.network_block_id\n      preferred: oci.oraclecloud.com/rdma.local_block_id\n",
    )
    .expect("write");
    let out = ok(&[
        "place",
        "--cluster",
        "preset:oci-h100-16k",
        "--job",
        job.to_str().expect("utf-8"),
        "--output",
        "json",
    ]);
    let p: PlacementFile = serde_json::from_str(&out).expect("json");
    assert_eq!(p.pods.len(), 64);
    assert_eq!(p.highest_tier, Some(1));
    assert_eq!(p.worst_latency_us, Some(5.0));
}

#[test]
fn bad_job_and_state_files_give_one_line_naming_file_and_field() {
    let mut all = String::new();
    let mut cases: Vec<String> = std::fs::read_dir(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sched/jobs/bad"),
    )
    .expect("fixtures")
    .map(|e| {
        format!(
            "tests/fixtures/sched/jobs/bad/{}",
            e.expect("entry").file_name().to_string_lossy()
        )
    })
    .collect();
    cases.sort();
    for job in &cases {
        let mut args = vec!["place"];
        args.extend_from_slice(KIND);
        args.extend_from_slice(&["--job", job]);
        all.push_str(&fails(&args));
        all.push('\n');
    }
    let mut args = vec!["place"];
    args.extend_from_slice(KIND);
    args.extend_from_slice(&[
        "--job",
        "tests/fixtures/sched/jobs/native-train.yaml",
        "--state",
        "tests/fixtures/sched/state/bad-oversubscribed.yaml",
    ]);
    all.push_str(&fails(&args));
    all.push('\n');
    all.push_str(&fails(&[
        "place",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        "tests/fixtures/sched/jobs/kueue-sample-job-required.yaml",
    ]));
    all.push('\n');
    insta::assert_snapshot!(all);
    // A missing file is an error too, not a panic.
    let r = railyard(&[
        "place",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        "nope.yaml",
    ]);
    assert_eq!(r.code, 1);
}

mod fuzz {
    //! Mangled job, state and queue files never panic the readers: they give a value or a
    //! one-line error naming the file.

    use formats::{jobs, queues, state};
    use proptest::prelude::*;
    use railyard::cluster_arg::{load_cluster_quiet, ClusterArgs};

    const FIXTURES: &[&str] = &[
        "tests/fixtures/sched/jobs/native-train.yaml",
        "tests/fixtures/sched/jobs/kueue-gpu-job.yaml",
        "tests/fixtures/sched/jobs/kai-podgroup.yaml",
        "tests/fixtures/sched/state/running.yaml",
        "tests/fixtures/sched/queues/kueue-cohort-tree.yaml",
        "tests/fixtures/sched/queues/kai-teams.yaml",
    ];

    fn read(f: &str) -> String {
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(f))
            .expect("fixture")
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        #[test]
        fn mangled_files_give_values_or_one_line_errors(
            which in 0..FIXTURES.len(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(vec!["", "-1", "x", ":", "\n", "  ", "0", "[", "{}", "99999999999"])), 1..4),
        ) {
            // Integration tests run from the crate directory, so fixture paths are relative.
            let cluster = load_cluster_quiet(&ClusterArgs {
                cluster: "tests/fixtures/nodes/kind-workers.yaml".into(),
                topology: Some("tests/fixtures/nodes/kueue-topology.yaml".into()),
                ..ClusterArgs::default()
            })
            .expect("the kind cluster loads")
            .cluster;
            let mut text = read(FIXTURES[which]);
            for (at, s) in &edits {
                let mut i = at.index(text.len().max(1));
                while !text.is_char_boundary(i) { i -= 1; }
                let end = (i + 3).min(text.len());
                let mut end = end;
                while !text.is_char_boundary(end) { end -= 1; }
                text.replace_range(i..end, s);
            }
            let one_line = |e: &formats::FormatError| {
                let m = e.to_string();
                m.starts_with("f.yaml") && !m.contains('\n')
            };
            match jobs::read_jobs("f.yaml", &text) {
                Ok(js) => for j in js {
                    if let Err(e) = j.resolve("f.yaml", &cluster) { prop_assert!(one_line(&e), "{e}"); }
                },
                Err(e) => prop_assert!(one_line(&e), "{e}"),
            }
            if let Err(e) = state::read("f.yaml", &text, &cluster) { prop_assert!(one_line(&e), "{e}"); }
            let q = queues::read(&[("f.yaml".to_owned(), text.clone())]);
            for p in q.problems.iter().map(ToString::to_string) { prop_assert!(p.starts_with("f.yaml") && !p.contains('\n'), "{p}"); }
        }
    }
}

#[test]
fn reclaim_across_queues_needs_queue_files_and_frees_the_rack() {
    let args = [
        "--job",
        "tests/fixtures/sched/jobs/team-b-pair.yaml",
        "--state",
        "tests/fixtures/sched/state/team-a-full.yaml",
    ];
    // Without queues: another queue's work is never touched.
    let p = place(&args);
    assert!(!p.placed);
    // With queues: team-a is above its fair share (limit 12 GPUs), team-b within its own; one
    // team-a job goes, the one sharing a rack with the free node.
    let mut with_queues = args.to_vec();
    with_queues.extend_from_slice(&["--queues", "tests/fixtures/sched/queues/kai-teams.yaml"]);
    let p = place(&with_queues);
    assert!(p.placed, "{:?}", p.reason);
    assert_eq!(p.preempted, vec!["a7".to_owned()]);
    assert_eq!(p.highest_tier, Some(0));
}

#[test]
fn place_output_feeds_fabric_collective() {
    let dir = temp_dir("place-fabric");
    let job = dir.join("job.yaml");
    std::fs::write(
        &job,
        "name: ring\npod_sets:\n  - count: 16\n    gpus: 8\n    topology:\n      preferred: oci.oraclecloud.com/rdma.local_block_id\n",
    )
    .expect("write");
    let placement = dir.join("placement.json");
    let out = ok(&[
        "place",
        "--cluster",
        "preset:oci-h100-16k",
        "--job",
        job.to_str().expect("utf-8"),
        "--output",
        "json",
    ]);
    std::fs::write(&placement, out).expect("write");
    let report = ok(&[
        "fabric",
        "collective",
        "--cluster",
        "preset:oci-h100-16k",
        "--placement",
        placement.to_str().expect("utf-8"),
        "--collective",
        "allreduce",
    ]);
    assert!(report.contains("128 ranks on 16 nodes"), "{report}");
}

#[test]
fn queue_limits_hold_for_cpu_and_memory_not_only_gpus() {
    // train-8 asks for 4 × 256Gi of memory; team-a may use 1000 MB.
    let p = place(&[
        "--job",
        "tests/fixtures/sched/jobs/native-train.yaml",
        "--queues",
        "tests/fixtures/sched/queues/kai-limits.yaml",
    ]);
    assert!(!p.placed);
    let reason = p.reason.expect("a reason");
    assert!(
        reason == "queue `team-a`: memory use 1048576 MiB would exceed its limit 953.674 MiB",
        "{reason}"
    );
}

#[test]
fn non_preemptible_jobs_stay_within_quota_under_kai() {
    let dir = temp_dir("place-non-preemptible");
    let job = |preemptible: bool| {
        let f = dir.join(format!("job-{preemptible}.yaml"));
        std::fs::write(
            &f,
            format!("name: np\nqueue: team-b\npreemptible: {preemptible}\npod_sets:\n  - count: 2\n    gpus: 8\n"),
        )
        .expect("write");
        f
    };
    let queues = "tests/fixtures/sched/queues/kai-limits.yaml";
    // 16 GPUs against a quota of 8: refused when the job may not be preempted…
    let f = job(false);
    let p = place(&["--job", f.to_str().expect("utf-8"), "--queues", queues]);
    assert!(!p.placed);
    assert_eq!(
        p.reason.as_deref(),
        Some("queue `team-b`: non-preemptible gpu use 16 would exceed its quota 8; non-preemptible jobs stay within quota")
    );
    // …and placed over quota when it may.
    let f = job(true);
    let p = place(&["--job", f.to_str().expect("utf-8"), "--queues", queues]);
    assert!(p.placed, "{:?}", p.reason);
}

/// `place --network-aware -o json` on a small 4:1-oversubscribed Clos whose running job already
/// crosses the thin uplinks of network block nb-0: the label rules alone put the new six-node
/// gang in nb-0's half-empty local blocks, sharing those uplinks; the fabric model moves it to
/// the idle block nb-1 and says by how much, with NCCL advice against its ECMP collisions.
#[test]
fn network_aware_moves_the_gang_off_shared_uplinks_and_reports_why() {
    let args = |aware: bool| {
        let mut a = vec![
            "place",
            "--cluster",
            "tests/fixtures/sched/clos-32-4to1.yaml",
            "--job",
            "tests/fixtures/sched/jobs/six-unconstrained.yaml",
            "--state",
            "tests/fixtures/sched/state/clos-32-cross-block.yaml",
            "--output",
            "json",
        ];
        if aware {
            a.push("--network-aware");
        }
        a
    };
    let label: PlacementFile = serde_json::from_str(&ok(&args(false))).expect("placement JSON");
    assert_eq!(label.network, None);
    let nodes = |p: &PlacementFile| p.pods.iter().map(|x| x.node.clone()).collect::<Vec<_>>();
    // Least free capacity first: the two free hosts of lb-0, lb-1, then lb-2 (node-008 runs).
    assert_eq!(
        nodes(&label),
        ["node-002", "node-003", "node-006", "node-007", "node-009", "node-010"]
    );
    let text = ok(&args(true));
    // Deterministic: the same inputs give the same bytes.
    assert_eq!(text, ok(&args(true)));
    let aware: PlacementFile = serde_json::from_str(&text).expect("placement JSON");
    // nb-1 (node-016..031) is idle: its first two local blocks, in rank order.
    assert_eq!(
        nodes(&aware),
        ["node-016", "node-017", "node-018", "node-019", "node-020", "node-021"]
    );
    assert_eq!(
        aware.pods.iter().map(|p| p.rank).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5]
    );
    let n = aware.network.expect("network section");
    assert_eq!(n.candidates, 2, "{n:?}");
    let [runner_up] = n.runners_up.as_slice() else {
        panic!("one runner-up expected: {n:?}")
    };
    assert_eq!(runner_up.domain, "label-only");
    let (chosen, beaten) = (n.busbw_gb_s.unwrap(), runner_up.busbw_gb_s.unwrap());
    let ideal = n.ideal_busbw_gb_s.unwrap();
    // 400G NICs: a ring's bus bandwidth is at most a NIC's 50 GB/s; sharing 4:1 uplinks with
    // the running job at least halves it.
    assert!(chosen <= ideal && ideal <= 50.0, "{n:?}");
    assert!(beaten < 0.6 * chosen, "{n:?}");
    assert!(
        n.margin.unwrap() > 0.0 && (n.score - runner_up.score - n.margin.unwrap()).abs() < 1e-2
    );
    // The score is at most the job's 48 GPUs (its ideal progress).
    assert!(n.score <= 48.0 && runner_up.score < n.score);
    let [advice] = n.nccl_advice.as_slice() else {
        panic!("one advice expected: {n:?}")
    };
    assert_eq!(advice.name, "NCCL_IB_QPS_PER_CONNECTION");
    assert!(advice.value.parse::<u32>().unwrap() > 4, "{advice:?}");
    assert!(advice.reason.contains("ECMP"), "{advice:?}");
    // Before and after: the label rules' placement shares its hottest ports (uplinks of nb-0,
    // tier 1) with the running split-4; the chosen one's hottest carry only the new job.
    let rows = |which: &str| -> Vec<_> {
        n.hot_links
            .iter()
            .filter(|h| h.placement == which)
            .collect()
    };
    let (before, after) = (rows("label-only"), rows("chosen"));
    assert_eq!((before.len(), after.len()), (3, 3), "{:?}", n.hot_links);
    for h in &before {
        assert_eq!(h.jobs, ["(this job)", "split-4"], "{h:?}");
        assert_eq!(h.tier, 1, "{h:?}");
    }
    // A max-min solve saturates each job's bottleneck: the hottest port is at 100%.
    assert_eq!(before[0].utilization, 1.0, "{before:?}");
    for h in &after {
        assert_eq!(h.jobs, ["(this job)"], "{h:?}");
        assert!(h.utilization <= 1.0 + 1e-9, "{h:?}");
    }
    // The label-only rows name nb-0's leaves (t0-g0, t0-g1, t0-g2), the chosen ones nb-1's.
    assert!(before.iter().all(|h| ["t0-g0-", "t0-g1-", "t0-g2-"]
        .iter()
        .any(|l| h.from.starts_with(l) || h.to.starts_with(l))));
    assert!(after.iter().all(|h| ["t0-g4-", "t0-g5-"]
        .iter()
        .any(|l| h.from.starts_with(l) || h.to.starts_with(l))));
}

/// Regression: a running job whose pods share a GPU (fractional) or use none is priced with each
/// GPU once, or left out of the fabric's traffic, instead of failing the fabric model.
#[test]
fn network_aware_prices_running_jobs_with_shared_or_no_gpus() {
    let dir = temp_dir("place-network-aware-shared");
    let state = dir.join("state.yaml");
    std::fs::write(
        &state,
        "jobs:\n  - name: shared\n    pods:\n      - {node: node-000, gpus: 0.5, gpu_ids: [0]}\n      - {node: node-000, gpus: 0.5, gpu_ids: [0]}\n      - {node: node-001, gpus: 0.5, gpu_ids: [0]}\n",
    )
    .unwrap();
    let p: PlacementFile = serde_json::from_str(&ok(&[
        "place",
        "--cluster",
        "tests/fixtures/sched/clos-32-4to1.yaml",
        "--job",
        "tests/fixtures/sched/jobs/six-unconstrained.yaml",
        "--state",
        state.to_str().unwrap(),
        "--network-aware",
        "--output",
        "json",
    ]))
    .unwrap();
    assert!(p.placed && p.network.is_some());
}

/// Issue 30, defect 3: nodes whose `status.allocatable` lacks `pods` take no pod (Kueue's TAS
/// counts pods per node). When that leaves the job nowhere, the error says why and names the
/// nodes, counted; when some nodes still fit, the placement carries it as a warning.
#[test]
fn nodes_without_pods_allocatable_are_named() {
    let error = fails(&[
        "place",
        "--cluster",
        "tests/fixtures/nodes/kind-workers-without-pods.yaml",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
        "--job",
        "tests/fixtures/sched/jobs/native-train.yaml",
    ]);
    assert!(error.contains("(the roomiest has room for 0); 8 of 8 nodes (kind-worker, kind-worker2, kind-worker3, …) have a status.allocatable without `pods`"), "{error}");
    assert!(
        error.ends_with(
            "add `pods` to their status.allocatable (the kubelet reports it, 110 by default)"
        ),
        "{error}"
    );
    let out = ok(&[
        "place",
        "--cluster",
        "tests/fixtures/nodes/kind-workers-two-without-pods.yaml",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
        "--job",
        "tests/fixtures/sched/jobs/native-train.yaml",
        "--output",
        "json",
    ]);
    let file: PlacementFile = serde_json::from_str(&out).expect("placement JSON");
    assert!(file.placed);
    assert!(
        file.pods
            .iter()
            .all(|p| p.node != "kind-worker" && p.node != "kind-worker2"),
        "{out}"
    );
    assert_eq!(file.warnings.len(), 1, "{out}");
    assert!(
        file.warnings[0].starts_with(
            "2 of 8 nodes (kind-worker, kind-worker2) have a status.allocatable without `pods`"
        ),
        "{out}"
    );
}

/// Issue 30, defect 8: a pod asking for 2000 MiB of GPU memory (KAI's `gpu-memory`) is shown as
/// that memory and its share of the GPU (2000 / 81920 = 0.0244, counted in thousandths rounded
/// up: 0.025), and the placement file keeps the memory.
#[test]
fn a_gpu_memory_request_is_shown_as_memory() {
    let args = [
        "place",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        "tests/fixtures/sched/jobs/kai-gpu-memory-pod.yaml",
    ];
    let text = ok(&args);
    assert!(
        text.starts_with("job gpu-sharing: placed 1 pod on 1 node (2000 MiB of GPU memory: 0.025 of one 80 GiB GPU); "),
        "{text}"
    );
    let mut json = args.to_vec();
    json.extend_from_slice(&["--output", "json"]);
    let file: PlacementFile = serde_json::from_str(&ok(&json)).expect("placement JSON");
    assert_eq!(file.pods[0].gpu_memory_mib, Some(2000));
    assert_eq!(file.pods[0].gpus, 0.025);
    // Whole GPUs carry no memory and read as before.
    let whole = place(&["--job", "tests/fixtures/sched/jobs/native-train.yaml"]);
    assert!(whole.pods.iter().all(|p| p.gpu_memory_mib.is_none()));
}

/// GB200 NVL72 (`preset:oci-gb200-nvl72-4k`: 4-GPU hosts, 18 per NVLink domain, local blocks of
/// 36, the NVLink domains a level `nvidia.com/gpu.clique` between host and local block):
/// `--layout tp=16,…` on a Kueue Job of 32 pods × 4 GPUs, so a TP group is 4 consecutive pods
/// on 4 hosts. The label rules alone split a TP group over two NVLink domains; with the layout
/// every TP group lands in one, on the preset (issue #28) and on the preset's nodes exported and
/// imported with their NVLink domain label as a level. A TP group wider than a domain is
/// refused naming `layout.tp`.
#[test]
fn a_tp_group_wider_than_a_host_lands_in_one_nvl72_domain() {
    let job = "tests/fixtures/sched/jobs/kueue-gb200-tp16.yaml";
    let dir = temp_dir("place-nvl72");
    let nodes = dir.join("nodes.json");
    let export = ok(&[
        "topo",
        "export",
        "--cluster",
        "preset:oci-gb200-nvl72-4k",
        "--format",
        "nodelist",
        "--output",
        "json",
    ]);
    std::fs::write(&nodes, &export).expect("write");
    let list: serde_json::Value = serde_json::from_str(&export).expect("NodeList JSON");
    let nvl = "accelerator.topograph.run/domain";
    let domain_of: std::collections::BTreeMap<String, String> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|n| {
            let labels = &n["metadata"]["labels"];
            let s = |k: &str| labels[k].as_str().expect("label").to_owned();
            (s("kubernetes.io/hostname"), s(nvl))
        })
        .collect();
    assert_eq!(
        domain_of
            .values()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        64
    );
    // TP groups (4 consecutive pods) spread over more than one NVLink domain.
    let split = |args: &[&str]| {
        let mut args = args.to_vec();
        args.extend(["--job", job, "--output", "json"]);
        let p: PlacementFile = serde_json::from_str(&ok(&args)).expect("placement JSON");
        assert!(p.placed, "{:?}", p.reason);
        assert_eq!(p.pods.len(), 32);
        p.pods
            .chunks(4)
            .filter(|g| {
                g.iter()
                    .any(|pod| domain_of[&pod.node] != domain_of[&g[0].node])
            })
            .count()
    };
    let preset = ["place", "--cluster", "preset:oci-gb200-nvl72-4k"];
    let levels = format!(
        "oci.oraclecloud.com/rdma.hpc_island_id,oci.oraclecloud.com/rdma.network_block_id,oci.oraclecloud.com/rdma.local_block_id,{nvl},kubernetes.io/hostname"
    );
    let imported = [
        "place",
        "--cluster",
        nodes.to_str().expect("utf-8"),
        "--levels",
        &levels,
    ];
    for (cluster, model, layout) in [
        (&preset[..], "llama3-70b", "tp=16,pp=2,dp=4"),
        (&preset[..], "gpt3-175b", "tp=16,pp=4,dp=2"),
        (&imported[..], "gpt3-175b", "tp=16,pp=4,dp=2"),
    ] {
        assert!(split(cluster) > 0, "the label rules alone split a TP group");
        let with = [cluster, &["--model", model, "--layout", layout][..]].concat();
        assert_eq!(split(&with), 0, "{with:?}");
    }
    let e = fails(
        &[
            &preset[..],
            &["--job", job, "--model", "llama3-70b", "--layout", "tp=128"][..],
        ]
        .concat(),
    );
    assert!(e.starts_with("error: layout.tp: a TP group"), "{e}");
    assert!(e.contains("use tp ≤ 72"), "{e}");
    // The preset's level is the NVLink domains under the label GPU feature discovery sets.
    let clique = "nvidia.com/gpu.clique";
    for n in list["items"].as_array().expect("items") {
        let labels = &n["metadata"]["labels"];
        assert_eq!(labels[clique], labels[nvl], "{n}");
    }
}
