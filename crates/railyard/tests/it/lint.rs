//! `railyard lint`: NicClusterPolicy, RDMA NetworkAttachmentDefinition, Kueue TAS and KAI queue
//! fixtures (`tests/fixtures/lint/`), exact messages, exit codes and bad input; the Kueue and
//! queue findings checked against what `place` and `queues validate` say about the same files.

use std::collections::BTreeSet;

use crate::{assert_one_line_error, fails, railyard, scratch};

/// A lint run that found errors: exit 1, the findings and their count on standard output
/// (the last line ends with `counts`), nothing on standard error.
fn assert_findings(run: &crate::Run, counts: &str) {
    assert_eq!(run.code, 1, "exit code; stderr: {}", run.stderr);
    assert_eq!(run.stderr, "", "lint's findings go to standard output only");
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(last.ends_with(&format!(": {counts}")), "last line: {last}");
}

fn lint(files: &[&str]) -> crate::Run {
    let mut args = vec!["lint"];
    args.extend_from_slice(files);
    railyard(&args)
}

#[test]
fn nic_cluster_policy_with_one_sub_component_on_an_older_release() {
    let run = lint(&["tests/fixtures/lint/ncp-old-component.yaml"]);
    assert_findings(&run, "1 error, 0 warnings");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "tests/fixtures/lint/ncp-old-component.yaml: document 1: spec.sriovDevicePlugin.version: \
         error: network-operator-v25.1.0 is older than network-operator-v25.4.0, used by 4 other \
         sub-components; a Network Operator release is tested only with its own component \
         versions: set network-operator-v25.4.0"
    );
    assert!(
        lines[1].contains("spec: info: keep repository, version and imagePullSecrets in one place")
    );
    assert_eq!(lines[2], "1 document in 1 file: 1 error, 0 warnings");
    assert_eq!(lines.len(), 3);
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
    assert_findings(&run, "5 errors, 2 warnings");
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

const KUEUE_TAS: &str = "tests/fixtures/lint/kueue-tas.yaml";
const KUEUE_TOPOLOGY: &str = "tests/fixtures/lint/kueue-topology.yaml";

/// A finding line split into (file, document, path, message); `None` for other lines.
fn finding(line: &str) -> Option<(&str, &str, &str, &str)> {
    let (place, message) = line.split_once(": error: ")?;
    let mut parts = place.splitn(3, ": ");
    Some((parts.next()?, parts.next()?, parts.next()?, message))
}

#[test]
fn kueue_tas_annotations_on_jobs_and_jobsets() {
    let run = lint(&[KUEUE_TAS]);
    assert_findings(&run, "5 errors, 0 warnings");
    // The valid Job (document 1) and replicated job 0 of the JobSet have no findings.
    assert!(!run.stdout.contains("document 1:"), "{}", run.stdout);
    assert!(!run.stdout.contains("replicatedJobs[0]"), "{}", run.stdout);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn kueue_tas_levels_are_checked_against_a_topology_among_the_files() {
    let alone = lint(&[KUEUE_TAS]);
    let run = lint(&[KUEUE_TAS, KUEUE_TOPOLOGY]);
    assert_findings(&run, "7 errors, 0 warnings");
    // Everything found without the Topology, then the two level defects it reveals.
    let added: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| !alone.stdout.contains(l) && !l.starts_with("7 documents in 2 files: "))
        .collect();
    assert_eq!(
        added,
        [
            "tests/fixtures/lint/kueue-tas.yaml: document 5: \
             spec.template.metadata.annotations[kueue.x-k8s.io/podset-slice-required-topology]: \
             error: slice level `cloud.provider.com/topology-block` must be at or below \
             `cloud.provider.com/topology-rack`",
            "tests/fixtures/lint/kueue-tas.yaml: document 6: \
             spec.template.metadata.annotations[kueue.x-k8s.io/podset-preferred-topology]: \
             error: `example.com/zone` is not a level of Topology default (levels: \
             cloud.provider.com/topology-block, cloud.provider.com/topology-rack, \
             kubernetes.io/hostname)",
        ]
    );
}

