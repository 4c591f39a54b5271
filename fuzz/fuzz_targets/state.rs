//! `place --state` files (native state, a placement file, a list of them) read against a small
//! cluster, then a job placed over that occupancy with preemption, as `railyard place` does.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

const JOB: &str = "
name: incoming
queue: team-a
priority: 5
pod_sets:
  - count: 4
    gpus: 8
    topology: {required: oci.oraclecloud.com/rdma.local_block_id}
";

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let cluster = common::small_cluster();
    let Ok(occupancy) = formats::state::read("state.json", text, cluster) else {
        return;
    };
    let job = formats::jobs::read_job("job.yaml", JOB)
        .and_then(|d| d.resolve("job.yaml", cluster))
        .expect("the fixed job resolves");
    let _ = occupancy.usage_milli_by_queue();
    let _ = sched::place_with_preemption(
        cluster,
        &occupancy,
        &job,
        &sched::PreemptionPolicy::default(),
    );
});
