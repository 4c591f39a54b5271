//! Minimal SVG charts: line charts (linear or log x) and grouped bar charts, with axes, ticks
//! and a legend. Numbers are printed with fixed precision so output is deterministic.

use std::fmt::Write;

/// Colours for series, in order (Okabe–Ito, readable by colour-blind people).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
];

/// Dash patterns by series, so that lines lying on top of each other stay visible.
const DASHES: [&str; 8] = ["", "7 3", "2 2", "9 3 2 3", "4 4", "1 3", "12 4", "5 2 1 2"];

const W: f64 = 760.0;
const H: f64 = 340.0;
const LEFT: f64 = 68.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 32.0;
const BOTTOM: f64 = 50.0;

/// One line of a line chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// Escape text for XML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick label with enough decimals to tell ticks `step` apart.
fn fmt_tick_step(v: f64, step: f64) -> String {
    if step > 0.0 && step < 1.0 && v.abs() < 1.0e4 {
        let decimals = (0..7)
            .find(|&d| {
                let scaled = step * 10f64.powi(d);
                (scaled - scaled.round()).abs() < 1e-6
            })
            .unwrap_or(6) as usize;
        return format!("{v:.decimals$}");
    }
    fmt_tick(v)
}

fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".to_owned()
    } else if a >= 1.0e6 {
        format!("{:.1}M", v / 1.0e6)
    } else if a >= 1.0e4 {
        format!("{:.0}k", v / 1.0e3)
    } else if a >= 100.0 || (a >= 1.0 && v.fract() == 0.0) {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// "Nice" ticks covering [lo, hi].
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let raw = (hi - lo) / n as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).ceil() * step;
    let mut out = Vec::new();
    let mut v = start;
    while v <= hi + step * 1e-9 && out.len() < 50 {
        out.push(v);
        v += step;
    }
    out
}

fn frame(out: &mut String, title: &str, x_label: &str, y_label: &str) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="13">"#
    );
    let _ = write!(
        out,
        r#"<text x="{}" y="18" font-size="15" font-weight="bold">{}</text>"#,
        LEFT,
        esc(title)
    );
    let _ = write!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + (W - LEFT - RIGHT) / 2.0,
        H - 8.0,
        esc(x_label)
    );
    let _ = write!(
        out,
        r#"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + (H - TOP - BOTTOM) / 2.0,
        esc(y_label)
    );
}

/// The legend: a swatch (a line in the series' dash pattern, or a block for bars) and the label,
/// wrapped onto a second line when long.
fn legend(out: &mut String, labels: &[&str], lines: bool) {
    let mut y = TOP + 8.0;
    for (i, l) in labels.iter().enumerate() {
        let x = W - RIGHT + 12.0;
        let colour = PALETTE[i % PALETTE.len()];
        if lines {
            let _ = write!(
                out,
                r#"<line x1="{x:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="2.4" stroke-dasharray="{}"/>"#,
                x + 22.0,
                y - 4.0,
                y - 4.0,
                DASHES[i % DASHES.len()]
            );
        } else {
            let _ = write!(
                out,
                r#"<rect x="{x:.1}" y="{:.1}" width="14" height="10" fill="{colour}"/>"#,
                y - 10.0
            );
        }
        // Up to two lines of about 24 characters, broken at a space or `+`.
        let mut parts: Vec<String> = Vec::new();
        let mut cur = String::new();
        for word in l.split_inclusive([' ', '+']) {
            if cur.chars().count() + word.chars().count() > 24 && !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
            }
            cur.push_str(word);
        }
        parts.push(cur);
        for (k, p) in parts.iter().enumerate() {
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
                x + 28.0,
                y + 15.0 * k as f64,
                esc(p.trim_end())
            );
        }
        y += 15.0 * parts.len() as f64 + 5.0;
    }
}

/// A vertical marker on a line chart: x value and label.
#[derive(Clone, Debug)]
pub struct Marker {
    /// Where, in x units.
    pub x: f64,
    /// What it marks.
    pub label: String,
}

