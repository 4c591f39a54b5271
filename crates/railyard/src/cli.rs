//! railyard's command line: every command and flag, defined once, and the dispatch from a
//! parsed command line to the command's function. `main.rs` parses and maps errors to exit
//! codes; tests and generators (completions, the manual) use [`Cli`] directly.

use clap::{CommandFactory, Parser, Subcommand};

use crate::args::command_line;
use crate::commands::{
    cables, doctor, fabric, launch, lint, place, queues, schema, simulate, step, sweep, topo, trace,
};
use crate::error::CliError;

/// railyard's command line.
#[derive(Debug, Parser)]
#[command(
    name = "railyard",
    version,
    about = "Place multi-node GPU training jobs onto RDMA fabrics and measure what placement does to training speed",
    long_about = None
)]
pub struct Cli {
    /// `-q` hides the notes on stderr (what railyard detected or assumed), `-v`/`-vv` adds
    /// detail; errors are always printed.
    #[command(flatten)]
    pub verbosity: clap_verbosity_flag::Verbosity<Notes>,
    /// Runs at once (simulate's runs, sweep cells), before the command; default every core, 1: one after another.
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The default verbosity: notes (info) shown; `-q` warnings only, `-v` debug. railyard has no
/// level beyond `-v`: `-vv` is refused ([`run`]) rather than accepted and ignored.
#[derive(Clone, Copy, Debug, Default)]
pub struct Notes;

impl clap_verbosity_flag::LogLevel for Notes {
    fn default_filter() -> clap_verbosity_flag::VerbosityFilter {
        clap_verbosity_flag::VerbosityFilter::Info
    }
    fn verbose_help() -> Option<&'static str> {
        Some("More detail on stderr: -v adds debug notes (there is no -vv)")
    }
    fn quiet_help() -> Option<&'static str> {
        Some("No notes on stderr (what railyard detected or assumed); errors still printed")
    }
}

/// Send `tracing` events to stderr as `note: …` (info), `debug: …` or `trace: …` lines, at the
/// level `-q`/`-v` chose. Called once by `main`; without it (tests) events go nowhere.
pub fn init_stderr_log(verbosity: &clap_verbosity_flag::Verbosity<Notes>) {
    use tracing_subscriber::fmt::{format, FmtContext, FormatEvent, FormatFields};
    struct Lines;
    impl<S, N> FormatEvent<S, N> for Lines
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
        N: for<'a> FormatFields<'a> + 'static,
    {
        fn format_event(
            &self,
            ctx: &FmtContext<'_, S, N>,
            mut w: format::Writer<'_>,
            event: &tracing::Event<'_>,
        ) -> std::fmt::Result {
            let word = match *event.metadata().level() {
                tracing::Level::ERROR => "error",
                tracing::Level::WARN => "warning",
                tracing::Level::INFO => "note",
                tracing::Level::DEBUG => "debug",
                tracing::Level::TRACE => "trace",
            };
            write!(w, "{word}: ")?;
            ctx.field_format().format_fields(w.by_ref(), event)?;
            writeln!(w)
        }
    }
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(verbosity.tracing_level_filter())
        .event_format(Lines)
        .try_init();
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
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
    /// Print a shell completion script: `source <(railyard completions bash)`.
    Completions(CompletionsArgs),
    /// Print the manual page (roff), or write one page per command into --out-dir.
    Man(ManArgs),
    /// Print the JSON Schema of a YAML format you write: cluster-spec, overlay, job, state, layout.
    Schema(SchemaArgs),
    Sweep(sweep::SweepArgs),
    /// Generate traces: `trace synth --profile llm` (seeded, LLM-era job classes).
    #[command(subcommand)]
    Trace(TraceCommand),
}

/// Subcommands of `trace`.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Write a seeded synthetic trace in railyard's CSV (profiles and sources in the README).
    Synth(trace::SynthArgs),
}

/// Arguments of `schema`.
#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// The format (the names are listed in `--help`)
    #[arg(value_name = "NAME", long_help = schema::names_help())]
    pub name: String,
}

