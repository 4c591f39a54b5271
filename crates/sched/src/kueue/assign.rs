//! Kueue's flavor assigner (`pkg/scheduler/flavorassigner/flavorassigner.go` at
//! kubernetes-sigs/kueue ff69552, `assignFlavors`, `findFlavorForPodSets`, `fitsResourceQuota`,
//! `isPreferred`, `shouldTryNextFlavor`): per pod set and resource group, the group's flavors
//! in order; per flavor the worst mode over the group's requested resources (NoFit, preempt
//! with no candidates, Preempt, Reclaim, Fit, each with its borrowing level); the search stops
//! at the first flavor `flavorFungibility` accepts, else keeps the preferred one. Usage of
//! earlier pod sets counts against later ones. Reasons are Kueue's texts.

use std::collections::BTreeMap;

use super::preempt::Target;
use super::quota::{add, sub, Fr};
use super::{FlavorFungibility, Fungibility, FungibilityPreference, KueueQueues};

/// One pod set's request: `count` pods of `per_pod` each (resource name → amount in base
/// units, CPU in millicores).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodSetRequest {
    /// Pod set name.
    pub name: String,
    /// Pods.
    pub count: u32,
    /// `minCount`: the fewest pods Kueue's partial admission may admit (`None`: all or none).
    pub min_count: Option<u32>,
    /// Per pod, resource → amount.
    pub per_pod: BTreeMap<String, i64>,
}

/// Why a flavor cannot hold a pod set regardless of quota (an untolerated taint, node affinity
/// that the flavor's labels do not match), or `None`: `check(pod_set, flavor)`.
pub type FlavorCheck<'a> = &'a dyn Fn(usize, &str) -> Option<String>;

/// Kueue's `FlavorAssignmentMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// Not enough quota even with preemption.
    NoFit,
    /// Fits after preempting.
    Preempt,
    /// Fits in unused quota.
    Fit,
}

/// Kueue's internal preemption modes, worst first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum PMode {
    NoFit,
    NoCandidates,
    Preempt,
    Reclaim,
    Fit,
}

impl PMode {
    fn mode(self) -> Mode {
        match self {
            PMode::NoFit => Mode::NoFit,
            PMode::Fit => Mode::Fit,
            _ => Mode::Preempt,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Granular {
    p: PMode,
    borrow: usize,
}

const WORST: Granular = Granular {
    p: PMode::NoFit,
    borrow: usize::MAX,
};

/// `isPreferred(a, b)`.
fn preferred(a: Granular, b: Granular, f: &FlavorFungibility) -> bool {
    if a.p == PMode::NoFit {
        return false;
    }
    if b.p == PMode::NoFit {
        return true;
    }
    let (an, bn) = (a.p == PMode::NoCandidates, b.p == PMode::NoCandidates);
    if an != bn {
        return !an;
    }
    match f.preference {
        Some(FungibilityPreference::PreemptionOverBorrowing) => {
            if a.borrow != b.borrow {
                a.borrow < b.borrow
            } else {
                a.p > b.p
            }
        }
        _ => {
            if a.p != b.p {
                a.p > b.p
            } else {
                a.borrow < b.borrow
            }
        }
    }
}

/// `shouldTryNextFlavor`.
fn try_next(m: Granular, f: &FlavorFungibility) -> bool {
    matches!(m.p, PMode::NoFit | PMode::NoCandidates)
        || (matches!(m.p, PMode::Preempt | PMode::Reclaim)
            && f.when_can_preempt == Fungibility::TryNextFlavor)
        || (m.borrow > 0 && f.when_can_borrow == Fungibility::TryNextFlavor)
}

/// Resource → (flavor, mode).
type Flavors = BTreeMap<String, (String, Mode)>;

/// One pod set's flavors and Kueue's reasons when it does not simply fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodSetAssignment {
    /// Pod set name.
    pub name: String,
    /// Pods assigned: the pod set's count, or fewer under partial admission.
    pub count: u32,
    /// Resource → (flavor, mode).
    pub flavors: BTreeMap<String, (String, Mode)>,
    /// Kueue's reasons, sorted as Kueue sorts them; empty when the pod set fits.
    pub reasons: Vec<String>,
}

impl PodSetAssignment {
    /// Kueue's `PodSetAssignment.RepresentativeMode`.
    pub fn mode(&self) -> Mode {
        if self.reasons.is_empty() {
            return Mode::Fit;
        }
        self.flavors
            .values()
            .map(|(_, m)| *m)
            .min()
            .unwrap_or(Mode::NoFit)
    }

    /// The flavor of the pod set's first assigned resource in name order (the one whose nodes
    /// topology placement uses), if any.
    pub fn flavor(&self) -> Option<&str> {
        self.flavors.values().next().map(|(f, _)| f.as_str())
    }
}

/// A Workload's flavor assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// Per pod set.
    pub pod_sets: Vec<PodSetAssignment>,
    /// Largest borrowing level of an assigned flavor (0: no borrowing).
    pub borrowing: usize,
    /// What the Workload would use: (flavor, resource, amount) in (flavor, resource) order.
    pub usage: Vec<(String, String, i64)>,
    /// The Workloads to preempt when the mode is [`Mode::Preempt`] and targets were found.
    pub targets: Vec<Target>,
    /// Why admission stopped after flavors were assigned (`stopPolicy`, no preemption
    /// targets), when it did.
    pub blocked: Option<String>,
}

impl Assignment {
    /// Kueue's `Assignment.RepresentativeMode`.
    pub fn mode(&self) -> Mode {
        if self.pod_sets.is_empty() {
            return Mode::NoFit;
        }
        self.pod_sets
            .iter()
            .map(PodSetAssignment::mode)
            .min()
            .unwrap_or(Mode::NoFit)
    }

