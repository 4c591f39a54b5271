//! `railyard fabric step`: a layout job's step priced on a preset, as text (snapshot) and JSON,
//! and its bad input.

fn step(extra: &[&str]) -> crate::Run {
    step_with("tp=8,pp=4,dp=16", extra)
}

fn step_with(layout: &str, extra: &[&str]) -> crate::Run {
    let mut args = vec![
        "fabric",
        "step",
        "--cluster",
        "preset:oci-h100-16k-4to1",
        "--model",
        "llama3-70b",
        "--layout",
        layout,
    ];
    args.extend_from_slice(extra);
    crate::railyard(&args)
}

/// Llama 3 70B on 512 GPUs of the 4:1 preset: PP crosses the oversubscribed tier (hot links
/// at 100%), the text puts the largest exposed cost first with its change.
#[test]
fn llama3_70b_on_the_oversubscribed_preset() {
    let run = step(&["-o", "wide"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn json_has_the_step_and_every_communicator() {
    let run = step_with("tp=8,pp=4,dp=16,vp=2", &["-o", "json", "--overlap-dp"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let s = &v["step"];
    let sum = ["compute_s", "bubble_s", "exposed_s"]
        .iter()
        .map(|k| s[k].as_f64().unwrap())
        .sum::<f64>();
    assert!((s["step_s"].as_f64().unwrap() - sum).abs() < 1e-9);
    let kinds: Vec<&str> = s["comms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["tp", "pp", "dp", "dp"]);
    assert_eq!(v["layout"], "tp=8,pp=4,dp=16,vp=2");
    assert!(v["advice"].as_array().is_some_and(|a| !a.is_empty()));
}

#[test]
fn bad_input_is_one_line_and_exit_1_bad_flags_exit_2() {
    crate::assert_one_line_error(
        &step(&["--efficiency", "2"]),
        "efficiency: expected 0 < e ≤ 1",
    );
    crate::assert_one_line_error(&step_with("tp=3,pp=4,dp=16", &[]), "layout.tp");
    let unknown = [
        "fabric",
        "step",
        "--cluster",
        "preset:fat-tree-k8",
        "--model",
        "gpt-5",
    ];
    let run = crate::railyard(&[&unknown[..], &["--layout", "tp=8"]].concat());
    crate::assert_one_line_error(&run, "--model: unknown preset `gpt-5`");
    crate::assert_one_line_error(&step(&["--global-batch", "100"]), "batch.global");
    crate::assert_one_line_error(
        &step_with("tp=8,pp=16,dp=2048", &[]),
        "--layout: needs 262144 GPUs; oci-h100-16k-4to1 has 16384",
    );
    assert_eq!(step(&["--precision", "fp4"]).code, 2);
    assert_eq!(step_with("tp=8,pp=4,dp=16,xp=2", &[]).code, 1);
}

fn json(args: &[&str]) -> serde_json::Value {
    let run = crate::railyard(
        &[
            &["fabric", "step", "--model", "llama3-8b", "-o", "json"],
            args,
        ]
        .concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("JSON")
}

/// A placement of the cluster's first 16 GPUs prices exactly as no placement; a job placed
/// beside a running job on 4:1 uplinks gets less DP bandwidth than the same job alone.
#[test]
fn placement_and_job_with_running_jobs() {
    let two = [
        "--cluster",
        "tests/fixtures/fabric/dgx-h100-2n.yaml",
        "--layout",
        "tp=8,dp=2",
    ];
    let placed = json(
        &[
            &two[..],
            &[
                "--placement",
                "tests/fixtures/fabric/dgx-h100-2n-placement.json",
            ],
        ]
        .concat(),
    );
    let default = json(&two);
    assert_eq!(placed["step"], default["step"]);
    assert_eq!(placed["step"]["comms"][1]["tier"], "tier 0");
    let four = [
        "--cluster",
        "tests/fixtures/fabric/two-leaves-4to1.yaml",
        "--layout",
        "tp=8,dp=4",
    ];
    let job = ["--job", "tests/fixtures/fabric/job-b.yaml"];
    let alone = json(&[&four[..], &job].concat());
    let beside = json(
        &[
            &four[..],
            &job,
            &["--state", "tests/fixtures/fabric/job-a-state.yaml"],
        ]
        .concat(),
    );
    let dp_busbw = |v: &serde_json::Value| v["step"]["comms"][1]["busbw_gb_s"].as_f64().unwrap();
    assert!(
        dp_busbw(&beside) < dp_busbw(&alone),
        "{} vs {}",
        dp_busbw(&beside),
        dp_busbw(&alone)
    );
}
