//! Queue files (`queues validate`, `queues share`, `place --queues`): KAI Queues, Kueue
//! ClusterQueues / Cohorts / LocalQueues, and jobs in the same files; then the tree and the
//! fair share of the jobs' demand, as `queues share` computes it.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sched::Resources;

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let read = formats::queues::read(&[("queues.yaml".to_owned(), text.to_owned())]);
    // As `queues share` computes: under the files' rules, problems KAI accepts as warnings.
    let dialect = ops::queues::dialect(&read);
    let Ok((tree, _warnings)) = ops::queues::tree_in(&read, dialect) else {
        return;
    };
    let mut demand = vec![Resources::default(); tree.queues.len()];
    for j in &read.jobs {
        if let Some(q) = tree.find(&j.queue) {
            let d = &mut demand[q.index()];
            d.gpu += j.request.gpu;
            d.cpu += j.request.cpu;
            d.memory += j.request.memory;
        }
    }
    let capacity = Resources {
        gpu: 64.0,
        cpu: f64::INFINITY,
        memory: f64::INFINITY,
    };
    let _ = sched::fair_share_in(&tree, &demand, &capacity, dialect);
});
