//! Why a job did not run to the end ([`NotRunReason`], one enum, named where the engine
//! decides) and the run's count of jobs by reason ([`ReasonCount`]). Plain data: the reason of
//! a failed job is set at its arrival (`engine::arrival`), that of an unfinished one when the
//! run closes (`engine::close`).

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::engine::results::{JobRecord, Outcome};

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

/// How many jobs ended one way for one reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReasonCount {
    /// `Failed` or `Unfinished`.
    pub outcome: Outcome,
    /// The reason, as [`NotRunReason`] displays it.
    pub reason: String,
    /// Jobs.
    pub jobs: usize,
}

/// The jobs that did not complete, counted by outcome and reason: failed before unfinished,
/// then the most jobs first, then by reason (no hash order reaches the output).
pub fn count_reasons(records: &[JobRecord]) -> Vec<ReasonCount> {
    let mut by: BTreeMap<(bool, &NotRunReason), usize> = BTreeMap::new();
    for r in records {
        if let Some(reason) = &r.reason {
            *by.entry((r.outcome == Outcome::Unfinished, reason))
                .or_default() += 1;
        }
    }
    let mut out: Vec<ReasonCount> = by
        .into_iter()
        .map(|((unfinished, reason), jobs)| ReasonCount {
            outcome: if unfinished {
                Outcome::Unfinished
            } else {
                Outcome::Failed
            },
            reason: reason.to_string(),
            jobs,
        })
        .collect();
    out.sort_by(|a, b| {
        (a.outcome == Outcome::Unfinished)
            .cmp(&(b.outcome == Outcome::Unfinished))
            .then(b.jobs.cmp(&a.jobs))
            .then_with(|| a.reason.cmp(&b.reason))
    });
    out
}
