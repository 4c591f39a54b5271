//! What a placement may use beyond GPUs: per-node free resources (CPU, memory, pods, extended
//! resources), per-pod-set requests, node eligibility (node selector, required node affinity,
//! tolerations), pod-set groups, and the placement options that Kueue sets by feature gate.

use std::collections::BTreeMap;

use topology::{Cluster, NodeId};

use crate::dialect::{Dialect, KaiStrategy};
use crate::job::{Job, Toleration};

/// Resource amounts by Kubernetes resource name: `cpu` in millicores, `memory` in bytes, `pods`
/// and extended resources (`nvidia.com/gpu`, `example.com/nic`, …) in units.
pub type ResourceList = BTreeMap<String, u64>;

/// The resource every pod takes one of (`allocatable["pods"]` limits pods per node).
pub const PODS: &str = "pods";

/// How unconstrained pod sets (no required or preferred level) are spread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnconstrainedMode {
    /// Least free capacity first, no tightest-fit step (Kueue with its `TASProfileMixed` gate,
    /// on by default).
    #[default]
    LeastFreeCapacity,
    /// The BestFit rules of constrained pod sets (Kueue with `TASProfileMixed` off).
    BestFit,
}

/// Placement options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlaceOptions {
    /// How unconstrained pod sets are spread.
    pub unconstrained: UnconstrainedMode,
    /// Balanced placement for preferred pod sets (Kueue's `TASBalancedPlacement` gate, off by
    /// default): the fewest domains under one parent, each given an equal share first.
    pub balanced: bool,
    /// Preferred node affinity ranks domains before their capacity (Kueue's
    /// `TASRespectNodeAffinityPreferred` gate, off by default).
    pub preferred_affinity: bool,
    /// Whose placement rules decide: Kueue's TAS (the default) or KAI Scheduler's
    /// (`kai_place.rs`; the three options above are Kueue's and ignored by KAI).
    pub dialect: Dialect,
    /// KAI's placement strategies for GPU and CPU-only pods (used with [`Dialect::Kai`]).
    pub strategy: KaiStrategy,
}

/// An operator of a node selector requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectorOp {
    /// The label's value is one of the values.
    In,
    /// The label is missing or its value is none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is missing.
    DoesNotExist,
    /// The label's value, an integer, is greater than the single value.
    Gt,
    /// The label's value, an integer, is less than the single value.
    Lt,
}

/// One requirement of a node selector term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorRequirement {
    /// Label key.
    pub key: String,
    /// Operator.
    pub op: SelectorOp,
    /// Values (none for `Exists` / `DoesNotExist`, one for `Gt` / `Lt`).
    pub values: Vec<String>,
}

impl SelectorRequirement {
    /// Whether labels satisfy this requirement (Kubernetes rules).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        let int = |s: &str| s.parse::<i64>().ok();
        match self.op {
            SelectorOp::In => value.is_some_and(|v| self.values.contains(v)),
            SelectorOp::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            SelectorOp::Exists => value.is_some(),
            SelectorOp::DoesNotExist => value.is_none(),
            SelectorOp::Gt | SelectorOp::Lt => {
                let (Some(v), [bound]) = (value.and_then(|v| int(v)), self.values.as_slice())
                else {
                    return false;
                };
                match int(bound) {
                    Some(b) if self.op == SelectorOp::Gt => v > b,
                    Some(b) => v < b,
                    None => false,
                }
            }
        }
    }
}

/// A weighted preferred node-affinity term.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreferredTerm {
    /// Weight (Kubernetes: 1–100).
    pub weight: i32,
    /// All must match.
    pub requirements: Vec<SelectorRequirement>,
}

impl PreferredTerm {
    /// The node's preferred-affinity score: the weights of the terms its labels match.
    pub fn score(terms: &[PreferredTerm], labels: &BTreeMap<String, String>) -> i64 {
        terms
            .iter()
            .filter(|t| t.requirements.iter().all(|r| r.matches(labels)))
            .map(|t| i64::from(t.weight))
            .sum()
    }
}

/// Constraints and requests of one pod set beyond its GPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSetExtras {
    /// Requests per pod besides GPUs (`cpu`, `memory`, extended resources); each pod also takes
    /// one `pods`. Counted only against nodes with [`NodeFree`] resources.
    pub requests: ResourceList,
    /// Labels a node must carry with these values (`nodeSelector`, plus a ResourceFlavor's
    /// `nodeLabels`).
    pub node_selector: BTreeMap<String, String>,
    /// Required node affinity: a node must match at least one term (all requirements of it);
    /// empty means no affinity.
    pub affinity: Vec<Vec<SelectorRequirement>>,
    /// Preferred node affinity: each node scores the weights of the terms it matches; used only
    /// with [`PlaceOptions::preferred_affinity`].
    pub preferred: Vec<PreferredTerm>,
    /// Taints tolerated besides the job's (e.g. a ResourceFlavor's tolerations).
    pub tolerations: Vec<Toleration>,
    /// Pod sets with the same group name are placed together (Kueue
    /// `kueue.x-k8s.io/podset-group-name`): a group is a leader pod set of one pod and a worker
    /// pod set, placed in one pass so the leader lands inside the workers' domain.
    pub group: Option<String>,
    /// The KAI sub-group the pod set belongs to (index into [`PlaceInput::sub_groups`]);
    /// `None`: directly under the job. Kueue's rules ignore it.
    pub sub_group: Option<usize>,
    /// Nodes of this pod set's pods that already run (their GPUs are in the occupancy): under
    /// KAI's rules they count towards the pod set's minimum and count, only the rest is placed,
    /// and a required level keeps new pods in the domains that hold them (KAI grows a running
    /// elastic job). Kueue's rules ignore it.
    pub running_on: Vec<NodeId>,
}

