//! `-j/--jobs`: runs on several threads give the same bytes as one after another (text, JSON,
//! HTML), and a bad thread count is a usage error.

use crate::{temp_dir, usage_fails};

/// `simulate` on the README main run's modes, both dialects (eight runs), with `-j threads`:
/// the text, the JSON and the HTML report.
fn simulate_with(threads: &str) -> (String, String, Vec<u8>) {
    let dir = temp_dir(&format!("parallel-j{threads}"));
    let report = dir.join("report.html");
    let trace = crate::fixture("traces/small.csv").display().to_string();
    let args = |output: &'static str| {
        vec![
            "-j".to_owned(),
            threads.to_owned(),
            "simulate".to_owned(),
            "--cluster".to_owned(),
            "preset:philly-512".to_owned(),
            "--trace".to_owned(),
            trace.clone(),
            "--compare".to_owned(),
            "fifo,best-effort,fair-share,best-effort+required:tier0".to_owned(),
            "--scheduler".to_owned(),
            "kueue,kai".to_owned(),
            "--output".to_owned(),
            output.to_owned(),
            "--out".to_owned(),
            // The same relative path for every -j (each run in its own directory): the page
            // records the command line.
            "report.html".to_owned(),
        ]
    };
    let run = |output| {
        let a = args(output);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_railyard"))
            .args(&a)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run("wide");
    let json = run("json");
    (text, json, std::fs::read(report).unwrap())
}

#[test]
fn simulate_gives_the_same_bytes_on_one_thread_and_on_three() {
    let (text1, json1, html1) = simulate_with("1");
    let (text3, json3, html3) = simulate_with("3");
    assert_eq!(text1, text3);
    assert_eq!(json1, json3);
    assert_eq!(html1, html3);
    // Eight runs in input order: each mode under kueue, then under kai.
    let v: serde_json::Value = serde_json::from_str(&json1).unwrap();
    let names: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 8, "{names:?}");
    assert_eq!(names[0], "fifo (kueue)");
    assert_eq!(names[1], "fifo (kai)");
    assert_eq!(names[7], "best-effort+required:tier0 (kai)");
    // -j is left out of the recorded command line: it changes no result.
    assert!(!json1.contains("\"-j\""), "{json1}");
}

#[test]
fn a_thread_count_of_zero_is_a_usage_error() {
    let e = usage_fails(&["-j", "0", "topo", "show", "--cluster", "preset:philly-512"]);
    assert!(e.contains("--jobs") && e.contains('0'), "{e}");
}
