//! The report of `railyard fabric collective` and its text form: what a placement gets from the
//! network, alone or beside the running jobs, with NCCL's pick and the hot links.

use fabric::{HotLinkGroup, SweepRow};
use formats::nccl_tests;
use report::fmt::{fmt_bytes, trim_float};
use report::table::Table;
use serde::Serialize;

/// A running job in the report of `fabric collective --job … --state …`.
#[derive(Debug, Serialize)]
pub struct RunningJobReport {
    /// Its name in the state.
    pub name: String,
    /// Ranks (GPUs).
    pub ranks: usize,
    /// Bus bandwidth before the new job starts, GB/s.
    pub busbw_before_gb_s: f64,
    /// Bus bandwidth once it runs, GB/s.
    pub busbw_after_gb_s: f64,
    /// before / after (1 = not slowed).
    pub slowdown: f64,
}

/// The report of `fabric collective`.
#[derive(Debug, Serialize)]
pub struct CollectiveReport {
    /// The railyard version that computed it.
    pub railyard_version: &'static str,
    /// The command line as typed (empty when called as a library).
    pub command: Vec<String>,
    /// Cluster name.
    pub cluster: String,
    /// The collective.
    pub collective: String,
    /// ecmp or adaptive.
    pub routing: String,
    /// The `--nccl` settings given (NCCL's defaults for the rest).
    pub nccl: Vec<String>,
    /// QPs per connection.
    pub qps: u32,
    /// NCCL channels.
    pub channels: u32,
    /// Ranks (GPUs).
    pub ranks: usize,
    /// Hosts the ranks are on.
    pub nodes: usize,
    /// Flows modelled (NVLink and network).
    pub flows: usize,
    /// Flows crossing the switch fabric (one per QP).
    pub network_flows: usize,
    /// Algorithm bandwidth, GB/s (beside the running jobs, if any).
    pub algbw_gb_s: f64,
    /// nccl-tests bus bandwidth, GB/s (beside the running jobs, if any).
    pub busbw_gb_s: f64,
    /// Bus bandwidth alone on the fabric, GB/s.
    pub busbw_alone_gb_s: f64,
    /// Bus bandwidth alone with perfect load balance, GB/s.
    pub ideal_busbw_gb_s: f64,
    /// busbw / ideal.
    pub efficiency: f64,
    /// Highest link utilisation at the achieved paces.
    pub max_link_utilization: f64,
    /// Loaded link ports by tier and direction, hottest first.
    pub hot_links: Vec<HotLinkGroup>,
    /// Worst one-way latency between ranks that exchange data, µs.
    pub latency_us: f64,
    /// NCCL's tuner at `--size`: algorithm, protocol, time and bandwidths.
    pub at_size: Option<SweepRow>,
    /// The `--sizes` sweep (empty without it).
    pub sweep: Vec<SweepRow>,
    /// The running multi-node jobs of `--state` and what the new job does to them.
    pub running: Vec<RunningJobReport>,
}

/// A duration given in µs with a readable unit.
pub fn fmt_us(us: f64) -> String {
    duration(us, trim_float)
}

/// A duration given in µs with a readable unit, the number written by `digits`.
pub fn duration(us: f64, digits: fn(f64) -> String) -> String {
    if us >= 1e6 {
        format!("{} s", digits(us / 1e6))
    } else if us >= 1e3 {
        format!("{} ms", digits(us / 1e3))
    } else {
        format!("{} µs", digits(us))
    }
}

/// A share as a percentage with one decimal.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// A bandwidth in GB/s with two decimals.
pub fn gb(x: f64) -> String {
    format!("{x:.2} GB/s")
}

