//! Kueue and KAI Topology objects (`--topology FILE`).
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    if let Ok(docs) = formats::input::parse_documents("topology.yaml", text) {
        let _ = formats::k8s::read_topology("topology.yaml", &docs);
    }
});
