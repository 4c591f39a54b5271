//! `railyard lint`: NicClusterPolicy and RDMA NetworkAttachmentDefinition fixtures
//! (`tests/fixtures/lint/`), exact messages, exit codes and bad input.

use crate::{assert_one_line_error, railyard, scratch};

fn lint(files: &[&str]) -> crate::Run {
    let mut args = vec!["lint"];
    args.extend_from_slice(files);
    railyard(&args)
}

#[test]
fn nic_cluster_policy_with_one_sub_component_on_an_older_release() {
    let run = lint(&["tests/fixtures/lint/ncp-old-component.yaml"]);
    assert_one_line_error(&run, "lint: 1 error, 0 warnings");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "tests/fixtures/lint/ncp-old-component.yaml: document 1: spec.sriovDevicePlugin.version: \
         error: network-operator-v25.1.0 is older than network-operator-v25.4.0, used by 4 other \
         sub-components; a Network Operator release is tested only with its own component \
         versions: set network-operator-v25.4.0"
    );
    assert!(
        lines[1].contains("spec: note: keep repository, version and imagePullSecrets in one place")
    );
    assert_eq!(lines.len(), 2);
}

#[test]
fn nic_cluster_policy_repositories_secrets_and_driver() {
    let run = lint(&["tests/fixtures/lint/ncp-mixed.yaml"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn rdma_network_attachments_and_the_pods_using_them() {
    let run = lint(&["tests/fixtures/lint/nad.yaml"]);
    assert_one_line_error(&run, "lint: 5 errors, 2 warnings");
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn clean_manifests_pass() {
    let run = lint(&["tests/fixtures/lint/ncp-clean.yaml"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "3 documents in 1 file: no findings\n");
}

#[test]
fn json_output_lists_findings() {
    let run = railyard(&[
        "lint",
        "--output",
        "json",
        "tests/fixtures/lint/ncp-old-component.yaml",
        "tests/fixtures/lint/ncp-clean.yaml",
    ]);
    assert_eq!(run.code, 1);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let first = &v[0];
    assert_eq!(first["document"], 1);
    assert_eq!(first["severity"], "error");
    assert_eq!(first["path"], "spec.sriovDevicePlugin.version");
}

#[test]
fn bad_input_is_one_line() {
    let dir = scratch("lint-bad");
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "kind: NicClusterPolicy\nspec: [unclosed\n").unwrap();
    let run = lint(&[bad.to_str().unwrap()]);
    assert_one_line_error(&run, "bad.yaml: document 1: invalid YAML");

    let run = lint(&["tests/fixtures/lint/no-such-file.yaml"]);
    assert_one_line_error(&run, "no-such-file.yaml");

    let no_spec = dir.join("nospec.yaml");
    std::fs::write(&no_spec, "kind: NicClusterPolicy\nmetadata: {name: x}\n").unwrap();
    let run = lint(&[no_spec.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert!(run
        .stdout
        .contains("nospec.yaml: document 1: spec: error: expected an object"));
}
