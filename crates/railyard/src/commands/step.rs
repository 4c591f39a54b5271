//! `railyard fabric step`: one training step of a model under a parallel layout, priced on the
//! fabric (the `layout` crate decides; this file parses and prints).

use std::path::PathBuf;

use fabric::{Fabric, Rank, RoutingConfig};
use layout::{Optimizer, Precision, Recompute, Step, Training};
use report::fmt::fmt_bytes;
use report::table::Table;
use serde::Serialize;

use crate::args::{NcclArgs, RoutingArg};
use crate::cluster_arg::{load_cluster, ClusterArgs};
use crate::error::CliError;
use crate::output::OutputFormat;
use ops::place;

/// Arguments of `fabric step`.
#[derive(Debug, clap::Args)]
pub struct StepArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The model: a preset (megatron-1.7b … megatron-1t, megatron-162b, gpt3-175b, llama3-8b,
    /// llama3-70b, llama3-405b, mixtral-8x7b, deepseek-v3).
    #[arg(long, value_name = "NAME")]
    pub model: String,
    /// tp=N,pp=N,dp=N, optionally with cp=N, ep=N, vp=N and order=tp-cp-ep-dp-pp (sizes left out are 1).
    #[arg(long, value_name = "SPEC")]
    pub layout: String,
    /// Sequences per step [default: 4 micro-batches per pipeline stage on every DP rank].
    #[arg(long, value_name = "N")]
    pub global_batch: Option<u32>,
    /// Sequences per micro-batch.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub micro_batch: u32,
    /// Sequence length instead of the preset's.
    #[arg(long, value_name = "N")]
    pub seq: Option<u32>,
    /// bf16, fp16 or fp8.
    #[arg(long, value_parser = Precision::from_name, default_value = "bf16")]
    pub precision: Precision,
    /// dp (AllReduce), distributed (ReduceScatter + AllGather) or fsdp.
    #[arg(long, value_parser = Optimizer::from_name, default_value = "distributed")]
    pub optimizer: Optimizer,
    /// none, or full: every layer's forward again in the backward pass.
    #[arg(long, value_parser = Recompute::from_name, default_value = "none")]
    pub recompute: Recompute,
    /// Overlap DP gradient and parameter collectives with compute.
    #[arg(long)]
    pub overlap_dp: bool,
    /// Overlap TP collectives with the GEMMs.
    #[arg(long)]
    pub overlap_tp: bool,
    /// GEMM efficiency instead of the generation's calibrated one (0 < E ≤ 1).
    #[arg(long, value_name = "E")]
    pub efficiency: Option<f64>,
    /// The placement (`railyard place --output json`): ranks in order, each GPU a rank.
    #[arg(long, value_name = "FILE", conflicts_with = "job")]
    pub placement: Option<PathBuf>,
    /// A job file, placed first as `railyard place` does.
    #[arg(long, value_name = "FILE")]
    pub job: Option<PathBuf>,
    /// With --job: running jobs (`railyard place --state`), each a Ring AllReduce beside it.
    #[arg(long, value_name = "FILE", requires = "job")]
    pub state: Vec<PathBuf>,
    /// How switches spread flows over equal-cost paths.
    #[arg(long, value_enum, value_name = "MODE", default_value = "ecmp")]
    pub routing: RoutingArg,
    #[command(flatten)]
    pub nccl: NcclArgs,
    /// Output format (wide adds the example group and hot links of each communicator).
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// The report of `fabric step`.
#[derive(Debug, Serialize)]
struct StepReport {
    railyard_version: &'static str,
    cluster: String,
    model: String,
    layout: String,
    /// Where the ranks come from.
    ranks_from: String,
    global_batch: u32,
    step: Step,
    advice: Vec<layout::Advice>,
}

/// `fabric step`.
pub fn step(args: &StepArgs) -> Result<String, CliError> {
    let nccl = args.nccl.config()?;
    let cluster = load_cluster(&args.cluster)?;
    let mut t = Training::from_flags(&args.model, &args.layout)
        .map_err(|e| CliError::input(&e.field, &e.message))?;
    t.model.seq = args.seq.unwrap_or(t.model.seq);
    let t = Training {
        global_batch: args
            .global_batch
            .unwrap_or(Training::default_global_batch(&t.layout, args.micro_batch)),
        micro_batch: args.micro_batch,
        precision: args.precision,
        optimizer: args.optimizer,
        recompute: args.recompute,
        overlap_dp: args.overlap_dp,
        overlap_tp: args.overlap_tp,
        ..t
    };
    let gpus = t.layout.gpus();
    if args.placement.is_none() && args.job.is_none() {
        let note = format!("the first {gpus} in cluster order, no --placement or --job");
        let ranks = layout::first_gpus(&cluster, usize::try_from(gpus).unwrap_or(usize::MAX));
        if (ranks.len() as u64) < gpus {
            let msg = format!("needs {gpus} GPUs; {} has {}", cluster.name, ranks.len());
            return Err(CliError::input("--layout", msg));
        }
        return finish(args, &cluster, &t, note, &ranks, nccl, &[]);
    }
    let state = live::files(&args.state, live::Input::State, &args.cluster.live)?;
    let placed = ops::ranks::placed_ranks_for(
        &cluster,
        args.placement.as_deref(),
        args.job.as_deref(),
        &state,
        Some(&t),
    )?;
    let pairs = placed.whole_gpus("a layout needs whole GPUs")?;
    let (ranks_from, preempted) = (placed.file, placed.preempted);
    let running = place::running_multi_node_jobs(&state, &cluster, &preempted)?;
    finish(
        args,
        &cluster,
        &t,
        ranks_from,
        &fabric::ranks_of(&pairs),
        nccl,
        &running,
    )
}

/// A running job of `--state`: its name and its pods' GPUs.
type Running = (String, Vec<(topology::NodeId, Vec<u32>)>);

fn finish(
    args: &StepArgs,
    cluster: &topology::Cluster,
    t: &Training,
    ranks_from: String,
    ranks: &[Rank],
    nccl: fabric::NcclConfig,
    running: &[Running],
) -> Result<String, CliError> {
    let cfg = RoutingConfig {
        mode: args.routing.into(),
        nccl,
        ..RoutingConfig::default()
    };
    let mut fabric = Fabric::new(cluster);
    let mut routed = Vec::new();
    for (i, (name, pods)) in running.iter().enumerate() {
        let job = fabric::JobTraffic {
            ranks: fabric::ranks_of(pods),
            collective: fabric::Collective::AllReduce,
        };
        let r = fabric.route_flows(&job, &cfg, i as u64 + 1);
        routed
            .push(r.map_err(|e| CliError::input("--state", format!("running job `{name}`: {e}")))?);
    }
    let input = layout::StepInput {
        training: t,
        ranks,
        cfg: &cfg,
        running: &routed,
        efficiency: args.efficiency,
    };
    let step = layout::price_step(&mut fabric, input)
        .map_err(|e| CliError::input(&e.field, &e.message))?;
    let report = StepReport {
        railyard_version: env!("CARGO_PKG_VERSION"),
        cluster: cluster.name.clone(),
        model: t.model.name.clone(),
        layout: t.layout.label(),
        ranks_from,
        global_batch: t.global_batch,
        advice: layout::advise(cluster, t, &step),
        step,
    };
    Ok(args.output.render(&report, |wide| text(&report, wide)))
}

fn text(r: &StepReport, wide: bool) -> String {
    let s = &r.step;
    let mut out = format!(
        "{} on {}: {} ({} GPUs: {}), global batch {}\nstep {:.3} s = compute {:.3} s + bubble {:.3} s + exposed communication {:.3} s\n{:.0} tokens/s, {:.0} TFLOP/s per GPU, MFU {:.1}% ({}, peak {:.0} TFLOP/s, efficiency {})\n",
        r.model, r.cluster, r.layout, s.gpus, r.ranks_from, r.global_batch, s.step_s, s.compute_s, s.bubble_s, s.exposed_s,
        s.tokens_per_s, s.tflops_per_gpu, s.mfu * 100.0, s.arch, s.peak_tflops, s.efficiency
    );
    out.push_str("\nwhy it is slow, largest cost first:\n");
    for (i, a) in r.advice.iter().enumerate() {
        out.push_str(&format!(
            "{}. {} {:.3} s ({:.1}%): {}\n",
            i + 1,
            a.cost,
            a.seconds,
            a.share * 100.0,
            a.change
        ));
    }
    if r.advice.is_empty() {
        out.push_str("nothing beyond compute\n");
    }
    let mut head = vec![
        "kind",
        "collective",
        "groups",
        "bytes",
        "calls",
        "busbw GB/s",
        "ideal",
        "tier",
        "time s",
        "exposed s",
    ];
    if wide {
        head.extend(["algorithm", "first group", "hot links"]);
    }
    let mut table = Table::new(&head);
    for c in &s.comms {
        let mut row = vec![
            c.kind.name().to_owned(),
            c.op.name().to_owned(),
            format!("{} × {}", c.groups, c.group_size),
            fmt_bytes(c.bytes as u64),
            c.calls.to_string(),
            format!("{:.0}", c.busbw_gb_s),
            format!("{:.0}", c.ideal_busbw_gb_s),
            c.tier.clone(),
            format!("{:.3}", c.time_s),
            format!("{:.3}", c.exposed_s),
        ];
        if wide {
            row.extend([c.algorithm.clone(), c.group_summary(), c.hot_summary()]);
        }
        table.row(row);
    }
    out.push('\n');
    out.push_str(&table.render());
    out
}
