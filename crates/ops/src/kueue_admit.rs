//! Kueue admission for `place --queues`, `queues validate` and `lint`: Kueue objects read from
//! the queue files ([`formats::kueue_objects`]), the quota held by running Workloads, the job's
//! LocalQueue resolved in its namespace, and [`sched::kueue::assign::assign`]'s decision —
//! which flavor each pod set gets, or Kueue's reason for leaving it pending.

use std::collections::BTreeMap;

use formats::input::parse_documents;
use formats::kueue_objects::{self, KueueObjects, ResourceFlavor};
use formats::queues::list_items;
use formats::FormatError;
use sched::kueue::{assign, Admitted, KueueQueues, PodSetRequest};
use serde_json::Value;

/// Kueue's resource name for GPUs.
pub const GPU: &str = "nvidia.com/gpu";

/// The label Kubernetes puts on every namespace with its name (a namespace's other labels come
/// from Namespace objects in the queue files, `KueueObjects::namespaces`).
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The Kueue objects of queue files (`(file, text)`); `None` when they declare no
/// ClusterQueue or LocalQueue (KAI Queues, or only ResourceFlavors).
pub fn read_objects(files: &[(String, String)]) -> Result<Option<KueueObjects>, FormatError> {
    let mut objects = KueueObjects::default();
    for (file, text) in files {
        let docs = list_items(parse_documents(file, text)?);
        objects.read(file, &docs);
    }
    if !objects.problems.is_empty() {
        return Err(FormatError::Problems(objects.problems));
    }
    Ok(objects.has_queues().then_some(objects))
}

/// The quota tree of the objects, with the usage of the admitted Workloads counted.
pub fn queues(objects: &KueueObjects, admitted: &[Admitted]) -> Result<KueueQueues, FormatError> {
    let mut q = KueueQueues::new(&objects.cluster_queues, &objects.cohorts)
        .map_err(|ps| FormatError::Problems(ps.iter().map(ToString::to_string).collect()))?;
    for w in admitted {
        q.admit_existing(w.clone())
            .map_err(|p| FormatError::Problems(vec![format!("--state: {p}")]))?;
    }
    Ok(q)
}

/// The admitted Workloads of state files that are Workload lists (`kubectl get workloads -A -o
/// json`), in file order; `None` when no state file is one.
pub fn admitted_from_state(
    files: &[(String, String)],
) -> Result<Option<Vec<Admitted>>, FormatError> {
    let mut out: Option<Vec<Admitted>> = None;
    for (file, text) in files {
        for d in parse_documents(file, text)? {
            if formats::live::is_list_of(&d, "Workload") {
                let mut w = kueue_objects::admitted_workloads(file, &d)?;
                let base = out.as_ref().map_or(0, Vec::len) as i64;
                for x in &mut w {
                    x.admitted_at += base;
                }
                out.get_or_insert_with(Vec::new).extend(w);
            }
        }
    }
    Ok(out)
}

/// The namespace of a job document (`metadata.namespace`, `default` when left out).
pub fn job_namespace(file: &str, text: &str, document: usize) -> Result<String, FormatError> {
    let docs = list_items(parse_documents(file, text)?);
    Ok(docs
        .get(document.saturating_sub(1))
        .and_then(|d| d.pointer("/metadata/namespace"))
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned())
}

/// Where a job's queue label leads, or why Kueue keeps it pending before any quota check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// The ClusterQueue's name.
    ClusterQueue(String),
    /// Kueue's reason for not considering the Workload.
    Inadmissible(String),
}

/// Resolve the job's LocalQueue in its namespace as Kueue does (a missing LocalQueue, a
/// stopped LocalQueue or ClusterQueue, a namespace the ClusterQueue does not select, by the
/// namespace's labels from the queue files' Namespace objects, keep the Workload pending). `None`: no LocalQueue of that name in any namespace, nor a ClusterQueue
/// (an input mistake).
pub fn resolve(
    objects: &KueueObjects,
    q: &KueueQueues,
    namespace: &str,
    queue: &str,
) -> Option<Resolved> {
    let mut labels = objects
        .namespaces
        .get(namespace)
        .cloned()
        .unwrap_or_default();
    labels.insert(NAMESPACE_NAME_LABEL.to_owned(), namespace.to_owned());
    resolve_with_labels(objects, q, namespace, &labels, queue)
}

