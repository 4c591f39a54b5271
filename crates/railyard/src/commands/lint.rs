//! `railyard lint FILE…`: reads manifests, runs `ops::lint` on them and prints the findings;
//! exit 1 when any finding is an error.

use std::path::PathBuf;

use formats::input::{parse_documents, read_text};
use ops::lint::{lint_documents, Document, Severity};

use crate::error::CliError;
use crate::output::OutputFormat;

/// Arguments of `lint`.
#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// Manifests (YAML, multi-document, or JSON).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format (wide: as text; findings are lines, not a table)
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// `lint`.
pub fn lint(args: &LintArgs) -> Result<String, CliError> {
    let mut docs = Vec::new();
    for path in &args.files {
        let file = path.display().to_string();
        let text = read_text(path)?;
        for (i, value) in parse_documents(&file, &text)?.into_iter().enumerate() {
            docs.push(Document {
                file: file.clone(),
                index: i + 1,
                value,
            });
        }
    }
    let findings = lint_documents(&docs);
    let report = args.output.render(&findings, |_| {
        if findings.is_empty() {
            format!(
                "{} document{} in {} file{}: no findings\n",
                docs.len(),
                if docs.len() == 1 { "" } else { "s" },
                args.files.len(),
                if args.files.len() == 1 { "" } else { "s" }
            )
        } else {
            findings.iter().map(|f| format!("{f}\n")).collect()
        }
    });
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    if errors == 0 {
        Ok(report)
    } else {
        let warnings = findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count();
        // The one-line error names the first error's file, document and path; the rest is in
        // the report.
        let first = findings
            .iter()
            .find(|f| f.severity == Severity::Error)
            .expect("errors > 0");
        Err(CliError::CheckFailed {
            report,
            summary: format!(
                "{}: document {}: {}: {} (lint: {errors} error{}, {warnings} warning{})",
                first.file,
                first.document,
                first.path,
                first.message,
                if errors == 1 { "" } else { "s" },
                if warnings == 1 { "" } else { "s" }
            ),
        })
    }
}
