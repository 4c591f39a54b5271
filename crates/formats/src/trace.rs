//! Job traces: the Philly CSV, the Helios/Acme CSV and railyard's native CSV, detected from the
//! header, and the schedulers' own traces (`sacct` output, Kueue Workload lists; read by
//! `scheduler_traces`), detected from the first bytes. Every row that cannot be read is reported
//! with its line number.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::hash::BuildHasher as _;
use std::io::Read;
use std::path::Path;
use std::rc::Rc;

use sim::{CommProfile, TopologyAsk, TraceJob};

use crate::error::{excerpt, FormatError};
pub use crate::trace_model::{
    parse_datetime, Trace, TraceFormat, MAX_DURATION_S, MAX_EPOCH_S, MAX_ROWS,
};

/// The columns each format reads; a header column that is none of these but close to one
/// (a misspelling) is refused.
const PHILLY_COLUMNS: &[&str] = &["timestamp", "duration", "num_gpus", "gpu_time", "cluster"];
const HELIOS_COLUMNS: &[&str] = &[
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
];
const NATIVE_COLUMNS: &[&str] = &[
    "name",
    "submit_s",
    "duration_s",
    "gpus",
    "queue",
    "priority",
    "preemptible",
    "topology",
    "comm_share",
    "bytes_per_step",
    "checkpoint_s",
    "restart_s",
    "model",
    "layout",
];

/// Read a trace file as a stream: rows are parsed as the bounded reader
/// ([`crate::input::open_text`]) delivers them and kept compact until the whole trace has been
/// read, so a trace that fails on its last row never holds its text, and little more than
/// 40 bytes per row before the error. A regular file is read twice: once to count its rows
/// (refusing more than [`MAX_ROWS`] before any row is parsed, as before), then to parse them.
pub fn read_trace(
    path: &Path,
    format: TraceFormat,
    skip_bad_rows: bool,
) -> Result<Trace, FormatError> {
    let file = path.display().to_string();
    let regular = path != Path::new("-") && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    // Slurm and Kueue traces are read whole (through the same bounded reader): a look at the
    // first bytes tells them from the CSV formats.
    let mut reader = crate::input::open_text(path)?;
    let mut head = Vec::new();
    (&mut reader)
        .take(4096)
        .read_to_end(&mut head)
        .map_err(|e| io_failure(&file, e))?;
    let head_text = String::from_utf8_lossy(&head);
    if is_scheduler_trace(format, &head_text) {
        let mut bytes = head;
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| io_failure(&file, e))?;
        let text =
            String::from_utf8(bytes).map_err(|_| FormatError::input(&file, "not UTF-8 text"))?;
        return parse_trace(&file, &text, format, skip_bad_rows);
    }
    if regular {
        drop(reader);
        check_row_count(&file, count_rows(&file, crate::input::open_text(path)?)?)?;
        let reader = crate::input::open_text(path)?;
        return read_trace_from(&file, reader, format, skip_bad_rows, regular);
    }
    read_trace_from(
        &file,
        std::io::Cursor::new(head).chain(reader),
        format,
        skip_bad_rows,
        regular,
    )
}

/// Whether a trace whose text begins with `head` is one of the schedulers' own formats
/// (`sacct` output, a Kueue Workload list), given or detected.
fn is_scheduler_trace(format: TraceFormat, head: &str) -> bool {
    match format {
        TraceFormat::Sacct | TraceFormat::KueueWorkloads | TraceFormat::Openb => true,
        TraceFormat::Auto => {
            crate::scheduler_traces::is_sacct(head)
                || head.trim_start().starts_with('{')
                || crate::openb::is_openb_pods(head)
        }
        _ => false,
    }
}

/// Parse trace text (`file` names it in errors).
pub fn parse_trace(
    file: &str,
    text: &str,
    format: TraceFormat,
    skip_bad_rows: bool,
) -> Result<Trace, FormatError> {
    use crate::scheduler_traces as st;
    match format {
        TraceFormat::Sacct => return st::parse_sacct(file, text, skip_bad_rows),
        TraceFormat::Openb => return crate::openb::parse_pods(file, text, skip_bad_rows),
        TraceFormat::Auto if crate::openb::is_openb_pods(text) => {
            return crate::openb::parse_pods(file, text, skip_bad_rows)
        }
        TraceFormat::Auto if st::is_sacct(text) => {
            return st::parse_sacct(file, text, skip_bad_rows)
        }
        TraceFormat::KueueWorkloads | TraceFormat::Auto
            if format == TraceFormat::KueueWorkloads || text.trim_start().starts_with('{') =>
        {
            let docs = crate::input::parse_documents(file, text)?;
            return match docs.first() {
                Some(d) if docs.len() == 1 && st::is_workload_list(d) => {
                    st::parse_workloads(file, d, skip_bad_rows)
                }
                _ => Err(FormatError::input(
                    file,
                    "expected a Kueue Workload list (kubectl get workloads -A -o json)",
                )),
            };
        }
        _ => {}
    }
    check_row_count(file, count_rows(file, text.as_bytes())?)?;
    read_trace_from(file, text.as_bytes(), format, skip_bad_rows, true)
}

/// Rows of a trace (non-blank lines after the header), read through without parsing.
fn count_rows(file: &str, mut reader: impl Read) -> Result<u64, FormatError> {
    let mut lines = LineState {
        track_starts: false,
        ..LineState::default()
    };
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => lines.scan(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_failure(file, e)),
        }
    }
    lines.finish();
    Ok(lines.nonblank_lines.saturating_sub(1))
}

/// Refuse more than [`MAX_ROWS`] rows.
fn check_row_count(file: &str, rows: u64) -> Result<(), FormatError> {
    if rows > MAX_ROWS as u64 {
        return Err(FormatError::input(
            file,
            format!("{rows} rows is more than the limit of {MAX_ROWS}; split the trace"),
        ));
    }
    Ok(())
}

