//! Preemption and reclaim: the single place that decides which running jobs to stop so a job
//! fits. Pure: it works on a scratch copy of the occupancy and returns a decision.
//!
//! Who may be stopped: in the job's own queue, preemptible jobs of strictly lower priority
//! (preemption); in other queues, preemptible jobs of queues using more GPUs than their fair
//! share, and only while the job's queue stays within its own fair share (reclaim). In-quota
//! non-preemptible work is never touched.
//!
//! Which: the job's topology request decides. For each level from the preferred (or required)
//! level up to the required level (or the top), and each domain at that level, stop all
//! eligible jobs touching the domain; if the job then fits inside the domain, give back the
//! victims one by one (most expensive first) while it still fits. The cheapest domain of the
//! lowest level that works wins — so one rack is freed rather than nodes scattered over many.
//! Cost: (highest victim priority, GPUs stopped, number of victims, domain order). Without a
//! topology request (or when no single domain can be freed and none is required) the same
//! give-back runs over the whole cluster. If no set of victims makes the job fit, nobody is
//! stopped.

use std::collections::BTreeMap;

use topology::{Cluster, DomainId};

use crate::constraints::PlaceInput;
use crate::job::Job;
use crate::occupancy::{Allocation, Occupancy};
use crate::place::{place_with, place_within_with, room_on, NotPlaced, Placement};

/// Domains per level whose victims are fully verified (placement trials while giving victims
/// back); the rest are ranked out by a cheap estimate. Bounds the cost on large clusters.
const VERIFIED_DOMAINS_PER_LEVEL: usize = 8;

/// Queue facts preemption needs for reclaim.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PreemptionPolicy {
    /// Fair share of GPUs per queue. Queues missing here are never reclaimed from, and with an
    /// empty map there is no reclaim at all (only preemption within the job's queue).
    pub fair_share_gpus: BTreeMap<String, f64>,
    /// No preemption within the job's own queue (Kueue's `withinClusterQueue: Never`); by
    /// default lower-priority jobs of the queue may be stopped.
    pub no_preemption_within_queue: bool,
    /// Reclaim only jobs of lower priority than the job (Kueue's `reclaimWithinCohort:
    /// LowerPriority`); by default any preemptible job of a queue above its share.
    pub reclaim_lower_priority_only: bool,
}

/// The outcome: where the job goes and whom it displaces (empty when it fits as is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The placement once the victims are gone.
    pub placement: Placement,
    /// Running jobs to stop, by name (sorted).
    pub victims: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Cost {
    max_priority: i32,
    milli: u64,
    count: usize,
}

/// Place `job`, stopping as little as possible if that is what it takes.
pub fn place_with_preemption(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    policy: &PreemptionPolicy,
) -> Result<Decision, NotPlaced> {
    place_with_preemption_input(cluster, occupancy, job, policy, &PlaceInput::default())
}

/// [`place_with_preemption`] with placement constraints and options ([`crate::place_with`]).
/// Victims give back their GPUs; the non-GPU room in `input.node_free` is taken as it is.
pub fn place_with_preemption_input(
    cluster: &Cluster,
    occupancy: &Occupancy,
    job: &Job,
    policy: &PreemptionPolicy,
    input: &PlaceInput,
) -> Result<Decision, NotPlaced> {
    let first_failure = match place_with(cluster, occupancy, job, input) {
        Ok(placement) => {
            return Ok(Decision {
                placement,
                victims: Vec::new(),
            })
        }
        Err(e) => e,
    };
    let candidates = eligible(occupancy, job, policy, cluster);
    if candidates.is_empty() {
        return Err(first_failure);
    }
    let mut scratch = occupancy.clone();
    let topo = &job.pod_sets[0].topology;
    if let Some(pref) = topo.preferred.or(topo.required) {
        let need = u64::from(job.pod_sets[0].min_count);
        for level in (topo.required.unwrap_or(0)..=pref).rev() {
            // Estimate each domain: stop its eligible jobs cheapest first until the nodes have
            // room for the pods (a necessary condition). Domains that cannot get there are out.
            let mut estimates: Vec<(Cost, usize, DomainId, Vec<&str>)> = Vec::new();
            // Eligible jobs touching each domain of the level, cheapest first.
            let mut touching_by_domain: BTreeMap<DomainId, Vec<&str>> = BTreeMap::new();
            for &name in &candidates {
                for p in &occupancy.jobs()[name].pods {
                    let list = touching_by_domain
                        .entry(cluster.node(p.node).domains[level])
                        .or_default();
                    if list.last() != Some(&name) {
                        list.push(name);
                    }
                }
            }
            for (order, &d) in cluster.levels[level].domains.iter().enumerate() {
                let Some(touching) = touching_by_domain.remove(&d) else {
                    continue;
                };
                let nodes = &cluster.domain(d).nodes;
                let mut stopped = Vec::new();
                let mut enough = room_on(cluster, &scratch, job, nodes).is_none_or(|r| r >= need);
                for v in &touching {
                    if enough {
                        break;
                    }
                    stopped.push(scratch.release(v).expect("running"));
                    enough = room_on(cluster, &scratch, job, nodes).is_none_or(|r| r >= need);
                }
                if enough {
                    estimates.push((cost_of(&stopped), order, d, touching));
                }
                for a in stopped {
                    scratch
                        .allocate(a.job, a.pods)
                        .expect("restoring a released job");
                }
            }
            estimates.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.cmp(&y.1)));
            let mut best: Option<(Cost, usize, Vec<String>, Placement)> = None;
            for (_, order, d, touching) in estimates.into_iter().take(VERIFIED_DOMAINS_PER_LEVEL) {
                let nodes = &cluster.domain(d).nodes;
                let bound =
                    |occ: &Occupancy| room_on(cluster, occ, job, nodes).is_none_or(|r| r >= need);
                let fits = |occ: &Occupancy| place_within_with(cluster, occ, job, d, input).ok();
                if let Some((cost, victims, placement)) =
                    give_back(&mut scratch, &touching, bound, fits)
                {
                    if best
                        .as_ref()
                        .is_none_or(|(c, o, _, _)| (cost, order) < (*c, *o))
                    {
                        best = Some((cost, order, victims, placement));
                    }
                }
            }
            if let Some((_, _, victims, placement)) = best {
                return Ok(Decision { placement, victims });
            }
        }
        if topo.required.is_some() {
            return Err(first_failure);
        }
    }
    let fits = |occ: &Occupancy| place_with(cluster, occ, job, input).ok();
    match give_back(&mut scratch, &candidates, |_| true, fits) {
        Some((_, victims, placement)) => Ok(Decision { placement, victims }),
        None => Err(first_failure),
    }
}

