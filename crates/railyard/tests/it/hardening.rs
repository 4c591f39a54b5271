//! Issue 17, second hardening pass: every generator given hostile names (a newline and a
//! command, `$(…)`, quotes, spaces, NUL) either refuses them naming the file that holds them or
//! writes them as data; unbounded inputs (devices, FIFOs with endless writers) stop at the
//! limit; flags blamed by name.

use crate::{fails, railyard, temp_dir};

/// A two-node NodeList (JSON, so any string can be written) whose first node is `name`, with
/// rack label value `rack`.
fn nodelist(name: &str, rack: &str) -> String {
    let node = |n: &str, r: &str, ip: &str| {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": n, "labels": {
                "kubernetes.io/hostname": n,
                "cloud.provider.com/topology-block": "b1",
                "cloud.provider.com/topology-rack": r,
            }},
            "status": {"allocatable": {"nvidia.com/gpu": "8"},
                       "addresses": [{"type": "InternalIP", "address": ip}]},
        })
    };
    serde_json::json!({"apiVersion": "v1", "kind": "NodeList", "items": [
        node(name, rack, "10.0.0.1"), node("gpu-2", "r1", "10.0.0.2"),
    ]})
    .to_string()
}

const TOPOLOGY: &str = "tests/fixtures/nodes/kueue-topology.yaml";

const HOSTILE: [(&str, &str); 5] = [
    ("gpu-1\nrm -rf / #", "r1"),
    ("gpu-1", "$(touch /tmp/pwned)"),
    ("gpu-1", "b1' ; id ; '"),
    ("gpu-1", "rack one"),
    ("gpu-1", "r\u{0}1"),
];

#[test]
fn node_label_and_nodelist_exports_refuse_hostile_names_naming_the_nodelist() {
    let dir = temp_dir("hardening-exports");
    for (i, (name, rack)) in HOSTILE.iter().enumerate() {
        let file = dir.join(format!("nodes-{i}.json"));
        std::fs::write(&file, nodelist(name, rack)).unwrap();
        let f = file.to_str().unwrap();
        for format in ["node-labels", "nodelist"] {
            let e = fails(&[
                "topo",
                "export",
                "--cluster",
                f,
                "--topology",
                TOPOLOGY,
                "--format",
                format,
            ]);
            assert!(e.starts_with(&format!("error: {f}: node `")), "{e}");
        }
        // Slurm sanitises label values into switch names; node names must be host names.
        let run = railyard(&[
            "topo",
            "export",
            "--cluster",
            f,
            "--topology",
            TOPOLOGY,
            "--format",
            "slurm",
        ]);
        if name.contains('\n') {
            assert_eq!(run.code, 1, "{}", run.stdout);
        } else {
            assert_eq!(run.code, 0, "{}", run.stderr);
            assert!(
                run.stdout
                    .lines()
                    .all(|l| l.starts_with('#') || l.starts_with("SwitchName=") || l.is_empty()),
                "{}",
                run.stdout
            );
        }
    }
}

#[test]
fn topology_exports_refuse_level_labels_that_are_not_label_keys() {
    let dir = temp_dir("hardening-topology");
    let file = dir.join("nodes.json");
    std::fs::write(&file, nodelist("gpu-1", "r1")).unwrap();
    let f = file.to_str().unwrap();
    for bad in ["rack one", "rack\nx", "$(id)"] {
        let levels = format!("{bad},kubernetes.io/hostname");
        for format in ["kueue", "kai"] {
            let e = crate::usage_fails(&[
                "topo",
                "export",
                "--cluster",
                f,
                "--levels",
                &levels,
                "--format",
                format,
            ]);
            assert!(e.starts_with("error: --levels: "), "{e}");
        }
    }
}

#[test]
fn every_launch_format_writes_a_hostile_node_name_as_data() {
    let dir = temp_dir("hardening-launch");
    let nodes = dir.join("nodes.json");
    let name = "gpu-1\nrm -rf / #";
    std::fs::write(&nodes, nodelist(name, "r1")).unwrap();
    let placement = dir.join("placement.json");
    let p = serde_json::json!({"job": "j", "placed": true, "pods": [
        {"rank": 0, "node": name, "gpus": 8}, {"rank": 1, "node": "gpu-2", "gpus": 8}]});
    std::fs::write(&placement, p.to_string()).unwrap();
    for format in ["shell", "env", "k8s-patch", "hostfile"] {
        let run = railyard(&[
            "launch",
            "--cluster",
            nodes.to_str().unwrap(),
            "--topology",
            TOPOLOGY,
            "--placement",
            placement.to_str().unwrap(),
            "--format",
            format,
        ]);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        assert!(
            !run.stdout.lines().any(|l| l.starts_with("rm ")),
            "{format}: a command escaped its comment:\n{}",
            run.stdout
        );
        if format == "shell" {
            for l in run.stdout.lines() {
                assert!(
                    l.is_empty() || l.starts_with('#') || l.starts_with("NCCL_IB_HCA="),
                    "{l}"
                );
            }
        }
    }
}