/// Read a trace from any reader (`file` names it in errors), one row at a time; `counted`
/// says the rows were already counted and found within [`MAX_ROWS`].
///
/// The errors and their order are those of reading the whole text first: a fault of the text
/// itself (too long, NUL, not UTF-8; from [`crate::input::TextReader`]) before a trace of more
/// than [`MAX_ROWS`] rows (non-blank lines after the header), before a bad header or row. So
/// when a header or row fails on input not counted beforehand (a pipe, standard input), the
/// rest is still read through (counting lines, parsing nothing) to find out whether one of the
/// earlier errors applies.
pub fn read_trace_from(
    file: &str,
    reader: impl Read,
    format: TraceFormat,
    skip_bad_rows: bool,
    counted: bool,
) -> Result<Trace, FormatError> {
    let lines = Rc::new(RefCell::new(LineState::default()));
    let tracked = LineTracker {
        inner: HeaderBound {
            file,
            inner: reader,
            seen: 0,
            ended: false,
        },
        state: Rc::clone(&lines),
    };
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(tracked);
    let parsed = parse_records(file, &mut reader, &lines, format, skip_bad_rows);
    if let Err(Failure::Text(e)) = parsed {
        return Err(e);
    }
    if !counted {
        // Read what is left (nothing when the records ran to the end) to count the rows.
        lines.borrow_mut().track_starts = false;
        let mut rest = reader.into_inner();
        if let Err(e) = std::io::copy(&mut rest, &mut std::io::sink()) {
            return Err(io_failure(file, e));
        }
        check_row_count(file, lines.borrow().nonblank_lines.saturating_sub(1))?;
    }
    match parsed {
        Ok(table) => table.into_trace(file),
        Err(Failure::Text(e) | Failure::Trace(e)) => Err(e),
    }
}

/// Why reading stopped: the text itself (first in precedence) or the trace in it.
enum Failure {
    Text(FormatError),
    Trace(FormatError),
}

/// An I/O error of the reader: the text fault a [`crate::input::TextReader`] found, else the
/// error of reading `file`.
fn io_failure(file: &str, e: std::io::Error) -> FormatError {
    crate::input::format_error_of(e).unwrap_or_else(|source| FormatError::Io {
        path: file.to_owned(),
        source,
    })
}

/// A csv error: the reader's I/O error as a text failure, anything else as a trace failure
/// described by `describe`.
fn csv_failure(file: &str, e: csv::Error, describe: impl FnOnce(&csv::Error) -> String) -> Failure {
    if e.is_io_error() {
        match e.into_kind() {
            csv::ErrorKind::Io(io) => Failure::Text(io_failure(file, io)),
            _ => unreachable!("is_io_error"),
        }
    } else {
        Failure::Trace(FormatError::input(file, describe(&e)))
    }
}

fn parse_records<R: Read>(
    file: &str,
    reader: &mut csv::Reader<R>,
    lines: &RefCell<LineState>,
    format: TraceFormat,
    skip_bad_rows: bool,
) -> Result<Table, Failure> {
    let fail = |message: String| Failure::Trace(FormatError::input(file, message));
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| csv_failure(file, e, |e| format!("line 1: unreadable header: {e}")))?
        .iter()
        .map(str::to_owned)
        .collect();
    let format = match format {
        TraceFormat::Auto => detect(&header).ok_or_else(|| {
            fail(format!(
                "line 1: unknown trace header `{}`; expected Philly (timestamp,duration,num_gpus,gpu_time,cluster), Helios (job_id,…,gpu_num,…,submit_time,…,duration,…) or native (name,submit_s,duration_s,gpus,…)",
                excerpt(&header.join(","))
            ))
        })?,
        f => f,
    };
    let columns = Columns::new(&header);
    let required: &[&str] = match format {
        TraceFormat::Philly => &["timestamp", "duration", "num_gpus", "cluster"],
        TraceFormat::Helios => &["job_id", "vc", "gpu_num", "submit_time", "duration"],
        TraceFormat::Native => &["name", "submit_s", "duration_s", "gpus"],
        TraceFormat::Auto
        | TraceFormat::Sacct
        | TraceFormat::KueueWorkloads
        | TraceFormat::Openb => unreachable_auto(),
    };
    for c in required {
        if columns.get(c).is_none() {
            let near = header
                .iter()
                .find(|h| edit_distance(h, c) <= 2)
                .map(|h| format!(" (`{}` is close: misspelt?)", excerpt(h)))
                .unwrap_or_default();
            return Err(fail(format!("line 1: missing column `{c}`{near}")));
        }
    }
    check_columns(file, format, &header).map_err(Failure::Trace)?;
    let mut table = Table::new(format);
    let mut record = csv::StringRecord::new();
    let mut index = 0u64;
    loop {
        let read = reader.read_record(&mut record);
        let line = match &read {
            Ok(true) => match record.position() {
                // Line numbers from the records' byte offsets (the csv crate's own line count
                // drifts after blank lines and in CRLF files).
                Some(p) => lines.borrow_mut().line_at(p.byte()),
                None => index + 2,
            },
            Ok(false) => break,
            Err(_) => index + 2,
        };
        index += 1;
        if table.len() >= MAX_ROWS {
            return Err(fail(format!("more than {MAX_ROWS} rows; split the trace")));
        }
        let parsed = match read {
            Ok(_) => parse_row(format, &columns, &record),
            Err(e) if e.is_io_error() => return Err(csv_failure(file, e, |_| String::new())),
            Err(e) => Err(format!("unreadable row: {e}")),
        };
        let parsed = parsed.and_then(|row| {
            if matches!(row.name, RowName::Philly) {
                return Ok(row);
            }
            if let Some(first) = table.first_line_named(row.name.key()) {
                return Err(format!(
                    "job name `{}` is already used on line {first}; names must be unique",
                    excerpt(row.name.key())
                ));
            }
            Ok(row)
        });
        match parsed {
            Ok(row) => table.push(line, row),
            Err(msg) if skip_bad_rows => table.skipped.push((line, msg)),
            Err(msg) => {
                return Err(fail(format!(
                    "line {line}: {msg} (pass --skip-bad-rows to count and skip such rows)"
                )))
            }
        }
    }
    Ok(table)
}

fn unreachable_auto() -> &'static [&'static str] {
    &[]
}

