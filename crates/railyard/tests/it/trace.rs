//! `trace synth`: same seed same bytes, a file `simulate` reads back, one-line usage errors.

use crate::{ok, railyard, temp_dir};

#[test]
fn same_seed_same_file_and_simulate_reads_it_back() {
    let dir = temp_dir("trace-synth");
    let out = |name: &str, seed: &str| {
        let path = dir.join(name);
        let p = path.to_str().unwrap().to_owned();
        ok(&[
            "trace",
            "synth",
            "--profile",
            "llm",
            "--jobs",
            "150",
            "--seed",
            seed,
            "--cluster",
            "preset:oci-h100-16k",
            "--load",
            "0.8",
            "--out",
            &p,
        ]);
        (p, std::fs::read_to_string(&path).unwrap())
    };
    let (a, text) = out("a.csv", "3");
    assert_eq!(text, out("b.csv", "3").1);
    assert_ne!(text, out("c.csv", "4").1);
    assert_eq!(text.lines().count(), 151);
    let report = ok(&[
        "simulate",
        "--cluster",
        "preset:oci-h100-16k",
        "--trace",
        &a,
        "--compare",
        "best-effort,best-effort+required:tier0",
    ]);
    assert!(report.contains("150 jobs from"), "{report}");
    assert!(report.contains("best-effort+required:tier0"), "{report}");
}

#[test]
fn a_rate_needs_no_cluster_and_goes_to_stdout() {
    let csv = ok(&[
        "trace",
        "synth",
        "--profile",
        "llm",
        "--jobs",
        "3",
        "--rate",
        "60",
    ]);
    assert_eq!(csv.lines().count(), 4);
}

#[test]
fn bad_options_exit_2_with_one_line() {
    for (args, says) in [
        (
            &["--profile", "llm", "--jobs", "5", "--load", "0.8"][..],
            "--load: needs --cluster",
        ),
        (
            &["--profile", "llm", "--jobs", "0", "--rate", "10"][..],
            "--jobs",
        ),
        (
            &["--profile", "gpt", "--jobs", "5", "--rate", "10"][..],
            "unknown profile",
        ),
        (&["--profile", "llm", "--jobs", "5"][..], "--rate"),
        (
            &["--profile", "llm", "--jobs", "5", "--rate=0"][..],
            "--rate",
        ),
    ] {
        let mut all = vec!["trace", "synth"];
        all.extend_from_slice(args);
        let r = railyard(&all);
        assert_eq!(r.code, 2, "{all:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{all:?}: {}", r.stderr);
        assert!(
            r.stderr.starts_with("error: ") && r.stderr.contains(says),
            "{}",
            r.stderr
        );
    }
}
