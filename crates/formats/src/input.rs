//! Reading input files: one bounded reader for every kind of file (regular, pipe, FIFO, device,
//! stdin), and YAML/JSON documents parsed with line numbers in errors, a nesting bound checked
//! in linear time before the parser runs, duplicate keys and non-finite numbers refused.

use std::cell::RefCell;
use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::error::{excerpt, one_line, FormatError};

/// Largest input railyard reads, bytes. Regular files above it are refused before reading;
/// anything else (a pipe, a FIFO, a device, stdin) is read up to it and refused past it.
pub const MAX_INPUT_BYTES: u64 = 512 * 1024 * 1024;

/// Deepest nesting of YAML/JSON collections railyard parses (the parsers' own recursion limit).
/// [`check_nesting`] refuses deeper text in one linear pass, before the parser sees it.
pub const MAX_NESTING: usize = 128;

/// Whether standard input has been read (it can be read once per process).
static STDIN_READ: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Read all of standard input as text through [`read_bounded`]; `-` names it in errors. It can
/// be read once: a second argument given as `-` is an error.
pub fn read_stdin() -> Result<String, FormatError> {
    if STDIN_READ.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return Err(FormatError::input(
            "-",
            "standard input was already read for another argument; give at most one `-`",
        ));
    }
    read_bounded("-", std::io::stdin().lock(), 0, MAX_INPUT_BYTES)
}

/// Texts held in memory under a name that is read as a file's: what a live source (a
/// Kubernetes API server, Slurm's commands) returned, so the file readers serve it unchanged.
static PROVIDED: std::sync::Mutex<std::collections::BTreeMap<String, std::sync::Arc<str>>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// Hold `text` under `name` (e.g. `k8s:prod/nodes.json`): [`read_text`] and [`open_text`] of
/// that name return it, with the same size and content checks as a file, instead of opening a
/// file. A second text under the same name replaces the first.
pub fn provide(name: &str, text: String) {
    let mut held = PROVIDED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    held.insert(name.to_owned(), text.into());
}

/// The text [`provide`] holds under `path`'s name, if any.
fn provided(path: &Path) -> Option<std::sync::Arc<str>> {
    let held = PROVIDED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    held.get(path.to_str()?).cloned()
}

/// Read a whole text file, at most [`MAX_INPUT_BYTES`] whatever the file is: a regular file is
/// refused by its size first; anything else is read through `Read::take(limit + 1)` and refused
/// past the limit. Text with a NUL byte or invalid UTF-8 is refused as soon as the bad bytes
/// arrive, so `/dev/zero` or `/dev/urandom` fail at once. `-` is standard input.
pub fn read_text(path: &Path) -> Result<String, FormatError> {
    if path == Path::new("-") {
        return read_stdin();
    }
    if let Some(text) = provided(path) {
        let shown = path.display().to_string();
        return read_bounded(&shown, text.as_bytes(), text.len() as u64, MAX_INPUT_BYTES);
    }
    let (shown, file, hint) = open_checked(path)?;
    read_bounded(&shown, file, hint, MAX_INPUT_BYTES)
}

/// Open a text file to read it as a stream, with the same bounds and checks as [`read_text`]
/// (size of a regular file first; at most [`MAX_INPUT_BYTES`]; NUL bytes and invalid UTF-8
/// refused as they arrive) applied by the returned [`TextReader`] while the caller reads. `-`
/// is standard input (once per process).
pub fn open_text(path: &Path) -> Result<TextReader<Box<dyn Read>>, FormatError> {
    if path == Path::new("-") {
        if STDIN_READ.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Err(FormatError::input(
                "-",
                "standard input was already read for another argument; give at most one `-`",
            ));
        }
        return Ok(TextReader::new(
            "-",
            Box::new(std::io::stdin().lock()),
            MAX_INPUT_BYTES,
        ));
    }
    if let Some(text) = provided(path) {
        let bytes = std::io::Cursor::new(text.as_bytes().to_vec());
        let shown = path.display().to_string();
        return Ok(TextReader::new(&shown, Box::new(bytes), MAX_INPUT_BYTES));
    }
    let (shown, file, _) = open_checked(path)?;
    Ok(TextReader::new(&shown, Box::new(file), MAX_INPUT_BYTES))
}

