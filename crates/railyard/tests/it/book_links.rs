//! The book's and README's links, checked without a network: every relative link and image
//! names a file of the repository (inside `docs/src` for the book, which is all mdBook
//! publishes), every `#anchor` a heading of its page, every page is in `SUMMARY.md`, and no
//! text cites an issue number a reader cannot see.

use super::book::{book_pages, fences};
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// The lines of a page outside fenced blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            out.push((i + 1, line.to_owned()));
        }
    }
    out
}

/// A line without its code spans (so `[a](b)` inside backticks is not a link).
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The targets of inline links and images, `[text](target)` and `![alt](target)`.
pub fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut out = Vec::new();
    let mut rest = line.as_str();
    while let Some(pos) = rest.find("](") {
        let after = &rest[pos + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        out.push(target.to_owned());
        rest = &after[end..];
    }
    out
}

/// The anchor mdBook (and GitHub, for these headings) gives a heading's text.
pub fn anchor(heading: &str) -> String {
    let text = without_code_spans_keep_text(heading);
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// Heading text as rendered: backticks dropped, `[text](link)` as its text.
fn without_code_spans_keep_text(heading: &str) -> String {
    let mut out = String::new();
    let mut rest = heading.replace('`', "");
    while let Some(pos) = rest.find("](") {
        let Some(end) = rest[pos..].find(')') else {
            break;
        };
        let open = rest[..pos].rfind('[').unwrap_or(pos);
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..pos]);
        rest = rest[pos + end + 1..].to_owned();
    }
    out.push_str(&rest);
    out
}

/// The anchors of a page's headings, duplicates numbered as mdBook numbers them.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let trimmed = line.trim_start_matches('#');
        if trimmed.len() < line.len() && trimmed.starts_with(' ') {
            let base = anchor(trimmed.trim());
            let mut id = base.clone();
            let mut n = 1;
            while out.contains(&id) {
                id = format!("{base}-{n}");
                n += 1;
            }
            out.insert(id);
        }
    }
    out
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every broken link of one file (`file` relative to the root); `inside`: where its relative
/// links must stay.
fn check_file(root: &Path, file: &Path, inside: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root.join(file)).expect("a readable page");
    let mut problems = Vec::new();
    for (n, line) in prose_lines(&text) {
        for target in link_targets(&line) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            if target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.to_owned()
            } else {
                normalise(&file.parent().unwrap_or(Path::new("")).join(path))
            };
            let at = format!("{}:{n}: `{target}`", file.display());
            if !resolved.starts_with(inside) {
                problems.push(format!(
                    "{at}: leaves {} (the published book holds only that folder)",
                    inside.display()
                ));
                continue;
            }
            if !root.join(&resolved).exists() {
                problems.push(format!("{at}: no file {}", resolved.display()));
                continue;
            }
            if let Some(fragment) = fragment {
                let target_text = std::fs::read_to_string(root.join(&resolved)).unwrap_or_default();
                if !anchors(&target_text).contains(fragment) {
                    problems.push(format!(
                        "{at}: no heading with anchor #{fragment} in {}",
                        resolved.display()
                    ));
                }
            }
        }
    }
    problems
}

fn rel(root: &Path, page: &Path) -> PathBuf {
    page.canonicalize()
        .expect("a page path")
        .strip_prefix(root)
        .expect("a page under the root")
        .to_owned()
}

