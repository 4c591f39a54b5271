//! Seeded synthetic traces for growth benchmarks: job sizes 1–512 GPUs, log-normal durations,
//! Poisson arrivals at a given offered load.
//!
//! Sizes are powers of two from 1 to 512 GPUs, each equally likely (mean 102.3 GPUs; six of ten
//! jobs span several 8-GPU nodes). Durations are log-normal with a median of 30 minutes and
//! σ = 1 (mean e^0.5 × 30 min ≈ 49.5 min). Arrivals are a Poisson process whose rate makes the
//! offered load (mean GPUs × mean duration × rate) the given share of the cluster's GPUs. All
//! randomness comes from the seed (SplitMix64); the same arguments give the same trace.

use crate::runtime::CommProfile;
use crate::trace::TraceJob;

/// Median job duration, seconds.
pub const MEDIAN_DURATION_S: f64 = 1800.0;
/// σ of the log of the duration.
pub const DURATION_SIGMA: f64 = 1.0;
/// Largest job, GPUs (sizes are 2^0 … 2^9).
pub const MAX_GPUS: u32 = 512;

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SyntheticSpec {
    /// Number of jobs.
    pub jobs: usize,
    /// GPUs of the cluster the load is offered to.
    pub cluster_gpus: u64,
    /// Offered load, a share of the cluster's GPUs (0.8 = 80%).
    pub load: f64,
    /// The seed.
    pub seed: u64,
    /// Every job's communication profile; `None` leaves the simulator's defaults by size
    /// (network on), a zero `comm_share` turns the network off.
    pub comm: Option<CommProfile>,
}

/// The trace: jobs `j0`, `j1`, … in arrival order, queue `default`, priority 0, not
/// preemptible, no topology request. Empty when `jobs`, `cluster_gpus` or `load` is zero.
pub fn synthetic_trace(spec: &SyntheticSpec) -> Vec<TraceJob> {
    if spec.cluster_gpus == 0 || spec.load.is_nan() || spec.load <= 0.0 {
        return Vec::new();
    }
    let sizes = MAX_GPUS.trailing_zeros() + 1;
    let mean_gpus = f64::from((1u32 << sizes) - 1) / f64::from(sizes);
    let mean_duration = MEDIAN_DURATION_S * (DURATION_SIGMA * DURATION_SIGMA / 2.0).exp();
    let rate = spec.load * spec.cluster_gpus as f64 / (mean_gpus * mean_duration);
    let mut rng = SplitMix64(spec.seed);
    let mut t = 0.0f64;
    (0..spec.jobs)
        .map(|i| {
            t += -(1.0 - rng.unit()).ln() / rate;
            let gpus = 1u32 << (rng.next() % u64::from(sizes));
            let duration = (MEDIAN_DURATION_S.ln() + DURATION_SIGMA * rng.normal()).exp();
            TraceJob {
                line: i as u64 + 2,
                // Whole milliseconds, as the simulator's clock keeps them and a CSV round-trips.
                submit_s: (t * 1000.0).round() / 1000.0,
                preemptible: false,
                comm: spec.comm,
                ..TraceJob::new(
                    format!("j{i}"),
                    gpus,
                    (duration * 1000.0).round().max(1.0) / 1000.0,
                )
            }
        })
        .collect()
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, and good enough for workload shapes.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 bits.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller, one of the pair).
    fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(jobs: usize, seed: u64) -> SyntheticSpec {
        SyntheticSpec {
            jobs,
            cluster_gpus: 16_384,
            load: 0.8,
            seed,
            comm: None,
        }
    }

    #[test]
    fn splitmix_matches_the_published_reference() {
        // First outputs for seed 1234567 (Rosetta Code, "Pseudo-random numbers/Splitmix64",
        // from Vigna's prng.di.unimi.it/splitmix64.c).
        let mut r = SplitMix64(1_234_567);
        assert_eq!(r.next(), 6_457_827_717_110_365_317);
        assert_eq!(r.next(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn same_seed_same_trace_and_statistics_match_the_spec() {
        let a = synthetic_trace(&spec(20_000, 7));
        assert_eq!(a, synthetic_trace(&spec(20_000, 7)));
        assert_ne!(a, synthetic_trace(&spec(20_000, 8)));
        assert!(a.windows(2).all(|w| w[0].submit_s <= w[1].submit_s));
        assert!(a
            .iter()
            .all(|j| j.gpus.is_power_of_two() && j.gpus <= MAX_GPUS));
        // Offered load over the arrival window ≈ 80% (sampling error of 20,000 heavy-tailed
        // jobs is a few percent).
        let work: f64 = a.iter().map(|j| f64::from(j.gpus) * j.duration_s).sum();
        let span = a.last().unwrap().submit_s;
        let load = work / (span * 16_384.0);
        assert!((load - 0.8).abs() < 0.08, "offered load {load}");
        // Median duration ≈ 30 min.
        let mut d: Vec<f64> = a.iter().map(|j| j.duration_s).collect();
        d.sort_by(f64::total_cmp);
        let median = d[d.len() / 2];
        assert!(
            (median / MEDIAN_DURATION_S - 1.0).abs() < 0.05,
            "median {median}"
        );
        // Every size appears about a tenth of the time.
        for k in 0..10 {
            let n = a.iter().filter(|j| j.gpus == 1 << k).count();
            assert!(
                (1_700..2_300).contains(&n),
                "size {} appears {n} times",
                1 << k
            );
        }
    }
}
