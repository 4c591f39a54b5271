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
        // Blackwell has no published bf16 efficiency: `simulate` could price none of the
        // layout jobs such a trace would carry.
        (
            &[
                "--profile",
                "llm",
                "--jobs",
                "5",
                "--cluster",
                "preset:oci-gb200-nvl72-4k",
            ][..],
            "--cluster: Blackwell GPUs have no bf16 peak or published efficiency",
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

/// A 32-node allreduce placement, ranks in the given node order.
fn placement(dir: &std::path::Path, name: &str, nodes: &[u32]) -> String {
    let pods: Vec<String> = nodes
        .iter()
        .enumerate()
        .map(|(r, n)| format!(r#"{{"rank":{r},"node":"gpu-{n:04}","gpus":8}}"#))
        .collect();
    let path = dir.join(format!("{name}.json"));
    let text = format!(
        r#"{{"job":"{name}","placed":true,"pods":[{}]}}"#,
        pods.join(",")
    );
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn busbw(cluster: &str, placement: &str) -> f64 {
    let out = ok(&[
        "-q",
        "fabric",
        "collective",
        "--cluster",
        cluster,
        "--placement",
        placement,
        "--collective",
        "allreduce",
    ]);
    let line = out
        .lines()
        .find(|l| l.starts_with("bus bandwidth"))
        .unwrap();
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

#[test]
fn the_4to1_preset_has_quarter_uplinks_and_cross_block_jobs_pay_for_them() {
    let show = ok(&["topo", "show", "--cluster", "preset:oci-h100-16k-4to1"]);
    let capacity_in = |tier: &str| -> f64 {
        let row = show
            .lines()
            .find(|l| l.trim_start().starts_with(tier) && l.contains("Pb/s"))
            .unwrap();
        let cols: Vec<&str> = row.split_whitespace().collect();
        let at = cols.iter().position(|c| *c == "Pb/s").unwrap();
        assert_eq!(cols[at + 1], if tier == "1" { "4:1" } else { "1:1" });
        cols[at - 1].parse().unwrap()
    };
    // Leaves' up-links into Tier-1 carry a quarter of what their hosts inject.
    assert!(
        (capacity_in("1") / capacity_in("0") - 0.25).abs() < 1e-3,
        "{show}"
    );
    let dir = temp_dir("preset-4to1");
    let one_block = placement(&dir, "one-block", &(0..32).collect::<Vec<_>>());
    // Half the ranks in local block 0, half in block 1, alternating: every ring hop crosses.
    let two: Vec<u32> = (0..16).flat_map(|i| [i, 32 + i]).collect();
    let two_blocks = placement(&dir, "two-blocks", &two);
    let inside = busbw("preset:oci-h100-16k-4to1", &one_block);
    let across = busbw("preset:oci-h100-16k-4to1", &two_blocks);
    let across_nonblocking = busbw("preset:oci-h100-16k", &two_blocks);
    assert!(across < inside / 2.0, "inside {inside}, across {across}");
    assert!(
        across < across_nonblocking,
        "{across} vs {across_nonblocking}"
    );
}
