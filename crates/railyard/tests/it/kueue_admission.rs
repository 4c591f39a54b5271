//! Kueue admission end to end: Kueue's own `sample-gpu-queues.yaml` (ClusterQueue
//! `tas-cluster-queue`, 16 GPUs, no cohort; LocalQueue `tas-user-queue`) with Jobs naming the
//! LocalQueue, through `place --queues`, `queues share`, `queues validate` and `lint`, as YAML
//! and as `kubectl get … -o json` Lists, with running Workloads as `--state`.

use formats::placement::PlacementFile;

use crate::ok;

const K: &str = "tests/fixtures/kueue";
const KIND: &[&str] = &[
    "--cluster",
    "tests/fixtures/nodes/kind-workers.yaml",
    "--topology",
    "tests/fixtures/nodes/kueue-topology.yaml",
];

fn place(job: &str, queues: &str, state: Option<&str>) -> PlacementFile {
    let job = format!("{K}/{job}");
    let queues = format!("{K}/{queues}");
    let mut args = vec!["place"];
    args.extend_from_slice(KIND);
    args.extend_from_slice(&["--job", &job, "--queues", &queues, "--output", "json"]);
    let state = state.map(|s| format!("{K}/{s}"));
    if let Some(s) = &state {
        args.extend_from_slice(&["--state", s]);
    }
    serde_json::from_str(&ok(&args)).expect("placement JSON")
}

/// Kueue's message for a request above what a ClusterQueue can ever have
/// (`flavorassigner.go` `fitsResourceQuota`, kubernetes-sigs/kueue ff69552).
const TOO_BIG: &str = "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor tas-flavor, previously considered podsets requests (0) + current podset request (24) > maximum capacity (16)";

#[test]
fn the_sample_queues_keep_24_gpus_pending_and_admit_8() {
    for queues in ["sample-gpu-queues.yaml", "kubectl-queues.json"] {
        let p = place("job-gpu-24.yaml", queues, None);
        assert!(!p.placed, "{queues}");
        assert_eq!(p.reason.as_deref(), Some(TOO_BIG), "{queues}");
        let p = place("job-gpu-8.yaml", queues, None);
        assert!(p.placed, "{queues}: {:?}", p.reason);
        assert_eq!(p.pods.iter().map(|p| p.gpus).sum::<f64>(), 8.0);
        // No cohort: 16 GPUs fit when nothing runs.
        assert!(place("job-gpu-16.yaml", queues, None).placed, "{queues}");
    }
    // The text output says the same.
    let job = format!("{K}/job-gpu-24.yaml");
    let queues = format!("{K}/sample-gpu-queues.yaml");
    let mut args = vec!["place"];
    args.extend_from_slice(KIND);
    args.extend_from_slice(&["--job", &job, "--queues", &queues]);
    assert_eq!(ok(&args), format!("job gpu-24: not placed: {TOO_BIG}\n"));
}

#[test]
fn running_workloads_count_against_their_cluster_queue() {
    // One admitted Workload holds 8 GPUs of tas-cluster-queue (status.admission.clusterQueue)
    // on kind-worker: 8 more fit, 16 wait for the 8 in use.
    let p = place(
        "job-gpu-8.yaml",
        "kubectl-queues.json",
        Some("kubectl-workloads.json"),
    );
    assert!(p.placed, "{:?}", p.reason);
    assert!(p.pods.iter().all(|p| p.node != "kind-worker"));
    let p = place(
        "job-gpu-16.yaml",
        "kubectl-queues.json",
        Some("kubectl-workloads.json"),
    );
    assert!(!p.placed);
    assert_eq!(
        p.reason.as_deref(),
        Some("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor tas-flavor, 8 more needed")
    );
}

