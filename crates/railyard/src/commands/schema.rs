//! `railyard schema NAME`: the JSON Schema of a YAML format a user writes, so that editors
//! (yaml-language-server's `# yaml-language-server: $schema=…`) check files as they are typed.

use crate::error::CliError;
use crate::output::to_json;

/// The formats with a schema: name, what it is.
pub const SCHEMAS: &[(&str, &str)] = &[
    (
        "cluster-spec",
        "a railyard cluster spec (--cluster FILE.yaml)",
    ),
    (
        "overlay",
        "hardware and fabric facts for an imported NodeList (--overlay)",
    ),
    ("job", "the native railyard job spec (place --job)"),
    ("state", "railyard's own state file (place --state)"),
    ("layout", "a rack layout (cables plan --layout)"),
];

/// `schema --help`: every name [`SCHEMAS`] holds, with what it is.
pub fn names_help() -> String {
    let names: Vec<String> = SCHEMAS
        .iter()
        .map(|(n, what)| format!("{n} ({what})"))
        .collect();
    format!("The format: {}", names.join(", "))
}

/// The schema named `name`, as JSON.
pub fn schema(name: &str) -> Result<String, CliError> {
    let s = match name {
        "cluster-spec" => schemars::schema_for!(topology::ClusterSpec),
        "overlay" => schemars::schema_for!(formats::k8s::Overlay),
        "job" => formats::jobs::native_job_schema(),
        "state" => formats::state::native_state_schema(),
        "layout" => schemars::schema_for!(ops::cables::Layout),
        other => {
            let known: Vec<String> = SCHEMAS
                .iter()
                .map(|(n, what)| format!("{n} ({what})"))
                .collect();
            // A bad command-line value: a usage error (exit 2), as clap gives for flags.
            return Err(CliError::Usage(format!(
                "schema: unknown schema `{}`; expected one of {}",
                formats::excerpt(other),
                known.join(", ")
            )));
        }
    };
    Ok(to_json(&s))
}
