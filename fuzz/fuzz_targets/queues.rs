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
    let problems = ops::queues::problems(&read);
    if !problems.is_empty() {
        return;
    }
    let specs: Vec<sched::QueueSpec> = read.queues.iter().map(|q| q.spec.clone()).collect();
    let Ok(tree) = sched::QueueTree::new(specs) else {
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
    let _ = sched::fair_share(&tree, &demand, &capacity);
});