    /// Whether the Workload is admitted now (fits) or after preempting [`Assignment::targets`].
    pub fn admitted(&self) -> bool {
        self.blocked.is_none()
            && match self.mode() {
                Mode::Fit => true,
                Mode::Preempt => !self.targets.is_empty(),
                Mode::NoFit => false,
            }
    }

    /// Kueue's `Assignment.Message`: `couldn't assign flavors to pod set NAME: REASONS` for
    /// each pod set that does not fit, joined by `; `.
    pub fn message(&self) -> String {
        let mut out = String::new();
        for ps in &self.pod_sets {
            if ps.reasons.is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.push_str("; ");
            }
            out.push_str("couldn't assign flavors to pod set ");
            out.push_str(&ps.name);
            out.push_str(": ");
            out.push_str(&ps.reasons.join(", "));
        }
        if self.mode() == Mode::Preempt && !self.targets.is_empty() {
            out.push_str(&format!(
                ". Pending the preemption of {} workload(s)",
                self.targets.len()
            ));
        }
        if let Some(b) = &self.blocked {
            if !out.is_empty() {
                out.push_str("; ");
            }
            out.push_str(b);
        }
        out
    }
}

/// A quantity as Kubernetes prints it (`ResourceFormatter.ResourceQuantityString`): CPU from
/// millicores, memory, ephemeral storage and huge pages in binary units, others in decimal.
pub fn quantity(resource: &str, v: i64) -> String {
    if v == super::UNLIMITED {
        return "unlimited".to_owned();
    }
    if resource == "cpu" {
        return if v % 1000 == 0 {
            decimal(v / 1000)
        } else {
            format!("{v}m")
        };
    }
    if matches!(resource, "memory" | "ephemeral-storage") || resource.starts_with("hugepages-") {
        let mut x = v;
        for s in ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"] {
            if x == 0 || x % 1024 != 0 || s == "Ei" {
                return format!("{x}{s}");
            }
            x /= 1024;
        }
    }
    decimal(v)
}

fn decimal(v: i64) -> String {
    let mut x = v;
    for s in ["", "k", "M", "G", "T", "P", "E"] {
        if x == 0 || x % 1000 != 0 || s == "E" {
            return format!("{x}{s}");
        }
        x /= 1000;
    }
    format!("{v}")
}

