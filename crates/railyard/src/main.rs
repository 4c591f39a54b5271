//! railyard: place multi-node GPU jobs onto RDMA fabrics and show what placement costs.
//!
//! Only argument parsing and exit codes live here: 0 ok, 1 invalid input or failed check,
//! 2 usage error (clap's own exit code).

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use railyard::commands::{cables, doctor, fabric, launch, lint, place, queues, simulate, topo};
use railyard::CliError;

#[derive(Debug, Parser)]
#[command(name = "railyard", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect and export a cluster's fabric and locality levels.
    #[command(subcommand)]
    Topo(TopoCommand),
    /// Replay a job trace on a cluster under one or several scheduling policies.
    Simulate(simulate::SimulateArgs),
    /// Model the network: collectives as flows, ECMP collisions, RoCE MTU.
    #[command(subcommand)]
    Fabric(FabricCommand),
    /// Check this node (or a tree under --root): RDMA ports, RoCE MTU, host name, PCIe, rails.
    Doctor(doctor::DoctorArgs),
    /// Write the torchrun/NCCL launch of a placement: shell, env file, Kubernetes patch, hostfile.
    Launch(launch::LaunchArgs),
    /// Check manifests: NicClusterPolicy, RDMA NetworkAttachmentDefinitions and the pods using them.
    Lint(lint::LintArgs),
    /// Plan the cables of a cluster's links: DAC, active copper or optics, and a bill of materials.
    #[command(subcommand)]
    Cables(CablesCommand),
    /// Place a job (gang) on a cluster with running jobs: nodes, tiers crossed, preemptions.
    Place(place::PlaceArgs),
    /// Check queue trees and compute fair shares.
    #[command(subcommand)]
    Queues(QueuesCommand),
}

#[derive(Debug, Subcommand)]
enum CablesCommand {
    /// For each link its length, speed and cable; a bill of materials; links beyond DAC reach.
    Plan(cables::PlanArgs),
}

#[derive(Debug, Subcommand)]
enum QueuesCommand {
    /// Report every problem of a queue tree (and of the jobs targeting it); exit 1 if any.
    Validate(queues::ValidateArgs),
    /// Each queue's fair share of GPUs, CPU and memory for a demand.
    Share(queues::ShareArgs),
}

#[derive(Debug, Subcommand)]
enum TopoCommand {
    /// Summarise a cluster: counts per tier, domains per level, bandwidth, latency.
    Show(topo::ShowArgs),
    /// Write the cluster's topology for Kueue, KAI, Slurm or as node labels.
    Export(topo::ExportArgs),
}

#[derive(Debug, Subcommand)]
enum FabricCommand {
    /// Bus bandwidth, hot links and latency a placement gets for a collective.
    Collective(Box<fabric::CollectiveArgs>),
    /// The most loaded of M equal paths when N flows are ECMP-hashed onto them.
    Ecmp(fabric::EcmpArgs),
    /// The active RoCE MTU a netdev MTU allows and the wire frame size.
    Mtu(fabric::MtuArgs),
}

fn run(cli: Cli) -> Result<String, CliError> {
    match cli.command {
        Command::Topo(TopoCommand::Show(a)) => topo::show(&a),
        Command::Topo(TopoCommand::Export(a)) => topo::export(&a),
        Command::Simulate(mut a) => {
            a.command_line = std::env::args().collect();
            if let Some(first) = a.command_line.first_mut() {
                *first = "railyard".to_owned();
            }
            simulate::run(&a)
        }
        Command::Fabric(FabricCommand::Collective(a)) => fabric::collective(&a),
        Command::Fabric(FabricCommand::Ecmp(a)) => fabric::ecmp(&a),
        Command::Fabric(FabricCommand::Mtu(a)) => fabric::mtu(&a),
        Command::Doctor(a) => doctor::doctor(&a),
        Command::Launch(a) => launch::launch(&a),
        Command::Lint(a) => lint::lint(&a),
        Command::Cables(CablesCommand::Plan(a)) => cables::plan_command(&a),
        Command::Place(a) => place::place(&a),
        Command::Queues(QueuesCommand::Validate(a)) => queues::validate(&a),
        Command::Queues(QueuesCommand::Share(a)) => queues::share(&a),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (e.g. `| head`) is not an error worth reporting.
            let _ = stdout.write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            if let CliError::CheckFailed { report, .. } = &e {
                let _ = std::io::stdout().lock().write_all(report.as_bytes());
            }
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