/// `place` rejects the bad Kueue job fixtures with one error; `lint` reports the same field and
/// message for them (one implementation of the rules).
#[test]
fn kueue_tas_findings_are_the_errors_place_gives() {
    let kind = [
        "--cluster",
        "tests/fixtures/nodes/kind-workers.yaml",
        "--topology",
        "tests/fixtures/nodes/kueue-topology.yaml",
    ];
    for (job, with_topology) in [
        ("kueue-required-and-preferred", false),
        ("kueue-slice-size-does-not-divide", false),
        ("kueue-slice-level-above-main", true),
    ] {
        let file = format!("tests/fixtures/sched/jobs/bad/{job}.yaml");
        let mut args = vec!["place", "--job", &file];
        args.extend_from_slice(&kind);
        let error = fails(&args);
        let mut files = vec![file.as_str()];
        if with_topology {
            files.push("tests/fixtures/nodes/kueue-topology.yaml");
        }
        let run = lint(&files);
        assert_findings(&run, "1 error, 0 warnings");
        let (f, doc, path, message) =
            finding(run.stdout.lines().next().unwrap_or_default()).expect("a finding");
        assert_eq!((f, doc), (file.as_str(), "document 1"));
        assert!(
            error.ends_with(&format!(": {path}: {message}")),
            "place says {error}; lint says {path}: {message}"
        );
    }
}

#[test]
fn kai_queues_every_validator_problem_is_a_finding() {
    let run = lint(&["tests/fixtures/lint/kai-queues.yaml"]);
    assert_findings(&run, "6 errors, 0 warnings");
    // The pod that names no queue (document 7) is not KAI's and not checked.
    assert!(!run.stdout.contains("document 7"), "{}", run.stdout);
    insta::assert_snapshot!(run.stdout);
}

/// For every bad queue fixture, the messages `lint` reports are exactly the problems `queues
/// validate` reports, each with a document and a field.
#[test]
fn queue_findings_are_the_problems_queues_validate_reports() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sched/queues/bad");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("fixtures")
        .map(|e| {
            format!(
                "tests/fixtures/sched/queues/bad/{}",
                e.expect("entry").file_name().to_string_lossy()
            )
        })
        .collect();
    files.sort();
    assert!(files.len() >= 7);
    for file in &files {
        let validate = railyard(&["queues", "validate", file]);
        assert_eq!(validate.code, 1, "{file}");
        let expected: BTreeSet<String> = validate
            .stderr
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("error: {file}: ")))
            .map(str::to_owned)
            .collect();
        assert!(!expected.is_empty(), "{file}: {}", validate.stderr);
        let run = lint(&[file]);
        assert_eq!(run.code, 1, "{file}: {}", run.stderr);
        let mut found = BTreeSet::new();
        let lines: Vec<&str> = run.stdout.lines().collect();
        // Every line but the last (the counts) is a finding.
        for line in &lines[..lines.len() - 1] {
            let (f, doc, path, message) = finding(line).expect("an error finding");
            assert_eq!(f, file);
            assert!(doc.starts_with("document "), "{line}");
            assert!(
                path.starts_with("spec.") || path.starts_with("metadata."),
                "{line}"
            );
            found.insert(message.to_owned());
        }
        assert_eq!(found, expected, "{file}");
    }
}

#[test]
fn kai_default_queues_pass() {
    let run = lint(&["tests/fixtures/sched/queues/kai-default-queues.yaml"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "2 documents in 1 file: no findings\n");
}

/// Issue 30, defect 6: a job `place` refuses before it looks at a cluster (a Kueue Job asking
/// for CPU only) is not "no findings": lint warns with place's own message, and the error
/// place gives ends with the same words.
#[test]
fn a_job_place_refuses_is_a_finding() {
    let file = "tests/fixtures/lint/kueue-cpu-only.yaml";
    let run = lint(&[file]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    let (f, doc, path, message) = finding_any(lines[0]).expect("a finding");
    assert_eq!(
        (f, doc, path),
        (file, "document 1", "spec.template.spec.containers")
    );
    let message = message
        .strip_prefix("warning: railyard place refuses it: ")
        .expect("a warning naming place");
    let error = fails(&["place", "--cluster", "preset:fat-tree-k8", "--job", file]);
    assert!(
        error.ends_with(&format!("{path}: {message}")),
        "place: {error}; lint: {message}"
    );
    assert_eq!(lines[1], "1 document in 1 file: 0 errors, 1 warning");
}

/// `FILE: document N: PATH: SEVERITY: MESSAGE` split at its first three `: `, the rest kept.
fn finding_any(line: &str) -> Option<(&str, &str, &str, &str)> {
    let mut parts = line.splitn(4, ": ");
    Some((parts.next()?, parts.next()?, parts.next()?, parts.next()?))
}