/// Assign flavors to a Workload of ClusterQueue `cq` (a node of `q.tree`), and when it needs
/// preemption, find the targets. `priority` and `created` are the Workload's.
///
/// Kueue's `getInitialAssignments` (`pkg/scheduler/scheduler.go` at ff69552) with the
/// PartialAdmission gate on (its default): when the full counts neither fit nor find
/// preemption targets and a pod set has a `minCount`, Kueue's `PodSetReducer.Search`
/// (`flavorassigner/podset_reducer.go`) binary-searches the smallest reduction, step `i` of
/// `Σ(count − minCount)` giving each pod set `count − (count − minCount)·i/Σ`, that fits or
/// preempts; without one the full assignment stands.
pub fn assign(
    q: &mut KueueQueues,
    cq: usize,
    pod_sets: &[PodSetRequest],
    priority: i32,
    created: i64,
    check: FlavorCheck<'_>,
) -> Assignment {
    let full = assign_counts(q, cq, pod_sets, None, priority, created, check);
    let admits = |a: &Assignment| {
        a.mode() == Mode::Fit || (a.mode() == Mode::Preempt && !a.targets.is_empty())
    };
    if admits(&full) {
        return full;
    }
    let deltas: Vec<i64> = pod_sets
        .iter()
        .map(|ps| i64::from(ps.count - ps.min_count.unwrap_or(ps.count).min(ps.count)))
        .collect();
    let total: i64 = deltas.iter().sum();
    if total == 0 {
        return full;
    }
    // `sort.Search(total + 1, fits)`: the smallest step that admits, remembering the last
    // step that did (the search's last call may fail).
    let (mut lo, mut hi) = (0_i64, total + 1);
    let mut last_good: Option<(i64, Assignment)> = None;
    while lo < hi {
        let i = lo + (hi - lo) / 2;
        let counts: Vec<u32> = pod_sets
            .iter()
            .zip(&deltas)
            .map(|(ps, d)| (i64::from(ps.count) - d * i / total) as u32)
            .collect();
        let a = assign_counts(q, cq, pod_sets, Some(&counts), priority, created, check);
        if admits(&a) {
            last_good = Some((i, a));
            hi = i;
        } else {
            lo = i + 1;
        }
    }
    match last_good {
        Some((i, a)) if i == lo => a,
        _ => full,
    }
}

