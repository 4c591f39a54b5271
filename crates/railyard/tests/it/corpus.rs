//! The bad-input corpus (`tests/corpus/cases.txt`): every case exits 1 with exactly one
//! `error:` line that names the bad file (for `lint`, one error finding on standard output
//! when lint could read the file), and never panics. The messages are one snapshot, so a
//! reviewer reads them all in one place. Bad flag values (`tests/corpus/flags.txt`) exit 2 with
//! exactly the one line their case gives.

use std::fmt::Write as _;

use crate::railyard;

/// One line of the manifest: a name and the railyard arguments; `@` marks the bad file.
struct Case {
    name: String,
    args: Vec<String>,
    file: String,
}

fn cases() -> Vec<Case> {
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/cases.txt"),
    )
    .expect("tests/corpus/cases.txt");
    manifest
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next().expect("a case name").to_owned();
            let mut file = None;
            let args = words
                .map(|w| match w.strip_prefix('@') {
                    Some(f) => {
                        assert!(file.is_none(), "{name}: more than one `@` file");
                        file = Some(f.to_owned());
                        f.to_owned()
                    }
                    None => w.to_owned(),
                })
                .collect();
            let file = file.unwrap_or_else(|| panic!("{name}: no `@` file"));
            Case { name, args, file }
        })
        .collect()
}

#[test]
fn every_bad_input_gives_one_line_naming_file_and_place() {
    let cases = cases();
    assert!(cases.len() >= 60, "the corpus has {} cases", cases.len());
    let mut names = std::collections::BTreeSet::new();
    let mut all = String::new();
    let mut failures = Vec::new();
    for c in &cases {
        assert!(names.insert(c.name.clone()), "case {} listed twice", c.name);
        assert!(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(&c.file)
                .exists(),
            "{}: {} does not exist",
            c.name,
            c.file
        );
        let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
        let run = railyard(&args);
        let mut errors: Vec<String> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("error: "))
            .map(str::to_owned)
            .collect();
        // lint's findings are its answer, on standard output alone: a bad manifest lint can read
        // is one `error` finding there (snapshotted as `error: FINDING`), with nothing on stderr.
        if c.args[0] == "lint" && errors.is_empty() {
            errors = run
                .stdout
                .lines()
                .filter(|l| l.contains(": error: "))
                .map(|l| format!("error: {l}"))
                .collect();
        }
        let mut why = Vec::new();
        if run.code != 1 {
            why.push(format!("exit {}", run.code));
        }
        if run.stderr.contains("panicked") {
            why.push("panic".to_owned());
        }
        if errors.len() != 1 {
            why.push(format!("{} error lines", errors.len()));
        }
        // The file, then the place and what was expected.
        let prefix = format!("error: {}: ", c.file);
        if errors.len() == 1 && !errors[0].starts_with(&prefix) {
            why.push("does not start with the file".to_owned());
        }
        if errors.len() == 1 && errors[0].len() < prefix.len() + 12 {
            why.push("too short to say what was expected".to_owned());
        }
        if why.is_empty() {
            writeln!(all, "{}: {}", c.name, errors[0]).unwrap();
        } else {
            failures.push(format!("{}: {}: {}", c.name, why.join(", "), run.stderr));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    insta::assert_snapshot!(all);
}

#[test]
fn every_bad_flag_value_gives_its_one_line() {
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/flags.txt"),
    )
    .expect("tests/corpus/flags.txt");
    let lines: Vec<&str> = manifest
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert!(
        lines.len() % 2 == 0,
        "flags.txt: a case without its `= ` line"
    );
    let mut names = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    for case in lines.chunks(2) {
        let mut words = case[0].split_whitespace();
        let name = words.next().expect("a case name");
        assert!(names.insert(name), "case {name} listed twice");
        let expected = case[1]
            .strip_prefix("= ")
            .unwrap_or_else(|| panic!("{name}: expected `= error: …` after the arguments"));
        let run = railyard(&words.collect::<Vec<_>>());
        let got = run.stderr.trim_end();
        if run.code != 2 || got != expected || !run.stdout.is_empty() {
            failures.push(format!("{name}: exit {}: {got}", run.code));
        }
    }
    assert!(names.len() >= 20, "flags.txt has {} cases", names.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
