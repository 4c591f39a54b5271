//! Traces (`simulate --trace`): the first byte picks the format (auto, Philly, Helios, native,
//! sacct, Kueue Workloads) and `--skip-bad-rows`; the rest is the file.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use formats::trace::{parse_trace, TraceFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some(text) = common::text(rest) else {
        return;
    };
    let format = match selector % 8 {
        0 | 6 | 7 => TraceFormat::Auto,
        1 => TraceFormat::Philly,
        2 => TraceFormat::Helios,
        3 => TraceFormat::Native,
        4 => TraceFormat::Sacct,
        _ => TraceFormat::KueueWorkloads,
    };
    let skip_bad_rows = selector & 8 != 0;
    let _ = parse_trace("trace.csv", text, format, skip_bad_rows);
});