#[test]
fn every_relative_link_and_anchor_of_the_book_and_readme_resolves() {
    let root = repo_root();
    let mut problems = check_file(&root, Path::new("README.md"), Path::new(""));
    for page in book_pages() {
        problems.extend(check_file(&root, &rel(&root, &page), Path::new("docs/src")));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_book_page_is_in_the_summary_and_every_summary_entry_exists() {
    let root = repo_root();
    let summary = std::fs::read_to_string(root.join("docs/src/SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = summary.lines().flat_map(link_targets).collect();
    let mut problems = Vec::new();
    for target in &listed {
        if !root.join("docs/src").join(target).is_file() {
            problems.push(format!("SUMMARY.md lists {target}, which does not exist"));
        }
    }
    for page in book_pages() {
        let path = rel(&root, &page);
        let inside = path.strip_prefix("docs/src").unwrap().display().to_string();
        if inside != "SUMMARY.md" && !listed.contains(&inside) {
            problems.push(format!("docs/src/{inside} is not in SUMMARY.md"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(listed.len() >= 20, "{} pages", listed.len());
}

/// `issue 17`, `issues 30`, `#33` (not `NVIDIA/nccl#892`, which names its repository).
pub fn issue_references(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lower = line.to_lowercase();
    let bytes = lower.as_bytes();
    for word in ["issue ", "issues "] {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(word) {
            let at = from + pos;
            let digits = &lower[at + word.len()..];
            let starts_word = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
            if starts_word && digits.starts_with(|c: char| c.is_ascii_digit()) {
                out.push(line[at..].chars().take(12).collect());
            }
            from = at + word.len();
        }
    }
    for (at, _) in lower.match_indices('#') {
        let before = if at == 0 { b' ' } else { bytes[at - 1] };
        let named_repo = before.is_ascii_alphanumeric() || before == b'-' || before == b'_';
        if !named_repo && lower[at + 1..].starts_with(|c: char| c.is_ascii_digit()) {
            out.push(line[at..].chars().take(6).collect());
        }
    }
    out
}

#[test]
fn no_page_cites_an_issue_number_a_reader_cannot_see() {
    let root = repo_root();
    let mut files = vec![root.join("README.md")];
    files.extend(book_pages());
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for found in issue_references(line) {
                let shown = file
                    .strip_prefix(&root)
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                problems.push(format!("{shown}:{}: {found}…", n + 1));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The repository paths a line names in code spans (`crates/…`, `data/…`, …), placeholders
/// (`{a,b}`, `<case>`, `*`, `…`, `N`) left out.
pub fn repository_paths(line: &str) -> Vec<String> {
    const ROOTS: [&str; 6] = ["crates/", "data/", "scripts/", "examples/", "docs/", ".ci/"];
    let mut out = Vec::new();
    for (i, span) in line.split('`').enumerate() {
        if i % 2 == 0 {
            continue;
        }
        let path = span.trim_end_matches([')', '.', ',', ':', ';']);
        let placeholder = path
            .chars()
            .any(|c| "{}<>*…|$ ".contains(c) || c.is_ascii_uppercase());
        if ROOTS.iter().any(|r| path.starts_with(r)) && !placeholder {
            out.push(path.to_owned());
        }
    }
    out
}

#[test]
fn every_repository_path_the_book_and_readme_name_exists() {
    // A page that names a file that is not in the repository sends the reader nowhere.
    let root = repo_root();
    let mut files = vec![root.join("README.md")];
    files.extend(book_pages());
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in prose_lines(&text) {
            for path in repository_paths(&line) {
                checked += 1;
                if !root.join(&path).exists() {
                    let shown = file
                        .strip_prefix(&root)
                        .unwrap_or(&file)
                        .display()
                        .to_string();
                    problems.push(format!("{shown}:{n}: `{path}` is not in the repository"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= 50, "only {checked} paths checked");
}

#[test]
fn the_readme_is_a_front_page() {
    let text = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; the manual is docs/src"
    );
    assert!(
        fences(&text)
            .iter()
            .any(|f| f.lines.iter().any(|l| l.trim() == "cargo test --workspace")),
        "README shows the test command"
    );
}

#[test]
fn the_checkers_find_what_they_look_for() {
    assert_eq!(
        link_targets("see [a](b.md#c) and `[x](y)` ![i](p.png)"),
        ["b.md#c", "p.png"]
    );
    assert_eq!(anchor("Differences from KAI"), "differences-from-kai");
    assert_eq!(
        anchor("`railyard topo show --cluster …`"),
        "railyard-topo-show---cluster-"
    );
    assert_eq!(
        anchor("Network-aware placement (`place --network-aware`)"),
        "network-aware-placement-place---network-aware"
    );
    assert_eq!(issue_references("fixed in issue 33 and #30").len(), 2);
    assert!(issue_references("NVIDIA/nccl#892, coreweave/nccl-tests#43").is_empty());
    assert!(issue_references("tissue 3").is_empty());
    assert_eq!(
        repository_paths("see `data/a.csv`, `crates/x/<case>/` and `DESIGN.md`"),
        ["data/a.csv"]
    );
}