/// Stop all `victims` (given cheapest first); if the job then fits, restore them most expensive
/// first while it still fits. `bound` is a cheap necessary condition for `fits`. Leaves
/// `scratch` as it was. Returns the cost, the victims still stopped (sorted) and the placement.
fn give_back(
    scratch: &mut Occupancy,
    victims: &[&str],
    bound: impl Fn(&Occupancy) -> bool,
    fits: impl Fn(&Occupancy) -> Option<Placement>,
) -> Option<(Cost, Vec<String>, Placement)> {
    let mut stopped: Vec<Allocation> = victims
        .iter()
        .map(|v| scratch.release(v).expect("victims are running"))
        .collect();
    let mut result = None;
    if let Some(mut placement) = fits(scratch) {
        let mut keep_stopped: Vec<Allocation> = Vec::new();
        while let Some(a) = stopped.pop() {
            let name = a.job.name.clone();
            scratch
                .allocate(a.job.clone(), a.pods.clone())
                .expect("restoring a released job");
            match bound(scratch).then(|| fits(scratch)).flatten() {
                Some(p) => placement = p,
                None => {
                    scratch.release(&name);
                    keep_stopped.push(a);
                }
            }
        }
        let cost = Cost {
            max_priority: keep_stopped
                .iter()
                .map(|a| a.job.priority)
                .max()
                .unwrap_or(i32::MIN),
            milli: keep_stopped.iter().map(Allocation::milli_gpus).sum(),
            count: keep_stopped.len(),
        };
        let mut names: Vec<String> = keep_stopped.iter().map(|a| a.job.name.clone()).collect();
        names.sort();
        stopped = keep_stopped;
        result = Some((cost, names, placement));
    }
    for a in stopped {
        scratch
            .allocate(a.job, a.pods)
            .expect("restoring a released job");
    }
    result
}

fn cost_of(stopped: &[Allocation]) -> Cost {
    Cost {
        max_priority: stopped
            .iter()
            .map(|a| a.job.priority)
            .max()
            .unwrap_or(i32::MIN),
        milli: stopped.iter().map(Allocation::milli_gpus).sum(),
        count: stopped.len(),
    }
}

/// Running jobs the job may stop, cheapest first (priority, GPUs, name): the one rule of who
/// may be stopped, also for callers that stop jobs to free quota rather than room.
pub fn eligible_victims<'o>(
    cluster: &Cluster,
    occupancy: &'o Occupancy,
    job: &Job,
    policy: &PreemptionPolicy,
) -> Vec<&'o str> {
    eligible(occupancy, job, policy, cluster)
}

fn eligible<'o>(
    occupancy: &'o Occupancy,
    job: &Job,
    policy: &PreemptionPolicy,
    cluster: &Cluster,
) -> Vec<&'o str> {
    let usage = occupancy.usage_milli_by_queue();
    let used = |q: &str| usage.get(q).copied().unwrap_or(0) as f64 / 1000.0;
    let request = job.request(crate::quota_gpu_memory_mib(cluster)).gpu;
    let own_share = policy.fair_share_gpus.get(&job.queue).copied();
    let may_reclaim = own_share.is_some_and(|s| used(&job.queue) + request <= s + 1e-9);
    let mut out: Vec<(&Allocation, &'o str)> = occupancy
        .jobs()
        .iter()
        .filter(|(_, a)| {
            let v = &a.job;
            if !v.preemptible {
                return false;
            }
            if v.queue == job.queue {
                return !policy.no_preemption_within_queue && v.priority < job.priority;
            }
            if policy.reclaim_lower_priority_only && v.priority >= job.priority {
                return false;
            }
            may_reclaim
                && policy
                    .fair_share_gpus
                    .get(&v.queue)
                    .is_some_and(|&s| used(&v.queue) > s + 1e-9)
        })
        .map(|(n, a)| (a, n.as_str()))
        .collect();
    out.sort_by(|(a, an), (b, bn)| {
        a.job
            .priority
            .cmp(&b.job.priority)
            .then(a.milli_gpus().cmp(&b.milli_gpus()))
            .then(an.cmp(bn))
    });
    out.into_iter().map(|(_, n)| n).collect()
}

/// The domain a decision's pods lie in at `level`, if they all share one (for reports/tests).
pub fn common_domain(cluster: &Cluster, placement: &Placement, level: usize) -> Option<DomainId> {
    let first = cluster.node(placement.pods.first()?.node).domains[level];
    placement
        .pods
        .iter()
        .all(|p| cluster.node(p.node).domains[level] == first)
        .then_some(first)
}
