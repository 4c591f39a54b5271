//! Seeded synthetic traces from workload profiles: job classes with their share of jobs, GPU
//! count and duration quantiles, communication profile or model and layout; Poisson arrivals
//! at an offered load held exactly over the arrival window.
//!
//! A profile is data ([`Profile`]); [`LLM`] reads the Acme Seren cluster of Hu et al., NSDI '24
//! (sources per value in the README, "Synthetic traces"). A class draws its GPU count and its
//! duration by inverse transform from a quantile table, interpolating log-linearly between
//! the given points; GPU counts round to the nearest power of two. All randomness comes from a
//! ChaCha8 generator seeded with the seed: the same arguments give the same trace.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

use crate::runtime::CommProfile;
use crate::trace::TraceJob;

mod layouts;

pub use layouts::{layout_for, training_for, LayoutRule, MEGATRON_TABLE_1};

/// A quantile table: (cumulative probability, value), probabilities rising from 0 to 1, values
/// positive and non-decreasing.
pub type Quantiles = &'static [(f64, f64)];

/// One kind of job in a profile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobClass {
    /// Name; jobs are called `NAME-INDEX`.
    pub name: &'static str,
    /// Share of jobs, percent (the shares of a profile need not sum to exactly 100).
    pub job_share: f64,
    /// GPUs per job.
    pub gpus: Quantiles,
    /// Run time, seconds.
    pub duration_s: Quantiles,
    /// Communication profile written into the trace for jobs without a layout.
    pub comm: CommProfile,
    /// How the class's jobs pick a model and layout (written as `model`, `layout`).
    pub layout: LayoutRule,
}

/// A named set of job classes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    /// Name given to `--profile`.
    pub name: &'static str,
    /// The classes.
    pub classes: &'static [JobClass],
}

/// GPU quantiles from a box plot: Q1, median, Q3, with ends at Q1/4 and 4·Q3 (clamped to
/// 1..=1024 GPUs; whiskers are not in the figure).
macro_rules! box_gpus {
    ($lo:expr, $q1:expr, $med:expr, $q3:expr, $hi:expr) => {
        &[
            (0.0, $lo),
            (0.25, $q1),
            (0.5, $med),
            (0.75, $q3),
            (1.0, $hi),
        ]
    };
}

/// Duration quantiles from a CDF: 1 s at 0, p25, p50, p75, p90 read from the figure, 4·p90 at 1.
macro_rules! cdf_duration {
    ($p25:expr, $p50:expr, $p75:expr, $p90:expr) => {
        &[
            (0.0, 1.0),
            (0.25, $p25),
            (0.5, $p50),
            (0.75, $p75),
            (0.9, $p90),
            (1.0, 4.0 * $p90),
        ]
    };
}

/// The `llm` profile: Acme Seren (Hu et al., NSDI '24, Fig. 4a job shares, Fig. 5a GPU box
/// plots, Fig. 3a duration CDFs; read from the AcmeTrace repository's figure PDFs).
pub const LLM: Profile = Profile {
    name: "llm",
    classes: &[
        JobClass {
            name: "pretrain",
            job_share: 0.9,
            gpus: box_gpus!(16.0, 64.0, 128.0, 256.0, 1024.0),
            duration_s: cdf_duration!(50.0, 297.0, 1196.0, 24_639.0),
            comm: CommProfile {
                comm_share: 0.3,
                bytes_per_step: 4e9,
            },
            layout: LayoutRule::MegatronTable1,
        },
        JobClass {
            name: "sft",
            job_share: 14.9,
            gpus: box_gpus!(1.0, 2.0, 8.0, 8.0, 32.0),
            duration_s: cdf_duration!(47.0, 197.0, 452.0, 1128.0),
            comm: CommProfile {
                comm_share: 0.2,
                bytes_per_step: 1e9,
            },
            layout: LayoutRule::FineTune("llama3-8b"),
        },
        JobClass {
            name: "mllm",
            job_share: 2.9,
            gpus: box_gpus!(1.0, 1.0, 2.0, 8.0, 32.0),
            duration_s: cdf_duration!(28.0, 253.0, 795.0, 5373.0),
            comm: CommProfile {
                comm_share: 0.2,
                bytes_per_step: 1e9,
            },
            layout: LayoutRule::None,
        },
        JobClass {
            name: "eval",
            job_share: 64.9,
            gpus: box_gpus!(1.0, 1.0, 1.0, 4.0, 16.0),
            duration_s: cdf_duration!(16.0, 129.0, 391.0, 1208.0),
            comm: CommProfile {
                comm_share: 0.0,
                bytes_per_step: 0.0,
            },
            layout: LayoutRule::None,
        },
        JobClass {
            name: "debug",
            job_share: 1.9,
            gpus: box_gpus!(2.0, 8.0, 8.0, 8.0, 32.0),
            duration_s: cdf_duration!(23.0, 114.0, 359.0, 935.0),
            comm: CommProfile {
                comm_share: 0.1,
                bytes_per_step: 5e8,
            },
            layout: LayoutRule::None,
        },
        JobClass {
            name: "other",
            job_share: 14.6,
            gpus: box_gpus!(1.0, 1.0, 1.0, 8.0, 32.0),
            duration_s: cdf_duration!(10.0, 77.0, 356.0, 2288.0),
            comm: CommProfile {
                comm_share: 0.05,
                bytes_per_step: 1e8,
            },
            layout: LayoutRule::None,
        },
    ],
};