/// The checks before a file is read: a name, not a directory, a regular file within the limit.
/// Returns the name as shown in errors, the open file and its size (0 unless regular).
fn open_checked(path: &Path) -> Result<(String, std::fs::File, u64), FormatError> {
    let shown = path.display().to_string();
    if shown.is_empty() {
        return Err(FormatError::input(
            "(empty file name)",
            "expected a file name, got an empty string",
        ));
    }
    let meta = std::fs::metadata(path).map_err(|source| FormatError::Io {
        path: shown.clone(),
        source,
    })?;
    if meta.is_dir() {
        return Err(FormatError::input(
            &shown,
            "is a directory; expected a file",
        ));
    }
    if meta.is_file() && meta.len() > MAX_INPUT_BYTES {
        return Err(FormatError::input(
            &shown,
            format!(
                "file is {} bytes, more than the limit of {MAX_INPUT_BYTES} (512 MiB)",
                meta.len()
            ),
        ));
    }
    let file = std::fs::File::open(path).map_err(|source| FormatError::Io {
        path: shown.clone(),
        source,
    })?;
    let hint = if meta.is_file() { meta.len() } else { 0 };
    Ok((shown, file, hint))
}

/// A reader that passes text through with [`read_bounded`]'s checks, for readers that stream
/// (the trace reader): at most `limit` bytes, no NUL byte, valid UTF-8 (a character split
/// between two reads is checked when its end arrives, and an incomplete one at the end of the
/// input is refused). A failed check is an `io::Error` carrying the [`FormatError`], with the
/// same message [`read_text`] gives; [`format_error_of`] takes it back out.
pub struct TextReader<R> {
    shown: String,
    inner: R,
    limit: u64,
    /// Bytes passed on so far.
    total: u64,
    /// The bytes of a character begun but not finished by the last read (at most 3), then the
    /// latest read's bytes while they are checked.
    pending: Vec<u8>,
}

impl<R> fmt::Debug for TextReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TextReader")
            .field("shown", &self.shown)
            .field("limit", &self.limit)
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

impl<R: Read> TextReader<R> {
    /// Check `inner`'s bytes as text of at most `limit` bytes; `shown` names it in errors.
    pub fn new(shown: &str, inner: R, limit: u64) -> Self {
        Self {
            shown: shown.to_owned(),
            inner,
            limit,
            total: 0,
            pending: Vec::new(),
        }
    }

    fn fail(&self, e: FormatError) -> std::io::Error {
        std::io::Error::other(e)
    }
}

impl<R: Read> Read for TextReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = loop {
            match self.inner.read(buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(self.fail(FormatError::Io {
                        path: self.shown.clone(),
                        source,
                    }))
                }
            }
        };
        if n == 0 {
            if !self.pending.is_empty() {
                let at = self.total - self.pending.len() as u64;
                return Err(self.fail(FormatError::input(
                    &self.shown,
                    format!("not UTF-8 text (byte {at})"),
                )));
            }
            return Ok(0);
        }
        self.total += n as u64;
        if self.total > self.limit {
            let limit = self.limit;
            return Err(self.fail(FormatError::input(
                &self.shown,
                format!("input is over 512 MiB (the limit is {limit} bytes); refused after reading {limit} bytes"),
            )));
        }
        // The unfinished character of the last read, then this read's bytes, from input
        // offset `start` on.
        self.pending.extend_from_slice(&buf[..n]);
        let start = self.total - self.pending.len() as u64;
        match scan_text(&self.pending, false) {
            Ok(good) => {
                self.pending.drain(..good);
                Ok(n)
            }
            Err(fault) => Err(self.fail(text_fault(&self.shown, fault, start))),
        }
    }
}

/// The [`FormatError`] a [`TextReader`] put in an `io::Error`, if that is what it carries.
pub fn format_error_of(e: std::io::Error) -> Result<FormatError, std::io::Error> {
    match e.get_ref().map(|inner| inner.is::<FormatError>()) {
        Some(true) => {
            let inner = e.into_inner().expect("checked above");
            Ok(*inner.downcast::<FormatError>().expect("checked above"))
        }
        _ => Err(e),
    }
}

