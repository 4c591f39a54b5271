//! The error every reader returns: one line naming the file and the place.

/// Invalid or unreadable input. Every message names the file and the place in it.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Invalid input: a file, a field, a node, a queue. The message names the file and place.
    #[error("{0}")]
    Input(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Several problems, one line each (a validation that reports everything at once).
    #[error("{}", .0.join("\nerror: "))]
    Problems(Vec<String>),
}

impl FormatError {
    /// An input error about `file`: `file: message`.
    pub fn input(file: impl std::fmt::Display, message: impl std::fmt::Display) -> Self {
        Self::Input(one_line(&format!("{file}: {message}")))
    }
}

/// Collapse a message to one line (parsers' messages sometimes carry newlines).
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A problem with one field of a document: the dotted path and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldProblem {
    /// Dotted path, e.g. `spec.template.metadata.annotations[kueue.x-k8s.io/podset-slice-size]`.
    pub field: String,
    /// What is wrong and what is expected.
    pub message: String,
}

impl std::fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}
