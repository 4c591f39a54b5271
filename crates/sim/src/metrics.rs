//! Result statistics: percentiles and empirical CDFs, computed the same way everywhere.

use serde::Serialize;

/// The `p`-th percentile (0..=100) of `values` by nearest rank on sorted data; 0 when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// An empirical CDF sampled at up to `points` quantiles, for plotting.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cdf {
    /// `(value, fraction ≤ value)` pairs, ascending.
    pub points: Vec<(f64, f64)>,
}

impl Cdf {
    /// The CDF of `values` (any order), thinned to at most `points` points.
    pub fn of(values: &[f64], points: usize) -> Self {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n == 0 {
            return Cdf { points: Vec::new() };
        }
        let step = (n / points.max(1)).max(1);
        let mut out: Vec<(f64, f64)> = (0..n)
            .step_by(step)
            .map(|i| (v[i], (i + 1) as f64 / n as f64))
            .collect();
        if out.last().map(|p| p.1) != Some(1.0) {
            out.push((v[n - 1], 1.0));
        }
        Cdf { points: out }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&[7.0], 50.0), 7.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn cdf_ends_at_one_and_is_monotone() {
        let c = Cdf::of(&[3.0, 1.0, 2.0, 2.0, 9.0], 3);
        assert_eq!(c.points.last().unwrap().1, 1.0);
        assert!(c
            .points
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
    }
}

/// Waits summarised: how many, the mean, the median and the 99th percentile (seconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct WaitStats {
    /// Jobs counted.
    pub jobs: usize,
    /// Mean wait.
    pub avg_s: f64,
    /// Median wait.
    pub p50_s: f64,
    /// 99th-percentile wait.
    pub p99_s: f64,
}

impl WaitStats {
    /// The statistics of `waits` (any order; non-finite values are left out).
    pub fn of(waits: &[f64]) -> Self {
        let mut v: Vec<f64> = waits.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            return WaitStats::default();
        }
        WaitStats {
            jobs: v.len(),
            avg_s: v.iter().sum::<f64>() / v.len() as f64,
            p50_s: percentile(&v, 50.0),
            p99_s: percentile(&v, 99.0),
        }
    }
}
