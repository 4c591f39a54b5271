//! Tidy checks on the source tree: module docs, no debugging leftovers, a pure core.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path
                .file_name()
                .is_some_and(|n| n == "target" || n == "snapshots")
            {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

#[test]
fn every_module_starts_with_a_doc_line() {
    let mut files = Vec::new();
    rust_files(&crates_dir(), &mut files);
    assert!(files.len() > 10);
    let missing: Vec<_> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            !text.trim_start().starts_with("//!")
        })
        .collect();
    assert!(missing.is_empty(), "files without a //! line: {missing:?}");
}

#[test]
fn no_debugging_leftovers() {
    let mut files = Vec::new();
    rust_files(&crates_dir(), &mut files);
    for f in files.iter().filter(|f| !f.ends_with("tidy.rs")) {
        let text = std::fs::read_to_string(f).unwrap();
        for bad in [
            concat!("dbg", "!("),
            concat!("todo", "!("),
            concat!("unimplemented", "!("),
        ] {
            assert!(!text.contains(bad), "{} contains {bad}", f.display());
        }
    }
}

#[test]
fn core_crates_do_no_io_and_read_no_clock() {
    let forbidden = [
        "Instant::now",
        "SystemTime",
        "std::fs",
        "std::env",
        "std::net",
        "println!",
        "eprintln!",
        "thread_rng",
    ];
    for krate in ["topology", "sched", "fabric", "sim"] {
        let src = crates_dir().join(krate).join("src");
        if !src.exists() {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            for bad in forbidden {
                assert!(!text.contains(bad), "{} uses {bad}", f.display());
            }
        }
    }
}