/// Every profile, by name.
pub const PROFILES: &[Profile] = &[LLM];

/// The profile called `name`.
pub fn profile(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.name == name)
}

/// How jobs arrive (a Poisson process).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrivals {
    /// At the offered load `load` (0.8 = 80%) of `cluster_gpus` GPUs, held exactly: the
    /// trace's GPU-time ÷ (`cluster_gpus` × arrival window, first to last arrival) = `load`
    /// ([`synth_trace`] says how).
    Load {
        /// GPUs of the cluster.
        cluster_gpus: u64,
        /// Offered load, a share of the cluster's GPUs.
        load: f64,
    },
    /// Jobs per hour.
    PerHour(f64),
}

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SynthSpec {
    /// The profile.
    pub profile: &'static Profile,
    /// Number of jobs.
    pub jobs: usize,
    /// The seed.
    pub seed: u64,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// GPUs per node of the cluster (caps tensor parallelism, [`layout_for`]).
    pub gpus_per_node: u32,
    /// Begin with the jobs already running at 0 ([`synth_trace`]).
    pub warm_start: bool,
}

/// The value at cumulative probability `u` of a quantile table (log-linear between points).
pub fn quantile(table: Quantiles, u: f64) -> f64 {
    let u = u.clamp(0.0, 1.0);
    for pair in table.windows(2) {
        let ((p0, v0), (p1, v1)) = (pair[0], pair[1]);
        if u <= p1 {
            let t = if p1 > p0 { (u - p0) / (p1 - p0) } else { 0.0 };
            return (v0.ln() + t * (v1.ln() - v0.ln())).exp();
        }
    }
    table.last().map_or(0.0, |&(_, v)| v)
}

/// GPUs at cumulative probability `u`: the quantile rounded to the nearest power of two.
pub fn gpus_at(table: Quantiles, u: f64) -> u32 {
    let exponent = quantile(table, u).log2().round().clamp(0.0, 20.0);
    1u32 << (exponent as u32)
}

/// Mean of `f(u)` over u in [0, 1] by the midpoint rule on 4096 points (deterministic).
fn mean_of(f: impl Fn(f64) -> f64) -> f64 {
    const N: u32 = 4096;
    (0..N)
        .map(|i| f((f64::from(i) + 0.5) / f64::from(N)))
        .sum::<f64>()
        / f64::from(N)
}

/// Expected GPU-seconds of one job of `class`.
pub fn mean_gpu_seconds(class: &JobClass) -> f64 {
    mean_of(|u| f64::from(gpus_at(class.gpus, u))) * mean_of(|u| quantile(class.duration_s, u))
}

/// Each class's expected share of GPU time, percent, in the profile's order.
pub fn gpu_time_shares(profile: &Profile) -> Vec<f64> {
    let work: Vec<f64> = profile
        .classes
        .iter()
        .map(|c| c.job_share * mean_gpu_seconds(c))
        .collect();
    let total: f64 = work.iter().sum();
    work.iter().map(|w| 100.0 * w / total).collect()
}

