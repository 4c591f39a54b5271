//! `railyard doctor`: runs the node checks of `ops::doctor` on a root tree and prints them.

use std::path::PathBuf;

use ops::doctor::{diagnose_shape, Finding, Severity};
use ops::doctor_report::report_of;

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
    /// Output format: text, json, yaml, wide, or prometheus (the node-exporter textfile-collector
    /// format: one gauge per check; `--format` is a hidden alias kept for old scripts)
    #[arg(short, long, alias = "format", value_enum, default_value_t)]
    pub output: DoctorOutput,
}

/// What `doctor` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DoctorOutput {
    /// One line per finding, with why and what to do under each problem.
    #[default]
    Text,
    /// `{"findings": [...], "skipped": n, "info": n, "warning": n, "error": n}`.
    Json,
    /// The JSON document as YAML.
    Yaml,
    /// Text with why and what to do under every finding, passed checks included.
    Wide,
    /// Prometheus text exposition (node-exporter textfile collector): `railyard_doctor_check`
    /// per check that ran (0 info, 1 warning, 2 error), `railyard_doctor_skipped` per check that
    /// did not (with its reason) and `railyard_doctor_findings` per severity.
    Prometheus,
}

/// `doctor`: print the findings; an `error` finding makes the command exit 1.
pub fn doctor(args: &DoctorArgs) -> Result<String, CliError> {
    let findings = diagnose_shape(&args.root, args.hostname.as_deref(), args.shape.as_deref())?;
    let report = match args.output {
        DoctorOutput::Text => render_text(&findings, false),
        DoctorOutput::Wide => render_text(&findings, true),
        DoctorOutput::Json => render_json(&findings),
        DoctorOutput::Yaml => OutputFormat::Yaml.render(&report_of(&findings), |_| String::new()),
        DoctorOutput::Prometheus => render_prometheus(&findings),
    };
    let failed: Vec<String> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
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

pub use ops::doctor_report::{render_prometheus, render_text};

/// The findings as JSON: `{"findings": [...], "skipped": n, "info": n, "warning": n, "error": n}`.
pub fn render_json(findings: &[Finding]) -> String {
    to_json(&report_of(findings))
}