/// Refuse header columns the format does not read: any unknown column of the native format
/// (railyard's own), and for Philly and Helios a column one or two edits away from a column
/// the format reads (a misspelling that would silently drop the data).
fn check_columns(file: &str, format: TraceFormat, header: &[String]) -> Result<(), FormatError> {
    let known = match format {
        TraceFormat::Philly => PHILLY_COLUMNS,
        TraceFormat::Helios => HELIOS_COLUMNS,
        TraceFormat::Native => NATIVE_COLUMNS,
        TraceFormat::Auto
        | TraceFormat::Sacct
        | TraceFormat::KueueWorkloads
        | TraceFormat::Openb => return Ok(()),
    };
    let mut seen = std::collections::BTreeSet::new();
    for h in header {
        if !seen.insert(h.as_str()) {
            return Err(FormatError::input(
                file,
                format!("line 1: column `{}` given twice", excerpt(h)),
            ));
        }
        if known.contains(&h.as_str()) {
            continue;
        }
        let near = known
            .iter()
            .find(|k| !header.iter().any(|x| x == *k) && edit_distance(h, k) <= 2);
        match (format, near) {
            (_, Some(k)) => {
                return Err(FormatError::input(
                    file,
                    format!(
                        "line 1: unknown column `{}`; did you mean `{k}`?",
                        excerpt(h)
                    ),
                ))
            }
            (TraceFormat::Native, None) => {
                return Err(FormatError::input(
                    file,
                    format!(
                        "line 1: unknown column `{}`; the native format has {}",
                        excerpt(h),
                        NATIVE_COLUMNS.join(", ")
                    ),
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Levenshtein distance of two short names (capped work: names over 64 bytes are "far").
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() > 64 || b.len() > 64 {
        return usize::MAX;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(x != y))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn detect(header: &[String]) -> Option<TraceFormat> {
    let has = |c: &str| header.iter().any(|h| h == c);
    if has("num_gpus") && has("timestamp") {
        Some(TraceFormat::Philly)
    } else if has("gpu_num") && has("submit_time") {
        Some(TraceFormat::Helios)
    } else if has("submit_s") && has("duration_s") {
        Some(TraceFormat::Native)
    } else {
        None
    }
}

struct Columns<'a> {
    header: &'a [String],
}

impl<'a> Columns<'a> {
    fn new(header: &'a [String]) -> Self {
        Self { header }
    }

    fn get(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }
}

fn field<'r>(cols: &Columns<'_>, r: &'r csv::StringRecord, name: &str) -> Result<&'r str, String> {
    let i = cols
        .get(name)
        .ok_or_else(|| format!("missing column `{name}`"))?;
    match r.get(i) {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(format!("{name}: missing value")),
    }
}

fn optional<'r>(cols: &Columns<'_>, r: &'r csv::StringRecord, name: &str) -> Option<&'r str> {
    cols.get(name)
        .and_then(|i| r.get(i))
        .filter(|v| !v.is_empty())
}

fn number(name: &str, v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if (0.0..1.0e12).contains(&x) => Ok(x),
        _ => Err(format!(
            "{name}: expected a non-negative number, got \"{}\"",
            excerpt(v)
        )),
    }
}

/// A submission time in seconds, at most [`MAX_EPOCH_S`].
fn submit_time(name: &str, x: f64) -> Result<f64, String> {
    if x > MAX_EPOCH_S {
        return Err(format!(
            "{name}: {x} s is after 2100-01-01 (epoch seconds up to {MAX_EPOCH_S}); milliseconds given as seconds?"
        ));
    }
    Ok(x)
}

/// A duration in seconds, at most [`MAX_DURATION_S`].
fn duration(name: &str, v: &str) -> Result<f64, String> {
    let x = number(name, v)?;
    if x > MAX_DURATION_S {
        return Err(format!(
            "{name}: {x} s is more than ten years ({MAX_DURATION_S} s); milliseconds given as seconds?"
        ));
    }
    Ok(x)
}

fn count(name: &str, v: &str) -> Result<u32, String> {
    // Traces write counts as "8" or "8.0".
    let x = number(name, v)?;
    if x.fract() != 0.0 || !(1.0..=1.0e6).contains(&x) {
        return Err(format!(
            "{name}: expected a whole number of GPUs ≥ 1, got \"{}\"",
            excerpt(v)
        ));
    }
    Ok(x as u32)
}

/// Refuse a job or queue name a row gives in `column` (`prefix` and `value`, as the job will be
/// named) that no Kubernetes object could have: empty, over 253 bytes or holding a control
/// character (a tab or newline inside a quoted field). Such names reach reports, JSON and
/// scripts; any other characters (real traces' ids) are kept. No allocation for a good name.
fn row_name(column: &str, what: &str, prefix: &str, value: &str) -> Result<(), String> {
    crate::names::check_prefixed_kubernetes_name(what, prefix, value)
        .map_err(|m| format!("{column}: {m}"))
}

/// A row's name as the trace gives it.
enum RowName<'r> {
    /// Philly rows have none: `philly-LINE`.
    Philly,
    /// `helios-` and the Helios `job_id` (kept whole, as the duplicate check's key).
    Helios(String),
    /// The native `name`.
    Native(&'r str),
}

impl RowName<'_> {
    /// The job's name (Philly: empty, never looked up).
    fn key(&self) -> &str {
        match self {
            RowName::Philly => "",
            RowName::Helios(s) => s,
            RowName::Native(s) => s,
        }
    }
}

/// A parsed row, borrowing its strings from the record.
struct ParsedRow<'r> {
    name: RowName<'r>,
    submit_s: f64,
    duration_s: f64,
    gpus: u32,
    /// The queue: a prefix (`vc-` for Philly and Helios) and the value.
    queue: (&'static str, &'r str),
    /// Native rows' optional columns.
    extras: Option<Extras>,
    /// Helios rows with a `start_time`: start − submit, seconds.
    observed_wait_s: Option<f64>,
}

/// A native row's optional columns.
struct Extras {
    priority: i32,
    preemptible: bool,
    topology: TopologyAsk,
    comm: Option<CommProfile>,
    checkpoint: sim::CheckpointAsk,
    /// Boxed: most rows have none.
    training: Option<Box<layout::Training>>,
}

/// No name or extras (`u32::MAX` in [`CompactRow`]).
const NONE: u32 = u32::MAX;

/// A row kept until the whole trace is read: numbers inline, the name a span of
/// [`Table::names`] (Philly's is made from the line), the queue an index into
/// [`Table::queues`]; native extras, when not the defaults, in [`Table::extras`]. 40 bytes.
struct CompactRow {
    line: u64,
    submit_s: f64,
    duration_s: f64,
    gpus: u32,
    queue: u32,
    name_start: u32,
    name_len: u32,
}

/// The rows of a trace as they are read.
struct Table {
    format: TraceFormat,
    rows: Vec<CompactRow>,
    /// Names of Helios and native rows, one after the other.
    names: String,
    /// Queues in order of first appearance, and their indices (look-ups only).
    queues: Vec<String>,
    queue_index: std::collections::HashMap<String, u32>,
    /// Native rows' extras that are not [`TraceJob::new`]'s defaults, with their row's index,
    /// in row order (most rows have none: a synthetic trace of five million rows keeps none).
    extras: Vec<(u32, Extras)>,
    skipped: Vec<(u64, String)>,
    /// A reused buffer for queue look-ups.
    key: String,
    /// Per kept Helios row, its observed wait (with a `start_time`); empty for other formats.
    waits: Vec<Option<f64>>,
    /// The duplicate-name check without a copy of each name (Helios and native rows; Philly
    /// names are made from line numbers, unique by construction): a name's hash → the first
    /// kept row with that hash; a name whose hash an earlier, different name holds is kept
    /// whole in `collided` with its line. Look-ups only, never iterated.
    name_hashes: std::collections::HashMap<u64, u32>,
    collided: std::collections::HashMap<String, u64>,
    hasher: std::collections::hash_map::RandomState,
}

impl Extras {
    /// What a native row without the optional columns asks for: [`TraceJob::new`]'s values.
    fn defaults() -> Self {
        Self {
            priority: 0,
            preemptible: true,
            topology: TopologyAsk::None,
            comm: None,
            checkpoint: sim::CheckpointAsk::default(),
            training: None,
        }
    }

    fn are_defaults(&self) -> bool {
        self.priority == 0
            && self.preemptible
            && self.topology == TopologyAsk::None
            && self.comm.is_none()
            && self.checkpoint == sim::CheckpointAsk::default()
            && self.training.is_none()
    }
}

impl Table {
    fn new(format: TraceFormat) -> Self {
        Self {
            format,
            rows: Vec::new(),
            waits: Vec::new(),
            names: String::new(),
            queues: Vec::new(),
            queue_index: std::collections::HashMap::new(),
            extras: Vec::new(),
            skipped: Vec::new(),
            key: String::new(),
            name_hashes: std::collections::HashMap::new(),
            collided: std::collections::HashMap::new(),
            hasher: std::collections::hash_map::RandomState::new(),
        }
    }

    /// The line of the kept row named `name`, if any.
    fn first_line_named(&self, name: &str) -> Option<u64> {
        if let Some(&line) = self.collided.get(name) {
            return Some(line);
        }
        let &i = self.name_hashes.get(&self.hasher.hash_one(name))?;
        let r = &self.rows[i as usize];
        let start = r.name_start as usize;
        (&self.names[start..start + r.name_len as usize] == name).then_some(r.line)
    }

    /// Rows read so far, kept and skipped.
    fn len(&self) -> usize {
        self.rows.len() + self.skipped.len()
    }

    fn push(&mut self, line: u64, row: ParsedRow<'_>) {
        self.key.clear();
        self.key.push_str(row.queue.0);
        self.key.push_str(row.queue.1);
        let queue = match self.queue_index.get(&self.key) {
            Some(&q) => q,
            None => {
                let q = self.queues.len() as u32;
                self.queues.push(self.key.clone());
                self.queue_index.insert(self.key.clone(), q);
                q
            }
        };
        let index = self.rows.len() as u32;
        let (name_start, name_len) = match &row.name {
            RowName::Philly => (NONE, 0),
            named => {
                let name = named.key();
                match self.name_hashes.entry(self.hasher.hash_one(name)) {
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(index);
                    }
                    std::collections::hash_map::Entry::Occupied(_) => {
                        self.collided.insert(name.to_owned(), line);
                    }
                }
                let start = self.names.len() as u32;
                self.names.push_str(name);
                (start, name.len() as u32)
            }
        };
        if let Some(extras) = row.extras.filter(|x| !x.are_defaults()) {
            self.extras.push((index, extras));
        }
        if self.format == TraceFormat::Helios {
            self.waits.push(row.observed_wait_s);
        }
        self.rows.push(CompactRow {
            line,
            submit_s: row.submit_s,
            duration_s: row.duration_s,
            gpus: row.gpus,
            queue,
            name_start,
            name_len,
        });
    }

    /// The jobs, in file order; an error when none could be read.
    fn into_trace(self, file: &str) -> Result<Trace, FormatError> {
        if self.rows.is_empty() {
            return Err(FormatError::input(file, "no readable jobs"));
        }
        let mut jobs = Vec::with_capacity(self.rows.len());
        let mut extras = self.extras.into_iter().peekable();
        for (index, r) in self.rows.iter().enumerate() {
            let name = if r.name_start == NONE {
                format!("philly-{}", r.line)
            } else {
                let start = r.name_start as usize;
                self.names[start..start + r.name_len as usize].to_owned()
            };
            let mut job = TraceJob {
                line: r.line,
                submit_s: r.submit_s,
                queue: self.queues[r.queue as usize].clone(),
                ..TraceJob::new(name, r.gpus, r.duration_s)
            };
            if self.format == TraceFormat::Native {
                if let Some((_, x)) = extras.next_if(|(i, _)| *i as usize == index) {
                    job.priority = x.priority;
                    job.preemptible = x.preemptible;
                    job.topology = x.topology;
                    job.comm = x.comm;
                    job.training = x.training;
                    job.checkpoint = x.checkpoint;
                }
            }
            jobs.push(job);
        }
        // Observed waits only when some row had one (Helios with `start_time`).
        let observed_wait_s = if self.waits.iter().any(Option::is_some) {
            self.waits
        } else {
            Vec::new()
        };
        Ok(Trace {
            jobs,
            skipped: self.skipped,
            format: Some(self.format),
            observed_wait_s,
            ..Trace::default()
        })
    }
}

/// Which bytes `str::trim` removes that can stand alone in a line of ASCII.
fn is_blank_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// What the line tracker has seen of the input.
#[derive(Debug)]
struct LineState {
    /// Input offset of the next byte.
    offset: u64,
    /// 1 + newlines so far.
    line: u64,
    /// The last byte was a line break (`\n` or `\r`), or nothing has been read.
    after_break: bool,
    /// Offset and line of each line's first byte that is not a line break, not yet asked for.
    starts: VecDeque<(u64, u64)>,
    /// Lines with something other than whitespace, so far (a row count that matches the old
    /// one for ASCII whitespace; a line of only non-ASCII spaces counts as a row here).
    nonblank_lines: u64,
    /// The current line has something other than whitespace.
    line_has_content: bool,
    /// Whether to record [`LineState::starts`] (not while the rest is only counted).
    track_starts: bool,
}

impl Default for LineState {
    fn default() -> Self {
        Self {
            offset: 0,
            line: 1,
            after_break: true,
            starts: VecDeque::new(),
            nonblank_lines: 0,
            line_has_content: false,
            track_starts: true,
        }
    }
}

impl LineState {
    fn scan(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                b'\n' => {
                    self.line += 1;
                    if self.line_has_content {
                        self.nonblank_lines += 1;
                    }
                    self.line_has_content = false;
                    self.after_break = true;
                }
                b'\r' => self.after_break = true,
                _ => {
                    if self.after_break && self.track_starts {
                        self.starts.push_back((self.offset, self.line));
                    }
                    self.after_break = false;
                    if !is_blank_byte(b) {
                        self.line_has_content = true;
                    }
                }
            }
            self.offset += 1;
        }
    }

    fn finish(&mut self) {
        if self.line_has_content {
            self.nonblank_lines += 1;
            self.line_has_content = false;
        }
    }

    /// The line of a record starting at byte `at` (its first byte that is not a line break at
    /// or after `at`: the csv reader's position may be that of blank lines before the record).
    /// Records are asked for in order, so the starts before `at` are dropped.
    fn line_at(&mut self, at: u64) -> u64 {
        while self.starts.front().is_some_and(|&(o, _)| o < at) {
            self.starts.pop_front();
        }
        self.starts.front().map_or(self.line, |&(_, line)| line)
    }
}