/// Read `reader` as text, at most `limit` bytes (`hint`: the expected size, to allocate once).
/// The one bounded reader behind [`read_text`]; public for stdin and for tests.
pub fn read_bounded(
    shown: &str,
    reader: impl Read,
    hint: u64,
    limit: u64,
) -> Result<String, FormatError> {
    let mut bytes = Vec::with_capacity(usize::try_from(hint.min(limit)).unwrap_or(0));
    let mut limited = reader.take(limit.saturating_add(1));
    let mut chunk = vec![0u8; 1 << 16];
    // Bytes before `valid` are known to be UTF-8 without NUL.
    let mut valid = 0usize;
    loop {
        let n = match limited.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(FormatError::Io {
                    path: shown.to_owned(),
                    source,
                })
            }
        };
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() as u64 > limit {
            return Err(FormatError::input(
                shown,
                format!("input is over 512 MiB (the limit is {limit} bytes); refused after reading {limit} bytes"),
            ));
        }
        valid = check_text(shown, &bytes, valid, false)?;
    }
    check_text(shown, &bytes, valid, true)?;
    String::from_utf8(bytes).map_err(|e| {
        FormatError::input(
            shown,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// Check `bytes[from..]` for NUL bytes and invalid UTF-8; returns how far they are known good
/// (an incomplete character at the end is left for the next chunk unless `last`).
fn check_text(shown: &str, bytes: &[u8], from: usize, last: bool) -> Result<usize, FormatError> {
    scan_text(&bytes[from..], last)
        .map(|good| from + good)
        .map_err(|fault| text_fault(shown, fault, from as u64))
}

/// What is wrong with bytes that should be text, at an index into them.
enum TextFault {
    Nul(usize),
    NotUtf8(usize),
}

/// How many of `bytes` are good text (an incomplete character at the end is left out unless
/// `last`), or the first fault.
fn scan_text(bytes: &[u8], last: bool) -> Result<usize, TextFault> {
    let good = match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() && !last => e.valid_up_to(),
        Err(e) => return Err(TextFault::NotUtf8(e.valid_up_to())),
    };
    match bytes[..good].iter().position(|&b| b == 0) {
        Some(i) => Err(TextFault::Nul(i)),
        None => Ok(good),
    }
}

/// The error for a fault found in bytes that start at input offset `base`.
fn text_fault(shown: &str, fault: TextFault, base: u64) -> FormatError {
    match fault {
        TextFault::NotUtf8(i) => {
            FormatError::input(shown, format!("not UTF-8 text (byte {})", base + i as u64))
        }
        TextFault::Nul(i) => FormatError::input(
            shown,
            format!(
                "not text: NUL byte at byte {}; expected a UTF-8 text file",
                base + i as u64
            ),
        ),
    }
}

/// Refuse YAML or JSON text nested deeper than [`MAX_NESTING`], in one pass over the text
/// (linear time: the parsers take time quadratic in the depth before their own limit trips).
/// The estimate counts block indentation levels, `- ` and `? ` entries opening on one line, and
/// open flow brackets outside quoted strings and comments; block scalars (`|`, `>`) are skipped.
pub fn check_nesting(file: &str, text: &str) -> Result<(), FormatError> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    // Indentation of the line that opened a block scalar: deeper lines are its text.
    let mut block_scalar: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        if let Some(at) = block_scalar {
            if body.trim().is_empty() || indent > at {
                continue;
            }
            block_scalar = None;
        }
        if body.trim().is_empty() || body.starts_with('#') {
            continue;
        }
        if flow == 0 {
            while indents.last().is_some_and(|&i| i > indent) {
                indents.pop();
            }
            if indents.last().is_none_or(|&i| i < indent) {
                indents.push(indent);
            }
        }
        let (depth, opens_block_scalar) = scan_line(body, &mut flow);
        let total = indents.len() + depth;
        if total > MAX_NESTING {
            return Err(FormatError::input(
                file,
                format!(
                    "line {}: nested deeper than {MAX_NESTING} levels; refused before parsing",
                    n + 1
                ),
            ));
        }
        if opens_block_scalar {
            block_scalar = Some(indent);
        }
    }
    Ok(())
}

