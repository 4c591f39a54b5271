//! Tidy checks on the source tree: module docs, no debugging leftovers, a pure core, no import
//! cycles inside a crate.

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
    for krate in ["topology", "sched", "fabric", "layout", "sim"] {
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

/// Whether a byte can be part of an identifier.
fn ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The paths a use-tree starting at `pos` names, as segments: `a::{b, c::{d as e, *}}` names
/// `a::b`, `a::c::d` and `a::c`. Reading stops where the tree ends (`;`, `(`, `<`, …).
fn use_tree(s: &[u8], pos: &mut usize) -> Vec<Vec<String>> {
    let skip_ws = |pos: &mut usize| {
        while s.get(*pos).is_some_and(u8::is_ascii_whitespace) {
            *pos += 1;
        }
    };
    skip_ws(pos);
    match s.get(*pos) {
        Some(b'{') => {
            *pos += 1;
            let mut all = Vec::new();
            loop {
                skip_ws(pos);
                if s.get(*pos) == Some(&b'}') {
                    *pos += 1;
                    break;
                }
                all.extend(use_tree(s, pos));
                skip_ws(pos);
                match s.get(*pos) {
                    Some(b',') => *pos += 1,
                    Some(b'}') => {
                        *pos += 1;
                        break;
                    }
                    _ => break,
                }
            }
            return all;
        }
        Some(b'*') => {
            *pos += 1;
            return vec![Vec::new()];
        }
        _ => {}
    }
    let begin = *pos;
    while s.get(*pos).copied().is_some_and(ident_byte) {
        *pos += 1;
    }
    let seg = String::from_utf8_lossy(&s[begin..*pos]).into_owned();
    if seg.is_empty() {
        return vec![Vec::new()];
    }
    if s[*pos..].starts_with(b"::") {
        *pos += 2;
        let mut rest = use_tree(s, pos);
        for r in &mut rest {
            r.insert(0, seg.clone());
        }
        return rest;
    }
    // `name as alias`: the alias names nothing new.
    let back = *pos;
    skip_ws(pos);
    if s[*pos..].starts_with(b"as") && s.get(*pos + 2).is_some_and(u8::is_ascii_whitespace) {
        *pos += 2;
        skip_ws(pos);
        while s.get(*pos).copied().is_some_and(ident_byte) {
            *pos += 1;
        }
    } else {
        *pos = back;
    }
    vec![vec![seg]]
}

/// The modules a source text of `module` names, each the longest known module (`modules`) a
/// path names: paths from the crate root (`crate::a::b`), from the parent (`super::b`,
/// `super::super::c`) or from the module itself (`self::b`), use-trees expanded (`use
/// crate::{a, b::c}` names `a` and `b::c`). The root and the module itself are left out. Not
/// read: a bare path starting at a child module (`child::f()` after `mod child;`): naming its own
/// parts is how a module is made of them, while the parts naming the module (`super::`) are read.
fn named_modules(
    text: &str,
    module: &str,
    modules: &[String],
) -> std::collections::BTreeSet<String> {
    let s = text.as_bytes();
    let mut out = std::collections::BTreeSet::new();
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in text.match_indices(start) {
            // `a::super::b` and the second `super` of `super::super::` are read from the first.
            if i > 0 && (ident_byte(s[i - 1]) || s[i - 1] == b':') {
                continue;
            }
            let mut pos = i;
            for path in use_tree(s, &mut pos) {
                let mut at: Vec<&str> = if module.is_empty() {
                    Vec::new()
                } else {
                    module.split("::").collect()
                };
                let mut best = None;
                for (k, seg) in path.iter().enumerate() {
                    match seg.as_str() {
                        "crate" if k == 0 => at.clear(),
                        "super" => {
                            at.pop();
                        }
                        "self" => {}
                        seg => at.push(seg),
                    }
                    let target = at.join("::");
                    if modules.contains(&target) {
                        best = Some(target);
                    }
                }
                if let Some(t) = best.filter(|t| t != module && !t.is_empty()) {
                    out.insert(t);
                }
            }
        }
    }
    out
}

