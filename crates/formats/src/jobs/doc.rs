//! A job as read from a file, before its levels are resolved: [`JobDoc`] and its pod sets,
//! topology requests and KAI sub-groups. Every reader (native, Kueue, KAI) produces these.

use serde_json::Value;

/// Where a job came from; decides which ordering rules apply and how fields are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobFormat {
    /// The native railyard job spec.
    Native,
    /// A Kueue-annotated `batch/v1` Job.
    Kueue,
    /// A KAI-annotated Pod or PodGroup.
    Kai,
}

/// A level named by its label, with the field it came from (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelRef {
    /// The node label.
    pub label: String,
    /// Where in the file.
    pub field: String,
}

/// A pod set as read, before its levels are resolved against a cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct PodSetDoc {
    /// Name.
    pub name: String,
    /// Pods.
    pub count: u32,
    /// Gang minimum.
    pub min_count: Option<u32>,
    /// GPUs per pod.
    pub gpu: sched::GpuRequest,
    /// CPU per pod, millicores.
    pub cpu_millis: u64,
    /// Memory per pod, MiB.
    pub memory_mib: u64,
    /// Topology request, levels not yet resolved.
    pub topology: TopologyDoc,
    /// Where the GPU request is written (for the message when there is none).
    pub gpu_field: String,
    /// The pod spec of a Kubernetes pod template (`Null` for native jobs): node selectors,
    /// affinity and the like, for the checks that read them.
    pub pod_spec: Value,
    /// What placement needs of the template besides GPUs and levels: requests of every
    /// resource, node selector, node affinity, tolerations, pod-set group.
    pub extras: sched::PodSetExtras,
}

/// A pod set's topology request as read: levels by label, not yet resolved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TopologyDoc {
    /// Required level.
    pub required: Option<LevelRef>,
    /// Preferred level.
    pub preferred: Option<LevelRef>,
    /// Slice layers, outermost first: level and size.
    pub slices: Vec<(LevelRef, u32)>,
}

/// A job as read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct JobDoc {
    /// Format.
    pub format: JobFormat,
    /// Name.
    pub name: String,
    /// Queue (for Kueue: the LocalQueue name from the label).
    pub queue: String,
    /// Priority.
    pub priority: i32,
    /// Preemptible.
    pub preemptible: bool,
    /// Tolerations.
    pub tolerations: Vec<sched::Toleration>,
    /// Pod sets.
    pub pod_sets: Vec<PodSetDoc>,
    /// Document number in the file, from 1 (the PodGroup's for a KAI gang).
    pub document: usize,
    /// Where the queue is named, e.g. `metadata.labels[kueue.x-k8s.io/queue-name]`.
    pub queue_field: String,
    /// KAI PodGroup sub-groups that hold other sub-groups (parents first); the sub-groups that
    /// hold pods are the pod sets, each naming its parent in `extras.sub_group`. Empty for
    /// every other format.
    pub sub_groups: Vec<SubGroupDoc>,
}

/// A KAI sub-group above pod sets, before its levels are resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct SubGroupDoc {
    /// Name (`podgroup` for the PodGroup itself).
    pub name: String,
    /// The enclosing sub-group, an earlier index.
    pub parent: Option<usize>,
    /// Its topology constraint.
    pub topology: TopologyDoc,
    /// Direct members it needs placed (KAI's `minSubGroup`); `None`: all.
    pub min_sub_groups: Option<u32>,
}
