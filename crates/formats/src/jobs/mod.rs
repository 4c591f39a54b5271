//! Job files: the native railyard job spec (YAML, schema in the README), Kueue-marked workloads
//! and KAI-marked Pods, PodGroups and workloads. Each format is checked with its own rules, then
//! resolved against a cluster's levels into a [`sched::Job`]. One module per format, over the
//! shared readers of Kubernetes pod templates; every public item is named here.

mod doc;
mod kai;
mod kueue;
mod levels;
mod native;
mod pod_template;
mod read;

pub use crate::error::FieldProblem;
pub use crate::workloads::MAX_PODS_PER_JOB;
pub use doc::{JobDoc, JobFormat, LevelRef, PodSetDoc, SubGroupDoc, TopologyDoc};
pub(crate) use kai::{kai_num_devices, kai_priority};
pub use kai::{
    KAI_BATCH_MIN_MEMBER, KAI_DEFAULT_PRIORITY_CLASS, KAI_GPU_FRACTION, KAI_GPU_MEMORY,
    KAI_GPU_NUM_DEVICES, KAI_LEGACY_QUEUE_LABEL, KAI_NON_PREEMPTIBLE_PRIORITY, KAI_PREFERRED,
    KAI_PRIORITY_CLASSES, KAI_QUEUE_LABEL, KAI_REQUIRED,
};
pub use kueue::{
    count_source, kueue_topology, kueue_unread, pod_count, set_topology, template_base,
    KUEUE_MIN_PARALLELISM, KUEUE_POD_GROUP_LABEL, KUEUE_POD_GROUP_TOTAL, KUEUE_PREFERRED,
    KUEUE_QUEUE_LABEL, KUEUE_REQUIRED, KUEUE_SLICE_CONSTRAINTS, KUEUE_SLICE_REQUIRED,
    KUEUE_SLICE_SIZE, KUEUE_UNCONSTRAINED,
};
pub use levels::resolve_levels;
pub use native::native_job_schema;
pub(crate) use native::{default_queue, yes};
pub(crate) use pod_template::{container_amounts, AmountError};
pub use pod_template::{
    parse_cpu_millis, parse_memory_mib, requests_of, tolerations_of, GPU_RESOURCE,
    KUEUE_PODSET_GROUP,
};
pub use read::{
    dialect_of, is_job_doc, jobs_in_documents, names_queue, read_job, read_jobs, Dialect, JobRead,
};
