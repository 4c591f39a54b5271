//! Regression tests for what the fuzz targets in `fuzz/` found: one test per bug, named after
//! it, calling the same library function the target called. Each input is the (minimised)
//! crashing input or a cheap equivalent of it.

use formats::{hostlist, slurm};

/// Found by `slurm_topology` (timeout): `gpu-[0000-3160240]` was under the old 10,000,000-name
/// limit and made 3 million names; a hostlist now names at most `MAX_NODES`.
#[test]
fn hostlist_range_of_millions_is_refused() {
    let e = hostlist::expand("gpu-[0000-3160240],login,n[1-3]x").unwrap_err();
    assert!(e.contains("too many names"), "{e}");
}

/// A range of the whole u64 space must be refused, not overflow counting its names.
#[test]
fn hostlist_range_of_the_whole_u64_space_is_refused() {
    let e = hostlist::expand("n[0-18446744073709551615]").unwrap_err();
    assert!(e.contains("too many names"), "{e}");
}

/// Zero padding sets the width of every name: 20,000 names padded to 10,000 digits would be
/// 200 MB of names. Refused by the byte budget before any name is made.
#[test]
fn hostlist_wide_zero_padding_is_refused_before_allocating() {
    let expr = format!("n[{}-20000]", "0".repeat(10_000));
    let e = hostlist::expand(&expr).unwrap_err();
    assert!(e.contains("too many names"), "{e}");
    assert!(e.len() < 200, "the message quotes the input shortened: {e}");
}

/// The name budget covers the whole `topology.conf`, not each line: 3 lines of 400,000 names.
#[test]
fn slurm_tree_name_budget_is_per_file() {
    let text = "SwitchName=a Nodes=n[0-399999]\nSwitchName=b Nodes=m[0-399999]\nSwitchName=c Nodes=o[0-399999]\n";
    let e = slurm::parse_tree(text).unwrap_err();
    assert!(e.starts_with("line 3: "), "{e}");
}

/// Two containers whose `nvidia.com/gpu` limits add up past `u64::MAX` overflowed the sum (a
/// panic in debug builds, a wrapped and wrong GPU count in release).
#[test]
fn kueue_container_gpu_sum_overflow_is_an_error() {
    let text = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {kueue.x-k8s.io/queue-name: q}\nspec:\n  template:\n    spec:\n      containers:\n        - {name: a, resources: {limits: {nvidia.com/gpu: 18446744073709551615}}}\n        - {name: b, resources: {limits: {nvidia.com/gpu: 2}}}\n";
    let e = formats::jobs::read_job("job.yaml", text)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("job.yaml: document 1 (Job j): spec.template.spec.containers"),
        "{e}"
    );
}

fn fat_tree_k8() -> topology::Cluster {
    railyard::cluster_arg::load_cluster_quiet(&railyard::cluster_arg::ClusterArgs {
        cluster: "preset:fat-tree-k8".to_owned(),
        ..Default::default()
    })
    .unwrap()
    .cluster
}

/// A native state pod with `gpus: 1e12` and no `gpu_ids` made up 10¹² GPU ids before its GPU
/// count was checked (found while writing the `state` target). Now refused first, naming the pod.
#[test]
fn state_pod_with_absurd_gpus_is_refused_before_making_ids() {
    let text = "jobs:\n  - name: j\n    pods:\n      - {node: host-000, gpus: 1e12}\n";
    let e = formats::state::read("state.yaml", text, &fat_tree_k8())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "state.yaml: jobs[0] (j): pods[0].gpus: expected (0, 8] on node \"host-000\", got 1000000000000"
    );
}