/// One line's deepest nesting beyond its block indentation: `- `/`? ` entries at its start plus
/// the deepest flow bracket reached (counting brackets still open from earlier lines; `flow` is
/// updated); and whether it opens a block scalar.
fn scan_line(body: &str, flow: &mut usize) -> (usize, bool) {
    let bytes = body.as_bytes();
    let mut i = 0;
    let mut entries = 0;
    if *flow == 0 {
        while i + 1 < bytes.len() && matches!(bytes[i], b'-' | b'?') && bytes[i + 1] == b' ' {
            entries += 1;
            i += 2;
            while i < bytes.len() && bytes[i] == b' ' {
                i += 1;
            }
        }
    }
    let mut max_flow = *flow;
    // Where a value may start: a flow bracket there opens a collection; elsewhere it is text.
    let mut value_start = true;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' | b'\'' if value_start || *flow > 0 => {
                // A quoted scalar: skip to its end on this line.
                let mut j = i + 1;
                while j < bytes.len() {
                    if bytes[j] == b'\\' && b == b'"' {
                        j += 2;
                        continue;
                    }
                    if bytes[j] == b {
                        break;
                    }
                    j += 1;
                }
                i = j + 1;
                value_start = false;
                continue;
            }
            b'#' if i == 0 || bytes[i - 1] == b' ' => break,
            b'[' | b'{' if value_start || *flow > 0 => {
                *flow += 1;
                max_flow = max_flow.max(*flow);
                value_start = true;
            }
            b']' | b'}' if *flow > 0 => {
                *flow -= 1;
                value_start = false;
            }
            b',' if *flow > 0 => value_start = true,
            b':' if i + 1 == bytes.len() || bytes[i + 1] == b' ' => value_start = true,
            b' ' => {}
            _ => value_start = false,
        }
        i += 1;
    }
    let trimmed = body.trim_end();
    let opens_block_scalar = *flow == 0
        && (trimmed.ends_with('|')
            || trimmed.ends_with('>')
            || trimmed.ends_with("|-")
            || trimmed.ends_with(">-")
            || trimmed.ends_with("|+")
            || trimmed.ends_with(">+"));
    (entries + max_flow, opens_block_scalar)
}

/// Parse every YAML document of `text` (JSON is parsed as JSON, for exact line numbers) into
/// generic values. Empty documents are skipped. Nesting beyond [`MAX_NESTING`], a key given
/// twice in one mapping and non-finite numbers (`.nan`, `.inf`) are refused with the path.
pub fn parse_documents(file: &str, text: &str) -> Result<Vec<Value>, FormatError> {
    check_nesting(file, text)?;
    if text.trim_start().starts_with(['{', '[']) {
        let found = RefCell::new(None);
        let seed = StrictSeed {
            at: None,
            found: Some(&found),
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let v = seed
            .deserialize(&mut de)
            .and_then(|v| de.end().map(|()| v))
            .map_err(|e| json_error(file, &e, found.into_inner()))?;
        return Ok(vec![v]);
    }
    let mut docs = Vec::new();
    for (i, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
        let v = StrictSeed::root().deserialize(doc).map_err(|e| {
            let m = tab_hint(text, &one_line(&e.to_string()));
            FormatError::input(file, format!("document {}: invalid YAML: {m}", i + 1))
        })?;
        if !v.is_null() {
            docs.push(v);
        }
    }
    Ok(docs)
}

/// A parser message about `line N column C` of `text`, with the reason said plainly when that
/// line is indented with a tab: YAML indents with spaces only, and the scanner's own words
/// ("found character that cannot start any token") do not say "tab".
fn tab_hint(text: &str, message: &str) -> String {
    let line = message
        .split_once("at line ")
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<usize>().ok());
    let indented_by_tab = line
        .and_then(|n| text.lines().nth(n.checked_sub(1)?))
        .is_some_and(|l| {
            l.chars()
                .take_while(|c| c.is_whitespace())
                .any(|c| c == '\t')
        });
    match line {
        Some(n) if indented_by_tab => {
            format!("line {n} is indented with a tab; YAML indents with spaces only ({message})")
        }
        _ => message.to_owned(),
    }
}

/// Parse a single YAML (or JSON) document into a typed value, with the parser's line and field
/// in the error. The text first passes the checks of [`parse_documents`] (nesting, duplicate
/// keys, non-finite numbers), which typed parsing alone would let through inside maps.
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
    check_nesting(file, text)?;
    if text.trim_start().starts_with(['{', '[']) {
        strict_check_json(file, text)?;
    } else {
        strict_check_yaml(file, text)?;
    }
    serde_norway::from_str(text).map_err(|e| {
        // Plain text (a file that is not YAML at all) gets its first line, cut, not the
        // parser's echo of the whole text.
        if let Ok(Value::String(s)) = serde_norway::from_str::<Value>(text) {
            return FormatError::input(
                file,
                format!(
                    "expected a YAML mapping, got plain text starting `{}`",
                    excerpt(s.lines().next().unwrap_or(""))
                ),
            );
        }
        let m = tab_hint(text, &one_line(&e.to_string()));
        // Syntax errors from the scanner/parser read better with what failed to parse.
        if m.contains("while scanning") || m.contains("while parsing") {
            FormatError::input(file, format!("invalid YAML/JSON: {m}"))
        } else {
            FormatError::input(file, m)
        }
    })
}

