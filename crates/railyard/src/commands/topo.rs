//! `railyard topo show` and `railyard topo export`.

use std::path::PathBuf;

use topology::Cluster;

use crate::cluster_arg::{load_cluster, ClusterArgs};
use crate::error::CliError;
use crate::output::{to_json, OutputFormat};
use formats::k8s::{self, TopologyFlavor};
use formats::slurm;
use report::fmt::{count_of, fmt_count, fmt_gbps, trim_float};
use report::table::Table;

/// Arguments of `topo show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output format (wide: as text)
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// What `topo export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// A Kueue `Topology` (kueue.x-k8s.io/v1beta2).
    Kueue,
    /// A KAI Scheduler `Topology` (kai.scheduler/v1alpha1).
    Kai,
    /// Slurm topology.conf for topology/tree.
    Slurm,
    /// Slurm topology.conf for topology/block.
    SlurmBlock,
    /// The level labels each node needs: `kubectl label` commands (JSON: a map).
    NodeLabels,
    /// A NodeList (as `kubectl get nodes -o yaml` prints) that `--cluster` imports back.
    Nodelist,
}

/// Arguments of `topo export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// What to write.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output format: the Kubernetes documents as YAML (text, yaml, wide) or JSON; node-labels
    /// as `kubectl label` commands or a JSON/YAML map; Slurm files only as text.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
    /// Write to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `topo show`.
pub fn show(args: &ShowArgs) -> Result<String, CliError> {
    let cluster = load_cluster(&args.cluster)?;
    Ok(args
        .output
        .render(&cluster.summary(), |_| show_text(&cluster)))
}

fn show_text(cluster: &Cluster) -> String {
    let s = cluster.summary();
    let mut out = format!(
        "cluster {}: {}, {}, {} switch{}, {}\n",
        s.name,
        count_of(s.nodes, "node"),
        count_of(s.gpus as usize, "GPU"),
        fmt_count(s.switches as u64),
        if s.switches == 1 { "" } else { "es" },
        count_of(s.links, "link")
    );
    out.push_str(&format!(
        "NIC injection {}, bisection {}; leaves {}rail-optimized",
        fmt_gbps(s.injection_gbps),
        fmt_gbps(s.bisection_gbps),
        if s.rail_optimized { "" } else { "not " }
    ));
    if s.multi_node_nvlink_domains > 0 {
        out.push_str(&format!(
            "; {} multi-node NVLink domains",
            fmt_count(s.multi_node_nvlink_domains as u64)
        ));
    }
    if s.unavailable_nodes > 0 {
        out.push_str(&format!(
            "; {} not schedulable (NotReady, cordoned or tainted)",
            count_of(s.unavailable_nodes, "node")
        ));
    }
    out.push_str("\n\nlevels (top first)\n");
    let mut t = Table::new(&["level", "label", "domains"]);
    for (i, l) in s.levels.iter().enumerate() {
        let label = if l.nvlink {
            format!("{} (NVLink domains, no switch tier)", l.name)
        } else {
            l.name.clone()
        };
        t.row(vec![i.to_string(), label, fmt_count(l.domains as u64)]);
    }
    out.push_str(&t.render());
    out.push_str("\nswitch tiers (leaf first)\n");
    let mut t = Table::new(&[
        "tier",
        "serves",
        "groups",
        "switches",
        "links in",
        "GPUs/group",
        "latency",
        "capacity in",
        "oversub",
    ]);
    for tier in &s.tiers {
        t.row(vec![
            tier.tier.to_string(),
            tier.level
                .clone()
                .unwrap_or_else(|| "(whole cluster)".to_owned()),
            fmt_count(u64::from(tier.groups)),
            fmt_count(tier.switches as u64),
            fmt_count(tier.links as u64),
            fmt_count(tier.gpus_max),
            format!("{} µs", trim_float(tier.latency_us)),
            fmt_gbps(tier.uplink_gbps),
            format!("{}:1", trim_float(tier.oversubscription)),
        ]);
    }
    out.push_str(&t.render());
    out
}

/// `topo export`.
pub fn export(args: &ExportArgs) -> Result<String, CliError> {
    let cluster = load_cluster(&args.cluster)?;
    let slurm = matches!(args.format, ExportFormat::Slurm | ExportFormat::SlurmBlock);
    if slurm && args.output.is_structured() {
        return Err(CliError::Usage(format!(
            "--output {}: a Slurm topology.conf has only a text form (use -o text)",
            if args.output == OutputFormat::Json {
                "json"
            } else {
                "yaml"
            }
        )));
    }
    let destination = match args.format {
        ExportFormat::Kueue | ExportFormat::Kai => k8s::Destination::Topology,
        ExportFormat::Slurm | ExportFormat::SlurmBlock => k8s::Destination::Slurm,
        ExportFormat::NodeLabels | ExportFormat::Nodelist => k8s::Destination::NodeLabels,
    };
    k8s::check_exportable(&cluster, &args.cluster.cluster, destination)?;
    let text = match args.format {
        ExportFormat::Kueue => k8s::export_topology(&cluster, TopologyFlavor::Kueue),
        ExportFormat::Kai => k8s::export_topology(&cluster, TopologyFlavor::Kai),
        ExportFormat::Slurm => slurm::export_tree(&cluster),
        ExportFormat::SlurmBlock => slurm::export_block(&cluster),
        ExportFormat::NodeLabels => args.output.render(&k8s::level_labels(&cluster), |_| {
            k8s::export_label_commands(&cluster)
        }),
        ExportFormat::Nodelist => k8s::export_nodelist(&cluster),
    };
    // The Kubernetes documents are YAML; `-o json` gives the same document as JSON.
    let text = if args.output == OutputFormat::Json && args.format != ExportFormat::NodeLabels {
        let value: serde_json::Value = serde_norway::from_str(&text)
            .map_err(|e| CliError::input("topo export", format!("own YAML unreadable: {e}")))?;
        to_json(&value)
    } else {
        text
    };
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text).map_err(|source| CliError::Io {
                path: path.display().to_string(),
                source,
            })?;
            Ok(String::new())
        }
        None => Ok(text),
    }
}
