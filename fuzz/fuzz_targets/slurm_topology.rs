//! Slurm `topology.conf` (topology/tree) and hostlist expressions.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use formats::{hostlist, slurm};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let _ = slurm::parse_tree(text);
    if let Ok(names) = hostlist::expand(text.trim()) {
        let _ = hostlist::compress(&names);
    }
});
