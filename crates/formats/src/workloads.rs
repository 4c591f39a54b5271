//! Kubernetes workload kinds as the pod templates they run: which pod sets a `batch/v1` Job,
//! JobSet, PyTorchJob, MPIJob, TrainJob, LeaderWorkerSet, RayJob, RayCluster, Deployment,
//! StatefulSet or Pod makes, how many pods each has, and where its template is (for messages).
//!
//! The pod-set names and counts follow Kueue's integrations (kubernetes-sigs/kueue at
//! ff69552e, `pkg/controller/jobs/*`): a Job is one set `main` of min(parallelism, completions)
//! pods; a JobSet one set per replicated job of replicas × min(parallelism, completions); a
//! PyTorchJob `master` then `worker`, an MPIJob `launcher` then `worker`, each of `replicas`
//! (default 1); a RayCluster `head` (1) then one set per worker group of replicas × numOfHosts,
//! and a RayJob the same plus `submitter` (1) in `K8sJobMode`, the API default; a
//! LeaderWorkerSet group `leader` (1) and `worker` (size − 1), or `main` (size) without a leader
//! template, once per replica group. Deployments and StatefulSets are one set of `replicas`.
//! Nothing here knows queues or schedulers: `jobs` reads the Kueue or KAI markings of each set.

use serde_json::{json, Value};

use crate::error::FieldProblem;

/// Most pods one job may ask for, over all its pod sets: one per node of the largest cluster
/// railyard accepts. Larger counts are refused while the file is read.
pub const MAX_PODS_PER_JOB: u32 = topology::MAX_NODES as u32;

/// One pod set of a workload: pods that share a template.
#[derive(Clone, Debug, PartialEq)]
pub struct PodTemplateSet {
    /// The pod set's name as Kueue names it (lower case), e.g. `main`, `worker`, `head`.
    pub name: String,
    /// Pods.
    pub count: u32,
    /// The pod template (`metadata` and `spec`).
    pub template: Value,
    /// Where the template is in the document, e.g. `spec.replicatedJobs[1].template.spec.template`.
    pub field: String,
}

/// A workload kind railyard reads: kind, the API groups/versions it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadKind {
    /// `kind`.
    pub kind: &'static str,
    /// Accepted `apiVersion`s.
    pub api_versions: &'static [&'static str],
}

/// Every workload kind railyard can read into pod sets.
pub const KINDS: &[WorkloadKind] = &[
    WorkloadKind {
        kind: "Job",
        api_versions: &["batch/v1"],
    },
    WorkloadKind {
        kind: "JobSet",
        api_versions: &["jobset.x-k8s.io/v1alpha2"],
    },
    WorkloadKind {
        kind: "PyTorchJob",
        api_versions: &["kubeflow.org/v1"],
    },
    WorkloadKind {
        kind: "MPIJob",
        api_versions: &["kubeflow.org/v2beta1"],
    },
    WorkloadKind {
        kind: "TrainJob",
        api_versions: &["trainer.kubeflow.org/v1alpha1"],
    },
    WorkloadKind {
        kind: "LeaderWorkerSet",
        api_versions: &["leaderworkerset.x-k8s.io/v1"],
    },
    WorkloadKind {
        kind: "RayJob",
        api_versions: &["ray.io/v1"],
    },
    WorkloadKind {
        kind: "RayCluster",
        api_versions: &["ray.io/v1"],
    },
    WorkloadKind {
        kind: "Deployment",
        api_versions: &["apps/v1"],
    },
    WorkloadKind {
        kind: "StatefulSet",
        api_versions: &["apps/v1"],
    },
    WorkloadKind {
        kind: "Pod",
        api_versions: &["v1"],
    },
];

