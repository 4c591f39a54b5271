//! `railyard lint FILE…`: reads manifests, runs `ops::lint` on them and prints the findings;
//! exit 1 when any finding is an error, with nothing on standard error.

use std::path::PathBuf;

use formats::input::{parse_documents, read_text};
use ops::lint::{lint_documents, summary, Document, Severity};

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
        let out: String = findings.iter().map(|f| format!("{f}\n")).collect();
        out + &summary(docs.len(), args.files.len(), &findings)
    });
    // Findings are lint's answer, on standard output only; standard error is for lint's own
    // errors (a file it cannot read).
    if findings.iter().any(|f| f.severity == Severity::Error) {
        Err(CliError::Findings(report))
    } else {
        Ok(report)
    }
}