/// [`resolve`] with the namespace's labels given (Kubernetes' name label is added).
pub fn resolve_with_labels(
    objects: &KueueObjects,
    q: &KueueQueues,
    namespace: &str,
    namespace_labels: &BTreeMap<String, String>,
    queue: &str,
) -> Option<Resolved> {
    let lq = match objects.local_queue(namespace, queue) {
        Some(lq) => lq,
        None if objects.local_queues.iter().any(|l| l.name == queue) => {
            return Some(Resolved::Inadmissible(format!(
                "LocalQueue {queue} doesn't exist in namespace {namespace}"
            )))
        }
        None => return None,
    };
    if lq.stopped {
        return Some(Resolved::Inadmissible(format!(
            "LocalQueue {} is inactive",
            lq.name
        )));
    }
    let Some(cq) = q.find(&lq.cluster_queue) else {
        return Some(Resolved::Inadmissible(format!(
            "ClusterQueue {} doesn't exist",
            lq.cluster_queue
        )));
    };
    let mut labels = namespace_labels.clone();
    labels.insert(NAMESPACE_NAME_LABEL.to_owned(), namespace.to_owned());
    if !q.selects_namespace(cq, &labels) {
        return Some(Resolved::Inadmissible(
            "workload namespace doesn't match ClusterQueue selector".to_owned(),
        ));
    }
    if q.spec(cq).stopped {
        return Some(Resolved::Inadmissible(format!(
            "ClusterQueue {} is inactive",
            lq.cluster_queue
        )));
    }
    Some(Resolved::ClusterQueue(lq.cluster_queue.clone()))
}

/// The job's pod sets as Kueue counts them ([`sched::kueue::pod_set_requests`], GPUs as
/// `nvidia.com/gpu`).
pub fn pod_set_requests(job: &sched::Job, extras: &[sched::PodSetExtras]) -> Vec<PodSetRequest> {
    sched::kueue::pod_set_requests(job, extras, GPU)
}

/// Why a flavor cannot take a pod set whatever the quota ([`sched::kueue::mismatch`]).
pub fn flavor_mismatch(
    flavor: Option<&ResourceFlavor>,
    name: &str,
    job_tolerations: &[sched::Toleration],
    extras: Option<&sched::PodSetExtras>,
) -> Option<String> {
    sched::kueue::mismatch(flavor.map(flavor_nodes), name, job_tolerations, extras)
}

/// A ResourceFlavor's node facts as `sched::kueue` reads them.
pub fn flavor_nodes(f: &ResourceFlavor) -> sched::kueue::FlavorNodes<'_> {
    sched::kueue::FlavorNodes {
        node_labels: &f.node_labels,
        node_taints: &f.node_taints,
        tolerations: &f.tolerations,
    }
}

/// Kueue's decision for a job.
#[derive(Clone, Debug)]
pub struct Decision {
    /// The ClusterQueue, when the LocalQueue led to one.
    pub cluster_queue: Option<String>,
    /// The flavor assignment, when quota was checked.
    pub assignment: Option<sched::kueue::Assignment>,
    /// Why the Workload is pending; `None`: admitted (maybe after preempting).
    pub pending: Option<String>,
}

/// Decide a job's admission: resolve its queue, then assign flavors. `Err` when the job's queue
/// is neither a LocalQueue nor a ClusterQueue of the files.
#[allow(clippy::too_many_arguments)] // the job's parts as `place` holds them
pub fn decide(
    objects: &KueueObjects,
    q: &mut KueueQueues,
    job_file: &str,
    namespace: &str,
    job: &sched::Job,
    tolerations: &[sched::Toleration],
    extras: &[sched::PodSetExtras],
    created: i64,
) -> Result<Decision, FormatError> {
    let labels = objects
        .namespaces
        .get(namespace)
        .cloned()
        .unwrap_or_default();
    decide_in(
        objects,
        q,
        job_file,
        (namespace, &labels),
        job,
        tolerations,
        extras,
        created,
    )
}

/// [`decide`] with the namespace's labels.
#[allow(clippy::too_many_arguments)] // as `decide`
pub fn decide_in(
    objects: &KueueObjects,
    q: &mut KueueQueues,
    job_file: &str,
    (namespace, namespace_labels): (&str, &BTreeMap<String, String>),
    job: &sched::Job,
    tolerations: &[sched::Toleration],
    extras: &[sched::PodSetExtras],
    created: i64,
) -> Result<Decision, FormatError> {
    let cq_name = match resolve_with_labels(objects, q, namespace, namespace_labels, &job.queue) {
        Some(Resolved::ClusterQueue(c)) => c,
        Some(Resolved::Inadmissible(why)) => {
            return Ok(Decision {
                cluster_queue: None,
                assignment: None,
                pending: Some(why),
            })
        }
        None => {
            let known: Vec<String> = objects
                .local_queues
                .iter()
                .map(|l| format!("{}/{}", l.namespace, l.name))
                .collect();
            return Err(FormatError::input(
                job_file,
                format!(
                    "queue `{}`: no LocalQueue of that name in the queue files (Kueue resolves the queue-name label as a LocalQueue of the job's namespace `{namespace}`; LocalQueues: {})",
                    job.queue,
                    if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                ),
            ));
        }
    };
    let cq = q.find(&cq_name).expect("resolved ClusterQueue");
    let requests = pod_set_requests(job, extras);
    let check = |ps: usize, flavor: &str| {
        flavor_mismatch(objects.flavor(flavor), flavor, tolerations, extras.get(ps))
    };
    let a = assign::assign(q, cq, &requests, job.priority, created, &check);
    let pending = (!a.admitted()).then(|| a.message());
    Ok(Decision {
        cluster_queue: Some(cq_name),
        assignment: Some(a),
        pending,
    })
}

