//! Kueue's queue objects as Kueue's admission reads them: ClusterQueues (resource groups with
//! per-flavor `nominalQuota` / `borrowingLimit` / `lendingLimit`, `cohortName`,
//! `flavorFungibility`, `preemption`, `stopPolicy`, `namespaceSelector`), Cohorts
//! (`parentName`, their own quota), LocalQueues (namespace, ClusterQueue, `stopPolicy`),
//! ResourceFlavors (`nodeLabels`, `nodeTaints`, `tolerations`), and admitted Workloads
//! (`status.admission`: ClusterQueue, flavors and `resourceUsage` per pod set), into
//! [`sched::kueue`]. Quantities in Kueue's units: CPU in millicores, memory in bytes.

use std::collections::BTreeMap;

use sched::kueue::preempt::Policy;
use sched::kueue::{
    Admitted, ClusterQueueSpec, CohortSpec, FlavorFungibility, Fungibility, FungibilityPreference,
    PreemptionPolicy, Quota, ResourceGroup,
};
use serde_json::Value;
use topology::{Taint, TaintEffect};

use crate::error::FormatError;

/// A LocalQueue: where a namespace's Workloads go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalQueue {
    /// `metadata.namespace` (`default` when left out, as `kubectl apply` does).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.clusterQueue`.
    pub cluster_queue: String,
    /// `spec.stopPolicy` is `Hold` or `HoldAndDrain`.
    pub stopped: bool,
}

/// A ResourceFlavor.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceFlavor {
    /// `metadata.name`.
    pub name: String,
    /// `spec.nodeLabels`.
    pub node_labels: BTreeMap<String, String>,
    /// `spec.nodeTaints`.
    pub node_taints: Vec<Taint>,
    /// `spec.tolerations`.
    pub tolerations: Vec<sched::Toleration>,
}

/// Every Kueue queue object of some documents, and the problems found (one line each, naming
/// the file, document and field).
#[derive(Clone, Debug, Default)]
pub struct KueueObjects {
    /// ClusterQueues in file order.
    pub cluster_queues: Vec<ClusterQueueSpec>,
    /// Cohorts in file order.
    pub cohorts: Vec<CohortSpec>,
    /// LocalQueues in file order.
    pub local_queues: Vec<LocalQueue>,
    /// ResourceFlavors in file order.
    pub flavors: Vec<ResourceFlavor>,
    /// Namespaces (`v1` Namespace objects, e.g. `kubectl get namespaces -o yaml`) and their
    /// labels, for `namespaceSelector`s (the first definition of a name wins).
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// Problems, one line each.
    pub problems: Vec<String>,
}

impl KueueObjects {
    /// Whether any ClusterQueue, Cohort or LocalQueue was read.
    pub fn has_queues(&self) -> bool {
        !self.cluster_queues.is_empty() || !self.local_queues.is_empty()
    }

    /// The LocalQueue `name` in `namespace`.
    pub fn local_queue(&self, namespace: &str, name: &str) -> Option<&LocalQueue> {
        self.local_queues
            .iter()
            .find(|l| l.namespace == namespace && l.name == name)
    }

    /// The ResourceFlavor `name`.
    pub fn flavor(&self, name: &str) -> Option<&ResourceFlavor> {
        self.flavors.iter().find(|f| f.name == name)
    }

