//! `doctor`'s findings rendered for people (text) and for Prometheus (the node-exporter
//! textfile-collector format), and the structured report with a count per severity. A skipped
//! check (nothing to look at on this node) is counted apart from the passed ones everywhere.

use report::table::Table;
use serde::Serialize;

use crate::doctor::{Finding, Severity};

/// The findings as a table, one row per finding, with `why` and `do` lines under each warning
/// and error (`wide`: under every finding), and a count at the end.
pub fn render_text(findings: &[Finding], wide: bool) -> String {
    let mut t = Table::new(&["severity", "check", "finding"]);
    for f in findings {
        let mut finding = format!("{}: {}", f.subject, f.seen);
        // Why and what to do are in the JSON; people need them for problems.
        if wide || matches!(f.severity, Severity::Warning | Severity::Error) {
            if !f.why.is_empty() {
                finding.push_str(&format!("\nwhy: {}", f.why));
            }
            if !f.action.is_empty() {
                finding.push_str(&format!("\ndo:  {}", f.action));
            }
        }
        t.row(vec![
            f.severity.word().to_owned(),
            f.check.to_owned(),
            finding,
        ]);
    }
    let mut out = t.render();
    let (skipped, info, warning, error) = counts(findings);
    out.push_str(&format!(
        "\n{info} info, {warning} warning{}, {error} error{}",
        if warning == 1 { "" } else { "s" },
        if error == 1 { "" } else { "s" }
    ));
    if skipped > 0 {
        out.push_str(&format!(
            "; {skipped} check{} skipped (not passed: what {} not on this node)",
            if skipped == 1 { "" } else { "s" },
            if skipped == 1 {
                "it looks at is"
            } else {
                "they look at is"
            }
        ));
    }
    out.push('\n');
    out
}

/// The structured report: the findings and a count per severity.
#[derive(Debug, Serialize)]
pub struct Report<'a> {
    /// Every finding, in check order.
    pub findings: &'a [Finding],
    /// Checks that did not run (their findings say why): not passed.
    pub skipped: usize,
    /// Passed checks.
    pub info: usize,
    /// Warnings.
    pub warning: usize,
    /// Errors (any makes `doctor` exit 1).
    pub error: usize,
}

/// The report of these findings: the findings and their counts.
pub fn report_of(findings: &[Finding]) -> Report<'_> {
    let (skipped, info, warning, error) = counts(findings);
    Report {
        findings,
        skipped,
        info,
        warning,
        error,
    }
}

fn counts(findings: &[Finding]) -> (usize, usize, usize, usize) {
    let n = |l: Severity| findings.iter().filter(|f| f.severity == l).count();
    (
        n(Severity::Skipped),
        n(Severity::Info),
        n(Severity::Warning),
        n(Severity::Error),
    )
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
        "# HELP railyard_doctor_check Result of one railyard doctor check: 0 info (passed), 1 warning, 2 error.\n# TYPE railyard_doctor_check gauge\n",
    );
    let mut seen: std::collections::BTreeMap<(String, String), usize> = Default::default();
    for f in findings.iter().filter(|f| f.severity != Severity::Skipped) {
        let value = match f.severity {
            Severity::Skipped | Severity::Info => 0,
            Severity::Warning => 1,
            Severity::Error => 2,
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
    let skipped: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.severity == Severity::Skipped)
        .collect();
    if !skipped.is_empty() {
        out.push_str(
            "# HELP railyard_doctor_skipped A railyard doctor check that did not run (not a pass): what it looks at is not on this node.\n# TYPE railyard_doctor_skipped gauge\n",
        );
        for f in skipped {
            let reason = f.seen.strip_prefix("skipped: ").unwrap_or(&f.seen);
            out.push_str(&format!(
                "railyard_doctor_skipped{{check=\"{}\",subject=\"{}\",reason=\"{}\"}} 1\n",
                label_value(f.check),
                label_value(&f.subject),
                label_value(reason)
            ));
        }
    }
    let (skipped, info, warning, error) = counts(findings);
    out.push_str(
        "# HELP railyard_doctor_findings Findings of the last railyard doctor run, by severity (skipped: checks that did not run).\n# TYPE railyard_doctor_findings gauge\n",
    );
    for (severity, n) in [
        ("skipped", skipped),
        ("info", info),
        ("warning", warning),
        ("error", error),
    ] {
        out.push_str(&format!(
            "railyard_doctor_findings{{severity=\"{severity}\"}} {n}\n"
        ));
    }
    out
}
