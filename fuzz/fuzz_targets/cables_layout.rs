//! Rack layout files (`cables plan --layout`): parsed, checked, and used to plan a small
//! cluster's cables.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use ops::cables;

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let Ok(layout) = cables::parse_layout("racks.yaml", text) else {
        return;
    };
    let _ = cables::plan(common::small_cluster(), Some(&layout));
});
