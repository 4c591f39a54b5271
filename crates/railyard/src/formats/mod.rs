//! File formats railyard reads and writes: Kubernetes objects, Slurm topology, hostlists.

pub mod hostlist;
pub mod jobs;
pub mod k8s;
pub mod placement;
pub mod queues;
pub mod slurm;
pub mod state;
pub mod trace;