    /// Read the Kueue objects of `docs` (a `List` already stands for its items) into `self`.
    pub fn read(&mut self, file: &str, docs: &[Value]) {
        for (i, d) in docs.iter().enumerate() {
            let api = d.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            if api == "v1" && d.get("kind").and_then(Value::as_str) == Some("Namespace") {
                if let Some(ns) = str_at(d, "/metadata/name") {
                    let labels = string_map(d.pointer("/metadata/labels"));
                    self.namespaces.entry(ns.to_owned()).or_insert(labels);
                }
                continue;
            }
            if !api.starts_with("kueue.x-k8s.io/") {
                continue;
            }
            let kind = d.get("kind").and_then(Value::as_str).unwrap_or("");
            let name = str_at(d, "/metadata/name").unwrap_or("").to_owned();
            let mut at = |field: &str, m: String| {
                self.problems.push(format!(
                    "{file}: document {} ({kind} `{name}`): {field}: {m}",
                    i + 1
                ))
            };
            match kind {
                "ClusterQueue" => {
                    let mut problems = Vec::new();
                    let cq = cluster_queue(d, &name, &mut problems);
                    for (f, m) in problems {
                        at(&f, m);
                    }
                    self.cluster_queues.push(cq);
                }
                "Cohort" => {
                    let mut problems = Vec::new();
                    let groups = resource_groups(d, &mut problems);
                    for (f, m) in problems {
                        at(&f, m);
                    }
                    self.cohorts.push(CohortSpec {
                        name: name.clone(),
                        parent: str_at(d, "/spec/parentName")
                            .filter(|s| !s.is_empty())
                            .map(str::to_owned),
                        groups,
                        fair_weight_milli: weight(d),
                    });
                }
                "LocalQueue" => match str_at(d, "/spec/clusterQueue") {
                    Some(cq) => self.local_queues.push(LocalQueue {
                        namespace: str_at(d, "/metadata/namespace")
                            .unwrap_or("default")
                            .to_owned(),
                        name: name.clone(),
                        cluster_queue: cq.to_owned(),
                        stopped: stopped(d),
                    }),
                    None => at("spec.clusterQueue", "missing".to_owned()),
                },
                "ResourceFlavor" => {
                    let spec = d.get("spec").cloned().unwrap_or(Value::Null);
                    let node_labels = string_map(spec.get("nodeLabels"));
                    let mut node_taints = Vec::new();
                    for (k, t) in spec
                        .get("nodeTaints")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .enumerate()
                    {
                        match taint(t) {
                            Some(t) => node_taints.push(t),
                            None => at(
                                &format!("spec.nodeTaints[{k}]"),
                                "expected key, value and effect NoSchedule, PreferNoSchedule or NoExecute".to_owned(),
                            ),
                        }
                    }
                    let tolerations = match crate::jobs::tolerations_of(
                        file,
                        &format!("document {}", i + 1),
                        &spec,
                        "spec",
                    ) {
                        Ok(t) => t,
                        Err(e) => {
                            self.problems.push(e.to_string());
                            Vec::new()
                        }
                    };
                    self.flavors.push(ResourceFlavor {
                        name,
                        node_labels,
                        node_taints,
                        tolerations,
                    });
                }
                _ => {}
            }
        }
    }
}

fn str_at<'a>(d: &'a Value, p: &str) -> Option<&'a str> {
    d.pointer(p).and_then(Value::as_str)
}

fn stopped(d: &Value) -> bool {
    matches!(str_at(d, "/spec/stopPolicy"), Some("Hold" | "HoldAndDrain"))
}

fn weight(d: &Value) -> i64 {
    d.pointer("/spec/fairSharing/weight")
        .and_then(|w| crate::k8s::quantity("cpu", w))
        .map_or(1000, |m| m as i64)
}

fn taint(t: &Value) -> Option<Taint> {
    let effect = match str_at(t, "/effect")? {
        "NoSchedule" => TaintEffect::NoSchedule,
        "PreferNoSchedule" => TaintEffect::PreferNoSchedule,
        "NoExecute" => TaintEffect::NoExecute,
        _ => return None,
    };
    Some(Taint {
        key: str_at(t, "/key")?.to_owned(),
        value: str_at(t, "/value").unwrap_or("").to_owned(),
        effect,
    })
}

/// A quantity in Kueue's units for `resource`.
pub fn amount(resource: &str, v: &Value) -> Option<i64> {
    crate::k8s::quantity(resource, v).map(|x| x.min(i64::MAX as u64 - 1) as i64)
}