/// One flavor assignment with these pod counts (`None`: each pod set's `count`).
fn assign_counts(
    q: &mut KueueQueues,
    cq: usize,
    pod_sets: &[PodSetRequest],
    counts: Option<&[u32]>,
    priority: i32,
    created: i64,
    check: FlavorCheck<'_>,
) -> Assignment {
    let spec = q.spec(cq).clone();
    let mut assigned_usage: BTreeMap<Fr, i64> = BTreeMap::new();
    let mut out = Assignment {
        pod_sets: Vec::new(),
        borrowing: 0,
        usage: Vec::new(),
        targets: Vec::new(),
        blocked: None,
    };
    for (pi, ps) in pod_sets.iter().enumerate() {
        let count = counts.map_or(ps.count, |c| c[pi]);
        let mut requests: BTreeMap<String, i64> = ps
            .per_pod
            .iter()
            .map(|(r, v)| (r.clone(), v.saturating_mul(i64::from(count))))
            .collect();
        if spec
            .groups
            .iter()
            .any(|g| g.covered.iter().any(|r| r == "pods"))
        {
            requests.insert("pods".to_owned(), i64::from(count));
        }
        let mut psa = PodSetAssignment {
            name: ps.name.clone(),
            count,
            flavors: BTreeMap::new(),
            reasons: Vec::new(),
        };
        let mut failed = false;
        for (res, &qty) in &requests {
            let Some(gi) = spec
                .groups
                .iter()
                .position(|g| g.covered.iter().any(|r| r == res))
            else {
                if qty == 0 {
                    continue;
                }
                psa.reasons
                    .push(format!("resource {res} unavailable in ClusterQueue"));
                psa.flavors.clear();
                failed = true;
                break;
            };
            if psa.flavors.contains_key(res) {
                continue;
            }
            let group = &spec.groups[gi];
            let group_requests: Vec<(&String, i64)> = requests
                .iter()
                .filter(|(r, _)| group.covered.contains(r))
                .map(|(r, v)| (r, *v))
                .collect();
            let mut best: Option<(Flavors, Granular)> = None;
            let mut reasons = Vec::new();
            for (flavor, _) in &group.flavors {
                if let Some(why) = check(pi, flavor) {
                    reasons.push(why);
                    continue;
                }
                let f = q.tree.flavor_id(flavor);
                let mut rep = Granular {
                    p: PMode::Fit,
                    borrow: 0,
                };
                let mut flavors = BTreeMap::new();
                for (r, v) in &group_requests {
                    let fr = (f, q.tree.resource_id(r));
                    let assumed = assigned_usage.get(&fr).copied().unwrap_or(0);
                    let (m, why) =
                        fits_quota(q, cq, fr, (flavor, r), assumed, *v, priority, created);
                    reasons.extend(why);
                    if preferred(rep, m, &spec.fungibility) {
                        rep = m;
                    }
                    if rep.p == PMode::NoFit {
                        break;
                    }
                    flavors.insert((*r).clone(), (flavor.clone(), m.p.mode()));
                }
                if !try_next(rep, &spec.fungibility) {
                    best = Some((flavors, rep));
                    break;
                }
                if preferred(rep, best.as_ref().map_or(WORST, |b| b.1), &spec.fungibility) {
                    best = Some((flavors, rep));
                }
            }
            match best {
                Some((flavors, rep)) => {
                    if rep.p != PMode::Fit {
                        psa.reasons.append(&mut reasons);
                    }
                    out.borrowing = out.borrowing.max(rep.borrow);
                    psa.flavors.extend(flavors);
                }
                None => {
                    psa.reasons.append(&mut reasons);
                    psa.flavors.clear();
                    failed = true;
                    break;
                }
            }
        }
        psa.reasons.sort();
        if !failed {
            for (r, (flavor, _)) in &psa.flavors {
                let fr = (q.tree.flavor_id(flavor), q.tree.resource_id(r));
                let e = assigned_usage.entry(fr).or_insert(0);
                *e = add(*e, requests[r]);
            }
        }
        out.pod_sets.push(psa);
        if failed {
            break;
        }
    }
    out.usage = assigned_usage
        .iter()
        .map(|(&(f, r), &v)| {
            (
                q.tree.flavors[f as usize].clone(),
                q.tree.resources[r as usize].clone(),
                v,
            )
        })
        .collect();
    if out.mode() == Mode::Preempt {
        let mut need: Vec<Fr> = Vec::new();
        for ps in &out.pod_sets {
            for (r, (flavor, m)) in &ps.flavors {
                let fr = (q.tree.flavor_id(flavor), q.tree.resource_id(r));
                if *m == Mode::Preempt && !need.contains(&fr) {
                    need.push(fr);
                }
            }
        }
        let requests: Vec<(Fr, i64)> = assigned_usage.into_iter().collect();
        // No targets: the Workload waits with the assignment's message.
        if let Some(t) = q.preemption_targets(cq, &need, &requests, priority, created) {
            out.targets = t;
        }
    }
    if spec.stopped && out.blocked.is_none() {
        out.blocked = Some(format!("ClusterQueue {} is inactive", spec.name));
    }
    out
}

