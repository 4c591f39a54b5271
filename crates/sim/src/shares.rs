//! Jobs that share GPUs or ask for CPU, memory and a GPU model (Alibaba's GPU-sharing traces):
//! what a pod asks of a node besides its GPUs, the nodes' free CPU and memory kept in step with
//! the running pods, and the checks that no node holds more than it has.
//!
//! The GPU share itself is the scheduler's (`sched::GpuRequest::Fraction`, placed and checked by
//! `sched`); here are only the requests the scheduler takes as extras: `cpu` (millicores) and
//! `memory` (bytes) against each node's free room ([`sched::NodeFree`]), and the accepted GPU
//! models as a required node affinity on [`GPU_MODEL_LABEL`]. A node without `cpu` or `memory`
//! in its allocatable resources is not limited by it.

use sched::{Allocation, NodeFree, PodSetExtras, ResourceList, SelectorOp, SelectorRequirement};
use topology::Cluster;

use crate::trace::PodShape;

/// The node label that names a node's GPU model (NVIDIA's GPU feature discovery sets it).
pub const GPU_MODEL_LABEL: &str = "nvidia.com/gpu.product";

/// Room for pods a node without a `pods` allocatable has: more than any node runs.
const UNLIMITED_PODS: u64 = 1_000_000;

/// A resource a node does not list is not limited: this much of it.
const UNLIMITED: u64 = u64::MAX / 4;

const MIB: u64 = 1024 * 1024;

/// The per-pod requests of a shape, in the scheduler's units (`cpu` millicores, `memory`
/// bytes); empty when it asks neither.
pub fn requests(shape: &PodShape) -> ResourceList {
    let mut r = ResourceList::new();
    if shape.cpu_milli > 0 {
        r.insert("cpu".to_owned(), shape.cpu_milli);
    }
    if shape.memory_mib > 0 {
        r.insert("memory".to_owned(), shape.memory_mib.saturating_mul(MIB));
    }
    r
}

/// The scheduler's extras for a pod set of this shape; `None` when it asks nothing beyond GPUs
/// (so the scheduler keeps its fast path).
pub fn pod_extras(shape: &PodShape) -> Option<PodSetExtras> {
    let requests = requests(shape);
    if requests.is_empty() && shape.gpu_models.is_empty() {
        return None;
    }
    let affinity = if shape.gpu_models.is_empty() {
        Vec::new()
    } else {
        vec![vec![SelectorRequirement {
            key: GPU_MODEL_LABEL.to_owned(),
            op: SelectorOp::In,
            values: shape.gpu_models.clone(),
        }]]
    };
    Some(PodSetExtras {
        requests,
        affinity,
        ..PodSetExtras::default()
    })
}

/// Every node's room on an empty cluster: its allocatable `cpu`, `memory` and `pods`, each
/// unlimited when the node does not list it.
pub fn empty_room(cluster: &Cluster) -> NodeFree {
    NodeFree(
        cluster
            .nodes
            .iter()
            .map(|n| {
                let get = |k: &str, default: u64| n.allocatable.get(k).copied().unwrap_or(default);
                ResourceList::from([
                    ("cpu".to_owned(), get("cpu", UNLIMITED)),
                    ("memory".to_owned(), get("memory", UNLIMITED)),
                    ("pods".to_owned(), get("pods", UNLIMITED_PODS)),
                ])
            })
            .collect(),
    )
}

/// Take (`take` true) or give back one pod's `requests` on node `node` of `room`.
pub fn hold(room: &mut NodeFree, node: usize, requests: &ResourceList, take: bool) {
    let Some(free) = room.0.get_mut(node) else {
        return;
    };
    for (k, &amount) in requests.iter().chain([(&"pods".to_owned(), &1)]) {
        if let Some(f) = free.get_mut(k) {
            *f = if take {
                f.saturating_sub(amount)
            } else {
                f.saturating_add(amount)
            };
        }
    }
}

/// What broke: `(invariant, detail)`, for the simulator's invariant report.
pub type Broken = (&'static str, String);

/// One running job's pods against its shape: each on a node of an accepted GPU model. Adds
/// each pod's requests to `used` (per node).
pub fn check_pods(
    cluster: &Cluster,
    alloc: &Allocation,
    shape: &PodShape,
    used: &mut [ResourceList],
) -> Result<(), Broken> {
    let requests = requests(shape);
    for p in &alloc.pods {
        let node = cluster.node(p.node);
        if !shape.gpu_models.is_empty() {
            let model = node.labels.get(GPU_MODEL_LABEL);
            if model.is_none_or(|m| !shape.gpu_models.contains(m)) {
                return Err((
                    "GPU model",
                    format!(
                        "a pod on {} ({}) accepts only {}",
                        node.name,
                        model.map_or("no GPU model", String::as_str),
                        shape.gpu_models.join("|")
                    ),
                ));
            }
        }
        if let Some(u) = used.get_mut(p.node.index()) {
            for (k, &v) in requests.iter().chain([(&"pods".to_owned(), &1)]) {
                *u.entry(k.clone()).or_insert(0) += v;
            }
        }
    }
    Ok(())
}

/// Per node: what the running pods ask (`used`, from [`check_pods`]) is within the node's
/// allocatable resources, and the kept room equals the empty room minus it.
pub fn check_room(cluster: &Cluster, used: &[ResourceList], room: &NodeFree) -> Result<(), Broken> {
    if room.0.is_empty() {
        return Ok(());
    }
    let empty = empty_room(cluster);
    for (n, (base, used)) in empty.0.iter().zip(used).enumerate() {
        let name = &cluster.nodes[n].name;
        for (k, &cap) in base {
            let u = used.get(k).copied().unwrap_or(0);
            if u > cap {
                return Err((
                    "node capacity",
                    format!("{name}: the running pods ask {u} {k}, the node has {cap}"),
                ));
            }
            let kept = room.0[n].get(k).copied().unwrap_or(0);
            if kept != cap - u {
                return Err((
                    "node room",
                    format!(
                        "{name}: {kept} {k} counted free, the running pods leave {}",
                        cap - u
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_in_scheduler_units_and_empty_shapes_ask_nothing() {
        assert!(pod_extras(&PodShape::default()).is_none());
        let shape = PodShape {
            gpu_milli: Some(500),
            cpu_milli: 4000,
            memory_mib: 2,
            gpu_models: vec!["T4".to_owned()],
        };
        let e = pod_extras(&shape).unwrap();
        assert_eq!(e.requests["cpu"], 4000);
        assert_eq!(e.requests["memory"], 2 * 1024 * 1024);
        assert_eq!(e.affinity[0][0].values, vec!["T4".to_owned()]);
    }

    #[test]
    fn holding_and_giving_back_restores_the_room() {
        let mut room = NodeFree(vec![ResourceList::from([
            ("cpu".to_owned(), 10),
            ("memory".to_owned(), 100),
            ("pods".to_owned(), 3),
        ])]);
        let before = room.clone();
        let r = ResourceList::from([("cpu".to_owned(), 4), ("memory".to_owned(), 30)]);
        hold(&mut room, 0, &r, true);
        assert_eq!(room.0[0]["cpu"], 6);
        assert_eq!(room.0[0]["pods"], 2);
        hold(&mut room, 0, &r, false);
        assert_eq!(room, before);
    }
}
