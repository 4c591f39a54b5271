//! Plain-text tables with aligned columns, drawn by `comfy-table` in kubectl's plain style.
//!
//! No borders, a header row, two spaces between columns; a column whose data cells are all
//! numbers (with or without a unit) is right-aligned, header included, every other column
//! left-aligned. A cell may hold several lines (`\n`): the cells beside it stay on its first
//! line. The output never depends on the terminal: no colours, no width from the tty (the
//! crate's `tty` feature is off) and no wrapping (content arrangement disabled), so the same
//! rows always give the same bytes.

use comfy_table::{presets, CellAlignment, ContentArrangement};

/// A table: a header row and data rows.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header.iter().map(|s| (*s).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Add a row (cells beyond the header are ignored; missing ones are blank).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Render: the header, then one line per row (more for multi-line cells), each ending in a
    /// newline, trailing spaces trimmed.
    pub fn render(&self) -> String {
        let n_columns = self.header.len();
        let mut table = comfy_table::Table::new();
        table
            .load_preset(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(self.header.clone());
        for r in &self.rows {
            let cells: Vec<&str> = (0..n_columns)
                .map(|i| r.get(i).map_or("", String::as_str))
                .collect();
            table.add_row(cells);
        }
        for (i, column) in table.column_iter_mut().enumerate() {
            // Two spaces between columns: one on each side, none before the first.
            column.set_padding((u16::from(i > 0), 1));
            if self.is_numeric_column(i) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut out = String::new();
        for line in table.lines() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// Whether column `i` holds numbers: at least one data cell is a number and the others are
    /// numbers or placeholders.
    fn is_numeric_column(&self, i: usize) -> bool {
        let cells = || {
            self.rows
                .iter()
                .map(move |r| r.get(i).map_or("", String::as_str))
        };
        cells().any(is_number) && cells().all(|c| is_number(c) || is_placeholder(c))
    }
}

/// A number, with or without a sign, unit or percent sign: `12`, `-3.5`, `48.00 GB/s`, `1.92×`,
/// `100.0%`, `3 µs`, `1,024`. Text that only starts with a digit (`4 nodes (rack r1)`,
/// `0-17`, `8:00`, a list `0,1,2,3`) is not.
fn is_number(cell: &str) -> bool {
    let unsigned = cell.trim_start_matches(['+', '-', '−']);
    let Some(first) = unsigned.chars().next() else {
        return false;
    };
    let (number, unit) = unsigned
        .split_once(' ')
        .map_or((unsigned, ""), |(n, u)| (n, u));
    let digits = number
        .trim_end_matches(['%', '×', 'x'])
        .trim_end_matches(char::is_alphabetic);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, "0"));
    let mut groups = whole.split(',');
    let first_group = groups.next().unwrap_or("");
    first.is_ascii_digit()
        && (1..=if whole.contains(',') { 3 } else { usize::MAX }).contains(&first_group.len())
        && first_group.chars().all(|c| c.is_ascii_digit())
        && groups.all(|g| g.len() == 3 && g.chars().all(|c| c.is_ascii_digit()))
        && fraction.chars().all(|c| c.is_ascii_digit())
        && unit
            .chars()
            .all(|c| c.is_alphabetic() || c == '/' || c == '%')
}

/// A cell that says "no number here" and does not decide a column's alignment.
fn is_placeholder(cell: &str) -> bool {
    matches!(
        cell.trim(),
        "" | "-" | "—" | "n/a" | "unlimited" | "unbounded"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(header: &[&str], rows: &[&[&str]]) -> String {
        let mut t = Table::new(header);
        for r in rows {
            t.row(r.iter().map(|c| (*c).to_owned()).collect());
        }
        t.render()
    }

    #[test]
    fn numbers_right_text_left_two_spaces_between() {
        let got = table(
            &["job", "ranks", "busbw", "example"],
            &[
                &["job-a", "32", "48.00 GB/s", "n-000/rail0 -> t0"],
                &["b", "1024", "5.1 GB/s", "x"],
            ],
        );
        let want = "\
job    ranks       busbw  example
job-a     32  48.00 GB/s  n-000/rail0 -> t0
b       1024    5.1 GB/s  x
";
        assert_eq!(got, want);
    }

    #[test]
    fn a_column_mixing_numbers_and_text_is_left_aligned() {
        let got = table(
            &["figure", "value"],
            &[
                &["bandwidth", "48.00 GB/s"],
                &["flows", "1408 (512 across the fabric)"],
            ],
        );
        let want = "\
figure     value
bandwidth  48.00 GB/s
flows      1408 (512 across the fabric)
";
        assert_eq!(got, want);
    }

    #[test]
    fn placeholders_and_missing_cells_leave_a_column_numeric() {
        let got = table(
            &["a", "count"],
            &[&["x", "-"], &["y", "7"], &["z"], &["w", "unlimited"]],
        );
        let want = "a      count\nx          -\ny          7\nz\nw  unlimited\n";
        assert_eq!(got, want);
    }

    #[test]
    fn long_cells_are_never_wrapped_and_multi_line_cells_keep_their_lines() {
        let long = "w".repeat(400);
        let got = table(&["k", "v"], &[&["a", &long], &["b", "one\ntwo"]]);
        assert_eq!(got, format!("k  v\na  {long}\nb  one\n   two\n"));
    }

    #[test]
    fn numbers_and_not_numbers() {
        for n in [
            "12",
            "-3.5",
            "+1.7%",
            "48.00 GB/s",
            "1.92×",
            "100.0%",
            "3 µs",
            "1,024",
            "12,345.5",
            "1 GiB",
            "4x",
            "12k",
        ] {
            assert!(is_number(n), "{n}");
        }
        for s in [
            "",
            "-",
            "rail0",
            "0-17",
            "8:00",
            "4 nodes (rack r1)",
            "1408 (512 across)",
            "t0-g0-s0",
            "2 x 8",
            "0,1,2,3",
            "1.2.3",
        ] {
            assert!(!is_number(s), "{s}");
        }
    }

    #[test]
    fn only_a_header() {
        assert_eq!(table(&["name", "n"], &[]), "name  n\n");
    }
}
