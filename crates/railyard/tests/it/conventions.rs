//! The command-line conventions, checked on clap's command tree (every subcommand, including
//! ones added later) and on the binary's exit codes.
//!
//! The rules: every command that prints a result takes `-o/--output` with the same values
//! (text, json, yaml, wide; doctor adds prometheus); `--format` only selects a *kind* of file
//! (`topo export --format kueue|…`, `launch --format shell|…`), never the output format; every
//! flag that writes a file is `--out FILE` (`--out-dir DIR` for several); `-q`/`-v` are global;
//! help texts end without a period; bad flag values, out-of-range numbers and missing flags
//! exit 2.

use clap::CommandFactory;
use railyard::cli::Cli;
use railyard::output::OutputFormat;

/// Commands that print no result document, and why.
const NO_OUTPUT: [(&str, &str); 6] = [
    (
        "railyard sweep",
        "prints the merged table; its JSON and HTML go to files in --out-dir",
    ),
    ("railyard completions", "prints a shell script"),
    ("railyard man", "prints roff"),
    ("railyard schema", "prints a JSON Schema, always JSON"),
    (
        "railyard trace synth",
        "prints a trace, railyard's native CSV",
    ),
    (
        "railyard launch",
        "prints a launch file whose kind --format selects",
    ),
];

/// Commands whose `--format` selects a kind of file, not the output format.
const FORMAT_KINDS: [&str; 2] = ["railyard topo export", "railyard launch"];

/// Every leaf command with its full name.
fn leaves() -> Vec<(String, clap::Command)> {
    fn walk(prefix: &str, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
        let name = format!("{prefix} {}", cmd.get_name()).trim().to_owned();
        if cmd.has_subcommands() {
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                walk(&name, sub, out);
            }
        } else {
            out.push((name, cmd.clone()));
        }
    }
    let mut out = Vec::new();
    let mut root = Cli::command();
    root.build();
    walk("", &root, &mut out);
    out
}

#[test]
fn every_result_printing_command_has_the_same_dash_o() {
    let leaves = leaves();
    assert!(leaves.len() >= 15, "{} commands", leaves.len());
    for (name, cmd) in &leaves {
        let output = cmd.get_arguments().find(|a| a.get_id() == "output");
        let exempt = NO_OUTPUT.iter().any(|(n, _)| n == name);
        let Some(output) = output else {
            assert!(exempt, "{name} has no -o/--output");
            continue;
        };
        assert!(!exempt, "{name} has -o/--output: drop it from NO_OUTPUT");
        assert_eq!(output.get_short(), Some('o'), "{name}: --output without -o");
        assert_eq!(output.get_long(), Some("output"), "{name}");
        let values: Vec<String> = output
            .get_possible_values()
            .iter()
            .map(|v| v.get_name().to_owned())
            .collect();
        let expected: Vec<String> = OutputFormat::NAMES.map(str::to_owned).to_vec();
        let extra = if name == "railyard doctor" {
            vec!["prometheus".to_owned()]
        } else {
            vec![]
        };
        assert_eq!(values, [expected, extra].concat(), "{name}: -o values");
        assert_eq!(
            output.get_default_values(),
            ["text"],
            "{name}: -o defaults to text"
        );
    }
}

#[test]
fn format_selects_a_kind_of_file_and_files_are_written_with_out() {
    for (name, cmd) in leaves() {
        for arg in cmd.get_arguments() {
            let long = arg.get_long().unwrap_or_default();
            if long == "format" {
                assert!(
                    FORMAT_KINDS.contains(&name.as_str()),
                    "{name}: --format where -o/--output is meant"
                );
            }
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            let writes = help.to_lowercase().starts_with("write");
            if writes {
                assert!(
                    long == "out" || long == "out-dir",
                    "{name} --{long} writes a file: call it --out (help: {help})"
                );
            }
            if long == "out" {
                assert_eq!(
                    arg.get_value_names().map(|v| v[0].as_str()),
                    Some("FILE"),
                    "{name} --out"
                );
            }
        }
    }
}

#[test]
fn quiet_and_verbose_are_global() {
    let root = Cli::command();
    for (id, short) in [("quiet", 'q'), ("verbose", 'v')] {
        let arg = root
            .get_arguments()
            .find(|a| a.get_id() == id)
            .unwrap_or_else(|| panic!("no --{id}"));
        assert!(arg.is_global_set(), "--{id} is not global");
        assert_eq!(arg.get_short(), Some(short));
    }
}

