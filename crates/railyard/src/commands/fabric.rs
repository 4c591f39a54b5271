//! `railyard fabric collective`, `fabric ecmp` and `fabric mtu`: what a placement gets from the
//! network, ECMP collisions as balls into bins, and the RoCE MTU rule.

use std::path::PathBuf;

use clap::ArgGroup;
use fabric::ecmp::{expected_max_load, simulate_max_load, MAX_EXACT_BALLS};
use fabric::{
    Collective, Fabric, HashFn, JobTraffic, Rank, RoutingConfig, RoutingMode, SwitchSeeds,
};
use serde::Serialize;
use topology::roce;

use crate::cluster_arg::{load_cluster, ClusterArgs};
use crate::error::CliError;
use crate::output::{to_json, OutputFormat};
use crate::table::Table;
use formats::placement;
use ops::place::{self, PlaceInputs};
use report::fmt::trim_float;

/// Arguments of `fabric collective`.
#[derive(Debug, clap::Args)]
#[command(group(ArgGroup::new("ranks").required(true).args(["placement", "job"])))]
pub struct CollectiveArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The placement (`railyard place --output json`): pods in rank order; each GPU is a rank.
    #[arg(long, value_name = "FILE")]
    pub placement: Option<PathBuf>,
    /// A job file instead of a placement: placed first exactly as `railyard place` does.
    #[arg(long, value_name = "FILE")]
    pub job: Option<PathBuf>,
    /// With --job: running jobs, as `railyard place --state` reads them.
    // `conflicts_with` rather than `requires = "job"`: clap lets any member of the required
    // group satisfy `requires` (clap-rs/clap#4707), so `--placement` would.
    #[arg(long, value_name = "FILE", conflicts_with = "placement")]
    pub state: Vec<PathBuf>,
    /// allreduce, allgather, reducescatter or alltoall.
    #[arg(long, value_name = "NAME")]
    pub collective: String,
    /// ecmp (hash the 5-tuple per flow) or adaptive (spray evenly over all shortest paths).
    #[arg(long, value_name = "MODE", default_value = "ecmp")]
    pub routing: String,
    /// QPs per connection (NCCL_IB_QPS_PER_CONNECTION); each QP is its own flow.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub qps: u32,
    /// Buffer size for the completion-time estimate: bytes, or with K, M, G (powers of 1024).
    #[arg(long, value_name = "BYTES", default_value = "1G")]
    pub size: String,
    /// Seed for QP numbers and switch hash seeds.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// The switches' ECMP hash: crc32, xor or mix.
    #[arg(long, value_name = "FN", default_value = "crc32")]
    pub hash: String,
    /// Give every switch the same hash seed (shows hash polarisation).
    #[arg(long)]
    pub same_seed: bool,
    /// How many of the hottest links to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Arguments of `fabric ecmp`.
