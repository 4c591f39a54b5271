//! The book's examples, run: every ```` ```console ```` block of `docs/src` is executed against
//! the built binary and its shown output compared; every ```` ```usage ```` synopsis is checked
//! against the commands' `--help`. The conventions are documented in the book itself
//! (`docs/src/reference/book-examples.md`).
//!
//! `RAILYARD_BLESS=1` rewrites the shown outputs with what the binary prints now;
//! `RAILYARD_BOOK_SLOW=1` also runs the blocks marked `slow` (CI sets it).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// A page's path as from the repository root, for messages.
fn shown_path(page: &Path) -> String {
    page.strip_prefix(repo_root())
        .unwrap_or(page)
        .display()
        .to_string()
}

/// Every Markdown page of the book, sorted (so failures and blessing are in a fixed order).
pub fn book_pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("docs/src is readable")
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut pages = Vec::new();
    walk(&repo_root().join("docs/src"), &mut pages);
    pages
}

/// The book's pages and the README: the files whose usage synopses are checked.
fn pages_and_readme() -> Vec<PathBuf> {
    let mut files = book_pages();
    files.push(repo_root().join("README.md"));
    files
}

/// One fenced block: its info string and its lines, with the 0-based line index of its first
/// content line in the file.
pub struct Fence {
    /// The words of the info string (` ```console,slow ` gives `["console", "slow"]`).
    pub info: Vec<String>,
    /// Index in the file of the first line inside the fence.
    pub first_line: usize,
    /// The lines inside the fence, the fence's own indentation removed.
    pub lines: Vec<String>,
    /// The fence's indentation (a block inside a list item), put back when blessing.
    pub indent: usize,
}

/// The fenced blocks of a Markdown text (fences of three or more backticks at any indent).
pub fn fences(text: &str) -> Vec<Fence> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        if let Some(rest) = trimmed.strip_prefix("```") {
            let indent = lines[i].len() - trimmed.len();
            let info = rest
                .split([',', ' '])
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect();
            let first_line = i + 1;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                let line = lines[i];
                let cut = line.len() - line.trim_start().len();
                body.push(line[cut.min(indent)..].to_owned());
                i += 1;
            }
            out.push(Fence {
                info,
                first_line,
                lines: body,
                indent,
            });
        }
        i += 1;
    }
    out
}

/// One `$ …` command of a console block and the output shown under it.
struct Example {
    /// The command line, continuation lines joined.
    command: String,
    /// The shown output lines (an `[exit N]` line removed).
    shown: Vec<String>,
    /// The exit code the block states (`[exit N]`), else 0.
    exit: i32,
    /// File line range (0-based, end exclusive) of the shown output, for blessing.
    output_lines: std::ops::Range<usize>,
}

fn examples(fence: &Fence) -> Result<Vec<Example>, String> {
    let mut out: Vec<Example> = Vec::new();
    let mut i = 0;
    while i < fence.lines.len() {
        let line = &fence.lines[i];
        let Some(first) = line.strip_prefix("$ ") else {
            return Err(format!(
                "line {}: a console block starts each command with `$ `, found {line:?}",
                fence.first_line + i + 1
            ));
        };
        let mut command = first.to_owned();
        while command.ends_with('\\') && i + 1 < fence.lines.len() {
            command.pop();
            i += 1;
            command.push(' ');
            command.push_str(fence.lines[i].trim());
        }
        i += 1;
        let start = i;
        while i < fence.lines.len() && !fence.lines[i].starts_with("$ ") {
            i += 1;
        }
        let mut shown: Vec<String> = fence.lines[start..i].to_vec();
        let mut exit = 0;
        if let Some(code) = shown
            .last()
            .and_then(|l| l.strip_prefix("[exit "))
            .and_then(|l| l.strip_suffix(']'))
        {
            exit = code
                .parse()
                .map_err(|_| format!("bad exit line `[exit {code}]`"))?;
            shown.pop();
        }
        out.push(Example {
            command,
            shown,
            exit,
            output_lines: fence.first_line + start..fence.first_line + i,
        });
    }
    Ok(out)
}

