//! `railyard doctor` on fixture trees (`tests/fixtures/doctor/<case>/`, made by
//! `make-fixtures.sh`): snapshots of the findings, exit codes, bad roots.

use ops::doctor::{diagnose, Severity};
use railyard::commands::doctor::{render_json, render_prometheus, render_text};

use crate::{assert_one_line_error, fixture, railyard};

/// The findings for a fixture case, as text (the snapshot) and the worst level.
fn check(case: &str) -> (String, Option<Severity>) {
    let findings = diagnose(&fixture(&format!("doctor/{case}")), None).expect("fixture reads");
    let worst = findings.iter().map(|f| f.severity).max();
    (render_text(&findings, false), worst)
}

#[test]
fn healthy_node() {
    let (text, worst) = check("healthy");
    assert_eq!(worst, Some(Severity::Info));
    insta::assert_snapshot!(text);
}

#[test]
fn mtu_1500_on_a_roce_port() {
    let (text, worst) = check("mtu-1500");
    assert_eq!(worst, Some(Severity::Warning));
    assert!(
        text.contains("netdev MTU 1500: active RoCE MTU 1024"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn host_name_resolving_to_127_0_1_1() {
    let (text, worst) = check("hostname-loopback");
    assert_eq!(worst, Some(Severity::Warning));
    assert!(text.contains("resolves to 127.0.1.1"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn gpu_at_gen1_x16_at_idle() {
    let (text, worst) = check("gpu-gen1-idle");
    assert_eq!(worst, Some(Severity::Warning));
    assert!(text.contains("link Gen1 x16, maximum Gen5 x16"), "{text}");
    assert!(text.contains("not a fault"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn missing_rdma_device() {
    let (text, worst) = check("missing-rdma-device");
    assert_eq!(worst, Some(Severity::Error));
    insta::assert_snapshot!(text);
}

#[test]
fn port_down() {
    let (text, worst) = check("port-down");
    assert_eq!(worst, Some(Severity::Error));
    insta::assert_snapshot!(text);
}

#[test]
fn malformed_sysfs_files_are_findings_not_panics() {
    let (text, worst) = check("malformed");
    assert_eq!(worst, Some(Severity::Warning));
    insta::assert_snapshot!(text);
}

#[test]
fn cli_exit_codes_and_json() {
    let ok = railyard(&["doctor", "--root", "tests/fixtures/doctor/healthy"]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    let warn = railyard(&["doctor", "--root", "tests/fixtures/doctor/mtu-1500"]);
    assert_eq!(warn.code, 0, "warnings alone do not fail: {}", warn.stderr);

    let fail = railyard(&[
        "doctor",
        "--root",
        "tests/fixtures/doctor/missing-rdma-device",
        "--output",
        "json",
    ]);
    assert_one_line_error(&fail, "rdma.devices PCI 0000:98:00.0");
    let report: serde_json::Value = serde_json::from_str(&fail.stdout).expect("JSON report");
    assert_eq!(report["error"], 1);
    let first_fail = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["severity"] == "error")
        .unwrap();
    assert_eq!(first_fail["check"], "rdma.devices");
    for key in ["seen", "why", "action"] {
        assert!(first_fail[key].is_string(), "{key} in {first_fail}");
    }
}

#[test]
fn hostname_flag_overrides_the_tree() {
    let findings = diagnose(&fixture("doctor/healthy"), Some("other-node")).unwrap();
    let h = findings.iter().find(|f| f.check == "hostname").unwrap();
    assert_eq!(h.severity, Severity::Warning);
    assert!(h.subject.contains("other-node (from --hostname)"));
}

#[test]
fn bad_root_is_a_one_line_error() {
    let run = railyard(&["doctor", "--root", "tests/fixtures/doctor/no-such-case"]);
    assert_one_line_error(&run, "no-such-case");
    let run = railyard(&["doctor", "--root", "tests/fixtures/doctor"]);
    assert_one_line_error(&run, "no sys/ directory");
}

#[test]
fn json_report_of_mtu_1500() {
    let findings = diagnose(&fixture("doctor/mtu-1500"), None).unwrap();
    insta::assert_snapshot!(render_json(&findings));
}

#[test]
fn prometheus_output_has_one_series_per_finding_with_its_severity() {
    let findings = diagnose(&fixture("doctor/mtu-1500"), None).unwrap();
    let text = render_prometheus(&findings);
    let series: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("railyard_doctor_check{"))
        .collect();
    assert_eq!(series.len(), findings.len());
    assert!(text.contains(
        "railyard_doctor_check{check=\"roce.mtu\",subject=\"mlx5_1 port 1 (ens1f0np0)\",device=\"mlx5_1\",port=\"1\"} 1\n"
    ), "{text}");
    let warn = findings
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
    assert!(text.contains(&format!(
        "railyard_doctor_findings{{severity=\"warning\"}} {warn}\n"
    )));
    // Label sets are unique (Prometheus rejects duplicate series).
    let mut labels: Vec<&str> = series
        .iter()
        .map(|l| l.rsplit_once(' ').unwrap().0)
        .collect();
    labels.sort_unstable();
    let n = labels.len();
    labels.dedup();
    assert_eq!(labels.len(), n);
}

#[test]
fn prometheus_label_values_are_escaped() {
    let findings = vec![ops::doctor::Finding {
        severity: Severity::Error,
        check: "hostname",
        subject: "a \"b\" \\ c\nd".into(),
        seen: String::new(),
        why: String::new(),
        action: String::new(),
    }];
    let text = render_prometheus(&findings);
    assert!(
        text.contains(
            "railyard_doctor_check{check=\"hostname\",subject=\"a \\\"b\\\" \\\\ c\\nd\"} 2\n"
        ),
        "{text}"
    );
}

#[test]
fn a_node_without_gpus_says_which_checks_were_skipped_and_why() {
    // A CPU machine: no GPU, no RDMA NIC, no RDMA stack. Every GPU- and RDMA-dependent check
    // is a `skipped` finding with its reason, in every output, never counted as passed.
    let findings = diagnose(&fixture("doctor/no-gpus"), None).expect("fixture reads");
    let skipped: Vec<(&str, &str)> = findings
        .iter()
        .filter(|f| f.severity == Severity::Skipped)
        .map(|f| (f.check, f.subject.as_str()))
        .collect();
    assert_eq!(
        skipped,
        [
            ("rdma.port", "RDMA ports"),
            ("roce.mtu", "RoCE ports"),
            ("pcie.link", "GPUs"),
            ("pcie.link", "NICs"),
            ("rails.balance", "GPUs and RDMA devices"),
        ]
    );
    // The one passed check is the host name's.
    let passed: Vec<&str> = findings
        .iter()
        .filter(|f| f.severity == Severity::Info)
        .map(|f| f.check)
        .collect();
    assert_eq!(passed, ["hostname"]);
    let text = render_text(&findings, false);
    assert!(
        text.lines().any(|l| l.starts_with("skipped ")
            && l.contains(" pcie.link ")
            && l.ends_with(
                "GPUs: skipped: no NVIDIA GPU on the PCI bus (vendor 0x10de, display class)"
            )),
        "{text}"
    );
    assert!(
        text.contains("1 info, 0 warnings, 1 error; 5 checks skipped"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&render_json(&findings)).unwrap();
    assert_eq!(
        (json["skipped"].as_u64(), json["info"].as_u64()),
        (Some(5), Some(1))
    );
    assert_eq!(json["findings"][1]["severity"], "skipped");
    let prom = render_prometheus(&findings);
    assert!(
        prom.contains("railyard_doctor_findings{severity=\"skipped\"} 5"),
        "{prom}"
    );
    assert!(
        prom.contains("railyard_doctor_skipped{check=\"rails.balance\",subject=\"GPUs and RDMA devices\",reason=\"no NVIDIA GPU on the PCI bus"),
        "{prom}"
    );
    // Skipped checks are not in the pass/fail gauge.
    assert!(
        !prom.contains("railyard_doctor_check{check=\"pcie.link\""),
        "{prom}"
    );
    let run = railyard(&["doctor", "--root", "tests/fixtures/doctor/no-gpus"]);
    assert_eq!(
        run.code, 1,
        "no RDMA stack is still an error: {}",
        run.stderr
    );
}
