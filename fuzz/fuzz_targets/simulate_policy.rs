//! The `simulate --policy` / `--compare` string: `formats::policy::parse_policy` against the
//! small cluster; it either parses or gives one error line naming the flag, never panics.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let cluster = common::small_cluster();
    for spec in text.split(',') {
        match formats::policy::parse_policy(spec, cluster, "--policy") {
            Ok(p) => assert!(!p.name.is_empty()),
            Err(e) => {
                let m = e.to_string();
                assert!(m.starts_with("--policy: "), "{m}");
                assert!(!m.contains('\n'), "{m}");
            }
        }
    }
});