/// `fitsResourceQuota`: the mode and borrowing level of `request` more of `fr` on top of
/// `assumed` (earlier pod sets), with Kueue's reason when it does not simply fit.
#[allow(clippy::too_many_arguments)] // the arguments of Kueue's function, plus the names
fn fits_quota(
    q: &mut KueueQueues,
    cq: usize,
    fr: Fr,
    (flavor, res): (&str, &str),
    assumed: i64,
    request: i64,
    priority: i32,
    created: i64,
) -> (Granular, Option<String>) {
    let available = q.tree.available(cq, fr).max(0);
    let max_capacity = q.tree.potential_available(cq, fr);
    let val = add(assumed, request);
    if val > max_capacity {
        return (
            WORST,
            Some(format!(
                "insufficient quota for {res} in flavor {flavor}, previously considered podsets requests ({}) + current podset request ({}) > maximum capacity ({})",
                quantity(res, assumed),
                quantity(res, request),
                quantity(res, max_capacity)
            )),
        );
    }
    let (borrow, may_reclaim) = q.tree.lowest_subtree_that_fits(cq, fr, val);
    if val <= available {
        return (
            Granular {
                p: PMode::Fit,
                borrow,
            },
            None,
        );
    }
    let why = format!(
        "insufficient unused quota for {res} in flavor {flavor}, {} more needed",
        quantity(res, sub(val, available))
    );
    let policy = q.spec(cq).preemption;
    if q.tree.nominal(cq, fr) >= val || may_reclaim || policy.borrow_within_cohort {
        let Some(targets) = q.preemption_targets(cq, &[fr], &[(fr, val)], priority, created) else {
            return (
                Granular {
                    p: PMode::NoCandidates,
                    borrow,
                },
                Some(why),
            );
        };
        for t in &targets {
            let (wcq, usage) = q.admitted_usage(t.admitted);
            let usage = usage.to_vec();
            for (f, v) in usage {
                q.tree.remove_usage(wcq, f, v);
            }
        }
        let (after, _) = q.tree.lowest_subtree_that_fits(cq, fr, val);
        for t in &targets {
            let (wcq, usage) = q.admitted_usage(t.admitted);
            let usage = usage.to_vec();
            for (f, v) in usage {
                q.tree.add_usage(wcq, f, v);
            }
        }
        let same = targets.iter().any(|t| q.admitted_usage(t.admitted).0 == cq);
        let p = if same { PMode::Preempt } else { PMode::Reclaim };
        return (Granular { p, borrow: after }, Some(why));
    }
    (
        Granular {
            p: PMode::NoFit,
            borrow,
        },
        Some(why),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kueue::{ClusterQueueSpec, Quota, ResourceGroup};

    fn queue(nominal_cpu: i64) -> KueueQueues {
        let cq = ClusterQueueSpec {
            name: "cq".to_owned(),
            groups: vec![ResourceGroup {
                covered: vec!["cpu".to_owned()],
                flavors: vec![(
                    "default".to_owned(),
                    BTreeMap::from([(
                        "cpu".to_owned(),
                        Quota {
                            nominal: nominal_cpu,
                            ..Quota::default()
                        },
                    )]),
                )],
            }],
            namespace_selector: Some(Vec::new()),
            ..ClusterQueueSpec::default()
        };
        KueueQueues::new(&[cq], &[]).unwrap()
    }

    /// Partial admission against a linear scan of Kueue's steps (the first step, fewest pods
    /// taken away, whose counts fit): the binary search must find the same counts.
    #[test]
    fn partial_admission_finds_the_first_step_a_linear_scan_finds() {
        let none = |_: usize, _: &str| None;
        for nominal in [0_i64, 7, 20, 33, 50] {
            for (c1, m1, c2, m2) in [(10, 2, 0, 0), (20, 5, 9, 9), (15, 1, 12, 3), (6, 6, 6, 6)] {
                let mut sets = vec![PodSetRequest {
                    name: "a".to_owned(),
                    count: c1,
                    min_count: Some(m1),
                    per_pod: BTreeMap::from([("cpu".to_owned(), 2000)]),
                }];
                if c2 > 0 {
                    sets.push(PodSetRequest {
                        name: "b".to_owned(),
                        count: c2,
                        min_count: Some(m2),
                        per_pod: BTreeMap::from([("cpu".to_owned(), 1000)]),
                    });
                }
                let mut q = queue(nominal * 1000);
                let got = assign(&mut q, 0, &sets, 0, 0, &none);
                let total = i64::from(c1 - m1 + c2 - m2);
                let scan = (0..=total).find_map(|i| {
                    let counts: Vec<i64> = sets
                        .iter()
                        .map(|s| {
                            let d = i64::from(s.count - s.min_count.unwrap());
                            i64::from(s.count) - if total == 0 { 0 } else { d * i / total }
                        })
                        .collect();
                    let need = counts[0] * 2 + counts.get(1).copied().unwrap_or(0);
                    (need <= nominal).then_some(counts)
                });
                match scan {
                    Some(counts) => {
                        assert_eq!(got.mode(), Mode::Fit, "nominal {nominal}, {sets:?}");
                        let got_counts: Vec<i64> =
                            got.pod_sets.iter().map(|p| i64::from(p.count)).collect();
                        assert_eq!(got_counts, counts, "nominal {nominal}");
                    }
                    None => assert_ne!(got.mode(), Mode::Fit, "nominal {nominal}, {sets:?}"),
                }
            }
        }
    }
}