/// Arguments of `completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write `railyard.1` and `railyard-COMMAND.1` for every command into this directory.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<std::path::PathBuf>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum CablesCommand {
    /// For each link its length, speed and cable; a bill of materials; links beyond DAC reach.
    Plan(cables::PlanArgs),
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum QueuesCommand {
    /// Report every problem of a queue tree (and of the jobs targeting it); exit 1 if any.
    Validate(queues::ValidateArgs),
    /// Each queue's fair share of GPUs, CPU and memory for a demand.
    Share(queues::ShareArgs),
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum TopoCommand {
    /// Summarise a cluster: counts per tier, domains per level, bandwidth, latency.
    Show(topo::ShowArgs),
    /// Write the cluster's topology for Kueue, KAI, Slurm or as node labels.
    Export(topo::ExportArgs),
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum FabricCommand {
    /// Bus bandwidth, hot links, NCCL's pick per size a placement gets (beside running jobs).
    Collective(Box<fabric::CollectiveArgs>),
    /// A measured nccl-tests log beside the prediction for the same ranks, row by row.
    Compare(Box<fabric::CompareArgs>),
    /// The most loaded of M equal paths when N flows are ECMP-hashed onto them.
    Ecmp(fabric::EcmpArgs),
    /// The active RoCE MTU a netdev MTU allows and the wire frame size.
    Mtu(fabric::MtuArgs),
    /// One training step of a model under a parallel layout: communicators, step time, why slow.
    Step(Box<step::StepArgs>),
}

/// Run a parsed command line; the text to print, or the error.
pub fn run(cli: Cli) -> Result<String, CliError> {
    if cli.verbosity.tracing_level_filter() == tracing::level_filters::LevelFilter::TRACE {
        return Err(CliError::Usage(
            "-vv: railyard has one level of detail beyond the notes, -v (debug notes); drop the second v"
                .to_owned(),
        ));
    }
    match cli.command {
        Command::Topo(TopoCommand::Show(a)) => topo::show(&a),
        Command::Topo(TopoCommand::Export(a)) => topo::export(&a),
        Command::Simulate(mut a) => {
            a.command_line = ops::parallel::without_threads_flag(command_line());
            simulate::run(&a, cli.threads)
        }
        Command::Fabric(FabricCommand::Collective(a)) => fabric::collective(&a),
        Command::Fabric(FabricCommand::Compare(a)) => fabric::compare(&a),
        Command::Fabric(FabricCommand::Ecmp(a)) => fabric::ecmp(&a),
        Command::Fabric(FabricCommand::Mtu(a)) => fabric::mtu(&a),
        Command::Fabric(FabricCommand::Step(a)) => step::step(&a),
        Command::Doctor(a) => doctor::doctor(&a),
        Command::Launch(a) => launch::launch(&a),
        Command::Lint(a) => lint::lint(&a),
        Command::Cables(CablesCommand::Plan(a)) => cables::plan_command(&a),
        Command::Place(a) => place::place(&a),
        Command::Queues(QueuesCommand::Validate(a)) => queues::validate(&a),
        Command::Queues(QueuesCommand::Share(a)) => queues::share(&a),
        Command::Completions(a) => Ok(completions(a.shell)),
        Command::Man(a) => man(&a),
        Command::Schema(a) => schema::schema(&a.name),
        Command::Trace(TraceCommand::Synth(a)) => trace::synth(&a),
        Command::Sweep(a) => sweep::sweep(&a, cli.threads),
    }
}

/// A shell completion script for `railyard`.
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "railyard", &mut out);
    String::from_utf8(out).expect("clap writes UTF-8")
}

/// The manual: one roff page on standard output, or one page per command in a directory.
fn man(args: &ManArgs) -> Result<String, CliError> {
    let root = Cli::command();
    // NAME reads `railyard-place - …` (the page's name), SYNOPSIS `railyard place …`.
    let render = |title: &str, cmd: clap::Command| {
        let mut out = Vec::new();
        let cmd = cmd
            .display_name(title.to_owned())
            .bin_name(title.replace('-', " "));
        clap_mangen::Man::new(cmd)
            .title(title.to_ascii_uppercase())
            .render(&mut out)
            .expect("rendering into memory cannot fail");
        out
    };
    let Some(dir) = &args.out_dir else {
        return Ok(String::from_utf8(render("railyard", root)).expect("roff is UTF-8"));
    };
    let mut pages = vec![("railyard".to_owned(), root.clone())];
    for sub in root.get_subcommands() {
        let name = format!("railyard-{}", sub.get_name());
        if sub.has_subcommands() {
            for leaf in sub.get_subcommands() {
                pages.push((format!("{name}-{}", leaf.get_name()), leaf.clone()));
            }
        }
        pages.push((name, sub.clone()));
    }
    std::fs::create_dir_all(dir).map_err(|source| CliError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let mut written = Vec::new();
    for (name, cmd) in pages {
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, render(&name, cmd)).map_err(|source| CliError::Io {
            path: path.display().to_string(),
            source,
        })?;
        written.push(path.display().to_string());
    }
    Ok(format!(
        "wrote {} manual pages: {}\n",
        written.len(),
        written.join(", ")
    ))
}
