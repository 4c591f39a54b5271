//! The command line as a whole: shell completions that complete, manual pages for every command.

use crate::{ok, temp_dir};

#[test]
fn bash_completion_completes_subcommands() {
    let script = ok(&["completions", "bash"]);
    let dir = temp_dir("completions");
    let path = dir.join("railyard.bash");
    std::fs::write(&path, script).unwrap();
    // What bash does on `railyard pl<TAB>`: call the completion function with the words so far.
    let probe = format!(
        "source {}; COMP_WORDS=(railyard pl); COMP_CWORD=1; COMP_LINE='railyard pl'; COMP_POINT=11; _railyard railyard pl railyard; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &probe])
        .output()
        .expect("bash runs");
    let words = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        words.trim(),
        "place",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // And flags of a subcommand.
    let probe = format!(
        "source {}; COMP_WORDS=(railyard place --st); COMP_CWORD=2; _railyard railyard --st place; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &probe])
        .output()
        .expect("bash runs");
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), "--state");
}

#[test]
fn completion_scripts_exist_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let s = ok(&["completions", shell]);
        assert!(s.contains("railyard") && s.len() > 500, "{shell}");
    }
}

#[test]
fn the_manual_has_a_page_per_command() {
    let page = ok(&["man"]);
    assert!(page.contains(".TH RAILYARD 1"), "{page}");
    assert!(page.contains("simulate"));
    let dir = temp_dir("man");
    let out_dir = dir.join("pages");
    ok(&["man", "--out-dir", out_dir.to_str().unwrap()]);
    for name in [
        "railyard",
        "railyard-place",
        "railyard-simulate",
        "railyard-topo-export",
        "railyard-fabric-collective",
        "railyard-queues-share",
    ] {
        let text = std::fs::read_to_string(out_dir.join(format!("{name}.1")))
            .unwrap_or_else(|e| panic!("{name}.1: {e}"));
        assert!(
            text.contains(&format!(".TH {}", name.to_ascii_uppercase())),
            "{name}"
        );
    }
    let place = std::fs::read_to_string(out_dir.join("railyard-place.1")).unwrap();
    assert!(place.contains("\\-\\-state"), "flags are documented");
    // NAME is the page's name, as man(7) and `apropos` expect; SYNOPSIS the command line.
    let name = place
        .split(".SH NAME\n")
        .nth(1)
        .and_then(|s| s.lines().next());
    assert_eq!(
        name.map(|l| l.split(" \\- ").next().unwrap_or(l)),
        Some("railyard\\-place"),
        "{place}"
    );
    assert!(place.contains("\\fBrailyard place\\fR"), "{place}");
    let export = std::fs::read_to_string(out_dir.join("railyard-topo-export.1")).unwrap();
    assert!(
        export.contains(".SH NAME\nrailyard\\-topo\\-export \\- "),
        "{export}"
    );
}

#[test]
fn schema_and_cluster_help_list_the_names_they_accept() {
    let help = ok(&["schema", "--help"]);
    for (name, _) in railyard::commands::schema::SCHEMAS {
        assert!(help.contains(name), "{name} not in schema --help:\n{help}");
    }
    let help = ok(&["topo", "show", "--help"]);
    for (name, _) in formats::cluster::PRESETS {
        assert!(help.contains(name), "{name} not in --cluster help:\n{help}");
    }
    // The short help stays short.
    let short = ok(&["topo", "show", "-h"]);
    assert!(!short.contains("philly-2560"), "{short}");
}

