//! `--cluster topology.conf`: Slurm tree and block files read as a cluster, the tree read back
//! as railyard wrote it, bad files as one `file:line` error.

use crate::{fails, ok, temp_dir};

/// The tree railyard writes for a cluster reads back as the same tree (every switch line but
/// the header comment, which names the cluster), and as the same levels and domains.
#[test]
fn exported_slurm_tree_reads_back_as_the_same_tree() {
    for preset in ["preset:fat-tree-k8", "preset:oci-h100-16k"] {
        let dir = temp_dir(&format!("slurm-tree-{}", preset.replace(':', "-")));
        let conf = dir.join("topology.conf");
        let conf = conf.to_str().expect("UTF-8 path");
        ok(&[
            "topo",
            "export",
            "--cluster",
            preset,
            "--format",
            "slurm",
            "--out",
            conf,
        ]);
        let back = ok(&[
            "-q",
            "topo",
            "export",
            "--cluster",
            conf,
            "--shape",
            "BM.GPU.H100.8",
            "--format",
            "slurm",
        ]);
        let original = std::fs::read_to_string(conf).expect("written");
        let body = |s: &str| {
            s.lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(body(&back), body(&original), "{preset}");
        let domains = |cluster: &[&str]| {
            let v: serde_json::Value =
                serde_json::from_str(&ok(
                    &[&["-q", "topo", "show", "-o", "json"], cluster].concat()
                ))
                .expect("JSON");
            let counts: Vec<u64> = v["levels"]
                .as_array()
                .expect("levels")
                .iter()
                .map(|l| l["domains"].as_u64().expect("domains"))
                .collect();
            (v["nodes"].clone(), counts)
        };
        assert_eq!(
            domains(&["--cluster", conf, "--shape", "BM.GPU.H100.8"]),
            domains(&["--cluster", preset]),
            "{preset}"
        );
    }
}

#[test]
fn a_block_file_gives_a_level_of_blocks_and_one_per_larger_block_size() {
    let dir = temp_dir("slurm-block");
    let conf = dir.join("blocks.conf");
    std::fs::write(
        &conf,
        "# four blocks of two nodes, aggregated by 4 nodes\nBlockName=b0 Nodes=gpu[01-02]\nBlockName=b1 Nodes=gpu[03-04]\nBlockName=b2 Nodes=gpu[05-06]\nBlockName=b3 Nodes=gpu[07-08]\nBlockSizes=2,4\n",
    )
    .expect("write");
    let conf = conf.to_str().expect("UTF-8 path");
    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "-q",
        "topo",
        "show",
        "--cluster",
        conf,
        "--shape",
        "BM.GPU.H100.8",
        "-o",
        "json",
    ]))
    .expect("JSON");
    assert_eq!(v["nodes"], 8);
    assert_eq!(v["gpus"], 64);
    let counts: Vec<u64> = v["levels"]
        .as_array()
        .expect("levels")
        .iter()
        .map(|l| l["domains"].as_u64().expect("domains"))
        .collect();
    assert_eq!(counts, [2, 4, 8]);
}

#[test]
fn bad_topology_conf_is_one_line_naming_file_and_line() {
    let dir = temp_dir("slurm-bad");
    let cases = [
        ("SwitchName=s0 Switches=s9\n", ":1: switch `s0`: child switch `s9` is not defined"),
        (
            "SwitchName=s0 Switches=s[1-2]\nSwitchName=s1 Nodes=a[1-2]\nSwitchName=s2 Switches=s3\nSwitchName=s3 Nodes=b1\n",
            ":4: leaf switch `s3` is at depth 3, other leaves at depth 2",
        ),
        ("SwitchName=s1 Nodes=a1\nSwitchName=s2 Nodes=a1\n", ":2: node `a1` is also under switch `s1`"),
        ("SwitchName=s1 Nodes=a1 Colour=red\n", ":1: unknown key `colour`"),
        ("BlockName=b0 Nodes=a[1-2]\nBlockName=b1 Nodes=a3\nBlockSizes=2,4\n", ":3: BlockSizes entry 4"),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let conf = dir.join(format!("bad-{i}.conf"));
        std::fs::write(&conf, text).expect("write");
        let conf = conf.to_str().expect("UTF-8 path");
        let e = fails(&[
            "topo",
            "show",
            "--cluster",
            conf,
            "--shape",
            "BM.GPU.H100.8",
        ]);
        assert!(e.starts_with(&format!("error: {conf}")), "{e}");
        assert!(e.contains(expected), "case {i}: {e}");
    }
    let conf = dir.join("bad-0.conf");
    let e = fails(&[
        "topo",
        "show",
        "--cluster",
        conf.to_str().expect("UTF-8 path"),
    ]);
    assert!(e.contains("names no hardware: give --shape"), "{e}");
}

/// railyard writes a `root` switch above several top domains; reading it back gives no level
/// for it, and writing again gives the same file.
#[test]
fn a_root_switch_above_several_top_switches_is_the_whole_cluster() {
    let dir = temp_dir("slurm-root");
    let conf = dir.join("root.conf");
    let text =
        "SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n[3-4]\nSwitchName=root Switches=a,b\n";
    std::fs::write(&conf, text).expect("write");
    let conf = conf.to_str().expect("UTF-8 path");
    let with = |more: &[&str]| {
        ok(&[
            &["-q", "topo"],
            more,
            &["--cluster", conf, "--shape", "BM.GPU.H100.8"],
        ]
        .concat())
    };
    let v: serde_json::Value = serde_json::from_str(&with(&["show", "-o", "json"])).expect("JSON");
    let counts: Vec<u64> = v["levels"]
        .as_array()
        .expect("levels")
        .iter()
        .map(|l| l["domains"].as_u64().expect("domains"))
        .collect();
    assert_eq!(counts, [2, 4]);
    let back = with(&["export", "--format", "slurm"]);
    let body: Vec<&str> = back.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(body, text.lines().collect::<Vec<_>>());
}
