//! Print a seeded synthetic trace (`sim::synthetic`) as a native trace CSV on stdout, for the
//! growth benchmark (`scripts/growth-bench.sh`).
//!
//! Usage: `synthetic_trace JOBS SEED CLUSTER_GPUS [on|off]` — `off` gives every job a
//! `comm_share` of 0 (network off); `on` (the default) leaves the simulator's defaults by size.

use sim::synthetic::{synthetic_trace, SyntheticSpec};
use sim::CommProfile;
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, what: &str| -> u64 {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                eprintln!("usage: synthetic_trace JOBS SEED CLUSTER_GPUS [on|off]: expected {what} as argument {}", i + 1);
                std::process::exit(2)
            })
    };
    let (jobs, seed, gpus) = (
        number(0, "JOBS"),
        number(1, "SEED"),
        number(2, "CLUSTER_GPUS"),
    );
    let off = match args.get(3).map(String::as_str) {
        None | Some("on") => false,
        Some("off") => true,
        Some(other) => {
            eprintln!("usage: synthetic_trace JOBS SEED CLUSTER_GPUS [on|off]: expected on or off, got `{other}`");
            std::process::exit(2)
        }
    };
    let trace = synthetic_trace(&SyntheticSpec {
        jobs: jobs as usize,
        cluster_gpus: gpus,
        load: 0.8,
        seed,
        comm: off.then_some(CommProfile {
            comm_share: 0.0,
            bytes_per_step: 0.0,
        }),
    });
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let result = (|| -> std::io::Result<()> {
        writeln!(
            out,
            "name,submit_s,duration_s,gpus,queue,preemptible{}",
            if off { ",comm_share" } else { "" }
        )?;
        for j in &trace {
            write!(
                out,
                "{},{},{},{},{},{}",
                j.name, j.submit_s, j.duration_s, j.gpus, j.queue, j.preemptible
            )?;
            if off {
                write!(out, ",0")?;
            }
            writeln!(out)?;
        }
        out.flush()
    })();
    if let Err(e) = result {
        eprintln!("error: writing the trace: {e}");
        std::process::exit(1);
    }
}
