//! Plain-text tables with aligned columns.

/// A table: a header row and data rows; numbers are right-aligned, text left-aligned.
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

    /// Render with two spaces between columns.
    pub fn render(&self) -> String {
        let n = self.header.len();
        let mut width = vec![0usize; n];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().take(n).enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let numeric = |s: &str| {
            !s.is_empty()
                && s.chars().all(|c| {
                    c.is_ascii_digit()
                        || ".,-+%×µ/ ".contains(c)
                        || c.is_alphabetic() && s.starts_with(|d: char| d.is_ascii_digit())
                })
        };
        let mut out = String::new();
        for (ri, r) in std::iter::once(&self.header).chain(&self.rows).enumerate() {
            let mut line = String::new();
            for (i, w) in width.iter().enumerate() {
                let c = r.get(i).map_or("", String::as_str);
                let pad = w - c.chars().count();
                if i > 0 {
                    line.push_str("  ");
                }
                if ri > 0 && numeric(c) {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                } else {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}
