//! Every wire format railyard reads and writes, into and out of `topology`, `sched` and `sim`
//! types: Kubernetes objects (NodeList, Kueue and KAI objects, jobs), queue files, state files,
//! the placement file, traces, Slurm topology files and hostlists, nccl-tests output. No argument parsing, no
//! printing: readers take text (or a path) and return values or a [`FormatError`] naming the file
//! and the place.

pub mod cluster;
pub mod error;
pub mod failures;
pub mod hostlist;
pub mod input;
pub mod jobs;
pub mod k8s;
pub mod kueue_objects;
pub mod live;
pub mod names;
pub mod nccl_tests;
pub mod openb;
pub mod placement;
pub mod policy;
pub mod queues;
pub mod scheduler_traces;
pub mod slurm;
pub mod state;
pub mod trace;
pub mod trace_model;
pub mod workloads;

pub use error::{cut_echoes, excerpt, one_line, show_number, FormatError};
