//! The `-o/--output text|json|yaml|wide` choice shared by every command that prints a result,
//! and its rendering: JSON and YAML from the same serialised value, text from the command.

use serde::Serialize;

/// How a command prints its result (`-o/--output`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Aligned tables with units, for people.
    #[default]
    Text,
    /// Stable field names with units in the names, for scripts.
    Json,
    /// The JSON document as YAML.
    Yaml,
    /// Text with the extra columns (the same as text where a command has none).
    Wide,
}

impl OutputFormat {
    /// The value names every command's `-o/--output` accepts (the conventions test checks them).
    pub const NAMES: [&'static str; 4] = ["text", "json", "yaml", "wide"];

    /// Render `value` as JSON or YAML, or call `text` with whether the wide form was asked for.
    pub fn render<T: Serialize>(self, value: &T, text: impl FnOnce(bool) -> String) -> String {
        match self {
            OutputFormat::Json => to_json(value),
            OutputFormat::Yaml => to_yaml(value),
            OutputFormat::Text => text(false),
            OutputFormat::Wide => text(true),
        }
    }

    /// Whether the result is a structured document (JSON or YAML) rather than text.
    pub fn is_structured(self) -> bool {
        matches!(self, OutputFormat::Json | OutputFormat::Yaml)
    }
}

/// Pretty JSON with a trailing newline.
pub fn to_json<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("railyard's own types serialize");
    s.push('\n');
    s
}

/// YAML (ends with a newline).
pub fn to_yaml<T: Serialize>(value: &T) -> String {
    serde_norway::to_string(value).expect("railyard's own types serialize")
}