/// The kinds as a list for messages: `Job (batch/v1), JobSet (jobset.x-k8s.io/v1alpha2), …`.
pub fn kinds_list() -> String {
    KINDS
        .iter()
        .map(|k| format!("{} ({})", k.kind, k.api_versions.join(", ")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The workload kind of a document: `Ok(None)` when the kind is not a workload railyard knows
/// (a Queue, a Topology, a ConfigMap…), an error when the kind is known but the API version is
/// not.
pub fn kind_of(doc: &Value) -> Result<Option<&'static WorkloadKind>, String> {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let api = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let Some(k) = KINDS.iter().find(|k| k.kind == kind) else {
        return Ok(None);
    };
    if k.api_versions.contains(&api) {
        Ok(Some(k))
    } else if kind == "MPIJob" && api == "kubeflow.org/v1" {
        Err(format!(
            "apiVersion: kubeflow.org/v1 MPIJob (the training operator's) is not supported; expected {} (the MPI Operator's, which Kueue integrates)",
            k.api_versions.join(", ")
        ))
    } else {
        Err(format!(
            "apiVersion: expected {} for kind {kind}, got \"{api}\"",
            k.api_versions.join(" or ")
        ))
    }
}

fn at<'v>(v: &'v Value, keys: &[&str]) -> Option<&'v Value> {
    keys.iter().try_fold(v, |v, k| v.get(k))
}

fn problem(field: impl Into<String>, message: impl Into<String>) -> FieldProblem {
    FieldProblem {
        field: field.into(),
        message: message.into(),
    }
}

/// A count field: absent is `default`; else 0..=MAX_PODS_PER_JOB (a number or numeric string).
fn count(v: &Value, keys: &[&str], default: u32, min: u32) -> Result<u32, FieldProblem> {
    let field = keys.join(".");
    match at(v, keys) {
        None | Some(Value::Null) => Ok(default),
        // The API's integer fields: a number, not a numeric string (the API server refuses
        // `parallelism: "2"`).
        Some(x) => x
            .as_u64()
            .filter(|&n| (u64::from(min)..=u64::from(MAX_PODS_PER_JOB)).contains(&n))
            .map(|n| n as u32)
            .ok_or_else(|| {
                problem(
                    field,
                    format!("expected {min}..={MAX_PODS_PER_JOB}, got {x}"),
                )
            }),
    }
}

fn template(v: &Value, keys: &[&str], base: &str) -> Result<(Value, String), FieldProblem> {
    let field = if base.is_empty() {
        keys.join(".")
    } else {
        format!("{base}.{}", keys.join("."))
    };
    match at(v, keys) {
        Some(t) if t.is_object() => Ok((t.clone(), field)),
        Some(t) => Err(problem(field, format!("expected a pod template, got {t}"))),
        None => Err(problem(field, "missing pod template")),
    }
}

/// Pods a `batch/v1` Job spec runs at once: min(parallelism, completions), Kueue's count.
fn job_pods(spec: &Value, base: &str) -> Result<u32, FieldProblem> {
    let prefixed = |p: FieldProblem| FieldProblem {
        field: format!("{base}.{}", p.field),
        ..p
    };
    let parallelism = count(spec, &["parallelism"], 1, 1).map_err(prefixed)?;
    let completions = count(spec, &["completions"], parallelism, 1).map_err(prefixed)?;
    Ok(parallelism.min(completions))
}

fn checked_total(sets: &[PodTemplateSet]) -> Result<(), FieldProblem> {
    let total: u64 = sets.iter().map(|s| u64::from(s.count)).sum();
    if total > u64::from(MAX_PODS_PER_JOB) {
        return Err(problem(
            "spec",
            format!("the pod sets add up to {total} pods, more than the limit of {MAX_PODS_PER_JOB} per job"),
        ));
    }
    Ok(())
}

