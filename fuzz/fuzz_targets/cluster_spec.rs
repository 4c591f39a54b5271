//! The cluster spec (`--cluster FILE.yaml`): parse, validate and build, as `cluster_arg` does.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use topology::ClusterSpec;

/// Valid specs above this many nodes are built by the benches, not here (a 1,000,000-node
/// build is legitimate and takes seconds); larger invalid ones still go through validation.
const FUZZ_BUILD_NODES: u64 = 4096;

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let Ok(spec) = formats::input::parse_typed::<ClusterSpec>("spec.yaml", text) else {
        return;
    };
    let nodes = match (&spec.fabric.fat_tree, &spec.fabric.clos) {
        (Some(f), None) => u64::from(f.k).pow(3) / 4,
        (None, Some(c)) => u64::from(c.nodes),
        _ => 0,
    };
    if nodes > FUZZ_BUILD_NODES && nodes <= topology::MAX_NODES as u64 {
        return;
    }
    let _ = topology::build_from_spec(&spec);
});
