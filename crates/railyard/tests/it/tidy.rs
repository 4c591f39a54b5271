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

#[test]
fn library_crates_neither_print_nor_parse_arguments() {
    // formats, ops and report are for any front end (a service, a controller, a binding): no
    // argument parsing, no progress bars, no printing, no exit codes.
    for krate in ["formats", "ops", "report"] {
        let mut files = Vec::new();
        rust_files(&crates_dir().join(krate).join("src"), &mut files);
        assert!(!files.is_empty(), "{krate} has no sources");
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            for bad in [
                "clap::",
                "indicatif",
                "println!",
                "eprintln!",
                "std::process",
                "anyhow",
            ] {
                assert!(!text.contains(bad), "{} uses {bad}", f.display());
            }
        }
        let manifest =
            std::fs::read_to_string(crates_dir().join(krate).join("Cargo.toml")).unwrap();
        for dep in ["clap", "indicatif", "anyhow"] {
            assert!(
                !manifest.lines().any(|l| l.starts_with(dep)),
                "{krate} depends on {dep}"
            );
        }
    }
}

#[test]
fn the_cli_crate_stays_thin() {
    let mut files = Vec::new();
    rust_files(&crates_dir().join("railyard").join("src"), &mut files);
    let lines: usize = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap().lines().count())
        .sum();
    assert!(
        lines < 3000,
        "crates/railyard/src has {lines} lines; move logic to a library crate"
    );
}

/// The module a source file defines, as a path under the crate root (`""` for the root).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
    {
        parts.pop();
    }
    parts.join("::")
}

#[test]
fn no_import_cycles_between_modules() {
    let mut crates: Vec<_> = std::fs::read_dir(crates_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    crates.sort();
    assert!(crates.len() >= 8);
    for krate in crates {
        let src = krate.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let modules: Vec<String> = files.iter().map(|f| module_of(&src, f)).collect();
        // Edges: module → the modules it names as `crate::a::b…` (the longest known prefix),
        // ignoring the root (which only declares modules) and `#[cfg(test)]` code.
        let mut edges: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> =
            Default::default();
        for (f, m) in files.iter().zip(&modules) {
            if m.is_empty() {
                continue;
            }
            let text = std::fs::read_to_string(f).unwrap();
            let text = text.split("#[cfg(test)]").next().unwrap_or("");
            for (i, _) in text.match_indices("crate::") {
                let rest = &text[i + "crate::".len()..];
                let path: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let mut target = String::new();
                let mut best = None;
                for part in path.split("::") {
                    if !target.is_empty() {
                        target.push_str("::");
                    }
                    target.push_str(part);
                    if modules.contains(&target) {
                        best = Some(target.clone());
                    }
                }
                if let Some(t) = best.filter(|t| t != m && !t.is_empty()) {
                    edges.entry(m.as_str()).or_default().insert(t);
                }
            }
        }
        // Depth-first search for a back edge.
        fn visit<'a>(
            m: &'a str,
            edges: &'a std::collections::BTreeMap<&str, std::collections::BTreeSet<String>>,
            state: &mut std::collections::BTreeMap<&'a str, u8>,
            stack: &mut Vec<&'a str>,
        ) -> Option<Vec<String>> {
            match state.get(m) {
                Some(2) => return None,
                Some(1) => {
                    let from = stack.iter().position(|s| *s == m).unwrap();
                    let mut cycle: Vec<String> =
                        stack[from..].iter().map(|s| (*s).to_owned()).collect();
                    cycle.push(m.to_owned());
                    return Some(cycle);
                }
                _ => {}
            }
            state.insert(m, 1);
            stack.push(m);
            for t in edges.get(m).into_iter().flatten() {
                if let Some(c) = visit(t, edges, state, stack) {
                    return Some(c);
                }
            }
            stack.pop();
            state.insert(m, 2);
            None
        }
        let mut state = Default::default();
        for m in edges.keys() {
            if let Some(cycle) = visit(m, &edges, &mut state, &mut Vec::new()) {
                panic!("{}: import cycle {}", krate.display(), cycle.join(" → "));
            }
        }
    }
}

#[test]
fn every_documented_kueue_difference_is_in_the_readme() {
    let data =
        std::fs::read_to_string(crates_dir().join("sched/tests/kueue/differences.yaml")).unwrap();
    let readme = std::fs::read_to_string(crates_dir().join("../README.md")).unwrap();
    let mut n = 0;
    for line in data.lines().filter(|l| l.starts_with("  \"")) {
        // `  "case name": "reason"`: the README lists `- "case name": reason`.
        let (case, reason) = line.trim().split_once("\": \"").unwrap();
        let entry = format!("- {case}\": {}", reason.trim_end_matches('"'));
        assert!(readme.contains(&entry), "README lacks: {entry}");
        n += 1;
    }
    assert!(n >= 1);
}