/// A line chart. With `log_x`, x values ≤ 0 are dropped and the axis is log10. A linear x axis
/// is padded by 2% on each side, so that a line standing on the first or last x value (a CDF of
/// identical values) is not hidden under the axis. `markers` draw labelled dashed verticals.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
    y_range: Option<(f64, f64)>,
    markers: &[Marker],
) -> String {
    let tx = |x: f64| if log_x { x.log10() } else { x };
    let pts = || {
        series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!log_x || *x > 0.0))
    };
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in pts() {
        x0 = x0.min(tx(x));
        x1 = x1.max(tx(x));
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if let Some((a, b)) = y_range {
        (y0, y1) = (a, b);
    } else {
        y0 = y0.min(0.0);
        if y1 <= y0 {
            y1 = y0 + 1.0;
        }
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if !log_x {
        let pad = (x1 - x0) * 0.02;
        (x0, x1) = (x0 - pad, x1 + pad);
    }
    let px = |x: f64| LEFT + (tx(x) - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - (y - y0) / (y1 - y0) * (H - TOP - BOTTOM);
    let mut out = String::new();
    frame(&mut out, title, x_label, y_label);
    // Axes and grid.
    let _ = write!(out, r##"<g stroke="#ccc">"##);
    for t in ticks(y0, y1, 5) {
        let _ = write!(
            out,
            r#"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}"/>"#,
            W - RIGHT,
            py(t),
            py(t)
        );
    }
    out.push_str("</g>");
    let yt = ticks(y0, y1, 5);
    let y_step = if yt.len() > 1 { yt[1] - yt[0] } else { 1.0 };
    for &t in &yt {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 4.0,
            py(t) + 4.0,
            fmt_tick_step(t, y_step)
        );
    }
    let xt: Vec<f64> = if log_x {
        (x0.floor() as i32..=x1.ceil() as i32)
            .map(|e| 10f64.powi(e))
            .collect()
    } else {
        ticks(x0, x1, 6)
    };
    let x_step = if log_x || xt.len() < 2 {
        1.0
    } else {
        xt[1] - xt[0]
    };
    for t in xt {
        let x = px(t);
        if !(LEFT - 0.5..=W - RIGHT + 0.5).contains(&x) {
            continue;
        }
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#999"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            H - BOTTOM,
            H - BOTTOM + 4.0,
            H - BOTTOM + 16.0,
            fmt_tick_step(t, x_step)
        );
    }
    let _ = write!(
        out,
        r##"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#333"/><line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{:.1}" stroke="#333"/>"##,
        W - RIGHT,
        H - BOTTOM,
        H - BOTTOM,
        H - BOTTOM
    );
    for m in markers {
        let x = px(m.x);
        if !(LEFT..=W - RIGHT).contains(&x) {
            continue;
        }
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{:.1}" stroke="#555" stroke-dasharray="3 3"/><text x="{:.1}" y="{:.1}" font-size="11" fill="#555">{}</text>"##,
            H - BOTTOM,
            x + 3.0,
            TOP + 10.0,
            esc(&m.label)
        );
    }
    for (i, s) in series.iter().enumerate() {
        let mut d = String::new();
        for &(x, y) in s
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!log_x || *x > 0.0))
        {
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if d.is_empty() { "M" } else { " L" },
                px(x),
                py(y.clamp(y0, y1))
            );
        }
        let _ = write!(
            out,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}"/>"#,
            PALETTE[i % PALETTE.len()],
            DASHES[i % DASHES.len()]
        );
    }
    let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
    legend(&mut out, &labels, true);
    out.push_str("</svg>");
    out
}

