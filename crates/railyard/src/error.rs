//! The CLI's error type: every variant is one line naming the file and the place.

/// An error the CLI reports as `error: …` with exit code 1 (2 for [`CliError::Usage`]).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Invalid input: a file, a field, a node, a queue. The message names the file and place.
    #[error("{0}")]
    Input(String),
    /// A bad flag value found after parsing (e.g. every bad `--nccl` setting at once): exit 2.
    #[error("{0}")]
    Usage(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A check found several problems, one line each; printed as one `error: …` line apiece.
    #[error("{}", .0.join("\nerror: "))]
    Problems(Vec<String>),
    /// A reader or an operator tool rejected its input.
    #[error(transparent)]
    Format(#[from] formats::FormatError),
    /// A check whose findings say everything (lint): printed on standard output alone, exit 1.
    #[error("{0}")]
    Findings(String),
    /// A check ran and found problems (doctor): `report` is printed on standard output,
    /// then `summary` as the one-line error.
    #[error("{summary}")]
    CheckFailed {
        /// The full report, as on success.
        report: String,
        /// One line: what failed.
        summary: String,
    },
}

impl CliError {
    /// An input error about `file`: `file: message`.
    pub fn input(file: impl std::fmt::Display, message: impl std::fmt::Display) -> Self {
        Self::Input(formats::cut_echoes(&one_line(&format!(
            "{file}: {message}"
        ))))
    }

    /// A reader's error about a flag's own value (`--demand: …`, an inline demand): exit 2.
    pub fn usage_if_flag(e: formats::FormatError) -> Self {
        match e {
            formats::FormatError::Input(m) if m.starts_with("--") => Self::Usage(m),
            e => Self::Format(e),
        }
    }
}

impl From<ops::simulate::SimulateError> for CliError {
    fn from(e: ops::simulate::SimulateError) -> Self {
        match e {
            ops::simulate::SimulateError::Flag(m) => Self::Usage(m),
            ops::simulate::SimulateError::Input(e) => Self::Format(e),
        }
    }
}

pub use formats::one_line;