fn resource_groups(d: &Value, problems: &mut Vec<(String, String)>) -> Vec<ResourceGroup> {
    let mut out = Vec::new();
    for (gi, g) in d
        .pointer("/spec/resourceGroups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let covered: Vec<String> = g
            .get("coveredResources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        let mut group = ResourceGroup {
            covered: covered.clone(),
            flavors: Vec::new(),
        };
        for (fi, f) in g
            .get("flavors")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let fname = str_at(f, "/name").unwrap_or("").to_owned();
            let mut quotas = BTreeMap::new();
            for (ri, r) in f
                .get("resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let at = format!("spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}]");
                let rname = str_at(r, "/name").unwrap_or("").to_owned();
                if !covered.contains(&rname) {
                    problems.push((
                        format!("{at}.name"),
                        format!("`{rname}` is not in the group's coveredResources"),
                    ));
                }
                let read = |k: &str| -> Result<Option<i64>, String> {
                    match r.get(k) {
                        None | Some(Value::Null) => Ok(None),
                        Some(v) => amount(&rname, v)
                            .map(Some)
                            .ok_or_else(|| format!("expected a quantity ≥ 0, got {v}")),
                    }
                };
                let mut get = |k: &str| match read(k) {
                    Ok(v) => v,
                    Err(m) => {
                        problems.push((format!("{at}.{k}"), m));
                        None
                    }
                };
                let Some(nominal) = get("nominalQuota") else {
                    if r.get("nominalQuota").is_none() {
                        problems.push((format!("{at}.nominalQuota"), "missing".to_owned()));
                    }
                    continue;
                };
                let borrowing_limit = get("borrowingLimit");
                let lending_limit = get("lendingLimit");
                quotas.insert(
                    rname,
                    Quota {
                        nominal,
                        borrowing_limit,
                        lending_limit,
                    },
                );
            }
            group.flavors.push((fname, quotas));
        }
        out.push(group);
    }
    out
}

fn policy(v: Option<&str>, field: &str, problems: &mut Vec<(String, String)>) -> Policy {
    match v {
        None | Some("Never") => Policy::Never,
        Some("LowerPriority") => Policy::LowerPriority,
        Some("LowerOrNewerEqualPriority") => Policy::LowerOrNewerEqualPriority,
        Some("Any") => Policy::Any,
        Some(o) => {
            problems.push((
                field.to_owned(),
                format!(
                    "expected Never, LowerPriority, LowerOrNewerEqualPriority or Any, got \"{o}\""
                ),
            ));
            Policy::Never
        }
    }
}

fn fungibility(
    v: Option<&str>,
    field: &str,
    default: Fungibility,
    problems: &mut Vec<(String, String)>,
) -> Fungibility {
    match v {
        None => default,
        Some("MayStopSearch" | "Borrow" | "Preempt") => Fungibility::MayStopSearch,
        Some("TryNextFlavor") => Fungibility::TryNextFlavor,
        Some(o) => {
            problems.push((
                field.to_owned(),
                format!("expected MayStopSearch or TryNextFlavor, got \"{o}\""),
            ));
            default
        }
    }
}

fn cluster_queue(d: &Value, name: &str, problems: &mut Vec<(String, String)>) -> ClusterQueueSpec {
    let defaults = FlavorFungibility::default();
    let fungibility = FlavorFungibility {
        when_can_borrow: fungibility(
            str_at(d, "/spec/flavorFungibility/whenCanBorrow"),
            "spec.flavorFungibility.whenCanBorrow",
            defaults.when_can_borrow,
            problems,
        ),
        when_can_preempt: fungibility(
            str_at(d, "/spec/flavorFungibility/whenCanPreempt"),
            "spec.flavorFungibility.whenCanPreempt",
            defaults.when_can_preempt,
            problems,
        ),
        preference: match str_at(d, "/spec/flavorFungibility/preference") {
            None => None,
            Some("BorrowingOverPreemption") => Some(FungibilityPreference::BorrowingOverPreemption),
            Some("PreemptionOverBorrowing") => Some(FungibilityPreference::PreemptionOverBorrowing),
            Some(o) => {
                problems.push((
                    "spec.flavorFungibility.preference".to_owned(),
                    format!(
                        "expected BorrowingOverPreemption or PreemptionOverBorrowing, got \"{o}\""
                    ),
                ));
                None
            }
        },
    };
    let preemption = PreemptionPolicy {
        within_cluster_queue: policy(
            str_at(d, "/spec/preemption/withinClusterQueue"),
            "spec.preemption.withinClusterQueue",
            problems,
        ),
        reclaim_within_cohort: policy(
            str_at(d, "/spec/preemption/reclaimWithinCohort"),
            "spec.preemption.reclaimWithinCohort",
            problems,
        ),
        borrow_within_cohort: str_at(d, "/spec/preemption/borrowWithinCohort/policy")
            == Some("LowerPriority"),
        max_priority_threshold: d
            .pointer("/spec/preemption/borrowWithinCohort/maxPriorityThreshold")
            .and_then(Value::as_i64)
            .map(|t| t as i32),
    };
    let namespace_selector = match d.pointer("/spec/namespaceSelector") {
        None | Some(Value::Null) => None,
        Some(sel) => Some(selector(sel, problems)),
    };
    ClusterQueueSpec {
        name: name.to_owned(),
        cohort: str_at(d, "/spec/cohortName")
            .or_else(|| str_at(d, "/spec/cohort"))
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        groups: resource_groups(d, problems),
        fungibility,
        preemption,
        stopped: stopped(d),
        namespace_selector,
        fair_weight_milli: weight(d),
    }
}