/// A grouped bar chart: `groups` along x, one bar per series in each group.
pub fn bar_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    groups: &[String],
    series: &[(String, Vec<f64>)],
) -> String {
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1.0);
    // The axis ends on a tick at or above the tallest bar, so no bar rises past the top line.
    let y1 = nice_top(max);
    let py = |y: f64| H - BOTTOM - y / y1 * (H - TOP - BOTTOM);
    let mut out = String::new();
    frame(&mut out, title, x_label, y_label);
    for t in ticks(0.0, y1, 5) {
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#ccc"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            py(t),
            py(t),
            LEFT - 4.0,
            py(t) + 4.0,
            fmt_tick(t)
        );
    }
    let gw = (W - LEFT - RIGHT) / groups.len().max(1) as f64;
    let bw = gw * 0.8 / series.len().max(1) as f64;
    for (g, name) in groups.iter().enumerate() {
        let gx = LEFT + gw * g as f64;
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            gx + gw / 2.0,
            H - BOTTOM + 16.0,
            esc(name)
        );
        for (s, (_, values)) in series.iter().enumerate() {
            let v = values.get(g).copied().unwrap_or(0.0);
            let _ = write!(
                out,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                gx + gw * 0.1 + bw * s as f64,
                py(v),
                bw,
                H - BOTTOM - py(v),
                PALETTE[s % PALETTE.len()]
            );
        }
    }
    let _ = write!(
        out,
        r##"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#333"/>"##,
        W - RIGHT,
        H - BOTTOM,
        H - BOTTOM
    );
    let labels: Vec<&str> = series.iter().map(|(l, _)| l.as_str()).collect();
    legend(&mut out, &labels, false);
    out.push_str("</svg>");
    out
}

/// The first tick of [`ticks`]' step for `[0, max]` at or above `max`.
fn nice_top(max: f64) -> f64 {
    let t = ticks(0.0, max, 5);
    let step = if t.len() > 1 { t[1] - t[0] } else { max };
    let last = t.last().copied().unwrap_or(max);
    if last >= max - 1e-9 {
        last
    } else {
        last + step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_tell_ticks_apart() {
        assert_eq!(fmt_tick_step(1.05, 0.05), "1.05");
        assert_eq!(fmt_tick_step(1.1, 0.05), "1.10");
        assert_eq!(fmt_tick_step(0.4, 0.2), "0.4");
        assert_eq!(fmt_tick_step(0.25, 0.25), "0.25");
        assert_eq!(fmt_tick_step(200.0, 100.0), "200");
    }

    #[test]
    fn ticks_are_nice_and_cover_the_range() {
        assert_eq!(
            ticks(0.0, 1.0, 5),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        let t = ticks(0.0, 730.0, 6);
        assert_eq!(t.first(), Some(&0.0));
        assert!(t.last().unwrap() <= &730.0 && t.len() >= 4);
    }

    #[test]
    fn charts_escape_labels_and_are_deterministic() {
        let s = vec![Series {
            label: "a<b".into(),
            points: vec![(1.0, 0.1), (10.0, 0.5), (100.0, 1.0)],
        }];
        let a = line_chart("t", "x", "y", &s, true, Some((0.0, 1.0)), &[]);
        assert_eq!(
            a,
            line_chart("t", "x", "y", &s, true, Some((0.0, 1.0)), &[])
        );
        assert!(a.contains("a&lt;b") && a.starts_with("<svg") && a.ends_with("</svg>"));
        let b = bar_chart(
            "t",
            "x",
            "y",
            &["0".into(), "1".into()],
            &[("p".into(), vec![3.0, 4.0])],
        );
        assert_eq!(b.matches("<rect").count(), 2 + 1);
    }

    #[test]
    fn bars_never_rise_past_the_top_gridline() {
        // 19 jobs: ticks 0, 5, 10, 15 would end below the bar; the axis must reach 20.
        assert_eq!(nice_top(19.0), 20.0);
        assert_eq!(nice_top(15.0), 15.0);
        let b = bar_chart("t", "x", "y", &["0".into()], &[("p".into(), vec![19.0])]);
        assert!(b.contains(">20</text>"), "{b}");
    }

    #[test]
    fn a_vertical_cdf_at_the_first_x_is_inside_the_plot() {
        let s = vec![
            Series {
                label: "all ones".into(),
                points: vec![(1.0, 0.0), (1.0, 1.0)],
            },
            Series {
                label: "spread".into(),
                points: vec![(1.0, 0.0), (2.0, 1.0)],
            },
        ];
        let c = line_chart("t", "x", "y", &s, false, Some((0.0, 1.0)), &[]);
        // The first path starts right of the y axis (x = LEFT), not on it.
        let d = c.split("<path d=\"M").nth(1).unwrap();
        let x: f64 = d.split(',').next().unwrap().parse().unwrap();
        assert!(x > LEFT + 1.0, "{x}");
        assert!(
            c.contains("stroke-dasharray=\"7 3\""),
            "second series is dashed"
        );
    }
}
