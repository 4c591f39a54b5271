//! `railyard doctor`: runs the node checks of `ops::doctor` on a root tree and prints them.

use std::path::PathBuf;

use ops::doctor::{diagnose, Finding, Level};
use serde::Serialize;

use crate::error::CliError;
use crate::output::{to_json, OutputFormat};

/// Arguments of `doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The root of the tree holding `sys/`, `proc/` and `etc/` (a fixture, or a node's `/`).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// The node's host name (default: `proc/sys/kernel/hostname`, then `etc/hostname`).
    #[arg(long, value_name = "NAME")]
    pub hostname: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// `doctor`: print the findings; a `fail` finding makes the command exit 1.
pub fn doctor(args: &DoctorArgs) -> Result<String, CliError> {
    let findings = diagnose(&args.root, args.hostname.as_deref())?;
    let report = match args.output {
        OutputFormat::Text => render_text(&findings),
        OutputFormat::Json => render_json(&findings),
    };
    let failed: Vec<String> = findings
        .iter()
        .filter(|f| f.level == Level::Fail)
        .map(|f| format!("{} {}", f.check, f.subject))
        .collect();
    if failed.is_empty() {
        Ok(report)
    } else {
        Err(CliError::CheckFailed {
            report,
            summary: format!(
                "doctor: {} check{} failed: {}",
                failed.len(),
                if failed.len() == 1 { "" } else { "s" },
                failed.join(", ")
            ),
        })
    }
}

/// The findings as text: one line per finding, `why` and `do` lines under each warn and fail,
/// and a count at the end.
pub fn render_text(findings: &[Finding]) -> String {
    let check_w = findings.iter().map(|f| f.check.len()).max().unwrap_or(0);
    let mut out = String::new();
    for f in findings {
        out.push_str(&format!(
            "{:<4}  {:<check_w$}  {}: {}\n",
            f.level.word(),
            f.check,
            f.subject,
            f.seen
        ));
        if f.level == Level::Ok {
            continue; // why and what to do are in the JSON; people need them for problems
        }
        let indent = " ".repeat(6 + check_w + 2);
        if !f.why.is_empty() {
            out.push_str(&format!("{indent}why: {}\n", f.why));
        }
        if !f.action.is_empty() {
            out.push_str(&format!("{indent}do:  {}\n", f.action));
        }
    }
    let (ok, warn, fail) = counts(findings);
    out.push_str(&format!("\n{ok} ok, {warn} warn, {fail} fail\n"));
    out
}

/// The findings as JSON: `{"findings": [...], "ok": n, "warn": n, "fail": n}`.
pub fn render_json(findings: &[Finding]) -> String {
    #[derive(Serialize)]
    struct Report<'a> {
        findings: &'a [Finding],
        ok: usize,
        warn: usize,
        fail: usize,
    }
    let (ok, warn, fail) = counts(findings);
    to_json(&Report {
        findings,
        ok,
        warn,
        fail,
    })
}

fn counts(findings: &[Finding]) -> (usize, usize, usize) {
    let n = |l: Level| findings.iter().filter(|f| f.level == l).count();
    (n(Level::Ok), n(Level::Warn), n(Level::Fail))
}
