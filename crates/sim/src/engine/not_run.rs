//! Why a job did not run to the end ([`NotRunReason`], one enum, named where the engine
//! decides). Plain data: the reason of a failed job is set at its arrival (`engine::arrival`),
//! that of an unfinished one when the run closes (`engine::close`, which also counts them).

use std::fmt;

use serde::Serialize;

/// Why a job failed or did not finish. The text says nothing of one job (no job name, no
/// request size), so jobs with the same reason count together.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum NotRunReason {
    /// It places nowhere even on the empty cluster (more GPUs than the cluster or its required
    /// level has, a GPU model no node has, …): the placement's reason.
    DoesNotFit(String),
    /// Its queue refuses it even with every queue idle: which queue, which quota or limit.
    QueueRefuses(String),
    /// Still waiting at the horizon.
    PendingAtHorizon,
    /// Started but still running (or stopped and waiting again) at the horizon.
    RunningAtHorizon,
}

impl fmt::Display for NotRunReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotRunReason::DoesNotFit(why) => write!(f, "does not fit the empty cluster: {why}"),
            NotRunReason::QueueRefuses(why) => f.write_str(why),
            NotRunReason::PendingAtHorizon => f.write_str("still pending when the run ended"),
            NotRunReason::RunningAtHorizon => f.write_str("still running when the run ended"),
        }
    }
}
