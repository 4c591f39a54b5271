//! railyard: place multi-node GPU jobs onto RDMA fabrics and show what placement costs.
//!
//! Only argument parsing and exit codes live here: 0 ok, 1 invalid input or failed check,
//! 2 usage error (clap's own exit code). The commands are defined in `railyard::cli`.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use railyard::cli::{run, Cli};
use railyard::CliError;

/// mimalloc (built without transparent huge pages): the simulator allocates many small vectors at
/// every placement and re-solve; on the README's main run it takes 0.87–0.90× the CPU of the
/// system allocator, with the same output (the book's benchmarks and limits pages).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    railyard::cli::init_stderr_log(&cli.verbosity);
    railyard::args::set_command_line(std::env::args());
    match run(cli) {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (e.g. `| head`) is not an error worth reporting.
            let _ = stdout.write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(CliError::Findings(report)) => {
            let _ = std::io::stdout().lock().write_all(report.as_bytes());
            ExitCode::FAILURE
        }
        Err(e) => {
            if let CliError::CheckFailed { report, .. } = &e {
                let _ = std::io::stdout().lock().write_all(report.as_bytes());
            }
            eprintln!("error: {e}");
            ExitCode::from(if matches!(e, CliError::Usage(_)) {
                2
            } else {
                1
            })
        }
    }
}
