//! Kueue's admission model in a run (`simulate --queues` with Kueue queue files): the same
//! [`sched::kueue`] that `place --queues` asks, kept live as jobs start and stop. Per job the
//! flavor assignment (resource groups in order, `flavorFungibility`), quota per flavor,
//! Cohorts with their own quota, `borrowingLimit` and `lendingLimit`, and quota preemption's
//! targets (`withinClusterQueue`, `reclaimWithinCohort`, `borrowWithinCohort`, Kueue's
//! candidate order); the chosen flavors' node labels and tolerations narrow the placement.
//!
//! Design note (2026-12-02). A pass decides by Kueue's scheduling cycle ([`KueueRun::cycle`]:
//! the heads of every ClusterQueue against the live tree, the entries in the cycle's order);
//! `decide` is one job alone (a cycle of one head). Each started job holds its assignment's usage as an admitted
//! Workload named after the job, admitted at its start in ms (Kueue's candidate order reads it,
//! and `LowerOrNewerEqualPriority` compares it with the preemptor's submission);
//! a job that ends or is stopped gives it back. A job is admitted only when its pods also place
//! (after its targets are gone): a Workload whose quota Kueue reserves while its pods wait for
//! room is not modelled.

use std::cell::RefCell;
use std::collections::BTreeMap;

use sched::kueue::{
    assign, mismatch, pod_set_requests, Admitted, Assignment, ClusterQueueSpec, CohortSpec, Entry,
    FlavorNodes, Head, KueueQueues, Mode,
};
use sched::{Job, PodSetExtras, Toleration, Violation};
use topology::Taint;

/// A head's flavor check, owned for the cycle.
type BoxedCheck<'a> = Box<dyn Fn(usize, &str) -> Option<String> + 'a>;

/// A Workload's usage: (flavor, resource, amount).
type Usage = Vec<(String, String, i64)>;

/// The pod sets without `minCount`: a run admits a job whole (Kueue's partial admission would
/// shrink the job's pods, which the engine does not do), so quota is held for every pod the
/// placement may start.
fn whole(mut requests: Vec<sched::kueue::PodSetRequest>) -> Vec<sched::kueue::PodSetRequest> {
    for r in &mut requests {
        r.min_count = None;
    }
    requests
}

/// A ResourceFlavor as a run needs it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KueueFlavor {
    /// `metadata.name`.
    pub name: String,
    /// `spec.nodeLabels`: the nodes of the flavor.
    pub node_labels: BTreeMap<String, String>,
    /// `spec.nodeTaints`.
    pub node_taints: Vec<Taint>,
    /// `spec.tolerations`, added to the pods admitted on the flavor.
    pub tolerations: Vec<Toleration>,
    /// Named by a queue but declared by no ResourceFlavor (taken as one with no labels).
    pub undeclared: bool,
}

/// Kueue's queue objects for a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KueueModel {
    /// ClusterQueues, in file order.
    pub cluster_queues: Vec<ClusterQueueSpec>,
    /// Cohorts, in file order.
    pub cohorts: Vec<CohortSpec>,
    /// ResourceFlavors.
    pub flavors: Vec<KueueFlavor>,
    /// The resource name GPUs are asked as (`nvidia.com/gpu`).
    pub gpu_resource: String,
    /// Kueue's fair sharing (`fairSharing.enable` of its Configuration): pending jobs are tried
    /// in the order of their ClusterQueue's dominant resource share over its weight, and
    /// preemption follows fair sharing's strategies (`sched::kueue::fair_preempt`).
    pub fair_sharing: bool,
    /// `fairSharing.preemptionStrategies` (empty: Kueue's default).
    pub fair_strategies: Vec<sched::kueue::fair_preempt::Strategy>,
}

/// Kueue's queues during a run: the quota tree with the running jobs' usage.
#[derive(Clone, Debug)]
pub struct KueueRun {
    model: KueueModel,
    live: KueueQueues,
    /// The tree with nothing admitted, for "could this job ever be admitted".
    idle: RefCell<KueueQueues>,
    /// Per job index, the usage of its assignment, set by the decision that starts it.
    staged: BTreeMap<usize, (usize, Usage)>,
}

impl KueueRun {
    /// The model's tree, or every problem with its objects.
    pub fn new(model: &KueueModel) -> Result<KueueRun, Vec<String>> {
        let mut q = KueueQueues::new(&model.cluster_queues, &model.cohorts)
            .map_err(|ps| ps.iter().map(ToString::to_string).collect::<Vec<_>>())?;
        if model.fair_sharing {
            q.fair_sharing = Some(model.fair_strategies.clone());
        }
        Ok(KueueRun {
            model: model.clone(),
            idle: RefCell::new(q.clone()),
            live: q,
            staged: BTreeMap::new(),
        })
    }

