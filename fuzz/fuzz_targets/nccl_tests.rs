//! nccl-tests output (`fabric compare LOG`): the whole input is the log.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    if let Ok(rows) = formats::nccl_tests::read("nccl-tests.log", text) {
        assert!(!rows.is_empty());
    }
});
