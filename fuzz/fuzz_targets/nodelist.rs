//! NodeList / List / Node streams (`--cluster nodes.yaml`), imported with detected levels, with
//! `--levels`, with `--label-preset`, and with an overlay: the text after a line `#overlay` is
//! parsed as the overlay file.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use formats::k8s::{self, ImportOptions, LabelPreset, Overlay};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let (nodes, overlay) = match text.split_once("\n#overlay\n") {
        Some((n, o)) => (n, Some(o)),
        None => (text, None),
    };
    let overlay: Overlay = match overlay {
        Some(o) => match formats::input::parse_typed("overlay.yaml", o) {
            Ok(o) => o,
            Err(_) => return,
        },
        None => Overlay::default(),
    };
    let Ok(docs) = formats::input::parse_documents("nodes.yaml", nodes) else {
        return;
    };
    let variants = [
        ImportOptions::default(),
        ImportOptions {
            levels: vec!["rack".into(), "kubernetes.io/hostname".into()],
            ..ImportOptions::default()
        },
        ImportOptions {
            levels: vec!["block".into(), "rack".into()],
            shape: Some("BM.GPU.H100.8".into()),
            ..ImportOptions::default()
        },
        ImportOptions {
            label_preset: Some(LabelPreset::Topograph),
            ..ImportOptions::default()
        },
    ];
    for options in &variants {
        let _ = k8s::import_nodes_with_overlay("nodes.yaml", &docs, options, &overlay);
    }
});
