//! What a run produces: per-job records ([`JobRecord`]), the headline [`Summary`], the
//! utilisation series and queue figures ([`SimResult`], [`QueueRun`], [`QueueSummary`]), and
//! the distributions a report draws from them. Plain data, filled by the engine when a run
//! closes (`engine::close`); it knows nothing of the simulated state.

use serde::Serialize;

use crate::engine::not_run::NotRunReason;
use crate::failures::FailureSummary;
use crate::metrics::Cdf;

/// How a trace job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Outcome {
    /// Ran to completion.
    Completed,
    /// Can never run on this cluster or under its queue (the record's reason says why).
    Failed,
    /// Still pending or running at the horizon.
    Unfinished,
}

/// Per-job record.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobRecord {
    /// Name.
    pub name: String,
    /// Queue.
    pub queue: String,
    /// GPUs held while running.
    pub gpus: u32,
    /// Nodes (pods).
    pub nodes: u32,
    /// Outcome.
    pub outcome: Outcome,
    /// Submission, s since the first arrival.
    pub submit_s: f64,
    /// First start, s.
    pub start_s: Option<f64>,
    /// Completion, s.
    pub end_s: Option<f64>,
    /// Run time of the final run over its ideal duration.
    pub network_slowdown: Option<f64>,
    /// Highest switch tier its final placement crosses.
    pub highest_tier: Option<u8>,
    /// Times preempted.
    pub preemptions: u32,
    /// GPU-seconds used, including lost work.
    pub gpu_seconds: f64,
    /// Times stopped by a node failure.
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub failures: u32,
    /// GPU-seconds lost to preemption (included in `gpu_seconds`).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub lost_gpu_seconds_preemption: f64,
    /// GPU-seconds lost to node failures (included in `gpu_seconds`).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub lost_gpu_seconds_failure: f64,
    /// Why it failed or did not finish (absent for completed jobs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<NotRunReason>,
}

/// Serde's `skip_serializing_if` for zero counts.
fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// Serde's `skip_serializing_if` for zero amounts.
fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

/// Headline figures of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Policy name.
    pub policy: String,
    /// Jobs in the trace.
    pub jobs: usize,
    /// Completed jobs.
    pub completed: usize,
    /// Jobs that can never run here.
    pub failed: usize,
    /// Jobs pending or running at the horizon.
    pub unfinished: usize,
    /// Mean job completion time (submit → end) of completed jobs, s.
    pub avg_jct_s: f64,
    /// Median JCT, s.
    pub p50_jct_s: f64,
    /// 99th percentile JCT, s.
    pub p99_jct_s: f64,
    /// Mean wait (submit → first start) of started jobs, s.
    pub avg_wait_s: f64,
    /// 99th percentile wait, s.
    pub p99_wait_s: f64,
    /// GPU-seconds used ÷ (GPUs × makespan).
    pub gpu_utilization: f64,
    /// Busy GPU share over the arrival window (first to last arrival): the load the trace puts
    /// on the cluster while it is arriving, without the drain tail.
    pub gpu_utilization_arrivals: f64,
    /// First arrival → last arrival, s.
    pub arrival_window_s: f64,
    /// First arrival → last completion (or the horizon), s.
    pub makespan_s: f64,
    /// Completed multi-node jobs (jobs that ran on more than one node).
    pub multi_node_completed: usize,
    /// Mean JCT of completed multi-node jobs, s (0 when none).
    pub avg_multi_node_jct_s: f64,
    /// 99th percentile JCT of completed multi-node jobs, s (0 when none).
    pub p99_multi_node_jct_s: f64,
    /// Mean network slowdown of completed multi-node jobs (1 = ideal network).
    pub avg_network_slowdown: f64,
    /// Time-averaged share of GPUs that were free while jobs waited and no waiting job fit.
    pub fragmentation: f64,
    /// Time-averaged GPU fragmentation as Weng et al. (ATC '23) define it: the expected
    /// unallocated GPU capacity the trace's job mix cannot use, as a share of all GPUs
    /// ([`crate::fragmentation`]).
    pub weng_fragmentation: f64,
    /// Preemptions.
    pub preemptions: u64,
    /// GPU-seconds lost to preemption and node failures (work since the last checkpoint, and
    /// restarts).
    pub lost_gpu_seconds: f64,
    /// Multi-node jobs by highest tier crossed (index = tier).
    pub tier_span: Vec<u64>,
    /// The jobs that failed or did not finish, counted by reason (absent when every job
    /// completed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_run_reasons: Vec<ReasonCount>,
    /// Node failures and lost work by cause, when the run had failures or checkpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<FailureSummary>,
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