    /// The ClusterQueue node called `name`.
    pub fn cluster_queue(&self, name: &str) -> Option<usize> {
        self.live.find(name)
    }

    /// Whether fair sharing is on.
    pub fn fair_sharing(&self) -> bool {
        self.model.fair_sharing
    }

    /// The live tree (usage of the running jobs).
    pub fn queues(&self) -> &KueueQueues {
        &self.live
    }

    fn flavor(&self, name: &str) -> Option<&KueueFlavor> {
        self.model.flavors.iter().find(|f| f.name == name)
    }

    /// Kueue's decision for `job` of ClusterQueue node `cq` now: flavors, and the targets when
    /// it needs preemption. `created` orders `LowerOrNewerEqualPriority`.
    pub fn decide(
        &mut self,
        cq: usize,
        job: &Job,
        extras: &[PodSetExtras],
        created: i64,
    ) -> Assignment {
        let requests = whole(pod_set_requests(job, extras, &self.model.gpu_resource));
        let flavors = &self.model.flavors;
        let check = |ps: usize, f: &str| {
            let nodes = flavors.iter().find(|x| x.name == f).map(|x| FlavorNodes {
                node_labels: &x.node_labels,
                node_taints: &x.node_taints,
                tolerations: &x.tolerations,
            });
            mismatch(nodes, f, &[], extras.get(ps))
        };
        assign::assign(&mut self.live, cq, &requests, job.priority, created, &check)
    }

