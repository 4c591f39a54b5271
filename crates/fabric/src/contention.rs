//! A new job priced against the jobs already running: its bus bandwidth alone and sharing the
//! fabric with them, and each running job's bus bandwidth before and after it starts.
//!
//! Every figure comes from [`Fabric::solve`] (job-level max-min over all jobs together), so the
//! "with others" figures are exactly what a simulator would see when the new job starts.

use crate::model::{Allocation, Fabric, RoutedJob};

/// What starting `new` beside `running` does, Gb/s of bus bandwidth.
#[derive(Clone, Debug)]
pub struct Contention {
    /// The new job alone on the fabric (same routing, no other traffic).
    pub new_alone_gbps: f64,
    /// The new job sharing the fabric with every running job.
    pub new_shared_gbps: f64,
    /// Each running job before the new job starts (the running jobs alone together).
    pub before_gbps: Vec<f64>,
    /// Each running job after the new job starts.
    pub after_gbps: Vec<f64>,
    /// The solve of all jobs together (the new job first): loads for hot links.
    pub shared: Allocation,
}

/// Price `new` against `running` (routed with distinct job IDs, so their QP numbers differ).
pub fn contention(fabric: &Fabric<'_>, new: &RoutedJob, running: &[RoutedJob]) -> Contention {
    let alone = fabric.paces(&[new])[0];
    let others: Vec<&RoutedJob> = running.iter().collect();
    let before = if others.is_empty() {
        Vec::new()
    } else {
        fabric.paces(&others)
    };
    let mut all = Vec::with_capacity(running.len() + 1);
    all.push(new);
    all.extend(others);
    let shared = fabric.solve(&all);
    Contention {
        new_alone_gbps: alone,
        new_shared_gbps: shared.busbw_gbps[0],
        before_gbps: before,
        after_gbps: shared.busbw_gbps[1..].to_vec(),
        shared,
    }
}
