//! `lint` files: NicClusterPolicies, NetworkAttachmentDefinitions and the workloads that
//! attach them, every document of the file checked alone and across documents.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use ops::lint::{self, Document};

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let Ok(values) = formats::input::parse_documents("lint.yaml", text) else {
        return;
    };
    let docs: Vec<Document> = values
        .into_iter()
        .enumerate()
        .map(|(i, value)| Document {
            file: "lint.yaml".to_owned(),
            index: i + 1,
            value,
        })
        .collect();
    for f in lint::lint_documents(&docs) {
        let _ = f.to_string();
    }
});
