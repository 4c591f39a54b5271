//! nccl-tests' printed result table (`all_reduce_perf` and friends), read into
//! [`fabric::Measured`] rows so `railyard fabric compare` can lay a measured run beside the
//! model's prediction. [`parse_nccl_tests`] is a pure function of the text; [`read`] names the
//! file in its error.
//!
//! Result rows are the lines whose first field is a byte count: `size count type [redop]
//! [root] time algbw busbw #wrong time algbw busbw #wrong` (out-of-place, then in-place; the
//! `#wrong` column may be an error value such as `2e-07` or `N/A` in older versions). Comment
//! lines (`#`), NCCL log lines and blank lines are skipped; an mpirun rank prefix such as
//! `[0]` is removed first.

use fabric::{Measured, SweepRow, Timing};

use crate::error::FormatError;

/// The rows of nccl-tests output in `file`; errors are one line, `FILE: line N: …`.
pub fn read(file: &str, text: &str) -> Result<Vec<Measured>, FormatError> {
    parse_nccl_tests(text).map_err(|e| FormatError::input(file, e))
}

/// Predicted rows laid out as nccl-tests prints its out-of-place columns (size, count, type,
/// time, algbw, busbw), with the algorithm and protocol NCCL's tuner picks after the type, so a
/// prediction can be laid beside a measured run. Counts are of 4-byte `float`s.
pub fn write_table(rows: &[SweepRow]) -> String {
    let mut out =
        format!(
        "#{:>11} {:>12} {:>6} {:>13} {:>6} {:>10} {:>7} {:>7}\n#{:>11} {:>12} {:>38} {:>7} {:>7}\n",
        "size", "count", "type", "algo", "proto", "time", "algbw", "busbw", "(B)", "(elements)",
        "(us)", "(GB/s)", "(GB/s)"
    );
    for r in rows {
        out.push_str(&format!(
            "{:>12} {:>12} {:>6} {:>13} {:>6} {:>10.2} {:>7.2} {:>7.2}\n",
            r.size_bytes,
            r.size_bytes / 4,
            "float",
            r.algorithm.name(),
            r.protocol.name(),
            r.time_us,
            r.algbw_gb_s,
            r.busbw_gb_s
        ));
    }
    out
}

/// Why the text could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// What is wrong with a line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// A result row with the wrong number of fields.
    #[error("a result row has {got} fields; expected 11 to 13 (size count type [redop] [root] then time algbw busbw #wrong twice)")]
    FieldCount {
        /// Fields found.
        got: usize,
    },
    /// A field that should be a number is not.
    #[error("field {field} (`{value}`) is not a {expected}")]
    BadNumber {
        /// The column name.
        field: &'static str,
        /// The text found.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// No result row at all.
    #[error("no nccl-tests result rows found (expected lines starting with a byte count)")]
    NoRows,
}