#[derive(Debug, clap::Args)]
pub struct EcmpArgs {
    /// Equal-cost paths (next hops).
    #[arg(long, value_name = "M")]
    pub paths: u32,
    /// Connections hashed onto them.
    #[arg(long, value_name = "N")]
    pub flows: u32,
    /// QPs per connection; each QP is hashed on its own.
    #[arg(long, value_name = "Q", default_value_t = 1)]
    pub qps: u32,
    /// Trials.
    #[arg(long, value_name = "T", default_value_t = 10_000)]
    pub trials: u32,
    /// Seed.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// The hash: crc32, xor or mix.
    #[arg(long, value_name = "FN", default_value = "crc32")]
    pub hash: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Arguments of `fabric mtu`.
#[derive(Debug, clap::Args)]
pub struct MtuArgs {
    /// The netdev (Ethernet interface) MTU, bytes.
    #[arg(long, value_name = "N")]
    pub netdev_mtu: u32,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// A hot link in the JSON report.
#[derive(Debug, Serialize)]
pub struct HotLink {
    /// Sending end.
    pub from: String,
    /// Receiving end.
    pub to: String,
    /// Tier of the link's upper switch (0 = NIC to leaf).
    pub tier: u8,
    /// Load over capacity at the job's achieved pace.
    pub utilization: f64,
}

/// The report of `fabric collective`.
#[derive(Debug, Serialize)]
pub struct CollectiveReport {
    /// Cluster name.
    pub cluster: String,
    /// The collective.
    pub collective: String,
    /// ecmp or adaptive.
    pub routing: String,
    /// QPs per connection.
    pub qps: u32,
    /// Ranks (GPUs).
    pub ranks: usize,
    /// Hosts the ranks are on.
    pub nodes: usize,
    /// Flows modelled (NVLink and network).
    pub flows: usize,
    /// Flows crossing the switch fabric (one per QP).
    pub network_flows: usize,
    /// Algorithm bandwidth, GB/s.
    pub algbw_gb_s: f64,
    /// nccl-tests bus bandwidth, GB/s.
    pub busbw_gb_s: f64,
    /// Bus bandwidth with perfect load balance, GB/s.
    pub ideal_busbw_gb_s: f64,
    /// busbw / ideal.
    pub efficiency: f64,
    /// Highest link utilisation at the achieved pace.
    pub max_link_utilization: f64,
    /// The hottest link directions.
    pub hot_links: Vec<HotLink>,
    /// Worst one-way latency between ranks that exchange data, µs.
    pub latency_us: f64,
    /// Buffer size of the time estimate, bytes.
    pub size_bytes: u64,
    /// Alpha-beta time for `size_bytes`: latency steps × latency + size / algbw, µs.
    pub time_us: f64,
    /// Alpha-beta time for an 8-byte buffer (latency-bound), µs.
    pub small_message_time_us: f64,
}

fn parse_collective(s: &str) -> Result<Collective, CliError> {
    Collective::from_name(&s.to_ascii_lowercase()).ok_or_else(|| {
        CliError::input(
            "--collective",
            format!("unknown collective `{s}`; expected allreduce, allgather, reducescatter or alltoall"),
        )
    })
}

fn parse_routing(s: &str) -> Result<RoutingMode, CliError> {
    match s.to_ascii_lowercase().as_str() {
        "ecmp" => Ok(RoutingMode::Ecmp),
        "adaptive" => Ok(RoutingMode::Adaptive),
        _ => Err(CliError::input(
            "--routing",
            format!("unknown routing `{s}`; expected ecmp or adaptive"),
        )),
    }
}

fn parse_hash(s: &str) -> Result<HashFn, CliError> {
    match s.to_ascii_lowercase().as_str() {
        "crc32" => Ok(HashFn::Crc32),
        "xor" => Ok(HashFn::Xor),
        "mix" => Ok(HashFn::Mix),
        _ => Err(CliError::input(
            "--hash",
            format!("unknown hash `{s}`; expected crc32, xor or mix"),
        )),
    }
}

/// Bytes from `123`, `4K`, `256M`, `1G` (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, CliError> {
    let t = s.trim();
    let (digits, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => 0,
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let n: Option<u64> = digits.parse().ok();
    match n.and_then(|n| n.checked_mul(mult)) {
        Some(b) if b > 0 && mult > 0 => Ok(b),
        _ => Err(CliError::input(
            "--size",
            format!("expected a positive byte count such as 1048576, 256M or 1G, got `{s}`"),
        )),
    }
}

/// `fabric collective`.
pub fn collective(args: &CollectiveArgs) -> Result<String, CliError> {
    let report = collective_report(args)?;
    Ok(match args.output {
        OutputFormat::Json => to_json(&report),
        OutputFormat::Text => collective_text(&report),
    })
}

/// Most QPs per connection `fabric collective` takes (as `simulate --qps`).
pub const MAX_QPS: u32 = 64;

/// Most flows `fabric collective` routes (about 200 bytes each, and seconds per million to
/// solve): estimated from the ranks, nodes and `--qps` before any flow is made.
pub const MAX_FLOWS: u64 = 4_000_000;

/// The report of `fabric collective`, for callers that want the figures.
pub fn collective_report(args: &CollectiveArgs) -> Result<CollectiveReport, CliError> {
    let coll = parse_collective(&args.collective)?;
    let mode = parse_routing(&args.routing)?;
    let hash = parse_hash(&args.hash)?;
    let size = parse_size(&args.size)?;
    if args.qps == 0 || args.qps > MAX_QPS {
        return Err(CliError::input(
            "--qps",
            format!(
                "expected 1..={MAX_QPS} QPs per connection, got {}",
                args.qps
            ),
        ));
    }
    let cluster = load_cluster(&args.cluster)?;
    let (file, pods) = ranks_source(args, &cluster)?;
    let mut ranks: Vec<Rank> = Vec::new();
    for p in &pods {
        if p.gpus.fract() != 0.0 {
            return Err(CliError::input(
                &file,
                format!(
                    "rank {}: {} GPUs; the fabric model needs whole GPUs (a fraction has no NIC of its own)",
                    p.rank, p.gpus
                ),
            ));
        }
        ranks.extend(p.gpu_ids.iter().map(|&gpu| Rank { node: p.node, gpu }));
    }
    let mut nodes: Vec<u32> = pods.iter().map(|p| p.node.0).collect();
    nodes.sort_unstable();
    nodes.dedup();
    // Flows before they are made: AllToAll connects every ordered pair of nodes (PXN), a ring
    // each node to the next once per rail; each network connection has `qps` flows, and every
    // rank adds its NVLink traffic.
    let n_nodes = nodes.len() as u64;
    let rails = nodes
        .iter()
        .map(|&n| u64::from(cluster.node(topology::NodeId(n)).nics.rails))
        .max()
        .unwrap_or(1);
    let connections = match coll {
        Collective::AllToAll => n_nodes * n_nodes.saturating_sub(1),
        _ => n_nodes * rails,
    };
    let flows = connections
        .saturating_mul(u64::from(args.qps))
        .saturating_add(ranks.len() as u64);
    if flows > MAX_FLOWS {
        return Err(CliError::input(
            "--qps",
            format!(
                "{} over {} ranks on {n_nodes} nodes with {} QPs per connection makes about {flows} flows, more than the limit of {MAX_FLOWS}; use fewer QPs",
                coll.name(),
                ranks.len(),
                args.qps
            ),
        ));
    }
    let cfg = RoutingConfig {
        mode,
        nccl: fabric::NcclConfig {
            qps_per_connection: args.qps,
            ..fabric::NcclConfig::default()
        },
        hash,
        seeds: if args.same_seed {
            SwitchSeeds::Same
        } else {
            SwitchSeeds::PerSwitch
        },
        seed: args.seed,
    };
    let mut fabric = Fabric::new(&cluster);
    let job = JobTraffic {
        ranks,
        collective: coll,
    };
    let routed = fabric
        .route(&job, &cfg, 0)
        .map_err(|e| CliError::input(&file, e))?;
    let alloc = fabric.solve(&[&routed]);
    let r = fabric.job_result(&routed, alloc.busbw_gbps[0]);
    let hot = fabric.hot_links(&alloc.load_gbps, args.top);
    Ok(CollectiveReport {
        cluster: cluster.name.clone(),
        collective: coll.name().to_owned(),
        routing: match mode {
            RoutingMode::Ecmp => "ecmp",
            RoutingMode::Adaptive => "adaptive",
        }
        .to_owned(),
        qps: args.qps,
        ranks: r.n_ranks,
        nodes: nodes.len(),
        flows: routed.flows.len(),
        network_flows: routed.network_flows,
        algbw_gb_s: r.algbw_gb_s,
        busbw_gb_s: r.busbw_gb_s,
        ideal_busbw_gb_s: r.ideal_busbw_gb_s,
        efficiency: r.efficiency,
        max_link_utilization: fabric.max_link_utilization(&alloc.load_gbps),
        hot_links: hot
            .into_iter()
            .map(|h| HotLink {
                from: h.from,
                to: h.to,
                tier: h.tier,
                utilization: h.utilization,
            })
            .collect(),
        latency_us: r.latency_us,
        size_bytes: size,
        time_us: r.time_us(size as f64),
        small_message_time_us: r.time_us(8.0),
    })
}

/// The placed pods the collective runs on, and the file they come from: the placement file, or
/// the job placed by [`place::decide`] (the code path of `railyard place`).
fn ranks_source(
    args: &CollectiveArgs,
    cluster: &topology::Cluster,
) -> Result<(String, Vec<placement::ResolvedPod>), CliError> {
    match (&args.placement, &args.job) {
        (Some(p), None) => Ok((p.display().to_string(), placement::read(p, cluster)?)),
        (None, Some(job)) => {
            let file = job.display().to_string();
            let decided = place::decide(
                cluster,
                &PlaceInputs {
                    job,
                    state: &args.state,
                    queues: &[],
                    no_preempt: false,
                    flavors: &[],
                    options: sched::PlaceOptions::default(),
                },
            )?;
            if !decided.placed {
                return Err(CliError::input(
                    &file,
                    format!(
                        "job `{}` cannot be placed on {}: {}",
                        decided.job.as_deref().unwrap_or("?"),
                        cluster.name,
                        decided.reason.as_deref().unwrap_or("no reason given")
                    ),
                ));
            }
            let pods = placement::resolve(&file, &decided, cluster)?;
            Ok((file, pods))
        }
        _ => Err(CliError::input(
            "--placement/--job",
            "expected exactly one of --placement FILE and --job FILE",
        )),
    }
}

/// A duration given in µs with a readable unit.
fn fmt_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{} s", trim_float(us / 1e6))
    } else if us >= 1e3 {
        format!("{} ms", trim_float(us / 1e3))
    } else {
        format!("{} µs", trim_float(us))
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn collective_text(r: &CollectiveReport) -> String {
    let mut out = format!(
        "{} over {} ranks on {} nodes of {}, {} routing, {} QP{} per connection\n\n",
        r.collective,
        r.ranks,
        r.nodes,
        r.cluster,
        r.routing,
        r.qps,
        if r.qps == 1 { "" } else { "s" }
    );
    let mut t = Table::new(&["figure", "value"]);
    let rows: Vec<(&str, String)> = vec![
        ("algorithm bandwidth", format!("{:.2} GB/s", r.algbw_gb_s)),
        ("bus bandwidth", format!("{:.2} GB/s", r.busbw_gb_s)),
        (
            "ideal bus bandwidth",
            format!("{:.2} GB/s", r.ideal_busbw_gb_s),
        ),
        ("efficiency", pct(r.efficiency)),
        ("max link utilization", pct(r.max_link_utilization)),
        ("worst latency", fmt_us(r.latency_us)),
        (
            "time (alpha-beta)",
            format!("{} for {} bytes", fmt_us(r.time_us), r.size_bytes),
        ),
        (
            "small-message time",
            format!("{} for 8 bytes", fmt_us(r.small_message_time_us)),
        ),
        (
            "flows",
            format!("{} ({} across the fabric)", r.flows, r.network_flows),
        ),
    ];
    for (k, v) in rows {
        t.row(vec![k.to_owned(), v]);
    }
    out.push_str(&t.render());
    if !r.hot_links.is_empty() {
        out.push_str("\nhottest links\n");
        let mut t = Table::new(&["from", "to", "tier", "utilization"]);
        for h in &r.hot_links {
            t.row(vec![
                h.from.clone(),
                h.to.clone(),
                h.tier.to_string(),
                pct(h.utilization),
            ]);
        }
        out.push_str(&t.render());
    }
    out
}

/// The report of `fabric ecmp`.
#[derive(Debug, Serialize)]
pub struct EcmpReport {
    /// Paths.
    pub paths: u32,
    /// Connections.
    pub flows: u32,
    /// QPs per connection.
    pub qps: u32,
    /// Trials.
    pub trials: u32,
    /// Load of a path with perfect balance (flows / paths), in connections.
    pub ideal_load: f64,
    /// Mean load of the most loaded path, simulated, in connections.
    pub mean_max_load: f64,
    /// Median of the most loaded path's load.
    pub p50_max_load: f64,
    /// 99th percentile.
    pub p99_max_load: f64,
    /// Largest seen.
    pub worst_max_load: f64,
    /// Balls-into-bins expectation of the most loaded path's load (exact), when computed.
    pub expected_max_load: Option<f64>,
    /// ideal_load / mean_max_load: the bandwidth fraction the most loaded path leaves a flow.
    pub efficiency: f64,
}

/// `fabric ecmp`.
pub fn ecmp(args: &EcmpArgs) -> Result<String, CliError> {
    let hash = parse_hash(&args.hash)?;
    for (v, flag) in [
        (args.paths, "--paths"),
        (args.flows, "--flows"),
        (args.qps, "--qps"),
        (args.trials, "--trials"),
    ] {
        if v == 0 {
            return Err(CliError::input(flag, "expected at least 1, got 0"));
        }
    }
    let work = u64::from(args.flows) * u64::from(args.qps) * u64::from(args.trials);
    if work > 500_000_000 {
        return Err(CliError::input(
            "--trials",
            format!("flows × qps × trials = {work} hashes, more than the limit of 500000000"),
        ));
    }
    let s = simulate_max_load(
        args.paths,
        args.flows,
        args.qps,
        args.trials,
        args.seed,
        hash,
    );
    let ideal = f64::from(args.flows) / f64::from(args.paths);
    let r = EcmpReport {
        paths: args.paths,
        flows: args.flows,
        qps: args.qps,
        trials: args.trials,
        ideal_load: ideal,
        mean_max_load: s.mean,
        p50_max_load: s.p50,
        p99_max_load: s.p99,
        worst_max_load: s.max,
        expected_max_load: expected_max_load(args.paths, args.flows, args.qps),
        efficiency: ideal / s.mean,
    };
    Ok(match args.output {
        OutputFormat::Json => to_json(&r),
        OutputFormat::Text => {
            let mut out = format!(
                "{} connections × {} QP{} hashed onto {} paths, {} trials (real 5-tuple hash and RoCEv2 source ports)\n\n",
                r.flows,
                r.qps,
                if r.qps == 1 { "" } else { "s" },
                r.paths,
                r.trials
            );
            let mut t = Table::new(&["most loaded path", "connections"]);
            let f = |x: f64| format!("{x:.3}");
            t.row(vec!["mean (simulated)".into(), f(r.mean_max_load)]);
            t.row(vec![
                "mean (balls into bins, exact)".into(),
                r.expected_max_load
                    .map_or_else(|| format!("n/a above {MAX_EXACT_BALLS} balls"), f),
            ]);
            t.row(vec!["p50".into(), f(r.p50_max_load)]);
            t.row(vec!["p99".into(), f(r.p99_max_load)]);
            t.row(vec!["worst".into(), f(r.worst_max_load)]);
            t.row(vec!["perfect balance".into(), f(r.ideal_load)]);
            out.push_str(&t.render());
            out.push_str(&format!(
                "\nthe most loaded path leaves {} of a balanced share\n",
                pct(r.efficiency)
            ));
            out
        }
    })
}

/// The report of `fabric mtu`.
#[derive(Debug, Serialize)]
pub struct MtuReport {
    /// The netdev MTU given.
    pub netdev_mtu: u32,
    /// The RoCE (IB) MTU the kernel picks.
    pub active_mtu: u32,
    /// Smallest netdev MTU that keeps this active MTU.
    pub min_netdev_mtu: u32,
    /// Smallest netdev MTU for the largest RoCE MTU, 4096.
    pub netdev_mtu_for_4096: u32,
    /// IPv4 packet of a full RoCEv2 payload packet: IP 20 + UDP 8 + BTH 12 + payload + ICRC 4.
    pub ip_packet_bytes: u32,
    /// Ethernet frame (untagged): header 14 + IP packet + FCS 4.
    pub frame_bytes: u32,
    /// On the wire with preamble/SFD 8 and inter-frame gap 12.
    pub wire_bytes: u32,
    /// Payload over wire bytes.
    pub payload_efficiency: f64,
}

/// `fabric mtu`.
pub fn mtu(args: &MtuArgs) -> Result<String, CliError> {
    let Some(active) = roce::active_mtu(args.netdev_mtu) else {
        return Err(CliError::input(
            "--netdev-mtu",
            format!(
                "{} bytes fits no RoCE MTU; the smallest, 256, needs a netdev MTU of at least {}",
                args.netdev_mtu,
                256 + roce::ROCE_OVERHEAD_BYTES
            ),
        ));
    };
    let ip = active + 20 + 8 + 12 + 4;
    let frame = ip + 14 + 4;
    let wire = frame + 8 + 12;
    let r = MtuReport {
        netdev_mtu: args.netdev_mtu,
        active_mtu: active,
        min_netdev_mtu: active + roce::ROCE_OVERHEAD_BYTES,
        netdev_mtu_for_4096: 4096 + roce::ROCE_OVERHEAD_BYTES,
        ip_packet_bytes: ip,
        frame_bytes: frame,
        wire_bytes: wire,
        payload_efficiency: f64::from(active) / f64::from(wire),
    };
    Ok(match args.output {
        OutputFormat::Json => to_json(&r),
        OutputFormat::Text => {
            let mut t = Table::new(&["figure", "bytes"]);
            t.row(vec!["netdev MTU".into(), r.netdev_mtu.to_string()]);
            t.row(vec!["active RoCE MTU".into(), r.active_mtu.to_string()]);
            t.row(vec![
                "netdev MTU needed for it".into(),
                r.min_netdev_mtu.to_string(),
            ]);
            t.row(vec![
                "netdev MTU needed for 4096".into(),
                r.netdev_mtu_for_4096.to_string(),
            ]);
            t.row(vec!["IPv4 packet".into(), r.ip_packet_bytes.to_string()]);
            t.row(vec!["Ethernet frame".into(), r.frame_bytes.to_string()]);
            t.row(vec!["on the wire".into(), r.wire_bytes.to_string()]);
            let mut out = t.render();
            out.push_str(&format!(
                "\npayload efficiency {} (untagged IPv4 RoCEv2 packet with a BTH only)\n",
                pct(r.payload_efficiency)
            ));
            out
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(fmt_us(3.0), "3 µs");
        assert_eq!(fmt_us(49_045.73), "49.046 ms");
        assert_eq!(fmt_us(2_102_504.668), "2.103 s");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("256m").unwrap(), 256 << 20);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert!(parse_size("0").is_err());
        assert!(parse_size("1X").is_err());
        assert!(parse_size("-3").is_err());
    }

    #[test]
    fn mtu_frame_sizes() {
        let out = mtu(&MtuArgs {
            netdev_mtu: 9000,
            output: OutputFormat::Json,
        })
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["active_mtu"], 4096);
        assert_eq!(v["ip_packet_bytes"], 4140);
        assert_eq!(v["frame_bytes"], 4158);
        assert_eq!(v["min_netdev_mtu"], 4192);
    }
}
