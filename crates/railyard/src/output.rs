//! The `--output text|json` choice shared by every command, and JSON printing.

use serde::Serialize;

/// How a command prints its result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Aligned tables with units, for people.
    #[default]
    Text,
    /// Stable field names with units in the names, for scripts.
    Json,
}

/// Pretty JSON with a trailing newline.
pub fn to_json<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("railyard's own types serialize");
    s.push('\n');
    s
}