/// The strict checks alone on YAML text: only their own findings are errors (syntax errors are
/// left to the typed parser, whose messages name the field).
fn strict_check_yaml(file: &str, text: &str) -> Result<(), FormatError> {
    for (i, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
        let found = RefCell::new(None);
        let seed = StrictSeed {
            at: None,
            found: Some(&found),
        };
        if let Err(e) = seed.deserialize(doc) {
            if found.into_inner().is_some() {
                let m = one_line(&e.to_string());
                return Err(FormatError::input(file, format!("document {}: {m}", i + 1)));
            }
            return Ok(());
        }
    }
    Ok(())
}

/// The strict checks on JSON text, and text after the JSON value (which a YAML parser would
/// blame with a YAML message); other syntax errors are left to the typed parser.
fn strict_check_json(file: &str, text: &str) -> Result<(), FormatError> {
    let found = RefCell::new(None);
    let seed = StrictSeed {
        at: None,
        found: Some(&found),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    match seed.deserialize(&mut de) {
        Ok(_) => de
            .end()
            .map_err(|e| FormatError::input(file, format!("invalid JSON: {e}"))),
        Err(e) => match found.into_inner() {
            Some(path) => Err(json_error(file, &e, Some(path))),
            None => Ok(()),
        },
    }
}

/// A JSON error, with the path of the value when the strict checks found it (serde_json's
/// messages have the line and column but no path).
fn json_error(file: &str, e: &serde_json::Error, path: Option<String>) -> FormatError {
    match path {
        Some(p) => FormatError::input(file, format!("invalid JSON: {p}: {e}")),
        None => FormatError::input(file, format!("invalid JSON: {e}")),
    }
}

/// Where a value sits in its document, for messages: a linked list from the value up.
#[derive(Clone, Copy, Debug)]
enum Step<'a> {
    Key(&'a str, Option<&'a Step<'a>>),
    Index(usize, Option<&'a Step<'a>>),
}

fn path_of(at: Option<&Step<'_>>) -> String {
    let mut parts = Vec::new();
    let mut cur = at;
    while let Some(s) = cur {
        match s {
            Step::Key(k, up) => {
                parts.push(excerpt(k));
                cur = *up;
            }
            Step::Index(i, up) => {
                parts.push(format!("[{i}]"));
                cur = *up;
            }
        }
    }
    parts.reverse();
    let mut out = String::new();
    for p in parts {
        if !out.is_empty() && !p.starts_with('[') {
            out.push('.');
        }
        out.push_str(&p);
    }
    if out.is_empty() {
        "the top level".to_owned()
    } else {
        out
    }
}

/// Deserializes a generic [`Value`] like `serde_json::Value` does, but refuses a key given twice
/// in one mapping and non-finite floats, naming the path. `found` records the strict checks'
/// own messages (to tell them from syntax errors).
#[derive(Clone, Copy, Debug)]
struct StrictSeed<'a> {
    at: Option<&'a Step<'a>>,
    found: Option<&'a RefCell<Option<String>>>,
}

