//! `place --network-aware --model llama3-70b --layout tp=8,pp=4,dp=16` (64 hosts) on
//! `oci-h100-16k` beside 32 running 16-host jobs, each spread over two network blocks: the
//! slices derived, up to 16 candidates, each priced in two rank orders beside the running
//! jobs' Rings (issue 28, deliver 3).

use std::path::PathBuf;

use ops::place::{decide, PlaceInputs};

fn main() {
    divan::main();
}

#[divan::bench(sample_count = 3)]
fn place_network_aware_with_a_layout_on_oci_h100_16k(bencher: divan::Bencher) {
    let cluster =
        topology::build_from_spec(&topology::examples::oci_h100(2048)).expect("valid preset");
    let dir = std::env::temp_dir().join(format!("ops-bench-place-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let job = dir.join("job.yaml");
    std::fs::write(
        &job,
        "name: train\npod_sets:\n  - {name: w, count: 64, gpus: 8}\n",
    )
    .expect("job file");
    // Job k holds hosts 8k..8k+7 of network block 0 and the same of network block 1 (256 hosts
    // each), so each crosses the top tier.
    let mut state = String::from("jobs:\n");
    for k in 0..32u32 {
        state.push_str(&format!("  - name: run-{k}\n    pods:\n"));
        for h in (0..8).flat_map(|i| [8 * k + i, 256 * 4 + 8 * k + i]) {
            let node = &cluster.nodes[h as usize].name;
            state.push_str(&format!("      - {{node: {node}, gpus: 8}}\n"));
        }
    }
    let state_file = dir.join("state.yaml");
    std::fs::write(&state_file, state).expect("state file");
    let states: Vec<PathBuf> = vec![state_file];
    let t = layout::Training::from_flags("llama3-70b", "tp=8,pp=4,dp=16").expect("flags");
    bencher.bench(|| {
        let file = decide(
            &cluster,
            &PlaceInputs {
                job: &job,
                state: &states,
                queues: &[],
                no_preempt: true,
                flavors: &[],
                options: sched::PlaceOptions::default(),
                scheduler: None,
                network_aware: true,
                training: Some(&t),
            },
        )
        .expect("placed");
        assert!(file.placed);
        file
    });
}