#[test]
fn help_texts_end_without_a_period() {
    fn walk(prefix: &str, cmd: &clap::Command, bad: &mut Vec<String>) {
        let name = format!("{prefix} {}", cmd.get_name()).trim().to_owned();
        if let Some(about) = cmd.get_about() {
            if about.to_string().ends_with('.') {
                bad.push(format!("{name}: {about}"));
            }
        }
        for arg in cmd.get_arguments() {
            if let Some(help) = arg.get_help() {
                if help.to_string().ends_with('.') {
                    bad.push(format!("{name} {}: {help}", arg.get_id()));
                }
            }
        }
        for sub in cmd.get_subcommands() {
            walk(&name, sub, bad);
        }
    }
    let mut bad = Vec::new();
    walk("", &Cli::command(), &mut bad);
    assert!(
        bad.is_empty(),
        "help ending with a period:\n{}",
        bad.join("\n")
    );
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let cases: &[&[&str]] = &[
        &["fabric", "ecmp", "--paths", "0", "--flows", "4"],
        &[
            "fabric", "ecmp", "--paths", "4", "--flows", "4", "--trials", "-1",
        ],
        &["fabric", "mtu", "--netdev-mtu", "100"],
        &[
            "topo",
            "show",
            "--cluster",
            "preset:fat-tree-k8",
            "-o",
            "xml",
        ],
        &["topo", "show"],
        &[
            "topo",
            "export",
            "--cluster",
            "preset:fat-tree-k8",
            "--format",
            "slurm",
            "-o",
            "json",
        ],
        &[
            "simulate",
            "--cluster",
            "preset:fat-tree-k8",
            "--trace",
            "x.csv",
            "--cycle-s",
            "-1",
        ],
        &[
            "simulate",
            "--cluster",
            "preset:fat-tree-k8",
            "--trace",
            "x.csv",
            "--horizon-s",
            "0",
        ],
        &[
            "simulate",
            "--cluster",
            "preset:fat-tree-k8",
            "--trace",
            "x.csv",
            "--routing",
            "foo",
        ],
        &[
            "launch",
            "--cluster",
            "preset:fat-tree-k8",
            "--placement",
            "p.json",
            "--port",
            "0",
        ],
        &["doctor", "-o", "csv"],
    ];
    for args in cases {
        let run = crate::railyard(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.starts_with("error: "),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn dash_o_yaml_is_the_json_document() {
    let json = crate::railyard(&[
        "topo",
        "show",
        "--cluster",
        "preset:fat-tree-k8",
        "-o",
        "json",
    ]);
    let yaml = crate::railyard(&[
        "topo",
        "show",
        "--cluster",
        "preset:fat-tree-k8",
        "-o",
        "yaml",
    ]);
    assert_eq!(
        (json.code, yaml.code),
        (0, 0),
        "{}{}",
        json.stderr,
        yaml.stderr
    );
    let from_json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let from_yaml: serde_json::Value = serde_norway::from_str(&yaml.stdout).unwrap();
    assert_eq!(from_json, from_yaml);
    // A Kubernetes document exported as JSON is the YAML one.
    let yaml = crate::railyard(&[
        "topo",
        "export",
        "--cluster",
        "preset:fat-tree-k8",
        "--format",
        "kueue",
    ]);
    let json = crate::railyard(&[
        "topo",
        "export",
        "--cluster",
        "preset:fat-tree-k8",
        "--format",
        "kueue",
        "-o",
        "json",
    ]);
    assert_eq!(
        (json.code, yaml.code),
        (0, 0),
        "{}{}",
        json.stderr,
        yaml.stderr
    );
    let from_json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let from_yaml: serde_json::Value = serde_norway::from_str(&yaml.stdout).unwrap();
    assert_eq!(from_json, from_yaml);
}

#[test]
fn verbose_adds_debug_lines_and_quiet_removes_notes() {
    let args = [
        "topo",
        "show",
        "--cluster",
        "tests/fixtures/nodes/kind-workers.yaml",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
    ];
    let plain = crate::railyard(&args);
    assert!(plain.stderr.contains("note: "), "{}", plain.stderr);
    assert!(!plain.stderr.contains("debug: "), "{}", plain.stderr);
    let verbose = crate::railyard(&[&["-v"], &args[..]].concat());
    assert!(verbose.stderr.contains("note: "), "{}", verbose.stderr);
    assert!(
        verbose.stderr.contains("debug: cluster "),
        "{}",
        verbose.stderr
    );
    assert_eq!(verbose.stdout, plain.stdout);
}

#[test]
fn dash_reads_standard_input() {
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/ncp-clean.yaml"),
    );
    let Ok(manifest) = manifest else { return };
    let run = crate::railyard_stdin(&["lint", "-"], &manifest);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn collective_json_records_the_version_and_the_command_line() {
    let args = [
        "fabric",
        "collective",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        "tests/fixtures/sched/jobs/fat-tree-ring-24.yaml",
        "--collective",
        "allreduce",
        "-o",
        "json",
    ];
    let run = crate::railyard(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["railyard_version"], env!("CARGO_PKG_VERSION"));
    let command = crate::strings(&v["command"]);
    assert_eq!(command, [&["railyard"], &args[..]].concat());
}

#[test]
fn place_wide_adds_a_column_per_level() {
    let args = [
        "-q",
        "place",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        "tests/fixtures/sched/jobs/fat-tree-ring-24.yaml",
    ];
    let header = |extra: &[&str]| {
        let out = crate::ok(&[&args[..], extra].concat());
        let line = out
            .lines()
            .find(|l| l.starts_with("rank"))
            .expect("pod table")
            .to_owned();
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let text = header(&[]);
    let wide = header(&["-o", "wide"]);
    assert_eq!(
        text.last().map(String::as_str),
        Some("fabric.topograph.run/tier-0")
    );
    assert_eq!(
        wide[wide.len() - 3..],
        [
            "fabric.topograph.run/tier-2",
            "fabric.topograph.run/tier-1",
            "fabric.topograph.run/tier-0"
        ]
    );
}

/// The header line of the first table in `out` whose header starts with `first`, as columns
/// (split on two or more spaces), and the number of lines under it up to the next blank line.
fn table_at(out: &str, first: &str) -> (Vec<String>, usize) {
    let mut lines = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(first));
    let header = lines
        .next()
        .unwrap_or_else(|| panic!("no `{first}` table in\n{out}"));
    let columns = header.split("  ").map(str::trim).filter(|c| !c.is_empty());
    let rows = lines.take_while(|l| !l.is_empty()).count();
    (columns.map(str::to_owned).collect(), rows)
}

#[test]
fn wide_adds_columns_where_a_command_has_more_to_say() {
    // (command, header start in text, header start in wide, columns wide adds)
    let cases: [(&[&str], &str, &str, &[&str]); 4] = [
        (
            &[
                "queues",
                "share",
                "--queues",
                "tests/fixtures/sched/queues/kai-teams.yaml",
                "--demand",
                "tests/fixtures/sched/demand.yaml",
            ],
            "queue",
            "queue",
            &["prio", "gpu quota", "gpu limit", "weight"],
        ),
        (
            &[
                "simulate",
                "--cluster",
                "preset:philly-512",
                "--trace",
                "tests/fixtures/traces/small.csv",
                "--compare",
                "fifo,fair-share",
            ],
            "policy",
            "policy",
            // Headers of two lines (the unit under the name): their first lines.
            &[
                "unfinished",
                "p50",
                "util",
                "makespan h",
                "frag",
                "GPU frag",
                "preempted",
                "lost",
            ],
        ),
        (
            &["cables", "plan", "--cluster", "preset:fat-tree-k8"],
            "tier",
            "tier",
            &["lower end", "upper end", "cables"],
        ),
        (
            &[
                "fabric",
                "collective",
                "--cluster",
                "preset:fat-tree-k8",
                "--placement",
                "examples/placements/fat-tree-k8-cross-pod.json",
                "--collective",
                "allreduce",
                "--sizes",
                "8:1K",
            ],
            "#       size",
            "size",
            &["bytes", "channels"],
        ),
    ];
    for (args, text_first, wide_first, added) in cases {
        let text = crate::ok(&[&["-q"], args].concat());
        let wide = crate::ok(&[&["-q"], args, &["-o", "wide"]].concat());
        let (text_columns, text_rows) = table_at(&text, text_first);
        let (wide_columns, wide_rows) = table_at(&wide, wide_first);
        for column in added {
            assert!(
                wide_columns.iter().any(|c| c == column)
                    && !text_columns.iter().any(|c| c == column),
                "{args:?}: `{column}` only in wide: {text_columns:?} / {wide_columns:?}"
            );
        }
        if args[0] == "cables" {
            assert_eq!(wide_rows, 384, "{args:?}: a row per link in wide");
        } else if args[0] == "fabric" {
            assert_eq!((text_rows, wide_rows), (9, 8), "{args:?}: 8 sizes");
        } else {
            assert_eq!(text_rows, wide_rows, "{args:?}: the same rows");
        }
    }
    // doctor: why and what to do under every finding, passed checks too.
    let doctor = ["doctor", "--root", "tests/fixtures/doctor/healthy"];
    let why = |out: String| {
        out.lines()
            .filter(|l| l.trim_start().starts_with("why: "))
            .count()
    };
    assert_eq!(why(crate::ok(&doctor)), 0);
    assert!(why(crate::ok(&[&doctor[..], &["-o", "wide"]].concat())) >= 9);
}

#[test]
fn wide_is_text_where_a_command_says_so() {
    let cases: [&[&str]; 5] = [
        &["topo", "show", "--cluster", "preset:fat-tree-k8"],
        &[
            "fabric", "ecmp", "--paths", "8", "--flows", "32", "--trials", "100",
        ],
        &["fabric", "mtu", "--netdev-mtu", "4200"],
        &["lint", "tests/fixtures/lint/kueue-topology.yaml"],
        &[
            "queues",
            "validate",
            "tests/fixtures/sched/queues/kai-teams.yaml",
        ],
    ];
    for args in cases {
        let words = if args[0] == "lint" { 1 } else { 2 };
        let help = crate::ok(&[&args[..words], &["--help"]].concat());
        assert!(help.contains("wide: as text"), "{args:?}: -o help says so");
        let text = crate::ok(&[&["-q"], args].concat());
        assert_eq!(
            text,
            crate::ok(&[&["-q"], args, &["-o", "wide"]].concat()),
            "{args:?}"
        );
    }
}