#[test]
fn one_of_a_thing_is_singular() {
    let dir = temp_dir("one-node");
    let spec = dir.join("one.yaml");
    std::fs::write(
        &spec,
        "name: one\nnode: {gpus: 8, gpu_memory_gib: 80, rails: 1, ports_per_rail: 1, port_gbps: 400, nvlink_gbps: 3600}\nfabric:\n  clos:\n    nodes: 1\n    rail_optimized: false\n    host_label: kubernetes.io/hostname\n    tiers:\n      - {label: block, value_prefix: b, nodes_per_domain: 1, latency_us: 2.0}\n",
    )
    .unwrap();
    let out = ok(&["topo", "show", "--cluster", spec.to_str().unwrap()]);
    let first = out.lines().next().unwrap();
    assert_eq!(
        first, "cluster one: 1 node, 8 GPUs, 1 switch, 1 link",
        "{out}"
    );
    let run = crate::railyard(&["-v", "topo", "show", "--cluster", spec.to_str().unwrap()]);
    assert!(
        run.stderr.contains("debug: cluster one: 1 node, 8 GPUs"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_binary_works_as_a_kubectl_plugin_under_its_plugin_name() {
    // kubectl runs `kubectl-railyard ARGS…` for `kubectl railyard ARGS…`.
    let dir = temp_dir("kubectl-plugin");
    let link = dir.join("kubectl-railyard");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_railyard"), &link).unwrap();
    let out = std::process::Command::new(&link)
        .args(["topo", "show", "--cluster", "preset:fat-tree-k8"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("fat-tree-k8"));
}

/// Validate `instance` against the schema `railyard schema NAME` prints.
fn validates(name: &str, instance: &serde_json::Value) -> Result<(), String> {
    let schema: serde_json::Value = serde_json::from_str(&ok(&["schema", name])).unwrap();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler
        .add_resource("urn:railyard:schema", schema)
        .map_err(|e| e.to_string())?;
    let id = compiler
        .compile("urn:railyard:schema", &mut schemas)
        .map_err(|e| e.to_string())?;
    schemas.validate(instance, id).map_err(|e| e.to_string())
}

fn yaml(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_norway::from_str(&text).unwrap()
}

#[test]
fn the_schemas_accept_every_bundled_file_and_refuse_typos() {
    for (name, text) in formats::cluster::PRESETS {
        let v: serde_json::Value = serde_norway::from_str(text).unwrap();
        validates("cluster-spec", &v).unwrap_or_else(|e| panic!("preset {name}: {e}"));
    }
    let fixtures = crate::fixture("");
    for (schema, file) in [
        ("job", "sched/jobs/native-train.yaml"),
        ("job", "sched/jobs/fat-tree-ring-24.yaml"),
        ("job", "sched/jobs/team-b-pair.yaml"),
        ("state", "sched/state/running.yaml"),
        ("state", "sched/state/fat-tree-busy.yaml"),
        ("layout", "cables/layout-fat-tree-k8.yaml"),
    ] {
        validates(schema, &yaml(&fixtures.join(file))).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
    let overlay =
        serde_json::json!({"shape": "BM.GPU.H100.8", "rails": 8, "tier_latency_us": [2, 5, 8]});
    validates("overlay", &overlay).unwrap();
    // A misspelt field is refused by the schema as by railyard itself.
    let mut typo = yaml(&fixtures.join("sched/jobs/native-train.yaml"));
    typo["pod_sets"][0]["gpu"] = serde_json::json!(8);
    assert!(validates("job", &typo).is_err());
    let mut typo =
        serde_norway::from_str::<serde_json::Value>(formats::cluster::PRESETS[0].1).unwrap();
    typo["node"]["gpuz"] = serde_json::json!(8);
    assert!(validates("cluster-spec", &typo).is_err());
    // An unknown name is a usage error (exit 2), and the error lists the names.
    let line = crate::usage_fails(&["schema", "nodelist"]);
    assert!(
        line.contains("unknown schema `nodelist`; expected one of cluster-spec"),
        "{line}"
    );
}

#[test]
fn quiet_drops_the_notes_but_not_the_output_or_errors() {
    let args = [
        "topo",
        "show",
        "--cluster",
        "tests/fixtures/nodes/kind-workers.yaml",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
    ];
    let loud = crate::railyard(&args);
    assert!(loud.stderr.contains("note: "), "{}", loud.stderr);
    let mut q = args.to_vec();
    q.push("-q");
    let quiet = crate::railyard(&q);
    assert_eq!(quiet.code, 0);
    assert_eq!(quiet.stderr, "");
    assert_eq!(quiet.stdout, loud.stdout);
    // Errors are still printed.
    let run = crate::railyard(&["--quiet", "topo", "show", "--cluster", "preset:nope"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.starts_with("error: --cluster: unknown preset"),
        "{}",
        run.stderr
    );
}
