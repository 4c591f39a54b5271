//! `railyard cables plan`: the cable plan of `ops::cables` for a cluster, as a table or JSON.

use std::collections::BTreeMap;
use std::path::PathBuf;

use formats::input::read_text;
use ops::cables::{parse_layout, plan, CableKind, CablePlan};
use report::fmt::{fmt_count, fmt_gbps, trim_float};
use topology::Cluster;

use crate::cluster_arg::{load_cluster, ClusterArgs};
use crate::error::CliError;
use crate::output::OutputFormat;
use report::table::Table;

/// Arguments of `cables plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Rack layout (YAML; format in the README): rack positions and what sits in each rack.
    #[arg(long, value_name = "FILE")]
    pub layout: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// `cables plan`.
pub fn plan_command(args: &PlanArgs) -> Result<String, CliError> {
    let cluster = load_cluster(&args.cluster)?;
    let layout = match &args.layout {
        Some(path) => {
            let file = path.display().to_string();
            Some(parse_layout(&file, &read_text(path)?)?)
        }
        None => None,
    };
    let plan = plan(&cluster, layout.as_ref());
    Ok(args
        .output
        .render(&plan, |_| render_text(&cluster, &plan, layout.is_some())))
}

fn render_text(cluster: &Cluster, plan: &CablePlan, with_layout: bool) -> String {
    let cables: u64 = plan.links.iter().map(|l| u64::from(l.cables)).sum();
    let mut out = format!(
        "cables for {}: {} links, {} cables; lengths {}\n\n",
        cluster.name,
        fmt_count(plan.links.len() as u64),
        fmt_count(cables),
        if with_layout {
            "from the layout where both ends are placed, else per-tier defaults"
        } else {
            "per-tier defaults (give --layout for measured runs)"
        }
    );
    // Links grouped by tier, speed, length and cable.
    type Key = (u8, u64, u64, u64, u64, CableKind, bool);
    let mut groups: BTreeMap<Key, u64> = BTreeMap::new();
    for l in &plan.links {
        *groups
            .entry((
                l.tier,
                (l.link_gbps * 1000.0) as u64,
                u64::from(l.cables),
                (l.cable_gbps * 1000.0) as u64,
                (l.length_m * 1000.0) as u64,
                l.cable,
                l.measured,
            ))
            .or_default() += 1;
    }
    out.push_str("links\n");
    let mut t = Table::new(&[
        "tier",
        "links",
        "link",
        "cables/link",
        "cable",
        "length",
        "source",
        "type",
    ]);
    for ((tier, link_gbps, n_cables, cable_gbps, len, cable, measured), n) in &groups {
        t.row(vec![
            tier.to_string(),
            fmt_count(*n),
            fmt_gbps(*link_gbps as f64 / 1000.0),
            n_cables.to_string(),
            fmt_gbps(*cable_gbps as f64 / 1000.0),
            format!("{} m", trim_float(*len as f64 / 1000.0)),
            if *measured { "layout" } else { "default" }.to_owned(),
            cable.label().to_owned(),
        ]);
    }
    out.push_str(&t.render());
    out.push_str("\nbill of materials\n");
    let mut t = Table::new(&["type", "speed", "length", "count", "W/end", "W total"]);
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
