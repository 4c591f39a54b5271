//! Conventions of the core crate, checked on its sources: every module starts with a `//!` doc;
//! no clock, environment, file system, unseeded randomness or hash maps (whose iteration order
//! could reach a decision); no `dbg!`/`todo!`.

use std::path::Path;

#[test]
fn sched_sources_follow_the_core_conventions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("src")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    assert!(files.len() >= 5);
    let forbidden = [
        "Instant::now",
        "SystemTime",
        "std::env",
        "std::fs",
        "HashMap",
        "HashSet",
        "thread_rng",
        "dbg!",
        "todo!",
        "println!",
    ];
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        assert!(
            text.starts_with("//!"),
            "{} must start with a `//!` module doc",
            f.display()
        );
        for word in forbidden {
            assert!(
                !text.contains(word),
                "{} uses `{word}`; the core is pure and deterministic",
                f.display()
            );
        }
    }
}
