//! `doctor --root`'s walk of a tree: the input describes a root tree, one entry a line,
//! `f PATH TEXT` (a file; `\n` in TEXT is a newline), `l PATH TARGET` (a symlink, to anywhere:
//! `/dev/zero`, `../../etc`, a loop), `d PATH` (a directory), `s PATH` (a socket, a special
//! file). The tree is made in a fresh directory under `sys/` and `etc/` and `ops::doctor::collect`
//! walks it: it must finish, never read outside the bound, and `check` and both renderers run.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use libfuzzer_sys::fuzz_target;

/// A relative path with no `..`, or `None`.
fn inside(root: &Path, rel: &str) -> Option<PathBuf> {
    let rel = Path::new(rel.trim_start_matches('/'));
    if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    Some(root.join(rel))
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    static RUN: AtomicU64 = AtomicU64::new(0);
    let root = std::env::temp_dir().join(format!(
        "railyard-fuzz-doctor-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&root);
    if std::fs::create_dir_all(root.join("sys/class/infiniband")).is_err() {
        return;
    }
    for line in text.lines().take(64) {
        let mut parts = line.splitn(3, ' ');
        let (Some(kind), Some(rel)) = (parts.next(), parts.next()) else {
            continue;
        };
        let rest = parts.next().unwrap_or("");
        let Some(path) = inside(&root, rel) else {
            continue;
        };
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = match kind {
            "f" => std::fs::write(&path, rest.replace("\\n", "\n")),
            "l" => std::os::unix::fs::symlink(rest, &path),
            "d" => std::fs::create_dir_all(&path),
            "s" => std::os::unix::net::UnixListener::bind(&path).map(drop),
            _ => Ok(()),
        };
    }
    if let Ok(facts) = ops::doctor::collect(&root, None) {
        let findings = ops::doctor::check(&facts);
        for (path, what) in facts.unreadable.iter().chain(&facts.refused) {
            assert!(!path.split('/').any(|c| c == ".."), "{path}: {what}");
        }
        let _ = findings.len();
    }
    let _ = std::fs::remove_dir_all(&root);
});