/// `place --queues` with Kueue queue objects: Kueue's admission
/// ([`crate::kueue_admit::decide`]) with the quota the running Workloads hold, then topology
/// placement on the nodes of the flavor each pod set was assigned, once the preemption
/// targets are gone: the decision, or why the job is not placed. Usage comes from Workload lists in the state when there are any, else from
/// the running jobs' GPUs (their LocalQueue resolved in their namespace, counted on the first
/// flavor of their ClusterQueue whose node labels their first node carries).
#[allow(clippy::too_many_arguments)] // the parts `decide` has read
pub fn place_decision(
    cluster: &topology::Cluster,
    objects: &KueueObjects,
    state_files: &[(String, String)],
    occupancy: &sched::Occupancy,
    (job_file, job_text, doc): (&str, &str, &formats::jobs::JobDoc),
    job: &sched::Job,
    input: &sched::PlaceInput,
    no_preempt: bool,
) -> Result<Result<sched::Decision, String>, FormatError> {
    let admitted = match admitted_from_state(state_files)? {
        Some(w) => w,
        None => {
            let q = queues(objects, &[])?;
            let mut out = Vec::new();
            for (i, (name, a)) in occupancy.jobs().iter().enumerate() {
                let ns = name.split_once('/').map_or("default", |(n, _)| n);
                let Some(Resolved::ClusterQueue(cq)) = resolve(objects, &q, ns, &a.job.queue)
                    .or_else(|| {
                        q.find(&a.job.queue)
                            .map(|_| Resolved::ClusterQueue(a.job.queue.clone()))
                    })
                else {
                    continue;
                };
                let node = a.pods.first().map(|p| &cluster.node(p.node).labels);
                let spec = q.spec(q.find(&cq).expect("resolved"));
                let flavor = spec
                    .groups
                    .iter()
                    .filter(|g| g.covered.iter().any(|r| r == GPU))
                    .flat_map(|g| &g.flavors)
                    .find(|(f, _)| {
                        objects.flavor(f).is_none_or(|rf| {
                            rf.node_labels
                                .iter()
                                .all(|(k, v)| node.is_some_and(|l| l.get(k) == Some(v)))
                        })
                    })
                    .map(|(f, _)| f.clone());
                let Some(flavor) = flavor else { continue };
                out.push(sched::kueue::Admitted {
                    name: name.clone(),
                    cluster_queue: cq,
                    priority: a.job.priority,
                    admitted_at: i as i64,
                    usage: vec![(flavor, GPU.to_owned(), (a.milli_gpus() / 1000) as i64)],
                });
            }
            out
        }
    };
    let mut q = queues(objects, &admitted)?;
    let namespace = job_namespace(job_file, job_text, doc.document)?;
    let d = decide(
        objects,
        &mut q,
        job_file,
        &namespace,
        job,
        &doc.tolerations,
        &input.pod_sets,
        i64::MAX,
    )?;
    if let Some(why) = d.pending {
        return Ok(Err(why));
    }
    let a = d.assignment.expect("admitted with an assignment");
    if no_preempt && !a.targets.is_empty() {
        return Ok(Err(format!(
            "{} (preemption needed, --no-preempt given)",
            a.message()
        )));
    }
    let mut occ = occupancy.clone();
    let mut victims = Vec::new();
    for t in &a.targets {
        let name = q.admitted[t.admitted].name.clone();
        occ.release(&name);
        victims.push(name);
    }
    victims.sort();
    let mut on_flavor = input.clone();
    for (i, ps) in a.pod_sets.iter().enumerate() {
        let flavor = ps.flavors.get(GPU).map(|(f, _)| f.as_str()).or(ps.flavor());
        let (Some(f), Some(set)) = (
            flavor.and_then(|f| objects.flavor(f)),
            on_flavor.pod_sets.get_mut(i),
        ) else {
            continue;
        };
        set.node_selector
            .extend(f.node_labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        set.tolerations.extend(f.tolerations.iter().cloned());
    }
    let flavor_of = a.pod_sets.first().and_then(|p| {
        p.flavors
            .get(GPU)
            .map(|(f, _)| f.clone())
            .or(p.flavor().map(str::to_owned))
    });
    // Partial admission: Kueue sets the job's pods to the admitted count.
    let mut admitted_job = job.clone();
    for (set, ps) in admitted_job.pod_sets.iter_mut().zip(&a.pod_sets) {
        if ps.count < set.count {
            (set.count, set.min_count) = (ps.count, ps.count);
        }
    }
    Ok(
        match sched::place_with(cluster, &occ, &admitted_job, &on_flavor) {
            Ok(placement) => Ok(sched::Decision { placement, victims }),
            Err(e) => Err(match flavor_of {
                Some(f) => format!("flavor {f}: {e}"),
                None => e.to_string(),
            }),
        },
    )
}
