//! `railyard fabric collective`, `fabric compare`, `fabric ecmp` and `fabric mtu`: what a
//! placement gets from the network (alone or beside the running jobs), a measured nccl-tests run
//! beside the prediction, ECMP collisions as balls into bins, and the RoCE MTU rule.

use std::path::PathBuf;

use clap::ArgGroup;
use fabric::ecmp::{expected_max_load, simulate_max_load, MAX_EXACT_BALLS};
use fabric::{
    Collective, Comparison, Fabric, HashFn, HotLinkGroup, JobTraffic, RoutedJob, RoutingConfig,
    SwitchSeeds,
};
use serde::Serialize;
use topology::{roce, NodeId};

// The parts of `JobArgs` that `simulate` shares, where callers building a `JobArgs` find them.
pub use crate::args::{NcclArgs, RoutingArg};
use crate::cluster_arg::{load_cluster, ClusterArgs};
use crate::error::CliError;
use crate::output::OutputFormat;
use formats::input::read_text;
use formats::nccl_tests;
use ops::collective_report::{collective_text, gb, pct, CollectiveReport, RunningJobReport};
use ops::place;
use report::table::Table;

/// `--hash`: the switches' ECMP hash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum HashArg {
    /// Independent per switch (a strong mixer keyed by each switch's seed), like real switches.
    #[default]
    Mix,
    /// CRC-32 with per-switch seeds: linear, so tiers stay correlated (hash polarisation).
    Crc32,
    /// XOR of the tuple's words: weak spreading.
    Xor,
}

impl From<HashArg> for HashFn {
    fn from(h: HashArg) -> Self {
        match h {
            HashArg::Mix => HashFn::Mix,
            HashArg::Crc32 => HashFn::Crc32,
            HashArg::Xor => HashFn::Xor,
        }
    }
}

/// Which ranks, which collective, which fabric settings: shared by `collective` and `compare`.
#[derive(Clone, Debug, clap::Args)]
#[command(group(ArgGroup::new("ranks").required(true).args(["placement", "job"])))]
pub struct JobArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The placement (`railyard place --output json`): pods in rank order; each GPU is a rank.
    #[arg(long, value_name = "FILE")]
    pub placement: Option<PathBuf>,
    /// A job file instead of a placement: placed first exactly as `railyard place` does.
    #[arg(long, value_name = "FILE")]
    pub job: Option<PathBuf>,
    /// With --job: running jobs, as `railyard place --state` reads them; each running
    /// multi-node job runs a Ring AllReduce beside the new job.
    // `conflicts_with` rather than `requires = "job"`: clap lets any member of the required
    // group satisfy `requires` (clap-rs/clap#4707), so `--placement` would.
    #[arg(long, value_name = "FILE", conflicts_with = "placement")]
    pub state: Vec<PathBuf>,
    /// allreduce, allgather, reducescatter or alltoall.
    #[arg(long, value_name = "NAME", value_parser = parse_collective)]
    pub collective: Collective,
    /// How switches spread flows over equal-cost paths.
    #[arg(long, value_enum, value_name = "MODE", default_value = "ecmp")]
    pub routing: RoutingArg,
    #[command(flatten)]
    pub nccl: NcclArgs,
    /// Seed for QP numbers and switch hash seeds.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// The switches' ECMP hash.
    #[arg(long, value_enum, value_name = "FN", default_value = "mix")]
    pub hash: HashArg,
    /// Give every switch the same hash seed (shows hash polarisation).
    #[arg(long)]
    pub same_seed: bool,
}

