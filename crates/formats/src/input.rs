//! Reading input files: size limits, YAML/JSON documents with line numbers in errors.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::{one_line, FormatError};

/// Largest input file railyard reads, bytes. Larger files are refused before reading.
pub const MAX_INPUT_BYTES: u64 = 512 * 1024 * 1024;

/// Whether standard input has been read (it can be read once per process).
static STDIN_READ: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Read all of standard input as text, at most [`MAX_INPUT_BYTES`]; `-` names it in errors. It
/// can be read once: a second argument given as `-` is an error.
pub fn read_stdin() -> Result<String, FormatError> {
    use std::io::Read;
    if STDIN_READ.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return Err(FormatError::input(
            "-",
            "standard input was already read for another argument; give at most one `-`",
        ));
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| FormatError::Io {
            path: "-".to_owned(),
            source,
        })?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(FormatError::input(
            "-",
            format!("standard input is more than the limit of {MAX_INPUT_BYTES} bytes"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        FormatError::input(
            "-",
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// Read a whole text file, refusing files above [`MAX_INPUT_BYTES`]; `-` is standard input.
pub fn read_text(path: &Path) -> Result<String, FormatError> {
    if path == Path::new("-") {
        return read_stdin();
    }
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|source| FormatError::Io {
        path: shown.clone(),
        source,
    })?;
    if meta.len() > MAX_INPUT_BYTES {
        return Err(FormatError::input(
            &shown,
            format!(
                "file is {} bytes, more than the limit of {MAX_INPUT_BYTES}",
                meta.len()
            ),
        ));
    }
    let bytes = std::fs::read(path).map_err(|source| FormatError::Io {
        path: shown.clone(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| {
        FormatError::input(
            &shown,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// Parse every YAML document of `text` (JSON is parsed as JSON, for exact line numbers) into
/// generic values. Empty documents are skipped.
pub fn parse_documents(file: &str, text: &str) -> Result<Vec<serde_json::Value>, FormatError> {
    if text.trim_start().starts_with(['{', '[']) {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| FormatError::input(file, format!("invalid JSON: {e}")))?;
        return Ok(vec![v]);
    }
    let mut docs = Vec::new();
    for (i, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
        let v = serde_json::Value::deserialize(doc).map_err(|e| {
            // The generic value is serde_json's: its "JSON number out of range" means a YAML
            // integer beyond 64 bits.
            let m = one_line(&e.to_string()).replace(
                "JSON number out of range",
                "number out of range (beyond 64-bit integers)",
            );
            FormatError::input(file, format!("document {}: invalid YAML: {m}", i + 1))
        })?;
        if !v.is_null() {
            docs.push(v);
        }
    }
    Ok(docs)
}

/// Parse a single YAML (or JSON) document into a typed value, with the parser's line and field
/// in the error.
pub fn parse_typed<T: DeserializeOwned>(file: &str, text: &str) -> Result<T, FormatError> {
    let blank = text
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'));
    if blank {
        return Err(FormatError::input(
            file,
            "the file is empty (nothing but blank lines and comments)",
        ));
    }
    serde_norway::from_str(text).map_err(|e| {
        let m = one_line(&e.to_string());
        // Syntax errors from the scanner/parser read better with what failed to parse.
        if m.contains("while scanning") || m.contains("while parsing") {
            FormatError::input(file, format!("invalid YAML/JSON: {m}"))
        } else {
            FormatError::input(file, m)
        }
    })
}
