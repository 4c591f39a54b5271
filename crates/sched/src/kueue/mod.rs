//! Kueue's admission (quota) model: LocalQueue-free ClusterQueues and Cohorts with per-flavor
//! quotas of resource groups, borrowing and lending limits at every level ([`quota`]), the
//! flavor assigner with `flavorFungibility` ([`assign`]), and quota preemption
//! ([`preempt`]: `withinClusterQueue`, `reclaimWithinCohort`, `borrowWithinCohort`; under fair
//! sharing [`fair_preempt`]). Names of
//! flavors and resources are data; nothing here reads a file or knows a label.

pub mod assign;
pub mod cycle;
pub mod fair;
pub mod fair_preempt;
pub mod flavors;
pub mod preempt;
pub mod quota;

use std::collections::BTreeMap;
use std::fmt;

use crate::constraints::SelectorRequirement;
pub use assign::{Assignment, FlavorCheck, Mode, PodSetAssignment, PodSetRequest};
pub use cycle::{cycle, Entry, Head, Outcome};
pub use flavors::{mismatch, pod_set_requests, FlavorNodes};
pub use preempt::{PreemptionPolicy, Target};
pub use quota::{Fr, NodeKind, Quota, QuotaTree, UNLIMITED};

/// A resource group: the resources it covers and its flavors, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceGroup {
    /// `coveredResources`.
    pub covered: Vec<String>,
    /// `flavors[].name`, in order, with `flavors[].resources[]` (resource → quota).
    pub flavors: Vec<(String, BTreeMap<String, Quota>)>,
}

/// One `flavorFungibility` policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fungibility {
    /// `MayStopSearch` (v1beta1 `Borrow` / `Preempt`).
    MayStopSearch,
    /// `TryNextFlavor`.
    #[default]
    TryNextFlavor,
}

/// `flavorFungibility.preference`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FungibilityPreference {
    /// `BorrowingOverPreemption` (also the behaviour with no preference).
    #[default]
    BorrowingOverPreemption,
    /// `PreemptionOverBorrowing`.
    PreemptionOverBorrowing,
}

/// A ClusterQueue's `flavorFungibility` (Kueue's defaults: `whenCanBorrow: MayStopSearch`,
/// `whenCanPreempt: TryNextFlavor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlavorFungibility {
    /// `whenCanBorrow`.
    pub when_can_borrow: Fungibility,
    /// `whenCanPreempt`.
    pub when_can_preempt: Fungibility,
    /// `preference`.
    pub preference: Option<FungibilityPreference>,
}

impl Default for FlavorFungibility {
    fn default() -> Self {
        Self {
            when_can_borrow: Fungibility::MayStopSearch,
            when_can_preempt: Fungibility::TryNextFlavor,
            preference: None,
        }
    }
}

/// A ClusterQueue's `namespaceSelector`: `None` (the field left out) selects no namespace,
/// as Kueue's `LabelSelectorAsSelector(nil)`; `Some(vec![])` (`{}`) selects all.
pub type NamespaceSelector = Option<Vec<SelectorRequirement>>;

/// A ClusterQueue as declared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterQueueSpec {
    /// `metadata.name`.
    pub name: String,
    /// `spec.cohortName`.
    pub cohort: Option<String>,
    /// `spec.resourceGroups`.
    pub groups: Vec<ResourceGroup>,
    /// `spec.flavorFungibility`.
    pub fungibility: FlavorFungibility,
    /// `spec.preemption`.
    pub preemption: PreemptionPolicy,
    /// `spec.stopPolicy` is `Hold` or `HoldAndDrain`.
    pub stopped: bool,
    /// `spec.namespaceSelector`.
    pub namespace_selector: NamespaceSelector,
    /// `spec.fairSharing.weight` in thousandths (1000 = Kueue's default 1).
    pub fair_weight_milli: i64,
}

/// A Cohort as declared (or only named, with no quotas).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CohortSpec {
    /// `metadata.name`.
    pub name: String,
    /// `spec.parentName`.
    pub parent: Option<String>,
    /// `spec.resourceGroups` (flavor → resource → quota).
    pub groups: Vec<ResourceGroup>,
    /// `spec.fairSharing.weight` in thousandths.
    pub fair_weight_milli: i64,
}

/// A Workload holding quota: its ClusterQueue, priority, the order it was admitted in and
/// its usage per (flavor, resource).
#[derive(Clone, Debug, PartialEq)]
pub struct Admitted {
    /// `namespace/name`.
    pub name: String,
    /// `status.admission.clusterQueue`.
    pub cluster_queue: String,
    /// Priority.
    pub priority: i32,
    /// When its quota was reserved (any monotone order; larger = later).
    pub admitted_at: i64,
    /// (flavor, resource, amount).
    pub usage: Vec<(String, String, i64)>,
}