/// The pod sets of one workload document of a known kind ([`kind_of`]). A LeaderWorkerSet
/// gives its pod sets once per replica group: the caller makes one job per group
/// ([`replica_groups`]).
pub fn pod_sets(doc: &Value, kind: &WorkloadKind) -> Result<Vec<PodTemplateSet>, FieldProblem> {
    let spec = doc.get("spec").cloned().unwrap_or(Value::Null);
    let mut sets = Vec::new();
    let mut push = |name: &str, count: u32, (template, field): (Value, String)| {
        sets.push(PodTemplateSet {
            name: name.to_ascii_lowercase(),
            count,
            template,
            field,
        });
    };
    match kind.kind {
        "Job" => push(
            "main",
            job_pods(&spec, "spec")?,
            template(&spec, &["template"], "spec")?,
        ),
        "Deployment" | "StatefulSet" => push(
            "main",
            count(&spec, &["replicas"], 1, 1).map_err(|p| FieldProblem {
                field: format!("spec.{}", p.field),
                ..p
            })?,
            template(&spec, &["template"], "spec")?,
        ),
        "Pod" => push(
            "main",
            1,
            (
                json!({"metadata": doc.get("metadata").cloned().unwrap_or(Value::Null),
                       "spec": spec.clone()}),
                String::new(),
            ),
        ),
        "JobSet" => {
            let list = spec
                .get("replicatedJobs")
                .and_then(Value::as_array)
                .filter(|l| !l.is_empty())
                .ok_or_else(|| problem("spec.replicatedJobs", "expected a non-empty list"))?;
            for (i, rj) in list.iter().enumerate() {
                let base = format!("spec.replicatedJobs[{i}]");
                let name = rj
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| problem(format!("{base}.name"), "missing"))?;
                let replicas = count(rj, &["replicas"], 1, 1).map_err(|p| FieldProblem {
                    field: format!("{base}.{}", p.field),
                    ..p
                })?;
                let job_spec = at(rj, &["template", "spec"])
                    .cloned()
                    .unwrap_or(Value::Null);
                let per_replica = job_pods(&job_spec, &format!("{base}.template.spec"))?;
                let pods = u64::from(replicas) * u64::from(per_replica);
                let pods = u32::try_from(pods)
                    .ok()
                    .filter(|&n| n <= MAX_PODS_PER_JOB)
                    .ok_or_else(|| {
                        problem(
                            format!("{base}.replicas"),
                            format!("{replicas} replicas × {per_replica} pods is more than the limit of {MAX_PODS_PER_JOB} per job"),
                        )
                    })?;
                push(
                    name,
                    pods,
                    template(&job_spec, &["template"], &format!("{base}.template.spec"))?,
                );
            }
        }
        "PyTorchJob" | "MPIJob" => {
            let (key, order): (&str, &[&str]) = if kind.kind == "PyTorchJob" {
                ("pytorchReplicaSpecs", &["Master", "Worker"])
            } else {
                ("mpiReplicaSpecs", &["Launcher", "Worker"])
            };
            let specs = spec
                .get(key)
                .and_then(Value::as_object)
                .ok_or_else(|| problem(format!("spec.{key}"), "expected a map of replica specs"))?;
            if let Some(other) = specs.keys().find(|k| !order.contains(&k.as_str())) {
                return Err(problem(
                    format!("spec.{key}.{other}"),
                    format!("unknown replica type; expected {}", order.join(" or ")),
                ));
            }
            for role in order {
                let Some(rs) = specs.get(*role).filter(|v| !v.is_null()) else {
                    continue;
                };
                let base = format!("spec.{key}.{role}");
                let replicas = count(rs, &["replicas"], 1, 1).map_err(|p| FieldProblem {
                    field: format!("{base}.{}", p.field),
                    ..p
                })?;
                push(role, replicas, template(rs, &["template"], &base)?);
            }
            if sets.is_empty() {
                return Err(problem(
                    format!("spec.{key}"),
                    format!("expected a {} replica spec", order.join(" or ")),
                ));
            }
        }
        "TrainJob" => {
            // A TrainJob's pod templates live in its TrainingRuntime; only the trainer's node
            // count and per-node resources can be in the object itself.
            let nodes = count(&spec, &["trainer", "numNodes"], 1, 1).map_err(|p| FieldProblem {
                field: format!("spec.{}", p.field),
                ..p
            })?;
            let resources = at(&spec, &["trainer", "resourcesPerNode"])
                .filter(|r| r.is_object())
                .ok_or_else(|| {
                    problem(
                        "spec.trainer.resourcesPerNode",
                        "missing; the pod shape of a TrainJob without it is in its TrainingRuntime, which railyard does not read (give the runtime's JobSet instead)",
                    )
                })?;
            push(
                "node",
                nodes,
                (
                    json!({"metadata": {}, "spec": {"containers": [{"name": "node", "resources": resources}]}}),
                    "spec.trainer".to_owned(),
                ),
            );
        }
        "LeaderWorkerSet" => {
            let base = "spec.leaderWorkerTemplate";
            let lwt = spec
                .get("leaderWorkerTemplate")
                .ok_or_else(|| problem(base, "missing"))?;
            let size = count(lwt, &["size"], 1, 1).map_err(|p| FieldProblem {
                field: format!("{base}.{}", p.field),
                ..p
            })?;
            match lwt.get("leaderTemplate").filter(|v| !v.is_null()) {
                Some(_) => {
                    push("leader", 1, template(lwt, &["leaderTemplate"], base)?);
                    if size > 1 {
                        push(
                            "worker",
                            size - 1,
                            template(lwt, &["workerTemplate"], base)?,
                        );
                    }
                }
                None => push("main", size, template(lwt, &["workerTemplate"], base)?),
            }
        }
        "RayJob" | "RayCluster" => {
            let (cluster, base) = if kind.kind == "RayJob" {
                (
                    spec.get("rayClusterSpec")
                        .ok_or_else(|| problem("spec.rayClusterSpec", "missing"))?,
                    "spec.rayClusterSpec",
                )
            } else {
                (&spec, "spec")
            };
            push(
                "head",
                1,
                template(cluster, &["headGroupSpec", "template"], base)?,
            );
            let groups = cluster
                .get("workerGroupSpecs")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for (i, g) in groups.iter().enumerate() {
                let gbase = format!("{base}.workerGroupSpecs[{i}]");
                let name = g
                    .get("groupName")
                    .and_then(Value::as_str)
                    .ok_or_else(|| problem(format!("{gbase}.groupName"), "missing"))?;
                let prefixed = |p: FieldProblem| FieldProblem {
                    field: format!("{gbase}.{}", p.field),
                    ..p
                };
                let replicas = count(g, &["replicas"], 1, 0).map_err(prefixed)?;
                let hosts = count(g, &["numOfHosts"], 1, 1).map_err(prefixed)?;
                let pods = u64::from(replicas) * u64::from(hosts);
                let pods = u32::try_from(pods)
                    .ok()
                    .filter(|&n| n <= MAX_PODS_PER_JOB)
                    .ok_or_else(|| {
                        problem(
                            format!("{gbase}.replicas"),
                            format!("{replicas} replicas × {hosts} hosts is more than the limit of {MAX_PODS_PER_JOB} per job"),
                        )
                    })?;
                if pods > 0 {
                    push(name, pods, template(g, &["template"], &gbase)?);
                }
            }
            let mode = spec
                .get("submissionMode")
                .and_then(Value::as_str)
                .unwrap_or("K8sJobMode");
            if kind.kind == "RayJob" && mode == "K8sJobMode" {
                let t = match spec.get("submitterPodTemplate").filter(|v| v.is_object()) {
                    Some(t) => (t.clone(), "spec.submitterPodTemplate".to_owned()),
                    // KubeRay's default submitter: requests 500m CPU and 200Mi, as Kueue
                    // accounts for it (pkg/controller/jobs/rayjob, defaultSubmitterResources).
                    None => (
                        json!({"metadata": {}, "spec": {"containers": [{"name": "ray-job-submitter",
                            "resources": {"requests": {"cpu": "500m", "memory": "200Mi"},
                                          "limits": {"cpu": "1", "memory": "1Gi"}}}]}}),
                        "spec.submitterPodTemplate (KubeRay's default submitter)".to_owned(),
                    ),
                };
                push("submitter", 1, t);
            }
        }
        other => return Err(problem("kind", format!("{other} has no pod sets"))),
    }
    checked_total(&sets)?;
    Ok(sets)
}