/// The longest header line a trace may have: a header is one line of column names (the native
/// format's twelve take 130 bytes), so 64 KiB leaves room for any real one and refuses a file
/// whose first "line" is a whole file before the CSV reader buffers it.
pub const MAX_HEADER_BYTES: u64 = 64 * 1024;

/// A reader that refuses input whose first line runs past [`MAX_HEADER_BYTES`] (an `io::Error`
/// carrying the [`FormatError`], a text fault like [`crate::input::TextReader`]'s).
struct HeaderBound<'f, R> {
    file: &'f str,
    inner: R,
    /// Bytes of the first line passed on so far.
    seen: u64,
    /// The first line has ended.
    ended: bool,
}

impl<R: Read> Read for HeaderBound<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.ended {
            return self.inner.read(buf);
        }
        // Never pass on more than the bound allows, so nothing past it is ever buffered.
        let room = (MAX_HEADER_BYTES + 1 - self.seen).min(buf.len() as u64) as usize;
        let n = self.inner.read(&mut buf[..room])?;
        match buf[..n].iter().position(|&b| b == b'\n') {
            Some(_) => self.ended = true,
            None => {
                self.seen += n as u64;
                if self.seen > MAX_HEADER_BYTES {
                    return Err(std::io::Error::other(FormatError::input(
                        self.file,
                        format!(
                            "line 1: the header runs past {MAX_HEADER_BYTES} bytes without a line end; a trace header is one line of column names"
                        ),
                    )));
                }
            }
        }
        Ok(n)
    }
}