/// A KAI PodGroup sub-group that holds other sub-groups or pod sets (a PodGroup's
/// `spec.subGroups` entry with children): all pods under it obey its topology constraint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubGroup {
    /// Name, for messages.
    pub name: String,
    /// The enclosing sub-group (an earlier index); `None` directly under the job.
    pub parent: Option<usize>,
    /// The constraint on all pods under the sub-group (slices are not used).
    pub topology: crate::job::TopologyRequest,
    /// Direct members (sub-groups and pod sets) that must be placed for the sub-group to run
    /// (KAI's `minSubGroup`); `None`: all of them. The rest are placed afterwards if they fit.
    pub min_sub_groups: Option<u32>,
}

/// Free resources of every node, by node index: allocatable minus what pods not tracked in the
/// [`crate::Occupancy`] request. Empty: nodes are limited by their GPUs alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeFree(pub Vec<ResourceList>);

/// Everything [`crate::place_with`] takes besides the cluster, occupancy and job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlaceInput {
    /// Options.
    pub options: PlaceOptions,
    /// Free non-GPU resources per node (empty: not limited).
    pub node_free: NodeFree,
    /// Extras per pod set, by index in [`Job::pod_sets`]; missing entries have none.
    pub pod_sets: Vec<PodSetExtras>,
    /// KAI sub-groups above the pod sets, parents first (used with [`Dialect::Kai`]).
    pub sub_groups: Vec<SubGroup>,
}

impl PlaceInput {
    /// The extras of pod set `i`.
    pub(crate) fn extras(&self, i: usize) -> Option<&PodSetExtras> {
        self.pod_sets.get(i)
    }
}

/// Whether node `n` may take pods of a pod set: Ready, not cordoned, every NoSchedule and
/// NoExecute taint tolerated, node selector and required affinity matched.
pub(crate) fn eligible(
    cluster: &Cluster,
    n: NodeId,
    job: &Job,
    extras: Option<&PodSetExtras>,
) -> bool {
    let tolerated = |t: &topology::Taint| {
        job.tolerations.iter().any(|x| x.tolerates(t))
            || extras.is_some_and(|e| e.tolerations.iter().any(|x| x.tolerates(t)))
    };
    if !cluster.is_schedulable(n, tolerated) {
        return false;
    }
    let Some(e) = extras else {
        return true;
    };
    let labels = &cluster.node(n).labels;
    e.node_selector
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && (e.affinity.is_empty()
            || e.affinity
                .iter()
                .any(|term| term.iter().all(|r| r.matches(labels))))
}

/// How many pods requesting `requests` (and one `pods` each) fit into `free`; `u64::MAX` when
/// nothing limits them. A requested resource the node does not have fits no pod.
pub(crate) fn count_in(free: &ResourceList, requests: &ResourceList) -> u64 {
    let pods = free.get(PODS).copied().unwrap_or(0);
    requests
        .iter()
        .filter(|(k, &amount)| amount > 0 && k.as_str() != PODS)
        .map(|(k, &amount)| free.get(k).copied().unwrap_or(0) / amount)
        .fold(pods, u64::min)
}

/// `free` minus `count` pods of `requests` (and their `pods`), saturating.
pub(crate) fn subtract(free: &mut ResourceList, requests: &ResourceList, count: u64) {
    for (k, &amount) in requests {
        if k != PODS {
            if let Some(f) = free.get_mut(k) {
                *f = f.saturating_sub(amount.saturating_mul(count));
            }
        }
    }
    if let Some(f) = free.get_mut(PODS) {
        *f = f.saturating_sub(count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[(&str, u64)]) -> ResourceList {
        items.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    fn pods_limit_and_every_resource_count() {
        let free = list(&[("cpu", 4000), ("memory", 1 << 30), ("pods", 3)]);
        assert_eq!(count_in(&free, &list(&[("cpu", 1000)])), 3);
        assert_eq!(count_in(&free, &list(&[("cpu", 1500)])), 2);
        assert_eq!(count_in(&free, &list(&[("memory", 1 << 29)])), 2);
        assert_eq!(count_in(&free, &list(&[("example.com/gpu", 1)])), 0);
    }

    #[test]
    fn selector_operators() {
        let labels: BTreeMap<String, String> = [
            ("zone".to_owned(), "a".to_owned()),
            ("n".to_owned(), "5".to_owned()),
        ]
        .into();
        let req = |key: &str, op, values: &[&str]| SelectorRequirement {
            key: key.to_owned(),
            op,
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        };
        assert!(req("zone", SelectorOp::In, &["a", "b"]).matches(&labels));
        assert!(!req("zone", SelectorOp::NotIn, &["a"]).matches(&labels));
        assert!(req("rack", SelectorOp::NotIn, &["a"]).matches(&labels));
        assert!(req("rack", SelectorOp::DoesNotExist, &[]).matches(&labels));
        assert!(req("n", SelectorOp::Gt, &["4"]).matches(&labels));
        assert!(!req("n", SelectorOp::Lt, &["5"]).matches(&labels));
        assert!(!req("zone", SelectorOp::Gt, &["1"]).matches(&labels));
    }
}
