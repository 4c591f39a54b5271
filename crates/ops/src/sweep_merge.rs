//! A sweep's cell outputs merged: one row per cell of the manifest (its swept axes, its status
//! and its headline figures) as a text table, the same as JSON, and an HTML page with the table
//! and, per swept axis, the mean figures of the cells at each of its values. Only the directory
//! is read, so a local run and a Slurm array over the same grid merge to the same bytes. A
//! cell that failed is listed with its error; one whose file is absent is `missing`, one whose
//! hash is not the manifest's is `stale` (run on other inputs); the others still merge.

use std::fmt::Write as _;
use std::path::Path;

use formats::FormatError;
use serde::Serialize;

use crate::sweep::{cell_path, read_cell, Manifest, MANIFEST};

/// The figures of each cell in the table: (title, the summary's field, how it is shown).
const FIGURES: [(&str, &str, Shown); 8] = [
    ("completed", "completed", Shown::Count),
    ("avg JCT h", "avg_jct_s", Shown::Hours),
    ("p99 JCT h", "p99_jct_s", Shown::Hours),
    ("avg wait h", "avg_wait_s", Shown::Hours),
    ("p99 wait h", "p99_wait_s", Shown::Hours),
    (
        "util (arrivals)",
        "gpu_utilization_arrivals",
        Shown::Percent,
    ),
    ("makespan h", "makespan_s", Shown::Hours),
    ("net slowdown", "avg_network_slowdown", Shown::Ratio),
];

#[derive(Clone, Copy)]
enum Shown {
    Count,
    Hours,
    Percent,
    Ratio,
}

impl Shown {
    fn show(self, v: f64) -> String {
        match self {
            Shown::Count => report::fmt::fmt_count(v as u64),
            Shown::Hours => format!("{:.2}", v / 3600.0),
            Shown::Percent => format!("{:.1}%", v * 100.0),
            Shown::Ratio => format!("{v:.3}"),
        }
    }
    /// The value a chart draws (hours for times).
    fn plotted(self, v: f64) -> f64 {
        match self {
            Shown::Hours => v / 3600.0,
            Shown::Percent => v * 100.0,
            _ => v,
        }
    }
}

/// One cell as merged.
#[derive(Clone, Debug, Serialize)]
pub struct MergedCell {
    /// Its index.
    pub cell: usize,
    /// Its value on every axis.
    pub axes: crate::sweep::CellAxes,
    /// `ok`, `failed`, `missing` or `stale`.
    pub status: &'static str,
    /// The run's summary, when `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<serde_json::Value>,
    /// Why not, otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A merged sweep.
#[derive(Clone, Debug, Serialize)]
pub struct Merged {
    /// The axes with more than one value.
    pub swept: Vec<String>,
    /// Every cell in order.
    pub cells: Vec<MergedCell>,
}

/// Merge `dir` and write its files ([`Merged::write`]): the table followed by `footer`, and,
/// when some cells have no result, one line saying how many (the CLI's error after the table).
pub fn merge_and_write(dir: &Path, footer: &str) -> Result<(String, Option<String>), FormatError> {
    let m = merge(dir)?;
    m.write(dir)?;
    let failed = match m.problems().len() {
        0 => None,
        n => Some(format!(
            "{}: {n} of {} cells have no result",
            dir.display(),
            m.cells.len()
        )),
    };
    Ok((m.table() + footer, failed))
}

/// The cells of the sweep in `dir`, as its manifest lists them.
pub fn merge(dir: &Path) -> Result<Merged, FormatError> {
    let path = dir.join(MANIFEST);
    let text = formats::input::read_text(&path)?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
        FormatError::input(
            path.display(),
            format!("not a sweep manifest (written by `railyard sweep`): {e}"),
        )
    })?;
    let cells = manifest
        .cells
        .iter()
        .map(|m| {
            let (status, summary, error) = match read_cell(dir, m.cell) {
                None if cell_path(dir, m.cell).exists() => (
                    "failed",
                    None,
                    Some(format!(
                        "{}: not a cell output (unreadable JSON)",
                        cell_path(dir, m.cell).display()
                    )),
                ),
                None => ("missing", None, Some("no output (not run yet?)".to_owned())),
                Some(c) if c.input_hash != m.input_hash => (
                    "stale",
                    None,
                    Some("its output was made from other inputs; run the sweep again".to_owned()),
                ),
                Some(c) => match (c.summary, c.error) {
                    (Some(s), _) => ("ok", Some(s), None),
                    (None, e) => ("failed", None, e.or_else(|| Some("no summary".to_owned()))),
                },
            };
            MergedCell {
                cell: m.cell,
                axes: m.axes.clone(),
                status,
                summary,
                error,
            }
        })
        .collect();
    Ok(Merged {
        swept: manifest.swept,
        cells,
    })
}

impl Merged {
    /// The cells that are not `ok` (index, status, why), in order.
    pub fn problems(&self) -> Vec<(usize, &'static str, &str)> {
        self.cells
            .iter()
            .filter(|c| c.status != "ok")
            .map(|c| (c.cell, c.status, c.error.as_deref().unwrap_or("")))
            .collect()
    }