impl StrictSeed<'_> {
    fn root() -> StrictSeed<'static> {
        StrictSeed {
            at: None,
            found: None,
        }
    }

    /// The strict checks' error: `found` gets the path (YAML errors carry it already; JSON
    /// errors get it from there), the error the message.
    fn fail<E: de::Error>(&self, message: String) -> E {
        if let Some(f) = self.found {
            *f.borrow_mut() = Some(path_of(self.at));
        }
        E::custom(message)
    }
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML or JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        i64::try_from(v)
            .map(Value::from)
            .map_err(|_| self.fail("number out of range (beyond 64-bit integers)".to_owned()))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        u64::try_from(v)
            .map(Value::from)
            .map_err(|_| self.fail("number out of range (beyond 64-bit integers)".to_owned()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        match serde_json::Number::from_f64(v) {
            Some(n) => Ok(Value::Number(n)),
            None => Err(self.fail(format!(
                "{v} is not a finite number (.nan and .inf are refused)"
            ))),
        }
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        loop {
            let step = Step::Index(out.len(), self.at);
            let seed = StrictSeed {
                at: Some(&step),
                found: self.found,
            };
            match seq.next_element_seed(seed)? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(self.fail(format!(
                    "key `{}` given twice in one mapping (the first would be silently replaced)",
                    excerpt(&key)
                )));
            }
            let step = Step::Key(&key, self.at);
            let seed = StrictSeed {
                at: Some(&step),
                found: self.found,
            };
            let v = map.next_value_seed(seed)?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provided_text_is_read_under_its_name_with_a_files_checks() {
        let name = "k8s:test-context/nodes.json";
        assert!(read_text(Path::new(name)).is_err(), "nothing provided yet");
        provide(name, "{\"kind\": \"NodeList\"}\n".to_owned());
        assert_eq!(
            read_text(Path::new(name)).unwrap(),
            "{\"kind\": \"NodeList\"}\n"
        );
        let mut streamed = String::new();
        open_text(Path::new(name))
            .unwrap()
            .read_to_string(&mut streamed)
            .unwrap();
        assert_eq!(streamed, "{\"kind\": \"NodeList\"}\n");
        provide("k8s:test-context/bad.json", "a\0b".to_owned());
        let e = read_text(Path::new("k8s:test-context/bad.json"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("k8s:test-context/bad.json:"), "{e}");
    }

    fn err(text: &str) -> String {
        parse_documents("f.yaml", text).unwrap_err().to_string()
    }

    #[test]
    fn a_tab_in_the_indentation_is_named() {
        // The scanner says "found character that cannot start any token" for a leading tab.
        let m = err("name: x\nnode:\n\tgpus: 8\n");
        assert!(
            m.contains("line 3 is indented with a tab; YAML indents with spaces only"),
            "{m}"
        );
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            a: u32,
        }
        let m = parse_typed::<T>("f.yaml", "a: 1\n\tb: 2\n")
            .unwrap_err()
            .to_string();
        assert!(m.contains("indented with a tab"), "{m}");
        // A tab inside a value is no indentation.
        assert!(!err("a: [1,\n  2\t, {]\n").contains("tab"));
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_path() {
        let m = err("metadata:\n  labels:\n    a: x\n    a: y\n");
        assert!(m.contains("metadata.labels: key `a` given twice"), "{m}");
        let m = err("{\"a\": 1, \"a\": 2}");
        assert!(m.contains("top level: key `a` given twice"), "{m}");
        assert!(parse_documents("f", "a: 1\nb: {a: 2}\n").is_ok());
    }

    #[test]
    fn non_finite_numbers_are_refused() {
        for t in ["x: .nan\n", "x: .inf\n", "x: [1, -.inf]\n"] {
            assert!(err(t).contains("not a finite number"), "{t}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let deep = format!("{}x\n", "- ".repeat(100_000));
        assert!(err(&deep).contains("nested deeper than 128"));
        let brackets = format!("a: {}{}\n", "[".repeat(200), "]".repeat(200));
        assert!(err(&brackets).contains("nested deeper"));
        let lines = "[\n".repeat(1000);
        assert!(err(&lines).contains("nested deeper"));
        let mut indented = String::new();
        for i in 0..200 {
            indented.push_str(&format!("{}k{i}:\n", " ".repeat(i)));
        }
        assert!(err(&indented).contains("nested deeper"));
    }

    #[test]
    fn ordinary_documents_are_not_refused_by_the_nesting_estimate() {
        let ok = "a:\n  - b: [1, {c: \"[[[[\"}]\n    d: '{{{{'\n  - e: |\n      [[[[[[[[[\n      {{{{{{\n    f: x[y\n";
        let docs = parse_documents("f", ok).unwrap();
        assert_eq!(docs.len(), 1);
        let moderately = format!("{}1{}\n", "[".repeat(100), "]".repeat(100));
        assert!(parse_documents("f", &moderately).is_ok());
    }

    #[test]
    fn json_followed_by_garbage_gets_a_json_message() {
        let m = err("{\"a\": 1} trailing");
        assert!(m.contains("invalid JSON: trailing characters"), "{m}");
    }

    #[test]
    fn the_bounded_reader_stops_past_the_limit_and_at_binary_bytes() {
        let endless = std::io::repeat(b'a');
        let m = read_bounded("pipe", endless, 0, 1000)
            .unwrap_err()
            .to_string();
        assert!(m.contains("over 512 MiB"), "{m}");
        let zeros = std::io::repeat(0);
        let m = read_bounded("zero", zeros, 0, u64::MAX / 2)
            .unwrap_err()
            .to_string();
        assert!(m.contains("NUL byte at byte 0"), "{m}");
        let bad = &[b'a', 0xff, b'b'][..];
        let m = read_bounded("bad", bad, 0, 1000).unwrap_err().to_string();
        assert!(m.contains("not UTF-8 text (byte 1)"), "{m}");
        assert_eq!(
            read_bounded("ok", "héllo".as_bytes(), 0, 1000).unwrap(),
            "héllo"
        );
    }

    /// The streaming reader fails as the whole-text reader does, wherever reads split the
    /// input: NUL bytes, invalid UTF-8, a character cut off at the end, input over the limit.
    #[test]
    fn the_streaming_reader_fails_as_the_bounded_reader_does() {
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.1.min(buf.len()).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let cases: [&[u8]; 6] = [
            b"plain text\n",
            "caf\u{e9} \u{1F600} ok".as_bytes(),
            b"abc\0def",
            b"ab\xff\xfecd",
            b"tail \xe2\x82",
            b"0123456789abcdef0123",
        ];
        for bytes in cases {
            for step in [1, 2, 3, 5, 64] {
                let whole = read_bounded("f", bytes, 0, 16).map_err(|e| e.to_string());
                let mut reader = TextReader::new("f", Trickle(bytes, step), 16);
                let mut out = Vec::new();
                let streamed = match reader.read_to_end(&mut out) {
                    Ok(_) => Ok(String::from_utf8(out).expect("checked")),
                    Err(e) => Err(format_error_of(e).expect("a FormatError").to_string()),
                };
                assert_eq!(whole, streamed, "{bytes:?} step {step}");
            }
        }
    }

    #[test]
    fn a_multibyte_character_split_across_chunks_is_read() {
        let mut text = "a".repeat((1 << 16) - 1);
        text.push('é');
        text.push_str("tail");
        assert_eq!(
            read_bounded("f", text.as_bytes(), 0, 1 << 20).unwrap(),
            text
        );
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    /// A value nested `depth` levels: maps and lists alternating, a scalar at the bottom.
    fn nested(depth: usize, key: &str) -> Value {
        let mut v = Value::from(1);
        for i in 0..depth {
            v = if i % 2 == 0 {
                serde_json::json!({ key: v })
            } else {
                serde_json::json!([v, "x"])
            };
        }
        v
    }

    /// A reader that hands out at most `step` bytes per call.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    proptest! {
        // Deep documents cost milliseconds each in a debug build: fewer cases.
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn shallow_documents_parse_and_deep_ones_are_refused(depth in 1usize..400, block in any::<bool>()) {
            let v = nested(depth, "k");
            let text = if block {
                serde_norway::to_string(&v).unwrap()
            } else {
                serde_json::to_string(&v).unwrap()
            };
            let parsed = parse_documents("f", &text);
            if depth <= 60 {
                prop_assert_eq!(parsed.unwrap(), vec![v]);
            } else if depth > 2 * MAX_NESTING {
                let e = parsed.unwrap_err().to_string();
                prop_assert!(e.contains("nested deeper") || e.contains("recursion limit"), "{}", e);
            }
        }

        #[test]
        fn a_key_given_twice_anywhere_is_refused(depth in 0usize..20, key in "[a-z]{1,8}") {
            let inner = format!("{{{key}: 1, {key}: 2}}");
            let mut text = inner.clone();
            for _ in 0..depth {
                text = format!("{{a: {text}}}");
            }
            let e = parse_documents("f", &format!("x: {text}\n")).unwrap_err().to_string();
            prop_assert!(e.contains(&format!("key `{key}` given twice")), "{}", e);
        }

        #[test]
        fn the_bounded_reader_returns_the_text_whatever_the_read_sizes(
            text in "\\PC{0,300}",
            step in 1usize..7,
        ) {
            let got = read_bounded("f", Trickle { data: text.as_bytes(), step }, 0, 1 << 20);
            prop_assert_eq!(got.unwrap(), text);
        }
    }
}
