//! railyard: place multi-node GPU jobs onto RDMA fabrics and show what placement costs.
//!
//! Only argument parsing and exit codes live here: 0 ok, 1 invalid input or failed check,
//! 2 usage error (clap's own exit code).

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use railyard::commands::{place, queues, topo};
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
    /// Place a job (gang) on a cluster with running jobs: nodes, tiers crossed, preemptions.
    Place(place::PlaceArgs),
    /// Check queue trees and compute fair shares.
    #[command(subcommand)]
    Queues(QueuesCommand),
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

fn run(cli: Cli) -> Result<String, CliError> {
    match cli.command {
        Command::Topo(TopoCommand::Show(a)) => topo::show(&a),
        Command::Topo(TopoCommand::Export(a)) => topo::export(&a),
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
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