/// Split a command line into words: spaces separate, '…' and "…" quote, nothing else is
/// special; pipes, redirections and variables are refused so every example is one command.
pub fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' | '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some(other) => word.push(other),
                        None => return Err(format!("unclosed quote in {line:?}")),
                    }
                }
            }
            '|' | '>' | '<' | '$' | ';' | '&' | '`' | '*' => {
                return Err(format!(
                    "`{c}` in {line:?}: an example is one railyard command, without shell syntax"
                ));
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The shown form of an output: lines without trailing spaces, no trailing blank lines.
fn normalise(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_owned()).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// A scratch copy of the repository root: a fresh directory whose entries are symbolic links
/// to the root's (so `data/…` and `crates/…` resolve), where files the examples write land.
fn sandbox(name: &str) -> PathBuf {
    let dir = crate::temp_dir(name);
    let root = repo_root();
    for entry in std::fs::read_dir(&root).expect("the root is readable") {
        let entry = entry.expect("a directory entry");
        let file_name = entry.file_name();
        if file_name == "target" || file_name == ".git" {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), dir.join(&file_name)).expect("a symlink");
    }
    dir
}

fn env_set(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}

/// Run the console blocks of every page (the `slow` ones only when `slow`); returns the
/// failures, one paragraph each. With `bless`, pages are rewritten with the actual outputs.
fn run_console_blocks(slow: bool, bless: bool) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for page in book_pages() {
        let rel = shown_path(&page);
        let text = std::fs::read_to_string(&page).expect("a readable page");
        let mut file_lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let mut replacements: Vec<(std::ops::Range<usize>, Vec<String>)> = Vec::new();
        let mut dir: Option<PathBuf> = None;
        for fence in fences(&text) {
            if fence.info.first().map(String::as_str) != Some("console") {
                continue;
            }
            if fence.info.iter().any(|w| w == "slow") != slow {
                continue;
            }
            let examples = match examples(&fence) {
                Ok(e) => e,
                Err(e) => {
                    failures.push(format!("{rel}: {e}"));
                    continue;
                }
            };
            let sandbox_dir = dir
                .get_or_insert_with(|| {
                    let stem = rel.replace(['/', '.'], "-");
                    sandbox(&format!(
                        "book-{stem}-{}",
                        if slow { "slow" } else { "fast" }
                    ))
                })
                .clone();
            let mut cwd = sandbox_dir.clone();
            for example in examples {
                let words = match shell_words(&example.command) {
                    Ok(w) => w,
                    Err(e) => {
                        failures.push(format!("{rel}: {e}"));
                        continue;
                    }
                };
                match words.first().map(String::as_str) {
                    Some("cd") if words.len() == 2 => {
                        cwd = cwd.join(&words[1]);
                        continue;
                    }
                    Some("railyard") => {}
                    _ => {
                        failures.push(format!(
                            "{rel}: `{}`: a console block runs `railyard …` (or `cd DIR`) only",
                            example.command
                        ));
                        continue;
                    }
                }
                let out = Command::new(env!("CARGO_BIN_EXE_railyard"))
                    .args(&words[1..])
                    .current_dir(&cwd)
                    .env_remove("RAILYARD_BLESS")
                    .output()
                    .expect("the railyard binary runs");
                ran += 1;
                let code = out.status.code().unwrap_or(-1);
                let printed = format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                let actual = normalise(&printed);
                let shown = normalise(&example.shown.join("\n"));
                if bless {
                    let mut new = actual.clone();
                    if code != 0 {
                        new.push(format!("[exit {code}]"));
                    }
                    let pad = " ".repeat(fence.indent);
                    let new = new
                        .into_iter()
                        .map(|l| if l.is_empty() { l } else { format!("{pad}{l}") })
                        .collect();
                    replacements.push((example.output_lines.clone(), new));
                    continue;
                }
                if code != example.exit {
                    failures.push(format!(
                        "{rel}: `{}` exited {code}, the book says {}:\n{printed}",
                        example.command, example.exit
                    ));
                } else if actual != shown {
                    let first = actual
                        .iter()
                        .zip(&shown)
                        .position(|(a, s)| a != s)
                        .unwrap_or(actual.len().min(shown.len()));
                    failures.push(format!(
                        "{rel}: `{}`: output differs from the book at its line {}:\n  book:   {:?}\n  actual: {:?}\n(RAILYARD_BLESS=1 rewrites the book's outputs)",
                        example.command,
                        first + 1,
                        shown.get(first),
                        actual.get(first)
                    ));
                }
            }
        }
        if bless && !replacements.is_empty() {
            replacements.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
            for (range, new) in replacements {
                file_lines.splice(range, new);
            }
            let mut out = file_lines.join("\n");
            out.push('\n');
            std::fs::write(&page, out).expect("the page is writable");
        }
    }
    (ran, failures)
}

