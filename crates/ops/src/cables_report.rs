//! The cable plan rendered for people: links grouped by tier, speed, length and cable (`wide`:
//! every link with both ends), the bill of materials, the power and the warnings.

use std::collections::BTreeMap;

use report::fmt::{count_of, fmt_count, fmt_gbps, trim_float};
use report::table::Table;

use crate::cables::{CableKind, CablePlan, LinkCables};

/// The plan of cluster `cluster_name` as text; `with_layout` says whether lengths may come
/// from a rack layout.
pub fn render_text(cluster_name: &str, plan: &CablePlan, with_layout: bool, wide: bool) -> String {
    let cables: u64 = plan.links.iter().map(|l| u64::from(l.cables)).sum();
    let mut out = format!(
        "cables for {}: {}, {}; lengths {}\n\n",
        cluster_name,
        count_of(plan.links.len(), "link"),
        count_of(cables as usize, "cable"),
        if with_layout {
            "from the layout where both ends are placed, else per-tier defaults"
        } else {
            "per-tier defaults (give --layout for measured runs)"
        }
    );
    out.push_str("links\n");
    out.push_str(&if wide {
        every_link(&plan.links)
    } else {
        links_grouped(&plan.links)
    });
    out.push_str("\nbill of materials (buy: the stock length at or above each run)\n");
    // The lengths to buy: the `buy` column of the links table, not the runs' `length`.
    let mut t = Table::new(&["type", "speed", "buy", "count", "W/end", "W total"]);
    let mut total_w = 0.0;
    for b in &plan.bom {
        total_w += b.power_total_w;
        t.row(vec![
            b.cable.label().to_owned(),
            fmt_gbps(b.cable_gbps),
            b.length_m
                .map_or_else(|| "-".to_owned(), |m| format!("{} m", trim_float(m))),
            fmt_count(b.count),
            trim_float(b.power_per_end_w),
            fmt_count(b.power_total_w.round() as u64),
        ]);
    }
    out.push_str(&t.render());
    out.push_str(&format!(
        "cable power, both ends: {} W (approximate; see `cables.rs` GENERATIONS for sources)\n",
        fmt_count(total_w.round() as u64)
    ));
    if !plan.warnings.is_empty() {
        out.push('\n');
        for w in &plan.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
    }
    out
}

const SOURCE: [&str; 2] = ["default", "layout"];

/// Links grouped by tier, speed, cables per link, length and cable: one row per group.
fn links_grouped(links: &[LinkCables]) -> String {
    type Key = (u8, u64, u64, u64, u64, Option<u64>, CableKind, bool);
    let mut groups: BTreeMap<Key, u64> = BTreeMap::new();
    for l in links {
        *groups
            .entry((
                l.tier,
                (l.link_gbps * 1000.0) as u64,
                u64::from(l.cables),
                (l.cable_gbps * 1000.0) as u64,
                (l.length_m * 1000.0) as u64,
                l.buy_length_m.map(|m| (m * 1000.0) as u64),
                l.cable,
                l.measured,
            ))
            .or_default() += 1;
    }
    let mut t = Table::new(&[
        "tier",
        "links",
        "link",
        "cables/link",
        "cable",
        "length",
        "buy",
        "source",
        "type",
    ]);
    for ((tier, link_gbps, n_cables, cable_gbps, len, buy, cable, measured), n) in &groups {
        t.row(vec![
            tier.to_string(),
            fmt_count(*n),
            fmt_gbps(*link_gbps as f64 / 1000.0),
            n_cables.to_string(),
            fmt_gbps(*cable_gbps as f64 / 1000.0),
            format!("{} m", trim_float(*len as f64 / 1000.0)),
            buy.map_or_else(
                || "-".to_owned(),
                |m| format!("{} m", trim_float(m as f64 / 1000.0)),
            ),
            SOURCE[usize::from(*measured)].to_owned(),
            cable.label().to_owned(),
        ]);
    }
    t.render()
}

/// Every link in plan order with both ends (lower end: `node/rail N` or a switch).
fn every_link(links: &[LinkCables]) -> String {
    let mut t = Table::new(&[
        "tier",
        "lower end",
        "upper end",
        "link",
        "cables",
        "cable",
        "length",
        "buy",
        "source",
        "type",
    ]);
    for l in links {
        t.row(vec![
            l.tier.to_string(),
            l.lower.clone(),
            l.upper.clone(),
            fmt_gbps(l.link_gbps),
            l.cables.to_string(),
            fmt_gbps(l.cable_gbps),
            format!("{} m", trim_float(l.length_m)),
            l.buy_length_m
                .map_or_else(|| "-".to_owned(), |m| format!("{} m", trim_float(m))),
            SOURCE[usize::from(l.measured)].to_owned(),
            l.cable.label().to_owned(),
        ]);
    }
    t.render()
}
