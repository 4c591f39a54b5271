//! Slurm `topology.conf` (topology/tree and topology/block) and hostlist expressions: the tree
//! parser, the reader behind `--cluster topology.conf`, and hostlists.
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
    let _ = slurm::read_topology_conf("topology.conf", text, "BM.GPU.H100.8", 8);
    if let Ok(names) = hostlist::expand(text.trim()) {
        let _ = hostlist::compress(&names);
    }
});
