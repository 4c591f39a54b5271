//! `railyard place`: where a job would land on a cluster with running jobs, which tiers it
//! crosses, and whom it would preempt.

use std::path::PathBuf;

use topology::Cluster;

use ops::place::{decide, PlaceInputs};

use crate::cluster_arg::{load_cluster, ClusterArgs};
use crate::error::CliError;
use crate::output::OutputFormat;
use formats::placement::PlacementFile;
use report::fmt::{count_of, trim_float};
use report::table::Table;

/// Arguments of `place`.
#[derive(Debug, clap::Args)]
pub struct PlaceArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The job: a railyard job spec, a Kueue-annotated batch/v1 Job, or a KAI Pod/PodGroup.
    #[arg(long, value_name = "FILE")]
    pub job: PathBuf,
    /// Running jobs: a railyard state file, `place --output json` results (one or a list),
    /// `kubectl get pods -A -o json`, or `kubectl get workloads -A -o json`; repeat to combine.
    #[arg(long, value_name = "FILE")]
    pub state: Vec<PathBuf>,
    /// Queue files (KAI Queue, Kueue ClusterQueue/Cohort): enables limit checks and reclaim
    /// across queues by fair share; without them only lower-priority jobs of the job's own
    /// queue may be preempted.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub queues: Vec<PathBuf>,
    /// Never preempt; report "not placed" instead.
    #[arg(long)]
    pub no_preempt: bool,
    /// Kueue ResourceFlavor files (repeatable): the job is placed on the first flavor that fits,
    /// with the flavor's nodeLabels and tolerations (e.g. the Topology file, when it holds them).
    #[arg(long, value_name = "FILE")]
    pub flavor: Vec<PathBuf>,
    /// Kueue feature gates that change placement, as Kueue takes them: TASBalancedPlacement
    /// (default false), TASProfileMixed (default true), TASRespectNodeAffinityPreferred
    /// (default false), e.g. `TASBalancedPlacement=true`.
    #[arg(long, value_name = "NAME=BOOL,…", default_value = "")]
    pub feature_gates: String,
    /// Whose placement rules decide: `kueue` (TAS BestFit) or `kai` (KAI Scheduler's topology
    /// and node-placement plugins). Default: by the job's format (KAI objects → kai, Kueue
    /// objects and native specs → kueue).
    #[arg(long, value_name = "kueue|kai")]
    pub scheduler: Option<String>,
    /// KAI's placement strategy (SchedulingShard `placementStrategy`): `binpack` (default) or
    /// `spread` for GPU and CPU-only pods alike, or `gpu=…,cpu=…`. Used with KAI's rules.
    #[arg(long, value_name = "STRATEGY", default_value = "")]
    pub kai_placement: String,
    /// Among the placements the rules allow without preemption, take the one the fabric model
    /// predicts best against the running jobs' traffic (--state); the output gains `network`:
    /// predicted bus bandwidth, the runners-up and the margin, and NCCL advice for `launch
    /// --network-aware`.
    #[arg(long)]
    pub network_aware: bool,
    #[command(flatten)]
    pub training: crate::args::TrainingArgs,
    /// Output format (wide adds a column per topology level above the leaf domain)
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// `place`.
pub fn place(args: &PlaceArgs) -> Result<String, CliError> {
    let cluster = load_cluster(&args.cluster)?;
    let training = args.training.training()?;
    let file = decide(
        &cluster,
        &PlaceInputs {
            job: &args.job,
            state: &live::files(&args.state, live::Input::State, &args.cluster.live)?,
            queues: &live::files(&args.queues, live::Input::Queues, &args.cluster.live)?,
            no_preempt: args.no_preempt,
            flavors: &live::files(&args.flavor, live::Input::Flavors, &args.cluster.live)?,
            options: sched::PlaceOptions {
                strategy: ops::place::parse_kai_strategy(&args.kai_placement)
                    .map_err(|e| CliError::Usage(e.to_string()))?,
                ..ops::place::parse_feature_gates(&args.feature_gates)
                    .map_err(|e| CliError::Usage(e.to_string()))?
            },
            scheduler: args
                .scheduler
                .as_deref()
                .map(ops::place::parse_scheduler)
                .transpose()
                .map_err(|e| CliError::Usage(e.to_string()))?,
            network_aware: args.network_aware,
            training: training.as_ref(),
        },
    )?;
    Ok(args.output.render(&file, |wide| {
        let mut out = text(&cluster, &file, wide);
        if args.cluster.cluster == "slurm:" && file.placed {
            out.push_str(&format!(
                "sbatch --nodelist={}\n",
                live::slurm::nodelist(&file.pods)
            ));
        }
        for w in &file.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }))
}

fn text(cluster: &Cluster, f: &PlacementFile, wide: bool) -> String {
    let job = f.job.as_deref().unwrap_or("job");
    if !f.placed {
        return format!(
            "job {job}: not placed: {}\n",
            f.reason.as_deref().unwrap_or("unknown")
        );
    }
    let mut nodes: Vec<&str> = f.pods.iter().map(|p| p.node.as_str()).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let tier = match f.highest_tier {
        None => "one node, no switch".to_owned(),
        Some(t) => {
            let serves = cluster.tiers[usize::from(t)]
                .level
                .map_or("whole cluster".to_owned(), |l| {
                    cluster.levels[l].label.clone()
                });
            format!("highest tier {t} ({serves})")
        }
    };
    let mut out = format!(
        "job {job}: placed {} on {} ({}); {tier}, worst latency {} µs\n",
        count_of(f.pods.len(), "pod"),
        count_of(nodes.len(), "node"),
        ops::place::gpus_text(cluster, f),
        trim_float(f.worst_latency_us.unwrap_or(0.0))
    );
    if !f.preempted.is_empty() {
        out.push_str(&format!("preempted: {}\n", f.preempted.join(", ")));
    }
    if let Some(n) = &f.network {
        out.push_str(&ops::place::network_text(n));
    }
    // The lowest non-host level names each pod's leaf domain; `-o wide` adds every level above.
    let mut shown: Vec<usize> = (0..cluster.levels.len())
        .filter(|&l| Some(l) != cluster.host_level)
        .collect();
    if !wide {
        shown.drain(..shown.len().saturating_sub(1));
    }
    let mut header = vec!["rank", "node", "gpus", "gpu ids"];
    header.extend(shown.iter().map(|&l| cluster.levels[l].label.as_str()));
    let by_name: std::collections::HashMap<&str, topology::NodeId> = cluster
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), topology::NodeId::from_index(i)))
        .collect();
    let mut t = Table::new(&header);
    for p in &f.pods {
        let mut row = vec![
            p.rank.to_string(),
            p.node.clone(),
            trim_float(p.gpus),
            p.gpu_ids
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
        ];
        if let Some(&n) = by_name.get(p.node.as_str()) {
            for &l in &shown {
                row.push(cluster.domain(cluster.node(n).domains[l]).value.clone());
            }
        }
        t.row(row);
    }
    out.push('\n');
    out.push_str(&t.render());
    out
}
