//! The literature's preemptive orders beside fifo, best-effort and fair-share: Tiresias'
//! discretised two-dimensional least-attained-service (Gu et al., NSDI '19) and
//! shortest-remaining-time-first, plus non-preemptive shortest-job-first. Pure decisions on
//! plain numbers; the engine gathers the numbers and acts.
//!
//! Design note (2026-12-01). Every job gets a *level* (lower runs first): for Tiresias the index
//! of the priority queue its attained service falls in, for SRTF its remaining ideal work in
//! milliseconds, for SJF its ideal duration in milliseconds. Pending jobs are tried in
//! `(level, submission, trace order)`, best-effort (a blocked job does not block those behind
//! it). Under Tiresias and SRTF a blocked job may stop running preemptible jobs of a strictly
//! higher level ([`victim_order`]), worst level first, as few as placement needs. SJF never
//! preempts.
//!
//! Tiresias' Discretized 2D-LAS (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed
//! Deep Learning", NSDI '19; checked against the authors' simulator, SymbioticLab/Tiresias
//! `simulator/run_sim.py` `dlas_sim_jobs` with `gputime`, the `dlas-gpu` schedule; the paper's
//! text and section numbers were not available to check, see README): a job's attained
//! service is GPUs × seconds run, summed over all its runs; with thresholds `T1 < T2 < …` it
//! sits in queue 0 below T1, queue 1 from T1 to below T2, and so on ([`tiresias_queue`]); a new
//! job starts in queue 0; the engine wakes a pass when a running job crosses its next
//! threshold. Starvation guard (STARVELIMIT = PROMOTEKNOB × run time): here a job waiting
//! PROMOTEKNOB × its *last* run since it was last preempted goes back to queue 0, its attained
//! service reset ([`starved`]), as heyfey/vodascheduler `pkg/algorithm/tiresias.go` does; the
//! authors' simulator compares the waiting and the run time *summed since the job's last
//! promotion* (equal for a job preempted once). PROMOTEKNOB 0 turns the guard off. A promoted
//! job does not stop others until it has been preempted again: preempted work is lost here
//! (Tiresias resumes a job from where it stopped), and promoted jobs stopping each other could
//! then run forever without finishing. Defaults (vodascheduler's, not the authors'): one
//! threshold at 3,600 GPU-seconds (K = 2 queues) and PROMOTEKNOB 8; the authors' simulator
//! defaults to three queues split at 3,250 and 7,200 GPU-seconds (`simulator/jobs.py`) and no
//! guard for `dlas-gpu` (`dlas-gpu-N` sets PROMOTEKNOB N).

use serde::Serialize;

/// Tiresias' options: the queue thresholds and the starvation guard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tiresias {
    /// Queue thresholds, attained GPU-seconds, strictly ascending (K − 1 of them for K queues).
    pub thresholds_gpu_s: Vec<u64>,
    /// STARVELIMIT = this × the job's last run time; 0: no promotion.
    pub promote_knob: u32,
}

impl Default for Tiresias {
    /// K = 2 queues split at 3,600 GPU-seconds; PROMOTEKNOB 8 (heyfey/vodascheduler's
    /// settings; the authors' simulator's differ, see the module note).
    fn default() -> Self {
        Self {
            thresholds_gpu_s: vec![3600],
            promote_knob: 8,
        }
    }
}

/// The priority queue a job with `attained_gpu_s` of service is in: how many thresholds it has
/// reached (0 = highest priority).
pub fn tiresias_queue(attained_gpu_s: f64, thresholds_gpu_s: &[u64]) -> u64 {
    // Thresholds are whole GPU-seconds; a sliver under one (float noise) counts as reached.
    thresholds_gpu_s
        .iter()
        .filter(|&&t| attained_gpu_s + 1e-6 >= t as f64)
        .count() as u64
}

/// Seconds until a job now holding `attained_gpu_s` and running on `gpus` GPUs reaches its next
/// threshold (is demoted); `None` in the last queue or without GPUs.
pub fn seconds_to_demotion(
    attained_gpu_s: f64,
    gpus: u32,
    thresholds_gpu_s: &[u64],
) -> Option<f64> {
    if gpus == 0 {
        return None;
    }
    let next = thresholds_gpu_s
        .iter()
        .find(|&&t| attained_gpu_s + 1e-6 < t as f64)?;
    Some((*next as f64 - attained_gpu_s) / f64::from(gpus))
}

/// Whether a job that has waited `waited_s` since it was last preempted, after a run of
/// `last_run_s`, has starved: `waited_s ≥ promote_knob × last_run_s`. Never for a job that
/// has not run (`last_run_s` 0: it is in queue 0 anyway) or with the guard off.
pub fn starved(waited_s: f64, last_run_s: f64, promote_knob: u32) -> bool {
    promote_knob > 0 && last_run_s > 0.0 && waited_s + 1e-9 >= f64::from(promote_knob) * last_run_s
}

/// A level in milliseconds (SRTF's remaining work, SJF's duration), rounded up so any work left
/// counts.
pub fn millis_level(seconds: f64) -> u64 {
    (seconds.max(0.0) * 1000.0).ceil() as u64
}

/// One running job as a possible victim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Its level (lower runs first).
    pub level: u64,
    /// Submission, milliseconds.
    pub submit_ms: u64,
    /// Index in the trace.
    pub job: usize,
    /// May be stopped.
    pub preemptible: bool,
}

/// The running jobs a pending job of `level` may stop, in the order to stop them: preemptible,
/// of a strictly higher level; highest level first, then latest submission, then last in the
/// trace.
pub fn victim_order(level: u64, running: &[Candidate]) -> Vec<usize> {
    let mut v: Vec<&Candidate> = running
        .iter()
        .filter(|c| c.preemptible && c.level > level)
        .collect();
    v.sort_by_key(|c| std::cmp::Reverse((c.level, c.submit_ms, c.job)));
    v.into_iter().map(|c| c.job).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_and_demotion_times() {
        let t = [3600, 36000];
        assert_eq!(tiresias_queue(0.0, &t), 0);
        assert_eq!(tiresias_queue(3599.0, &t), 0);
        assert_eq!(tiresias_queue(3600.0, &t), 1);
        assert_eq!(tiresias_queue(40000.0, &t), 2);
        // 8 GPUs from 0: 450 s to 3,600 GPU-s; from 3,600, 4,050 s more to 36,000.
        assert_eq!(seconds_to_demotion(0.0, 8, &t), Some(450.0));
        assert_eq!(seconds_to_demotion(3600.0, 8, &t), Some(4050.0));
        assert_eq!(seconds_to_demotion(36000.0, 8, &t), None);
        assert_eq!(seconds_to_demotion(0.0, 0, &t), None);
    }

    #[test]
    fn starvation_guard() {
        assert!(starved(800.0, 100.0, 8));
        assert!(!starved(799.0, 100.0, 8));
        assert!(!starved(1e9, 100.0, 0));
        assert!(!starved(1e9, 0.0, 8));
    }

    #[test]
    fn victims_worst_first_and_only_strictly_worse() {
        let c = |level, submit_ms, job, preemptible| Candidate {
            level,
            submit_ms,
            job,
            preemptible,
        };
        let running = [
            c(1, 0, 0, true),
            c(2, 5, 1, true),
            c(2, 9, 2, true),
            c(3, 0, 3, false),
            c(0, 0, 4, true),
        ];
        assert_eq!(victim_order(0, &running), vec![2, 1, 0]);
        assert_eq!(victim_order(1, &running), vec![2, 1]);
        assert!(victim_order(2, &running).is_empty());
    }
}