/// A problem with the queue objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KueueProblem {
    /// The ClusterQueue or Cohort.
    pub queue: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for KueueProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "queue `{}`: {}", self.queue, self.message)
    }
}

/// ClusterQueues and Cohorts with their usage: everything an admission decision reads.
#[derive(Clone, Debug, Default)]
pub struct KueueQueues {
    /// The quota tree.
    pub tree: QuotaTree,
    /// Per node: the ClusterQueue's spec (`None` for Cohorts).
    pub cluster_queues: Vec<Option<ClusterQueueSpec>>,
    /// Workloads holding quota, in input order.
    pub admitted: Vec<Admitted>,
    /// Per admitted Workload: its ClusterQueue node and usage as interned pairs.
    admitted_usage: Vec<(usize, Vec<(Fr, i64)>)>,
    /// Per node: `fairSharing.weight` in thousandths (1000 for a Cohort only named).
    fair_weights_milli: Vec<i64>,
    /// Kueue's `fairSharing` when on (its `preemptionStrategies`; empty: Kueue's default):
    /// preemption then follows [`fair_preempt`], else [`preempt`]'s classical rules.
    pub fair_sharing: Option<Vec<fair_preempt::Strategy>>,
}

impl KueueQueues {
    /// Build the tree; Cohorts named but not declared exist with no quota, as in Kueue. Every
    /// problem at once: duplicate names, a flavor or resource twice in one queue, a cycle of
    /// Cohorts. (A `borrowingLimit` without a parent, which Kueue's webhook refuses, changes
    /// nothing: there is nothing to borrow from.)
    pub fn new(
        cqs: &[ClusterQueueSpec],
        cohorts: &[CohortSpec],
    ) -> Result<KueueQueues, Vec<KueueProblem>> {
        let mut problems = Vec::new();
        let mut tree = QuotaTree::default();
        let mut specs = Vec::new();
        let mut weights = Vec::new();
        let fill = |tree: &mut QuotaTree,
                    n: usize,
                    name: &str,
                    groups: &[ResourceGroup],
                    _has_parent: bool,
                    problems: &mut Vec<KueueProblem>| {
            for g in groups {
                for (flavor, res) in &g.flavors {
                    let f = tree.flavor_id(flavor);
                    for (r, q) in res {
                        let r = tree.resource_id(r);
                        if tree.nodes[n].quotas.insert((f, r), *q).is_some() {
                            problems.push(KueueProblem {
                                queue: name.to_owned(),
                                message: format!(
                                    "flavor `{flavor}` gives resource `{}` twice",
                                    tree.resources[r as usize]
                                ),
                            });
                        }
                    }
                }
            }
        };
        for cq in cqs {
            let Some(n) = tree.add_node(&cq.name, NodeKind::ClusterQueue) else {
                problems.push(KueueProblem {
                    queue: cq.name.clone(),
                    message: "ClusterQueue defined more than once".to_owned(),
                });
                continue;
            };
            fill(
                &mut tree,
                n,
                &cq.name,
                &cq.groups,
                cq.cohort.is_some(),
                &mut problems,
            );
            specs.push(Some(cq.clone()));
            weights.push(cq.fair_weight_milli);
        }
        for c in cohorts {
            let Some(n) = tree.add_node(&c.name, NodeKind::Cohort) else {
                problems.push(KueueProblem {
                    queue: c.name.clone(),
                    message: "Cohort defined more than once".to_owned(),
                });
                continue;
            };
            fill(
                &mut tree,
                n,
                &c.name,
                &c.groups,
                c.parent.is_some(),
                &mut problems,
            );
            specs.push(None);
            weights.push(c.fair_weight_milli);
        }
        // Parents: a Cohort named but not declared is made here.
        let links: Vec<(usize, String)> = cqs
            .iter()
            .filter_map(|q| Some((tree.cluster_queue(&q.name)?, q.cohort.clone()?)))
            .chain(
                cohorts
                    .iter()
                    .filter_map(|c| Some((tree.cohort(&c.name)?, c.parent.clone()?))),
            )
            .collect();
        for (child, parent) in links {
            let p = match tree.cohort(&parent) {
                Some(p) => p,
                None => {
                    specs.push(None);
                    weights.push(1000);
                    tree.add_node(&parent, NodeKind::Cohort)
                        .expect("a cohort not yet present")
                }
            };
            tree.set_parent(child, p);
        }
        for c in tree.cycles() {
            problems.push(KueueProblem {
                queue: tree.nodes[c].name.clone(),
                message: "the Cohorts' parentName chain forms a cycle".to_owned(),
            });
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        tree.update();
        Ok(KueueQueues {
            tree,
            cluster_queues: specs,
            admitted: Vec::new(),
            admitted_usage: Vec::new(),
            fair_weights_milli: weights,
            fair_sharing: None,
        })
    }

    /// The Workloads ClusterQueue `cq` would preempt so that `requests` fit, or `None`
    /// (Kueue's `getTargets`): [`fair_preempt::targets`] when [`Self::fair_sharing`] is on,
    /// else [`preempt::targets`]; the arguments are theirs.
    pub fn preemption_targets(
        &mut self,
        cq: usize,
        need: &[Fr],
        requests: &[(Fr, i64)],
        priority: i32,
        created: i64,
    ) -> Option<Vec<Target>> {
        match self.fair_sharing.clone() {
            Some(s) => fair_preempt::targets(self, cq, need, requests, priority, created, &s),
            None => preempt::targets(self, cq, need, requests, priority, created),
        }
    }

    /// `fairSharing.weight` of node `n` (ClusterQueue or Cohort) in thousandths.
    pub fn fair_weight_milli(&self, n: usize) -> i64 {
        self.fair_weights_milli.get(n).copied().unwrap_or(1000)
    }

    /// The ClusterQueue node called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.tree.cluster_queue(name)
    }