#[test]
fn every_console_example_in_the_book_prints_what_the_book_shows() {
    let (ran, failures) = run_console_blocks(false, env_set("RAILYARD_BLESS"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran >= 10, "only {ran} examples ran");
}

#[test]
fn the_slow_console_examples_print_what_the_book_shows_when_asked() {
    // The main run and other long runs: CI runs them (`RAILYARD_BOOK_SLOW=1` in `.ci/run`).
    if !env_set("RAILYARD_BOOK_SLOW") {
        return;
    }
    let (ran, failures) = run_console_blocks(true, env_set("RAILYARD_BLESS"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran >= 1, "no slow example ran");
}

#[test]
fn every_usage_synopsis_names_real_commands_and_flags() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages_and_readme() {
        let text = std::fs::read_to_string(&page).expect("a readable page");
        for fence in fences(&text) {
            if fence.info.first().map(String::as_str) != Some("usage") {
                continue;
            }
            for line in &fence.lines {
                let line = line.strip_prefix("$ ").unwrap_or(line);
                let Some(rest) = line.strip_prefix("railyard ") else {
                    continue;
                };
                let rest = rest.split('#').next().unwrap_or("");
                let words: Vec<&str> = rest.split_whitespace().collect();
                let path: Vec<&str> = words
                    .iter()
                    .take_while(|w| {
                        !w.starts_with('-') && w.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                    })
                    .copied()
                    .collect();
                let mut args = path.clone();
                args.push("--help");
                let out = crate::railyard(&args);
                checked += 1;
                if out.code != 0 {
                    failures.push(format!(
                        "{}: `railyard {}` is not a command: {}",
                        shown_path(&page),
                        path.join(" "),
                        out.stderr
                    ));
                    continue;
                }
                for flag in words.iter().filter(|w| w.starts_with("--")) {
                    let name: String = flag
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                        .collect();
                    if name.len() > 2 && !out.stdout.contains(&name) {
                        failures.push(format!(
                            "{}: `railyard {}` has no flag `{name}`",
                            shown_path(&page),
                            path.join(" ")
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 5, "only {checked} synopsis lines checked");
}

#[test]
fn railyard_commands_appear_only_in_console_and_usage_blocks() {
    // A command in any other block would be shown without being run.
    let mut failures = Vec::new();
    let readme = repo_root().join("README.md");
    for page in pages_and_readme() {
        let text = std::fs::read_to_string(&page).expect("a readable page");
        // The README's `cargo run --release -- …` is the main run's one home (checked below).
        let cargo_run_allowed = page == readme;
        for fence in fences(&text) {
            let kind = fence.info.first().map(String::as_str).unwrap_or("");
            if kind == "console" || kind == "usage" {
                continue;
            }
            for (i, line) in fence.lines.iter().enumerate() {
                let line = line.trim_start();
                let line = line.strip_prefix("$ ").unwrap_or(line);
                let cargo_run = line.starts_with("cargo run --release -- ") && !cargo_run_allowed;
                if line.starts_with("railyard ") || cargo_run {
                    failures.push(format!(
                        "{}:{}: `{line}` in a ```{kind} block: show it in a console block (run by this test) or a usage block",
                        shown_path(&page),
                        fence.first_line + i + 1
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The first command of the README's first block: the main run.
fn readme_main_run() -> String {
    let text = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    fences(&text)
        .into_iter()
        .flat_map(|f| f.lines)
        .find_map(|l| l.strip_prefix("cargo run --release -- ").map(str::to_owned))
        .expect("the README shows the main run as `cargo run --release -- …`")
}

#[test]
fn the_books_main_run_is_the_readmes() {
    // The README holds the main run; the book's introduction shows it with its output. Change
    // the README's line, copy it here, then bless with RAILYARD_BOOK_SLOW=1.
    let page = repo_root().join("docs/src/introduction.md");
    let text = std::fs::read_to_string(&page).expect("introduction.md");
    let shown = fences(&text)
        .into_iter()
        .filter(|f| f.info.iter().any(|w| w == "slow"))
        .flat_map(|f| f.lines)
        .find_map(|l| l.strip_prefix("$ railyard ").map(str::to_owned))
        .expect("the introduction shows the main run in a console,slow block");
    assert_eq!(
        shown,
        readme_main_run(),
        "docs/src/introduction.md's main run differs from the README's"
    );
}

#[test]
fn shell_words_splits_quotes_and_refuses_shell_syntax() {
    assert_eq!(
        shell_words("railyard a 'b c' \"d\"").unwrap(),
        ["railyard", "a", "b c", "d"]
    );
    assert!(shell_words("railyard a | head").is_err());
    assert!(shell_words("railyard --trace $T").is_err());
    assert!(shell_words("railyard 'open").is_err());
}
