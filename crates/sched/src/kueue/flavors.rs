//! What Kueue checks of a job against a ResourceFlavor before any quota (`checkFlavorForPodSets`
//! in `pkg/scheduler/flavorassigner/flavorassigner.go` at kubernetes-sigs/kueue ff69552): the
//! flavor's untolerated taints and node labels against the pod set's node selector; and a job's
//! pod sets as Kueue counts their requests. Shared by `place --queues` and `simulate --queues`.

use std::collections::BTreeMap;

use topology::{Taint, TaintEffect};

use super::assign::PodSetRequest;
use crate::constraints::PodSetExtras;
use crate::job::{GpuRequest, Job, Toleration};

/// A ResourceFlavor's node facts, borrowed from whoever read it.
#[derive(Clone, Copy, Debug)]
pub struct FlavorNodes<'a> {
    /// `spec.nodeLabels`.
    pub node_labels: &'a BTreeMap<String, String>,
    /// `spec.nodeTaints`.
    pub node_taints: &'a [Taint],
    /// `spec.tolerations`.
    pub tolerations: &'a [Toleration],
}

/// Why flavor `name` cannot take a pod set whatever the quota, in Kueue's words: the flavor is
/// unknown (`None`), a NoSchedule/NoExecute taint of the flavor neither the job, the pod set nor
/// the flavor tolerates, or a node selector key of the flavor's labels with another value.
pub fn mismatch(
    flavor: Option<FlavorNodes<'_>>,
    name: &str,
    job_tolerations: &[Toleration],
    extras: Option<&PodSetExtras>,
) -> Option<String> {
    let Some(f) = flavor else {
        return Some(format!("flavor {name} not found"));
    };
    for t in f.node_taints {
        let effect = match t.effect {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::NoExecute => "NoExecute",
            TaintEffect::PreferNoSchedule => continue,
        };
        let tolerated = job_tolerations
            .iter()
            .chain(extras.into_iter().flat_map(|e| &e.tolerations))
            .chain(f.tolerations)
            .any(|tol| tol.tolerates(t));
        if !tolerated {
            // Kueue prints the corev1.Taint with `%v`: key, value, effect and its unset
            // timeAdded pointer, `<nil>` (flavorassigner, Kueue ff69552e).
            return Some(format!(
                "untolerated taint {{{} {} {effect} <nil>}} in flavor {name}",
                t.key, t.value
            ));
        }
    }
    if let Some(e) = extras {
        for (k, v) in &e.node_selector {
            if f.node_labels.get(k).is_some_and(|fv| fv != v) {
                return Some(format!("flavor {name} doesn't match node affinity"));
            }
        }
    }
    None
}

/// A job's pod sets as Kueue counts them: per pod its requests besides GPUs (Kubernetes units:
/// CPU millicores, memory bytes) and whole GPUs as `gpu_resource` (a GPU share counts as one,
/// as the device plugin asks for one GPU).
pub fn pod_set_requests(
    job: &Job,
    extras: &[PodSetExtras],
    gpu_resource: &str,
) -> Vec<PodSetRequest> {
    job.pod_sets
        .iter()
        .enumerate()
        .map(|(i, set)| {
            let mut per_pod: BTreeMap<String, i64> = extras
                .get(i)
                .map(|e| {
                    e.requests
                        .iter()
                        .filter(|(r, _)| r.as_str() != crate::PODS)
                        .map(|(r, v)| (r.clone(), (*v).min(i64::MAX as u64 / 2) as i64))
                        .collect()
                })
                .unwrap_or_default();
            let gpus = match set.gpu {
                GpuRequest::Whole(g) => i64::from(g),
                _ => 1,
            };
            if gpus > 0 {
                per_pod.insert(gpu_resource.to_owned(), gpus);
            }
            PodSetRequest {
                name: set.name.clone(),
                count: set.count,
                min_count: (set.min_count < set.count).then_some(set.min_count),
                per_pod,
            }
        })
        .collect()
}
