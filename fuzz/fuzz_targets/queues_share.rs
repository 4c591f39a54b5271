//! `queues share --demand`: queue files, then (after a line `#demand`) a demand file or job
//! file, read by `ops::queues::read_demand` as the CLI reads it; the fair share of that
//! demand must be finite, non-negative and within the capacity.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sched::{Resource, Resources};

fuzz_target!(|data: &[u8]| {
    let Some(text) = common::text(data) else {
        return;
    };
    let (queues_text, demand_text) = text.split_once("\n#demand\n").unwrap_or((text, ""));
    let read = formats::queues::read(&[("queues.yaml".to_owned(), queues_text.to_owned())]);
    let Ok(tree) = ops::queues::tree(&read) else {
        return;
    };
    let Ok(demand_read) = ops::queues::read_demand("demand.yaml", demand_text)
    else {
        return;
    };
    let mut demand = vec![Resources::default(); tree.queues.len()];
    for (queue, r) in &demand_read.demand {
        if let Some(q) = tree.find(queue) {
            demand[q.index()] = demand[q.index()].add(r);
        }
    }
    let mut capacity = Resources {
        gpu: 64.0,
        cpu: f64::INFINITY,
        memory: f64::INFINITY,
    };
    if let Some((c, given)) = demand_read.capacity {
        for r in Resource::ALL {
            if given[r as usize] {
                capacity.set(r, c.get(r));
            }
        }
    }
    let shares = sched::fair_share(&tree, &demand, &capacity);
    for s in &shares {
        for r in Resource::ALL {
            let v = s.get(r);
            assert!(
                v.is_finite() || capacity.get(r).is_infinite(),
                "share {v} not finite"
            );
            assert!(!v.is_nan() && v >= -1e-6, "share {v} negative or NaN");
        }
    }
    let top: f64 = tree.roots.iter().map(|q| shares[q.index()].gpu).sum();
    assert!(
        top <= capacity.gpu * (1.0 + 1e-9) + 1e-6,
        "{top} above {}",
        capacity.gpu
    );
});