/// A reader that tells [`LineState`] every byte it passes on.
struct LineTracker<R> {
    inner: R,
    state: Rc<RefCell<LineState>>,
}

impl<R: Read> Read for LineTracker<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut state = self.state.borrow_mut();
        if n == 0 {
            state.finish();
        } else {
            state.scan(&buf[..n]);
        }
        Ok(n)
    }
}

fn parse_row<'r>(
    format: TraceFormat,
    cols: &Columns<'_>,
    r: &'r csv::StringRecord,
) -> Result<ParsedRow<'r>, String> {
    let base = |name, submit_s, duration_s, gpus, queue| ParsedRow {
        name,
        submit_s,
        duration_s,
        gpus,
        queue,
        extras: None,
        observed_wait_s: None,
    };
    match format {
        TraceFormat::Philly => {
            let submit = parse_datetime(field(cols, r, "timestamp")?)
                .map_err(|e| format!("timestamp: {e}"))?;
            let duration = duration("duration", field(cols, r, "duration")?)?;
            let gpus = count("num_gpus", field(cols, r, "num_gpus")?)?;
            let vc = field(cols, r, "cluster")?;
            row_name("cluster", "queue name", "vc-", vc)?;
            // Not used (railyard takes duration × num_gpus), but a negative or non-numeric
            // GPU time says the row is not what it claims.
            if let Some(t) = optional(cols, r, "gpu_time") {
                number("gpu_time", t)?;
            }
            Ok(base(RowName::Philly, submit, duration, gpus, ("vc-", vc)))
        }
        TraceFormat::Helios => {
            let id = field(cols, r, "job_id")?;
            let submit_raw = field(cols, r, "submit_time")?;
            let submit = submit_raw
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map_or_else(|| parse_datetime(submit_raw), Ok)
                .map_err(|e| format!("submit_time: {e}"))
                .and_then(|x| submit_time("submit_time", x))?;
            let duration = duration("duration", field(cols, r, "duration")?)?;
            let gpus = count("gpu_num", field(cols, r, "gpu_num")?)?;
            let vc = field(cols, r, "vc")?;
            row_name("job_id", "job name", "helios-", id)?;
            row_name("vc", "queue name", "vc-", vc)?;
            // The wait in Helios' own scheduler, where the row says when the job started.
            let start = match optional(cols, r, "start_time").filter(|v| !v.trim().is_empty()) {
                Some(v) => Some(
                    v.parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite() && *x >= 0.0)
                        .map_or_else(|| parse_datetime(v), Ok)
                        .map_err(|e| format!("start_time: {e}"))
                        .and_then(|x| submit_time("start_time", x))?,
                ),
                None => None,
            };
            if let Some(start) = start.filter(|&t| t < submit) {
                return Err(format!(
                    "start_time: {start} is before submit_time {submit}; expected a start at or after submission"
                ));
            }
            let mut row = base(
                RowName::Helios(format!("helios-{id}")),
                submit,
                duration,
                gpus,
                ("vc-", vc),
            );
            row.observed_wait_s = start.map(|t| t - submit);
            Ok(row)
        }
        TraceFormat::Native => {
            let name = field(cols, r, "name")?;
            row_name("name", "job name", "", name)?;
            let queue = optional(cols, r, "queue").unwrap_or("default");
            row_name("queue", "queue name", "", queue)?;
            let mut row = base(
                RowName::Native(name),
                submit_time("submit_s", number("submit_s", field(cols, r, "submit_s")?)?)?,
                duration("duration_s", field(cols, r, "duration_s")?)?,
                count("gpus", field(cols, r, "gpus")?)?,
                ("", queue),
            );
            let mut extras = Extras::defaults();
            for (name, slot) in [
                ("checkpoint_s", &mut extras.checkpoint.interval_s),
                ("restart_s", &mut extras.checkpoint.restart_s),
            ] {
                if let Some(v) = optional(cols, r, name) {
                    *slot = Some(number(name, v)?);
                }
            }
            if let Some(p) = optional(cols, r, "priority") {
                extras.priority = p.parse().map_err(|_| {
                    format!("priority: expected an integer, got \"{}\"", excerpt(p))
                })?;
            }
            if let Some(p) = optional(cols, r, "preemptible") {
                extras.preemptible = match p {
                    "true" | "yes" | "1" => true,
                    "false" | "no" | "0" => false,
                    _ => {
                        return Err(format!(
                            "preemptible: expected true or false, got \"{}\"",
                            excerpt(p)
                        ))
                    }
                };
            }
            if let Some(t) = optional(cols, r, "topology") {
                if t.chars().any(char::is_control) {
                    return Err(format!(
                        "topology: `{}` holds a control character; expected none, required:LABEL or preferred:LABEL",
                        excerpt(t)
                    ));
                }
                extras.topology = match t.split_once(':') {
                    Some(("required", l)) if !l.is_empty() => TopologyAsk::Required(l.to_owned()),
                    Some(("preferred", l)) if !l.is_empty() => TopologyAsk::Preferred(l.to_owned()),
                    _ if t == "none" => TopologyAsk::None,
                    _ => {
                        return Err(format!(
                        "topology: expected none, required:LABEL or preferred:LABEL, got \"{}\"",
                        excerpt(t)
                    ))
                    }
                };
            }
            let share = optional(cols, r, "comm_share")
                .map(|v| number("comm_share", v))
                .transpose()?;
            let bytes = optional(cols, r, "bytes_per_step")
                .map(|v| number("bytes_per_step", v))
                .transpose()?;
            if let Some(s) = share {
                if s > 1.0 {
                    return Err(format!("comm_share: expected a share in 0..=1, got {s}"));
                }
                extras.comm = Some(CommProfile {
                    comm_share: s,
                    bytes_per_step: bytes.unwrap_or(0.0),
                });
            } else if bytes.is_some() {
                return Err("bytes_per_step: given without comm_share".to_owned());
            }
            extras.training = training(cols, r, row.gpus, extras.comm.is_some())?;
            row.extras = Some(extras);
            Ok(row)
        }
        TraceFormat::Auto
        | TraceFormat::Sacct
        | TraceFormat::KueueWorkloads
        | TraceFormat::Openb => Err("format not resolved".to_owned()),
    }
}