/// Arguments of `fabric collective`.
#[derive(Debug, clap::Args)]
pub struct CollectiveArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Buffer size of the headline time: bytes, or with K, M, G (powers of 1024).
    #[arg(long, value_name = "BYTES", default_value = "1G", value_parser = parse_size)]
    pub size: u64,
    /// An nccl-tests style sweep from MIN to MAX bytes, doubling (`-b MIN -e MAX -f 2`).
    #[arg(long, value_name = "MIN:MAX", value_parser = parse_sizes)]
    pub sizes: Option<(u64, u64)>,
    /// Output format (wide prints the sweep as railyard's table: readable sizes and channels)
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Arguments of `fabric compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// nccl-tests output (`all_reduce_perf …` as printed).
    #[arg(value_name = "LOG")]
    pub log: PathBuf,
    #[command(flatten)]
    pub job: JobArgs,
    /// Output format (wide: as text)
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Arguments of `fabric ecmp`.
#[derive(Debug, clap::Args)]
pub struct EcmpArgs {
    /// Equal-cost paths (next hops).
    #[arg(long, value_name = "M", value_parser = clap::value_parser!(u32).range(1..))]
    pub paths: u32,
    /// Connections hashed onto them.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub flows: u32,
    /// QPs per connection; each QP is hashed on its own.
    #[arg(long, value_name = "Q", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub qps: u32,
    /// Trials.
    #[arg(long, value_name = "T", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub trials: u32,
    /// Seed.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// The hash.
    #[arg(long, value_enum, value_name = "FN", default_value = "mix")]
    pub hash: HashArg,
    /// Output format (wide: as text)
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Arguments of `fabric mtu`.
#[derive(Debug, clap::Args)]
pub struct MtuArgs {
    /// The netdev (Ethernet interface) MTU, bytes.
    #[arg(long, value_name = "N", value_parser = parse_netdev_mtu)]
    pub netdev_mtu: u32,
    /// Output format (wide: as text)
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// A collective name (clap value parser).
fn parse_collective(s: &str) -> Result<Collective, String> {
    Collective::from_name(&s.to_ascii_lowercase()).ok_or_else(|| {
        format!(
            "unknown collective `{s}`; expected allreduce, allgather, reducescatter or alltoall"
        )
    })
}

/// Bytes from `123`, `4K`, `256M`, `1G` (powers of 1024; clap value parser).
pub fn parse_size(s: &str) -> Result<u64, String> {
    fabric::parse_bytes(s).filter(|&b| b > 0).ok_or_else(|| {
        format!("expected a positive byte count such as 1048576, 256M or 1G, got `{s}`")
    })
}

/// `MIN:MAX` sizes (clap value parser).
fn parse_sizes(s: &str) -> Result<(u64, u64), String> {
    let (lo, hi) = s.split_once(':').ok_or("expected MIN:MAX, e.g. 8:8G")?;
    let (lo, hi) = (parse_size(lo)?, parse_size(hi)?);
    if lo > hi {
        return Err(format!("MIN {lo} is above MAX {hi}"));
    }
    Ok((lo, hi))
}

/// `fabric collective`.
pub fn collective(args: &CollectiveArgs) -> Result<String, CliError> {
    let report = collective_report(args)?;
    Ok(args
        .output
        .render(&report, |wide| collective_text(&report, wide)))
}

/// A job priced on the fabric: its routed Ring, its tuner input and the shared solve.
struct Priced {
    cluster_name: String,
    cfg: RoutingConfig,
    routed: RoutedJob,
    nodes: usize,
    input: fabric::nccl::TunerInput,
    contention: fabric::Contention,
    running: Vec<(String, usize)>,
    hot_links: Vec<HotLinkGroup>,
    max_link_utilization: f64,
}

/// Route the job (and the running jobs of `--state`, job IDs 1…), solve them together and
/// derive the tuner's input: what `collective` and `compare` report.
fn price(args: &JobArgs) -> Result<Priced, CliError> {
    let nccl = args.nccl.config()?;
    let cluster = load_cluster(&args.cluster)?;
    let state = live::files(&args.state, live::Input::State, &args.cluster.live)?;
    let placed = ops::ranks::placed_ranks(
        &cluster,
        args.placement.as_deref(),
        args.job.as_deref(),
        &state,
    )?;
    let pairs = placed
        .whole_gpus("the fabric model needs whole GPUs (a fraction has no NIC of its own)")?;
    let (file, pods, preempted) = (placed.file, placed.pods, placed.preempted);
    let nodes_gpus: Vec<(topology::NodeId, usize)> =
        pods.iter().map(|p| (p.node, p.gpu_ids.len())).collect();
    fabric::check_flow_budget(
        &cluster,
        &nodes_gpus,
        args.collective,
        nccl.qps_per_connection,
    )
    .map_err(|m| CliError::input("--nccl", m))?;
    let cfg = RoutingConfig {
        mode: args.routing.into(),
        nccl,
        hash: args.hash.into(),
        seeds: if args.same_seed {
            SwitchSeeds::Same
        } else {
            SwitchSeeds::PerSwitch
        },
        seed: args.seed,
    };
    let mut fabric = Fabric::new(&cluster);
    let job = JobTraffic {
        ranks: fabric::ranks_of(&pairs),
        collective: args.collective,
    };
    let routed = fabric
        .route(&job, &cfg, 0)
        .map_err(|e| CliError::input(&file, e))?;
    let (mut running, mut routed_running) = (Vec::new(), Vec::new());
    for (name, pods) in place::running_multi_node_jobs(&state, &cluster, &preempted)? {
        let ranks = fabric::ranks_of(&pods);
        let traffic = JobTraffic {
            ranks,
            collective: Collective::AllReduce,
        };
        let id = routed_running.len() as u64 + 1;
        let r = fabric
            .route(&traffic, &cfg, id)
            .map_err(|e| CliError::input("--state", format!("running job `{name}`: {e}")))?;
        running.push((name, traffic.ranks.len()));
        routed_running.push(r);
    }
    let contention = fabric::contention(&fabric, &routed, &routed_running);
    let input = fabric::tuner_input_with(&mut fabric, &job, &cfg, &routed_running)
        .map_err(|e| CliError::input(&file, e))?;
    let mut nodes: Vec<NodeId> = pods.iter().map(|p| p.node).collect();
    nodes.sort_unstable();
    nodes.dedup();
    Ok(Priced {
        cluster_name: cluster.name.clone(),
        cfg,
        nodes: nodes.len(),
        input,
        hot_links: fabric::hot_link_groups(&fabric, &contention.shared.load_gbps),
        max_link_utilization: fabric.max_link_utilization(&contention.shared.load_gbps),
        routed,
        contention,
        running,
    })
}

/// The report of `fabric collective`, for callers that want the figures.
pub fn collective_report(args: &CollectiveArgs) -> Result<CollectiveReport, CliError> {
    let p = price(&args.job)?;
    let c = &p.contention;
    let fabric_sweep = |sizes: &[u64]| fabric::sweep(&p.input, &p.cfg, sizes);
    let busbw = c.new_shared_gbps / 8.0;
    let ideal = p.routed.ideal_busbw_gbps / 8.0;
    Ok(CollectiveReport {
        railyard_version: env!("CARGO_PKG_VERSION"),
        command: crate::args::command_line(),
        cluster: p.cluster_name.clone(),
        collective: p.routed.collective.name().to_owned(),
        routing: format!("{:?}", args.job.routing).to_ascii_lowercase(),
        nccl: args.job.nccl.nccl.clone(),
        qps: p.cfg.qps(),
        channels: p.routed.channels,
        ranks: p.routed.n_ranks,
        nodes: p.nodes,
        flows: p.routed.flows.len(),
        network_flows: p.routed.network_flows,
        algbw_gb_s: busbw / p.routed.collective.bus_factor(p.routed.n_ranks),
        busbw_gb_s: busbw,
        busbw_alone_gb_s: c.new_alone_gbps / 8.0,
        ideal_busbw_gb_s: ideal,
        efficiency: if ideal > 0.0 { busbw / ideal } else { 1.0 },
        max_link_utilization: p.max_link_utilization,
        latency_us: p.routed.latency_ns / 1000.0,
        at_size: fabric_sweep(&[args.size]).into_iter().next(),
        sweep: args
            .sizes
            .map(|(lo, hi)| fabric_sweep(&fabric::doubling_sizes(lo, hi)))
            .unwrap_or_default(),
        running: p
            .running
            .iter()
            .zip(c.before_gbps.iter().zip(&c.after_gbps))
            .map(|((name, ranks), (&b, &a))| RunningJobReport {
                name: name.clone(),
                ranks: *ranks,
                busbw_before_gb_s: b / 8.0,
                busbw_after_gb_s: a / 8.0,
                slowdown: if a > 0.0 { b / a } else { f64::INFINITY },
            })
            .collect(),
        hot_links: p.hot_links,
    })
}

/// The report of `fabric compare`.
#[derive(Debug, Serialize)]
pub struct CompareReport {
    /// The nccl-tests log.
    pub log: String,
    /// Cluster name.
    pub cluster: String,
    /// Ranks (GPUs).
    pub ranks: usize,
    /// Per measured row: measured and predicted busbw and the relative error.
    pub rows: Vec<Comparison>,
}

/// `fabric compare`: a measured nccl-tests run beside the prediction, row by row.
pub fn compare(args: &CompareArgs) -> Result<String, CliError> {
    let log = args.log.display().to_string();
    let measured = nccl_tests::read(&log, &read_text(&args.log)?)?;
    let p = price(&args.job)?;
    let r = CompareReport {
        rows: fabric::compare(&p.input, &p.cfg, &measured),
        log,
        cluster: p.cluster_name,
        ranks: p.routed.n_ranks,
    };
    if args.output.is_structured() {
        return Ok(args.output.render(&r, |_| String::new()));
    }
    let mut out = format!(
        "{} beside railyard's prediction for {} ranks on {} (out-of-place busbw)\n\n",
        r.log, r.ranks, r.cluster
    );
    let mut t = Table::new(&["line", "size", "measured", "predicted", "error", "pick"]);
    for c in &r.rows {
        t.row(vec![
            c.line.to_string(),
            report::fmt::fmt_bytes(c.size_bytes),
            gb(c.measured_busbw_gb_s),
            gb(c.predicted_busbw_gb_s),
            format!("{:+.1}%", c.relative_error * 100.0),
            format!("{}/{}", c.algorithm.name(), c.protocol.name()),
        ]);
    }
    out.push_str(&t.render());
    Ok(out)
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
    /// Mean over trials of ideal ÷ most loaded path: the bandwidth fraction a flow gets.
    pub efficiency: f64,
}

/// `fabric ecmp`.
pub fn ecmp(args: &EcmpArgs) -> Result<String, CliError> {
    let hash = args.hash.into();
    let work = u64::from(args.flows) * u64::from(args.qps) * u64::from(args.trials);
    if work > 500_000_000 {
        return Err(CliError::Usage(format!(
            "--trials: flows × qps × trials = {work} hashes, more than the limit of 500000000"
        )));
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
        efficiency: s.efficiency,
    };
    Ok(match args.output {
        OutputFormat::Json | OutputFormat::Yaml => args.output.render(&r, |_| String::new()),
        OutputFormat::Text | OutputFormat::Wide => {
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
                "\nefficiency {} (mean over trials of ideal ÷ most loaded path)\n",
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

/// A netdev MTU that carries at least the smallest RoCE MTU (a clap value parser: exit 2).
fn parse_netdev_mtu(s: &str) -> Result<u32, String> {
    let v: u32 = s
        .parse()
        .map_err(|_| format!("expected a whole number of bytes, got `{s}`"))?;
    match roce::active_mtu(v) {
        Some(_) => Ok(v),
        None => Err(format!(
            "{v} bytes fits no RoCE MTU; the smallest, 256, needs a netdev MTU of at least {}",
            256 + roce::ROCE_OVERHEAD_BYTES
        )),
    }
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
        OutputFormat::Json | OutputFormat::Yaml => args.output.render(&r, |_| String::new()),
        OutputFormat::Text | OutputFormat::Wide => {
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
    fn sizes() {
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("256m").unwrap(), 256 << 20);
        assert!(parse_size("0").is_err());
        assert!(parse_size("1X").is_err());
        assert_eq!(parse_sizes("8:8G").unwrap(), (8, 8 << 30));
        assert!(parse_sizes("8G:8").is_err());
        assert!(parse_sizes("8").is_err());
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