    /// One Kueue scheduling cycle ([`sched::kueue::cycle()`]) over the heads, each (ClusterQueue
    /// node, job, the job's pod-set extras, creation in ms), against the live tree: each head's
    /// index and entry, in the order the cycle looked at them (the order to apply them in).
    /// The usage is not changed: the heads' flavors are assigned on the live tree, and the
    /// cycle copies it only when one of them needs preemption (`cycle_assigned`).
    pub fn cycle<'a>(
        &'a mut self,
        heads: &[(usize, &'a Job, &'a [PodSetExtras], i64)],
    ) -> Vec<(usize, Entry)> {
        let flavors = &self.model.flavors;
        let checks: Vec<BoxedCheck<'a>> = heads
            .iter()
            .map(|&(_, _, extras, _)| {
                Box::new(move |ps: usize, f: &str| {
                    let nodes = flavors.iter().find(|x| x.name == f).map(|x| FlavorNodes {
                        node_labels: &x.node_labels,
                        node_taints: &x.node_taints,
                        tolerations: &x.tolerations,
                    });
                    mismatch(nodes, f, &[], extras.get(ps))
                }) as BoxedCheck<'a>
            })
            .collect();
        let heads: Vec<Head<'_>> = heads
            .iter()
            .zip(&checks)
            .map(|(&(cq, job, extras, created), check)| Head {
                cq,
                pod_sets: whole(pod_set_requests(job, extras, &self.model.gpu_resource)),
                priority: job.priority,
                created,
                check: &**check,
            })
            .collect();
        let assignments: Vec<Assignment> = heads
            .iter()
            .map(|h| {
                let (ps, p, c) = (&h.pod_sets, h.priority, h.created);
                assign::assign(&mut self.live, h.cq, ps, p, c, h.check)
            })
            .collect();
        let entries = sched::kueue::cycle::cycle_assigned(&self.live, &heads, assignments);
        let order = sched::kueue::cycle::processing_order(&self.live, &heads, &entries);
        let mut entries: Vec<Option<Entry>> = entries.into_iter().map(Some).collect();
        order
            .into_iter()
            .filter_map(|h| Some((h, entries[h].take()?)))
            .collect()
    }

    /// Whether `job` could be admitted with nothing running (else it waits forever: a request
    /// above what the ClusterQueue could ever have, a flavor no pod set may use, or a stopped
    /// ClusterQueue).
    pub fn could_ever_admit(&self, cq: usize, job: &Job, extras: &[PodSetExtras]) -> bool {
        let requests = whole(pod_set_requests(job, extras, &self.model.gpu_resource));
        let check = |ps: usize, f: &str| {
            let nodes = self.flavor(f).map(|x| FlavorNodes {
                node_labels: &x.node_labels,
                node_taints: &x.node_taints,
                tolerations: &x.tolerations,
            });
            mismatch(nodes, f, &[], extras.get(ps))
        };
        let mut idle = self.idle.borrow_mut();
        let a = assign::assign(&mut idle, cq, &requests, job.priority, i64::MAX, &check);
        a.blocked.is_none() && a.mode() != Mode::NoFit
    }

    /// The pod sets' extras with each assigned flavor's node labels (as a node selector) and
    /// tolerations added; `None` when no assigned flavor has any (the placement is unchanged).
    pub fn on_flavors(
        &self,
        a: &Assignment,
        extras: &[PodSetExtras],
        pod_sets: usize,
    ) -> Option<Vec<PodSetExtras>> {
        let mut out: Vec<PodSetExtras> = (0..pod_sets)
            .map(|k| extras.get(k).cloned().unwrap_or_default())
            .collect();
        let mut any = false;
        for (k, ps) in a.pod_sets.iter().enumerate() {
            let flavor = ps
                .flavors
                .get(&self.model.gpu_resource)
                .map(|(f, _)| f.as_str())
                .or(ps.flavor());
            let (Some(f), Some(set)) = (flavor.and_then(|f| self.flavor(f)), out.get_mut(k)) else {
                continue;
            };
            any |= !f.node_labels.is_empty() || !f.tolerations.is_empty();
            set.node_selector
                .extend(f.node_labels.iter().map(|(k, v)| (k.clone(), v.clone())));
            set.tolerations.extend(f.tolerations.iter().cloned());
        }
        any.then_some(out)
    }

    /// The names of an assignment's preemption targets, sorted.
    pub fn target_names(&self, a: &Assignment) -> Vec<String> {
        let mut v: Vec<String> = a
            .targets
            .iter()
            .map(|t| self.live.admitted[t.admitted].name.clone())
            .collect();
        v.sort();
        v
    }

    /// Keep job `i`'s assignment (ClusterQueue node `cq`) for the start that follows.
    pub fn stage(&mut self, i: usize, cq: usize, a: &Assignment) {
        self.staged.insert(i, (cq, a.usage.clone()));
    }

    /// Job `i`, called `name`, starts at `at_ms`: its staged usage is counted as an admitted
    /// Workload admitted then (ties in start order).
    pub fn admit(&mut self, i: usize, name: &str, priority: i32, at_ms: u64) {
        let (cq, usage) = self
            .staged
            .remove(&i)
            .expect("a Kueue decision precedes every start");
        let w = Admitted {
            name: name.to_owned(),
            cluster_queue: self.live.tree.nodes[cq].name.clone(),
            priority,
            admitted_at: at_ms as i64,
            usage,
        };
        self.live
            .admit_existing(w)
            .expect("a ClusterQueue of the tree");
    }

    /// Job `name` ended or was stopped: its quota is given back.
    pub fn release(&mut self, name: &str) {
        self.live.release(name);
    }

    /// Kueue's quota rules on the running jobs, from scratch: the tree rebuilt from the
    /// admitted Workloads has the live usage, and no ClusterQueue holds more than Kueue could
    /// admit (a ClusterQueue without a Cohort never above its nominal quota). Pure.
    pub fn check(&self) -> Result<(), Violation> {
        let violation = |invariant: &'static str, detail: String| Violation {
            job: String::new(),
            invariant,
            detail,
        };
        let mut fresh = self.idle.borrow().clone();
        for w in &self.live.admitted {
            fresh
                .admit_existing(w.clone())
                .map_err(|p| violation("Kueue usage", p.to_string()))?;
        }
        for (a, b) in fresh.tree.nodes.iter().zip(&self.live.tree.nodes) {
            let nonzero = |m: &BTreeMap<sched::kueue::Fr, i64>| {
                m.iter()
                    .filter(|(_, v)| **v != 0)
                    .map(|(k, v)| (*k, *v))
                    .collect::<Vec<_>>()
            };
            if nonzero(&a.usage) != nonzero(&b.usage) {
                return Err(violation(
                    "Kueue usage",
                    format!(
                        "queue `{}`: usage {:?} kept, the admitted Workloads give {:?}",
                        a.name, b.usage, a.usage
                    ),
                ));
            }
        }
        match fresh.over_admitted() {
            None => Ok(()),
            Some((q, f, r, u, nominal)) => Err(violation(
                "Kueue quota exceeded",
                format!(
                    "ClusterQueue `{q}` uses {u} {r} of flavor {f} (nominal {nominal}), more than Kueue admits"
                ),
            )),
        }
    }
}