/// The text form of `fabric collective` (`wide`: the sweep as railyard's table, not nccl-tests').
pub fn collective_text(r: &CollectiveReport, wide: bool) -> String {
    let mut out = format!(
        "{} over {} ranks on {} nodes of {}, {} routing, {} QP{} per connection, {} channels\n\n",
        r.collective,
        r.ranks,
        r.nodes,
        r.cluster,
        r.routing,
        r.qps,
        if r.qps == 1 { "" } else { "s" },
        r.channels
    );
    let mut t = Table::new(&["figure", "value"]);
    // One choice heads the table (the tuner's pick at `--size`); the routed collective follows.
    let routed = ["AllToAll", "Ring"][usize::from(r.collective != "alltoall")];
    let mut row = |k: &str, v: String| t.row(vec![k.replace("ROUTED", routed), v]);
    if let Some(s) = &r.at_size {
        let pick = format!("{}/{}", s.algorithm.name(), s.protocol.name());
        row(&format!("NCCL's pick at {}", fmt_bytes(s.size_bytes)), pick);
        row("time", fmt_us(s.time_us));
        row("algorithm bandwidth", gb(s.algbw_gb_s));
        row("bus bandwidth", gb(s.busbw_gb_s));
    }
    row("ROUTED bus bandwidth", gb(r.busbw_gb_s));
    if !r.running.is_empty() {
        row("ROUTED bus bandwidth alone", gb(r.busbw_alone_gb_s));
    }
    row("ideal ROUTED bus bandwidth", gb(r.ideal_busbw_gb_s));
    row("ROUTED efficiency", pct(r.efficiency));
    row("max link utilization", pct(r.max_link_utilization));
    row("worst latency", fmt_us(r.latency_us));
    let flows = format!("{} ({} across the fabric)", r.flows, r.network_flows);
    row("flows", flows);
    out.push_str(&t.render());
    if !r.running.is_empty() {
        out.push_str("\nrunning jobs (Ring AllReduce each) before and after this job starts\n");
        let mut t = Table::new(&["job", "ranks", "busbw before", "busbw after", "slowdown"]);
        for j in &r.running {
            t.row(vec![
                j.name.clone(),
                j.ranks.to_string(),
                gb(j.busbw_before_gb_s),
                gb(j.busbw_after_gb_s),
                format!("{:.2}×", j.slowdown),
            ]);
        }
        out.push_str(&t.render());
    }
    if !r.hot_links.is_empty() {
        out.push_str("\nhot links by tier and direction\n");
        let mut t = Table::new(&["tier", "dir", "ports", "at max", "max", "mean", "example"]);
        for h in &r.hot_links {
            t.row(vec![
                h.tier.to_string(),
                if h.up { "up" } else { "down" }.to_owned(),
                h.loaded_ports.to_string(),
                h.ports_at_max.to_string(),
                pct(h.max_utilization),
                pct(h.mean_utilization),
                h.example.clone(),
            ]);
        }
        out.push_str(&t.render());
    }
    if !r.sweep.is_empty() && !wide {
        out.push_str(&format!("\n{}", nccl_tests::write_table(&r.sweep)));
    } else if !r.sweep.is_empty() {
        // Wide: railyard's table, sizes readable, times to three figures, and the channels.
        let mut t = Table::new(&[
            "size", "bytes", "algo", "proto", "channels", "time", "algbw", "busbw",
        ]);
        for s in &r.sweep {
            t.row(vec![
                report::fmt::fmt_bytes(s.size_bytes),
                s.size_bytes.to_string(),
                s.algorithm.name().to_owned(),
                s.protocol.name().to_owned(),
                r.channels.to_string(),
                duration(s.time_us, report::fmt::sig3),
                gb(s.algbw_gb_s),
                gb(s.busbw_gb_s),
            ]);
        }
        out.push_str(&format!(
            "\nsweep (NCCL tuner's pick per size)\n{}",
            t.render()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(fmt_us(3.0), "3 µs");
        assert_eq!(fmt_us(49_045.73), "49.046 ms");
        assert_eq!(fmt_us(2_102_504.668), "2.103 s");
        assert_eq!(duration(85_203.0, report::fmt::sig3), "85.2 ms");
    }
}
