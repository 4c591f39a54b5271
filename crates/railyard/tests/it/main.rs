//! Integration tests of the `railyard` CLI: one test binary, one module per command family.

mod book;
mod book_links;
mod cables;
mod cli;
mod conventions;
mod corpus;
mod crds;
mod doctor;
mod fabric;
mod fuzz_regressions;
mod hardening;
mod k8s_replay;
mod kai;
mod kueue_admission;
mod launch;
mod limits;
mod lint;
mod live;
mod parallel;
mod place;
mod queues;
mod scheduler_traces;
mod simulate;
mod simulate_report;
mod slurm_cluster;
mod step;
mod sweep;
mod tidy;
mod topo;
mod trace;
mod workloads;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The outcome of running the `railyard` binary.
#[derive(Debug)]
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Run `railyard ARGS…` from the crate directory (so fixture paths are relative).
pub fn railyard(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_railyard"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the railyard binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

/// Run `railyard ARGS…` with `input` on standard input.
pub fn railyard_stdin(args: &[&str], input: &str) -> Run {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_railyard"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the railyard binary runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("railyard ends");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

/// Run and expect success; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let r = railyard(args);
    assert_eq!(r.code, 0, "railyard {args:?} failed: {}", r.stderr);
    r.stdout
}

/// Run and expect a one-line input error with exit code 1 and no panic; returns the line.
pub fn fails(args: &[&str]) -> String {
    fails_with(1, args)
}

/// Run and expect a one-line usage error (a bad flag value) with exit code 2; returns the line.
pub fn usage_fails(args: &[&str]) -> String {
    fails_with(2, args)
}

fn fails_with(code: i32, args: &[&str]) -> String {
    let r = railyard(args);
    assert_eq!(
        r.code, code,
        "railyard {args:?}: expected exit {code}, got {}: {}",
        r.code, r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "panic: {}", r.stderr);
    let errors: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "expected one error line, got: {}",
        r.stderr
    );
    errors[0].to_owned()
}

/// Assert a failed run printed exactly one `error:` line (besides notes) mentioning `contains`
/// and exited 1.
pub fn assert_one_line_error(run: &Run, contains: &str) {
    assert_eq!(run.code, 1, "exit code; stderr: {}", run.stderr);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| !l.starts_with("note:"))
        .collect();
    assert_eq!(lines.len(), 1, "one error line, got: {}", run.stderr);
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    assert!(
        lines[0].contains(contains),
        "error should mention `{contains}`: {}",
        lines[0]
    );
}

/// A JSON array of strings (a container's `command`, an output's `command` line) as `&str`s;
/// panics on anything else.
pub fn strings(v: &serde_json::Value) -> Vec<&str> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|w| w.as_str().expect("a string"))
        .collect()
}

/// A path under `tests/fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// A fresh temporary directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A fresh scratch directory for one test (same as [`temp_dir`]).
pub fn scratch(name: &str) -> PathBuf {
    temp_dir(name)
}