/// The result rows of nccl-tests output, in order. Fails on the first malformed result row
/// (naming its line) or when there is none.
///
/// ```
/// let text = "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n\
///             8589934592 2147483648 float sum -1 89990 95.46 190.92 0 89870 95.58 191.16 0\n";
/// let rows = formats::nccl_tests::parse_nccl_tests(text).unwrap();
/// assert_eq!(rows[0].size_bytes, 8_589_934_592);
/// assert_eq!(rows[0].in_place.busbw_gb_s, 191.16);
/// ```
pub fn parse_nccl_tests(text: &str) -> Result<Vec<Measured>, ParseError> {
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let mut fields: Vec<&str> = raw.split_whitespace().collect();
        if fields
            .first()
            .is_some_and(|f| f.starts_with('[') && f.ends_with(']'))
        {
            fields.remove(0);
        }
        let Some(first) = fields.first() else {
            continue;
        };
        if first.starts_with('#') || first.parse::<u64>().is_err() {
            continue;
        }
        let fail = |kind| ParseError { line, kind };
        let n = fields.len();
        if !(11..=13).contains(&n) {
            return Err(fail(ParseErrorKind::FieldCount { got: n }));
        }
        let int = |idx: usize, field: &'static str| -> Result<u64, ParseError> {
            fields[idx].parse::<u64>().map_err(|_| {
                fail(ParseErrorKind::BadNumber {
                    field,
                    value: fields[idx].to_owned(),
                    expected: "whole number",
                })
            })
        };
        let num = |idx: usize, field: &'static str| -> Result<f64, ParseError> {
            fields[idx]
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    fail(ParseErrorKind::BadNumber {
                        field,
                        value: fields[idx].to_owned(),
                        expected: "non-negative number",
                    })
                })
        };
        let timing = |at: usize| -> Result<Timing, ParseError> {
            Ok(Timing {
                time_us: num(at, "time")?,
                algbw_gb_s: num(at + 1, "algbw")?,
                busbw_gb_s: num(at + 2, "busbw")?,
            })
        };
        let first_timing = n - 8;
        rows.push(Measured {
            line,
            size_bytes: int(0, "size")?,
            count: int(1, "count")?,
            dtype: fields[2].to_owned(),
            out_of_place: timing(first_timing)?,
            in_place: timing(first_timing + 4)?,
        });
    }
    if rows.is_empty() {
        return Err(ParseError {
            line: text.lines().count().max(1),
            kind: ParseErrorKind::NoRows,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20
#
host:1234:1234 [0] NCCL INFO Channel 00/32 : 0 1 2 3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    30.12    0.00    0.00      0    29.80    0.00    0.00      0
  8589934592    2147483648     float     sum      -1    89990   95.46  190.92      0    89870   95.58  191.16      0
# Avg bus bandwidth    : 95.6
";

    #[test]
    fn reads_rows_and_skips_the_rest() {
        let rows = parse_nccl_tests(SAMPLE).expect("valid");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].line, 6);
        assert_eq!(rows[1].line, 7);
        assert_eq!(rows[1].count, 2_147_483_648);
        assert_eq!(rows[1].dtype, "float");
        assert_eq!(rows[1].out_of_place.busbw_gb_s, 190.92);
        assert_eq!(rows[1].in_place.time_us, 89870.0);
    }

    #[test]
    fn older_formats_and_mpirun_prefixes() {
        // nccl-tests 2.4: no root column, error values instead of #wrong; mpirun prefixes.
        let text = "[0]  1048576 262144 float sum 2.059 0.51 0.51 N/A 3.314 0.32 0.32 N/A\n\
                    2097152 524288 float 3.047 0.69 0.69 2e-07 6.873 0.31 0.31 2e-07\n";
        let rows = parse_nccl_tests(text).expect("valid");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].out_of_place.algbw_gb_s, 0.51);
        assert_eq!(rows[1].in_place.time_us, 6.873);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_nccl_tests("# header\n8 2 float sum -1 30.1 0.00\n").expect_err("short row");
        assert_eq!(e.line, 2);
        assert!(
            e.to_string()
                .starts_with("line 2: a result row has 7 fields"),
            "{e}"
        );
        let e = parse_nccl_tests("8 2 float sum -1 x 0.0 0.0 0 1 0 0 0\n").expect_err("bad time");
        assert_eq!(
            e.to_string(),
            "line 1: field time (`x`) is not a non-negative number"
        );
        let e = parse_nccl_tests("# nothing\n\n").expect_err("no rows");
        assert_eq!(e.kind, ParseErrorKind::NoRows);
    }

    #[test]
    fn read_names_the_file_and_line() {
        let e = read("run.log", "# x\n8 2 float sum -1 30.1 0.00\n").expect_err("short row");
        assert!(
            e.to_string()
                .starts_with("run.log: line 2: a result row has 7 fields"),
            "{e}"
        );
    }

    #[test]
    fn written_rows_line_up_under_the_header() {
        let row = |size_bytes, algorithm, protocol| SweepRow {
            size_bytes,
            algorithm,
            protocol,
            time_us: 12.345,
            algbw_gb_s: 1.5,
            busbw_gb_s: 2.8125,
        };
        let text = write_table(&[
            row(8, fabric::Algorithm::Tree, fabric::Protocol::Ll),
            row(8 << 30, fabric::Algorithm::Ring, fabric::Protocol::Simple),
            row(
                8 << 30,
                fabric::Algorithm::CollNetDirect,
                fabric::Protocol::Simple,
            ),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        // Every column ends where its header ends.
        let ends = |l: &str| -> Vec<usize> {
            let mut out = Vec::new();
            let b = l.as_bytes();
            for i in 0..b.len() {
                if b[i] != b' ' && (i + 1 == b.len() || b[i + 1] == b' ') {
                    out.push(i);
                }
            }
            out
        };
        // The header's leading `#` stands in a column's padding.
        let header = ends(&lines[0].replacen('#', " ", 1));
        assert_eq!(ends(&lines[1].replacen('#', " ", 1)).last(), header.last());
        assert_eq!(ends(lines[2]), header, "{text}");
        assert_eq!(ends(lines[3]), header, "{text}");
        assert_eq!(ends(lines[4]), header, "{text}");
        assert_eq!(
            lines[3].split_whitespace().collect::<Vec<_>>(),
            [
                "8589934592",
                "2147483648",
                "float",
                "Ring",
                "Simple",
                "12.35",
                "1.50",
                "2.81"
            ]
        );
    }
}
