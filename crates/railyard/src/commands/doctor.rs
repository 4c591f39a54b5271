//! `railyard doctor`: runs the node checks of `ops::doctor` on a root tree and prints them.

use std::path::PathBuf;

use ops::doctor::{diagnose_shape, Finding, Level};
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
    /// The node's shape (e.g. BM.GPU.H100.8): also check its RDMA device names against the
    /// NCCL device list the vendor publishes for it (the one `launch` writes).
    #[arg(long, value_name = "NAME")]
    pub shape: Option<String>,
    /// Output format: text, json, or prometheus (the node-exporter textfile-collector format:
    /// one gauge per check; `--format` is an alias).
    #[arg(long, alias = "format", value_enum, default_value_t)]
    pub output: DoctorOutput,
}

/// What `doctor` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DoctorOutput {
    /// One line per finding, with why and what to do under each problem.
    #[default]
    Text,
    /// `{"findings": [...], "ok": n, "warn": n, "fail": n}`.
    Json,
    /// Prometheus text exposition (node-exporter textfile collector): `railyard_doctor_check`
    /// per check (0 ok, 1 warn, 2 fail) and `railyard_doctor_findings` per level.
    Prometheus,
}

impl From<OutputFormat> for DoctorOutput {
    fn from(o: OutputFormat) -> Self {
        match o {
            OutputFormat::Text => DoctorOutput::Text,
            OutputFormat::Json => DoctorOutput::Json,
        }
    }
}

/// `doctor`: print the findings; a `fail` finding makes the command exit 1.
pub fn doctor(args: &DoctorArgs) -> Result<String, CliError> {
    let findings = diagnose_shape(&args.root, args.hostname.as_deref(), args.shape.as_deref())?;
    let report = match args.output {
        DoctorOutput::Text => render_text(&findings),
        DoctorOutput::Json => render_json(&findings),
        DoctorOutput::Prometheus => render_prometheus(&findings),
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

/// A Prometheus label value: backslash, double quote and newline escaped.
fn label_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The findings in the Prometheus text exposition format, for node-exporter's textfile collector
/// (write it to `*.prom` in the collector's directory from a DaemonSet or a timer). One series
/// per finding: labels `check` and `subject`, plus `device` and `port` when the subject names an
/// RDMA port (`mlx5_0 port 1 …`); a second finding with the same labels gets an `index`.
pub fn render_prometheus(findings: &[Finding]) -> String {
    let mut out = String::from(
        "# HELP railyard_doctor_check Result of one railyard doctor check: 0 ok, 1 warn, 2 fail.\n# TYPE railyard_doctor_check gauge\n",
    );
    let mut seen: std::collections::BTreeMap<(String, String), usize> = Default::default();
    for f in findings {
        let value = match f.level {
            Level::Ok => 0,
            Level::Warn => 1,
            Level::Fail => 2,
        };
        let mut labels: Vec<(&str, String)> = vec![
            ("check", f.check.to_string()),
            ("subject", f.subject.to_string()),
        ];
        let words: Vec<&str> = f.subject.split_whitespace().collect();
        if let [device, "port", port, ..] = words.as_slice() {
            labels.push(("device", (*device).to_owned()));
            labels.push(("port", (*port).to_owned()));
        }
        let n = seen
            .entry((f.check.to_string(), f.subject.to_string()))
            .or_default();
        if *n > 0 {
            labels.push(("index", n.to_string()));
        }
        *n += 1;
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", label_value(v)))
            .collect();
        out.push_str(&format!(
            "railyard_doctor_check{{{}}} {value}\n",
            labels.join(",")
        ));
    }
    let (ok, warn, fail) = counts(findings);
    out.push_str(
        "# HELP railyard_doctor_findings Findings of the last railyard doctor run, by level.\n# TYPE railyard_doctor_findings gauge\n",
    );
    for (level, n) in [("ok", ok), ("warn", warn), ("fail", fail)] {
        out.push_str(&format!(
            "railyard_doctor_findings{{level=\"{level}\"}} {n}\n"
        ));
    }
    out
}
