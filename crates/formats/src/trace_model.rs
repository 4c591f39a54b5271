//! What a read trace is, whatever format it came in: its jobs, what was left out, the limits
//! every reader enforces, and the date format traces write.

use sim::TraceJob;

use crate::error::excerpt;

/// Longest trace railyard reads, rows. A row is a non-blank line after the header; longer
/// traces are refused by counting lines, before any row is parsed.
pub const MAX_ROWS: usize = 10_000_000;

/// Latest submission time a trace may give, seconds since 1970 (2100-01-01 00:00:00 UTC):
/// epoch seconds beyond it are a unit mistake (milliseconds, microseconds), and would overflow
/// the simulator's millisecond clock.
pub const MAX_EPOCH_S: f64 = 4_102_444_800.0;

/// Longest job a trace may give, seconds (ten years).
pub const MAX_DURATION_S: f64 = 315_360_000.0;

/// Trace formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// Detect from the header.
    Auto,
    /// `timestamp,duration,num_gpus,gpu_time,cluster` (Microsoft Philly).
    Philly,
    /// `job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue` (SenseTime Helios/Acme).
    Helios,
    /// `name,submit_s,duration_s,gpus` plus optional `queue,priority,preemptible,topology,comm_share,bytes_per_step`.
    Native,
    /// Slurm's `sacct --parsable2` (read by the `scheduler_traces` module).
    Sacct,
    /// Kueue's Workload list, `kubectl get workloads -A -o json` (read by the `scheduler_traces`
    /// module).
    KueueWorkloads,
    /// Alibaba's GPU-sharing pod list, `openb_pod_list_*.csv` (read by the `openb` module).
    Openb,
}

/// A read trace.
#[derive(Debug, Default)]
pub struct Trace {
    /// Jobs in file order.
    pub jobs: Vec<TraceJob>,
    /// Rows skipped with `--skip-bad-rows`: (line, reason).
    pub skipped: Vec<(u64, String)>,
    /// The format read.
    pub format: Option<TraceFormat>,
    /// How long each job waited in the trace's own scheduler (start − submit, seconds), in job
    /// order, for traces that say when jobs started (Slurm, Kueue); empty otherwise.
    pub observed_wait_s: Vec<Option<f64>>,
    /// Jobs that did not run to the end or hold no GPUs (cancelled while pending, still
    /// running, …), left out: (line or item, why).
    pub not_run: Vec<(u64, String)>,
    /// Job steps in `sacct` output without `--allocations`, skipped (they are not jobs).
    pub job_steps: usize,
}

/// Seconds since 1970-01-01 of `YYYY-MM-DD HH:MM:SS` (UTC; a `T` separator is accepted).
pub fn parse_datetime(s: &str) -> Result<f64, String> {
    let bad = || format!("expected YYYY-MM-DD HH:MM:SS, got \"{}\"", excerpt(s));
    let (date, time) = s.split_once([' ', 'T']).ok_or_else(bad)?;
    let d: Vec<&str> = date.split('-').collect();
    let t: Vec<&str> = time.trim_end_matches('Z').split(':').collect();
    if d.len() != 3 || t.len() != 3 {
        return Err(bad());
    }
    let num = |x: &str| x.parse::<i64>().map_err(|_| bad());
    let (y, m, day) = (num(d[0])?, num(d[1])?, num(d[2])?);
    let (hh, mm) = (num(t[0])?, num(t[1])?);
    let ss: f64 = t[2].parse().map_err(|_| bad())?;
    if !(1970..=2099).contains(&y) {
        return Err(format!(
            "year {y} is outside 1970–2099 (the simulator's time window)"
        ));
    }
    if (1..=12).contains(&m) && (29..=31).contains(&day) && day > days_in_month(y, m) {
        return Err(format!(
            "{y:04}-{m:02}-{day:02} is not a date: that month has {} days",
            days_in_month(y, m)
        ));
    }
    if !(1..=12).contains(&m)
        || !(1..=days_in_month(y, m)).contains(&day)
        || !(0..24).contains(&hh)
        || !(0..60).contains(&mm)
        || !(0.0..61.0).contains(&ss)
    {
        return Err(bad());
    }
    Ok((days_from_civil(y, m, day) * 86_400 + hh * 3600 + mm * 60) as f64 + ss)
}

/// Days in month `m` of year `y` (Gregorian leap years).
fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