    /// The columns naming a cell: its index, then its swept axes.
    fn label_columns(&self) -> Vec<&str> {
        std::iter::once("cell")
            .chain(self.swept.iter().map(String::as_str))
            .collect()
    }

    /// The text table, then one line per cell that is not `ok`.
    pub fn table(&self) -> String {
        let mut header = self.label_columns();
        header.push("status");
        header.extend(FIGURES.iter().map(|f| f.0));
        let mut t = report::table::Table::new(&header);
        for c in &self.cells {
            let mut row = vec![c.cell.to_string()];
            row.extend(self.swept.iter().map(|a| c.axes.value(a)));
            row.push(c.status.to_owned());
            row.extend(FIGURES.iter().map(|&(_, field, shown)| {
                figure(c, field).map_or_else(|| "-".to_owned(), |v| shown.show(v))
            }));
            t.row(row);
        }
        let mut out = t.render();
        for (k, status, why) in self.problems() {
            let _ = writeln!(out, "cell {k} {status}: {why}");
        }
        out
    }

    /// The HTML page: the table, then per swept axis the mean of each time figure over the
    /// `ok` cells at each value of the axis.
    pub fn html(&self) -> String {
        use report::svg::esc;
        let n_ok = self.cells.iter().filter(|c| c.status == "ok").count();
        let mut out = String::from(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>railyard sweep</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}td.l,th.l{text-align:left}.bad{color:#b00}</style></head><body>\n",
        );
        let _ = writeln!(
            out,
            "<h1>Sweep: {} cells, {n_ok} ok</h1>\n<p>Swept: {}.</p>",
            self.cells.len(),
            if self.swept.is_empty() {
                "nothing (one cell)".to_owned()
            } else {
                esc(&self.swept.join(" × "))
            }
        );
        out.push_str("<table><tr>");
        let labels = self.label_columns();
        for h in labels.iter().chain(&["status"]) {
            let _ = write!(out, "<th class=\"l\">{}</th>", esc(h));
        }
        for f in FIGURES {
            let _ = write!(out, "<th>{}</th>", esc(f.0));
        }
        out.push_str("</tr>\n");
        for c in &self.cells {
            let _ = write!(out, "<tr><td class=\"l\">{}</td>", c.cell);
            for a in &self.swept {
                let _ = write!(out, "<td class=\"l\">{}</td>", esc(&c.axes.value(a)));
            }
            let class = if c.status == "ok" { "l" } else { "l bad" };
            let _ = write!(out, "<td class=\"{class}\">{}</td>", c.status);
            for &(_, field, shown) in &FIGURES {
                let v = figure(c, field).map_or_else(|| "-".to_owned(), |v| shown.show(v));
                let _ = write!(out, "<td>{}</td>", esc(&v));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
        let problems = self.problems();
        if !problems.is_empty() {
            out.push_str("<h2>Cells without a result</h2><ul>\n");
            for (k, status, why) in problems {
                let _ = writeln!(
                    out,
                    "<li class=\"bad\">cell {k} {status}: {}</li>",
                    esc(why)
                );
            }
            out.push_str("</ul>\n");
        }
        for axis in &self.swept {
            let values = self.values_of(axis);
            let series: Vec<(String, Vec<f64>)> = FIGURES
                .iter()
                .filter(|f| matches!(f.2, Shown::Hours) && f.1 != "makespan_s")
                .map(|&(title, field, shown)| {
                    let means = values
                        .iter()
                        .map(|v| {
                            let xs: Vec<f64> = self
                                .cells
                                .iter()
                                .filter(|c| &c.axes.value(axis) == v)
                                .filter_map(|c| figure(c, field))
                                .map(|x| shown.plotted(x))
                                .collect();
                            if xs.is_empty() {
                                0.0
                            } else {
                                xs.iter().sum::<f64>() / xs.len() as f64
                            }
                        })
                        .collect();
                    (title.to_owned(), means)
                })
                .collect();
            let _ = writeln!(
                out,
                "<h2>By {}</h2>\n{}",
                esc(axis),
                report::svg::bar_chart(
                    &format!("Mean over the ok cells, by {axis}"),
                    axis,
                    "hours",
                    &values,
                    &series
                )
            );
        }
        out.push_str("</body></html>\n");
        out
    }

    /// The values of `axis` in the order the cells first show them.
    fn values_of(&self, axis: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in &self.cells {
            let v = c.axes.value(axis);
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    /// Write `table.txt`, `report.html` and `merged.json` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), FormatError> {
        let json = serde_json::to_string_pretty(self).expect("plain data serializes") + "\n";
        for (name, text) in [
            ("table.txt", self.table()),
            ("report.html", self.html()),
            ("merged.json", json),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|source| FormatError::Io {
                path: path.display().to_string(),
                source,
            })?;
        }
        Ok(())
    }
}

/// A numeric figure of an `ok` cell's summary.
fn figure(c: &MergedCell, field: &str) -> Option<f64> {
    c.summary.as_ref()?.get(field)?.as_f64()
}
