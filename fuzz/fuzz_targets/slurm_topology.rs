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
    // Files naming more than 4,096 nodes are not read as a cluster: building one is legitimate
    // up to the limits (1,000,000 nodes, 16,000,000 links) and costs seconds and gigabytes.
    let named: usize = text
        .split(|c: char| c.is_whitespace() || c == '#')
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| k.eq_ignore_ascii_case("nodes"))
        .map(|(_, v)| hostlist::expand(v).map_or(0, |n| n.len()))
        .sum();
    if named <= 4096 {
        let _ = slurm::read_topology_conf("topology.conf", text, "BM.GPU.H100.8", 8);
    }
    if let Ok(names) = hostlist::expand(text.trim()) {
        let _ = hostlist::compress(&names);
    }
});
