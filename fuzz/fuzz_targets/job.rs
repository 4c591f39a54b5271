//! Job files (`place --job`): native, Kueue Job, KAI Pod / PodGroup; resolved against a small
//! cluster and placed, as `railyard place` does.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let Ok(jobs) = formats::jobs::read_jobs("job.yaml", text) else {
        return;
    };
    let cluster = common::small_cluster();
    for doc in &jobs {
        let _ = doc.request();
        let Ok(job) = doc.resolve("job.yaml", cluster) else {
            continue;
        };
        let _ = job.request(80 * 1024);
        let occupancy = sched::Occupancy::new(cluster);
        let _ = sched::place(cluster, &occupancy, &job);
    }
});