/// Everything one run produces.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimResult {
    /// Headline figures.
    pub summary: Summary,
    /// `(hours since first arrival, busy GPU share)` at regular points.
    pub utilization: Vec<(f64, f64)>,
    /// Per-job records in trace order.
    pub jobs: Vec<JobRecord>,
    /// With the user's queues: whose rules ran them and each leaf queue's share of the GPUs over
    /// time.
    pub queues: Option<QueueRun>,
}

/// What a run with the user's queues adds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueRun {
    /// `kai` or `kueue`.
    pub rules: &'static str,
    /// Per leaf queue in tree order: `(hours since first arrival, share of the cluster's GPUs it
    /// holds)` at the same points as [`SimResult::utilization`].
    pub gpu_share: Vec<(String, Vec<(f64, f64)>)>,
}

/// One queue's jobs in a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueSummary {
    /// Queue name.
    pub queue: String,
    /// Jobs submitted to it.
    pub jobs: usize,
    /// Completed jobs.
    pub completed: usize,
    /// GPU-hours used (including work lost to preemption).
    pub gpu_hours: f64,
    /// Mean wait of its started jobs, s (0 when none started).
    pub avg_wait_s: f64,
    /// Mean JCT of its completed jobs, s (0 when none completed).
    pub avg_jct_s: f64,
    /// Times its jobs were preempted.
    pub preemptions: u64,
}

impl SimResult {
    /// Per-queue figures, queues in name order.
    pub fn per_queue(&self) -> Vec<QueueSummary> {
        #[derive(Default)]
        struct Acc {
            jobs: usize,
            completed: usize,
            gpu_seconds: f64,
            wait: (f64, usize),
            jct: (f64, usize),
            preemptions: u64,
        }
        let mut by: std::collections::BTreeMap<&str, Acc> = std::collections::BTreeMap::new();
        for j in &self.jobs {
            let a = by.entry(j.queue.as_str()).or_default();
            a.jobs += 1;
            a.gpu_seconds += j.gpu_seconds;
            a.preemptions += u64::from(j.preemptions);
            if let Some(s) = j.start_s {
                a.wait.0 += s - j.submit_s;
                a.wait.1 += 1;
            }
            if let Some(e) = j.end_s {
                a.completed += 1;
                a.jct.0 += e - j.submit_s;
                a.jct.1 += 1;
            }
        }
        let mean = |(sum, n): (f64, usize)| if n == 0 { 0.0 } else { sum / n as f64 };
        by.into_iter()
            .map(|(q, a)| QueueSummary {
                queue: q.to_owned(),
                jobs: a.jobs,
                completed: a.completed,
                gpu_hours: a.gpu_seconds / 3600.0,
                avg_wait_s: mean(a.wait),
                avg_jct_s: mean(a.jct),
                preemptions: a.preemptions,
            })
            .collect()
    }

    /// JCT CDF of completed jobs.
    pub fn jct_cdf(&self, points: usize) -> Cdf {
        let v: Vec<f64> = self
            .jobs
            .iter()
            .filter_map(|j| Some(j.end_s? - j.submit_s))
            .collect();
        Cdf::of(&v, points)
    }

    /// Wait CDF of started jobs.
    pub fn wait_cdf(&self, points: usize) -> Cdf {
        let v: Vec<f64> = self
            .jobs
            .iter()
            .filter_map(|j| Some(j.start_s? - j.submit_s))
            .collect();
        Cdf::of(&v, points)
    }

    /// Network slowdown CDF of completed multi-node jobs.
    pub fn slowdown_cdf(&self, points: usize) -> Cdf {
        let v: Vec<f64> = self
            .jobs
            .iter()
            .filter(|j| j.nodes > 1)
            .filter_map(|j| j.network_slowdown)
            .collect();
        Cdf::of(&v, points)
    }
}