    /// The spec of ClusterQueue node `cq`.
    pub fn spec(&self, cq: usize) -> &ClusterQueueSpec {
        self.cluster_queues[cq]
            .as_ref()
            .expect("a ClusterQueue node")
    }

    /// Count a Workload's usage against its ClusterQueue (and, past the lending limits, its
    /// Cohorts). A Workload of an unknown ClusterQueue is an error naming it.
    pub fn admit_existing(&mut self, w: Admitted) -> Result<(), KueueProblem> {
        let cq = self.find(&w.cluster_queue).ok_or_else(|| KueueProblem {
            queue: w.cluster_queue.clone(),
            message: format!(
                "Workload `{}` is admitted to this ClusterQueue, which is not in the queue files",
                w.name
            ),
        })?;
        let mut usage = Vec::new();
        for (f, r, v) in &w.usage {
            let fr = (self.tree.flavor_id(f), self.tree.resource_id(r));
            self.tree.add_usage(cq, fr, *v);
            usage.push((fr, *v));
        }
        self.admitted.push(w);
        self.admitted_usage.push((cq, usage));
        Ok(())
    }

    /// The ClusterQueue node and interned usage of admitted Workload `i`.
    pub fn admitted_usage(&self, i: usize) -> (usize, &[(Fr, i64)]) {
        let (cq, u) = &self.admitted_usage[i];
        (*cq, u)
    }

    /// Give back the quota of admitted Workload `name` (it finished or was stopped); whether it
    /// held any. Later Workloads keep their order.
    pub fn release(&mut self, name: &str) -> bool {
        let Some(i) = self.admitted.iter().position(|w| w.name == name) else {
            return false;
        };
        let (cq, usage) = self.admitted_usage.remove(i);
        for (fr, v) in usage {
            self.tree.remove_usage(cq, fr, v);
        }
        self.admitted.remove(i);
        true
    }

    /// The first ClusterQueue (in node order) that holds more of a (flavor, resource) than
    /// Kueue could have admitted: its usage above what its nominal quota, its Cohorts and their
    /// limits allow (`available` below zero), as `(queue, flavor, resource, usage, nominal)`.
    /// A ClusterQueue without a Cohort is held to its nominal quota. Pure.
    pub fn over_admitted(&self) -> Option<(String, String, String, i64, i64)> {
        for (n, node) in self.tree.nodes.iter().enumerate() {
            if node.kind != NodeKind::ClusterQueue {
                continue;
            }
            for (&fr, &u) in &node.usage {
                if u > 0 && self.tree.available(n, fr) < 0 {
                    return Some((
                        node.name.clone(),
                        self.tree.flavors[fr.0 as usize].clone(),
                        self.tree.resources[fr.1 as usize].clone(),
                        u,
                        self.tree.nominal(n, fr),
                    ));
                }
            }
        }
        None
    }

    /// Whether ClusterQueue `cq` takes Workloads from a namespace with these labels.
    pub fn selects_namespace(&self, cq: usize, labels: &BTreeMap<String, String>) -> bool {
        match &self.spec(cq).namespace_selector {
            None => false,
            Some(reqs) => reqs.iter().all(|r| r.matches(labels)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cohort(name: &str, parent: &str) -> CohortSpec {
        CohortSpec {
            name: name.to_owned(),
            parent: Some(parent.to_owned()),
            ..CohortSpec::default()
        }
    }

    #[test]
    fn a_cycle_of_cohorts_is_one_problem_and_a_chain_is_none() {
        let e = KueueQueues::new(&[], &[cohort("a", "b"), cohort("b", "a"), cohort("c", "a")])
            .unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].message.contains("cycle"));
        assert!(KueueQueues::new(&[], &[cohort("a", "b"), cohort("c", "a")]).is_ok());
    }
}
