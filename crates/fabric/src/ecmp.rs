//! ECMP as balls into bins: the load of the most loaded of `m` equal paths when `n` connections
//! of `q` QPs each are hashed onto them, by simulation with the real 5-tuple hash and real RoCEv2
//! source ports, next to the exact balls-into-bins expectation.

use crate::hash::{choose, switch_seed, FiveTuple, HashFn, SwitchSeeds, IPPROTO_UDP};
use crate::sport::{mix64, qp_number, udp_source_port, SplitMix64};

/// Most balls (connections × QPs) for which [`expected_max_load`] is computed exactly.
pub const MAX_EXACT_BALLS: u64 = 2048;

/// The distribution of the most loaded path over many trials, in connections (a QP counts as
/// 1/q of a connection).
#[derive(Clone, Debug, PartialEq)]
pub struct MaxLoadStats {
    /// Trials run.
    pub trials: u32,
    /// Mean of the most loaded path's load.
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Largest seen.
    pub max: f64,
    /// Mean over trials of ideal ÷ most loaded path (ideal = flows / paths, perfect spreading):
    /// the fraction of ideal bandwidth the most loaded path leaves, averaged. Not 1 / mean.
    pub efficiency: f64,
}

/// Hash `flows` connections of `qps` QPs each onto `paths` next hops, `trials` times. Each
/// trial draws fresh source and destination addresses, QP numbers and a switch seed from
/// `seed`; the next hop is `hash(5-tuple) mod paths` as a switch computes it. `paths`, `flows`,
/// `qps` and `trials` must be at least 1.
pub fn simulate_max_load(
    paths: u32,
    flows: u32,
    qps: u32,
    trials: u32,
    seed: u64,
    hash: HashFn,
) -> MaxLoadStats {
    assert!(paths >= 1 && flows >= 1 && qps >= 1 && trials >= 1);
    let mut rng = SplitMix64::new(seed);
    let mut counts = vec![0u32; paths as usize];
    let mut samples: Vec<f64> = Vec::with_capacity(trials as usize);
    let ideal = f64::from(flows) / f64::from(paths);
    let mut efficiency_sum = 0.0;
    for _ in 0..trials {
        counts.iter_mut().for_each(|c| *c = 0);
        let trial_seed = rng.next_u64();
        let sw = switch_seed(SwitchSeeds::PerSwitch, trial_seed, 0);
        for f in 0..flows {
            let ips = mix64(trial_seed ^ mix64(u64::from(f) + 1));
            let src_ip = 0x0A00_0000 | (ips as u32 & 0x00FF_FFFF);
            let dst_ip = 0x0A00_0000 | ((ips >> 32) as u32 & 0x00FF_FFFF);
            for q in 0..qps {
                let l = qp_number(trial_seed, u64::from(f), q, 0);
                let r = qp_number(trial_seed, u64::from(f), q, 1);
                let t = FiveTuple {
                    src_ip,
                    dst_ip,
                    src_port: udp_source_port(l, r),
                    dst_port: topology::roce::ROCE_V2_UDP_PORT,
                    protocol: IPPROTO_UDP,
                };
                counts[choose(hash, sw, &t, paths as usize)] += 1;
            }
        }
        let most = counts.iter().copied().max().unwrap_or(0);
        let most = f64::from(most) / f64::from(qps);
        efficiency_sum += if most > 0.0 {
            (ideal / most).min(1.0)
        } else {
            1.0
        };
        samples.push(most);
    }
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    samples.sort_by(f64::total_cmp);
    let rank = |p: f64| {
        let i = ((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[i]
    };
    MaxLoadStats {
        trials,
        mean,
        p50: rank(0.50),
        p99: rank(0.99),
        max: samples[samples.len() - 1],
        efficiency: efficiency_sum / f64::from(trials),
    }
}

/// The exact expected load of the most loaded of `paths` bins when `flows × qps` balls fall
/// uniformly at random, in connections (divided by `qps`); `None` above [`MAX_EXACT_BALLS`].
///
/// Method: E(max) = Σ_{k≥0} P(max > k), and P(max ≤ k) by conditioning bin by bin: with `s`
/// balls left over `j` bins, the next bin gets Binomial(s, 1/j) of them, each bin at most `k`.
pub fn expected_max_load(paths: u32, flows: u32, qps: u32) -> Option<f64> {
    let n = u64::from(flows) * u64::from(qps);
    if n > MAX_EXACT_BALLS || paths == 0 {
        return None;
    }
    let n = n as usize;
    let m = paths as usize;
    if m == 1 || n == 0 {
        return Some(n as f64 / f64::from(qps));
    }
    let mut ln_fact = vec![0.0f64; n + 1];
    for i in 1..=n {
        ln_fact[i] = ln_fact[i - 1] + (i as f64).ln();
    }
    let binom = |s: usize, c: usize, j: usize| -> f64 {
        let p = 1.0 / j as f64;
        if j == 1 {
            return if c == s { 1.0 } else { 0.0 };
        }
        (ln_fact[s] - ln_fact[c] - ln_fact[s - c]
            + c as f64 * p.ln()
            + (s - c) as f64 * (1.0 - p).ln())
        .exp()
    };
    let p_max_at_most = |k: usize| -> f64 {
        // q[s] = P(all of j bins ≤ k | s balls in them), for j = 1 first.
        let mut q: Vec<f64> = (0..=n).map(|s| if s <= k { 1.0 } else { 0.0 }).collect();
        for j in 2..=m {
            let mut next = vec![0.0f64; n + 1];
            // Only the s reachable from n with the bins still to fill matter.
            let lo = n.saturating_sub((m - j) * k);
            for (s, slot) in next.iter_mut().enumerate().skip(lo) {
                if s > j * k {
                    continue;
                }
                let mut acc = 0.0;
                for c in 0..=k.min(s) {
                    acc += binom(s, c, j) * q[s - c];
                }
                *slot = acc;
            }
            q = next;
        }
        q[n]
    };
    let mut e = 0.0;
    for k in 0..n {
        if k * m < n {
            e += 1.0;
            continue;
        }
        let tail = 1.0 - p_max_at_most(k);
        if tail < 1e-15 {
            break;
        }
        e += tail;
    }
    Some(e / f64::from(qps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_expectations_match_design_md() {
        let e = |m, n| expected_max_load(m, n, 1).expect("small");
        assert!((e(8, 8) - 2.597).abs() < 0.0015, "{}", e(8, 8));
        assert!((e(8, 32) - 7.048).abs() < 0.0015, "{}", e(8, 32));
        assert!((e(8, 64) - 12.24).abs() < 0.01, "{}", e(8, 64));
        assert!((e(8, 128) - 21.91).abs() < 0.01, "{}", e(8, 128));
        // 4 QPs per connection on 8 paths: 7.048 / 4.
        assert!((expected_max_load(8, 8, 4).expect("small") - 1.762).abs() < 0.001);
    }

    #[test]
    fn trivial_cases() {
        assert_eq!(expected_max_load(1, 5, 1), Some(5.0));
        // Two balls, two bins: max 2 with probability 1/2, else 1.
        assert!((expected_max_load(2, 2, 1).expect("small") - 1.5).abs() < 1e-12);
        assert_eq!(expected_max_load(8, 4096, 1), None);
    }

    #[test]
    fn simulation_is_deterministic_per_seed() {
        let a = simulate_max_load(8, 8, 1, 200, 3, HashFn::Crc32);
        let b = simulate_max_load(8, 8, 1, 200, 3, HashFn::Crc32);
        assert_eq!(a, b);
        assert!(a.p50 <= a.p99 && a.p99 <= a.max);
    }

    #[test]
    fn efficiency_is_the_mean_of_ideal_over_max_not_one_over_the_mean() {
        let s = simulate_max_load(8, 8, 1, 2000, 11, HashFn::Mix);
        // Jensen: mean(1/max) ≥ 1/mean(max), strictly when max varies.
        assert!(s.efficiency > 1.0 / s.mean + 1e-6, "{s:?}");
        assert!(s.efficiency <= 1.0);
        // One path: every trial is ideal.
        assert_eq!(
            simulate_max_load(1, 5, 2, 10, 1, HashFn::Crc32).efficiency,
            1.0
        );
    }
}
