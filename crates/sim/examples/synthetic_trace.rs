//! Print a seeded synthetic trace (`sim::synthetic`) as a native trace CSV on stdout, for the
//! growth benchmark (`scripts/growth-bench.sh`).
//!
//! Usage: `synthetic_trace JOBS SEED CLUSTER_GPUS [on|off] [LOAD]` — `off` gives every job a
//! `comm_share` of 0 (network off); `on` (the default) leaves the simulator's defaults by size.
//! LOAD is the offered load as a share of the cluster's GPUs (default 0.8).

use sim::synthetic::{synthetic_trace, SyntheticSpec};
use sim::CommProfile;
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, what: &str| -> u64 {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                eprintln!("usage: synthetic_trace JOBS SEED CLUSTER_GPUS [on|off] [LOAD]: expected {what} as argument {}", i + 1);
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
            eprintln!("usage: synthetic_trace JOBS SEED CLUSTER_GPUS [on|off] [LOAD]: expected on or off, got `{other}`");
            std::process::exit(2)
        }
    };
    let load = match args.get(4).map(|a| a.parse::<f64>()) {
        None => 0.8,
        Some(Ok(l)) if l > 0.0 && l.is_finite() => l,
        Some(_) => {
            eprintln!("usage: synthetic_trace JOBS SEED CLUSTER_GPUS [on|off] [LOAD]: expected LOAD as a positive number, got `{}`", args[4]);
            std::process::exit(2)
        }
    };
    let trace = synthetic_trace(&SyntheticSpec {
        jobs: jobs as usize,
        cluster_gpus: gpus,
        load,
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