/// An import cycle among a crate's modules, given as (module, source text) pairs, or `None`.
/// Edges run from a module to the modules it names ([`named_modules`]), ignoring the root
/// (which only declares modules) and `#[cfg(test)]` code.
fn import_cycle(files: &[(String, String)]) -> Option<Vec<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let modules: Vec<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (m, text) in files {
        if m.is_empty() {
            continue;
        }
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        edges
            .entry(m.as_str())
            .or_default()
            .extend(named_modules(text, m, &modules));
    }
    // Depth-first search for a back edge.
    fn visit<'a>(
        m: &'a str,
        edges: &'a BTreeMap<&str, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, u8>,
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
    let mut state = BTreeMap::new();
    edges
        .keys()
        .find_map(|m| visit(m, &edges, &mut state, &mut Vec::new()))
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
    let mut cycles = Vec::new();
    for krate in crates {
        let src = krate.join("src");
        let mut paths = Vec::new();
        rust_files(&src, &mut paths);
        let files: Vec<(String, String)> = paths
            .iter()
            .map(|f| (module_of(&src, f), std::fs::read_to_string(f).unwrap()))
            .collect();
        if let Some(cycle) = import_cycle(&files) {
            cycles.push(format!("{}: {}", krate.display(), cycle.join(" → ")));
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_cycle_check_reads_use_trees_and_relative_paths() {
    let crate_of = |files: &[(&str, &str)]| -> Vec<(String, String)> {
        files
            .iter()
            .map(|(m, t)| ((*m).to_owned(), (*t).to_owned()))
            .collect()
    };
    let cycle = |files: &[(&str, &str)]| import_cycle(&crate_of(files)).map(|c| c.join(" → "));
    // The CLI's old shape: the dispatcher names the commands in a use-tree, a command names the
    // dispatcher back.
    let cli = [
        ("", "pub mod cli; pub mod commands;"),
        ("cli", "use crate::commands::{fabric, simulate};"),
        ("commands", "pub mod fabric; pub mod simulate;"),
        ("commands::fabric", "fn f() { crate::cli::command_line(); }"),
        (
            "commands::simulate",
            "use crate::commands::fabric::{NcclArgs, RoutingArg};",
        ),
    ];
    assert_eq!(cycle(&cli).as_deref(), Some("cli → commands::fabric → cli"));
    // Nested trees, aliases and globs.
    assert_eq!(
        cycle(&[
            ("a", "use crate::{x, b::{self as bee, *}};"),
            ("b", "use crate::a::Thing;"),
        ])
        .as_deref(),
        Some("a → b → a")
    );
    // Siblings through `super::`, and `super::super::` from a grandchild.
    assert_eq!(
        cycle(&[
            ("jobs", "mod kai; mod kueue; pub use kai::read;"),
            ("jobs::kai", "use super::kueue::topology;"),
            ("jobs::kueue", "use super::{kai::priority, other};"),
        ])
        .as_deref(),
        Some("jobs::kai → jobs::kueue → jobs::kai")
    );
    assert_eq!(
        cycle(&[
            ("a", "use crate::b::c::D;"),
            ("b", ""),
            ("b::c", "use super::super::a::E;"),
        ])
        .as_deref(),
        Some("a → b::c → a")
    );
    // One way only: no cycle. A child naming its parent (`super::Item`) while the parent names
    // it by its bare name is a module made of parts, not a cycle; test code is not read.
    assert_eq!(
        cycle(&[
            (
                "cli",
                "use crate::commands::{fabric, simulate}; use crate::args::NcclArgs;"
            ),
            ("args", ""),
            ("commands", ""),
            (
                "commands::fabric",
                "use crate::args::{command_line, NcclArgs};"
            ),
            (
                "commands::simulate",
                "use crate::args::{NcclArgs as N, RoutingArg};"
            ),
            ("tas", "mod balanced; fn f() { balanced::place(); }"),
            (
                "tas::balanced",
                "use super::{State, Tree};\n#[cfg(test)]\nuse crate::cli::X;"
            ),
        ]),
        None
    );
}

#[test]
fn every_documented_kueue_difference_is_in_the_book() {
    let data =
        std::fs::read_to_string(crates_dir().join("sched/tests/kueue/differences.yaml")).unwrap();
    let page = crates_dir().join("../docs/src/reference/differences-kueue.md");
    let book_page = std::fs::read_to_string(page).unwrap();
    let mut n = 0;
    for line in data.lines().filter(|l| l.starts_with("  \"")) {
        // `  "case name": "reason"`: the book's page lists `- "case name": reason`.
        let (case, reason) = line.trim().split_once("\": \"").unwrap();
        let entry = format!("- {case}\": {}", reason.trim_end_matches('"'));
        assert!(
            book_page.contains(&entry),
            "differences-kueue.md lacks: {entry}"
        );
        n += 1;
    }
    assert!(n >= 1);
}
