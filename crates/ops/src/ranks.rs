//! The GPUs a collective or a training step runs on, named as `fabric collective` and `fabric
//! step` name them: a placement file, or a job file placed as `railyard place` places it beside
//! the running jobs of the state files.

use std::path::{Path, PathBuf};

use formats::{placement, FormatError};
use topology::{Cluster, NodeId};

use crate::place::{self, PlaceInputs};

/// Placed pods, the file they come from and the running jobs preempted to place them.
#[derive(Debug)]
pub struct PlacedRanks {
    /// The placement or job file, as errors name it.
    pub file: String,
    /// The pods in rank order.
    pub pods: Vec<placement::ResolvedPod>,
    /// Running jobs of the state that placing the job preempts (none for a placement file).
    pub preempted: Vec<String>,
}

impl PlacedRanks {
    /// Each pod's node and GPUs, in rank order; a pod holding a fraction of a GPU is an input
    /// error naming its rank and `why` whole GPUs are needed.
    pub fn whole_gpus(&self, why: &str) -> Result<Vec<(NodeId, Vec<u32>)>, FormatError> {
        self.pods
            .iter()
            .map(|p| {
                if p.gpus.fract() != 0.0 {
                    let msg = format!("rank {}: {} GPUs; {why}", p.rank, p.gpus);
                    return Err(FormatError::input(&self.file, msg));
                }
                Ok((p.node, p.gpu_ids.clone()))
            })
            .collect()
    }
}

/// The pods of `placement`, or of `job` placed by [`place::decide`] (the code path of `railyard
/// place`) beside `state`'s running jobs; exactly one of the two must be given. A job that
/// cannot be placed is an input error naming it and the reason.
pub fn placed_ranks(
    cluster: &Cluster,
    placement_file: Option<&Path>,
    job: Option<&Path>,
    state: &[PathBuf],
) -> Result<PlacedRanks, FormatError> {
    placed_ranks_for(cluster, placement_file, job, state, None)
}

/// [`placed_ranks`] for a job training `training` (`fabric step --job`): the job is placed
/// with the slice layers its layout derives, as `place --model --layout` places it.
pub fn placed_ranks_for(
    cluster: &Cluster,
    placement_file: Option<&Path>,
    job: Option<&Path>,
    state: &[PathBuf],
    training: Option<&layout::Training>,
) -> Result<PlacedRanks, FormatError> {
    match (placement_file, job) {
        (Some(p), None) => Ok(PlacedRanks {
            file: p.display().to_string(),
            pods: placement::read(p, cluster)?,
            preempted: Vec::new(),
        }),
        (None, Some(job)) => {
            let file = job.display().to_string();
            let decided = place::decide(
                cluster,
                &PlaceInputs {
                    job,
                    state,
                    queues: &[],
                    no_preempt: false,
                    flavors: &[],
                    options: sched::PlaceOptions::default(),
                    scheduler: None,
                    network_aware: false,
                    training,
                },
            )?;
            if !decided.placed {
                return Err(FormatError::input(
                    &file,
                    format!(
                        "job `{}` cannot be placed on {}: {}",
                        decided.job.as_deref().unwrap_or("?"),
                        cluster.name,
                        decided.reason.as_deref().unwrap_or("no reason given")
                    ),
                ));
            }
            let pods = placement::resolve(&file, &decided, cluster)?;
            Ok(PlacedRanks {
                file,
                pods,
                preempted: decided.preempted,
            })
        }
        _ => Err(FormatError::input(
            "--placement/--job",
            "expected exactly one of --placement FILE and --job FILE",
        )),
    }
}
