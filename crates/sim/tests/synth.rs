//! The synthetic trace generator: determinism, and statistics that match the profile.

use sim::synth::{gpu_time_shares, quantile, synth_trace, to_csv, Arrivals, SynthSpec, LLM};

fn spec(jobs: usize, seed: u64) -> SynthSpec {
    SynthSpec {
        profile: &LLM,
        jobs,
        seed,
        arrivals: Arrivals::Load {
            cluster_gpus: 16_384,
            load: 0.8,
        },
    }
}

#[test]
fn same_seed_same_bytes_other_seed_other_trace() {
    let a = to_csv(&synth_trace(&spec(2_000, 7)));
    assert_eq!(a, to_csv(&synth_trace(&spec(2_000, 7))));
    assert_ne!(a, to_csv(&synth_trace(&spec(2_000, 8))));
    assert!(a.starts_with("name,submit_s,duration_s,gpus,queue,"));
    assert_eq!(a.lines().count(), 2_001);
}

#[test]
fn quantile_tables_interpolate_log_linearly() {
    let t: &'static [(f64, f64)] = &[(0.0, 1.0), (0.5, 100.0), (1.0, 10_000.0)];
    assert_eq!(quantile(t, 0.0), 1.0);
    assert!((quantile(t, 0.25) - 10.0).abs() < 1e-9);
    assert!((quantile(t, 0.5) - 100.0).abs() < 1e-9);
    assert!((quantile(t, 0.75) - 1000.0).abs() < 1e-6);
    assert!((quantile(t, 1.0) - 10_000.0).abs() < 1e-6);
}

#[test]
fn a_large_sample_matches_the_profile() {
    let n = 100_000;
    let jobs = synth_trace(&spec(n, 11));
    assert!(jobs.windows(2).all(|w| w[0].submit_s <= w[1].submit_s));
    let shares = gpu_time_shares(&LLM);
    let total_work: f64 = jobs.iter().map(|j| f64::from(j.gpus) * j.duration_s).sum();
    for (class, expected_gpu_share) in LLM.classes.iter().zip(&shares) {
        let of: Vec<_> = jobs
            .iter()
            .filter(|j| j.name.starts_with(&format!("{}-", class.name)))
            .collect();
        // Share of jobs: binomial, 4 standard deviations.
        let p = class.job_share / 100.0;
        let sd = (p * (1.0 - p) / n as f64).sqrt();
        let got = of.len() as f64 / n as f64;
        assert!((got - p).abs() < 4.0 * sd, "{}: {got} of jobs", class.name);
        // Median duration and median GPUs: the table's 50% point.
        let mut d: Vec<f64> = of.iter().map(|j| j.duration_s).collect();
        d.sort_by(f64::total_cmp);
        let want = quantile(class.duration_s, 0.5);
        let median = d[d.len() / 2];
        let tolerance = if of.len() > 5_000 { 0.05 } else { 0.2 };
        assert!(
            (median / want - 1.0).abs() < tolerance,
            "{}: median duration {median}, profile {want}",
            class.name
        );
        let mut g: Vec<u32> = of.iter().map(|j| j.gpus).collect();
        g.sort_unstable();
        let want_gpus = sim::synth::gpus_at(class.gpus, 0.5);
        assert_eq!(g[g.len() / 2], want_gpus, "{}: median GPUs", class.name);
        let work: f64 = of.iter().map(|j| f64::from(j.gpus) * j.duration_s).sum();
        let got_share = 100.0 * work / total_work;
        if class.name == "pretrain" {
            // Heavy-tailed: a few percent either way on 100,000 jobs.
            assert!(
                (got_share - expected_gpu_share).abs() < 6.0,
                "pretrain GPU time {got_share}%, profile {expected_gpu_share}%"
            );
        }
    }
    // Offered load over the arrival window ≈ 80%.
    let span = jobs.last().unwrap().submit_s;
    let load = total_work / (span * 16_384.0);
    assert!((load - 0.8).abs() < 0.08, "offered load {load}");
}

#[test]
fn the_pretraining_class_holds_most_gpu_time_with_under_one_percent_of_jobs() {
    // Hu et al. (NSDI '24) Fig. 4: pretraining is 0.9% of Seren's GPU jobs and 69.5% of its
    // GPU time; the profile's own expectation must keep that shape (most of the GPU time).
    let shares = gpu_time_shares(&LLM);
    let pretrain = LLM
        .classes
        .iter()
        .position(|c| c.name == "pretrain")
        .unwrap();
    assert!(shares[pretrain] > 60.0, "{shares:?}");
    assert!(LLM.classes[pretrain].job_share < 1.0);
}