/// The trace, jobs in arrival order, queue `default`, priority 0, not preemptible, no
/// topology request; a job of a class with a [`LayoutRule`] and 2 GPUs or more carries its
/// model and layout ([`training_for`]) instead of the communication profile. Empty when the
/// arrival rate is not positive.
///
/// With [`Arrivals::Load`] the arrivals are a Poisson process scaled so that the first job
/// arrives at 0 and the last at the window W = GPU-time ÷ (GPUs × load), rounded to the
/// millisecond; the rounding's rest (at most GPUs × load × 0.5 ms of GPU-time) is added to the
/// longest of the jobs with the fewest GPUs, so the realized offered load is `load` up to a
/// millisecond of that one job (relative error below 1e-9 on any trace of more than a few
/// jobs). One job has no window; it arrives at 0.
///
/// With [`SynthSpec::warm_start`] the trace begins with the jobs already running at 0 (named
/// `CLASS-wINDEX`, submitted at 0, oldest first, each for the rest of its run): the profile's
/// classes arriving at the rate whose expected GPU-time is the load, run over the longest duration any class can draw before 0,
/// keeping the jobs not finished by 0 — the stationary occupancy of the arrivals on a cluster
/// that never queues (M/G/∞). They are not part of the offered load: `--jobs` and the load
/// count the arriving jobs only.
pub fn synth_trace(spec: &SynthSpec) -> Vec<TraceJob> {
    let classes = spec.profile.classes;
    let total_share: f64 = classes.iter().map(|c| c.job_share).sum();
    let per_second = match spec.arrivals {
        Arrivals::PerHour(r) => r / 3600.0,
        Arrivals::Load { cluster_gpus, load } => {
            let work: f64 = classes
                .iter()
                .map(|c| c.job_share / total_share * mean_gpu_seconds(c))
                .sum();
            load * cluster_gpus as f64 / work
        }
    };
    if !(per_second > 0.0 && per_second.is_finite() && total_share > 0.0) {
        return Vec::new();
    }
    let sampler = Sampler {
        classes,
        total_share,
        gpus_per_node: spec.gpus_per_node,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let mut t = 0.0f64;
    let mut arrivals_s = Vec::with_capacity(spec.jobs);
    let mut jobs: Vec<TraceJob> = (0..spec.jobs)
        .map(|i| {
            t += -(1.0 - rng.random::<f64>()).ln() / per_second;
            arrivals_s.push(t);
            sampler.job(&mut rng, i)
        })
        .collect();
    match spec.arrivals {
        Arrivals::Load { cluster_gpus, load } if jobs.len() > 1 => {
            hold_load(&mut jobs, &arrivals_s, cluster_gpus as f64 * load);
        }
        _ => {
            for (j, a) in jobs.iter_mut().zip(&arrivals_s) {
                j.submit_s = (a * 1000.0).round() / 1000.0;
            }
        }
    }
    if spec.warm_start {
        // At the profile's rate, whose expected GPU-time per second is the load: the expected
        // occupancy at 0 is load × GPUs (the arriving jobs are scaled to their own sample).
        let mut warm = sampler.running_at_zero(spec.seed, per_second);
        warm.append(&mut jobs);
        jobs = warm;
        for (i, j) in jobs.iter_mut().enumerate() {
            j.line = i as u64 + 2;
        }
    }
    jobs
}

/// Draws jobs of a profile's classes.
struct Sampler {
    classes: &'static [JobClass],
    total_share: f64,
    gpus_per_node: u32,
}

impl Sampler {
    /// One job, `CLASS-INDEX`, on line `index` + 2, submitted at 0: its class, GPUs and
    /// duration (whole milliseconds, as the simulator's clock keeps them and a CSV
    /// round-trips), and its layout or communication profile.
    fn job(&self, rng: &mut ChaCha8Rng, index: usize) -> TraceJob {
        let classes = self.classes;
        let mut pick = rng.random::<f64>() * self.total_share;
        let class = classes
            .iter()
            .find(|c| {
                pick -= c.job_share;
                pick < 0.0
            })
            .unwrap_or(&classes[classes.len() - 1]);
        let gpus = gpus_at(class.gpus, rng.random::<f64>());
        let duration = quantile(class.duration_s, rng.random::<f64>());
        let training = training_for(class.layout, gpus, self.gpus_per_node);
        TraceJob {
            line: index as u64 + 2,
            preemptible: false,
            comm: training.is_none().then_some(class.comm),
            training: training.map(Box::new),
            ..TraceJob::new(
                format!("{}-{index}", class.name),
                gpus,
                (duration * 1000.0).round().max(1.0) / 1000.0,
            )
        }
    }

    /// The jobs of a Poisson process at `per_second` over the longest drawable duration before
    /// 0 still running at 0, oldest first, each renamed `CLASS-wINDEX` and cut to the rest of
    /// its run; their own generator (seeded from `seed`), so the arriving jobs do not change.
    fn running_at_zero(&self, seed: u64, per_second: f64) -> Vec<TraceJob> {
        let longest = self
            .classes
            .iter()
            .filter_map(|c| c.duration_s.last().map(|&(_, v)| v))
            .fold(0.0, f64::max);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5741_524d_5354_5254);
        let mut running = Vec::new();
        let (mut age, mut index) = (0.0f64, 0usize);
        loop {
            age += -(1.0 - rng.random::<f64>()).ln() / per_second;
            if age > longest || !age.is_finite() {
                break;
            }
            let mut job = self.job(&mut rng, index);
            index += 1;
            let rest_ms = ms(job.duration_s) - ms(age);
            if rest_ms >= 1.0 {
                job.duration_s = rest_ms / 1000.0;
                job.name = job.name.replacen('-', "-w", 1);
                running.push(job);
            }
        }
        running.reverse();
        running
    }
}