#[test]
fn share_validate_and_lint_read_the_local_queue() {
    let queues = format!("{K}/sample-gpu-queues.yaml");
    let job = format!("{K}/job-gpu-24.yaml");
    let out = ok(&[
        "queues", "share", "--queues", &queues, "--demand", &job, "--output", "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let q = &v["queues"][0];
    assert_eq!(q["queue"], "tas-cluster-queue");
    assert_eq!(q["gpu"]["demand"], 24.0);
    // No cohort: never more than the nominal quota.
    assert_eq!(q["gpu"]["fair_share"], 16.0);
    assert_eq!(q["gpu"]["limit"], 16.0);
    assert!(ok(&["queues", "validate", &queues, &job]).contains("no problems"));
    // lint warns that Kueue accepts the 24-GPU job and keeps it pending for ever.
    let never = format!("{job}: document 1: metadata.labels[kueue.x-k8s.io/queue-name]: warning: Kueue keeps job `gpu-24` pending: it asks for 24 nvidia.com/gpu, above the most ClusterQueue tas-cluster-queue can ever have in any flavor (16)\n");
    assert_eq!(
        ok(&["lint", &queues, &job]),
        format!("{never}5 documents in 2 files: 0 errors, 1 warning\n")
    );
    let fits = format!("{K}/job-gpu-16.yaml");
    assert!(ok(&["lint", &queues, &fits]).contains("no findings"));
    // The same objects as `kubectl get clusterqueues,localqueues,cohorts,resourceflavors -A -o json`.
    let list = format!("{K}/kubectl-queues.json");
    assert_eq!(
        ok(&["queues", "validate", &list, &job]),
        "ok: 1 queue, 1 job, no problems\n"
    );
    // lint looks inside the List for its queue checks: the same warning.
    assert!(ok(&["lint", &list, &job]).starts_with(&never));
    let out = ok(&[
        "queues", "share", "--queues", &list, "--demand", &job, "--output", "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["queues"][0]["gpu"]["fair_share"], 16.0);
    // Kueue's webhook allows a lendingLimit above the nominal quota.
    let lending = format!("{K}/lending-above-nominal.yaml");
    assert!(ok(&["queues", "validate", &lending]).starts_with("ok: "));
}

#[test]
fn simulate_keeps_a_cluster_queue_without_a_cohort_within_its_nominal_quota() {
    // research: nominal 16, no cohort. Of small.csv's research jobs, ring-32 and big-64 can
    // never be admitted (above 16); ring-16 (submitted at 10 s) waits for warmup (8 GPUs, ends at
    // 600 s) since 8 + 16 > 16. `--check-invariants` fails the run if a queue goes above its limit.
    let args = [
        "simulate",
        "--cluster",
        "preset:philly-512",
        "--trace",
        "tests/fixtures/traces/small.csv",
        "--queues",
        "tests/fixtures/queues/sim-kueue-no-cohort.yaml",
        "--check-invariants",
        "-o",
        "json",
    ];
    let v: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
    let research = &v["queues"][1];
    assert_eq!(research["queue"], "research");
    assert_eq!(research["jobs"], 4);
    assert_eq!(research["completed"], 2);
    assert_eq!(research["avg_wait_s"].as_f64(), Some((600.0 - 10.0) / 2.0));
    assert_eq!(research["preemptions"], 0);
}

#[test]
fn a_flavor_toleration_counts_in_the_can_never_be_placed_check() {
    // Every node is tainted nvidia.com/gpu:NoSchedule; the job has no toleration, the sample's
    // ResourceFlavor tas-flavor tolerates it.
    let cluster = [
        "--cluster",
        "tests/fixtures/kueue/kind-workers-gpu-tainted.yaml",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
    ];
    let job = format!("{K}/job-gpu-8.yaml");
    let queues = format!("{K}/sample-gpu-queues.yaml");
    let mut args = vec!["place"];
    args.extend_from_slice(&cluster);
    args.extend_from_slice(&["--job", &job]);
    let e = crate::fails(&args);
    assert!(e.contains("can never be placed"), "{e}");
    args.extend_from_slice(&["--queues", &queues, "--output", "json"]);
    let p: PlacementFile = serde_json::from_str(&ok(&args)).unwrap();
    assert!(p.placed, "{:?}", p.reason);
}

/// Kueue's example manifests (`tests/fixtures/kueue/examples/`, from Kueue's
/// `site/static/examples/` at ff69552): each setup and its job pass `queues validate` and
/// `lint` (with lint's warning that `place` refuses a job asking for no GPU), and Kueue's admission admits the job to the flavor Kueue's documentation shows.
/// These jobs ask for CPU and memory only, which railyard does not place (it places GPU jobs),
/// so the admission is checked through `ops::kueue_admit` directly.
#[test]
fn kueue_example_manifests_validate_lint_and_are_admitted_to_their_flavor() {
    let e = "tests/fixtures/kueue/examples";
    for (setup, job, flavor) in [
        (
            "admin_single-clusterqueue-setup",
            "jobs_sample-job",
            "default-flavor",
        ),
        (
            "admin_shared-quota-setup",
            "admin_shared-quota-sample-job",
            "on-demand",
        ),
        (
            "getting-started_quick-start-setup",
            "getting-started_quick-start-job",
            "default-flavor",
        ),
        ("tas_sample-queues", "tas_sample-job-required", "tas-flavor"),
        (
            "tas_sample-queues",
            "tas_sample-job-preferred",
            "tas-flavor",
        ),
        (
            "tas_sample-queues",
            "tas_sample-job-unconstrained",
            "tas-flavor",
        ),
    ] {
        let setup = format!("{e}/{setup}.yaml");
        let job = format!("{e}/{job}.yaml");
        assert!(
            ok(&["queues", "validate", &setup, &job]).contains("no problems"),
            "{job}"
        );
        // lint passes the job, warning that railyard's place refuses it (it asks for no GPU).
        let lint = ok(&["lint", &setup, &job]);
        assert!(lint.ends_with(": 0 errors, 1 warning\n"), "{job}: {lint}");
        assert!(
            lint.contains("warning: railyard place refuses it: "),
            "{lint}"
        );
        let files: Vec<(String, String)> = [&setup, &job]
            .iter()
            .map(|f| (f.to_string(), std::fs::read_to_string(f).unwrap()))
            .collect();
        let objects = ops::kueue_admit::read_objects(&files[..1])
            .unwrap()
            .unwrap();
        let mut q = ops::kueue_admit::queues(&objects, &[]).unwrap();
        let doc: serde_json::Value = serde_norway::from_str(&files[1].1).unwrap();
        let ns = doc["metadata"]["namespace"].as_str().unwrap_or("default");
        let lq = doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
            .as_str()
            .unwrap();
        let Some(ops::kueue_admit::Resolved::ClusterQueue(cq)) =
            ops::kueue_admit::resolve(&objects, &q, ns, lq)
        else {
            panic!("{job}: LocalQueue {lq} not resolved");
        };
        let per_pod = doc
            .pointer("/spec/template/spec/containers/0/resources/requests")
            .and_then(serde_json::Value::as_object)
            .unwrap()
            .iter()
            .map(|(r, v)| (r.clone(), formats::kueue_objects::amount(r, v).unwrap()))
            .collect();
        let req = vec![sched::kueue::PodSetRequest {
            name: "main".to_owned(),
            count: doc["spec"]["parallelism"].as_u64().unwrap_or(1) as u32,
            min_count: None,
            per_pod,
        }];
        let n = q.find(&cq).unwrap();
        let check =
            |_: usize, f: &str| ops::kueue_admit::flavor_mismatch(objects.flavor(f), f, &[], None);
        let a = sched::kueue::assign::assign(&mut q, n, &req, 0, 0, &check);
        assert!(a.admitted(), "{job}: {}", a.message());
        assert_eq!(a.pod_sets[0].flavor(), Some(flavor), "{job}");
    }
}

#[test]
fn a_running_workload_is_counted_for_the_cluster_queue_that_admitted_it() {
    // kubectl-workloads.json: Workload of Job running-8, spec.queueName tas-user-queue (a
    // LocalQueue), status.admission.clusterQueue tas-cluster-queue.
    let options = formats::k8s::ImportOptions {
        topology: Some("tests/fixtures/nodes/kueue-topology.yaml".into()),
        ..Default::default()
    };
    let cluster = ops::cluster::load("tests/fixtures/nodes/kind-workers.yaml", &options)
        .unwrap()
        .cluster;
    let file = format!("{K}/kubectl-workloads.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let occ = formats::state::read(&file, &text, &cluster).unwrap();
    let job = &occ.jobs()["default/running-8"];
    assert_eq!(job.job.queue, "tas-cluster-queue");
    assert_eq!(job.milli_gpus(), 8000);
}

#[test]
fn quota_preemption_within_the_cluster_queue_stops_the_lower_priority_workload() {
    // 8 of the 16 GPUs are held by running-8 (priority 0). A 16-GPU job at priority 100 needs
    // them: with withinClusterQueue LowerPriority Kueue preempts running-8, and placement then
    // uses its node; without preemption the job waits with Kueue's message.
    let p = place(
        "job-gpu-16-urgent.yaml",
        "sample-gpu-queues-preempting.yaml",
        Some("kubectl-workloads.json"),
    );
    assert!(p.placed, "{:?}", p.reason);
    assert_eq!(p.preempted, vec!["default/running-8".to_owned()]);
    assert_eq!(p.pods.iter().map(|p| p.gpus).sum::<f64>(), 16.0);
    let p = place(
        "job-gpu-16-urgent.yaml",
        "sample-gpu-queues.yaml",
        Some("kubectl-workloads.json"),
    );
    assert!(!p.placed);
    assert!(p.preempted.is_empty());
    assert!(
        p.reason.as_deref().unwrap().ends_with("8 more needed"),
        "{:?}",
        p.reason
    );
}
