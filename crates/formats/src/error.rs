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
