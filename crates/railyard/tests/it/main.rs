//! CLI integration tests: one test binary, one module per command.

mod cables;
mod doctor;
mod launch;
mod lint;

use std::path::PathBuf;
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

/// Run `railyard ARGS…` from the crate directory.
pub fn railyard(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_railyard"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the railyard binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A path under `tests/fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// A fresh scratch directory for one test (under the target directory's temp area).
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("railyard-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir is writable");
    dir
}

/// Assert a failed run printed exactly one `error:` line and exited 1.
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