/// A native row's `model` (a `layout` preset) and `layout` (`tp=8,pp=4,dp=16`, as
/// `railyard fabric step --layout`), both or neither, with Megatron's defaults for the rest
/// (`layout::Training::new`: micro-batch 1, global batch = DP, bf16, plain DP, no recomputation,
/// no overlap); the layout's GPUs must be the row's `gpus`, and no `comm_share` beside it.
fn training(
    cols: &Columns<'_>,
    r: &csv::StringRecord,
    gpus: u32,
    has_comm: bool,
) -> Result<Option<Box<layout::Training>>, String> {
    let model = optional(cols, r, "model");
    let text = optional(cols, r, "layout");
    let (model, text) = match (model, text) {
        (None, None) => return Ok(None),
        (Some(m), Some(l)) => (m, l),
        (Some(_), None) => return Err("layout: expected a layout beside model".to_owned()),
        (None, Some(_)) => return Err("model: expected a model preset beside layout".to_owned()),
    };
    if has_comm {
        return Err(
            "comm_share: a layout job's communication comes from its layout; leave comm_share empty"
                .to_owned(),
        );
    }
    let m = layout::preset(model).map_err(|e| format!("model: {}", e.message))?;
    let l = layout::Layout::parse(text).map_err(|e| format!("layout: {}", e.message))?;
    let t = layout::Training::new(m, l);
    t.validate(u64::from(gpus)).map_err(|e| e.to_string())?;
    Ok(Some(Box::new(t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes() {
        assert_eq!(parse_datetime("1970-01-01 00:00:00").unwrap(), 0.0);
        assert_eq!(
            parse_datetime("2017-10-09 07:01:55").unwrap(),
            1_507_532_515.0
        );
        assert_eq!(
            parse_datetime("2000-03-01T00:00:00").unwrap(),
            951_868_800.0
        );
        assert!(parse_datetime("2017-13-01 00:00:00").is_err());
        assert!(parse_datetime("2017-02-30 00:00:00").is_err());
        assert!(parse_datetime("2017-02-29 00:00:00").is_err());
        assert!(parse_datetime("2016-02-29 00:00:00").is_ok());
        assert!(parse_datetime("2000-02-29 00:00:00").is_ok());
        assert!(parse_datetime("1900-02-29 00:00:00").is_err());
        assert!(parse_datetime("2017-04-31 00:00:00").is_err());
        assert!(parse_datetime("2100-01-01 00:00:00").is_err());
        assert!(parse_datetime("yesterday").is_err());
    }

    #[test]
    fn philly_rows_and_bad_rows() {
        let text = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,11cb48\n2017-10-09 07:01:56,x,1,1,a\n";
        let err = parse_trace("t.csv", text, TraceFormat::Auto, false)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("t.csv: line 3: duration: expected a non-negative number"),
            "{err}"
        );
        let t = parse_trace("t.csv", text, TraceFormat::Auto, true).unwrap();
        assert_eq!(t.jobs.len(), 1);
        assert_eq!(t.skipped.len(), 1);
        assert_eq!(t.jobs[0].queue, "vc-11cb48");
        assert_eq!(t.jobs[0].gpus, 1);
    }

    #[test]
    fn line_numbers_count_blank_lines_and_crlf() {
        for (text, line) in [
            ("timestamp,duration,num_gpus,gpu_time,cluster\n\n\n2017-10-07 01:11:39,1,8,1,a\n\n2017-10-07 01:11:39,1,x,1,a\n", 6),
            ("timestamp,duration,num_gpus,gpu_time,cluster\r\n2017-10-07 01:11:39,1,8,1,a\r\n2017-10-07 01:11:39,1,8,1,a\r\n2017-10-07 01:11:39,1,x,1,a\r\n", 4),
            ("timestamp,duration,num_gpus,gpu_time,cluster\r\n\r\n2017-10-07 01:11:39,1,x,1,a\r\n", 3),
        ] {
            let e = parse_trace("t.csv", text, TraceFormat::Auto, false).unwrap_err().to_string();
            assert!(e.starts_with(&format!("t.csv: line {line}: num_gpus")), "{e}");
        }
    }

    #[test]
    fn times_outside_the_epoch_window_and_misspelt_columns_are_refused() {
        let helios = "job_id,vc,gpu_num,submit_time,duration\na,v,1,1e17,10\n";
        let e = parse_trace("h.csv", helios, TraceFormat::Auto, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("after 2100-01-01"), "{e}");
        let native = "name,submit_s,duration_s,gpus,priorty\na,0,10,1,5\n";
        let e = parse_trace("n.csv", native, TraceFormat::Auto, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown column `priorty`; did you mean `priority`?"),
            "{e}"
        );
        let philly = "timestamp,durattion,num_gpus,gpu_time,cluster\n2017-10-07 01:11:39,1,8,1,a\n";
        let e = parse_trace("p.csv", philly, TraceFormat::Auto, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("missing column `duration` (`durattion` is close"),
            "{e}"
        );
        let helios = "job_id,vc,gpu_num,submit_time,duration,gpu_nums\na,v,1,0,10,2\n";
        let e = parse_trace("h.csv", helios, TraceFormat::Auto, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown column `gpu_nums`; did you mean `cpu_num`?"),
            "{e}"
        );
        let extra =
            "timestamp,duration,num_gpus,gpu_time,cluster,status\n2017-10-07 01:11:39,1,8,1,a,ok\n";
        assert!(parse_trace("p.csv", extra, TraceFormat::Auto, false).is_ok());
    }

    #[test]
    fn a_huge_field_is_cut_in_the_message() {
        let text = format!(
            "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-07 01:11:39,1,{}x,1,a\n",
            "9".repeat(1_000_000)
        );
        let e = parse_trace("t.csv", &text, TraceFormat::Auto, false)
            .unwrap_err()
            .to_string();
        assert!(e.len() < 300, "{}", e.len());
    }

    /// A reader that hands out `step` bytes at a time, as a pipe might.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// Streamed through the bounded reader in pieces of every size, a trace reads as its text
    /// does: the same jobs, and the same errors with the same line numbers (blank lines, CRLF).
    #[test]
    fn streamed_traces_read_as_their_text_does() {
        let texts = [
            "timestamp,duration,num_gpus,gpu_time,cluster\n\n\n2017-10-07 01:11:39,1,8,1,a\n\n2017-10-07 01:11:39,1,x,1,a\n",
            "timestamp,duration,num_gpus,gpu_time,cluster\r\n2017-10-07 01:11:39,1,8,1,a\r\n2017-10-07 01:11:39,1,8,1,b\r\n2017-10-07 01:11:39,1,x,1,a\r\n",
            "timestamp,duration,num_gpus,gpu_time,cluster\r\n\r\n2017-10-07 01:11:39,1,2,1,a\r\n  \r\n2017-10-07 01:11:39,1,4,1,b",
            "job_id,vc,gpu_num,submit_time,duration\na,v,1,0,10\n\nb,w,2,5,10\na,v,1,0,10\n",
            "name,submit_s,duration_s,gpus,queue,priority\nx,0,1,1,q,3\ny,1,1,2,,\n",
            "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-07 01:11:39,1,8,1,\u{e9}t\u{e9}\n",
            "garbage header\n1,2\n",
            "",
        ];
        for text in texts {
            for skip in [false, true] {
                let whole = parse_trace("t.csv", text, TraceFormat::Auto, skip);
                for step in [1, 2, 3, 7, 64] {
                    let reader = crate::input::TextReader::new(
                        "t.csv",
                        Trickle {
                            bytes: text.as_bytes(),
                            step,
                        },
                        crate::input::MAX_INPUT_BYTES,
                    );
                    let streamed = read_trace_from("t.csv", reader, TraceFormat::Auto, skip, false);
                    match (&whole, &streamed) {
                        (Ok(a), Ok(b)) => {
                            assert_eq!(a.jobs, b.jobs, "{text:?} step {step}");
                            assert_eq!(a.skipped, b.skipped, "{text:?} step {step}");
                        }
                        (Err(a), Err(b)) => {
                            assert_eq!(a.to_string(), b.to_string(), "{text:?} step {step}")
                        }
                        _ => panic!("{text:?} step {step}: {whole:?} vs {streamed:?}"),
                    }
                }
            }
        }
    }

    /// The text's own faults come first, as when the whole text was read before parsing: a NUL
    /// after a bad row is what is reported, at its byte.
    #[test]
    fn a_fault_of_the_text_outranks_a_bad_row_before_it() {
        let text = b"timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-07 01:11:39,1,x,1,a\n2017-10-07 01:11:39,1,8,1,a\0\n";
        let reader = crate::input::TextReader::new(
            "t.csv",
            Trickle {
                bytes: text,
                step: 5,
            },
            crate::input::MAX_INPUT_BYTES,
        );
        let e = read_trace_from("t.csv", reader, TraceFormat::Auto, false, false)
            .unwrap_err()
            .to_string();
        let at = text.iter().position(|&b| b == 0).unwrap();
        assert_eq!(
            e,
            format!("t.csv: not text: NUL byte at byte {at}; expected a UTF-8 text file")
        );
    }

    #[test]
    fn helios_start_times_give_observed_waits() {
        // Helios' own columns: waits are start − submit; a row without start_time has none.
        let csv = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration\n\
                   a,u,v1,8,8,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:10:00,2020-04-01 01:10:00,3600\n\
                   b,u,v1,1,8,1,COMPLETED,2020-04-01 00:05:00,2020-04-01 00:05:30,2020-04-01 00:06:30,60\n\
                   c,u,v2,2,8,1,COMPLETED,2020-04-01 00:06:00,,,60\n";
        let t = parse_trace("h.csv", csv, TraceFormat::Auto, false).unwrap();
        assert_eq!(t.observed_wait_s, [Some(600.0), Some(30.0), None]);
        let none = "job_id,vc,gpu_num,submit_time,duration\na,v,1,0,10\n";
        let t = parse_trace("h.csv", none, TraceFormat::Auto, false).unwrap();
        assert!(t.observed_wait_s.is_empty());
        let before = "job_id,vc,gpu_num,submit_time,start_time,duration\na,v,1,100,50,10\n";
        let e = parse_trace("h.csv", before, TraceFormat::Auto, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("start_time: 50 is before submit_time 100"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }

    /// Names no Kubernetes object could have are refused in the column that gives them, in
    /// every CSV dialect (a tab or newline inside a quoted field too), and skipped with
    /// `--skip-bad-rows`; odd characters real traces have are kept.
    #[test]
    fn names_that_can_never_be_kubernetes_names_are_refused() {
        let long = "n".repeat(254);
        let philly = "timestamp,duration,num_gpus,gpu_time,cluster\n";
        let helios = "job_id,vc,gpu_num,submit_time,duration\n";
        let native = "name,submit_s,duration_s,gpus,queue\n";
        let cases = [
            (
                format!("{native}{long},0,10,1,\n"),
                "line 2: name: the job name `nnnn",
                "is 254 bytes, more than the 253 of any Kubernetes name",
            ),
            (
                format!("{native}\"a\tb\",0,10,1,\n"),
                "line 2: name: the job name `a\\tb`",
                "holds a control character",
            ),
            (
                format!("{native}a,0,10,1,q\nb,0,10,1,\"team\na\"\n"),
                "line 3: queue: the queue name `team\\na`",
                "holds a control character",
            ),
            (
                format!("{native}a,0,10,1,{long}\n"),
                "line 2: queue: the queue name `nnnn",
                "is 254 bytes",
            ),
            (
                format!("{philly}2017-10-07 01:11:39,1,8,1,\"c\u{7}\"\n"),
                "line 2: cluster: the queue name `vc-c\\u{7}`",
                "holds a control character",
            ),
            // vc- and 251 bytes: the queue's name is 254 bytes.
            (
                format!("{philly}2017-10-07 01:11:39,1,8,1,{}\n", "c".repeat(251)),
                "line 2: cluster: the queue name `vc-ccc",
                "is 254 bytes",
            ),
            (
                format!("{helios}{},v,1,0,10\n", "j".repeat(247)),
                "line 2: job_id: the job name `helios-jjj",
                "is 254 bytes",
            ),
            (
                format!("{helios}j,\"v\u{1b}x\",1,0,10\n"),
                "line 2: vc: the queue name `vc-v\\u{1b}x`",
                "holds a control character",
            ),
        ];
        for (text, place, why) in &cases {
            let e = parse_trace("t.csv", text, TraceFormat::Auto, false)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("t.csv: {place}")), "{e}");
            assert!(
                e.contains(why) && e.contains("it can never be a Kubernetes name"),
                "{e}"
            );
            assert!(
                !e.contains('\n') && !e.contains('\t') && e.len() < 400,
                "{e}"
            );
            let skipped = parse_trace(
                "t.csv",
                &format!("{text}z,0,10,1,\n"),
                TraceFormat::Native,
                true,
            );
            if text.starts_with(native) {
                assert_eq!(skipped.unwrap().skipped.len(), 1, "{text:?}");
            }
        }
        let topology = "name,submit_s,duration_s,gpus,topology\na,0,10,1,\"required:rack\u{7}\"\n";
        let e = parse_trace("t.csv", topology, TraceFormat::Auto, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "t.csv: line 2: topology: `required:rack\\u{7}` holds a control character"
            ),
            "{e}"
        );
        // At the bound, and with the characters real traces have: read.
        let ok = [
            format!("{native}{},0,10,1,{}\n", "n".repeat(253), "q".repeat(253)),
            format!("{native}job/1:a b,0,10,1,team@x\n"),
            format!("{philly}2017-10-07 01:11:39,1,8,1,{}\n", "c".repeat(250)),
            format!("{helios}{},v,1,0,10\n", "j".repeat(246)),
        ];
        for text in &ok {
            let t = parse_trace("t.csv", text, TraceFormat::Auto, false);
            assert!(t.is_ok(), "{text:?}: {t:?}");
        }
    }

    #[test]
    fn native_optional_columns() {
        let text = "name,submit_s,duration_s,gpus,queue,priority,topology,comm_share,bytes_per_step\na,0,10,16,research,5,required:rack,0.3,1e9\nb,1,5,1,,,,,\n";
        let t = parse_trace("n.csv", text, TraceFormat::Auto, false).unwrap();
        assert_eq!(t.jobs[0].topology, TopologyAsk::Required("rack".into()));
        assert_eq!(t.jobs[0].priority, 5);
        assert_eq!(t.jobs[0].comm.unwrap().comm_share, 0.3);
        assert_eq!(t.jobs[1].queue, "default");
        assert!(t.jobs[1].comm.is_none());
    }

    #[test]
    fn native_model_and_layout_columns() {
        let text = "name,submit_s,duration_s,gpus,model,layout\na,0,10,64,llama3-70b,\"tp=8,pp=4,dp=2\"\nb,1,5,8,,\n";
        let t = parse_trace("n.csv", text, TraceFormat::Auto, false).unwrap();
        let a = t.jobs[0].training.as_ref().unwrap();
        assert_eq!((a.layout.tp, a.layout.pp, a.layout.dp), (8, 4, 2));
        assert_eq!(a.model, layout::preset("llama3-70b").unwrap());
        assert!(t.jobs[1].training.is_none());
        let head = "name,submit_s,duration_s,gpus,model,layout,comm_share\n";
        for (row, want) in [
            (
                "a,0,10,64,llama3-70b,\"tp=8,pp=4,dp=4\",",
                "line 2: layout: ",
            ),
            ("a,0,10,64,gpt-9,\"tp=8,pp=4,dp=2\",", "line 2: model: "),
            ("a,0,10,64,llama3-70b,\"tp=8,pq=4\",", "line 2: layout: "),
            (
                "a,0,10,64,llama3-70b,,",
                "line 2: layout: expected a layout beside model",
            ),
            ("a,0,10,64,,tp=8,", "line 2: model: "),
            (
                "a,0,10,64,llama3-70b,\"tp=8,pp=4,dp=2\",0.2",
                "line 2: comm_share: ",
            ),
        ] {
            let e = parse_trace("n.csv", &format!("{head}{row}\n"), TraceFormat::Auto, false)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{row}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}

#[cfg(test)]
mod bundled {
    use super::*;

    /// Every bundled trace and trace fixture still reads under the name rules (real traces'
    /// job ids and queues are never refused by them).
    #[test]
    fn every_bundled_trace_reads() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let fixtures = "crates/railyard/tests/fixtures";
        for (file, jobs) in [
            ("data/llm-oci-h100-16k-4to1-load0.8-warm-day-seed1.csv", 0),
            ("data/llm-oci-h100-16k-4to1-load0.8-warm-seed1.csv", 0),
            ("data/openb_pod_list_default.head300.csv", 278),
            (&format!("{fixtures}/traces/small.csv"), 0),
            (&format!("{fixtures}/traces/llm-fat-tree-k8-300.csv"), 300),
            (&format!("{fixtures}/traces/sacct-sample.txt"), 0),
            (&format!("{fixtures}/traces/kueue-workloads-sample.json"), 0),
        ] {
            let t = read_trace(&root.join(file), TraceFormat::Auto, false)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(t.skipped.is_empty(), "{file}");
            if jobs > 0 {
                assert_eq!(t.jobs.len(), jobs, "{file}");
            } else {
                assert!(!t.jobs.is_empty(), "{file}");
            }
        }
    }

    #[test]
    fn bundled_philly_traces_read_whole() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
        let full = read_trace(&dir.join("philly-jobs.csv"), TraceFormat::Auto, false).unwrap();
        // DESIGN.md: 82,247 jobs; 289 need more than 8 GPUs.
        assert_eq!(full.jobs.len(), 82_247);
        assert_eq!(full.jobs.iter().filter(|j| j.gpus > 8).count(), 289);
        let multi = full.jobs.iter().filter(|j| j.gpus > 1).count() as f64;
        assert!((multi / 82_247.0 - 0.068).abs() < 0.001);
        // … and 81.9% of the GPU time.
        let gpu_s = |j: &TraceJob| j.duration_s * f64::from(j.gpus);
        let total: f64 = full.jobs.iter().map(gpu_s).sum();
        let multi_s: f64 = full.jobs.iter().filter(|j| j.gpus > 1).map(gpu_s).sum();
        assert!((multi_s / total - 0.819).abs() < 0.001);
        let week = read_trace(
            &dir.join("philly-week-2017-10-01.csv"),
            TraceFormat::Auto,
            false,
        )
        .unwrap();
        assert_eq!(week.jobs.len(), 10_650);
    }
}