/// Whole milliseconds of `seconds` (a value already on the millisecond grid).
fn ms(seconds: f64) -> f64 {
    (seconds * 1000.0).round()
}

/// Arrivals `raw_s` scaled onto [0, W] with W = GPU-time ÷ `busy_gpus` (whole ms), the
/// rounding's rest of GPU-time put on the longest of the jobs with the fewest GPUs.
fn hold_load(jobs: &mut [TraceJob], raw_s: &[f64], busy_gpus: f64) {
    // GPU-milliseconds, exact in f64 (below 2^53 for any trace the readers accept).
    let work_ms: f64 = jobs
        .iter()
        .map(|j| f64::from(j.gpus) * ms(j.duration_s))
        .sum();
    let window_ms = (work_ms / busy_gpus).round().max(1.0);
    let (first, span) = (raw_s[0], raw_s[raw_s.len() - 1] - raw_s[0]);
    for (j, a) in jobs.iter_mut().zip(raw_s) {
        let share = if span > 0.0 { (a - first) / span } else { 0.0 };
        j.submit_s = (share * window_ms).round() / 1000.0;
    }
    let rest_ms = busy_gpus * window_ms - work_ms;
    let fewest = jobs.iter().map(|j| j.gpus).min().unwrap_or(1);
    if let Some(j) = jobs
        .iter_mut()
        .filter(|j| j.gpus == fewest)
        .max_by(|a, b| a.duration_s.total_cmp(&b.duration_s))
    {
        let extra_ms = (rest_ms / f64::from(fewest)).round();
        j.duration_s = (ms(j.duration_s) + extra_ms).max(1.0) / 1000.0;
    }
}

/// The trace as railyard's native CSV (README "Traces"): a layout job's `model` and `layout`
/// columns filled and its `comm_share`, `bytes_per_step` left empty, the others the reverse.
pub fn to_csv(jobs: &[TraceJob]) -> String {
    let mut out = String::from(
        "name,submit_s,duration_s,gpus,queue,priority,preemptible,topology,comm_share,bytes_per_step,model,layout\n",
    );
    for j in jobs {
        let (share, bytes) = j.comm.map_or((String::new(), String::new()), |c| {
            (format!("{}", c.comm_share), format!("{}", c.bytes_per_step))
        });
        let (model, layout) = j
            .training
            .as_ref()
            .map_or((String::new(), String::new()), |t| {
                (t.model.name.clone(), format!("\"{}\"", t.layout.label()))
            });
        out.push_str(&format!(
            "{},{:.3},{:.3},{},{},{},{},none,{share},{bytes},{model},{layout}\n",
            j.name, j.submit_s, j.duration_s, j.gpus, j.queue, j.priority, j.preemptible
        ));
    }
    out
}