#[test]
fn an_empty_cluster_argument_is_blamed_on_the_flag() {
    let e = crate::usage_fails(&["topo", "show", "--cluster", ""]);
    assert!(
        e.starts_with("error: --cluster: expected preset:NAME or a file name"),
        "{e}"
    );
}

#[test]
fn devices_are_refused_at_once_and_never_read_whole() {
    for dev in ["/dev/zero", "/dev/urandom"] {
        let e = fails(&["topo", "show", "--cluster", dev]);
        assert!(
            e.contains("NUL byte at byte 0") || e.contains("not UTF-8 text"),
            "{dev}: {e}"
        );
    }
}

#[test]
fn a_fifo_with_an_endless_writer_is_cut_at_the_limit() {
    // A FIFO written by a thread that never stops: the reader must stop at 512 MiB.
    let dir = temp_dir("hardening-fifo");
    let fifo = dir.join("endless.yaml");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return; // no mkfifo on this system
    }
    let path = fifo.clone();
    std::thread::spawn(move || {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
            let line = b"# endless comment line of text for the reader to swallow ......\n";
            while f.write_all(line).is_ok() {}
        }
    });
    let e = fails(&["topo", "show", "--cluster", fifo.to_str().unwrap()]);
    assert!(e.contains("over 512 MiB"), "{e}");
}

#[test]
fn flags_are_blamed_by_name() {
    let e = crate::usage_fails(&[
        "simulate",
        "--cluster",
        "preset:fat-tree-k8",
        "--trace",
        "tests/corpus/hardening/trace-ok.csv",
        "--compare",
        "",
    ]);
    assert!(e.starts_with("error: --compare: empty policy"), "{e}");
    let e = crate::usage_fails(&[
        "simulate",
        "--cluster",
        "preset:fat-tree-k8",
        "--trace",
        "tests/corpus/hardening/trace-ok.csv",
        "--compare",
        "fifo,nonsense",
    ]);
    assert!(e.starts_with("error: --compare: `nonsense`"), "{e}");
    let e = crate::usage_fails(&[
        "launch",
        "--cluster",
        "tests/fixtures/launch/nodes.json",
        "--placement",
        "tests/fixtures/launch/placement-4.json",
        "--port",
        "0",
    ]);
    assert!(
        e.starts_with("error: invalid value '0' for '--port <PORT>': 0 is not in 1..=65535"),
        "{e}"
    );
    // A QP count out of range is a usage error (exit 2) naming the flag.
    let run = crate::railyard(&[
        "fabric",
        "collective",
        "--cluster",
        "preset:fat-tree-k8",
        "--job",
        "tests/fixtures/sched/jobs/fat-tree-ring-24.yaml",
        "--collective",
        "alltoall",
        "--qps",
        "1000",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("'--qps <N>': 1000 is not in 1..=128"),
        "{}",
        run.stderr
    );
    // Within range, the flows a collective would make are bounded before any is made.
    let dir = crate::temp_dir("hardening-flows");
    let job = dir.join("job.yaml");
    std::fs::write(&job, "name: a2a\npod_sets:\n  - {count: 256, gpus: 8}\n").unwrap();
    let e = fails(&[
        "fabric",
        "collective",
        "--cluster",
        "preset:oci-h100-16k",
        "--job",
        job.to_str().unwrap(),
        "--collective",
        "alltoall",
        "--qps",
        "64",
    ]);
    assert!(
        e.contains(
            "--nccl: alltoall over 2048 ranks on 256 nodes with 64 QPs per connection makes about"
        ),
        "{e}"
    );
    let e = crate::usage_fails(&[
        "topo",
        "show",
        "--cluster",
        "tests/fixtures/nodes/kind-workers.yaml",
        "--topology",
        TOPOLOGY,
        "--shape",
        "BM.GPU.Z9000.8",
    ]);
    assert!(e.starts_with("error: --shape: unknown shape"), "{e}");
}

#[test]
fn an_alltoall_too_large_to_route_is_refused_before_any_flow_is_made() {
    // 2,048 hosts of oci-h100-16k: 2,048 × 2,047 node pairs × 64 QPs ≈ 268 M flows.
    let dir = temp_dir("hardening-alltoall");
    let job = dir.join("job.yaml");
    std::fs::write(
        &job,
        "name: all\npod_sets:\n  - {name: w, count: 2048, gpus: 8}\n",
    )
    .unwrap();
    let e = fails(&[
        "fabric",
        "collective",
        "--cluster",
        "preset:oci-h100-16k",
        "--job",
        job.to_str().unwrap(),
        "--collective",
        "alltoall",
        "--qps",
        "64",
    ]);
    assert!(e.contains("more than the limit of 4000000"), "{e}");
}

/// A copy of the healthy doctor fixture to damage.
fn doctor_tree(name: &str) -> std::path::PathBuf {
    let dir = temp_dir(name);
    let ok = std::process::Command::new("cp")
        .arg("-r")
        .arg(crate::fixture("doctor/healthy"))
        .arg(dir.join("root"))
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "cp -r the healthy fixture");
    dir.join("root")
}