/// Replica groups of a LeaderWorkerSet (`spec.replicas`, default 1): each group is its own
/// workload to Kueue. 1 for every other kind.
pub fn replica_groups(doc: &Value, kind: &WorkloadKind) -> Result<u32, FieldProblem> {
    if kind.kind != "LeaderWorkerSet" {
        return Ok(1);
    }
    count(doc, &["spec", "replicas"], 1, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(yaml: &str) -> Vec<(String, u32, String)> {
        let doc: Value = serde_norway::from_str(yaml).unwrap();
        let kind = kind_of(&doc).unwrap().expect("a known kind");
        pod_sets(&doc, kind)
            .unwrap()
            .into_iter()
            .map(|s| (s.name, s.count, s.field))
            .collect()
    }

    fn s(name: &str, count: u32, field: &str) -> (String, u32, String) {
        (name.to_owned(), count, field.to_owned())
    }

    #[test]
    fn a_job_runs_min_of_parallelism_and_completions() {
        let job = "apiVersion: batch/v1\nkind: Job\nspec:\n  parallelism: 4\n  completions: 3\n  template: {spec: {}}\n";
        assert_eq!(sets(job), vec![s("main", 3, "spec.template")]);
        let job =
            "apiVersion: batch/v1\nkind: Job\nspec:\n  parallelism: 4\n  template: {spec: {}}\n";
        assert_eq!(sets(job), vec![s("main", 4, "spec.template")]);
    }

    #[test]
    fn a_jobset_has_one_pod_set_per_replicated_job() {
        let js = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nspec:\n  replicatedJobs:\n  - name: Driver\n    template: {spec: {template: {spec: {}}}}\n  - name: workers\n    replicas: 3\n    template: {spec: {parallelism: 4, completions: 4, template: {spec: {}}}}\n";
        assert_eq!(
            sets(js),
            vec![
                s("driver", 1, "spec.replicatedJobs[0].template.spec.template"),
                s(
                    "workers",
                    12,
                    "spec.replicatedJobs[1].template.spec.template"
                ),
            ]
        );
    }

    #[test]
    fn kubeflow_replica_types_come_in_kueue_order() {
        let pj = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec:\n  pytorchReplicaSpecs:\n    Worker: {replicas: 7, template: {spec: {}}}\n    Master: {replicas: 1, template: {spec: {}}}\n";
        assert_eq!(
            sets(pj),
            vec![
                s("master", 1, "spec.pytorchReplicaSpecs.Master.template"),
                s("worker", 7, "spec.pytorchReplicaSpecs.Worker.template"),
            ]
        );
        let mpi = "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nspec:\n  mpiReplicaSpecs:\n    Worker: {replicas: 2, template: {spec: {}}}\n    Launcher: {template: {spec: {}}}\n";
        assert_eq!(
            sets(mpi)[0],
            s("launcher", 1, "spec.mpiReplicaSpecs.Launcher.template")
        );
    }

    #[test]
    fn ray_groups_scale_by_hosts_and_a_rayjob_adds_its_submitter() {
        let rj = "apiVersion: ray.io/v1\nkind: RayJob\nspec:\n  rayClusterSpec:\n    headGroupSpec: {template: {spec: {}}}\n    workerGroupSpecs:\n    - {groupName: GPU-group, replicas: 2, numOfHosts: 4, template: {spec: {}}}\n";
        let got = sets(rj);
        assert_eq!(
            got[0],
            s("head", 1, "spec.rayClusterSpec.headGroupSpec.template")
        );
        assert_eq!(
            got[1],
            s(
                "gpu-group",
                8,
                "spec.rayClusterSpec.workerGroupSpecs[0].template"
            )
        );
        assert_eq!(got[2].0, "submitter");
        let http = rj.replace(
            "spec:\n  rayClusterSpec",
            "spec:\n  submissionMode: HTTPMode\n  rayClusterSpec",
        );
        assert_eq!(sets(&http).len(), 2);
    }

    #[test]
    fn a_leaderworkerset_group_is_leader_and_workers() {
        let lws = "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nspec:\n  replicas: 3\n  leaderWorkerTemplate:\n    size: 4\n    leaderTemplate: {spec: {}}\n    workerTemplate: {spec: {}}\n";
        assert_eq!(
            sets(lws),
            vec![
                s("leader", 1, "spec.leaderWorkerTemplate.leaderTemplate"),
                s("worker", 3, "spec.leaderWorkerTemplate.workerTemplate"),
            ]
        );
        let doc: Value = serde_norway::from_str(lws).unwrap();
        assert_eq!(replica_groups(&doc, kind_of(&doc).unwrap().unwrap()), Ok(3));
    }

    #[test]
    fn known_kinds_with_unknown_versions_are_errors_and_other_kinds_are_not_workloads() {
        let doc = json!({"apiVersion": "batch/v2", "kind": "Job"});
        assert!(kind_of(&doc).unwrap_err().contains("expected batch/v1"));
        let doc = json!({"apiVersion": "kubeflow.org/v1", "kind": "MPIJob"});
        assert!(kind_of(&doc).unwrap_err().contains("v2beta1"));
        let doc = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        assert_eq!(kind_of(&doc), Ok(None));
    }

    #[test]
    fn counts_beyond_the_limit_are_refused() {
        let js = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nspec:\n  replicatedJobs:\n  - name: w\n    replicas: 100000\n    template: {spec: {parallelism: 100000, template: {spec: {}}}}\n";
        let doc: Value = serde_norway::from_str(js).unwrap();
        let e = pod_sets(&doc, kind_of(&doc).unwrap().unwrap()).unwrap_err();
        assert_eq!(e.field, "spec.replicatedJobs[0].replicas");
    }
}