/// A label selector (`matchLabels`, `matchExpressions`) as requirements.
fn selector(sel: &Value, problems: &mut Vec<(String, String)>) -> Vec<sched::SelectorRequirement> {
    let mut out = Vec::new();
    for (k, v) in sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        out.push(sched::SelectorRequirement {
            key: k.clone(),
            op: sched::SelectorOp::In,
            values: vec![v.as_str().unwrap_or("").to_owned()],
        });
    }
    for (i, e) in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let op = match str_at(e, "/operator") {
            Some("In") => sched::SelectorOp::In,
            Some("NotIn") => sched::SelectorOp::NotIn,
            Some("Exists") => sched::SelectorOp::Exists,
            Some("DoesNotExist") => sched::SelectorOp::DoesNotExist,
            o => {
                problems.push((
                    format!("spec.namespaceSelector.matchExpressions[{i}].operator"),
                    format!("expected In, NotIn, Exists or DoesNotExist, got {o:?}"),
                ));
                continue;
            }
        };
        out.push(sched::SelectorRequirement {
            key: str_at(e, "/key").unwrap_or("").to_owned(),
            op,
            values: e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        });
    }
    out
}

/// The Workloads of a `kubectl get workloads -A -o json` list that hold quota (a
/// `status.admission`, not finished): their ClusterQueue (`status.admission.clusterQueue`),
/// priority, admission order (list order) and usage per flavor
/// (`podSetAssignments[].flavors` and `.resourceUsage`).
pub fn admitted_workloads(file: &str, doc: &Value) -> Result<Vec<Admitted>, FormatError> {
    let mut out = Vec::new();
    let items = doc
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, wl) in items.iter().enumerate() {
        if wl.get("kind").and_then(Value::as_str) != Some("Workload") {
            continue;
        }
        let Some(adm) = wl.pointer("/status/admission").filter(|a| !a.is_null()) else {
            continue;
        };
        let finished = wl
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| {
                str_at(c, "/type") == Some("Finished") && str_at(c, "/status") == Some("True")
            });
        if finished {
            continue;
        }
        let ns = str_at(wl, "/metadata/namespace").unwrap_or("default");
        let name = str_at(wl, "/metadata/name").unwrap_or("");
        let err =
            |m: String| FormatError::input(file, format!("items[{i}] (Workload {ns}/{name}): {m}"));
        let cq = str_at(adm, "/clusterQueue")
            .ok_or_else(|| err("status.admission.clusterQueue: missing".to_owned()))?;
        let mut usage = Vec::new();
        for (k, a) in adm
            .get("podSetAssignments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let flavors = a.get("flavors").and_then(Value::as_object);
            for (r, q) in a
                .get("resourceUsage")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let flavor = flavors
                    .and_then(|f| f.get(r))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        err(format!(
                            "status.admission.podSetAssignments[{k}].flavors: no flavor for {r}"
                        ))
                    })?;
                let v = amount(r, q).ok_or_else(|| {
                    err(format!(
                        "status.admission.podSetAssignments[{k}].resourceUsage[{r}]: expected a quantity, got {q}"
                    ))
                })?;
                usage.push((flavor.to_owned(), r.clone(), v));
            }
        }
        // Named as the running job its pods make (`ns/owner`), so a preempted Workload is
        // found in the occupancy.
        let owner = str_at(wl, "/metadata/ownerReferences/0/name").unwrap_or(name);
        out.push(Admitted {
            name: format!("{ns}/{owner}"),
            cluster_queue: cq.to_owned(),
            priority: wl
                .pointer("/spec/priority")
                .and_then(Value::as_i64)
                .unwrap_or(0) as i32,
            admitted_at: i as i64,
            usage,
        });
    }
    Ok(out)
}

/// The string entries of a JSON object such as `metadata.labels` or `spec.nodeLabels` (an
/// absent object is empty; entries whose value is not a string are left out, as before).
fn string_map<M: FromIterator<(String, String)>>(v: Option<&Value>) -> M {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_else(|| std::iter::empty().collect())
}