fn doctor_json(root: &std::path::Path) -> (i32, serde_json::Value) {
    let run = railyard(&[
        "doctor",
        "--root",
        root.to_str().unwrap(),
        "--output",
        "json",
    ]);
    let v = serde_json::from_str(&run.stdout).unwrap_or(serde_json::Value::Null);
    (run.code, v)
}

fn refused(v: &serde_json::Value, subject: &str) -> String {
    let findings = v["findings"].as_array().cloned().unwrap_or_default();
    let f = findings
        .iter()
        .find(|f| f["check"] == "sysfs.read" && f["subject"] == subject)
        .unwrap_or_else(|| panic!("no sysfs.read finding for {subject}: {v:#}"));
    assert_eq!(f["severity"], "error", "{f:#}");
    f["seen"].as_str().unwrap_or("").to_owned()
}

#[test]
fn doctor_does_not_read_a_sysfs_file_that_is_a_device() {
    let root = doctor_tree("hardening-doctor-dev");
    let mtu = root.join("sys/class/net/ens0f0np0/mtu");
    std::fs::remove_file(&mtu).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &mtu).unwrap();
    let (code, v) = doctor_json(&root);
    assert_eq!(code, 1);
    let seen = refused(&v, "/sys/class/net/ens0f0np0/mtu");
    assert!(
        seen.contains("a character device, not a regular file"),
        "{seen}"
    );
}

#[test]
fn doctor_does_not_block_on_a_fifo() {
    let root = doctor_tree("hardening-doctor-fifo");
    let state = root.join("sys/class/infiniband/mlx5_0/ports/1/state");
    std::fs::remove_file(&state).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&state)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        return;
    }
    let (code, v) = doctor_json(&root);
    assert_eq!(code, 1);
    let seen = refused(&v, "/sys/class/infiniband/mlx5_0/ports/1/state");
    assert!(seen.contains("a FIFO"), "{seen}");
}

#[test]
fn doctor_reads_a_large_sysfs_file_only_up_to_its_bound() {
    let root = doctor_tree("hardening-doctor-large");
    let mtu = root.join("sys/class/net/ens0f0np0/mtu");
    std::fs::write(&mtu, "9".repeat(1 << 20)).unwrap();
    let (code, v) = doctor_json(&root);
    assert_eq!(code, 1);
    let seen = refused(&v, "/sys/class/net/ens0f0np0/mtu");
    assert!(seen.contains("larger than 64 KiB"), "{seen}");
}

#[test]
fn doctor_never_follows_a_netdev_name_read_from_a_file_out_of_the_root() {
    let root = doctor_tree("hardening-doctor-ndevs");
    let ndev = root.join("sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0");
    std::fs::write(&ndev, "../../../../etc\n").unwrap();
    let (code, v) = doctor_json(&root);
    assert_eq!(code, 1);
    let seen = refused(&v, "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0");
    assert!(
        seen.contains("is not a network interface name; not followed"),
        "{seen}"
    );
    assert!(!v.to_string().contains("/etc/mtu"), "{v:#}");
}

#[test]
fn a_trace_header_without_a_line_end_is_refused_at_its_bound() {
    // A first "line" of 1 MiB: refused once it runs past 64 KiB, before the CSV reader holds it
    // (a 100 MB one held 1.6 GB before it was refused as an unknown header).
    let dir = crate::temp_dir("long-header");
    let path = dir.join("header.csv");
    let header = format!("timestamp,{}", "x".repeat(1 << 20));
    std::fs::write(&path, &header).unwrap();
    let run = railyard(&[
        "simulate",
        "--cluster",
        "preset:fat-tree-k8",
        "--trace",
        path.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("line 1: the header runs past 65536 bytes without a line end"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_long_trace_with_a_bad_last_row_is_refused_in_little_memory() {
    // Issue 30, defect 10: a trace is parsed as it streams in and its rows kept compact, so one
    // that fails on its last row holds about 80 bytes a row at most (a 5,000,000-row one held
    // 1.29 GB, ~260 bytes a row, when each row kept its optional columns' defaults, an observed
    // wait and a copy of its name). 400,000 rows under a 64 MiB data limit: about 35 MiB now,
    // over 80 MiB before (the process aborts on a failed allocation instead of refusing).
    let path = crate::temp_dir("long-trace-bad-last-row").join("trace.csv");
    let mut text = String::from("name,submit_s,duration_s,gpus\n");
    for i in 0..400_000 {
        text.push_str(&format!("job-{i},{},3600,8\n", i / 100));
    }
    text.push_str("job-last,5000,3600,eight\n");
    std::fs::write(&path, text).unwrap();
    let out = std::process::Command::new("sh")
        .args(["-c", "ulimit -d 65536 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_railyard"))
        .args(["simulate", "--cluster", "preset:fat-tree-k8", "--trace"])
        .arg(&path)
        .output()
        .expect("sh runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("line 400002: gpus: expected a non-negative number, got \"eight\""),
        "{stderr}"
    );
}
